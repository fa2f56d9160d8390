"""The sweep loop both device drivers run (pointwise and blocked).

A driver enqueues one sweep's steps; the loop reduces the per-slot status
words of that sweep on the device (``cjac_sweep_status`` of
``pointwise.cl.mako``), reads the two-word summary, records it and stops
after the first sweep without a big rotation, ``|t| > sqrt(eps)/2``
(Novaković & Singer 2011, Sect. 2 and 4).  The blocked driver's sweeps are
quasi-sweeps over block columns; its status words carry the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from .launch import enqueue_kernel
from .status import Status

__all__ = ["RunStats", "sweep_until_converged"]


@dataclass
class RunStats:
    """What one run of the sweep loop did."""

    sweeps: int = 0
    rotations: int = 0
    rotations_per_sweep: list[int] = field(default_factory=list)
    converged: bool = False
    #: OR of the status words of the last sweep (bits of eq. (4.2)).
    last_status: int = 0
    #: Some hyperbolic pair was numerically dependent (never rotated).
    breakdown: bool = False
    #: Some column with a squared norm below the normal floating-point range
    #: met a column it is not orthogonal to (never rotated).
    tiny_column: bool = False
    work_group_size: int = 0
    #: Of the sweeps, those that rotated only the pairs a finishing
    #: certificate named (:mod:`cljacobi.host.certificate`).
    certified: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def sweep_until_converged(
    queue: cl.CommandQueue,
    *,
    max_sweeps: int,
    enqueue_sweep: Callable[[int], None],
    reduce_status: cl.Kernel,
    work_group_size: int,
    summary_buf: cl.Buffer,
    after_sweep: Callable[[], None] | None = None,
    stalled: Callable[[list[int]], bool] | None = None,
) -> RunStats:
    """Run sweeps until one makes no big rotation, at most `max_sweeps`.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        The queue every launch goes to.
    max_sweeps : int
        Sweeps at most.
    enqueue_sweep : callable
        ``enqueue_sweep(sweep)`` enqueues the steps of sweep number `sweep`
        (from 0).
    reduce_status : pyopencl.Kernel
        ``cjac_sweep_status`` bound to the sweep's status words, rotation
        counts and `summary_buf`; one work-group of `work_group_size` items.
    work_group_size : int
        Its work-group size.
    summary_buf : pyopencl.Buffer
        Two ints: the OR of the sweep's status words and its rotations.
    after_sweep : callable, optional
        Called after every sweep's summary is read (the pointwise driver sorts
        the packed diagonal there).
    stalled : callable, optional
        ``stalled(rotations_per_sweep)`` after every sweep: True ends the
        sweeps there (not converged), for a stage that hands over to others.

    Returns
    -------
    RunStats
        Sweeps, rotations per sweep, the last status, whether it converged and
        whether a pair could not be rotated (``breakdown``, ``tiny_column``).
    """
    stats = RunStats(work_group_size=work_group_size)
    summary = np.empty(2, dtype=np.int32)
    for sweep in range(max_sweeps):
        enqueue_sweep(sweep)
        enqueue_kernel(queue, reduce_status, (work_group_size,), (work_group_size,))
        cl.enqueue_copy(queue, summary, summary_buf)
        stats.sweeps += 1
        stats.last_status = int(summary[0])
        stats.rotations_per_sweep.append(int(summary[1]))
        stats.breakdown |= bool(summary[0] & Status.BROKEN)
        stats.tiny_column |= bool(summary[0] & Status.TINY_COLUMN)
        if after_sweep is not None:
            after_sweep()
        if not summary[0] & Status.BIG:
            stats.converged = True
            break
        if stalled is not None and stalled(stats.rotations_per_sweep):
            break
    stats.rotations = sum(stats.rotations_per_sweep)
    return stats
