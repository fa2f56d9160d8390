"""The one solver pipeline every public function runs.

``eig_indefinite``, ``hsvd``, ``svd``, ``gsvd`` and ``eig_indefinite(M, B)``
differ only in what they factor and what they read off the result of the
sweeps; everything else is here, once (the last two are pair methods: two
matrices, the implicit Hari-Zimmermann sweeps of :func:`run_hz` in place of
the one-sided ones):

1. validation: the options (by the caller, in scipy's order: options first),
   then the arrays (:func:`cljacobi.validation.as_float_matrix`), a stack of
   matrices solved one by one;
2. the device: chosen and checked for every limit before the first
   factorization and launch (:func:`cljacobi.host.preflight.preflight`);
3. per matrix, the method's :meth:`Method.factor` (scaling, J-factorization
   or QR shortening (hsvd, svd); trivial inputs are answered there, on the host);
4. the sweeps (:func:`run_sweeps`): blocked sweeps when the variant asks for
   them, then pointwise sweeps that finish and decide convergence, one set
   of device buffers for both;
5. the method's :meth:`Method.extract` (eigenvalues and vectors, singular
   values and vectors), then the checks every result passes (finite, the
   caller's precision) and the warnings, once per call.

The pair transformation (hyperbolic or trigonometric rotation, by the signs
in J) and the convergence rule (relative orthogonality, ``|a_ij| <= eps
sqrt(a_ii a_jj)``) are the kernels' (``docs/design.md``, Appendix B).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pyopencl as cl

from ._arrays import is_device_array, solve_stack, to_device, to_host
from ._batch import batched_queue, solve_batched
from ._results import SolveInfo
from ._threads import all_finite, in_row_blocks
from .errors import ConvergenceError, warn_unconverged
from .host.blocked import BLOCK_VARIANTS, COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES, BlockedHSVD
from .host.classical import ClassicalRun, CyclicRun, classical_run, cyclic_run
from .host.device import has_fp64, resolve_queue
from .host.factorization import DeviceJFactor
from .host.hz import HZRun, hz_sweeps
from .host.operands import Operands, download, gather_factor
from .host.pointwise import HSVDState, PointwiseHSVD, complex_layout
from .host.preflight import preflight
from .host.signatures import kernels_reused
from .host.two_sided import TWO_SIDED_INNER_SWEEPS, blocked_cyclic_run
from .host.variants import check_variant_options, choose_variant
from .options import JacobiOptions, resolve_options
from .validation import (
    as_float_matrix,
    check_max_sweeps,
    check_on_nonconvergence,
    check_queue_argument,
    require_finite,
)

__all__ = [
    "AUTO_DEVICE_FACTORIZATION_MIN_ORDER", "DEFAULT_MAX_SWEEPS", "FACTORIZATIONS", "Factored",
    "HZPair", "Method", "OnDevice", "SweepPlan", "TwoSidedMatrix",
    "check_factorization", "complete", "factors_on_device",
    "ldexp", "name_of", "orthogonal_complement", "orthogonalization_error", "real_dtype",
    "run_hz", "run_two_sided",
    "single_precision",
    "solve", "solve_on", "sweep_plan", "unit_columns", "where",
]


#: Quasi-sweeps before giving up.  The 2011 paper needs at most 16 for
#: n = 4096 (its Table 3); the margin covers harder spectra.
DEFAULT_MAX_SWEEPS = 60

#: Where a method's factorization runs (eig_indefinite's Bunch-Parlett, svd's QR).
FACTORIZATIONS = ("auto", "host", "device")

#: ``factorization="auto"`` factors on a GPU device from this order on.
AUTO_DEVICE_FACTORIZATION_MIN_ORDER = 256


def check_factorization(factorization: str) -> str:
    """`factorization` if it is one of :data:`FACTORIZATIONS`, else ValueError."""
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"factorization must be one of {FACTORIZATIONS}, not {factorization!r}")
    return factorization


def factors_on_device(factorization: str, device: cl.Device, order: int) -> bool:
    """Whether the factorization runs on `device`: asked for ("device"), or
    "auto" on a GPU with fp64 from :data:`AUTO_DEVICE_FACTORIZATION_MIN_ORDER`
    on (the device kernels compute in double precision; a CPU device is
    slower than LAPACK on the same cores)."""
    return factorization == "device" or (
        factorization == "auto" and bool(device.type & cl.device_type.GPU)
        and has_fp64(device) and order >= AUTO_DEVICE_FACTORIZATION_MIN_ORDER)


# ---------------------------------------------------------------------------
# Small shared helpers
# ---------------------------------------------------------------------------


def ldexp(array: np.ndarray, exponent: int, out: np.ndarray | None = None) -> np.ndarray:
    """``array * 2**exponent``, exactly (no overflow/underflow), real or complex;
    into `out` (which may be `array`) if given.  Large arrays go by blocks of
    rows in threads (:func:`cljacobi._threads.in_row_blocks`)."""
    if out is None:
        out = np.empty_like(array)
    parts = ((array.real, out.real), (array.imag, out.imag)) if np.iscomplexobj(array) \
        else ((array, out),)
    for part, out_part in parts:
        in_row_blocks(lambda a, o: np.ldexp(a, exponent, out=o), part, out_part)
    return out


def real_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for float32/complex64, float64 for float64/complex128."""
    return np.dtype(np.finfo(dtype).dtype)


def single_precision(queue: cl.CommandQueue, result_dtype: np.dtype, single: bool | None) -> bool:
    """Whether the single precision kernels run: float32/complex64 data on a
    device without fp64 (or as forced by the private `single`)."""
    if single is not None:
        return single
    return real_dtype(result_dtype) == np.float32 and not has_fp64(queue.device)


def where(index: tuple[int, ...]) -> str:
    """How a message names one matrix of a stack ("" for a single matrix)."""
    return f" (matrix {index} of the stack)" if index else ""


def name_of(base: str, index: tuple[int, ...]) -> str:
    """The argument name with the stack index, e.g. ``M[1, 0]``."""
    return f"{base}[{', '.join(map(str, index))}]" if index else base


def complete(U: np.ndarray, valid: np.ndarray, columns: int) -> np.ndarray:
    """`columns` orthonormal columns: those of `U` where `valid`, the rest completed.

    The valid columns keep their positions; the others (zero singular values,
    or the extra columns of ``full_matrices=True``) are filled with an
    orthonormal basis of the orthogonal complement of the valid ones
    (:func:`orthogonal_complement`).  With every column valid and none to
    add, that is `U` itself (the callers pass arrays of their own; the
    copies by column masks cost more than the sweeps' extraction otherwise
    does: 0.65 s of a 4096 x 4096 U on a 2-core host).
    """
    if columns == U.shape[1] and valid.all():
        return U
    m = U.shape[0]
    out = np.zeros((m, columns), dtype=U.dtype)
    out[:, : U.shape[1]][:, valid] = U[:, valid]
    missing = np.flatnonzero(~np.concatenate([valid, np.zeros(columns - U.shape[1], bool)]))
    if missing.size:
        out[:, missing] = orthogonal_complement(U[:, valid], missing.size)
    return out


def orthogonal_complement(U: np.ndarray, count: int) -> np.ndarray:
    """`count` orthonormal columns orthogonal to the columns of the ``m x r`` `U`.

    `U` has full column rank (orthonormal columns, or a factor whose range
    is wanted).  The result is columns ``r, r+1, ...`` of the Householder Q
    of ``U = Q R`` (what ``numpy.linalg.qr(U, mode="complete")`` returns
    there), formed from the compact WY form ``Q = I - V T V^*`` (Schreiber
    & Van Loan 1989) instead of all ``m x m`` of Q: column ``r + j`` of Q is
    ``e_(r+j) - V T (row r + j of V)^*``.  T comes from the UT transform
    ``T^-1 = diag(1/tau) + striu(V^* V)`` (Joffrain, Low, Quintana-Orti, van
    de Geijn & Van Zee 2006, eq. (4)), so that the work is one QR and a few
    products.
    """
    m, r = U.shape
    if r == 0:
        return np.eye(m, count, dtype=U.dtype)
    raw, tau = np.linalg.qr(U, mode="raw")  # raw.T holds R and the reflectors
    if not np.all(tau):  # a reflector H = I: T is singular, take the explicit Q
        return np.linalg.qr(U, mode="complete")[0][:, r : r + count]
    V = np.tril(raw.T, -1)  # unit lower trapezoidal
    diagonal = np.arange(r)
    V[diagonal, diagonal] = 1
    T_inverse = np.triu(V.conj().T @ V, 1)
    T_inverse[diagonal, diagonal] = 1 / tau
    complement = -(V @ np.linalg.solve(T_inverse, V[r : r + count].conj().T))
    complement[r + np.arange(count), np.arange(count)] += 1
    return complement


def unit_columns(
    G: np.ndarray, norms: np.ndarray, Q: np.ndarray | None, columns: int
) -> np.ndarray:
    """The columns of G divided by their `norms`, premultiplied by Q (if G is
    the R of ``Q R``), and completed to `columns` orthonormal columns where a
    norm is zero and beyond G's own columns (:func:`complete`)."""
    nonzero = norms > 0
    if nonzero.all():  # the same quotients, without copies by a column mask
        U = np.empty_like(G)
        in_row_blocks(lambda rows, out: np.divide(rows, norms, out=out), G, U)
    else:
        U = np.zeros_like(G)
        U[:, nonzero] = G[:, nonzero] / norms[nonzero]
    if Q is not None:
        U = Q @ U
    return complete(U, nonzero, columns)


# ---------------------------------------------------------------------------
# What a call asks for, and what a method adds
# ---------------------------------------------------------------------------


_FLOAT64 = np.dtype(np.float64)


@dataclass(frozen=True)
class SweepPlan:
    """How one call runs its sweeps: the same for every matrix of a stack."""

    #: The public function called, as the messages name it.
    caller: str
    options: JacobiOptions
    max_sweeps: int
    on_nonconvergence: str
    variant: str
    block_width: int | None
    #: Storage of complex columns on the device (None: the library's choice).
    layout: str | None = None
    #: Forces the single precision kernels (None: only where the device lacks fp64).
    single: bool | None = None
    #: None when no matrix of the call needs the device.
    queue: cl.CommandQueue | None = None
    result_dtype: np.dtype = _FLOAT64
    #: The mpi4py communicator the sweeps run on (rank 0's plan; None: this
    #: device alone; :mod:`cljacobi.distributed`).
    comm: Any = None
    #: Whether the method's `factor` checks the matrix for infs and NaNs
    #: (:attr:`Method.checks_finite_on_upload`): on the device as it loads
    #: it, else on the host.
    finite_left_to_factor: bool = False


def sweep_plan(
    caller: str, *, strategy: str, rotation: int | None, sort_diagonal: bool,
    max_sweeps: int, on_nonconvergence: str, variant: str, block_width: int | None,
    queue: cl.CommandQueue | cl.Context | None, layout: str | None = None,
    single: bool | None = None, batched: bool = False,
) -> SweepPlan:
    """The checked sweep options of a call (each bad value a ValueError or
    TypeError naming it, before any array is looked at)."""
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    on_nonconvergence = check_on_nonconvergence(on_nonconvergence)
    check_variant_options(variant, block_width, batched=batched)
    check_queue_argument(queue)
    return SweepPlan(caller, options, max_sweeps, on_nonconvergence, variant, block_width,
                     layout, single)


@dataclass(frozen=True)
class OnDevice:
    """A J-factor left on the device by :func:`cljacobi.host.factorization.factor_on_device`,
    to be scaled by ``2^exponent`` on its way into the sweeps (no host round trip)."""

    factor: DeviceJFactor
    exponent: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.factor.n, self.factor.rank

    @property
    def dtype(self) -> np.dtype:  # also what np.iscomplexobj reads
        return self.factor.dtype

    def operands(self, column_multiple: int, accumulate_v: bool, *, split: bool) -> Operands:
        f = self.factor
        return gather_factor(
            f.queue, f.buffer, f.ld, f.n, f.order, f.p, self.exponent,
            accumulate_v=accumulate_v, column_multiple=column_multiple, dtype=f.dtype,
            split=split,
        )

    def host_factor(self) -> np.ndarray:
        """The scaled factor (``n x rank``, its columns in the sweeps' order)
        on the host."""
        return download(self.factor.queue, self.operands(2, False, split=False))[0]


@dataclass
class Factored:
    """What a method hands to the sweeps, and keeps for its extraction.

    Attributes
    ----------
    source : numpy.ndarray or OnDevice
        The factor whose columns the sweeps orthogonalize.
    signs : numpy.ndarray
        Its signature J (+1 first), int8.
    accumulate_v : bool
        Whether the sweeps accumulate V.
    fetch : bool
        Whether the final G (and V) come back to the host (else they stay in
        ``state.operands``).
    peak_rounding : bool
        Whether each column's rounding is eps times its largest norm so far
        (the factor's columns carry its scale, as a J-factor from complete
        pivoting and R^* after a row-sorted pivoted QR do); False for a factor
        whose rows may be graded (see
        :meth:`cljacobi.host.pointwise.PointwiseHSVD.run_operands`).
    kept : dict
        Whatever the method's extraction needs (scalings, Q, permutations).
    finite_results : list
        Arrays of the extraction's result that it knows to be finite (the
        device tested them as it wrote them), which the pipeline then does
        not read again to check.
    on_settled : callable or None
        Called with the squared column norms, the signature and the device
        operands before the certified finishing sweeps, and what it returns
        once their first certificate is enqueued (see
        :meth:`cljacobi.host.pointwise.PointwiseHSVD.run_operands`): where
        the extraction may start reading results beside them.
    """

    source: np.ndarray | OnDevice
    signs: np.ndarray
    accumulate_v: bool = False
    fetch: bool = True
    peak_rounding: bool = True
    kept: dict[str, Any] = field(default_factory=dict)
    finite_results: list[np.ndarray] = field(default_factory=list)
    on_settled: Callable[[np.ndarray, np.ndarray, Any], Callable[[], None] | None] | None = None


@dataclass(frozen=True)
class HZPair:
    """What a pair method hands to the implicit Hari-Zimmermann sweeps
    (:func:`cljacobi.host.hz.hz_sweeps`): F, G and the transformation so far Z,
    and the sweeps' options."""

    F: np.ndarray
    G: np.ndarray
    Z: np.ndarray
    prescaled: bool = False
    criterion: str = "C1"
    #: 0: pointwise only; else the block width of the blocked level.
    block_width: int = 0
    #: "bo" or "fb" for the blocked level.
    variant: str = "bo"
    #: ``A = F^* J F`` with ``J = diag(I_p, -I)``, p = positive_rows; None: ``F^* F``.
    positive_rows: int | None = None
    #: The enhanced dot products of [NS] Appendix A.
    enhanced_dots: bool = False


@dataclass(frozen=True)
class TwoSidedMatrix:
    """What a two-sided method hands to the device: the Hermitian matrix itself
    (:func:`cljacobi.host.classical.classical_run`) and its options."""

    A: np.ndarray
    #: "classical" (largest pivot) or "two-sided" (parallel cyclic, the plan's
    #: strategy tables)
    method: str
    #: the classical method's steps at most
    max_rotations: int
    tol: float
    compute_v: bool
    #: "two-sided": "pointwise", or the blocked "bo" (one inner sweep) or "fb"
    variant: str = "pointwise"
    #: "two-sided" blocked: w (None: the device's choice)
    block_width: int | None = None


def run_two_sided(source: TwoSidedMatrix, *, plan: SweepPlan, info: SolveInfo,
                  index: tuple[int, ...] = ()) -> ClassicalRun | CyclicRun:
    """The two-sided Jacobi method of a two-sided method, `info` filled;
    without convergence a :class:`ConvergenceError` unless
    ``plan.on_nonconvergence == "warn"``."""
    info.device = plan.queue.device.name.strip()
    info.precision = "double"
    info.variant, info.block_width = source.method, 0
    if source.method == "classical":
        run = classical_run(plan.queue, source.A, max_rotations=source.max_rotations,
                            tol=source.tol, compute_v=source.compute_v)
        info.rotations = run.rotations
        budget, knob = f"{source.max_rotations} rotations", "max_rotations"
    else:
        info.strategy, info.variant = plan.options.strategy, source.variant
        if source.variant == "pointwise":
            run = cyclic_run(plan.queue, source.A, strategy=plan.options.strategy,
                             max_sweeps=plan.max_sweeps, tol=source.tol,
                             compute_v=source.compute_v)
        else:
            run = blocked_cyclic_run(
                plan.queue, source.A, strategy=plan.options.strategy,
                block_width=source.block_width,
                inner_sweeps=TWO_SIDED_INNER_SWEEPS[source.variant], max_sweeps=plan.max_sweeps,
                tol=source.tol, compute_v=source.compute_v)
            info.block_width = run.block_width
        info.sweeps, info.rotations_per_sweep = run.sweeps, run.rotations_per_sweep
        info.rotations = sum(run.rotations_per_sweep)
        budget, knob = f"{plan.max_sweeps} sweeps", "max_sweeps"
    info.converged = run.converged
    info.seconds["sweeps"] += run.seconds
    if not run.converged and plan.on_nonconvergence == "raise":
        raise _not_converged(plan, info, index, budget, knob)
    return run


def run_hz(pair: HZPair, *, plan: SweepPlan, info: SolveInfo, index: tuple[int, ...] = ()
           ) -> HZRun:
    """The implicit Hari-Zimmermann sweeps of a pair method, `info` filled;
    without convergence a :class:`ConvergenceError` unless
    ``plan.on_nonconvergence == "warn"`` (then the public function warns)."""
    describe_hz_run(info, plan, *((pair.variant, pair.block_width) if pair.block_width
                                  else ("pointwise", 0)))
    if plan.comm is not None:
        from .distributed import run_hz as run_hz_on_comm

        run = run_hz_on_comm(pair, plan=plan, info=info)
    else:
        run = hz_sweeps(plan.queue, pair.F, pair.G, pair.Z, prescaled=pair.prescaled,
                        criterion=pair.criterion, strategy=plan.options.strategy,
                        max_sweeps=plan.max_sweeps, block_width=pair.block_width,
                        variant=pair.variant, positive_rows=pair.positive_rows,
                        enhanced_dots=pair.enhanced_dots)
    return record_hz_run(run, plan=plan, info=info, index=index)


def describe_hz_run(info: SolveInfo, plan: SweepPlan, variant: str, block_width: int) -> None:
    """What `info` says of the implicit Hari-Zimmermann sweeps before they run."""
    info.strategy = plan.options.strategy
    info.device = plan.queue.device.name.strip()
    info.precision = "double"
    info.variant, info.block_width = variant, block_width


def record_hz_run(run: HZRun, *, plan: SweepPlan, info: SolveInfo,
                  index: tuple[int, ...] = ()) -> HZRun:
    """`run`'s sweeps, convergence, transformations and seconds into `info`;
    without convergence a :class:`ConvergenceError` unless
    ``plan.on_nonconvergence == "warn"``."""
    info.sweeps, info.converged = run.sweeps, run.converged
    info.matrix_products = run.matrix_products
    info.rotations_per_sweep, info.rotations = run.transformations, sum(run.transformations)
    info.seconds["sweeps"] += run.seconds
    if not run.converged and plan.on_nonconvergence == "raise":
        raise _not_converged(plan, info, index, f"{plan.max_sweeps} sweeps", "max_sweeps",
                             f" (transformations per sweep: {run.transformations})")
    return run


def _not_converged(plan: SweepPlan, info: SolveInfo, index: tuple[int, ...], budget: str,
                   knob: str, detail: str = "") -> ConvergenceError:
    """The error of a run that used up `budget` (``"60 sweeps"``) without
    converging; `knob` is the option that raises it."""
    return ConvergenceError(
        f"{plan.caller} did not converge in {budget}{where(index)}{detail}; pass a larger "
        f"{knob}, or on_nonconvergence='warn' for the partial result", info)


class Method(Protocol):
    """What one public function adds to the pipeline.

    A method with ``pair = True`` takes two matrices, ``data = (A, B)``
    (``argument`` names both, ``"A, B"``), one pair a call, and hands the
    implicit Hari-Zimmermann sweeps an :class:`HZPair`; one that also has
    ``pair_stacks = True`` (gsvd) takes stacks of pairs through
    :mod:`cljacobi._batch_gsvd`.  One with ``checks_finite_on_upload = True``
    (eig_indefinite) checks a single matrix for infs and NaNs itself, in
    `factor`, where ``plan.finite_left_to_factor`` says so: the device tests
    every entry as M is loaded, so the host makes no pass over M first.
    """

    #: The argument's name in messages (``"M"``, ``"G"``, ``"A"``; ``"A, B"`` for a pair).
    argument: str
    #: Whether the matrix must be square.
    square: bool
    #: What a result value is called in messages ("an eigenvalue").
    value_name: str

    def validate(self, A: np.ndarray, array_queue: cl.CommandQueue | None) -> None:
        """Checks beyond the shape and dtype (raise)."""

    def device_shape(self, A: np.ndarray) -> tuple[int, int, bool] | None:
        """``(rows, columns, accumulate_v)`` of the largest factor the sweeps
        of this call take, for the device checks; None if every matrix of the
        stack `A` is answered on the host."""

    def template(self, A: np.ndarray) -> Any:
        """Zeros shaped like one matrix's result (the layout of a stack's)."""

    def factor(self, matrix: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
               info: SolveInfo) -> Factored | Any:
        """Prepare the sweeps, or answer on the host (the result itself)."""

    def extract(self, state: HSVDState, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        """The result from the orthogonalized factor."""


# ---------------------------------------------------------------------------
# The pipeline
# ---------------------------------------------------------------------------


def solve(method: Method, data: Any, plan: SweepPlan, *, queue: Any, check_finite: bool,
          return_info: bool) -> Any:
    """Run `method` on `data` (one matrix or a stack; numpy or pyopencl) with `plan`.

    Returns the result (of the type of `data`: pyopencl arrays for pyopencl
    input), with ``return_info`` the pair ``(result, info)``; `info` is a
    list (C order) for a stack.
    """
    pair = bool(getattr(method, "pair", False))
    if pair and getattr(method, "pair_stacks", False):
        from ._batch_gsvd import solve_pair_stack, stacked_pairs  # it imports the pipeline

        if stacked_pairs(data, plan):  # stacks of pairs (gsvd)
            return solve_pair_stack(method, data, plan, queue=queue,
                                    check_finite=check_finite, return_info=return_info)
    batch_queue = None if pair else batched_queue(method, data, plan, queue)
    if batch_queue is not None:  # the whole stack in one launch
        plan = SweepPlan(**{**plan.__dict__, "queue": batch_queue})
        return solve_batched(method, data, plan, batch_queue, check_finite=check_finite,
                             return_info=return_info)
    left_to_factor = False
    if pair:  # (A, B): one matrix each, the result dtype of both
        A, result_dtype, array_queue = host_pair(method, data, queue, check_finite=check_finite)
    else:
        host, array_queue = to_host(data, queue)
        # One matrix of a method whose device checks it as it loads it: its
        # factor() checks it (no host pass over it before the upload).
        left_to_factor = (check_finite and getattr(method, "checks_finite_on_upload", False)
                          and np.ndim(host) == 2)
        A, result_dtype = as_float_matrix(
            host, method.argument, check_finite=check_finite and not left_to_factor,
            square=method.square, stacked=True)
    method.validate(A, array_queue)
    try:
        run_queue = device_checks(method, A, pair=pair, queue=queue, array_queue=array_queue,
                                  result_dtype=result_dtype, plan=plan)
    except Exception:
        if left_to_factor:  # the check's error first, as for any other input
            require_finite(A, method.argument)
        raise
    plan = SweepPlan(**{**plan.__dict__, "queue": run_queue, "result_dtype": result_dtype,
                        "finite_left_to_factor": left_to_factor})

    def solve_one(index: tuple[int, ...], matrix: np.ndarray) -> tuple[Any, SolveInfo]:
        # The kernel objects of the matrix before are bound again, not made anew.
        with kernels_reused():
            return solve_one_matrix(index, matrix)

    def solve_one_matrix(index: tuple[int, ...], matrix: np.ndarray) -> tuple[Any, SolveInfo]:
        start = time.perf_counter()
        info = SolveInfo(seconds={"factorization": 0.0, "transfer": 0.0, "sweeps": 0.0,
                                  "sort": 0.0})
        outcome = method.factor(matrix, index, plan, info)
        known_finite: list[np.ndarray] = []
        if isinstance(outcome, Factored) and plan.comm is not None and isinstance(
                outcome.source, OnDevice):
            # The stripes leave from the host: a factor on rank 0's device comes back.
            outcome.source = outcome.source.host_factor()
        if isinstance(outcome, Factored):
            if isinstance(outcome.source, HZPair):
                state = run_hz(outcome.source, plan=plan, info=info, index=index)
            elif isinstance(outcome.source, TwoSidedMatrix):
                state = run_two_sided(outcome.source, plan=plan, info=info, index=index)
            else:
                state = run_sweeps(outcome.source, outcome.signs, plan=plan,
                                   accumulate_v=outcome.accumulate_v, info=info, index=index,
                                   fetch=outcome.fetch, peak_rounding=outcome.peak_rounding,
                                   on_settled=outcome.on_settled)
            known_finite = outcome.finite_results
            outcome = method.extract(state, outcome, index, plan, info)
        _require_finite(f"{method.value_name} of {name_of(method.argument, index)}", outcome,
                        known_finite)
        info.seconds["total"] = time.perf_counter() - start
        return outcome, info

    leading = () if pair else A.shape[:-2]
    if leading:
        result, info = solve_stack(A, solve_one, method.template(A))
        infos = info
    else:
        result, info = solve_one((), A)
        infos = [info]
    _warn_about(infos, leading, plan.caller)
    result = _cast(result, result_dtype)
    if is_device_array(data) or (pair and any(is_device_array(array) for array in data)):
        result = to_device(result, array_queue or run_queue or resolve_queue(queue))
    return (result, info) if return_info else result


def host_pair(method: Method, data: Any, queue: Any, *, check_finite: bool,
              stacked: bool = False) -> tuple[tuple[np.ndarray, np.ndarray], np.dtype, Any]:
    """A pair method's ``(A, B)`` on the host, each checked (and, with
    `stacked`, as stacks), the result dtype of both, and the queue of a
    pyopencl array among them (None for numpy input)."""
    hosts = [to_host(array, queue) for array in data]
    checked = [as_float_matrix(host, name, check_finite=check_finite, square=method.square,
                               stacked=stacked)
               for (host, _), name in zip(hosts, method.argument.split(", "))]
    return (tuple(array for array, _ in checked),
            np.result_type(*(dtype for _, dtype in checked)), hosts[0][1] or hosts[1][1])


def device_checks(method: Method, A: Any, *, pair: bool, queue: Any, array_queue: Any,
                  result_dtype: np.dtype, plan: SweepPlan) -> cl.CommandQueue | None:
    """The queue of the call, with the device checked for the largest factor
    `method` sweeps of `A` (one matrix, a stack, or a pair) before the first
    factorization and launch; None where every matrix is answered on the host."""
    needs = method.device_shape(A)
    if needs is None:
        return None
    rows, columns, accumulate_v = needs
    run_queue = resolve_queue(queue if queue is not None else array_queue)
    element_bytes = max(a.dtype.itemsize for a in A) if pair else A.dtype.itemsize
    preflight(
        run_queue, rows=rows, columns=columns, accumulate_v=accumulate_v,
        element_bytes=element_bytes,
        single=False if pair else single_precision(run_queue, result_dtype, plan.single),
    )
    return run_queue


def solve_on(comm: Any, method: Method, data: Any, plan: SweepPlan, *, queue: Any,
             check_finite: bool, return_info: bool, signature: Any = None) -> Any:
    """:func:`solve` with its sweeps on all ranks of `comm`
    (:func:`cljacobi.distributed.solve_on`: rank 0 runs :func:`solve`).
    `signature` is hsvd's J, which the method holds; with block columns on
    every rank it is gathered like them and handed to the method on rank 0."""
    from .distributed import check_comm
    from .distributed import solve_on as solve_on_comm

    check_comm(comm)
    # One rank: the single-device sweeps (the same results, no staging).
    on_comm = SweepPlan(**{**plan.__dict__, "comm": comm if comm.Get_size() > 1 else None})

    def on_root(whole: Any, J: Any, rank_queue: cl.CommandQueue) -> Any:
        root_method = method if J is None else dataclasses.replace(method, J=J)
        return solve(root_method, whole, on_comm, queue=rank_queue,
                     check_finite=check_finite, return_info=return_info)

    return solve_on_comm(comm, queue, data, on_root, signature=signature,
                         return_info=return_info)


def run_sweeps(
    G: np.ndarray | OnDevice,
    signs: np.ndarray,
    *,
    plan: SweepPlan,
    accumulate_v: bool,
    info: SolveInfo,
    index: tuple[int, ...] = (),
    fetch: bool = True,
    peak_rounding: bool = True,
    on_settled: Callable[[np.ndarray, np.ndarray, Any], Callable[[], None] | None] | None = None,
) -> HSVDState:
    """Orthogonalize the columns of G on the device and fill `info`.

    `G` is a host array, or a double precision factor already on the device.
    ``fetch=False`` leaves the final G (and V) on the device, in
    ``state.operands``; `on_settled` goes to the finishing sweeps
    (:attr:`Factored.on_settled`; not on a communicator).

    The blocked variants run until no big block transformation happens, then
    pointwise sweeps finish and decide convergence, so every variant has the
    pointwise method's accuracy (the Gram matrices of the blocked kernels
    square the condition numbers).  Without convergence within
    ``plan.max_sweeps`` (blocked and pointwise quasi-sweeps together), raise
    :class:`ConvergenceError` carrying `info`, or, with
    ``plan.on_nonconvergence == "warn"``, return the partial state (the
    public function then warns).

    Precision: float64/complex128 kernels on a device with fp64; single
    precision kernels when the device lacks fp64 and the caller's data are
    single precision (``plan.result_dtype`` float32/complex64);
    ``plan.single`` overrides.
    The blocked kernels handle double precision data, real (float64) and
    complex Hermitian (complex128, in the layout of the pointwise phase);
    single precision runs pointwise ("auto"), and asking for a blocked
    variant there (or a `block_width`) is a ValueError.  "auto" and the
    default block width follow :func:`cljacobi.host.variants.choose_variant`
    (a rule per element type; the local memory of 16-byte complex elements
    decides which widths fit).
    """
    if plan.comm is not None:
        from .distributed import run_sweeps as run_on_comm

        state = run_on_comm(G, signs, plan=plan, accumulate_v=accumulate_v, info=info,
                            index=index, peak_rounding=peak_rounding)
        return _checked(state, plan, info, index)
    queue, max_sweeps, options = plan.queue, plan.max_sweeps, plan.options
    variant, block_width = plan.variant, plan.block_width
    info.strategy, info.rotation = options.strategy, options.rotation
    info.sort_diagonal = options.sort_diagonal
    single = single_precision(queue, plan.result_dtype, plan.single)
    info.precision = "single" if single else "double"
    if single:
        if variant in BLOCK_VARIANTS or block_width is not None:
            asked = f"variant={variant!r}" + (
                f" with block_width={block_width}" if block_width is not None else "")
            raise ValueError(
                f"{asked} asks for the blocked kernels, which handle double precision data "
                "only (float64, complex128); single precision runs variant='pointwise' or "
                "'auto' without block_width"
            )
        variant = "pointwise"
    element_bytes = COMPLEX_ELEMENT_BYTES if np.iscomplexobj(G) else REAL_ELEMENT_BYTES
    variant, block_width = choose_variant(queue.device, G.shape[1], variant, block_width,
                                          element_bytes=element_bytes, rows=G.shape[0])
    info.variant, info.block_width = variant, block_width
    info.device = queue.device.name.strip()
    layout = complex_layout(plan.layout, blocked=variant != "pointwise")
    driver = PointwiseHSVD(
        queue, accumulate_v=accumulate_v, layout=layout, single=single,
        strategy=options.strategy, rotation=options.rotation,
        sort_diagonal=options.sort_diagonal,
    )
    # One set of device buffers for both phases, bordered for the blocks.
    column_multiple = 2 if variant == "pointwise" else 2 * block_width
    if isinstance(G, OnDevice):
        operands = G.operands(column_multiple, accumulate_v, split=layout == "split")
    else:
        operands = driver.upload(G, signs, column_multiple=column_multiple)
    if variant != "pointwise":
        blocked_driver = BlockedHSVD(
            queue, accumulate_v=accumulate_v, block_width=block_width, variant=variant
        )
        blocked = blocked_driver.run_operands(operands, max_sweeps=max_sweeps,
                                              certified_finish=driver.takes_certificate)
        info.matrix_products = blocked_driver.plan.spec.matrix_products
        info.blocked_sweeps = blocked.sweeps
        info.rotations_per_sweep = list(blocked.rotations_per_sweep)
        for phase, seconds in blocked.seconds.items():
            info.seconds[phase] = info.seconds.get(phase, 0.0) + seconds
        info.seconds["blocked_sweeps"] = blocked.seconds["sweeps"]
    state = driver.run_operands(
        operands, max_sweeps=max(max_sweeps - info.blocked_sweeps, 1), fetch=fetch,
        peak_rounding=peak_rounding, on_settled=on_settled,
        certificate=blocked_driver.certificate if variant != "pointwise" else None)
    stats = state.stats
    info.sweeps = info.blocked_sweeps + stats.sweeps
    info.certified_sweeps = stats.certified
    info.rotations_per_sweep += stats.rotations_per_sweep
    info.rotations = sum(info.rotations_per_sweep)
    info.converged = stats.converged and info.sweeps <= max_sweeps
    info.breakdown = stats.breakdown
    info.work_group_size = stats.work_group_size
    for phase, seconds in stats.seconds.items():
        info.seconds[phase] = info.seconds.get(phase, 0.0) + seconds
    return _checked(state, plan, info, index)


def _checked(state: HSVDState, plan: SweepPlan, info: SolveInfo, index: tuple[int, ...]
             ) -> HSVDState:
    """`state` after the checks of every run: a pair that could not be
    rotated raises, and so does non-convergence unless the plan warns."""
    stats = state.stats
    if stats.breakdown or stats.tiny_column:
        # What was not rotated is not orthogonal: no result to relative accuracy.
        subject = name_of("G" if plan.caller == "hsvd" else "the factor", index)
        raise orthogonalization_error(plan.caller, subject, breakdown=stats.breakdown)
    if not info.converged and plan.on_nonconvergence == "raise":
        if plan.caller != "eig_indefinite":  # the extraction that counts them will not run
            info.rank = int(np.count_nonzero(state.d))
        raise _not_converged(plan, info, index, f"{plan.max_sweeps} sweeps", "max_sweeps",
                             f" (rotations per sweep: {info.rotations_per_sweep})")
    return state


def orthogonalization_error(caller: str, subject: str, *, breakdown: bool
                            ) -> np.linalg.LinAlgError:
    """The error of sweeps that left a pair of columns of `subject` unrotated:
    a dependent hyperbolic pair (`breakdown`) or a column below the range."""
    return np.linalg.LinAlgError(
        f"{caller}: a pair of columns of {subject} could not be orthogonalized: "
        + ("two columns with opposite signs in J are parallel to working precision "
           "(|coth 2phi| = 1: no hyperbolic rotation exists, so there is no hyperbolic "
           "SVD to relative accuracy)" if breakdown else
           "a column's squared norm fell below the floating-point range while it was "
           "not orthogonal to another one")
    )


def _arrays_of(result: Any) -> tuple[np.ndarray, ...]:
    """The arrays of a result: an array, or a (named) tuple of them."""
    return tuple(result) if isinstance(result, tuple) else (result,)


def _require_finite(values: str, result: Any, known_finite: Sequence[np.ndarray] = ()) -> None:
    """Never hand out NaN or inf: raise LinAlgError if a result is not finite.

    The input is finite here (checked up front, or, with
    ``check_finite=False``, by the scaling), so what can still be infinite
    is a result beyond float64's range: `values` names it for the message
    (say ``"an eigenvalue of M[1]"``).  The arrays of `known_finite` (the
    very objects, :attr:`Factored.finite_results`) are not read again.
    """
    for array in _arrays_of(result):
        if array is None or any(array is known for known in known_finite):
            continue
        if not all_finite(array):
            raise np.linalg.LinAlgError(
                f"{values} exceeds the largest float64 ({np.finfo(np.float64).max:.3g}) "
                "and cannot be returned"
            )


def _warn_about(infos: list[SolveInfo], leading: tuple[int, ...], caller: str) -> None:
    """The warnings of a finished call to `caller`, once per call, pointing at the
    caller's line."""
    warn_unconverged(np.array([not info.converged for info in infos], dtype=bool), leading,
                     caller, stacklevel=5)


def _cast(result: Any, dtype: np.dtype) -> Any:
    """Floating arrays of `result` (an array or a tuple of them) in the precision of
    `dtype`: real arrays (eigenvalues, singular values) in its real type, complex
    arrays in `dtype`; signs stay int8.

    Raises LinAlgError if a value exceeds the range of `dtype` (float32 input
    whose eigenvalue is beyond 3.4e38): no inf is handed out.
    """
    if result is None:  # a part not asked for (gsvd's U, V or X)
        return None
    if isinstance(result, np.ndarray):
        if result.dtype.kind not in "fc":
            return result
        target = dtype if result.dtype.kind == "c" else real_dtype(dtype)
        with np.errstate(over="ignore"):
            cast = result.astype(target, copy=False)
        # Unchanged arrays were checked by _require_finite already.
        if cast is not result and not np.isfinite(cast).all():
            raise np.linalg.LinAlgError(
                f"a result exceeds the range of {dtype} (largest {np.finfo(dtype).max:.3g}); "
                "pass the input as float64 to get it"
            )
        return cast
    converted = [_cast(item, dtype) for item in result]
    if not hasattr(result, "_fields"):
        return tuple(converted)
    # attributes beyond the fields (GSVDResult.Z) travel along, cast alike
    extra = {name: _cast(value, dtype) for name, value in getattr(result, "__dict__", {}).items()}
    return type(result)(*converted, **extra)
