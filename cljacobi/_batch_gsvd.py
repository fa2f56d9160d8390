"""The pipeline's route for stacks of GSVD pairs.

:func:`cljacobi._solve.solve` hands the call of a pair method with
``pair_stacks`` (gsvd) here when ``A`` or ``B`` is a stack (``(..., m, n)``
and ``(..., p, n)``, the same leading shape), or when ``variant="batched"``
asks for this route.  With ``variant`` "auto" or "batched" and n up to
:data:`cljacobi.host.batched_hz.BATCHED_HZ_ORDER_LIMIT` the whole stack is
solved on the device in three launches, the pairs never crossing the bus
(:func:`_solve_on_device`): every pair scaled and shortened as the one-pair
path does it ([NS] Sect. 2; :func:`cljacobi.host.batched_gsvd.batched_gsvd_shorten`),
the implicit Hari-Zimmermann sweeps of all of them
(:func:`cljacobi.host.batched_hz.launch_batched_hz`), and every GSVD read off
([NS] Sect. 2.4; :func:`cljacobi.host.batched_gsvd.batched_gsvd_results`).
Other variants solve the stack pair by pair with the one-pair path's code
(:meth:`cljacobi.gsvd._GSVD.factor`, :func:`cljacobi._solve.run_hz`,
:meth:`cljacobi.gsvd._GSVD.extract`).  Results stack like numpy's (the
leading shape first); device input gives device results.

Errors are per pair: the first pair (in C order) that cannot be shortened,
whose ``B^H B`` met a pivot submatrix that is not positive definite, or
whose result cannot be returned raises the one-pair path's exception with
its index; a pair that did not converge raises :class:`ConvergenceError`
naming it, or with ``on_nonconvergence="warn"`` the call warns once with
the indices of all of them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ._arrays import is_device_array, stack_results, to_device
from ._batch import device_stack, narrowed, three_dimensional
from ._results import SolveInfo
from ._solve import (
    Factored,
    SweepPlan,
    _cast,
    _require_finite,
    describe_hz_run,
    device_checks,
    host_pair,
    name_of,
    record_hz_run,
    run_hz,
    where,
)
from .errors import warn_unconverged
from .host.batched_gsvd import GSVDFlags, batched_gsvd_results, batched_gsvd_shorten
from .host.batched_hz import (
    BATCHED_HZ_ORDER_LIMIT,
    HZFlags,
    launch_batched_hz,
)
from .host.device import resolve_queue
from .host.hz import HZRun, not_definite_error
from .host.variants import BATCHED_VARIANT
from .validation import as_float_matrix, compute_dtype, nonfinite_error

__all__ = ["solve_pair_stack", "stacked_pairs"]


def stacked_pairs(data: Any, plan: SweepPlan) -> bool:
    """Whether the pair call `data` = (A, B) takes this route: a stack, or
    ``variant="batched"``."""
    if plan.variant == BATCHED_VARIANT:
        return True
    return any(np.ndim(x) > 2 if not is_device_array(x) else x.ndim > 2 for x in data)


def _named(error: Exception, index: tuple[int, ...]) -> Exception:
    """`error` again, its message naming the pair `index` of the stack."""
    return type(error)(f"{error}{where(index)}")


def solve_pair_stack(method: Any, data: Any, plan: SweepPlan, *, queue: Any,
                     check_finite: bool, return_info: bool) -> Any:
    """Solve the stack of pairs `data` = (A, B) (see the module notes)."""
    shapes = [tuple(x.shape) if is_device_array(x) else np.shape(x) for x in data]
    if _on_device(shapes, plan):
        return _solve_on_device(method, data, plan, queue=queue, check_finite=check_finite,
                                return_info=return_info)
    (A, B), result_dtype, array_queue = host_pair(method, data, queue,
                                                  check_finite=check_finite, stacked=True)
    if A.shape[:-2] != B.shape[:-2]:
        raise ValueError(f"A and B must be stacks of the same shape of pairs, got A {A.shape} "
                         f"and B {B.shape}")
    leading = A.shape[:-2]
    count = int(np.prod(leading, dtype=np.int64))
    pair = (np.empty(A.shape[-2:], A.dtype), np.empty(B.shape[-2:], B.dtype))  # one pair's
    method.validate(pair, array_queue)
    (m, n), p = A.shape[-2:], B.shape[-2]
    run_queue = device_checks(method, pair, pair=True, queue=queue, array_queue=array_queue,
                              result_dtype=result_dtype, plan=plan) if count else None
    plan = SweepPlan(**{**plan.__dict__, "queue": run_queue, "result_dtype": result_dtype})
    if plan.variant == BATCHED_VARIANT and n > BATCHED_HZ_ORDER_LIMIT:
        raise ValueError(f"variant='batched' runs pairs of up to {BATCHED_HZ_ORDER_LIMIT} "
                         f"columns, not {n}")
    A, B = A.reshape(count, m, n), B.reshape(count, p, n)
    indices = list(np.ndindex(*leading))
    infos = [SolveInfo(seconds={"factorization": 0.0, "transfer": 0.0, "sweeps": 0.0,
                                "sort": 0.0}) for _ in range(count)]
    outcomes = []
    for b, index in enumerate(indices):  # the shortening of every pair ([NS] Sect. 2)
        start = time.perf_counter()
        try:
            outcomes.append(method.factor((A[b], B[b]), index, plan, infos[b]))
        except (ValueError, np.linalg.LinAlgError) as error:
            raise _named(error, index) from error
        infos[b].seconds["total"] = time.perf_counter() - start
    swept = [b for b, outcome in enumerate(outcomes) if isinstance(outcome, Factored)]
    states = {b: run_hz(outcomes[b].source, plan=plan, info=infos[b], index=indices[b])
              for b in swept}
    results = []
    for b, index in enumerate(indices):
        outcome = outcomes[b]
        start = time.perf_counter()
        if b in states:
            try:
                outcome = method.extract(states[b], outcome, index, plan, infos[b])
            except np.linalg.LinAlgError as error:
                raise _named(error, index) from error
        # the shortening, the pair's sweeps (its share of the launch), the extraction
        infos[b].seconds["total"] += time.perf_counter() - start + infos[b].seconds["sweeps"]
        _require_finite(f"{method.value_name} of {name_of(method.argument, index)}", outcome)
        results.append(outcome)
    warn_unconverged(np.array([not info.converged for info in infos], dtype=bool), leading,
                     plan.caller, stacklevel=5)
    result = _cast(_stacked(method, results, leading, (m, n, p), result_dtype), result_dtype)
    if any(is_device_array(x) for x in data):
        result = to_device(result, array_queue or run_queue or resolve_queue(queue))
    return (result, infos if leading else infos[0]) if return_info else result


def _stacked(method: Any, results: list[Any], leading: tuple[int, ...],
             shape: tuple[int, int, int], dtype: np.dtype) -> Any:
    """The pairs' GSVDResults as one, each array stacked over `leading`
    (the shapes of `shape` = (m, n, p) for an empty stack)."""
    from .gsvd import GSVDResult  # gsvd imports the pipeline

    m, n, p = shape
    shapes = {"U": (m, n) if method.compute_uv else None,
              "V": (p, n) if method.compute_uv else None, "C": (n,), "S": (n,),
              "X": (n, n) if method.compute_x else None, "Z": (n, n)}

    def field(name: str) -> np.ndarray | None:
        if shapes[name] is None:
            return None
        kind = dtype if name not in "CS" else np.finfo(dtype).dtype
        template = np.empty(shapes[name], dtype=kind)
        return stack_results([getattr(r, name) for r in results], leading, template)

    return GSVDResult(*(field(name) for name in ("U", "V", "C", "S", "X", "Z")))


def _on_device(shapes: list[tuple[int, ...]], plan: SweepPlan) -> bool:
    """Whether the stacks of `shapes` take the device route: ``variant``
    "auto" or "batched", the same leading shape, ``p >= n``, n from 1 to
    the batched sweeps' limit, and at least one pair."""
    (*leading_a, _, n), (*leading_b, p, n_b) = (
        shape if len(shape) >= 2 else (0, -1) for shape in shapes)
    return (plan.variant in ("auto", BATCHED_VARIANT) and leading_a == leading_b and n == n_b
            and 1 <= n <= BATCHED_HZ_ORDER_LIMIT and p >= n
            and 0 not in leading_a)


def _device_operands(method: Any, data: Any, queue: Any, check_finite: bool
                     ) -> tuple[tuple[cl_array.Array, cl_array.Array], np.dtype, Any, Any]:
    """A and B as ``(count, rows, n)`` stacks of one compute dtype on the run
    queue's device (numpy input checked and uploaded, device input converted
    there), the result dtype, the run queue and the input arrays' queue."""
    array_queue = next((x.queue for x in data if is_device_array(x)), None)
    if array_queue is None and any(is_device_array(x) for x in data):
        array_queue = cl.CommandQueue(next(x for x in data if is_device_array(x)).context)
    run_queue = resolve_queue(queue if queue is not None else array_queue)
    names = method.argument.split(", ")
    stacks, dtypes = [], []
    for x, name in zip(data, names):
        if is_device_array(x):
            stack, dtype = device_stack(x, run_queue, name)
        else:
            host, dtype = as_float_matrix(x, name, check_finite=check_finite, square=False,
                                          stacked=True)
            stack = cl_array.to_device(run_queue, np.ascontiguousarray(host))
        stacks.append(stack)
        dtypes.append(dtype)
    result_dtype = np.result_type(*dtypes)
    computed = compute_dtype(result_dtype)
    count = int(np.prod(stacks[0].shape[:-2], dtype=np.int64))
    operands = tuple(three_dimensional(s if s.dtype == computed else s.astype(computed), count,
                                       run_queue) for s in stacks)
    return operands, result_dtype, run_queue, array_queue


def _solve_on_device(method: Any, data: Any, plan: SweepPlan, *, queue: Any,
                     check_finite: bool, return_info: bool) -> Any:
    """The stack on the device from end to end: the shortening
    (:func:`cljacobi.host.batched_gsvd.batched_gsvd_shorten`), the sweeps
    (:func:`cljacobi.host.batched_hz.launch_batched_hz`) and the extraction
    (:func:`cljacobi.host.batched_gsvd.batched_gsvd_results`); only flags
    and the per-pair records cross the bus."""
    start = time.perf_counter()
    (A, B), result_dtype, run_queue, array_queue = _device_operands(method, data, queue,
                                                                    check_finite)
    leading = tuple((data[0].shape if is_device_array(data[0]) else np.shape(data[0]))[:-2])
    (count, m, n), p = A.shape, B.shape[1]
    pair = (np.empty((m, n), A.dtype), np.empty((p, n), B.dtype))
    method.validate(pair, array_queue)
    device_checks(method, pair, pair=True, queue=run_queue, array_queue=array_queue,
                  result_dtype=result_dtype, plan=plan)
    plan = SweepPlan(**{**plan.__dict__, "queue": run_queue, "result_dtype": result_dtype})
    shortening = batched_gsvd_shorten(run_queue, A, B, prescaled=method.prescale,
                                      compute_uv=method.compute_uv, compute_x=method.compute_x)
    if shortening.summary:  # the first pair that cannot be shortened, as one pair raises
        b = int(np.flatnonzero(shortening.flags)[0])
        raise _shortening_error(int(shortening.flags[b]), shortening.report()[b],
                                _index(b, leading), check_finite)
    sweeps_start = time.perf_counter()  # the shortening has finished (its flags are read)
    launch = launch_batched_hz(run_queue, shortening.F, shortening.G, shortening.Z,
                               prescaled=method.prescale, criterion=method.criterion,
                               enhanced_dots=method.enhanced_dots,
                               strategy=plan.options.strategy, max_sweeps=plan.max_sweeps)
    records = launch.info.get()  # waits for the sweeps: sweeps, flags, not definite
    share = (time.perf_counter() - sweeps_start) / count
    shortening_share = (sweeps_start - start) / count  # with the upload of numpy stacks
    flags = records[:, 1]
    unconverged = (flags & HZFlags.NOT_CONVERGED) != 0
    stops = (flags & HZFlags.NOT_DEFINITE) != 0
    if plan.on_nonconvergence == "raise":
        stops |= unconverged
    counts = launch.transformations.get() if return_info or stops.any() else None

    def pair_info(b: int) -> SolveInfo:
        """Pair b's info, made only where a message or the caller asks: the
        first pair that stops the call raises here (as one pair raises)."""
        index = _index(b, leading)
        info = SolveInfo(seconds={"factorization": shortening_share, "transfer": 0.0,
                                  "sweeps": 0.0, "sort": 0.0})
        info.factorization = "qr"
        describe_hz_run(info, plan, BATCHED_VARIANT, 0)
        sweeps, pair_flags, not_definite = (int(x) for x in records[b])
        if pair_flags & HZFlags.NOT_DEFINITE:
            raise _named(not_definite_error(not_definite, method.prescale), index)
        record_hz_run(HZRun(None, None, None, sweeps, not pair_flags & HZFlags.NOT_CONVERGED,
                            [int(x) for x in counts[b, :sweeps]], [], share),
                      plan=plan, info=info, index=index)
        return info

    if stops.any():
        pair_info(int(np.flatnonzero(stops)[0]))
    infos = [pair_info(b) for b in range(count)] if return_info else []
    out = batched_gsvd_results(shortening, launch)
    if out.summary:
        from .gsvd import RESULT_RANGE, rank_z_error  # gsvd imports the pipeline

        b = int(np.flatnonzero(out.flags)[0])
        flags = int(out.flags[b])
        error = (rank_z_error(int(out.noise_count()[b])) if flags & GSVDFlags.B_RANK_Z else
                 np.linalg.LinAlgError("Singular matrix") if flags & GSVDFlags.SINGULAR_Z else
                 np.linalg.LinAlgError(RESULT_RANGE))
        raise _named(error, _index(b, leading))
    warn_unconverged(unconverged, leading, plan.caller, stacklevel=6)
    device_input = array_queue is not None
    real = np.dtype(np.finfo(result_dtype).dtype)

    def result(array: cl_array.Array | None, *shape: int, dtype: np.dtype = result_dtype) -> Any:
        if array is None:
            return None
        array = array.reshape(*leading, *shape)
        if array.dtype != dtype:
            array = narrowed(array, dtype)
        return array if device_input else array.get()

    gsvd_result = _gsvd_result(result(out.U, m, n), result(out.V, p, n),
                               result(out.C, n, dtype=real), result(out.S, n, dtype=real),
                               result(out.X, n, n), result(out.Z, n, n))
    total = (time.perf_counter() - start) / count
    for info in infos:
        info.seconds["total"] = total
    return (gsvd_result, infos if leading else infos[0]) if return_info else gsvd_result


def _index(b: int, leading: tuple[int, ...]) -> tuple[int, ...]:
    """The index in the stack of pair `b` (C order)."""
    return tuple(int(i) for i in np.unravel_index(b, leading)) if leading else ()


def _gsvd_result(*arrays: Any) -> Any:
    from .gsvd import GSVDResult  # gsvd imports the pipeline

    return GSVDResult(*arrays)


def _shortening_error(flags: int, report: np.ndarray, index: tuple[int, ...],
                      check_finite: bool) -> Exception:
    """The one-pair path's exception for a pair the shortening flagged."""
    from .gsvd import rank_error  # gsvd imports the pipeline

    for bit, name in ((GSVDFlags.NOT_FINITE_A, "A"), (GSVDFlags.NOT_FINITE_B, "B")):
        if flags & bit:
            if check_finite:
                return nonfinite_error(name_of(name, index))
            return _named(np.linalg.LinAlgError(f"{name} contains infs or NaNs"), index)
    return _named(rank_error(report[3], report[2]), index)
