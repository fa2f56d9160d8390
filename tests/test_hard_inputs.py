"""Hard inputs for svd, hsvd and eig_indefinite, against a high-precision oracle.

Each family asks for the accuracy the data determine, made explicit: the
oracle (:mod:`hiprec`, adaptive precision) is run on the matrix and on copies
whose entries are perturbed componentwise by up to 1e-15 relatively, and the
spread of those references, per value, is what the data fix (``spread``).  A
method with a componentwise backward error of about ``n eps`` per entry (a
small multiple of the 1e-15 perturbation) is held to ``n * spread``
(:func:`_assert_determined`); wherever no known method reaches that level,
the test says what it asks instead and why.

Families:

* range: singular values over 1e-300 .. 1e300 (the exact power-of-two
  scaling of ``hsvd`` shared by ``svd``);
* order: row- and column-graded matrices in random order, tall and wide
  (row sorting and column pivoting in the QR of ``cljacobi.shortening``);
* Kahan's matrix, against LAPACK's ``dgejsv`` (the ``xGEJSV`` preconditioner:
  column-pivoted QR, Jacobi on ``R^*``);
* sweeps on graded singular values (the same preconditioner).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg.lapack
from hiprec import (
    determined,
    eigvalsh_hiprec,
    hyperbolic_eigenvalues_hiprec,
    singular_values_hiprec,
)

import cljacobi
from cljacobi.matrices import column_graded, kahan, with_singular_values

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]
#: Where svd's QR runs (LAPACK on the host, or qr.cl.mako on the device).
QR_FACTORIZATIONS = ["host", "device"]


def _relative_errors(computed: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(computed - exact) / np.abs(exact)


def _assert_determined(computed, exact, spread, size, factor=1.0):
    """Every value within ``factor * size * max(spread, eps)`` of the oracle, relatively."""
    errors = _relative_errors(computed, exact)
    allowed = factor * size * np.maximum(spread, EPS)
    worst = int(np.argmax(errors / allowed))
    assert np.all(errors <= allowed), (
        f"value {worst}: relative error {errors[worst]:.2e}, the data determine it to "
        f"{spread[worst]:.2e} (allowed {allowed[worst]:.2e})"
    )


def _by_magnitude(values: np.ndarray) -> np.ndarray:
    return np.array(sorted(values, key=abs, reverse=True))


def _hyperbolic_eigenvalues(S: np.ndarray, J: np.ndarray) -> np.ndarray:
    """``J S^2`` (the eigenvalues of ``G J G^*``) by decreasing magnitude."""
    return _by_magnitude(J * S**2)


def _check_svd(A, U, S, Vh):
    m, n = A.shape
    tol = 100 * max(m, n) * EPS
    # A and S scaled by 2^-e, max|A| ~ 1: the norms neither overflow nor underflow.
    e = int(np.frexp(np.abs(A).max())[1])
    scaled = np.ldexp(A.real, -e) + (1j * np.ldexp(A.imag, -e) if np.iscomplexobj(A) else 0)
    residual = (U * np.ldexp(S, -e)) @ Vh - scaled
    assert np.linalg.norm(residual) <= tol * np.linalg.norm(scaled)
    assert np.linalg.norm(U.conj().T @ U - np.eye(U.shape[1])) <= tol
    assert np.linalg.norm(Vh @ Vh.conj().T - np.eye(Vh.shape[0])) <= tol


# ----------------------------------------------------------------- range


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "diagonal",
    [[1e300, 1.0], [1.0, 1e-160], [1e-300, 3e-10, 1.0], [1e150, 1e-150], [3e-310, 1e-320]],
)
@pytest.mark.parametrize("factorization", QR_FACTORIZATIONS)
def test_svd_diagonal_over_the_range(diagonal, dtype, factorization, rng):
    """One global scaling to max|A| ~ 1 turned 1.0 beside 1e300 into 0 and
    1e-160 beside 1 into a subnormal with five correct digits.  Subnormal data
    give their subnormal singular values back unchanged."""
    n = len(diagonal)
    phases = np.exp(2j * np.pi * rng.uniform(size=n)) if dtype is np.complex128 else 1.0
    A = np.diag(np.array(diagonal) * phases).astype(dtype)
    exact = np.sort(np.abs(np.diag(A)))[::-1]
    U, S, Vh = cljacobi.svd(A, factorization=factorization)
    assert np.all(_relative_errors(S, exact) <= 2 * EPS)
    _check_svd(A, U, S, Vh)
    S_h, _ = cljacobi.hsvd(A, np.ones(n), compute_uv=False)
    assert np.all(_relative_errors(S_h, exact) <= 2 * EPS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(12, 8), (8, 12)])
@pytest.mark.parametrize("low_exponent", [-664, -960])
@pytest.mark.parametrize("factorization", QR_FACTORIZATIONS)
def test_svd_graded_down_to_1e_minus_289(shape, low_exponent, dtype, factorization, rng):
    """Columns graded 1 .. 2^-664 (1e-200) and 2^-960 (1e-289): the squared norms of
    the small columns underflowed and the sweeps never converged."""
    A = column_graded(*shape, low_exponent=low_exponent, rng=rng, dtype=dtype)
    exact, spread = determined(singular_values_hiprec, A, rng)
    U, S, Vh = cljacobi.svd(A, factorization=factorization)
    _assert_determined(S, exact, spread, max(shape))
    _check_svd(A, U, S, Vh)


# Singular values 1e600 apart (beyond what float64 holds at once) are a LinAlgError:
# rows of the svd and hsvd wrong-input tables in test_inputs.py.


# ----------------------------------------------------------------- row and column order


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("shape", [(30, 50), (50, 30), (24, 40), (40, 16)])
@pytest.mark.parametrize("factorization", QR_FACTORIZATIONS)
def test_svd_graded_in_random_order(shape, seed, dtype, factorization):
    """A = B D (cond(B) = 7, D from 1 to 2^-100 in random order) and its transpose, the
    row-graded D B^T: the QR without row sorting gave relative errors of 5 to 20,
    and sorting the columns first changed the answer."""
    rng = np.random.default_rng(seed)
    m, n = shape
    A = column_graded(m, n, low_exponent=-100, rng=rng, dtype=dtype)
    exact, spread = determined(singular_values_hiprec, A, rng)
    for matrix in (A, A[rng.permutation(m)][:, rng.permutation(n)]):
        U, S, Vh = cljacobi.svd(matrix, factorization=factorization)
        _assert_determined(S, exact, spread, max(shape))
        _check_svd(matrix, U, S, Vh)
    row_graded = A.T.copy()
    _assert_determined(cljacobi.svd(row_graded, compute_uv=False, factorization=factorization),
                       exact, spread, max(shape))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("shape", [(50, 30), (40, 24)])
def test_hsvd_row_graded_tall(shape, seed, dtype):
    """G = D B (rows graded 1 .. 2^-100 in random order, cond(B) = 7): the plain QR
    that shortened G gave relative errors of J S^2 up to 1e4, and permuting the
    rows of G changed S by 57x.

    The hyperbolic sweeps themselves stay 10-20 n times above the spread on
    row-graded factors, square ones too (they are accurate for column scaling):
    held to ``30 n * spread``.
    """
    rng = np.random.default_rng(seed)
    m, n = shape
    G = column_graded(n, m, low_exponent=-100, rng=rng, dtype=dtype).T.copy()
    J = np.where(rng.permutation(n) < n // 2, 1, -1)
    exact, spread = determined(lambda X: hyperbolic_eigenvalues_hiprec(X, J), G, rng)
    results = [cljacobi.hsvd(G, J, return_info=True), cljacobi.hsvd(G[rng.permutation(m)], J)]
    (U, S, Vh, J_S), info = results[0]
    assert info.factorization == "qr"
    _assert_determined(_hyperbolic_eigenvalues(S, J_S), exact, spread, n, factor=30)
    # A row permutation of G only permutes the rows of U.
    assert np.array_equal(results[1].S, S) and np.array_equal(results[1].J, J_S)
    tol = 100 * m * EPS
    column_errors = np.linalg.norm((U * S) @ Vh - G, axis=0) / np.linalg.norm(G, axis=0)
    assert column_errors.max() <= tol * np.linalg.norm(Vh) ** 2
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= tol
    J_error = np.linalg.norm((Vh * J) @ Vh.conj().T - np.diag(J_S))
    assert J_error <= tol * np.linalg.norm(Vh) ** 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(2))
def test_eig_indefinite_singular_graded(seed, dtype):
    """A singular graded M = G J G^* (rank 14 of 24, rows graded 1 .. 2^-16, formed
    exactly): Bunch-Parlett leaves a tall row-graded factor that is shortened by QR.

    M's entries are perturbed for the spread, which turns the zero eigenvalues into
    ~1e-11 noise: the grading is kept mild so that the 14 largest stay the
    nonzero ones.
    """
    rng = np.random.default_rng(seed)
    n, r = 24, 14
    B = rng.integers(-40, 41, (n, r)).astype(dtype)
    if dtype is np.complex128:
        B += 1j * rng.integers(-40, 41, (n, r))
    J = np.where(rng.permutation(r) < r // 2, 1, -1)
    G = np.ldexp(1.0, rng.permutation(np.rint(np.linspace(-16, 0, n)).astype(int)))[:, None] * B
    M = (G * J) @ G.conj().T  # integers times powers of two: exact

    def nonzero_eigenvalues(X):
        return _by_magnitude(eigvalsh_hiprec(X, dps=60))[:r]

    exact, spread = determined(nonzero_eigenvalues, M, rng)
    assert np.allclose(exact, hyperbolic_eigenvalues_hiprec(G, J), rtol=1e-20, atol=0)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == r  # the factor is tall: shortened by QR
    _assert_determined(_by_magnitude(w)[:r], exact, spread, n)
    assert np.linalg.norm(M @ U - U * w) <= 100 * n * EPS * np.linalg.norm(M)


# ----------------------------------------------------------------- Kahan's matrix


def _dgejsv_values(A: np.ndarray) -> np.ndarray:
    sva, _, _, work, _, info = scipy.linalg.lapack.dgejsv(A)
    assert info == 0
    return np.sort(sva * (work[0] / work[1]))[::-1]


@pytest.mark.parametrize(
    "n", [30, 60, pytest.param(90, marks=pytest.mark.slow)]
)
@pytest.mark.parametrize("factorization", QR_FACTORIZATIONS)
def test_svd_kahan_like_xgejsv(n, factorization):
    """Kahan's matrix (angle 1.2, MATLAB's perturbation): every singular value is
    fixed by the data to about 1e-15 relatively, but no method at hand gets the
    smallest (4e-15 at n = 90) to that level: n = 90 gives 1.2e-4 by plain Jacobi on
    A, 7.8e-5 by dgejsv, 1.6e-6 by dgesvd.  What is asked is xGEJSV's accuracy,
    which its preconditioning gives (row-sorted, column-pivoted QR, Jacobi on R^*):
    3.2e-6 in 8 sweeps (PoCL, 2026-11-24).
    """
    K = kahan(n, 1.2)
    if n <= 60:
        exact, spread = determined(singular_values_hiprec, K, np.random.default_rng(n),
                                   trials=1)
        assert spread.max() <= 1e-14
    else:
        exact = singular_values_hiprec(K)
    (U, S, Vh), info = cljacobi.svd(K, return_info=True, factorization=factorization)
    ours = _relative_errors(S, exact).max()
    lapack = _relative_errors(_dgejsv_values(K), exact).max()
    assert ours <= 4 * lapack
    assert info.factorization == {"host": "qr", "device": "qr-device"}[factorization]
    _check_svd(K, U, S, Vh)


# ----------------------------------------------------------------- sweeps


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_sweeps_on_graded_singular_values(dtype):
    """Singular values log-uniform in [1e-5, 1] and [1e-12, 1] (random singular
    vectors) took 18 and 30 sweeps at n = 256 against 8 for a Gaussian matrix;
    Jacobi on R^* takes about as many as for the Gaussian one (at most 1.5x)."""
    rng = np.random.default_rng(7)
    n = 128
    normal = rng.standard_normal((n, n))
    if dtype is np.complex128:
        normal = normal + 1j * rng.standard_normal((n, n))
    _, info = cljacobi.svd(normal, compute_uv=False, return_info=True)
    for low in (-5, -12):
        sigma = np.sort(10.0 ** rng.uniform(low, 0, n))[::-1]
        A = with_singular_values(sigma, n, rng=rng, dtype=dtype)
        S, graded_info = cljacobi.svd(A, compute_uv=False, return_info=True)
        assert graded_info.sweeps <= 1.5 * info.sweeps
        # A is sigma's matrix to ~n eps absolutely (formed in float64).
        assert np.max(np.abs(S - sigma)) <= 100 * n * EPS
