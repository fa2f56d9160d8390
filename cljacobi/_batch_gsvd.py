"""The pipeline's route for stacks of GSVD pairs.

:func:`cljacobi._solve.solve` hands the call of a pair method with
``pair_stacks`` (gsvd) here when ``A`` or ``B`` is a stack (``(..., m, n)`` and ``(..., p, n)``, the same leading
shape), or when ``variant="batched"`` asks for this route.  Every pair is
scaled and shortened on the host by the one-pair path's own code
(:meth:`cljacobi.gsvd._GSVD.factor`: [NS] Sect. 2), the implicit
Hari-Zimmermann sweeps of all pairs run in one launch
(:func:`cljacobi.host.batched_hz.batched_hz_sweeps`, for ``n`` up to
:data:`cljacobi.host.batched_hz.BATCHED_HZ_ORDER_LIMIT` with ``variant``
"auto" or "batched"; otherwise pair by pair, as one pair runs), and every
GSVD is read off its final F, G, Z by the one-pair extraction
(:meth:`cljacobi.gsvd._GSVD.extract`).  Results stack like numpy's (the
leading shape first); device input gives device results (the pairs cross
the bus for the host's QRs).

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

from ._arrays import is_device_array, stack_results, to_device
from ._results import SolveInfo
from ._solve import (
    Factored,
    SweepPlan,
    _cast,
    _require_finite,
    _warn_about,
    describe_hz_run,
    device_checks,
    host_pair,
    name_of,
    record_hz_run,
    run_hz,
    where,
)
from .host.batched_hz import BATCHED_HZ_ORDER_LIMIT, HZFlags, batched_hz_sweeps
from .host.device import resolve_queue
from .host.hz import HZRun, not_definite_error
from .host.variants import BATCHED_VARIANT

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
    batched = plan.variant in ("auto", BATCHED_VARIANT) and n <= BATCHED_HZ_ORDER_LIMIT
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
    states = (_batched_states(swept, outcomes, indices, infos, plan) if batched else
              {b: run_hz(outcomes[b].source, plan=plan, info=infos[b], index=indices[b])
               for b in swept})
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
    _warn_about(infos, leading, plan.caller)
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


def _batched_states(swept: list[int], outcomes: list[Any], indices: list[tuple[int, ...]],
                    infos: list[SolveInfo], plan: SweepPlan) -> dict[int, HZRun]:
    """The sweeps of the pairs `swept` in one launch, as :class:`HZRun` per
    pair; `infos` filled as :func:`cljacobi._solve.run_hz` fills them."""
    if not swept:
        return {}
    sources = [outcomes[b].source for b in swept]
    first = sources[0]
    run = batched_hz_sweeps(
        plan.queue, *(np.stack([getattr(s, name) for s in sources]) for name in "FGZ"),
        prescaled=first.prescaled, criterion=first.criterion,
        enhanced_dots=first.enhanced_dots, strategy=plan.options.strategy,
        max_sweeps=plan.max_sweeps)
    share = run.seconds / len(swept)
    states = {}
    for q, b in enumerate(swept):
        info, index = infos[b], indices[b]
        describe_hz_run(info, plan, BATCHED_VARIANT, 0)
        if run.flags[q] & HZFlags.NOT_DEFINITE:  # as the one-pair sweeps raise it
            raise _named(not_definite_error(int(run.not_definite[q]), first.prescaled), index)
        states[b] = record_hz_run(
            HZRun(run.F[q], run.G[q], run.Z[q], int(run.sweeps[q]), not run.flags[q],
                  run.transformations[q], [], share),
            plan=plan, info=info, index=index)
    return states
