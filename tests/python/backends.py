"""Fixtures shared by the test modules that run every case on each backend: `kc`, a Jupyter
kernel per backend (ptxsim, and the GPU where one is present; `kc.nbcuda_backend` says which),
and `rng`, a NumPy generator seeded by the test's name. A module takes them with
`from backends import kc, rng  # noqa: F401` (pytest finds fixtures in the module's names)."""

from __future__ import annotations

import numpy as np
import pytest

from nbkernel import has_cuda_device, ok, start_kernel, stop_kernel


@pytest.fixture(scope="module", params=["sim", "gpu"])
def kc(request):
    """A Jupyter kernel on ptxsim, and one on the GPU backend where a GPU is present."""
    if request.param == "gpu" and not has_cuda_device():
        pytest.skip("no CUDA GPU on this machine: the GPU backend's run of these tests is skipped")
    km, client = start_kernel()
    try:
        ok(client, f"%backend {request.param}")
        client.nbcuda_backend = request.param
        yield client
    finally:
        stop_kernel(km, client)


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % 2**32)
