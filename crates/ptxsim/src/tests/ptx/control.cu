// Engine tests: divergence, calls, recursion, barriers.
struct Pair { int a; float b; };

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ __noinline__ Pair mkpair(int x, float y, const int* p) {
    Pair r; r.a = x * 3 + p[0]; r.b = y * 0.5f; return r;
}

extern "C" __global__ void divergent(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    int acc = 0;
    for (int k = 0; k < (v & 15); k++) {          // per-lane trip count
        if (k % 3 == 0) continue;
        if (k > 11 && (v & 64)) break;
        if (v & 1) { if (k & 1) acc += k; else acc -= 1; }
        else acc += 2 * k;
    }
    switch (v % 4) {
        case 0: acc += 100; break;
        case 1: acc *= 2; break;
        case 2: acc -= 7;
        default: acc ^= 5;
    }
    out[i] = acc;
}

extern "C" __global__ void calls(const int* in, int* out, float* fout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    if (v & 1) out[i] = fib(v & 15);              // divergent recursive call
    else out[i] = -fib((v >> 1) & 7);
    Pair p = mkpair(v, (float)v, in + (i % 5));
    out[n + i] = p.a;
    fout[i] = p.b;
}

extern "C" __global__ void syncs(const int* in, int* out, int n) {
    __shared__ int s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    int v = i < n ? in[i] : 0;
    s[t] = v;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    int cnt = __syncthreads_count(v > 0);
    int all = __syncthreads_and(v > -1000);
    int any = __syncthreads_or(v == 7);
    if (t == 0) {
        out[blockIdx.x * 4 + 0] = s[0];
        out[blockIdx.x * 4 + 1] = cnt;
        out[blockIdx.x * 4 + 2] = all;
        out[blockIdx.x * 4 + 3] = any;
    }
}

extern "C" __global__ void grid3d(int* out) {
    int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int nt = blockDim.x * blockDim.y * blockDim.z;
    int g = bx * nt + tx;
    out[g] = (threadIdx.x << 24) | (threadIdx.y << 16) | (threadIdx.z << 12) | (blockIdx.x << 8) | (blockIdx.y << 4) | blockIdx.z;
}

extern "C" __global__ void spin(int* flag) {
    int i = 0;
    while (atomicAdd(flag, 0) == 0) { i++; __syncthreads(); }
    flag[1] = i;
}
