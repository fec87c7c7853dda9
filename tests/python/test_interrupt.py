"""Interrupt (interrupt_mode "message") stops a runaway Rust cell (benches/responsiveness.py says
how fast) and leaves the Jupyter kernel usable; `stop_on_error` aborts the cells queued behind
a failing one."""

from __future__ import annotations

import time
from queue import Empty

from nbkernel import CELL_TIMEOUT, FIRST_CELL_TIMEOUT, collect, execute

INTERRUPT_DEADLINE = 20.0  # liveness, 10x the usual bound: a loop not interrupted runs forever


def wait_for_stdout(kc, msg_id: str, needle: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except Empty:
            break
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "stream"
            and needle in msg["content"]["text"]
        ):
            return
    raise AssertionError(f"{needle!r} never streamed while the cell ran")


def reply_within(kc, msg_id: str, seconds: float) -> tuple[dict, float]:
    start = time.monotonic()
    while True:
        left = seconds - (time.monotonic() - start)
        if left <= 0:
            raise AssertionError(f"no execute_reply within {seconds} s of the interrupt")
        try:
            msg = kc.get_shell_msg(timeout=left)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg, time.monotonic() - start


def interrupted(status: str) -> bool:
    return status in ("error", "abort", "aborted")


def test_interrupt_stops_a_running_loop(kernel):
    km, kc = kernel
    # The stream proves the loop is really running (not still compiling) when we interrupt.
    msg_id = kc.execute('println!("looping"); loop { std::hint::spin_loop(); }')
    wait_for_stdout(kc, msg_id, "looping", CELL_TIMEOUT)
    time.sleep(0.5)
    km.interrupt_kernel()
    reply, took = reply_within(kc, msg_id, INTERRUPT_DEADLINE)
    assert interrupted(reply["content"]["status"]), reply["content"]
    print(f"interrupt → reply in {took:.3f} s")

    after = execute(kc, 'println!("after interrupt");', timeout=FIRST_CELL_TIMEOUT)
    assert after.status == "ok", after.describe()
    assert "after interrupt" in after.stream()


def test_interrupt_plain_loop(kernel):
    """The literal `loop {}`, interrupted whatever phase it is in (compiling or running)."""
    km, kc = kernel
    msg_id = kc.execute("loop {}")
    time.sleep(3.0)
    km.interrupt_kernel()
    reply, _ = reply_within(kc, msg_id, INTERRUPT_DEADLINE)
    assert interrupted(reply["content"]["status"]), reply["content"]
    ex = execute(kc, "40 + 2", timeout=FIRST_CELL_TIMEOUT)
    assert ex.status == "ok", ex.describe()
    assert ex.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "42"


def test_interrupt_when_idle_is_harmless(kernel):
    km, kc = kernel
    km.interrupt_kernel()
    time.sleep(0.5)
    ex = execute(kc, 'println!("idle interrupt ok");', timeout=FIRST_CELL_TIMEOUT)
    assert ex.status == "ok", ex.describe()


def test_stop_on_error_aborts_queued_cells(kernel):
    _, kc = kernel
    failing = kc.execute("let _y: i32 = not_defined_anywhere;", stop_on_error=True)
    queued = [kc.execute(f'println!("queued {i}");') for i in range(3)]
    first = collect(kc, failing, CELL_TIMEOUT)
    assert first.status == "error", first.describe()
    for msg_id in queued:
        ex = collect(kc, msg_id, CELL_TIMEOUT)
        assert ex.status == "aborted", ex.describe()
        assert "queued" not in ex.stream(), ex.describe()
    # The abort ends with the queue: a new cell runs normally.
    ex = execute(kc, 'println!("runs again");')
    assert ex.status == "ok" and "runs again" in ex.stream(), ex.describe()


def test_no_stop_on_error_runs_queued_cells(kernel):
    _, kc = kernel
    failing = kc.execute("let _y: i32 = not_defined_anywhere;", stop_on_error=False)
    queued = kc.execute('println!("still runs");')
    assert collect(kc, failing, CELL_TIMEOUT).status == "error"
    ex = collect(kc, queued, CELL_TIMEOUT)
    assert ex.status == "ok" and "still runs" in ex.stream(), ex.describe()


def test_panic_is_an_error_and_aborts_queue(kernel):
    _, kc = kernel
    failing = kc.execute('panic!("boom");')
    queued = kc.execute('println!("should not run");')
    first = collect(kc, failing, CELL_TIMEOUT)
    assert first.status == "error", first.describe()
    assert "boom" in first.text(), first.describe()
    ex = collect(kc, queued, CELL_TIMEOUT)
    assert ex.status == "aborted", ex.describe()


def test_cell_sent_right_after_an_error_reply_is_not_aborted(kernel):
    """stop_on_error aborts only what was queued before the failure was reported: a cell sent
    the moment the error reply arrives must run (repeated, since it is a race)."""
    _, kc = kernel
    aborted = 0
    for _ in range(10):
        failing = kc.execute("%lauch k[1, 1](x)")
        reply, _ = reply_within(kc, failing, CELL_TIMEOUT)
        assert reply["content"]["status"] == "error", reply["content"]
        # Sent on the reply, before the idle status: what a console does.
        ex = execute(kc, "%lsmagic")
        aborted += ex.status == "aborted"
    assert aborted == 0, f"{aborted}/10 cells sent right after an error reply were aborted"
