// Matrix transpose of a rows x cols row-major matrix: out (cols x rows) = in^T.

extern "C" __global__ void transposeNaive(const float* in, float* out, int rows, int cols)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows) {
        out[x * rows + y] = in[y * cols + x];
    }
}

#define TDIM 32
#define BROWS 8

// Coalesced transpose through a shared tile padded by one column (no bank conflicts);
// blocks are TDIM x BROWS threads, each thread moves TDIM / BROWS elements.
extern "C" __global__ void transposeSharedPadded(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[TDIM][TDIM + 1];
    int x = blockIdx.x * TDIM + threadIdx.x;
    int y = blockIdx.y * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += BROWS) {
        if (x < cols && y + j < rows) {
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TDIM + threadIdx.x;
    y = blockIdx.x * TDIM + threadIdx.y;
    for (int j = 0; j < TDIM; j += BROWS) {
        if (x < rows && y + j < cols) {
            out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}

// 64-bit elements, 2-D block of 16 x 16 through an unpadded shared tile.
extern "C" __global__ void transposeShared64(const unsigned long long* in, unsigned long long* out, int rows, int cols)
{
    __shared__ unsigned long long tile[16][16];
    int x = blockIdx.x * 16 + threadIdx.x;
    int y = blockIdx.y * 16 + threadIdx.y;
    if (x < cols && y < rows) {
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    }
    __syncthreads();
    int ox = blockIdx.y * 16 + threadIdx.x;
    int oy = blockIdx.x * 16 + threadIdx.y;
    if (ox < rows && oy < cols) {
        out[oy * rows + ox] = tile[threadIdx.x][threadIdx.y];
    }
}
