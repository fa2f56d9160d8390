"""The factor G (and V) in device memory, handed from phase to phase of a solve.

The blocked sweeps, the pointwise sweeps that follow them and (for real
``eig_indefinite``) the device J-factorization before them all work on the
same column-major device buffers, bordered as eq. (4.1) of Novaković & Singer
(2011): ``r`` columns are padded to a multiple of the block size with unit
columns in new rows, which are orthogonal to everything and never rotate.
:class:`Operands` holds those buffers; the data cross the bus once in each
direction per solve, or, after the device factorization, only at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .limits import check_global_memory
from .programs import KernelSpec, build_program
from .sizes import round_up

__all__ = [
    "ROW_ALIGNMENT", "Operands", "column_max", "download", "gather_factor",
    "normalized_columns", "upload",
]

#: Rows of the device arrays are padded to a multiple of this (eq. (4.1)).
ROW_ALIGNMENT = 32

#: Work-items of the per-column reduction.
_COLUMN_WORK_GROUP = 64


@dataclass
class Operands:
    """G (m x r) and optionally V (r x r) in column-major device buffers.

    Column c of G starts at element ``c * ldg``; ``columns - r`` border
    columns follow the r columns of G, border column ``r + i`` being the unit
    vector ``e_(m + i)`` (so ``rows = m + columns - r`` rows are in use).
    `column_signs` is the signature of the r columns of G (+1 or -1).
    Complex data are stored as ``dtype`` elements, or with ``split`` as each
    column's real parts followed by its imaginary parts (then the stride is
    ``2 * ldg`` reals).
    """

    g: cl.Buffer
    ldg: int
    rows: int
    columns: int
    v: cl.Buffer | None
    ldv: int
    m: int
    r: int
    column_signs: np.ndarray
    dtype: np.dtype
    split: bool = False
    #: Seconds spent moving (and preparing) data so far.
    transfer_seconds: float = 0.0
    #: The largest squared norm every column has had so far (``columns``
    #: reals of the working precision), kept by the sweep kernels from phase to
    #: phase; None until a phase creates it.
    peak: cl.Buffer | None = None

    @property
    def p(self) -> int:
        """Number of positive columns of G."""
        return int(np.count_nonzero(self.column_signs > 0))

    def signs(self) -> np.ndarray:
        """int32 signature of all columns, border columns +1."""
        signs = np.ones(self.columns, dtype=np.int32)
        signs[:self.r] = self.column_signs
        return signs


def _signature(signs: np.ndarray, r: int) -> np.ndarray:
    signs = np.asarray(signs)
    if signs.shape != (r,) or not np.all(np.abs(signs) == 1):
        raise ValueError(f"the signature must hold {r} entries +1 or -1")
    return signs.astype(np.int32)


def _sizes(m: int, r: int, column_multiple: int) -> tuple[int, int, int, int]:
    """``(columns, rows, ldg, ldv)`` of the bordered problem."""
    columns = round_up(max(r, 1), column_multiple)
    rows = m + columns - r
    return columns, rows, round_up(max(rows, 1), ROW_ALIGNMENT), round_up(columns, ROW_ALIGNMENT)


def _to_split(columns: np.ndarray) -> np.ndarray:
    """Complex rows (one per column of G) -> float rows holding re, then im."""
    return np.ascontiguousarray(np.concatenate([columns.real, columns.imag], axis=1))


def _from_split(planes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_to_split`."""
    half = planes.shape[1] // 2
    return planes[:, :half] + 1j * planes[:, half:]


def _identity_buffer(queue: cl.CommandQueue, columns: int, ldv: int, dtype: np.dtype,
                     split: bool) -> cl.Buffer:
    identity = np.zeros((columns, ldv), dtype=dtype)
    identity[np.arange(columns), np.arange(columns)] = 1.0
    if split:
        identity = _to_split(identity)
    return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=identity)


def _check_memory(queue: cl.CommandQueue, dtype: np.dtype, ldg: int, ldv: int, columns: int,
                  accumulate_v: bool) -> None:
    check_global_memory(queue.device, {
        "G": dtype.itemsize * ldg * columns,
        **({"V": dtype.itemsize * ldv * columns} if accumulate_v else {}),
    })


def upload(
    queue: cl.CommandQueue,
    G: np.ndarray,
    signs: np.ndarray,
    *,
    accumulate_v: bool,
    column_multiple: int,
    dtype: np.dtype,
    split: bool = False,
) -> Operands:
    """Copy G (m x r, signature `signs`) to the device, bordered.

    V starts as the identity when `accumulate_v`.
    """
    start = time.perf_counter()
    dtype = np.dtype(dtype)
    m, r = G.shape
    columns, rows, ldg, ldv = _sizes(m, r, column_multiple)
    _check_memory(queue, dtype, ldg, ldv, columns, accumulate_v)
    host = np.zeros((columns, ldg), dtype=dtype)  # row c = column c of G
    host[:r, :m] = G.T
    host[r + np.arange(columns - r), m + np.arange(columns - r)] = 1.0
    if split:
        host = _to_split(host)
    mf = cl.mem_flags
    g = cl.Buffer(queue.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=host)
    v = _identity_buffer(queue, columns, ldv, dtype, split) if accumulate_v else None
    queue.finish()
    return Operands(g, ldg, rows, columns, v, ldv, m, r, _signature(signs, r), dtype, split,
                    time.perf_counter() - start)


def download(queue: cl.CommandQueue, operands: Operands) -> tuple[np.ndarray, np.ndarray | None]:
    """``(G, V)`` on the host, border stripped (Fortran-ordered views)."""
    start = time.perf_counter()
    ops = operands
    stride = 2 * ops.ldg if ops.split else ops.ldg
    part_dtype = np.dtype(np.finfo(ops.dtype).dtype) if ops.split else ops.dtype
    host = np.empty((ops.columns, stride), dtype=part_dtype)
    cl.enqueue_copy(queue, host, ops.g)
    V = None
    if ops.v is not None:
        v_host = np.empty((ops.columns, 2 * ops.ldv if ops.split else ops.ldv), part_dtype)
        cl.enqueue_copy(queue, v_host, ops.v)
    queue.finish()
    if ops.split:
        host = _from_split(host)
    G = host[:ops.r, :ops.m].T
    if ops.v is not None:
        V = (_from_split(v_host) if ops.split else v_host)[:ops.r, :ops.r].T
    ops.transfer_seconds += time.perf_counter() - start
    return G, V


_SWEEP_DTYPES = (np.dtype(np.float64), np.dtype(np.complex128))


def _columns_program(queue: cl.CommandQueue, dtype: np.dtype, split: bool = False) -> cl.Program:
    dtype = np.dtype(dtype)
    if dtype not in _SWEEP_DTYPES:
        raise ValueError(f"the column kernels handle float64 and complex128, not {dtype}")
    layout = "split" if split else "interleaved"
    spec = KernelSpec("columns", dtype.name, _COLUMN_WORK_GROUP, False, layout)
    return build_program(queue.context, queue.device, spec)


def column_max(queue: cl.CommandQueue, source: cl.Buffer, lds: int, m: int,
               columns: int, dtype: np.dtype = np.float64) -> np.ndarray:
    """``max_i |a_ic|`` of the first `columns` columns of a column-major buffer
    (float64, or interleaved complex128); NaN where a column holds one."""
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 8 * max(columns, 1))
    kernel = cl.Kernel(_columns_program(queue, dtype), "cjac_column_max")
    kernel.set_args(source, np.int32(lds), np.int32(m), out)
    cl.enqueue_nd_range_kernel(queue, kernel, (columns * _COLUMN_WORK_GROUP,),
                               (_COLUMN_WORK_GROUP,))
    result = np.empty(columns)
    cl.enqueue_copy(queue, result, out)
    return result


def gather_factor(
    queue: cl.CommandQueue,
    source: cl.Buffer,
    lds: int,
    m: int,
    order: np.ndarray,
    p: int,
    exponent: int,
    *,
    accumulate_v: bool,
    column_multiple: int,
    dtype: np.dtype = np.float64,
    split: bool = False,
) -> Operands:
    """Operands from a factor already on the device, without the host.

    Column j of G is ``2^exponent`` times column ``order[j]`` of `source`
    (column-major, leading dimension `lds`, `m` rows; float64 or interleaved
    complex128); its first `p` columns are the positive ones.  Complex
    operands are stored split when `split`.
    """
    start = time.perf_counter()
    dtype = np.dtype(dtype)
    split = split and dtype.kind == "c"
    r = len(order)
    columns, rows, ldg, ldv = _sizes(m, r, column_multiple)
    _check_memory(queue, dtype, ldg, ldv, columns, accumulate_v)
    mf = cl.mem_flags
    g = cl.Buffer(queue.context, mf.READ_WRITE, dtype.itemsize * ldg * columns)
    order_buf = cl.Buffer(queue.context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                          hostbuf=np.ascontiguousarray(order, dtype=np.int32))
    kernel = cl.Kernel(_columns_program(queue, dtype, split), "cjac_gather_columns")
    kernel.set_args(source, np.int32(lds), np.int32(m), order_buf, np.int32(exponent), g,
                    np.int32(ldg), np.int32(r))
    tile = 64
    cl.enqueue_nd_range_kernel(queue, kernel, (round_up(ldg, tile), columns), (tile, 1))
    v = _identity_buffer(queue, columns, ldv, dtype, split) if accumulate_v else None
    queue.finish()
    signs = np.where(np.arange(r) < p, 1, -1)
    return Operands(g, ldg, rows, columns, v, ldv, m, r, _signature(signs, r), dtype, split,
                    time.perf_counter() - start)


def normalized_columns(queue: cl.CommandQueue, operands: Operands,
                       order: np.ndarray) -> np.ndarray:
    """``G[:, order] / ||G[:, order]||`` of double precision operands, on the
    host (m x len(order), Fortran-ordered): the eigenvectors, normalized and
    ordered on the device so that only they cross the bus."""
    start = time.perf_counter()
    ops = operands
    count = len(order)
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY,
                    ops.dtype.itemsize * max(ops.m * count, 1))
    order_buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                          hostbuf=np.ascontiguousarray(order, dtype=np.int32))
    kernel = cl.Kernel(_columns_program(queue, ops.dtype, ops.split), "cjac_normalized_columns")
    kernel.set_args(ops.g, np.int32(ops.ldg), np.int32(ops.m), order_buf, out, np.int32(ops.m))
    cl.enqueue_nd_range_kernel(queue, kernel, (count * _COLUMN_WORK_GROUP,),
                               (_COLUMN_WORK_GROUP,))
    host = np.empty((count, ops.m), dtype=ops.dtype)
    cl.enqueue_copy(queue, host, out)
    ops.transfer_seconds += time.perf_counter() - start
    return host.T
