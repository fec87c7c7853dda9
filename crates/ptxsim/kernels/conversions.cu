// Conversions with every rounding mode, saturation, and arithmetic with explicit rounding.

extern "C" __global__ void floatToInt(const float* a, int* out, unsigned* uout, long long* lout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        out[4 * i + 0] = __float2int_rn(x);
        out[4 * i + 1] = __float2int_rz(x);
        out[4 * i + 2] = __float2int_rd(x);
        out[4 * i + 3] = __float2int_ru(x);
        uout[2 * i + 0] = __float2uint_rn(x);
        uout[2 * i + 1] = __float2uint_rz(x);
        lout[2 * i + 0] = __float2ll_rd(x);
        lout[2 * i + 1] = (long long)x;
    }
}

extern "C" __global__ void doubleConversions(const double* a, int* iout, float* fout, long long* lout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double x = a[i];
        iout[4 * i + 0] = __double2int_rn(x);
        iout[4 * i + 1] = __double2int_rz(x);
        iout[4 * i + 2] = __double2int_rd(x);
        iout[4 * i + 3] = __double2int_ru(x);
        fout[4 * i + 0] = __double2float_rn(x);
        fout[4 * i + 1] = __double2float_rz(x);
        fout[4 * i + 2] = __double2float_rd(x);
        fout[4 * i + 3] = __double2float_ru(x);
        lout[i] = __double2ll_rn(x);
    }
}

extern "C" __global__ void intToFloat(const int* a, const long long* b, float* fout, double* dout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i];
        long long y = b[i];
        fout[6 * i + 0] = __int2float_rn(x);
        fout[6 * i + 1] = __int2float_rz(x);
        fout[6 * i + 2] = __int2float_rd(x);
        fout[6 * i + 3] = __int2float_ru(x);
        fout[6 * i + 4] = __uint2float_rn((unsigned)x);
        fout[6 * i + 5] = __ll2float_rz(y);
        dout[2 * i + 0] = __ll2double_rn(y);
        dout[2 * i + 1] = __ull2double_rz((unsigned long long)y);
    }
}

extern "C" __global__ void saturateAndNarrow(const float* a, const int* b, float* fout, int* iout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        int y = b[i];
        fout[2 * i + 0] = __saturatef(x);
        fout[2 * i + 1] = (float)(signed char)y + (float)(unsigned short)y;
        iout[4 * i + 0] = (int)(unsigned char)y;
        iout[4 * i + 1] = (int)(short)y;
        iout[4 * i + 2] = (int)(signed char)(y >> 3);
        unsigned short sat;
        asm("cvt.rni.sat.u8.f32 %0, %1;" : "=h"(sat) : "f"(x * 100.0f));
        iout[4 * i + 3] = sat;
    }
}

extern "C" __global__ void roundedArith(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i], y = b[i];
        float* o = out + 11 * i;
        o[0] = __fadd_rn(x, y);
        o[1] = __fadd_rz(x, y);
        o[2] = __fadd_rd(x, y);
        o[3] = __fadd_ru(x, y);
        o[4] = __fmul_rn(x, y);
        o[5] = __fmul_rz(x, y);
        o[6] = __fmul_rd(x, y);
        o[7] = __fmul_ru(x, y);
        o[8] = __fdiv_rn(x, y);
        o[9] = __fsqrt_rn(fabsf(x));
        o[10] = __frcp_rn(y);
    }
}

// Float rounding functions: rint, floor, ceil, trunc, round; f32 and f64.
extern "C" __global__ void roundingFunctions(const float* a, const double* b, float* fout, double* dout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        double y = b[i];
        fout[5 * i + 0] = rintf(x);
        fout[5 * i + 1] = floorf(x);
        fout[5 * i + 2] = ceilf(x);
        fout[5 * i + 3] = truncf(x);
        fout[5 * i + 4] = roundf(x);
        dout[5 * i + 0] = rint(y);
        dout[5 * i + 1] = floor(y);
        dout[5 * i + 2] = ceil(y);
        dout[5 * i + 3] = trunc(y);
        dout[5 * i + 4] = round(y);
    }
}
