"""Rust cells of a room's Jupyter kernels never fail because of each other (issue 56): six
Jupyter kernels start at once on one cold build cache and each runs its first `nb` cell at the
same moment; every cell must succeed. The kernels share evcxr's build cache (XDG_CACHE_HOME) and
`nb`'s sources (NBCUDA_CACHE_DIR), as the students of a one-machine room do; loading `nb` takes a
lock beside its sources (src/rust/engine.rs), so one kernel builds and the others load what it
built. Two rounds on a fresh cold cache, then one on the warm cache the second left.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor

from nbkernel import FIRST_CELL_TIMEOUT, execute, start_kernel, stop_kernel

KERNELS = 6


def one_round(env: dict[str, str]) -> list[str]:
    """Starts KERNELS Jupyter kernels, runs a first `nb` cell in all at once; the problems."""
    with ThreadPoolExecutor(KERNELS) as pool:
        started = list(pool.map(lambda _: start_kernel(env=env), range(KERNELS)))
    try:
        values = [random.randrange(1_000_000) for _ in started]

        def first_nb_cell(i: int):
            _, kc = started[i]
            cell = f'nb::put::<i32>("v{i}", &[{values[i]}])?;\nprintln!("{{}}", nb::get::<i32>("v{i}")?.data[0] + 1);'
            return execute(kc, cell, timeout=2 * FIRST_CELL_TIMEOUT)

        with ThreadPoolExecutor(KERNELS) as pool:
            runs = list(pool.map(first_nb_cell, range(KERNELS)))
        problems = []
        for i, ex in enumerate(runs):
            if ex.status != "ok" or str(values[i] + 1) not in ex.stream():
                problems.append(f"kernel {i}: {ex.describe()[:2000]}")
        return problems
    finally:
        for km, kc in started:
            stop_kernel(km, kc)


def test_six_jupyter_kernels_load_nb_at_once(tmp_path):
    for r, cache in enumerate(["cold-1", "cold-2", "cold-2"]):
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / cache))
        env["NBCUDA_CACHE_DIR"] = str(tmp_path / cache / "nbcuda")
        problems = one_round(env)
        state = "warm" if r == 2 else "cold"
        assert not problems, f"round {r + 1} ({state} cache):\n" + "\n".join(problems)
