"""ptxsim's counters beside Nsight Compute's, for the tutorial notebooks' main CUDA kernels (the
GPU check of issue 34). Run on a GPU machine with `ncu` and the nbcuda kernelspec installed:

    python scripts/ncu_compare.py OUT_DIR

It runs itself under `ncu --target-processes all` (so the Jupyter kernel it starts, and the GPU
worker that kernel starts, are profiled). As the child, for each launch of
tests/python/tutorial_kernels.py it runs the notebook's set-up at the ptxsim sizes, moves to the
GPU backend, `%profile`s the launch (ptxsim's counts, saved as JSON) and `%launch`es it once on the
GPU (ncu's counts). As the parent it reads ncu's CSV and prints a markdown table per launch,
metric by metric, then the last line `counters: exact=K of N` over the metrics whose counts
must agree exactly (requests, sectors, shared wavefronts and bank conflicts, atomics).

Where ncu cannot read the counters (ERR_NVGPUCTRPERM in containers) it says so in one line and
exits 0 after printing ptxsim's values alone.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from tutorial_kernels import MAIN_KERNELS, Session, setup_cells  # noqa: E402

# Metrics whose counts the hardware and ptxsim must agree on exactly.
EXACT = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
]
# Shown beside them, not expected to agree exactly (SASS vs PTX, the L2 model).
APPROX = [
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "sm__maximum_warps_per_active_cycle_pct",
]


def kernel_name(launch: str) -> str:
    return launch.split("[", 1)[0].split("<", 1)[0]


def child(out: Path) -> int:
    """Under ncu: set up, %profile (ptxsim) and %launch (GPU) each main launch."""
    profiles = {}
    for name, launches in sorted(MAIN_KERNELS.items()):
        s = Session()
        run = s.run
        try:
            # The ptxsim sizes (by_backend), so that counting the launch on ptxsim is quick;
            # then the arrays and CUDA kernels move to the GPU.
            run("%backend sim")
            for cell in setup_cells(name):
                run(cell)
            run("%backend gpu")
            for label, launch, _ in launches:
                shown = [m for m in run(f"%profile {launch}") if m["msg_type"] == "display_data"]
                metrics = shown[0]["content"]["data"]["application/json"]["metrics"]
                run(f"%launch {launch}\n%sync")
                profiles[f"{name}/{label}"] = {"kernel": kernel_name(launch), "metrics": metrics}
        except Exception as e:  # one notebook's failure is a row, not the end of the table
            profiles[f"{name}/error"] = {"error": str(e)}
        finally:
            s.close()
    (out / "ptxsim.json").write_text(json.dumps(profiles, indent=1))
    return 0


def read_ncu(path: Path) -> dict[str, list[dict[str, float]]]:
    """Kernel function name -> one {metric: value} per profiled launch, in launch order."""
    rows = [l for l in path.read_text(errors="replace").splitlines() if l.startswith('"')]
    launches: dict[tuple[str, str], dict[str, float]] = {}
    order: list[tuple[str, str]] = []
    for r in csv.DictReader(rows):
        key = (r.get("ID", ""), r.get("Kernel Name", ""))
        if key not in launches:
            launches[key] = {}
            order.append(key)
        try:
            launches[key][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            pass
    out: dict[str, list[dict[str, float]]] = {}
    for key in order:
        out.setdefault(key[1].split("(", 1)[0], []).append(launches[key])
    return out


def parent(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "ncu.csv"
    cmd = [
        "ncu", "--target-processes", "all", "--csv", "--print-units", "base",
        "--print-kernel-base", "function", "--log-file", str(log),
        "--metrics", ",".join(EXACT + APPROX),
        sys.executable, __file__, "--child", str(out),
    ]
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    text = proc.stdout + proc.stderr + (log.read_text(errors="replace") if log.exists() else "")
    (out / "ncu.out").write_text(proc.stdout + proc.stderr)
    refused = "ERR_NVGPUCTRPERM" in text or "permission" in text.lower() and "counter" in text.lower()
    profiles = json.loads((out / "ptxsim.json").read_text()) if (out / "ptxsim.json").exists() else {}
    ncu = read_ncu(log) if log.exists() and not refused else {}
    if refused:
        print("ncu: the driver refuses access to the GPU's performance counters (ERR_NVGPUCTRPERM); "
              "ptxsim's values alone follow")
    elif proc.returncode != 0:
        print(f"ncu exited {proc.returncode}; its last lines:\n" + "\n".join(text.splitlines()[-10:]))
    exact = total = 0
    for key, p in profiles.items():
        if "error" in p:
            print(f"\n### {key}\n\n{p['error']}")
            continue
        runs = ncu.get(p["kernel"], [])
        hw = runs[-1] if runs else {}
        print(f"\n### {key} ({p['kernel']})\n\n| metric | ptxsim | ncu | |\n|---|---|---|---|")
        for m in EXACT + APPROX:
            ours = p["metrics"].get(m)
            theirs = hw.get(m)
            mark = ""
            if m in EXACT and theirs is not None and ours is not None:
                total += 1
                if abs(ours - theirs) < 0.5:
                    exact += 1
                    mark = "exact"
                else:
                    mark = "differs"
            print(f"| {m} | {ours if ours is not None else '-'} | {theirs if theirs is not None else '-'} | {mark} |")
    print(f"\ncounters: exact={exact} of {total}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        sys.exit(child(Path(sys.argv[2])))
    sys.exit(parent(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ncu-compare")))
