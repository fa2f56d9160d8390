"""Bunch-Parlett complete pivoting on the device (``templates/bunch_parlett.cl.mako``).

The same factorization as :func:`cljacobi.factorization.j_factorize`,
``M = G J G^*`` with 1x1 and diagonalized 2x2 pivots (Bunch & Parlett 1971;
Slapničar 1992), but the O(n^3) Schur-complement updates and the complete
pivot search run on the OpenCL device.  The pivot decisions stay on the
device too (a small step state every kernel reads), so the host enqueues the
steps in batches and reads the state once per batch; it steps in only when
the remaining entries fall below the normwise rank tolerance, to apply the
entrywise test.  Real symmetric (float64) and complex Hermitian (complex128,
stored as interleaved (re, im) pairs on the device) input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..factorization import JFactor, _negligible_entrywise_dense
from .device import require_fp64
from .limits import check_global_memory
from .programs import KernelSpec, build_program

__all__ = ["DeviceJFactor", "factor_on_device", "j_factorize_device"]

#: Side of the square work-group of the update kernel.
TILE = 16
#: Work-items of the one-dimensional kernels.
LINE_WORK_GROUP = 64
#: Work-items of the one-work-group pivot decision.
DECIDE_WORK_GROUP = 256
#: Pivot steps enqueued between two reads of the step state.
STEPS_PER_BATCH = 32
#: Bytes of one partial-maximum record (``cjac_bp_max``).
_MAX_RECORD = 32
#: The step state of ``bunch_parlett.cl.mako``: k, s, p, q, flag (and padding).
_STATE_WORDS = 8
_RUNNING, _SMALL, _DONE = 0, 1, 2


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
    """:func:`j_factorize_device` with the factor G left in device memory
    (for the sweeps that follow on the same device; ``n >= 1``)."""
    device = queue.device
    require_fp64(device)
    M = np.asarray(M)
    dtype = np.dtype(np.complex128 if np.iscomplexobj(M) else np.float64)
    M = M.astype(dtype, copy=False)
    n = M.shape[0]
    lda = _round_up(n, 32)
    tiles = -(-n // TILE)
    item = dtype.itemsize
    check_global_memory(device, {"A": item * lda * n, "G": item * lda * n,
                                 "partial maxima": _MAX_RECORD * tiles * tiles})
    spec = KernelSpec("bunch_parlett", str(dtype), DECIDE_WORK_GROUP, False, tile_rows=TILE)
    program = build_program(queue.context, device, spec)
    kernels = {name: cl.Kernel(program, name) for name in (
        "cjac_bp_pivot_columns", "cjac_bp_update", "cjac_bp_decide")}

    # Row c of `columns` is column c of A (column-major).  The first update
    # launch (s = 0) copies the lower triangle onto the upper one (conjugated,
    # the diagonal made real), so only the lower triangle of M counts, as on
    # the host.
    columns = np.zeros((n, lda), dtype=dtype)
    columns[:, :n] = M.T
    noise_level = n * np.finfo(np.float64).eps
    scaled_test = rank_tol is None
    if scaled_test:
        off_diagonal = np.abs(np.tril(M, -1))
        diagonal = np.abs(M.diagonal().real)  # as the host: imaginary parts dropped
        rank_tol = noise_level * max(float(off_diagonal.max()), float(diagonal.max()))

    mf = cl.mem_flags
    ctx = queue.context
    a_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=columns)
    g_buf = cl.Buffer(ctx, mf.READ_WRITE, item * n * lda)
    cl.enqueue_fill_buffer(queue, g_buf, np.zeros(1, dtype), 0, item * n * lda)
    w_buf = cl.Buffer(ctx, mf.READ_WRITE, item * 2 * lda)
    perm = np.arange(n, dtype=np.int32)
    perm_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=perm)
    signs_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
    partial_buf = cl.Buffer(ctx, mf.READ_WRITE, _MAX_RECORD * tiles * tiles)
    # Step state (k, s, p, q, flag): k = 0 with s = 0, so the first update
    # launch only searches for the first pivot.
    state = np.zeros(_STATE_WORDS, np.int32)
    state_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=state)
    mu0_buf = cl.Buffer(ctx, mf.READ_WRITE, 8)
    i32 = np.int32

    # One kernel object per interchange (0: k <-> p, 1: k+1 <-> q), arguments set once.
    swap_rows = [cl.Kernel(program, "cjac_bp_swap_rows") for _ in range(2)]
    swap_columns = [cl.Kernel(program, "cjac_bp_swap_columns") for _ in range(2)]
    for which in (0, 1):
        swap_rows[which].set_args(a_buf, i32(lda), i32(n), state_buf, i32(which))
        swap_columns[which].set_args(a_buf, i32(lda), i32(n), state_buf, i32(which), perm_buf)
    pivot_columns = kernels["cjac_bp_pivot_columns"]
    pivot_columns.set_args(a_buf, i32(lda), i32(n), state_buf, perm_buf, w_buf, i32(lda),
                           g_buf, i32(lda), signs_buf)
    update = kernels["cjac_bp_update"]
    update.set_args(a_buf, i32(lda), i32(n), state_buf, w_buf, i32(lda), signs_buf, partial_buf)
    decide = kernels["cjac_bp_decide"]
    decide.set_args(partial_buf, i32(0), i32(n), np.float64(max(rank_tol, 0.0)), state_buf,
                    mu0_buf)

    def enqueue_search(trailing: int) -> None:
        """Update (of the pivot in `state`) and decision, for at most `trailing` rows."""
        t = -(-trailing // TILE)
        if t > 0:
            cl.enqueue_nd_range_kernel(queue, update, (t * TILE, t * TILE), (TILE, TILE))
        decide.set_arg(1, i32(t * t))
        cl.enqueue_nd_range_kernel(queue, decide, (DECIDE_WORK_GROUP,), (DECIDE_WORK_GROUP,))

    def enqueue_step(lower_k: int) -> None:
        """One pivot step; `lower_k` <= k bounds the grids from above."""
        line = (_round_up(n - lower_k, LINE_WORK_GROUP),), (LINE_WORK_GROUP,)
        for which in (0, 1):
            cl.enqueue_nd_range_kernel(queue, swap_rows[which], *line)
            cl.enqueue_nd_range_kernel(queue, swap_columns[which], *line)
        cl.enqueue_nd_range_kernel(queue, pivot_columns, *line)
        enqueue_search(n - lower_k - 1)

    # Steps are enqueued in batches without waiting; every step advances k by
    # at least one, so after j steps k >= j bounds the trailing size.  The host
    # reads the state once per batch and decides on a small remainder.
    enqueue_search(n)
    while True:
        cl.enqueue_copy(queue, state, state_buf)
        k, flag = int(state[0]), int(state[4])
        if flag == _DONE:
            break
        if flag == _SMALL:
            if not scaled_test:
                break
            # Rows of `trailing` are columns of A: its transpose, which the
            # entrywise test (on moduli) does not mind.
            trailing = np.empty((n, lda), dtype=dtype)
            cl.enqueue_copy(queue, trailing, a_buf)
            cl.enqueue_copy(queue, perm, perm_buf)
            done = np.empty((n, lda), dtype=dtype)
            cl.enqueue_copy(queue, done, g_buf)
            if _negligible_entrywise_dense(
                trailing[k:, k:n], M, done[:k, :n].T, perm[k:], noise_level
            ):
                break
            state[4] = _RUNNING  # real data: take this pivot and go on
            cl.enqueue_copy(queue, state_buf, state)
        # All launched steps have run: k is exact, and k + j bounds the j-th
        # step of this batch from below (a step that finds the flag set is a
        # no-op, and so are all after it).
        for j in range(min(STEPS_PER_BATCH, n - k)):
            enqueue_step(k + j)

    signs = np.empty(n)
    cl.enqueue_copy(queue, signs, signs_buf)
    queue.finish()
    signs = np.where(signs[:k] > 0, 1, -1).astype(np.int8)
    order = np.concatenate((np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)))
    return DeviceJFactor(queue, g_buf, lda, n, order.astype(np.int32), signs[order],
                         int(np.count_nonzero(signs > 0)), dtype)
