"""eigh: scipy's conventions over the one-sided path, the classical
two-sided Jacobi method (Wang et al.) and the parallel cyclic two-sided
method (pointwise and blocked), whose kernels are tested against
cljacobi.classical_reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

import cljacobi
from cljacobi import classical_reference
from cljacobi.host.classical import ClassicalSpec, classical_run, cyclic_run
from cljacobi.host.programs import build_program, render
from cljacobi.host.two_sided import (TWO_SIDED_INNER_SWEEPS, TwoSidedSpec, blocked_cyclic_run,
                                     two_sided_local_bytes)

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _hermitian(n, dtype, rng):
    X = rng.standard_normal((n, n))
    if dtype == np.complex128:
        X = X + 1j * rng.standard_normal((n, n))
    return X + X.conj().T


def test_rotation_corrects_the_papers_slips():
    """Lines 1-4 with sqrt(x^2 + y^2) give the angle of eq. (2), and the
    corrected line 6 is the (q, q) entry of R^T A R."""
    a_pp, a_qq, a_pq = 3.0, -1.0, 2.5
    c, s = classical_reference.rotation(a_pp, a_qq, a_pq)
    assert math.isclose(c * c + s * s, 1.0)
    assert math.isclose(math.tan(2 * math.atan2(s, c)), 2 * a_pq / (a_pp - a_qq))
    R = np.array([[c, -s], [s, c]])  # eq. (3)
    B = R.T @ np.array([[a_pp, a_pq], [a_pq, a_qq]]) @ R
    assert abs(B[0, 1]) <= 4 * EPS * 3
    assert math.isclose(B[1, 1], a_pp * s * s + a_qq * c * c - a_pq * 2 * s * c)  # line 6
    assert math.isclose(B[0, 0], a_pp * c * c + a_qq * s * s + a_pq * 2 * s * c)  # line 5


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_converges_to_lapack(dtype, rng):
    A = _hermitian(30, dtype, rng)
    result = classical_reference.classical_jacobi(A, max_rotations=10**6)
    assert result.converged
    w = np.sort(np.diagonal(result.A).real)
    exact = np.linalg.eigvalsh(A)
    assert np.abs(w - exact).max() <= 30 * 30 * EPS * np.abs(exact).max()
    V = result.V
    assert np.linalg.norm(V.conj().T @ A @ V - result.A) <= 100 * 30 * EPS * np.linalg.norm(A)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,steps", [(9, 5), (33, 40), (33, None), (300, 600)])
def test_kernel_against_reference(n, steps, dtype, queue, rng):
    """The same pivots step by step: after a fixed number of steps the same
    matrix and V to rounding; to convergence the same number of steps."""
    A = _hermitian(n, dtype, rng)
    tol = n * EPS
    limit = steps if steps is not None else 10**6
    expected = classical_reference.classical_jacobi(A, max_rotations=limit, tol=tol)
    run = classical_run(queue, A, max_rotations=limit, tol=tol, compute_v=True)
    assert run.rotations == expected.rotations and run.converged == expected.converged
    scale = np.abs(A).max()
    atol = 1e3 * EPS * max(1, run.rotations / 100)  # the roundings part with the steps
    np.testing.assert_allclose(run.A, expected.A, rtol=0, atol=atol * scale)
    np.testing.assert_allclose(run.V, expected.V, rtol=0, atol=atol)
    np.testing.assert_array_equal(run.A, run.A.conj().T)  # kept exactly Hermitian
    per_step = classical_run(queue, A, max_rotations=limit, tol=tol, compute_v=True,
                             launches="per-step")  # three launches a step: the same bits
    assert (per_step.rotations, per_step.converged) == (run.rotations, run.converged)
    np.testing.assert_array_equal(per_step.A, run.A)
    np.testing.assert_array_equal(per_step.V, run.V)


def test_classical_launches_option(queue, rng):
    A = _hermitian(5, np.float64, rng)
    with pytest.raises(ValueError, match="launches must be"):
        classical_run(queue, A, max_rotations=3, tol=0.0, compute_v=False, launches="two")
    for launches in ("one", "per-step"):  # the step limit, and no V
        run = classical_run(queue, A, max_rotations=3, tol=0.0, compute_v=False,
                            launches=launches)
        assert run.rotations == 3 and not run.converged and run.V is None


def test_classical_spec_declares_its_signature(queue):
    for dtype in ("float64", "complex128"):
        spec = ClassicalSpec(dtype, 64)
        source = render(spec)
        for sig in spec.signatures.values():
            assert f"void {sig.name}({sig.parameters})" in source
        program = build_program(queue.context, queue.device, spec)
        assert program.cjac_classical.num_args == len(spec.signatures["cjac_classical"].args)
    with pytest.raises(ValueError, match="power of two"):
        ClassicalSpec("float64", 100)
    with pytest.raises(ValueError, match="float64 or complex128"):
        ClassicalSpec("float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 17, 64])
def test_classical_eigh_against_lapack(n, dtype, rng):
    A = _hermitian(n, dtype, rng)
    (w, V), info = cljacobi.eigh(A, method="classical", return_info=True)
    exact = scipy.linalg.eigh(A, eigvals_only=True)
    norm = np.abs(exact).max()
    assert np.all(np.diff(w) >= 0)
    assert np.abs(w - exact).max() <= 10 * n * EPS * norm
    assert np.linalg.norm(A @ V - V * w) <= 10 * n * EPS * np.linalg.norm(A) + 1e-300
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= 10 * n * EPS
    assert V.dtype == dtype and w.dtype == np.float64
    if n >= 2:
        assert info.variant == "classical" and info.converged and info.rotations > 0
        values = cljacobi.eigh(A, method="classical", eigvals_only=True)
        np.testing.assert_allclose(values, w, rtol=0, atol=10 * n * EPS * norm)


def test_one_sided_is_eig_indefinite(rng):
    A = _hermitian(20, np.float64, rng)
    w, V = cljacobi.eigh(A)
    w2, V2 = cljacobi.eig_indefinite(A)
    np.testing.assert_array_equal(w, w2)
    np.testing.assert_array_equal(V, V2)
    np.testing.assert_array_equal(cljacobi.eigh(A, method="one-sided", eigvals_only=True), w)


def test_classical_stacks_scaling_and_repeatability(rng):
    A = _hermitian(12, np.float64, rng)
    stack = np.stack([A, 2.0**-600 * A, 2.0**600 * A])
    w = cljacobi.eigh(stack, method="classical", eigvals_only=True)
    np.testing.assert_allclose(w[1] * 2.0**600, w[0], rtol=1e-13)
    np.testing.assert_allclose(w[2] * 2.0**-600, w[0], rtol=1e-13)
    again = cljacobi.eigh(stack, method="classical", eigvals_only=True)
    np.testing.assert_array_equal(w, again)
    assert not np.array_equal(A, stack[0] * 0)  # the input is untouched
    np.testing.assert_array_equal(stack[0], A)


def test_classical_nonconvergence(rng):
    A = _hermitian(16, np.float64, rng)
    with pytest.raises(cljacobi.ConvergenceError, match="did not converge in 10 rotations"):
        cljacobi.eigh(A, method="classical", max_rotations=10)
    with pytest.warns(cljacobi.ConvergenceWarning):
        (w, V), info = cljacobi.eigh(A, method="classical", max_rotations=10,
                                      on_nonconvergence="warn", return_info=True)
    assert not info.converged and info.rotations == 10


@pytest.mark.parametrize("A,options,error,message", [
    (np.eye(3), {"method": "two_sided"}, ValueError, "method must be one of"),
    (np.eye(3), {"method": "classical", "max_rotations": -1}, ValueError, "max_rotations"),
    (np.eye(3), {"max_rotations": 10}, ValueError, "bounds method='classical'"),
    (np.eye(3), {"method": "two-sided", "strategy": "zigzag"}, ValueError, "unknown strategy"),
    (np.eye(3), {"method": "two-sided", "variant": "stream"}, ValueError,
     "with method='two-sided', not 'stream'"),
    (np.eye(3), {"method": "two-sided", "variant": "pointwise", "block_width": 4}, ValueError,
     "has no blocks"),
    (np.eye(3), {"method": "two-sided", "block_width": 0}, ValueError, "positive integer"),
    (np.eye(3), {"method": "classical", "variant": "bo"}, ValueError, "has no variants"),
    (np.eye(3), {"method": "two-sided", "block_width": 4096}, cljacobi.DeviceCapabilityError,
     "local memory"),
    (np.array([[1.0, 2.0], [0.0, 1.0]]), {"method": "classical"}, ValueError, "symmetric"),
    (np.ones((2, 3)), {"method": "classical"}, ValueError, "square"),
    (np.eye(2), {"method": "classical", "eigvals_only": "yes"}, TypeError, "eigvals_only"),
])
def test_wrong_inputs(A, options, error, message):
    with pytest.raises(error, match=message):
        cljacobi.eigh(A, **options)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [9, 32])
@pytest.mark.parametrize("strategy", ["me", "ring", "round-robin"])
def test_cyclic_kernels_against_reference(strategy, n, dtype, queue, rng):
    """The parallel cyclic two-sided kernels are the reference's steps: the
    same rotations every sweep, the same A and V to rounding."""
    A = _hermitian(n, dtype, rng)
    tol = n * EPS
    A_ref, V_ref, counts, converged = classical_reference.cyclic_jacobi(
        A, strategy=strategy, max_sweeps=30, tol=tol)
    run = cyclic_run(queue, A, strategy=strategy, max_sweeps=30, tol=tol, compute_v=True)
    assert converged and run.converged and run.rotations_per_sweep == counts
    scale = np.abs(A).max()
    np.testing.assert_allclose(run.A, A_ref, rtol=0, atol=1e3 * EPS * scale)
    np.testing.assert_allclose(run.V, V_ref, rtol=0, atol=1e3 * EPS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("inner", ["bo", "fb"])
@pytest.mark.parametrize(("n", "block_width", "strategy"), [
    (8, 1, "me"), (16, 4, "me"), (33, 4, "me"), (45, 8, "ring"), (64, 8, "round-robin"),
    (70, 16, "me"),
])
def test_blocked_two_sided_kernels_against_reference(n, block_width, strategy, inner, dtype,
                                                     queue, rng):
    """The blocked two-sided kernels are the reference's steps (n padded to a
    multiple of 2w where it is not one): the same rotations every sweep, the
    same A and V to rounding."""
    A = _hermitian(n, dtype, rng)
    tol = n * EPS
    sweeps = TWO_SIDED_INNER_SWEEPS[inner]
    A_ref, V_ref, counts, converged = classical_reference.blocked_cyclic_jacobi(
        A, block_width=block_width, strategy=strategy, inner_sweeps=sweeps, max_sweeps=30,
        tol=tol)
    run = blocked_cyclic_run(queue, A, strategy=strategy, block_width=block_width,
                             inner_sweeps=sweeps, max_sweeps=30, tol=tol, compute_v=True)
    assert converged and run.converged and run.rotations_per_sweep == counts
    assert run.block_width == block_width
    # "fb" rotates up to 7x as often as "bo": the roundings of fma chains and
    # of numpy's products part further
    scale = np.abs(A).max()
    np.testing.assert_allclose(run.A, A_ref, rtol=0, atol=1e4 * EPS * scale)
    np.testing.assert_allclose(run.V, V_ref, rtol=0, atol=1e4 * EPS)
    assert np.array_equal(run.A, run.A.conj().T)  # the tiles keep A exactly Hermitian
    again = blocked_cyclic_run(queue, A, strategy=strategy, block_width=block_width,
                               inner_sweeps=sweeps, max_sweeps=30, tol=tol, compute_v=True)
    assert np.array_equal(again.A, run.A) and np.array_equal(again.V, run.V)


def test_blocked_two_sided_without_vectors(queue, rng):
    """Without V the same A (the vectors kernel only reads the transformations)."""
    A = _hermitian(40, np.float64, rng)
    runs = [blocked_cyclic_run(queue, A, strategy="me", block_width=4, inner_sweeps=1,
                               max_sweeps=30, tol=40 * EPS, compute_v=v) for v in (True, False)]
    assert runs[1].V is None and np.array_equal(runs[0].A, runs[1].A)


def test_two_sided_spec_checks_and_local_memory():
    with pytest.raises(ValueError, match="micro=3 does not divide K=16"):
        TwoSidedSpec("float64", 8, solve_work_group_size=64, micro=3)
    with pytest.raises(ValueError, match="float64 or complex128"):
        TwoSidedSpec("float32", 8, solve_work_group_size=64, micro=2)
    # w = 16 fits 48 KiB of local memory for real and complex data, w = 32 does not
    assert two_sided_local_bytes(16, element_bytes=16) <= 48 * 1024
    assert two_sided_local_bytes(32, element_bytes=8) > 48 * 1024
    source = render(TwoSidedSpec("complex128", 4, solve_work_group_size=16, micro=1))
    assert "cjac_two_sided_update" in source and "cjac_conj" in source


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", ["auto", "pointwise", "bo", "fb"])
@pytest.mark.parametrize("n", [2, 17, 64])
def test_two_sided_eigh_against_lapack(n, variant, dtype, rng):
    A = _hermitian(n, dtype, rng)
    (w, V), info = cljacobi.eigh(A, method="two-sided", variant=variant, return_info=True)
    exact = scipy.linalg.eigh(A, eigvals_only=True)
    assert np.abs(w - exact).max() <= 10 * n * EPS * np.abs(exact).max()
    assert np.linalg.norm(A @ V - V * w) <= 10 * n * EPS * np.linalg.norm(A)
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= 10 * n * EPS
    assert info.variant == ("bo" if variant == "auto" else variant) and info.converged
    assert info.strategy == "ring"  # TWO_SIDED_STRATEGY
    assert (info.block_width > 0) == (info.variant != "pointwise")
    assert info.sweeps == len(info.rotations_per_sweep) and info.rotations_per_sweep[-1] == 0
    w_only = cljacobi.eigh(A, method="two-sided", variant=variant, eigvals_only=True)
    np.testing.assert_array_equal(w_only, w)


@pytest.mark.parametrize("family", ["graded", "rank", "zero-diagonal", "clustered"])
def test_blocked_two_sided_on_hard_matrices(family, rng):
    """Graded, rank-deficient, zero-diagonal and clustered matrices converge to
    the two-sided methods' normwise accuracy."""
    n = 48
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    if family == "graded":
        D = np.logspace(0, -12, n)
        A = D[:, None] * _hermitian(n, np.float64, rng) * D[None, :]
    elif family == "rank":
        A = (Q[:, : n // 2] * rng.uniform(-1, 1, n // 2)) @ Q[:, : n // 2].T
    elif family == "zero-diagonal":
        B = rng.standard_normal((n // 2, n // 2))
        A = np.block([[np.zeros_like(B), B], [B.T, np.zeros_like(B)]])
    else:
        A = (Q * np.r_[np.full(n // 2, 1.0), 1 + 1e-10 * np.arange(n // 2)]) @ Q.T
    A = (A + A.T) / 2
    (w, V), info = cljacobi.eigh(A, method="two-sided", block_width=4, return_info=True)
    exact = scipy.linalg.eigh(A, eigvals_only=True)
    assert info.converged
    assert np.abs(w - exact).max() <= 10 * n * EPS * np.abs(exact).max()
    assert np.linalg.norm(A @ V - V * w) <= 10 * n * EPS * np.linalg.norm(A)
    assert np.linalg.norm(V.T @ V - np.eye(n)) <= 10 * n * EPS


def test_two_sided_zero_diagonal_and_nonconvergence(rng):
    """A zero diagonal still rotates (the absolute floor); max_sweeps bounds it."""
    A = np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(cljacobi.eigh(A, method="two-sided", eigvals_only=True),
                               [-1.0, 1.0], atol=4 * EPS)
    B = _hermitian(20, np.float64, rng)
    with pytest.raises(cljacobi.ConvergenceError, match="did not converge in 2 sweeps"):
        cljacobi.eigh(B, method="two-sided", max_sweeps=2)
