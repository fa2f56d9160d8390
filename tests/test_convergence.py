"""Non-convergence of the three public functions: ConvergenceError (a LinAlgError)
with the sweep statistics, or the partial result with a ConvergenceWarning when
asked.  The checks that hold for every function are one test parametrized by
``function``; stacks, tall input and a first sweep without rotations after them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cljacobi
from cljacobi.matrices import with_spectrum

FUNCTIONS = ["eig_indefinite", "hsvd", "svd"]


def _indefinite(n, rng):
    lam = np.concatenate([rng.uniform(1, 10, n // 2), -rng.uniform(1, 10, n - n // 2)])
    return with_spectrum(lam, rng=rng)


def _arguments(function, n, rng):
    """An indefinite n x n matrix that one sweep does not diagonalize (and J for hsvd)."""
    M = _indefinite(n, rng)
    return (M, np.array([1, -1] * (n // 2))) if function == "hsvd" else (M,)


def _values_and_vectors(function, result):
    """(eigenvalues, eigenvectors) of eig_indefinite or (singular values, U), values
    ascending."""
    if function == "eig_indefinite":
        return result.eigenvalues, result.eigenvectors
    return result.S[::-1], result.U


@pytest.mark.parametrize("function", FUNCTIONS)
def test_max_sweeps_one_raises_with_statistics(function, rng):
    args = _arguments(function, 24, rng)
    with pytest.raises(cljacobi.ConvergenceError, match="did not converge in 1 sweeps") as caught:
        getattr(cljacobi, function)(*args, max_sweeps=1)
    error = caught.value
    assert isinstance(error, np.linalg.LinAlgError)
    info = error.info
    assert info.sweeps == 1 and not info.converged
    assert info.rotations == info.rotations_per_sweep[0] > 0
    assert str(info.rotations_per_sweep) in str(error)
    assert info.device
    # eig_indefinite: the columns of the factor, known before the sweeps; svd and
    # hsvd: the nonzero column norms of the partial result (a full-rank 24 x 24).
    assert info.rank == 24


@pytest.mark.parametrize("function", FUNCTIONS)
def test_partial_result_with_warning(function, rng):
    n = 24
    args = _arguments(function, n, rng)
    solver = getattr(cljacobi, function)
    with pytest.warns(cljacobi.ConvergenceWarning, match="partial result") as record:
        partial, info = solver(*args, max_sweeps=1, on_nonconvergence="warn", return_info=True)
    assert record[0].filename == __file__, "the warning points at the caller's line"
    assert not info.converged and info.sweeps == 1
    values, vectors = _values_and_vectors(function, partial)
    assert values.shape == (n,) and vectors.shape == (n, n) and np.all(np.isfinite(vectors))
    assert np.all(np.diff(values) >= 0)
    assert issubclass(cljacobi.ConvergenceWarning, RuntimeWarning)
    # The partial result is not the answer yet, but it is on its way.
    converged, _ = _values_and_vectors(function, solver(*args))
    assert np.max(np.abs(values - converged)) < 0.5 * np.abs(converged).max()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full, info_full = solver(*args, on_nonconvergence="warn", return_info=True)
    assert info_full.converged
    assert np.array_equal(_values_and_vectors(function, full)[0], converged)


def test_hsvd_nonconvergence_tall(rng):
    """A tall G (shortened by QR before the sweeps)."""
    G = rng.standard_normal((20, 16))
    J = np.array([1, -1] * 8)
    with pytest.raises(cljacobi.ConvergenceError) as caught:
        cljacobi.hsvd(G, J, max_sweeps=1)
    assert caught.value.info.sweeps == 1
    with pytest.warns(cljacobi.ConvergenceWarning):
        U, S, Vh, J_S = cljacobi.hsvd(G, J, max_sweeps=1, on_nonconvergence="warn")
    assert np.all(np.isfinite(S)) and U.shape == (20, 16)


def test_stack_names_the_unconverged_matrix(rng):
    stack = np.stack([np.diag([3.0, -1.0, 2.0, 5.0]), _indefinite(4, rng)])
    with pytest.raises(cljacobi.ConvergenceError, match=r"matrix \(1,\) of the stack"):
        cljacobi.eig_indefinite(stack, max_sweeps=1)
    with pytest.warns(cljacobi.ConvergenceWarning, match=r"\[\(1,\)\]"):
        _, infos = cljacobi.eig_indefinite(
            stack, max_sweeps=1, on_nonconvergence="warn", return_info=True
        )
    assert [info.converged for info in infos] == [True, False]


def test_one_sweep_is_enough_when_nothing_rotates():
    """A diagonal matrix converges in its first sweep: no error for max_sweeps=1."""
    M = np.diag([9.0, -1.0, 4.0])  # perfect squares: exact through the square roots
    (w, U), info = cljacobi.eig_indefinite(M, max_sweeps=1, return_info=True)
    assert info.converged and info.rotations == 0 and w.tolist() == [-1.0, 4.0, 9.0]


@pytest.mark.parametrize("function", ["eig_indefinite", "hsvd", "svd"])
def test_messages_name_the_function_called(function, rng):
    """The error and the warning speak of what the user called (svd has no hyperbolic
    pairs to talk about)."""
    A = _indefinite(20, rng)
    args = (A, np.array([1, -1] * 10)) if function == "hsvd" else (A,)
    solver = getattr(cljacobi, function)
    with pytest.raises(cljacobi.ConvergenceError, match=f"^{function} did not converge in 1 "):
        solver(*args, max_sweeps=1)
    with pytest.warns(cljacobi.ConvergenceWarning, match=f"^{function} did not converge") as record:
        solver(*args, max_sweeps=1, on_nonconvergence="warn")
    assert all("hyperbolic" not in str(w.message) for w in record)
