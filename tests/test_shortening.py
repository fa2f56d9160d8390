"""Tests of cljacobi.shortening: the row-sorted, column-pivoted QR and the shortening
of tall factors for the hyperbolic sweeps."""

from __future__ import annotations

import numpy as np
import pytest

from cljacobi.factorization import j_factorize
from cljacobi.matrices import column_graded, gaussian
from cljacobi.shortening import pivoted_qr, pivoted_qr_stack, shorten

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _signs(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.permutation(n) < n // 2, 1, -1).astype(np.int8)


# ---------------------------------------------------------------------------
# pivoted_qr
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (64, 1), (37, 37), (100, 37), (7, 0), (4, 9)])
def test_pivoted_qr(shape, dtype, rng) -> None:
    a = gaussian(shape, rng=rng, dtype=dtype)
    before = a.copy()
    q, r, columns = pivoted_qr(a)
    np.testing.assert_array_equal(a, before)
    m, n = shape
    k = min(m, n)
    assert q.shape == (m, k) and r.shape == (k, n) and q.dtype == r.dtype == a.dtype
    assert sorted(columns.tolist()) == list(range(n))
    np.testing.assert_allclose(q.conj().T @ q, np.eye(k), rtol=0, atol=4 * m * EPS)
    np.testing.assert_allclose(q @ r, a[:, columns], rtol=0,
                               atol=4 * m * EPS * np.abs(a).max(initial=1.0))
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    assert np.all(np.diff(np.abs(np.diagonal(r))) <= 0)
    r_only, columns_only = pivoted_qr(a, compute_q=False)[1:]
    np.testing.assert_array_equal(r_only, r)
    np.testing.assert_array_equal(columns_only, columns)


def test_pivoted_qr_row_order_does_not_matter(rng) -> None:
    """The rows are sorted first: a row permutation of A only permutes the rows of Q."""
    a = column_graded(30, 50, low_exponent=-100, rng=rng).T  # 50 x 30, rows graded
    p = rng.permutation(50)
    q, r, columns = pivoted_qr(a)
    q_p, r_p, columns_p = pivoted_qr(a[p])
    np.testing.assert_array_equal(r_p, r)
    np.testing.assert_array_equal(columns_p, columns)
    np.testing.assert_array_equal(q_p, q[p])


def test_pivoted_qr_is_rowwise_accurate(rng) -> None:
    """Row-graded A = D B: every row of A is reproduced to its own size (a plain QR
    leaves errors of the size of the largest rows in the small ones)."""
    a = column_graded(20, 40, low_exponent=-100, rng=rng).T
    q, r, columns = pivoted_qr(a)
    rows = np.abs(q @ r - a[:, columns]).max(axis=1) / np.abs(a).max(axis=1)
    assert rows.max() <= 100 * EPS


# ---------------------------------------------------------------------------
# shorten
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (64, 1), (100, 37), (7, 0)])
def test_shorten_tall(shape, dtype, rng) -> None:
    g = gaussian(shape, rng=rng, dtype=dtype)
    signs = _signs(rng, shape[1])
    before = g.copy()
    q, r, columns = shorten(g, signs)
    np.testing.assert_array_equal(g, before)
    n, k = shape
    assert q.shape == (n, k) and r.shape == (k, k)
    assert q.dtype == g.dtype and r.dtype == g.dtype
    np.testing.assert_allclose(q.conj().T @ q, np.eye(k), rtol=0, atol=4 * n * EPS)
    np.testing.assert_allclose(q @ r, g[:, columns], rtol=0,
                               atol=4 * n * EPS * np.abs(g).max(initial=1.0))
    assert np.all(np.diff(signs[columns]) <= 0), "+1 first, then -1"
    # Without Q (values only): no Q, the same R and order, bitwise.
    no_q, r_alone, columns_alone = shorten(g, signs, compute_q=False)
    assert no_q is None
    np.testing.assert_array_equal(r_alone, r)
    np.testing.assert_array_equal(columns_alone, columns)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (0, 0), (0, 2)])
def test_shorten_square_or_wide(shape, rng) -> None:
    g = gaussian(shape, rng=rng)
    signs = np.sort(_signs(rng, shape[1]))[::-1]
    q, r, columns = shorten(g, signs)
    assert q is None and r is g
    np.testing.assert_array_equal(columns, np.arange(shape[1]))
    # Unsorted signs: only the columns are reordered.
    if shape[1] > 1:
        mixed = np.array([-1, 1] + [1] * (shape[1] - 2))
        q, r, columns = shorten(g, mixed)
        assert q is None and columns.tolist() == list(range(1, shape[1])) + [0]
        np.testing.assert_array_equal(r, g[:, columns])


def test_shorten_of_factor_keeps_hyperbolic_product() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((40, 15))
    m = (x * np.where(np.arange(15) < 6, 1.0, -1.0)) @ x.T
    f = j_factorize(m)
    assert f.G.shape == (40, 15)
    q, r, columns = shorten(f.G, f.signs)
    # M = Q (R J R^T) Q^T with J permuted like the columns: the eigenproblem moves
    # to the small R J R^T.
    small = (r * f.signs[columns]) @ r.T
    np.testing.assert_allclose(q @ small @ q.T, m, rtol=0, atol=1e-13 * np.abs(m).max())


def test_shorten_wrong_shape() -> None:
    with pytest.raises(ValueError, match="2-D"):
        shorten(np.zeros(3), np.ones(3))
    with pytest.raises(ValueError, match="signs"):
        shorten(np.zeros((4, 3)), np.ones(2))


@pytest.mark.parametrize("shape", [(8, 8), (12, 5), (5, 12), (3, 1), (1, 3), (40, 33),
                                   (260, 200)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_pivoted_qr_is_lapack_through_scipy_bitwise(shape, dtype, rng) -> None:
    """The direct xGEQP3 / xORGQR calls give scipy.linalg.qr's factors bit for
    bit (the rows sorted first), with and without Q."""
    import scipy.linalg

    A = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * rng.standard_normal(shape)
    rows = np.argsort(-np.abs(A).max(axis=1), kind="stable")
    Q, R, columns = scipy.linalg.qr(A[rows], mode="economic", pivoting=True)
    result = pivoted_qr(A)
    assert np.array_equal(result.R, R) and np.array_equal(result.columns, columns)
    assert np.array_equal(result.Q[rows], Q)
    R_only = pivoted_qr(A, compute_q=False)
    assert R_only.Q is None and np.array_equal(R_only.R, R)


@pytest.mark.parametrize("shape", [(8, 8), (12, 5), (5, 12), (3, 1), (40, 33), (7, 0), (0, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("compute_q", [True, False])
def test_pivoted_qr_stack_is_pivoted_qr_bitwise(shape, dtype, compute_q, rng) -> None:
    """The stacked QR (the batched svd's) gives every matrix's pivoted_qr bit
    for bit, whatever the stack: graded columns, a zero matrix, equal rows
    (ties in the row sort) and a rank-deficient matrix among random ones."""
    m, n = shape
    stack = rng.standard_normal((5, m, n)) * 2.0 ** rng.integers(-20, 20, n)
    if np.dtype(dtype).kind == "c":
        stack = stack + 1j * rng.standard_normal((5, m, n))
    stack[1] = 0
    if m > 1:
        stack[2, 1] = stack[2, 0]
    if n > 1:
        stack[3, :, 1] = stack[3, :, 0]
    stack_copy = stack.copy()
    Q, R, columns = pivoted_qr_stack(stack, compute_q=compute_q)
    assert np.array_equal(stack, stack_copy)
    k = min(m, n)
    assert R.shape == (5, k, n) and columns.shape == (5, n)
    for b, A in enumerate(stack):
        one = pivoted_qr(A, compute_q=compute_q)
        assert np.array_equal(R[b], one.R) and np.array_equal(columns[b], one.columns)
        if compute_q:
            assert Q.shape == (5, m, k) and np.array_equal(Q[b], one.Q)
        else:
            assert Q is None
