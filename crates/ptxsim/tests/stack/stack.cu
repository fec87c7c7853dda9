// Call-stack tests (`tests/stack.rs`). `stack.ptx` is NVRTC 12.9's output for compute_80
// with -G (its `.file` path shortened): at -O3 NVRTC turns these recursions into loops or
// removes them.
__device__ int f(int x) { return f(x + 1) + 1; }

extern "C" __global__ void runaway(int *out) {
    int i = threadIdx.x;
    if (i == 3) out[i] = f(i);
    else out[i] = i;
}

__device__ unsigned long long fact(int n) { return n <= 1 ? 1ull : n * fact(n - 1); }

extern "C" __global__ void factorial(unsigned long long *out, int n) {
    out[threadIdx.x] = fact(n + threadIdx.x % 2);
}
