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
- completion of `let holdout_value = 42; holdout_va` right after start (lexical: evcxr is still
  starting) and, once warm, of a method (`warm_value.checked_a`, rust-analyzer's) and of a name
  from an earlier cell (test_multi_client.py: 2 s; the goal is 100 ms);
- `kernel_info` from a second client while the first one's 10 s Rust cell runs
  (test_multi_client.py: 5 s; the goal is 1 s);
- interrupt to reply of a running Rust loop (test_interrupt.py and src/rust/tests.rs: 20 s;
  skipped with --no-rust, which also saves the first Rust cell's build, and the three Rust
  figures above but the first).

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

from test_multi_client import new_client  # noqa: E402
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
        code = "let holdout_value = 42; holdout_va"
        t0 = time.monotonic()
        reply = shell_reply(kc, kc.complete(code, len(code)))
        figures["complete at start, ms"] = (time.monotonic() - t0) * 1e3
        assert "holdout_value" in reply["content"]["matches"], reply
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
            ok(kc, "let warm_value: i64 = 5;")
            time.sleep(10)  # rust-analyzer's warm-up and nb's load happen while idle
            for key, code, want in [
                ("complete, warm, method, ms", "warm_value.checked_a", "checked_add"),
                ("complete, warm, name, ms", "warm_va", "warm_value"),
            ]:
                times = []
                for _ in range(5):
                    t0 = time.monotonic()
                    reply = shell_reply(kc, kc.complete(code, len(code)))
                    times.append((time.monotonic() - t0) * 1e3)
                    time.sleep(0.2)
                assert any(m.startswith(want) for m in reply["content"]["matches"]), reply
                figures[key] = statistics.median(times)
            second = new_client(km)
            try:
                flush(kc)
                long_id = kc.execute("std::thread::sleep(std::time::Duration::from_secs(10));")
                while True:
                    msg = second.get_iopub_msg(timeout=60)
                    if msg["parent_header"].get("msg_id") == long_id and msg["msg_type"] == "execute_input":
                        break
                time.sleep(1)
                t0 = time.monotonic()
                shell_reply(second, second.kernel_info())
                figures["kernel_info, 2nd client, 10 s cell, ms"] = (time.monotonic() - t0) * 1e3
                collect(kc, long_id, timeout=120)
            finally:
                second.stop_channels()
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
