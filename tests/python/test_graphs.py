"""CUDA graphs and managed memory through the real Jupyter kernel (issue 38): a graph recorded
in one cell and replayed in another against a NumPy reference on random input, `%time graph`,
the errors (unknown graph, a recording that meets `%free`, `%free` of an array a graph uses), a
failed cell during a recording losing nothing, and `%array --managed` with `%prefetch`."""

from __future__ import annotations

import numpy as np

from nbkernel import error, ok
from test_magics import fetch, put

SAXPY = r"""%%cuda
__global__ void gsaxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def test_graph_recorded_in_one_cell_replays_in_another(kc, tmp_path):
    rng = np.random.default_rng(380)
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    put(kc, "gx", x, tmp_path)
    put(kc, "gy", y, tmp_path)
    ok(kc, SAXPY)
    ok(kc, "%array gz = zeros(777, f32)\n%graph begin gstep\n%launch gsaxpy[4, 256](0.5, gx, gy, 777)")
    # The recording spans cells; a failing line is refused and loses nothing.
    e = error(kc, "%copy gz = gy\n%free gx")
    assert "GraphError" in e.text() and "gstep" in e.text()
    assert (fetch(kc, "gy", tmp_path) == y).all(), "recording ran nothing"
    text = ok(kc, "%graph end\n%graph").text()
    assert "gstep: 2 steps" in text and "%copy gz = gy" in text
    ok(kc, "%graph launch gstep -n 4")
    want = y.copy()
    for _ in range(4):
        want = (np.float32(0.5) * x + want).astype(np.float32)
    assert np.array_equal(fetch(kc, "gy", tmp_path), want)
    assert np.array_equal(fetch(kc, "gz", tmp_path), want)
    t = ok(kc, "%time -n 2 graph gstep").text()
    assert "graph gstep (2 steps)" in t
    e = error(kc, "%graph launch gstp")
    assert "no graph named `gstp`" in e.text() and "did you mean `gstep`" in e.text()
    e = error(kc, "%free gx")
    assert "used by graph `gstep`" in e.text()
    ok(kc, "%graph drop gstep\n%free gx")


def test_managed_arrays_and_prefetch(kc, tmp_path):
    ok(kc, SAXPY)
    ok(kc, "%array --managed gm = ones(256, f32)\n%array gmx = arange(256, f32)\n"
           "%prefetch gm host\n%launch gsaxpy[1, 256](2.0, gmx, gm, 256)\n%prefetch gm")
    assert np.array_equal(fetch(kc, "gm", tmp_path), 2 * np.arange(256, dtype=np.float32) + 1)
    assert "managed" in ok(kc, "%arrays").text()
    e = error(kc, "%prefetch gmx")
    assert "not in managed memory" in e.text()
