// Engine tests: cp.async pipelines, cooperative groups, lop3-style bit logic, elect.
#include <cuda_pipeline.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void pipeline_copy(const float* in, float* out, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) __pipeline_memcpy_async(&tile[t], &in[i], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    if (i < n) out[i] = tile[blockDim.x - 1 - t] * 2.0f;
}

extern "C" __global__ void groups(const int* in, int* out, int n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> tile8 = cg::tiled_partition<8>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    int s = v;
    for (int o = 16; o > 0; o /= 2) s += warp.shfl_down(s, o);
    int m8 = v;
    for (int o = 4; o > 0; o /= 2) m8 = max(m8, tile8.shfl_xor(m8, o));
    block.sync();
    if (i < n) {
        out[3 * i] = warp.thread_rank() == 0 ? s : -1;
        out[3 * i + 1] = m8;
        out[3 * i + 2] = (v & 0x0F0F) ^ (~v & 0x3333) | (v & ~0x5555);
    }
}
