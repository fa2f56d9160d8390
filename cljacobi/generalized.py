"""The generalized Hermitian eigenproblem ``M x = lambda B x`` (B positive definite).

``eig_indefinite(M, B)`` factors ``M = G J G^*`` (the rank-revealing
J-factorization of :mod:`cljacobi.factorization`) and ``B = L L^*`` (Cholesky
with diagonal pivoting; where the factorization runs on the device, complete
pivoting there for both, which on a definite B takes the same pivots), and
runs the implicit Hari-Zimmermann method of the GSVD
(``templates/hz.cl.mako``) on the pair ``F = G^*``, ``G_B = L^*`` with
the J-weighted scalar product of F: it finds Z with ``Z^* B Z = I`` and
``Z^* M Z`` diagonal, pair by pair (the definite pencil version of the
method, as Singer, Di Napoli, Novaković and Čaklović use it for the LAPW
method).  Both factors keep the scale of their matrices in their columns,
so graded pencils keep their small eigenvalues (tests:
``tests/test_generalized.py``).  The pair runs through the one solver
pipeline (:func:`cljacobi._solve.solve`, as a pair method).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._results import EighResult, SolveInfo
from ._solve import Factored, HZPair, SweepPlan, factors_on_device, ldexp
from .factorization import JFactor, definite_factorize, j_factorize
from .host.factorization import j_factorize_device
from .host.hz import HZRun
from .scaling import matrix_shift_from_range
from .validation import symmetric_part

__all__ = ["EigGeneralized"]


def _hermitian(A: np.ndarray, name: str) -> tuple[np.ndarray, int]:
    """The Hermitian matrix from A's lower triangle (a new array), scaled by an
    even power of two into float64's safe range, and that exponent."""
    symmetric, smallest, largest = symmetric_part(A, name)
    if largest == 0:
        raise np.linalg.LinAlgError(f"{name} is the zero matrix")
    shift = matrix_shift_from_range(smallest, largest, A.shape[0], name)
    return ldexp(symmetric, shift, out=symmetric), shift


@dataclass(frozen=True)
class EigGeneralized:
    """``eig_indefinite(M, B)``'s part of the pipeline: factor both matrices,
    hand ``(G^*, L^*)`` with the signature of M to the Hari-Zimmermann sweeps,
    read eigenvalues and B-orthonormal eigenvectors off the result."""

    eigvals_only: bool
    factorization: str = "auto"
    argument = "M, B"
    pair = True
    square = True
    value_name = "an eigenvalue"

    def validate(self, pair: tuple[np.ndarray, np.ndarray], array_queue: Any) -> None:
        M, B = pair
        if M.shape != B.shape:
            raise ValueError(f"M and B must have the same shape, got {M.shape} and {B.shape}")

    def device_shape(self, pair: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, bool] | None:
        n = pair[0].shape[0]
        return (2 * n, n, True) if n else None  # F and G, and Z as "V"

    def template(self, pair: Any) -> None:  # one pair a call: no stacks
        return None

    def factor(self, pair: tuple[np.ndarray, np.ndarray], index: tuple[int, ...],
               plan: SweepPlan, info: SolveInfo) -> Factored | Any:
        start = time.perf_counter()
        M_s, shift_m = _hermitian(pair[0], "M")
        B_s, shift_b = _hermitian(pair[1], "B")
        n = M_s.shape[0]
        dtype = np.result_type(M_s, B_s)
        on_device = plan.queue is not None and factors_on_device(
            self.factorization, plan.queue.device, n)
        b_factor = _positive_definite_factor(B_s.astype(dtype), plan, on_device)
        if b_factor is None:
            raise np.linalg.LinAlgError(
                "B is not positive definite (its pivoted Cholesky factorization does not "
                "complete with positive pivots above their rounding level)")
        M_s = M_s.astype(dtype)
        m_factor = j_factorize_device(M_s, plan.queue) if on_device else j_factorize(M_s)
        rank = len(m_factor.signs)
        info.rank, info.positive = rank, m_factor.p
        info.factorization = "bunch-parlett-device" if on_device else "bunch-parlett"
        info.seconds["factorization"] = time.perf_counter() - start
        if rank < n:
            # The columns of F Z of the zero eigenvalues are rounding noise, which the
            # relative orthogonality test cannot tell from data: measured, the sweeps
            # then rotate that noise on and on (no convergence on an NVIDIA GPU).
            raise np.linalg.LinAlgError(
                f"M is singular (numerical rank {rank} < n = {n}): eig_indefinite(M, B) "
                "handles a nonsingular M only so far; eig_indefinite(M) handles singular ones")
        source = HZPair(np.asfortranarray(m_factor.G.conj().T),  # M = F^* J F, J by rows
                        np.asfortranarray(b_factor.G.conj().T),  # B = G^* G
                        np.eye(n, dtype=dtype), prescaled=False, positive_rows=m_factor.p)
        return Factored(source, np.empty(0, dtype=np.int8),
                        kept={"shifts": (shift_m, shift_b), "p": m_factor.p})

    def extract(self, state: HZRun, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        (shift_m, shift_b), p = factored.kept["shifts"], factored.kept["p"]
        # lambda_j = (z_j^* M z_j) / (z_j^* B z_j) = (||f_j+||^2 - ||f_j-||^2) / ||g_j||^2
        f_squares = np.linalg.norm(state.F[:p], axis=0) ** 2 \
            - np.linalg.norm(state.F[p:], axis=0) ** 2
        g_norms = np.linalg.norm(state.G, axis=0)
        # 2^s_m M x = 2^(s_m - s_b) lambda 2^s_b B x: lambda = lambda_s 2^(s_b - s_m).
        w = np.ldexp(f_squares / g_norms**2, shift_b - shift_m)
        order = np.argsort(w, kind="stable")
        if self.eigvals_only:
            return w[order]
        # X = Z diag(1/||g_j||): X^* B_s X = I; B = 2^-s_b B_s, so X 2^(s_b / 2).
        X = np.ldexp(1.0, shift_b // 2) * state.Z[:, order] / g_norms[order]
        return EighResult(w[order], X)


def _positive_definite_factor(B: np.ndarray, plan: SweepPlan, on_device: bool
                              ) -> JFactor | None:
    """``B = L L^*`` with diagonal pivoting, or None where B is not positive
    definite with a margin.  On the host :func:`definite_factorize`; on the
    device the rank-revealing complete pivoting of
    :func:`~cljacobi.host.factorization.j_factorize_device`, which on a
    definite B takes the same 1x1 pivots at the largest diagonal entry (the
    largest |s_ij| of a definite Schur complement is on its diagonal), and
    shows B positive definite when all n pivots are positive, none dropped
    as rounding noise (its entrywise rank test, the bound
    :func:`definite_factorize` puts on the pivots)."""
    n = B.shape[0]
    if not on_device:
        factor = definite_factorize(B)
        return factor if factor is not None and factor.p == n else None
    factor = j_factorize_device(B, plan.queue)
    return factor if len(factor.signs) == n and factor.p == n else None
