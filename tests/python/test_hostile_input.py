"""Inputs that used to kill or hang the Jupyter kernel: deeply nested and very long magic lines,
.npy headers nested thousands deep, FIFOs and devices given as files, replayed signed messages,
and nb::exec errors that lost their message. Each must give an `error` reply with a clear
message, leave the kernel answering the next cell, and leave an array made before with its exact
values."""

from __future__ import annotations

import os
import struct
import time

import numpy as np
import pytest
import zmq

from nbkernel import CELL_TIMEOUT, error, execute, ok
from test_security import DELIM, frames, recv_all, sign

KEEP = "keep_hostile"


@pytest.fixture
def kept(kc, tmp_path):
    """An array with known random values, made before the hostile cell; returns a check that
    it still holds exactly those values (saved by the kernel, read back by numpy)."""
    ok(kc, f"%array {KEEP} = rand(1000, f32, seed=7)")
    before = tmp_path / "before.npy"
    ok(kc, f"%save {KEEP} {before}")
    want = np.load(before)
    count = [0]

    def check():
        count[0] += 1
        after = tmp_path / f"after{count[0]}.npy"
        ok(kc, f"%save {KEEP} {after}")
        np.testing.assert_array_equal(np.load(after), want)

    return check


def timed_error(kc, code: str, limit_s: float = 10.0):
    t = time.monotonic()
    ex = error(kc, code)
    took = time.monotonic() - t
    assert took < limit_s, f"{took:.1f} s for {code[:40]!r}"
    return ex


DEEP = {
    "closed parentheses": "%set z = " + "(" * 5000 + "1" + ")" * 5000,
    "unclosed parentheses": "%set z = " + "(" * 5000,
    "ceil": "%set z = " + "ceil(" * 5000 + "1" + ")" * 5000,
    "shape": "%array deep = zeros(" + "(" * 5000 + "4, f32)",
    "launch grid": "%launch k[" + "(" * 5000 + "1, 1](x)",
    ".shape indices": "%set z = " + "x.shape[" * 5000,
}


@pytest.mark.parametrize("case", sorted(DEEP))
def test_deep_nesting_is_a_syntax_error(kc, kept, case):
    ex = timed_error(kc, DEEP[case])
    c = ex.reply["content"]
    assert c["ename"] == "SyntaxError", ex.describe()
    assert "nested too deep: more than 256 levels" in c["evalue"], c["evalue"]
    # The quoted line is a window around the token, not 5000 characters.
    assert all(len(line) < 200 for line in c["evalue"].splitlines()), c["evalue"]
    kept()


def test_a_one_megabyte_sum_gives_its_value(kc, kept):
    terms = 500_000
    ex = ok(kc, "%set z = " + "+".join(["1"] * terms))
    ok(kc, "%array zz = full(1, z, i64)")
    ex = ok(kc, "%print zz")
    assert str(terms) in ex.text(), ex.describe()
    too_long = "%set z = " + "+".join(["1"] * 600_000)
    c = timed_error(kc, too_long).reply["content"]
    assert c["ename"] == "SyntaxError" and "line too long" in c["evalue"], c
    kept()


def npy_v2(header: bytes, data: bytes = b"") -> bytes:
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + data


def test_npy_headers_nested_or_huge_are_refused(kc, kept, tmp_path):
    deep = tmp_path / "deep.npy"
    deep.write_bytes(npy_v2(
        b"{'descr': '<f4', 'fortran_order': False, 'shape': " + b"(" * 5000 + b"2" + b")" * 5000
        + b", }", b"\x00" * 8))
    c = timed_error(kc, f"%load d = {deep}").reply["content"]
    assert c["ename"] == "IOError", c
    assert "deep.npy" in c["evalue"] and "max_header_size" in c["evalue"], c["evalue"]
    nested = tmp_path / "nested.npy"
    nested.write_bytes(npy_v2(
        b"{'descr': '<f4', 'fortran_order': False, 'shape': " + b"(" * 50 + b"2" + b")" * 50
        + b", }", b"\x00" * 8))
    c = timed_error(kc, f"%load d = {nested}").reply["content"]
    assert c["ename"] == "IOError" and "nested.npy" in c["evalue"], c
    assert "nests brackets" in c["evalue"], c["evalue"]
    # A real numpy file still loads, exactly.
    good = tmp_path / "good.npy"
    want = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    np.save(good, want)
    ok(kc, f"%load g = {good}")
    back = tmp_path / "back.npy"
    ok(kc, f"%save g {back}")
    np.testing.assert_array_equal(np.load(back), want)
    kept()


def test_fifos_and_devices_are_refused_at_once(kc, kept, tmp_path):
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    c = timed_error(kc, f"%load f = {fifo}", limit_s=5).reply["content"]
    assert c["ename"] == "IOError" and "FIFO" in c["evalue"], c
    c = timed_error(kc, f"%save {KEEP} {fifo}", limit_s=5).reply["content"]
    assert c["ename"] == "IOError" and "FIFO" in c["evalue"], c
    dev = tmp_path / "zero.png"
    os.symlink("/dev/zero", dev)
    c = timed_error(kc, f"%load f = {dev}", limit_s=5).reply["content"]
    assert c["ename"] == "IOError" and "device" in c["evalue"], c
    kept()


def test_a_replayed_execute_request_runs_once(kernel, kc, kept):
    km, _ = kernel
    info = km.get_connection_info(session=False)
    key = info["key"].encode() if isinstance(info["key"], str) else info["key"]
    from jupyter_client.session import Session

    session = Session(key=key, signature_scheme=info["signature_scheme"], username="replayer")
    shell = zmq.Context.instance().socket(zmq.DEALER)
    shell.linger = 0
    shell.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
    try:
        ok(kc, "%set replays = 0")
        parts, msg_id = frames(session, "execute_request", {
            "code": "%set replays = replays + 1", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        signed = [DELIM, sign(key, parts), *parts]
        shell.send_multipart(signed)
        first = recv_all(shell, 5.0)
        assert len(first) == 1, first
        shell.send_multipart(signed)
        assert recv_all(shell, 3.0) == [], "the replayed message was answered"
    finally:
        shell.close()
    ok(kc, "%array r = full(1, replays, i32)")
    ex = ok(kc, "%print r")
    assert "[1]" in ex.text().replace(" ", ""), ex.describe()
    kept()


def test_nb_exec_errors_carry_their_whole_message(kc, kept):
    ex = error(kc, 'nb::exec("%set z = q_unknown + 1")?;', timeout=CELL_TIMEOUT)
    c = ex.reply["content"]
    lines = c["evalue"].splitlines()
    assert "unknown name 'q_unknown'" in lines[0], c
    assert any("%set z = q_unknown + 1" in line for line in lines), c
    assert lines[-1].strip() == "^" * len("q_unknown"), c
    assert c["ename"] != "Error" or "line 1" in lines[0], c
    kept()
