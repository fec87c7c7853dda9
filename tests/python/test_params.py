"""Kernel parameters of every kind real CUDA code passes by value (issue 55), through the real
Jupyter kernel on ptxsim (and on the GPU backend where a GPU is present; skipped with a message
otherwise): scalar, pointer and struct typedefs and `using` aliases; structs with pointer members
passed as `(…)` tuples, `Name(…)` positionally or `Name(member=…)` by names, with arrays, `null`
and `a + N`, nested structs and fixed arrays; `cuda::std::span` and `cuda::std::mdspan` taking
arrays; a forward declaration plus the definition as one kernel, and overloads refused with
their signatures. Every result is compared with a NumPy reference on random input.

The shared-memory matrix multiplication is written here after the CUDA C++ Programming Guide's
"Shared Memory" example (`Matrix` by value, `GetElement`/`SetElement`/`GetSubMatrix`, a forward
declaration of `MatMulKernel`); the span kernels follow the style of NVIDIA's DLI course
"Fundamentals of Accelerated Computing with Modern CUDA C++" (`cuda::std::span<float>`).
"""

from __future__ import annotations

import numpy as np
import pytest

from nbkernel import FIRST_CELL_TIMEOUT, error, ok, start_kernel, stop_kernel, warm_up
from test_magics import fetch, put


from backends import kc, rng  # noqa: E402,F401  (fixtures)


MATMUL = r"""%%cuda
// Row-major matrices: M(row, col) = *(M.elements + row * M.stride + col)
typedef struct {
    int width;
    int height;
    int stride;
    float* elements;
} Matrix;

#define BLOCK_SIZE 16

__device__ float GetElement(const Matrix A, int row, int col) {
    return A.elements[row * A.stride + col];
}

__device__ void SetElement(Matrix A, int row, int col, float value) {
    A.elements[row * A.stride + col] = value;
}

// The BLOCK_SIZE x BLOCK_SIZE sub-matrix of A `col` tiles right and `row` tiles down.
__device__ Matrix GetSubMatrix(Matrix A, int row, int col) {
    Matrix Asub;
    Asub.width = BLOCK_SIZE;
    Asub.height = BLOCK_SIZE;
    Asub.stride = A.stride;
    Asub.elements = &A.elements[A.stride * BLOCK_SIZE * row + BLOCK_SIZE * col];
    return Asub;
}

// Forward declaration of the matrix multiplication kernel
__global__ void MatMulKernel(const Matrix, const Matrix, Matrix);

__global__ void MatMulKernel(Matrix A, Matrix B, Matrix C) {
    int blockRow = blockIdx.y;
    int blockCol = blockIdx.x;
    Matrix Csub = GetSubMatrix(C, blockRow, blockCol);
    float Cvalue = 0;
    int row = threadIdx.y;
    int col = threadIdx.x;
    for (int m = 0; m < (A.width / BLOCK_SIZE); ++m) {
        Matrix Asub = GetSubMatrix(A, blockRow, m);
        Matrix Bsub = GetSubMatrix(B, m, blockCol);
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
        As[row][col] = GetElement(Asub, row, col);
        Bs[row][col] = GetElement(Bsub, row, col);
        __syncthreads();
        for (int e = 0; e < BLOCK_SIZE; ++e)
            Cvalue += As[row][e] * Bs[e][col];
        __syncthreads();
    }
    SetElement(Csub, row, col, Cvalue);
}
"""


def matmul_setup(kc, rng, tmp_path):
    ha, wa, wb = (16 * int(v) for v in rng.integers(1, 4, 3))
    a = rng.standard_normal((ha, wa)).astype(np.float32)
    b = rng.standard_normal((wa, wb)).astype(np.float32)
    put(kc, "mA", a, tmp_path)
    put(kc, "mB", b, tmp_path)
    ok(kc, f"%array mC = zeros(({ha}, {wb}), f32)\n%set HA = {ha}\n%set WA = {wa}\n%set WB = {wb}")
    return a, b


LAUNCH_MM = "MatMulKernel[(WB / 16, HA / 16), (16, 16)]"


def test_programming_guide_matmul_runs_unchanged(kc, rng, tmp_path):
    # The cell lists one MatMulKernel: the forward declaration is not an overload.
    listing = ok(kc, MATMUL).text()
    assert "MatMulKernel(Matrix A, Matrix B, Matrix C)" in listing, listing
    assert "overloaded" not in listing, listing
    a, b = matmul_setup(kc, rng, tmp_path)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # By member names, positionally with the struct's name, and as a tuple: all one layout.
    ok(kc, f"%launch {LAUNCH_MM}(Matrix(width=WA, height=HA, stride=WA, elements=mA), "
           "Matrix(WB, WA, WB, mB), (WB, HA, WB, mC))")
    np.testing.assert_allclose(fetch(kc, "mC", tmp_path), want, rtol=1e-4, atol=1e-4)
    # Members may come in any order; the result is the same.
    ok(kc, "%array mC = zeros((HA, WB), f32)\n"
           f"%launch {LAUNCH_MM}(Matrix(elements=mA, stride=WA, height=HA, width=WA), "
           "(WB, WA, WB, mB), Matrix(stride=WB, width=WB, height=HA, elements=mC))")
    np.testing.assert_allclose(fetch(kc, "mC", tmp_path), want, rtol=1e-4, atol=1e-4)


def test_matmul_member_errors_name_the_argument_and_the_member(kc, rng, tmp_path):
    ok(kc, MATMUL)
    matmul_setup(kc, rng, tmp_path)
    ok(kc, "%array m64 = zeros((HA, WA), f64)")
    good_b, good_c = "(WB, WA, WB, mB)", "(WB, HA, WB, mC)"

    def launch_a(a: str) -> str:
        return error(kc, f"%launch {LAUNCH_MM}({a}, {good_b}, {good_c})").text()

    text = launch_a("Matrix(width=WA, height=HA, stride=WA, elements=m64)")
    assert "member `elements` of argument 1 of %launch (Matrix A)" in text, text
    assert "array 'm64' is f64" in text and "points to f32" in text, text
    text = launch_a("Matrix(width=WA, heigth=HA, stride=WA, elements=mA)")
    assert "has no member `heigth`" in text and "`height`" in text, text
    text = launch_a("Matrix(width=WA, stride=WA, elements=mA)")
    assert "member `height` of argument 1" in text and "missing" in text, text
    text = launch_a("Matrix(width=WA, width=WA, height=HA, stride=WA, elements=mA)")
    assert "given twice" in text, text
    text = launch_a("(WA, HA, WA)")
    assert "4 values (width, height, stride, elements), got 3 values" in text, text
    text = launch_a("(WA, HA, WA, 2.5)")
    assert "member `elements`" in text and "array name, `array + offset` or null" in text, text
    text = launch_a("(WA, HA, WA, nope_array)")
    assert "unknown array 'nope_array' in member `elements`" in text, text
    text = launch_a("(WA, HA, 1.5, mA)")
    assert "member `stride` of argument 1" in text and "integer" in text, text
    text = launch_a("Pair(width=WA, height=HA, stride=WA, elements=mA)")
    assert "is a `Matrix`, not a `Pair`" in text, text
    text = launch_a("mA")
    assert "pass a tuple of 4 values" in text and "Matrix(member=" in text, text


def test_pointer_members_are_bounds_checked_on_ptxsim(kc, rng, tmp_path):
    ok(kc, MATMUL)
    matmul_setup(kc, rng, tmp_path)
    # `mA + 16` as the matrix's elements: the last tile reads 16 floats past the end of mA. A
    # plain launch on ptxsim and `--check` on either backend find it and name the array.
    check = "--check " if getattr(kc, "nbcuda_backend", "sim") == "gpu" else ""
    ex = error(kc, f"%launch {check}{LAUNCH_MM}((WA, HA, WA, mA + 16), (WB, WA, WB, mB), "
                   "(WB, HA, WB, mC))")
    text = ex.text()
    assert ex.reply["content"]["ename"] == "DeviceFault", ex.describe()
    assert "past the end of array `mA`" in text, text


NESTED = r"""%%cuda
typedef float real;
using index_t = int;
struct Input { const real* data; index_t n; };
class Poly {
public:
    Input in;
    real* out;
    real coef[3];
    __device__ real at(real x) const { return coef[0] + x * (coef[1] + x * coef[2]); }
};
typedef Poly PolyJob;

__global__ void poly(const PolyJob job, const real bias) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < job.in.n) job.out[i] = job.at(job.in.data[i]) + bias;
}
"""


def test_nested_structs_fixed_arrays_aliases_null_and_offsets(kc, rng, tmp_path):
    ok(kc, NESTED)
    n = int(rng.integers(200, 1000))
    off = int(rng.integers(1, n // 2))
    x = rng.standard_normal(n).astype(np.float32)
    c = [float(v) for v in np.round(rng.standard_normal(3), 3)]
    bias = float(np.round(rng.standard_normal(), 3))
    put(kc, "px", x, tmp_path)
    ok(kc, f"%array py = zeros({n}, f32)\n%set N = {n}")

    def ref(xs):
        xs = xs.astype(np.float64)
        return c[0] + xs * (c[1] + xs * c[2]) + bias

    coef = f"({c[0]}, {c[1]}, {c[2]})"
    ok(kc, f"%launch poly[ceil(N / 128), 128](Poly(in=Input(data=px, n=N), out=py, coef={coef}), {bias})")
    np.testing.assert_allclose(fetch(kc, "py", tmp_path), ref(x), rtol=1e-5, atol=1e-5)
    # Flat: nested members and the array member's numbers in one tuple; `a + N` for pointers.
    k = n - off
    ok(kc, f"%array py = zeros({n}, f32)\n"
           f"%launch poly[ceil(N / 128), 128]((px + {off}, {k}, py + {off}, {c[0]}, {c[1]}, {c[2]}), {bias})")
    want = np.zeros(n)
    want[off:] = ref(x[off:])
    np.testing.assert_allclose(fetch(kc, "py", tmp_path), want, rtol=1e-5, atol=1e-5)
    # `null` for a pointer member that the kernel does not touch (n = 0).
    ok(kc, f"%launch poly[1, 32]((null, 0, null, {coef}), 0.0)")
    text = error(kc, f"%launch poly[1, 32](Poly(in=(px, N), out=py, coef=(1.0, 2.0)), 0.0)").text()
    assert "member `coef` of argument 1 of %launch (const PolyJob job) takes 3 values" in text, text
    assert "(coef[0], coef[1], coef[2]), got 2" in text, text
    text = error(kc, f"%launch poly[1, 32]((px, N, py, 1.0, 2.0), 0.0)").text()
    assert "a tuple of 6 values (in.data, in.n, out, coef[0], coef[1], coef[2]), got 5" in text, text
    text = error(kc, f"%launch poly[1, 32](Poly(in=Input(data=py, n=N, m=1), out=py, coef={coef}), 0.0)").text()
    assert "has no member `m`" in text and "member `in` of argument 1" in text, text


SPANS = r"""%%cuda
#include <cuda/std/span>
#include <cuda/std/mdspan>

__global__ void scale(cuda::std::span<float> x, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x.size()) x[i] *= a;
}

__global__ void axpy(cuda::std::span<const float> x, cuda::std::span<float> y, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y.size() && i < x.size()) y[i] += a * x[i];
}

__global__ void first4(cuda::std::span<const int, 4> in, int* out) {
    if (threadIdx.x < in.size()) out[threadIdx.x] = in[threadIdx.x] * 10;
}

using matrix = cuda::std::mdspan<float, cuda::std::dextents<int, 2>>;

__global__ void transpose(cuda::std::mdspan<const float, cuda::std::dextents<int, 2>> in,
                          matrix out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < in.extent(0) && c < in.extent(1))
        out.data_handle()[out.mapping()(c, r)] = in.data_handle()[in.mapping()(r, c)];
}

__global__ void rows3(cuda::std::mdspan<double, cuda::std::extents<int, cuda::std::dynamic_extent, 3>> m) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < m.extent(0))
        for (int c = 0; c < m.extent(1); ++c) m.data_handle()[m.mapping()(r, c)] += r;
}
"""


def test_spans_take_arrays(kc, rng, tmp_path):
    ok(kc, SPANS)
    n = int(rng.integers(100, 3000))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    put(kc, "sx", x, tmp_path)
    put(kc, "sy", y, tmp_path)
    # The DLI course style: one span, launched with [auto] sized from the array.
    ok(kc, "%launch scale[auto](sx, 2.0)")
    np.testing.assert_array_equal(fetch(kc, "sx", tmp_path), x * np.float32(2))
    ok(kc, "%launch axpy[ceil(len(sy) / 256), 256](sx, sy + 3, 0.5)")
    want = y.copy()
    want[3:] = y[3:] + np.float32(0.5) * (x[: n - 3] * np.float32(2))
    np.testing.assert_allclose(fetch(kc, "sy", tmp_path), want, rtol=1e-6)
    v = rng.integers(-100, 100, 4).astype(np.int32)
    put(kc, "s4", v, tmp_path)
    ok(kc, "%array s4o = zeros(4, i32)\n%launch first4[1, 32](s4, s4o)")
    np.testing.assert_array_equal(fetch(kc, "s4o", tmp_path), v * 10)
    # dtype and fixed extents are checked against the array.
    text = error(kc, "%launch first4[1, 32](sx, s4o)").text()
    assert "argument 1 of %launch" in text and "points to i32" in text, text
    ok(kc, "%array s5 = zeros(5, i32)")
    text = error(kc, "%launch first4[1, 32](s5, s4o)").text()
    assert "fixed extent 4 in dimension 0" in text and "(5,)" in text, text
    text = error(kc, "%launch scale[1, 32](1.5, 2.0)").text()
    assert "argument 1 of %launch (cuda::std::span<float> x) must be an array name" in text, text


def test_mdspans_take_arrays_with_their_shape(kc, rng, tmp_path):
    ok(kc, SPANS)
    h, w = (int(v) for v in rng.integers(5, 70, 2))
    m = rng.standard_normal((h, w)).astype(np.float32)
    put(kc, "mdm", m, tmp_path)
    ok(kc, f"%array mdt = zeros(({w}, {h}), f32)")
    ok(kc, f"%launch transpose[(ceil({w} / 16), ceil({h} / 16)), (16, 16)](mdm, mdt)")
    np.testing.assert_array_equal(fetch(kc, "mdt", tmp_path), m.T)
    r3 = rng.standard_normal((h, 3))
    put(kc, "r3", r3, tmp_path)
    ok(kc, f"%launch rows3[1, 128](r3)")
    np.testing.assert_allclose(fetch(kc, "r3", tmp_path), r3 + np.arange(h)[:, None])
    text = error(kc, "%launch rows3[1, 128](mdm)").text()
    assert "points to f64" in text, text
    put(kc, "r4", rng.standard_normal((h, 4)), tmp_path)
    text = error(kc, "%launch rows3[1, 128](r4)").text()
    assert "fixed extent 3 in dimension 1" in text and f"({h}, 4)" in text, text
    ok(kc, "%array flat = zeros(16, f32)")
    text = error(kc, "%launch transpose[1, 1](flat, mdt)").text()
    assert "2-dimensional mdspan but array 'flat' has shape (16,)" in text, text
    text = error(kc, "%launch transpose[1, 1](mdm + 1, mdt)").text()
    assert "pass a whole array" in text, text


ALIASES = r"""%%cuda
typedef float ft;
typedef ft* ft_ptr;
using count_t = unsigned int;

__global__ void center(const ft mean, ft* out, const ft* in, count_t n);

__global__ void center(const ft mean, ft_ptr out, const ft* in, count_t n) {
    count_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] - mean;
}

__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
__global__ void twice(double* x) { x[threadIdx.x] *= 2.0; }
"""


def test_typedef_parameters_forward_declarations_and_overloads(kc, rng, tmp_path):
    ok(kc, ALIASES)
    n = int(rng.integers(100, 2000))
    x = rng.standard_normal(n).astype(np.float32)
    mean = float(np.float32(x.mean()))
    put(kc, "cx", x, tmp_path)
    ok(kc, f"%array cy = zeros({n}, f32)\n%launch center[auto]({mean}, cy, cx, len(cx))")
    np.testing.assert_allclose(fetch(kc, "cy", tmp_path), x - np.float32(mean), rtol=1e-6, atol=1e-6)
    text = error(kc, "%launch center[1, 32](1.0, cy, cx, -1)").text()
    assert "argument 4 of %launch (count_t n)" in text and "0 to 4294967295" in text, text
    text = error(kc, "%launch twice[1, 32](cy)").text()
    assert "`twice` is overloaded" in text, text
    assert "twice(float* x)" in text and "twice(double* x)" in text, text


NB_EXEC = r"""
let ha = {ha}usize; let wa = {wa}usize; let wb = {wb}usize;
let a: Vec<f32> = (0..ha * wa).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
let b: Vec<f32> = (0..wa * wb).map(|i| ((i * 5 % 11) as f32) - 5.0).collect();
nb::put_shaped("rA", &a, &[ha, wa]).unwrap();
nb::put_shaped("rB", &b, &[wa, wb]).unwrap();
nb::put_shaped("rC", &vec![0.0f32; ha * wb], &[ha, wb]).unwrap();
nb::exec(&format!(
    "%launch MatMulKernel[({{}}, {{}}), (16, 16)](Matrix(width={{wa}}, height={{ha}}, stride={{wa}}, elements=rA), ({{wb}}, {{wa}}, {{wb}}, rB), Matrix({{wb}}, {{ha}}, {{wb}}, rC))",
    wb / 16, ha / 16
)).unwrap();
let c: nb::Array<f32> = nb::get("rC").unwrap();
let mut worst = 0.0f32;
for r in 0..ha {{
    for k in 0..wb {{
        let want: f32 = (0..wa).map(|j| a[r * wa + j] * b[j * wb + k]).sum();
        worst = worst.max((c.data[r * wb + k] - want).abs());
    }}
}}
println!("nb::exec matmul worst error {{worst}}");
"""


def test_nb_exec_takes_the_struct_syntax(rng):
    """A Rust cell launches the Programming Guide's matmul through `nb::exec` with the new
    argument syntax, and checks the product itself."""
    km, kc = start_kernel()
    try:
        warm_up(kc)
        ok(kc, MATMUL)
        ha, wa, wb = (16 * int(v) for v in rng.integers(1, 3, 3))
        ex = ok(kc, NB_EXEC.format(ha=ha, wa=wa, wb=wb), timeout=FIRST_CELL_TIMEOUT)
        out = ex.stream()
        assert "nb::exec matmul worst error" in out, ex.describe()
        worst = float(out.split("worst error")[1].split()[0])
        assert worst < 1e-3, out
    finally:
        stop_kernel(km, kc)
