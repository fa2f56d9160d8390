"""How many host threads the numpy work of a call may use, and elementwise
numpy work on large arrays spread over them."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import numpy as np

__all__ = ["MAX_THREADS", "all_finite", "any_nonzero", "in_background", "in_row_blocks",
           "map_in_threads", "peaks", "touched_empty", "touched_empty_soon", "usable_cpus",
           "worker_pool", "worker_threads"]

T = TypeVar("T")
U = TypeVar("U")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


#: Threads the host's numpy work of a call spreads over at most.
MAX_THREADS = 8

#: Elements below which :func:`in_row_blocks` runs in the calling thread.
THREADED_MIN_ELEMENTS = 1 << 21


def worker_threads() -> int:
    """Threads for the host's numpy work: the usable CPUs, at most
    :data:`MAX_THREADS`."""
    return max(1, min(usable_cpus(), MAX_THREADS))


def worker_pool() -> ThreadPoolExecutor:
    """The process's pool of :func:`worker_threads` threads, made at its first
    use and kept.  A call used to make a pool for each of its large copies
    and checks: a pool of 8 made, used once and shut down took 0.7-1.0 ms on
    a two-core host, a use of a kept one 0.3 ms.  A child process made by
    ``fork`` makes its own (the parent's threads are not in it).  Work
    submitted here must not wait for other work submitted here; work of the
    pool that calls :func:`map_in_threads` runs its items itself."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(worker_threads(), thread_name_prefix="cljacobi-worker",
                                       initializer=_mark_worker)
        return _pool


def _mark_worker() -> None:
    """The initializer of :func:`worker_pool`'s threads."""
    _in_worker.active = True


#: The pool of :func:`worker_pool` and whether the running thread is one of its.
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_worker = threading.local()


def in_row_blocks(function: Callable[..., T], *arrays: np.ndarray) -> list[T]:
    """``function(*blocks)`` on matching blocks of rows (the first axis) of
    `arrays`, in the threads of :func:`worker_pool` when they are large; the
    results in row order.

    For numpy's elementwise work (``isfinite``, ``ldexp``, ``copyto``), which
    releases the GIL on large blocks: the same operations on the same
    elements as one call on the whole arrays, so the results are those of
    that call.
    """
    first = arrays[0]
    threads = worker_threads()
    if first.ndim == 0 or first.size < THREADED_MIN_ELEMENTS or threads < 2:
        return [function(*arrays)]
    bounds = np.linspace(0, first.shape[0], min(threads, first.shape[0]) + 1).astype(int)
    blocks = [tuple(a[lo:hi] for a in arrays) for lo, hi in itertools.pairwise(bounds)]
    return map_in_threads(lambda block: function(*block), blocks)


def map_in_threads(function: Callable[[U], T], items: Sequence[U]) -> list[T]:
    """``[function(item) for item in items]``, the items spread over the
    threads of :func:`worker_pool` (in the calling thread where there is one
    item, one thread, or the caller is itself one of the pool's threads)."""
    if len(items) < 2 or worker_threads() < 2 or getattr(_in_worker, "active", False):
        return [function(item) for item in items]
    return list(worker_pool().map(function, items))


def all_finite(array: np.ndarray) -> bool:
    """``np.isfinite(array).all()``, by :func:`in_row_blocks` (over the
    transpose of a Fortran-ordered array, whose blocks of rows are then
    contiguous).

    A block whose sum is finite is finite (an inf or a NaN makes any sum
    inf or NaN), which one pass without a temporary array tells; only a
    block whose sum is not (a non-finite entry, or finite entries whose sum
    overflows) is tested entry by entry.  4096 x 4096 float64 on two cores:
    6.5 -> 3.8 ms C-ordered, 7.6 -> 4.6 ms Fortran-ordered; complex128 11.7
    -> 8.4 and 16.4 -> 7.7 ms.
    """
    rows = array.T if array.flags.f_contiguous and not array.flags.c_contiguous else array
    return all(in_row_blocks(_finite_block, rows))


def _finite_block(block: np.ndarray) -> bool:
    """Whether every entry of `block` is finite: its sum first."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(block)):
            return True
    return bool(np.isfinite(block).all())


def any_nonzero(array: np.ndarray) -> bool:
    """``np.any(array)``: its first entry along the first axis (a row, or a
    matrix of a stack), then, where that is zero, all of it by
    :func:`in_row_blocks`."""
    if array.ndim and array.shape[0] and np.any(array[:1]):
        return True
    return any(in_row_blocks(lambda block: bool(np.any(block)), array))


def peaks(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The largest modulus in every row and in every column of a 2-D
    `matrix` with at least one column: ``abs(matrix).max(axis=1)`` and
    ``abs(matrix).max(axis=0)``, by :func:`in_row_blocks` (no temporary of
    the whole matrix; maxima are exact, so the values are the same)."""
    def block_peaks(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        magnitudes = np.abs(block)
        return magnitudes.max(axis=1), magnitudes.max(axis=0)

    parts = in_row_blocks(block_peaks, matrix)
    return (np.concatenate([rows for rows, _ in parts]),
            np.maximum.reduce([columns for _, columns in parts]))


def touched_empty(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """``np.empty(shape, dtype)`` (C-ordered) with its memory pages already
    mapped: one byte a page written, by blocks of rows in threads.

    For arrays a device copy fills: the copy of a driver into fresh memory
    takes every page fault in one thread, which costs more than the copy
    (a 128 MiB download on an H100's host: 43-56 ms into fresh memory,
    18-19 ms with the pages touched by 8 threads first, the touch
    included)."""
    array = np.empty(shape, dtype)
    if array.size:
        flat = array.reshape(array.shape[0], -1) if array.ndim > 1 else array
        in_row_blocks(_touch_pages, flat)
    return array


def touched_empty_soon(shape: tuple[int, ...], dtype: np.dtype | type) -> Future[np.ndarray]:
    """:func:`touched_empty` in the background thread (:func:`in_background`):
    for a result array whose device copy comes at the end of a solve, its
    pages mapped while the device works (the host waits for the sweeps
    meanwhile)."""
    return in_background(touched_empty, shape, dtype)


def in_background(function: Callable[..., T], *args: object) -> Future[T]:
    """``function(*args)`` in the library's one background thread, after the
    work submitted there before (first in, first out): host work that
    overlaps the device's, such as mapping a result's pages or a download
    beside the sweeps.  Such work may wait for work submitted before it,
    never after."""
    global _background
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(1, thread_name_prefix="cljacobi-background")
        return _background.submit(function, *args)


#: The thread of :func:`in_background` (made at its first use).
_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def _touch_pages(block: np.ndarray) -> None:
    """Write a zero byte every 4 KiB of a C-contiguous block."""
    block.reshape(-1).view(np.uint8)[::4096] = 0


def _forget_threads() -> None:
    """In a child made by ``fork``: the parent's pools have no threads here."""
    global _pool, _pool_lock, _background, _background_lock
    _pool, _pool_lock = None, threading.Lock()
    _background, _background_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads)
