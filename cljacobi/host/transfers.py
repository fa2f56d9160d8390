"""Host arrays to and from device buffers.

Every large copy between a host array and a device buffer goes through
:func:`write_buffer` (and :func:`buffer_holding`, a new buffer written by it)
or :func:`read_buffer`.

Where the device has memory of its own (``host_unified_memory`` false: a
discrete GPU), a driver copies a pageable numpy array through its own pinned
buffer, one thread at a time.  These functions stage the bytes through two
pinned host buffers of :data:`STAGING_CHUNK_BYTES` each instead (one pair per
context, mapped once): host threads copy one chunk while the other crosses
the bus.  H200 (NVIDIA OpenCL, PCIe 5), 134 MB and 537 MB, best of five
(``bench/README.md``, "Transfers through pinned chunks"):

=====================  ===============  =================
copy                   pageable         two 32 MiB chunks
=====================  ===============  =================
134 MB up              15.3 ms          5.3 ms
537 MB up              81.7 ms          18.7 ms
134 MB down            17.0 ms          11.2 ms
537 MB down            65.1 ms          40.7 ms
=====================  ===============  =================

(downloads into fresh memory, its pages touched first.)  Elsewhere (a CPU
device, whose buffers are host memory) the copy is a plain blocking
``enqueue_copy``; so is any copy smaller than :data:`STAGED_MIN_BYTES`, and
one that finds the context's staging buffers busy in another thread.
Buffers are written by copies, never created with ``COPY_HOST_PTR``: on
NVIDIA's OpenCL that took 0.105 s for 134 MB (0.078 s to create the buffer,
0.027 s more at its first use) and 0.49 s for 537 MB
(``bench/qr_call_split.py``; ``bench/README.md``, "The device QR").

A copy that should cross the bus while a queue goes on with its kernels
goes through :func:`side_queue`, a second in-order queue of the same device
(NVIDIA's OpenCL runs two in-order queues at once).
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl

from .._threads import in_row_blocks, touched_empty

__all__ = ["STAGED_MIN_BYTES", "STAGING_CHUNK_BYTES", "buffer_holding", "read_buffer",
           "side_queue", "stages_copies", "write_buffer"]

#: Bytes of each of the two pinned staging buffers of a context.
STAGING_CHUNK_BYTES = 32 << 20

#: Copies below this many bytes go straight to the driver.
STAGED_MIN_BYTES = 8 << 20


class _Staging:
    """Two pinned host buffers of one context, mapped for the process's life,
    and the lock of the thread that copies through them."""

    def __init__(self, queue: cl.CommandQueue, chunk_bytes: int) -> None:
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
        self.chunk_bytes = chunk_bytes
        self.buffers = [cl.Buffer(queue.context, flags, chunk_bytes) for _ in range(2)]
        self.views = [cl.enqueue_map_buffer(queue, buffer, cl.map_flags.READ | cl.map_flags.WRITE,
                                            0, (chunk_bytes,), np.uint8)[0]
                      for buffer in self.buffers]
        queue.finish()
        self.lock = threading.Lock()


def stages_copies(device: cl.Device) -> bool:
    """Whether large copies to and from `device` go through the pinned
    chunks: where its memory is its own (a discrete GPU)."""
    return not device.host_unified_memory


_stagings: dict[tuple[int, int], _Staging | None] = {}
_stagings_lock = threading.Lock()


def _staging(queue: cl.CommandQueue, nbytes: int, staged: bool | None,
             chunk_bytes: int | None) -> _Staging | None:
    """The context's staging buffers, locked for the caller, or None for a
    plain copy: `staged` None decides by the device and the size, True and
    False force it (the tests' way to the staged path on a CPU device)."""
    if staged is None:
        staged = nbytes >= STAGED_MIN_BYTES and stages_copies(queue.device)
    if not staged or nbytes == 0:
        return None
    chunk = chunk_bytes or STAGING_CHUNK_BYTES
    key = (queue.context.int_ptr, chunk)
    with _stagings_lock:
        if key not in _stagings:
            try:
                _stagings[key] = _Staging(queue, chunk)
            except (cl.MemoryError, cl.RuntimeError):  # no pinned memory: plain copies
                _stagings[key] = None
        staging = _stagings[key]
    if staging is None or not staging.lock.acquire(blocking=False):
        return None
    return staging


def side_queue(queue: cl.CommandQueue) -> cl.CommandQueue:
    """A second in-order queue of `queue`'s context and device (one per
    pair, kept; profiling where `queue` profiles): for copies that run beside
    the kernels of `queue`.  Commands on it wait for commands of `queue` only
    through events."""
    properties = int(queue.properties) & int(cl.command_queue_properties.PROFILING_ENABLE)
    key = (queue.context.int_ptr, queue.device.int_ptr, properties)
    with _side_queues_lock:
        if key not in _side_queues:
            _side_queues[key] = cl.CommandQueue(queue.context, queue.device,
                                                properties=properties)
        return _side_queues[key]


_side_queues: dict[tuple[int, int, int], cl.CommandQueue] = {}
_side_queues_lock = threading.Lock()


def _memory_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of a C- or Fortran-contiguous array as they lie in memory."""
    ordered = array if array.flags.c_contiguous else array.T
    return ordered.reshape(-1).view(np.uint8)


def _release(staging: _Staging, events: list[cl.Event | None]) -> None:
    """Wait for the copies still using `staging` (an error may have left
    some in flight), then free it for the next caller."""
    try:
        for event in events:
            if event is not None:
                event.wait()
    finally:
        staging.lock.release()


def write_buffer(queue: cl.CommandQueue, buffer: cl.Buffer, array: np.ndarray, *,
                 pitch: int | None = None, staged: bool | None = None,
                 chunk_bytes: int | None = None) -> None:
    """Write `array` into `buffer` and wait for it.

    `array` is C- or Fortran-contiguous; its bytes go to the start of
    `buffer` as they lie in memory.  With `pitch`, `array` is 2-D and
    C-contiguous and row ``i`` goes to byte ``i * pitch`` (``pitch`` at least
    a row's bytes; the bytes between the rows are left as they are).
    `staged` and `chunk_bytes` choose the path (module docstring; for tests).
    """
    array = np.asarray(array)
    rows = row_bytes = 0
    if pitch is not None:
        if array.ndim == 2:
            rows, row_bytes = array.shape[0], array.shape[1] * array.itemsize
        if array.ndim != 2 or not array.flags.c_contiguous or pitch < row_bytes:
            raise ValueError("a pitched write takes a C-contiguous 2-D array whose rows fit "
                             "the pitch")
    elif not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise ValueError("write_buffer takes a C- or Fortran-contiguous array")
    staging = _staging(queue, array.nbytes, staged, chunk_bytes)
    if staging is not None and pitch is not None and row_bytes > staging.chunk_bytes:
        staging.lock.release()  # a row larger than a chunk: the driver copies it
        staging = None
    if staging is None:
        if pitch is None:
            if array.nbytes:
                cl.enqueue_copy(queue, buffer, array, is_blocking=True)
        elif rows and row_bytes:
            cl.enqueue_copy(queue, buffer, array, buffer_origin=(0, 0), host_origin=(0, 0),
                            region=(row_bytes, rows), buffer_pitches=(pitch,),
                            host_pitches=(row_bytes,), is_blocking=True)
        return
    pending: list[cl.Event | None] = [None, None]
    try:
        source = _memory_bytes(array)
        # A chunk is a run of whole rows for a pitched write, of bytes otherwise.
        step = (staging.chunk_bytes // row_bytes) * row_bytes if pitch else staging.chunk_bytes
        for number, start in enumerate(range(0, source.size, step)):
            slot = number % 2
            if pending[slot] is not None:
                pending[slot].wait()  # its last chunk has left
            size = min(step, source.size - start)
            view = staging.views[slot][:size]
            in_row_blocks(np.copyto, view, source[start:start + size])
            if pitch is None:
                pending[slot] = cl.enqueue_copy(queue, buffer, view, dst_offset=start,
                                                is_blocking=False)
            else:
                pending[slot] = cl.enqueue_copy(
                    queue, buffer, view, buffer_origin=(0, start // row_bytes),
                    host_origin=(0, 0), region=(row_bytes, size // row_bytes),
                    buffer_pitches=(pitch,), host_pitches=(row_bytes,), is_blocking=False)
    finally:
        _release(staging, pending)


def read_buffer(queue: cl.CommandQueue, buffer: cl.Buffer, shape: tuple[int, ...],
                dtype: np.dtype | type, *, src_offset: int = 0, out: np.ndarray | None = None,
                staged: bool | None = None, chunk_bytes: int | None = None) -> np.ndarray:
    """A C-ordered host array of `shape` and `dtype` holding the bytes of
    `buffer` from byte `src_offset`, after the commands already in `queue`:
    `out` (C-contiguous, of that shape and dtype; best with its pages already
    mapped, :func:`cljacobi._threads.touched_empty_soon`) or a new one.
    `staged` and `chunk_bytes` choose the path (module docstring; for tests)."""
    dtype = np.dtype(dtype)
    if out is not None and (out.shape != tuple(shape) or out.dtype != dtype
                            or not out.flags.c_contiguous or not out.flags.writeable):
        raise ValueError(f"read_buffer's out must be a writeable C-contiguous {dtype} array of "
                         f"shape {tuple(shape)}, got {out.dtype} {out.shape}")
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    staging = _staging(queue, nbytes, staged, chunk_bytes)
    if staging is None:
        # A driver's copy into fresh memory takes every page fault in one
        # thread: the pages are touched first, in threads.
        host = touched_empty(shape, dtype) if out is None else out
        if nbytes:
            cl.enqueue_copy(queue, host, buffer, src_offset=src_offset, is_blocking=True)
        return host
    arriving: dict[int, cl.Event] = {}
    try:
        # A new array's pages are first touched by the copying threads.
        host = np.empty(shape, dtype) if out is None else out
        target = _memory_bytes(host)
        step = staging.chunk_bytes
        starts = list(range(0, nbytes, step))

        def fetch(number: int) -> cl.Event:
            size = min(step, nbytes - starts[number])
            return cl.enqueue_copy(queue, staging.views[number % 2][:size], buffer,
                                   src_offset=src_offset + starts[number], is_blocking=False)

        for number in range(min(2, len(starts))):
            arriving[number] = fetch(number)
        for number, start in enumerate(starts):
            arriving.pop(number).wait()
            size = min(step, nbytes - start)
            in_row_blocks(np.copyto, target[start:start + size], staging.views[number % 2][:size])
            if number + 2 < len(starts):
                arriving[number + 2] = fetch(number + 2)
    finally:
        _release(staging, list(arriving.values()))
    return host


def buffer_holding(queue: cl.CommandQueue, array: np.ndarray,
                   flags: cl.mem_flags = cl.mem_flags.READ_WRITE) -> cl.Buffer:
    """A new buffer on `queue`'s device holding the bytes of `array` as they
    lie in memory (C- or Fortran-ordered; any other layout is copied
    C-ordered first), written before this returns (:func:`write_buffer`); an
    empty array gets a buffer of one element, unwritten."""
    array = np.asarray(array)
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    buffer = cl.Buffer(queue.context, flags, max(array.nbytes, array.itemsize))
    write_buffer(queue, buffer, array)
    return buffer
