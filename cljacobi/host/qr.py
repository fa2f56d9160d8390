"""Householder QR with column pivoting of one large matrix on the device (``templates/qr.cl.mako``).

The factorization LAPACK ``xGEQP3`` computes, ``B[:, columns] = Q R`` with
``Q = H_0 H_1 ... H_{k-1}`` (the reflectors of ``xLARFG``), for the
preconditioning of :func:`cljacobi.svd` (Drmač & Veselić 2008): its
``O(m n^2)`` updates and its pivot search run on the OpenCL device, one
launch of ``cjac_qr_step`` a reflector, the pivot decided on the device by
the launch's last work-group, so the host enqueues every step at once and
reads nothing back until the end.  Like ``xGEQP3`` with the column norms
recomputed at every step instead of downdated, so equal columns of the two
may be pivoted differently where the downdated norms of ``xGEQP3`` are a
rounding error apart.  The rows are sorted first, as
:func:`cljacobi.shortening.pivoted_reflectors` sorts them.

The matrix stays on the device overwritten as ``xGEQP3`` overwrites it (R on
and above the diagonal, the reflectors below it, ``tau`` beside it; the
columns in place, a position map naming them): :class:`DeviceQR` forms
``X = R^*`` there for the sweeps and applies Q to their V there (by blocks
of reflectors: ``cjac_qr_block_t``, then ``cjac_qr_block_z``, ``_tz`` and
``_update`` a block), and its ``packed`` is ``xGEQP3``'s output on the
host (:class:`cljacobi.shortening.Reflectors`).  ``docs/design.md``, "The device
QR", has the steps.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..shortening import completed_columns, sort_rows
from .device import require_fp64
from .factorization import global_fence_for
from .limits import (
    check_global_memory,
    check_local_memory,
    check_work_group_size,
    choose_work_group_size,
)
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg
from .sizes import check_power_of_two, round_up
from .transfers import buffer_holding, read_buffer

__all__ = ["ColumnQRPlan", "ColumnQRSpec", "DeviceQR", "pivoted_qr_on_device"]


#: Columns a work-group of ``cjac_qr_step`` updates (``bench/README.md``,
#: "The device QR").
COLUMNS_PER_GROUP = 1
#: Side of ``cjac_qr_load``'s square work-group.
LOAD_TILE = 16
#: From this many rows on a GPU, work-groups of ``LONG_COLUMN_WORK_GROUP``
#: work-items (H200: 2.00 s against 2.31 s for 256 at n = 8192, 0.365 s
#: against 0.328 s at 4096; ``bench/README.md``, "The device QR").
LONG_COLUMN_ROWS = 8192
LONG_COLUMN_WORK_GROUP = 512
#: Reflectors a block, columns of C a work-group (16 complex ones) and
#: work-items a work-group when Q is applied (``cjac_qr_block_z``,
#: ``cjac_qr_block_tz``, ``cjac_qr_block_update``), and the rows a
#: work-group of ``cjac_qr_block_z`` sums over; blocks of 16 where 32 do not
#: fit in local memory (``bench/README.md``, "The device QR").
APPLY_BLOCK = 32
APPLY_TILE = 32
APPLY_WORK_GROUP = 256
APPLY_SLAB = 512
#: Rows of Y and of C that ``cjac_qr_block_z`` holds in local memory at a time.
APPLY_CHUNK_ROWS = 32


class _Word(enum.IntEnum):
    """Words of the step state (see ``qr.cl.mako``)."""

    J = 0  # the reflector the next launch applies (-1: none yet)
    TICKET = 1  # work-groups of the running launch done


@dataclass(frozen=True)
class ColumnQRSpec:
    """Specialization parameters of ``templates/qr.cl.mako`` (the sizes are
    kernel arguments: one program serves every shape).

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"`` (interleaved on the device).
    global_fence : str
        The ticket's fence, ``"opencl"`` or ``"ptx"``
        (:func:`cljacobi.host.factorization.global_fence_for`).
    work_group_size : int
        Work-items a work-group (over the rows), a power of two.
    columns_per_group : int
        Columns a work-group updates, reading each entry of the reflector
        once for all of them.
    apply_block, apply_tile : int
        Reflectors a block and columns of C a work-group when Q is applied
        (``cjac_qr_block_z``, ``cjac_qr_block_tz``, ``cjac_qr_block_update``).
    apply_work_group : int
        Work-items a work-group of those kernels and of ``cjac_qr_block_t``.
    apply_slab : int
        Rows a work-group of ``cjac_qr_block_z`` sums over.
    """

    family: ClassVar[str] = "qr"
    dtype: str
    global_fence: str = "opencl"
    work_group_size: int = 256
    columns_per_group: int = COLUMNS_PER_GROUP
    apply_block: int = APPLY_BLOCK
    apply_tile: int = APPLY_TILE
    apply_work_group: int = APPLY_WORK_GROUP
    apply_slab: int = APPLY_SLAB

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(f"the device QR takes float64 or complex128, not {self.dtype!r}")
        if self.global_fence not in ("opencl", "ptx"):
            raise ValueError(f"global_fence must be 'opencl' or 'ptx', not {self.global_fence!r}")
        check_power_of_two("work_group_size", self.work_group_size)
        if self.columns_per_group < 1:
            raise ValueError(f"columns_per_group must be positive, not {self.columns_per_group}")
        for name in ("apply_block", "apply_tile", "apply_work_group", "apply_slab"):
            check_power_of_two(name, getattr(self, name))
        groups = self.apply_work_group // self.apply_block
        if not self.apply_block <= self.apply_work_group \
                or self.apply_block ** 2 % self.apply_work_group or self.apply_tile % groups \
                or self.apply_block * self.apply_tile % self.apply_work_group:
            raise ValueError(
                f"apply_work_group {self.apply_work_group} does not divide into blocks of "
                f"{self.apply_block} reflectors and tiles of {self.apply_tile} columns")

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of every kernel of the family, declared once (made
        once per spec)."""
        return _signatures(self)

    def _make_signatures(self) -> dict[str, KernelSignature]:
        step = KernelSignature("cjac_qr_step", (
            buffer("W", "__global cjac_elem *"), int_arg("ld"), int_arg("rows"),
            int_arg("cols"), int_arg("steps"), buffer("state", "__global int *"),
            buffer("tau", "__global cjac_elem *"), buffer("scales", "__global cjac_elem *"),
            buffer("norms", "__global cjac_real *"),
            buffer("xnorms", "__global cjac_real *"), buffer("columns", "__global int *"),
        ))
        load = KernelSignature("cjac_qr_load", (
            buffer("A", "__global const cjac_elem *"), buffer("row_order", "__global const int *"),
            int_arg("exponent"), buffer("W", "__global cjac_elem *"), int_arg("ld"),
            int_arg("rows"), int_arg("cols"),
        ))
        load_columns = KernelSignature("cjac_qr_load_columns", (
            buffer("S", "__global const cjac_elem *"), int_arg("lds"),
            buffer("row_order", "__global const int *"), int_arg("exponent"),
            buffer("W", "__global cjac_elem *"), int_arg("ld"), int_arg("rows"), int_arg("cols"),
        ))
        reflectors = (buffer("W", "__global const cjac_elem *"), int_arg("ld"), int_arg("rows"),
                      buffer("columns", "__global const int *"), int_arg("n"))
        block_t = KernelSignature("cjac_qr_block_t", (
            *reflectors, buffer("tau", "__global const cjac_elem *"),
            buffer("T", "__global cjac_elem *"),
        ))
        block_z = KernelSignature("cjac_qr_block_z", (
            *reflectors, int_arg("b"), buffer("C", "__global const cjac_elem *"),
            int_arg("ldc"), int_arg("p"), buffer("parts", "__global cjac_elem *"),
        ))
        block_tz = KernelSignature("cjac_qr_block_tz", (
            int_arg("rows"), buffer("T", "__global const cjac_elem *"), int_arg("b"),
            int_arg("p"), buffer("parts", "__global const cjac_elem *"),
            buffer("Z", "__global cjac_elem *"),
        ))
        block_update = KernelSignature("cjac_qr_block_update", (
            *reflectors, int_arg("b"), buffer("Z", "__global const cjac_elem *"),
            buffer("C", "__global cjac_elem *"), int_arg("ldc"), int_arg("p"),
        ))
        factor = KernelSignature("cjac_qr_factor", (
            buffer("W", "__global const cjac_elem *"), int_arg("ld"),
            buffer("columns", "__global const int *"), int_arg("cols"),
            buffer("X", "__global cjac_elem *"), int_arg("ldx"),
        ))
        stack = KernelSignature("cjac_qr_stack", (
            buffer("V", "__global const cjac_elem *"), int_arg("ldv"), int_arg("n"),
            buffer("order", "__global const int *"), int_arg("count"),
            buffer("C", "__global cjac_elem *"), int_arg("ldc"), int_arg("rows"), int_arg("p"),
        ))
        unload_args = (
            buffer("C", "__global const cjac_elem *"), int_arg("ldc"), int_arg("rows"),
            int_arg("p"), buffer("row_order", "__global const int *"),
            buffer("out", "__global cjac_elem *"),
        )
        unload = KernelSignature("cjac_qr_unload", unload_args)
        unload_columns = KernelSignature("cjac_qr_unload_columns", unload_args)
        return {kernel.name: kernel
                for kernel in (load, load_columns, step, factor, block_t, block_z, block_tz,
                               block_update, stack, unload, unload_columns)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {
            "complex_": self.dtype == "complex128", "global_fence": self.global_fence,
            "work_group_size": self.work_group_size,
            "columns_per_group": self.columns_per_group, "load_tile": LOAD_TILE,
            "apply_block": self.apply_block, "apply_tile": self.apply_tile,
            "apply_work_group": self.apply_work_group, "apply_slab": self.apply_slab,
            "apply_chunk_rows": APPLY_CHUNK_ROWS,
            "state_defines": c_defines({f"CJAC_QR_{word.name}": int(word) for word in _Word}),
            "signatures": self.signatures,
        }


def _apply_local_bytes(block: int, tile: int, item: int) -> int:
    """Local memory of the largest work-group of Q's kernels: ``cjac_qr_block_t``
    (a chunk of Y, then T, and the Gram matrix, block x block + 1 each),
    ``cjac_qr_block_z`` (:data:`APPLY_CHUNK_ROWS` rows of Y and of C),
    ``cjac_qr_block_tz`` (Z, tile x block + 1) or ``cjac_qr_block_update``
    (Z, block x tile); the block's columns."""
    return item * max(2 * block * (block + 1), APPLY_CHUNK_ROWS * (block + 1 + tile + 1),
                      tile * (block + 1), block * tile) + 4 * block


def _apply_tile_for(dtype: np.dtype) -> int:
    """Columns of C a work-group when Q is applied: :data:`APPLY_TILE`, half
    as many complex ones (the registers of a work-item's row)."""
    return APPLY_TILE // (2 if np.dtype(dtype).kind == "c" else 1)


@cache
def _signatures(spec: ColumnQRSpec) -> dict[str, KernelSignature]:
    return spec._make_signatures()


@dataclass(frozen=True)
class ColumnQRPlan:
    """The sizes of one device QR, decided and checked once (:meth:`for_device`).

    Attributes
    ----------
    spec : ColumnQRSpec
        The program.
    rows, cols : int
        The shape, ``rows >= cols >= 1``.
    ld : int
        Leading dimension of the column-major matrix on the device.
    """

    spec: ColumnQRSpec
    rows: int
    cols: int
    ld: int

    @classmethod
    def for_device(cls, device: cl.Device, rows: int, cols: int, dtype: np.dtype,
                   *, work_group_size: int | None = None,
                   columns_per_group: int = COLUMNS_PER_GROUP) -> ColumnQRPlan:
        """The plan for a `rows` x `cols` `dtype` matrix on `device`, after
        checking the shape, fp64, the work-group size and the memory (before
        any launch)."""
        if not rows >= cols >= 1:
            raise ValueError(f"the device QR factors rows >= cols >= 1, not {rows} x {cols}")
        require_fp64(device)
        dtype = np.dtype(dtype)
        if work_group_size is None and rows >= LONG_COLUMN_ROWS and bool(
                device.type & cl.device_type.GPU) and device.max_work_group_size >= \
                LONG_COLUMN_WORK_GROUP:
            work_group_size = LONG_COLUMN_WORK_GROUP
        size = choose_work_group_size(device, rows, requested=work_group_size)
        block, tile = APPLY_BLOCK, _apply_tile_for(dtype)
        if _apply_local_bytes(block, tile, dtype.itemsize) > device.local_mem_size:
            block //= 2
        spec = ColumnQRSpec(dtype.name, global_fence_for(device), size, columns_per_group,
                            block, tile)
        plan = cls(spec, rows, cols, round_up(rows, 32 if device.type & cl.device_type.GPU else 8))
        check_local_memory(device, max(plan.local_bytes, _apply_local_bytes(
            block, tile, dtype.itemsize)), "the device QR")
        # The tiled copies and Q's kernels (the step kernel's size is the
        # device's own choice above).
        check_work_group_size(device, max(LOAD_TILE * LOAD_TILE, spec.apply_work_group),
                              "the device QR")
        check_global_memory(device, {"B": dtype.itemsize * plan.ld * cols,
                                     "A as uploaded": dtype.itemsize * rows * cols,
                                     "tau and scales": 2 * dtype.itemsize * cols,
                                     "norms and pivots": 20 * cols})
        return plan

    @property
    def local_bytes(self) -> int:
        """Local memory of a work-group: the tree sums of its columns (pairs
        of doubles), the pivot search's indices and a few words."""
        spec = self.spec
        return 16 * spec.columns_per_group * spec.work_group_size + 4 * spec.work_group_size \
            + 16 * (spec.columns_per_group + 1) + 12

    def step_range(self, j: int) -> int:
        """Global size of the launch that applies reflector `j`: a work-group
        for every `columns_per_group` columns after it (at least one)."""
        spec = self.spec
        return max(-(-(self.cols - j - 1) // spec.columns_per_group), 1) * spec.work_group_size


class DeviceQR:
    """``A[rows][:, columns] = Q R`` from :func:`pivoted_qr_on_device`, kept on
    the device: R and the reflectors in place in W (the column at position j
    is W's column ``columns[j]``), tau beside them.

    Attributes
    ----------
    rows, columns : numpy.ndarray
        The row order and the column pivots, as
        :class:`cljacobi.shortening.Reflectors`.
    exponent : int
        The power of two A was scaled by (``2^exponent A`` is factored).
    """

    def __init__(self, queue: cl.CommandQueue, plan: ColumnQRPlan, program: cl.Program,
                 buffers: dict[str, cl.Buffer], rows: np.ndarray, columns: np.ndarray,
                 exponent: int = 0) -> None:
        self.queue, self.plan, self.program = queue, plan, program
        self.buffers = buffers  # W, columns, tau, row_order
        self.rows, self.columns, self.exponent = rows, columns, exponent
        self.dtype = np.dtype(plan.spec.dtype)

    def _kernel(self, name: str, **values: object) -> cl.Kernel:
        return self.plan.spec.signatures[name].kernel(self.program, **values)

    def _tiles(self, first: int, second: int) -> tuple[tuple[int, int], tuple[int, int]]:
        return (round_up(first, LOAD_TILE), round_up(second, LOAD_TILE)), (LOAD_TILE, LOAD_TILE)

    @property
    def packed(self) -> np.ndarray:
        """``xGEQP3``'s output, ``rows x cols`` (Fortran-ordered), as
        :attr:`cljacobi.shortening.Reflectors.packed`."""
        rows, cols, ld, item = self.plan.rows, self.plan.cols, self.plan.ld, self.dtype.itemsize
        by_column = np.empty((cols, rows), self.dtype)
        cl.enqueue_copy(self.queue, by_column, self.buffers["W"], buffer_origin=(0, 0),
                        host_origin=(0, 0), region=(item * rows, cols),
                        buffer_pitches=(item * ld,), host_pitches=(item * rows,))
        return by_column[self.columns].T

    @property
    def tau(self) -> np.ndarray:
        tau = np.empty(self.plan.cols, self.dtype)
        cl.enqueue_copy(self.queue, tau, self.buffers["tau"])
        return tau

    @property
    def R(self) -> np.ndarray:
        """The ``n x n`` upper triangular factor."""
        return self.r_adjoint().conj().T

    def r_adjoint(self) -> np.ndarray:
        """``R^*`` (``n x n``, Fortran-ordered), formed on the device
        (``cjac_qr_factor``)."""
        n = self.plan.cols
        return read_buffer(self.queue, self.r_adjoint_buffer(), (n, n), self.dtype).T

    def r_adjoint_buffer(self) -> cl.Buffer:
        """``R^*`` in a device buffer (column-major, ``n x n``, leading
        dimension n), for the sweeps without a trip through the host."""
        n = self.plan.cols
        X = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, self.dtype.itemsize * n * n)
        kernel = self._kernel("cjac_qr_factor", W=self.buffers["W"], ld=self.plan.ld,
                              columns=self.buffers["columns"], cols=n, X=X, ldx=n)
        cl.enqueue_nd_range_kernel(self.queue, kernel, *self._tiles(n, n))
        return X

    def q_times(self, V: np.ndarray, order: np.ndarray, columns: int | None = None, *,
                by_columns: bool = False, out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`cljacobi.shortening.Reflectors.q_times` on the device: the
        start ``[[V[:, order], 0], [0, I]]`` (``cjac_qr_stack``), then the
        reflectors by blocks (xLARFT's T of every block by ``cjac_qr_block_t``,
        ``C -= Y (T (Y^* C))`` a block at a time from the last: ``Y^* C`` by
        slabs of rows, ``cjac_qr_block_z``, then ``Z = -T Y^* C``,
        ``cjac_qr_block_tz``, then ``C += Y Z``, ``cjac_qr_block_update``),
        and ``cjac_qr_unload`` puts the rows back in A's
        order (row-major).  With `by_columns` the result is its transpose,
        C-ordered ``(columns, m)`` (Q C's columns as rows; the same numbers,
        ``cjac_qr_unload_columns``), into `out` if given (a C-contiguous
        array of that shape and the dtype)."""
        by_column = np.ascontiguousarray(np.asarray(V, dtype=self.dtype).T)  # V column-major
        source = buffer_holding(self.queue, by_column, cl.mem_flags.READ_ONLY)
        return self.q_times_buffer(source, max(V.shape[0], 1), order, columns,
                                   by_columns=by_columns, out=out)

    def q_times_buffer(self, V: cl.Buffer, ldv: int, order: np.ndarray,
                       columns: int | None = None, *, by_columns: bool = False,
                       out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`q_times` of a V already on the device (column-major,
        leading dimension `ldv`, its first n rows read; interleaved if
        complex), such as the sweeps' accumulated rotations."""
        m, n = self.plan.rows, self.plan.cols
        count = len(order)
        columns = completed_columns(count, columns, m, n)
        queue, spec, ctx, mf = self.queue, self.plan.spec, self.queue.context, cl.mem_flags
        item = self.dtype.itemsize
        block, tile, group = spec.apply_block, spec.apply_tile, spec.apply_work_group
        blocks, tiles = -(-n // block), -(-columns // tile)
        slabs = -(-m // spec.apply_slab)
        check_global_memory(queue.device, {
            "C": item * m * columns, "Q C in A's row order": item * m * columns,
            "the blocks' T": item * block * block * blocks,
            "Y^* C by slabs and Z": item * (slabs + 1) * block * columns})
        # (The buffers are named here: a kernel's arguments do not keep them alive.)
        order_buffer = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                                 hostbuf=np.ascontiguousarray(order, dtype=np.int32)
                                 if count else np.zeros(1, np.int32))
        target = cl.Buffer(ctx, mf.READ_WRITE, item * m * columns)
        stack = self._kernel("cjac_qr_stack", V=V, ldv=ldv, n=n, order=order_buffer,
                             count=count, C=target, ldc=m, rows=m, p=columns)
        cl.enqueue_nd_range_kernel(queue, stack, *self._tiles(m, columns))
        # Q = Q_0 Q_1 ..., Q_b = I - Y_b T_b Y_b^*: every T at once, then the
        # blocks from the last, each as Y^* C by slabs, Z = -T Y^* C, C += Y Z.
        T = cl.Buffer(ctx, mf.READ_WRITE, item * block * block * blocks)
        parts = cl.Buffer(ctx, mf.READ_WRITE, item * slabs * block * columns)
        Z = cl.Buffer(ctx, mf.READ_WRITE, item * block * columns)
        reflectors = {"W": self.buffers["W"], "ld": self.plan.ld, "rows": m,
                      "columns": self.buffers["columns"], "n": n}
        form_t = self._kernel("cjac_qr_block_t", tau=self.buffers["tau"], T=T, **reflectors)
        cl.enqueue_nd_range_kernel(queue, form_t, (blocks * group,), (group,))
        signatures = spec.signatures
        sum_z = self._kernel("cjac_qr_block_z", b=0, C=target, ldc=m, p=columns, parts=parts,
                             **reflectors)
        form_z = self._kernel("cjac_qr_block_tz", rows=m, T=T, b=0, p=columns, parts=parts,
                              Z=Z)
        update = self._kernel("cjac_qr_block_update", b=0, Z=Z, C=target, ldc=m, p=columns,
                              **reflectors)
        for b in range(blocks - 1, -1, -1):
            below = m - b * block  # rows from the block's first on
            for name, kernel, grid in (
                    ("cjac_qr_block_z", sum_z, (tiles * group, -(-below // spec.apply_slab))),
                    ("cjac_qr_block_tz", form_z, (tiles * group, 1)),
                    ("cjac_qr_block_update", update, (tiles * group, -(-below // group)))):
                signatures[name].bind(kernel, b=b)
                cl.enqueue_nd_range_kernel(queue, kernel, grid, (group, 1))
        result = cl.Buffer(ctx, mf.WRITE_ONLY, item * m * columns)
        unload = self._kernel("cjac_qr_unload_columns" if by_columns else "cjac_qr_unload",
                              C=target, ldc=m, rows=m, p=columns,
                              row_order=self.buffers["row_order"], out=result)
        cl.enqueue_nd_range_kernel(queue, unload, *self._tiles(m, columns))
        return read_buffer(queue, result, (columns, m) if by_columns else (m, columns),
                           self.dtype, out=out)


def pivoted_qr_on_device(A: np.ndarray, queue: cl.CommandQueue, *, exponent: int = 0,
                         rows: np.ndarray | None = None,
                         scaling: Callable[[], tuple[int, np.ndarray]] | None = None,
                         work_group_size: int | None = None,
                         columns_per_group: int = COLUMNS_PER_GROUP) -> DeviceQR:
    """Householder QR of ``2^exponent A`` with its rows sorted and its columns
    pivoted, on the device of `queue`.

    Parameters
    ----------
    A : numpy.ndarray
        ``m x n`` float64 or complex128, ``m >= n >= 1``, finite; not
        modified.  It goes to the device as it is when C-contiguous, or by
        its columns when Fortran-contiguous (the adjoint of a C-ordered
        wide matrix), else as a C-ordered copy.
    queue : pyopencl.CommandQueue
        Where to run; the device needs fp64.
    exponent : int, optional
        The power of two ``A`` is scaled by on the device (exactly, as
        :func:`cljacobi._solve.ldexp`; a shift from
        :func:`cljacobi.scaling.factor_shift`).
    rows : numpy.ndarray, optional
        The rows of ``2^exponent A`` by decreasing max-norm
        (:func:`cljacobi.shortening.sort_rows`, which runs when they are not
        given), the order the QR factors them in.
    scaling : callable, optional
        Returns ``(exponent, rows)``, in place of those two arguments; it
        runs on the host while A is uploaded.
    work_group_size : int, optional
        Work-items a work-group (default:
        :func:`cljacobi.host.limits.choose_work_group_size`).
    columns_per_group : int, optional
        Columns a work-group updates.

    Returns
    -------
    DeviceQR
        ``2^exponent A[rows][:, columns] = Q R`` with ``Q = H_0 ... H_{n-1}``,
        ``H_j = I - tau_j v_j v_j^*``; deterministic (the same bits on the
        same device).
    """
    A = np.asarray(A)
    if scaling is not None and (rows is not None or exponent != 0):
        raise TypeError("pivoted_qr_on_device takes scaling or exponent and rows, not both")
    dtype = np.dtype(np.complex128 if np.iscomplexobj(A) else np.float64)
    plan = ColumnQRPlan.for_device(queue.device, A.shape[0], A.shape[1], dtype,
                                   work_group_size=work_group_size,
                                   columns_per_group=columns_per_group)
    ctx, mf, item, ld = queue.context, cl.mem_flags, dtype.itemsize, plan.ld
    # A goes up as it is, by rows (or by columns), while the host finds the
    # row order; cjac_qr_load (or cjac_qr_load_columns) sorts its rows into
    # the column-major W on the device.
    by_columns = not A.flags.c_contiguous and A.flags.f_contiguous
    source = np.ascontiguousarray((A.T if by_columns else A).astype(dtype, copy=False))
    with ThreadPoolExecutor(max_workers=1) as uploader:
        upload = uploader.submit(buffer_holding, queue, source, mf.READ_ONLY)
        if scaling is not None:
            exponent, row_order = scaling()
        else:
            row_order = sort_rows(A) if rows is None else np.asarray(rows)
    uploaded = upload.result()
    rows, cols = A.shape
    W = cl.Buffer(ctx, mf.READ_WRITE, item * ld * cols)
    state = np.zeros(len(_Word), np.int32)
    state[_Word.J] = -1
    arguments = {
        "W": W, "ld": ld, "rows": rows, "cols": cols, "steps": cols,
        "state": cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=state),
        "tau": cl.Buffer(ctx, mf.READ_WRITE, item * cols),
        "scales": cl.Buffer(ctx, mf.READ_WRITE, item * cols),
        "norms": cl.Buffer(ctx, mf.READ_WRITE, 8 * cols),
        "xnorms": cl.Buffer(ctx, mf.READ_WRITE, 8 * cols),
        "columns": cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                             hostbuf=np.arange(cols, dtype=np.int32)),
    }
    program = build_program(ctx, queue.device, plan.spec)
    # (The buffers are named here: a kernel's arguments do not keep them alive.)
    row_buffer = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                           hostbuf=row_order.astype(np.int32))
    common = {"row_order": row_buffer, "exponent": exponent, "W": W, "ld": ld, "rows": rows,
              "cols": cols}
    if by_columns:
        load = plan.spec.signatures["cjac_qr_load_columns"].kernel(
            program, S=uploaded, lds=rows, **common)
        grid = (round_up(rows, LOAD_TILE), round_up(cols, LOAD_TILE))
    else:
        load = plan.spec.signatures["cjac_qr_load"].kernel(program, A=uploaded, **common)
        grid = (round_up(cols, LOAD_TILE), round_up(rows, LOAD_TILE))
    cl.enqueue_nd_range_kernel(queue, load, grid, (LOAD_TILE, LOAD_TILE))
    step = plan.spec.signatures["cjac_qr_step"].kernel(program, **arguments)
    local = (plan.spec.work_group_size,)
    for j in range(-1, cols - 1):  # launch j applies H_j and forms H_{j+1}
        cl.enqueue_nd_range_kernel(queue, step, (plan.step_range(j),), local)
    pivots = np.empty(cols, np.int32)
    cl.enqueue_copy(queue, pivots, arguments["columns"])
    kept = {name: arguments[name] for name in ("W", "columns", "tau")}
    return DeviceQR(queue, plan, program, {**kept, "row_order": row_buffer}, row_order,
                    pivots.astype(np.intp), exponent)
