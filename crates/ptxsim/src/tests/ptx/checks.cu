// Engine tests: one planted bug per checker class, plus a clean kernel.
extern "C" __device__ void __assertfail(const char*, const char*, unsigned, const char*, unsigned long);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))
extern "C" __global__ void oob_read(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i < n ? i : 0] = a[i];      // reads one past the end
}
extern "C" __global__ void misaligned(const char* base, int* out) {
    int t = threadIdx.x;
    out[t] = *(const int*)(base + t * 4 + (t == 5 ? 2 : 0));
}
extern "C" __global__ void uaf(int* p) { p[threadIdx.x] = 1; }
extern "C" __global__ void race(int* out) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = t;
    // missing __syncthreads()
    out[t] = s[(t + 64) % 128];
}
extern "C" __global__ void race_fixed(int* out) {
    __shared__ int s[128];
    int t = threadIdx.x;
    s[t] = t;
    __syncthreads();
    out[t] = s[(t + 64) % 128];
}
extern "C" __global__ void div_barrier(int* out) {
    int t = threadIdx.x;
    if (t % 32 < 16) {
        __syncthreads();
    }
    out[t] = t;
}
extern "C" __global__ void bad_shuffle(int* out) {
    int t = threadIdx.x;
    int v = t;
    if (t < 16) v = __shfl_sync(0x0000ffff, v, t + 16);
    out[t] = v;
}
extern "C" __global__ void local_oob(int* out, int k) {
    int loc[4];
    for (int j = 0; j < 4; j++) loc[j] = out[j];
    volatile int* p = loc;
    out[threadIdx.x] = p[k];
}
extern "C" __global__ void asserts(int* out) {
    int t = threadIdx.x;
    assert(t != 3);
    out[t] = t;
}
