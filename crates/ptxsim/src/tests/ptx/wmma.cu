// Engine tests: tensor cores. nvcuda::wmma (mma.h) matrix products in f16, bf16 and tf32, the
// fragment element mapping, misuse (divergent wmma, out-of-bounds load), and mma.sync /
// ldmatrix through inline asm with the fragment layouts the PTX ISA documents.
//
// PTX produced by NVRTC 12.9 (nvidia-cuda-nvrtc-cu12 12.9.86) with
//   --gpu-architecture=compute_80 -lineinfo --std=c++17 -I<include>   -> wmma.ptx
// (compute_90 gives the same PTX but for `.target sm_90`; the tests run that variant too)
// where <include> (/opt/cuda-12.9/include) holds the include folders of the wheels
// nvidia-cuda-runtime-cu12 12.9 (mma.h) and nvidia-cuda-nvcc-cu12 12.9.86 (crt/mma.h,
// crt/mma.hpp), which NVRTC does not have built in. Program name /ptxsim/wmma.cu.
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;

// C (M x N, row-major, leading dimension N) = A (M x K) * B (K x N) + C0, one warp per
// 16x16 tile of C. A is row-major (lda = K) or column-major (lda = M); B row-major (ldb = N)
// or column-major (ldb = K). The result is stored row-major, or column-major into Ct (N x M
// storage, leading dimension M) when STORE_COL.
template <typename T, typename U> struct same { static constexpr bool value = false; };
template <typename T> struct same<T, T> { static constexpr bool value = true; };

template <typename AL, typename BL, bool STORE_COL>
__device__ void mm_f16(const half* A, const half* B, const float* C0, float* C, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= M) return;
    constexpr bool a_row = same<AL, wmma::row_major>::value;
    constexpr bool b_row = same<BL, wmma::row_major>::value;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, AL> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, BL> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, C0 + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        const half* pa = a_row ? A + tm * 16 * K + k : A + k * M + tm * 16;
        const half* pb = b_row ? B + k * N + tn * 16 : B + tn * 16 * K + k;
        wmma::load_matrix_sync(fa, pa, a_row ? K : M);
        wmma::load_matrix_sync(fb, pb, b_row ? N : K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    if (STORE_COL)
        wmma::store_matrix_sync(C + tn * 16 * M + tm * 16, acc, M, wmma::mem_col_major);
    else
        wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}

extern "C" __global__ void wmma_f16_rr(const half* A, const half* B, const float* C0, float* C, int M, int N, int K) {
    mm_f16<wmma::row_major, wmma::row_major, false>(A, B, C0, C, M, N, K);
}
extern "C" __global__ void wmma_f16_rc(const half* A, const half* B, const float* C0, float* C, int M, int N, int K) {
    mm_f16<wmma::row_major, wmma::col_major, false>(A, B, C0, C, M, N, K);
}
extern "C" __global__ void wmma_f16_cr(const half* A, const half* B, const float* C0, float* C, int M, int N, int K) {
    mm_f16<wmma::col_major, wmma::row_major, false>(A, B, C0, C, M, N, K);
}
extern "C" __global__ void wmma_f16_cc_storecol(const half* A, const half* B, const float* C0, float* C, int M, int N, int K) {
    mm_f16<wmma::col_major, wmma::col_major, true>(A, B, C0, C, M, N, K);
}

// f16 accumulators: C (f16, row-major) = A (row) * B (col) + C, in place.
extern "C" __global__ void wmma_f16acc(const half* A, const half* B, half* C, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= M) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;
    wmma::load_matrix_sync(acc, C + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + tn * 16 * K + k, K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}

// bf16 inputs, f32 accumulators: C = alpha * A (row) * B (row) + beta * C, with the scaling
// done element by element on the fragments (layout-agnostic, as in the CUDA samples).
extern "C" __global__ void wmma_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K, float alpha, float beta) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= M) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + k * N + tn * 16, N);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::load_matrix_sync(c, C + tm * 16 * N + tn * 16, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; i++) c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, c, N, wmma::mem_row_major);
}

// tf32: m16n16k8, inputs rounded with __float_to_tf32 on the fragments.
extern "C" __global__ void wmma_tf32(const float* A, const float* B, float* C, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles_n = N / 16;
    int tm = warp / tiles_n, tn = warp % tiles_n;
    if (tm * 16 >= M) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 8) {
        wmma::load_matrix_sync(fa, A + tm * 16 * K + k, K);
        wmma::load_matrix_sync(fb, B + tn * 16 * K + k, K);
        for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
        for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(C + tm * 16 * N + tn * 16, acc, N, wmma::mem_row_major);
}

// The other f16 shapes: one warp computes one MxN tile of C = A (row, M x K) * B (col) with
// K = 16, M x N = 32 x 8 (m32n8k16) or 8 x 32 (m8n32k16).
extern "C" __global__ void wmma_m32n8k16(const half* A, const half* B, float* C) {
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::load_matrix_sync(fa, A, 16);
    wmma::load_matrix_sync(fb, B, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(C, acc, 8, wmma::mem_row_major);
}
extern "C" __global__ void wmma_m8n32k16(const half* A, const half* B, float* C) {
    wmma::fragment<wmma::matrix_a, 8, 32, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 32, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 32, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    wmma::load_matrix_sync(fa, A, 16);
    wmma::load_matrix_sync(fb, B, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(C, acc, 32, wmma::mem_row_major);
}

// Tiles staged in shared memory (wmma.load/store .shared): one block of one warp per tile,
// K = 16, C (row-major 16 x 16 tiles side by side along N) = A (row) * B (row).
extern "C" __global__ void wmma_shared(const half* A, const half* B, float* C, int N) {
    __shared__ __align__(32) half sa[16 * 16];
    __shared__ __align__(32) half sb[16 * 16];
    __shared__ __align__(32) float sc[16 * 16];
    int t = threadIdx.x, tn = blockIdx.x;
    for (int i = t; i < 256; i += 32) {
        sa[i] = A[i];
        sb[i] = B[(i / 16) * N + tn * 16 + i % 16];
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, sa, 16);
    wmma::load_matrix_sync(fb, sb, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(sc, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = t; i < 256; i += 32) C[(i / 16) * N + tn * 16 + i % 16] = sc[i];
}

// The element mapping: out[((f * 32 + lane) * 16 + i] = element i of fragment f in this lane,
// fragments a (row), b (col), accumulator loaded from a row-major 16x16 matrix M[r][c] =
// r * 16 + c (exact in f16), and the accumulator written as lane * 100 + i then stored.
extern "C" __global__ void wmma_layout(const half* Mh, const float* Mf, float* out, float* stored) {
    int lane = threadIdx.x & 31;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, Mh, 16);
    wmma::load_matrix_sync(fb, Mh, 16);
    wmma::load_matrix_sync(acc, Mf, 16, wmma::mem_row_major);
    for (int i = 0; i < 16; i++) out[(0 * 32 + lane) * 16 + i] = __half2float(fa.x[i]);
    for (int i = 0; i < 16; i++) out[(1 * 32 + lane) * 16 + i] = __half2float(fb.x[i]);
    for (int i = 0; i < 8; i++) out[(2 * 32 + lane) * 16 + i] = acc.x[i];
    for (int i = 0; i < 8; i++) acc.x[i] = lane * 100 + i;
    wmma::store_matrix_sync(stored, acc, 16, wmma::mem_row_major);
}

// Misuse: only half of the warp runs the wmma (undefined on a GPU).
extern "C" __global__ void wmma_divergent(const half* A, float* C) {
    if (threadIdx.x < 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        wmma::load_matrix_sync(fa, A, 16);
        wmma::load_matrix_sync(fb, A, 16);
        wmma::mma_sync(acc, fa, fb, acc);
        wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
    }
}

// Misuse: a tile that reaches past the end of the matrix (lda = 16 with `rows` rows given).
extern "C" __global__ void wmma_oob(const half* A, float* C, int row0) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, A + row0 * 16, 16);
    wmma::load_matrix_sync(fb, A, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
}

// mma.sync through inline asm, fragments gathered from row-major A (16 x K), column-major B
// (stored as N x K) and row-major C (16 x 8) with the layouts of the PTX ISA ("Matrix
// Fragments for mma.m16n8k16 / m16n8k8"); one warp, D = A * B + C written row-major.
__device__ unsigned pack2(unsigned short lo, unsigned short hi) { return lo | ((unsigned)hi << 16); }

template <bool BF16>
__device__ void mma_k16(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned a[4], b[2];
    float c[4], d[4];
    for (int i = 0; i < 4; i++) {
        // a(2i), a(2i+1): row g (+8 for i odd), cols 2t, 2t+1 (+8 for i >= 2).
        int row = g + 8 * (i & 1), col = 2 * t + 8 * (i >> 1);
        a[i] = pack2(A[row * 16 + col], A[row * 16 + col + 1]);
    }
    for (int i = 0; i < 2; i++) {
        // b(2i), b(2i+1): rows (k) 2t, 2t+1 (+8 for i = 1), col (n) g.
        int k = 2 * t + 8 * i;
        b[i] = pack2(B[g * 16 + k], B[g * 16 + k + 1]);
    }
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}

extern "C" __global__ void mma_f16_m16n8k16(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    mma_k16<false>(A, B, C, D);
}
extern "C" __global__ void mma_bf16_m16n8k16(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    mma_k16<true>(A, B, C, D);
}

// f16 accumulators: D (f16, 16 x 8 row-major) = A * B + C.
extern "C" __global__ void mma_f16acc_m16n8k16(const unsigned short* A, const unsigned short* B, const unsigned short* C, unsigned short* D) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned a[4], b[2], c[2], d[2];
    for (int i = 0; i < 4; i++) {
        int row = g + 8 * (i & 1), col = 2 * t + 8 * (i >> 1);
        a[i] = pack2(A[row * 16 + col], A[row * 16 + col + 1]);
    }
    for (int i = 0; i < 2; i++) b[i] = pack2(B[g * 16 + 2 * t + 8 * i], B[g * 16 + 2 * t + 8 * i + 1]);
    for (int i = 0; i < 2; i++) c[i] = pack2(C[(g + 8 * i) * 8 + 2 * t], C[(g + 8 * i) * 8 + 2 * t + 1]);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
    for (int i = 0; i < 2; i++) {
        D[(g + 8 * i) * 8 + 2 * t] = d[i] & 0xffff;
        D[(g + 8 * i) * 8 + 2 * t + 1] = d[i] >> 16;
    }
}

// tf32 m16n8k8: A row-major 16 x 8, B column-major (8 x 8 stored as N x K), C/D 16 x 8.
extern "C" __global__ void mma_tf32_m16n8k8(const float* A, const float* B, const float* C, float* D) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned a[4], b[2];
    float c[4], d[4];
    for (int i = 0; i < 4; i++) {
        // a0: (g, t), a1: (g+8, t), a2: (g, t+4), a3: (g+8, t+4).
        float v = A[(g + 8 * (i & 1)) * 8 + t + 4 * (i >> 1)];
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[i]) : "f"(v));
    }
    for (int i = 0; i < 2; i++) {
        float v = B[g * 8 + t + 4 * i];
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b[i]) : "f"(v));
    }
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}

// ldmatrix: a 16 x 16 b16 matrix M (row-major) in shared memory, loaded as four 8 x 8
// matrices (x4: rows 0-7/8-15 of column halves 0-7/8-15, row addresses from lanes 0-31),
// plain and transposed, plus x1 and x2; out[(v * 32 + lane) * 4 + j] = register j of
// variant v (x4, x4.trans, x2, x1).
extern "C" __global__ void ldmatrix_test(const unsigned short* M, unsigned* out) {
    __shared__ __align__(16) unsigned short s[16 * 16];
    int lane = threadIdx.x & 31;
    for (int i = lane; i < 256; i += 32) s[i] = M[i];
    __syncwarp();
    // Lane l gives row (l % 16) of column half (l / 16).
    unsigned addr = (unsigned)__cvta_generic_to_shared(&s[(lane % 16) * 16 + (lane / 16) * 8]);
    unsigned r[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    for (int j = 0; j < 4; j++) out[(0 * 32 + lane) * 4 + j] = r[j];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
    for (int j = 0; j < 4; j++) out[(1 * 32 + lane) * 4 + j] = r[j];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
    for (int j = 0; j < 2; j++) out[(2 * 32 + lane) * 4 + j] = r[j];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    out[(3 * 32 + lane) * 4] = r[0];
}

// Every wmma shape, multiplicand type and A/B layout: one warp computes one M x N tile
// C = A (M x kt) * B (kt x N) + C0 in kt / K steps. A is row-major (lda = kt) or column-major
// (lda = M), B row-major (ldb = N) or column-major (ldb = kt); C0 and C are row-major
// (ldc = N) or, when c_col, column-major (ldc = M). tf32 multiplicands are f32 in memory,
// rounded with __float_to_tf32 on the fragments.
template <int M, int N, int K, typename FT, typename ST, typename AL, typename BL, typename CT>
__device__ void tile(const ST* A, const ST* B, const CT* C0, CT* C, int kt, int c_col) {
    constexpr bool a_row = same<AL, wmma::row_major>::value;
    constexpr bool b_row = same<BL, wmma::row_major>::value;
    wmma::fragment<wmma::matrix_a, M, N, K, FT, AL> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, FT, BL> fb;
    wmma::fragment<wmma::accumulator, M, N, K, CT> acc;
    wmma::layout_t cl = c_col ? wmma::mem_col_major : wmma::mem_row_major;
    wmma::load_matrix_sync(acc, C0, c_col ? M : N, cl);
#pragma unroll 1
    for (int k = 0; k < kt; k += K) {
        wmma::load_matrix_sync(fa, a_row ? A + k : A + k * M, a_row ? kt : M);
        wmma::load_matrix_sync(fb, b_row ? B + k * N : B + k, b_row ? N : kt);
        if constexpr (same<FT, wmma::precision::tf32>::value) {
            for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
            for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
        }
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(C, acc, c_col ? M : N, cl);
}

#define TILE(name, M, N, K, FT, ST, AL, BL, CT)                                                   \
    extern "C" __global__ void name(const ST* A, const ST* B, const CT* C0, CT* C, int kt, int c_col) { \
        tile<M, N, K, FT, ST, wmma::AL, wmma::BL, CT>(A, B, C0, C, kt, c_col);                     \
    }
#define TILE4(prefix, M, N, K, FT, ST, CT)                                \
    TILE(prefix##_rr, M, N, K, FT, ST, row_major, row_major, CT)          \
    TILE(prefix##_rc, M, N, K, FT, ST, row_major, col_major, CT)          \
    TILE(prefix##_cr, M, N, K, FT, ST, col_major, row_major, CT)          \
    TILE(prefix##_cc, M, N, K, FT, ST, col_major, col_major, CT)

TILE4(tile_f16_m16n16k16, 16, 16, 16, half, half, float)
TILE4(tile_f16_m32n8k16, 32, 8, 16, half, half, float)
TILE4(tile_f16_m8n32k16, 8, 32, 16, half, half, float)
TILE4(tile_bf16_m16n16k16, 16, 16, 16, __nv_bfloat16, __nv_bfloat16, float)
TILE4(tile_bf16_m32n8k16, 32, 8, 16, __nv_bfloat16, __nv_bfloat16, float)
TILE4(tile_bf16_m8n32k16, 8, 32, 16, __nv_bfloat16, __nv_bfloat16, float)
TILE4(tile_tf32_m16n16k8, 16, 16, 8, wmma::precision::tf32, float, float)
// f16 accumulators in the other shapes.
TILE(tile_f16acc_m32n8k16_cr, 32, 8, 16, half, half, col_major, row_major, half)
TILE(tile_f16acc_m8n32k16_rc, 8, 32, 16, half, half, row_major, col_major, half)

// mma.sync m16n8k8 with f16 or bf16 multiplicands: A row-major 16 x 8, B column-major (8 x 8
// stored as N x K), C/D row-major 16 x 8; a0,a1: row g, a2,a3: row g+8, cols 2t, 2t+1;
// b0,b1: rows (k) 2t, 2t+1, col (n) g.
template <bool BF16>
__device__ void mma_k8(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    unsigned a[2], b;
    float c[4], d[4];
    for (int i = 0; i < 2; i++) a[i] = pack2(A[(g + 8 * i) * 8 + 2 * t], A[(g + 8 * i) * 8 + 2 * t + 1]);
    b = pack2(B[g * 8 + 2 * t], B[g * 8 + 2 * t + 1]);
    for (int i = 0; i < 4; i++) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)];
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[(g + 8 * (i >> 1)) * 8 + 2 * t + (i & 1)] = d[i];
}

extern "C" __global__ void mma_f16_m16n8k8(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    mma_k8<false>(A, B, C, D);
}
extern "C" __global__ void mma_bf16_m16n8k8(const unsigned short* A, const unsigned short* B, const float* C, float* D) {
    mma_k8<true>(A, B, C, D);
}
