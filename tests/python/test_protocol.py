"""Protocol details beyond jupyter_kernel_test: kernel_info, is_complete, comm_info, history,
shutdown/restart, heartbeat, stdin input_request, and the magic dispatcher."""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from queue import Empty

import pytest
import zmq

from nbkernel import (
    CELL_TIMEOUT,
    FIRST_CELL_TIMEOUT,
    STARTUP_TIMEOUT,
    collect,
    execute,
    has_cuda_device,
    start_kernel,
    stop_kernel,
)


def shell_reply(kc, msg_id: str, timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        msg = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


# kernel_info ----------------------------------------------------------------------------------


def test_kernel_info_answers_at_once_from_a_cold_start():
    """kernel_info must not wait for evcxr's background start-up."""
    t0 = time.monotonic()
    km, kc = start_kernel()
    try:
        ready = time.monotonic() - t0
        t1 = time.monotonic()
        reply = shell_reply(kc, kc.kernel_info(), timeout=15)
        took = time.monotonic() - t1
        # Liveness, 10x the usual bound (benches/responsiveness.py measures it).
        assert took < 10.0, f"kernel_info took {took:.2f} s"
        print(f"process start → ready in {ready:.2f} s; kernel_info round trip {took * 1000:.1f} ms")
        c = reply["content"]
        assert c["status"] == "ok"
        assert c["protocol_version"].startswith("5.")
        assert c["implementation"] == "nbcuda"
        li = c["language_info"]
        assert li["name"] == "rust"
        assert li["file_extension"] == ".rs"
        assert li["mimetype"] == "text/rust"
        assert li["pygments_lexer"] == "rust"
        assert "rust" in str(li["codemirror_mode"])
        banner = c["banner"].lower()
        if has_cuda_device():
            assert "cuda" in banner or "gpu" in banner, c["banner"]
        else:
            # Said once, with the reason (no driver, no device, or NBCUDA_BACKEND=sim).
            assert "ptxsim" in banner and ("no gpu" in banner or "nbcuda_backend" in banner), c["banner"]
        # The lab launcher icon and help links are optional; if present they must be well formed.
        for link in c.get("help_links", []):
            assert link["text"] and link["url"].startswith("http")
    finally:
        stop_kernel(km, kc)


# is_complete ----------------------------------------------------------------------------------

IS_COMPLETE = [
    ("let x = 1;", "complete"),
    ("fn f() -> i32 { 1 }", "complete"),
    ('let s = "a } ( [";', "complete"),  # brackets inside strings do not count
    ("let c = '{';", "complete"),
    ("// unbalanced { in a comment", "complete"),
    ("%launch k[1, 1](x)", "complete"),
    ("fn f() {", "incomplete"),
    ("let v = vec![1, 2,", "incomplete"),
    ('let s = "abc', "incomplete"),
    ("let r = r#\"raw { string", "incomplete"),
    ("/* nested /* comment */", "incomplete"),
    ("struct P {\n    x: i32,", "incomplete"),
    ("}", "invalid"),
    ("let x = (1, 2];", "invalid"),
]


@pytest.mark.parametrize("code,status", IS_COMPLETE)
def test_is_complete(kc, code, status):
    reply = shell_reply(kc, kc.is_complete(code))
    assert reply["content"]["status"] == status, (code, reply["content"])
    if status == "incomplete":
        assert isinstance(reply["content"].get("indent"), str)


# comm_info ------------------------------------------------------------------------------------


def test_comm_info(kc):
    reply = shell_reply(kc, kc.comm_info())
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["comms"] == {}
    reply = shell_reply(kc, kc.comm_info(target_name="jupyter.widget"))
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["comms"] == {}


# history --------------------------------------------------------------------------------------


def history(kc, **kw) -> list:
    reply = shell_reply(kc, kc.history(**kw))
    assert reply["content"]["status"] == "ok", reply["content"]
    return reply["content"]["history"]


def test_history_tail_range_search(kc):
    cells = ["let hist_a = 11;", "let hist_b = hist_a * 2;", "hist_b + 1"]
    counts = []
    for code in cells:
        ex = execute(kc, code)
        assert ex.status == "ok", ex.describe()
        counts.append(ex.reply["content"]["execution_count"])
    assert counts == list(range(counts[0], counts[0] + 3)), counts

    tail = history(kc, hist_access_type="tail", n=3, raw=True, output=False)
    assert [h[2] for h in tail] == cells
    assert [h[1] for h in tail] == counts
    session = tail[0][0]

    # output=True gives (input, output) pairs; the last cell's output is its value.
    tail_out = history(kc, hist_access_type="tail", n=1, raw=True, output=True)
    assert tail_out[0][2][0] == cells[2]
    assert tail_out[0][2][1] == "23"

    rng = history(kc, hist_access_type="range", session=session, start=counts[1], stop=counts[2] + 1, raw=True, output=False)
    assert [(h[1], h[2]) for h in rng] == [(counts[1], cells[1]), (counts[2], cells[2])]

    found = history(kc, hist_access_type="search", pattern="let hist_*", raw=True, output=False)
    assert [h[2] for h in found][-2:] == cells[:2]
    assert history(kc, hist_access_type="search", pattern="no_such_cell_xyz*", raw=True, output=False) == []


def test_history_search_follows_ipython_globs_unique_and_n(kc):
    cells = ["6 * 7", "6 * 8", "6 * 7", "16 * 2"]
    for code in cells:
        assert execute(kc, code).status == "ok"
    found = [h[2] for h in history(kc, hist_access_type="search", pattern="6 *", raw=True, output=False)]
    # The whole entry is matched: `6 *` finds `6 * 7` and `6 * 8`, not `16 * 2`.
    assert found[-3:] == ["6 * 7", "6 * 8", "6 * 7"] and "16 * 2" not in found, found
    one = [h[2] for h in history(kc, hist_access_type="search", pattern="6 * ?", raw=True, output=False, n=1)]
    assert one == ["6 * 7"], one
    uniq = [h[2] for h in history(kc, hist_access_type="search", pattern="6 ** ?", unique=True, raw=True, output=False)]
    assert uniq[-2:] == ["6 * 8", "6 * 7"] and uniq.count("6 * 7") == 1, uniq
    assert [h[2] for h in history(kc, hist_access_type="search", pattern="?6 *", raw=True, output=False)][-1:] == ["16 * 2"]


def test_completion_sees_names_bound_earlier_in_the_same_cell(kc):
    code = "let total_count = 42;\nlet total_sum = 1;\ntotal_c"
    reply = kc.complete(code, len(code), reply=True, timeout=30)["content"]
    assert reply["status"] == "ok", reply
    assert "total_count" in reply["matches"], reply
    assert code[reply["cursor_start"] : reply["cursor_end"]] == "total_c", reply


def test_silent_and_no_history_cells_are_not_recorded(kc):
    marker = "let not_recorded_cell = 5;"
    ex = execute(kc, marker, store_history=False)
    assert ex.status == "ok"
    ex2 = execute(kc, "let silent_cell = 6;", silent=True)
    assert ex2.status == "ok"
    assert ex2.execute_input is None, "silent cells publish no execute_input"
    found = history(kc, hist_access_type="search", pattern="*_cell = *", raw=True, output=False)
    assert found == [], found


def test_execution_count_and_execute_input(kc):
    a = execute(kc, "let count_a = 1;")
    b = execute(kc, "let count_b = 2;")
    assert b.reply["content"]["execution_count"] == a.reply["content"]["execution_count"] + 1
    assert b.execute_input["content"]["code"] == "let count_b = 2;"
    assert b.execute_input["content"]["execution_count"] == b.reply["content"]["execution_count"]
    assert b.busy_idle == ["busy", "idle"]


# shutdown / restart / heartbeat ---------------------------------------------------------------


def test_shutdown_request_with_restart_flag(fresh_kernel):
    km, kc = fresh_kernel
    msg_id = kc.shutdown(restart=True)
    reply = kc.control_channel.get_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["msg_type"] == "shutdown_reply"
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["restart"] is True
    deadline = time.monotonic() + 10
    while km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not km.is_alive(), "the Jupyter kernel process did not exit after shutdown_request"


def test_restart_then_a_cell_runs(fresh_kernel):
    km, kc = fresh_kernel
    first = execute(kc, "let before_restart = 1;", timeout=FIRST_CELL_TIMEOUT)
    assert first.status == "ok", first.describe()
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
    ex = execute(kc, 'println!("after restart");', timeout=FIRST_CELL_TIMEOUT)
    assert ex.status == "ok" and "after restart" in ex.stream(), ex.describe()
    assert ex.reply["content"]["execution_count"] == 1, "a restart starts a new session"
    gone = execute(kc, "before_restart", timeout=CELL_TIMEOUT)
    assert gone.status == "error", "state survived a restart: " + gone.describe()


def folder_size(path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_evcxr_build_folders_are_removed_at_shutdown_and_after_a_kill(tmp_path):
    """evcxr builds Rust cells in a folder of tens of MB. A Jupyter kernel removes its own at
    shutdown; a killed one cannot, so the next Jupyter kernel to start removes it."""
    env = dict(os.environ, TMPDIR=str(tmp_path))
    for name in ("EVCXR_TMPDIR", "XDG_RUNTIME_DIR"):
        env.pop(name, None)
    root = tmp_path / f"nbcuda-scratch-{os.getuid()}"
    km, kc = start_kernel(env)
    try:
        ex = execute(kc, 'println!("built");', timeout=FIRST_CELL_TIMEOUT)
        assert ex.status == "ok" and "built" in ex.stream(), ex.describe()
        folders = list(root.iterdir())
        assert len(folders) == 1, folders
        killed = folders[0]
        size = folder_size(killed / "evcxr")
        assert size > 1_000_000, f"evcxr did not build in the scratch folder ({size} bytes there)"
    finally:
        kc.stop_channels()
        killed_pid = km.provisioner.process.pid
        km.shutdown_kernel(now=True)  # SIGKILL: no clean-up runs
    assert killed.is_dir()

    km, kc = start_kernel(env)
    try:
        assert not killed.exists(), "the folder of the killed Jupyter kernel is still there"
        (live,) = list(root.iterdir())
        # A $TMPDIR this deep is too long for a socket path: nb must still reach the kernel.
        ex = execute(kc, 'nb::put("deep", &[1.5f32, 2.5]).unwrap();', timeout=FIRST_CELL_TIMEOUT)
        assert ex.status == "ok", ex.describe()
        ex = execute(kc, "%print deep")
        assert ex.status == "ok" and "2.5" in ex.stream(), ex.describe()
        pid = km.provisioner.process.pid
    finally:
        stop_kernel(km, kc)  # a shutdown request
    assert list(root.iterdir()) == [], "the Jupyter kernel left its folder after a shutdown"
    others = sorted(p.name for p in tmp_path.iterdir() if p != root)
    assert others == [], f"left in $TMPDIR outside the scratch folders: {others}"
    sockets = list(tmp_path.glob(f"nbcuda-{pid}-*")) + list(Path("/tmp").glob(f"nbcuda-{pid}-*"))
    assert sockets == [], f"the nb socket's folder stayed after a shutdown: {sockets}"
    # The killed Jupyter kernel's socket had to go to /tmp ($TMPDIR is too deep): tidy up.
    for stale in Path("/tmp").glob(f"nbcuda-{killed_pid}-*"):
        shutil.rmtree(stale, ignore_errors=True)


def test_a_scratch_root_others_can_write_to_is_refused_with_a_warning(tmp_path):
    """Another user could make the scratch root first in a shared /tmp: the Jupyter kernel then
    does not use it, says why on stderr (Jupyter's server log), and works on."""
    root = tmp_path / f"nbcuda-scratch-{os.getuid()}"
    root.mkdir()
    root.chmod(0o777)
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("NBCUDA_LOG", None)
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        km, kc = start_kernel(env, stderr=err)
        try:
            ex = execute(kc, "%lsmagic")
            assert ex.status == "ok", ex.describe()
        finally:
            stop_kernel(km, kc)
    text = log.read_text()
    assert "cannot make a scratch folder" in text and "only this user can write" in text, text
    assert list(root.iterdir()) == [], "the Jupyter kernel made a folder in a root others can write to"


def test_temporary_files_and_the_nb_socket_live_in_the_scratch_folder(kc):
    """So that the scratch folder's removal (at shutdown, or by the next Jupyter kernel after a
    kill) takes them too."""
    base = os.environ.get("TMPDIR", "/tmp")
    if len(base) > 40:
        pytest.skip(f"TMPDIR {base} is too deep for the nb socket's path to fit in the scratch folder")
    ex = execute(
        kc,
        'println!("{}", std::env::var("NBCUDA_SOCKET").unwrap()); '
        'println!("{}", std::env::temp_dir().display());',
    )
    assert ex.status == "ok", ex.describe()
    socket, tmp = ex.stream().split()
    root = str(Path(base) / f"nbcuda-scratch-{os.getuid()}") + "/"
    assert socket.startswith(root) and socket.endswith("/nb.sock"), (socket, root)
    assert tmp.startswith(root) and tmp.endswith("/tmp"), (tmp, root)


def test_heartbeat_echoes(kernel):
    km, _ = kernel
    info = km.get_connection_info(session=False)
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.linger = 0
    sock.connect(f"{info['transport']}://{info['ip']}:{info['hb_port']}")
    try:
        for payload in (b"ping", b"\x00\xffbinary", b"x" * 10000):
            sock.send(payload)
            assert sock.poll(2000), "no heartbeat echo within 2 s"
            assert sock.recv() == payload
    finally:
        sock.close()


# stdin ----------------------------------------------------------------------------------------

# evcxr's input protocol (what `evcxr_input::get_string` does), with std only.
INPUT_CELL = (
    'println!("EVCXR_INPUT_REQUEST:Your name? ");\n'
    "let mut line = String::new();\n"
    "std::io::stdin().read_line(&mut line).unwrap();\n"
    'println!("hello <{}>", line.trim());'
)


def test_stdin_input_request(kc):
    msg_id = kc.execute(INPUT_CELL, allow_stdin=True)
    req = kc.get_stdin_msg(timeout=CELL_TIMEOUT)
    assert req["msg_type"] == "input_request"
    assert req["parent_header"]["msg_id"] == msg_id
    assert req["content"]["prompt"] == "Your name? "
    assert req["content"]["password"] is False
    kc.input("Ada")
    ex = collect(kc, msg_id)
    assert ex.status == "ok", ex.describe()
    assert "hello <Ada>" in ex.stream()
    assert "EVCXR_INPUT_REQUEST" not in ex.stream()


def test_no_input_request_when_stdin_not_allowed(kc):
    msg_id = kc.execute(INPUT_CELL, allow_stdin=False)
    ex = collect(kc, msg_id)
    with pytest.raises(Empty):
        kc.get_stdin_msg(timeout=0.5)
    assert ex.status == "ok", ex.describe()
    assert "hello <>" in ex.stream()


# magics ---------------------------------------------------------------------------------------


def test_lsmagic_lists_the_commands(kc):
    ex = execute(kc, "%lsmagic")
    assert ex.status == "ok", ex.describe()
    text = ex.text()
    for name in ("%lsmagic", "%help", "%%cuda", "%launch"):
        assert name in text, f"{name} missing from %lsmagic: {text!r}"


def test_help_names_the_magic_and_its_syntax(kc):
    ex = execute(kc, "%help launch")
    assert ex.status == "ok", ex.describe()
    text = ex.text()
    assert "%launch" in text and "GRID" in text.upper(), text


def test_unknown_magic_suggests_the_nearest(kc):
    ex = execute(kc, "%lauch k[1, 1](x)")
    assert ex.status == "error", ex.describe()
    content = ex.reply["content"]
    message = content["evalue"] + "\n".join(content.get("traceback", []))
    assert "%launch" in message, message
    errors = ex.of_type("error")
    assert len(errors) == 1 and errors[0]["content"]["ename"] == content["ename"]


def test_magic_cells_do_not_wait_for_rust(fresh_kernel):
    """A magic runs in milliseconds even while evcxr is still starting in the background."""
    _, kc = fresh_kernel
    t0 = time.monotonic()
    ex = execute(kc, "%lsmagic", timeout=30)
    took = time.monotonic() - t0
    assert ex.status == "ok", ex.describe()
    # Liveness, 10x the usual bound (benches/responsiveness.py measures it).
    assert took < 20.0, f"%lsmagic took {took:.2f} s on a fresh Jupyter kernel"


# Rust cells -----------------------------------------------------------------------------------


def test_variables_persist_and_last_expression_is_the_result(kc):
    assert execute(kc, "let persist_v = vec![1, 2, 3];").status == "ok"
    ex = execute(kc, "persist_v.iter().sum::<i32>()")
    assert ex.status == "ok", ex.describe()
    assert ex.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "6"


def test_question_mark_error_is_an_error_reply(kc):
    """A `?` that returns an error ends the cell with an error reply (ename `Error`, the error's
    message), shown once on stderr; a cell that only writes to stderr, or prints evcxr's marker
    text inside a longer line, is still ok."""
    bad = random.choice(["12x", "x7", "--3", "9 9"])
    ex = execute(kc, f'let v: i32 = "{bad}".parse()?;\nprintln!("{{v}}");', timeout=CELL_TIMEOUT)
    assert ex.status == "error", ex.describe()
    c = ex.reply["content"]
    assert c["ename"] == "Error" and c["evalue"] == "invalid digit found in string", c
    assert ex.stream("stderr") == "invalid digit found in string\n", ex.describe()
    assert "NBCUDA" not in ex.text()
    ex = execute(kc, 'eprintln!("a note"); println!("EVCXR_ERROR_OCCURRED is text"); 6 * 7',
                 timeout=CELL_TIMEOUT)
    assert ex.status == "ok", ex.describe()
    assert ex.stream("stderr") == "a note\n" and "42" in ex.text(), ex.describe()


def test_compile_error_carries_the_rust_diagnostic(kc):
    ex = execute(kc, 'let n: i32 = "text";')
    assert ex.status == "error", ex.describe()
    text = ex.text()
    assert "mismatched types" in text or "E0308" in text, text


def test_stdout_streams_while_the_cell_runs(kc):
    """The first line arrives before the cell finishes."""
    msg_id = kc.execute(
        'println!("first"); std::thread::sleep(std::time::Duration::from_secs(3)); println!("second");'
    )
    first_at = None
    deadline = time.monotonic() + CELL_TIMEOUT
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=CELL_TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and "first" in msg["content"]["text"] and first_at is None:
            first_at = time.monotonic()
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle_at = time.monotonic()
            break
    assert first_at is not None, "stdout never arrived"
    assert idle_at - first_at > 2.0, "stdout was held back until the cell finished"
    shell_reply(kc, msg_id, timeout=10)
