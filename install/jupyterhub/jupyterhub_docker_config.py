# JupyterHub for a room of students who must not see each other: every student's server is a
# container of the workshop image (install/Dockerfile), started by DockerSpawner, with its own
# CPU and memory limits, its own volume, its own processes and no view of anyone else's.
#
#   bash install/image.sh build                       # the image (nbcuda-workshop:<version>)
#   python -m venv hub && . hub/bin/activate
#   pip install 'jupyterhub>=5,<6' 'dockerspawner>=13,<15'
#   npm install -g configurable-http-proxy
#   NBCUDA_WORKSHOP_PASSWORD=... jupyterhub -f install/jupyterhub/jupyterhub_docker_config.py
#
# Run it as a user who may use Docker (root, or a member of the docker group). Students open
# http://<machine>:8000, log in with any user name and the room's password, and get JupyterLab
# in their own container. tests/python/test_isolated_room.py runs it on loopback.
#
# What each student gets (settings from the environment of the `jupyterhub` process):
#   NBCUDA_WORKSHOP_PASSWORD   the one password of the room (required: DummyAuthenticator)
#   NBCUDA_ROOM_IMAGE          the image (default nbcuda-workshop:latest)
#   NBCUDA_ROOM_CPUS           CPUs per student (default 2); ptxsim's workers follow it (the
#                              container's cgroup quota)
#   NBCUDA_ROOM_MEMORY         memory per student (default 4G; swap none beyond it). A cell that
#                              allocates more is killed by the kernel's OOM killer in that
#                              container only: a Rust cell's evcxr process is restarted and the
#                              cell says so; the other students see nothing
#   NBCUDA_ROOM_PIDS           processes per student (default 512)
#   NBCUDA_ROOM_GPUS           GPUs per student when the NVIDIA runtime is present: "all"
#                              (default), a count, or "none"
#   NBCUDA_WORKSHOP_DIR        the hub's own state (default /tmp/nbcuda-room)
#   NBCUDA_HUB_BIND_URL        default http://0.0.0.0:8000
#   NBCUDA_TEACHER             the admin user name (default "teacher")
#
# Isolation: a container per student (own PID namespace: no other student's processes; own
# file system: a copy of the image that goes with the container, but for the home folder), the
# home folder a Docker volume of that student's alone (nbcuda-room-<name>,
# which starts as a copy of the image's home, notebooks included, and outlives the container),
# all capabilities dropped, no new privileges, limits on CPU, memory and processes. Students
# share the machine's CPUs and GPUs within those limits, and the network (containers can reach
# the internet unless the Docker network forbids it).
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

WORKSHOP_DIR = Path(os.environ.get("NBCUDA_WORKSHOP_DIR", "/tmp/nbcuda-room"))
WORKSHOP_DIR.mkdir(parents=True, exist_ok=True)
TEACHER = os.environ.get("NBCUDA_TEACHER", "teacher")

c.JupyterHub.bind_url = os.environ.get("NBCUDA_HUB_BIND_URL", "http://0.0.0.0:8000")
c.JupyterHub.db_url = f"sqlite:///{WORKSHOP_DIR / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(WORKSHOP_DIR / "jupyterhub_cookie_secret")

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ.get("NBCUDA_WORKSHOP_PASSWORD", "")
if not c.DummyAuthenticator.password:
    sys.exit("jupyterhub_docker_config.py: set NBCUDA_WORKSHOP_PASSWORD, the room's password")
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {TEACHER}


def _docker_bridge_ip() -> str:
    """The host's address on Docker's default bridge: where the containers reach the hub."""
    import docker  # dockerspawner's dependency

    import ipaddress

    try:
        ipam = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]
        # Docker gives the bridge the subnet's first address unless told another.
        return ipam.get("Gateway") or str(next(ipaddress.ip_network(ipam["Subnet"]).hosts()))
    except Exception as e:  # noqa: BLE001 (any failure: say what to set)
        sys.exit(f"jupyterhub_docker_config.py: cannot ask Docker for its bridge's address ({e}); "
                 "is the Docker daemon running and may this user use it?")


def _nvidia_runtime() -> bool:
    import docker

    try:
        return "nvidia" in (docker.from_env().info().get("Runtimes") or {})
    except Exception:  # noqa: BLE001
        return False


# The hub listens where the containers reach it (the bridge's address); the proxy reaches each
# container on a port Docker publishes on 127.0.0.1.
_bridge = _docker_bridge_ip()
c.JupyterHub.hub_bind_url = f"http://{_bridge}:8081"
c.JupyterHub.hub_connect_url = f"http://{_bridge}:8081"

c.JupyterHub.spawner_class = "docker"
c.DockerSpawner.image = os.environ.get("NBCUDA_ROOM_IMAGE", "nbcuda-workshop:latest")
c.DockerSpawner.cmd = ["jupyterhub-singleuser"]
c.DockerSpawner.name_template = "nbcuda-room-{username}"
c.DockerSpawner.remove = True
c.DockerSpawner.use_internal_ip = False
c.DockerSpawner.host_ip = "127.0.0.1"
c.DockerSpawner.notebook_dir = "/home/jovyan"
c.DockerSpawner.volumes = {"nbcuda-room-{username}": "/home/jovyan"}
c.Spawner.default_url = "/lab/tree/nbcuda-notebooks"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 120

c.DockerSpawner.cpu_limit = float(os.environ.get("NBCUDA_ROOM_CPUS", "2"))
c.DockerSpawner.mem_limit = os.environ.get("NBCUDA_ROOM_MEMORY", "4G")
_host_config = {
    # No swap beyond the memory limit: a cell over it is stopped, not slowed to a crawl.
    "memswap_limit": c.DockerSpawner.mem_limit,
    "pids_limit": int(os.environ.get("NBCUDA_ROOM_PIDS", "512")),
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
}
_gpus = os.environ.get("NBCUDA_ROOM_GPUS", "all")
if _gpus != "none" and _nvidia_runtime():
    from docker.types import DeviceRequest

    _host_config["device_requests"] = [
        DeviceRequest(count=-1 if _gpus == "all" else int(_gpus), capabilities=[["gpu"]])
    ]
c.DockerSpawner.extra_host_config = _host_config
