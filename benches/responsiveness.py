"""How quickly the Jupyter kernel answers: the figures that the tests only bound loosely (their
bounds are liveness checks, 10-20x these figures, so that a loaded machine cannot fail them).

    JUPYTER_PATH=.venv/share/jupyter .venv/bin/python benches/responsiveness.py [ROUNDS] [--no-rust]

Per round (default 3) it starts a fresh Jupyter kernel through the installed `nbcuda`
kernelspec (NBCUDA_KERNEL_NAME to change it), on ptxsim, and measures:

- kernel_info: the `kernel_info_request` round trip right after start (tests/python/
  test_protocol.py bounds it at 10 s);
- %lsmagic on a fresh Jupyter kernel, execute_request to reply, while evcxr is still starting
  (test_protocol.py: 20 s);
- a `%%cuda` cache hit in a warm Jupyter kernel and the first hit after a restart, as the cell's
  summary reports them (test_magics.py and src/compile/tests.rs: 40 ms);
- interrupt to reply of a running Rust loop (test_interrupt.py and src/rust/tests.rs: 20 s;
  skipped with --no-rust, which also saves the first Rust cell's build).

Prints one line per round and the median of each figure. Seconds or milliseconds of wall time
on this machine, now: compare runs on the same machine only.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))

from nbkernel import (  # noqa: E402
    FIRST_CELL_TIMEOUT,
    collect,
    flush,
    ok,
    start_kernel,
    stop_kernel,
)

SUMMARY_TAIL = re.compile(r"compiled in ([0-9.]+) ms \(cache: (hit|miss)\)")


def shell_reply(kc, msg_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def cache_ms(kc, cell: str) -> tuple[str, float]:
    """Runs a %%cuda cell: (cache verdict, compile ms it reports)."""
    m = SUMMARY_TAIL.fullmatch(ok(kc, cell).stream().splitlines()[-1])
    if m is None:
        raise RuntimeError(f"no compile summary in the output of {cell!r}")
    return m[2], float(m[1])


def one_round(rust: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    env = dict(os.environ, NBCUDA_BACKEND="sim")
    km, kc = start_kernel(env=env)
    try:
        t0 = time.monotonic()
        shell_reply(kc, kc.kernel_info())
        figures["kernel_info ms"] = (time.monotonic() - t0) * 1e3
        t0 = time.monotonic()
        ok(kc, "%lsmagic", timeout=60)
        figures["%lsmagic, fresh, ms"] = (time.monotonic() - t0) * 1e3
        cell = (f"%%cuda\n__global__ void resp_{uuid.uuid4().hex[:10]}(float* x) "
                "{ x[threadIdx.x] += 1.0f; }\n")
        verdict, _ = cache_ms(kc, cell)
        assert verdict == "miss", verdict
        hits = [cache_ms(kc, cell) for _ in range(3)]
        assert all(v == "hit" for v, _ in hits), hits
        figures["%%cuda hit, warm, ms"] = min(ms for _, ms in hits)
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        flush(kc)
        verdict, ms = cache_ms(kc, cell)
        assert verdict == "hit", verdict
        figures["%%cuda hit after restart, ms"] = ms
        if rust:
            ok(kc, 'println!("warm");', timeout=FIRST_CELL_TIMEOUT)
            msg_id = kc.execute('println!("looping"); loop { std::hint::spin_loop(); }')
            while True:
                msg = kc.get_iopub_msg(timeout=FIRST_CELL_TIMEOUT)
                if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                        and "looping" in msg["content"]["text"]):
                    break
            time.sleep(0.5)
            t0 = time.monotonic()
            km.interrupt_kernel()
            collect(kc, msg_id, timeout=120)
            figures["interrupt to reply, ms"] = (time.monotonic() - t0) * 1e3
    finally:
        stop_kernel(km, kc)
    return figures


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(args[0]) if args else 3
    rust = "--no-rust" not in sys.argv
    runs = []
    for i in range(rounds):
        figures = one_round(rust)
        runs.append(figures)
        print(f"round {i + 1}: " + "   ".join(f"{k} {v:.1f}" for k, v in figures.items()), flush=True)
    print(f"\nJupyter kernel responsiveness, {os.cpu_count()} cores, median of {rounds} rounds")
    for key in runs[0]:
        print(f"  {key:<32} {statistics.median(r[key] for r in runs):10.1f}")


if __name__ == "__main__":
    main()
