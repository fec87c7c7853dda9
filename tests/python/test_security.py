"""The wire layer drops what it must not trust: forged or missing signatures are never executed,
and malformed frames, bad JSON and unknown message types never crash the Jupyter kernel.

A raw ZMQ DEALER socket talks to the shell port from the connection file, next to the normal
(properly signed) client that checks the Jupyter kernel's state afterwards.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
import zmq
from jupyter_client.session import Session

from nbkernel import CELL_TIMEOUT, execute

DELIM = b"<IDS|MSG>"


@pytest.fixture
def raw(kernel):
    """A DEALER socket on the shell port, an iopub SUB socket, and the Jupyter kernel's Session."""
    km, kc = kernel
    info = km.get_connection_info(session=False)
    key = info["key"]
    key = key.encode() if isinstance(key, str) else key
    session = Session(key=key, signature_scheme=info["signature_scheme"], username="attacker")
    ctx = zmq.Context.instance()
    shell = ctx.socket(zmq.DEALER)
    shell.linger = 0
    shell.connect(f"{info['transport']}://{info['ip']}:{info['shell_port']}")
    iopub = ctx.socket(zmq.SUB)
    iopub.linger = 0
    iopub.setsockopt(zmq.SUBSCRIBE, b"")
    iopub.connect(f"{info['transport']}://{info['ip']}:{info['iopub_port']}")
    time.sleep(0.5)  # let the subscription reach the publisher
    try:
        yield session, key, shell, iopub, kc
    finally:
        shell.close()
        iopub.close()


def frames(session: Session, msg_type: str, content: dict) -> tuple[list[bytes], str]:
    """[header, parent, metadata, content] of a fresh message, serialised as the kernel expects."""
    msg = session.msg(msg_type, content)
    return [
        json.dumps(msg["header"], default=str).encode(),
        b"{}",
        b"{}",
        json.dumps(content).encode(),
    ], msg["header"]["msg_id"]


def sign(key: bytes, parts: list[bytes]) -> bytes:
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.hexdigest().encode()


def recv_all(sock: zmq.Socket, seconds: float) -> list[list[bytes]]:
    """Every multipart message that arrives within `seconds`."""
    got = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if sock.poll(int(left * 1000)):
            got.append(sock.recv_multipart())
    return got


def assert_alive(kc) -> None:
    msg_id = kc.kernel_info()
    reply = kc.get_shell_msg(timeout=15)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=15)
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["language_info"]["name"] == "rust"


def execution_count(kc) -> int:
    ex = execute(kc, "let _probe = 1;", timeout=CELL_TIMEOUT)
    assert ex.status == "ok", ex.describe()
    return ex.reply["content"]["execution_count"]


FORGED_CODE = 'let forged_nbcuda_marker = 7; println!("FORGED-RAN");'


@pytest.mark.parametrize("how", ["wrong key", "empty signature", "signature of other frames"])
def test_badly_signed_execute_is_dropped_and_never_executed(raw, how):
    session, key, shell, iopub, kc = raw
    before = execution_count(kc)
    parts, msg_id = frames(
        session,
        "execute_request",
        {"code": FORGED_CODE, "silent": False, "store_history": True, "user_expressions": {},
         "allow_stdin": False, "stop_on_error": True},
    )
    if how == "wrong key":
        sig = sign(b"not-the-key", parts)
    elif how == "empty signature":
        sig = b""
    else:
        sig = sign(key, [parts[0], b"{}", b"{}", b'{"code": "1"}'])
    shell.send_multipart([DELIM, sig, *parts])

    # No reply on shell, and nothing published for it on iopub (not even busy).
    assert recv_all(shell, 4.0) == [], "the Jupyter kernel answered a badly signed message"
    for msg in recv_all(iopub, 0.5):
        assert b"FORGED-RAN" not in b"".join(msg)
        assert msg_id.encode() not in b"".join(msg), f"iopub reacted to the dropped message: {msg}"

    # A properly signed cell proves the forged one did not run: its variable does not exist,
    # and the execution counter moved by exactly one per signed cell.
    ex = execute(kc, "forged_nbcuda_marker", timeout=CELL_TIMEOUT)
    assert ex.status == "error", "the forged cell was executed: " + ex.describe()
    assert "forged_nbcuda_marker" in ex.reply["content"]["evalue"] + "".join(
        ex.reply["content"].get("traceback", [])
    ), ex.describe()
    assert "FORGED-RAN" not in ex.text()
    assert execution_count(kc) == before + 2, "a dropped message advanced the execution counter"


def test_properly_signed_raw_message_is_answered(raw):
    """Control for the test above: the same raw path with the right key gets a reply, so the
    silence there is the signature check and not a broken raw socket."""
    session, key, shell, _, _ = raw
    parts, msg_id = frames(session, "kernel_info_request", {})
    shell.send_multipart([DELIM, sign(key, parts), *parts])
    replies = recv_all(shell, 5.0)
    assert len(replies) == 1, replies
    reply = session.deserialize(session.feed_identities(replies[0])[1])
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["msg_type"] == "kernel_info_reply"


MALFORMED = {
    "too few frames": lambda key: [DELIM, b"sig"],
    "no delimiter": lambda key: [b"garbage", b"\x00\xff" * 10],
    "empty multipart": lambda key: [b""],
    "binary garbage": lambda key: [DELIM, b"x" * 64, b"\xff\xfe", b"\x00", b"{", b"]"],
    "bad json header, valid signature": lambda key: [
        DELIM, sign(key, [b"{not json", b"{}", b"{}", b"{}"]), b"{not json", b"{}", b"{}", b"{}"],
    "header not an object, valid signature": lambda key: [
        DELIM, sign(key, [b"[1, 2]", b"{}", b"{}", b"{}"]), b"[1, 2]", b"{}", b"{}", b"{}"],
    "huge frame": lambda key: [DELIM, b"0" * 64, b"{" * 2_000_000, b"{}", b"{}", b"{}"],
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_frames_do_not_crash(raw, case):
    _, key, shell, _, kc = raw
    shell.send_multipart(MALFORMED[case](key))
    time.sleep(0.3)
    assert_alive(kc)


def test_bad_json_content_with_valid_signature(raw):
    session, key, shell, _, kc = raw
    parts, _ = frames(session, "execute_request", {})
    parts[3] = b'{"code": "println!(\\"BADJSON\\")", '  # truncated JSON
    shell.send_multipart([DELIM, sign(key, parts), *parts])
    time.sleep(0.5)
    assert_alive(kc)
    ex = execute(kc, 'println!("still fine");')
    assert ex.status == "ok" and "still fine" in ex.stream(), ex.describe()


@pytest.mark.parametrize(
    "content",
    [{"silent": False}, {"code": 42}, {"code": None, "silent": "yes"}, {"code": ["a"]}],
    ids=["no code", "code is a number", "code null", "code a list"],
)
def test_execute_request_with_wrong_fields(raw, content):
    """Valid signature and JSON, wrong fields: at most one well-formed reply, never a crash."""
    session, key, shell, _, kc = raw
    parts, msg_id = frames(session, "execute_request", content)
    shell.send_multipart([DELIM, sign(key, parts), *parts])
    replies = recv_all(shell, 2.0)
    assert len(replies) <= 1, replies
    for reply in replies:
        msg = session.deserialize(session.feed_identities(reply)[1])
        assert msg["parent_header"]["msg_id"] == msg_id
        assert msg["content"]["status"] in ("ok", "error", "aborted"), msg
    assert_alive(kc)


def test_unknown_message_type(raw):
    session, key, shell, _, kc = raw
    parts, _ = frames(session, "frobnicate_request", {"x": 1})
    shell.send_multipart([DELIM, sign(key, parts), *parts])
    time.sleep(0.5)
    assert_alive(kc)
    ex = execute(kc, "1 + 1")
    assert ex.status == "ok", ex.describe()
    assert ex.of_type("execute_result")[0]["content"]["data"]["text/plain"] == "2"
