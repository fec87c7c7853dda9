// GPU Teaching Kit - Accelerated Computing, module 8 lab (3-D stencil): the 7-point Laplacian
// of a height x width x depth volume, clamped to [0, 255]; each block owns a TILE_SIZE^2 patch of
// (j, k) and walks up i, the current plane in shared memory and the planes below and above in
// registers.
#define TILE_SIZE 32

__host__ __device__ float Clamp(float val, float start, float end) {
    return max(min(val, end), start);
}

#define out(i, j, k) _out[((i) * width + (j)) * depth + (k)]
#define in(i, j, k) _in[((i) * width + (j)) * depth + (k)]

__global__ void stencil(float *_out, float *_in, int width, int height, int depth)
{
    int k = blockIdx.z * TILE_SIZE + threadIdx.z;
    int j = blockIdx.x * TILE_SIZE + threadIdx.x;
    __shared__ float ds_A[TILE_SIZE][TILE_SIZE];
    bool inside = j < width && k < depth;
    float bottom = inside ? in(0, j, k) : 0;
    float current = inside ? in(1, j, k) : 0;
    float top = inside ? in(2, j, k) : 0;
    ds_A[threadIdx.z][threadIdx.x] = current;
    __syncthreads();

    for (int i = 1; i < height - 1; i++) {
        if (k < depth - 1 && k > 0 && j < width - 1 && j > 0) {
            float temp = bottom + top;
            temp += threadIdx.z > 0 ? ds_A[threadIdx.z - 1][threadIdx.x] : in(i, j, k - 1);
            temp += threadIdx.z < TILE_SIZE - 1 ? ds_A[threadIdx.z + 1][threadIdx.x] : in(i, j, k + 1);
            temp += threadIdx.x > 0 ? ds_A[threadIdx.z][threadIdx.x - 1] : in(i, j - 1, k);
            temp += threadIdx.x < TILE_SIZE - 1 ? ds_A[threadIdx.z][threadIdx.x + 1] : in(i, j + 1, k);
            temp -= 6 * current;
            out(i, j, k) = Clamp(temp, 0, 255);
        }
        bottom = current;
        __syncthreads();
        ds_A[threadIdx.z][threadIdx.x] = top;
        __syncthreads();
        current = top;
        top = (inside && i + 2 < height) ? in(i + 2, j, k) : 0;
    }
}
