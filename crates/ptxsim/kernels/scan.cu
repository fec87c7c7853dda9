// Scans (prefix sums) within one block; each block scans its own blockDim.x elements.

// Inclusive Hillis-Steele scan with double buffering in dynamic shared memory
// (2 * blockDim.x ints).
extern "C" __global__ void scanInclusive(const int* in, int* out, int n)
{
    extern __shared__ int buf[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int pout = 0, pin = 1;
    buf[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        int v = buf[pin * blockDim.x + tid];
        if (tid >= offset) {
            v += buf[pin * blockDim.x + tid - offset];
        }
        buf[pout * blockDim.x + tid] = v;
        __syncthreads();
    }
    if (i < n) {
        out[i] = buf[pout * blockDim.x + tid];
    }
}

// Exclusive Blelloch (work-efficient) scan of 2 * blockDim.x elements per block, unsigned.
extern "C" __global__ void scanExclusiveBlelloch(const unsigned* in, unsigned* out, unsigned* blockSums, int n)
{
    extern __shared__ unsigned temp[];
    int tid = threadIdx.x;
    int m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    temp[2 * tid] = (base + 2 * tid < n) ? in[base + 2 * tid] : 0u;
    temp[2 * tid + 1] = (base + 2 * tid + 1 < n) ? in[base + 2 * tid + 1] : 0u;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset <<= 1;
    }
    if (tid == 0) {
        blockSums[blockIdx.x] = temp[m - 1];
        temp[m - 1] = 0;
    }
    for (int d = 1; d < m; d <<= 1) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            unsigned t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    if (base + 2 * tid < n) {
        out[base + 2 * tid] = temp[2 * tid];
    }
    if (base + 2 * tid + 1 < n) {
        out[base + 2 * tid + 1] = temp[2 * tid + 1];
    }
}

// Warp-level inclusive scan with shfl.up, then a scan of the warp totals: a full block scan
// of f64 values.
extern "C" __global__ void scanWarpShflUp(const double* in, double* out, int n)
{
    __shared__ double warpTotals[32];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int lane = tid & 31;
    int warp = tid >> 5;
    double v = (i < n) ? in[i] : 0.0;
    for (int off = 1; off < 32; off <<= 1) {
        double u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) {
            v += u;
        }
    }
    if (lane == 31) {
        warpTotals[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        int nw = blockDim.x >> 5;
        double t = (lane < nw) ? warpTotals[lane] : 0.0;
        for (int off = 1; off < 32; off <<= 1) {
            double u = __shfl_up_sync(0xffffffffu, t, off);
            if (lane >= off) {
                t += u;
            }
        }
        if (lane < nw) {
            warpTotals[lane] = t;
        }
    }
    __syncthreads();
    if (warp > 0) {
        v += warpTotals[warp - 1];
    }
    if (i < n) {
        out[i] = v;
    }
}
