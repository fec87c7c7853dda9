// NVIDIA developer blog, "CUDA Pro Tip: Optimized Filtering with Warp-Aggregated Atomics":
// keep the positive elements, each warp's active threads taking their output slots with one
// atomicAdd by the group's leader (cooperative groups' coalesced_threads()).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ int atomicAggInc(int *ctr) {
  auto g = cg::coalesced_threads();
  int warp_res;
  if (g.thread_rank() == 0)
    warp_res = atomicAdd(ctr, g.size());
  return g.shfl(warp_res, 0) + g.thread_rank();
}

__global__ void filter_k(int *dst, int *nres, const int *src, int n) {
  int i = threadIdx.x + blockIdx.x * blockDim.x;
  if (i < n && src[i] > 0)
    dst[atomicAggInc(nres)] = src[i];
}
