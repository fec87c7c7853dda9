"""Fixtures for the nbcuda Jupyter kernel tests: a warmed-up Jupyter kernel per test module,
and a fresh one for start-up, shutdown and restart tests. Helpers live in nbkernel.py."""

from __future__ import annotations

import pytest

from nbkernel import flush, start_kernel, stop_kernel, warm_up


@pytest.fixture(scope="module")
def kernel():
    """(KernelManager, BlockingKernelClient) of a warmed-up Jupyter kernel, one per test module."""
    km, kc = start_kernel()
    try:
        warm_up(kc)
        flush(kc)
        yield km, kc
    finally:
        stop_kernel(km, kc)


@pytest.fixture
def kc(kernel):
    """The module's client, with no stale messages queued."""
    _, client = kernel
    flush(client)
    return client


@pytest.fixture
def fresh_kernel():
    """A Jupyter kernel of its own, not warmed up (for start-up, shutdown and restart tests)."""
    km, kc = start_kernel()
    try:
        yield km, kc
    finally:
        stop_kernel(km, kc)
