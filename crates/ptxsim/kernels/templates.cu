// Template kernels: explicit instantiations give mangled entry names
// (e.g. _Z4axpyIfEvT_PKS0_PS0_i for axpy<float>).

template <typename T>
__global__ void axpy(T alpha, const T* x, T* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = alpha * x[i] + y[i];
    }
}

template __global__ void axpy<float>(float, const float*, float*, int);
template __global__ void axpy<double>(double, const double*, double*, int);
template __global__ void axpy<int>(int, const int*, int*, int);

// A compile-time block size and a functor type as template parameters.
struct MaxOp {
    __device__ int operator()(int a, int b) const { return a > b ? a : b; }
    static __device__ int identity() { return -0x7fffffff - 1; }
};

struct XorOp {
    __device__ int operator()(int a, int b) const { return a ^ b; }
    static __device__ int identity() { return 0; }
};

template <int BLOCK, typename Op>
__global__ void blockReduce(const int* in, int* out, int n)
{
    __shared__ int s[BLOCK];
    Op op;
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : Op::identity();
    __syncthreads();
#pragma unroll
    for (int step = BLOCK / 2; step > 0; step /= 2) {
        if (tid < step) {
            s[tid] = op(s[tid], s[tid + step]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        out[blockIdx.x] = s[0];
    }
}

template __global__ void blockReduce<128, MaxOp>(const int*, int*, int);
template __global__ void blockReduce<64, XorOp>(const int*, int*, int);
