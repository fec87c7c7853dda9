// NVIDIA developer blog, "GPU Pro Tip: Fast Histograms Using Shared Atomics on Maxwell": per
// block histograms of an RGBA image (NUM_BINS per channel) in shared memory, written out per
// block, then a second kernel that sums the blocks' partial histograms.
#define NUM_BINS 64
#define NUM_PARTS 3

__global__ void histogram_smem_atomics(const uchar4 *in, int width, int height, uint *out)
{
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;

  int nx = blockDim.x * gridDim.x;
  int ny = blockDim.y * gridDim.y;

  // thread index within the block, threads per block, block index within the grid
  int t = threadIdx.x + threadIdx.y * blockDim.x;

  int nt = blockDim.x * blockDim.y;

  int g = blockIdx.x + blockIdx.y * gridDim.x;

  // the block's histogram, cleared by all its threads
  __shared__ uint smem[NUM_PARTS * NUM_BINS + 1];
  for (int i = t; i < NUM_PARTS * NUM_BINS + 1; i += nt) smem[i] = 0;
  __syncthreads();

  // grid-stride over the image in both directions
  for (int col = x; col < width; col += nx)
    for (int row = y; row < height; row += ny) {
      uchar4 p = in[row * width + col];
      atomicAdd(&smem[NUM_BINS * 0 + p.x / (256 / NUM_BINS)], 1);
      atomicAdd(&smem[NUM_BINS * 1 + p.y / (256 / NUM_BINS)], 1);
      atomicAdd(&smem[NUM_BINS * 2 + p.z / (256 / NUM_BINS)], 1);
    }
  __syncthreads();

  // this block's histogram goes to its own slice of out
  out += g * NUM_PARTS * NUM_BINS;
  for (int i = t; i < NUM_BINS; i += nt) {
    out[i + NUM_BINS * 0] = smem[i + NUM_BINS * 0];
    out[i + NUM_BINS * 1] = smem[i + NUM_BINS * 1];
    out[i + NUM_BINS * 2] = smem[i + NUM_BINS * 2];
  }
}

__global__ void histogram_final_accum(const uint *in, int n, uint *out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < NUM_PARTS * NUM_BINS) {
    uint total = 0;
    for (int j = 0; j < n; j++)
      total += in[i + NUM_PARTS * NUM_BINS * j];
    out[i] = total;
  }
}
