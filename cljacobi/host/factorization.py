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

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..factorization import JFactor, rank_noise_level
from .device import require_fp64
from .limits import check_global_memory
from .programs import KernelSpec, build_program

__all__ = ["DeviceJFactor", "factor_on_device", "j_factorize_device"]

#: Side of the square work-group of the update kernel.
TILE = 16
#: Row tiles per work-group of the update kernel (one partial-maximum record
#: each strip of `UPDATE_STRIP` tiles, fewer records for the pivot kernel to reduce).
#: With PIVOT_WORK_GROUP, measured on an NVIDIA H200 (bench/tune_factorization.py,
#: results/tune-factorization-H200-2026-11-22*.json), device seconds of the
#: update and pivot kernels at n = 8192: strip 4 / 512 items 1.077 + 0.389,
#: 8 / 512 1.019 + 0.334, 16 / 512 1.038 + 0.297, 4 / 1024 1.076 + 0.314,
#: 8 / 1024 1.017 + 0.282 (at n = 4096: 0.153 + 0.098 against 0.149 + 0.087).
UPDATE_STRIP = 8
#: Work-items of the one work-group of the pivot kernel (at most; a power of two).
PIVOT_WORK_GROUP = 1024
#: Pivot steps enqueued between two reads of the step state.
STEPS_PER_BATCH = 32
#: The step state of ``bunch_parlett.cl.mako``: k, s, p, q, flag, pending, testing
#: (and padding).
_STATE_WORDS = 8
_K, _FLAG, _TESTING = 0, 4, 6
_RUNNING, _SMALL, _DONE = 0, 1, 2
#: ``cjac_bp_max`` of the template, as numpy reads it.
_RECORD_DTYPE = np.dtype([("off_value", np.float64), ("diag_value", np.float64),
                          ("off_row", np.int32), ("off_col", np.int32),
                          ("diag_index", np.int32), ("significant", np.int32)])
#: Bytes of one partial-maximum record.
_MAX_RECORD = _RECORD_DTYPE.itemsize


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


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
    reads the step state once per `STEPS_PER_BATCH` steps.
    """
    device = queue.device
    require_fp64(device)
    M = np.asarray(M)
    dtype = np.dtype(np.complex128 if np.iscomplexobj(M) else np.float64)
    M = M.astype(dtype, copy=False)
    n = M.shape[0]
    lda = _round_up(n, 32)
    tiles = -(-n // TILE)
    # Records of the update kernel: tiles column tiles x row_groups strips.
    row_groups = -(-tiles // UPDATE_STRIP)
    item = dtype.itemsize
    check_global_memory(device, {"A": item * lda * n, "G": item * lda * n,
                                 "|M| for the rank test": 8 * lda * n,
                                 "partial maxima": _MAX_RECORD * tiles * row_groups})
    pivot_group = min(PIVOT_WORK_GROUP, 1 << (device.max_work_group_size.bit_length() - 1))
    spec = KernelSpec("bunch_parlett", str(dtype), pivot_group, False, tile_rows=TILE)
    program = build_program(queue.context, device, spec)

    # Column c of A is row c of M^T; padded to lda rows on the device by a
    # rectangular copy (no padded host copy).  The first update launch (s = 0)
    # copies the lower triangle onto the upper one (conjugated, the diagonal
    # made real), so only the lower triangle of M counts, as on the host.
    rows = np.ascontiguousarray(M.T)  # no copy for a Fortran-ordered M
    noise_level = rank_noise_level(n)
    scaled_test = rank_tol is None

    mf = cl.mem_flags
    ctx = queue.context
    zero = np.zeros(1, dtype)
    a_buf = cl.Buffer(ctx, mf.READ_WRITE, item * n * lda)
    cl.enqueue_fill_buffer(queue, a_buf, zero, 0, item * n * lda)
    cl.enqueue_copy(queue, a_buf, rows, buffer_origin=(0, 0), host_origin=(0, 0),
                    region=(item * n, n), buffer_pitches=(item * lda,),
                    host_pitches=(item * n,), is_blocking=False)
    g_buf = cl.Buffer(ctx, mf.READ_WRITE, item * n * lda)
    cl.enqueue_fill_buffer(queue, g_buf, zero, 0, item * n * lda)
    w_buf = cl.Buffer(ctx, mf.READ_WRITE, item * 2 * lda)
    perm = np.arange(n, dtype=np.int32)
    perm_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=perm)
    signs_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
    # |m_ij| at the entries' current positions (filled by the first update
    # launch) and the row norms of the factor by position, for the rank test.
    scale_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * n * lda)
    row_norms_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
    cl.enqueue_fill_buffer(queue, row_norms_buf, np.zeros(1), 0, 8 * n)
    partial_buf = cl.Buffer(ctx, mf.READ_WRITE, _MAX_RECORD * tiles * row_groups)
    # Records of work-groups above the diagonal are never written: zero them,
    # so that the first search's maxima can be read off all records.
    cl.enqueue_fill_buffer(queue, partial_buf, np.zeros(1, np.int32), 0,
                           _MAX_RECORD * tiles * row_groups)
    # Step state (k, s, p, q, flag, pending) = 0: nothing taken, so the first
    # update launch only searches for the first pivot.
    state = np.zeros(_STATE_WORDS, np.int32)
    state_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=state)
    i32 = np.int32

    # Arguments set once: every launch finds k and s in the state.
    pivot = cl.Kernel(program, "cjac_bp_pivot")
    pivot.set_args(a_buf, i32(lda), i32(n), state_buf, partial_buf, i32(UPDATE_STRIP),
                   i32(row_groups), np.float64(0.0), perm_buf, w_buf,
                   i32(lda), g_buf, i32(lda), signs_buf, scale_buf, row_norms_buf)
    update = cl.Kernel(program, "cjac_bp_update")
    update.set_args(a_buf, i32(lda), i32(n), state_buf, w_buf, i32(lda), signs_buf,
                    partial_buf, i32(UPDATE_STRIP), i32(row_groups), scale_buf, row_norms_buf,
                    np.float64(noise_level))
    pivot_range = (pivot_group,)
    tile_range = (TILE, TILE)

    def update_range(trailing: int) -> tuple[int, int] | None:
        """Global size of an update covering `trailing` rows and columns."""
        t = -(-trailing // TILE)
        return (-(-t // UPDATE_STRIP) * TILE, t * TILE) if t > 0 else None

    # The update of the pivot at position lower_k or later covers the at most
    # n - lower_k - 1 trailing rows.  None: nothing to update, nor to search
    # (the next pivot launch finds k = n and reads no records).
    step_ranges = [update_range(n - lower_k - 1) for lower_k in range(n)]
    enqueue = cl.enqueue_nd_range_kernel

    # Steps are enqueued in batches without waiting; every step advances k by
    # at least one, so after j steps k >= j bounds the trailing size.  The host
    # reads the state once per batch and decides on a small remainder.
    enqueue(queue, update, update_range(n), tile_range)
    if scaled_test:
        # The normwise tolerance n eps max|m_ij| over the lower triangle (the
        # diagonal's imaginary parts dropped, as on the host), from the first
        # search's partial maxima instead of a pass over M on the host.
        records = np.empty(tiles * row_groups, _RECORD_DTYPE)
        cl.enqueue_copy(queue, records, partial_buf)
        rank_tol = noise_level * max(float(records["off_value"].max()), 0.0)
    pivot.set_arg(7, np.float64(max(rank_tol, 0.0)))
    while True:
        cl.enqueue_copy(queue, state, state_buf)
        k, flag = int(state[_K]), int(state[_FLAG])
        if flag == _DONE or k >= n:
            break
        if flag == _SMALL:
            if not scaled_test:
                break
            # The pivot for position k is chosen, not taken.  Turn the
            # entrywise test on for this and every later step: one
            # search-only update (the pivot is pending) tests the trailing
            # matrix, and the next pivot launch stops or takes the pivot.
            state[_FLAG] = _RUNNING
            state[_TESTING] = 1
            cl.enqueue_copy(queue, state_buf, state)
            enqueue(queue, update, update_range(n - k), tile_range)
        # All launched steps have run: k is exact, and k + j bounds the
        # position of the j-th step of this batch from below (a step that
        # finds the flag set is a no-op, and so are all after it).
        for global_range in step_ranges[k:k + STEPS_PER_BATCH]:
            enqueue(queue, pivot, pivot_range, pivot_range)
            if global_range is not None:
                enqueue(queue, update, global_range, tile_range)

    signs = np.empty(n)
    cl.enqueue_copy(queue, signs, signs_buf)
    queue.finish()
    signs = np.where(signs[:k] > 0, 1, -1).astype(np.int8)
    order = np.concatenate((np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)))
    return DeviceJFactor(queue, g_buf, lda, n, order.astype(np.int32), signs[order],
                         int(np.count_nonzero(signs > 0)), dtype)
