// The PTX vocabulary test's own source (src/compile/vocabulary_tests.rs): one use of each device
// intrinsic, special register and memory qualifier a CUDA program reaches, so NVRTC's PTX for
// them shows every name ptxsim must know. Nothing here is run; it is compiled and loaded.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__constant__ float c_table[16];
__device__ int d_counter;
__device__ unsigned long long d_wide[4];

__global__ void special_registers(unsigned long long* out) {
    unsigned long long* o = out + 32 * (blockIdx.x * blockDim.x + threadIdx.x);
    unsigned smid, nsmid, warpid, nwarpid, laneid, lt, le, eq, ge, gt, gridid_lo;
    unsigned long long gridid, gtimer, c64;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u32 %0, %%nsmid;" : "=r"(nsmid));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(warpid));
    asm volatile("mov.u32 %0, %%nwarpid;" : "=r"(nwarpid));
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(laneid));
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm volatile("mov.u32 %0, %%lanemask_le;" : "=r"(le));
    asm volatile("mov.u32 %0, %%lanemask_eq;" : "=r"(eq));
    asm volatile("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    asm volatile("mov.u32 %0, %%lanemask_gt;" : "=r"(gt));
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(gridid));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gtimer));
    asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(gridid_lo));
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c64));
    unsigned dyn, total;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
    o[0] = smid; o[1] = nsmid; o[2] = warpid; o[3] = nwarpid; o[4] = laneid;
    o[5] = lt; o[6] = le; o[7] = eq; o[8] = ge; o[9] = gt; o[10] = gridid; o[11] = gtimer;
    o[12] = gridid_lo; o[13] = c64; o[14] = clock(); o[15] = clock64(); o[16] = dyn; o[17] = total;
    o[18] = warpSize; o[19] = gridDim.x * gridDim.y * gridDim.z; o[20] = blockDim.z;
    o[21] = __activemask();
}

__global__ void memory_hints(const float* __restrict__ a, float* b, const float4* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = __ldg(a + i) + __ldcg(a + i) + __ldca(a + i) + __ldcs(a + i) + __ldlu(a + i) + __ldcv(a + i);
    float4 q = __ldg(v + i);
    s += q.x + q.y + q.z + q.w + c_table[i & 15];
    __stwb(b + i, s);
    __stcg(b + i, s + 1.0f);
    __stcs(b + i, s + 2.0f);
    __stwt(b + i, s + 3.0f);
    __threadfence_block();
    __threadfence();
    __threadfence_system();
    int shared_q = __isShared(b) + 2 * __isGlobal(b) + 4 * __isConstant(b) + 8 * __isLocal(b);
    if (shared_q == 99) b[0] = 0.0f;
    asm volatile("prefetch.global.L2 [%0];" :: "l"(a + i));
    atomicAdd(&d_counter, 1);
    d_wide[i & 3] += 1;
}

__global__ void integer_intrinsics(const unsigned* a, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = a[(i + 1) % n];
    unsigned* o = out + 24 * i;
    o[0] = __sad((int)x, (int)y, 3u);
    o[1] = __usad(x, y, 5u);
    o[2] = __dp4a(x, y, 7u);
    o[3] = __dp2a_lo(x, y, 1u);
    o[4] = __dp2a_hi(x, y, 2u);
    o[5] = __vabsdiffu4(x, y);
    o[6] = __vadd4(x, y);
    o[7] = __vsub2(x, y);
    o[8] = __vmaxu4(x, y);
    o[9] = __vcmpeq4(x, y);
    o[10] = __rhadd((int)x, (int)y);
    o[11] = __uhadd(x, y);
    o[12] = __fns(x, 0, 1);
    o[13] = __umul24(x, y);
    o[14] = __vsetgtu2(x, y);
    o[15] = __vavgu4(x, y);
    o[16] = __vabs2(x);
    o[17] = __vneg4(x);
    o[18] = __viaddmax_s32((int)x, (int)y, 3);
    o[19] = __vimax3_u32(x, y, 9u);
    unsigned f; asm("bfe.u32 %0, %1, 4, 8;" : "=r"(f) : "r"(x)); o[20] = f;
}

__global__ void float_intrinsics(const float* a, const double* d, float* out, double* dout, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = a[(i + 1) % n];
    double u = d[i], w = d[(i + 1) % n];
    float* o = out + 48 * i;
    o[0] = __fadd_rz(x, y); o[1] = __fsub_ru(x, y); o[2] = __fmul_rd(x, y); o[3] = __fdiv_rn(x, y);
    o[4] = __fmaf_rz(x, y, 1.0f); o[5] = __frcp_ru(x); o[6] = __fsqrt_rd(x); o[7] = __frsqrt_rn(x);
    o[8] = __sinf(x); o[9] = __cosf(x); o[10] = __expf(x); o[11] = __logf(x); o[12] = __powf(x, y);
    o[13] = __tanf(x); o[14] = __exp10f(x); o[15] = __log2f(x); o[16] = __log10f(x);
    o[17] = __saturatef(x); o[18] = __fdividef(x, y);
    o[19] = erff(x); o[20] = lgammaf(x); o[21] = tgammaf(x); o[22] = cbrtf(x); o[23] = nextafterf(x, y);
    o[24] = fmodf(x, y); int q; o[25] = remquof(x, y, &q); o[26] = (float)q;
    float s, c; sincosf(x, &s, &c); o[27] = s + c; sincospif(x, &s, &c); o[28] = s - c;
    o[29] = rnormf(3, a + i); o[30] = normcdff(x); o[31] = erfcinvf(x); o[32] = j0f(x); o[33] = y1f(x);
    o[34] = __int2float_rz(i); o[35] = __uint2float_ru(i); o[36] = __ll2float_rd(i); o[37] = __fmul_rn(x, y);
    o[38] = (float)__float2int_rz(x) + (float)__float2uint_ru(y) + (float)__float2ll_rd(x) + (float)__float2ull_rn(y);
    o[39] = __int_as_float(__float_as_int(x) ^ 1) + __uint_as_float(__float_as_uint(y));
    o[40] = copysignf(x, y) + fdimf(x, y) + frexpf(x, &q) + ldexpf(x, 3) + logbf(x) + (float)ilogbf(y);
    o[41] = roundf(x) + rintf(y) + truncf(x) + nearbyintf(y) + (float)lrintf(x) + (float)llroundf(y);
    o[42] = (float)(isnan(x) + isinf(y) + isfinite(x) + signbit(y));
    double* e = dout + 16 * i;
    e[0] = __dadd_rn(u, w); e[1] = __dsub_rz(u, w); e[2] = __dmul_ru(u, w); e[3] = __ddiv_rd(u, w);
    e[4] = __fma_rn(u, w, 1.0); e[5] = __drcp_rz(u); e[6] = __dsqrt_ru(u); e[7] = __double2float_rd(u);
    e[8] = (double)__double2int_rz(u) + (double)__double2ll_ru(w) + (double)__double2uint_rd(u);
    e[9] = __longlong_as_double(__double_as_longlong(u) ^ 1) + __hiloint2double(__double2hiint(u), __double2loint(w));
    e[10] = rsqrt(u) + exp2(w) + expm1(u) + log1p(w) + atan2(u, w) + hypot(u, w) + erfc(u) + sinpi(w);
    e[11] = __ll2double_rz(i) + __ull2double_ru(i) + __int2double_rn(i);
}

__global__ void warp_and_block(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = i < n ? a[i] : 0;
    unsigned m = __activemask();
    int* o = out + 16 * i;
    o[0] = __shfl_sync(m, x, 0); o[1] = __shfl_up_sync(m, x, 1); o[2] = __shfl_down_sync(m, x, 2);
    o[3] = __shfl_xor_sync(m, x, 4); o[4] = __ballot_sync(m, x > 0); o[5] = __all_sync(m, x > 0);
    o[6] = __any_sync(m, x > 0); o[7] = __uni_sync(m, x > 0);
    o[8] = __match_any_sync(m, x); int pred; o[9] = __match_all_sync(m, x, &pred) + pred;
    o[10] = __reduce_add_sync(m, (unsigned)x); o[11] = __reduce_min_sync(m, x); o[12] = __reduce_max_sync(m, (unsigned)x);
    o[13] = __reduce_and_sync(m, (unsigned)x) ^ __reduce_or_sync(m, (unsigned)x) ^ __reduce_xor_sync(m, (unsigned)x);
    __syncwarp(m);
    o[14] = __syncthreads_count(x > 0) + __syncthreads_and(x > 0) + __syncthreads_or(x > 0);
    cg::thread_block b = cg::this_thread_block();
    cg::thread_block_tile<32> t = cg::tiled_partition<32>(b);
    cg::coalesced_group g = cg::coalesced_threads();
    o[15] = t.shfl(x, 3) + g.thread_rank() + (int)b.group_index().x + t.any(x > 2) + g.ballot(x > 1);
    b.sync();
    __nanosleep(10);
}

__global__ void atomics_every_kind(int* i32, unsigned* u32, unsigned long long* u64, float* f32, double* f64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(i32, 1); atomicSub(i32 + 1, 1); atomicExch(i32 + 2, i); atomicMin(i32 + 3, i); atomicMax(i32 + 4, i);
    atomicAnd(i32 + 5, i); atomicOr(i32 + 6, i); atomicXor(i32 + 7, i); atomicCAS(i32 + 8, 0, i);
    atomicInc(u32, 7u); atomicDec(u32 + 1, 7u); atomicMin(u32 + 2, 3u); atomicMax(u32 + 3, 3u);
    atomicAdd(u64, 1ull); atomicMin(u64 + 1, 5ull); atomicMax(u64 + 2, 5ull); atomicCAS(u64 + 3, 0ull, 1ull);
    atomicAnd(u64 + 4, 1ull); atomicOr(u64 + 5, 1ull); atomicXor(u64 + 6, 1ull); atomicExch(u64 + 7, 9ull);
    atomicAdd(f32, 1.0f); atomicExch(f32 + 1, 2.0f); atomicAdd(f64, 1.0);
    atomicAdd_block(i32 + 9, 1); atomicAdd_system(i32 + 10, 1); atomicCAS_block(i32 + 11, 0, 1);
    atomicMin((long long*)u64 + 8, (long long)i); atomicMax((long long*)u64 + 9, (long long)i);
    __shared__ int s[4];
    if (threadIdx.x < 4) s[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(s, 1); atomicMax(s + 1, i); atomicInc((unsigned*)s + 2, 3u); atomicCAS(s + 3, 0, 1);
    __syncthreads();
    if (threadIdx.x == 0) i32[12] += s[0] + s[1] + s[2] + s[3];
}

__device__ int recurse(int k) { return k <= 0 ? 0 : 1 + recurse(k - 1); }

__global__ void calls_traps_printf(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = recurse(i & 7);
    assert(out[i] >= 0);
    if (out[i] < 0) __trap();
    if (i == 0) printf("calls_traps_printf: %d of %d, %f\n", i, n, 1.5);
    int local[8];
    for (int k = 0; k < 8; ++k) local[k] = k * i;
    out[i] += local[i & 7];
    char buf[16];
    memset(buf, i & 0x7f, sizeof buf);
    char buf2[16];
    memcpy(buf2, buf, sizeof buf);
    out[i] += buf2[3];
}

__global__ void dynamic_shared_and_cvta(float* out) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = threadIdx.x;
    __syncthreads();
    unsigned addr = (unsigned)__cvta_generic_to_shared(dyn + threadIdx.x);
    float* back = (float*)__cvta_shared_to_generic(addr);
    out[threadIdx.x] = *back + dyn[(threadIdx.x + 1) % blockDim.x];
}
