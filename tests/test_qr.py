"""The device QR (templates/qr.cl.mako, cljacobi.host.qr) against numpy and LAPACK.

Row-sorted Householder QR with column pivoting, ``A[rows][:, columns] = Q R``:
the factors' residual and orthogonality, the pivot rule (each ``|r_jj|`` the
largest trailing column norm at its step, the first of equal ones), LAPACK
``xGEQP3``'s diagonal where the pivots agree, the reflectors applied by
``cjac_qr_apply`` against Q formed by LAPACK from the same reflectors, and
the same bits on a second run.  svd's accuracy with the device QR is tested
in test_svd.py and test_hard_inputs.py (``factorization="device"``)."""

from __future__ import annotations

import numpy as np
import pytest

import cljacobi
from cljacobi._solve import factors_on_device
from cljacobi.host.qr import APPLY_SLAB, ColumnQRPlan, ColumnQRSpec, pivoted_qr_on_device
from cljacobi.shortening import Reflectors, pivoted_reflectors, sort_rows

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _random(rng, shape, dtype):
    A = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * rng.standard_normal(shape)
    return A


def _q(qr, m, n, dtype):
    """Q (m x n, rows in A's order) through q_times."""
    return qr.q_times(np.eye(n, dtype=dtype), np.arange(n))


def _check_factors(A, qr, *, factor=30):
    m, n = A.shape
    Q, R = _q(qr, m, n, A.dtype), qr.R
    tol = factor * m * EPS
    assert np.array_equal(np.sort(qr.columns), np.arange(n))
    assert np.array_equal(qr.rows, sort_rows(A))
    assert np.array_equal(R, np.triu(R))
    assert np.all(np.diag(R).imag == 0)
    assert np.linalg.norm(A[:, qr.columns] - Q @ R) <= tol * np.linalg.norm(A)
    assert np.linalg.norm(Q.conj().T @ Q - np.eye(n)) <= tol
    # Column pivoting: at step j the pivot column has the largest norm over rows j..
    # (the later reflectors keep the norms of R[j:, c]), so |r_jj| >= ||R[j:, c]||.
    for j in range(n - 1):
        trailing = np.linalg.norm(R[j:, j + 1:], axis=0)
        assert np.all(abs(R[j, j]) >= trailing * (1 - tol))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (7, 7), (40, 40), (64, 40), (130, 70)])
@pytest.mark.parametrize("work_group_size,columns_per_group", [(16, 1), (64, 3)])
def test_against_numpy_and_lapack(shape, dtype, work_group_size, columns_per_group, queue, rng):
    A = _random(rng, shape, dtype)
    original = A.copy()
    qr = pivoted_qr_on_device(A, queue, work_group_size=work_group_size,
                              columns_per_group=columns_per_group)
    assert np.array_equal(A, original)
    _check_factors(A, qr)
    host = pivoted_reflectors(A)
    # Random data have no near ties: xGEQP3's pivots, the same |r_jj| to rounding.
    assert np.array_equal(host.columns, qr.columns)
    assert np.allclose(np.abs(np.diag(qr.R)), np.abs(np.diag(host.R)), rtol=100 * shape[0] * EPS,
                       atol=0)
    # The same reflectors through LAPACK (xORGQR on the device's packed output).
    m, n = shape
    packed = Reflectors(qr.packed, qr.tau, qr.rows, qr.columns)
    assert np.allclose(packed.q_times(np.eye(n), np.arange(n)), _q(qr, m, n, A.dtype),
                       rtol=0, atol=100 * m * EPS)
    assert np.allclose(qr.r_adjoint(), qr.R.conj().T, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_completed_basis_and_ordered_columns(dtype, queue, rng):
    """q_times(V, order, m) of a tall A: Q V[:, order] beside Q's trailing columns,
    an m x m unitary matrix, as LAPACK gives it from the same reflectors."""
    m, n = 50, 20
    A = _random(rng, (m, n), dtype)
    qr = pivoted_qr_on_device(A, queue)
    V = np.linalg.qr(_random(rng, (n, n), dtype))[0]
    order = rng.permutation(n)
    full = qr.q_times(V, order, m)
    assert full.shape == (m, m)
    assert np.linalg.norm(full.conj().T @ full - np.eye(m)) <= 100 * m * EPS
    reference = Reflectors(qr.packed, qr.tau, qr.rows, qr.columns).q_times(V, order, m)
    assert np.allclose(full, reference, rtol=0, atol=100 * m * EPS)
    with pytest.raises(ValueError, match="completed"):
        qr.q_times(V, order, m + 1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_q_by_slabs_and_column_tiles(dtype, queue, rng):
    """Q applied to an m x m C whose rows span two slabs of cjac_qr_block_z
    (``APPLY_SLAB`` rows) and whose columns fill tiles but the last: Q's
    columns as LAPACK forms them from the same reflectors, unitary."""
    m, n = APPLY_SLAB + 88, 40
    A = _random(rng, (m, n), dtype)
    qr = pivoted_qr_on_device(A, queue)
    V = np.linalg.qr(_random(rng, (n, n), dtype))[0]
    order = rng.permutation(n)
    full = qr.q_times(V, order, m)
    assert np.linalg.norm(full.conj().T @ full - np.eye(m)) <= 100 * m * EPS
    reference = Reflectors(qr.packed, qr.tau, qr.rows, qr.columns).q_times(V, order, m)
    assert np.allclose(full, reference, rtol=0, atol=100 * m * EPS)
    assert np.array_equal(full, qr.q_times(V, order, m))
    # by columns (cjac_qr_unload_columns): the transpose, the same numbers
    by_columns = qr.q_times(V, order, m, by_columns=True)
    assert by_columns.shape == (m, m) and by_columns.flags.c_contiguous
    assert np.array_equal(by_columns, full.T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_q_by_columns_into_out(dtype, queue, rng):
    """q_times(..., by_columns=True, out=): Q C's columns as the rows of a
    C-ordered (columns x m) array, written into `out` (say rows of a larger
    array), bitwise the transpose of the row-major result; a bad `out` is a
    ValueError before anything is written."""
    m, n, columns = 70, 30, 45
    A = _random(rng, (m, n), dtype)
    qr = pivoted_qr_on_device(A, queue)
    V = np.linalg.qr(_random(rng, (n, n), dtype))[0]
    order = rng.permutation(n)[:12]
    rows = qr.q_times(V, order, columns)
    target = np.full((columns + 5, m), np.nan, dtype=dtype)
    result = qr.q_times(V, order, columns, by_columns=True, out=target[2:2 + columns])
    assert np.shares_memory(result, target) and np.array_equal(target[2:2 + columns], rows.T)
    assert np.all(np.isnan(target[:2])) and np.all(np.isnan(target[2 + columns:]))
    for bad in (np.empty((m, columns), dtype), np.empty((columns, m), np.float32),
                np.empty((m, columns), dtype).T):
        with pytest.raises(ValueError, match="out must be"):
            qr.q_times(V, order, columns, by_columns=True, out=bad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bitwise_repeatable(dtype, queue, rng):
    A = _random(rng, (90, 60), dtype)
    first, second = (pivoted_qr_on_device(A, queue) for _ in range(2))
    assert np.array_equal(first.packed, second.packed)
    assert np.array_equal(first.tau, second.tau)
    assert np.array_equal(first.columns, second.columns)


def test_ties_go_to_the_first_column(queue):
    """Equal norms pivot in column order (xGEQP3's rule); a repeated column
    becomes exactly dependent and goes last."""
    D = np.diag([2.0, 3.0, 3.0, 1.0, 3.0])
    qr = pivoted_qr_on_device(D, queue)
    assert qr.columns.tolist() == [1, 2, 4, 0, 3]
    A = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    qr = pivoted_qr_on_device(A, queue)
    assert qr.columns.tolist() == [0, 1, 2]  # columns 0 and 2 tie; 0 comes first
    assert abs(qr.R[2, 2]) <= 10 * EPS
    _check_factors(A, qr)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_tiny_and_graded(dtype, queue, rng):
    """A zero column (H = I), columns of size 1e-300 (xLARFG's rescaling below
    SAFMIN), and rows graded by 2^-150 a row (the norms summed again at the
    scale of their largest entry): finite factors, the same residual."""
    A = _random(rng, (12, 6), dtype)
    A[:, 2] = 0
    A[:, 4] *= 1e-300
    qr = pivoted_qr_on_device(A, queue)
    assert qr.columns[-1] == 2 and qr.R[-1, -1] == 0
    assert np.all(np.isfinite(qr.packed)) and np.all(np.isfinite(qr.tau))
    _check_factors(A, qr)
    tiny = _random(rng, (10, 4), dtype) * 1e-300
    qr = pivoted_qr_on_device(tiny, queue)
    Q = _q(qr, 10, 4, tiny.dtype)
    assert np.linalg.norm(Q.conj().T @ Q - np.eye(4)) <= 100 * 10 * EPS
    assert np.linalg.norm(tiny[:, qr.columns] - Q @ qr.R) <= 100 * 10 * EPS * np.linalg.norm(tiny)
    graded = _random(rng, (8, 5), dtype) * np.ldexp(1.0, -150 * np.arange(8))[:, None]
    qr = pivoted_qr_on_device(graded, queue)
    R = qr.R
    assert np.all(np.isfinite(R)) and np.all(np.abs(np.diag(R)) > 0)
    # The largest row leads; each |r_jj| is that of xGEQP3 to rounding (the rows are
    # 2^150 apart, so no pivot is near a tie).
    host = pivoted_reflectors(graded)
    assert np.array_equal(host.columns, qr.columns)
    assert np.allclose(np.abs(np.diag(R)), np.abs(np.diag(host.R)), rtol=1e-13, atol=0)


def test_scaling_runs_while_a_goes_up(queue, rng):
    """scaling's exponent and rows are those the QR uses: the same bits as
    when they are given; given with them it is refused, and its error
    comes through."""
    A = _random(rng, (30, 12), np.float64)
    rows = rng.permutation(30)
    given = pivoted_qr_on_device(A, queue, exponent=-3, rows=rows)
    deferred = pivoted_qr_on_device(A, queue, scaling=lambda: (-3, rows))
    assert deferred.exponent == given.exponent == -3
    assert np.array_equal(deferred.rows, rows)
    assert np.array_equal(deferred.packed, given.packed)
    assert np.array_equal(deferred.packed, pivoted_qr_on_device(A / 8, queue, rows=rows).packed)
    with pytest.raises(TypeError, match="not both"):
        pivoted_qr_on_device(A, queue, rows=rows, scaling=lambda: (0, rows))

    def fails():
        raise OverflowError("the scaling failed")

    with pytest.raises(OverflowError, match="the scaling failed"):
        pivoted_qr_on_device(A, queue, scaling=fails)


def test_bad_shapes_and_sizes(queue):
    with pytest.raises(ValueError, match="rows >= cols"):
        ColumnQRPlan.for_device(queue.device, 3, 5, np.float64)
    with pytest.raises(ValueError, match="power of two"):
        pivoted_qr_on_device(np.ones((4, 4)), queue, work_group_size=48)
    with pytest.raises(ValueError, match="columns_per_group"):
        pivoted_qr_on_device(np.ones((4, 4)), queue, columns_per_group=0)
    # Q's kernels: 8 groups of 32 work-items share a tile of 4 columns.
    with pytest.raises(ValueError, match="does not divide"):
        ColumnQRSpec("float64", apply_tile=4)
    with pytest.raises(ValueError, match="power of two"):
        ColumnQRSpec("float64", apply_slab=500)


def test_svd_factorization_option(queue, rng):
    """svd(factorization=): "auto" runs LAPACK on a CPU device, "device" the
    kernels, the same singular values to rounding; a bad value names itself."""
    A = rng.standard_normal((300, 260))
    S_host, info_host = cljacobi.svd(A, compute_uv=False, return_info=True, queue=queue)
    S_device, info_device = cljacobi.svd(A, compute_uv=False, return_info=True, queue=queue,
                                         factorization="device")
    expected_auto = "qr-device" if factors_on_device("auto", queue.device, 260) else "qr"
    assert info_host.factorization == expected_auto
    assert info_device.factorization == "qr-device"
    assert np.max(np.abs(S_host - S_device) / S_host) <= 1e3 * EPS
    with pytest.raises(ValueError, match="factorization must be one of"):
        cljacobi.svd(A, factorization="gpu")
    with pytest.raises(ValueError, match="factorization='host'"):
        cljacobi.svd(rng.standard_normal((3, 6, 5)), variant="batched", factorization="host")
