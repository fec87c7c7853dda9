// OLCF/NERSC CUDA Training Series, homework 5: three sum reductions over a compile-time N:
// one atomicAdd per element; a grid-stride load into shared memory, a sweep, and one atomicAdd
// per block; and the same with warp shuffles instead of the sweep.
#include <stdio.h>

const size_t N = 8ULL * 1024ULL;
const int BLOCK_SIZE = 256;

__global__ void atomic_red(const float *gdata, float *out)
{
    size_t idx = threadIdx.x + blockDim.x * blockIdx.x;
    if (idx < N) atomicAdd(out, gdata[idx]);
}

__global__ void reduce_a(float *gdata, float *out)
{
    __shared__ float sdata[BLOCK_SIZE];
    int tid = threadIdx.x;
    sdata[tid] = 0.0f;
    // grid-stride loop: each thread accumulates its share of the input
    for (size_t idx = threadIdx.x + blockDim.x * blockIdx.x; idx < N; idx += gridDim.x * blockDim.x)
        sdata[tid] += gdata[idx];
    // halve the active threads each step
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (tid < s)
            sdata[tid] += sdata[tid + s];
    }
    if (tid == 0) atomicAdd(out, sdata[0]);
}

__global__ void reduce_ws(float *gdata, float *out)
{
    __shared__ float sdata[32];
    int tid = threadIdx.x;
    float val = 0.0f;
    unsigned mask = 0xFFFFFFFFU;
    int lane = threadIdx.x % warpSize;
    int warpID = threadIdx.x / warpSize;
    for (int idx = threadIdx.x + blockDim.x * blockIdx.x; idx < N; idx += gridDim.x * blockDim.x)
        val += gdata[idx];
    // reduce within each warp, then park one value per warp in shared memory
    for (int offset = warpSize / 2; offset > 0; offset >>= 1)
        val += __shfl_down_sync(mask, val, offset);
    if (lane == 0) sdata[warpID] = val;
    __syncthreads();
    // the first warp reduces the warps' values
    if (warpID == 0) {
        val = (tid < blockDim.x / warpSize) ? sdata[lane] : 0;
        for (int offset = warpSize / 2; offset > 0; offset >>= 1)
            val += __shfl_down_sync(mask, val, offset);
        if (tid == 0) atomicAdd(out, val);
    }
}
