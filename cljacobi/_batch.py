"""The pipeline's batched route: a stack of small matrices in one launch.

:func:`cljacobi._solve.solve` hands a call here when :func:`batched_queue`
says the batched kernel takes it (``variant="batched"``, or ``"auto"`` for
a stack whose order fits the device's local memory): the stack goes to the
device once (a pyopencl stack stays there), one launch of
``templates/batched.cl.mako`` solves every matrix
(:func:`cljacobi.host.batched.batched_eig` for eig_indefinite and eigh,
:func:`cljacobi.host.batched.batched_hsvd` for hsvd and svd), and only the
OR of the matrices' flags comes back; the per-matrix flags and
records follow where it says an error or a warning needs them, or for the
``info`` objects.  The results are device arrays for device input and numpy
arrays otherwise.  svd, and hsvd of a tall G, first factor every matrix by
the row-sorted, column-pivoted QR of their one-matrix paths, on the device
(:func:`cljacobi.host.batched_qr.batched_qr`); the kernel sweeps the square
factors, and :func:`cljacobi.host.batched_qr.batched_qr_results` forms the
decompositions from its results, so that a device stack never crosses the
bus.

Errors are per matrix: the first matrix (in C order) with a fatal flag
raises the exception the one-matrix path raises for it, its index in the
message; a matrix that did not converge raises :class:`ConvergenceError`
naming it, or with ``on_nonconvergence="warn"`` the call warns once with
the indices of all of them and returns every result (``info.converged``
per matrix).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ._arrays import is_device_array, to_host
from ._results import EighResult, HSVDResult, SolveInfo
from ._stack_names import StackNames
from .errors import warn_unconverged
from .host.batched import (
    BATCHED_GLOBAL_ORDER_LIMIT,
    FATAL,
    BatchedRun,
    BatchStatus,
    batched_eig,
    batched_hsvd,
    batched_order_limit,
)
from .host.batched_qr import BatchedQR, batched_qr, batched_qr_results
from .host.device import has_fp64, resolve_queue
from .host.preflight import preflight
from .host.variants import BATCHED_VARIANT
from .scaling import NOT_FINITE, factor_shift_from_maxima, matrix_shift_from_range, unshift
from .validation import (
    HERMITIAN_RTOL,
    as_float_matrix,
    compute_dtype,
    nonfinite_error,
    result_dtype_of,
)

__all__ = ["batched_queue", "device_stack", "narrowed", "solve_batched", "three_dimensional"]


def _shape_and_kind(data: Any) -> tuple[tuple[int, ...], str]:
    if is_device_array(data):
        return tuple(data.shape), data.dtype.kind
    array = np.asarray(data)
    return array.shape, array.dtype.kind


def batched_queue(method: Any, data: Any, plan: Any, queue: Any) -> cl.CommandQueue | None:
    """The queue to run `data` on with the batched kernel, or None for the
    one-matrix path.

    ``variant="auto"`` takes the batched kernel for a stack (``ndim > 2``) of
    square matrices of orders from 2 up to
    :data:`cljacobi.host.batched.BATCHED_GLOBAL_ORDER_LIMIT` for
    eig_indefinite (the matrices in local memory up to
    :func:`cljacobi.host.batched.batched_order_limit`, in global memory above),
    of ``m x n`` factors with ``m >= n`` for hsvd and of any ``m x n`` for
    svd, ``min(m, n)`` from 2 up to the same limit (the square factor and V
    in local memory up to ``batched_order_limit(..., problem)``, in global
    memory above), on a device with fp64, with rotation 1 or 2 and no
    private options; ``variant="batched"`` asks for it, also for one matrix,
    and is a ValueError where it cannot run.
    """
    problem = getattr(method, "batched_problem", None)
    if problem is None:
        return None
    shape, kind = _shape_and_kind(data)
    forced = plan.variant == BATCHED_VARIANT
    if not forced and (plan.variant != "auto" or len(shape) <= 2):
        return None
    if len(shape) < 2 or kind not in "biufc" or 0 in shape:
        return None  # the one-matrix path gives the errors about such input
    m, n = shape[-2:]
    if (problem == "eig" and m != n) or (problem == "hsvd" and m < n) or min(m, n) < 2:
        # 1 x 1 is answered on the host; the one-matrix path gives the errors
        return None
    n = min(m, n)  # the order of the factor the kernel sweeps
    if not is_device_array(data) and not np.any(np.asarray(data)):
        return None  # zero matrices are answered on the host, without a device
    array_queue = data.queue if is_device_array(data) else None
    run_queue = resolve_queue(queue if queue is not None else (
        array_queue or (cl.CommandQueue(data.context) if is_device_array(data) else None)))
    device = run_queue.device
    reasons = []
    if n > BATCHED_GLOBAL_ORDER_LIMIT:
        vectors = method.compute_uv if problem != "eig" else not method.eigvals_only
        reasons.append(f"order {n} exceeds {BATCHED_GLOBAL_ORDER_LIMIT}, the largest it runs "
                       f"(up to {batched_order_limit(device, kind == 'c', vectors, problem)} "
                       f"in the {int(device.local_mem_size)} bytes of local memory of "
                       f"{device.name.strip()!r}, above in global memory)")
    if plan.options.rotation not in (1, 2):
        reasons.append(f"rotation={plan.options.rotation} (it runs 1 and 2)")
    if plan.layout is not None or plan.single:
        reasons.append("a private layout or precision option")
    if getattr(method, "factorization", "auto") == "host":
        reasons.append("factorization='host' (it factors on the device)")
    if not has_fp64(device):
        reasons.append(f"device {device.name.strip()!r} lacks fp64")
    if not reasons:
        return run_queue
    if forced:
        raise ValueError("variant='batched' cannot run here: " + "; ".join(reasons))
    return None


def solve_batched(method: Any, data: Any, plan: Any, run_queue: cl.CommandQueue, *,
                  check_finite: bool, return_info: bool) -> Any:
    """Solve the stack `data` with one launch of the batched kernel (see the
    module notes); the same results and errors as the one-matrix path."""
    start = time.perf_counter()
    problem = method.batched_problem
    device_input = is_device_array(data)
    m, n = _shape_and_kind(data)[0][-2:]  # data may be a nested list
    shortened = problem == "svd" or (problem == "hsvd" and m > n)
    array_queue = data.queue if device_input else None
    if device_input:
        source, result_dtype = device_stack(data, run_queue, method.argument)
    else:
        source, result_dtype = as_float_matrix(data, method.argument,
                                               check_finite=check_finite, square=not shortened,
                                               stacked=True)
    leading = source.shape[:-2]
    count = int(np.prod(leading, dtype=np.int64))
    if problem == "hsvd":  # J: +-1, (n,) or one per matrix, as for one matrix
        method.validate(source, array_queue)
    stack = source if device_input else cl_array.to_device(run_queue,
                                                           np.ascontiguousarray(source))
    k = min(m, n)
    vectors = method.compute_uv if problem != "eig" else not method.eigvals_only
    preflight(run_queue, rows=k, columns=k, accumulate_v=problem != "eig" and vectors,
              element_bytes=stack.dtype.itemsize)
    flat = three_dimensional(stack, count, run_queue)
    signs = _device_signs(method.signs, run_queue) if problem == "hsvd" else None
    qr = names = None
    if shortened:  # the QR of every matrix, on the device (svd: of A^* for a wide A)
        names = StackNames(method.argument, leading)
        qr = batched_qr(run_queue, flat, problem=problem, signs=signs, vectors=vectors,
                        transposed=m < n)
        flat, signs = qr.factors, qr.signs
    options = {"vectors": vectors, "strategy": plan.options.strategy,
               "rotation": plan.options.rotation, "sort_diagonal": plan.options.sort_diagonal,
               "max_sweeps": plan.max_sweeps}
    if problem == "eig":
        run = batched_eig(run_queue, flat, **options)
    else:
        run = batched_hsvd(run_queue, flat, signs, problem=problem, **options)
    if qr is not None and qr.summary:  # the QR's refusals come first, as on one matrix
        _raise_for_qr(qr, names, check_finite)
    # The per-matrix flags and records cross the bus only when a message or
    # info needs them (the OR of the flags says whether one does).
    summary = run.summary
    records = run.records() if return_info or summary & FATAL or (
        summary & BatchStatus.NOT_CONVERGED and plan.on_nonconvergence == "raise") else None
    if records is not None:
        _raise_for_errors(run, records, leading, k, plan, method, check_finite,
                          complex_=stack.dtype.kind == "c", shortened=shortened)
    if summary & BatchStatus.NOT_CONVERGED:
        warn_unconverged((run.flags & BatchStatus.NOT_CONVERGED) != 0, leading, plan.caller,
                         stacklevel=5)
    real_result = np.dtype(np.finfo(result_dtype).dtype)
    if shortened:
        result = _shortened_result(method, run, qr, names, leading, result_dtype,
                                   real_result, device_input)
    else:
        values = _result_array(run.values, (*leading, k), real_result, device_input)
        U = None if run.U is None else _result_array(run.U, (*leading, k, k), result_dtype,
                                                     device_input)
        if problem == "hsvd":
            J = _result_array(run.J, (*leading, k), np.dtype(np.int8), device_input)
            Vh = None if run.Vh is None else _result_array(run.Vh, (*leading, k, k),
                                                           result_dtype, device_input)
            result = HSVDResult(U, values, Vh, J) if vectors else (values, J)
        else:
            result = EighResult(values, U) if vectors else values
    if not return_info:
        return result
    elapsed = time.perf_counter() - start  # the whole call: transfers, QR, results too
    infos = [_info(run, records, b, plan, run_queue, problem=problem, shortened=shortened,
                   total=elapsed / max(count, 1))
             for b in range(count)]
    return result, (infos if leading else infos[0])


def _raise_for_qr(qr: BatchedQR, names: StackNames, check_finite: bool) -> None:
    """The one-matrix path's exception for the first matrix (C order) the QR
    refused: inf or NaN, a zero column of an hsvd factor, or column norms
    whose squares float64 cannot hold at once."""
    flags = qr.flags
    b = int(np.flatnonzero(flags)[0])
    if flags[b] & BatchStatus.NOT_FINITE:
        if check_finite:
            raise nonfinite_error(names[b])
        raise np.linalg.LinAlgError(NOT_FINITE)
    column_max = qr.column_max()[b]
    if qr.spec.problem == "svd":  # zero columns are allowed
        column_max = column_max[column_max != 0]
    factor_shift_from_maxima(column_max, qr.rows,
                             names.phrased("{}^*")[b] if qr.transposed else names[b])
    raise AssertionError(f"the batched QR flagged {names[b]} for no reason the host finds")


def _shortened_result(method: Any, run: BatchedRun, qr: BatchedQR, names: StackNames,
                      leading: tuple[int, ...], result_dtype: np.dtype,
                      real_result: np.dtype, device_input: bool) -> Any:
    """svd's or a tall hsvd's result from the sweeps' and the QR's, formed on
    the device (:func:`cljacobi.host.batched_qr.batched_qr_results`)."""
    svd = method.batched_problem == "svd"
    out = batched_qr_results(qr, run, full_matrices=svd and method.full_matrices)
    if out.summary:  # a value float64 cannot hold: unshift's message
        b = int(np.flatnonzero(out.flags)[0])
        what = "a singular value of {}" if svd else "a hyperbolic singular value of {}"
        unshift(run.values[b].get(), int(qr.exponents()[b]), names.phrased(what)[b])
    arrays = [_result_array(out.S, (*leading, qr.k), real_result, device_input)]
    if method.compute_uv:
        arrays = [_result_array(out.U, (*leading, *out.U.shape[1:]), result_dtype,
                                device_input), arrays[0],
                  _result_array(out.Vh, (*leading, *out.Vh.shape[1:]), result_dtype,
                                device_input)]
    if svd:
        from .svd import SVDResult

        return SVDResult(*arrays) if method.compute_uv else arrays[0]
    J = _result_array(run.J, (*leading, qr.k), np.dtype(np.int8), device_input)
    return HSVDResult(*arrays, J) if method.compute_uv else (arrays[0], J)


def _result_array(array: cl_array.Array, shape: tuple[int, ...], dtype: np.dtype,
                  device_input: bool) -> Any:
    """A result of the launch in `shape` and `dtype`, on the host unless the
    input was a device array (a reshape makes a new Array even to the same
    shape, tens of microseconds: only where needed)."""
    if array.shape != shape:
        array = array.reshape(*shape)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return array if device_input else array.get()


def _device_signs(signs: np.ndarray, queue: cl.CommandQueue) -> cl_array.Array:
    """The signatures ``(..., n)`` as int32 on the device: ``(n,)`` where one
    J serves the whole stack (broadcast), else ``(count, n)``."""
    n = signs.shape[-1]
    if signs.ndim == 1 or not any(signs.strides[:-1]):
        return cl_array.to_device(queue, np.ascontiguousarray(signs.reshape(-1, n)[0],
                                                              dtype=np.int32))
    return cl_array.to_device(queue, np.ascontiguousarray(signs.reshape(-1, n), dtype=np.int32))


def narrowed(array: cl_array.Array, dtype: np.dtype) -> cl_array.Array:
    """A float64/complex128 result in the narrower `dtype` of its input
    (float32/complex64), on the device; LinAlgError where a value is beyond
    that dtype's range (only the largest magnitude crosses the bus)."""
    if array.size and float(cl_array.max(abs(array)).get()) > np.finfo(dtype).max:
        raise np.linalg.LinAlgError(f"a result exceeds the range of {np.dtype(dtype).name}")
    return array.astype(dtype)


def device_stack(data: cl_array.Array, queue: cl.CommandQueue, name: str
                  ) -> tuple[cl_array.Array, np.dtype]:
    """A device array as a float64/complex128 stack on `queue`, converted on the
    device (:func:`cljacobi.validation.result_dtype_of`: numpy's promotions)."""
    result_dtype = result_dtype_of(data.dtype, name)
    array = data.with_queue(queue) if data.queue is not queue else data
    if array.dtype != compute_dtype(result_dtype):
        array = array.astype(compute_dtype(result_dtype))
    return array, result_dtype


def three_dimensional(stack: cl_array.Array, count: int, queue: cl.CommandQueue
                       ) -> cl_array.Array:
    """The stack as ``(count, m, n)`` with element-aligned strides: itself when
    it is 3-D (any such strides), a view when it is C-contiguous, else a
    C-ordered copy made through the host (pyopencl copies and reshapes only
    C-contiguous arrays; an F-ordered stack of more than one leading
    dimension, or a strided view of one, crosses the bus once)."""
    itemsize = stack.dtype.itemsize
    m, n = stack.shape[-2:]
    if stack.ndim == 3 and not stack.offset % itemsize \
            and not any(s % itemsize for s in stack.strides):
        return stack
    if stack.flags.c_contiguous:
        return stack.reshape(count, m, n)
    host, _ = to_host(stack, queue)
    return cl_array.to_device(queue, np.ascontiguousarray(host).reshape(count, m, n))


def _info(run: BatchedRun, records: tuple[np.ndarray, ...], b: int, plan: Any,
          queue: cl.CommandQueue, *, problem: str = "eig", shortened: bool = False,
          total: float | None = None) -> SolveInfo:
    """The :class:`SolveInfo` of matrix `b` (its share of the launch's seconds,
    and of the whole call's, `total`, where given);
    the factorization as the one-matrix path names it: none for hsvd's square
    factors, "qr" where the QR ran first."""
    info, _, rotations = records
    flags, sweeps, rank, positive = (int(x) for x in info[b, :4])
    per_sweep = [int(x) for x in rotations[b, :sweeps]]
    share = run.seconds / max(run.count, 1)
    return SolveInfo(
        sweeps=sweeps, rotations=sum(per_sweep), rotations_per_sweep=per_sweep,
        converged=not flags & BatchStatus.NOT_CONVERGED, rank=rank, positive=positive,
        device=queue.device.name.strip(), work_group_size=run.work_group_size,
        variant=BATCHED_VARIANT, block_width=0,
        factorization="qr" if shortened else "" if problem == "hsvd" else
        "bunch-parlett-batched",
        precision="double", seconds={"total": share if total is None else total,
                                     "sweeps": share},
        strategy=plan.options.strategy, rotation=plan.options.rotation,
        sort_diagonal=plan.options.sort_diagonal)


def _raise_for_errors(run: BatchedRun, records: tuple[np.ndarray, ...],
                      leading: tuple[int, ...], n: int, plan: Any, method: Any,
                      check_finite: bool, *, complex_: bool, shortened: bool = False) -> None:
    """The one-matrix path's exception for the first matrix (C order) with a
    fatal flag, then the first that did not converge (``on_nonconvergence="raise"``)."""
    from ._solve import _not_converged, name_of, orthogonalization_error

    argument, problem = method.argument, method.batched_problem
    hsvd = problem == "hsvd"
    flags = run.flags
    report = records[1]
    for b in np.flatnonzero(flags & (FATAL | BatchStatus.VALUE_RANGE)):
        index = tuple(int(i) for i in np.unravel_index(b, leading)) if leading else ()
        name = name_of(argument, index)
        flag = BatchStatus(int(flags[b]))
        asymmetry, scale, smallest, largest, column_min, column_max = report[b]
        if flag & BatchStatus.NOT_FINITE:
            if check_finite:
                raise nonfinite_error(name)
            raise np.linalg.LinAlgError(NOT_FINITE)
        if flag & BatchStatus.NOT_HERMITIAN:
            kind, adjoint = ("Hermitian", f"{name}.conj().T") if complex_ else \
                ("symmetric", f"{name}.T")
            raise ValueError(
                f"{name} is not {kind}: max|{name} - {adjoint}| = {asymmetry:.3g} exceeds "
                f"{HERMITIAN_RTOL:.3g} * max|{name}| = {HERMITIAN_RTOL * scale:.3g}")
        if flag & BatchStatus.ENTRY_RANGE:
            matrix_shift_from_range(smallest, largest, n, name)  # raises its message
        if flag & BatchStatus.ZERO_COLUMN:  # hsvd: the input column, in entry 0
            zero = np.arange(n) == int(report[b, 0])
            factor_shift_from_maxima(np.where(zero, 0.0, 1.0), n, name)  # raises its message
        if flag & BatchStatus.FACTOR_RANGE:
            factor_shift_from_maxima(np.array([column_min, column_max]), n, {
                "eig": f"the factor G of {name}", "hsvd": name,
                "svd": f"the triangular factor of {name}"}[problem])  # raises its message
        if flag & (BatchStatus.BREAKDOWN | BatchStatus.TINY_COLUMN):
            raise orthogonalization_error(plan.caller, name if hsvd else f"the factor of {name}",
                                          breakdown=bool(flag & BatchStatus.BREAKDOWN))
        raise np.linalg.LinAlgError(
            f"{method.value_name} of {name} is beyond float64's range and cannot be returned")
    if plan.on_nonconvergence == "raise":
        for b in np.flatnonzero(flags & BatchStatus.NOT_CONVERGED):
            index = tuple(int(i) for i in np.unravel_index(b, leading)) if leading else ()
            info = _info(run, records, b, plan, plan.queue, problem=problem,
                         shortened=shortened)
            raise _not_converged(plan, info, index, f"{plan.max_sweeps} sweeps", "max_sweeps",
                                 f" (rotations per sweep: {info.rotations_per_sweep})")
