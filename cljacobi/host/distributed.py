"""The one-sided sweeps on an MPI communicator: two stripes of G (and V) per rank.

The multi-GPU algorithm of Novaković & Singer, "Implicit Hari-Zimmermann
algorithm for the generalized SVD on the GPUs" (Sect. 4), applied to the
one-sided hyperbolic Jacobi method.  With ``s`` ranks the bordered columns
are cut into ``2 s`` *stripes* of equal width (Sect. 4.1.2); rank ``r`` holds
two of them, joined as one ``rows x 2 width`` factor in its device's memory,
and in an outermost step runs one sweep of the single-device method on them
(Algorithm 1 with ``S = 1``: "BO", as Sect. 4.1.4 recommends for several
GPUs).  Between steps the stripes travel by the Mantharam-Eberlein table of
order ``2 s`` (Sect. 4.1.3, the communication-aware strategy): stripe ``p``
held in step ``k`` goes to the rank holding it in step ``k + 1``, as its
first or its second stripe.  An outermost sweep is ``2 s - 1`` steps; the
per-rank counters of big transformations are summed by ``MPI_Allreduce``
after each one (Algorithm 5), and a sweep without any ends the phase.

As on one device (:func:`cljacobi._solve.run_sweeps`), blocked sweeps run
first (when the variant is blocked) and pointwise sweeps finish and decide
convergence; both phases here are outermost sweeps over the stripes.

Communication (Algorithms 2-4): before its local sweep a rank posts the
non-blocking receives of the two stripes it holds next, into the second of
two host buffers; after the sweep it posts the non-blocking sends of its
two stripes from the first; then it waits for all of them and swaps the
buffers.  A stripe travels as up to three messages (G, V, and its columns'
metadata: global index, sign, largest squared norm so far and squared
norm), tagged
by the kind and by the stripe's slot at the destination (the paper's tags
1-12 and its ``+-(t + 1)`` encoding of the slot).  Unlike the paper the
receives name their source (known from the table): MPI's ordering of the
messages of one source and tag then matches every message to its step, and
no barrier is needed between steps.

Every rank computes only its own stripes, in a fixed order, and the
messages carry data, not sums: for a fixed number of ranks the results are
bitwise identical from run to run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from ..strategies import step_table
from .blocked import BlockedHSVD
from .operands import ROW_ALIGNMENT, Operands
from .pointwise import PointwiseHSVD
from .sizes import round_up
from .status import Status

__all__ = [
    "META_COLUMNS", "DistributedStats", "ExchangeStep", "RankStripes", "StripeLayout",
    "StripeSweeps", "exchange_plan",
]

#: The Jacobi strategy over the stripes (the paper's ME, Sect. 4.1.3).
OUTERMOST_STRATEGY = "me"

#: Per column of a stripe, the metadata that travels with it: its global
#: index, its sign in J, the largest squared norm it has had (the kernels'
#: ``peak``, kept from phase to phase) and its squared norm after its last
#: pointwise sweep (the packed diagonal's ``d``).
META_COLUMNS = 4

#: Message kinds; a tag is ``slot * len(KINDS) + kind``.
KINDS = ("G", "V", "meta")


@dataclass(frozen=True)
class StripeLayout:
    """How the bordered columns are cut into stripes.

    Attributes
    ----------
    ranks : int
        Ranks of the communicator, ``s``.
    width : int
        Columns of a stripe: a multiple of the block width (or of 1 for the
        pointwise method), so that two joined stripes are a valid factor of
        the single-device method.
    """

    ranks: int
    width: int

    @classmethod
    def for_columns(cls, columns: int, ranks: int, multiple: int) -> StripeLayout:
        """The narrowest stripes, a multiple of `multiple` wide, that hold
        `columns` columns in ``2 * ranks`` stripes."""
        width = round_up(max(-(-columns // (2 * ranks)), 1), multiple)
        return cls(ranks, width)

    @property
    def stripes(self) -> int:
        return 2 * self.ranks

    @property
    def columns(self) -> int:
        """Bordered columns: ``2 s`` stripes."""
        return self.stripes * self.width


@dataclass(frozen=True)
class ExchangeStep:
    """One rank's part of an outermost step.

    Attributes
    ----------
    stripes : tuple of int
        ``(p, q)``, ``p < q``: the global stripes the rank holds (first,
        second) and sweeps in this step.
    destinations : tuple of (int, int)
        For its first and second stripe, ``(rank, slot)`` that holds it in
        the next step (slot 0: first, 1: second); the paper encodes this as
        ``-(rank + 1)`` for the first slot and ``rank + 1`` for the second.
    sources : tuple of int
        The ranks that send the stripes this rank holds (first, second) in
        the next step.
    """

    stripes: tuple[int, int]
    destinations: tuple[tuple[int, int], tuple[int, int]]
    sources: tuple[int, int]


def exchange_plan(ranks: int) -> list[list[ExchangeStep]]:
    """``plan[k][r]``: rank ``r``'s stripes in step ``k`` of an outermost
    sweep and where they go after it (Sect. 4.1.3).

    The Mantharam-Eberlein table of order ``2 s`` is the same every sweep;
    after its last step comes its first.  Computed from the table by looking
    up, for every stripe, its holder in the next step.
    """
    pairs = step_table(OUTERMOST_STRATEGY, 2 * ranks).pairs
    steps = pairs.shape[0]
    plan = []
    for k in range(steps):
        following = pairs[(k + 1) % steps]
        holder = {}
        for rank, (first, second) in enumerate(following):
            holder[int(first)] = (rank, 0)
            holder[int(second)] = (rank, 1)
        sender = {}
        for rank, (first, second) in enumerate(pairs[k]):
            sender[int(first)] = rank
            sender[int(second)] = rank
        plan.append([
            ExchangeStep(
                (int(first), int(second)),
                (holder[int(first)], holder[int(second)]),
                tuple(sender[int(stripe)] for stripe in following[rank]),
            )
            for rank, (first, second) in enumerate(pairs[k])
        ])
    return plan


@dataclass
class RankStripes:
    """A rank's two stripes on the host, in the device's storage.

    Row ``c`` of `g` is local column ``c`` of G as the device stores it
    (``ldg`` elements, or for split complex data ``2 ldg`` reals); likewise
    `v` (``ldv`` rows of V per column).  ``meta[c]`` is the column's global
    index, sign, largest squared norm so far and squared norm
    (:data:`META_COLUMNS`).
    """

    g: np.ndarray
    v: np.ndarray | None
    meta: np.ndarray

    def empty_like(self) -> RankStripes:
        return RankStripes(np.empty_like(self.g),
                           None if self.v is None else np.empty_like(self.v),
                           np.empty_like(self.meta))

    def parts(self) -> list[np.ndarray | None]:
        """The arrays in the order of :data:`KINDS`."""
        return [self.g, self.v, self.meta]


@dataclass
class DistributedStats:
    """What the outermost sweeps did (equal on every rank)."""

    sweeps: int = 0
    blocked_sweeps: int = 0
    #: Rotations per outermost sweep, summed over the ranks.
    rotations_per_sweep: list[int] = field(default_factory=list)
    converged: bool = False
    breakdown: bool = False
    tiny_column: bool = False
    #: This rank's seconds: ``sweeps`` (its local sweeps, transfers to and
    #: from its device included), ``communication`` (waiting for the
    #: stripes, and the reductions).
    seconds: dict[str, float] = field(default_factory=dict)


class StripeSweeps:
    """One rank's side of the outermost sweeps.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
    queue : pyopencl.CommandQueue
        This rank's device.
    layout : StripeLayout
    rows : int
        Rows of G in use (the bordered rows of the whole factor).
    dtype : numpy.dtype
        float64 or complex128.
    split : bool
        Complex data stored as each column's real parts, then its imaginary ones.
    accumulate_v : bool
    variant : {"pointwise", "bo", "fb", "stream"}
        The local sweep of an outermost step: blocked ("bo" recommended)
        or pointwise only.
    block_width : int
    strategy, rotation, sort_diagonal
        The pointwise sweeps' options.
    peak_rounding : bool
        As :meth:`cljacobi.host.pointwise.PointwiseHSVD.run_operands`.
    """

    def __init__(self, comm: Any, queue: cl.CommandQueue, *, layout: StripeLayout, rows: int,
                 dtype: np.dtype, split: bool, accumulate_v: bool, variant: str,
                 block_width: int, strategy: str, rotation: int, sort_diagonal: bool,
                 peak_rounding: bool) -> None:
        self.comm, self.queue, self.layout = comm, queue, layout
        self.rank = comm.Get_rank()
        self.plan = exchange_plan(layout.ranks)
        self.rows, self.dtype, self.split = rows, np.dtype(dtype), split
        self.accumulate_v, self.variant = accumulate_v, variant
        self.peak_rounding = peak_rounding
        local = 2 * layout.width
        self.ldg = round_up(rows, ROW_ALIGNMENT)
        self.ldv = round_up(layout.columns, ROW_ALIGNMENT)
        itemsize = self.dtype.itemsize
        mf = cl.mem_flags
        ctx = queue.context
        self.g_buf = cl.Buffer(ctx, mf.READ_WRITE, itemsize * self.ldg * local)
        self.v_buf = (cl.Buffer(ctx, mf.READ_WRITE, itemsize * self.ldv * local)
                      if accumulate_v else None)
        self.peak_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * local)
        self.blocked = None
        if variant != "pointwise":
            self.blocked = BlockedHSVD(queue, accumulate_v=accumulate_v,
                                       block_width=block_width, variant=variant)
        self.pointwise = PointwiseHSVD(
            queue, accumulate_v=accumulate_v, layout="split" if split else "interleaved",
            strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal)

    # -- buffers ------------------------------------------------------------

    def new_stripes(self) -> RankStripes:
        """Uninitialized host stripes of this run's shape."""
        local = 2 * self.layout.width
        part = np.dtype(np.float64) if self.split else self.dtype
        factor = 2 if self.split else 1
        g = np.empty((local, factor * self.ldg), part)
        v = np.empty((local, factor * self.ldv), part) if self.accumulate_v else None
        return RankStripes(g, v, np.empty((local, META_COLUMNS)))

    def _operands(self, signs: np.ndarray) -> Operands:
        local = 2 * self.layout.width
        return Operands(self.g_buf, self.ldg, self.rows, local, self.v_buf, self.ldv,
                        self.rows, local, signs.astype(np.int32), self.dtype, self.split,
                        peak=self.peak_buf, v_rows=self.layout.columns)

    def _upload(self, stripes: RankStripes, order: np.ndarray | None) -> None:
        def rows(array):
            return np.ascontiguousarray(array if order is None else array[order])
        cl.enqueue_copy(self.queue, self.g_buf, rows(stripes.g))
        if self.v_buf is not None:
            cl.enqueue_copy(self.queue, self.v_buf, rows(stripes.v))
        cl.enqueue_copy(self.queue, self.peak_buf, rows(stripes.meta[:, 2]))

    def _download(self, stripes: RankStripes, order: np.ndarray | None) -> None:
        targets = [(self.g_buf, stripes.g)]
        if self.v_buf is not None:
            targets.append((self.v_buf, stripes.v))
        peaks = np.empty(len(stripes.meta))
        for buf, array in targets:
            host = np.empty_like(array)
            cl.enqueue_copy(self.queue, host, buf)
            self.queue.finish()
            if order is None:
                array[...] = host
            else:
                array[order] = host
        cl.enqueue_copy(self.queue, peaks, self.peak_buf)
        self.queue.finish()
        if order is None:
            stripes.meta[:, 2] = peaks
        else:
            stripes.meta[order, 2] = peaks

    # -- one local sweep ----------------------------------------------------

    def _local_sweep(self, stripes: RankStripes, phase: str) -> tuple[int, int]:
        """One sweep of the single-device method on the two stripes, in
        place; returns its status word (OR over the work-groups) and rotations."""
        signs = stripes.meta[:, 1]
        if phase == "blocked":
            self._upload(stripes, None)
            stats = self.blocked.run_operands(self._operands(signs), max_sweeps=1)
            self._download(stripes, None)
            return stats.last_status, stats.rotations
        # The pointwise kernels take the signature sorted, +1 first: the
        # columns go to the device in that order (stable, so the order is
        # fixed by the stripes alone) and come back to their places.
        order = np.argsort(-signs, kind="stable")
        self._upload(stripes, order)
        state = self.pointwise.run_operands(self._operands(signs[order]), max_sweeps=1,
                                            fetch=False, peak_rounding=self.peak_rounding)
        self._download(stripes, order)
        stripes.meta[order, 3] = state.d
        return state.stats.last_status, state.stats.rotations

    # -- the outermost sweeps -------------------------------------------------

    def _exchange_start(self, step: ExchangeStep, incoming: RankStripes) -> list[Any]:
        """Algorithm 2: the receives of the stripes held next."""
        width = self.layout.width
        requests = []
        for slot, source in enumerate(step.sources):
            for kind, array in enumerate(incoming.parts()):
                if array is not None:
                    requests.append(self.comm.Irecv(
                        array[slot * width:(slot + 1) * width], source=source,
                        tag=slot * len(KINDS) + kind))
        return requests

    def _exchange_send(self, step: ExchangeStep, outgoing: RankStripes) -> list[Any]:
        """Algorithm 3: the sends of the transformed stripes."""
        width = self.layout.width
        requests = []
        for slot, (target, target_slot) in enumerate(step.destinations):
            for kind, array in enumerate(outgoing.parts()):
                if array is not None:
                    requests.append(self.comm.Isend(
                        array[slot * width:(slot + 1) * width], dest=target,
                        tag=target_slot * len(KINDS) + kind))
        return requests

    def run(self, stripes: RankStripes, *, max_sweeps: int) -> tuple[RankStripes, DistributedStats]:
        """Outermost sweeps until convergence or `max_sweeps` (both phases
        together); returns the final stripes (a new object: the buffers
        alternate) and the statistics."""
        from mpi4py import MPI

        stats = DistributedStats(seconds={"sweeps": 0.0, "communication": 0.0})
        incoming = stripes.empty_like()
        phases = ["blocked", "pointwise"] if self.blocked is not None else ["pointwise"]
        for phase in phases:
            budget = max_sweeps - stats.sweeps if phase == "blocked" else \
                max(max_sweeps - stats.sweeps, 1)
            converged = False
            for _ in range(budget):
                status, rotations = 0, 0
                for step in self.plan:
                    mine = step[self.rank]
                    requests = self._exchange_start(mine, incoming)
                    start = time.perf_counter()
                    word, count = self._local_sweep(stripes, phase)
                    stats.seconds["sweeps"] += time.perf_counter() - start
                    status |= word
                    rotations += count
                    requests += self._exchange_send(mine, stripes)
                    start = time.perf_counter()
                    MPI.Request.Waitall(requests)
                    stats.seconds["communication"] += time.perf_counter() - start
                    stripes, incoming = incoming, stripes
                # Algorithm 5: the sweep's counters over all ranks.
                start = time.perf_counter()
                big, broken, tiny = (int(bool(status & flag)) for flag in
                                     (Status.BIG, Status.BROKEN, Status.TINY_COLUMN))
                totals = np.array([big, rotations, broken, tiny], dtype=np.int64)
                self.comm.Allreduce(MPI.IN_PLACE, totals, op=MPI.SUM)
                stats.seconds["communication"] += time.perf_counter() - start
                stats.sweeps += 1
                stats.blocked_sweeps += phase == "blocked"
                stats.rotations_per_sweep.append(int(totals[1]))
                stats.breakdown |= bool(totals[2])
                stats.tiny_column |= bool(totals[3])
                if not totals[0]:
                    converged = True
                    break
            stats.converged = converged and phase == "pointwise"
        stats.converged = stats.converged and stats.sweeps <= max_sweeps
        return stripes, stats
