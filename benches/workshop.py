"""How many students one machine serves on ptxsim: K students run notebook 01 at once through
a JupyterHub (install/jupyterhub/jupyterhub_config.py) on loopback, for K = 1, 2, 3, 4, 6, 8.

    .venv/bin/python benches/workshop.py [--students 1,2,3,4,6,8] [--workers-per-student 1]

It packs the wheel (install/wheel.sh), installs it with JupyterHub and JupyterLab into a fresh
venv under target/workshop-bench (reused by later runs), starts the hub, makes the users, and
for each K starts K fresh Jupyter kernels and runs every cell of notebook 01 in all of them at
once, over their kernel websockets, checking each result. Per K it prints the slowest and the
median student's whole notebook, the slowest first Rust cell (it builds the cell's crate: the
costly step), and the median and slowest magic/%%cuda cell (what a student waits for while
experimenting). A machine serves K students comfortably when the slowest notebook stays under
60 s and the slowest magic cell under 2 s. Seconds of wall time on this machine, now.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

import workshop  # noqa: E402

NOTEBOOK = workshop.ROOT / "notebooks" / "01-vector-add.ipynb"


def is_rust(code: str) -> bool:
    first = code.lstrip().split("\n", 1)[0]
    return not first.startswith("%")


async def round_of(hub: workshop.Hub, students: list[str], cells: list[str]) -> dict:
    kernels = await asyncio.gather(*(hub.start_kernel(s) for s in students))
    t = time.monotonic()
    runs = await asyncio.gather(*(hub.run_cells(s, k, cells) for s, k in zip(students, kernels)))
    wall = time.monotonic() - t
    await asyncio.gather(*(hub.stop_kernel(s, k) for s, k in zip(students, kernels)))
    for s, results in zip(students, runs):
        problem = workshop.vector_add_checked(results)
        if problem:
            raise RuntimeError(f"{s}: {problem}")
    totals = [sum(r.seconds for r in results) for results in runs]
    first_rust = [next(r.seconds for r in results if is_rust(r.code)) for results in runs]
    magic = [r.seconds for results in runs for r in results if not is_rust(r.code)]
    return {
        "wall": wall,
        "slowest": max(totals),
        "median": statistics.median(totals),
        "first_rust": max(first_rust),
        "magic_median": statistics.median(magic),
        "magic_max": max(magic),
    }


async def main_async(args) -> None:
    counts = [int(k) for k in args.students.split(",")]
    work = workshop.ROOT / "target" / "workshop-bench"
    env_prefix = work / "env"
    if not (env_prefix / "bin" / "jupyterhub").exists():
        shutil.rmtree(env_prefix, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        wheel = workshop.build_wheel(Path(tempfile.mkdtemp()))
        print(f"installing {wheel.name} with JupyterHub into {env_prefix}", flush=True)
        workshop.make_student_env(env_prefix, wheel, workshop.requirement_lines("hub"))
    env = workshop.StudentEnv(env_prefix)
    import subprocess

    subprocess.run([str(env.bin / "nbcuda"), "install", "--sys-prefix"], env=workshop.clean_environ(), check=True,
                   capture_output=True)
    chp, why = workshop.find_chp()
    if chp is None:
        sys.exit(why)
    hub_dir = Path(tempfile.mkdtemp(prefix="nbcuda-workshop-bench-"))
    hub = workshop.Hub(env, hub_dir, workers=args.workers_per_student, chp=chp)
    cells = workshop.notebook_cells(NOTEBOOK)
    cores = len(os.sched_getaffinity(0))
    try:
        await hub.wait_up()
        names = [f"student{i + 1}" for i in range(max(counts))]
        await hub.create_users(names)
        await asyncio.gather(*(hub.start_server(n) for n in names))
        print(f"\nnotebook 01 on ptxsim, K students at once, {cores} cores, "
              f"{args.workers_per_student} ptxsim worker(s) per student (seconds)")
        print(f"{'K':>3} {'slowest':>8} {'median':>8} {'1st Rust':>9} {'magic med':>10} {'magic max':>10}  comfortable")
        for k in counts:
            r = await round_of(hub, names[:k], cells)
            comfy = "yes" if r["slowest"] < 60 and r["magic_max"] < 2 else "no"
            print(f"{k:>3} {r['slowest']:>8.1f} {r['median']:>8.1f} {r['first_rust']:>9.1f} "
                  f"{r['magic_median']:>10.2f} {r['magic_max']:>10.2f}  {comfy}", flush=True)
    finally:
        hub.stop()
        shutil.rmtree(hub_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", default="1,2,3,4,6,8")
    parser.add_argument("--workers-per-student", type=int, default=1)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
