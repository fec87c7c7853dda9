// CUDA C++ Programming Guide, "Atomic Functions": a double-precision atomicAdd built from
// atomicCAS on the 64-bit pattern (what GPUs before sm_60 needed), used by a sum kernel.
#include <cstdint>

__device__ double myAtomicAdd(double* address, double val)
{
    unsigned long long int* address_as_ull = (unsigned long long int*)address;
    unsigned long long int old = *address_as_ull, assumed;
    do {
        assumed = old;
        old = atomicCAS(address_as_ull, assumed,
                        __double_as_longlong(val + __longlong_as_double(assumed)));
        // Note: uses integer comparison to avoid hang in case of NaN (since NaN != NaN)
    } while (assumed != old);
    return __longlong_as_double(old);
}

__global__ void sumDouble(const double* x, double* total, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        myAtomicAdd(total, x[i]);
}
