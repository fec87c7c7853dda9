// Planted bugs for the checker, each next to its fixed version. The line of each bug carries a
// marker comment (BUG: name) that the checker tests look up to know which CUDA line the report
// must name.

// Out-of-bounds global read: the last thread reads in[n].
extern "C" __global__ void oobGlobalRead(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i + 1] - in[i]; // BUG: oob-global-read
    }
}

extern "C" __global__ void oobGlobalReadFixed(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = (i + 1 < n ? in[i + 1] : 0.0f) - in[i];
    }
}

// Out-of-bounds global write: the bound check is off by one (<=).
extern "C" __global__ void oobGlobalWrite(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {
        out[i] = 2 * i; // BUG: oob-global-write
    }
}

extern "C" __global__ void oobGlobalWriteFixed(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = 2 * i + 0 * in[i];
    }
}

// Out-of-bounds shared access: a data-dependent bin index past the 64-entry shared array.
extern "C" __global__ void oobShared(const int* bins, int* out, int n)
{
    __shared__ int counts[64];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid < 64) {
        counts[tid] = 0;
    }
    __syncthreads();
    if (i < n) {
        atomicAdd(&counts[bins[i]], 1); // BUG: oob-shared
    }
    __syncthreads();
    if (tid < 64) {
        atomicAdd(&out[tid], counts[tid]);
    }
}

extern "C" __global__ void oobSharedFixed(const int* bins, int* out, int n)
{
    __shared__ int counts[64];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid < 64) {
        counts[tid] = 0;
    }
    __syncthreads();
    if (i < n) {
        atomicAdd(&counts[bins[i] & 63], 1);
    }
    __syncthreads();
    if (tid < 64) {
        atomicAdd(&out[tid], counts[tid]);
    }
}

// Misaligned: a 4-byte load at a byte offset taken from the data.
extern "C" __global__ void misalignedLoad(const char* bytes, const int* offsets, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = *(const int*)(bytes + offsets[i]); // BUG: misaligned
    }
}

extern "C" __global__ void misalignedLoadFixed(const char* bytes, const int* offsets, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = *(const int*)(bytes + (offsets[i] & ~3));
    }
}

// Use after free: the host frees `data` and launches with it anyway; one thread touches it.
extern "C" __global__ void touchOne(int* data, int who)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == who) {
        data[i] += 1; // BUG: use-after-free
    }
}

// Shared race: thread 40 of block 2 reads the slot thread 3 wrote, with no barrier between.
extern "C" __global__ void sharedRace(const int* in, int* out, int n, int badBlock)
{
    __shared__ int s[128];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0; // BUG: race-write
    int j = (blockIdx.x == badBlock && tid == 40) ? 3 : tid;
    int v = s[j]; // BUG: race-read
    if (i < n) {
        out[i] = v;
    }
}

extern "C" __global__ void sharedRaceFixed(const int* in, int* out, int n, int badBlock)
{
    __shared__ int s[128];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    int j = (blockIdx.x == badBlock && tid == 40) ? 3 : tid;
    int v = s[j];
    if (i < n) {
        out[i] = v;
    }
}

// Divergent barrier: only the first 16 threads reach __syncthreads.
extern "C" __global__ void divergentBarrier(int* data)
{
    __shared__ int s[64];
    int tid = threadIdx.x;
    s[tid] = data[tid];
    if (threadIdx.x < 16) {
        __syncthreads(); // BUG: divergent-barrier
        data[tid] = s[tid + 16];
    }
}

extern "C" __global__ void divergentBarrierFixed(int* data)
{
    __shared__ int s[64];
    int tid = threadIdx.x;
    s[tid] = data[tid];
    __syncthreads();
    if (threadIdx.x < 16) {
        data[tid] = s[tid + 16];
    }
}

// Shuffle from an inactive lane: in block `badBlock`, thread 5 reads lane 20, which is not in the
// active half-warp.
extern "C" __global__ void shuffleInactive(const int* in, int* out, int n, int badBlock)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? in[i] : 0;
    if (lane < 16) {
        int src = (blockIdx.x == badBlock && threadIdx.x == 5) ? 20 : (lane ^ 1);
        v = __shfl_sync(0x0000ffffu, v, src); // BUG: shuffle-inactive
    }
    if (i < n) {
        out[i] = v;
    }
}

extern "C" __global__ void shuffleInactiveFixed(const int* in, int* out, int n, int badBlock)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? in[i] : 0;
    if (lane < 16) {
        int src = (blockIdx.x == badBlock && threadIdx.x == 5) ? 10 : (lane ^ 1);
        v = __shfl_sync(0x0000ffffu, v, src);
    }
    if (i < n) {
        out[i] = v;
    }
}

// Out-of-bounds local (stack) array index.
extern "C" __global__ void oobLocal(const int* idx, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        volatile int tmp[8];
        for (int k = 0; k < 8; ++k) {
            tmp[k] = k * i;
        }
        out[i] = tmp[idx[i]]; // BUG: oob-local
    }
}

// __trap() in one thread.
extern "C" __global__ void trapOne(int* out, int who)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == who) {
        __trap(); // BUG: trap
    }
    out[i] = i;
}

// Never terminates unless cancelled or out of budget.
extern "C" __global__ void spinForever(volatile int* flag, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = 0;
    while (*flag == 0) {
        ++k;
    }
    out[i] = k;
}
