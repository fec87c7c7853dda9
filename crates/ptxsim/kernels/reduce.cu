// Tutorial: reductions. Each block writes one partial result; the host adds the partials.

// Shared-memory tree reduction; blockDim.x must be a power of two (<= 1024).
extern "C" __global__ void reduceBlockTree(const float* in, float* partial, int n)
{
    extern __shared__ float sdata[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
    }
}

// Integer sum with warp shuffles: shfl.down within each warp, then warp 0 reduces the warp sums.
extern "C" __global__ void reduceWarpShuffle(const int* in, int* partial, int n)
{
    __shared__ int warpSums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    int v = (i < n) ? in[i] : 0;
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    if (lane == 0) {
        warpSums[warp] = v;
    }
    __syncthreads();
    int nwarps = (blockDim.x + 31) / 32;
    if (warp == 0) {
        v = (lane < nwarps) ? warpSums[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) {
            v += __shfl_down_sync(0xffffffffu, v, off);
        }
        if (lane == 0) {
            partial[blockIdx.x] = v;
        }
    }
}

// f32 warp-shuffle reduction with xor butterflies: every lane ends with the warp's sum.
extern "C" __global__ void warpAllReduceXor(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    for (int mask = 16; mask > 0; mask >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, mask);
    }
    if (i < n) {
        out[i] = v;
    }
}

// Single-pass sum: partials, __threadfence, and the last block to finish adds them up.
__device__ unsigned int retirementCount = 0;

extern "C" __global__ void reduceThreadFence(const unsigned int* in, unsigned int* partial, unsigned long long* total, int n)
{
    __shared__ unsigned int sdata[256];
    __shared__ bool amLast;
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? in[i] : 0u;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
        __threadfence();
        unsigned ticket = atomicInc(&retirementCount, gridDim.x);
        amLast = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (amLast && tid == 0) {
        unsigned long long sum = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) {
            sum += ((volatile unsigned int*)partial)[b];
        }
        *total = sum;
        retirementCount = 0;
    }
}
