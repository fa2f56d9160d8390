"""How many host threads the numpy work of a call may use, and elementwise
numpy work on large arrays spread over them."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

__all__ = ["MAX_THREADS", "all_finite", "in_row_blocks", "usable_cpus", "worker_threads"]

T = TypeVar("T")


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


def in_row_blocks(function: Callable[..., T], *arrays: np.ndarray) -> list[T]:
    """``function(*blocks)`` on matching blocks of rows (the first axis) of
    `arrays`, in threads when they are large; the results in row order.

    For numpy's elementwise work (``isfinite``, ``ldexp``), which releases
    the GIL on large blocks: the same operations on the same elements as one
    call on the whole arrays, so the results are those of that call.
    """
    first = arrays[0]
    threads = worker_threads()
    if first.ndim == 0 or first.size < THREADED_MIN_ELEMENTS or threads < 2:
        return [function(*arrays)]
    bounds = np.linspace(0, first.shape[0], min(threads, first.shape[0]) + 1).astype(int)
    blocks = [tuple(a[lo:hi] for a in arrays) for lo, hi in itertools.pairwise(bounds)]
    with ThreadPoolExecutor(len(blocks)) as pool:
        return list(pool.map(lambda block: function(*block), blocks))


def all_finite(array: np.ndarray) -> bool:
    """``np.isfinite(array).all()``, by :func:`in_row_blocks`."""
    return all(in_row_blocks(lambda block: bool(np.isfinite(block).all()), array))
