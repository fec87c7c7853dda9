"""Runs cells on a Jupyter kernel with nothing but jupyter_client, and prints what each cell did
as JSON: run by the Python of a fresh environment that has only the nbcuda wheel (and its
dependencies) installed, to show that the wheel alone gives a working Jupyter kernel.

    python run_cells.py NOTEBOOK.ipynb|CELLS.json [--kernel nbcuda] [--timeout 300]

CELLS.json is a JSON list of cell sources. Output: one JSON object,
{"spec": kernel.json's argv and env, "cells": [{"status", "stdout", "stderr", "error", "seconds"}]}.
Every cell runs, also after an error (the tests look at the errors of some).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from queue import Empty

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def cells_of(path: str) -> list[str]:
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, list):
        return data
    return ["".join(c["source"]) for c in data["cells"] if c["cell_type"] == "code"]


def run(kc, code: str, timeout: float) -> dict:
    started = time.monotonic()
    msg_id = kc.execute(code, allow_stdin=False)
    out = {"status": "", "stdout": "", "stderr": "", "error": "", "data": []}
    replied = idle = False
    while not (replied and idle):
        left = timeout - (time.monotonic() - started)
        if left <= 0:
            out["status"] = "timeout"
            break
        if not replied:
            try:
                msg = kc.get_shell_msg(timeout=min(left, 0.2))
                if msg["parent_header"].get("msg_id") == msg_id:
                    replied = True
                    out["status"] = msg["content"]["status"]
            except Empty:
                pass
        try:
            msg = kc.get_iopub_msg(timeout=min(left, 0.2))
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            idle = True
        elif kind == "stream":
            out["stdout" if content["name"] == "stdout" else "stderr"] += content["text"]
        elif kind in ("execute_result", "display_data"):
            out["data"].append(content["data"].get("text/plain", ""))
        elif kind == "error":
            out["error"] = f"{content['ename']}: {content['evalue']}"
    out["seconds"] = time.monotonic() - started
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cells")
    parser.add_argument("--kernel", default="nbcuda")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    spec = KernelSpecManager().get_kernel_spec(args.kernel)
    km = KernelManager(kernel_name=args.kernel)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        cells = [run(kc, code, args.timeout) for code in cells_of(args.cells)]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    json.dump({"spec": {"argv": spec.argv, "env": spec.env, "dir": spec.resource_dir}, "cells": cells}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
