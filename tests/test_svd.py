"""svd: one-sided Jacobi with J = I, against numpy.linalg.svd, LAPACK's accurate
Jacobi SVD (dgejsv) and a 50-digit oracle on column-graded matrices.

Real and complex data are one test parametrized by ``dtype``.  svd's wrong inputs
are a table in test_inputs.py; the non-convergence checks it shares with the other
functions are in test_convergence.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg.lapack
from hiprec import eigvals_factor_hiprec

import cljacobi
from cljacobi.matrices import gaussian

EPS = np.finfo(np.float64).eps
SHAPES = [(1, 1), (1, 6), (6, 1), (7, 7), (33, 20), (20, 33), (64, 64), (90, 30), (30, 90)]
#: Where the QR runs: LAPACK on the host, or the kernels of qr.cl.mako (on PoCL
#: here; "auto" takes the host on a CPU device), and info.factorization for it.
FACTORIZATIONS = {"host": "qr", "device": "qr-device"}


def _random(rng, shape, dtype):
    return gaussian(shape, rng=rng, dtype=dtype)


def _check(A, U, S, Vh, *, full_matrices, factor=100):
    m, n = A.shape
    k = min(m, n)
    assert U.shape == ((m, m) if full_matrices else (m, k))
    assert Vh.shape == ((n, n) if full_matrices else (k, n))
    assert S.shape == (k,) and S.dtype.kind == "f" and np.all(np.diff(S) <= 0)
    tol = factor * max(m, n) * EPS
    assert np.linalg.norm(U[:, :k] * S @ Vh[:k] - A) <= tol * np.linalg.norm(A)
    assert np.linalg.norm(U.conj().T @ U - np.eye(U.shape[1])) <= tol
    assert np.linalg.norm(Vh @ Vh.conj().T - np.eye(Vh.shape[0])) <= tol


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_against_numpy(shape, dtype, full_matrices, factorization, rng):
    A = _random(rng, shape, dtype)
    (U, S, Vh), info = cljacobi.svd(A, full_matrices=full_matrices, return_info=True,
                                    factorization=factorization)
    U_np, S_np, Vh_np = np.linalg.svd(A, full_matrices=full_matrices)
    assert U.dtype == U_np.dtype and Vh.dtype == Vh_np.dtype and S.dtype == S_np.dtype
    assert U.shape == U_np.shape and Vh.shape == Vh_np.shape
    assert np.max(np.abs(S - S_np) / S_np) <= 100 * max(shape) * EPS
    _check(A, U, S, Vh, full_matrices=full_matrices)
    # 1 x 1 is answered on the host; every other A is reduced to R first.
    assert info.factorization == ("" if shape == (1, 1) else FACTORIZATIONS[factorization])
    assert info.rank == min(shape) and info.converged


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_values_only(dtype, rng):
    A = _random(rng, (40, 25), dtype)
    S, info = cljacobi.svd(A, compute_uv=False, return_info=True)
    assert isinstance(S, np.ndarray) and S.dtype == np.float64
    assert np.max(np.abs(S - np.linalg.svd(A, compute_uv=False)) / S) <= 100 * 40 * EPS
    assert info.sweeps >= 1 and info.rotations > 0
    S_tall = cljacobi.svd(_random(rng, (80, 12), dtype), compute_uv=False)
    assert S_tall.shape == (12,)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape,rank", [((20, 12), 5), ((12, 20), 7), ((50, 10), 3)])
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_rank_deficient(shape, rank, dtype, factorization, rng):
    """Exactly zero columns give zero singular values with completed singular vectors."""
    m, n = shape
    A = _random(rng, (m, rank), dtype) @ _random(rng, (rank, n), dtype)
    for full_matrices in (False, True):
        U, S, Vh = cljacobi.svd(A, full_matrices=full_matrices, factorization=factorization)
        _check(A, U, S, Vh, full_matrices=full_matrices, factor=200)
        assert np.all(S[rank:] <= 1e3 * EPS * S[0])
    # One nonzero column of the matrix the method works on (A, or A^* when wide): the
    # other columns stay exactly zero, their singular values exactly 0.
    Z = np.zeros(shape, dtype)
    if m >= n:
        Z[:, 0] = 1.0
    else:
        Z[0, :] = 1.0
    (U, S, Vh), info = cljacobi.svd(Z, return_info=True, factorization=factorization)
    assert info.rank == 1 and S[1:].tolist() == [0.0] * (min(shape) - 1)
    _check(Z, U, S, Vh, full_matrices=False)


def _column_graded(rng, m, n, low=-40):
    B = rng.standard_normal((m, n))
    D = np.ldexp(1.0, np.rint(np.linspace(low, 0, n)).astype(int))
    rng.shuffle(D)
    return B * D  # exact


@pytest.mark.parametrize("m,n", [(20, 12), (16, 16), (40, 16), (32, 24)])
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_graded_small_singular_values(m, n, factorization, rng):
    """A = B D with D over 2^-40..1: the small singular values agree with dgejsv and the
    50-digit oracle to 1e-12 relatively (gesdd guarantees only eps * S[0] absolutely)."""
    A = _column_graded(rng, m, n)
    S = cljacobi.svd(A, compute_uv=False, factorization=factorization)
    sva, _, _, work, _, info = scipy.linalg.lapack.dgejsv(A)
    assert info == 0
    S_jsv = np.sort(sva * (work[0] / work[1]))[::-1]
    exact = np.sqrt(np.sort(eigvals_factor_hiprec(A.T, np.ones(m)))[::-1])
    assert np.max(np.abs(S - S_jsv) / S_jsv) <= 1e-12
    assert np.max(np.abs(S - exact) / exact) <= 1e-12


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("factorization", FACTORIZATIONS)
def test_graded_wide(dtype, factorization, rng):
    """Row-graded wide A = D B goes through A^*; complex: a unitary diagonal factor
    (+-1, +-i, exact) keeps S that of the real A."""
    A = _column_graded(rng, 24, 14).T  # 14 x 24, rows graded
    exact = np.sqrt(np.sort(eigvals_factor_hiprec(A, np.ones(24)))[::-1])
    if dtype == np.complex128:
        A = A * rng.choice(np.array([1, -1, 1j, -1j]), size=24)[None, :]
    U, S, Vh = cljacobi.svd(A, factorization=factorization)
    assert np.max(np.abs(S - exact) / exact) <= 1e-12
    _check(A, U, S, Vh, full_matrices=False)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_single_precision(dtype, rng):
    A = _random(rng, (12, 9), dtype)
    U, S, Vh = cljacobi.svd(A)
    assert U.dtype == dtype and Vh.dtype == dtype and S.dtype == np.float32
    assert np.allclose(S, np.linalg.svd(A.astype(np.complex128), compute_uv=False),
                       rtol=1e-5)


def test_integers_give_float64():
    S = cljacobi.svd(np.arange(12).reshape(4, 3), compute_uv=False)
    assert S.dtype == np.float64
    assert np.allclose(S, np.linalg.svd(np.arange(12.0).reshape(4, 3), compute_uv=False))


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (4, 0)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_empty(shape, full_matrices):
    U, S, Vh = cljacobi.svd(np.zeros(shape), full_matrices=full_matrices)
    U_np, S_np, Vh_np = np.linalg.svd(np.zeros(shape), full_matrices=full_matrices)
    assert U.shape == U_np.shape and S.shape == S_np.shape and Vh.shape == Vh_np.shape


def test_zero_matrix():
    U, S, Vh = cljacobi.svd(np.zeros((5, 3)), full_matrices=True)
    assert np.array_equal(S, np.zeros(3)) and np.array_equal(U, np.eye(5))
    assert np.array_equal(Vh, np.eye(3))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_input_unchanged(dtype, rng):
    A = _random(rng, (30, 10), dtype)
    before = A.copy()
    cljacobi.svd(A)
    assert np.array_equal(A, before)


def test_flags_by_position_like_numpy(rng):
    """numpy.linalg.svd(a, full_matrices, compute_uv): the two flags may be positional."""
    A = rng.standard_normal((6, 4))
    U, S, Vh = cljacobi.svd(A, True)
    assert U.shape == (6, 6) and Vh.shape == (4, 4)
    assert np.array_equal(S, cljacobi.svd(A, full_matrices=True).S)
    assert np.array_equal(cljacobi.svd(A, False, False), S)
    assert np.array_equal(cljacobi.svd(A, 1, 0), S)
    assert cljacobi.svd(A, 0).U.shape == (6, 4)
    with pytest.raises(TypeError):
        cljacobi.svd(A, False, True, True)  # check_finite and the rest: keywords only


def test_svd_stack_device_arrays_and_partial_results(queue, rng):
    """svd takes stacks and pyopencl arrays like the other solvers."""
    import pyopencl.array as cl_array

    stack = rng.standard_normal((2, 3, 7, 5))
    U, S, Vh = cljacobi.svd(stack)
    assert U.shape == (2, 3, 7, 5) and S.shape == (2, 3, 5) and Vh.shape == (2, 3, 5, 5)
    for index in np.ndindex(2, 3):
        # the sweeps of the stack in one launch: bitwise the same kernel on the
        # matrix alone, the one-matrix path to rounding
        single = cljacobi.svd(stack[index], variant="batched")
        assert np.array_equal(S[index], single.S) and np.array_equal(U[index], single.U)
        assert np.allclose(S[index], cljacobi.svd(stack[index]).S, rtol=1e-13, atol=0)
        assert np.allclose((U[index] * S[index]) @ Vh[index], stack[index], atol=1e-13)
    device = cljacobi.svd(cl_array.to_device(queue, stack[0, 0]))
    assert isinstance(device.S, cl_array.Array) and device.S.queue is queue
    assert np.array_equal(device.S.get(), cljacobi.svd(stack[0, 0]).S)
    with pytest.raises(cljacobi.ConvergenceError):
        cljacobi.svd(rng.standard_normal((40, 30)), max_sweeps=1)
    with pytest.warns(cljacobi.ConvergenceWarning):
        (partial, info) = cljacobi.svd(
            rng.standard_normal((40, 30)), max_sweeps=1, on_nonconvergence="warn",
            return_info=True,
        )
    assert not info.converged and partial.S.shape == (30,)
