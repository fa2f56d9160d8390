"""Rank and spectrum: exactly and nearly singular, zero, all eigenvalues equal,
tight clusters, repeated eigenvalues; residual and orthogonality in every case."""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi._solve import orthogonal_complement
from cljacobi.matrices import with_spectrum

EPS = np.finfo(np.float64).eps


def _check(M, w, U, factor=100, scale=1.0):
    n = M.shape[0]
    M, w = M / scale, w / scale  # keep the test's own norms in range
    assert np.all(np.diff(w) >= 0)
    norm = np.linalg.norm(M) or 1.0
    assert np.linalg.norm(M @ U - U * w) / norm <= factor * n * EPS
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= factor * n * EPS


@pytest.mark.parametrize("factorization", ["host", "device"])
@pytest.mark.parametrize(
    "n,rank,p", [(6, 1, 1), (6, 1, 0), (9, 8, 4), (20, 7, 3), (33, 16, 16), (40, 39, 0)]
)
def test_exactly_singular(n, rank, p, factorization, rng):
    """Integer factors make M exactly of rank r: n - r exact zeros, null space
    orthonormal; the n x r factor is swept as it is, wherever it was made."""
    X = rng.integers(-3, 4, size=(n, rank)).astype(float)
    while np.linalg.matrix_rank(X) < rank:
        X = rng.integers(-3, 4, size=(n, rank)).astype(float)
    signs = np.array([1.0] * p + [-1.0] * (rank - p))
    M = (X * signs) @ X.T  # small integers: exact
    (w, U), info = cljacobi.eig_indefinite(M, factorization=factorization, return_info=True)
    assert info.rank == rank and info.positive == p
    assert np.count_nonzero(w == 0) == n - rank
    assert np.count_nonzero(w > 0) == p
    _check(M, w, U)
    null = U[:, w == 0]
    assert np.linalg.norm(null.T @ U[:, w != 0]) <= 100 * n * EPS
    assert np.linalg.norm(M @ null) <= 100 * n * EPS * np.linalg.norm(M)
    exact = eigvalsh_hiprec(M)  # its n - r zeros come out as ~1e-50
    assert np.max(np.abs(w - exact)) <= 100 * n * EPS * np.abs(exact).max()


@pytest.mark.parametrize("delta", [1e-8, 1e-13])
def test_nearly_singular(delta, rng):
    """Eigenvalues delta * [1, 2] beside ones of size 1..10: kept, relatively accurate."""
    n = 12
    lam = np.concatenate([rng.uniform(1, 10, 5), -rng.uniform(1, 10, 5), [delta, -2 * delta]])
    M = with_spectrum(lam, rng=rng)
    exact = eigvalsh_hiprec(M)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == n and np.count_nonzero(w == 0) == 0
    # Small eigenvalues of a non-graded M are determined to eps ||M|| only.
    assert np.max(np.abs(w - exact)) <= 100 * n * EPS * np.abs(exact).max()
    _check(M, w, U)


@pytest.mark.parametrize("n", [2, 4, 7, 32])
def test_zero_matrix(n):
    w, U = cljacobi.eig_indefinite(np.zeros((n, n)))
    assert np.array_equal(w, np.zeros(n)) and np.array_equal(U, np.eye(n))


@pytest.mark.parametrize("c", [1.0, -3.0, 2.0**-900, 2.0**900])
def test_all_eigenvalues_equal(c, rng):
    n = 17
    w, U = cljacobi.eig_indefinite(c * np.eye(n))
    # c = j ||g||^2 with ||g|| = sqrt|c| rounded: within 2 ulps.
    assert np.max(np.abs(w - c)) <= 4 * EPS * abs(c)
    assert np.array_equal(U, np.eye(n))
    # Q (cI) Q^T in floating point: a multiple of I up to rounding.
    M = with_spectrum(np.full(n, c), rng=rng)
    w, U = cljacobi.eig_indefinite(M)
    assert np.max(np.abs(w - c)) <= 100 * n * EPS * abs(c)
    _check(M, w, U, scale=abs(c))


@pytest.mark.parametrize("n", [8, 33])
def test_plus_minus_equal(n, rng):
    """Eigenvalues +-c only: every hyperbolic pair is a candidate for breakdown."""
    lam = np.array([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    M = with_spectrum(lam, rng=rng)
    w, U = cljacobi.eig_indefinite(M)
    assert np.max(np.abs(w - np.sort(lam))) <= 100 * n * EPS
    _check(M, w, U)


@pytest.mark.parametrize("gap", [1e-10, 1e-14])
def test_tight_clusters(gap, rng):
    n = 20
    lam = np.concatenate([1 + gap * np.arange(6), -2 - gap * np.arange(6), rng.uniform(-5, 5, 8)])
    M = with_spectrum(lam, rng=rng)
    exact = eigvalsh_hiprec(M)
    w, U = cljacobi.eig_indefinite(M)
    assert np.max(np.abs(w - exact)) <= 100 * n * EPS * np.abs(exact).max()
    _check(M, w, U)


def test_repeated_eigenvalues(rng):
    lam = np.array([1, 1, 1, -2, -2, 3, 3, 3, 3, -0.5, 7, -2.0])
    M = with_spectrum(lam, rng=rng)
    w, U = cljacobi.eig_indefinite(M)
    assert np.max(np.abs(w - np.sort(lam))) <= 200 * EPS * 7
    _check(M, w, U)
    # Exactly repeated and exactly orthogonal: a signed permutation similarity.
    P = np.eye(12)[rng.permutation(12)] * rng.choice([-1.0, 1.0], 12)
    M = P @ np.diag(lam) @ P.T
    w, U = cljacobi.eig_indefinite(M)
    assert np.max(np.abs(w - np.sort(lam)) / np.abs(np.sort(lam))) <= 4 * EPS
    # The eigenvectors are the signed unit vectors themselves.
    assert set(np.abs(U).ravel().tolist()) <= {0.0, 1.0}
    assert np.array_equal(np.abs(U).sum(axis=0), np.ones(12))
    _check(M, w, U, factor=1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("m,r", [(7, 0), (7, 1), (30, 12), (40, 39)])
def test_orthogonal_complement(m, r, dtype, rng):
    """The complement of the columns of any full-rank factor: orthonormal,
    orthogonal to its range, as many columns as asked for."""
    G = rng.standard_normal((m, r)) * np.logspace(0, -12, r)  # graded columns
    if dtype == np.complex128:
        G = G + 1j * rng.standard_normal((m, r)) * np.logspace(0, -12, r)
    Q = np.linalg.qr(G)[0]
    for count in {m - r, (m - r) // 2}:
        N = orthogonal_complement(G, count)
        assert N.shape == (m, count) and N.dtype == dtype
        assert np.linalg.norm(N.conj().T @ N - np.eye(count)) <= 10 * m * EPS
        assert np.linalg.norm(Q.conj().T @ N) <= 10 * m * EPS


def test_orthogonal_complement_of_unit_columns():
    """A reflector that is the identity (tau = 0: the column is a unit vector
    already) makes the compact form singular; the explicit Q is taken then."""
    U = np.eye(6)[:, [0, 2]]
    N = orthogonal_complement(U, 4)
    assert np.linalg.norm(N.T @ N - np.eye(4)) <= 10 * EPS
    assert np.linalg.norm(U.T @ N) <= 10 * EPS
