// Cooperative launches: grid-wide syncs (cooperative_groups::this_grid().sync()).
// Each kernel's result depends on every block having finished the phase before a sync.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// out[i] = x[i] / sum(x): each block sums its part (a tree in shared memory) into
// partial[block]; after a grid sync thread 0 of the grid adds the partials in block order into
// *total; after a second sync every thread divides by it.
extern "C" __global__ void normalise(const float* x, float* out, float* partial, float* total,
                                     int n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ float s[256];
    unsigned i = (unsigned)grid.thread_rank();
    float v = i < (unsigned)n ? x[i] : 0.0f;
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        float t = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        *total = t;
    }
    grid.sync();
    if (i < (unsigned)n) out[i] = v / *total;
}

// `steps` rounds of a 3-point average over a ring of n values, a grid-stride loop over the
// ring per round and a grid sync after each: the result is in a if steps is even, else in b.
extern "C" __global__ void smooth(float* a, float* b, int n, int steps) {
    cg::grid_group grid = cg::this_grid();
    for (int s = 0; s < steps; ++s) {
        for (unsigned i = (unsigned)grid.thread_rank(); i < (unsigned)n;
             i += (unsigned)grid.size()) {
            unsigned l = i == 0 ? n - 1 : i - 1;
            unsigned r = i + 1 == (unsigned)n ? 0 : i + 1;
            b[i] = (a[l] + a[i] + a[r]) / 3.0f;
        }
        grid.sync();
        float* t = a;
        a = b;
        b = t;
    }
}

// The sync in a function of its own: every block counts itself in, syncs, and reads the count.
__device__ __noinline__ void sync_grid() { cg::this_grid().sync(); }

extern "C" __global__ void count_in(int* counter, int* seen) {
    if (threadIdx.x == 0) atomicAdd(counter, 1);
    sync_grid();
    if (threadIdx.x == 0) seen[blockIdx.y * gridDim.x + blockIdx.x] = *counter;
}

// Block 0 returns early: the other blocks wait at a sync it never reaches (a deadlock on a GPU).
extern "C" __global__ void skips_sync(int* x) {
    if (blockIdx.x == 0) return;
    cg::this_grid().sync();
    x[blockIdx.x] = 1;
}

// No grid sync: not a cooperative kernel.
extern "C" __global__ void plain(float* x) { x[threadIdx.x] += 1.0f; }
