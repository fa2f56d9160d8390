"""The host helpers that turn the sweeps' columns into singular vectors
(cljacobi._solve.unit_columns and complete): the quotients of every column by
its norm, bitwise, whichever path takes them, and orthonormal completions."""

from __future__ import annotations

import numpy as np
import pytest

from cljacobi import _threads
from cljacobi._solve import complete, unit_columns


@pytest.fixture(params=[1, 4], ids=lambda t: f"{t}cpus", autouse=True)
def threads(request, monkeypatch):
    monkeypatch.setattr(_threads, "THREADED_MIN_ELEMENTS", 1)
    monkeypatch.setattr(_threads, "usable_cpus", lambda: request.param)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_unit_columns_are_the_quotients(rng, order, dtype):
    G = rng.standard_normal((9, 6)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        G = G + 1j * rng.standard_normal((9, 6))
    G = np.asarray(G, order=order)
    norms = np.linalg.norm(G, axis=0)
    U = unit_columns(G, norms, None, 6)
    for j in range(6):  # every entry is g_ij / norm_j, rounded once
        assert np.array_equal(U[:, j], G[:, j] / norms[j])
    Q = np.linalg.qr(rng.standard_normal((12, 9)))[0].astype(dtype)
    assert np.array_equal(unit_columns(G, norms, Q, 6), Q @ U)
    # a zero norm: that column is completed, the others are the same quotients
    H = G.copy()
    H[:, 2] = 0
    norms[2] = 0
    U0 = unit_columns(H, norms, None, 6)
    for j in (0, 1, 3, 4, 5):
        assert np.array_equal(U0[:, j], U[:, j])
    assert abs(np.linalg.norm(U0[:, 2]) - 1) < 1e-14
    assert np.abs(U0[:, 2].conj() @ U0[:, [0, 1, 3, 4, 5]]).max() < 1e-14


def test_complete(rng):
    U = np.linalg.qr(rng.standard_normal((8, 5)))[0]
    assert complete(U, np.ones(5, bool), 5) is U  # nothing to complete
    full = complete(U, np.ones(5, bool), 8)
    assert np.array_equal(full[:, :5], U)
    assert np.allclose(full.T @ full, np.eye(8), atol=1e-14)
    valid = np.array([True, False, True, True, False])
    partial = complete(U, valid, 5)
    assert np.array_equal(partial[:, valid], U[:, valid])
    assert np.allclose(partial.T @ partial, np.eye(5), atol=1e-14)
