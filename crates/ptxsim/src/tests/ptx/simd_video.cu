// Engine tests: the integer SIMD intrinsics whose PTX is a video instruction (vabsdiff2/4 with
// and without .add), dp2a, fns, and on sm_90 the integer pair instructions
// (add/sub/min/max{.relu}.{u16,s16}x2). One kernel, 16 results per element.
extern "C" __global__ void simd_video(const unsigned* a, const unsigned* b, const int* c, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    int z = c[i];
    unsigned* o = out + 16 * i;
    o[0] = __vabsdiffu4(x, y);
    o[1] = __vsadu4(x, y);
    o[2] = __vsadu2(x, y);
    o[3] = (unsigned)__dp2a_lo((int)x, (int)y, z);
    o[4] = (unsigned)__dp2a_hi((int)x, (int)y, z);
    o[5] = __dp2a_lo(x, y, (unsigned)z);
    o[6] = __dp2a_hi(x, y, (unsigned)z);
    o[7] = __fns(x, (unsigned)z & 31u, (int)(y % 67u) - 33);
    o[8] = __vadd2(x, y);
    o[9] = __vsub2(x, y);
    o[10] = __vmaxs2(x, y);
    o[11] = __vmaxu2(x, y);
    o[12] = __vmins2(x, y);
    o[13] = __vminu2(x, y);
    o[14] = __vimax_s16x2_relu(x, y);
    o[15] = __vimin_s16x2_relu(x, y);
}
