"""gsvd of stacks of pairs (cljacobi._batch_gsvd): the sweeps of all pairs in
one launch (templates/batched_hz.cl.mako) held to the one-pair path and to
the GSVD's identities; the contract of a stack (errors and warnings naming
the pair, info per pair, device arrays, bitwise repeatability, independence
of the stack a pair is in)."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi.host.batched_hz import BatchedHZSpec, batched_hz_sweeps
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
                                           (5, 3, 1), (30, 20, 12)])
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
@pytest.mark.parametrize(("prescaled", "dots"), [(False, False), (True, False), (False, True)])
def test_kernel_against_the_pointwise_sweeps(n, complex_, prescaled, dots, queue, rng):
    """batched_hz_sweeps on a stack: each pair's F, G, Z to rounding as the
    one-pair pointwise sweeps (hz_sweeps) leave them (the sums over a pair's
    rows go in another order: the last sweeps may count a small
    transformation more or less)."""
    F, G = pairs(rng, (3,), n, n, n, complex_)
    Z = np.broadcast_to(np.eye(n, dtype=F.dtype), (3, n, n))
    if prescaled:
        norms = np.linalg.norm(G, axis=-2, keepdims=True)
        F, G, Z = F / norms, G / norms, Z / norms
    run = batched_hz_sweeps(queue, F, G, Z, prescaled=prescaled, criterion="C1",
                            enhanced_dots=dots, strategy="me", max_sweeps=30)
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
