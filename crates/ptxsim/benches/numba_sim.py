"""Numba CUDA simulator side of the ptxsim benchmark (run by examples/bench with
NUMBA_ENABLE_CUDASIM=1). For every case directory written by the bench (inputs, launch shape,
and ptxsim's output), runs the same CUDA kernel written for numba.cuda on the same inputs, times
the launch, compares with ptxsim's output and prints one line per case:

    RESULT <case> <threads> <seconds> ok|MISMATCH|SKIP

Only a benchmark helper: it reads the given directory and writes nothing.
"""
import math
import os
import sys
import time

import numpy as np
from numba import cuda, float32, int32, uint32

TILE = 16


@cuda.jit
def vecAdd(a, b, c, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        c[i] = a[i] + b[i]


@cuda.jit
def matmulNaive(A, B, C, M, N, K):
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if row < M and col < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[row * K + k] * B[k * N + col]
        C[row * N + col] = acc


@cuda.jit
def matmulTiled(A, B, C, M, N, K):
    As = cuda.shared.array((TILE, TILE), dtype=float32)
    Bs = cuda.shared.array((TILE, TILE), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range((K + TILE - 1) // TILE):
        ak = t * TILE + tx
        bk = t * TILE + ty
        As[ty, tx] = A[row * K + ak] if (row < M and ak < K) else float32(0.0)
        Bs[ty, tx] = B[bk * N + col] if (bk < K and col < N) else float32(0.0)
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row * N + col] = acc


@cuda.jit
def reduceBlockTree(x, partial, n):
    sdata = cuda.shared.array(0, dtype=float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < n else float32(0.0)
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def histogramShared(data, hist, n):
    local = cuda.shared.array(256, dtype=uint32)
    b = cuda.threadIdx.x
    while b < 256:
        local[b] = 0
        b += cuda.blockDim.x
    cuda.syncthreads()
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while i < n:
        cuda.atomic.add(local, data[i], 1)
        i += cuda.blockDim.x * cuda.gridDim.x
    cuda.syncthreads()
    b = cuda.threadIdx.x
    while b < 256:
        if local[b] != 0:
            cuda.atomic.add(hist, b, local[b])
        b += cuda.blockDim.x


@cuda.jit
def blur3x3(img, out, w, h):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if x >= w or y >= h:
        return
    s = float32(0.0)
    for dy in range(-1, 2):
        yy = min(max(y + dy, 0), h - 1)
        for dx in range(-1, 2):
            xx = min(max(x + dx, 0), w - 1)
            s += img[yy * w + xx]
    out[y * w + x] = s / float32(9.0)


@cuda.jit
def heatStep(u, nxt, w, h, alpha):
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if x >= w or y >= h:
        return
    i = y * w + x
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        nxt[i] = u[i]
        return
    lap = u[i - 1] + u[i + 1] + u[i - w] + u[i + w] - float32(4.0) * u[i]
    nxt[i] = u[i] + alpha * lap


@cuda.jit
def binParticles(pos, n, G, maxPerCell, cellCount, cellItems, overflow):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i >= n:
        return
    cx = min(max(int(pos[2 * i] * G), 0), G - 1)
    cy = min(max(int(pos[2 * i + 1] * G), 0), G - 1)
    cell = cy * G + cx
    slot = cuda.atomic.add(cellCount, cell, 1)
    if slot < maxPerCell:
        cellItems[cell * maxPerCell + slot] = i
    else:
        cuda.atomic.add(overflow, 0, 1)


KERNELS = {
    "vecAdd": vecAdd,
    "matmulNaive": matmulNaive,
    "matmulTiled": matmulTiled,
    "reduceBlockTree": reduceBlockTree,
    "histogramShared": histogramShared,
    "blur3x3": blur3x3,
    "heatStep": heatStep,
    "binParticles": binParticles,
}


def run_case(d):
    meta = [line.split() for line in open(os.path.join(d, "meta.txt")) if line.strip()]
    info = {}
    bufs = {}
    args = []
    for f in meta:
        if f[0] == "buf":
            bufs[f[1]] = np.fromfile(os.path.join(d, f[1] + ".bin"), dtype=f[2])
        elif f[0] == "arg":
            if f[1] == "buf":
                args.append(f[2])  # the buffer's name: each launch gets fresh copies
            elif f[1] == "i32":
                args.append(np.int32(int(f[2])))
            else:
                args.append(np.float32(float(f[2])))
        else:
            info[f[0]] = f[1:]
    name = info["kernel"][0]
    grid = tuple(int(v) for v in info["grid"])
    block = tuple(int(v) for v in info["block"])
    threads = math.prod(grid) * math.prod(block)
    kernel = KERNELS.get(name)
    if kernel is None:
        print(f"{name}: not supported by the Numba simulator (no warp shuffles)")
        print(f"RESULT {name} {threads} 0 SKIP")
        return
    shmem = int(info["shmem"][0])
    # Best of two launches, each on fresh copies of the inputs (kernels with atomics add into
    # their outputs), so that first-call costs do not count against Numba.
    secs = math.inf
    for _ in range(2):
        fresh = {k: v.copy() for k, v in bufs.items()}
        run_args = [fresh[a] if isinstance(a, str) else a for a in args]
        t0 = time.perf_counter()
        kernel[grid, block, 0, shmem](*run_args)
        secs = min(secs, time.perf_counter() - t0)
    out = fresh[info["out"][0]]
    expected = np.fromfile(os.path.join(d, "expected.bin"), dtype=out.dtype)
    if info["cmp"][0] == "exact":
        ok = np.array_equal(out, expected)
    else:
        ok = np.allclose(out, expected, rtol=float(info["cmp"][0]), atol=float(info["cmp"][0]))
    print(f"RESULT {name} {threads} {secs:.6f} {'ok' if ok else 'MISMATCH'}")


def main():
    root = sys.argv[1]
    for case in sorted(os.listdir(root)):
        run_case(os.path.join(root, case))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
