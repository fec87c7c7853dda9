"""`%profile` (issue 34) through the real Jupyter kernel, on every tutorial notebook's main CUDA
kernel at the notebook's ptxsim size.

For each notebook a fresh Jupyter kernel runs the notebook's own set-up (its `%%cuda` cells and
its magic lines, without `%time`, `%show`, `%%animate` and other displays), saves the launch's
arrays, runs `%profile LAUNCH`, and saves them again: the profile's `application/json` must
carry Nsight Compute's metric names, and the arrays must be byte for byte what they were. Then
the lessons the notebooks teach are checked on the counts: naive matrix multiply touches more
global sectors per output than the tiled one, notebook 7's `(1, 128)` block shape touches 8x
the sectors of `(32, 8)`, and the atomics-only reduction serialises on one address. The time
each `%profile` took is printed as a table (the goal, 3 s, is reported, not asserted).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from nbkernel import ok, start_kernel, stop_kernel
from tutorial_kernels import KEYS, MAIN_KERNELS, setup_cells

TIMES: list[tuple[str, str, float]] = []
PROFILES: dict[tuple[str, str], dict] = {}


def profile_json(ex) -> dict:
    shown = [m for m in ex.outputs if m["msg_type"] == "display_data"]
    assert len(shown) == 1, ex.describe()
    data = shown[0]["content"]["data"]
    assert "text/html" in data and "limiter: " in data["text/plain"], data["text/plain"]
    return data["application/json"]


@pytest.fixture(scope="module", autouse=True)
def time_table():
    yield
    if TIMES:
        print("\n%profile at each notebook's ptxsim size (goal: <= 3 s each)")
        print(f"{'notebook':<26} {'launch':<8} {'seconds':>8}")
        for nb, label, secs in TIMES:
            print(f"{nb:<26} {label:<8} {secs:>8.2f}")


@pytest.mark.parametrize("name", sorted(MAIN_KERNELS))
def test_profile_of_each_notebooks_main_kernel(name, tmp_path):
    km, kc = start_kernel()
    try:
        ok(kc, "%backend sim")
        for cell in setup_cells(name):
            ok(kc, cell, timeout=300)
        for label, launch, arrays in MAIN_KERNELS[name]:
            def save(tag):
                ok(kc, "\n".join(f"%save {a} {tmp_path / f'{a}.{tag}.npy'}" for a in arrays))
            save("before")
            t0 = time.monotonic()
            ex = ok(kc, f"%profile {launch}", timeout=300)
            TIMES.append((name, label, time.monotonic() - t0))
            j = profile_json(ex)
            save("after")
            for a in arrays:
                before = np.load(tmp_path / f"{a}.before.npy")
                after = np.load(tmp_path / f"{a}.after.npy")
                assert before.tobytes() == after.tobytes(), f"{name}: %profile changed {a}"
            assert j["backend"] == "ptxsim" and j["gpu"] == "H200" and j["estimated"] is True
            missing = [k for k in KEYS if k not in j["metrics"]]
            assert not missing, f"{name} {label}: missing {missing}"
            m = j["metrics"]
            assert m["smsp__inst_executed.sum"] > 0
            assert 0 < m["smsp__thread_inst_executed_per_inst_executed.ratio"] <= 32
            assert m["launch__registers_per_thread"] > 0
            PROFILES[(name, label)] = m
    finally:
        stop_kernel(km, kc)


def sectors(m: dict) -> float:
    return (
        m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
        + m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
    )


def test_the_lessons_show_in_the_counts():
    need = [("02-matrix-multiply", "naive"), ("02-matrix-multiply", "tiled"),
            ("07-launch-configuration", "32x8"), ("07-launch-configuration", "1x128"),
            ("03-reduction", "atomic"), ("03-reduction", "tree")]
    if any(k not in PROFILES for k in need):
        pytest.skip("needs the notebook profiles above (run the whole module)")
    naive, tiled = PROFILES[need[0]], PROFILES[need[1]]
    # Same outputs (N x N), so sectors per output compare as totals: tiles re-use what they load.
    assert naive["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] > 4 * tiled[
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    ], (naive, tiled)
    assert tiled["sm__sass_inst_executed_op_shared_ld.sum"] > 0
    assert naive["sm__sass_inst_executed_op_shared_ld.sum"] == 0
    # (1, 128): each warp's 32 lanes in 32 rows, a sector each; (32, 8): a row of 32 floats.
    wide, tall = PROFILES[need[2]], PROFILES[need[3]]
    assert sectors(tall) == 8 * sectors(wide), (tall, wide)
    assert wide["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request"] == 4
    assert tall["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request"] == 32
    # Atomics only: every lane of a request adds to the one address.
    atomic, tree = PROFILES[need[4]], PROFILES[need[5]]
    assert atomic["l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"] > 100 * tree[
        "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum"
    ]


def test_profile_lines_and_nb_profile():
    km, kc = start_kernel()
    try:
        ok(kc, "%backend sim")
        for cell in setup_cells("07-launch-configuration"):
            ok(kc, cell, timeout=300)
        ex = ok(kc, "%profile --lines affine2d[(W, ceil(H / 128)), (1, 128)](img, o_1x128, H, W)")
        data = [m for m in ex.outputs if m["msg_type"] == "display_data"][0]["content"]["data"]
        assert re.search(r"ld 32\.0 sect/req", data["text/plain"]), data["text/plain"]
        assert "#f9c6c6" in data["text/html"]  # the uncoalesced line is red
        ex = ok(kc, 'let m = nb::profile("affine2d[(W, ceil(H / 128)), (1, 128)](img, o_1x128, H, W)").unwrap();\n'
                    'println!("{}", m["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum_per_request"]);',
                timeout=240)
        assert ex.text().strip().endswith("32"), ex.describe()
    finally:
        stop_kernel(km, kc)


def estimate_ns(kc, launch: str, gpu: str) -> float:
    ex = ok(kc, f"%profile --gpu {gpu} {launch}", timeout=300)
    e = profile_json(ex)["estimate"]
    assert e is not None and e["ns"] > 0, ex.describe()
    return e["ns"]


SHAPES = {(bx, by): f"affine2d[(ceil(W / {bx}), ceil(H / {by})), ({bx}, {by})](img, o_32x8, H, W)"
          for bx, by in [(128, 1), (32, 8), (16, 8), (8, 8), (32, 32), (1, 128)]}


@pytest.mark.parametrize("gpu", ["H200", "T4"])
def test_estimated_times_keep_the_lessons_order(gpu):
    """The model's estimates (issue 35) order the notebooks' comparisons as a GPU does, at the
    notebooks' ptxsim sizes and, where the lesson shows only there (02, 03, 04, 05, 07), at the
    GPU's sizes on zero-filled arrays (issue 54: %profile counts a sample of the blocks)."""
    checks = {
        # At a GPU's size (2048 x 2048, zero-filled: %profile counts a sample, arrays stay
        # untouched); at the notebook's 256 x 256 both take a few µs.
        "02-matrix-multiply": lambda kc: (
            all(ok(kc, f"%array {m}_gpu = zeros((2048, 2048), f32)") is not None for m in "ABC")
            and estimate_ns(kc, "matmul_tiled[(128, 128), (16, 16)](A_gpu, B_gpu, C_gpu, 2048)", gpu)
            < estimate_ns(kc, "matmul_naive[(128, 128), (16, 16)](A_gpu, B_gpu, C_gpu, 2048)", gpu)
        ),
        "03-reduction": lambda kc: (
            max(estimate_ns(kc, "sum_tree[BLOCKS, 256, 256 * 4](x, s_tree, N)", gpu),
                estimate_ns(kc, "sum_shuffle[BLOCKS, 256](x, s_shuffle, N)", gpu))
            < estimate_ns(kc, "sum_atomic[ceil(N / 256), 256](x, s_atomic, N)", gpu)
            and reduction_at_gpu_size(kc, gpu)
        ),
        "04-gaussian-blur": lambda kc: blur_at_gpu_size(kc, gpu),
        "07-launch-configuration": lambda kc: (
            shapes_in_order(kc, gpu) and shapes_at_gpu_size(kc, gpu)
        ),
        # A heat step: launch overhead, then the L2; the time per cell falls as the grid grows
        # (1024 x 1024 is the notebook's GPU size; 4096 x 4096 zero-filled, sampled).
        "05-heat-diffusion": lambda kc: heat_per_cell_falls(kc, gpu),
        # Four 8-block launches on streams overlap into about one 32-block launch.
        "09-streams-and-events": lambda kc: (
            ok(kc, "%array c_all = rand(4 * CHUNK, f32, seed=4)") is not None
            and estimate_ns(kc, "busy[ceil(4 * CHUNK / 256), 256](c_all, 4 * CHUNK, 20000)", gpu)
            < 1.5 * estimate_ns(kc, "busy[ceil(CHUNK / 256), 256](c0, CHUNK, 20000)", gpu)
        ),
        # Privatised (shared-memory) counts under contention: faster, the global version being
        # bound by its atomics on H200 and T4 alike (about 5.6x at MP and at the GPU's 16 M: the
        # same blocks, more of them; not rechecked at 16 M here).
        "06-particles": lambda kc: (
            estimate_ns(kc, "coarse_shared[ceil(MP / 256), 256](bx, by, hist_shared, MP)", gpu)
            < estimate_ns(kc, "coarse_global[ceil(MP / 256), 256](bx, by, hist_global, MP)", gpu)
        ),
    }
    for name, check in checks.items():
        km, kc = start_kernel()
        try:
            ok(kc, "%backend sim")
            for cell in setup_cells(name):
                ok(kc, cell, timeout=300)
            assert check(kc), f"{name} on {gpu}: the lesson's order does not hold"
        finally:
            stop_kernel(km, kc)


def reduction_at_gpu_size(kc, gpu: str) -> bool:
    """Notebook 3 at its GPU size (2^26 zeros, 1024 blocks): atomics over 10x slower, the tree
    and the shuffles tied within 5% (both bound by reading x)."""
    ok(kc, "%array x_gpu = zeros(67_108_864, f32)")
    atomic = estimate_ns(kc, "sum_atomic[67_108_864 / 256, 256](x_gpu, s_atomic, 67_108_864)", gpu)
    tree = estimate_ns(kc, "sum_tree[1024, 256, 256 * 4](x_gpu, s_tree, 67_108_864)", gpu)
    shuffle = estimate_ns(kc, "sum_shuffle[1024, 256](x_gpu, s_shuffle, 67_108_864)", gpu)
    print(f"03 at 2^26 on {gpu}: atomic {atomic:.0f} ns, tree {tree:.0f} ns, shuffle {shuffle:.0f} ns")
    return atomic > 10 * max(tree, shuffle) and abs(tree - shuffle) < 0.05 * min(tree, shuffle)


def blur_at_gpu_size(kc, gpu: str) -> bool:
    """Notebook 4 at a GPU's size (a 4096 x 4096 zero image): the tiles win by 1.3x or more."""
    ok(kc, "%array big = zeros((4096, 4096, 3), f32)\n%array big_out = zeros((4096, 4096, 3), f32)")
    naive = estimate_ns(kc, "blur_naive[(256, 256), (16, 16)](big, big_out, w, 4096, 4096)", gpu)
    tiled = estimate_ns(kc, "blur_tiled[(256, 256), (16, 16)](big, big_out, w, 4096, 4096)", gpu)
    print(f"04 at 4096 x 4096 on {gpu}: naive {naive:.0f} ns, tiled {tiled:.0f} ns")
    return naive > 1.3 * tiled


def shapes_at_gpu_size(kc, gpu: str) -> bool:
    """Notebook 7 at its GPU size (8192 x 8192 zeros): (1, 128) the slowest (over 2x on H200,
    where L2 traffic bounds it; on T4 DRAM bounds every shape), the five shapes that read whole
    sectors within 10% of each other."""
    ok(kc, "%array g_in = zeros((8192, 8192), f32)\n%array g_out = zeros((8192, 8192), f32)")
    t = {
        (bx, by): estimate_ns(
            kc,
            f"affine2d[(ceil(8192 / {bx}), ceil(8192 / {by})), ({bx}, {by})](g_in, g_out, 8192, 8192)",
            gpu,
        )
        for bx, by in [(128, 1), (32, 8), (16, 8), (8, 8), (32, 32), (1, 128)]
    }
    print(f"07 at 8192 x 8192 on {gpu}: " + ", ".join(f"{s}: {v:.0f} ns" for s, v in t.items()))
    others = [v for s, v in t.items() if s != (1, 128)]
    factor = 2.0 if gpu == "H200" else 1.0
    return t[(1, 128)] > factor * max(others) and max(others) < 1.1 * min(others)


def heat_per_cell_falls(kc, gpu: str) -> bool:
    per_cell = []
    for n in (128, 512, 1024, 4096):
        ok(kc, f"%array hp_{n} = zeros(({n}, {n}), f32)\n%array hq_{n} = zeros(({n}, {n}), f32)")
        ns = estimate_ns(kc, f"heat_step[(ceil({n} / 16), ceil({n} / 16)), (16, 16)](hp_{n}, hq_{n}, {n}, {n}, A)", gpu)
        per_cell.append(ns / (n * n))
    return all(a > b for a, b in zip(per_cell, per_cell[1:]))


def shapes_in_order(kc, gpu: str) -> bool:
    t = {s: estimate_ns(kc, l, gpu) for s, l in SHAPES.items()}
    slowest = t[(1, 128)]
    # (1, 128) is the slowest (on T4 at this size the model is DRAM-bound and ties the others:
    # the notebook says so); (32, 8) is no slower than (8, 8).
    strict = gpu == "H200"
    others = [v for s, v in t.items() if s != (1, 128)]
    ok_slowest = all(slowest > v for v in others) if strict else all(slowest >= v for v in others)
    # Where DRAM bounds every shape (T4) they tie: within 1% (the smaller terms still differ a
    # little through the model's smooth maximum).
    tie = 1.0 if strict else 1.01
    return ok_slowest and t[(32, 8)] <= tie * t[(8, 8)]
