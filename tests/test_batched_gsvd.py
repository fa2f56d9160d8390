"""gsvd of stacks of pairs (cljacobi._batch_gsvd): the shortening, the sweeps
and the extraction of all pairs on the device (templates/batched_gsvd.cl.mako,
templates/batched_hz.cl.mako) held to the one-pair path, to its shortening
and sweeps kernel by kernel, and to the GSVD's identities; the contract of a
stack (errors and warnings naming the pair, info per pair, device arrays that
never cross the bus, bitwise repeatability, independence of the stack a pair
is in)."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi.host.batched_gsvd import BatchedGSVDSpec
from cljacobi.host.batched_hz import BatchedHZSpec, batched_hz_sweeps, hz_row_split
from cljacobi.host.hz import hz_sweeps

EPS = np.finfo(np.float64).eps


def pairs(rng, leading, m, p, n, complex_=False):
    A, B = rng.standard_normal((*leading, m, n)), rng.standard_normal((*leading, p, n))
    if complex_:
        A = A + 1j * rng.standard_normal(A.shape)
        B = B + 1j * rng.standard_normal(B.shape)
    return A, B


def close(x, y, tol=200 * EPS):
    return np.abs(x - y).max() <= tol * max(np.abs(y).max(), 1)


@pytest.mark.parametrize(("m", "p", "n"), [(6, 7, 5), (4, 8, 6), (8, 8, 8), (9, 5, 3),
                                           (5, 3, 1), (30, 20, 12), (2, 6, 5), (1, 4, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_stack_matches_the_one_pair_path(m, p, n, complex_, rng):
    """Every pair as gsvd gives it alone (variant "pointwise") to rounding,
    with the GSVD's identities; m < n included (its structural zeros)."""
    A, B = pairs(rng, (2, 3), m, p, n, complex_)
    A_copy, B_copy = A.copy(), B.copy()
    result, infos = cljacobi.gsvd(A, B, return_info=True)
    assert np.array_equal(A, A_copy) and np.array_equal(B, B_copy)
    assert result.U.shape == (2, 3, m, n) and result.X.shape == (2, 3, n, n)
    assert result.Z.shape == (2, 3, n, n) and result.C.shape == (2, 3, n)
    assert len(infos) == 6 and all(info.variant == "batched" and info.converged
                                   for info in infos)
    for q, index in enumerate(np.ndindex(2, 3)):
        one, info = cljacobi.gsvd(A[index], B[index], variant="pointwise", return_info=True)
        assert close(result.C[index], one.C) and close(result.S[index], one.S)
        for name in ("U", "V", "X", "Z"):
            assert close(getattr(result, name)[index], getattr(one, name)), name
        assert abs(infos[q].sweeps - info.sweeps) <= 1
        assert infos[q].rotations == sum(infos[q].rotations_per_sweep)
        assert infos[q].seconds["total"] >= infos[q].seconds["sweeps"] > 0
    U, _, C, S, X = result
    Xh = np.swapaxes(X, -1, -2).conj()
    scale_a = np.abs(A).max() * np.abs(X).max() * n
    assert np.abs(A - (U * C[..., None, :]) @ Xh).max() <= 100 * n * EPS * scale_a
    assert np.abs(C**2 + S**2 - 1).max() <= 4 * EPS


@pytest.mark.parametrize("options", [{"prescale": True}, {"criterion": "C2"},
                                     {"dots": "enhanced"}, {"compute_uv": False},
                                     {"compute_x": False}, {"strategy": "ring"}])
def test_options_as_for_one_pair(options, rng):
    A, B = pairs(rng, (3,), 7, 6, 5)
    result = cljacobi.gsvd(A, B, **options)
    for b in range(3):
        one = cljacobi.gsvd(A[b], B[b], variant="pointwise", **options)
        assert close(result.C[b], one.C) and close(result.S[b], one.S)
        for name in ("U", "V", "X"):
            ours, theirs = getattr(result, name), getattr(one, name)
            assert (ours is None) == (theirs is None)
            if ours is not None:
                assert close(ours[b], theirs)
        assert close(result.Z[b], one.Z)


def test_graded_pairs_to_relative_accuracy(rng):
    """A = B_1 D (columns graded over 2^-60), B well conditioned: the
    generalized singular values as the one-pair path gives them, relative to
    each (the sweeps' relative accuracy, [NS] Sect. 2)."""
    A, B = pairs(rng, (4,), 8, 8, 6)
    A = A * 2.0 ** -np.arange(0, 72, 12)
    result = cljacobi.gsvd(A, B)
    sigma = result.C / result.S
    for b in range(4):
        one = cljacobi.gsvd(A[b], B[b], variant="pointwise")
        assert (np.abs(sigma[b] - one.C / one.S) / (one.C / one.S)).max() <= 1e-13


def test_bitwise_repeatable_and_independent_of_the_stack(rng):
    A, B = pairs(rng, (5,), 7, 7, 6, complex_=True)
    first = cljacobi.gsvd(A, B)
    again = cljacobi.gsvd(A, B)
    part = cljacobi.gsvd(A[[3, 1]], B[[3, 1]])
    for name in ("U", "V", "C", "S", "X", "Z"):
        assert np.array_equal(getattr(first, name), getattr(again, name))
        assert np.array_equal(getattr(first, name)[[3, 1]], getattr(part, name))


def test_variants_of_a_stack(rng):
    """A stack with variant "pointwise" runs pair by pair; variant "batched"
    runs one pair (2-D) in the batched launch too; both give the same values."""
    A, B = pairs(rng, (2,), 6, 6, 4)
    batched = cljacobi.gsvd(A, B)
    pointwise, infos = cljacobi.gsvd(A, B, variant="pointwise", return_info=True)
    assert [info.variant for info in infos] == ["pointwise", "pointwise"]
    assert close(batched.C, pointwise.C)
    one, info = cljacobi.gsvd(A[1], B[1], variant="batched", return_info=True)
    assert isinstance(info, list) is False and info.variant == "batched"
    assert np.array_equal(one.C, batched.C[1]) and np.array_equal(one.X, batched.X[1])


def test_errors_name_the_pair(rng):
    A, B = pairs(rng, (3,), 6, 6, 4)
    B[2, :, 1] = B[2, :, 0]  # dependent columns: B not of full column rank
    with pytest.raises(np.linalg.LinAlgError,
                       match=r"B is not of full column rank.*\(matrix \(2,\) of the stack\)"):
        cljacobi.gsvd(A, B)
    A2, B2 = pairs(rng, (3,), 6, 6, 4)
    A2[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.gsvd(A2, B2)
    A2[1, 0, 0] = 1
    with pytest.raises(ValueError, match="same shape of pairs"):
        cljacobi.gsvd(A2[:2], B2)
    with pytest.raises(ValueError, match="same number of columns"):
        cljacobi.gsvd(A2, B2[..., :3])
    with pytest.raises(ValueError, match="variant='batched' runs pairs of up to 128"):
        cljacobi.gsvd(np.ones((1, 2, 129)), np.ones((1, 129, 129)), variant="batched")


def test_nonconvergence_per_pair(rng):
    A, B = pairs(rng, (2, 2), 12, 12, 12)
    with pytest.raises(cljacobi.ConvergenceError,
                       match=r"did not converge in 1 sweeps \(matrix \(0, 0\) of the stack\)"):
        cljacobi.gsvd(A, B, max_sweeps=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, infos = cljacobi.gsvd(A, B, max_sweeps=1, on_nonconvergence="warn",
                                      return_info=True)
    assert any(issubclass(w.category, cljacobi.ConvergenceWarning) for w in caught)
    assert all(not info.converged and info.sweeps == 1 for info in infos)
    assert np.isfinite(result.C).all()
    for variant in ("auto", "pointwise"):  # the device route and the pair-by-pair one
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cljacobi.gsvd(A, B, max_sweeps=1, on_nonconvergence="warn", variant=variant)
        assert [w.filename for w in caught] == [__file__], variant  # the caller's line


def test_device_arrays_in_and_out(rng, queue):
    A, B = pairs(rng, (3,), 5, 6, 4, complex_=True)
    on_host = cljacobi.gsvd(A, B)
    on_device = cljacobi.gsvd(cl_array.to_device(queue, A), cl_array.to_device(queue, B))
    for name in ("U", "V", "C", "S", "X", "Z"):
        value = getattr(on_device, name)
        assert isinstance(value, cl_array.Array)
        assert np.array_equal(value.get(), getattr(on_host, name))


def test_empty_stack():
    result = cljacobi.gsvd(np.zeros((0, 5, 3)), np.zeros((0, 4, 3)))
    assert result.U.shape == (0, 5, 3) and result.V.shape == (0, 4, 3)
    assert result.C.shape == (0, 3) and result.X.shape == (0, 3, 3) and result.Z.shape == (0, 3, 3)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize(("prescaled", "dots", "row_split"),
                         [(False, False, 1), (True, False, 1), (False, True, 1), (False, False, 4),
                          (True, True, 2)])
def test_kernel_against_the_pointwise_sweeps(n, complex_, prescaled, dots, row_split, queue,
                                             rng):
    """batched_hz_sweeps on a stack: each pair's F, G, Z to rounding as the
    one-pair pointwise sweeps (hz_sweeps) leave them (the sums over a pair's
    rows go in another order: the last sweeps may count a small
    transformation more or less), with one work-item per pivot pair or a
    pair's rows split over several (the GPUs' layout)."""
    F, G = pairs(rng, (3,), n, n, n, complex_)
    Z = np.broadcast_to(np.eye(n, dtype=F.dtype), (3, n, n))
    if prescaled:
        norms = np.linalg.norm(G, axis=-2, keepdims=True)
        F, G, Z = F / norms, G / norms, Z / norms
    run = batched_hz_sweeps(queue, F, G, Z, prescaled=prescaled, criterion="C1",
                            enhanced_dots=dots, strategy="me", max_sweeps=30,
                            row_split=row_split)
    assert not run.flags.any()
    for b in range(3):
        one = hz_sweeps(queue, F[b], G[b], Z[b], prescaled=prescaled, criterion="C1",
                        strategy="me", max_sweeps=30, enhanced_dots=dots)
        assert abs(int(run.sweeps[b]) - one.sweeps) <= 1
        assert run.transformations[b][:1] == one.transformations[:1]
        # F = F_0 Z_0^-1 Z and G = G_0 Z_0^-1 Z hold for the stack's Z as for the pair's
        step = np.linalg.solve(Z[b], run.Z[b])
        scale = np.abs(step).max() * n
        assert close(run.F[b], F[b] @ step, 1e3 * EPS * scale * np.abs(F[b]).max())
        assert close(run.G[b], G[b] @ step, 1e3 * EPS * scale * np.abs(G[b]).max())
        # Z is not unitary: the rounding of the two orders grows with its condition
        for ours, theirs in ((run.F[b], one.F), (run.G[b], one.G), (run.Z[b], one.Z)):
            assert close(ours, theirs, 1e-11)


def test_spec_errors():
    with pytest.raises(ValueError, match="batched HZ sweeps run"):
        BatchedHZSpec("float32")
    with pytest.raises(ValueError, match="criterion"):
        BatchedHZSpec("float64", criterion="C3")
    with pytest.raises(ValueError, match="power of two"):
        BatchedHZSpec("float64", lanes=3)
    with pytest.raises(ValueError, match="row_split must be a power of two"):
        BatchedHZSpec("float64", row_split=3)
    with pytest.raises(ValueError, match="batched GSVD handles float64 and complex128"):
        BatchedGSVDSpec("float32")
    with pytest.raises(ValueError, match="work_group_size"):
        BatchedGSVDSpec("float64", work_group_size=0)
    with pytest.raises(ValueError, match="math"):
        BatchedGSVDSpec("complex128", math="fast")


def test_one_device_pair_gives_device_results(rng, queue):
    """A pair given as pyopencl arrays (one of them is enough) gives pyopencl
    results, Z included, the values of the numpy pair."""
    A, B = pairs(rng, (), 6, 5, 4)
    on_host = cljacobi.gsvd(A, B)
    on_device = cljacobi.gsvd(cl_array.to_device(queue, A), B)
    for name in ("U", "V", "C", "S", "X", "Z"):
        value = getattr(on_device, name)
        assert isinstance(value, cl_array.Array)
        assert np.array_equal(value.get(), getattr(on_host, name))


@pytest.mark.parametrize("complex_", [False, True])
def test_device_stacks_never_cross_the_bus(complex_, rng, queue, monkeypatch):
    """A device stack is shortened, swept and read off on the device (only
    flags and records come back): the numpy stack's results bit for bit."""
    def refuse(*args, **kwargs):
        raise AssertionError("the stack was copied to the host")

    for m in (7, 3):  # m >= n, and m < n (the shortening's RQ)
        A, B = pairs(rng, (2, 2), m, 6, 5, complex_)
        on_host = cljacobi.gsvd(A, B)
        monkeypatch.setattr(cljacobi._solve, "to_host", refuse)
        monkeypatch.setattr(cljacobi._batch, "to_host", refuse)
        on_device = cljacobi.gsvd(cl_array.to_device(queue, A), cl_array.to_device(queue, B))
        monkeypatch.undo()
        for name in ("U", "V", "C", "S", "X", "Z"):
            value, expected = getattr(on_device, name), getattr(on_host, name)
            assert isinstance(value, cl_array.Array) and value.shape == expected.shape
            assert np.array_equal(value.get(), expected)


def test_device_route_keeps_dtypes_and_takes_strided_stacks(rng, queue):
    """float32 pairs give float32 results (numpy's rule), on the device too;
    a strided device view is solved as its copy is."""
    A, B = pairs(rng, (3,), 6, 5, 4)
    single = cljacobi.gsvd(A.astype(np.float32), B.astype(np.float32))
    assert single.C.dtype == np.float32 and single.X.dtype == np.float32
    on_device = cljacobi.gsvd(cl_array.to_device(queue, A.astype(np.float32)),
                              cl_array.to_device(queue, B.astype(np.float32)))
    assert on_device.U.dtype == np.float32 and np.array_equal(on_device.C.get(), single.C)
    interleaved = cl_array.to_device(queue, np.stack([A, -A], axis=-1).reshape(3, 6, 8))
    strided = cljacobi.gsvd(interleaved[:, :, ::2], cl_array.to_device(queue, B))
    assert np.array_equal(strided.X.get(), cljacobi.gsvd(A, B).X)


@pytest.mark.parametrize("complex_", [False, True])
def test_rank_deficient_a_completes_u(complex_, rng):
    """A of rank 2 < n: the columns of U whose C is at rounding level are
    completed to an orthonormal basis on the device (cljacobi._solve.complete
    in the short space, then Q_F), and the GSVD's identities hold.  C = 0
    is threefold: its columns of U, V, X and Z are a basis of a subspace
    that rounding picks (Q_F's last reflectors are made of it), so the
    other columns are held to the one-pair path."""
    A, B = pairs(rng, (3,), 7, 6, 5, complex_)
    A = A[..., :2] @ pairs(rng, (3,), 2, 2, 5, complex_)[0]
    result = cljacobi.gsvd(A, B)
    for b in range(3):
        one = cljacobi.gsvd(A[b], B[b], variant="pointwise")
        assert close(result.C[b], one.C, 1e3 * EPS) and close(result.S[b], one.S)
        assert (one.C[2:] < 1e-14).all()
        for name in ("U", "V", "X", "Z"):
            assert close(getattr(result, name)[b][:, :2], getattr(one, name)[:, :2], 1e-10)
        U, V, C, S, X = (x[b] for x in result)
        for Q in (U, V):
            assert np.abs(Q.conj().T @ Q - np.eye(5)).max() <= 100 * EPS
        scale = np.abs(X).max()
        assert np.abs(A[b] - (U * C) @ X.conj().T).max() <= 1e-13 * scale
        assert np.abs(B[b] - (V * S) @ X.conj().T).max() <= 1e-13 * scale


def test_device_route_errors(rng, queue):
    """inf or NaN in a device pair names it; check_finite=False gives the
    one-pair path's LinAlgError with the pair's index."""
    A, B = pairs(rng, (3,), 6, 6, 4)
    B[1, 2, 3] = np.inf
    with pytest.raises(ValueError, match=r"B\[1\] must not contain infs or NaNs"):
        cljacobi.gsvd(cl_array.to_device(queue, A), cl_array.to_device(queue, B))
    with pytest.raises(np.linalg.LinAlgError,
                       match=r"B contains infs or NaNs \(matrix \(1,\) of the stack\)"):
        cljacobi.gsvd(A, B, check_finite=False)


@pytest.mark.parametrize(("m", "p", "n"), [(6, 5, 4), (9, 9, 1), (20, 17, 12), (4, 7, 6), (1, 3, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_shortening_kernel_against_the_host(m, p, n, complex_, rng, queue):
    """batched_gsvd_shorten against the one-pair shortening (gsvd._shorten
    after gsvd._unit_shift): the same shifts and pivots, F and G to
    rounding, and the Frobenius norms and R_G's diagonal it reports."""
    from cljacobi.gsvd import _shorten, _unit_shift
    from cljacobi.host.batched_gsvd import batched_gsvd_shorten

    A, B = pairs(rng, (3,), m, p, n, complex_)
    A[1] *= 2.0**40
    out = batched_gsvd_shorten(queue, cl_array.to_device(queue, A),
                               cl_array.to_device(queue, B), prescaled=False)
    assert out.summary == 0
    report = out.report()
    F, G = (np.swapaxes(x.get(), -1, -2) for x in (out.F, out.G))
    for b in range(3):
        shifts = _unit_shift(A[b]), _unit_shift(B[b])
        one = _shorten(np.asfortranarray(A[b] * 2.0 ** shifts[0]),
                       np.asfortranarray(B[b] * 2.0 ** shifts[1]), compute_q=True)
        for name, buffer in (("p_1", "pivots_a"), ("p_2", "pivots_b")):
            pivots = np.empty((3, n), np.int32)
            cl.enqueue_copy(queue, pivots, out.buffers[buffer])
            assert np.array_equal(pivots[b], getattr(one, name))
        assert close(F[b], one.F) and close(G[b], one.G)
        expected = [np.linalg.norm(one.F), np.linalg.norm(one.G),
                    abs(one.G[0, 0]), abs(one.G[-1, -1])]
        assert np.allclose(report[b], expected, rtol=1e-14, atol=0)
    exponents = np.empty((3, 2), np.int32)
    cl.enqueue_copy(queue, exponents, out.buffers["exponents"])
    assert exponents[1, 0] == _unit_shift(A[1])


def test_device_memory_checked_before_the_first_launch(rng, monkeypatch):
    """A stack whose buffers (the QR workspaces, F, G, Z, the results) do
    not fit the device's memory raises DeviceMemoryError naming the buffer
    before anything runs (the limits of a small device stand in)."""
    from cljacobi.errors import DeviceMemoryError
    from cljacobi.host import batched_gsvd
    from cljacobi.host.limits import check_global_memory

    class Small:
        name, max_mem_alloc_size, global_mem_size = "Small Device", 1 << 16, 1 << 20

    launches = []
    monkeypatch.setattr(batched_gsvd, "check_global_memory",
                        lambda device, buffers: check_global_memory(Small(), buffers))
    monkeypatch.setattr(batched_gsvd, "_launch", lambda *args: launches.append(args))
    A, B = pairs(rng, (300,), 6, 5, 4)  # each buffer at most 300 * 6 * 4 * 8 = 56 KiB
    with pytest.raises(DeviceMemoryError, match=r"buffer 'A QR workspace'.*Small Device"):
        cljacobi.gsvd(np.concatenate([A, A]), np.concatenate([B, B]))  # 112 KiB
    assert not launches


def test_row_split_by_device(queue):
    """One work-item per pivot pair on CPUs; on GPUs 4, 8 or 16 by the
    order, within the device's work-group size."""
    class Gpu:
        type, max_work_group_size = cl.device_type.GPU, 1024

    class SmallGpu:
        type, max_work_group_size = cl.device_type.GPU, 256

    assert [hz_row_split(Gpu(), n, lanes) for n, lanes in ((8, 4), (32, 16), (128, 64))] \
        == [4, 8, 16]
    assert hz_row_split(SmallGpu(), 128, 64) == 4
    if not queue.device.type & cl.device_type.GPU:
        assert hz_row_split(queue.device, 64, 32) == 1
