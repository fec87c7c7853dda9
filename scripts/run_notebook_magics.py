"""Runs the magic cells of the tutorial notebooks (skipping Rust cells) on the installed nbcuda
Jupyter kernel and prints each notebook's run time: the GPU figure of issue 8 on a machine with a
GPU but no Rust toolchain (the GPU check's machine). Rust cells need cargo and are skipped; a
magic cell that needs what a skipped Rust cell made is reported, not fatal.

    python scripts/run_notebook_magics.py [NOTEBOOK ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[1]


def is_magic(src: str) -> bool:
    lines = [l for l in src.splitlines() if l.strip() and not l.strip().startswith("//")]
    return bool(lines) and all(l.lstrip().startswith("%") for l in lines[:1])


def run(path: Path) -> tuple[int, int, list[str], float]:
    nb = json.loads(path.read_text())
    km = KernelManager(kernel_name="nbcuda")
    t0 = time.perf_counter()
    km.start_kernel(cwd=str(path.parent))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    ran = skipped = 0
    errors: list[str] = []
    try:
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            if not is_magic(src):
                skipped += 1
                continue
            ran += 1
            reply = kc.execute_interactive(src, timeout=600, output_hook=lambda m: None)
            content = reply["content"]
            tags = cell.get("metadata", {}).get("tags", [])
            if content["status"] != "ok" and "raises-exception" not in tags:
                errors.append(f"cell {i}: {content.get('ename')}: {content.get('evalue', '')[:120]}")
    finally:
        seconds = time.perf_counter() - t0
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return ran, skipped, errors, seconds


def main() -> int:
    paths = [Path(p) for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    print("| notebook | magic cells run | Rust cells skipped | errors | seconds (incl. kernel start) |")
    print("|---|---|---|---|---|")
    for p in paths:
        ran, skipped, errors, seconds = run(p)
        print(f"| {p.name} | {ran} | {skipped} | {len(errors)} | {seconds:.1f} |", flush=True)
        for e in errors:
            print(f"|   | {e} | | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
