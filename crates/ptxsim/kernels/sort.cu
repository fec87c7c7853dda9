// Bitonic sort of each block's segment in shared memory (blockDim.x must be a power of two);
// missing elements are padded with the maximum value.

extern "C" __global__ void bitonicSortBlock(const unsigned* in, unsigned* out, int n)
{
    extern __shared__ unsigned s[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0xffffffffu;
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned partner = tid ^ j;
            if (partner > tid) {
                bool ascending = (tid & k) == 0;
                unsigned a = s[tid];
                unsigned b = s[partner];
                if ((a > b) == ascending) {
                    s[tid] = b;
                    s[partner] = a;
                }
            }
            __syncthreads();
        }
    }
    if (i < n) {
        out[i] = s[tid];
    }
}

// Odd-even transposition sort of 64-bit keys within a warp using shuffles only.
extern "C" __global__ void warpOddEvenSort(const long long* in, long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    long long v = (i < n) ? in[i] : 0x7fffffffffffffffll;
    for (int phase = 0; phase < 32; ++phase) {
        bool evenPair = ((lane & 1) == (phase & 1));
        int partner = evenPair ? lane + 1 : lane - 1;
        long long other = __shfl_sync(0xffffffffu, v, partner & 31);
        if (partner >= 0 && partner < 32) {
            bool keepMin = evenPair;
            v = keepMin ? min(v, other) : max(v, other);
        }
    }
    if (i < n) {
        out[i] = v;
    }
}
