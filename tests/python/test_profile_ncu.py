"""`%profile --ncu` (issue 34's last point) through the real Jupyter kernel.

Without a GPU: `%profile --ncu` on ptxsim says in one line that it needs the GPU backend and
still shows ptxsim's profile, data unchanged; with `NBCUDA_NCU_SIM=1` (test-only: the worker
under ncu runs ptxsim) a fake `ncu` (a shell script named by `NBCUDA_NCU`) starts the Jupyter
kernel's GPU worker as ncu would, the launch is replayed into it and the script's canned CSV
report comes back as the ncu column; the same script can print ncu's permission error instead.
On a GPU: a missing ncu, and where ncu is installed, the real one (values, or the one-line
ERR_NVGPUCTRPERM message).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from nbkernel import collect, has_cuda_device, ok, start_kernel, stop_kernel

CELL = """%%cuda
__global__ void copy(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
"""
SETUP = "%set n = 4096\n%array a = rand(n, f32, seed=3)\n%array b = zeros(n, f32)"
LAUNCH = "copy[n / 256, 256](a, b, n)"

HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
)

# A fake ncu: runs the target (the word before `gpu-worker` onwards), then writes "1,024" for
# every --metrics name to --log-file in ncu's details-page CSV (mode csv), or prints ncu's
# permission error (mode perm).
FAKE_NCU = r"""#!/bin/bash
mode=MODE
args=("$@"); n=${#args[@]}; start=-1; log=""; metrics=""
for ((i=0; i<n; i++)); do
  case "${args[$i]}" in
    --log-file) log="${args[$((i+1))]}";;
    --metrics) metrics="${args[$((i+1))]}";;
    gpu-worker) if [ $start -lt 0 ]; then start=$((i-1)); fi;;
  esac
done
echo "==PROF== Connected to process $$ (${args[$start]})"
"${args[@]:$start}"
status=$?
if [ $mode = hang ]; then sleep 120; fi
if [ $mode = perm ]; then
  echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
  exit 0
fi
{
  echo 'HEADER'
  IFS=, read -ra ms <<< "$metrics"
  for m in "${ms[@]}"; do
    echo "\"0\",\"$$\",\"nbcuda\",\"127.0.0.1\",\"copy\",\"1\",\"7\",\"(256, 1, 1)\",\"(16, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\",\"$m\",\"\",\"1,024\""
  done
} > "$log"
exit $status
"""


def fake_ncu(tmp_path: Path, mode: str) -> Path:
    p = tmp_path / f"ncu-{mode}"
    p.write_text(FAKE_NCU.replace("MODE", mode).replace("HEADER", HEADER))
    p.chmod(0o755)
    return p


def displays(ex) -> list[dict]:
    return [m["content"]["data"] for m in ex.outputs if m["msg_type"] == "display_data"]


def profile(kc, line: str) -> tuple[dict, str, str]:
    """(application/json, text/plain, stderr) of one %profile line."""
    ex = ok(kc, line, timeout=300)
    shown = displays(ex)
    assert len(shown) == 1, ex.describe()
    data = shown[0]
    assert "text/html" in data and "limiter: " in data["text/plain"], data["text/plain"]
    return data["application/json"], data["text/plain"], ex.stream("stderr")


def set_up(kc) -> None:
    ok(kc, "%backend sim")
    ok(kc, CELL, timeout=300)
    ok(kc, SETUP)


def test_ncu_on_ptxsim_says_why_in_one_line_and_still_shows_the_profile(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NBCUDA_NCU_SIM"}
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        ok(kc, f"%save b {tmp_path / 'before.npy'}")
        plain, _, _ = profile(kc, f"%profile {LAUNCH}")
        j, text, err = profile(kc, f"%profile --ncu {LAUNCH}")
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith("%profile --ncu needs the GPU backend"), err
        assert lines[0].endswith("showing ptxsim's counters only"), err
        assert j["metrics"] == plain["metrics"]
        assert j["ncu"] is None and j["ncu_error"]["kind"] == "no_gpu", j
        assert "Nsight Compute beside ptxsim" not in text
        ok(kc, f"%save b {tmp_path / 'after.npy'}")
        assert np.array_equal(np.load(tmp_path / "before.npy"), np.load(tmp_path / "after.npy"))
    finally:
        stop_kernel(km, kc)


def test_fake_ncu_runs_the_worker_and_its_report_is_shown_beside_ptxsim(tmp_path):
    env = dict(os.environ, NBCUDA_NCU_SIM="1", NBCUDA_NCU=str(fake_ncu(tmp_path, "csv")))
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        ok(kc, f"%save b {tmp_path / 'before.npy'}")
        j, text, err = profile(kc, f"%profile --ncu {LAUNCH}")
        assert err.strip() == "", err
        assert "Nsight Compute beside ptxsim: copy" in text, text
        assert "ncu / ptxsim" in text
        ncu = j["ncu"]
        # The fake answered every metric it was asked for with "1,024".
        assert set(ncu) == set(j["metrics"]), (set(j["metrics"]) - set(ncu))
        assert all(v == 1024.0 for v in ncu.values()), ncu
        assert j["ncu_kernel"] == "copy"
        ok(kc, f"%save b {tmp_path / 'after.npy'}")
        assert np.array_equal(np.load(tmp_path / "before.npy"), np.load(tmp_path / "after.npy"))
    finally:
        stop_kernel(km, kc)


def test_fake_ncu_refused_the_counters_and_a_missing_ncu(tmp_path):
    env = dict(os.environ, NBCUDA_NCU_SIM="1", NBCUDA_NCU=str(fake_ncu(tmp_path, "perm")))
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        j, _, err = profile(kc, f"%profile --ncu {LAUNCH}")
        lines = [l for l in err.splitlines() if l.strip()]
        assert len(lines) == 1, err
        assert "ERR_NVGPUCTRPERM" in lines[0] and "NVreg_RestrictProfilingPermission=0" in lines[0]
        assert j["ncu_error"]["kind"] == "ERR_NVGPUCTRPERM" and j["metrics"], j
    finally:
        stop_kernel(km, kc)
    env = dict(os.environ, NBCUDA_NCU_SIM="1", NBCUDA_NCU=str(tmp_path / "no-such-ncu"))
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        j, _, err = profile(kc, f"%profile --ncu {LAUNCH}")
        assert "NBCUDA_NCU=" in err and "no-such-ncu" in err and "is not an executable" in err, err
        assert j["ncu_error"]["kind"] == "not_found", j
    finally:
        stop_kernel(km, kc)


def test_a_hanging_ncu_is_stopped_by_the_timeout_and_by_the_interrupt(tmp_path):
    env = dict(
        os.environ,
        NBCUDA_NCU_SIM="1",
        NBCUDA_NCU=str(fake_ncu(tmp_path, "hang")),
        NBCUDA_NCU_TIMEOUT="3",
    )
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        t0 = time.monotonic()
        j, _, err = profile(kc, f"%profile --ncu {LAUNCH}")
        took = time.monotonic() - t0
        assert "did not finish within 3 s" in err and "NBCUDA_NCU_TIMEOUT" in err, err
        assert j["ncu_error"]["kind"] == "timeout" and j["metrics"], j
        assert took < 30, took
    finally:
        stop_kernel(km, kc)
    env["NBCUDA_NCU_TIMEOUT"] = "120"
    km, kc = start_kernel(env=env)
    try:
        set_up(kc)
        # The interrupt: the cell ends with Interrupted after showing ptxsim's profile.
        msg_id = kc.execute(f"%profile --ncu {LAUNCH}")
        time.sleep(3)
        t0 = time.monotonic()
        km.interrupt_kernel()
        ex = collect(kc, msg_id, timeout=30)
        took = time.monotonic() - t0
        assert ex.status == "error", ex.describe()
        assert ex.reply["content"]["ename"] == "Interrupted", ex.describe()
        assert "ncu and its GPU worker were stopped" in ex.reply["content"]["evalue"]
        assert len(displays(ex)) == 1, ex.describe()
        assert took < 20, took  # liveness: without the interrupt, ncu runs for 120 s
        # The Jupyter kernel goes on.
        ok(kc, f"%profile {LAUNCH}")
    finally:
        stop_kernel(km, kc)


@pytest.mark.skipif(not has_cuda_device(), reason="needs a GPU")
def test_ncu_on_the_gpu(tmp_path):
    """A missing ncu says so; the installed ncu measures (or says the counters are refused)."""
    env = {k: v for k, v in os.environ.items() if k != "NBCUDA_NCU_SIM"}
    env["NBCUDA_NCU"] = str(tmp_path / "no-such-ncu")
    km, kc = start_kernel(env=env)
    try:
        ok(kc, CELL, timeout=300)
        ok(kc, SETUP)
        j, _, err = profile(kc, f"%profile --ncu {LAUNCH}")
        assert j["ncu_error"]["kind"] == "not_found", (j, err)
        assert j["metrics"]
    finally:
        stop_kernel(km, kc)
    if not shutil.which("ncu"):
        pytest.skip("no ncu on PATH")
    env.pop("NBCUDA_NCU")
    km, kc = start_kernel(env=env)
    try:
        ok(kc, CELL, timeout=300)
        ok(kc, SETUP)
        j, text, err = profile(kc, f"%profile --ncu {LAUNCH}")
        if j.get("ncu") is None:
            assert j["ncu_error"]["kind"] == "ERR_NVGPUCTRPERM", (j["ncu_error"], err)
        else:
            # Requests of a coalesced copy: exactly ptxsim's.
            m = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
            assert j["ncu"][m] == j["metrics"][m], text
    finally:
        stop_kernel(km, kc)
