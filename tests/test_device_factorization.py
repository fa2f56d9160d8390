"""Bunch-Parlett complete pivoting on the device against the host version."""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.factorization import j_factorize
from cljacobi.host.factorization import j_factorize_device
from cljacobi.matrices import graded

EPS = np.finfo(np.float64).eps


def _cases(rng):
    yield "2x2 antidiagonal", np.array([[0.0, 1.0], [1.0, 0.0]])
    yield "zero", np.zeros((5, 5))
    for n in (1, 3, 16, 17, 33, 70):
        X = rng.standard_normal((n, n))
        yield f"random {n}", X + X.T
    zero_diagonal = rng.standard_normal((20, 20))
    zero_diagonal = zero_diagonal + zero_diagonal.T
    np.fill_diagonal(zero_diagonal, 0.0)
    yield "zero diagonal (2x2 pivots)", zero_diagonal
    X = rng.standard_normal((40, 9))
    yield "rank 9 of 40", (X * np.array([1, -1, 1, -1, 1, 1, -1, 1, -1])) @ X.T
    yield "graded", graded(36, p=15, rng=rng)[0]


def test_same_factor_as_host(queue, rng):
    for label, M in _cases(rng):
        device = j_factorize_device(M, queue)
        host = j_factorize(M)
        assert device.G.shape == host.G.shape, label
        assert device.p == host.p and np.array_equal(device.signs, host.signs), label
        # Same pivots: the factors agree to rounding (fused multiply-adds differ).
        scale = max(np.abs(host.G).max(initial=0.0), 1e-300)
        assert np.abs(device.G - host.G).max(initial=0.0) <= 1e3 * EPS * scale, label
        J = device.signs.astype(float)
        residual = np.linalg.norm((device.G * J) @ device.G.T - M)
        assert residual <= 10 * M.shape[0] * EPS * max(np.linalg.norm(M), 1e-300), label


def test_reproducible(queue, rng):
    X = rng.standard_normal((50, 50))
    first = j_factorize_device(X + X.T, queue)
    again = j_factorize_device(X + X.T, queue)
    assert np.array_equal(first.G, again.G)


@pytest.mark.parametrize("p", [0, 9, 17, 24])
def test_eig_with_device_factorization(rng, p):
    M, _, _ = graded(24, p=p, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    # Definite matrices take pivoted Cholesky on the host whatever `factorization` says.
    assert info.factorization == ("cholesky" if p in (0, 24) else "bunch-parlett-device")
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(U.T @ U - np.eye(24)) <= 100 * 24 * EPS


def test_factorization_option():
    with pytest.raises(ValueError, match="factorization must be one of"):
        cljacobi.eig_indefinite(np.eye(3), factorization="gpu")


@pytest.mark.parametrize("variant", ["pointwise", "bo"])
def test_factor_stays_on_device(rng, variant):
    """Full rank: G goes from the factorization into the (blocked) sweeps
    without leaving the device, with the same accuracy as through the host."""
    M, _, _ = graded(40, p=17, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    (w, U), info = cljacobi.eig_indefinite(
        M, factorization="device", variant=variant, block_width=8, return_info=True)
    assert info.factorization == "bunch-parlett-device" and info.rank == 40
    assert info.variant == variant
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(U.T @ U - np.eye(40)) <= 100 * 40 * EPS
    w_host = cljacobi.eig_indefinite(M, factorization="host", variant=variant, block_width=8,
                                     eigvals_only=True)
    assert np.max(np.abs(w - w_host) / np.abs(exact)) <= 1e-12


def test_rank_deficient_factor_through_host(rng):
    """A rank-deficient G is shortened by QR on the host; the zero eigenvalues stay exact."""
    X = rng.standard_normal((30, 7))
    M = (X * np.array([1, -1, 1, -1, 1, 1, -1])) @ X.T
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.rank == 7 and np.count_nonzero(w == 0) == 23
    reference = np.linalg.eigvalsh(M)
    assert np.max(np.abs(w - reference)) <= 1e-12 * np.abs(reference).max()
    assert np.linalg.norm(M @ U - U * w) <= 1e-12 * np.linalg.norm(M)
