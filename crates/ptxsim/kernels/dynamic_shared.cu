// Dynamic shared memory (extern __shared__), sized at launch.

// Reverses each block's segment through dynamic shared memory (blockDim.x ints).
extern "C" __global__ void reverseBlocks(const int* in, int* out, int n)
{
    extern __shared__ int s[];
    int tid = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    int i = base + tid;
    if (i < n) {
        s[tid] = in[i];
    }
    __syncthreads();
    int count = min((int)blockDim.x, n - base);
    if (tid < count) {
        out[base + tid] = s[count - 1 - tid];
    }
}

// Two arrays carved out of one dynamic buffer (floats then doubles), next to a static array.
extern "C" __global__ void carvedBuffers(const float* f, const double* d, double* out, int n)
{
    extern __shared__ double dyn[];
    __shared__ int counter;
    double* ds = dyn;
    float* fs = (float*)(dyn + blockDim.x);
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid == 0) {
        counter = 0;
    }
    fs[tid] = (i < n) ? f[i] : 0.0f;
    ds[tid] = (i < n) ? d[i] : 0.0;
    __syncthreads();
    atomicAdd(&counter, 1);
    int j = (tid + 1) % blockDim.x;
    double r = ds[j] * (double)fs[tid];
    __syncthreads();
    if (i < n) {
        out[i] = r + (double)counter;
    }
}
