"""Cooperative launches (issue 55) through the real Jupyter kernel, on ptxsim (and on the GPU
backend where a GPU is present; skipped with a message otherwise): a `%%cuda` cell whose kernel
uses `cg::this_grid().sync()` twice (a grid-wide reduction, then a normalisation by its total),
launched with `--cooperative` and without it (then made cooperative, with a note), compared with
NumPy on random input; `--check` finds nothing in it; a grid too large to be resident at once is
refused naming the limit; `%help launch` documents the flag; and the same launch from a Rust
cell through `nb::exec`.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from nbkernel import error, ok
from test_magics import fetch, put


from backends import kc, rng  # noqa: E402,F401  (fixtures)


NORMALISE = r"""%%cuda
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void normalise(const float* x, float* out, float* partial, float* total, int n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ float s[256];
    unsigned i = (unsigned)grid.thread_rank();
    float v = i < (unsigned)n ? x[i] : 0.0f;
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        float t = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        *total = t;
    }
    grid.sync();
    if (i < (unsigned)n) out[i] = v / *total;
}
__global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
"""

NOTE = "uses a grid-wide sync (cooperative_groups::this_grid().sync()), so this launch was made cooperative"


def setup_normalise(kc, rng, tmp_path, tag):
    ok(kc, NORMALISE)
    blocks = int(rng.integers(3, 24))
    n = blocks * 256 - int(rng.integers(0, 200))
    x = (rng.random(n) + 0.01).astype(np.float32)
    put(kc, f"{tag}_x", x, tmp_path)
    ok(kc, f"%array {tag}_out = zeros({n}, f32)\n%array {tag}_p = zeros({blocks}, f32)\n%array {tag}_t = zeros(1, f32)")
    return blocks, n, x


def check_normalised(kc, tag, x, blocks, tmp_path):
    out = fetch(kc, f"{tag}_out", tmp_path)
    partial = fetch(kc, f"{tag}_p", tmp_path)
    padded = np.zeros(blocks * 256, np.float32)
    padded[: len(x)] = x
    np.testing.assert_allclose(partial, padded.reshape(blocks, 256).sum(axis=1, dtype=np.float64), rtol=1e-5)
    np.testing.assert_allclose(out, x / x.astype(np.float64).sum(), rtol=1e-5)


def test_grid_sync_is_made_cooperative_with_a_note(kc, rng, tmp_path):
    blocks, n, x = setup_normalise(kc, rng, tmp_path, "a")
    ex = ok(kc, f"%launch normalise[{blocks}, 256](a_x, a_out, a_p, a_t, {n})")
    assert f"note: `normalise` {NOTE}" in ex.stream(), ex.describe()
    check_normalised(kc, "a", x, blocks, tmp_path)


def test_cooperative_flag_runs_without_a_note(kc, rng, tmp_path):
    blocks, n, x = setup_normalise(kc, rng, tmp_path, "b")
    ex = ok(kc, f"%launch --cooperative normalise<<<{blocks}, 256>>>(b_x, b_out, b_p, b_t, {n})")
    assert "made cooperative" not in ex.text(), ex.describe()
    check_normalised(kc, "b", x, blocks, tmp_path)
    # A kernel without a grid sync may be launched cooperatively too, and gets no note.
    y = rng.random(1000).astype(np.float32)
    put(kc, "b_y", y, tmp_path)
    ex = ok(kc, "%launch --cooperative scale[4, 256](b_y, 2.0, 1000)\n%launch scale[4, 256](b_y, 0.5, 1000)")
    assert "note" not in ex.text(), ex.describe()
    np.testing.assert_array_equal(fetch(kc, "b_y", tmp_path), y)


def test_check_finds_nothing_in_a_grid_sync(kc, rng, tmp_path):
    blocks, n, x = setup_normalise(kc, rng, tmp_path, "c")
    ex = ok(kc, f"%launch --check normalise[{blocks}, 256](c_x, c_out, c_p, c_t, {n})")
    assert ex.stream("stderr") == "", ex.describe()
    assert NOTE in ex.stream(), ex.describe()
    # --check ran on copies: the arrays are unchanged.
    assert not fetch(kc, "c_out", tmp_path).any()
    ex = ok(kc, f"%launch --check --cooperative normalise[{blocks}, 256](c_x, c_out, c_p, c_t, {n})")
    assert ex.stream("stderr") == "", ex.describe()


def test_a_grid_too_large_to_be_resident_is_refused_naming_the_limit(kc, rng, tmp_path):
    blocks, n, x = setup_normalise(kc, rng, tmp_path, "d")
    for flag in ["", "--cooperative "]:
        ex = error(kc, f"%launch {flag}normalise[100000, 256](d_x, d_out, d_p, d_t, {n})")
        text = ex.text()
        assert ex.reply["content"]["ename"] == "LaunchError", ex.describe()
        assert "a cooperative launch needs every block resident at once: 100,000 blocks of 256 threads" in text, text
        m = re.search(r"holds at most ([\d,]+) \((\d+) per SM × ([\d,]+) SMs\)", text)
        assert m, text
        most, per_sm, sms = (int(g.replace(",", "")) for g in m.groups())
        assert most == per_sm * sms and 0 < most < 100000, text
        # The largest grid the limit names runs.
        if flag:
            ok(kc, f"%array d_big = zeros({most * 256}, f32)\n%array d_bp = zeros({most}, f32)")
            ok(kc, f"%launch --cooperative normalise[{most}, 256](d_big, d_big, d_bp, d_t, 0)")
            ex = error(kc, f"%launch --cooperative normalise[{most + 1}, 256](d_big, d_big, d_bp, d_t, 0)")
            assert f"{most + 1:,} blocks of 256 threads" in ex.text(), ex.describe()
    # Nothing ran: the output is untouched.
    assert not fetch(kc, "d_out", tmp_path).any()


def test_help_launch_documents_cooperative(kc):
    text = ok(kc, "%help launch").text()
    assert "--cooperative" in text and "this_grid().sync()" in text, text


def test_nb_exec_launches_cooperatively(kernel, tmp_path):
    """A Rust cell launches the grid-sync kernel through nb::exec, with and without the flag."""
    _, kc = kernel
    ok(kc, NORMALISE)
    blocks, n = 7, 7 * 256 - 37
    ex = ok(kc, f"""
let x: Vec<f32> = (0..{n}).map(|i| ((i * 7919 % 1000) as f32) / 1000.0 + 0.01).collect();
nb::put("r_x", &x).unwrap();
nb::put("r_out", &vec![0.0f32; {n}]).unwrap();
nb::put("r_p", &vec![0.0f32; {blocks}]).unwrap();
nb::put("r_t", &[0.0f32]).unwrap();
nb::exec("%launch normalise[{blocks}, 256](r_x, r_out, r_p, r_t, {n})").unwrap();
let out: nb::Array<f32> = nb::get("r_out").unwrap();
let total: f64 = x.iter().map(|&v| v as f64).sum();
let worst = x.iter().zip(&out.data).map(|(&v, &o)| ((o as f64) - (v as f64) / total).abs() / ((v as f64) / total)).fold(0.0, f64::max);
println!("worst relative error {{worst:e}}");
assert!(worst < 1e-5);
nb::put("r_out", &vec![0.0f32; {n}]).unwrap();
nb::exec("%launch --cooperative normalise[{blocks}, 256](r_x, r_out, r_p, r_t, {n})").unwrap();
let again: nb::Array<f32> = nb::get("r_out").unwrap();
assert_eq!(again.data, out.data);
println!("cooperative from Rust: ok");
""")
    out = ex.stream()
    assert "cooperative from Rust: ok" in out, ex.describe()
    assert NOTE in out, ex.describe()
