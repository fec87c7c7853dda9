// PTX features that plain CUDA C++ rarely emits by itself: red.*, fence, barrier.sync,
// bar.red (__syncthreads_count/and/or), named barriers with thread counts, generic pointers into
// shared memory, barriers inside non-inlined functions, scoped atomics, warp match/reduce.

// red.* (reductions without a result), fence.acq_rel, barrier.sync through inline PTX.
extern "C" __global__ void reductionsAsm(const int* v, unsigned* usum, int* smax, float* fsum,
                                         unsigned long long* wsum, unsigned* blockSums, int n)
{
    __shared__ unsigned s;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) {
        s = 0;
    }
    asm volatile("barrier.sync 0;");
    if (i < n) {
        int x = v[i];
        asm volatile("red.global.add.u32 [%0], %1;" ::"l"(usum), "r"((unsigned)x) : "memory");
        asm volatile("red.global.max.s32 [%0], %1;" ::"l"(smax), "r"(x) : "memory");
        asm volatile("red.global.add.f32 [%0], %1;" ::"l"(fsum), "f"((float)(x & 1023)) : "memory");
        asm volatile("red.global.add.u64 [%0], %1;" ::"l"(wsum), "l"((unsigned long long)(unsigned)x) : "memory");
        unsigned saddr = (unsigned)__cvta_generic_to_shared(&s);
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(saddr), "r"((unsigned)x & 0xffffu) : "memory");
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    asm volatile("barrier.sync.aligned 0;" ::: "memory");
    if (threadIdx.x == 0) {
        blockSums[blockIdx.x] = s;
    }
}

// __syncthreads_count / __syncthreads_and / __syncthreads_or (bar.red.popc / .and / .or).
extern "C" __global__ void barrierReductions(const int* v, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = (i < n) ? v[i] : 0;
    int count = __syncthreads_count(x > 0);
    int all = __syncthreads_and(x >= 0);
    int any = __syncthreads_or(x > 900);
    if (i < n) {
        out[3 * i + 0] = count;
        out[3 * i + 1] = all;
        out[3 * i + 2] = any;
    }
}

// Named barriers with thread counts: warps 0-1 meet at barrier 1, warps 2-3 at barrier 2,
// each pair exchanging data through shared memory (block of 128 threads).
extern "C" __global__ void namedBarriers(const int* in, int* out, int n)
{
    __shared__ int s[128];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0;
    if (tid < 64) {
        asm volatile("bar.sync 1, 64;" ::: "memory");
    } else {
        asm volatile("bar.sync 2, 64;" ::: "memory");
    }
    int partner = (tid < 64) ? (63 - tid) : (64 + 127 - tid);
    if (i < n) {
        out[i] = s[partner];
    }
}

// A non-inlined function that reads and writes through generic pointers, called with pointers
// to shared, global and local memory.
__device__ __noinline__ void axpyGeneric(float* dst, const float* src, float a, int count)
{
    for (int k = 0; k < count; ++k) {
        dst[k] = a * src[k] + dst[k];
    }
}

extern "C" __global__ void genericPointers(const float* in, float* out, int n)
{
    __shared__ float tile[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    float mine[2] = {(float)tid, 1.0f};
    tile[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) {
        axpyGeneric(&tile[tid], &in[i], 2.0f, 1);  // shared += 2 * global
        axpyGeneric(&out[i], &tile[tid], 1.0f, 1); // global += shared
        axpyGeneric(mine, &tile[tid], 0.5f, 1);    // local += 0.5 * shared
        out[i] += mine[0] + mine[1];
    }
}

// __syncthreads inside a non-inlined function called by every thread of the block.
__device__ __noinline__ int blockSum(int* scratch, int x)
{
    int tid = threadIdx.x;
    scratch[tid] = x;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            scratch[tid] += scratch[tid + s];
        }
        __syncthreads();
    }
    int total = scratch[0];
    __syncthreads();
    return total;
}

extern "C" __global__ void syncInFunction(const int* in, int* out, int n)
{
    __shared__ int scratch[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int a = blockSum(scratch, (i < n) ? in[i] : 0);
    int b = blockSum(scratch, (i < n) ? 1 : 0);
    if (i < n) {
        out[i] = a * 1000 + b;
    }
}

// Scoped atomics: atomicAdd_block / atomicAdd_system / atomicMax_block.
extern "C" __global__ void scopedAtomics(const int* v, int* out, int n)
{
    __shared__ int s;
    if (threadIdx.x == 0) {
        s = 0;
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd_block(&s, v[i]);
        atomicAdd_system(&out[0], v[i]);
        atomicMax_block(&out[1], v[i]);
        atomicExch_system((unsigned*)&out[2], 7u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(&out[3 + blockIdx.x], s);
    }
}

// Warp match and reduce intrinsics (match.sync, redux.sync).
extern "C" __global__ void warpMatchReduce(const int* in, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int pred;
    unsigned any = __match_any_sync(0xffffffffu, v);
    unsigned all = __match_all_sync(0xffffffffu, v & 1, &pred);
    unsigned sum = __reduce_add_sync(0xffffffffu, (unsigned)v);
    unsigned mn = (unsigned)__reduce_min_sync(0xffffffffu, v);
    unsigned mx = __reduce_max_sync(0xffffffffu, (unsigned)v);
    unsigned x = __reduce_xor_sync(0xffffffffu, (unsigned)v);
    if (i < n) {
        unsigned* o = out + 7 * i;
        o[0] = any;
        o[1] = all;
        o[2] = pred;
        o[3] = sum;
        o[4] = mn;
        o[5] = mx;
        o[6] = x;
    }
}
