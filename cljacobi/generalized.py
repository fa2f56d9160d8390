"""The generalized Hermitian eigenproblem ``M x = lambda B x`` (B positive definite).

``eig_indefinite(M, B)`` factors ``M = G J G^*`` (the rank-revealing
J-factorization of :mod:`cljacobi.factorization`) and ``B = L L^*`` (Cholesky
with diagonal pivoting), and runs the implicit Hari-Zimmermann method of
the GSVD (``templates/hz.cl.mako``) on the pair ``F = G^*``, ``G_B = L^*`` with
the J-weighted scalar product of F: it finds Z with ``Z^* B Z = I`` and
``Z^* M Z`` diagonal, pair by pair (the definite pencil version of the
method, as Singer, Di Napoli, Novaković and Čaklović use it for the LAPW
method).  Both factors keep the scale of their matrices in their columns,
so graded pencils keep their small eigenvalues (tests:
``tests/test_generalized.py``).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from ._results import EighResult, SolveInfo
from ._solve import ldexp
from .errors import ConvergenceError, ConvergenceWarning, DeviceCapabilityError
from .factorization import definite_factorize, j_factorize
from .host.device import has_fp64, resolve_queue
from .host.hz import hz_sweeps
from .scaling import matrix_shift_from_range
from .validation import as_float_matrix, symmetric_part

__all__ = ["eig_generalized"]


def _hermitian(A: Any, name: str, check_finite: bool) -> tuple[np.ndarray, int, np.dtype]:
    """The Hermitian matrix from A's lower triangle, scaled by an even power of
    two into float64's safe range, and that exponent."""
    matrix, result_dtype = as_float_matrix(A, name, check_finite=check_finite, square=True)
    symmetric, smallest, largest = symmetric_part(matrix, name)
    if largest == 0:
        raise np.linalg.LinAlgError(f"{name} is the zero matrix")
    shift = matrix_shift_from_range(smallest, largest, matrix.shape[0], name)
    return ldexp(symmetric, shift, out=symmetric), shift, result_dtype


def eig_generalized(
    M: Any, B: Any, *, eigvals_only: bool, check_finite: bool, strategy: str,
    max_sweeps: int, on_nonconvergence: str, queue: Any, return_info: bool,
) -> Any:
    """``eig_indefinite(M, B)``: see its docstring (the options are checked there)."""
    start = time.perf_counter()
    M_s, shift_m, dtype_m = _hermitian(M, "M", check_finite)
    B_s, shift_b, dtype_b = _hermitian(B, "B", check_finite)
    n = M_s.shape[0]
    if B_s.shape != M_s.shape:
        raise ValueError(f"M and B must have the same shape, got {M_s.shape} and {B_s.shape}")
    dtype = np.result_type(M_s, B_s)
    result_dtype = np.result_type(dtype_m, dtype_b)
    run_queue = resolve_queue(queue)
    if not has_fp64(run_queue.device):
        raise DeviceCapabilityError(f"eig_indefinite(M, B) needs a device with fp64; "
                                    f"{run_queue.device.name.strip()!r} has none")
    b_factor = definite_factorize(B_s.astype(dtype))
    if b_factor is None or b_factor.p != n:
        raise np.linalg.LinAlgError(
            "B is not positive definite (its pivoted Cholesky factorization does not "
            "complete with positive pivots above their rounding level)")
    m_factor = j_factorize(M_s.astype(dtype))
    rank = len(m_factor.signs)
    if rank < n:
        # The columns of F Z of the zero eigenvalues are rounding noise, which the
        # relative orthogonality test cannot tell from data: measured, the sweeps
        # then rotate that noise on and on (no convergence on an NVIDIA GPU).
        raise np.linalg.LinAlgError(
            f"M is singular (numerical rank {rank} < n = {n}): eig_indefinite(M, B) handles "
            "a nonsingular M only so far; eig_indefinite(M) handles singular ones")
    info = SolveInfo(seconds={"factorization": time.perf_counter() - start},
                     rank=len(m_factor.signs), positive=m_factor.p, strategy=strategy,
                     device=run_queue.device.name.strip(), factorization="bunch-parlett",
                     precision="double")
    F = np.asfortranarray(m_factor.G.conj().T)  # M = F^* J F, J over the rows of F
    G = np.asfortranarray(b_factor.G.conj().T)  # B = G^* G
    run = hz_sweeps(run_queue, F, G, np.eye(n, dtype=dtype), prescaled=False,
                    strategy=strategy, max_sweeps=max_sweeps, positive_rows=m_factor.p)
    info.sweeps, info.converged = run.sweeps, run.converged
    info.rotations_per_sweep, info.rotations = run.transformations, sum(run.transformations)
    info.seconds["sweeps"] = run.seconds
    if not run.converged and on_nonconvergence == "raise":
        raise ConvergenceError(
            f"eig_indefinite(M, B) did not converge in {max_sweeps} sweeps (transformations "
            f"per sweep: {run.transformations}); pass a larger max_sweeps, or "
            "on_nonconvergence='warn' for the partial result", info)
    p = m_factor.p
    # lambda_j = (z_j^* M z_j) / (z_j^* B z_j) = (||f_j+||^2 - ||f_j-||^2) / ||g_j||^2
    f_squares = np.linalg.norm(run.F[:p], axis=0) ** 2 - np.linalg.norm(run.F[p:], axis=0) ** 2
    g_norms = np.linalg.norm(run.G, axis=0)
    # 2^s_m M x = 2^(s_m - s_b) lambda 2^s_b B x: lambda = lambda_s 2^(s_b - s_m).
    w = np.ldexp(f_squares / g_norms**2, shift_b - shift_m)
    order = np.argsort(w, kind="stable")
    info.seconds["total"] = time.perf_counter() - start
    real = np.finfo(result_dtype).dtype
    if eigvals_only:
        result = w[order].astype(real)
    else:
        # X = Z diag(1/||g_j||): X^* B_s X = I; B = 2^-s_b B_s, so X 2^(s_b / 2).
        X = np.ldexp(1.0, shift_b // 2) * run.Z[:, order] / g_norms[order]
        result = EighResult(w[order].astype(real), X.astype(result_dtype, copy=False))
    if not np.all(np.isfinite(result if eigvals_only else result.eigenvectors)):
        raise np.linalg.LinAlgError("a result of eig_indefinite(M, B) exceeds float64's range")
    if not run.converged:
        warnings.warn("eig_indefinite(M, B) did not converge in max_sweeps sweeps; the partial "
                      "result is returned (info.converged is False)", ConvergenceWarning,
                      stacklevel=3)
    return (result, info) if return_info else result
