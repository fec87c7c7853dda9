"""f16 and bf16 arrays through the real Jupyter kernel on ptxsim (issue 38): constructors, a
CUDA kernel with __half / __half2 / __nv_bfloat16 parameters against a NumPy float16 reference on
random input, %save/%load .npy round trips (bf16 as a 2-byte void viewed as uint16), dtype errors."""

from __future__ import annotations

import numpy as np

from nbkernel import error, ok
from test_magics import fetch, put

AXPYH = r"""%%cuda
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void axpyh(__half a, __half2 off, const __half* x, __half* y, const __nv_bfloat16* bx, float* f, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = __hadd(__hfma(a, x[i], __low2half(off)), __high2half(off)); f[i] = __bfloat162float(bx[i]); }
}
"""


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to bf16 (nearest even), as uint16 bits."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def test_f16_kernel_matches_numpy_and_round_trips(kc, tmp_path):
    rng = np.random.default_rng(38)
    n = 300
    x = rng.uniform(-4, 4, n).astype(np.float16)
    put(kc, "hx", x, tmp_path)
    bits = bf16_bits(rng.uniform(-2, 2, n).astype(np.float32))
    put(kc, "hb16", bits.view("V2"), tmp_path)
    ok(kc, AXPYH)
    ok(kc, f"%array hy = zeros({n}, f16)\n%array hf = zeros({n}, f32)\n"
           f"%launch axpyh[3, 128](1.5, (0.25, 1.0), hx, hy, hb16, hf, {n})")
    a, lo, hi = np.float16(1.5), np.float16(0.25), np.float16(1.0)
    want = (((a.astype(np.float64) * x.astype(np.float64) + np.float64(lo)).astype(np.float16)) + hi).astype(np.float16)
    got = fetch(kc, "hy", tmp_path)
    assert got.dtype == np.float16 and (got.view(np.uint16) == want.view(np.uint16)).all()
    f = fetch(kc, "hf", tmp_path)
    assert (f == (bits.astype(np.uint32) << 16).view(np.float32)).all()
    back = fetch(kc, "hb16", tmp_path)
    assert back.dtype.itemsize == 2 and (back.view(np.uint16) == bits).all()
    text = ok(kc, "%arrays").text()
    assert "bf16" in text and "f16" in text


def test_f16_constructors_and_errors(kc, tmp_path):
    ok(kc, "%array ha = arange(8, f16)\n%array hz = ones((2, 3), bf16)")
    assert (fetch(kc, "ha", tmp_path) == np.arange(8, dtype=np.float16)).all()
    assert (fetch(kc, "hz", tmp_path).view(np.uint16) == 0x3F80).all()
    ok(kc, AXPYH)
    e = error(kc, "%array hf2 = zeros(8, f32)\n%array hy2 = zeros(8, f16)\n"
                  "%launch axpyh[1, 8](1.5, (0.25, 1.0), hf2, hy2, hz, hf2, 8)")
    assert "points to f16" in e.text()
