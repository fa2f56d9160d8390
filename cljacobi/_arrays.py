"""Array plumbing of the public functions: device arrays in and out, stacks of matrices.

* A :class:`pyopencl.array.Array` argument is copied to the host (a strided,
  non-contiguous one through the span of its buffer that it covers), solved
  like a numpy array, and the results are returned as pyopencl arrays on the
  queue of that argument (the computation itself runs on ``queue=`` if given,
  else on that array's queue).  An array without a queue is read through
  ``queue=`` (when it is a queue on the array's context) or a new queue on
  its context, and the results come back on that queue.
* Input of shape ``(..., m, n)`` is a stack: every matrix is solved in C
  order of the leading indices and the results are stacked like
  :func:`numpy.linalg.eigh` stacks them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

__all__ = [
    "is_device_array",
    "iterate_stack",
    "solve_stack",
    "stack_results",
    "to_device",
    "to_host",
]


def is_device_array(a: object) -> bool:
    """Whether `a` is a :class:`pyopencl.array.Array`."""
    return isinstance(a, cl_array.Array)


def to_host(
    a: object, queue: cl.CommandQueue | cl.Context | None = None
) -> tuple[object, cl.CommandQueue | None]:
    """``(host copy, queue)`` for a pyopencl array; ``(a, None)`` for anything else.

    The queue is the array's own; for an array without one, the caller's
    `queue` if it is a queue on the array's context, else a new queue on that
    context (the results then come back on it).  Any strides are accepted
    (:func:`_strided_get`).
    """
    if not is_device_array(a):
        return a, None
    array_queue = a.queue
    if array_queue is None:
        if isinstance(queue, cl.CommandQueue) and queue.context == a.context:
            array_queue = queue
        else:
            array_queue = cl.CommandQueue(a.context)
    if a.flags.forc:
        return a.get(queue=array_queue), array_queue
    return _strided_get(a, array_queue), array_queue


def _strided_get(a: cl_array.Array, queue: cl.CommandQueue) -> np.ndarray:
    """A non-contiguous pyopencl array on the host, with the same strides.

    pyopencl copies only contiguous arrays (``get`` asserts, ``copy``
    raises), so the span of the buffer between the array's lowest and
    highest element is read in one transfer and viewed with its strides;
    ``a[:, ::k]`` thus reads about k times its own size.
    """
    extents = [(n - 1) * stride for n, stride in zip(a.shape, a.strides)]
    low = sum(e for e in extents if e < 0)
    high = sum(e for e in extents if e > 0) + a.dtype.itemsize
    span = np.empty(high - low, dtype=np.uint8)
    cl.enqueue_copy(queue, span, a.base_data, src_offset=a.offset + low)
    return np.ndarray(a.shape, a.dtype, buffer=span, offset=-low, strides=a.strides)


def to_device(result: Any, queue: cl.CommandQueue) -> Any:
    """`result` with every ndarray in it (also inside tuples) copied to `queue`'s device."""
    if isinstance(result, np.ndarray):
        return cl_array.to_device(queue, np.ascontiguousarray(result))
    if isinstance(result, tuple):
        converted = [to_device(item, queue) for item in result]
        if not hasattr(result, "_fields"):
            return tuple(converted)
        # attributes beyond the fields (GSVDResult.Z) travel along
        extra = {name: to_device(value, queue)
                 for name, value in getattr(result, "__dict__", {}).items()}
        return type(result)(*converted, **extra)
    return result


def iterate_stack(
    array: np.ndarray, core_ndim: int = 2
) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """``(index, array[index])`` over the leading dimensions, in C order."""
    for index in np.ndindex(*array.shape[: array.ndim - core_ndim]):
        yield index, array[index]


def stack_results(results: list[Any], leading: tuple[int, ...], template: Any) -> Any:
    """Stack per-matrix results (arrays or tuples of arrays) over `leading` dimensions.

    `template` is a result of the same structure, shapes and dtypes as every
    entry of `results` (it gives the shapes when `results` is empty).
    """
    if isinstance(template, tuple):
        fields = [
            stack_results([r[i] for r in results], leading, item)
            for i, item in enumerate(template)
        ]
        return type(template)(*fields) if hasattr(template, "_fields") else tuple(fields)
    template = np.asarray(template)
    if not results:
        return np.empty(leading + template.shape, dtype=template.dtype)
    return np.stack(results).reshape(leading + template.shape)


def solve_stack(
    array: np.ndarray,
    solve: Callable[[tuple[int, ...], np.ndarray], tuple[Any, Any]],
    template: Any,
    core_ndim: int = 2,
) -> tuple[Any, list[Any]]:
    """Apply ``solve(index, matrix) -> (result, info)`` to each matrix of the stack.

    Returns the stacked results and the list of infos in C order.
    """
    results, infos = [], []
    for index, matrix in iterate_stack(array, core_ndim):
        result, info = solve(index, matrix)
        results.append(result)
        infos.append(info)
    return stack_results(results, array.shape[: array.ndim - core_ndim], template), infos
