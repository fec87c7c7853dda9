"""The main CUDA kernel launches of the tutorial notebooks and the Nsight Compute metrics that
`%profile` must carry: shared by tests/python/test_profile.py and the GPU check's scripts
(ncu_compare.py, ncu_profile.py, model_check.py), so all profile the same launches after the
same set-up. `Session` is the one Jupyter kernel those scripts run a notebook's set-up in.
"""

from __future__ import annotations

import json
import os
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




# The launches the notebooks compare beside their main ones (issue 35's model check,
# scripts/model_check.py, and its regression test tests/python/test_model_check.py):
# notebook -> [(label, launch, magic lines run first, after the notebook's set-up)].
# Sizes are the notebooks' ptxsim sizes (the set-up runs under `%backend sim`).
HEAT_SIZES = (128, 512, 1024)
COMPARED = {
    "03-reduction": [("shuffle", "sum_shuffle[BLOCKS, 256](x, s_shuffle, N)", [])],
    "05-heat-diffusion": [
        (
            f"step{n}",
            f"heat_step[(ceil({n} / 16), ceil({n} / 16)), (16, 16)](hp_{n}, hq_{n}, {n}, {n}, A)",
            [f"%array hp_{n} = zeros(({n}, {n}), f32)", f"%array hq_{n} = zeros(({n}, {n}), f32)"],
        )
        for n in HEAT_SIZES
    ],
    "06-particles": [
        ("global", "coarse_global[ceil(MP / 256), 256](bx, by, hist_global, MP)", []),
        ("shared", "coarse_shared[ceil(MP / 256), 256](bx, by, hist_shared, MP)", []),
    ],
    "07-launch-configuration": [
        ("8x8", "affine2d[(ceil(W / 8), ceil(H / 8)), (8, 8)](img, o_8x8, H, W)", []),
    ],
    "09-streams-and-events": [
        ("8 blocks", "busy[ceil(CHUNK / 256), 256](c0, CHUNK, 20000)", []),
        (
            "32 blocks",
            "busy[ceil(4 * CHUNK / 256), 256](c_all, 4 * CHUNK, 20000)",
            ["%array c_all = rand(4 * CHUNK, f32, seed=4)"],
        ),
    ],
}

# The orders the notebooks teach, on times: (notebook, a, b, factor) says t[a] < factor * t[b]
# (labels of MAIN_KERNELS or COMPARED). The factor turns a rate into an order: the heat step's
# time per cell falls as the grid grows (t[512] < 16 t[128]), and 32 blocks of `busy` take
# about as long as 8 (t[32] < 1.5 t[8], as notebook 9's check cell asserts); (32, 8) blocks are
# no slower than (8, 8) (t[32x8] < 1.05 t[8x8]).
ORDERS = [
    ("02-matrix-multiply", "tiled", "naive", 1.0),
    ("03-reduction", "tree", "atomic", 1.0),
    ("03-reduction", "shuffle", "atomic", 1.0),
    ("05-heat-diffusion", "step512", "step128", (512 / 128) ** 2),
    ("05-heat-diffusion", "step1024", "step512", (1024 / 512) ** 2),
    ("06-particles", "shared", "global", 1.0),
    ("07-launch-configuration", "32x8", "1x128", 1.0),
    ("07-launch-configuration", "8x8", "1x128", 1.0),
    # "No slower": the same sectors either way, so a 5% band for the GPU's noise.
    ("07-launch-configuration", "32x8", "8x8", 1.05),
    ("09-streams-and-events", "32 blocks", "8 blocks", 1.5),
]


def checked_launches(name: str) -> list[tuple[str, str, list[str]]]:
    """Notebook `name`'s main launches then its compared ones: (label, launch, set-up lines)."""
    main = [(label, launch, []) for label, launch, _ in MAIN_KERNELS.get(name, [])]
    return main + [(label, launch, list(lines)) for label, launch, lines in COMPARED.get(name, [])]


class CellError(RuntimeError):
    pass


class Session:
    """One Jupyter kernel (the nbcuda kernelspec) and a way to run cells in it."""

    def __init__(self, timeout: float = 600):
        from jupyter_client.manager import KernelManager

        self.timeout = timeout
        self.km = KernelManager(kernel_name=os.environ.get("NBCUDA_KERNEL_NAME", "nbcuda"))
        self.km.start_kernel(cwd=str(ROOT / "notebooks"))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def run(self, code: str) -> list[dict]:
        """Runs a cell; its iopub outputs. Raises CellError (with the error text) on an error."""
        outputs: list[dict] = []
        reply = self.kc.execute_interactive(code, timeout=self.timeout, output_hook=outputs.append)
        c = reply["content"]
        if c["status"] != "ok":
            raise CellError(f"{code.splitlines()[0][:80]!r}: {c.get('ename', '')}: {c.get('evalue', '')[:400]}")
        return outputs

    def json_of(self, code: str) -> dict:
        """The application/json of the one display a cell shows (%profile, %time)."""
        shown = [
            m["content"]["data"]["application/json"]
            for m in self.run(code)
            if m["msg_type"] in ("display_data", "execute_result")
            and "application/json" in m["content"]["data"]
        ]
        if not shown:
            raise CellError(f"{code[:80]!r}: no application/json in its output")
        return shown[-1]

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)
