"""eig_indefinite end to end, real symmetric and complex Hermitian: against
numpy.linalg.eigh, the numpy reference, a high-precision oracle on graded and
singular matrices, and its own invariants.

The tests that have a real and a complex case are parametrized by ``dtype``
(scipy's test_decomp.py style) with each dtype's own sizes where they differ;
what only complex input has (kernel layouts, one step against the reference,
unitary diagonal similarity, the definite path) is in test_complex.py.
Wrong inputs are a table in test_inputs.py; non-convergence, zero and singular
spectra are in test_convergence.py and test_spectrum.py."""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi._solve import factors_on_device
from cljacobi.factorization import j_factorize
from cljacobi.host.device import default_queue
from cljacobi.matrices import graded, paper_spectrum, with_spectrum
from cljacobi.reference import eig_from_factor

EPS = np.finfo(np.float64).eps
SIZES = [1, 2, 3, 5, 31, 32, 33, 64, 100, 257]
COMPLEX_SIZES = [1, 2, 5, 33, 64]
R, C = np.float64, np.complex128


def _cases(real, complex_):
    """(dtype, *case) for each real and each complex case: the dtypes' own lists."""
    def as_tuple(case):
        return case if isinstance(case, tuple) else (case,)

    return [(R, *as_tuple(c)) for c in real] + [(C, *as_tuple(c)) for c in complex_]


def _normal(rng, shape, dtype):
    """Standard normal entries; complex ones draw the real, then the imaginary parts."""
    if np.issubdtype(dtype, np.complexfloating):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def _check_decomposition(M, w, U, *, factor=50):
    n = M.shape[0]
    assert w.shape == (n,) and U.shape == (n, n)
    assert w.dtype.kind == "f" and U.dtype.kind == np.asarray(M).dtype.kind
    assert np.all(np.diff(w) >= 0), "eigenvalues must be ascending"
    scale = max(n, 1) * EPS * factor
    norm = np.linalg.norm(M) or 1.0
    assert np.linalg.norm(M @ U - U * w) / norm <= scale
    assert np.linalg.norm(np.eye(n) - U.conj().T @ U) <= scale


def _random_with_inertia(n, p, rng, dtype=R):
    """M = Q diag(lambda) Q^* with p positive eigenvalues of magnitude in [0.1, 10]."""
    magnitudes = rng.uniform(0.1, 10.0, n)
    lam = np.concatenate([magnitudes[:p], -magnitudes[p:]])
    return with_spectrum(lam, rng=rng, dtype=dtype), np.sort(lam)


@pytest.mark.parametrize("dtype,n", _cases(SIZES, COMPLEX_SIZES))
@pytest.mark.parametrize("kind", ["indefinite", "positive", "negative", "one-positive"])
def test_against_numpy(dtype, n, kind, rng):
    p = {"indefinite": n // 2, "positive": n, "negative": 0, "one-positive": min(1, n)}[kind]
    M, _ = _random_with_inertia(n, p, rng, dtype)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    w_np = np.linalg.eigvalsh(M)
    # Well-conditioned spectra: both solvers are accurate to a few ulps of ||M||.
    assert np.max(np.abs(w - w_np)) <= 50 * n * EPS * np.max(np.abs(w_np))
    assert np.count_nonzero(w > 0) == p
    _check_decomposition(M, w, U)
    if n > 1:
        definite = kind in ("positive", "negative")
        # On a GPU from n = 256 on Bunch-Parlett runs on the device, definite
        # M included; on the host definite M take pivoted Cholesky.
        on_device = factors_on_device("auto", default_queue().device, n)
        assert info.factorization == ("bunch-parlett-device" if on_device else
                                      "cholesky" if definite else "bunch-parlett")
    if dtype == C and n <= 33:  # the oracle costs twice as much as the real one
        exact = eigvalsh_hiprec(M)
        assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12


@pytest.mark.parametrize("dtype,n", _cases([5, 32, 33], [5, 32]))
def test_against_numpy_reference(dtype, n, rng):
    """The device result agrees with the sequential numpy oracle on the same factor."""
    M, _ = _random_with_inertia(n, n // 3, rng, dtype)
    factor = j_factorize(M)
    w_ref, _ = eig_from_factor(factor.G, factor.signs)
    w = cljacobi.eig_indefinite(M, eigvals_only=True)
    assert np.max(np.abs(w - w_ref) / np.abs(w_ref)) <= 100 * n * EPS


@pytest.mark.parametrize(
    "dtype,n,p",
    _cases([(2, 1), (3, 2), (33, 16), (64, 0), (64, 64), (100, 40)],
           [(3, 2), (33, 16), (40, 0), (40, 40)]))
def test_paper_family(dtype, n, p, rng):
    """The 2011 paper's spectra, +-[a 1e-5, a]: relative errors of all eigenvalues small."""
    lam = paper_spectrum(n, p=p, rng=rng)
    M = with_spectrum(lam, rng=rng, dtype=dtype)
    w, U = cljacobi.eig_indefinite(M)
    _check_decomposition(M, w, U)
    # M is rounded to float64, so |lambda| ~ a 1e-5 loses ~ eps * a / (a 1e-5).
    assert np.max(np.abs(w - np.sort(lam)) / np.abs(np.sort(lam))) <= 1e5 * 100 * n * EPS


@pytest.mark.parametrize(
    "dtype,n,rank,p",
    _cases([(5, 3, 1), (33, 10, 5), (64, 1, 1), (64, 40, 40), (100, 50, 0)],
           [(5, 3, 1), (33, 10, 5), (40, 25, 25), (40, 20, 0)]))
def test_singular(dtype, n, rank, p, rng):
    X = _normal(rng, (n, rank), dtype)
    signs = np.array([1.0] * p + [-1.0] * (rank - p))
    M = (X * signs) @ X.conj().T
    M = np.tril(M) + np.tril(M, -1).conj().T
    np.fill_diagonal(M, M.diagonal().real)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == rank and info.positive == p
    assert info.factorization == "bunch-parlett"
    assert np.count_nonzero(w == 0) == n - rank, "null eigenvalues are exact zeros"
    _check_decomposition(M, w, U, factor=200)
    null = U[:, w == 0]
    assert np.linalg.norm(M @ null) <= 200 * n * EPS * np.linalg.norm(M)
    if dtype == C and n <= 33:
        # The rank nonzero eigenvalues against the oracle (the other n - rank eigenvalues
        # of the rounded M are rounding noise that the rank decision set to 0).
        exact = eigvalsh_hiprec(M)
        exact = np.sort(exact[np.argsort(-np.abs(exact))[:rank]])
        ours = w[w != 0]
        assert np.max(np.abs(ours - exact) / np.abs(exact)) <= 1e-12


@pytest.mark.parametrize(
    "dtype,n,p",
    _cases([(16, 8), (24, 5), (32, 32), (40, 0)], [(16, 8), (24, 5), (24, 24), (24, 0)]))
def test_graded_relative_accuracy(dtype, n, p, rng):
    """M = D A D (exact) with D over 2^-30..1: relative errors <= 1e-12 against a
    50-digit oracle, where LAPACK's are orders of magnitude larger."""
    M, _, _ = graded(n, p=p, low_exponent=-30, rng=rng, dtype=dtype)
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

@pytest.mark.parametrize("dtype,n,p", [(np.float32, 6, 3), (np.complex64, 9, 4)])
def test_single_precision(dtype, n, p, rng):
    """Single-precision input gives single-precision results close to the double ones."""
    double = np.complex128 if dtype == np.complex64 else np.float64
    M, _ = _random_with_inertia(n, p, rng, double)
    w64, _ = cljacobi.eig_indefinite(M)
    w32, U32 = cljacobi.eig_indefinite(M.astype(dtype))
    assert w32.dtype == np.float32 and U32.dtype == dtype
    assert np.allclose(w32, w64, rtol=1e-5, atol=1e-6 * np.abs(w64).max())
    assert np.linalg.norm(U32.conj().T @ U32 - np.eye(n)) <= 1e-5


def test_dtypes():
    wi = cljacobi.eig_indefinite(np.array([[2, 1], [1, -3]]), eigvals_only=True)
    assert wi.dtype == np.float64
    assert np.allclose(wi, np.linalg.eigvalsh(np.array([[2.0, 1], [1, -3]])))


@pytest.mark.parametrize(
    "dtype,empty_dtype,scalar,pivot",
    [
        (np.float64, np.float64, -3.5, [[0, 1], [1, 0]]),
        # [[0, i], [-i, 0]] has eigenvalues -1, 1: a complex 2x2 pivot.
        (np.complex128, np.complex64, 2.5 + 0j, [[0, 1j], [-1j, 0]]),
    ],
    ids=["real", "complex"],
)
def test_small_cases(dtype, empty_dtype, scalar, pivot):
    """0 x 0 (result dtypes follow the input's), 1 x 1, and a 2 x 2 pivot."""
    w, U = cljacobi.eig_indefinite(np.zeros((0, 0), empty_dtype))
    assert w.shape == (0,) and U.shape == (0, 0)
    assert w.dtype == np.finfo(empty_dtype).dtype and U.dtype == empty_dtype
    w, U = cljacobi.eig_indefinite(np.array([[scalar]], dtype))
    assert w.tolist() == [scalar.real] and U.tolist() == [[1.0]]
    assert w.dtype == np.float64 and U.dtype == dtype
    pivot = np.array(pivot)
    w, U = cljacobi.eig_indefinite(pivot)
    assert np.allclose(w, [-1, 1], rtol=0, atol=4 * EPS)
    assert np.allclose(pivot @ U, U * w, atol=8 * EPS)
