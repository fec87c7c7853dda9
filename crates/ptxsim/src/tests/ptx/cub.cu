// Engine tests: CUB block and warp collectives (reduce, scan, radix sort).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void cubk(const int* in, int* out, float* fo, int n) {
    using BR = cub::BlockReduce<int, 128>;
    using BS = cub::BlockScan<int, 128>;
    using WR = cub::WarpReduce<float>;
    using RS = cub::BlockRadixSort<int, 128, 4>;
    __shared__ typename BR::TempStorage t1;
    __shared__ typename BS::TempStorage t2;
    __shared__ typename WR::TempStorage t3[4];
    __shared__ typename RS::TempStorage t4;
    int i = blockIdx.x * 128 + threadIdx.x;
    int v = i < n ? in[i] : 0;
    int s = BR(t1).Sum(v);
    int pre;
    BS(t2).ExclusiveSum(v, pre);
    float f = WR(t3[threadIdx.x / 32]).Sum((float)v);
    int keys[4] = {v, v * 3, -v, v ^ 5};
    RS(t4).Sort(keys);
    if (i < n) { out[i] = pre; fo[i] = f; out[n + 4 * i] = keys[0]; out[n + 4*i+1] = keys[1]; out[n+4*i+2]=keys[2]; out[n+4*i+3]=keys[3]; }
    if (threadIdx.x == 0) out[5 * n + blockIdx.x] = s;
}
