"""The batched kernel: stacks of small matrices in one launch (cljacobi._batch).

Each matrix's result is held to the one-matrix path (``variant="pointwise"``,
the same factorization rules, strategy and rotation), to LAPACK, and on
graded data to the high-precision oracle; the contract of the stack (per
matrix errors, warnings, info, device arrays in and out, bitwise
repeatability, independence of the stack a matrix is in) is checked here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi import ConvergenceError, ConvergenceWarning
from cljacobi.factorization import j_factorize
from cljacobi.host.batched import (BATCHED_GLOBAL_ORDER_LIMIT, BatchedSpec, BatchStatus,
                                   batched_eig, batched_order_limit, lanes_for, local_bytes,
                                   math_for, row_vector_for)
from cljacobi.matrices import graded, with_spectrum

from hiprec import eigvalsh_hiprec

EPS = np.finfo(np.float64).eps


def hermitian_stack(rng, count, n, complex_=False):
    X = rng.standard_normal((count, n, n))
    if complex_:
        X = X + 1j * rng.standard_normal((count, n, n))
    return X + np.swapaxes(X, -1, -2).conj()


def check_eigenpairs(A, w, U, tol=60):
    """Residual, orthogonality and eigenvalues against LAPACK, in n eps ||A|| units."""
    n = A.shape[-1]
    scale = np.abs(np.linalg.eigvalsh(A)).max(axis=-1)[..., None]
    unit = n * EPS * scale
    assert np.all(np.diff(w, axis=-1) >= 0)
    assert np.all(np.abs(w - np.linalg.eigvalsh(A)) <= tol * unit)
    residual = np.abs(A @ U - U * w[..., None, :]).max(axis=(-2, -1))
    assert np.all(residual <= tol * unit[..., 0])
    gram = np.swapaxes(U, -1, -2).conj() @ U
    assert np.abs(gram - np.eye(n)).max() <= tol * n * EPS


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 16, 33, 64, 97])
@pytest.mark.parametrize("complex_", [False, True])
def test_stack_matches_lapack_and_one_matrix_path(n, complex_, rng, queue):
    A = hermitian_stack(rng, 6, n, complex_)
    (w, U), infos = cljacobi.eig_indefinite(A, return_info=True)
    assert [info.variant for info in infos] == ["batched"] * 6
    assert U.dtype == A.dtype and w.dtype == np.float64
    check_eigenpairs(A, w, U)
    for b in (0, 5):
        (w1, U1), info1 = cljacobi.eig_indefinite(A[b], variant="pointwise", return_info=True)
        scale = np.abs(w1).max()
        assert np.abs(w[b] - w1).max() <= 8 * n * EPS * scale
        # eigenvectors agree up to a phase (random spectra are well separated)
        overlap = np.abs(np.swapaxes(U[b], -1, -2).conj() @ U1)
        assert np.abs(overlap - np.eye(n)).max() <= 1e-8
        assert infos[b].rank == info1.rank == n
        assert infos[b].positive == info1.positive
        assert infos[b].converged and infos[b].sweeps >= 2


@pytest.mark.parametrize("complex_", [False, True])
def test_graded_relative_accuracy(complex_, rng):
    n = 12
    stack, references = [], []
    for _ in range(4):
        M, _, _ = graded(n, low_exponent=-40, rng=rng,
                         dtype=np.complex128 if complex_ else np.float64)
        stack.append(M)
        references.append(eigvalsh_hiprec(M))
    w, infos = cljacobi.eig_indefinite(np.array(stack), eigvals_only=True, return_info=True)
    error = np.abs(w - np.array(references)) / np.abs(np.array(references))
    assert error.max() <= 1e-12, error.max()
    # LAPACK on the same stack loses the small eigenvalues
    lapack = np.abs(np.linalg.eigvalsh(np.array(stack)) - references) / np.abs(references)
    assert lapack.max() > 1e-6
    assert all(info.variant == "batched" for info in infos)


def test_inertia_and_rank_as_the_host_factorization(rng):
    n, count = 10, 8
    stack = []
    for b in range(count):
        rank = n - b % 4
        G = rng.standard_normal((n, rank))
        signs = np.where(np.arange(rank) < rank // 2 + b % 2, 1.0, -1.0)
        stack.append((G * signs) @ G.T)
    A = np.array(stack)
    (w, U), infos = cljacobi.eig_indefinite(A, return_info=True)
    for b in range(count):
        factor = j_factorize(A[b])
        assert infos[b].rank == factor.G.shape[1] == n - b % 4
        assert infos[b].positive == factor.p
        assert np.count_nonzero(w[b] == 0) == n - infos[b].rank
    check_eigenpairs(A, w, U, tol=200)


def test_zero_and_diagonal_matrices():
    A = np.zeros((3, 4, 4))
    A[1] = np.diag([3.0, -1.0, 0.0, 2.0])
    A[2, 0, 3] = A[2, 3, 0] = 1.0
    w, U = cljacobi.eig_indefinite(A, variant="batched")
    assert np.array_equal(w[0], np.zeros(4)) and np.array_equal(U[0], np.eye(4))
    assert np.allclose(w[1], [-1.0, 0.0, 2.0, 3.0], rtol=4 * EPS, atol=0)
    assert np.allclose(np.abs(U[1]), np.eye(4)[:, [1, 2, 3, 0]])
    assert np.allclose(w[2], [-1.0, 0.0, 0.0, 1.0], rtol=4 * EPS, atol=0)
    check_eigenpairs(A, w, U)


def test_bitwise_repeatable_and_independent_of_the_stack(rng):
    A = hermitian_stack(rng, 37, 9)
    first = cljacobi.eig_indefinite(A)
    second = cljacobi.eig_indefinite(A)
    assert np.array_equal(first.eigenvalues, second.eigenvalues)
    assert np.array_equal(first.eigenvectors, second.eigenvectors)
    alone = cljacobi.eig_indefinite(A[17], variant="batched")
    assert np.array_equal(alone.eigenvalues, first.eigenvalues[17])
    assert np.array_equal(alone.eigenvectors, first.eigenvectors[17])
    reordered = cljacobi.eig_indefinite(A[::-1].copy())
    assert np.array_equal(reordered.eigenvectors[::-1], first.eigenvectors)


def test_leading_dimensions_layouts_and_dtypes(rng):
    A = hermitian_stack(rng, 12, 6).reshape(3, 4, 6, 6)
    w, U = cljacobi.eig_indefinite(A)
    assert w.shape == (3, 4, 6) and U.shape == (3, 4, 6, 6)
    check_eigenpairs(A, w, U)
    fortran = np.asfortranarray(A)
    assert np.array_equal(cljacobi.eig_indefinite(fortran).eigenvalues, w)
    single = cljacobi.eig_indefinite(A.astype(np.float32))
    assert single.eigenvalues.dtype == np.float32 and single.eigenvectors.dtype == np.float32
    integers = cljacobi.eig_indefinite(np.rint(A).astype(np.int64), eigvals_only=True)
    assert integers.dtype == np.float64
    assert np.allclose(integers, np.linalg.eigvalsh(np.rint(A)), atol=1e-12 * 6 * 10)


def test_input_is_not_modified(rng):
    A = hermitian_stack(rng, 5, 7)
    A[:, 0, 1] += 1e-12  # asymmetric within the tolerance: the lower triangle is used
    copy = A.copy()
    cljacobi.eig_indefinite(A)
    assert np.array_equal(A, copy)


def test_device_arrays_stay_on_the_device(rng, queue):
    A = hermitian_stack(rng, 10, 8, complex_=True)
    d_A = cl_array.to_device(queue, A)
    w, U = cljacobi.eig_indefinite(d_A)
    assert isinstance(w, cl_array.Array) and isinstance(U, cl_array.Array)
    assert w.shape == (10, 8) and U.shape == (10, 8, 8) and U.dtype == np.complex128
    host = cljacobi.eig_indefinite(A)
    assert np.array_equal(w.get(), host.eigenvalues)
    assert np.array_equal(U.get(), host.eigenvectors)
    assert np.array_equal(d_A.get(), A)
    # a strided view of a device stack, and single precision converted on the device
    strided = d_A[::2]
    assert np.array_equal(cljacobi.eig_indefinite(strided, eigvals_only=True).get(),
                          host.eigenvalues[::2])
    # an F-ordered stack with two leading dimensions (pyopencl cannot reshape it)
    fortran = cl_array.to_device(queue, np.asfortranarray(A.reshape(2, 5, 8, 8)))
    assert np.array_equal(cljacobi.eig_indefinite(fortran).eigenvalues.get(),
                          host.eigenvalues.reshape(2, 5, 8))
    single = cljacobi.eig_indefinite(cl_array.to_device(queue, A.astype(np.complex64)))
    assert single.eigenvalues.dtype == np.float32
    assert single.eigenvectors.dtype == np.complex64


def test_one_bad_matrix_is_named(rng):
    A = hermitian_stack(rng, 6, 5).reshape(2, 3, 5, 5)
    bad = A.copy()
    bad[1, 2, 0, 4] += 1.0
    with pytest.raises(ValueError, match=r"M\[1, 2\] is not symmetric"):
        cljacobi.eig_indefinite(bad)
    bad = A.copy()
    bad[0, 1, 2, 2] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.eig_indefinite(bad)
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        cljacobi.eig_indefinite(bad, check_finite=False)
    bad = A.copy()
    bad[1, 0, 0, 0] = 1e300
    bad[1, 0, 1, 1] = 1e-310
    bad[1, 0, 0, 1:] = bad[1, 0, 1:, 0] = 0
    with pytest.raises(ValueError, match=r"M\[1, 0\] span magnitudes"):
        cljacobi.eig_indefinite(bad)


def test_nonconvergence_per_matrix(rng):
    A = hermitian_stack(rng, 4, 12)
    A[2] = np.diag(np.arange(12.0))  # converges in one sweep
    with pytest.raises(ConvergenceError, match=r"matrix \(0,\) of the stack") as caught:
        cljacobi.eig_indefinite(A, max_sweeps=2)
    assert caught.value.info.sweeps == 2 and not caught.value.info.converged
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        (w, U), infos = cljacobi.eig_indefinite(A, max_sweeps=2, on_nonconvergence="warn",
                                                return_info=True)
    messages = [str(x.message) for x in seen if issubclass(x.category, ConvergenceWarning)]
    assert len(messages) == 1 and "[(0,), (1,), (3,)]" in messages[0]
    assert [info.converged for info in infos] == [False, False, True, False]
    assert np.allclose(w[2], np.arange(12.0), rtol=4 * EPS, atol=0)


@pytest.mark.parametrize("strategy", ["mm", "me", "ring", "round-robin"])
@pytest.mark.parametrize("rotation", [1, 2])
def test_strategies_and_rotations(strategy, rotation, rng):
    A = hermitian_stack(rng, 5, 11)
    (w, U), infos = cljacobi.eig_indefinite(A, strategy=strategy, rotation=rotation,
                                            return_info=True)
    assert all(info.strategy == strategy and info.rotation == rotation for info in infos)
    check_eigenpairs(A, w, U)
    unsorted = cljacobi.eig_indefinite(A, strategy=strategy, rotation=rotation,
                                       sort_diagonal=False)
    check_eigenpairs(A, *unsorted)


def test_what_runs_where(rng, queue):
    A = hermitian_stack(rng, 3, 6)
    _, infos = cljacobi.eig_indefinite(A, rotation=3, return_info=True)
    assert infos[0].variant == "pointwise"
    _, info = cljacobi.eig_indefinite(A[0], return_info=True)
    assert info.variant != "batched"
    with pytest.raises(ValueError, match="variant='batched' cannot run here: rotation=3"):
        cljacobi.eig_indefinite(A, rotation=3, variant="batched")
    limit = BATCHED_GLOBAL_ORDER_LIMIT
    big = hermitian_stack(rng, 2, limit + 1)
    with pytest.raises(ValueError, match=f"order {limit + 1} exceeds {limit}, the largest"):
        cljacobi.eig_indefinite(big, variant="batched", eigvals_only=True)
    _, infos = cljacobi.eig_indefinite(big, eigvals_only=True, return_info=True)
    assert infos[0].variant != "batched"
    with pytest.raises(ValueError, match="block_width"):
        cljacobi.eig_indefinite(A, variant="batched", block_width=4)
    with pytest.raises(ValueError, match="variant must be one of"):
        cljacobi.gsvd(A[0], A[1], variant="stream")  # gsvd's "batched": test_batched_gsvd.py


def test_eigh_stack_runs_batched(rng):
    A = hermitian_stack(rng, 7, 9, complex_=True)
    (w, U), infos = cljacobi.eigh(A, return_info=True)
    assert infos[0].variant == "batched"
    check_eigenpairs(A, w, U)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("n", [2, 7, 24])
def test_matrices_in_global_memory_give_the_same_bits(n, complex_, rng, queue):
    """The specialization with the matrices in global memory (orders above the
    local-memory limit) does the same operations: the same eigenvalues,
    eigenvectors and records bit for bit, singular matrices included."""
    A = hermitian_stack(rng, 5, n, complex_)
    G = rng.standard_normal((n, max(n - 3, 1)))
    A[1] = G @ G.T  # rank n - 3: the null space is completed
    stack = cl_array.to_device(queue, A)
    runs = [batched_eig(queue, stack, vectors=True, strategy="me", rotation=2,
                        sort_diagonal=True, max_sweeps=60, matrix_in_global=in_global,
                        row_split=1)  # one layout of the sweeps for both
            for in_global in (False, True)]
    np.testing.assert_array_equal(runs[0].flags, runs[1].flags)
    np.testing.assert_array_equal(runs[0].values.get(), runs[1].values.get())
    np.testing.assert_array_equal(runs[0].U.get(), runs[1].U.get())
    (info, report, rotations), (info1, report1, rotations1) = (r.records() for r in runs)
    np.testing.assert_array_equal(info, info1)  # flags, sweeps, rank, inertia, shifts
    np.testing.assert_array_equal(report, report1)
    for b, sweeps in enumerate(info[:, 1]):  # written for the sweeps run
        np.testing.assert_array_equal(rotations[b, :sweeps], rotations1[b, :sweeps])
    check_eigenpairs(A, runs[1].values.get(), runs[1].U.get())


def test_local_memory_model():
    """The documented limits: real n = 72 and complex n = 52 fit 48 KiB; with the
    matrices in global memory complex n = 128 needs under 12 KiB."""
    assert local_bytes(72, False, True, 1) <= 48 * 1024 < local_bytes(73, False, True, 1)
    assert local_bytes(52, True, True, 1) <= 48 * 1024 < local_bytes(53, True, True, 1)
    assert local_bytes(128, True, True, 1, matrix_in_global=True) <= 12 * 1024
    # six real 64 x 64 work-groups (each with the 1 KiB an NVIDIA SM reserves
    # per block) in an H200 SM's 228 KiB: arrays with disjoint lifetimes share
    # storage (five fit before, and 2,000 matrices took four waves, not three)
    assert 6 * (local_bytes(64, False, True, 1) + 1024) <= 228 * 1024
    assert [lanes_for(n) for n in (2, 3, 4, 5, 8, 9, 64)] == [1, 2, 2, 4, 4, 8, 32]


def test_flags_summary_is_the_or_of_the_flags(rng, queue):
    """The launch reads back the OR of the matrices' flags instead of every
    flag: zero for a clean stack (no per-matrix read), and where a matrix is
    flagged, the OR of exactly the flags the records hold."""
    A = hermitian_stack(rng, 40, 6)
    clean = batched_eig(queue, cl_array.to_device(queue, A), vectors=True, strategy="me",
                        rotation=2, sort_diagonal=True, max_sweeps=60)
    assert clean.summary == 0 and not clean.flags.any()
    assert not clean.records()[0][:, 0].any()
    A[7, 0, 1] += 1.0    # not symmetric
    A[31, 2, 2] = np.inf  # not finite
    flagged = batched_eig(queue, cl_array.to_device(queue, A), vectors=True, strategy="me",
                          rotation=2, sort_diagonal=True, max_sweeps=1)  # some unconverged
    flags = flagged.flags
    assert flags[7] == BatchStatus.NOT_HERMITIAN and flags[31] == BatchStatus.NOT_FINITE
    assert (flags & BatchStatus.NOT_CONVERGED).any()
    assert flagged.summary == np.bitwise_or.reduce(flags)
    np.testing.assert_array_equal(flagged.records()[0][:, 0], flags)


@pytest.mark.parametrize(("n", "complex_", "in_global"), [
    (2, False, False), (7, True, True), (24, False, False), (24, True, False)])
def test_rows_split_over_work_items(n, complex_, in_global, rng, queue):
    """Several work-items per pivot pair (each on every row_split-th row, the
    pair's sums added in a fixed tree): the same matrices' results to
    rounding as one work-item per pair, the same ranks and inertia, and the
    same bits from run to run; a singular matrix's null space included."""
    A = hermitian_stack(rng, 9, n, complex_)
    G = rng.standard_normal((n, max(n - 3, 1)))
    A[1] = G @ G.T
    A[4] = 0  # rank 0: no pair at all
    stack = cl_array.to_device(queue, A)

    def run(split):
        return batched_eig(queue, stack, vectors=True, strategy="me", rotation=2,
                           sort_diagonal=True, max_sweeps=60, matrix_in_global=in_global,
                           row_split=split)

    single = run(1)
    w1 = single.values.get()
    for split in (2, 4):
        first, again = run(split), run(split)
        assert first.summary == 0 and first.work_group_size % split == 0
        w, U = first.values.get(), first.U.get()
        np.testing.assert_array_equal(w, again.values.get())
        np.testing.assert_array_equal(U, again.U.get())
        info, info1 = first.records()[0], single.records()[0]
        np.testing.assert_array_equal(info[:, [0, 2, 3]], info1[:, [0, 2, 3]])  # flags, rank,
        scale = np.abs(w1).max(axis=-1, keepdims=True)                         # inertia
        assert (np.abs(w - w1) <= 40 * n * EPS * np.maximum(scale, 1e-300)).all()
        check_eigenpairs(A, w, U)


@pytest.mark.parametrize(("n", "complex_", "in_global"), [
    (2, False, False), (7, True, True), (13, False, False), (24, True, False)])
def test_row_vectors_and_math_to_rounding(n, complex_, in_global, rng, queue):
    """The CPUs' specializations (row vectors, clang's builtins) on any
    device, the matrices in local or global memory: the same matrices'
    results to rounding as elements and OpenCL's built-ins, the same flags,
    ranks and inertia, the same bits from run to run; a singular matrix's
    null space and a zero matrix included."""
    A = hermitian_stack(rng, 9, n, complex_)
    G = rng.standard_normal((n, max(n - 3, 1)))
    A[1] = G @ G.T
    A[4] = 0
    stack = cl_array.to_device(queue, A)

    def run(vector, math):
        return batched_eig(queue, stack, vectors=True, strategy="me", rotation=2,
                           sort_diagonal=True, max_sweeps=60, row_split=1,
                           matrix_in_global=in_global, row_vector=vector, math=math)

    plain = run(1, "library")
    w1 = plain.values.get()
    for vector, math in [(1, "inline"), (2, "library"), (4, "inline"), (8, "inline")]:
        first, again = run(vector, math), run(vector, math)
        assert first.summary == 0
        w, U = first.values.get(), first.U.get()
        np.testing.assert_array_equal(w, again.values.get())
        np.testing.assert_array_equal(U, again.U.get())
        info, info1 = first.records()[0], plain.records()[0]
        np.testing.assert_array_equal(info[:, [0, 2, 3]], info1[:, [0, 2, 3]])
        scale = np.abs(w1).max(axis=-1, keepdims=True)
        assert (np.abs(w - w1) <= 40 * n * EPS * np.maximum(scale, 1e-300)).all()
        check_eigenpairs(A, w, U)


def test_cpu_specializations_by_device_type():
    """CPUs get clang's builtins and row vectors of their preferred width
    (real: half of it; at most half a column); GPUs neither.  Bad widths are
    refused by the spec."""
    from types import SimpleNamespace

    import pyopencl as cl

    avx512 = SimpleNamespace(type=cl.device_type.CPU, preferred_vector_width_double=8)
    avx2 = SimpleNamespace(type=cl.device_type.CPU, preferred_vector_width_double=4)
    gpu = SimpleNamespace(type=cl.device_type.GPU, preferred_vector_width_double=1)
    assert (math_for(avx512), math_for(gpu)) == ("inline", "library")
    assert [row_vector_for(avx512, False, n) for n in (2, 5, 8, 32, 64)] == [2, 2, 4, 4, 4]
    assert [row_vector_for(avx512, True, n) for n in (2, 8, 16, 32)] == [2, 4, 8, 8]
    assert (row_vector_for(avx2, False, 32), row_vector_for(avx2, True, 32)) == (2, 4)
    assert row_vector_for(gpu, False, 32) == row_vector_for(gpu, True, 32) == 1
    with pytest.raises(ValueError, match="row_vector must be one of"):
        BatchedSpec("float64", 8, row_vector=3)
    with pytest.raises(ValueError, match="one work-item per pair"):
        BatchedSpec("float64", 8, row_split=2, row_vector=4)
    with pytest.raises(ValueError, match="at most 8 elements"):
        BatchedSpec("complex128", 8, row_vector=16)
    with pytest.raises(ValueError, match="math must be one of"):
        BatchedSpec("float64", 8, math="fast")


@pytest.mark.parametrize(("n", "complex_", "in_global"), [
    (3, False, False), (8, True, False), (30, False, False), (64, False, False),
    (24, True, True)])
def test_lane_sums_by_shuffles_give_the_same_bits(n, complex_, in_global, rng, queue):
    """lane_sums='shuffle' (NVIDIA: the lanes' reductions within a warp by
    shfl.sync, across warps through local memory) gives the local tree's
    results bit for bit, records included, on a stack with a singular, a
    zero and a graded matrix; elsewhere it is refused before launch, naming
    the device, and the spec refuses partial warps."""
    from cljacobi.errors import DeviceCapabilityError
    from cljacobi.host.matrix_products import compute_capability

    A = hermitian_stack(rng, 70, n, complex_)
    G = rng.standard_normal((n, max(n - 2, 1)))
    A[1] = G @ G.T
    A[4] = 0
    scale = 2.0 ** -np.arange(0, 3 * n, 3)
    A[5] = scale[:, None] * A[5] * scale[None, :]  # graded
    stack = cl_array.to_device(queue, np.ascontiguousarray(A))
    options = dict(vectors=True, strategy="me", rotation=2, sort_diagonal=True,
                   max_sweeps=60, matrix_in_global=in_global)
    if compute_capability(queue.device) is None:
        with pytest.raises(DeviceCapabilityError, match="lane_sums='shuffle' needs NVIDIA"):
            batched_eig(queue, stack, lane_sums="shuffle", **options)
    else:
        runs = [batched_eig(queue, stack, lane_sums=sums, **options)
                for sums in ("local", "shuffle")]
        for name in ("values", "U"):
            np.testing.assert_array_equal(getattr(runs[0], name).get(),
                                          getattr(runs[1], name).get())
        (info, report, rotations), (info1, report1, rotations1) = (r.records() for r in runs)
        np.testing.assert_array_equal(info, info1)  # flags, sweeps, rank, inertia, shifts
        factored = info[:, 2] > 0  # the column maxima are written for a rank above 0
        np.testing.assert_array_equal(report[:, :4], report1[:, :4])
        np.testing.assert_array_equal(report[factored, 4:], report1[factored, 4:])
        for b, sweeps in enumerate(info[:, 1]):  # written for the sweeps run
            np.testing.assert_array_equal(rotations[b, :sweeps], rotations1[b, :sweeps])
        check_eigenpairs(A, runs[1].values.get(), runs[1].U.get())
    with pytest.raises(ValueError, match="whole warps"):
        BatchedSpec("float64", 8, lane_sums="shuffle")  # 4 work-items
    with pytest.raises(ValueError, match="lane_sums must be one of"):
        BatchedSpec("float64", 8, lane_sums="atomic")


def test_split_sums_by_shuffles_only_on_nvidia(rng, queue):
    """pair_sums='shuffle' (NVIDIA's shfl.sync) is refused before launch
    elsewhere, naming the device; bad splits are refused by the spec."""
    from cljacobi.errors import DeviceCapabilityError
    from cljacobi.host.batched import BatchedSpec
    from cljacobi.host.matrix_products import compute_capability

    stack = cl_array.to_device(queue, hermitian_stack(rng, 4, 16))
    options = dict(vectors=True, strategy="me", rotation=2, sort_diagonal=True, max_sweeps=60)
    if compute_capability(queue.device) is None:
        with pytest.raises(DeviceCapabilityError, match="shfl.sync.*not an NVIDIA device"):
            batched_eig(queue, stack, row_split=4, pair_sums="shuffle", **options)
    else:  # the same tree of additions: the same bits as through local memory
        runs = [batched_eig(queue, stack, row_split=4, pair_sums=sums, **options)
                for sums in ("local", "shuffle")]
        np.testing.assert_array_equal(runs[0].U.get(), runs[1].U.get())
    with pytest.raises(ValueError, match="row_split must be a power of two"):
        BatchedSpec("float64", 8, row_split=3)
    with pytest.raises(ValueError, match="pair_sums must be one of"):
        BatchedSpec("float64", 8, row_split=2, pair_sums="atomic")
    with pytest.raises(ValueError, match="whole warps"):
        BatchedSpec("float64", 8, row_split=2, pair_sums="shuffle")  # 8 work-items


def test_row_split_lanes_and_local_memory():
    """A split multiplies the work-items per matrix; through local memory each
    adds its four sums (a_ij and three reals), by shuffles nothing."""
    assert [lanes_for(n, 4) for n in (2, 8, 64)] == [4, 16, 128]
    base = local_bytes(64, False, True, 1)
    assert local_bytes(64, False, True, 1, row_split=2, pair_sums="shuffle") == base + 32 * 12
    # the GPUs' layout of real 64 x 64 (two work-items per pair, shuffles)
    # still fits six work-groups in an H100 or H200 SM's 228 KiB
    assert 6 * (base + 32 * 12 + 1024) <= 228 * 1024
    assert local_bytes(64, True, True, 1, row_split=2) == (
        local_bytes(64, True, True, 1) + 32 * 12 + 64 * (16 + 24))


def test_gpu_layout_falls_back_where_it_does_not_fit():
    """The GPUs' measured sweep layout is a choice, never a failure: on a GPU
    without NVIDIA's shuffles the pair sums go through local memory, and
    where those no longer fit beside the matrix (the orders at the
    local-memory limit) the split is halved until they do."""
    from types import SimpleNamespace

    import pyopencl as cl

    from cljacobi.host.batched import _specialization

    common = dict(type=cl.device_type.GPU, local_mem_size=48 * 1024, max_work_group_size=1024)
    other_gpu = SimpleNamespace(**common, extensions="cl_khr_fp64", name="a GPU")
    nvidia = SimpleNamespace(**common, extensions="cl_khr_fp64 cl_nv_device_attribute_query",
                             name="an NVIDIA GPU", compute_capability_major_nv=9,
                             compute_capability_minor_nv=0)

    def layout(device, problem, n, complex_):
        stack = SimpleNamespace(shape=(10, n, n),
                                dtype=np.dtype(np.complex128 if complex_ else np.float64))
        spec = _specialization(SimpleNamespace(device=device), stack, problem, vectors=True,
                               rotation=2, sort_diagonal=True, matrix_in_global=None,
                               row_split=None, pair_sums=None)
        assert spec.local_bytes <= device.local_mem_size
        return spec.row_split, spec.pair_sums, spec.matrix_in_global

    assert layout(nvidia, "hsvd", 52, False) == (4, "shuffle", False)
    assert layout(other_gpu, "hsvd", 52, False) == (1, "local", False)  # 4 and 2 do not fit
    assert layout(nvidia, "eig", 64, False) == (2, "shuffle", False)
    assert layout(other_gpu, "eig", 64, False) == (2, "local", False)
    assert layout(other_gpu, "eig", 64, True) == (8, "local", True)
    assert layout(other_gpu, "eig", 8, False) == (1, "local", False)
