"""Time from a cold Jupyter kernel's start to the first Rust cell's reply (issue 36's figure),
idle and with one CPU-hog process beside it, ROUNDS times each (default 2):

    JUPYTER_PATH=.venv/share/jupyter .venv/bin/python benches/first_rust_cell.py [ROUNDS]

Uses the installed `nbcuda` kernelspec (NBCUDA_KERNEL_NAME to change it). The stock
jupyter_kernel_test suite gives a Rust cell 15 s; the cold suite in
tests/python/test_jupyter_kernel_test.py asserts it, this prints the figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from jupyter_client.manager import start_new_kernel


def once(loaded: bool) -> tuple[float, float, str]:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
    try:
        t0 = time.monotonic()
        km, kc = start_new_kernel(kernel_name=os.environ.get("NBCUDA_KERNEL_NAME", "nbcuda"))
        t1 = time.monotonic()
        reply = kc.execute_interactive('println!("{}", 6 * 7);', timeout=240, output_hook=lambda m: None)
        t2 = time.monotonic()
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        return t1 - t0, t2 - t1, reply["content"]["status"]
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for _ in range(rounds):
        for loaded in (False, True):
            start, cell, status = once(loaded)
            what = "one CPU hog beside it" if loaded else "idle"
            print(f"{what:<22} kernel start {start:5.2f} s   first Rust cell {cell:5.2f} s   {status}")


if __name__ == "__main__":
    main()
