"""Real resources without a GPU (issue 34) through the real Jupyter kernel: `%gpu` lists the GPU
models with the modelled one marked, `%gpu A100` chooses one, `%gpu Z80` is a clear
ArgumentError naming the models, and `%info --gpu T4 KERNEL` shows the registers, shared and
local memory read from an sm_75 CUBIN that NVRTC compiled offline, with the theoretical-occupancy
table per block size. The tests force ptxsim (`%backend sim`), so they mean the same on a GPU.
"""

from __future__ import annotations

import re
import uuid

import pytest

from nbkernel import error, ok, start_kernel, stop_kernel


def plain(ex) -> str:
    """The cell's stdout and the text/plain of its displays, in order."""
    parts = []
    for m in ex.outputs:
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout":
            parts.append(m["content"]["text"])
        elif m["msg_type"] in ("execute_result", "display_data"):
            parts.append(m["content"]["data"].get("text/plain", "") + "\n")
    return "".join(parts)


@pytest.fixture(scope="module")
def kc():
    km, client = start_kernel()
    try:
        ok(client, "%backend sim")
        yield client
    finally:
        stop_kernel(km, client)


MODELS = ["T4", "V100", "A100", "L4", "RTX 3090", "RTX 4090", "H100", "H200"]


def marked(text: str) -> list[str]:
    """Names on the `*` (modelled) rows of the %gpu table."""
    return [name for line in text.splitlines() if line.lstrip().startswith("*")
            for name in MODELS if re.search(rf"\b{re.escape(name)}\b", line)]


def test_gpu_lists_and_selects_models(kc):
    text = plain(ok(kc, "%gpu"))
    for name in MODELS:
        assert name in text, text
    assert marked(text) == ["H200"], text
    assert "sm_90" in text and "sm_75" in text, text
    chosen = plain(ok(kc, "%gpu A100"))
    assert "A100" in chosen and "sm_80" in chosen, chosen
    assert marked(plain(ok(kc, "%gpu"))) == ["A100"]
    ok(kc, "%gpu H200")


def test_unknown_gpu_model_is_a_clear_error(kc):
    ex = error(kc, "%gpu Z80")
    content = ex.reply["content"]
    assert content["ename"] == "ArgumentError", content
    assert "unknown GPU model 'Z80'" in content["evalue"], content
    for name in MODELS:
        assert name in content["evalue"], content
    assert "did you mean H200?" in error(kc, "%gpu H20").reply["content"]["evalue"]
    # The failed line changed nothing.
    assert marked(plain(ok(kc, "%gpu"))) == ["H200"]


def test_info_shows_cubin_registers_and_occupancy(kc):
    tag = uuid.uuid4().hex[:8]
    heavy = f"heavy_{tag}"
    ok(kc, f"""%%cuda
__global__ void {heavy}(const int* idx, float* out, int n) {{
    float local[64];
    for (int i = 0; i < 64; i++) local[i] = out[i] * i;
    out[threadIdx.x] = local[idx[threadIdx.x] & 63];
}}
__global__ void tile_{tag}(const float* a, float* b) {{
    __shared__ float tile[32][33];
    tile[threadIdx.y][threadIdx.x] = a[threadIdx.y * 32 + threadIdx.x];
    __syncthreads();
    b[threadIdx.x * 32 + threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}}
""")
    t4 = plain(ok(kc, f"%info --gpu T4 {heavy}"))
    assert "PTX virtual" not in t4, t4
    m = re.search(r"registers per thread\s+(\d+) \(sm_75 CUBIN", t4)
    assert m, t4
    regs75 = int(m[1])
    assert 32 < regs75 <= 255, t4
    assert f"theoretical occupancy on T4 (sm_75), {regs75} registers/thread" in t4, t4
    rows = {}
    for line in t4.splitlines():
        cols = re.split(r"\s{2,}", line.strip())
        if len(cols) >= 5 and cols[0].isdigit():
            rows[int(cols[0])] = cols
    assert sorted(rows) == [32, 64, 128, 256, 512, 1024], t4
    for cols in rows.values():
        assert cols[3].endswith("%") and cols[4] in ("warps", "blocks", "registers", "shared memory"), cols
    h200 = plain(ok(kc, f"%info --gpu H200 {heavy}"))
    regs90 = int(re.search(r"registers per thread\s+(\d+) \(sm_90 CUBIN", h200)[1])
    assert regs90 != regs75, (regs75, regs90)
    shared = plain(ok(kc, f"%info --gpu A100 tile_{tag}"))
    assert re.search(r"static shared memory\s+4224 bytes \(sm_80 CUBIN", shared), shared
    # Without --gpu: the session's model, H200.
    assert "theoretical occupancy on H200 (sm_90)" in plain(ok(kc, f"%info {heavy}"))
    ex = error(kc, f"%info --gpu Z80 {heavy}")
    assert ex.reply["content"]["ename"] == "ArgumentError"
