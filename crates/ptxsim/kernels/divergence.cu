// Divergence-heavy control flow: lanes of one warp take different paths and must reconverge.

// Early return for some lanes, inside and outside the range check.
extern "C" __global__ void earlyReturn(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int v = in[i];
    if (v < 0) {
        out[i] = -1;
        return;
    }
    if ((v & 3) == 0) {
        out[i] = v / 4;
        return;
    }
    out[i] = v * 3 + 1;
}

// break and continue in a loop whose exit depends on the data.
extern "C" __global__ void breakContinue(const int* in, int* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int acc = 0;
    for (int k = 0; k < m; ++k) {
        int v = in[(i + k) % n];
        if (v % 3 == 0) {
            continue;
        }
        if (v % 7 == 0) {
            break;
        }
        acc += v;
    }
    out[i] = acc;
}

// Nested ifs with else chains, 8 distinct paths per warp.
extern "C" __global__ void nestedIfs(const int* a, const int* b, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i];
        int y = b[i];
        int r;
        if (x > 0) {
            if (y > 0) {
                if (x > y) {
                    r = x - y;
                } else {
                    r = y - x;
                }
            } else {
                if (x + y > 0) {
                    r = x * 2;
                } else {
                    r = y * 2;
                }
            }
        } else {
            if (y > 0) {
                r = x ^ y;
            } else if (y < -100) {
                r = x | y;
            } else {
                r = x & y;
            }
        }
        out[i] = r;
    }
}

// Per-lane trip counts: Collatz steps until 1 (capped), every lane loops a different number of
// times.
extern "C" __global__ void collatzSteps(const unsigned* start, unsigned* steps, int n, unsigned cap)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long x = start[i];
        unsigned s = 0;
        while (x != 1 && s < cap) {
            x = (x & 1) ? 3 * x + 1 : x / 2;
            ++s;
        }
        steps[i] = s;
    }
}

// Divergent lanes that each run a loop with a barrier-free inner branch and a switch.
extern "C" __global__ void switchLoop(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int v = in[i];
    int trips = v & 15;
    int acc = 0;
    for (int k = 0; k < trips; ++k) {
        switch ((v + k) & 3) {
        case 0:
            acc += k;
            break;
        case 1:
            acc -= 2 * k;
            break;
        case 2:
            acc ^= v;
            break;
        default:
            acc = acc * 3 + 1;
            break;
        }
    }
    out[i] = acc;
}

// Divergence followed by a barrier: lanes diverge, reconverge, then synchronise the block.
extern "C" __global__ void divergeThenSync(const int* in, int* out, int n)
{
    __shared__ int s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int v = (i < n) ? in[i] : 0;
    int r = 0;
    while (v > 0) {
        r += v & 1;
        v >>= 1;
    }
    s[tid] = r;
    __syncthreads();
    if (i < n) {
        out[i] = s[tid] + s[blockDim.x - 1 - tid];
    }
}
