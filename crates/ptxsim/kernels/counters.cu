// Kernels of the counter tests (tests/counters.rs): each has a memory access pattern whose
// hardware counts (requests, sectors, wavefronts, atomics, divergence) are computed by hand
// in the tests.

// Global loads at x[i * stride + offset], one coalesced store per thread: stride 1 offset 0 is
// coalesced, offset 1 misaligned, strides 2, 8 and 32 strided, stride 0 a broadcast.
extern "C" __global__ void ld_stride(const float *x, float *y, int stride, int offset) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i * stride + offset];
}

extern "C" __global__ void ld_f64(const double *x, double *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}

extern "C" __global__ void ld_float4(const float4 *x, float4 *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i];
}

// y[i] = x[i % n]: with n smaller than the grid, blocks re-read the same data.
extern "C" __global__ void reread(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i % n];
}

// Shared memory at s[t * stride], stored then loaded back (one warp per block).
extern "C" __global__ void shared_stride(float *out, int stride) {
    __shared__ float s[32 * 33];
    int t = threadIdx.x;
    s[t * stride] = (float)t;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[t * stride];
}

// Every lane reads the same shared word.
extern "C" __global__ void shared_broadcast(float *out) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = (float)t;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[5];
}

// The transpose pair: a 32x32 tile through shared memory, read by columns, without and with
// padding (block 32x32, n a multiple of 32).
extern "C" __global__ void transpose_tile(const float *in, float *out, int n) {
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

extern "C" __global__ void transpose_padded(const float *in, float *out, int n) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}

// Threads below `split` take one path, the others another.
extern "C" __global__ void divergent(int *out, int split) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < split) {
        out[t] = t * 3;
    } else {
        out[t] = t / 7 + out[t];
    }
}

extern "C" __global__ void atomic_same(int *c) {
    atomicAdd(&c[0], 1);
}

extern "C" __global__ void atomic_distinct(int *c) {
    atomicAdd(&c[blockIdx.x * blockDim.x + threadIdx.x], 1);
}

// Lanes in groups of four update one shared counter per group.
extern "C" __global__ void atomic_shared_groups(int *out) {
    __shared__ int s[8];
    int t = threadIdx.x;
    if (t < 8) s[t] = 0;
    __syncthreads();
    atomicAdd(&s[t / 4], 1);
    __syncthreads();
    if (t < 8) out[blockIdx.x * 8 + t] = s[t];
}
