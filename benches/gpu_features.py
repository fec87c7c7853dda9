"""Issue 38's GPU figures, side by side in one run through the real Jupyter kernel: a CUDA graph
of 100 small launches vs the same 100 launched one by one (µs a launch), the wmma f16 matmul's
TFLOP/s beside the tiled f32 one, and managed vs device memory bandwidth after a prefetch.

Run by `scripts/gpu-check.sh run` on a GPU machine; on ptxsim it runs too (small sizes) and
prints the simulator's times and the model's estimates, labelled so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from nbkernel import execute, start_kernel, stop_kernel  # noqa: E402

CUDA = r"""%%cuda
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
__global__ void tiny(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void copy_k(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
#define T 16
__global__ void mm_tiled(const float* A, const float* B, float* C, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x; float acc = 0.0f;
  for (int k0 = 0; k0 < n; k0 += T) {
    As[threadIdx.y][threadIdx.x] = A[r * n + k0 + threadIdx.x]; Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + c];
    __syncthreads(); for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x]; __syncthreads(); }
  C[r * n + c] = acc;
}
__global__ void mm_wmma(const __half* A, const __half* B, float* C, int n) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < n; k += 16) {
    wmma::load_matrix_sync(a, A + blockIdx.y * 16 * n + k, n);
    wmma::load_matrix_sync(b, B + k * n + blockIdx.x * 16, n);
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + blockIdx.y * 16 * n + blockIdx.x * 16, acc, n, wmma::mem_row_major);
}
"""


def run(kc, code: str):
    ex = execute(kc, code, timeout=600)
    if ex.status != "ok":
        raise SystemExit(f"failed: {code[:80]}\n{ex.text()[:2000]}")
    return ex


def timing(ex) -> dict:
    """The application/json of the last %time display in `ex`."""
    found = None
    for m in ex.messages if hasattr(ex, "messages") else []:
        data = m.get("content", {}).get("data", {})
        if "application/json" in data:
            found = data["application/json"]
    return found or {}


def main() -> None:
    km, kc = start_kernel()
    try:
        run(kc, CUDA)
        on_gpu = "backend: cuda" in run(kc, "%device").text()
        n_mm = 4096 if on_gpu else 128
        n_mem = (1 << 26) if on_gpu else (1 << 16)
        rows = []
        # Graphs: 100 tiny launches.
        run(kc, "%array g = zeros(4096, f32)\n%graph begin hundred")
        run(kc, "\n".join(["%launch tiny[16, 256](g, 4096)"] * 100))
        run(kc, "%graph end")
        one = run(kc, "%time -n 20 tiny[16, 256](g, 4096)").text()
        gr = run(kc, "%time -n 20 graph hundred").text()
        rows.append(("one launch (%time)", one))
        rows.append(("graph of 100 launches (%time graph)", gr))
        # Tensor cores vs tiled f32.
        run(kc, f"%set N = {n_mm}\n%array A = randn((N, N), f32, seed=1)\n%array B = randn((N, N), f32, seed=2)\n"
                "%array A16 = randn((N, N), f16, seed=1)\n%array B16 = randn((N, N), f16, seed=2)\n"
                "%array C = zeros((N, N), f32)")
        rows.append(("tiled f32 matmul", run(kc, "%time -n 5 --flops 2 * N * N * N mm_tiled[(N / 16, N / 16), (16, 16)](A, B, C, N)").text()))
        rows.append(("wmma f16 matmul (f32 accum.)", run(kc, "%time -n 5 --flops 2 * N * N * N mm_wmma[(N / 16, N / 16), 32](A16, B16, C, N)").text()))
        # Managed vs device memory after prefetch.
        run(kc, f"%set M = {n_mem}\n%array d_in = rand(M, f32, seed=3)\n%array d_out = zeros(M, f32)\n"
                "%array --managed m_in = rand(M, f32, seed=3)\n%array --managed m_out = zeros(M, f32)\n"
                "%prefetch m_in gpu\n%prefetch m_out gpu")
        rows.append(("device memory copy kernel", run(kc, "%time -n 10 copy_k[ceil(M / 256), 256](d_in, d_out, M)").text()))
        rows.append(("managed memory copy kernel (prefetched)", run(kc, "%time -n 10 copy_k[ceil(M / 256), 256](m_in, m_out, M)").text()))
        run(kc, "%prefetch m_in host\n%prefetch m_out host")
        rows.append(("managed memory, first touch (pages on the host)", run(kc, "%time -n 1 --warmup 0 copy_k[ceil(M / 256), 256](m_in, m_out, M)").text()))
        print(f"# issue 38 figures ({'GPU' if on_gpu else 'ptxsim: simulator times and model estimates'})\n")
        for name, text in rows:
            keep = [l for l in text.splitlines() if l.split(" ", 1)[0] in ("median", "bandwidth", "compute", "estimated") or l.startswith(("the same", "%time"))]
            print(f"## {name}\n```\n" + "\n".join(keep) + "\n```\n")
    finally:
        stop_kernel(km, kc)


if __name__ == "__main__":
    main()
