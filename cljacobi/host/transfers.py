"""Host arrays copied into new device buffers.

One function, :func:`buffer_holding`, for every large upload: a buffer
allocated, then written by a blocking ``enqueue_copy``, not created with
``COPY_HOST_PTR``.  On NVIDIA's OpenCL (H200) the latter took 0.105 s for
134 MB (0.078 s to create the buffer, 0.027 s more at its first use) and
0.49 s for 537 MB, against 0.019 s and 0.077 s for the copy
(``bench/qr_call_split.py``; ``bench/README.md``, "The device QR").
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

__all__ = ["buffer_holding"]


def buffer_holding(queue: cl.CommandQueue, array: np.ndarray,
                   flags: cl.mem_flags = cl.mem_flags.READ_WRITE) -> cl.Buffer:
    """A new buffer on `queue`'s device holding the bytes of `array` as they
    lie in memory (C- or Fortran-ordered; any other layout is copied
    C-ordered first), written before this returns; an empty array gets a
    buffer of one element, unwritten."""
    array = np.asarray(array)
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    buffer = cl.Buffer(queue.context, flags, max(array.nbytes, array.itemsize))
    if array.nbytes:
        cl.enqueue_copy(queue, buffer, array, is_blocking=True)
    return buffer
