// Module-scope __device__ and __constant__ variables with initialisers, and local memory.

__constant__ float coeffs[5] = {0.5f, -1.25f, 2.0f, 0.125f, 3.0f};
__constant__ int offsets[4] = {-2, -1, 1, 2};
__device__ int launchCounter = 100;
__device__ unsigned long long table[4] = {1ull, 1ull << 40, 12345678901ull, ~0ull};

// Polynomial with constant-memory coefficients (Horner, explicit fmaf).
extern "C" __global__ void polyConst(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float acc = coeffs[4];
        for (int k = 3; k >= 0; --k) {
            acc = fmaf(acc, v, coeffs[k]);
        }
        y[i] = acc;
    }
}

// 1-D stencil with offsets from constant memory, clamped at the ends.
extern "C" __global__ void constStencil(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int s = 0;
        for (int k = 0; k < 4; ++k) {
            int j = min(max(i + offsets[k], 0), n - 1);
            s += in[j] * (k + 1);
        }
        out[i] = s;
    }
}

// A __device__ counter that persists between launches of the same module.
extern "C" __global__ void bumpCounter(int* seen, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&launchCounter, 1);
    }
    if (i == 0) {
        seen[0] = table[(unsigned)n & 3] == 0 ? -1 : 1;
    }
}

extern "C" __global__ void readCounter(int* out, unsigned long long* tab)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out[0] = launchCounter;
        for (int k = 0; k < 4; ++k) {
            tab[k] = table[k];
        }
    }
}

// A per-thread array with data-dependent indices: must live in .local memory. Returns
// 1000 * (most frequent low nibble) + its count, the smallest nibble on ties.
extern "C" __global__ void localHistogram(const unsigned char* in, int* out, int n, int per)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int counts[16];
        for (int k = 0; k < 16; ++k) {
            counts[k] = 0;
        }
        int best = in[i * per] & 15;
        for (int k = 0; k < per; ++k) {
            int b = in[i * per + k] & 15;
            int c = ++counts[b];
            if (c > counts[best] || (c == counts[best] && b < best)) {
                best = b;
            }
        }
        out[i] = best * 1000 + counts[best];
    }
}
