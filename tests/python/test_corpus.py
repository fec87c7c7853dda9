"""The conformance corpus (issue 36): public CUDA kernels, device code as written, in
`tests/corpus/` (origin and licence at the top of each file; `tests/corpus/extract.py` makes them
from NVIDIA's cuda-samples, BSD-3-Clause). Each file is one `%%cuda` cell; each CUDA kernel runs
through the real Jupyter kernel on ptxsim (and on the GPU backend where a GPU is present),
launched the way the sample's host code launches it
(its `cudaMemcpyToSymbol` is `%copy`, its `d_data + 256` is `a + 256`), and its result is compared
with a NumPy reference on random input. That a cell loads at all means ptxsim knew every name
and special register NVRTC wrote into its PTX.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nbkernel import has_cuda_device, ok, start_kernel, stop_kernel
from test_magics import fetch, put

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
RAN: list[str] = []


@pytest.fixture(scope="module", params=["sim", "gpu"])
def kc(request):
    """A Jupyter kernel on ptxsim, and one on the GPU backend where a GPU is present."""
    if request.param == "gpu" and not has_cuda_device():
        pytest.skip("no CUDA GPU on this machine: the corpus on the GPU backend is skipped")
    km, client = start_kernel()
    RAN.clear()
    try:
        ok(client, f"%backend {request.param}")
        yield client
    finally:
        stop_kernel(km, client)
        print(
            f"\ncorpus on {request.param}: {len(RAN)} CUDA kernels matched their references: "
            + ", ".join(RAN)
        )


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % 2**32)


def cell(kc, name: str) -> None:
    source = (CORPUS / name).read_text()
    ok(kc, "%%cuda --name " + name.removesuffix(".cu") + "\n" + source, timeout=300)


def test_every_corpus_file_names_its_origin_and_licence():
    files = sorted(CORPUS.glob("*.cu"))
    assert len(files) >= 8, files
    for f in files:
        head = f.read_text()[:3000]
        assert "// Origin: https://github.com/" in head and "// Licence: " in head, f
        assert "Redistribution and use in source and binary forms" in head, f


# --- NVIDIA cuda-samples: transpose (8 kernels) -------------------------------------------------


@pytest.mark.parametrize(
    "kernel",
    [
        "copy",
        "copySharedMem",
        "transposeNaive",
        "transposeCoalesced",
        "transposeNoBankConflicts",
        "transposeDiagonal",
        "transposeFineGrained",
        "transposeCoarseGrained",
    ],
)
def test_transpose_kernels(kc, rng, tmp_path, kernel):
    cell(kc, "nvidia_transpose.cu")
    w = h = 32 * int(rng.integers(2, 4))
    src = rng.standard_normal((h, w)).astype(np.float32)
    put(kc, "tr_in", src, tmp_path)
    ok(kc, f"%array tr_out = zeros(({w}, {h}), f32)\n%launch {kernel}[({w // 32}, {h // 32}), (32, 16)](tr_out, tr_in, {w}, {h})")
    got = fetch(kc, "tr_out", tmp_path)
    tiles = src.reshape(h // 32, 32, w // 32, 32)
    want = {
        "copy": src,
        "copySharedMem": src,
        "transposeFineGrained": tiles.transpose(0, 3, 2, 1).reshape(h, w),
        "transposeCoarseGrained": tiles.transpose(2, 1, 0, 3).reshape(w, h),
    }.get(kernel, src.T)
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    RAN.append(kernel)


# --- NVIDIA cuda-samples: reduction (10 kernels) ------------------------------------------------

REDUCTIONS = [
    # (launch name, elements per block: "t" = blockDim, "2t", or None for grid-stride)
    ("reduce0<int>", "t"),
    ("reduce1<int>", "t"),
    ("reduce2<int>", "t"),
    ("reduce3<int>", "2t"),
    ("reduce4<int, 256>", "2t"),
    ("reduce5<int, 256>", "2t"),
    ("reduce6<int, 256, true>", None),
    ("reduce7<int, 256, true>", None),
    ("cg_reduce<int>", None),
    ("multi_warp_cg_reduce<int, 256, 64>", None),
]


@pytest.mark.parametrize("kernel,per_block", REDUCTIONS, ids=[r[0].split("<")[0] for r in REDUCTIONS])
def test_reduction_kernels(kc, rng, tmp_path, kernel, per_block):
    cell(kc, "nvidia_reduction.cu")
    t = 256
    n = 1 << int(rng.integers(12, 14))
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    blocks = n // t if per_block == "t" else n // (2 * t) if per_block == "2t" else 8
    put(kc, "rd_in", x, tmp_path)
    ok(kc, f"%array rd_out = zeros({blocks}, i32)\n%launch {kernel}[{blocks}, {t}, {t * 4}](rd_in, rd_out, {n})")
    got = fetch(kc, "rd_out", tmp_path)
    if per_block is not None:
        chunk = n // blocks
        np.testing.assert_array_equal(got, x.reshape(blocks, chunk).sum(axis=1))
    assert int(got.astype(np.int64).sum()) == int(x.astype(np.int64).sum()), kernel
    RAN.append(kernel.split("<")[0])


# --- NVIDIA cuda-samples: separable convolution (2 kernels, __constant__ taps) --------------------


def test_separable_convolution_rows_and_columns(kc, rng, tmp_path):
    cell(kc, "nvidia_convolution_separable.cu")
    w, h, r = 128, 64 * int(rng.integers(1, 3)), 8
    img = rng.standard_normal((h, w)).astype(np.float32)
    taps = rng.standard_normal(2 * r + 1).astype(np.float32)
    put(kc, "cv_img", img, tmp_path)
    put(kc, "cv_taps", taps, tmp_path)
    # The sample's setConvolutionKernel is cudaMemcpyToSymbol(c_Kernel, …): here %copy.
    ok(
        kc,
        f"%copy c_Kernel = cv_taps\n%array cv_rows = zeros(({h}, {w}), f32)\n%array cv_out = zeros(({h}, {w}), f32)\n"
        f"%launch convolutionRowsKernel[({w // (8 * 16)}, {h // 4}), (16, 4)](cv_rows, cv_img, {w}, {h}, {w})\n"
        f"%launch convolutionColumnsKernel[({w // 16}, {h // (8 * 8)}), (16, 8)](cv_out, cv_rows, {w}, {h}, {w})",
    )

    def conv(a: np.ndarray, axis: int) -> np.ndarray:
        out = np.zeros_like(a, dtype=np.float64)
        n = a.shape[axis]
        for j in range(-r, r + 1):
            shifted = np.zeros_like(a, dtype=np.float64)
            idx = np.arange(n) + j
            valid = (idx >= 0) & (idx < n)
            if axis == 1:
                shifted[:, valid] = a[:, idx[valid]]
            else:
                shifted[valid, :] = a[idx[valid], :]
            out += taps[r - j] * shifted
        return out

    rows = conv(img, 1)
    np.testing.assert_allclose(fetch(kc, "cv_rows", tmp_path), rows, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fetch(kc, "cv_out", tmp_path), conv(rows, 0), rtol=1e-3, atol=1e-3)
    RAN.extend(["convolutionRowsKernel", "convolutionColumnsKernel"])


# --- NVIDIA cuda-samples: vectorAdd, scalarProd ----------------------------------------------------


def test_vector_add(kc, rng, tmp_path):
    cell(kc, "nvidia_vector_add.cu")
    n = int(rng.integers(1000, 50000))
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    put(kc, "va_a", a, tmp_path)
    put(kc, "va_b", b, tmp_path)
    ok(kc, f"%array va_c = zeros({n}, f32)\n%launch vectorAdd[ceil({n} / 256), 256](va_a, va_b, va_c, {n})")
    np.testing.assert_array_equal(fetch(kc, "va_c", tmp_path), a + b)
    RAN.append("vectorAdd")


def test_scalar_products(kc, rng, tmp_path):
    cell(kc, "nvidia_scalar_prod.cu")
    vectors, elements = 16, 2048
    a = rng.standard_normal(vectors * elements).astype(np.float32)
    b = rng.standard_normal(vectors * elements).astype(np.float32)
    put(kc, "sp_a", a, tmp_path)
    put(kc, "sp_b", b, tmp_path)
    ok(kc, f"%array sp_c = zeros({vectors}, f32)\n%launch scalarProdGPU[8, 256](sp_c, sp_a, sp_b, {vectors}, {elements})")
    want = (a.astype(np.float64) * b).reshape(vectors, elements).sum(axis=1)
    np.testing.assert_allclose(fetch(kc, "sp_c", tmp_path), want, rtol=1e-4, atol=1e-3)
    RAN.append("scalarProdGPU")


# --- NVIDIA cuda-samples: simpleVoteIntrinsics (3 kernels) -------------------------------------


def test_vote_intrinsics(kc, rng, tmp_path):
    cell(kc, "nvidia_simple_vote.cu")
    t = 128
    x = (rng.random(t) < 0.05).astype(np.uint32)
    x[32:64] = 0  # a warp where nobody votes
    x[64:96] = 1  # and one where everybody does
    put(kc, "vt_in", x, tmp_path)
    ok(kc, f"%array vt_any = zeros({t}, u32)\n%array vt_all = zeros({t}, u32)\n"
           f"%launch VoteAnyKernel1[1, {t}](vt_in, vt_any, {t})\n%launch VoteAllKernel2[1, {t}](vt_in, vt_all, {t})")
    warps = x.reshape(-1, 32)
    want_any = np.repeat(warps.any(axis=1), 32).astype(np.uint32)
    want_all = np.repeat(warps.all(axis=1), 32).astype(np.uint32)
    assert (fetch(kc, "vt_any", tmp_path) != 0).astype(np.uint32).tolist() == want_any.tolist()
    assert (fetch(kc, "vt_all", tmp_path) != 0).astype(np.uint32).tolist() == want_all.tolist()
    ok(kc, "%array vt_info = zeros(288, u8)\n%launch VoteAnyKernel3[1, 96](vt_info, 32)")
    info = fetch(kc, "vt_info", tmp_path).reshape(96, 3)
    tx = np.arange(96)
    half = tx >= 48
    warp_any = np.repeat(half.reshape(3, 32).any(axis=1), 32)
    warp_all = np.repeat(half.reshape(3, 32).all(axis=1), 32)
    assert info[:, 0].tolist() == warp_any.astype(np.uint8).tolist()
    assert info[:, 1].tolist() == half.astype(np.uint8).tolist()
    assert info[:, 2].tolist() == warp_all.astype(np.uint8).tolist()
    RAN.extend(["VoteAnyKernel1", "VoteAllKernel2", "VoteAnyKernel3"])


# --- NVIDIA cuda-samples: shfl_scan (2 kernels, `data + 256` and a default null argument) -------


def test_shuffle_scan_of_a_whole_array(kc, rng, tmp_path):
    cell(kc, "nvidia_shfl_scan.cu")
    bs, blocks = 256, 32
    n = bs * blocks
    x = rng.integers(-50, 50, n).astype(np.int32)
    put(kc, "sc_data", x, tmp_path)
    shm = bs // 32 * 4
    # As the sample's host code: scan each block, scan the block sums, add them back.
    ok(
        kc,
        f"%array sc_sums = zeros({blocks}, i32)\n"
        f"%launch shfl_scan_test[{blocks}, {bs}, {shm}](sc_data, 32, sc_sums)\n"
        f"%launch shfl_scan_test[1, {blocks}, {shm}](sc_sums, 32, null)\n"
        f"%launch uniform_add[{blocks - 1}, {bs}](sc_data + {bs}, sc_sums, {n})",
    )
    np.testing.assert_array_equal(fetch(kc, "sc_data", tmp_path), np.cumsum(x, dtype=np.int64).astype(np.int32))
    RAN.extend(["shfl_scan_test", "uniform_add"])


# --- NVIDIA cuda-samples: fastWalshTransform (3 kernels) ---------------------------------------


def walsh(x: np.ndarray) -> np.ndarray:
    a = x.astype(np.float64).copy()
    h = 1
    while h < len(a):
        a = a.reshape(-1, 2, h)
        a = np.stack([a[:, 0] + a[:, 1], a[:, 0] - a[:, 1]], axis=1).reshape(-1)
        h *= 2
    return a


def test_fast_walsh_transform_and_modulation(kc, rng, tmp_path):
    cell(kc, "nvidia_fast_walsh_transform.cu")
    log2n = 13
    n = 1 << log2n
    x = rng.standard_normal(n).astype(np.float32)
    put(kc, "fw_d", x, tmp_path)
    # fwtBatchGPU for M = 1, log2N = 13: one radix-4 pass of fwtBatch2Kernel, then fwtBatch1Kernel
    # on 4 sub-transforms of 2^11.
    ok(
        kc,
        f"%launch fwtBatch2Kernel[({n // (4 * 256)}, 1), 256](fw_d, fw_d, {n // 4})\n"
        f"%launch fwtBatch1Kernel[4, {n // 4 // 4}, {(n // 4) * 4}](fw_d, fw_d, {log2n - 2})",
    )
    want = walsh(x)
    got = fetch(kc, "fw_d", tmp_path)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(n))
    b = rng.standard_normal(n).astype(np.float32)
    put(kc, "fw_b", b, tmp_path)
    ok(kc, f"%launch modulateKernel[128, 256](fw_d, fw_b, {n})")
    np.testing.assert_allclose(fetch(kc, "fw_d", tmp_path), got * (b * np.float32(1.0 / n)), rtol=1e-6, atol=1e-6)
    RAN.extend(["fwtBatch2Kernel", "fwtBatch1Kernel", "modulateKernel"])
