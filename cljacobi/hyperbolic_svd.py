"""The hyperbolic singular value decomposition ``G = U diag(S) Vh``.

One-sided hyperbolic Jacobi (Novaković & Singer, "A GPU-based hyperbolic SVD
algorithm", BIT 51 (2011)): the columns of G are orthogonalized by
J-orthogonal rotations, accumulated in V; the hyperbolic singular values are
the final column norms.  The pipeline is :mod:`cljacobi._solve`'s; this
module adds what is hsvd's own: the signature J, the shortening of a tall G
and what is read off the final factor.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from . import _solve
from ._arrays import to_host
from ._results import HSVDResult, SolveInfo
from ._solve import DEFAULT_MAX_SWEEPS, Factored, SweepPlan, ldexp, name_of, unit_columns
from .host.pointwise import HSVDState
from .scaling import factor_shift, unshift
from .shortening import shorten
from .validation import as_signature, check_flag

__all__ = ["hsvd"]


def hsvd(
    G: np.ndarray,
    J: np.ndarray,
    *,
    compute_uv: bool = True,
    check_finite: bool = True,
    strategy: str = "auto",
    rotation: int | None = None,
    sort_diagonal: bool = True,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    on_nonconvergence: str = "raise",
    variant: str = "auto",
    block_width: int | None = None,
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
    comm: Any = None,
    _layout: str | None = None,
    _single: bool | None = None,
):
    """Hyperbolic singular value decomposition ``G = U diag(S) Vh``.

    One-sided hyperbolic Jacobi (Novaković & Singer 2011): the columns of G
    are orthogonalized by rotations that are J-orthogonal, accumulated in V
    (eq. (2.1)).  Then ``G diag(J) G^* = U diag(J S^2) U^*``.

    Parameters
    ----------
    G : (..., m, n) array_like or pyopencl.array.Array
        Real or complex, ``m >= n``, no zero column, or a stack of such.  A
        tall G is shortened by a QR factorization with sorted rows and
        pivoted columns first (:func:`cljacobi.shortening.shorten`: row-graded
        G stay accurate, and the order of the rows does not change the
        result).  Dtypes, layouts and device arrays
        as in :func:`eig_indefinite`.  G may be rank deficient where the
        hyperbolic SVD exists, i.e. where the dependencies lie among columns
        of one sign (say a column repeated with the same sign): the
        rotations within that sign group are orthogonal and turn the
        dependency into a zero column, so S gets a zero, or rounding-level,
        value (``info.rank`` counts the nonzero ones) and U an orthonormal
        column completing the basis, as :func:`svd` does (hsvd with
        ``J = I`` is the SVD).  Numerically dependent columns of opposite
        signs have no hyperbolic SVD (no J-unitary V can orthogonalize
        them): LinAlgError.
    J : (n,) or (..., n) array_like
        The signature: entries +1 or -1 (one for the whole stack, or one per
        matrix), as integers or reals; a bool, complex or string J is a
        TypeError.
    compute_uv : bool, optional
        Compute U and Vh (V is accumulated on the device).  If False only
        ``(S, J)`` are returned.
    variant : {"auto", "pointwise", "bo", "offdiag", "fb", "stream", "batched"}, optional
        As in :func:`eig_indefinite`; "batched" solves a stack in one
        launch, each square factor and its V in the local memory of one
        work-group (the columns in sign order, the sweeps with one work-item
        per pivot pair, then S, U and Vh), for n from 2 up to
        ``cljacobi.host.batched.batched_order_limit(device, complex_,
        compute_uv, "hsvd")`` (real 52 and complex 36 on a device with 48
        KiB), in a slot of global memory above it up to
        ``cljacobi.host.batched.BATCHED_GLOBAL_ORDER_LIMIT`` (128); "auto"
        takes it for such stacks (``G.ndim > 2``).  A tall G is
        shortened on the host first, one QR per matrix as on the one-matrix
        path, and its R swept in the launch.
    check_finite, strategy, rotation, sort_diagonal, max_sweeps, on_nonconvergence
    block_width, queue, return_info, comm, _layout, _single
        As in :func:`eig_indefinite`.

    Returns
    -------
    HSVDResult(U, S, Vh, J)
        U (m, n) with orthonormal columns; S (n,) **descending** hyperbolic
        singular values; J (n,) the input signature permuted to match S
        (int8); Vh (n, n) J-unitary between the two signatures:
        ``Vh @ diag(J_in) @ Vh.conj().T = diag(J)`` with `J_in` the
        signature passed in and `J` the one returned.  Stacked over
        the leading dimensions of `G`.  With ``compute_uv=False``, the pair
        ``(S, J)``.  With ``return_info=True``, ``(result, info)``.

    Raises
    ------
    ValueError
        Bad shapes, ``m < n``, a zero column, J not +-1, non-finite input.
    TypeError
        Unsupported dtype of G or J (J bool, complex, strings), or a flag
        that is not a bool, 0 or 1.
    numpy.linalg.LinAlgError
        No hyperbolic SVD to relative accuracy: two columns of opposite
        signs in J parallel to working precision (no hyperbolic rotation
        exists), or a column whose squared norm falls below the
        floating-point range before it is orthogonal; column
        norms spanning more than float64 holds at once (about ``2^1000``; a
        LinAlgError is a ValueError); non-finite input with
        ``check_finite=False``; a singular value beyond float64;
        :class:`~cljacobi.ConvergenceError` as in :func:`eig_indefinite`.
    """
    compute_uv = check_flag(compute_uv, "compute_uv")
    check_finite = check_flag(check_finite, "check_finite")
    return_info = check_flag(return_info, "return_info")
    plan = _solve.sweep_plan(
        "hsvd", strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal,
        max_sweeps=max_sweeps, on_nonconvergence=on_nonconvergence, variant=variant,
        block_width=block_width, queue=queue, layout=_layout, single=_single, batched=True)
    method = _HSVD(J, compute_uv=compute_uv, queue=queue)
    if comm is not None:  # the sweeps on all ranks (cljacobi.distributed)
        return _solve.solve_on(comm, method, G, plan, queue=queue,
                               check_finite=check_finite, return_info=return_info, signature=J)
    return _solve.solve(method, G, plan, queue=queue, check_finite=check_finite,
                        return_info=return_info)


def _columns_carry_scale(R: np.ndarray) -> bool:
    """Whether the rounding each column of `R` carries is eps times its largest
    norm (the sweeps' ``peak_rounding``): true unless the rows of `R` are graded.

    An entry carries the rounding of its row, so a column whose content lies
    in rows far below the others may shrink far below its peak and still be
    data, not the remainder of a dependency.  The sweeps take a column for
    rounding once its norm is ``tol = sqrt(m) eps`` of its peak; with row norms
    within ``1 / sqrt(tol)`` of each other (a margin of ``sqrt(tol)`` for what
    the rotations move between rows) that cannot be a graded row's content.
    Graded rows switch the test off: then only exact dependencies are
    recognized, and the remainder of one may end in the LinAlgError for a
    column that underflows.
    """
    rows = np.linalg.norm(R, axis=1)
    rows = rows[rows > 0]
    if rows.size == 0:
        return True
    tol = np.sqrt(R.shape[0]) * np.finfo(np.float64).eps
    return bool(rows.max() <= rows.min() / np.sqrt(tol))


@dataclass
class _HSVD:
    """hsvd's part of the pipeline: the signature, the shortening of a tall G,
    and ``U``, ``S``, ``Vh`` and the permuted J from the final factor."""

    J: Any
    compute_uv: bool
    queue: Any
    argument = "G"
    #: A stack of small square factors may run in one launch (cljacobi._batch).
    batched_problem = "hsvd"
    square = False
    value_name = "a hyperbolic singular value"
    signs: np.ndarray | None = None

    def validate(self, A: np.ndarray, array_queue: cl.CommandQueue | None) -> None:
        m, n = A.shape[-2:]
        self.signs = as_signature(to_host(self.J, array_queue or self.queue)[0], A.shape)
        if m < n:
            raise ValueError(
                f"G of shape {A.shape} cannot have full column rank: hsvd needs m >= n"
            )

    def device_shape(self, A: np.ndarray) -> tuple[int, int, bool] | None:
        n = A.shape[-1]
        return (n, n, self.compute_uv) if n and A.size else None

    def template(self, A: np.ndarray) -> Any:
        m, n = A.shape[-2:]
        S0, J0 = np.zeros(n), np.ones(n, dtype=np.int8)
        if not self.compute_uv:
            return (S0, J0)
        return HSVDResult(np.zeros((m, n), A.dtype), S0, np.zeros((n, n), A.dtype), J0)

    def factor(self, G: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
               info: SolveInfo) -> Factored | Any:
        m, n = G.shape
        signs = self.signs[index]
        info.positive = int(np.count_nonzero(signs > 0))
        if n == 0:
            empty, no_signs = np.empty(0), np.empty(0, dtype=np.int8)
            if not self.compute_uv:
                return (empty, no_signs)
            return HSVDResult(np.empty((m, 0), G.dtype), empty, np.empty((0, 0), G.dtype),
                              no_signs)
        start = time.perf_counter()
        # Center the squared column norms in float64's range (exact); a tall G is
        # shortened by a row-sorted, column-pivoted QR, G[:, perm] = Q R, with
        # J[perm] sorted +1 first.
        exponent = factor_shift(G, name_of("G", index))
        Q, R, perm = shorten(ldexp(G, exponent), signs, compute_q=self.compute_uv)
        signs_sorted = signs[perm].astype(np.int8)
        if m > n:  # shortened
            info.factorization = "qr"
        info.seconds["factorization"] = time.perf_counter() - start
        return Factored(R, signs_sorted, accumulate_v=self.compute_uv,
                        peak_rounding=_columns_carry_scale(R),
                        kept={"n": n, "Q": Q, "perm": perm, "exponent": exponent})

    def extract(self, state: HSVDState, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        kept, signs_sorted = factored.kept, factored.signs
        sigma = np.linalg.norm(state.G, axis=0)
        # A dependency among columns of one sign rotates into a zero (or
        # rounding-level) column: a zero singular value, its U column completed.
        info.rank = int(np.count_nonzero(sigma > 0))
        order = np.argsort(-sigma, kind="stable")
        S = unshift(sigma, kept["exponent"],
                    f"a hyperbolic singular value of {name_of('G', index)}")[order]
        J_out = signs_sorted[order]
        if not self.compute_uv:
            return (S, J_out)
        U = unit_columns(state.G[:, order], sigma[order], kept["Q"], kept["n"])
        # G_perm = G_final V^{-1} with V^{-1} = J V^* J (V^* J V = J), so
        # G_perm = U Sigma (J V^* J); undo the column permutation of G.
        Vh_sorted = (signs_sorted[:, None] * state.V.conj().T) * signs_sorted[None, :]
        Vh = np.empty_like(Vh_sorted)
        Vh[:, kept["perm"]] = Vh_sorted
        return HSVDResult(U, S, Vh[order], J_out)
