"""The workshop image and the isolated room (issue 56), where a Docker daemon answers.

- `bash install/image.sh test`: the image builds (bases from Debian's packages where no registry
  answers), notebook 01 runs inside it with `--network none` and every check cell passes, and
  `--cpus 1` gives ptxsim one worker.
- The isolated room (install/jupyterhub/jupyterhub_docker_config.py) on loopback: three students,
  each in a container of that image, run notebook 01 at once; student A finds none of B's files
  and none of B's processes (and B finds its own: the searches can see); A's cell that allocates
  past the room's memory limit ends with an error that says what happened, A's Jupyter kernel
  keeps working, and B and C, cells run after it, are unaffected.

Skipped with the reason where no Docker daemon answers. Times are printed at the end.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import workshop
from workshop import ROOT, Hub, StudentEnv, notebook_cells, vector_add_checked

IMAGE_SH = ROOT / "install" / "image.sh"
ROOM_CONFIG = ROOT / "install" / "jupyterhub" / "jupyterhub_docker_config.py"
NOTEBOOK_01 = ROOT / "notebooks" / "01-vector-add.ipynb"
# The hub's environment (JupyterHub and DockerSpawner from PyPI), kept between runs.
HUB_ENV = ROOT / "target" / "room-hub"
ROOM_MEMORY = "2G"
TIMES: dict[str, float] = {}


def docker_why_not() -> str:
    """'' where a Docker daemon answers, else why the tests cannot run."""
    if shutil.which("docker") is None:
        return "no docker command (Debian: apt-get install docker.io; then start dockerd)"
    done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return "no Docker daemon answers (`docker info` failed: start dockerd): " + done.stderr.strip()[-300:]
    return ""


@pytest.fixture(scope="module", autouse=True)
def times_table(request):
    yield
    workshop.write_times(request, "workshop image and isolated room, seconds", TIMES)


@pytest.fixture(scope="module")
def docker():
    why = docker_why_not()
    if why:
        pytest.skip(why)


def image_sh(command: str) -> str:
    t = time.monotonic()
    done = subprocess.run(["bash", str(IMAGE_SH), command], capture_output=True, text=True, timeout=3600)
    TIMES[f"install/image.sh {command}"] = time.monotonic() - t
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"install/image.sh {command} failed ({done.returncode}):\n{out[-6000:]}"
    return out


@pytest.mark.timeout(3700)
def test_the_image_runs_notebook_01_offline_and_follows_its_cpu_limit(docker):
    out = image_sh("test")
    # What image.sh's checks printed, in the container: notebook 01 ran and its checks passed,
    # and --cpus 1 gave one worker.
    assert re.search(r"check_notebook: \S*01-vector-add.ipynb: \d+ code cells \(\d+ Rust\) ran and checked", out), out
    assert "ptxsim has 1 worker thread(s), as expected" in out, out
    assert "image.sh: the image passed" in out, out
    size = re.search(r"image size (\d+) MB", out)
    nb01 = re.search(r"notebook 01 in the container\s+(\d+) s", out)
    assert size and nb01, out
    TIMES["notebook 01 in the container (docker run included)"] = float(nb01.group(1))
    print(f"image size {size.group(1)} MB", file=sys.stderr)


def hub_env() -> StudentEnv:
    """A venv with JupyterHub and DockerSpawner (pip), made once under target/."""
    env = StudentEnv(HUB_ENV)
    if not (env.bin / "jupyterhub").exists() or subprocess.run(
        [str(env.python), "-c", "import dockerspawner"], capture_output=True
    ).returncode:
        subprocess.run([sys.executable, "-m", "venv", str(HUB_ENV)], check=True, timeout=120)
        done = subprocess.run(
            [str(env.python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             *workshop.requirement_lines("hub"), "dockerspawner>=13,<15"],
            capture_output=True, text=True, timeout=900,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    return env


def bridge_ip() -> str:
    """The host's address on Docker's default bridge (where the students' containers reach the hub)."""
    done = subprocess.run(
        ["docker", "network", "inspect", "bridge", "-f", "{{json (index .IPAM.Config 0)}}"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    ipam = json.loads(done.stdout)
    return ipam.get("Gateway") or str(next(ipaddress.ip_network(ipam["Subnet"]).hosts()))


def image_tag() -> str:
    version = subprocess.run([str(ROOT / "target/release/nbcuda"), "--version"], capture_output=True, text=True)
    return f"nbcuda-workshop:{version.stdout.split()[1]}"


# A Rust cell that looks for a file by name everywhere in its container's file system.
FIND_FILE = """
fn find(dir: &std::path::Path, name: &str, hits: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if !path.starts_with("/proc") && !path.starts_with("/sys") {
                find(&path, name, hits);
            }
        } else if path.file_name().map_or(false, |n| n == name) {
            hits.push(path.display().to_string());
        }
    }
}
let mut hits = Vec::new();
find(std::path::Path::new("/"), "NAME", &mut hits);
println!("files found: {hits:?}");
"""
# A Rust cell that lists the JupyterHub users of every process it can see.
PROCESS_USERS = """
let mut users = std::collections::BTreeSet::new();
let mut seen = 0;
for e in std::fs::read_dir("/proc")?.flatten() {
    if !e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) { continue; }
    seen += 1;
    if let Ok(env) = std::fs::read(e.path().join("environ")) {
        for kv in env.split(|b| *b == 0) {
            if let Some(user) = kv.strip_prefix(b"JUPYTERHUB_USER=") {
                users.insert(String::from_utf8_lossy(user).to_string());
            }
        }
    }
}
println!("processes seen: {seen}; their users: {users:?}");
"""
# Past the room's memory limit (2G): 6 GiB, written as it is allocated.
MEMORY_HOG = """
let mut hog: Vec<Vec<u8>> = Vec::new();
for _ in 0..48 { hog.push(vec![1u8; 128 << 20]); }
println!("allocated {} MiB", hog.len() * 128);
"""
# After ada's cell: notebook 01's array `a` is still in grace's and linus's kernels.
STILL_THERE = 'let a: nb::Array<f32> = nb::get("a")?;\nprintln!("still: {}", a.len());'


@pytest.mark.timeout(1800)
def test_an_isolated_room_of_three_students(docker, tmp_path):
    chp, why = workshop.find_chp()
    if chp is None:
        pytest.skip(why)
    image = image_tag()
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        image_sh("build")
    env = hub_env()
    suffix = secrets.token_hex(3)
    # Letters and digits only: DockerSpawner escapes other characters in container names.
    ada, grace, linus = students = [f"{n}{suffix}" for n in ("ada", "grace", "linus")]
    hub = Hub(env, tmp_path, workers=1, chp=chp, config=ROOM_CONFIG, hub_ip=bridge_ip(), environ={
        "NBCUDA_ROOM_IMAGE": image, "NBCUDA_ROOM_CPUS": "1", "NBCUDA_ROOM_MEMORY": ROOM_MEMORY,
    })
    cells = notebook_cells(NOTEBOOK_01)
    secret = f"secret-of-{grace}.txt"

    async def scenario():
        await hub.wait_up()
        await hub.create_users(students)
        t = time.monotonic()
        await asyncio.gather(*(hub.start_server(s) for s in students))
        TIMES["room: start three students' containers"] = time.monotonic() - t
        kernels = dict(zip(students, await asyncio.gather(*(hub.start_kernel(s) for s in students))))
        t = time.monotonic()
        runs = await asyncio.gather(*(hub.run_cells(s, kernels[s], cells) for s in students))
        TIMES["room: notebook 01 in three containers at once"] = time.monotonic() - t
        # grace leaves a file in her home; ada and grace look for it, and at the processes.
        wrote = await hub.run_cells(grace, kernels[grace], [f'std::fs::write("/home/jovyan/{secret}", "mine")?;'])
        find = FIND_FILE.replace("NAME", secret)
        looks = {s: await hub.run_cells(s, kernels[s], [find, PROCESS_USERS, "%device"]) for s in (ada, grace)}
        t = time.monotonic()
        # run_cells stops at an error: the next cell is a run of its own.
        hog = await hub.run_cells(ada, kernels[ada], [MEMORY_HOG])
        hog += await hub.run_cells(ada, kernels[ada], ['println!("after: {}", 6 * 7);'])
        TIMES["room: ada's cell past the memory limit, and the next"] = time.monotonic() - t
        after = await asyncio.gather(*(hub.run_cells(s, kernels[s], [STILL_THERE]) for s in (grace, linus)))
        return runs, wrote, looks, hog, after

    t0 = time.monotonic()
    try:
        runs, wrote, looks, hog, after = asyncio.run(scenario())
    except Exception:
        print(hub.log_tail(8000), file=sys.stderr)
        raise
    finally:
        hub.stop()
        names = [f"nbcuda-room-{s}" for s in students]
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True, timeout=120)
        subprocess.run(["docker", "volume", "rm", "-f", *names], capture_output=True, timeout=120)
    TIMES["room: the whole test (hub start to clean-up)"] = time.monotonic() - t0

    for student, results in zip(students, runs):
        assert vector_add_checked(results) == "", (student, [r.__dict__ for r in results])
    assert wrote[0].status == "ok", wrote[0].__dict__
    for s, results in looks.items():
        assert [r.status for r in results] == ["ok"] * 3, (s, [r.__dict__ for r in results])
    # The searches see: grace finds her own file and her own processes.
    assert f'["/home/jovyan/{secret}"]' in looks[grace][0].stdout, looks[grace][0].__dict__
    assert f'{{"{grace}"}}' in looks[grace][1].stdout, looks[grace][1].__dict__
    # ada finds neither grace's file nor any process of anyone but herself.
    assert "files found: []" in looks[ada][0].stdout, looks[ada][0].__dict__
    assert f'their users: {{"{ada}"}}' in looks[ada][1].stdout, looks[ada][1].__dict__
    # The room's CPU limit (1) gives each kernel one ptxsim worker, from the cgroup quota.
    device = "\n".join(looks[ada][2].data)
    assert re.search(r"worker threads\W+1\b", device), device
    # ada's cell over the memory limit: an error that says what happened; her kernel goes on.
    assert hog[0].status == "error", hog[0].__dict__
    message = hog[0].error + hog[0].stderr
    print(f"ada's cell past the memory limit:\n{message}", file=sys.stderr)
    assert "out-of-memory killer" in message and "restarted" in message, message
    assert len(hog) == 2 and hog[1].status == "ok" and "after: 42" in hog[1].stdout, [h.__dict__ for h in hog]
    # grace and linus: their kernels and their variables are there.
    for s, results in zip((grace, linus), after):
        assert results[0].status == "ok" and re.search(r"still: [1-9]\d*", results[0].stdout), (s, results[0].__dict__)
