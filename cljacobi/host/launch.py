"""Kernel launches that ask the driver for no event.

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
the launch goes through pyopencl as before.  The kernel, its arguments and
the order of the launches are the same either way, so are the results.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Sequence
from functools import cache, lru_cache

import pyopencl as cl

__all__ = ["enqueue_kernel", "loader_enqueue"]


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
def loader_enqueue():
    """The loader's ``clEnqueueNDRangeKernel`` as a ctypes function, or None
    where no loader is found."""
    path = _loader_path()
    if path is None:
        return None
    try:
        function = ctypes.CDLL(path).clEnqueueNDRangeKernel
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                         ctypes.c_void_p]
    function.restype = ctypes.c_int32
    return function


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
