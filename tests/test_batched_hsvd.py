"""The batched hsvd: stacks of square factors in one launch (cljacobi._batch).

Each factor's result is held to the one-matrix path (``variant="pointwise"``,
the same strategy and rotation) and to the identities of the hyperbolic SVD
(``G = U diag(S) Vh``, U orthonormal, ``Vh diag(J_in) Vh^* = diag(J)``), and
on column-graded factors to the high-precision oracle; the contract of the
stack (errors naming the matrix, warnings, info, device arrays in and out,
bitwise repeatability, independence of the stack a matrix is in) is checked
here as for the batched eig_indefinite (tests/test_batched.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi import ConvergenceError, ConvergenceWarning
from cljacobi.host.batched import BATCHED_GLOBAL_ORDER_LIMIT, local_bytes

from hiprec import hyperbolic_eigenvalues_hiprec

EPS = np.finfo(np.float64).eps


def factor_stack(rng, count, n, complex_=False):
    G = rng.standard_normal((count, n, n))
    if complex_:
        G = G + 1j * rng.standard_normal((count, n, n))
    return G


def signatures(rng, count, n):
    return np.where(rng.standard_normal((count, n)) > 0, 1, -1)


def check_hsvd(G, J_in, result, tol=60):
    """The identities of the hyperbolic SVD, in n eps units of ||G||."""
    U, S, Vh, J = result
    n = G.shape[-1]
    unit = n * EPS * np.linalg.norm(G, 2, axis=(-2, -1))[..., None, None]
    assert np.all(np.diff(S, axis=-1) <= 0)
    assert np.all(np.abs(G - (U * S[..., None, :]) @ Vh) <= tol * unit * np.abs(Vh).max())
    gram = np.swapaxes(U, -1, -2).conj() @ U
    assert np.abs(gram - np.eye(n)).max() <= tol * n * EPS
    J_in = np.broadcast_to(J_in, S.shape)
    unitarity = (Vh * J_in[..., None, :]) @ np.swapaxes(Vh, -1, -2).conj()
    scale = np.abs(Vh).max(axis=(-2, -1))[..., None, None] ** 2
    assert np.all(np.abs(unitarity - J[..., None] * np.eye(n)) <= tol * n * EPS * scale)
    assert np.array_equal(np.sort(J, axis=-1), np.sort(J_in, axis=-1))


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 16, 33])
@pytest.mark.parametrize("complex_", [False, True])
def test_stack_matches_the_one_matrix_path(n, complex_, rng):
    G = factor_stack(rng, 6, n, complex_)
    J = signatures(rng, 6, n)
    result, infos = cljacobi.hsvd(G, J, return_info=True)
    assert [info.variant for info in infos] == ["batched"] * 6
    assert result.U.dtype == result.Vh.dtype == G.dtype and result.S.dtype == np.float64
    assert result.J.dtype == np.int8
    check_hsvd(G, J, result)
    for b in (0, 5):
        one, info1 = cljacobi.hsvd(G[b], J[b], variant="pointwise", return_info=True)
        assert np.abs(result.S[b] - one.S).max() <= 8 * n * EPS * one.S.max()
        assert np.array_equal(result.J[b], one.J)
        assert infos[b].rank == info1.rank == n
        assert infos[b].positive == info1.positive == np.count_nonzero(J[b] > 0)
        assert infos[b].converged and infos[b].sweeps >= 2
        # singular vectors agree up to a phase (random factors: distinct values)
        overlap = np.abs(np.swapaxes(result.U[b], -1, -2).conj() @ one.U)
        assert np.abs(overlap - np.eye(n)).max() <= 1e-8


@pytest.mark.parametrize("complex_", [False, True])
def test_graded_relative_accuracy(complex_, rng):
    """Column-graded factors G = B D: the hyperbolic singular values to
    relative accuracy, j_k S_k^2 against the eigenvalues of G J G^* in high
    precision (LAPACK on the formed G J G^* loses the small ones)."""
    n, count = 10, 3
    G = factor_stack(rng, count, n, complex_) * 2.0 ** -np.arange(0, 4 * n, 4)
    J = signatures(rng, count, n)
    S, J_out = cljacobi.hsvd(G, J, compute_uv=False)
    for b in range(count):
        reference = np.array(hyperbolic_eigenvalues_hiprec(G[b], J[b]), dtype=np.float64)
        error = np.abs(J_out[b] * S[b] ** 2 - reference) / np.abs(reference)
        assert error.max() <= 1e-12, error.max()
        formed = (G[b] * J[b]) @ G[b].conj().T
        lapack = np.linalg.eigvalsh(formed)
        lapack = lapack[np.argsort(-np.abs(lapack), kind="stable")]
        assert (np.abs(lapack - reference) / np.abs(reference)).max() > 1e-6


def test_row_graded_factors_as_the_one_matrix_path(rng):
    """Row-graded G = D B: the rows' norms switch the deflation of rounding-level
    columns off (peak_rounding, as the one-matrix path decides it); the
    values stay relatively accurate."""
    n, count = 9, 3
    G = factor_stack(rng, count, n) * 2.0 ** -np.arange(0, 4 * n, 4)[:, None]
    J = signatures(rng, count, n)
    S, J_out = cljacobi.hsvd(G, J, compute_uv=False)
    for b in range(count):
        one = cljacobi.hsvd(G[b], J[b], variant="pointwise", compute_uv=False)
        assert np.abs(S[b] - one[0]).max() <= 1e-13 * one[0].max()
        reference = np.array(hyperbolic_eigenvalues_hiprec(G[b], J[b]), dtype=np.float64)
        assert (np.abs(J_out[b] * S[b] ** 2 - reference) / np.abs(reference)).max() <= 1e-12


def test_bitwise_repeatable_and_independent_of_the_stack(rng):
    G = factor_stack(rng, 37, 9)
    J = signatures(rng, 37, 9)
    first = cljacobi.hsvd(G, J)
    second = cljacobi.hsvd(G, J)
    for a, b in zip(first, second):
        assert np.array_equal(a, b)
    alone = cljacobi.hsvd(G[17], J[17], variant="batched")
    for a, b in zip(alone, first):
        assert np.array_equal(a, b[17])
    reordered = cljacobi.hsvd(G[::-1].copy(), J[::-1].copy())
    for a, b in zip(reordered, first):
        assert np.array_equal(a[::-1], b)
    # without U and Vh: the same rotations, the same S and J
    S, J_out = cljacobi.hsvd(G, J, compute_uv=False)
    assert np.array_equal(S, first.S) and np.array_equal(J_out, first.J)


def test_one_signature_for_the_stack_and_leading_dimensions(rng):
    G = factor_stack(rng, 12, 6).reshape(3, 4, 6, 6)
    J = np.array([1, -1, 1, 1, -1, 1])
    result = cljacobi.hsvd(G, J)
    assert result.S.shape == (3, 4, 6) and result.U.shape == (3, 4, 6, 6)
    assert result.J.shape == (3, 4, 6)
    check_hsvd(G, J, result)
    each = cljacobi.hsvd(G, np.broadcast_to(J, (3, 4, 6)).astype(float))
    for a, b in zip(result, each):
        assert np.array_equal(a, b)
    single = cljacobi.hsvd(G.astype(np.float32), J)
    assert single.S.dtype == np.float32 and single.U.dtype == np.float32
    with pytest.raises(ValueError, match="J must have shape"):
        cljacobi.hsvd(G, np.ones(5))
    with pytest.raises(ValueError):
        cljacobi.hsvd(G, np.array([1, -1, 2, 1, -1, 1]))


@pytest.mark.parametrize("sign", [1, -1])
def test_one_sign_is_the_svd(sign, rng):
    """J = I and J = -I: only trigonometric rotations, S the singular values;
    any memory layout of the stack."""
    G = np.asfortranarray(factor_stack(rng, 8, 7, complex_=True))
    J = np.full(7, sign)
    result = cljacobi.hsvd(G, J)
    exact = np.linalg.svd(G, compute_uv=False)
    assert np.abs(result.S - exact).max() <= 60 * 7 * EPS * exact.max()
    assert np.all(result.J == sign)
    check_hsvd(G, J, result)
    assert np.array_equal(cljacobi.hsvd(np.ascontiguousarray(G), J).S, result.S)


def test_input_is_not_modified(rng):
    G = factor_stack(rng, 5, 7)
    J = signatures(rng, 5, 7)
    copies = G.copy(), J.copy()
    cljacobi.hsvd(G, J)
    assert np.array_equal(G, copies[0]) and np.array_equal(J, copies[1])


def test_device_arrays_stay_on_the_device(rng, queue):
    G = factor_stack(rng, 10, 8, complex_=True)
    J = signatures(rng, 10, 8)
    d_G = cl_array.to_device(queue, G)
    result = cljacobi.hsvd(d_G, J)
    assert all(isinstance(x, cl_array.Array) for x in result)
    host = cljacobi.hsvd(G, J)
    for a, b in zip(result, host):
        assert np.array_equal(a.get(), b)
    assert np.array_equal(d_G.get(), G)
    strided = cljacobi.hsvd(d_G[::2], J[::2], compute_uv=False)
    assert np.array_equal(strided[0].get(), host.S[::2])


def test_one_bad_matrix_is_named(rng):
    G = factor_stack(rng, 6, 5).reshape(2, 3, 5, 5)
    J = np.array([1, 1, -1, -1, 1])
    bad = G.copy()
    bad[1, 2, :, 3] = 0
    with pytest.raises(ValueError, match=r"column 3 of G\[1, 2\] is zero"):
        cljacobi.hsvd(bad, J)
    bad = G.copy()
    bad[0, 1] = np.diag([1.0, 2.0, 3.0, 4.0, 5.0])
    bad[0, 1, :, 2] = bad[0, 1, :, 0]  # equal columns of opposite signs: |coth 2phi| = 1
    for one_matrix in (bad, bad[0, 1]):
        with pytest.raises(np.linalg.LinAlgError, match=r"columns of G(\[0, 1\])? could not"):
            cljacobi.hsvd(one_matrix, J)
    bad = G.copy()
    bad[0, 1, 2, 2] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.hsvd(bad, J)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        cljacobi.hsvd(bad, J, check_finite=False)


def test_dependency_within_one_sign_is_a_zero_value(rng):
    """A column repeated with the same sign rotates into a zero column: S gets
    a zero, U an orthonormal completion (as the one-matrix path)."""
    G = factor_stack(rng, 3, 6, complex_=True)
    G[1, :, 5] = G[1, :, 0]
    J = np.array([1, 1, -1, -1, 1, 1])
    result, infos = cljacobi.hsvd(G, J, return_info=True)
    assert [info.rank for info in infos] == [6, 5, 6]
    one = cljacobi.hsvd(G[1], J, variant="pointwise")
    assert result.S[1, -1] <= 1e-14 * result.S[1, 0]
    assert np.abs(result.S[1, :5] - one.S[:5]).max() <= 1e-13 * one.S[0]
    check_hsvd(G, J, result)


def test_nonconvergence_per_matrix(rng):
    G = factor_stack(rng, 4, 12)
    G[2] = np.diag(np.arange(1.0, 13.0))  # orthogonal columns: one sweep
    J = np.ones(12)
    with pytest.raises(ConvergenceError, match=r"matrix \(0,\) of the stack") as caught:
        cljacobi.hsvd(G, J, max_sweeps=2)
    assert caught.value.info.sweeps == 2 and not caught.value.info.converged
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result, infos = cljacobi.hsvd(G, J, max_sweeps=2, on_nonconvergence="warn",
                                      return_info=True)
    messages = [str(x.message) for x in seen if issubclass(x.category, ConvergenceWarning)]
    assert len(messages) == 1 and "[(0,), (1,), (3,)]" in messages[0]
    assert [info.converged for info in infos] == [False, False, True, False]
    assert np.allclose(result.S[2], np.arange(12.0, 0.0, -1.0), rtol=4 * EPS, atol=0)


@pytest.mark.parametrize("strategy", ["mm", "me", "ring", "round-robin"])
@pytest.mark.parametrize("rotation", [1, 2])
def test_strategies_and_rotations(strategy, rotation, rng):
    G = factor_stack(rng, 5, 11)
    J = signatures(rng, 5, 11)
    result, infos = cljacobi.hsvd(G, J, strategy=strategy, rotation=rotation, return_info=True)
    assert all(info.strategy == strategy and info.rotation == rotation for info in infos)
    check_hsvd(G, J, result)
    check_hsvd(G, J, cljacobi.hsvd(G, J, strategy=strategy, rotation=rotation,
                                   sort_diagonal=False))


def test_what_runs_where(rng, queue):
    G = factor_stack(rng, 3, 6)
    J = signatures(rng, 3, 6)
    _, info = cljacobi.hsvd(G[0], J[0], return_info=True)
    assert info.variant != "batched"
    _, infos = cljacobi.hsvd(G, J, rotation=3, return_info=True)
    assert infos[0].variant == "pointwise"
    wide = rng.standard_normal((3, 5, 6))
    with pytest.raises(ValueError, match="hsvd needs m >= n"):
        cljacobi.hsvd(wide, J)
    limit = BATCHED_GLOBAL_ORDER_LIMIT
    big = rng.standard_normal((1, limit + 1, limit + 1))
    with pytest.raises(ValueError, match=f"order {limit + 1} exceeds {limit}, the largest"):
        cljacobi.hsvd(big, np.ones(limit + 1), variant="batched")
    with pytest.raises(ValueError, match=f"order {limit + 1} exceeds {limit}, the largest"):
        cljacobi.svd(big, variant="batched")


def test_local_memory_model():
    """G and V of real n = 52 and complex n = 36 fit 48 KiB (without U and
    Vh, V is not kept: the limits of eig_indefinite's kernel)."""
    def fits(n, complex_, vectors=True):
        return local_bytes(n, complex_, vectors, 1, problem="hsvd") <= 48 * 1024

    assert fits(52, False) and not fits(53, False)
    assert fits(36, True) and not fits(37, True)
    assert local_bytes(72, False, False, 1, problem="hsvd") == local_bytes(72, False, False, 1)


# ---------------------------------------------------------------------------
# Tall G and svd: the QR of every matrix on the host, the sweeps in one launch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("complex_", [False, True])
def test_tall_factors_as_the_one_matrix_path(complex_, rng):
    """A tall G is shortened by the row-sorted, column-pivoted QR first, as
    on the one-matrix path: the same S, J and Vh to rounding, U = Q U_R."""
    G = factor_stack(rng, 5, 6, complex_)
    G = np.concatenate([G, factor_stack(rng, 5, 6, complex_)[:, :3]], axis=1)  # 9 x 6
    J = signatures(rng, 5, 6)
    result, infos = cljacobi.hsvd(G, J, return_info=True)
    assert all(info.variant == "batched" and info.factorization == "qr" for info in infos)
    assert result.U.shape == (5, 9, 6) and result.Vh.shape == (5, 6, 6)
    for b in range(5):
        one = cljacobi.hsvd(G[b], J[b], variant="pointwise")
        assert np.abs(result.S[b] - one.S).max() <= 60 * 9 * EPS * one.S.max()
        assert np.array_equal(result.J[b], one.J)
        assert np.abs(result.Vh[b] - one.Vh).max() <= 1e-10 * np.abs(one.Vh).max()
    check_tall(G, J, result)
    S, J_out = cljacobi.hsvd(G, J, compute_uv=False)
    assert np.array_equal(S, result.S) and np.array_equal(J_out, result.J)


def check_tall(G, J_in, result, tol=60):
    U, S, Vh, _ = result
    m, n = G.shape[-2:]
    unit = m * EPS * np.linalg.norm(G, 2, axis=(-2, -1))[..., None, None]
    assert np.all(np.abs(G - (U * S[..., None, :]) @ Vh) <= tol * unit * np.abs(Vh).max())
    assert np.abs(np.swapaxes(U, -1, -2).conj() @ U - np.eye(n)).max() <= tol * m * EPS


@pytest.mark.parametrize("shape", [(6, 6), (9, 5), (5, 9), (2, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_svd_stack_as_the_one_matrix_path(shape, complex_, rng):
    """svd of a stack: the QR of A (A^* when wide) on the host, the sweeps on
    R^* in one launch; zero and rank-deficient matrices among the others."""
    m, n = shape
    A = rng.standard_normal((2, 3, m, n))
    if complex_:
        A = A + 1j * rng.standard_normal(A.shape)
    A[0, 1] = 0
    A[1, 2, :, 0] = A[1, 2, 0, :] = 0  # an exactly zero singular value
    k = min(m, n)
    for full_matrices in (False, True):
        result, infos = cljacobi.svd(A, full_matrices=full_matrices, return_info=True)
        assert all(info.variant == "batched" and info.factorization == "qr" for info in infos)
        for index in np.ndindex(2, 3):
            one, info1 = cljacobi.svd(A[index], full_matrices=full_matrices,
                                      variant="pointwise", return_info=True)
            U, S, Vh = (x[index] for x in result)
            assert U.shape == one.U.shape and Vh.shape == one.Vh.shape
            assert np.abs(S - one.S).max() <= 60 * max(m, n) * EPS * max(one.S.max(), 1)
            assert infos[3 * index[0] + index[1]].rank == info1.rank
            assert np.abs(A[index] - (U[:, :k] * S) @ Vh[:k]).max() <= 1e-13 * max(S.max(), 1)
            assert np.abs(U.conj().T @ U - np.eye(U.shape[1])).max() <= 1e-13
            assert np.abs(Vh @ Vh.conj().T - np.eye(Vh.shape[0])).max() <= 1e-13
    assert np.array_equal(cljacobi.svd(A, compute_uv=False), result.S)
    assert infos[3 * 1 + 2].rank == k - 1 and infos[1].rank == 0


def test_svd_stack_graded_bitwise_and_on_the_device(rng, queue):
    """Column-graded A: S to relative accuracy as the one-matrix path; bitwise
    repeatable; a pyopencl stack gives pyopencl results, the same values."""
    A = factor_stack(rng, 4, 8) * 2.0 ** -np.arange(0, 64, 8)
    first = cljacobi.svd(A)
    for a, b in zip(first, cljacobi.svd(A)):
        assert np.array_equal(a, b)
    for b in range(4):
        one = cljacobi.svd(A[b], variant="pointwise", compute_uv=False)
        assert (np.abs(first.S[b] - one) / one).max() <= 1e-12
    on_device = cljacobi.svd(cl_array.to_device(queue, A))
    assert all(isinstance(x, cl_array.Array) for x in on_device)
    for a, b in zip(on_device, first):
        assert np.array_equal(a.get(), b)


def test_svd_stack_errors_name_the_matrix(rng):
    A = rng.standard_normal((3, 5, 4))
    A[2, 1, 1] = np.inf
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.svd(A)
    G = rng.standard_normal((3, 6, 4))
    G[1, :, 2] = 0
    with pytest.raises(ValueError, match=r"column 2 of G\[1\] is zero"):
        cljacobi.hsvd(G, [1, 1, -1, -1])


@pytest.mark.parametrize("problem", ["hsvd", "svd"])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("n", [2, 7, 24])
def test_matrices_in_global_memory_give_the_same_bits(n, complex_, problem, rng, queue):
    """Above the local-memory limit G and V go to a global workspace (orders up
    to BATCHED_GLOBAL_ORDER_LIMIT): the same operations, so the same results
    and records bit for bit, a dependency within one sign included."""
    from cljacobi.host.batched import batched_hsvd

    G = factor_stack(rng, 5, n, complex_)
    G[1, :, -1] = G[1, :, 0]  # a zero value where the signs agree
    signs = np.ones(n, np.int32) if problem == "svd" else np.where(np.arange(n) % 3, 1, -1)
    signs[-1] = signs[0]
    for vectors in (True, False):
        runs = [batched_hsvd(queue, cl_array.to_device(queue, G),
                             cl_array.to_device(queue, signs.astype(np.int32)), vectors=vectors,
                             strategy="me", rotation=2, sort_diagonal=True, max_sweeps=60,
                             problem=problem, matrix_in_global=in_global,
                             row_split=1)  # one layout of the sweeps for both
                for in_global in (False, True)]
        np.testing.assert_array_equal(runs[0].flags, runs[1].flags)
        for name in ("values", "J", "U", "Vh"):
            first, second = getattr(runs[0], name), getattr(runs[1], name)
            if first is not None:
                np.testing.assert_array_equal(first.get(), second.get())
        (info, report, rotations), (info1, report1, rotations1) = (r.records() for r in runs)
        np.testing.assert_array_equal(info, info1)
        # the entries the hsvd kernel writes: the zero column, the column maxima
        np.testing.assert_array_equal(report[:, [0, 4, 5]], report1[:, [0, 4, 5]])
        for b, sweeps in enumerate(info[:, 1]):  # written for the sweeps run
            np.testing.assert_array_equal(rotations[b, :sweeps], rotations1[b, :sweeps])


def test_nested_lists_are_stacks_too():
    """array_like input, not only arrays: a stack given as nested lists."""
    A = [[[1.0, 2.0], [2.0, 1.0]], [[3.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]]
    assert np.array_equal(cljacobi.eig_indefinite(A, eigvals_only=True),
                          cljacobi.eig_indefinite(np.array(A), eigvals_only=True))
    assert np.array_equal(cljacobi.svd(A, compute_uv=False),
                          cljacobi.svd(np.array(A), compute_uv=False))
    tall = [[[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]]] * 2
    for G in (A, tall):
        S, J = cljacobi.hsvd(G, [1, -1], compute_uv=False)
        S_array, J_array = cljacobi.hsvd(np.array(G), [1, -1], compute_uv=False)
        assert np.array_equal(S, S_array) and np.array_equal(J, J_array)


def test_stack_names_are_formed_on_demand():
    """The names of a stack's matrices in messages: C order over the leading
    shape, phrases around them, the plain argument for a single matrix."""
    from cljacobi._stack_names import StackNames

    names = StackNames("A", (2, 3))
    assert len(names) == 6
    assert [names[0], names[4], names[-1]] == ["A[0, 0]", "A[1, 1]", "A[1, 2]"]
    assert names[1:3] == ["A[0, 1]", "A[0, 2]"]
    phrase = names.phrased("{}^*").phrased("a singular value of {}")
    assert phrase[5] == "a singular value of A[1, 2]^*"
    assert StackNames("G", ())[0] == "G"
    with pytest.raises(IndexError, match="matrix 6 of a stack of 6"):
        names[6]


@pytest.mark.parametrize(("n", "complex_", "problem"), [(7, True, "hsvd"), (24, False, "svd")])
def test_rows_split_over_work_items(n, complex_, problem, rng, queue):
    """Two work-items per pivot pair in the sweeps (V's rows split as G's):
    the same S, J and signature to rounding as one per pair, U and Vh
    reconstructing G, and the same bits from run to run."""
    from cljacobi.host.batched import batched_hsvd

    G = factor_stack(rng, 6, n, complex_)
    signs = np.ones(n, np.int32) if problem == "svd" else np.where(np.arange(n) % 3, 1, -1)
    d_G, d_signs = cl_array.to_device(queue, G), cl_array.to_device(queue, signs.astype(np.int32))

    def run(split):
        return batched_hsvd(queue, d_G, d_signs, vectors=True, strategy="me", rotation=2,
                            sort_diagonal=True, max_sweeps=60, problem=problem, row_split=split)

    single, first, again = run(1), run(2), run(2)
    assert first.summary == 0
    for name in ("values", "J", "U", "Vh"):
        np.testing.assert_array_equal(getattr(first, name).get(), getattr(again, name).get())
    S, S1 = first.values.get(), single.values.get()
    np.testing.assert_array_equal(first.J.get(), single.J.get())
    assert (np.abs(S - S1) <= 40 * n * EPS * S1.max(axis=-1, keepdims=True)).all()
    U, Vh = first.U.get(), first.Vh.get()
    scale = np.linalg.norm(G, axis=(-2, -1))[:, None, None]
    assert (np.abs((U * S[:, None, :]) @ Vh - G) <= 40 * n * EPS * scale).all()


@pytest.mark.parametrize(("n", "complex_", "problem"), [(7, True, "hsvd"), (13, False, "svd")])
def test_row_vectors_and_math_to_rounding(n, complex_, problem, rng, queue):
    """The CPUs' specializations (row vectors over G's and V's rows, clang's
    builtins) on any device: the same S and J to rounding as elements and
    OpenCL's built-ins, U and Vh reconstructing G, the same bits from run to
    run."""
    from cljacobi.host.batched import batched_hsvd

    G = factor_stack(rng, 6, n, complex_)
    signs = np.ones(n, np.int32) if problem == "svd" else np.where(np.arange(n) % 3, 1, -1)
    d_G, d_signs = cl_array.to_device(queue, G), cl_array.to_device(queue, signs.astype(np.int32))

    def run(vector, math):
        return batched_hsvd(queue, d_G, d_signs, vectors=True, strategy="me", rotation=2,
                            sort_diagonal=True, max_sweeps=60, problem=problem, row_split=1,
                            row_vector=vector, math=math)

    plain = run(1, "library")
    S1 = plain.values.get()
    for vector, math in [(2, "inline"), (4, "library"), (8, "inline")]:
        first, again = run(vector, math), run(vector, math)
        assert first.summary == 0
        for name in ("values", "J", "U", "Vh"):
            np.testing.assert_array_equal(getattr(first, name).get(), getattr(again, name).get())
        S = first.values.get()
        np.testing.assert_array_equal(first.J.get(), plain.J.get())
        assert (np.abs(S - S1) <= 40 * n * EPS * S1.max(axis=-1, keepdims=True)).all()
        U, Vh = first.U.get(), first.Vh.get()
        scale = np.linalg.norm(G, axis=(-2, -1))[:, None, None]
        assert (np.abs((U * S[:, None, :]) @ Vh - G) <= 40 * n * EPS * scale).all()
