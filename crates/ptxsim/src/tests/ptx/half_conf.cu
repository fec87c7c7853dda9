// Conformance of f16/bf16 (cuda_fp16.h, cuda_bf16.h): per element of random inputs, every
// operation of those headers that NVRTC lowers to distinct PTX, as raw bits in and out. The
// output layouts (K results per element, out[K * i + j]) are listed in tests/half_conf.rs.
//
// PTX produced by gen_ptx.py (NVRTC 12.9, pip nvidia-cuda-nvrtc-cu12 12.9.86; cuda_fp16.h(pp)
// and cuda_bf16.h(pp) of nvidia-cuda-runtime-cu12 12.9.79 given as in-memory headers) with
//   --gpu-architecture=compute_80 -lineinfo --std=c++17   -> half_conf_80.ptx
//   --gpu-architecture=compute_90 -lineinfo --std=c++17   -> half_conf_90.ptx
// Program name /ptxsim/half_conf.cu. On compute_80 several bf16 operations are library code
// (add/sub/mul through fma.rn.bf16, comparisons through f32, directed conversions in integer
// code); on compute_90 they are single instructions, so the two files test different PTX.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef unsigned short u16;
typedef unsigned long long u64;

#define IDX                                        \
    int i = blockIdx.x * blockDim.x + threadIdx.x; \
    if (i >= n) return;

// Scalar ops of T: 19 results. `H` to bits, `HB` from bits.
#define SCALAR_OPS(T, H, HB)                                              \
    T x = HB(a[i]), y = HB(b[i]), z = HB(c[i]);                           \
    u16* o = out + 19 * i;                                                \
    o[0] = H(__hadd(x, y));                                               \
    o[1] = H(__hsub(x, y));                                               \
    o[2] = H(__hmul(x, y));                                               \
    o[3] = H(__hfma(x, y, z));                                            \
    o[4] = H(__hadd_sat(x, y));                                           \
    o[5] = H(__hsub_sat(x, y));                                           \
    o[6] = H(__hmul_sat(x, y));                                           \
    o[7] = H(__hfma_sat(x, y, z));                                        \
    o[8] = H(__hfma_relu(x, y, z));                                       \
    o[9] = H(__hmax(x, y));                                               \
    o[10] = H(__hmin(x, y));                                              \
    o[11] = H(__hmax_nan(x, y));                                          \
    o[12] = H(__hmin_nan(x, y));                                          \
    o[13] = H(__hneg(x));                                                 \
    o[14] = H(__habs(x));                                                 \
    o[15] = H(__hdiv(x, y));                                              \
    o[16] = H(__hadd_rn(x, y));                                           \
    o[17] = H(__hsub_rn(x, y));                                           \
    o[18] = H(__hmul_rn(x, y));

extern "C" __global__ void half_arith(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    SCALAR_OPS(__half, __half_as_ushort, __ushort_as_half)
}

extern "C" __global__ void bf16_arith(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    SCALAR_OPS(__nv_bfloat16, __bfloat16_as_ushort, __ushort_as_bfloat16)
}

// Packed ops of T2 on p = (x, y), q = (y, z), r = (z, x) (low, high): 19 results of two halves.
#define PAIR_OPS(T, T2, H, HB, PAIR, LOW, HIGH)                                      \
    T x = HB(a[i]), y = HB(b[i]), z = HB(c[i]);                           \
    T2 p = PAIR(x, y), q = PAIR(y, z), r = PAIR(z, x);                    \
    u16* o = out + 38 * i;                                                \
    T2 v[19] = {__hadd2(p, q), __hsub2(p, q), __hmul2(p, q),              \
                __hfma2(p, q, r), __hadd2_sat(p, q), __hsub2_sat(p, q),   \
                __hmul2_sat(p, q), __hfma2_sat(p, q, r),                  \
                __hfma2_relu(p, q, r), __hmax2(p, q), __hmin2(p, q),      \
                __hmax2_nan(p, q), __hmin2_nan(p, q), __hneg2(p),         \
                __habs2(p), __h2div(p, q), __hadd2_rn(p, q),              \
                __hsub2_rn(p, q), __hmul2_rn(p, q)};                      \
    for (int k = 0; k < 19; k++) {                                        \
        o[2 * k] = H(LOW(v[k]));                                          \
        o[2 * k + 1] = H(HIGH(v[k]));                                     \
    }

extern "C" __global__ void half2_arith(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    PAIR_OPS(__half, __half2, __half_as_ushort, __ushort_as_half, __halves2half2, __low2half,
             __high2half)
}

extern "C" __global__ void bf162_arith(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    PAIR_OPS(__nv_bfloat16, __nv_bfloat162, __bfloat16_as_ushort, __ushort_as_bfloat16,
             __halves2bfloat162, __low2bfloat16, __high2bfloat16)
}

// Comparisons of x and y: out[2 * i] = bit k for comparison k (eq ne lt le gt ge equ neu ltu
// leu gtu geu, then bit 12 isnan(x)); out[2 * i + 1] = (u16)isinf(x).
#define SCALAR_CMP(T, HB)                                                               \
    T x = HB(a[i]), y = HB(b[i]);                                                       \
    bool r[13] = {__heq(x, y),  __hne(x, y),  __hlt(x, y),  __hle(x, y),  __hgt(x, y),  \
                  __hge(x, y),  __hequ(x, y), __hneu(x, y), __hltu(x, y), __hleu(x, y), \
                  __hgtu(x, y), __hgeu(x, y), __hisnan(x)};                             \
    unsigned m = 0;                                                                     \
    for (int k = 0; k < 13; k++) m |= (unsigned)r[k] << k;                              \
    out[2 * i] = (u16)m;                                                                \
    out[2 * i + 1] = (u16)__hisinf(x);

extern "C" __global__ void half_cmp(const u16* a, const u16* b, u16* out, int n) {
    IDX
    SCALAR_CMP(__half, __ushort_as_half)
}

extern "C" __global__ void bf16_cmp(const u16* a, const u16* b, u16* out, int n) {
    IDX
    SCALAR_CMP(__nv_bfloat16, __ushort_as_bfloat16)
}

// Packed comparisons of p = (x, y) and q = (y, z), 51 results: for each comparison k of the 12
// (order as above), out[2k], out[2k+1] = __h<cmp>2 (1.0 or 0.0 per half, low then high);
// out[24 + 2k], out[25 + 2k] = __h<cmp>2_mask (low, high 16 bits); out[48] = bit k for
// __hb<cmp>2 (both halves); out[49], out[50] = __hisnan2(p).
#define PAIR_CMP(T, T2, H, HB, PAIR, LOW, HIGH)                                              \
    T x = HB(a[i]), y = HB(b[i]), z = HB(c[i]);                                              \
    T2 p = PAIR(x, y), q = PAIR(y, z);                                                       \
    u16* o = out + 51 * i;                                                                   \
    T2 v[12] = {__heq2(p, q),  __hne2(p, q),  __hlt2(p, q),  __hle2(p, q),                   \
                __hgt2(p, q),  __hge2(p, q),  __hequ2(p, q), __hneu2(p, q),                  \
                __hltu2(p, q), __hleu2(p, q), __hgtu2(p, q), __hgeu2(p, q)};                 \
    unsigned mk[12] = {__heq2_mask(p, q),  __hne2_mask(p, q),  __hlt2_mask(p, q),            \
                       __hle2_mask(p, q),  __hgt2_mask(p, q),  __hge2_mask(p, q),            \
                       __hequ2_mask(p, q), __hneu2_mask(p, q), __hltu2_mask(p, q),           \
                       __hleu2_mask(p, q), __hgtu2_mask(p, q), __hgeu2_mask(p, q)};          \
    bool bb[12] = {__hbeq2(p, q),  __hbne2(p, q),  __hblt2(p, q),  __hble2(p, q),            \
                   __hbgt2(p, q),  __hbge2(p, q),  __hbequ2(p, q), __hbneu2(p, q),           \
                   __hbltu2(p, q), __hbleu2(p, q), __hbgtu2(p, q), __hbgeu2(p, q)};          \
    unsigned m = 0;                                                                          \
    for (int k = 0; k < 12; k++) {                                                           \
        o[2 * k] = H(LOW(v[k]));                                                             \
        o[2 * k + 1] = H(HIGH(v[k]));                                                        \
        o[24 + 2 * k] = (u16)mk[k];                                                          \
        o[25 + 2 * k] = (u16)(mk[k] >> 16);                                                  \
        m |= (unsigned)bb[k] << k;                                                           \
    }                                                                                        \
    o[48] = (u16)m;                                                                          \
    T2 nn = __hisnan2(p);                                                                    \
    o[49] = H(LOW(nn));                                                                      \
    o[50] = H(HIGH(nn));

extern "C" __global__ void half2_cmp(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    PAIR_CMP(__half, __half2, __half_as_ushort, __ushort_as_half, __halves2half2, __low2half,
             __high2half)
}

extern "C" __global__ void bf162_cmp(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    PAIR_CMP(__nv_bfloat16, __nv_bfloat162, __bfloat16_as_ushort, __ushort_as_bfloat16,
             __halves2bfloat162, __low2bfloat16, __high2bfloat16)
}

// From f32 bits fa[i] = x, fb[i] = y, 22 results: half rn rz rd ru, __float2half, bf16 rn rz rd
// ru, __float2bfloat16, then (low, high) pairs: __floats2half2_rn(x, y), __float22half2_rn((x,
// y)), __float2half2_rn(x), __floats2bfloat162_rn(x, y), __float22bfloat162_rn((x, y)),
// __float2bfloat162_rn(x).
extern "C" __global__ void from_f32(const unsigned* fa, const unsigned* fb, u16* out, int n) {
    IDX
    float x = __uint_as_float(fa[i]), y = __uint_as_float(fb[i]);
    u16* o = out + 22 * i;
    o[0] = __half_as_ushort(__float2half_rn(x));
    o[1] = __half_as_ushort(__float2half_rz(x));
    o[2] = __half_as_ushort(__float2half_rd(x));
    o[3] = __half_as_ushort(__float2half_ru(x));
    o[4] = __half_as_ushort(__float2half(x));
    o[5] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    o[6] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    o[7] = __bfloat16_as_ushort(__float2bfloat16_rd(x));
    o[8] = __bfloat16_as_ushort(__float2bfloat16_ru(x));
    o[9] = __bfloat16_as_ushort(__float2bfloat16(x));
    __half2 h[3] = {__floats2half2_rn(x, y), __float22half2_rn(make_float2(x, y)),
                    __float2half2_rn(x)};
    __nv_bfloat162 g[3] = {__floats2bfloat162_rn(x, y),
                           __float22bfloat162_rn(make_float2(x, y)), __float2bfloat162_rn(x)};
    for (int k = 0; k < 3; k++) {
        o[10 + 2 * k] = __half_as_ushort(__low2half(h[k]));
        o[11 + 2 * k] = __half_as_ushort(__high2half(h[k]));
        o[16 + 2 * k] = __bfloat16_as_ushort(__low2bfloat16(g[k]));
        o[17 + 2 * k] = __bfloat16_as_ushort(__high2bfloat16(g[k]));
    }
}

// From f64 bits: __double2half, __double2bfloat16.
extern "C" __global__ void from_f64(const u64* d, u16* out, int n) {
    IDX
    double x = __longlong_as_double((long long)d[i]);
    out[2 * i] = __half_as_ushort(__double2half(x));
    out[2 * i + 1] = __bfloat16_as_ushort(__double2bfloat16(x));
}

// To f32 bits, 6 results: __half2float(x), __bfloat162float(x), __half22float2((x, y)) .x .y,
// __bfloat1622float2((x, y)) .x .y.
extern "C" __global__ void to_f32(const u16* a, const u16* b, unsigned* out, int n) {
    IDX
    __half x = __ushort_as_half(a[i]), y = __ushort_as_half(b[i]);
    __nv_bfloat16 u = __ushort_as_bfloat16(a[i]), w = __ushort_as_bfloat16(b[i]);
    unsigned* o = out + 6 * i;
    o[0] = __float_as_uint(__half2float(x));
    o[1] = __float_as_uint(__bfloat162float(u));
    float2 f = __half22float2(__halves2half2(x, y));
    o[2] = __float_as_uint(f.x);
    o[3] = __float_as_uint(f.y);
    float2 g = __bfloat1622float2(__halves2bfloat162(u, w));
    o[4] = __float_as_uint(g.x);
    o[5] = __float_as_uint(g.y);
}

// To integers (each widened to 64 bits, signed types sign-extended), 52 results: for half then
// bf16, per destination type int, uint, short, ushort, ll, ull the modes rn rz rd ru (24), then
// __half2char_rz, __half2uchar_rz, __bfloat162char_rz, __bfloat162uchar_rz.
#define TO_INT(P, X, O)                                                      \
    O[0] = (u64)(long long)P##2int_rn(X);                                    \
    O[1] = (u64)(long long)P##2int_rz(X);                                    \
    O[2] = (u64)(long long)P##2int_rd(X);                                    \
    O[3] = (u64)(long long)P##2int_ru(X);                                    \
    O[4] = (u64)P##2uint_rn(X);                                              \
    O[5] = (u64)P##2uint_rz(X);                                              \
    O[6] = (u64)P##2uint_rd(X);                                              \
    O[7] = (u64)P##2uint_ru(X);                                              \
    O[8] = (u64)(long long)P##2short_rn(X);                                  \
    O[9] = (u64)(long long)P##2short_rz(X);                                  \
    O[10] = (u64)(long long)P##2short_rd(X);                                 \
    O[11] = (u64)(long long)P##2short_ru(X);                                 \
    O[12] = (u64)P##2ushort_rn(X);                                           \
    O[13] = (u64)P##2ushort_rz(X);                                           \
    O[14] = (u64)P##2ushort_rd(X);                                           \
    O[15] = (u64)P##2ushort_ru(X);                                           \
    O[16] = (u64)P##2ll_rn(X);                                               \
    O[17] = (u64)P##2ll_rz(X);                                               \
    O[18] = (u64)P##2ll_rd(X);                                               \
    O[19] = (u64)P##2ll_ru(X);                                               \
    O[20] = (u64)P##2ull_rn(X);                                              \
    O[21] = (u64)P##2ull_rz(X);                                              \
    O[22] = (u64)P##2ull_rd(X);                                              \
    O[23] = (u64)P##2ull_ru(X);

extern "C" __global__ void to_int(const u16* a, u64* out, int n) {
    IDX
    __half x = __ushort_as_half(a[i]);
    __nv_bfloat16 u = __ushort_as_bfloat16(a[i]);
    u64* o = out + 52 * i;
    TO_INT(__half, x, o)
    u64* g = o + 24;
    TO_INT(__bfloat16, u, g)
    o[48] = (u64)(long long)__half2char_rz(x);
    o[49] = (u64)__half2uchar_rz(x);
    o[50] = (u64)(long long)__bfloat162char_rz(u);
    o[51] = (u64)__bfloat162uchar_rz(u);
}

// From integers v = d[i] (truncated to the source type), 48 results: for half then bf16, per
// source type int, uint, short, ushort, ll, ull the modes rn rz rd ru.
#define FROM_INT(P, H, V, O)                           \
    O[0] = H(__int2##P##_rn((int)V));                  \
    O[1] = H(__int2##P##_rz((int)V));                  \
    O[2] = H(__int2##P##_rd((int)V));                  \
    O[3] = H(__int2##P##_ru((int)V));                  \
    O[4] = H(__uint2##P##_rn((unsigned)V));            \
    O[5] = H(__uint2##P##_rz((unsigned)V));            \
    O[6] = H(__uint2##P##_rd((unsigned)V));            \
    O[7] = H(__uint2##P##_ru((unsigned)V));            \
    O[8] = H(__short2##P##_rn((short)V));              \
    O[9] = H(__short2##P##_rz((short)V));              \
    O[10] = H(__short2##P##_rd((short)V));             \
    O[11] = H(__short2##P##_ru((short)V));             \
    O[12] = H(__ushort2##P##_rn((unsigned short)V));   \
    O[13] = H(__ushort2##P##_rz((unsigned short)V));   \
    O[14] = H(__ushort2##P##_rd((unsigned short)V));   \
    O[15] = H(__ushort2##P##_ru((unsigned short)V));   \
    O[16] = H(__ll2##P##_rn((long long)V));            \
    O[17] = H(__ll2##P##_rz((long long)V));            \
    O[18] = H(__ll2##P##_rd((long long)V));            \
    O[19] = H(__ll2##P##_ru((long long)V));            \
    O[20] = H(__ull2##P##_rn((u64)V));                 \
    O[21] = H(__ull2##P##_rz((u64)V));                 \
    O[22] = H(__ull2##P##_rd((u64)V));                 \
    O[23] = H(__ull2##P##_ru((u64)V));

extern "C" __global__ void from_int(const u64* d, u16* out, int n) {
    IDX
    u64 v = d[i];
    u16* o = out + 48 * i;
    FROM_INT(half, __half_as_ushort, v, o)
    u16* g = o + 24;
    FROM_INT(bfloat16, __bfloat16_as_ushort, v, g)
}

// Moves between halves of p = (x, y) and q = (y, z), 16 results per type (half, then bf16):
// halves2(x, y) 2, lowhigh2highlow(p) 2, low2half(p), high2half(p), low2half2(p) 2,
// high2half2(p) 2, lows2half2(p, q) 2, highs2half2(p, q) 2, half2half2(x) 2 (pairs low, high).
#define MOVES(T2, H, HB, PAIR, LOW, HIGH, LOW2, HIGH2, LOWS, HIGHS, DUP, O)   \
    {                                                                         \
        T2 p = PAIR(HB(a[i]), HB(b[i])), q = PAIR(HB(b[i]), HB(c[i]));        \
        O[4] = H(LOW(p));                                                     \
        O[5] = H(HIGH(p));                                                    \
        T2 v[7] = {p, __lowhigh2highlow(p), LOW2(p), HIGH2(p), LOWS(p, q),    \
                   HIGHS(p, q), DUP(HB(a[i]))};                               \
        for (int k = 0; k < 7; k++) {                                         \
            int j = k < 2 ? 2 * k : 2 * k + 2;                                \
            O[j] = H(LOW(v[k]));                                              \
            O[j + 1] = H(HIGH(v[k]));                                         \
        }                                                                     \
    }

extern "C" __global__ void moves(const u16* a, const u16* b, const u16* c, u16* out, int n) {
    IDX
    u16* o = out + 32 * i;
    MOVES(__half2, __half_as_ushort, __ushort_as_half, __halves2half2, __low2half, __high2half,
          __low2half2, __high2half2, __lows2half2, __highs2half2, __half2half2, o)
    u16* g = o + 16;
    MOVES(__nv_bfloat162, __bfloat16_as_ushort, __ushort_as_bfloat16, __halves2bfloat162,
          __low2bfloat16, __high2bfloat16, __low2bfloat162, __high2bfloat162, __lows2bfloat162,
          __highs2bfloat162, __bfloat162bfloat162, g)
}
