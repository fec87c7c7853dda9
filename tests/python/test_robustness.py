"""Device-side recursion through the real Jupyter kernel (issue 40): a `__device__` function that
recurses without end comes back within seconds as a `DeviceFault` naming the CUDA kernel, the
thread and the source line of the call, the Jupyter kernel and its arrays survive it, and
`%limit stack BYTES` sets the call stack per thread (CUDA's cudaLimitStackSize, 1024 bytes by
default) that a bounded recursion needs.

The cells are compiled with -G: at -O3 NVRTC turns these recursions into loops or removes them.
The tests force ptxsim (`%backend sim`) so they mean the same on a machine with a GPU.
"""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import numpy as np
import pytest

from nbkernel import execute, ok

SEED = int(os.environ.get("NBCUDA_TEST_SEED", random.SystemRandom().randrange(1 << 31)))
print(f"test_robustness: NBCUDA_TEST_SEED={SEED}")

RECURSION_CELL = """%%cuda -G
__device__ int f(int x) { return f(x + 1) + 1; }
__global__ void runaway(int* out) { int i = threadIdx.x; out[i] = i == 3 ? f(i) : i; }
__device__ int depth(int n) { return n <= 0 ? 0 : depth(n - 1) + 1; }
__global__ void deep(int* out, int n) { out[threadIdx.x] = depth(n); }
"""


@pytest.fixture
def sim(kc):
    ok(kc, "%backend sim")
    ok(kc, RECURSION_CELL)
    yield kc
    ok(kc, "%limit stack 1024")


def fetch(kc, name: str, tmp_path: Path) -> np.ndarray:
    path = tmp_path / f"{name}-{time.monotonic_ns()}.npy"
    ok(kc, f"%save {name} {path}")
    return np.load(path)


def test_runaway_recursion_is_a_quick_device_fault_and_the_state_survives(sim, tmp_path):
    kc = sim
    rng = np.random.default_rng(SEED)
    keep = rng.standard_normal((37, 53)).astype(np.float32)
    src = tmp_path / "keep.npy"
    np.save(src, keep)
    ok(kc, f"%load keep = {src}")
    ok(kc, "%array out = zeros(32, i32)")
    t0 = time.monotonic()
    ex = execute(kc, "%launch runaway[1, 32](out)")
    took = time.monotonic() - t0
    assert ex.status == "error", ex.describe()
    err = ex.reply["content"]
    assert err["ename"] == "DeviceFault", ex.describe()
    message = err["evalue"]
    print(f"reported in {took * 1e3:.0f} ms: {message}")
    assert took < 30.0, f"took {took:.1f} s"  # liveness: it is reported in milliseconds
    assert "call stack overflow" in message, message
    assert "1024-byte stack" in message, message
    assert "CUDA kernel `runaway`" in message, message
    assert "thread (3, 0, 0)" in message, message
    assert re.search(
        r"%%cuda cell line 2: __device__ int f\(int x\) \{ return f\(x \+ 1\) \+ 1; \}", message
    ), message
    assert "%limit stack BYTES" in message, message
    # The next cell works, and the array made before holds its exact values.
    ok(kc, "%array after = arange(5, i32)")
    assert fetch(kc, "after", tmp_path).tolist() == [0, 1, 2, 3, 4]
    got = fetch(kc, "keep", tmp_path)
    assert got.dtype == np.float32 and got.shape == keep.shape
    assert got.tobytes() == keep.tobytes()


def test_limit_stack_sets_the_stack_a_bounded_recursion_needs(sim, tmp_path):
    kc = sim
    shown = ok(kc, "%limit").text()
    assert "stack" in shown and "1024 bytes per thread" in shown, shown
    ok(kc, "%array d = zeros(1, i32)")
    ok(kc, "%launch deep[1, 1](d, 20)")
    assert fetch(kc, "d", tmp_path).tolist() == [20]

    ok(kc, "%limit stack 256")
    assert "256 bytes per thread" in ok(kc, "%limit").text()
    ok(kc, "%array d = zeros(1, i32)")
    ex = execute(kc, "%launch deep[1, 1](d, 20)")
    assert ex.status == "error", ex.describe()
    assert ex.reply["content"]["ename"] == "DeviceFault", ex.describe()
    assert "256-byte stack" in ex.reply["content"]["evalue"], ex.describe()

    ok(kc, "%limit stack 4096")
    ok(kc, "%array d = zeros(1, i32)")
    ok(kc, "%launch deep[1, 1](d, 20)")
    assert fetch(kc, "d", tmp_path).tolist() == [20]

    for bad in ("0", "-16", "2000000"):
        ex = execute(kc, f"%limit stack {bad}")
        assert ex.status == "error", ex.describe()
        assert ex.reply["content"]["ename"] == "ArgumentError", ex.describe()
        assert f"{bad} bytes" in ex.reply["content"]["evalue"], ex.describe()
    assert "4096 bytes per thread" in ok(kc, "%limit").text()
