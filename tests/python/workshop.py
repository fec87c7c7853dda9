"""Helpers for the workshop tests and benchmark (issue 37): the wheel of install/wheel.sh, a
fresh Python environment with it installed the way a student's or a hub's would be, and a
JupyterHub on loopback driven through its REST API and its students' kernel websockets.

Imports only the standard library, jupyter_client's pieces that the .venv has, and tornado
(a dependency of jupyter_client's and JupyterHub's), so that benches/workshop.py can use it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "install" / "requirements.txt"
HUB_CONFIG = ROOT / "install" / "jupyterhub" / "jupyterhub_config.py"
# configurable-http-proxy (JupyterHub's proxy, an npm package) when it is not on PATH.
CHP_DIR = ROOT / "target" / "workshop-chp"


def requirement_lines(tag: str) -> list[str]:
    """The requirements of install/requirements.txt marked `# TAG` (`wheel`, `hub`)."""
    lines = []
    for line in REQUIREMENTS.read_text().splitlines():
        spec, _, comment = line.partition("#")
        if spec.strip() and comment.strip() == tag:
            lines.append(spec.strip())
    return lines


def build_wheel(out_dir: Path) -> Path:
    """Runs install/wheel.sh and returns the wheel it wrote."""
    done = subprocess.run(
        ["bash", str(ROOT / "install" / "wheel.sh"), str(out_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"install/wheel.sh failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    wheels = sorted(out_dir.glob("nbcuda-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"install/wheel.sh left {wheels} in {out_dir}:\n{done.stdout}")
    return wheels[0]


@dataclass
class StudentEnv:
    """A fresh venv with the wheel (and optionally JupyterHub and JupyterLab) installed by pip."""

    prefix: Path
    # Seconds: `python -m venv`, then `pip install`.
    venv_s: float = 0.0
    pip_s: float = 0.0

    @property
    def bin(self) -> Path:
        return self.prefix / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"


def make_student_env(prefix: Path, wheel: Path, extra: list[str]) -> StudentEnv:
    """`python -m venv PREFIX && PREFIX/bin/pip install WHEEL EXTRA...`, timed."""
    env = StudentEnv(prefix)
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True, timeout=120)
    env.venv_s = time.monotonic() - t
    t = time.monotonic()
    done = subprocess.run(
        [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel), *extra],
        capture_output=True,
        text=True,
        timeout=900,
    )
    env.pip_s = time.monotonic() - t
    if done.returncode != 0:
        raise RuntimeError(f"pip install {wheel.name} {' '.join(extra)} failed:\n{done.stdout}{done.stderr}")
    return env


def clean_environ(**overrides: str) -> dict[str, str]:
    """This process's environment without what points at the checkout's .venv or its Jupyter
    folders (so a student environment finds only its own kernelspec and NVRTC)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "JUPYTER_PATH", "LD_LIBRARY_PATH", "NBCUDA_NVRTC", "PYTHONPATH")
    }
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT / ".venv"))
    )
    env.update(overrides)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_chp() -> tuple[str | None, str]:
    """configurable-http-proxy: on PATH, else installed with npm under target/ (once).
    Returns (path, "") or (None, why not)."""
    on_path = shutil.which("configurable-http-proxy")
    if on_path:
        return on_path, ""
    local = CHP_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
    if local.exists():
        return str(local), ""
    npm = shutil.which("npm")
    if not npm:
        return None, "JupyterHub's proxy needs Node.js: neither configurable-http-proxy nor npm is on PATH"
    CHP_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CHP_DIR), "configurable-http-proxy@4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0 or not local.exists():
        return None, f"npm install configurable-http-proxy failed: {done.stderr[-2000:]}"
    return str(local), ""


@dataclass
class CellResult:
    code: str
    status: str = ""
    stdout: str = ""
    stderr: str = ""
    # text/plain of execute_result and display_data messages.
    data: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


class Hub:
    """A JupyterHub started from `env` with install/jupyterhub/jupyterhub_config.py, on
    loopback, with a service token that may manage users and use their servers."""

    def __init__(
        self,
        env: StudentEnv,
        workdir: Path,
        workers: int,
        chp: str,
        config: Path = HUB_CONFIG,
        hub_ip: str = "127.0.0.1",
        environ: dict[str, str] | None = None,
    ):
        self.env = env
        self.workdir = workdir
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        hub_url = f"http://{hub_ip}:{free_port()}"
        test_config = workdir / "test_config.py"
        test_config.write_text(
            "c = get_config()\n"
            f"load_subconfig({str(config)!r})\n"
            f"c.JupyterHub.bind_url = {self.url!r}\n"
            f"c.JupyterHub.hub_bind_url = {hub_url!r}\n"
            f"c.JupyterHub.hub_connect_url = {hub_url!r}\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'\n"
            f"c.ConfigurableHTTPProxy.command = [{chp!r}]\n"
            f"c.JupyterHub.pid_file = {str(workdir / 'jupyterhub.pid')!r}\n"
            "c.JupyterHub.services = [{'name': 'workshop-test', 'api_token': "
            f"{self.token!r}}}]\n"
            "c.JupyterHub.load_roles = [{'name': 'workshop-test', 'services': ['workshop-test'], "
            "'scopes': ['admin:users', 'admin:servers', 'access:servers', 'list:users']}]\n"
        )
        self.log_path = workdir / "jupyterhub.log"
        environ = clean_environ(
            NBCUDA_WORKSHOP_DIR=str(workdir / "workshop"),
            NBCUDA_WORKSHOP_PASSWORD=secrets.token_hex(8),
            NBCUDA_WORKERS_PER_STUDENT=str(workers),
            # Each student's kernelspec is the env's own (sys.prefix); no user-level ones.
            JUPYTER_DATA_DIR=str(workdir / "no-user-jupyter"),
            **(environ or {}),
        )
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(env.bin / "jupyterhub"), "-f", str(test_config)],
            cwd=workdir,
            env=environ,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def log_tail(self, n: int = 4000) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-n:]

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        from tornado.httpclient import AsyncHTTPClient, HTTPClientError

        client = AsyncHTTPClient()
        try:
            resp = await client.fetch(
                self.url + path,
                method=method,
                headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
                body=json.dumps(body) if body is not None else (None if method == "GET" else ""),
                allow_nonstandard_methods=True,
                request_timeout=120,
            )
            return resp.code, json.loads(resp.body or b"null")
        except HTTPClientError as e:
            text = e.response.body.decode(errors="replace") if e.response is not None else ""
            return e.code, {"error": text}

    async def wait_up(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                code, _ = await self.request("GET", "/hub/api/")
                if code == 200:
                    return
            except (OSError, ConnectionError):
                pass
            await asyncio.sleep(0.5)
        raise TimeoutError(f"JupyterHub did not answer within {timeout} s:\n{self.log_tail()}")

    async def create_users(self, names: list[str]) -> None:
        code, body = await self.request("POST", "/hub/api/users", {"usernames": names})
        if code != 201:
            raise RuntimeError(f"POST /hub/api/users: {code} {body}")

    async def start_server(self, name: str, timeout: float = 180) -> None:
        code, body = await self.request("POST", f"/hub/api/users/{name}/server")
        if code not in (201, 202):
            raise RuntimeError(f"starting {name}'s server: {code} {body}\n{self.log_tail()}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, user = await self.request("GET", f"/hub/api/users/{name}")
            server = (user.get("servers") or {}).get("", {})
            if server.get("ready"):
                return
            await asyncio.sleep(0.5)
        raise TimeoutError(f"{name}'s server was not ready within {timeout} s:\n{self.log_tail()}")

    async def start_kernel(self, name: str, kernel_name: str = "nbcuda") -> str:
        code, body = await self.request("POST", f"/user/{name}/api/kernels", {"name": kernel_name})
        if code != 201:
            raise RuntimeError(f"starting a {kernel_name} kernel for {name}: {code} {body}")
        return body["id"]

    async def stop_kernel(self, name: str, kernel_id: str) -> None:
        code, body = await self.request("DELETE", f"/user/{name}/api/kernels/{kernel_id}")
        if code != 204:
            raise RuntimeError(f"stopping {name}'s kernel {kernel_id}: {code} {body}")

    async def run_cells(self, name: str, kernel_id: str, cells: list[str], timeout: float = 300) -> list[CellResult]:
        """Runs `cells` one after the other on the kernel's websocket (Jupyter's JSON protocol),
        stopping at the first error."""
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        session = uuid.uuid4().hex
        ws_url = self.url.replace("http://", "ws://") + f"/user/{name}/api/kernels/{kernel_id}/channels?session_id={session}"
        conn = await websocket_connect(
            HTTPRequest(ws_url, headers={"Authorization": f"token {self.token}"}, request_timeout=60)
        )
        results = []
        try:
            for code in cells:
                result = CellResult(code)
                started = time.monotonic()
                msg_id = uuid.uuid4().hex
                conn.write_message(
                    json.dumps(
                        {
                            "header": {
                                "msg_id": msg_id,
                                "msg_type": "execute_request",
                                "username": name,
                                "session": session,
                                "version": "5.3",
                                "date": "",
                            },
                            "parent_header": {},
                            "metadata": {},
                            "channel": "shell",
                            "content": {
                                "code": code,
                                "silent": False,
                                "store_history": True,
                                "user_expressions": {},
                                "allow_stdin": False,
                                "stop_on_error": True,
                            },
                            "buffers": [],
                        }
                    )
                )
                replied = idle = False
                while not (replied and idle):
                    left = timeout - (time.monotonic() - started)
                    if left <= 0:
                        raise TimeoutError(f"{name}: no reply to a cell within {timeout} s: {code[:80]!r}")
                    raw = await asyncio.wait_for(conn.read_message(), left)
                    if raw is None:
                        raise RuntimeError(f"{name}: the kernel websocket closed during {code[:80]!r}")
                    msg = json.loads(raw)
                    if msg.get("parent_header", {}).get("msg_id") != msg_id:
                        continue
                    kind, content = msg["msg_type"], msg["content"]
                    if msg["channel"] == "shell" and kind == "execute_reply":
                        replied = True
                        result.status = content["status"]
                    elif kind == "status" and content["execution_state"] == "idle":
                        idle = True
                    elif kind == "stream":
                        if content["name"] == "stdout":
                            result.stdout += content["text"]
                        else:
                            result.stderr += content["text"]
                    elif kind in ("execute_result", "display_data"):
                        result.data.append(content["data"].get("text/plain", ""))
                    elif kind == "error":
                        result.error = f"{content['ename']}: {content['evalue']}"
                result.seconds = time.monotonic() - started
                results.append(result)
                if result.status != "ok":
                    break
        finally:
            conn.close()
        return results

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()
        # The students' servers start their Jupyter kernels in sessions of their own, which can
        # outlive the hub: stop every process still running from the student env.
        kill_processes_under(self.env.bin)


def kill_processes_under(folder: Path) -> None:
    """SIGKILL every process whose program (argv[0]) lies in `folder`."""
    prefix = str(folder) + os.sep
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
            if argv0.startswith(prefix):
                os.kill(int(entry.name), 9)
        except OSError:
            continue


def notebook_cells(path: Path) -> list[str]:
    """The code cells of a notebook, in order."""
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def vector_add_checked(results: list[CellResult]) -> str:
    """'' when notebook 01 ran to its end and its CPU checks passed, else what went wrong."""
    for r in results:
        if r.status != "ok":
            return f"cell {r.code[:60]!r} failed: {r.error or r.stderr}" + "\nSTDERR of every cell: " + repr([x.stderr for x in results])
    if len(results) != len(notebook_cells(ROOT / "notebooks" / "01-vector-add.ipynb")):
        return f"only {len(results)} cells ran"
    checks = [r for r in results if "elements match the CPU" in r.stdout]
    if not checks or not re.search(r"all \d+ elements match the CPU", checks[0].stdout):
        return "the CPU check cell did not report a match: " + "; ".join(r.stdout for r in results)
    return ""


def write_times(request, title: str, times: dict[str, float]) -> None:
    """Prints `times` (step -> seconds) under `title` at the end of a test module, past pytest's
    output capture."""
    if not times:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        reporter.write_line("")
        reporter.write_line(title)
        for step, secs in times.items():
            reporter.write_line(f"  {step:<58} {secs:>7.1f}")
