// OLCF/NERSC CUDA Training Series, homework 5 solution (max_reduction): a max reduction in two
// launches of the same sweep kernel (each block's maximum, then the maximum of those).
#include <stdio.h>
#include <cmath>

const size_t N = 8ULL * 1024ULL;
const int BLOCK_SIZE = 256;

__global__ void reduce(float *gdata, float *out, size_t n)
{
    __shared__ float sdata[BLOCK_SIZE];
    int tid = threadIdx.x;
    sdata[tid] = -INFINITY;
    size_t idx = threadIdx.x + blockDim.x * blockIdx.x;
    while (idx < n) {
        sdata[tid] = max(gdata[idx], sdata[tid]);
        idx += gridDim.x * blockDim.x;
    }
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (tid < s)
            sdata[tid] = max(sdata[tid + s], sdata[tid]);
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}
