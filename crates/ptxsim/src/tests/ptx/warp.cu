// Engine tests: warp intrinsics.
extern "C" __global__ void warpops(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    int o = i * 12;
    out[o + 0] = __shfl_sync(0xffffffff, v, (lane * 7) & 31);
    out[o + 1] = __shfl_up_sync(0xffffffff, v, 3);
    out[o + 2] = __shfl_down_sync(0xffffffff, v, 5);
    out[o + 3] = __shfl_xor_sync(0xffffffff, v, 6);
    out[o + 4] = __shfl_down_sync(0xffffffff, v, 2, 8);     // width 8
    out[o + 5] = __ballot_sync(0xffffffff, v & 1);
    out[o + 6] = __all_sync(0xffffffff, v > -100);
    out[o + 7] = __any_sync(0xffffffff, v == 3);
    unsigned am = 0;
    if (v & 2) am = __activemask();
    out[o + 8] = am;
    out[o + 9] = __match_any_sync(0xffffffff, v & 3);
    out[o + 10] = __reduce_add_sync(0xffffffff, v);
    out[o + 11] = __popc(v) + __clz(v) + __ffs(v) + __brev(v);
}
