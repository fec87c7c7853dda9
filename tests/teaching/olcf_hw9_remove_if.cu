// OLCF/NERSC CUDA Training Series, homework 9 (cooperative groups) task 2 solution: stream
// compaction in one kernel, a block-wide prefix sum of the keep flags, a grid-wide sync, then
// each kept element moved to its place (needs a cooperative launch).
#include <stdio.h>
#include <stdlib.h>
#include <cooperative_groups.h>

typedef int mytype;
const int nTPB = 256;

template <typename T>
__device__ unsigned predicate_test(T data, T testval) {
    return data == testval ? 0 : 1;
}

using namespace cooperative_groups;

// dsize must be a multiple of nTPB
template <typename T>
__global__ void my_remove_if(const T * __restrict__ idata, const T remove_val, T * __restrict__ odata, unsigned * __restrict__ idxs, const unsigned dsize)
{
    __shared__ unsigned sidxs[nTPB];
    auto g = this_thread_block();
    auto gg = this_grid();
    unsigned tidx = g.thread_rank();
    unsigned gidx = tidx + nTPB * g.group_index().x;
    unsigned gridSize = g.size() * gridDim.x;
    // each block: inclusive prefix sum of the flags of its chunk
    for (unsigned i = gidx; i < dsize; i += gridSize) {
        unsigned temp = predicate_test(idata[i], remove_val);
        sidxs[tidx] = temp;
        for (int j = 1; j < g.size(); j <<= 1) {
            g.sync();
            if (j <= tidx) temp += sidxs[tidx - j];
            g.sync();
            if (j <= tidx) sidxs[tidx] = temp;
        }
        idxs[i] = temp;
        g.sync();
    }
    gg.sync();
    // add the totals of the chunks before this one, and move the element
    unsigned stride = 0;
    for (unsigned i = gidx; i < dsize; i += gridSize) {
        T temp = idata[i];
        if (predicate_test(temp, remove_val)) {
            unsigned my_idx = idxs[i];
            for (unsigned j = 1; (j - 1) < (g.group_index().x + (stride * gridDim.x)); j++)
                my_idx += idxs[j * nTPB - 1];
            odata[my_idx - 1] = temp;
        }
        stride++;
    }
}
