"""eig_indefinite(M, B): the definite pencil M x = lambda B x by the implicit
Hari-Zimmermann kernel with the J-weighted scalar product."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hiprec import determined, eigvalsh_pencil_hiprec

import cljacobi

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _pencil(n, dtype, rng, *, rank=None):
    X = rng.standard_normal((n, rank or n))
    if dtype == np.complex128:
        X = X + 1j * rng.standard_normal(X.shape)
    signs = rng.choice([-1.0, 1.0], X.shape[1])
    M = (X * signs) @ X.conj().T
    C = rng.standard_normal((n, n))
    B = C @ C.T + n * np.eye(n)
    return (M + M.conj().T) / 2, B


def _check(M, B, w, X, factor=50):
    n = M.shape[0]
    assert np.all(np.diff(w) >= 0)
    assert np.linalg.norm(X.conj().T @ B @ X - np.eye(n)) <= factor * n * EPS
    scale = np.linalg.norm(M) + np.abs(w).max() * np.linalg.norm(B)
    assert np.linalg.norm(M @ X - B @ X * w) <= factor * n * EPS * scale * np.abs(X).max()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 7, 30])
def test_against_scipy(n, dtype, rng):
    M, B = _pencil(n, dtype, rng)
    M_copy, B_copy = M.copy(), B.copy()
    (w, X), info = cljacobi.eig_indefinite(M, B, return_info=True)
    assert np.array_equal(M, M_copy) and np.array_equal(B, B_copy)
    assert info.converged and X.dtype == dtype
    expected = scipy.linalg.eigh(M, B, eigvals_only=True)
    assert np.max(np.abs(w - expected)) <= 100 * n * EPS * np.abs(expected).max()
    _check(M, B, w, X)
    values = cljacobi.eig_indefinite(M, B, eigvals_only=True)
    assert np.array_equal(values, w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_graded_pencil_keeps_its_small_eigenvalues(dtype, rng):
    """(D M D, D B D) has the eigenvalues of (M, B) for any nonsingular diagonal
    D: graded over 2^-45 (entries over 2^-90) they come out as accurately as
    those of the plain pencil (its eigenvalues spread over four orders)."""
    n = 16
    M, B = _pencil(n, dtype, rng)
    d = 2.0 ** -np.arange(0, 3 * n, 3.0)[:n] * 2.0 ** (n // 2)
    M_d, B_d = d[:, None] * M * d, d[:, None] * B * d
    exact = eigvalsh_pencil_hiprec(M, B)
    w, X = cljacobi.eig_indefinite(M_d, B_d)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    _check(M_d, B_d, w, X)


@pytest.mark.parametrize("dtype", DTYPES)
def test_factors_on_the_device(dtype, rng):
    """factorization="device": M and B factored by the device's complete
    pivoting (on a definite B it takes Cholesky's diagonal pivots), the
    eigenvalues those of the host's factorizations to rounding, a graded
    pencil's small eigenvalues as accurate, repeatable bit for bit."""
    n = 16
    M, B = _pencil(n, dtype, rng)
    d = 2.0 ** -np.arange(0, 3 * n, 3.0)[:n] * 2.0 ** (n // 2)
    M_d, B_d = d[:, None] * M * d, d[:, None] * B * d
    exact = eigvalsh_pencil_hiprec(M, B)
    for pair in ((M, B), (M_d, B_d)):
        (w, X), info = cljacobi.eig_indefinite(*pair, factorization="device", return_info=True)
        assert info.factorization == "bunch-parlett-device" and info.rank == n
        host, host_info = cljacobi.eig_indefinite(*pair, factorization="host", eigvals_only=True,
                                                  return_info=True)
        assert host_info.factorization == "bunch-parlett"
        assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
        assert np.max(np.abs(w - host) / np.abs(host)) <= 1e-12
        _check(*pair, w, X)
        again = cljacobi.eig_indefinite(*pair, factorization="device")
        assert np.array_equal(again[0], w) and np.array_equal(again[1], X)


@pytest.mark.parametrize("seed", [0, 1])
def test_graded_m_with_a_well_conditioned_b(seed):
    """M = D A D graded over 2^-40 (eigenvalues down to 1e-23) and B = I + a
    well-conditioned symmetric part: the eigenvalues are determined by the data
    to a few ulps (checked by perturbing M and B componentwise by 1e-15), and
    cljacobi gets them so; the Cholesky reduction of scipy.linalg.eigh(M, B)
    loses the small ones (relative errors 210 and 140 on these two; cljacobi
    1.6e-15 and 1.9e-15)."""
    rng = np.random.default_rng(seed)
    n = 20
    A = rng.standard_normal((n, n))
    A = A + A.T + 10 * np.diag(rng.choice([-1.0, 1.0], n))
    d = 2.0 ** -np.sort(rng.integers(0, 40, n))
    M = d[:, None] * A * d
    C = rng.standard_normal((n, n))
    B = np.eye(n) + 0.1 * (C @ C.T) / n
    exact, spread_m = determined(lambda X: eigvalsh_pencil_hiprec(X, B, dps=60), M, rng)
    _, spread_b = determined(lambda Y: eigvalsh_pencil_hiprec(M, Y, dps=60), B, rng)
    assert np.abs(exact).min() < 1e-20 and max(spread_m.max(), spread_b.max()) <= 1e-13
    w, X = cljacobi.eig_indefinite(M, B)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-13
    assert np.linalg.norm(X.T @ B @ X - np.eye(n)) <= 50 * n * EPS


@pytest.mark.parametrize("dtype", DTYPES)
def test_against_mpmath(dtype, rng):
    n = 9
    M, B = _pencil(n, dtype, rng)
    exact = eigvalsh_pencil_hiprec(M, B)
    w = cljacobi.eig_indefinite(M, B, eigvals_only=True)
    # |d lambda| <= eps (||M|| + |lambda| ||B||) ||B^-1|| for backward errors of eps
    bound = EPS * (np.linalg.norm(M, 2) + np.abs(exact) * np.linalg.norm(B, 2)) \
        * np.linalg.norm(np.linalg.inv(B), 2)
    assert np.all(np.abs(w - exact) <= 10 * n * bound)


def test_singular_m_is_refused(rng):
    """A singular M is a LinAlgError naming its rank (not supported yet: the
    columns of the zero eigenvalues are rounding noise the sweeps rotate on)."""
    M, B = _pencil(12, np.float64, rng, rank=5)
    with pytest.raises(np.linalg.LinAlgError, match=r"M is singular \(numerical rank 5 < n = 12\)"):
        cljacobi.eig_indefinite(M, B)


def test_bitwise_repeatable(rng):
    M, B = _pencil(20, np.complex128, rng)
    first, second = cljacobi.eig_indefinite(M, B), cljacobi.eig_indefinite(M, B)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


@pytest.mark.parametrize("B,options,error,message", [
    (-np.eye(3), {}, np.linalg.LinAlgError, "B is not positive definite"),
    (np.diag([1.0, -1.0, 1.0]), {}, np.linalg.LinAlgError, "B is not positive definite"),
    (np.eye(4), {}, ValueError, "same shape"),
    (np.triu(np.ones((3, 3))), {}, ValueError, "B is not symmetric"),
    (np.zeros((3, 3)), {}, np.linalg.LinAlgError, "B is the zero matrix"),
    (np.eye(3), {"variant": "bo"}, ValueError, "pointwise kernel only"),
    (np.eye(3), {"block_width": 8}, ValueError, "pointwise kernel only"),
    (-np.eye(3), {"factorization": "device"}, np.linalg.LinAlgError,
     "B is not positive definite"),
    (np.diag([1.0, 1e-30, 1.0]) @ np.ones((3, 3)) @ np.diag([1.0, 1e-30, 1.0]),
     {"factorization": "device"}, np.linalg.LinAlgError, "B is not positive definite"),
    (np.eye(3), {"factorization": "gpu"}, ValueError, "factorization"),
])
def test_wrong_inputs(B, options, error, message):
    M = np.diag([1.0, -2.0, 3.0])
    with pytest.raises(error, match=message):
        cljacobi.eig_indefinite(M, B, **options)


def test_nonconvergence(rng):
    M, B = _pencil(12, np.float64, rng)
    with pytest.raises(cljacobi.ConvergenceError, match=r"eig_indefinite\(M, B\) did not"):
        cljacobi.eig_indefinite(M, B, max_sweeps=1)
    with pytest.warns(cljacobi.ConvergenceWarning):
        (w, _), info = cljacobi.eig_indefinite(M, B, max_sweeps=1, on_nonconvergence="warn",
                                              return_info=True)
    assert not info.converged and info.sweeps == 1 and w.shape == (12,)
