"""Runs a notebook with the nbcuda Jupyter kernel and checks every result, inside the workshop
image (install/image.sh test runs it there with --network none).

    python3 check_notebook.py NOTEBOOK.ipynb      # every code cell runs; the notebook's check
                                                  # cells (Rust `assert!`s against CPU
                                                  # references) raise on a wrong result
    python3 check_notebook.py --workers N         # `%device` reports N ptxsim worker threads

The rules are tests/python/test_notebooks.py's: every code cell runs; a cell shows an error
exactly when it is tagged `raises-exception`. Exits non-zero with each problem named.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

import nbformat
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

KERNEL = "nbcuda"


def run_notebook(path: str) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=300, startup_timeout=60,
                            allow_errors=False)
    start = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        return [f"a cell failed:\n{e}"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    problems = [] if all(c.execution_count for c in code) else ["not every code cell ran"]
    for i, cell in enumerate(code, 1):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if tagged and not errors:
            problems.append(f"code cell {i} ({first}) is tagged raises-exception but raised nothing")
        if not tagged and errors:
            problems.append(f"code cell {i} ({first}): {errors[0].get('ename')}: "
                            f"{errors[0].get('evalue', '')[:600]}")
    rust = sum(1 for c in code if not c.source.lstrip().startswith("%"))
    print(f"check_notebook: {path}: {len(code)} code cells ({rust} Rust) ran and checked "
          f"in {time.monotonic() - start:.1f} s (Jupyter kernel start included)")
    return problems


def device_workers() -> int:
    """ptxsim's worker threads, as `%device` reports them in a fresh Jupyter kernel."""
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)
    text: list[str] = []
    try:
        def output(msg):
            content = msg["content"]
            if msg["msg_type"] in ("execute_result", "display_data"):
                text.append(content["data"].get("text/plain", ""))
            elif msg["msg_type"] == "stream":
                text.append(content["text"])
        kc.execute_interactive("%device", timeout=120, output_hook=output)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    found = re.search(r"worker threads\W+(\d+)", "".join(text))
    if not found:
        sys.exit(f"check_notebook: `%device` shows no worker count:\n{''.join(text)}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?")
    parser.add_argument("--workers", type=int, help="the ptxsim worker count expected")
    args = parser.parse_args()
    if args.workers is not None:
        got = device_workers()
        if got != args.workers:
            sys.exit(f"check_notebook: ptxsim has {got} worker threads, expected {args.workers}")
        print(f"check_notebook: ptxsim has {got} worker thread(s), as expected")
    if args.notebook:
        problems = run_notebook(args.notebook)
        if problems:
            sys.exit("check_notebook: " + args.notebook + ":\n" + "\n".join(problems))
    if args.workers is None and not args.notebook:
        parser.error("give a notebook, --workers N, or both")


if __name__ == "__main__":
    main()
