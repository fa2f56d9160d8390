"""The batched QR kernels (templates/batched_qr.cl.mako) against LAPACK.

``cjac_batched_qr`` is held to :func:`cljacobi.shortening.pivoted_qr_stack`
(row sorting, ``xGEQP3``) after :func:`cljacobi.scaling.factor_shifts`' shift:
the same shifts and pivots, the factors to rounding; ``cjac_batched_qr_results``
to the identities it must give (``B[:, p] = Q R`` with Q orthonormal, the
completion of ``full_matrices``, S shifted back exactly); and the route of
svd and tall hsvd stacks through them to the contract of the stack: device
stacks never cross the bus, and a refused matrix raises the one-matrix
path's message.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import cljacobi
import cljacobi._batch
from cljacobi._solve import ldexp
from cljacobi._stack_names import StackNames
from cljacobi.host.batched import BatchStatus
from cljacobi.host.batched_qr import BatchedQRSpec, batched_qr, batched_qr_results
from cljacobi.scaling import factor_shifts
from cljacobi.shortening import pivoted_qr_stack

EPS = np.finfo(np.float64).eps


def stack_of(rng, count, m, n, complex_):
    A = rng.standard_normal((count, m, n))
    if complex_:
        A = A + 1j * rng.standard_normal(A.shape)
    A[1] *= 2.0 ** rng.integers(-40, 40, n)  # graded columns
    A[2] *= 2.0 ** -np.arange(0, 8 * m, 8)[:, None]  # graded rows
    A[3] *= 1e-250  # a shift far from 0
    return A


def reference(B, problem, signs=None):
    """The host's shortening of every B: the shift, then LAPACK's
    row-sorted, column-pivoted QR; svd: X = R^*, hsvd: R's columns +1 first."""
    count, rows, _ = B.shape
    exponents = factor_shifts(np.abs(B).max(axis=-2), rows, StackNames("B", (count,)),
                              zero_columns=problem == "svd")
    qr = pivoted_qr_stack(ldexp(B, exponents[:, None, None].astype(int)))
    if problem == "svd":
        return exponents, qr.columns, np.swapaxes(qr.R, -1, -2).conj(), None
    by_sign = np.argsort(-np.take_along_axis(signs, qr.columns, axis=1), axis=1, kind="stable")
    columns = np.take_along_axis(qr.columns, by_sign, axis=1)
    factors = np.take_along_axis(qr.R, by_sign[:, None, :], axis=2)
    return exponents, columns, factors, np.take_along_axis(signs, columns, axis=1)


def read(qr, name, shape, dtype):
    host = np.empty(shape, dtype)
    cl.enqueue_copy(qr.queue, host, qr.buffers[name])
    return host


@pytest.mark.parametrize("problem", ["svd", "hsvd"])
@pytest.mark.parametrize(("m", "n"), [(6, 6), (9, 5), (5, 9), (40, 33), (2, 2)])
@pytest.mark.parametrize("complex_", [False, True])
def test_factors_as_lapack(problem, m, n, complex_, rng, queue):
    """The shift and the pivots of the host's shortening, the factor to
    rounding (each column of R to eps of its norm), the rows of B sorted as
    numpy's stable argsort sorts them."""
    if problem == "hsvd":  # tall factors only
        m, n = max(m, n), min(m, n)
    transposed = m < n
    A = stack_of(rng, 5, m, n, complex_)
    B = np.swapaxes(A, -1, -2).conj() if transposed else A
    k = B.shape[-1]
    signs = np.where(rng.random((5, k)) < 0.5, 1, -1).astype(np.int32)
    qr = batched_qr(queue, cl_array.to_device(queue, A), problem=problem, transposed=transposed,
                    signs=cl_array.to_device(queue, signs) if problem == "hsvd" else None)
    exponents, columns, factors, factor_signs = reference(B, problem, signs)
    assert qr.summary == 0
    assert np.array_equal(qr.exponents(), exponents)
    assert np.array_equal(read(qr, "column_order", (5, k), np.int32), columns)
    scaled = ldexp(B, exponents[:, None, None].astype(int))
    keys = np.abs(scaled).max(axis=2)
    rows = read(qr, "row_order", (5, B.shape[1]), np.int32)
    assert np.array_equal(rows, np.argsort(-keys, axis=1, kind="stable"))
    got = qr.factors.get()
    R_norms = np.linalg.norm(factors, axis=-1 if problem == "svd" else -2)
    R_norms = R_norms[:, :, None] if problem == "svd" else R_norms[:, None, :]
    assert np.all(np.abs(got - factors) <= 8 * B.shape[1] * EPS * R_norms)
    if problem == "hsvd":
        assert np.array_equal(qr.signs.get(), factor_signs)
    else:
        assert np.array_equal(qr.signs.get(), np.ones(k))


def fake_sweeps(queue, S, U_x, Vh_x):
    """What batched_qr_results reads of a sweeps' run."""
    count = S.shape[0]
    return SimpleNamespace(values=cl_array.to_device(queue, S),
                           U=cl_array.to_device(queue, np.ascontiguousarray(U_x)),
                           Vh=cl_array.to_device(queue, np.ascontiguousarray(Vh_x)),
                           status=cl_array.zeros(queue, count, np.int32).data)


@pytest.mark.parametrize(("m", "n"), [(7, 4), (4, 7), (5, 5)])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_results_are_q_and_the_pivots(m, n, complex_, full_matrices, rng, queue):
    """With U_x = Vh_x = I: U (wide: Vh^*) is Q with B's rows back, its
    trailing columns completing it for full_matrices, and Vh (wide: U^*) the
    column permutation; B scaled and pivoted is Q R; S comes back exactly."""
    A = stack_of(rng, 4, m, n, complex_)
    transposed = m < n
    B = np.swapaxes(A, -1, -2).conj() if transposed else A
    rows, k = B.shape[1:]
    qr = batched_qr(queue, cl_array.to_device(queue, A), transposed=transposed)
    eye = np.broadcast_to(np.eye(k, dtype=A.dtype), (4, k, k))
    S = np.abs(rng.standard_normal((4, k))) * 2.0 ** 600
    out = batched_qr_results(qr, fake_sweeps(queue, S, eye, eye), full_matrices=full_matrices)
    assert out.summary == 0
    exponents = qr.exponents()
    np.testing.assert_array_equal(out.S.get(), np.ldexp(S, -exponents[:, None]))
    U, Vh = out.U.get(), out.Vh.get()
    Q, P = (np.swapaxes(Vh, -1, -2).conj(), U) if transposed else (U, np.swapaxes(Vh, -1, -2))
    assert Q.shape == (4, rows, rows if full_matrices else k)
    columns = read(qr, "column_order", (4, k), np.int32)
    assert np.array_equal(P, np.swapaxes(np.eye(k)[columns], -1, -2))  # P[columns[i], i] = 1
    assert np.abs(np.swapaxes(Q, -1, -2).conj() @ Q - np.eye(Q.shape[-1])).max() <= 20 * rows * EPS
    R = np.swapaxes(qr.factors.get(), -1, -2).conj()
    scaled = ldexp(B, exponents[:, None, None].astype(int))
    pivoted = np.take_along_axis(scaled, columns[:, None, :], axis=2)
    scale = np.linalg.norm(pivoted, axis=1)[:, None, :]
    assert np.all(np.abs(Q[..., :k] @ R - pivoted) <= 20 * rows * EPS * scale)


@pytest.mark.parametrize("complex_", [False, True])
def test_tall_hsvd_results_are_q_and_the_pivots(complex_, rng, queue):
    """hsvd of tall G: U = Q U_R with G's rows back, Vh_R's columns back in
    G's order; G scaled, its columns in the factor's order, is Q R."""
    G = stack_of(rng, 4, 9, 5, complex_)
    signs = np.where(rng.random((4, 5)) < 0.5, 1, -1).astype(np.int32)
    qr = batched_qr(queue, cl_array.to_device(queue, G), problem="hsvd",
                    signs=cl_array.to_device(queue, signs))
    eye = np.broadcast_to(np.eye(5, dtype=G.dtype), (4, 5, 5))
    out = batched_qr_results(qr, fake_sweeps(queue, np.ones((4, 5)), eye, eye))
    Q, Vh = out.U.get(), out.Vh.get()
    columns = read(qr, "column_order", (4, 5), np.int32)
    assert np.array_equal(Vh, np.eye(5)[columns])  # Vh[c, columns[c]] = 1
    assert np.abs(np.swapaxes(Q, -1, -2).conj() @ Q - np.eye(5)).max() <= 100 * EPS
    scaled = ldexp(G, qr.exponents()[:, None, None].astype(int))
    ordered = np.take_along_axis(scaled, columns[:, None, :], axis=2)
    scale = np.linalg.norm(ordered, axis=1)[:, None, :]
    assert np.all(np.abs(Q @ qr.factors.get() - ordered) <= 200 * EPS * scale)


def test_refusals_are_flagged_per_matrix(rng, queue):
    """inf or NaN, column norms float64 cannot square at once, and (hsvd) a
    zero column flag their matrix only: its factor is zero, the others'
    factors are what a stack of them alone gives, bit for bit."""
    A = rng.standard_normal((5, 6, 4))
    A[1, 2, 3] = np.nan
    A[2, :, 0] *= 1e-300
    A[2, :, 1] *= 1e300
    A[3, :, 2] = 0  # allowed for svd
    qr = batched_qr(queue, cl_array.to_device(queue, A))
    flags = qr.flags
    assert flags[1] == BatchStatus.NOT_FINITE and flags[2] == BatchStatus.FACTOR_RANGE
    assert not flags[[0, 3, 4]].any() and qr.summary == flags[1] | flags[2]
    factors = qr.factors.get()
    assert not factors[[1, 2]].any()
    alone = batched_qr(queue, cl_array.to_device(queue, A[[0, 3, 4]])).factors.get()
    assert np.array_equal(factors[[0, 3, 4]], alone)
    assert np.isnan(qr.column_max()[1, 3])
    signs = cl_array.to_device(queue, np.array([1, -1, 1, -1], np.int32))
    hsvd = batched_qr(queue, cl_array.to_device(queue, A), problem="hsvd", signs=signs)
    assert hsvd.flags[3] == BatchStatus.ZERO_COLUMN and not hsvd.flags[[0, 4]].any()


def test_spec_errors():
    with pytest.raises(ValueError, match="shortens"):
        BatchedQRSpec("float64", problem="eig")
    with pytest.raises(ValueError, match="float64 and complex128"):
        BatchedQRSpec("float32")
    with pytest.raises(ValueError, match="math"):
        BatchedQRSpec("float64", math="fast")


@pytest.mark.parametrize("complex_", [False, True])
def test_device_stacks_never_cross_the_bus(complex_, rng, queue, monkeypatch):
    """svd of a device stack (wide and tall, full_matrices too) and hsvd of
    tall device factors run without copying the stack to the host, and give
    the numpy input's results bit for bit."""
    def refuse(*args, **kwargs):
        raise AssertionError("the stack was copied to the host")

    for m, n in ((7, 4), (4, 7)):
        A = stack_of(rng, 4, m, n, complex_)
        on_host = cljacobi.svd(A, full_matrices=True)
        monkeypatch.setattr(cljacobi._batch, "to_host", refuse)
        on_device = cljacobi.svd(cl_array.to_device(queue, A), full_matrices=True)
        monkeypatch.undo()
        for a, b in zip(on_device, on_host):
            assert isinstance(a, cl_array.Array) and np.array_equal(a.get(), b)
    G = stack_of(rng, 4, 9, 5, complex_)
    J = np.array([1, -1, 1, 1, -1])
    on_host = cljacobi.hsvd(G, J)
    monkeypatch.setattr(cljacobi._batch, "to_host", refuse)
    on_device = cljacobi.hsvd(cl_array.to_device(queue, G), J)
    monkeypatch.undo()
    for a, b in zip(on_device, on_host):
        assert np.array_equal(a.get(), b)


def test_device_stack_errors_name_the_matrix(rng, queue):
    """A refused matrix of a device stack raises the one-matrix path's
    message with its index; check_finite=False turns inf or NaN into the
    LinAlgError the host input gives."""
    A = rng.standard_normal((3, 5, 4))
    A[2, 1, 1] = np.inf
    with pytest.raises(ValueError, match=r"A\[2\] must not contain infs or NaNs"):
        cljacobi.svd(cl_array.to_device(queue, A))
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        cljacobi.svd(cl_array.to_device(queue, A), check_finite=False)
    A[2, 1, 1] = 1
    A[1, :, 0] *= 1e-300
    A[1, :, 1] *= 1e300
    with pytest.raises(np.linalg.LinAlgError) as one:
        cljacobi.svd(A[1], variant="pointwise")
    for stack in (A, cl_array.to_device(queue, A)):
        with pytest.raises(np.linalg.LinAlgError) as error:
            cljacobi.svd(stack)
        assert str(error.value) == str(one.value).replace("of A", "of A[1]")
    G = rng.standard_normal((3, 6, 4))
    G[1, :, 2] = 0
    with pytest.raises(ValueError, match=r"column 2 of G\[1\] is zero"):
        cljacobi.hsvd(cl_array.to_device(queue, G), [1, 1, -1, -1])


@pytest.mark.parametrize(("m", "n"), [(9, 6), (6, 9)])
@pytest.mark.parametrize("complex_", [False, True])
def test_two_sided_graded_stack_to_relative_accuracy(m, n, complex_, rng):
    """A = D_1 B D_2, rows and columns graded over 2^-60 each, tall and wide:
    the device QR (rows sorted, columns pivoted) and the sweeps on R^* give
    every singular value to relative accuracy against a high-precision
    oracle, where LAPACK's bidiagonalization loses the small ones."""
    from hiprec import singular_values_hiprec

    B = rng.standard_normal((3, m, n))
    if complex_:
        B = B + 1j * rng.standard_normal(B.shape)
    rows = 2.0 ** -rng.permutation(np.linspace(0, 60, m).round())
    columns = 2.0 ** -rng.permutation(np.linspace(0, 60, n).round())
    A = rows[:, None] * B * columns
    S = cljacobi.svd(A, compute_uv=False)
    for b in range(3):
        reference = np.array(singular_values_hiprec(A[b]), dtype=np.float64)
        assert (np.abs(S[b] - reference) / reference).max() <= 1e-12
        lapack = np.linalg.svd(A[b], compute_uv=False)
        assert (np.abs(lapack - reference) / reference).max() > 1e-8


def test_info_counts_the_whole_call(rng):
    """A stack's info: the sweeps' share of their launch, and of the whole
    call (the QR and the results included) in total."""
    A = rng.standard_normal((4, 9, 6))
    _, infos = cljacobi.svd(A, return_info=True)
    assert all(info.factorization == "qr" for info in infos)
    assert all(info.seconds["total"] >= info.seconds["sweeps"] > 0 for info in infos)
