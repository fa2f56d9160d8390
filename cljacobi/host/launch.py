"""Kernel launches that ask the driver for no event, and scalar arguments
set without pyopencl's overhead.

``pyopencl.enqueue_nd_range_kernel`` always asks ``clEnqueueNDRangeKernel``
for an event of the launch, and NVIDIA's OpenCL records it on the device:
about 2 us of device time a launch between dependent launches of one
in-order queue (H100, ``bench/launch_events.py``; ``bench/README.md``,
"Launches without events").  The solvers launch a kernel per pivot of the
factorization and three per outer step of a blocked sweep (some 9400 of them
at n = 4096) and keep none of those events, so they launch through
:func:`enqueue_kernel`: ``clEnqueueNDRangeKernel`` of the OpenCL ICD loader
pyopencl itself loaded, with no event.  Where that loader cannot be found,
and on a profiling queue (whose events the profilers under ``bench/`` read),
the launch goes through pyopencl as before.  The scalar arguments that
change from launch to launch (the step of the sweeps' kernels) are set by
:func:`set_scalar_arg`, the loader's ``clSetKernelArg``: 1.8 us where
``Kernel.set_arg`` takes 17 us on the H200's host, which then falls behind
the device in the last sweeps and the certificate.  The kernel, its
arguments and the order of the launches are the same either way, so are
the results.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np
import pyopencl as cl

__all__ = ["enqueue_kernel", "loader_enqueue", "loader_set_arg", "set_scalar_arg"]


def _loader_path() -> str | None:
    """Path of the OpenCL ICD loader in this process: the one pyopencl's
    extension module loaded (Linux lists it in /proc/self/maps), else the
    system's."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "libOpenCL" in path.rsplit("/", 1)[-1]:
                    return path
    except OSError:
        pass
    return ctypes.util.find_library("OpenCL")


@cache
def _loader() -> ctypes.CDLL | None:
    """The loader, opened once, or None where none is found."""
    path = _loader_path()
    try:
        return None if path is None else ctypes.CDLL(path)
    except OSError:
        return None


def _loader_function(name: str, argtypes: list) -> ctypes._CFuncPtr | None:
    """Function `name` of the loader as a ctypes function returning a
    cl_int, or None where no loader is found."""
    loader = _loader()
    function = None if loader is None else getattr(loader, name, None)
    if function is None:
        return None
    function.argtypes = argtypes
    function.restype = ctypes.c_int32
    return function


@cache
def loader_enqueue() -> ctypes._CFuncPtr | None:
    """The loader's ``clEnqueueNDRangeKernel`` (queue, kernel, dimensions,
    offset, global and local sizes, no wait list, no event), or None."""
    pointer, count = ctypes.c_void_p, ctypes.c_uint
    return _loader_function("clEnqueueNDRangeKernel",
                            [pointer, pointer, count, pointer, pointer, pointer, count,
                             pointer, pointer])


@cache
def loader_set_arg() -> ctypes._CFuncPtr | None:
    """The loader's ``clSetKernelArg`` (kernel, index, size, value), or None."""
    return _loader_function("clSetKernelArg",
                            [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p])


@lru_cache(maxsize=8192)
def _sizes(global_size: tuple[int, ...], local_size: tuple[int, ...] | None):
    """The work sizes as the C arrays clEnqueueNDRangeKernel takes."""
    array = ctypes.c_size_t * len(global_size)
    return array(*global_size), None if local_size is None else array(*local_size)


def enqueue_kernel(queue: cl.CommandQueue, kernel: cl.Kernel, global_size: Sequence[int],
                   local_size: Sequence[int] | None) -> None:
    """Enqueue one launch of `kernel` (its arguments set) on `queue`, with no
    event where the loader allows and the queue does not profile.

    A launch the driver refuses is enqueued again through pyopencl, which
    raises the error it names (the same refusal: the sizes, resources and
    arguments have not changed)."""
    enqueue = loader_enqueue()
    if enqueue is None or queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)
        return
    global_array, local_array = _sizes(tuple(global_size),
                                       None if local_size is None else tuple(local_size))
    status = enqueue(queue.int_ptr, kernel.int_ptr, len(global_array), None, global_array,
                     local_array, 0, None, None)
    if status != 0:  # CL_SUCCESS
        cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size)


def set_scalar_arg(kernel: cl.Kernel, index: int, value: np.generic) -> None:
    """Set argument `index` of `kernel` to the scalar `value` (a numpy scalar
    of the argument's C type) through the loader's ``clSetKernelArg``.

    ``Kernel.set_arg`` took 17 us for an ``np.int32`` on the H200's host, the
    loader's function 1.8 us (``bench/README.md``, "Launches without
    events"); the sweeps set the step of three kernels before every launch.
    An argument the driver refuses is set again through pyopencl, which
    raises the error it names."""
    setter = loader_set_arg()
    if setter is None or setter(kernel.int_ptr, index, value.nbytes, value.tobytes()) != 0:
        kernel.set_arg(index, value)
