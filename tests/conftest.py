"""Shared fixtures: the device under test is the one CLJACOBI_DEVICE names."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from cljacobi.host.device import default_queue


@pytest.fixture(scope="session")
def queue():
    return default_queue()


@pytest.fixture
def rng(request):
    """A generator seeded by the test's name: reproducible, independent per test.

    crc32, not hash(): str hashes are salted per process (PYTHONHASHSEED), which
    made every run draw different matrices.
    """
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def pytest_report_header(config):
    q = default_queue()
    return f"cljacobi device: {q.device.name.strip()} [{q.device.platform.name.strip()}]"
