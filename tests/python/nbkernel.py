"""Helpers shared by the nbcuda Jupyter kernel tests (imported by conftest.py and the tests).

Every test talks to the real Jupyter kernel, started through the installed kernelspec
(`nbcuda install --sys-prefix`, done by install/setup.sh) with jupyter_client's KernelManager.
The first Rust cell makes evcxr build its child process (5-10 s, more on a loaded machine), so
each fixture warms the Jupyter kernel up once with a generous timeout before handing it out.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import KernelManager

ROOT = Path(__file__).resolve().parents[2]
KERNEL_NAME = os.environ.get("NBCUDA_KERNEL_NAME", "nbcuda")
# evcxr's first cell builds and starts its child process.
FIRST_CELL_TIMEOUT = float(os.environ.get("NBCUDA_FIRST_CELL_TIMEOUT", "240"))
# Later Rust cells still go through rustc (about 0.5-3 s each; more under load).
CELL_TIMEOUT = float(os.environ.get("NBCUDA_CELL_TIMEOUT", "120"))
STARTUP_TIMEOUT = 60
# What the Jupyter kernel writes to stderr when a Rust cell waits for evcxr to start
# (`rust::STARTING_NOTE`): progress, present or not by timing, so output comparisons drop it.
RUST_STARTING_NOTE = "starting the Rust runtime (evcxr)…\n"


def has_cuda_device() -> bool:
    """Whether the NVIDIA driver reports a CUDA device (then the Jupyter kernel uses the GPU)."""
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            cuda = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    return False


@dataclass
class Execution:
    """Everything one execute_request produced."""

    msg_id: str
    reply: dict[str, Any]
    # iopub messages between busy and idle, excluding status and execute_input.
    outputs: list[dict[str, Any]] = field(default_factory=list)
    execute_input: dict[str, Any] | None = None
    busy_idle: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    def stream(self, name: str = "stdout") -> str:
        return "".join(
            m["content"]["text"]
            for m in self.outputs
            if m["msg_type"] == "stream" and m["content"]["name"] == name
        )

    def of_type(self, msg_type: str) -> list[dict[str, Any]]:
        return [m for m in self.outputs if m["msg_type"] == msg_type]

    def text(self) -> str:
        """All human-readable output: streams, text/plain of results and displays, errors."""
        parts = []
        for m in self.outputs:
            c = m["content"]
            if m["msg_type"] == "stream":
                parts.append(c["text"])
            elif m["msg_type"] in ("execute_result", "display_data"):
                parts.append(c["data"].get("text/plain", ""))
                parts.append(c["data"].get("text/html", ""))
            elif m["msg_type"] == "error":
                parts.append(c["ename"] + ": " + c["evalue"] + "\n" + "\n".join(c["traceback"]))
        return "".join(parts)

    def describe(self) -> str:
        return f"status={self.status} reply={self.reply['content']!r} outputs={self.outputs!r}"


def execute(kc, code: str, timeout: float = CELL_TIMEOUT, **kwargs: Any) -> Execution:
    """Runs one cell and collects its reply and iopub output (through the idle message)."""
    msg_id = kc.execute(code, **kwargs)
    return collect(kc, msg_id, timeout)


def ok(kc, code: str, timeout: float = CELL_TIMEOUT) -> Execution:
    """Runs a cell that must succeed."""
    ex = execute(kc, code, timeout=timeout)
    assert ex.status == "ok", ex.describe()
    return ex


def error(kc, code: str, timeout: float = CELL_TIMEOUT) -> Execution:
    """Runs a cell that must fail."""
    ex = execute(kc, code, timeout=timeout)
    assert ex.status == "error", ex.describe()
    return ex


def collect(kc, msg_id: str, timeout: float = CELL_TIMEOUT) -> Execution:
    deadline = time.monotonic() + timeout
    reply = None
    while reply is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no execute_reply for {msg_id} within {timeout} s")
        try:
            msg = kc.get_shell_msg(timeout=remaining)
        except Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            reply = msg
    ex = Execution(msg_id=msg_id, reply=reply)
    while True:
        remaining = deadline - time.monotonic()
        try:
            msg = kc.get_iopub_msg(timeout=max(remaining, 5))
        except Empty:
            raise TimeoutError(f"no idle status for {msg_id}; got {ex.outputs!r}") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "status":
            ex.busy_idle.append(msg["content"]["execution_state"])
            if msg["content"]["execution_state"] == "idle":
                return ex
        elif kind == "execute_input":
            ex.execute_input = msg
        else:
            ex.outputs.append(msg)


def flush(kc) -> None:
    """Drops every pending shell and iopub message."""
    for get in (kc.get_shell_msg, kc.get_iopub_msg):
        while True:
            try:
                get(timeout=0.2)
            except Empty:
                break


def check_kernelspec() -> None:
    """Fails with a clear message when the kernelspec is missing or starts another binary."""
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        pytest.fail(
            f"no Jupyter kernelspec {KERNEL_NAME!r}: run `bash install/setup.sh` "
            "(it runs `nbcuda install --sys-prefix` for this .venv)",
            pytrace=False,
        )
    exe = Path(spec.argv[0])
    if not exe.is_file():
        pytest.fail(f"kernelspec {KERNEL_NAME!r} starts {exe}, which does not exist", pytrace=False)


def start_kernel(env: dict[str, str] | None = None, **popen: Any) -> tuple[KernelManager, Any]:
    """Start a Jupyter kernel (with `env` as its whole environment, when given; `popen` goes to
    the process's start, e.g. `stderr=`) and connect."""
    check_kernelspec()
    km = KernelManager(kernel_name=KERNEL_NAME)
    if env is not None:
        popen["env"] = env
    km.start_kernel(**popen)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=STARTUP_TIMEOUT)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return km, kc


def stop_kernel(km: KernelManager, kc) -> None:
    kc.stop_channels()
    if km.has_kernel:
        km.shutdown_kernel(now=False)


def warm_up(kc) -> Execution:
    """The first Rust cell: evcxr builds and starts its child. Must succeed."""
    ex = execute(kc, 'println!("warm");', timeout=FIRST_CELL_TIMEOUT)
    assert ex.status == "ok", ex.describe()
    assert "warm" in ex.stream(), ex.describe()
    return ex
