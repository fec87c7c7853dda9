// Device printf: several conversions, per thread, in a small launch.

extern "C" __global__ void printfBasic(const int* a, const float* f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        printf("block %d thread %d: a=%d f=%f hex=%x\n", blockIdx.x, threadIdx.x, a[i], f[i], (unsigned)a[i]);
    }
}

extern "C" __global__ void printfFormats(const long long* l, const double* d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        printf("[%3d] %lld|%llu|%5d|%-4d|%05d|%c|%s|%.3f|%e|%X|%%\n", i, l[i], (unsigned long long)l[i],
               (int)(l[i] % 1000), i, i, 'a' + (i % 26), (i & 1) ? "odd" : "even", d[i], d[i],
               (unsigned)(l[i] & 0xffff));
    }
}

// Only some lanes print, after divergence, and one thread prints a header first.
extern "C" __global__ void printfDivergent(const int* a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        printf("start n=%d\n", n);
    }
    if (i < n && a[i] % 3 == 0) {
        printf("i=%d v=%d\n", i, a[i]);
    }
}
