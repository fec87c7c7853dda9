// Every atomic operation on global memory. Each kernel also writes what the atomic returned,
// so the tests can check the old values as well as the final state.

extern "C" __global__ void atomicAddInt(const int* v, int* sum, int* ticket, int* old, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, v[i]);
        old[i] = atomicAdd(ticket, 1);
    }
}

extern "C" __global__ void atomicAddUnsigned(const unsigned* v, unsigned* sums, int n, int bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&sums[v[i] % bins], v[i]);
    }
}

extern "C" __global__ void atomicAddU64(const unsigned long long* v, unsigned long long* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, v[i]);
    }
}

extern "C" __global__ void atomicAddF32(const float* v, float* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, v[i]);
    }
}

extern "C" __global__ void atomicAddF64(const double* v, double* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, v[i]);
    }
}

// min and max, signed and unsigned, 32 and 64 bits.
extern "C" __global__ void atomicMinMax(const int* v, const unsigned long long* w, int* mins, unsigned* umax,
                                        unsigned long long* wmin, long long* smax, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMin(&mins[0], v[i]);
        atomicMax(&mins[1], v[i]);
        atomicMax(umax, (unsigned)v[i]);
        atomicMin(wmin, w[i]);
        atomicMax(smax, (long long)w[i]);
    }
}

// Exchange: every value ends up either returned to exactly one thread or left in the slot.
extern "C" __global__ void atomicExchChain(const int* v, int* slot, int* old, float* fslot, float* fold, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        old[i] = atomicExch(slot, v[i]);
        fold[i] = atomicExch(fslot, (float)v[i]);
    }
}

// Compare-and-swap loops: a 32-bit counter increment and an f64 add built on 64-bit CAS.
extern "C" __global__ void atomicCasLoops(const double* v, unsigned* counter, double* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned cur = *((volatile unsigned*)counter);
        while (true) {
            unsigned seen = atomicCAS(counter, cur, cur + 1);
            if (seen == cur) {
                break;
            }
            cur = seen;
        }
        unsigned long long* addr = (unsigned long long*)sum;
        unsigned long long oldBits = *addr;
        unsigned long long assumed;
        do {
            assumed = oldBits;
            oldBits = atomicCAS(addr, assumed, __double_as_longlong(v[i] + __longlong_as_double(assumed)));
        } while (assumed != oldBits);
    }
}

extern "C" __global__ void atomicBitwise(const unsigned* v, const unsigned long long* w, unsigned* out,
                                         unsigned long long* out64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAnd(&out[0], v[i]);
        atomicOr(&out[1], v[i]);
        atomicXor(&out[2], v[i]);
        atomicAnd(&out64[0], w[i]);
        atomicOr(&out64[1], w[i]);
        atomicXor(&out64[2], w[i]);
    }
}

// atomicInc wraps to 0 after `limit`; atomicDec wraps to `limit` at 0.
extern "C" __global__ void atomicIncDec(unsigned* counters, unsigned* oldInc, unsigned* oldDec, unsigned limit, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        oldInc[i] = atomicInc(&counters[0], limit);
        oldDec[i] = atomicDec(&counters[1], limit);
    }
}
