"""The pointwise one-sided hyperbolic Jacobi driver (GPUJACH1).

Novaković & Singer, "A GPU-based hyperbolic SVD algorithm", BIT 51 (2011),
Sect. 4, Algorithm 4.1: the factor G (and V) stay on the device for the whole
run; every parallel step is one launch of ``cjac_step`` with one work-group per
pivot pair; after every quasi-sweep the per-work-group status words are
OR-reduced on the device and the small packed diagonal (d, rho, j) is sorted.
The program, the work-group size and every buffer size come from one
:class:`~cljacobi.host.pointwise_plan.PointwisePlan`, decided and checked
against the device before the first launch; the kernels' arguments are bound
by name to the signatures its spec declares.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pyopencl as cl

from ..strategies import STRATEGIES, step_table
from .certificate import FinishingCertificate
from .device import require_fp64
from .diagonal import sort_diagonal
from .launch import enqueue_kernel, set_scalar_arg
from .operands import Operands, download, upload
from .pointwise_plan import PointwisePlan
from .programs import COMPLEX_LAYOUTS, build_program
from .sweeps import RunStats, sweep_until_converged

__all__ = [
    "BLOCKED_COMPLEX_LAYOUT",
    "FINISHINGS",
    "FINISHING_ENV",
    "HSVDState",
    "PointwiseHSVD",
    "RunStats",
    "complex_layout",
    "disjoint_rounds",
    "finishing",
]

#: Environment variable that selects the complex storage layout when the
#: caller passes none: ``interleaved`` or ``split`` (for benchmarking both).
LAYOUT_ENV = "CLJACOBI_COMPLEX_LAYOUT"

#: Environment variable that selects how the pointwise sweeps after a blocked
#: phase go (:func:`finishing`).
FINISHING_ENV = "CLJACOBI_FINISHING"
FINISHINGS = ("certified", "sweeps")

#: Default complex storage.  The GSVD paper (Novaković & Singer, Sect. 3.1)
#: split real and imaginary parts for two reasons: CUDA C had no native
#: complex type (so all data were kept in real variables), and one component
#: of successive elements can then be read or written contiguously.  Here
#: OpenCL has the native vector type double2, and every access of the
#: pointwise kernels needs both components: interleaved storage reads an
#: element with one 16-byte load and one address stream per column, split
#: storage with two 8-byte loads from two streams ld apart.  Both move the
#: same bytes and give bitwise identical results, so the choice is by
#: measurement: on an NVIDIA H200 through NVIDIA's OpenCL (one process, the
#: 2011 paper's spectra, bench/results/eig-complex-H200-2026-11-22.json),
#: seconds of the sweeps, interleaved vs split: n = 512: 0.128 vs 0.105,
#: n = 1024: 0.185 vs 0.183, n = 2048: 1.051 vs 1.028; complex svd, n = 1024:
#: 0.587 vs 0.587 (bench/results/svd-complex-H200-2026-11-22.json).  Split
#: is never slower, so it is the default (two coalesced 8-byte streams per
#: column serve the memory system at least as well as one 16-byte stream).
#: ``CLJACOBI_COMPLEX_LAYOUT`` or the private ``_layout=`` keyword select either.
DEFAULT_COMPLEX_LAYOUT = "split"


#: Default complex storage when the blocked kernels run first (the pointwise
#: sweeps that finish then use it too, on the same buffers).  The blocked
#: kernels keep complex elements whole (double2) in local memory, so the
#: split layout costs them two loads per element from two streams; measured
#: on the H200 (bench/results/eig-complex-H200-2026-11-22-blocked.json),
#: seconds of eig_indefinite, interleaved vs split: n = 2048, bo:16 0.837 vs
#: 0.938, bo:8 0.747 vs 0.875; n = 4096, bo:16 3.23 vs 3.77, bo:8 4.21 vs 5.69.
BLOCKED_COMPLEX_LAYOUT = "interleaved"

#: A certified sweep rotates its candidates in rounds only where they are at
#: most this many times r pairs (:meth:`PointwiseHSVD._certified_sweep`;
#: their rounds are laid out on the host) and their rounds fewer than a full
#: sweep's steps; else it is a full pointwise sweep.
CERTIFIED_CANDIDATES_PER_COLUMN = 8


def finishing() -> str:
    """How the pointwise sweeps after a blocked phase go: ``"certified"``
    (the default; :class:`~cljacobi.host.certificate.FinishingCertificate`)
    or ``"sweeps"`` (every sweep a full pointwise sweep), from
    ``$CLJACOBI_FINISHING``, for example to compare the two on one device."""
    value = os.environ.get(FINISHING_ENV, "").strip().lower() or "certified"
    if value not in FINISHINGS:
        raise ValueError(f"{FINISHING_ENV} must be one of {FINISHINGS}, not {value!r}")
    return value


def disjoint_rounds(pairs: np.ndarray) -> list[np.ndarray]:
    """`pairs` (``c x 2``) in rounds of pairs with no index in common: each
    pair in the round after the last one that holds either of its indices,
    so that every index meets its pairs in the order given (the rounds
    rotate the pairs as one after the other in that order would), each
    round in that order.

    >>> [r.tolist() for r in disjoint_rounds(np.array([[0, 1], [0, 2], [3, 4], [1, 2]]))]
    [[[0, 1], [3, 4]], [[0, 2]], [[1, 2]]]
    """
    if not len(pairs):
        return []
    next_round = [0] * (int(pairs.max()) + 1)  # by index: the round after its last
    round_of = []
    for i, j in pairs.tolist():
        q = max(next_round[i], next_round[j])
        round_of.append(q)
        next_round[i] = next_round[j] = q + 1
    rounds = np.array(round_of)
    # the pairs grouped by round, each round in the order given
    ends = np.cumsum(np.bincount(rounds))[:-1]
    return np.split(pairs[np.argsort(rounds, kind="stable")], ends)


def complex_layout(layout: str | None = None, *, blocked: bool = False) -> str:
    """The complex storage layout: `layout`, else ``$CLJACOBI_COMPLEX_LAYOUT``,
    else the default of the run (:data:`BLOCKED_COMPLEX_LAYOUT` when blocked
    sweeps come first, else :data:`DEFAULT_COMPLEX_LAYOUT`)."""
    if layout is None:
        default = BLOCKED_COMPLEX_LAYOUT if blocked else DEFAULT_COMPLEX_LAYOUT
        layout = os.environ.get(LAYOUT_ENV, "").strip().lower() or default
    if layout not in COMPLEX_LAYOUTS:
        raise ValueError(f"complex layout must be one of {COMPLEX_LAYOUTS}, not {layout!r}")
    return layout


class HSVDState(NamedTuple):
    """The result of a run, back on the host, border stripped.

    G holds U Sigma in the original column order (a Fortran-ordered array:
    columns contiguous, as on the device), V holds V^{-T} of eq. (2.1)
    (so that ``G_final = G_initial @ V``), `d` the squared column norms and
    `signs` the signature, both in the original column order.  `positions`
    is rho of the final packed diagonal: the physical column (border
    included) at each position, e.g. to see how a sweep ordered the norms.
    """

    G: np.ndarray
    V: np.ndarray | None
    d: np.ndarray
    signs: np.ndarray
    stats: RunStats
    positions: np.ndarray | None = None
    #: The device operands, when G and V were left there (``fetch=False``).
    operands: Operands | None = None
    #: The physical columns the finishing sweeps may have changed after
    #: ``on_settled`` saw `d` and `signs` (:meth:`PointwiseHSVD.run_operands`):
    #: the columns of the certified sweeps' candidates; None where it was not
    #: called or a full sweep ran (any column may have changed).
    unsettled_columns: np.ndarray | None = None


class PointwiseHSVD:
    """Device buffers and the sweep loop of one pointwise hyperbolic Jacobi run.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        An in-order queue on a device with fp64.
    accumulate_v : bool
        Also accumulate V^{-T} (needed for the right singular vectors).
    work_group_size : int, optional
        Force a work-group size (a power of two); default by device and size.
    layout : {"interleaved", "split"}, optional
        Storage of complex G and V on the device (see ``arith.cl.mako``);
        default :func:`complex_layout`.  Ignored for real data.
    single : bool, optional
        Run the float32/complex64 kernels (for devices without fp64); the
        default runs float64/complex128 and needs fp64.
    strategy : {"mm", "me", "ring", "round-robin"}
        Parallel pivot strategy (:mod:`cljacobi.strategies`).  ``"mm"`` runs
        the closed-form device stepper, quasi-sweeps of ``r`` steps; the
        others upload their step table once per run (both tables for
        ``"ring"``, whose forward and backward sweeps alternate) and run
        sweeps of ``r - 1`` steps.
    rotation : {1, 2, 3}
        Rotation algorithm of Zhou & Brent (1997), Sect. 2 (see
        :func:`cljacobi.options.resolve_options`).
    sort_diagonal : bool
        Sort_Diagonal of Algorithm 4.1 before the first and after every sweep.
    """

    def __init__(
        self,
        queue: cl.CommandQueue,
        *,
        accumulate_v: bool,
        work_group_size: int | None = None,
        layout: str | None = None,
        single: bool = False,
        strategy: str = "mm",
        rotation: int = 1,
        sort_diagonal: bool = True,
    ) -> None:
        self.queue = queue
        self.device = queue.device
        self.single = single
        if not single:
            require_fp64(self.device)
        self.accumulate_v = accumulate_v
        self.requested_work_group_size = work_group_size
        self.layout = complex_layout(layout)
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; allowed: {STRATEGIES}")
        if rotation not in (1, 2, 3):
            raise ValueError(f"unknown rotation {rotation!r}; allowed: 1, 2, 3")
        self.strategy = strategy
        self.rotation = int(rotation)
        self.sort_diagonal = bool(sort_diagonal)

    def _dtype(self, complex_: bool) -> np.dtype:
        if self.single:
            return np.dtype(np.complex64 if complex_ else np.float32)
        return np.dtype(np.complex128 if complex_ else np.float64)

    def upload(self, G: np.ndarray, signs: np.ndarray, *, column_multiple: int = 2) -> Operands:
        """G (m x r, `signs` sorted, +1 first) on the device in this driver's
        precision and complex layout, its columns bordered to a multiple of
        `column_multiple` (even); V the identity when accumulated."""
        complex_ = np.iscomplexobj(G)
        return upload(
            self.queue, G, signs, accumulate_v=self.accumulate_v,
            column_multiple=column_multiple, dtype=self._dtype(complex_),
            split=complex_ and self.layout == "split",
        )

    def run(self, G: np.ndarray, signs: np.ndarray, *, max_sweeps: int,
            peak_rounding: bool = True) -> HSVDState:
        """Orthogonalize the columns of `G` (m x r, float64 or complex128) with signature `signs`.

        `signs` must be sorted, +1 first.  Returns after convergence or after
        `max_sweeps` quasi-sweeps (``stats.converged`` tells which).
        """
        return self.run_operands(self.upload(G, signs), max_sweeps=max_sweeps,
                                 peak_rounding=peak_rounding)

    def run_operands(
        self, operands: Operands, *, max_sweeps: int, fetch: bool = True,
        peak_rounding: bool = True, certificate: FinishingCertificate | None = None,
        on_settled: Callable[[np.ndarray, np.ndarray, Operands], Callable[[], None] | None]
        | None = None,
    ) -> HSVDState:
        """The sweeps on operands already on the device (an even number of
        columns, V present if accumulated), then the result on the host;
        with ``fetch=False`` G and V stay on the device (``state.operands``;
        ``state.G`` and ``state.V`` are None).

        ``peak_rounding`` says that every column carries rounding of its
        largest norm so far times eps (true of a factor whose columns carry its
        scale; False for one whose rows may be graded): a remainder of dependent
        columns of one sign below it is zeroed, and a pair of opposite signs
        whose difference is below it is dependent (``cjac_step``).

        With the `certificate` of a blocked phase that ran before (a table
        strategy, rotation algorithm 1 or 2), every sweep first finds the pairs that may fail the
        relative orthogonality test and, when there are at most
        :data:`CERTIFIED_CANDIDATES_PER_COLUMN` r of them in fewer rounds than
        a full sweep has steps, rotates only those (:meth:`_certified_sweep`); ``stats.certified``
        counts such sweeps.  ``CLJACOBI_FINISHING=sweeps`` turns this off.

        ``on_settled(d, signs, operands)``, where certified sweeps follow,
        is called once before the first of them is enqueued, with the squared
        column norms and the signature as the state would hold them if no
        sweep rotated again: a caller may enqueue commands that read the
        operands as they are then, and return a callable, which is called
        once the first certified sweep's certificate is enqueued (to start
        the host's side of them beside the device's work, not beside the
        host's launches); ``state.unsettled_columns`` then names the columns
        that changed since, at most."""
        seconds = {"transfer": 0.0, "sweeps": 0.0, "sort": 0.0}
        ops = operands
        complex_ = ops.dtype.kind == "c"
        dtype = self._dtype(complex_)
        split = complex_ and self.layout == "split"
        if ops.columns % 2 or ops.dtype != dtype or ops.split != split or (
                self.accumulate_v and ops.v is None):
            raise ValueError(
                f"pointwise operands must be {dtype.name}"
                f"{' (split)' if split else ''} with an even number of columns"
                + (" and V" if self.accumulate_v else "")
            )
        if np.any(np.diff(ops.column_signs) > 0):
            raise ValueError("the pointwise kernels need the signature sorted, +1 first")
        plan = PointwisePlan.for_operands(
            self.device, ops, accumulate_v=self.accumulate_v, layout=self.layout,
            strategy=self.strategy, rotation=self.rotation,
            work_group_size=self.requested_work_group_size, context=self.queue.context)
        program = build_program(self.queue.context, self.device, plan.spec)
        signatures = plan.spec.signatures
        diag_dtype, wg, slots = plan.spec.diag_dtype, plan.work_group_size, plan.slots
        sizes = plan.buffers
        r_pad, r = plan.columns, plan.r

        start = time.perf_counter()
        mf = cl.mem_flags
        ctx = self.queue.context
        d_buf = cl.Buffer(ctx, mf.READ_WRITE, sizes["packed diagonal"])
        # the largest squared norm of every physical column so far (cjac_step),
        # continued from a blocked phase that ran before
        keep_peaks = ops.peak is not None
        if not keep_peaks:
            ops.peak = cl.Buffer(ctx, mf.READ_WRITE, sizes["column peaks"])
        stepper_buf = cl.Buffer(ctx, mf.READ_WRITE, sizes["stepper"])
        zeros = np.zeros(slots, dtype=np.int32)
        status_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        rotations_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
        summary_buf = cl.Buffer(ctx, mf.READ_WRITE, 8)
        # Every argument of the three kernels by name; each kernel takes those
        # its signature declares (V, the stepper or the step table, the real
        # column count by the specialization).
        values = {
            "G": ops.g, "ldg": plan.ldg, "m": plan.rows, "V": ops.v, "ldv": ops.ldv,
            "mv": ops.v_rows, "D": d_buf, "peak": ops.peak, "keep_peaks": keep_peaks,
            "peak_rounding": peak_rounding, "stepper": stepper_buf, "pairs": None,
            "step": 0, "status": status_buf, "rotations": rotations_buf, "r": r_pad,
            "p": ops.p, "real_columns": r,  # columns >= r are the border
            "slots": slots, "summary": summary_buf,
        }
        step_signature = signatures["cjac_step"]

        def step_kernel(pairs: cl.Buffer | None) -> cl.Kernel:
            """``cjac_step`` bound to `values` and to the step table `pairs`."""
            return step_signature.kernel(program, **{
                arg.name: pairs if arg.name == "pairs" else values[arg.name]
                for arg in step_signature.args})

        full: dict = {}

        def full_sweeps() -> dict:
            """The full sweeps' step kernel, bound to the strategy's tables
            (uploaded here), their steps and count; made at the first use."""
            if not full:
                tables, steps = self._step_tables(r_pad)
                pairs_buf = None
                if tables is not None:
                    pairs_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=tables)
                full.update(
                    kernel=step_kernel(pairs_buf),
                    steps=steps, pairs=pairs_buf,  # kept alive with its kernel
                    # Forward and backward ring sweeps alternate (Zhou & Brent 1997, Sect. 4).
                    tables=1 if tables is None else tables.shape[0] // steps,
                    # The table step is set before every launch, at its
                    # position found by name once (as the blocked driver does).
                    step=step_signature.position("step") if tables is not None else None)
            return full

        # With a finishing certificate the full sweeps' tables (r - 1 steps
        # of r/2 pairs) are built and uploaded only if a full sweep runs.
        certify = certificate is not None and self.takes_certificate
        if not certify:
            full_sweeps()
        self.queue.finish()
        seconds["transfer"] += time.perf_counter() - start

        precompute, reduce_status = (
            sig.kernel(program, **{arg.name: values[arg.name] for arg in sig.args})
            for sig in (signatures["cjac_precompute"], signatures["cjac_sweep_status"]))
        global_size = (slots * wg,)
        local_size = (wg,)
        cl.enqueue_nd_range_kernel(self.queue, precompute, global_size, local_size)

        diagonal = np.empty(r_pad, dtype=diag_dtype)
        if self.sort_diagonal:
            seconds["sort"] += self._sort(d_buf, diagonal)

        def enqueue_full_sweep(sweep: int) -> None:
            sweeps = full_sweeps()
            step, position, steps = sweeps["kernel"], sweeps["step"], sweeps["steps"]
            first = (sweep % sweeps["tables"]) * steps
            for s in range(steps):
                if position is not None:
                    set_scalar_arg(step, position, np.int32(first + s))
                enqueue_kernel(self.queue, step, global_size, local_size)

        def by_column(packed: np.ndarray) -> np.ndarray:
            """The packed diagonal's entries by physical column (rho undone)."""
            entries = np.empty(r_pad, dtype=diag_dtype)
            entries[packed["rho"]] = packed
            return entries

        enqueue_sweep = enqueue_full_sweep
        certified = 0
        # The columns the sweeps after on_settled changed (None: any column).
        unsettled: list[np.ndarray] | None = None
        launched = None  # on_settled's callable, for the first certificate
        if certify and on_settled is not None:
            if not self.sort_diagonal:  # else the sort left it in `diagonal`
                cl.enqueue_copy(self.queue, diagonal, d_buf)
            settled = by_column(diagonal)
            launched = on_settled(settled["d"][:r].copy(), settled["j"][:r].astype(np.int8), ops)
            unsettled = []
        if certify:
            rounds_signature = signatures["cjac_round_positions"]
            position_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * r_pad)
            table_buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * r_pad)  # r_pad / 2 int2

            def rounds_of(members: cl.Buffer) -> Callable[[int, int], None]:
                """What enqueues round ``members[first:first + count]`` of a
                certified sweep: ``cjac_round_positions`` lays it out in
                the table, ``cjac_step`` rotates it."""
                positions = rounds_signature.kernel(
                    program, D=d_buf, r=r_pad, members=members, first=0, count=0,
                    position=position_buf, table=table_buf)
                step = step_kernel(table_buf)

                def enqueue_round(first: int, count: int) -> None:
                    rounds_signature.bind(positions, first=first, count=count)
                    enqueue_kernel(self.queue, positions, (wg,), (wg,))
                    enqueue_kernel(self.queue, step, (count * wg,), (wg,))

                return enqueue_round

            def enqueue_sweep(sweep: int) -> None:
                nonlocal certified, unsettled, launched
                pairs = self._certified_sweep(certificate, rounds_of, r_pad, launched)
                launched = None
                if pairs is not None:
                    certified += 1
                    if unsettled is not None:
                        unsettled.append(pairs.ravel())
                else:
                    unsettled = None
                    enqueue_full_sweep(sweep)

        sort_in_sweeps = 0.0

        def sort_after_sweep() -> None:
            nonlocal sort_in_sweeps
            sort_in_sweeps += self._sort(d_buf, diagonal)

        sweep_start = time.perf_counter()
        stats = sweep_until_converged(
            self.queue, max_sweeps=max_sweeps, enqueue_sweep=enqueue_sweep,
            reduce_status=reduce_status, work_group_size=wg, summary_buf=summary_buf,
            after_sweep=sort_after_sweep if self.sort_diagonal else None)
        seconds["sweeps"] += time.perf_counter() - sweep_start - sort_in_sweeps
        seconds["sort"] += sort_in_sweeps
        stats.certified = certified

        cl.enqueue_copy(self.queue, diagonal, d_buf)
        G, V = download(self.queue, ops) if fetch else (None, None)
        seconds["transfer"] += ops.transfer_seconds
        stats.seconds = seconds

        final = by_column(diagonal)
        return HSVDState(
            G=G,
            V=V,
            d=final["d"][:r].copy(),
            signs=final["j"][:r].astype(np.int8),
            stats=stats,
            positions=diagonal["rho"].copy(),
            operands=None if fetch else ops,
            unsettled_columns=None if unsettled is None else np.unique(
                np.concatenate([np.empty(0, np.int64), *unsettled])),
        )

    @property
    def takes_certificate(self) -> bool:
        """Whether the sweeps after a blocked phase are certified ones when
        it leaves a certificate (:meth:`run_operands`).  Rotation algorithm
        3 moves the columns' data between physical columns, so the
        certificate's pairs of columns would not name the same vectors after
        a round; the modified modulus stepper reads no table."""
        return self.strategy != "mm" and self.rotation != 3 and finishing() == "certified"

    def _certified_sweep(
        self, certificate: FinishingCertificate,
        rounds_of: Callable[[cl.Buffer], Callable[[int, int], None]], r_pad: int,
        launched: Callable[[], None] | None = None,
    ) -> np.ndarray | None:
        """Enqueue a certified sweep and return its candidates (``c x 2``
        physical columns); None (no rotation enqueued) where a full sweep is
        cheaper.  `launched` goes to the certificate
        (:meth:`FinishingCertificate.candidates`).

        The certificate's candidates, at most
        :data:`CERTIFIED_CANDIDATES_PER_COLUMN` r pairs of physical columns,
        go to ``cjac_step`` in rounds of disjoint pairs, one launch a round
        (:func:`disjoint_rounds`: every column meets its pairs in the
        certificate's order), the same rounds on every run.  Where the rounds
        are as many as a full sweep's steps (r - 1) or more, the sweep is a
        full one instead, which judges every pair in that many launches.  ``cjac_step``
        takes positions in the packed diagonal (i < j, as every table of the
        strategies has them), and rotation algorithm 2 exchanges the entries
        of a pair's positions: before each round ``cjac_round_positions``
        finds its columns at their positions after the rounds before it, on
        the device, so that the rounds follow each other without the host.
        Every pair outside the rounds passed the test from its fresh Gram
        entries, so the sweep judges every pair once, as a pointwise sweep
        does; the sweep loop then reads the rounds' status words as those of
        any sweep.
        """
        pairs = certificate.candidates(launched)
        if len(pairs) > CERTIFIED_CANDIDATES_PER_COLUMN * r_pad:
            return None
        if not len(pairs):
            return pairs
        rounds = disjoint_rounds(pairs)
        if len(rounds) >= r_pad - 1:
            return None
        members = cl.Buffer(self.queue.context,
                            cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=np.ascontiguousarray(np.concatenate(rounds), dtype=np.int32))
        enqueue_round = rounds_of(members)
        first = 0
        for round_pairs in rounds:
            enqueue_round(first, len(round_pairs))
            first += len(round_pairs)
        return pairs

    def _step_tables(self, r_pad: int) -> tuple[np.ndarray | None, int]:
        """The step tables to upload (None for MM) and the steps per sweep.

        Returns an ``int32`` array of shape ``(tables * steps, r_pad // 2, 2)``
        holding position pairs ``i < j``: one sweep's table, or for ``"ring"``
        the forward sweep's followed by the backward sweep's.  With rotation
        algorithms 2 and 3 the kernel gives the larger eigenvalue estimate to
        position ``i``; for the ring that is its compare-exchange direction
        (``larger_first`` is all True, :func:`cljacobi.strategies.step_table`).
        """
        if self.strategy == "mm":
            return None, r_pad
        sweeps = 2 if self.strategy == "ring" else 1
        tables = [step_table(self.strategy, r_pad, sweep=q) for q in range(sweeps)]
        for table in tables:
            if table.larger_first is not None and not table.larger_first.all():
                raise RuntimeError(  # pragma: no cover - guarded by test_strategies
                    f"{self.strategy} table wants the larger norm second in some pairs"
                )
        pairs = np.ascontiguousarray(np.concatenate([t.pairs for t in tables]), dtype=np.int32)
        return pairs, tables[0].steps

    def _sort(self, d_buf: cl.Buffer, diagonal: np.ndarray) -> float:
        """Sort_Diagonal of Algorithm 4.1 on the host; returns the seconds spent."""
        start = time.perf_counter()
        cl.enqueue_copy(self.queue, diagonal, d_buf)
        diagonal[:] = sort_diagonal(diagonal)
        cl.enqueue_copy(self.queue, d_buf, diagonal)
        self.queue.finish()
        return time.perf_counter() - start
