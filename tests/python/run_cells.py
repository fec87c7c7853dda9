"""Runs cells on a Jupyter kernel and prints what each cell did as JSON: run by the Python of a
fresh environment that has only the nbcuda wheel and what pip installed with it, to show that the
wheel gives a working Jupyter kernel there.

    python run_cells.py NOTEBOOK.ipynb|CELLS.json [--kernel nbcuda] [--timeout 300]

A notebook runs with nbclient (as `jupyter nbconvert --execute` would; nbclient comes with
JupyterLab); CELLS.json, a JSON list of cell sources, with nothing but jupyter_client (the
wheel's own dependency). Output: one JSON object, {"runner": "nbclient" | "jupyter_client",
"spec": kernel.json's argv, env and folder, "cells": [{"status", "stdout", "stderr", "error",
"data", "seconds"}]}. Every cell runs, also after an error (the tests look at the errors of some).
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


def spec_of(spec) -> dict:
    return {"argv": spec.argv, "env": spec.env, "dir": spec.resource_dir}


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


def seconds_of(cell) -> float:
    """The cell's run time from the timestamps nbclient records in its metadata."""
    from datetime import datetime

    stamps = cell.get("metadata", {}).get("execution", {})
    try:
        start = datetime.fromisoformat(stamps["iopub.execute_input"].replace("Z", "+00:00"))
        end = datetime.fromisoformat(stamps["shell.execute_reply"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return 0.0
    return (end - start).total_seconds()


def run_notebook(path: str, kernel: str, timeout: float) -> list[dict]:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name=kernel, timeout=timeout, allow_errors=True, record_timing=True).execute()
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        out = {"status": "ok", "stdout": "", "stderr": "", "error": "", "data": [], "seconds": seconds_of(cell)}
        for o in cell.outputs:
            if o.output_type == "stream":
                out["stdout" if o.name == "stdout" else "stderr"] += o.text
            elif o.output_type in ("execute_result", "display_data"):
                out["data"].append(o.data.get("text/plain", ""))
            elif o.output_type == "error":
                out["status"] = "error"
                out["error"] = f"{o.ename}: {o.evalue}"
        cells.append(out)
    return cells


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cells")
    parser.add_argument("--kernel", default="nbcuda")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    spec = KernelSpecManager().get_kernel_spec(args.kernel)
    if args.cells.endswith(".ipynb"):
        cells = run_notebook(args.cells, args.kernel, args.timeout)
        json.dump({"runner": "nbclient", "spec": spec_of(spec), "cells": cells}, sys.stdout)
        return 0
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
    json.dump({"runner": "jupyter_client", "spec": spec_of(spec), "cells": cells}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
