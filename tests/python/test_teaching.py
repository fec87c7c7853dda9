"""The teaching corpus (issue 55): kernels of public CUDA teaching material (the CUDA C++
Programming Guide, NVIDIA developer-blog posts, the OLCF/NERSC CUDA Training Series, NVIDIA's
DLI modern CUDA C++ course, the GPU Teaching Kit labs), written in `tests/teaching/` the way a
student pastes them into a `%%cuda` cell: with their includes (`<cstdio>`, `<cassert>`,
`<algorithm>`, `<cmath>`, ...), `#define`s, typedefs, `uint` and asserts. Sources with URLs:
tests/teaching/README.md.

Each case compiles its file in one shared Jupyter kernel, creates random inputs, launches the
kernels as the material's host code does, first with `%launch --check` (ptxsim's access, race and
barrier checker on copies of the arrays: it must report nothing, so a finding here is a false
positive or a bug of the material to fix in the README), then for real, and compares the arrays
with a NumPy reference. Cases that need a launch feature still being built are strict xfails
naming the feature and its branch, so that they turn into failures (and lose their marks) when
it lands. Runs on ptxsim, and on the GPU backend too where a GPU is present.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from nbkernel import Execution, error, execute, has_cuda_device, ok, start_kernel, stop_kernel
from test_magics import fetch, put

TEACHING = Path(__file__).resolve().parents[1] / "teaching"
RAN: list[str] = []


@pytest.fixture(scope="module", params=["sim", "gpu"])
def kc(request):
    """One Jupyter kernel for every case: ptxsim, and the GPU backend where a GPU is present."""
    if request.param == "gpu" and not has_cuda_device():
        pytest.skip("no CUDA GPU on this machine: the teaching corpus on the GPU backend is skipped")
    km, client = start_kernel()
    RAN.clear()
    started = time.monotonic()
    try:
        ok(client, f"%backend {request.param}")
        client.backend = request.param
        yield client
    finally:
        stop_kernel(km, client)
        print(
            f"\nteaching corpus on {request.param}: {len(RAN)} CUDA kernels matched their "
            f"references in {time.monotonic() - started:.1f} s: " + ", ".join(RAN)
        )


@dataclass
class Session:
    """One case's view of the shared Jupyter kernel."""

    kc: object
    tmp: Path
    rng: np.random.Generator

    def cell(self, name: str) -> Execution:
        """Compiles tests/teaching/NAME as a `%%cuda --name` cell."""
        source = (TEACHING / name).read_text()
        return ok(self.kc, f"%%cuda --name {name.removesuffix('.cu')}\n{source}", timeout=300)

    def put(self, name: str, value: np.ndarray) -> None:
        put(self.kc, name, value, self.tmp)

    def zeros(self, name: str, shape, dtype: str) -> None:
        ok(self.kc, f"%array {name} = zeros({shape}, {dtype})")

    def get(self, name: str) -> np.ndarray:
        return fetch(self.kc, name, self.tmp)

    def launch(self, *lines: str) -> Execution:
        """Each launch checked by ptxsim's checker on copies (nothing may be reported), then run."""
        for line in lines:
            ex = execute(self.kc, f"%launch --check {line}")
            assert ex.status == "ok", f"--check {line}: " + ex.describe()
            assert ex.stream("stderr") == "", f"--check {line} reported: {ex.stream('stderr')}"
        ex = execute(self.kc, "\n".join(f"%launch {line}" for line in lines))
        assert ex.status == "ok", ex.describe()
        return ex


CASES: list = []


def case(file: str, *kernels: str, xfail: str | None = None):
    """Registers a case: the corpus file, the kernels it checks, and why it is expected to fail."""

    def add(fn: Callable[[Session], None]):
        marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
        CASES.append(pytest.param(file, kernels, fn, id=fn.__name__.removeprefix("case_"), marks=marks))
        return fn

    return add


def f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(got.reshape(np.shape(want)), want, rtol=rtol, atol=atol)


# --- CUDA C++ Programming Guide ------------------------------------------------------------------


@case("pg_vec_mat_add.cu", "VecAdd")
def case_pg_vec_add(s: Session):
    n = int(s.rng.integers(32, 1025))
    a, b = f32(s.rng, n), f32(s.rng, n)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", n, "f32")
    s.launch(f"VecAdd[1, {n}](A, B, C)")
    np.testing.assert_array_equal(s.get("C"), a + b)


@case("pg_vec_mat_add.cu", "MatAdd")
def case_pg_mat_add(s: Session):
    a, b = f32(s.rng, 64, 64), f32(s.rng, 64, 64)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", "(64, 64)", "f32")
    s.launch("MatAdd[(4, 4), (16, 16)](A, B, C)")
    np.testing.assert_array_equal(s.get("C"), a + b)


@case("pg_matmul_shared.cu", "MatMulKernel")
def case_pg_matmul_shared(s: Session):
    m, k, n = 16 * s.rng.integers(1, 4, 3)
    a, b = f32(s.rng, m, k), f32(s.rng, k, n)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", f"({m}, {n})", "f32")
    s.launch(f"MatMulKernel[({n // 16}, {m // 16}), (16, 16)](({k}, {m}, {k}, A), ({n}, {k}, {n}, B), ({n}, {m}, {n}, C))")
    close(s.get("C"), a @ b, 1e-4, 1e-4)


@case("pg_printf_assert.cu", "helloCUDA", "testAssert")
def case_pg_printf_and_assert(s: Session):
    f = float(np.float32(s.rng.uniform(-10, 10)))
    ex = s.launch(f"helloCUDA[1, 5]({f!r})")
    assert sorted(ex.stream().splitlines()) == [f"Hello thread {t}, f={f:.6f}" for t in range(5)], ex.stream()
    s.put("flags", np.array([1, 1], np.int32))
    s.launch("testAssert[1, 32](flags)")


@case("pg_atomic_add_double.cu", "sumDouble")
def case_pg_atomic_add_double(s: Session):
    n = int(s.rng.integers(1000, 5000))
    x = s.rng.standard_normal(n)
    s.put("x", x)
    s.zeros("total", 1, "f64")
    s.launch(f"sumDouble[8, 128](x, total, {n})")
    close(s.get("total"), [x.sum()], 1e-12, 1e-10)


@case("pg_grid_sync.cu", "rotateAcrossGrid")
def case_pg_grid_sync(s: Session):
    n = 4 * 128
    x = f32(s.rng, n)
    s.put("x", x)
    s.zeros("tmp", n, "f32")
    s.zeros("y", n, "f32")
    s.launch(f"rotateAcrossGrid[4, 128](x, tmp, y, {n})")
    np.testing.assert_array_equal(s.get("y"), np.roll(2 * x, -128))


# --- NVIDIA developer blog ---------------------------------------------------------------------


@case("blog_even_easier_intro.cu", "add")
def case_blog_even_easier_intro(s: Session):
    n = int(s.rng.integers(1 << 12, 1 << 14))
    x, y = f32(s.rng, n), f32(s.rng, n)
    s.put("x", x)
    s.put("y", y)
    s.launch(f"add[ceil({n} / 256), 256]({n}, x, y)")
    np.testing.assert_array_equal(s.get("y"), x + y)


@case("blog_saxpy.cu", "saxpy", "saxpy_gridstride")
def case_blog_saxpy(s: Session):
    n = int(s.rng.integers(1000, 20000))
    a = float(np.float32(s.rng.uniform(-3, 3)))
    x, y = f32(s.rng, n), f32(s.rng, n)
    s.put("x", x)
    s.put("y", y)
    s.launch(f"saxpy[ceil({n} / 256), 256]({n}, {a!r}, x, y)")
    once = np.float32(a) * x + y
    close(s.get("y"), once, 1e-6, 1e-6)
    s.launch(f"saxpy_gridstride[32 * 4, 256]({n}, {a!r}, x, y)")
    close(s.get("y"), np.float32(a) * x + once, 1e-6, 1e-6)


@case("blog_shared_reverse.cu", "staticReverse", "dynamicReverse")
def case_blog_shared_reverse(s: Session):
    d = s.rng.integers(-1000, 1000, 64).astype(np.int32)
    s.put("d", d)
    s.launch("staticReverse[1, 64](d, 64)")
    np.testing.assert_array_equal(s.get("d"), d[::-1])
    s.launch("dynamicReverse[1, 64, 64 * 4](d, 64)")
    np.testing.assert_array_equal(s.get("d"), d)


@case("blog_kepler_reduce.cu", "deviceReduceKernel", "deviceReduceWarpAtomicKernel")
def case_blog_kepler_reduce(s: Session):
    n = int(s.rng.integers(1 << 13, 1 << 15))
    x = s.rng.integers(-1000, 1000, n).astype(np.int32)
    blocks = min((n + 511) // 512, 1024)
    s.put("x", x)
    s.zeros("partial", 1024, "i32")
    # As the post's deviceReduce: the blocks' sums, then one block over them.
    s.launch(f"deviceReduceKernel[{blocks}, 512](x, partial, {n})", f"deviceReduceKernel[1, 1024](partial, partial, {blocks})")
    assert int(s.get("partial")[0]) == int(x.sum())
    s.zeros("total", 1, "i32")
    s.launch(f"deviceReduceWarpAtomicKernel[{blocks}, 512](x, total, {n})")
    assert int(s.get("total")[0]) == int(x.sum())


@case("blog_warp_aggregated.cu", "filter_k")
def case_blog_warp_aggregated(s: Session):
    n = int(s.rng.integers(1000, 10000))
    src = s.rng.integers(-100, 100, n).astype(np.int32)
    s.put("src", src)
    s.zeros("dst", n, "i32")
    s.zeros("nres", 1, "i32")
    s.launch(f"filter_k[ceil({n} / 128), 128](dst, nres, src, {n})")
    count = int(s.get("nres")[0])
    kept = src[src > 0]
    assert count == len(kept)
    np.testing.assert_array_equal(np.sort(s.get("dst")[:count]), np.sort(kept))


@case("blog_histogram_smem.cu", "histogram_smem_atomics", "histogram_final_accum")
def case_blog_histogram_smem(s: Session):
    h, w = int(s.rng.integers(20, 70)), int(s.rng.integers(20, 100))
    img = s.rng.integers(0, 256, (h, w, 4)).astype(np.uint8)
    s.put("img", img)
    blocks = 4 * 2
    s.zeros("partial", blocks * 3 * 64, "u32")
    s.zeros("hist", 3 * 64, "u32")
    s.launch(
        f"histogram_smem_atomics[(4, 2), (16, 16)](img, {w}, {h}, partial)",
        f"histogram_final_accum[1, 256](partial, {blocks}, hist)",
    )
    want = np.concatenate([np.bincount(img[..., c].ravel() // 4, minlength=64) for c in range(3)])
    np.testing.assert_array_equal(s.get("hist"), want)


@case("blog_finite_difference.cu", "derivative_x")
def case_blog_finite_difference(s: Session):
    m = 64
    f = f32(s.rng, m, m, m)
    s.put("f", f)
    c = [4.0 / 5.0, -1.0 / 5.0, 4.0 / 105.0, -1.0 / 280.0]
    for name, v in zip(["c_ax", "c_bx", "c_cx", "c_dx"], c):
        s.put(f"{name}_h", np.array([v], np.float32))
        ok(s.kc, f"%copy {name} = {name}_h")
    s.zeros("df", f"({m}, {m}, {m})", "f32")
    s.launch(f"derivative_x[({m} / 4, {m}), ({m}, 4)](f, df)")
    # Periodic in x with period mx - 1 (the post's grid repeats its first point at the end).
    x = np.arange(m)
    wrap = lambda i: np.where(i < 0, i + m - 1, np.where(i >= m, i - m + 1, i))  # noqa: E731
    f64 = f.astype(np.float64)
    want = sum(np.float32(cd) * (f64[..., wrap(x + d)] - f64[..., wrap(x - d)]) for d, cd in zip(range(1, 5), c))
    close(s.get("df"), want, 1e-4, 1e-5)


@case("blog_coalescing.cu", "offset<float>", "stride<float>")
def case_blog_coalescing(s: Session):
    n, off, st = 256 * 8, int(s.rng.integers(0, 33)), int(s.rng.integers(1, 9))
    a = f32(s.rng, n + 32)
    s.put("a", a)
    s.launch(f"offset<float>[{n // 256}, 256](a, {off})")
    want = a.copy()
    want[off : off + n] += 1
    np.testing.assert_array_equal(s.get("a"), want)
    b = f32(s.rng, n * st)
    s.put("b", b)
    s.launch(f"stride<float>[{n // 256}, 256](b, {st})")
    want = b.copy()
    want[::st] += 1
    np.testing.assert_array_equal(s.get("b"), want)


@case("blog_cooperative_groups.cu", "sum_kernel_block")
def case_blog_cooperative_groups(s: Session):
    n = 1 << int(s.rng.integers(12, 15))
    x = s.rng.integers(-100, 100, n).astype(np.int32)
    s.put("x", x)
    s.zeros("total", 1, "i32")
    s.launch(f"sum_kernel_block[{(n + 255) // 256}, 256, 256 * 4](total, x, {n})")
    assert int(s.get("total")[0]) == int(x.sum())


# --- OLCF/NERSC CUDA Training Series ----------------------------------------------------------


@case("olcf_hw1_vector_add.cu", "vadd")
def case_olcf_vector_add(s: Session):
    n = 4096
    a, b = f32(s.rng, n), f32(s.rng, n)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", n, "f32")
    s.launch(f"vadd[ceil({n} / 256), 256](A, B, C, {n})")
    np.testing.assert_array_equal(s.get("C"), a + b)


@case("olcf_hw1_matrix_mul.cu", "mmul")
def case_olcf_matrix_mul(s: Session):
    ds = int(s.rng.integers(40, 100))
    a, b = f32(s.rng, ds, ds), f32(s.rng, ds, ds)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", f"({ds}, {ds})", "f32")
    s.launch(f"mmul[(ceil({ds} / 16), ceil({ds} / 16)), (16, 16)](A, B, C, {ds})")
    close(s.get("C"), a.astype(np.float64) @ b, 1e-4, 1e-4)


@case("olcf_hw2_stencil_1d.cu", "stencil_1d")
def case_olcf_stencil_1d(s: Session):
    n, r = 4096, 3
    x = s.rng.integers(-100, 100, n + 2 * r).astype(np.int32)
    s.put("sin", x)
    s.put("sout", np.ones(n + 2 * r, np.int32))
    s.launch(f"stencil_1d[{n} / 16, 16](sin + {r}, sout + {r})")
    want = np.ones(n + 2 * r, np.int64)
    want[r : n + r] = np.convolve(x, np.ones(2 * r + 1, np.int64), "valid")
    np.testing.assert_array_equal(s.get("sout"), want)


@case("olcf_hw2_matrix_mul_shared.cu", "mmul")
def case_olcf_matrix_mul_shared(s: Session):
    ds = 32 * int(s.rng.integers(1, 4))
    a, b = f32(s.rng, ds, ds), f32(s.rng, ds, ds)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", f"({ds}, {ds})", "f32")
    s.launch(f"mmul[({ds // 32}, {ds // 32}), (32, 32)](A, B, C, {ds})")
    close(s.get("C"), a.astype(np.float64) @ b, 1e-4, 1e-4)


@case("olcf_hw4_matrix_sums.cu", "row_sums", "column_sums")
def case_olcf_matrix_sums(s: Session):
    ds = int(s.rng.integers(100, 300))
    a = f32(s.rng, ds, ds)
    s.put("A", a)
    s.zeros("rows", ds, "f32")
    s.zeros("cols", ds, "f32")
    s.launch(f"row_sums[ceil({ds} / 256), 256](A, rows, {ds})", f"column_sums[ceil({ds} / 256), 256](A, cols, {ds})")
    close(s.get("rows"), a.astype(np.float64).sum(axis=1), 1e-4, 1e-4)
    close(s.get("cols"), a.astype(np.float64).sum(axis=0), 1e-4, 1e-4)


@case("olcf_hw5_reductions.cu", "atomic_red", "reduce_a", "reduce_ws")
def case_olcf_reductions(s: Session):
    n = 8 * 1024
    x = s.rng.uniform(0, 1, n).astype(np.float32)
    s.put("A", x)
    for kernel, grid in [("atomic_red", n // 256), ("reduce_a", 16), ("reduce_ws", 16)]:
        s.zeros("total", 1, "f32")
        s.launch(f"{kernel}[{grid}, 256](A, total)")
        close(s.get("total"), [x.astype(np.float64).sum()], 1e-5, 1e-3)


@case("olcf_hw5_max_reduction.cu", "reduce")
def case_olcf_max_reduction(s: Session):
    n = 8 * 1024
    x = f32(s.rng, n)
    s.put("A", x)
    s.zeros("sums", 16, "f32")
    # As the solution's host code: the blocks' maxima, then the maximum of those into A[0].
    s.launch(f"reduce[16, 256](A, sums, {n})", "reduce[1, 256](sums, A, 16)")
    assert s.get("A")[0] == x.max()


@case("olcf_hw7_gaussian_pdf.cu", "gaussian_pdf")
def case_olcf_gaussian_pdf(s: Session):
    n = int(s.rng.integers(1000, 5000))
    x = s.rng.uniform(0, 1, n).astype(np.float32)
    s.put("x", x)
    s.zeros("y", n, "f32")
    s.launch(f"gaussian_pdf[ceil({n} / 256), 256](x, y, 0.0, 1.0, {n})")
    t = x.astype(np.float64)[:, None] - 11 * 0.01 + 0.01 * np.arange(22)[None, :]
    want = (np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)).mean(axis=1)
    close(s.get("y"), want, 1e-4, 1e-5)


@case("olcf_hw9_remove_if.cu", "my_remove_if<int>")
def case_olcf_remove_if(s: Session):
    n = 4 * 256
    x = np.where(s.rng.random(n) < 0.5, np.arange(n), -1).astype(np.int32)
    s.put("idata", x)
    s.zeros("odata", n, "i32")
    s.zeros("idxs", n, "u32")
    s.launch(f"my_remove_if<int>[4, 256](idata, -1, odata, idxs, {n})")
    kept = x[x != -1]
    np.testing.assert_array_equal(s.get("odata")[: len(kept)], kept)


# --- NVIDIA DLI: Fundamentals of Accelerated Computing with Modern CUDA C++ -------------------


@case("dli_histogram_span.cu", "histogram_kernel")
def case_dli_histogram_span(s: Session):
    n = 256 * int(s.rng.integers(4, 16))
    t = s.rng.uniform(0, 100, n).astype(np.float32)
    s.put("temps", t)
    s.zeros("hist", 10, "i32")
    s.launch(f"histogram_kernel[{n // 256}, 256](temps, hist)")
    np.testing.assert_array_equal(s.get("hist"), np.bincount((t / 10).astype(np.int64), minlength=10))


@case("dli_symmetry_mdspan.cu", "symmetry_check_kernel")
def case_dli_symmetry_mdspan(s: Session):
    h, w = 64, int(s.rng.integers(10, 50))
    t = s.rng.uniform(0, 1, (h, w)).astype(np.float32)
    t[h // 2 :] = t[: h // 2][::-1]
    t[3, 4] += 1  # one asymmetric pair
    s.put("temp", t)
    s.zeros("asym", 1, "i32")
    s.launch(f"symmetry_check_kernel[1, {h // 2}](temp, asym)")
    assert int(s.get("asym")[0]) == 1


# --- GPU Teaching Kit: Accelerated Computing labs ------------------------------------------------


@case("tk_grayscale_blur.cu", "colorConvert", "blurKernel")
def case_tk_grayscale_blur(s: Session):
    h, w = int(s.rng.integers(20, 70)), int(s.rng.integers(20, 70))
    rgb = s.rng.uniform(0, 1, (h, w, 3)).astype(np.float32)
    s.put("rgb", rgb)
    s.zeros("gray", f"({h}, {w})", "f32")
    s.zeros("blur", f"({h}, {w})", "f32")
    grid = f"(ceil({w} / 16), ceil({h} / 16)), (16, 16)"
    s.launch(f"colorConvert[{grid}](gray, rgb, {w}, {h})", f"blurKernel[{grid}](blur, gray, {w}, {h})")
    gray = rgb[..., 0] * np.float32(0.21) + rgb[..., 1] * np.float32(0.71) + rgb[..., 2] * np.float32(0.07)
    close(s.get("gray"), gray, 1e-6, 1e-6)
    pad = np.pad(gray.astype(np.float64), 1)
    ones = np.pad(np.ones((h, w)), 1)
    tot = sum(pad[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    cnt = sum(ones[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    close(s.get("blur"), tot / cnt, 1e-5, 1e-5)


@case("tk_tiled_matmul.cu", "matrixMultiplyShared")
def case_tk_tiled_matmul(s: Session):
    m, k, n = (int(v) for v in s.rng.integers(17, 70, 3))
    a, b = f32(s.rng, m, k), f32(s.rng, k, n)
    s.put("A", a)
    s.put("B", b)
    s.zeros("C", f"({m}, {n})", "f32")
    s.launch(f"matrixMultiplyShared[(ceil({n} / 16), ceil({m} / 16)), (16, 16)](A, B, C, {m}, {k}, {k}, {n}, {m}, {n})")
    close(s.get("C"), a.astype(np.float64) @ b, 1e-4, 1e-4)


@case("tk_text_histogram.cu", "histogram_kernel")
def case_tk_text_histogram(s: Session):
    n = int(s.rng.integers(5000, 20000))
    text = s.rng.integers(32, 127, n).astype(np.int8)
    s.put("text", text)
    s.zeros("bins", 128, "u32")
    s.launch(f"histogram_kernel[30, 128, 128 * 4](text, bins, {n}, 128)")
    np.testing.assert_array_equal(s.get("bins"), np.bincount(text, minlength=128))


@case("tk_convolution_2d.cu", "convolution")
def case_tk_convolution_2d(s: Session):
    h, w, ch = int(s.rng.integers(20, 60)), int(s.rng.integers(20, 60)), 3
    img = s.rng.uniform(0, 1, (h, w, ch)).astype(np.float32)
    mask = s.rng.uniform(0, 0.1, (5, 5)).astype(np.float32)
    s.put("I", img)
    s.put("M", mask)
    s.zeros("P", f"({h}, {w}, {ch})", "f32")
    s.launch(f"convolution[(ceil({w} / 16), ceil({h} / 16)), (16, 16)](I, M, P, {ch}, {w}, {h})")
    pad = np.pad(img.astype(np.float64), ((2, 2), (2, 2), (0, 0)))
    acc = sum(mask[y, x] * pad[y : y + h, x : x + w] for y in range(5) for x in range(5))
    close(s.get("P"), np.clip(acc, 0, 1), 1e-5, 1e-5)


@case("tk_list_scan.cu", "scan", "fixup")
def case_tk_list_scan(s: Session):
    n = int(s.rng.integers(1025, 4000))
    blocks = (n + 1023) // 1024
    x = s.rng.uniform(-1, 1, n).astype(np.float32)
    s.put("x", x)
    s.zeros("y", n, "f32")
    s.zeros("aux", blocks, "f32")
    s.launch(
        f"scan[{blocks}, 512](x, y, aux, {n})",
        f"scan[1, 512](aux, aux, null, {blocks})",
        f"fixup[{blocks}, 512](y, aux, {n})",
    )
    close(s.get("y"), np.cumsum(x.astype(np.float64)), 1e-4, 1e-4)


@case("tk_stencil_3d.cu", "stencil")
def case_tk_stencil_3d(s: Session):
    hgt, wid, dep = int(s.rng.integers(4, 10)), int(s.rng.integers(20, 70)), int(s.rng.integers(20, 70))
    a = s.rng.uniform(0, 100, (hgt, wid, dep)).astype(np.float32)
    s.put("sin", a)
    s.zeros("sout", f"({hgt}, {wid}, {dep})", "f32")
    s.launch(f"stencil[(ceil({wid} / 32), 1, ceil({dep} / 32)), (32, 1, 32)](sout, sin, {wid}, {hgt}, {dep})")
    want = np.zeros_like(a, dtype=np.float64)
    c = a.astype(np.float64)
    lap = c[2:, 1:-1, 1:-1] + c[:-2, 1:-1, 1:-1] + c[1:-1, 2:, 1:-1] + c[1:-1, :-2, 1:-1]
    lap = lap + c[1:-1, 1:-1, 2:] + c[1:-1, 1:-1, :-2] - 6 * c[1:-1, 1:-1, 1:-1]
    want[1:-1, 1:-1, 1:-1] = np.clip(lap, 0, 255)
    close(s.get("sout"), want, 1e-5, 1e-3)


# --- the corpus ---------------------------------------------------------------------------------


def test_the_corpus_names_its_sources_and_has_thirty_kernels():
    readme = (TEACHING / "README.md").read_text()
    files = sorted(p.name for p in TEACHING.glob("*.cu"))
    for f in files:
        assert f"`{f}`" in readme, f"{f} is not in tests/teaching/README.md"
    assert {c.values[0] for c in CASES} == set(files), "every corpus file has a case"
    kernels = [k for c in CASES for k in c.values[1]]
    assert len(kernels) >= 30, kernels


@pytest.mark.parametrize("file,kernels,run", CASES)
def test_teaching_kernel(kc, tmp_path, request, file, kernels, run):
    s = Session(kc, tmp_path, np.random.default_rng(abs(hash(request.node.name)) % 2**32))
    s.cell(file)
    run(s)
    RAN.extend(k.split("<")[0] for k in kernels)


# --- asserts and faults inside headers, reported as CUDA reports them ---------------------------


def cell_line(source: str, marker: str) -> int:
    """The Jupyter cell line of `marker` in a `%%cuda` cell whose first line is the magic."""
    return next(i for i, line in enumerate(source.splitlines(), start=2) if marker in line)


def test_a_failing_assert_fails_the_launch_as_cuda_reports_it(kc):
    source = (TEACHING / "pg_printf_assert.cu").read_text()
    ok(kc, "%%cuda --name pg_printf_assert\n" + source)
    ok(kc, "%array flags = zeros(2, i32)\n%array flags_ok = ones(2, i32)")
    ex = error(kc, "%launch testAssert[2, 64](flags)")
    msg = ex.reply["content"]["evalue"]
    assert ex.reply["content"]["ename"] == "DeviceFault", msg
    src_line = cell_line(source, "assert(is_one)") - 1
    if kc.backend == "gpu":
        assert "device-side assert triggered" in msg, msg
        return
    # CUDA's own words: file:line: function: block: [..], thread: [..] Assertion `expr` failed.
    want = re.compile(
        rf"pg_printf_assert\.cu:{src_line}: void testAssert\(int ?\*\): block: \[\d+,0,0\], "
        r"thread: \[\d+,0,0\] Assertion `is_one` failed\."
    )
    assert want.search(msg), msg
    assert f"%%cuda cell line {src_line + 1}: assert(is_one);" in msg, msg
    # The launch that passes its asserts still runs.
    ok(kc, "%launch testAssert[2, 64](flags_ok)")


HEADER_FAULTS = r"""#include <algorithm>
#include <utility>

__global__ void larger_neighbour(const int* a, int* out)
{
    int i = threadIdx.x;
    out[i] = std::max(a[i], a[i + 1]);   // MAX
}

__global__ void swap_pairs(int* a)
{
    int i = 2 * threadIdx.x;
    std::swap(a[i], a[i + 1]);   // SWAP
}
"""


# std::max's loads are in libcu++'s comp.h, inlined into max.h twice, inlined into the cell line;
# std::swap's store is in its swap.h, inlined into the cell line.
@pytest.mark.parametrize("launch,marker,header", [
    ("larger_neighbour[1, 64](hf_a, hf_out)", "MAX", "cuda/std/__algorithm/comp.h"),
    ("swap_pairs[1, 33](hf_a)", "SWAP", "cuda/std/__utility/swap.h"),
], ids=["max", "swap"])
def test_a_fault_inside_a_header_is_reported_at_the_cell_line_that_led_there(kc, launch, marker, header):
    if kc.backend == "gpu":
        pytest.skip("the cell line of a fault is ptxsim's report (the GPU reports the launch failed)")
    ok(kc, "%%cuda --name header_faults\n" + HEADER_FAULTS)
    ok(kc, "%array hf_out = zeros(64, i32)\n%array hf_a = arange(64, i32)")
    ex = error(kc, "%launch " + launch)
    msg = ex.reply["content"]["evalue"]
    assert "out-of-bounds" in msg, msg
    line = cell_line(HEADER_FAULTS, marker)
    text = next(t for t in HEADER_FAULTS.splitlines() if marker in t).strip()
    found = re.search(rf"%%cuda cell line {line}: {re.escape(text)} \(at {re.escape(header)}:(\d+), inlined here\)", msg)
    assert found, msg
