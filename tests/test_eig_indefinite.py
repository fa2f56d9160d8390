"""eig_indefinite end to end: against numpy.linalg.eigh, the numpy reference,
a high-precision oracle on graded matrices, and its own invariants.

Real data only: the complex Hermitian twins of these tests are in test_complex.py.
Wrong inputs are a table in test_inputs.py; non-convergence, zero and singular
spectra are in test_convergence.py and test_spectrum.py."""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.factorization import j_factorize
from cljacobi.matrices import graded, paper_spectrum, with_spectrum
from cljacobi.reference import eig_from_factor

EPS = np.finfo(np.float64).eps
SIZES = [1, 2, 3, 5, 31, 32, 33, 64, 100, 257]


def _check_decomposition(M, w, U, *, factor=50):
    n = M.shape[0]
    assert w.shape == (n,) and U.shape == (n, n)
    assert np.all(np.diff(w) >= 0), "eigenvalues must be ascending"
    scale = max(n, 1) * EPS * factor
    norm = np.linalg.norm(M) or 1.0
    assert np.linalg.norm(M @ U - U * w) / norm <= scale
    assert np.linalg.norm(np.eye(n) - U.T @ U) <= scale


def _random_with_inertia(n, p, rng):
    """M = Q diag(lambda) Q^T with p positive eigenvalues of magnitude in [0.1, 10]."""
    magnitudes = rng.uniform(0.1, 10.0, n)
    lam = np.concatenate([magnitudes[:p], -magnitudes[p:]])
    return with_spectrum(lam, rng=rng), np.sort(lam)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["indefinite", "positive", "negative", "one-positive"])
def test_against_numpy(n, kind, rng):
    p = {"indefinite": n // 2, "positive": n, "negative": 0, "one-positive": min(1, n)}[kind]
    M, lam = _random_with_inertia(n, p, rng)
    w, U = cljacobi.eig_indefinite(M)
    w_np = np.linalg.eigvalsh(M)
    # Well-conditioned spectra: both solvers are accurate to a few ulps of ||M||.
    assert np.max(np.abs(w - w_np)) <= 50 * n * EPS * np.max(np.abs(w_np))
    assert np.count_nonzero(w > 0) == p
    _check_decomposition(M, w, U)


@pytest.mark.parametrize("n", [5, 32, 33])
def test_against_numpy_reference(n, rng):
    """The device result agrees with the sequential numpy oracle on the same factor."""
    M, _ = _random_with_inertia(n, n // 3, rng)
    factor = j_factorize(M)
    w_ref, _ = eig_from_factor(factor.G, factor.signs)
    w = cljacobi.eig_indefinite(M, eigvals_only=True)
    assert np.max(np.abs(w - w_ref) / np.abs(w_ref)) <= 100 * n * EPS


@pytest.mark.parametrize("n,p", [(2, 1), (3, 2), (33, 16), (64, 0), (64, 64), (100, 40)])
def test_paper_family(n, p, rng):
    """The 2011 paper's spectra, +-[a 1e-5, a]: relative errors of all eigenvalues small."""
    lam = paper_spectrum(n, p=p, rng=rng)
    M = with_spectrum(lam, rng=rng)
    w, U = cljacobi.eig_indefinite(M)
    _check_decomposition(M, w, U)
    # M is rounded to float64, so |lambda| ~ a 1e-5 loses ~ eps * a / (a 1e-5).
    assert np.max(np.abs(w - np.sort(lam)) / np.abs(np.sort(lam))) <= 1e5 * 100 * n * EPS


@pytest.mark.parametrize("n,rank,p", [(5, 3, 1), (33, 10, 5), (64, 1, 1), (64, 40, 40), (100, 50, 0)])
def test_singular(n, rank, p, rng):
    X = rng.standard_normal((n, rank))
    signs = np.array([1.0] * p + [-1.0] * (rank - p))
    M = (X * signs) @ X.T
    M = np.tril(M) + np.tril(M, -1).T
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == rank and info.positive == p
    assert np.count_nonzero(w == 0) == n - rank, "null eigenvalues are exact zeros"
    _check_decomposition(M, w, U, factor=200)
    null = U[:, w == 0]
    assert np.linalg.norm(M @ null) <= 200 * n * EPS * np.linalg.norm(M)


@pytest.mark.parametrize("n,p", [(16, 8), (24, 5), (32, 32), (40, 0)])
def test_graded_relative_accuracy(n, p, rng):
    """M = D A D with D over 2^-30..1: relative errors <= 1e-12 against a
    50-digit oracle, where LAPACK's are orders of magnitude larger."""
    M, _, _ = graded(n, p=p, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    w = cljacobi.eig_indefinite(M, eigvals_only=True)
    ours = np.max(np.abs(w - exact) / np.abs(exact))
    lapack = np.max(np.abs(np.linalg.eigvalsh(M) - exact) / np.abs(exact))
    assert ours <= 1e-12
    assert lapack >= 1e4 * max(ours, EPS), (ours, lapack)


@pytest.mark.parametrize("n,step", [(10, 4), (10, 6), (16, 4), (16, 12)])
def test_graded_definite_matrices_keep_cholesky(n, step, rng):
    """README, "Which factorization runs": positive definite D A D, D = diag(2^(-step k)),
    keeps pivoted Cholesky however wide D is (every pivot clears the rounding-error
    bound of its own entry), with relative accuracy against the high-precision oracle."""
    B = rng.standard_normal((n, n))
    A = B @ B.T / n + np.eye(n)
    d = np.ldexp(1.0, -step * np.arange(n))
    M = d[:, None] * A * d[None, :]
    w, info = cljacobi.eig_indefinite(M, eigvals_only=True, return_info=True,
                                      factorization="host")
    assert info.factorization == "cholesky" and info.positive == n
    exact = eigvalsh_hiprec(M, dps=40 + step * n)  # digits for the spread of M, and more
    assert np.max(np.abs(w - exact) / exact) <= 20 * EPS


@pytest.mark.parametrize("graded", [False, True])
def test_semidefinite_matrix_goes_to_bunch_parlett(graded, rng):
    """A pivot at the rounding level of its entry (a positive semidefinite M of
    rank n - 1) sends M to the rank-revealing Bunch-Parlett factorization."""
    n = 12
    B = rng.standard_normal((n, n - 1))
    M = B @ B.T
    if graded:
        d = np.ldexp(1.0, -5 * np.arange(n))
        M = d[:, None] * M * d[None, :]
    w, info = cljacobi.eig_indefinite(M, eigvals_only=True, return_info=True,
                                      factorization="host")
    assert info.factorization == "bunch-parlett" and info.rank == n - 1
    assert np.abs(w).min() == 0.0


def test_bitwise_reproducible(rng):
    M, _ = _random_with_inertia(70, 30, rng)
    first = cljacobi.eig_indefinite(M)
    for _ in range(2):
        again = cljacobi.eig_indefinite(M)
        assert np.array_equal(first.eigenvalues, again.eigenvalues)
        assert np.array_equal(first.eigenvectors, again.eigenvectors)


@pytest.mark.parametrize("order", ["C", "F"])
def test_input_unchanged_and_layouts(order, rng):
    M, _ = _random_with_inertia(20, 7, rng)
    M = np.asarray(M, order=order)
    before = M.copy()
    w = cljacobi.eig_indefinite(M, eigvals_only=True)
    assert np.array_equal(M, before)
    view = np.zeros((40, 40))
    view[::2, ::2] = M
    w_view = cljacobi.eig_indefinite(view[::2, ::2], eigvals_only=True)
    assert np.array_equal(w, w_view)


def test_info_contents(rng):
    M, _ = _random_with_inertia(33, 10, rng)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.converged and info.sweeps >= 1 and info.rotations > 0
    assert info.rotations == sum(info.rotations_per_sweep)
    assert info.rank == 33 and info.positive == 10
    for phase in ("factorization", "transfer", "sweeps", "sort", "total"):
        assert info.seconds[phase] >= 0
    assert info.rotations_per_sweep[-1] <= info.rotations_per_sweep[0]


def test_dtypes(rng):
    M, _ = _random_with_inertia(6, 3, rng)
    w64 = cljacobi.eig_indefinite(M, eigvals_only=True)
    w32 = cljacobi.eig_indefinite(M.astype(np.float32), eigvals_only=True)
    assert w32.dtype == np.float32
    assert np.allclose(w32, w64, rtol=1e-5, atol=1e-6 * np.abs(w64).max())
    wi = cljacobi.eig_indefinite(np.array([[2, 1], [1, -3]]), eigvals_only=True)
    assert wi.dtype == np.float64
    assert np.allclose(wi, np.linalg.eigvalsh(np.array([[2.0, 1], [1, -3]])))


def test_small_cases():
    assert cljacobi.eig_indefinite(np.empty((0, 0))).eigenvalues.shape == (0,)
    w, U = cljacobi.eig_indefinite(np.array([[-3.5]]))
    assert w.tolist() == [-3.5] and U.tolist() == [[1.0]]

