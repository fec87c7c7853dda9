// Engine tests: f16, f16x2 and bf16 arithmetic.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void halves(const unsigned short* a, const unsigned short* b, unsigned short* out, float* f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]);
    __half s = __hadd(x, y);
    __half p = __hfma(x, y, s);
    out[3 * i] = __half_as_ushort(p);
    __half2 h2 = __halves2half2(x, y);
    h2 = __hmul2(h2, h2);
    out[3 * i + 1] = __half_as_ushort(__low2half(h2));
    out[3 * i + 2] = __half_as_ushort(__high2half(h2));
    f[2 * i] = (x < y) ? 1.f : 0.f;
    __nv_bfloat16 z = __float2bfloat16(__half2float(x) * 3.0f);
    f[2 * i + 1] = __bfloat162float(__hfma(z, z, z));
}

extern "C" __global__ void half_atomics(__half* h, __nv_bfloat16* bh, __half2* h2) {
    atomicAdd(h + (threadIdx.x & 1), __float2half(0.25f));
    atomicAdd(bh, __float2bfloat16(1.0f));
    atomicAdd(h2, __floats2half2_rn(1.0f, 2.0f));
}
