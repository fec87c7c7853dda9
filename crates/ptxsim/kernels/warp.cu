// Warp intrinsics: shuffles (all modes, full and partial widths), votes, activemask, syncwarp.
// Every lane of a launched warp takes part in the full-mask intrinsics; out-of-range lanes
// contribute 0 and store nothing.

extern "C" __global__ void shuffleModes(const int* in, int* up, int* down, int* xr, int* idx, int n, int delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? in[i] : 0;
    int a = __shfl_up_sync(0xffffffffu, v, delta);
    int b = __shfl_down_sync(0xffffffffu, v, delta);
    int c = __shfl_xor_sync(0xffffffffu, v, delta);
    int d = __shfl_sync(0xffffffffu, v, (lane * 7 + delta) & 31);
    if (i < n) {
        up[i] = a;
        down[i] = b;
        xr[i] = c;
        idx[i] = d;
    }
}

// Sub-warp widths: shuffles confined to segments of 8 and 16 lanes.
extern "C" __global__ void shuffleWidths(const float* in, float* out8, float* out16, double* outd, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    float a = __shfl_down_sync(0xffffffffu, v, 3, 8);
    float b = __shfl_sync(0xffffffffu, v, 5, 16);
    float c = __shfl_up_sync(0xffffffffu, v, 2, 16);
    double d = __shfl_xor_sync(0xffffffffu, (double)v * 2.0, 4, 8);
    if (i < n) {
        out8[i] = a;
        out16[2 * i] = b;
        out16[2 * i + 1] = c;
        outd[i] = d;
    }
}

extern "C" __global__ void votes(const int* in, int* all, int* any, unsigned* ballot, int* uni, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int a = __all_sync(0xffffffffu, v > 0);
    int b = __any_sync(0xffffffffu, v > 1000);
    unsigned c = __ballot_sync(0xffffffffu, v & 1);
    int d = __uni_sync(0xffffffffu, v >= 0);
    if (i < n) {
        all[i] = a;
        any[i] = b;
        ballot[i] = c;
        uni[i] = d;
    }
}

// __activemask and a partial-mask ballot inside divergent branches.
extern "C" __global__ void activeMask(const int* in, unsigned* mask, unsigned* ballot, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int v = in[i];
    if (v % 3 == 0) {
        unsigned m = __activemask();
        mask[i] = m;
        ballot[i] = __ballot_sync(m, v & 4);
    } else {
        unsigned m = __activemask();
        mask[i] = m;
        ballot[i] = __ballot_sync(m, v & 8);
    }
}

// Lanes exchange through shared memory ordered only by __syncwarp (no block barrier).
extern "C" __global__ void syncwarpExchange(const int* in, int* out, int n)
{
    __shared__ int s[8][32];
    int tid = threadIdx.x;
    int lane = tid & 31;
    int warp = tid >> 5;
    int i = blockIdx.x * blockDim.x + tid;
    s[warp][lane] = (i < n) ? in[i] : 0;
    __syncwarp();
    int a = s[warp][lane ^ 1];
    int b = s[warp][31 - lane];
    __syncwarp();
    s[warp][lane] = a + b;
    __syncwarp();
    if (i < n) {
        out[i] = s[warp][(lane + 5) & 31];
    }
}

// Lane and warp special registers read with inline PTX.
extern "C" __global__ void laneIds(unsigned* lane, unsigned* nwarps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned l, nw;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    asm volatile("mov.u32 %0, %%nwarpid;" : "=r"(nw));
    if (i < n) {
        lane[i] = l;
        nwarps[i] = nw;
    }
}
