"""The main CUDA kernel launches of the tutorial notebooks and the Nsight Compute metrics that
`%profile` must carry: shared by tests/python/test_profile.py and scripts/ncu_compare.py (the
GPU check's ncu-vs-ptxsim table), so both profile the same launches after the same set-up.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

# notebook -> [(label, launch, arrays the launch takes)]
MAIN_KERNELS = {
    "01-vector-add": [("vadd", "vadd[GRID, BLOCK](a, b, c, N)", ["a", "b", "c"])],
    "02-matrix-multiply": [
        ("naive", "matmul_naive[(NB, NB), (16, 16)](A, B, C_naive, N)", ["C_naive"]),
        ("tiled", "matmul_tiled[(NB, NB), (16, 16)](A, B, C_tiled, N)", ["C_tiled"]),
    ],
    "03-reduction": [
        ("atomic", "sum_atomic[ceil(N / 256), 256](x, s_atomic, N)", ["s_atomic"]),
        ("tree", "sum_tree[BLOCKS, 256, 256 * 4](x, s_tree, N)", ["s_tree"]),
    ],
    "04-gaussian-blur": [
        (
            "tiled",
            "blur_tiled[(ceil(W / 16), ceil(H / 16)), (16, 16)](img, blurred, w, H, W)",
            ["blurred"],
        )
    ],
    "05-heat-diffusion": [
        ("step", "heat_step[(ceil(W / 16), ceil(H / 16)), (16, 16)](T, Tn, H, W, A)", ["T", "Tn"])
    ],
    "06-particles": [
        ("bin", "bin_particles[ceil(N / 256), 256](px, py, counts, N, G)", ["counts"])
    ],
    "07-launch-configuration": [
        ("32x8", "affine2d[(ceil(W / 32), ceil(H / 8)), (32, 8)](img, o_32x8, H, W)", ["o_32x8"]),
        ("1x128", "affine2d[(W, ceil(H / 128)), (1, 128)](img, o_1x128, H, W)", ["o_1x128"]),
    ],
    "08-precision": [
        ("sum32", "long_sum<float>[ceil(N / 256), 256](sum32, K, N)", ["sum32"])
    ],
    "09-streams-and-events": [("busy", "busy[ceil(CHUNK / 256), 256](c0, CHUNK, ITERS)", ["c0"])],
    "10-debugging": [("smooth", "smooth[ceil(N / 256), 256](x, y, N)", ["y"])],
}

KEYS = [
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "sm__sass_inst_executed_op_shared_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "sm__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "sm__maximum_warps_per_active_cycle_pct",
]

# Magic lines the set-up leaves out: displays, timings and profiles.
SKIPPED = ("%time", "%timings", "%show", "%print", "%arrays", "%info", "%device", "%profile")


def setup_cells(name: str) -> list[str]:
    """The notebook's `%%cuda` cells and magic lines, in order, without displays and timings."""
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    cells = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"])
        if "raises-exception" in c.get("metadata", {}).get("tags", []):
            continue
        if src.startswith("%%cuda"):
            cells.append(src)
            continue
        if src.startswith("%%"):
            continue
        lines = [
            l for l in src.splitlines()
            if l.startswith("%") and not l.startswith(SKIPPED) and l.strip() != "%set"
        ]
        lines = [l.replace("data/", str(NOTEBOOKS / "data") + "/") for l in lines]
        if lines:
            cells.append("\n".join(lines))
    return cells


