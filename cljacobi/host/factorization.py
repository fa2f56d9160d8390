"""Bunch-Parlett complete pivoting on the device (``templates/bunch_parlett.cl.mako``).

The same factorization as :func:`cljacobi.factorization.j_factorize`,
``M = G J G^T`` with 1x1 and diagonalized 2x2 pivots (Bunch & Parlett 1971;
Slapničar 1992), but the O(n^3) Schur-complement updates and the complete
pivot search run on the OpenCL device; the host launches and reads one small
decision per step.  Real symmetric input only.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..factorization import JFactor, _negligible_entrywise_dense
from .device import require_fp64
from .limits import check_global_memory
from .programs import KernelSpec, build_program

__all__ = ["j_factorize_device"]

#: Side of the square work-group of the update kernel.
TILE = 16
#: Work-items of the one-dimensional kernels.
LINE_WORK_GROUP = 64
#: Bytes of one partial-maximum record (``cjac_bp_max``).
_MAX_RECORD = 32


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def j_factorize_device(
    M: np.ndarray, queue: cl.CommandQueue, *, rank_tol: float | None = None
) -> JFactor:
    """Rank-revealing J-factorization ``M = G J G^T`` computed on the device.

    Parameters and result as :func:`cljacobi.factorization.j_factorize`
    (real symmetric `M`; its lower triangle is used).  Ties in the pivot search
    go to the smaller (column, row), so the result is deterministic; it may
    differ from the host version in the last bits (fused multiply-adds).
    """
    device = queue.device
    require_fp64(device)
    M = np.asarray(M, dtype=np.float64)
    n = M.shape[0]
    if n == 0:
        return JFactor(np.zeros((0, 0), order="F"), np.zeros(0, np.int8), 0)
    lda = _round_up(n, 32)
    tiles = -(-n // TILE)
    check_global_memory(device, {"A": 8 * lda * n, "G": 8 * lda * n,
                                 "partial maxima": _MAX_RECORD * tiles * tiles})
    spec = KernelSpec("bunch_parlett", "float64", LINE_WORK_GROUP, False, tile_rows=TILE)
    program = build_program(queue.context, device, spec)
    kernels = {name: cl.Kernel(program, name) for name in (
        "cjac_bp_swap_rows", "cjac_bp_swap_columns", "cjac_bp_pivot_columns",
        "cjac_bp_update", "cjac_bp_decide")}

    # Row c of `columns` is column c of A (column-major).  The first update
    # launch (s = 0) copies the lower triangle onto the upper one, so only the
    # lower triangle of M counts, as on the host.
    columns = np.zeros((n, lda))
    columns[:, :n] = M.T
    noise_level = n * np.finfo(np.float64).eps
    scaled_test = rank_tol is None
    if scaled_test:
        rank_tol = noise_level * float(np.abs(np.tril(M)).max())

    mf = cl.mem_flags
    ctx = queue.context
    a_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=columns)
    g_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros((n, lda)))
    w_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * 2 * lda)
    perm = np.arange(n, dtype=np.int32)
    perm_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=perm)
    signs_buf = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
    partial_buf = cl.Buffer(ctx, mf.READ_WRITE, _MAX_RECORD * tiles * tiles)
    decision_buf = cl.Buffer(ctx, mf.READ_WRITE, 16)
    mu0_buf = cl.Buffer(ctx, mf.READ_WRITE, 8)
    decision = np.empty(4, np.int32)
    mu0 = np.empty(1, np.float64)
    i32 = np.int32

    def line(count: int) -> tuple[tuple[int], tuple[int]]:
        return (_round_up(max(count, 1), LINE_WORK_GROUP),), (LINE_WORK_GROUP,)

    def update_and_decide(k0: int, s: int, k: int) -> None:
        t = -(-(n - k0) // TILE)
        if t > 0:
            kernels["cjac_bp_update"](
                queue, (t * TILE, t * TILE), (TILE, TILE), a_buf, i32(lda), i32(n), i32(k0),
                i32(s), w_buf, i32(lda), signs_buf, i32(k), partial_buf)
        kernels["cjac_bp_decide"](
            queue, (LINE_WORK_GROUP,), (LINE_WORK_GROUP,), partial_buf, i32(t * t),
            decision_buf, mu0_buf)
        cl.enqueue_copy(queue, decision, decision_buf, is_blocking=False)
        cl.enqueue_copy(queue, mu0, mu0_buf, is_blocking=True)

    def swap(lo: int, i: int, p: int) -> None:
        """Symmetric interchange of positions i and p, touching positions >= lo."""
        kernels["cjac_bp_swap_rows"](
            queue, *line(n - lo), a_buf, i32(lda), i32(n), i32(lo), i32(i), i32(p))
        kernels["cjac_bp_swap_columns"](
            queue, *line(n - lo), a_buf, i32(lda), i32(n), i32(lo), i32(i), i32(p), perm_buf)

    update_and_decide(0, 0, 0)
    k = 0
    while k < n:
        if not mu0[0] > max(rank_tol, 0.0):
            if not scaled_test:
                break
            trailing = np.empty((n, lda))
            cl.enqueue_copy(queue, trailing, a_buf)
            cl.enqueue_copy(queue, perm, perm_buf)
            done = np.empty((n, lda))
            cl.enqueue_copy(queue, done, g_buf)
            if _negligible_entrywise_dense(
                trailing[k:, k:n], M, done[:k, :n].T, perm[k:], noise_level
            ):
                break
        s, p, q = int(decision[0]), int(decision[1]), int(decision[2])
        if k + s > n:  # a 2x2 pivot needs two rows (cannot happen for n - k >= 2)
            break
        swap(k, k, p)
        if s == 2:
            swap(k, k + 1, q)
        kernels["cjac_bp_pivot_columns"](
            queue, *line(n - k), a_buf, i32(lda), i32(n), i32(k), i32(s), perm_buf,
            w_buf, i32(lda), g_buf, i32(lda), signs_buf)
        update_and_decide(k + s, s, k)
        k += s

    G_cols = np.empty((n, lda))
    cl.enqueue_copy(queue, G_cols, g_buf)
    signs = np.empty(n)
    cl.enqueue_copy(queue, signs, signs_buf)
    queue.finish()
    signs = np.where(signs[:k] > 0, 1, -1).astype(np.int8)
    order = np.concatenate((np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)))
    G = G_cols[order, :n].T  # Fortran-ordered: gathering rows is a contiguous copy
    signs = signs[order]
    return JFactor(G, signs, int(np.count_nonzero(signs > 0)))
