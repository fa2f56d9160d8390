"""The sweeps on an MPI communicator: two stripes of the columns per rank.

The multi-GPU algorithm of Novaković & Singer, "Implicit Hari-Zimmermann
algorithm for the generalized SVD on the GPUs" (Sect. 4), for its own
implicit Hari-Zimmermann method (:class:`HZStripeSweeps`) and for the
one-sided hyperbolic Jacobi method (:class:`StripeSweeps`: G, and V when
it is accumulated).  With ``s`` ranks the bordered columns
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
two stripes from the first; then it waits for all of them and takes the
received stripes.  A stripe travels as one message per array (for the
one-sided method G, V and its columns' metadata: global index, sign,
largest squared norm so far and squared norm; F, G and Z for the GSVD),
tagged by the array and by the stripe's slot at the destination (the
paper's tags 1-12 and its ``+-(t + 1)`` encoding of the slot).  Unlike the paper the
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
from typing import Any, Callable, ClassVar, NamedTuple, Protocol

import numpy as np
import pyopencl as cl

from ..strategies import step_table
from .blocked import BlockedHSVD
from .operands import ROW_ALIGNMENT, Operands
from .pointwise import PointwiseHSVD
from .sizes import round_up
from .status import Status

__all__ = [
    "META_COLUMNS", "DistributedStats", "ExchangeStep", "Holder", "HostStripes", "LocalSweep",
    "RankStripes", "HZStripeSweeps", "StripeLayout", "StripeSweeps", "cross_pairs",
    "exchange_plan", "outermost_sweeps",
]

#: The Jacobi strategy over the stripes (the paper's ME, Sect. 4.1.3).
OUTERMOST_STRATEGY = "me"

#: Per column of a stripe, the metadata that travels with it: its global
#: index, its sign in J, the largest squared norm it has had (the kernels'
#: ``peak``, kept from phase to phase) and its squared norm after its last
#: pointwise sweep (the packed diagonal's ``d``).
META_COLUMNS = 4



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

    #: What :meth:`parts` holds: a message each (a tag each, by slot).
    KINDS: ClassVar[tuple[str, ...]] = ("G", "V", "meta")

    g: np.ndarray
    v: np.ndarray | None
    meta: np.ndarray

    def parts(self) -> list[np.ndarray | None]:
        """G, V (None without it) and the metadata: the messages of a stripe."""
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
    #: This rank's seconds: ``sweeps`` (its local sweeps), ``communication``
    #: (reading back the stripes that leave, moving and writing the others,
    #: waiting for the messages, and the reductions).
    seconds: dict[str, float] = field(default_factory=dict)


# -- the outermost sweeps ---------------------------------------------------------


class LocalSweep(NamedTuple):
    """What one local sweep of an outermost step reports."""

    #: A big transformation happened (the phase goes on).
    big: bool
    #: Transformations applied.
    count: int
    #: A pair could not be transformed (a dependent hyperbolic pair, a pivot
    #: submatrix of B^* B not positive definite): the run fails on every rank.
    broken: bool = False
    #: A column below the normal range met one it is not orthogonal to.
    tiny_column: bool = False


class Holder(Protocol):
    """A rank's two stripes, wherever they live, as :func:`outermost_sweeps`
    moves and sweeps them in an outermost step: ``receive`` (post the
    receives of the stripes held next, Algorithm 2), ``sweep``, ``send``
    (post the sends of the stripes that leave and move those that stay,
    Algorithm 3), then, after all requests completed, ``settle`` (take the
    received stripes, Algorithm 4)."""

    def receive(self, step: ExchangeStep) -> list[Any]: ...

    def sweep(self, phase: str, step: int) -> LocalSweep: ...

    def send(self, step: ExchangeStep) -> list[Any]: ...

    def settle(self, step: ExchangeStep) -> None: ...


def outermost_sweeps(comm: Any, holder: Holder, *, phases: list[str], max_sweeps: int
                     ) -> DistributedStats:
    """The outermost sweeps of one rank (Algorithm 6 of the GSVD paper).

    The phases run in order, each until an outermost sweep without a big
    transformation on any rank, `max_sweeps` outermost sweeps in all (the
    last phase gets at least one); ``holder.sweep(phase, k)`` is step k's
    local sweep.  After every sweep the stripes are back where they were at
    its start.  Returns the statistics (the same on every rank but the
    seconds).
    """
    from mpi4py import MPI

    rank = comm.Get_rank()
    plan = exchange_plan(comm.Get_size())
    stats = DistributedStats(seconds={"sweeps": 0.0, "communication": 0.0})
    for phase in phases:
        last = phase == phases[-1]
        budget = max(max_sweeps - stats.sweeps, 1) if last else max_sweeps - stats.sweeps
        converged = False
        for _ in range(budget):
            big = broken = tiny = False
            count = 0
            for k, step in enumerate(plan):
                mine = step[rank]
                requests = holder.receive(mine)
                start = time.perf_counter()
                outcome = holder.sweep(phase, k) if not broken else LocalSweep(False, 0)
                stats.seconds["sweeps"] += time.perf_counter() - start
                big |= outcome.big
                broken |= outcome.broken
                tiny |= outcome.tiny_column
                count += outcome.count
                start = time.perf_counter()
                requests += holder.send(mine)
                MPI.Request.Waitall(requests)
                holder.settle(mine)
                stats.seconds["communication"] += time.perf_counter() - start
            # Algorithm 5: the sweep's counters over all ranks.
            start = time.perf_counter()
            totals = np.array([big, count, broken, tiny], dtype=np.int64)
            comm.Allreduce(MPI.IN_PLACE, totals, op=MPI.SUM)
            stats.seconds["communication"] += time.perf_counter() - start
            stats.sweeps += 1
            stats.blocked_sweeps += phase == "blocked"
            stats.rotations_per_sweep.append(int(totals[1]))
            stats.breakdown |= bool(totals[2])
            stats.tiny_column |= bool(totals[3])
            if stats.breakdown:
                return stats
            if not totals[0]:
                converged = True
                break
        stats.converged = converged and last
    stats.converged = stats.converged and stats.sweeps <= max_sweeps
    return stats


def cross_pairs(blocks: int) -> np.ndarray:
    """The block pairs across two stripes of `blocks` blocks each, one of each
    pair a step: step ``t`` pairs block ``i`` of the first stripe with block
    ``(i + t) mod blocks`` of the second (``blocks`` steps).

    In an outermost sweep, step 0 sweeps all pairs of the two stripes a
    rank holds (the single-device table), so the pairs within every stripe
    are met once; the later steps need only the pairs across, and a rank's
    work in a sweep falls from ``(2s - 1) (n/s)^2 / 2`` column pairs to
    ``n^2 / (2s)`` -- the ``n^2 / 2`` of one device, divided by the ranks.
    """
    first = np.arange(blocks)
    return np.stack([np.stack([first, blocks + (first + t) % blocks], axis=1)
                     for t in range(blocks)]).astype(np.int32)


class HostStripes:
    """Stripes held as host arrays (the GSVD's column-major F, G, Z, seen
    through their transposes): every stripe travels through MPI, even to
    its own rank, into receive buffers copied back by ``settle``."""

    def __init__(self, comm: Any, width: int, arrays: list[np.ndarray],
                 sweep: Callable[[str, int], LocalSweep]) -> None:
        self.comm, self.width, self.arrays = comm, width, arrays
        self.incoming = [np.empty_like(array) for array in arrays]
        self.sweep = sweep

    def receive(self, step: ExchangeStep) -> list[Any]:
        w = self.width
        return [self.comm.Irecv(array[slot * w:(slot + 1) * w], source=source,
                                tag=slot * len(self.arrays) + kind)
                for slot, source in enumerate(step.sources)
                for kind, array in enumerate(self.incoming)]

    def send(self, step: ExchangeStep) -> list[Any]:
        w = self.width
        return [self.comm.Isend(array[slot * w:(slot + 1) * w], dest=target,
                                tag=target_slot * len(self.arrays) + kind)
                for slot, (target, target_slot) in enumerate(step.destinations)
                for kind, array in enumerate(self.arrays)]

    def settle(self, step: ExchangeStep) -> None:
        for array, received in zip(self.arrays, self.incoming):
            array[...] = received


class StripeSweeps:
    """One rank's side of the one-sided method's outermost sweeps, its two
    stripes of G (and V) and their columns' peaks kept in its device's memory.

    An outermost step moves only what changes place: a stripe that goes to
    another rank is read back and sent (G, V, and its metadata with the
    peaks), one that stays moves between the two slots on the device, and a
    received one is written to its slot.  The blocked sweeps run on the
    device buffers as they are (the signature is a kernel argument); the
    pointwise kernels take the signature sorted, +1 first, so a pointwise
    sweep copies the columns on the device in that order (stable: fixed by
    the stripes alone) and back after the sweep.

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
    variant : {"pointwise", "bo", "offdiag", "fb", "stream"}
        The local sweep of an outermost step: blocked ("offdiag" or "bo")
        then pointwise, or pointwise only; after the first step of an
        outermost sweep a blocked sweep takes only the block pairs across the
        two stripes (:func:`cross_pairs`).
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
        self.rows, self.dtype, self.split = rows, np.dtype(dtype), split
        self.accumulate_v, self.variant = accumulate_v, variant
        self.peak_rounding = peak_rounding
        local = 2 * layout.width
        self.ldg = round_up(rows, ROW_ALIGNMENT)
        self.ldv = round_up(layout.columns, ROW_ALIGNMENT)
        itemsize = self.dtype.itemsize
        #: Bytes of one column of G and of V on the device, and of a peak.
        self.column_bytes = [itemsize * self.ldg] + (
            [itemsize * self.ldv] if accumulate_v else []) + [8]
        mf = cl.mem_flags
        ctx = queue.context
        self.buffers = [cl.Buffer(ctx, mf.READ_WRITE, size * local)
                        for size in self.column_bytes]
        self._spares: list[cl.Buffer] | None = None
        self.blocked = self.cross_pairs = None
        if variant != "pointwise":
            self.blocked = BlockedHSVD(queue, accumulate_v=accumulate_v,
                                       block_width=block_width, variant=variant)
            self.cross_pairs = cross_pairs(layout.width // block_width)
        self.pointwise = PointwiseHSVD(
            queue, accumulate_v=accumulate_v, layout="split" if split else "interleaved",
            strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal)
        #: Host metadata of the local columns (index, sign, -, d; the peaks
        #: live on the device and are filled in where stripes leave it).
        self.meta = np.zeros((local, META_COLUMNS))
        #: Host buffers of the stripes that leave and of those that arrive,
        #: a region per slot.
        self.outgoing = self.new_stripes()
        self.incoming = self.new_stripes()

    # -- buffers ------------------------------------------------------------

    def new_stripes(self, columns: int | None = None) -> RankStripes:
        """Uninitialized host arrays for `columns` columns (default both stripes)."""
        columns = 2 * self.layout.width if columns is None else columns
        part = np.dtype(np.float64) if self.split else self.dtype
        factor = 2 if self.split else 1
        g = np.empty((columns, factor * self.ldg), part)
        v = np.empty((columns, factor * self.ldv), part) if self.accumulate_v else None
        return RankStripes(g, v, np.empty((columns, META_COLUMNS)))

    def _host_arrays(self, stripes: RankStripes) -> list[np.ndarray]:
        """The host images of the device buffers, in their order (peaks last)."""
        return [stripes.g] + ([stripes.v] if self.accumulate_v else []) + [None]

    def _write(self, stripes: RankStripes, first: int, order: np.ndarray | None = None) -> None:
        """Columns ``first ..`` on the device from `stripes` (its rows
        ``order[0], order[1], ...`` when given)."""
        for buf, size, array in zip(self.buffers, self.column_bytes,
                                    self._host_arrays(stripes)):
            array = stripes.meta[:, 2] if array is None else array
            array = array if order is None else array[order]
            cl.enqueue_copy(self.queue, buf, np.ascontiguousarray(array),
                            dst_offset=first * size)

    def _read(self, stripes: RankStripes, first: int, order: np.ndarray | None = None) -> None:
        """Columns ``first ..`` of the device into `stripes` (device column
        ``i`` into row ``order[i]`` when given)."""
        for buf, size, array in zip(self.buffers, self.column_bytes,
                                    self._host_arrays(stripes)):
            target = stripes.meta[:, 2] if array is None else array
            if order is None and target.flags.c_contiguous:
                # straight into the stripe (its columns are contiguous rows of
                # the host image): no second copy of up to a stripe per step
                cl.enqueue_copy(self.queue, target, buf, src_offset=first * size)
                continue
            host = np.empty_like(target)
            cl.enqueue_copy(self.queue, host, buf, src_offset=first * size)
            if order is None:
                target[...] = host
            else:
                target[order] = host

    def _copy(self, source: list[cl.Buffer], source_column: int, target: list[cl.Buffer],
              target_column: int, count: int) -> None:
        """`count` columns from `source_column` of `source` to `target_column`
        of `target` (device buffers in the order of :attr:`buffers`)."""
        for src, dst, size in zip(source, target, self.column_bytes):
            cl.enqueue_copy(self.queue, dst, src, byte_count=size * count,
                            src_offset=source_column * size, dst_offset=target_column * size)

    def _spare(self) -> list[cl.Buffer]:
        """Device buffers for both stripes' columns beside :attr:`buffers`
        (made on first use: a swap of the two stripes, or a pointwise sweep
        whose signature is not already sorted)."""
        if self._spares is None:
            local = 2 * self.layout.width
            self._spares = [cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, size * local)
                            for size in self.column_bytes]
        return self._spares

    def _operands(self, signs: np.ndarray, buffers: list[cl.Buffer] | None = None) -> Operands:
        local = 2 * self.layout.width
        g_buf, *rest = self.buffers if buffers is None else buffers
        v_buf = rest[0] if self.accumulate_v else None
        return Operands(g_buf, self.ldg, self.rows, local, v_buf, self.ldv,
                        self.rows, local, signs.astype(np.int32), self.dtype, self.split,
                        peak=rest[-1], v_rows=self.layout.columns)

    def load(self, stripes: RankStripes) -> None:
        """Both stripes onto the device (and their metadata)."""
        self._write(stripes, 0)
        self.meta[...] = stripes.meta

    def unload(self) -> RankStripes:
        """Both stripes back from the device, with their metadata."""
        stripes = self.new_stripes()
        stripes.meta[...] = self.meta
        self._read(stripes, 0)
        return stripes

    # -- an outermost step (Holder) --------------------------------------------

    def receive(self, step: ExchangeStep) -> list[Any]:
        w = self.layout.width
        requests = []
        for slot, source in enumerate(step.sources):
            if source == self.rank:
                continue
            for kind, array in enumerate(self.incoming.parts()):
                if array is not None:
                    requests.append(self.comm.Irecv(
                        array[slot * w:(slot + 1) * w], source=source,
                        tag=slot * len(RankStripes.KINDS) + kind))
        return requests

    def sweep(self, phase: str, step: int) -> LocalSweep:
        """Outermost step `step`'s sweep of the two stripes, in place: a
        sweep of the single-device method, or in the blocked phase after
        the first step only the block pairs across the two stripes."""
        signs = self.meta[:, 1]
        if phase == "blocked":
            stats = self.blocked.run_operands(
                self._operands(signs), max_sweeps=1,
                outer_pairs=None if step == 0 else self.cross_pairs)
            return _outcome(stats.last_status, stats.rotations)
        # The pointwise kernels take the signature sorted, +1 first: the
        # columns are copied in that order (stable) to the spare buffers, in
        # runs of consecutive columns (a factor's signature is sorted, so a
        # stripe has at most one change of sign: a few runs), and back.
        order = np.argsort(-signs, kind="stable")
        runs = _runs(order)
        if len(runs) == 1:
            operands = self._operands(signs)
        else:
            for target, source, count in runs:
                self._copy(self.buffers, source, self._spare(), target, count)
            operands = self._operands(signs[order], self._spare())
        state = self.pointwise.run_operands(operands, max_sweeps=1, fetch=False,
                                            peak_rounding=self.peak_rounding)
        if len(runs) > 1:
            for target, source, count in runs:
                self._copy(self._spare(), target, self.buffers, source, count)
        self.meta[order, 3] = state.d
        return _outcome(state.stats.last_status, state.stats.rotations)

    def send(self, step: ExchangeStep) -> list[Any]:
        w = self.layout.width
        requests, moves = [], []
        # Read back every stripe that leaves first: one that stays may take
        # its slot next.
        for slot, (target, target_slot) in enumerate(step.destinations):
            if target == self.rank:
                if target_slot != slot:
                    moves.append((slot, target_slot))
                continue
            part = slice(slot * w, (slot + 1) * w)
            leaving = RankStripes(self.outgoing.g[part],
                                  None if self.outgoing.v is None else self.outgoing.v[part],
                                  self.outgoing.meta[part])
            leaving.meta[...] = self.meta[part]
            self._read(leaving, slot * w)
            for kind, array in enumerate(leaving.parts()):
                if array is not None:
                    requests.append(self.comm.Isend(
                        array, dest=target, tag=target_slot * len(RankStripes.KINDS) + kind))
        first, second = slice(0, w), slice(w, 2 * w)
        if len(moves) == 2:  # the two stripes exchange their slots
            self._copy(self.buffers, 0, self._spare(), 0, w)
            self._copy(self.buffers, w, self.buffers, 0, w)
            self._copy(self._spare(), 0, self.buffers, w, w)
            self.meta[first], self.meta[second] = self.meta[second].copy(), self.meta[first].copy()
        elif moves:  # one stays and changes slot; the other one left
            (slot, target_slot), = moves
            self._copy(self.buffers, slot * w, self.buffers, target_slot * w, w)
            self.meta[target_slot * w:(target_slot + 1) * w] = self.meta[slot * w:(slot + 1) * w]
        self.queue.finish()
        return requests

    def settle(self, step: ExchangeStep) -> None:
        w = self.layout.width
        for slot, source in enumerate(step.sources):
            if source == self.rank:
                continue
            part = slice(slot * w, (slot + 1) * w)
            arrived = RankStripes(self.incoming.g[part],
                                  None if self.incoming.v is None else self.incoming.v[part],
                                  self.incoming.meta[part])
            self._write(arrived, slot * w)
            self.meta[part] = arrived.meta

    def run(self, *, max_sweeps: int) -> DistributedStats:
        """The outermost sweeps (:func:`outermost_sweeps`) on the loaded
        stripes: blocked then pointwise (pointwise only for that variant)."""
        phases = ["blocked", "pointwise"] if self.blocked is not None else ["pointwise"]
        return outermost_sweeps(self.comm, self, phases=phases, max_sweeps=max_sweeps)


def _runs(order: np.ndarray) -> list[tuple[int, int, int]]:
    """``(target, source, count)`` runs of the permutation `order`
    (position ``target + k`` takes column ``source + k``, ``k < count``)."""
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(order)]])
    return [(int(a), int(order[a]), int(b - a)) for a, b in zip(starts, ends)]


def _outcome(status: int, count: int) -> LocalSweep:
    """A local sweep's report from its status word (OR over the work-groups)."""
    return LocalSweep(bool(status & Status.BIG), count, bool(status & Status.BROKEN),
                      bool(status & Status.TINY_COLUMN))


class HZStripeSweeps:
    """One rank's side of the GSVD's outermost sweeps: stripes of F, G and Z.

    The paper's own multi-GPU algorithm (Sect. 4): the local sweep is one
    sweep of the single-device implicit Hari-Zimmermann method
    (:func:`cljacobi.host.hz.hz_sweeps` with ``max_sweeps=1``: a blocked
    sweep, or a pointwise one in the finishing phase) on the joined stripes
    of F, G (the same rows, bordered by rank 0) and Z (all its rows), with
    the tolerance of the whole problem's `order` (what one device would use);
    blocked steps after the first of an outermost sweep take only the block
    pairs across the stripes (:func:`cross_pairs`).
    A pivot submatrix of ``B^* B`` that is not positive definite on any rank
    ends the run on every rank after that outermost sweep (``breakdown``;
    :attr:`failure` holds this rank's message).
    """

    def __init__(self, comm: Any, queue: cl.CommandQueue, *, width: int, prescaled: bool,
                 criterion: str, strategy: str, block_width: int, variant: str,
                 enhanced_dots: bool, order: int) -> None:
        self.comm, self.queue, self.width = comm, queue, width
        self.options = {"prescaled": prescaled, "criterion": criterion, "strategy": strategy,
                        "variant": variant, "enhanced_dots": enhanced_dots, "order": order}
        self.block_width = block_width
        self.cross_pairs = cross_pairs(width // block_width) if block_width else None
        self.failure: str | None = None

    def _local_sweep(self, F: np.ndarray, G: np.ndarray, Z: np.ndarray, phase: str,
                     step: int) -> LocalSweep:
        from .hz import hz_sweeps

        blocked = phase == "blocked"
        try:
            run = hz_sweeps(self.queue, F, G, Z, max_sweeps=1,
                            block_width=self.block_width if blocked else 0,
                            outer_pairs=self.cross_pairs if blocked and step else None,
                            **self.options)
        except np.linalg.LinAlgError as error:
            self.failure = str(error)
            return LocalSweep(False, 0, broken=True)
        F[...], G[...], Z[...] = run.F, run.G, run.Z
        return LocalSweep(run.big_transformations[-1] > 0, run.transformations[-1])

    def run(self, F: np.ndarray, G: np.ndarray, Z: np.ndarray, *, max_sweeps: int
            ) -> DistributedStats:
        """The outermost sweeps on the rank's column-major ``F``, ``G``, ``Z``
        (``2 width`` columns each), in place."""
        phases = ["blocked", "pointwise"] if self.block_width else ["pointwise"]
        holder = HostStripes(self.comm, self.width, [F.T, G.T, Z.T],
                             lambda phase, step: self._local_sweep(F, G, Z, phase, step))
        return outermost_sweeps(self.comm, holder, phases=phases, max_sweeps=max_sweeps)
