"""Several clients on one Jupyter kernel (issue 52): every request answered, to the client that
sent it.

Each client is a separate `jupyter_client` client on the kernel's connection file, with its own
session and so its own shell routing identity, as `jupyter console --existing`, VS Code or a
grading script beside a notebook are. The tests check:
- three clients, 20 rounds: each round every client sends, without waiting, a `%launch` cell,
  a Rust cell (one client a round), a `%%cuda` cell with a launch of its kernel (some rounds),
  a `complete_request` and a `kernel_info_request`. Every reply reaches its sender (never
  another client), every iopub message of a cell carries that cell's request as parent, cells
  run one at a time (no two execute requests busy at once on iopub), each client's cells run
  in the order it sent them and get increasing `execution_count`s, counts are never reused,
  Rust results are the products of random numbers, and the arrays each client incremented hold
  exactly what its launches added;
- `kernel_info`, `complete`, `inspect`, `is_complete` and `history` from a second client are
  answered while a 10 s cell of the first runs, and the second client's cell waits its turn;
- a failed cell with `stop_on_error` aborts the queued cells of its own client only;
- an `input_request` goes to the client whose cell asked, and another client's `input_reply`
  is not taken;
- completion right after the Jupyter kernel starts offers names of the cell being typed, and
  names bound by earlier cells at once (lexically, while rust-analyzer is busy);
- `jupyter console --existing` on the Jupyter kernel of a notebook that nbclient is running;
- two websockets of jupyter_server on one Jupyter kernel (a notebook and a console panel, as
  JupyterLab opens them): each panel's replies and outputs reach it alone.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from queue import Empty

import nbformat
import numpy as np
import pytest
from jupyter_client.blocking import BlockingKernelClient

from nbkernel import (
    CELL_TIMEOUT,
    FIRST_CELL_TIMEOUT,
    ROOT,
    STARTUP_TIMEOUT,
    KERNEL_NAME,
    collect,
    flush,
    ok,
    start_kernel,
    stop_kernel,
    warm_up,
)

ROUNDS = 20
CLIENTS = 3
N = 32  # elements of each client's arrays


def new_client(km) -> BlockingKernelClient:
    """A client of its own (new session, new routing identity) on `km`'s connection file."""
    kc = BlockingKernelClient()
    kc.load_connection_file(km.connection_file)
    kc.start_channels()
    kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
    flush(kc)
    return kc


@pytest.fixture(scope="module")
def clients():
    km, kc0 = start_kernel()
    others: list[BlockingKernelClient] = []
    try:
        warm_up(kc0)
        others = [new_client(km) for _ in range(CLIENTS - 1)]
        flush(kc0)
        yield km, [kc0, *others]
    finally:
        for kc in others:
            kc.stop_channels()
        stop_kernel(km, kc0)


def fetch(kc, name: str, tmp: Path) -> np.ndarray:
    path = tmp / f"{name}_{uuid.uuid4().hex[:8]}.npy"
    ok(kc, f"%save {name} {path}")
    return np.load(path)


def shell_replies(kc, msg_ids: set[str], timeout: float) -> dict[str, dict]:
    """Every shell reply for `msg_ids` on `kc`; fails on a reply to any other request."""
    got: dict[str, dict] = {}
    deadline = time.monotonic() + timeout
    while len(got) < len(msg_ids):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no reply within {timeout} s to {sorted(msg_ids - set(got))}"
        try:
            msg = kc.get_shell_msg(timeout=remaining)
        except Empty:
            continue
        parent = msg["parent_header"].get("msg_id")
        assert parent in msg_ids, f"a reply to another client's request reached this one: {msg['msg_type']} {msg['content']}"
        assert parent not in got, f"two replies to {parent}"
        got[parent] = msg
    return got


def iopub_until_idle(kc, msg_ids: set[str], timeout: float) -> list[dict]:
    """The iopub messages `kc` receives until each of `msg_ids` has had its idle status."""
    seen: list[dict] = []
    idle: set[str] = set()
    deadline = time.monotonic() + timeout
    while not msg_ids <= idle:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no idle status within {timeout} s for {sorted(msg_ids - idle)}"
        try:
            msg = kc.get_iopub_msg(timeout=remaining)
        except Empty:
            continue
        seen.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle.add(msg["parent_header"].get("msg_id"))
    return seen


def test_three_clients_twenty_rounds(clients, tmp_path):
    km, kcs = clients
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    kc0 = kcs[0]
    ok(kc0, "%%cuda\n__global__ void mc_inc(int* c, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) c[i] += 1;\n}")
    ok(kc0, "\n".join(f"%array mc_c{i} = zeros({N}, i32)\n%array mc_f{i} = zeros({N}, f32)" for i in range(CLIENTS)))
    for kc in kcs:
        flush(kc)
    expected_f = [0.0] * CLIENTS
    last_count = [0] * CLIENTS
    used_counts: set[int] = set()
    rust_names: list[list[str]] = [[] for _ in range(CLIENTS)]
    for r in range(ROUNDS):
        sent: list[dict[str, tuple[str, object]]] = [{} for _ in range(CLIENTS)]
        order: list[list[str]] = [[] for _ in range(CLIENTS)]  # each client's execute requests

        def send(i: int, kind: str, expect: object, msg_id: str) -> None:
            sent[i][msg_id] = (kind, expect)
            if kind in ("launch", "rust", "cuda"):
                order[i].append(msg_id)

        # Interleave the clients request by request, as fast as the sockets take them.
        for i, kc in enumerate(kcs):
            send(i, "launch", None, kc.execute(f"%launch mc_inc[1, 32](mc_c{i}, {N})"))
        for i, kc in enumerate(kcs):
            if r % CLIENTS == i:
                a, b = rng.randrange(1, 10**6), rng.randrange(1, 10**6)
                name = f"mc_v{i}_{r}"
                send(i, "rust", str(a * b), kc.execute(f"let {name}: u64 = {a} * {b};\n{name}"))
                rust_names[i].append(name)
            if (r + i) % 5 == 0:
                k = rng.randrange(1, 100)
                kernel = f"mc_add{i}_{r}"
                src = (f"%%cuda\n__global__ void {kernel}(float* x, int n) {{\n"
                       f"    int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
                       f"    if (j < n) x[j] += {k}.0f;\n}}")
                send(i, "cuda", kernel, kc.execute(src))
                send(i, "launch", None, kc.execute(f"%launch {kernel}[1, 32](mc_f{i}, {N})"))
                expected_f[i] += k
        for i, kc in enumerate(kcs):
            send(i, "complete_magic", "mc_inc", kc.complete("%launch mc_in", len("%launch mc_in")))
            send(i, "kernel_info", None, kc.kernel_info())
            if rust_names[i][:-1] or (rust_names[i] and r % CLIENTS != i):
                # A name bound by one of this client's earlier Rust cells (already run).
                name = rust_names[i][-1] if r % CLIENTS != i else rust_names[i][-2]
                code = f"let z = {name[:-1]}"
                send(i, "complete_rust", name, kc.complete(code, len(code)))

        all_ids = {m for s in sent for m in s}
        for i, kc in enumerate(kcs):
            replies = shell_replies(kc, set(sent[i]), timeout=CELL_TIMEOUT * 2)
            for msg_id, (kind, expect) in sent[i].items():
                reply = replies[msg_id]
                content = reply["content"]
                if kind in ("launch", "rust", "cuda"):
                    assert reply["msg_type"] == "execute_reply"
                    assert content["status"] == "ok", (r, i, kind, content)
                    count = content["execution_count"]
                    assert count not in used_counts, f"execution_count {count} given twice"
                    used_counts.add(count)
                elif kind == "kernel_info":
                    assert reply["msg_type"] == "kernel_info_reply"
                    assert content["implementation"] == "nbcuda"
                else:
                    assert reply["msg_type"] == "complete_reply"
                    assert expect in content["matches"], (r, i, kind, content)
            counts = [replies[m]["content"]["execution_count"] for m in order[i]]
            assert counts == sorted(counts) and counts[0] > last_count[i], (r, i, counts, last_count[i])
            last_count[i] = counts[-1]

        # iopub: every client sees every message; check what client 0 sees, and that the others
        # see the same parents.
        exec_ids = {m for s in sent for m, (kind, _) in s.items() if kind in ("launch", "rust", "cuda")}
        seen = iopub_until_idle(kc0, all_ids, timeout=CELL_TIMEOUT)
        for kc in kcs[1:]:
            other = iopub_until_idle(kc, all_ids, timeout=CELL_TIMEOUT)
            ours = [m["header"]["msg_id"] for m in seen if m["parent_header"].get("msg_id") in all_ids]
            assert [m["header"]["msg_id"] for m in other if m["parent_header"].get("msg_id") in all_ids] == ours
        busy: str | None = None
        results: dict[str, list[dict]] = {m: [] for m in exec_ids}
        for msg in seen:
            parent = msg["parent_header"].get("msg_id")
            assert parent in all_ids, f"an iopub message with a foreign parent: {msg['msg_type']} {msg['content']}"
            if parent not in exec_ids:
                assert msg["msg_type"] == "status", msg
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "busy":
                    assert busy is None, f"two cells running at once: {busy} and {parent}"
                    busy = parent
                else:
                    assert busy == parent, (busy, parent)
                    busy = None
            else:
                assert busy == parent, f"{msg['msg_type']} of {parent} outside its busy/idle"
                results[parent].append(msg)
        for i in range(CLIENTS):
            for msg_id, (kind, expect) in sent[i].items():
                if kind not in ("launch", "rust", "cuda"):
                    continue
                types = [m["msg_type"] for m in results[msg_id]]
                assert "error" not in types, results[msg_id]
                assert types[0] == "execute_input", types
                if kind == "rust":
                    values = [m["content"]["data"]["text/plain"] for m in results[msg_id] if m["msg_type"] == "execute_result"]
                    assert values == [expect], results[msg_id]
                if kind == "cuda":
                    text = "".join(m["content"].get("text", "") for m in results[msg_id] if m["msg_type"] == "stream")
                    assert expect in text, results[msg_id]

    for i in range(CLIENTS):
        c = fetch(kc0, f"mc_c{i}", tmp_path)
        np.testing.assert_array_equal(c, np.full(N, ROUNDS, dtype=np.int32))
        f = fetch(kc0, f"mc_f{i}", tmp_path)
        np.testing.assert_allclose(f, np.full(N, expected_f[i], dtype=np.float32))
    print(f"{CLIENTS} clients x {ROUNDS} rounds: {len(used_counts)} cells, every reply at its sender")


def test_rust_cell_then_another_clients_magic_50_ms_later(clients, tmp_path):
    """The issue's case: client A sends a Rust cell, client B a magic cell 50 ms later, four
    times over, neither waiting. Each gets its own four replies; B's four launches all ran."""
    km, kcs = clients
    a, b = kcs[0], kcs[1]
    ok(a, "%%cuda\n__global__ void mc_inc1(int* c, int n) {\n"
          "    int i = threadIdx.x;\n    if (i < n) c[i] += 1;\n}\n")
    ok(a, f"%array mc_once = zeros({N}, i32)")
    for kc in kcs:
        flush(kc)
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    ids_a, ids_b, want = [], [], {}
    for k in range(4):
        x = rng.randrange(1, 10**6)
        msg_id = a.execute(f"let mc_a{k}: u64 = {x} * 2;\nmc_a{k}")
        ids_a.append(msg_id)
        want[msg_id] = str(2 * x)
        time.sleep(0.05)
        ids_b.append(b.execute(f"%launch mc_inc1[1, 32](mc_once, {N})"))
    ra = shell_replies(a, set(ids_a), timeout=CELL_TIMEOUT)
    rb = shell_replies(b, set(ids_b), timeout=CELL_TIMEOUT)
    assert all(r["content"]["status"] == "ok" for r in [*ra.values(), *rb.values()])
    seen = iopub_until_idle(a, set(ids_a) | set(ids_b), timeout=CELL_TIMEOUT)
    for msg_id, value in want.items():
        results = [m["content"]["data"]["text/plain"] for m in seen
                   if m["msg_type"] == "execute_result" and m["parent_header"].get("msg_id") == msg_id]
        assert results == [value], (results, value)
    np.testing.assert_array_equal(fetch(a, "mc_once", tmp_path), np.full(N, 4, dtype=np.int32))


def test_a_second_client_is_answered_while_a_long_cell_runs(clients):
    km, kcs = clients
    a, b = kcs[0], kcs[1]
    for kc in kcs:
        flush(kc)
    long_id = a.execute("std::thread::sleep(std::time::Duration::from_secs(10));\n7 * 6")
    # Wait until the long cell runs (its busy status on iopub).
    deadline = time.monotonic() + CELL_TIMEOUT
    while True:
        msg = b.get_iopub_msg(timeout=max(deadline - time.monotonic(), 0.1))
        if msg["parent_header"].get("msg_id") == long_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(0.5)
    queued_id = b.execute("%lsmagic")
    timings = {}
    for kind, send in [
        ("kernel_info", lambda: b.kernel_info()),
        ("complete", lambda: b.complete("%lsma", 5)),
        ("complete_rust", lambda: b.complete("let abc = 1; ab", 15)),
        ("inspect", lambda: b.inspect("%launch", 3)),
        ("is_complete", lambda: b.is_complete("let x = (1,")),
        ("history", lambda: b.history(hist_access_type="tail", n=3)),
    ]:
        t0 = time.monotonic()
        msg_id = send()
        reply = shell_replies(b, {msg_id}, timeout=10)[msg_id]
        timings[kind] = time.monotonic() - t0
        if kind != "is_complete":
            assert reply["content"]["status"] == "ok", reply
        if kind == "kernel_info":
            assert reply["content"]["implementation"] == "nbcuda"
        if kind == "complete":
            assert "%lsmagic" in reply["content"]["matches"]
        if kind == "complete_rust":
            assert "abc" in reply["content"]["matches"]
        if kind == "is_complete":
            assert reply["content"]["status"] == "incomplete"
    print("answered while another client's 10 s cell ran (s):", {k: round(v, 3) for k, v in timings.items()})
    # Liveness: far below the 10 s the cell runs (the goal, 1 s, is benches/responsiveness.py's).
    assert max(timings.values()) < 5, timings
    # The long cell ends first, then the second client's cell runs.
    long_reply = shell_replies(a, {long_id}, timeout=CELL_TIMEOUT)[long_id]
    queued_reply = shell_replies(b, {queued_id}, timeout=CELL_TIMEOUT)[queued_id]
    assert long_reply["content"]["status"] == "ok"
    assert queued_reply["content"]["execution_count"] > long_reply["content"]["execution_count"]
    assert queued_reply["header"]["date"] >= long_reply["header"]["date"]


def test_input_request_goes_to_the_client_whose_cell_asked(clients):
    """B's cell reads a line: the input_request reaches B alone; A's unasked input_reply is
    not taken; B's answer is."""
    from test_protocol import INPUT_CELL

    km, kcs = clients
    a, b = kcs[0], kcs[1]
    for kc in kcs:
        flush(kc)
    msg_id = b.execute(INPUT_CELL, allow_stdin=True)
    req = b.get_stdin_msg(timeout=CELL_TIMEOUT)
    assert req["msg_type"] == "input_request" and req["parent_header"]["msg_id"] == msg_id
    with pytest.raises(Empty):
        a.get_stdin_msg(timeout=0.5)
    a.input("Mallory")
    time.sleep(0.3)
    b.input("Ada")
    reply = shell_replies(b, {msg_id}, CELL_TIMEOUT)[msg_id]
    assert reply["content"]["status"] == "ok", reply
    seen = iopub_until_idle(b, {msg_id}, CELL_TIMEOUT)
    text = "".join(m["content"].get("text", "") for m in seen
                   if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id)
    assert "hello <Ada>" in text and "Mallory" not in text, text


def test_a_failed_cell_aborts_only_its_own_clients_queue(clients):
    km, kcs = clients
    a, b = kcs[0], kcs[1]
    for kc in kcs:
        flush(kc)
    failing = a.execute("std::thread::sleep(std::time::Duration::from_millis(1500));\npanic!(\"stop here\");")
    time.sleep(0.3)
    a_after = a.execute("%lsmagic")
    b_after = b.execute("%lsmagic")
    assert shell_replies(a, {failing}, CELL_TIMEOUT)[failing]["content"]["status"] == "error"
    assert shell_replies(a, {a_after}, CELL_TIMEOUT)[a_after]["content"]["status"] == "aborted"
    assert shell_replies(b, {b_after}, CELL_TIMEOUT)[b_after]["content"]["status"] == "ok"


def test_completion_answers_at_once_after_start():
    km, kc = start_kernel()
    try:
        code = "let holdout_value = 42; holdout_va"
        t0 = time.monotonic()
        reply = kc.complete(code, len(code), reply=True, timeout=10)["content"]
        first = time.monotonic() - t0
        assert "holdout_value" in reply["matches"], reply
        assert code[reply["cursor_start"]:reply["cursor_end"]] == "holdout_va"
        # A name bound by an earlier cell, asked right after that cell (rust-analyzer is then
        # busy with its first analysis, or loading nb).
        ok(kc, "let earlier_cell_value = 5;", timeout=FIRST_CELL_TIMEOUT)
        code = "earlier_cell_va"
        t0 = time.monotonic()
        reply = kc.complete(code, len(code), reply=True, timeout=10)["content"]
        second = time.monotonic() - t0
        assert "earlier_cell_value" in reply["matches"], reply
        print(f"completion right after start: {first * 1000:.0f} ms; right after a cell: {second * 1000:.0f} ms")
        assert first < 2 and second < 2, (first, second)
    finally:
        stop_kernel(km, kc)


def test_jupyter_console_beside_nbclient():
    """`jupyter console --existing` on the Jupyter kernel of a notebook that nbclient runs: the
    console's cell runs between the notebook's, and both see each other's arrays."""
    from nbclient import NotebookClient

    console = ROOT / ".venv" / "bin" / "jupyter-console"
    if not console.exists():
        pytest.skip("jupyter-console is not in .venv: run bash install/setup.sh (install/requirements.txt lists it)")
    tag = uuid.uuid4().hex[:6]
    cells = [nbformat.v4.new_code_cell(f"%array nbc_x{i} = arange({N}, f32)") for i in range(3)]
    # The console connects and sends its cell while this one runs.
    cells.append(nbformat.v4.new_code_cell("std::thread::sleep(std::time::Duration::from_secs(8));\nlet nbc_done = 1;"))
    cells += [nbformat.v4.new_code_cell(f"%array nbc_y{i} = ones({N}, i32)") for i in range(3)]
    cells.append(nbformat.v4.new_code_cell("%arrays"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "nbcuda", "language": "rust"}
    client = NotebookClient(nb, timeout=int(FIRST_CELL_TIMEOUT), kernel_name=KERNEL_NAME)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            client.execute()
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    runner = threading.Thread(target=run)
    runner.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    connection = None
    while time.monotonic() < deadline and not errors:
        km = getattr(client, "km", None)
        path = getattr(km, "connection_file", None)
        if path and Path(path).is_file() and Path(path).stat().st_size > 0 and nb.cells[0].get("execution_count"):
            connection = path
            break
        time.sleep(0.1)
    assert connection, f"nbclient's Jupyter kernel did not start: {errors}"
    proc = subprocess.run(
        [str(console), "--existing", connection, "--simple-prompt", "--no-confirm-exit"],
        input=f"%array con_{tag} = full({N}, 3, i32)\n%arrays\nexit\n",
        capture_output=True,
        text=True,
        timeout=CELL_TIMEOUT,
    )
    runner.join(timeout=FIRST_CELL_TIMEOUT)
    assert not runner.is_alive(), "nbclient did not finish"
    assert not errors, errors
    assert f"con_{tag}" in proc.stdout and "nbc_x2" in proc.stdout, (proc.stdout, proc.stderr)
    for cell in nb.cells:
        assert cell.get("execution_count"), cell
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    last = json.dumps(nb.cells[-1].outputs)
    for name in ["nbc_x0", "nbc_y2", f"con_{tag}"]:
        assert name in last, last


def _ws_message(session: str, msg_type: str, content: dict, channel: str = "shell") -> dict:
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "session": session,
            "username": "test",
            "date": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
            "msg_type": msg_type,
            "version": "5.4",
        },
        "parent_header": {},
        "metadata": {},
        "content": content,
        "channel": channel,
        "buffers": [],
    }


def test_two_websockets_of_jupyter_server(tmp_path):
    """JupyterLab's notebook and console panels on one Jupyter kernel: two websockets of
    jupyter_server, each with its own session. Cells run in both; each panel gets the replies to
    its own requests and finds the outputs of its cells under their parents."""
    import asyncio

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    from test_browser import free_port, start_lab, stop_lab

    port, token = free_port(), uuid.uuid4().hex
    home = tmp_path / "home"
    home.mkdir()
    proc = start_lab(tmp_path, home, port, token)
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/kernels",
            data=json.dumps({"name": KERNEL_NAME}).encode(),
            method="POST",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            kernel_id = json.loads(resp.read())["id"]

        async def panels() -> None:
            sockets = []
            sessions = [uuid.uuid4().hex, uuid.uuid4().hex]
            for session in sessions:
                url = f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?session_id={session}"
                sockets.append(await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"})))
            tag = uuid.uuid4().hex[:6]
            # Interleaved: notebook, console, notebook, console, ...
            plan = []
            for i in range(4):
                for p, name in enumerate(("nbk", "con")):
                    code = f"%array {name}{tag}_{i} = full({N}, {10 * p + i}, i32)\n%print {name}{tag}_{i}"
                    if i == 3 and p == 1:
                        code = f"let {name}{tag}_rust: i64 = {7 + i} * 6;\n{name}{tag}_rust"
                    msg = _ws_message(sessions[p], "execute_request", {
                        "code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
                    plan.append((p, msg["header"]["msg_id"], code))
                    await sockets[p].write_message(json.dumps(msg))
            mine = [{m for q, m, _ in plan if q == p} for p in range(2)]
            replies: list[dict[str, dict]] = [{}, {}]
            outputs: dict[str, list[dict]] = {m: [] for _, m, _ in plan}
            idle: list[set[str]] = [set(), set()]
            deadline = time.monotonic() + FIRST_CELL_TIMEOUT
            while any(len(replies[p]) < len(mine[p]) or not mine[p] <= idle[p] for p in range(2)):
                for p in range(2):
                    if len(replies[p]) == len(mine[p]) and mine[p] <= idle[p]:
                        continue
                    remaining = deadline - time.monotonic()
                    assert remaining > 0, (replies, idle)
                    try:
                        text = await asyncio.wait_for(sockets[p].read_message(), timeout=0.2)
                    except asyncio.TimeoutError:
                        continue
                    assert text is not None, "the websocket closed"
                    msg = json.loads(text)
                    parent = msg.get("parent_header", {}).get("msg_id")
                    if msg["channel"] == "shell":
                        assert parent in mine[p], f"panel {p} got a reply to a request it did not send: {msg['msg_type']}"
                        replies[p][parent] = msg
                    elif msg["channel"] == "iopub" and parent in outputs:
                        if msg["msg_type"] == "status":
                            if msg["content"]["execution_state"] == "idle" and parent in mine[p]:
                                idle[p].add(parent)
                        elif parent in mine[p]:
                            outputs[parent].append(msg)
            for p, msg_id, code in plan:
                assert replies[p][msg_id]["content"]["status"] == "ok", replies[p][msg_id]
                shown = json.dumps([m["content"] for m in outputs[msg_id]])
                if "_rust" in code:
                    assert f"{(7 + 3) * 6}" in shown, shown
                else:
                    name = code.split()[1]
                    assert name in shown, shown
            for s in sockets:
                s.close()

        asyncio.run(panels())
    finally:
        stop_lab(proc, port, token)
