"""Real CUDA code runs unchanged (issue 36), through the real Jupyter kernel on ptxsim (and on
the GPU backend where a GPU is present; skipped with a message otherwise): block
reductions of `__syncthreads_count/and/or`, `__nanosleep`, `__activemask`, cooperative groups
tiles of 64 and 128 threads (`cg::block_tile_memory`, `cg::reduce`, `meta_group_rank`,
`tile.sync`), a grid-wide sync (its launch made cooperative), and the kernel
arguments real host code passes: `null`, a pointer into an array (`a + 256`), vector types and
structs by value as tuples. Every result is compared with a NumPy reference on random input.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from nbkernel import error, ok
from test_magics import fetch, put


from backends import kc, rng  # noqa: E402,F401  (fixtures)


BLOCK_VOTES = r"""%%cuda
__global__ void votes(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = i < n && in[i] > 0;
    int count = __syncthreads_count(p);
    int all = __syncthreads_and(p);
    int any = __syncthreads_or(p);
    __nanosleep(100);
    unsigned mask = __activemask();
    if (i < n) out[i] = count * 4 + all * 2 + any + (mask == 0xffffffffu ? 1000 : 0);
}
"""


def test_block_votes_nanosleep_and_activemask(kc, rng, tmp_path):
    ok(kc, BLOCK_VOTES)
    bs = 128
    blocks = 5
    n = bs * blocks
    x = rng.integers(-3, 3, n).astype(np.int32)
    x[:bs] = 1  # one block where every thread votes yes
    x[bs : 2 * bs] = -1  # and one where none does
    put(kc, "v_in", x, tmp_path)
    ok(kc, f"%array v_out = zeros({n}, i32)\n%launch votes[{blocks}, {bs}](v_in, v_out, {n})")
    got = fetch(kc, "v_out", tmp_path)
    for b in range(blocks):
        p = x[b * bs : (b + 1) * bs] > 0
        want = p.sum() * 4 + p.all() * 2 + p.any() + 1000
        assert (got[b * bs : (b + 1) * bs] == want).all(), (b, got[b * bs], want)


CG_TILES = r"""%%cuda
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

template <unsigned TILE>
__device__ void tile_sums(const float* x, float* sums, int* ranks, int n) {
    __shared__ cg::block_tile_memory<256> scratch;
    cg::thread_block block = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<TILE>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    float s = cg::reduce(tile, v, cg::plus<float>());
    tile.sync();
    int t = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
    if (tile.thread_rank() == 0) sums[t] = s;
    if (i < n) ranks[i] = tile.thread_rank() + 1000 * tile.meta_group_rank();
}

__global__ void tiles64(const float* x, float* sums, int* ranks, int n) {
    tile_sums<64>(x, sums, ranks, n);
}
__global__ void tiles128(const float* x, float* sums, int* ranks, int n) {
    tile_sums<128>(x, sums, ranks, n);
}
"""


@pytest.mark.parametrize("tile", [64, 128])
def test_cooperative_groups_tiles_beyond_a_warp(kc, rng, tmp_path, tile):
    ok(kc, CG_TILES)
    bs, blocks = 256, 3
    n = bs * blocks - int(rng.integers(0, 50))
    x = rng.standard_normal(n).astype(np.float32)
    put(kc, f"t{tile}_x", x, tmp_path)
    tiles = bs * blocks // tile
    ok(
        kc,
        f"%array t{tile}_s = zeros({tiles}, f32)\n%array t{tile}_r = zeros({n}, i32)\n"
        f"%launch tiles{tile}[{blocks}, {bs}](t{tile}_x, t{tile}_s, t{tile}_r, {n})",
    )
    sums = fetch(kc, f"t{tile}_s", tmp_path)
    padded = np.zeros(tiles * tile, np.float64)
    padded[:n] = x
    want = padded.reshape(tiles, tile).sum(axis=1)
    np.testing.assert_allclose(sums, want, rtol=1e-5, atol=1e-5)
    ranks = fetch(kc, f"t{tile}_r", tmp_path)
    i = np.arange(n)
    local = i % bs
    assert (ranks == local % tile + 1000 * (local // tile)).all()


GRID_SYNC = r"""%%cuda
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void two_phase(float* x) {
    cg::grid_group g = cg::this_grid();
    x[g.thread_rank()] += 1.0f;
    g.sync();
    x[0] += 1.0f;
}
"""


def test_grid_sync_launch_is_made_cooperative(kc, tmp_path):
    # test_cooperative.py has the full tests of cooperative launches.
    ok(kc, GRID_SYNC + "\n")
    ok(kc, "%array g_x = ones(64, f32)")
    ex = ok(kc, "%launch two_phase[2, 32](g_x)")
    assert "this_grid().sync()" in ex.stream() and "made cooperative" in ex.stream(), ex.describe()
    # Every thread's own increment happened before the sync (x[0] is incremented by all of them
    # after it, racing).
    assert (fetch(kc, "g_x", tmp_path)[1:] == 2.0).all()


POINTERS = r"""%%cuda
__global__ void add_bias(const float* bias, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (bias ? bias[i] : 0.0f) + 1.0f;
}
"""


def test_null_and_pointers_into_arrays(kc, rng, tmp_path):
    ok(kc, POINTERS)
    n = int(rng.integers(300, 2000))
    off = int(rng.integers(1, n - 100))
    k = n - off
    b = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    put(kc, "p_b", b, tmp_path)
    put(kc, "p_y", y, tmp_path)
    put(kc, "p_z", y, tmp_path)
    # null: the kernel's `bias ? … : 0` branch.
    ok(kc, f"%launch add_bias[ceil({n} / 128), 128](null, p_y, {n})")
    np.testing.assert_array_equal(fetch(kc, "p_y", tmp_path), np.ones(n, np.float32))
    # `p_z + off`: only the tail from element `off` changes, read from `p_b + 0`.
    ok(kc, f"%set OFF = {off}\n%launch add_bias[ceil({k} / 128), 128](p_b, p_z + OFF, {k})")
    want = y.copy()
    want[off:] = b[:k] + np.float32(1)
    np.testing.assert_array_equal(fetch(kc, "p_z", tmp_path), want)
    # An offset past the end is refused before the launch.
    ex = error(kc, f"%launch add_bias[1, 32](p_b, p_z + {n + 1}, 1)")
    assert "points past the end of array 'p_z'" in ex.text(), ex.text()
    # An access past the end through an offset pointer names the array and its element.
    ex = error(kc, f"%launch add_bias[1, 128](p_b, p_z + {n - 10}, 20)")
    text = ex.text()
    assert ex.reply["content"]["ename"] == "DeviceFault", ex.describe()
    m = re.search(r"element (\d+), \d+ bytes past the end of array `p_z`", text)
    assert m and n <= int(m[1]) < n + 10, text
    ex = error(kc, "%launch add_bias[1, 32](p_b, 3.5, 1)")
    assert "array name, `array + offset` or null" in ex.text(), ex.text()


BY_VALUE = r"""%%cuda
struct Affine {
    float scale;
    double shift;
    int clamp_lo, clamp_hi;
    float2 weights;
};

__global__ void by_value(float2 a, int3 b, float4 c, uint2 d, Affine f, float* out) {
    out[0] = a.x; out[1] = a.y;
    out[2] = b.x; out[3] = b.y; out[4] = b.z;
    out[5] = c.x; out[6] = c.y; out[7] = c.z; out[8] = c.w;
    out[9] = d.x; out[10] = d.y;
    out[11] = f.scale; out[12] = (float)f.shift; out[13] = f.clamp_lo; out[14] = f.clamp_hi;
    out[15] = f.weights.x; out[16] = f.weights.y;
}
"""


def test_vector_types_and_structs_by_value(kc, rng, tmp_path):
    ok(kc, BY_VALUE)
    vals = [float(v) for v in rng.integers(-100, 100, 17)]
    vals[9], vals[10] = abs(vals[9]), abs(vals[10])
    ints = [int(v) for v in vals]
    a = f"({vals[0]}, {vals[1]})"
    b = f"({ints[2]}, {ints[3]}, {ints[4]})"
    c = "(" + ", ".join(str(v) for v in vals[5:9]) + ")"
    d = f"({ints[9]}, {ints[10]})"
    f = f"({vals[11]}, {vals[12]}, {ints[13]}, {ints[14]}, ({vals[15]}, {vals[16]}))"
    ok(kc, f"%array bv_out = zeros(17, f32)\n%launch by_value[1, 1]({a}, {b}, {c}, {d}, {f}, bv_out)")
    np.testing.assert_array_equal(fetch(kc, "bv_out", tmp_path), np.array(vals, np.float32))
    # Flat tuples work for nested members too.
    flat = f"({vals[11]}, {vals[12]}, {ints[13]}, {ints[14]}, {vals[15]}, {vals[16]})"
    ok(kc, f"%launch by_value[1, 1]({a}, {b}, {c}, {d}, {flat}, bv_out)")
    np.testing.assert_array_equal(fetch(kc, "bv_out", tmp_path), np.array(vals, np.float32))
    # Wrong counts and types name the fields.
    ex = error(kc, f"%launch by_value[1, 1]((1.0, 2.0, 3.0), {b}, {c}, {d}, {f}, bv_out)")
    assert "a tuple of 2 numbers (x, y), got 3 values" in ex.text(), ex.text()
    ex = error(kc, f"%launch by_value[1, 1]({a}, (1, 2.5, 3), {c}, {d}, {f}, bv_out)")
    assert "field `y`" in ex.text() and "integer" in ex.text(), ex.text()
    ex = error(kc, f"%launch by_value[1, 1]({a}, {b}, {c}, (-1, 2), {f}, bv_out)")
    assert "field `x`" in ex.text(), ex.text()
    ex = error(kc, f"%launch by_value[1, 1]({a}, {b}, {c}, {d}, (1.0, 2.0), bv_out)")
    assert "scale, shift, clamp_lo, clamp_hi, weights.x, weights.y" in ex.text(), ex.text()


SYMBOLS = r"""%%cuda
__constant__ float taps[5];
__constant__ float gain = 2.0f;
__constant__ float2 offsets[3] = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}};
__device__ unsigned int hits;
namespace lut { __device__ int table[4][2] = {{1, 2}, {3, 4}, {5, 6}, {7, 8}}; }

__global__ void fir(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int k = -2; k <= 2; ++k) {
        int j = min(max(i + k, 0), n - 1);
        s += taps[k + 2] * x[j];
    }
    y[i] = s * gain + offsets[i % 3].y + lut::table[i % 4][1];
    atomicAdd(&hits, 1u);
}
"""


def fir_ref(x, taps, gain):
    n = len(x)
    y = np.zeros(n, np.float32)
    for i in range(n):
        s = np.float32(0)
        for k in range(-2, 3):
            j = min(max(i + k, 0), n - 1)
            s = np.float32(s + np.float32(taps[k + 2]) * x[j])
        y[i] = np.float32(np.float32(s * np.float32(gain)) + np.float32([2, 4, 6][i % 3])) + np.float32([2, 4, 6, 8][i % 4])
    return y


def arrays_table(kc) -> dict[str, list[str]]:
    from test_magics import plain, table_rows

    return {r[0]: r for r in table_rows(plain(ok(kc, "%arrays")))}


def test_constant_and_device_variables_are_arrays(kc, rng, tmp_path):
    ok(kc, SYMBOLS)
    rows = arrays_table(kc)
    assert rows["taps"][1:3] == ["f32", "(5,)"], rows.get("taps")
    assert rows["gain"][1:3] == ["f32", "(1,)"], rows.get("gain")
    assert rows["offsets"][1:3] == ["f32", "(3, 2)"], rows.get("offsets")
    assert rows["hits"][1:3] == ["u32", "(1,)"], rows.get("hits")
    assert rows["table"][1:3] == ["i32", "(4, 2)"], rows.get("table")
    assert "__constant__" in " ".join(rows["taps"]) and "__device__" in " ".join(rows["hits"]), rows
    # Initialisers are readable.
    assert fetch(kc, "gain", tmp_path).tolist() == [2.0]
    assert fetch(kc, "offsets", tmp_path).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert fetch(kc, "table", tmp_path).tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    # Fill the taps from the host: %copy from an array, then the kernel reads them.
    n = int(rng.integers(100, 900))
    taps = rng.standard_normal(5).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    put(kc, "f_taps", taps, tmp_path)
    put(kc, "f_x", x, tmp_path)
    ok(kc, f"%copy taps = f_taps\n%array f_y = zeros({n}, f32)\n%launch fir[ceil({n} / 128), 128](f_x, f_y, {n})")
    np.testing.assert_allclose(fetch(kc, "f_y", tmp_path), fir_ref(x, taps, 2.0), rtol=1e-5, atol=1e-5)
    assert fetch(kc, "hits", tmp_path).tolist() == [n]
    # %load into a variable writes it in place (same dtype and size); the gain changes.
    put(kc, "gain", np.array([0.5], np.float32), tmp_path)
    ok(kc, f"%launch fir[ceil({n} / 128), 128](f_x, f_y, {n})")
    np.testing.assert_allclose(fetch(kc, "f_y", tmp_path), fir_ref(x, taps, 0.5), rtol=1e-5, atol=1e-5)
    assert fetch(kc, "hits", tmp_path).tolist() == [2 * n]
    # --check and %profile see what the session wrote into the variables.
    ok(kc, f"%launch --check fir[ceil({n} / 128), 128](f_x, f_y, {n})")
    assert fetch(kc, "hits", tmp_path).tolist() == [2 * n], "--check must leave every array unchanged"
    # Wrong sizes and dtypes, %free and %swap are refused with the reason.
    ex = error(kc, "%array f_bad = zeros(4, f32)\n%copy taps = f_bad")
    assert "dtype and the number of elements must be the same" in ex.text(), ex.text()
    ex = error(kc, "%free taps")
    assert "__constant__ variable of a %%cuda cell" in ex.text(), ex.text()
    ex = error(kc, "%swap taps f_taps")
    assert "__constant__ variable" in ex.text(), ex.text()
    ex = error(kc, "%array gain = zeros(3, f32)")
    assert "same dtype and number of elements" in ex.text(), ex.text()
    # %copy works between any two arrays of the same dtype and count (shapes may differ).
    ok(kc, "%array f_2d = zeros((5, 1), f32)\n%copy f_2d = taps")
    assert fetch(kc, "f_2d", tmp_path).ravel().tolist() == taps.tolist()
    # Re-running the cell: the new module's variables, at their initial values; nothing stale.
    ok(kc, SYMBOLS)
    assert fetch(kc, "taps", tmp_path).tolist() == [0.0] * 5
    assert fetch(kc, "gain", tmp_path).tolist() == [2.0]
    assert fetch(kc, "hits", tmp_path).tolist() == [0]


def test_variables_through_nb_get_and_put(kc, rng, tmp_path):
    ok(kc, SYMBOLS)
    vals = [float(v) for v in rng.integers(-9, 9, 5)]
    code = (
        f"nb::put(\"taps\", &[{', '.join(f'{v:.1f}f32' for v in vals)}]).unwrap();\n"
        "let g: nb::Array<f32> = nb::get(\"offsets\").unwrap();\n"
        "println!(\"{:?} {:?}\", g.shape, g.data);"
    )
    ex = ok(kc, code, timeout=300)
    assert "[3, 2] [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]" in ex.stream(), ex.text()
    assert fetch(kc, "taps", tmp_path).tolist() == vals


def test_errors_lead_somewhere(kc):
    # A missing `;`: NVRTC names the next line; the error shows the two lines above it too,
    # each with its cell line number.
    ex = error(kc, "%%cuda\n__global__ void semi(float* x) {\n    float a = x[0]\n    x[1] = a;\n}\n")
    text = ex.text()
    m = re.search(r"cell line (\d+): error", text)
    assert m, text
    line = int(m[1])
    assert f"{line - 1} |     float a = x[0]" in text and f"{line} |     x[1] = a;" in text, text
    # No "did you mean X?" where X is what was written.
    ok(kc, "%%cuda\ntemplate <typename T> __global__ void tscale(T* x, T a) { x[0] *= a; }\n")
    ex = error(kc, "%array e_x = ones(4, f32)\n%launch tscale[1, 1](e_x, 2.0)")
    assert "did you mean tscale?" not in ex.text() and "did you mean `tscale`" not in ex.text(), ex.text()

