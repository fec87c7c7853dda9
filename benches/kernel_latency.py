"""Latency figures of the nbcuda Jupyter kernel, measured side by side in one run.

    .venv/bin/python benches/kernel_latency.py [--evcxr-jupyter PATH] [--numba] [--runs N]

Prints one table per group:
  1. start-up: process start → kernel_info_reply; first Rust cell; median of N later simple
     cells — for nbcuda and, when given, evcxr_jupyter on the same cells (issue 2).
  2. CUDA cells: execute_request → idle for a trivial `%launch`, a `%%cuda` cache hit and a
     cache miss; beside them, with --numba, the same tutorial steps in IPython with Numba's CUDA
     simulator (NUMBA_ENABLE_CUDASIM=1) through the same client (issue 4).
  3. nb: put+get of 100 MB from a Rust cell beside %load/%save of the same 100 MB as .npy in
     /dev/shm, and `nb::exec` of a trivial launch vs the same magic line as a cell (issue 6).
Numbers are medians of wall time seen by the client (jupyter_client), on this machine, now.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import zmq
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]


def start(kernel_name: str | None = None, spec_dir: str | None = None, env: dict | None = None):
    km = KernelManager(kernel_name=kernel_name or "nbcuda")
    if spec_dir:
        from jupyter_client.kernelspec import KernelSpecManager

        km.kernel_spec_manager = KernelSpecManager(kernel_dirs=[spec_dir])
    t0 = time.perf_counter()
    km.start_kernel(env={**os.environ, **(env or {})})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    ready = time.perf_counter() - t0
    return km, kc, ready


def run(kc, code: str, timeout: float = 600) -> tuple[float, dict]:
    """Runs one cell; returns (seconds from execute_request until both its execute_reply and its
    idle status have arrived, the reply). Waits on the shell and iopub sockets together (zmq
    poller), so neither arrival order is missed and no polling interval is added to the figure."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    shell, iopub = kc.shell_channel, kc.iopub_channel
    poller = zmq.Poller()
    poller.register(shell.socket, zmq.POLLIN)
    poller.register(iopub.socket, zmq.POLLIN)
    reply = None
    idle = False
    while not (idle and reply):
        remaining = t0 + timeout - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(code)
        ready = dict(poller.poll(remaining * 1000))
        if shell.socket in ready:
            while shell.msg_ready():
                m = shell.get_msg(timeout=0)
                if m["parent_header"].get("msg_id") == msg_id:
                    reply = m
        if iopub.socket in ready:
            while iopub.msg_ready():
                m = iopub.get_msg(timeout=0)
                if (
                    m["parent_header"].get("msg_id") == msg_id
                    and m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"
                ):
                    idle = True
    took = time.perf_counter() - t0
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed: {reply['content']}")
    return took, reply


def ms(x: float) -> str:
    return f"{x * 1000:9.1f} ms"


def rust_figures(kc, runs: int) -> tuple[float, float]:
    first, _ = run(kc, "let nbcuda_bench_x = 40; nbcuda_bench_x + 2")
    later = [run(kc, f"let y{i} = {i} + 1; y{i}")[0] for i in range(runs)]
    return first, statistics.median(later)


def evcxr_spec(path: str) -> str:
    d = tempfile.mkdtemp(prefix="evcxr-spec-")
    spec = Path(d) / "evcxr_bench"
    spec.mkdir()
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [path, "--control_file", "{connection_file}"],
                "display_name": "evcxr (bench)",
                "language": "rust",
                "interrupt_mode": "message",
            }
        )
    )
    return d


def section_startup(args) -> None:
    rows = []
    km, kc, ready = start()
    first, later = rust_figures(kc, args.runs)
    rows.append(("nbcuda", ready, first, later))
    km.shutdown_kernel(now=True)
    if args.evcxr_jupyter:
        d = evcxr_spec(args.evcxr_jupyter)
        km, kc, ready = start("evcxr_bench", spec_dir=d)
        first, later = rust_figures(kc, args.runs)
        rows.append(("evcxr_jupyter 0.22", ready, first, later))
        km.shutdown_kernel(now=True)
        shutil.rmtree(d, ignore_errors=True)
    print("\n1. start-up and Rust cells (client wall time)")
    print(f"{'kernel':22} {'start→kernel_info':>18} {'first Rust cell':>16} {'later cell (median of ' + str(args.runs) + ')':>26}")
    for name, r, f, l in rows:
        print(f"{name:22} {ms(r):>18} {ms(f):>16} {ms(l):>26}")
    if len(rows) == 2:
        print(f"ratio nbcuda/evcxr: start {rows[0][1] / rows[1][1]:.2f}, first {rows[0][2] / rows[1][2]:.2f}, later {rows[0][3] / rows[1][3]:.2f}")


CUDA = """%%cuda
__global__ void noop(int n) { }
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

NUMBA_DEFS = """@cuda.jit
def noop(n):
    pass
@cuda.jit
def add(a, b, c, n):
    i = cuda.grid(1)
    if i < n:
        c[i] = a[i] + b[i]
"""

NUMBA_SETUP = (
    """
import os
os.environ['NUMBA_ENABLE_CUDASIM'] = '1'
import numpy as np
from numba import cuda
"""
    + NUMBA_DEFS
    + """a = cuda.to_device(np.random.rand(4096).astype(np.float32))
b = cuda.to_device(np.random.rand(4096).astype(np.float32))
c = cuda.device_array(4096, dtype=np.float32)
"""
)


def section_cuda(args) -> None:
    cache = tempfile.mkdtemp(prefix="nbcuda-bench-cache-")
    km, kc, _ = start(env={"NBCUDA_CACHE_DIR": cache})
    try:
        run(kc, "%array a = rand(4096, f32)\n%array b = rand(4096, f32)\n%array c = zeros(4096, f32)")
        miss = []
        for i in range(min(args.runs, 5)):
            miss.append(run(kc, CUDA.replace("int n) { }", f"int n) {{ /* {uuid.uuid4()} */ }}"))[0])
        run(kc, CUDA)
        hit = [run(kc, CUDA)[0] for _ in range(args.runs)]
        launch = [run(kc, "%launch noop[1, 32](0)")[0] for _ in range(args.runs)]
        add = [run(kc, "%launch add[auto](a, b, c, len(a))")[0] for _ in range(args.runs)]
    finally:
        km.shutdown_kernel(now=True)
        shutil.rmtree(cache, ignore_errors=True)
    rows = [
        ("nbcuda %launch trivial", statistics.median(launch)),
        ("nbcuda %launch add 4096", statistics.median(add)),
        ("nbcuda %%cuda cache hit", statistics.median(hit)),
        ("nbcuda %%cuda cache miss", statistics.median(miss)),
    ]
    if args.numba:
        km, kc, _ = start("python3")
        try:
            run(kc, NUMBA_SETUP, timeout=300)
            nl = [run(kc, "noop[1, 32](0)")[0] for _ in range(args.runs)]
            na = [run(kc, "add[16, 256](a, b, c, 4096)")[0] for _ in range(max(3, args.runs // 3))]
            # The same definition cell again (what a %%cuda cache hit stands for).
            nd = [run(kc, NUMBA_DEFS)[0] for _ in range(args.runs)]
            nj = []
            for i in range(min(args.runs, 5)):
                src = f"@cuda.jit\ndef k{i}(n):\n    pass\nk{i}[1, 32](0)"
                nj.append(run(kc, src)[0])
        finally:
            km.shutdown_kernel(now=True)
        rows += [
            ("numba-sim trivial launch", statistics.median(nl)),
            ("numba-sim add 4096", statistics.median(na)),
            ("numba-sim same @cuda.jit cell again", statistics.median(nd)),
            ("numba-sim jit+launch new kernel", statistics.median(nj)),
        ]
    print("\n2. CUDA cells: execute_request → idle (median)")
    for name, t in rows:
        print(f"{name:36} {ms(t)}")


def section_nb(args) -> None:
    km, kc, _ = start()
    run(kc, CUDA)
    run(kc, "%array c = zeros(4096, f32)")
    _, rep = run(kc, "nb::put(\"warm\", &[1u8]).unwrap();")
    n = 25 * 1024 * 1024
    code = f"""
let v: Vec<f32> = (0..{n}usize).map(|i| i as f32).collect();
let mut put = Vec::new(); let mut get = Vec::new();
for _ in 0..3 {{
  let t0 = std::time::Instant::now(); nb::put("big", &v).unwrap();
  let t1 = std::time::Instant::now(); let back: nb::Array<f32> = nb::get("big").unwrap();
  let t2 = std::time::Instant::now(); assert!(back.data.len() == v.len());
  put.push((t1 - t0).as_secs_f64()); get.push((t2 - t1).as_secs_f64());
}}
put.sort_by(|a, b| a.partial_cmp(b).unwrap()); get.sort_by(|a, b| a.partial_cmp(b).unwrap());
let mut ex = Vec::new();
for _ in 0..{args.runs} {{ let t = std::time::Instant::now(); nb::exec("%launch noop[1, 32](0)").unwrap(); ex.push(t.elapsed().as_secs_f64()); }}
ex.sort_by(|a, b| a.partial_cmp(b).unwrap());
println!("NBFIG {{}} {{}} {{}}", put[1], get[1], ex[ex.len() / 2]);
nb::free("big").unwrap();
"""
    msg_id = kc.execute(code)
    fig = None
    while True:
        m = kc.get_iopub_msg(timeout=600)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "stream" and "NBFIG" in m["content"]["text"]:
            fig = [float(x) for x in m["content"]["text"].split("NBFIG")[1].split()[:3]]
        if m["msg_type"] == "error":
            raise RuntimeError(m["content"])
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    magic = [run(kc, "%launch noop[1, 32](0)")[0] for _ in range(args.runs)]
    # The magic-line way to move 100 MB in and out of the Jupyter kernel: %load / %save of a .npy
    # file in /dev/shm (RAM, no disk), timed per cell by the client; median of 3.
    shm = tempfile.mkdtemp(prefix="nbcuda-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    npy = os.path.join(shm, "big.npy")
    try:
        run(kc, f"%array big = arange({n}, f32)")
        save = [run(kc, f"%save big {npy}")[0] for _ in range(3)]
        load = [run(kc, f"%load big = {npy}")[0] for _ in range(3)]
        run(kc, "%free big")
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    km.shutdown_kernel(now=True)
    mb = n * 4 / 1e6
    print("\n3. nb crate (Rust cells) beside magic lines, 100 MB f32 array")
    print(f"{'':34} {'nb (inside a Rust cell)':>24} {'magic line (cell, client)':>27}")
    print(f"{'into the Jupyter kernel':34} {f'put {mb / fig[0]:6.0f} MB/s':>24} {f'%load .npy {mb / statistics.median(load):6.0f} MB/s':>27}")
    print(f"{'out of the Jupyter kernel':34} {f'get {mb / fig[1]:6.0f} MB/s':>24} {f'%save .npy {mb / statistics.median(save):6.0f} MB/s':>27}")
    print(f"{'%launch noop[1, 32](0) latency':34} {'nb::exec ' + ms(fig[2]).strip():>24} {'as a cell ' + ms(statistics.median(magic)).strip():>27}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--evcxr-jupyter", help="path of an evcxr_jupyter 0.22 binary to compare with")
    p.add_argument("--numba", action="store_true", help="compare with Numba's CUDA simulator in IPython")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--only", choices=["startup", "cuda", "nb"])
    args = p.parse_args()
    if args.only in (None, "startup"):
        section_startup(args)
    if args.only in (None, "cuda"):
        section_cuda(args)
    if args.only in (None, "nb"):
        section_nb(args)


if __name__ == "__main__":
    sys.exit(main())
