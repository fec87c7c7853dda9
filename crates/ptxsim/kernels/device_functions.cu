// Non-inlined device functions: .func with parameters and return values, recursion, pointers,
// local arrays and calls from divergent lanes.

__device__ __noinline__ float lerp3(float a, float b, float t)
{
    return a + t * (b - a);
}

__device__ __noinline__ int gcd(int a, int b)
{
    while (b != 0) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// Recursive: needs a real call stack.
__device__ __noinline__ unsigned long long fib(unsigned k)
{
    if (k < 2) {
        return k;
    }
    return fib(k - 1) + fib(k - 2);
}

// Writes through pointers and returns a struct by value.
struct MinMax {
    int lo;
    int hi;
};

__device__ __noinline__ MinMax minMaxOf(const int* p, int count, int* sum)
{
    MinMax r = {p[0], p[0]};
    int s = 0;
    for (int k = 0; k < count; ++k) {
        r.lo = min(r.lo, p[k]);
        r.hi = max(r.hi, p[k]);
        s += p[k];
    }
    *sum = s;
    return r;
}

// A local (per-thread stack) array indexed dynamically: insertion sort of 8 values.
__device__ __noinline__ void sort8(int* v)
{
    for (int k = 1; k < 8; ++k) {
        int x = v[k];
        int j = k - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            --j;
        }
        v[j + 1] = x;
    }
}

extern "C" __global__ void callLerp(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = lerp3(a[i], b[i], 0.25f);
    }
}

extern "C" __global__ void callGcdDivergent(const int* a, const int* b, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        if (x & 1) {
            out[i] = gcd(x, y);
        } else {
            out[i] = -gcd(y, x / 2 + 1);
        }
    }
}

extern "C" __global__ void callFib(const unsigned* k, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = fib(k[i]);
    }
}

extern "C" __global__ void callMinMaxSort(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v[8];
        for (int k = 0; k < 8; ++k) {
            v[k] = in[8 * i + k];
        }
        int s;
        MinMax mm = minMaxOf(v, 8, &s);
        sort8(v);
        for (int k = 0; k < 8; ++k) {
            out[11 * i + k] = v[k];
        }
        out[11 * i + 8] = mm.lo;
        out[11 * i + 9] = mm.hi;
        out[11 * i + 10] = s;
    }
}
