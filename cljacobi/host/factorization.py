"""Bunch-Parlett complete pivoting on the device (``templates/bunch_parlett.cl.mako``).

The same factorization as :func:`cljacobi.factorization.j_factorize`,
``M = G J G^*`` with 1x1 and diagonalized 2x2 pivots (Bunch & Parlett 1971;
Slapničar 1992), but the O(n^3) Schur-complement updates and the complete
pivot search run on the OpenCL device.  The pivot decisions stay on the
device too (a small step state every kernel reads), so the host enqueues the
steps in batches and reads the state once per batch; it steps in once, when
the remaining entries first fall below the normwise rank tolerance, to turn
the entrywise rank test on, which the kernels then decide on the device.  Real symmetric (float64) and complex Hermitian (complex128,
stored as interleaved (re, im) pairs on the device) input.

One pivot step is two launches: ``cjac_bp_pivot`` (one work-group: the pivot
decision from the partial maxima, the symmetric interchanges and the new
columns of G) and ``cjac_bp_update`` (the rank-1 or rank-2 update of the
trailing matrix, fused with the search for the next pivot).  With thousands
of steps the host's launch overhead, not the device, bounds the time of
small and medium factorizations, hence the few launches per step.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..factorization import BUNCH_PARLETT_ALPHA, JFactor, entry_noise_level, rank_noise_level
from .device import require_fp64
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, c_struct, int_arg, real_arg
from .sizes import check_power_of_two, round_up

__all__ = ["BunchParlettPlan", "BunchParlettSpec", "DeviceJFactor", "factor_on_device",
           "j_factorize_device"]

#: Side of the square work-group of the update kernel.
TILE = 16
#: Row tiles per work-group of the update kernel (one partial-maximum record
#: each strip of `UPDATE_STRIP` tiles, fewer records for the pivot kernel to
#: reduce).  Chosen with ``bench/tune_factorization.py`` (see
#: ``bench/README.md``, results/tune-factorization-H200-2026-11-22*.json).
UPDATE_STRIP = 8
#: Work-items of the one work-group of the pivot kernel (at most; a power of two).
PIVOT_WORK_GROUP = 1024
#: Pivot steps enqueued between two reads of the step state.
STEPS_PER_BATCH = 32


class _Word(enum.IntEnum):
    """Words of the step state (see ``bunch_parlett.cl.mako``)."""

    K = 0  # first position not yet eliminated
    S = 1  # size of the pivot last chosen
    P = 2
    Q = 3  # its positions, p <= q
    FLAG = 4  # a _Flag
    PENDING = 5  # the pivot chosen was not taken
    TESTING = 6  # the entrywise rank test is on


#: Words of the step state (with padding).
_STATE_WORDS = 8


class _Flag(enum.IntEnum):
    """Values of the state's flag word."""

    RUNNING = 0
    SMALL = 1  # below the normwise tolerance for the first time: the host steps in
    DONE = 2


#: One partial-maximum record (``cjac_bp_max`` of the template, rendered from it).
_RECORD_DTYPE = np.dtype([("off_value", np.float64), ("diag_value", np.float64),
                          ("off_row", np.int32), ("off_col", np.int32),
                          ("diag_index", np.int32), ("pad", np.int32)])


@dataclass(frozen=True)
class BunchParlettSpec:
    """Specialization parameters of ``templates/bunch_parlett.cl.mako``.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"`` (stored interleaved on the device).
    pivot_work_group : int
        Work-items of the pivot kernel's one work-group, a power of two.
    tile : int
        Side of the update kernel's square work-group.
    """

    family: ClassVar[str] = "bunch_parlett"
    dtype: str
    pivot_work_group: int
    tile: int = TILE

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(f"the device factorization takes float64 or complex128, "
                             f"not {self.dtype!r}")
        check_power_of_two("pivot_work_group", self.pivot_work_group)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of the two kernels, declared once."""
        elem, real = "__global cjac_elem *", "__global cjac_real *"
        update = KernelSignature("cjac_bp_update", (
            buffer("A", elem), int_arg("lda"), int_arg("n"),
            buffer("state", "__global const int *"),
            buffer("W", "__global const cjac_elem *"), int_arg("ldw"),
            buffer("signs", "__global const cjac_real *"),
            buffer("partial", "__global cjac_bp_max *"), int_arg("strip"),
            int_arg("row_groups"), buffer("scale", real),
            buffer("row_norms", "__global const cjac_real *"), real_arg("noise_level"),
        ))
        pivot = KernelSignature("cjac_bp_pivot", (
            buffer("A", elem), int_arg("lda"), int_arg("n"), buffer("state", "__global int *"),
            buffer("partial", "__global const cjac_bp_max *"), int_arg("strip"),
            int_arg("row_groups"), real_arg("rank_tol"), buffer("perm", "__global int *"),
            buffer("W", elem), int_arg("ldw"), buffer("G", elem), int_arg("ldg"),
            buffer("signs", real), buffer("scale", real), buffer("row_norms", real),
        ))
        return {sig.name: sig for sig in (update, pivot)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        constants = {f"CJAC_BP_{word.name}": int(word) for word in _Word}
        constants.update({f"CJAC_BP_{flag.name}": int(flag) for flag in _Flag})
        return {
            "real_ctype": "double", "complex_": self.dtype == "complex128",
            "layout": "interleaved", "tile": self.tile,
            "work_group_size": self.pivot_work_group, "alpha": BUNCH_PARLETT_ALPHA,
            "state_defines": c_defines(constants),
            "record_struct": c_struct("cjac_bp_max", _RECORD_DTYPE),
            "signatures": self.signatures,
        }


@dataclass(frozen=True)
class BunchParlettPlan:
    """Every size of one device factorization, decided once (:meth:`for_device`).

    Attributes
    ----------
    spec : BunchParlettSpec
        The program.
    n, lda : int
        Order, and the leading dimension of A and G on the device.
    tiles, row_groups : int
        Column tiles and row strips of the update grid of the whole matrix:
        one partial-maximum record each.
    strip : int
        Row tiles per update work-group.
    """

    spec: BunchParlettSpec
    n: int
    lda: int
    tiles: int
    row_groups: int
    strip: int

    @classmethod
    def for_device(cls, device: cl.Device, n: int, dtype: np.dtype) -> BunchParlettPlan:
        """The plan for an order-`n` `dtype` matrix on `device`, after checking
        that the device has fp64 and the memory (before any launch)."""
        require_fp64(device)
        dtype = np.dtype(dtype)
        pivot_group = min(PIVOT_WORK_GROUP, 1 << (device.max_work_group_size.bit_length() - 1))
        spec = BunchParlettSpec(dtype.name, pivot_group)
        tiles = -(-n // TILE)
        plan = cls(spec, n, round_up(n, 32), tiles, -(-tiles // UPDATE_STRIP), UPDATE_STRIP)
        item = dtype.itemsize
        check_global_memory(device, {
            "A": item * plan.lda * n, "G": item * plan.lda * n,
            "|M| for the rank test": 8 * plan.lda * n, "partial maxima": plan.record_bytes})
        return plan

    @property
    def record_bytes(self) -> int:
        return _RECORD_DTYPE.itemsize * self.tiles * self.row_groups

    def update_range(self, trailing: int) -> tuple[int, int] | None:
        """Global size of an update covering `trailing` rows and columns
        (None: nothing to update, nor to search)."""
        t = -(-trailing // TILE)
        return (-(-t // self.strip) * TILE, t * TILE) if t > 0 else None


@dataclass
class DeviceJFactor:
    """``M = G J G^*`` with G left on the device.

    Column ``order[j]`` of `buffer` (column-major, leading dimension `ld`,
    `n` rows in the original row order of M) is column j of G; the signs
    are sorted, the first `p` positive, as in :class:`JFactor`.
    """

    queue: cl.CommandQueue
    buffer: cl.Buffer
    ld: int
    n: int
    order: np.ndarray
    signs: np.ndarray
    p: int
    dtype: np.dtype

    @property
    def rank(self) -> int:
        return len(self.order)

    def to_host(self) -> JFactor:
        """The same factor with G in host memory (Fortran-ordered)."""
        columns = np.empty((self.n, self.ld), dtype=self.dtype)
        cl.enqueue_copy(self.queue, columns, self.buffer)
        self.queue.finish()
        G = columns[self.order, :self.n].T  # gathering rows is a contiguous copy
        return JFactor(G, self.signs, self.p)


def j_factorize_device(
    M: np.ndarray, queue: cl.CommandQueue, *, rank_tol: float | None = None
) -> JFactor:
    """Rank-revealing J-factorization ``M = G J G^*`` computed on the device.

    Parameters
    ----------
    M : numpy.ndarray
        Real symmetric or complex Hermitian ``n x n`` matrix; only its lower
        triangle is used (the imaginary parts of the diagonal are ignored).
        Real input is factored in float64, complex input in complex128.
    queue : pyopencl.CommandQueue
        Where to run; the device needs fp64.
    rank_tol : float, optional
        As in :func:`cljacobi.factorization.j_factorize`.

    Returns
    -------
    JFactor
        As :func:`cljacobi.factorization.j_factorize`: ``G`` (float64 or
        complex128, Fortran-contiguous) with the same pivots, rank and signs.
        Ties in the pivot search go to the smaller (column, row), so the
        result is deterministic; it may differ from the host version in the
        last bits (fused multiply-adds).
    """
    M = np.asarray(M)
    if M.shape[0] == 0:
        dtype = np.complex128 if np.iscomplexobj(M) else np.float64
        return JFactor(np.zeros((0, 0), dtype=dtype, order="F"), np.zeros(0, np.int8), 0)
    return factor_on_device(M, queue, rank_tol=rank_tol).to_host()


def factor_on_device(
    M: np.ndarray, queue: cl.CommandQueue, *, rank_tol: float | None = None
) -> DeviceJFactor:
    """:func:`j_factorize_device` with the factor G left in device memory.

    Parameters
    ----------
    M : numpy.ndarray
        Real symmetric or complex Hermitian ``n x n`` matrix, ``n >= 1`` (only
        its lower triangle is used).
    queue : pyopencl.CommandQueue
        Where to run, for the sweeps that follow on the same device.
    rank_tol : float, optional
        As in :func:`cljacobi.factorization.j_factorize`.

    Returns
    -------
    DeviceJFactor
        G in a device buffer, with its column order and signs.

    Notes
    -----
    Every pivot step is two launches, ``cjac_bp_pivot`` and
    ``cjac_bp_update``, after one search-only ``cjac_bp_update``; the host
    reads the step state once per `STEPS_PER_BATCH` steps, and steps in once
    more when the remaining entries first fall below the normwise tolerance.
    """
    M = np.asarray(M)
    dtype = np.dtype(np.complex128 if np.iscomplexobj(M) else np.float64)
    plan = BunchParlettPlan.for_device(queue.device, M.shape[0], dtype)
    elimination = _Elimination(queue, plan, M.astype(dtype, copy=False))
    return elimination.run(rank_tol)


class _Elimination:
    """The device buffers and the two kernels of one factorization."""

    def __init__(self, queue: cl.CommandQueue, plan: BunchParlettPlan, M: np.ndarray) -> None:
        self.queue, self.plan = queue, plan
        n, lda, item = plan.n, plan.lda, M.dtype.itemsize
        self.dtype = M.dtype
        ctx, mf = queue.context, cl.mem_flags

        def zeroed(nbytes: int) -> cl.Buffer:
            buf = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
            cl.enqueue_fill_buffer(queue, buf, np.zeros(1, np.int32), 0, nbytes)
            return buf

        # Column c of A is row c of M^T; padded to lda rows on the device by a
        # rectangular copy (no padded host copy).  The first update launch
        # (s = 0) copies the lower triangle onto the upper one (conjugated,
        # the diagonal made real), so only the lower triangle of M counts, as
        # on the host; it also fills `scale` with |m_ij|.
        rows = self._rows = np.ascontiguousarray(M.T)  # kept until the copy is done
        self.A = zeroed(item * n * lda)
        cl.enqueue_copy(queue, self.A, rows, buffer_origin=(0, 0), host_origin=(0, 0),
                        region=(item * n, n), buffer_pitches=(item * lda,),
                        host_pitches=(item * n,), is_blocking=False)
        self.G = zeroed(item * n * lda)
        self.signs = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
        self.perm = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                              hostbuf=np.arange(n, dtype=np.int32))
        # Records of work-groups above the diagonal are never written: zero
        # them, so that the first search's maxima can be read off all records.
        self.partial = zeroed(plan.record_bytes)
        # Step state (k, s, p, q, flag, pending, testing) = 0: nothing taken,
        # so the first update launch only searches for the first pivot.
        self.state = np.zeros(_STATE_WORDS, np.int32)
        self.state_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=self.state)
        # Kept for the life of the kernels (setting an argument does not hold the buffer).
        self.arguments = buffers = {
            "A": self.A, "lda": lda, "n": n, "state": self.state_buf,
            "W": cl.Buffer(ctx, mf.READ_WRITE, item * 2 * lda), "ldw": lda,
            "G": self.G, "ldg": lda, "signs": self.signs, "perm": self.perm,
            "partial": self.partial, "strip": plan.strip, "row_groups": plan.row_groups,
            # |m_ij| at the entries' current positions and the row norms of the
            # factor by position, for the entrywise rank test.
            "scale": cl.Buffer(ctx, mf.READ_WRITE, 8 * n * lda),
            "row_norms": zeroed(8 * n), "noise_level": entry_noise_level(n), "rank_tol": 0.0,
        }
        program = build_program(ctx, queue.device, plan.spec)
        signatures = plan.spec.signatures
        self.pivot_signature = signatures["cjac_bp_pivot"]
        self.update, self.pivot = (
            sig.kernel(program, **{a.name: buffers[a.name] for a in sig.args})
            for sig in (signatures["cjac_bp_update"], self.pivot_signature))

    def _enqueue_update(self, trailing: int) -> None:
        global_range = self.plan.update_range(trailing)
        if global_range is not None:
            cl.enqueue_nd_range_kernel(self.queue, self.update, global_range,
                                       (TILE, TILE))

    def _enqueue_steps(self, k: int) -> None:
        """A batch of pivot steps from position `k` (exact: all launched steps ran).

        Every step advances k by at least one, so the j-th step of the batch
        is at position k + j or later and its update covers at most
        n - (k + j) - 1 trailing rows; a step that finds the flag set is a
        no-op, and so are all after it.
        """
        pivot_range = (self.plan.spec.pivot_work_group,)
        for lower_k in range(k, min(k + STEPS_PER_BATCH, self.plan.n)):
            cl.enqueue_nd_range_kernel(self.queue, self.pivot, pivot_range, pivot_range)
            self._enqueue_update(self.plan.n - lower_k - 1)

    def _read_state(self) -> tuple[int, int]:
        cl.enqueue_copy(self.queue, self.state, self.state_buf)
        return int(self.state[_Word.K]), int(self.state[_Word.FLAG])

    def _first_search(self, rank_tol: float | None) -> bool:
        """Search for the first pivot and set the normwise tolerance: the given
        one, or ``n eps max|m_ij|`` over the lower triangle (the diagonal's
        imaginary parts dropped, as on the host) from the first search's
        partial maxima.  Returns whether the default (scaled) test applies."""
        self._enqueue_update(self.plan.n)
        scaled_test = rank_tol is None
        if scaled_test:
            records = np.empty(self.plan.tiles * self.plan.row_groups, _RECORD_DTYPE)
            cl.enqueue_copy(self.queue, records, self.partial)
            rank_tol = rank_noise_level(self.plan.n) * max(float(records["off_value"].max()), 0)
        self.pivot_signature.bind(self.pivot, rank_tol=max(rank_tol, 0.0))
        return scaled_test

    def _start_testing(self) -> None:
        """Turn the entrywise rank test on: no pivot was taken at k; one
        search-only update (the flag PENDING) drops the noise of the trailing
        matrix, and the next pivot launch decides again."""
        self.state[_Word.FLAG] = _Flag.RUNNING
        self.state[_Word.TESTING] = 1
        cl.enqueue_copy(self.queue, self.state_buf, self.state)
        self._enqueue_update(self.plan.n - int(self.state[_Word.K]))

    def run(self, rank_tol: float | None) -> DeviceJFactor:
        """Eliminate until the rank test stops; the factor left on the device."""
        n = self.plan.n
        scaled_test = self._first_search(rank_tol)
        while True:
            k, flag = self._read_state()
            if flag == _Flag.DONE or k >= n:
                break
            if flag == _Flag.SMALL:
                if not scaled_test:
                    break
                self._start_testing()
            self._enqueue_steps(k)
        signs = np.empty(n)
        cl.enqueue_copy(self.queue, signs, self.signs)
        self.queue.finish()
        signs = np.where(signs[:k] > 0, 1, -1).astype(np.int8)
        order = np.concatenate((np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)))
        return DeviceJFactor(self.queue, self.G, self.plan.lda, n, order.astype(np.int32),
                             signs[order], int(np.count_nonzero(signs > 0)), self.dtype)
