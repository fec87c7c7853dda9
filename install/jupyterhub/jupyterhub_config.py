# JupyterHub for a workshop on one machine: every student gets a JupyterLab with the nbcuda
# Jupyter kernel, running on ptxsim (or on the machine's GPU, if it has one).
#
#   python -m venv hub && . hub/bin/activate
#   pip install nbcuda-*.whl 'jupyterhub>=5,<6' 'jupyterlab>=4.2,<5'
#   nbcuda install --sys-prefix
#   nbcuda warm-up              # builds what Rust cells use into the shared build cache (once)
#   npm install -g configurable-http-proxy
#   NBCUDA_WORKSHOP_PASSWORD=... jupyterhub -f install/jupyterhub/jupyterhub_config.py
#
# Students open http://<machine>:8000, log in with any user name and the workshop password,
# and get their own JupyterLab (their own folder, their own Jupyter kernels).
#
# Settings, from the environment of the `jupyterhub` process:
#   NBCUDA_WORKSHOP_PASSWORD    the one password of the room (required: DummyAuthenticator)
#   NBCUDA_WORKSHOP_DIR         where students' folders and scratch go (default /tmp/nbcuda-workshop)
#   NBCUDA_WORKSHOP_NOTEBOOKS   a folder of notebooks copied into each new student's folder
#                               (default: this checkout's notebooks/, when there is one)
#   NBCUDA_WORKERS_PER_STUDENT  ptxsim worker threads per Jupyter kernel (default 1: a launch of
#                               one student then takes one core, so a room shares the machine
#                               fairly; see README "For a workshop" for the measured figures)
#   NBCUDA_HUB_BIND_URL         default http://0.0.0.0:8000
#   NBCUDA_TEACHER              the admin user name (default "teacher")
#
# The spawner is JupyterHub's SimpleLocalProcessSpawner: every student's server is a process of
# the user that runs `jupyterhub`, with its own home folder. That suits a workshop room whose
# students trust each other (they can read each other's folders and signal each other's
# Jupyter kernels, and share the machine without limits); for strangers use
# jupyterhub_docker_config.py beside this file (a container per student, with limits) or the
# Kubernetes set-up of values.yaml.
import os
import shutil
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

WORKSHOP_DIR = Path(os.environ.get("NBCUDA_WORKSHOP_DIR", "/tmp/nbcuda-workshop"))
CHECKOUT_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = os.environ.get(
    "NBCUDA_WORKSHOP_NOTEBOOKS", str(CHECKOUT_NOTEBOOKS) if CHECKOUT_NOTEBOOKS.is_dir() else ""
)
WORKERS = os.environ.get("NBCUDA_WORKERS_PER_STUDENT", "1")
TEACHER = os.environ.get("NBCUDA_TEACHER", "teacher")
WORKSHOP_DIR.mkdir(parents=True, exist_ok=True)

c.JupyterHub.bind_url = os.environ.get("NBCUDA_HUB_BIND_URL", "http://0.0.0.0:8000")
c.JupyterHub.db_url = f"sqlite:///{WORKSHOP_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(WORKSHOP_DIR / "jupyterhub_cookie_secret")

# One password for the room; any user name logs in (and is created on first login).
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ.get("NBCUDA_WORKSHOP_PASSWORD", "")
if not c.DummyAuthenticator.password:
    sys.exit("jupyterhub_config.py: set NBCUDA_WORKSHOP_PASSWORD, the room's password")
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {TEACHER}

# Students' servers: JupyterLab from the environment that runs the hub (where the wheel and the
# kernelspec are), each in its own folder.
c.JupyterHub.spawner_class = "simple"
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.default_url = "/lab"
if os.geteuid() == 0:
    # A hub run as root (a container's default user) runs the students' servers as root too;
    # Jupyter Server refuses that unless told.
    c.Spawner.args = ["--ServerApp.allow_root=True"]
c.SimpleLocalProcessSpawner.home_dir_template = str(WORKSHOP_DIR / "home" / "{username}")
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 60

# The spawner sets HOME to the student's folder; the Rust toolchain stays the hub's own
# (rustup keeps it under the hub user's ~/.rustup and ~/.cargo).
_home = Path.home()
_cargo_home = os.environ.get("CARGO_HOME", str(_home / ".cargo"))
_rustup_home = os.environ.get("RUSTUP_HOME", str(_home / ".rustup"))
# evcxr's build cache (and the nb crate's sources) stay the hub's too: `nbcuda warm-up`, run once
# by the hub's user, builds nb and its crates there, and no student's first Rust cell rebuilds them.
_cache_home = os.environ.get("XDG_CACHE_HOME", str(_home / ".cache"))


def _scratch(spawner):
    """Each student's scratch folder (evcxr's builds, the Jupyter kernels' temporary files)."""
    return str(WORKSHOP_DIR / "scratch" / spawner.user.name)


c.Spawner.environment = {
    # ptxsim's worker threads per Jupyter kernel (without it: every core the process may use).
    "NBCUDA_PTXSIM_WORKERS": WORKERS,
    "NBCUDA_SCRATCH_DIR": _scratch,
    "CARGO_HOME": _cargo_home,
    "RUSTUP_HOME": _rustup_home,
    "XDG_CACHE_HOME": _cache_home,
    # Every student's cargo uses the hub's crate cache; cargo locks it while it writes.
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(Path(_cargo_home) / "bin"),
                             os.environ.get("PATH", "/usr/bin:/bin")]),
}


def _copy_notebooks(spawner):
    """A new student's folder starts with the workshop's notebooks (never overwritten)."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True)
    if NOTEBOOKS and Path(NOTEBOOKS).is_dir():
        for source in sorted(Path(NOTEBOOKS).iterdir()):
            target = home / source.name
            if target.exists():
                continue
            if source.is_dir():
                shutil.copytree(source, target)
            elif source.suffix == ".ipynb":
                shutil.copy2(source, target)


c.Spawner.pre_spawn_hook = _copy_notebooks
