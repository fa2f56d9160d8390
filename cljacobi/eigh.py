"""``eigh``: the Hermitian eigenproblem behind scipy's conventions, by a Jacobi method.

``method="one-sided"`` (what ``"auto"`` takes) is :func:`cljacobi.eig_indefinite`,
the accurate path (the small eigenvalues as accurate as the data determine
them).  ``method="classical"`` is the classical two-sided Jacobi method of
Wang et al., "Implementing the Jacobi Algorithm for Solving Eigenvalues of
Symmetric Matrices with CUDA" (cited as [W]): each step annihilates the
off-diagonal entry of largest modulus, found through a per-row cache of the
largest modulus so that a step costs O(n), all steps in one launch
(``templates/classical.cl.mako``; :mod:`cljacobi.classical_reference` is its
numpy reference, with the paper's slips corrected); it stops after
``max_rotations`` steps, as the paper's fixed iteration counts, or when the
largest off-diagonal modulus is at most ``n eps max_i |a_ii|``.
``method="two-sided"`` is the parallel cyclic two-sided method (the strategy
tables of :mod:`cljacobi.strategies`), bounded by ``max_sweeps``: blocked
(``variant="bo"``, what ``"auto"`` takes, or ``"fb"``;
``templates/two_sided.cl.mako``, :mod:`cljacobi.host.two_sided`: per step the
diagonal 2w x 2w blocks of the block pairs get inner sweeps in local memory
and the off-diagonal tiles ``W_k^* A W_l``) or pointwise (``"pointwise"``,
three launches a step); a pair (i, j) rotates while ``|a_ij| > sqrt(n) eps
max(sqrt(|a_ii a_jj|), max_k |a_kk|)`` (``max_k`` over the input), and the
sweeps end after one that rotates nothing.  Both have the two-sided methods'
normwise accuracy (eigenvalue errors of order ``n eps ||A||``): the small
eigenvalues of a graded matrix are only as accurate as ``eps ||A||`` allows,
where the one-sided method keeps them to the data's accuracy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from . import _solve
from ._results import EighResult, SolveInfo
from ._solve import DEFAULT_MAX_SWEEPS, Factored, SweepPlan, TwoSidedMatrix, ldexp
from ._threads import any_nonzero
from .eig import eig_indefinite
from .host.classical import ClassicalRun, CyclicRun
from .host.variants import check_variant_options
from .scaling import matrix_shift_from_range
from .validation import check_flag, symmetric_part

__all__ = ["METHODS", "TWO_SIDED_STRATEGY", "eigh"]

#: What ``method`` takes.
METHODS = ("auto", "one-sided", "two-sided", "classical")

#: The outer strategy of ``method="two-sided"`` for ``strategy="auto"``: the
#: ring of Zhou & Brent (forward and backward sweeps).  On the H200 at n =
#: 1024 .. 4096 it took 18-20 sweeps on graded matrices (Mantharam-Eberlein
#: 26-32) and 15 on rank-deficient ones (23-25), one more on random ones
#: (bench/results/eigh-strategies-H200-2026-11-25.json).
TWO_SIDED_STRATEGY = "ring"

#: What ``variant`` takes with ``method="two-sided"``.
TWO_SIDED_VARIANTS = ("auto", "pointwise", "bo", "fb")

#: The classical method's default ``max_rotations``, in sweeps' worth of
#: steps (n (n - 1) / 2 each); random matrices took 4 to 6.
DEFAULT_ROTATION_SWEEPS = 30


def eigh(
    A: Any,
    *,
    eigvals_only: bool = False,
    method: str = "auto",
    check_finite: bool = True,
    overwrite_a: bool = False,
    max_rotations: int | None = None,
    strategy: str = "auto",
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    variant: str = "auto",
    block_width: int | None = None,
    on_nonconvergence: str = "raise",
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
) -> Any:
    """Eigenvalues (ascending) and eigenvectors of a real symmetric or complex
    Hermitian matrix, as ``scipy.linalg.eigh(A)`` returns them.

    Parameters
    ----------
    A : (..., n, n) array_like or pyopencl.array.Array
        Real symmetric or complex Hermitian (the lower triangle is used
        after checking the symmetry); not modified.
    eigvals_only : bool, optional
        Only the eigenvalues.
    method : {"auto", "one-sided", "two-sided", "classical"}, optional
        "one-sided" (the default of "auto"): :func:`cljacobi.eig_indefinite`,
        high relative accuracy.  "two-sided": the parallel cyclic two-sided
        Jacobi method on A itself (the method of cuSOLVER's ``syevj``): per
        step of `strategy`'s table, the rotations of all its disjoint pairs
        (pointwise) or block pairs (blocked) from the same A, then ``A <- J^*
        A J`` (see `variant`).  "classical": the largest-pivot two-sided Jacobi method of
        [W] on the device (see the module notes).
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries.
    overwrite_a : bool, optional
        Accepted for scipy's signature; `A` is never modified.
    max_rotations : int, optional
        "classical": steps at most (default 30 sweeps' worth, ``30 n (n -
        1) / 2``); reaching it is non-convergence (see `on_nonconvergence`).
        Not for "one-sided", whose sweeps are bounded by ``eig_indefinite``'s
        ``max_sweeps``.
    strategy : str, optional
        "two-sided": the parallel strategy (:func:`cljacobi.strategies.step_table`;
        "auto" is :data:`TWO_SIDED_STRATEGY`, the ring: on graded and
        rank-deficient matrices it takes a third fewer sweeps than
        Mantharam-Eberlein, on random ones one more, bench/README.md);
        "one-sided": as in ``eig_indefinite``.
    max_sweeps : int, optional
        "two-sided": sweeps at most; "one-sided": as in ``eig_indefinite``.
    variant : str, optional
        "two-sided": "bo" (what "auto" takes; one inner sweep on each
        diagonal block per step), "fb" (inner sweeps until one rotates
        nothing) or "pointwise"; "one-sided": as in ``eig_indefinite``
        (``"batched"`` included); "classical": "auto" only.
    block_width : int, optional
        "two-sided" blocked: w, the diagonal blocks and tiles are 2w x 2w
        (default: the widest of 16, 8, ... that the device's local memory
        holds and the order allows); "one-sided": as in ``eig_indefinite``.
    on_nonconvergence : {"raise", "warn"}, optional
        As in :func:`cljacobi.eig_indefinite`.
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the device ``CLJACOBI_DEVICE`` names.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (``info.rotations``: the
        steps taken; ``info.variant``: ``"classical"`` for that method).

    Returns
    -------
    EighResult or ndarray
        ``(eigenvalues, eigenvectors)`` (columns), or the eigenvalues alone;
        with ``return_info`` the pair ``(result, info)``.

    Raises
    ------
    ValueError
        Not square, not Hermitian, not finite; an unknown method or option.
    ConvergenceError
        No convergence in `max_rotations` steps ("classical") or `max_sweeps`
        sweeps (the others), unless ``on_nonconvergence="warn"``.
    DeviceCapabilityError, DeviceMemoryError
        The device lacks fp64 or memory (checked before the launch).
    """
    eigvals_only = check_flag(eigvals_only, "eigvals_only")
    check_finite = check_flag(check_finite, "check_finite")
    check_flag(overwrite_a, "overwrite_a")
    return_info = check_flag(return_info, "return_info")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if method != "classical" and max_rotations is not None:
        raise ValueError("max_rotations bounds method='classical'; the other methods are "
                         "bounded by max_sweeps")
    if method in ("auto", "one-sided"):
        return eig_indefinite(A, eigvals_only=eigvals_only, check_finite=check_finite,
                              strategy=strategy, max_sweeps=max_sweeps, variant=variant,
                              block_width=block_width,
                              on_nonconvergence=on_nonconvergence, queue=queue,
                              return_info=return_info)
    if method == "classical" and (variant != "auto" or block_width is not None):
        raise ValueError("method='classical' has no variants: variant='auto' and no "
                         "block_width")
    if method == "two-sided" and variant not in TWO_SIDED_VARIANTS:
        raise ValueError(f"variant must be one of {TWO_SIDED_VARIANTS} with "
                         f"method='two-sided', not {variant!r}")
    check_variant_options(variant, block_width)
    if method == "two-sided" and variant == "auto":
        variant = "bo"
    if method == "two-sided" and strategy == "auto":
        strategy = TWO_SIDED_STRATEGY
    if max_rotations is not None and (isinstance(max_rotations, bool) or not isinstance(
            max_rotations, (int, np.integer)) or max_rotations < 0):
        raise ValueError(f"max_rotations must be a nonnegative integer, not {max_rotations!r}")
    plan = _solve.sweep_plan(
        "eigh", strategy=strategy, rotation=None, sort_diagonal=True,
        max_sweeps=max_sweeps, on_nonconvergence=on_nonconvergence, variant="auto",
        block_width=None, queue=queue)
    return _solve.solve(_TwoSided(eigvals_only, method, max_rotations, variant, block_width), A,
                        plan, queue=queue, check_finite=check_finite, return_info=return_info)


@dataclass(frozen=True)
class _TwoSided:
    """eigh's two-sided methods in the pipeline: the Hermitian part, scaled by
    a power of two, to the device ("classical" or "two-sided"); the diagonal and
    V read off."""

    eigvals_only: bool
    method: str
    max_rotations: int | None
    #: "two-sided": "pointwise", "bo" or "fb"
    variant: str
    block_width: int | None
    argument = "A"
    square = True
    value_name = "an eigenvalue"

    def validate(self, A: np.ndarray, array_queue: cl.CommandQueue | None) -> None:
        pass

    def device_shape(self, A: np.ndarray) -> tuple[int, int, bool] | None:
        n = A.shape[-1]
        return (n, n, not self.eigvals_only) if n >= 2 and any_nonzero(A) else None

    def template(self, A: np.ndarray) -> Any:
        n = A.shape[-1]
        if self.eigvals_only:
            return np.zeros(n)
        return EighResult(np.zeros(n), np.zeros((n, n), A.dtype))

    def _result(self, w: np.ndarray, V: np.ndarray) -> Any:
        return w if self.eigvals_only else EighResult(w, V)

    def factor(self, A: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
               info: SolveInfo) -> Factored | Any:
        n = A.shape[0]
        start = time.perf_counter()
        if n == 0:
            return self._result(np.empty(0), np.empty((0, 0), dtype=A.dtype))
        symmetric, smallest, largest = symmetric_part(A, _solve.name_of("A", index))
        shift = matrix_shift_from_range(smallest, largest, n, _solve.name_of("A", index))
        if n == 1 or largest == 0:  # diagonal already: answered on the host
            return self._result(np.diagonal(symmetric).real.copy(),
                                np.eye(n, dtype=A.dtype))
        scaled = ldexp(symmetric, shift, out=symmetric)
        info.seconds["factorization"] = time.perf_counter() - start
        rotations = self.max_rotations
        if rotations is None:
            rotations = DEFAULT_ROTATION_SWEEPS * n * (n - 1) // 2
        eps = float(np.finfo(np.float64).eps)
        # "classical": the largest off-diagonal modulus against n eps max |a_ii|;
        # "two-sided": a pair against sqrt(n) eps (residuals of about 1e-14
        # ||A||, in the sweeps n eps takes or one more; bench/README.md)
        tol = n * eps if self.method == "classical" else math.sqrt(n) * eps
        source = TwoSidedMatrix(scaled, self.method, rotations, tol, not self.eigvals_only,
                                self.variant, self.block_width)
        return Factored(source, np.empty(0, dtype=np.int8), kept={"shift": shift})

    def extract(self, run: ClassicalRun | CyclicRun, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        w = np.ldexp(np.diagonal(run.A).real, -factored.kept["shift"])
        order = np.argsort(w, kind="stable")
        V = None if run.V is None else np.ascontiguousarray(run.V[:, order])
        return self._result(w[order], V)
