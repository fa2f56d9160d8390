"""The factor G (and V) in device memory, handed from phase to phase of a solve.

The blocked sweeps, the pointwise sweeps that follow them and (for real
``eig_indefinite``) the device J-factorization before them all work on the
same column-major device buffers, bordered as eq. (4.1) of Novaković & Singer
(2011): ``r`` columns are padded to a multiple of the block size with unit
columns in new rows, which are orthogonal to everything and never rotate.
:class:`Operands` holds those buffers; the data cross the bus once in each
direction per solve, or, after the device factorization, only at the end.
Before that factorization, :func:`upload_hermitian` puts M on the device as
the host holds it and checks it there (:class:`HermitianUpload`); the
kernels of all of these are the column family's (``templates/columns.cl.mako``).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import pyopencl as cl

from .._threads import in_background
from ..validation import check_asymmetry
from .limits import check_global_memory, check_work_group_size
from .programs import build_program, check_layout
from .signatures import KernelSignature, buffer, c_defines, int_arg
from .sizes import check_power_of_two, round_up
from .transfers import buffer_holding, read_buffer, side_queue, write_buffer

__all__ = [
    "COLUMNS_DTYPES", "COLUMN_WORK_GROUP", "HERMITIAN_BLOCK", "HERMITIAN_TILE", "ROW_ALIGNMENT",
    "ColumnsSpec", "HermitianUpload", "NormalizedColumns", "NormalizedOnDevice", "Operands",
    "bordered_columns", "column_max", "download", "enqueue_normalized_columns", "gather_factor",
    "leading_dimensions", "normalized_columns", "upload", "upload_hermitian",
]

#: Rows of the device arrays are padded to a multiple of this (eq. (4.1)).
ROW_ALIGNMENT = 32

#: Work-items of the per-column reductions (cjac_column_max, cjac_normalized_columns).
COLUMN_WORK_GROUP = 64

#: Rows per work-group of cjac_gather_columns (a launch size, not compiled in).
_GATHER_ROWS = 64

#: Side of the square work-groups of cjac_hermitian_stats and cjac_hermitian_load
#: (tiles of M through local memory, so that both read and write along rows).
HERMITIAN_TILE = 16

#: Side of the block of M one such work-group covers (a multiple of
#: HERMITIAN_TILE): the statistics come back as one record per block.
HERMITIAN_BLOCK = 64

#: Element types of the column kernels (those of the double precision sweeps).
COLUMNS_DTYPES = ("float64", "complex128")


@dataclass(frozen=True)
class ColumnsSpec:
    """Specialization parameters of ``templates/columns.cl.mako``.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"`` (:data:`COLUMNS_DTYPES`).
    layout : str
        The sweeps' storage of complex G: ``"interleaved"`` or ``"split"``
        (:data:`cljacobi.host.programs.COMPLEX_LAYOUTS`); real data take
        ``"interleaved"``.  The factor a gather reads and the columns
        :func:`normalized_columns` writes are interleaved in both.
    work_group_size : int
        Work-items of the per-column kernels, a power of two.
    hermitian_tile, hermitian_block : int
        The Hermitian kernels' square work-groups (a power of two on a side)
        and the square block of M each covers (a multiple of the tile).
    """

    family: ClassVar[str] = "columns"
    dtype: str
    layout: str = "interleaved"
    work_group_size: int = COLUMN_WORK_GROUP
    hermitian_tile: int = HERMITIAN_TILE
    hermitian_block: int = HERMITIAN_BLOCK

    def __post_init__(self) -> None:
        if self.dtype not in COLUMNS_DTYPES:
            raise ValueError(f"the column kernels handle float64 and complex128, "
                             f"not {self.dtype}")
        check_layout(self.layout, self.dtype == "complex128")
        check_power_of_two("work_group_size", self.work_group_size)
        check_power_of_two("hermitian_tile", self.hermitian_tile)
        if self.hermitian_block % self.hermitian_tile or self.hermitian_block < 1:
            raise ValueError(f"hermitian_block={self.hermitian_block} must be a positive "
                             f"multiple of hermitian_tile={self.hermitian_tile}")

    @property
    def store_ctype(self) -> str:
        """What the sweeps' G holds."""
        return "cjac_real2" if self.dtype == "complex128" and self.layout == "interleaved" \
            else "cjac_real"

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of the three kernels, declared once."""
        store = self.store_ctype
        factor = buffer("src", "__global const cjac_elem *")
        order = buffer("order", "__global const int *")
        column_max = KernelSignature("cjac_column_max", (
            factor, int_arg("lds"), int_arg("m"), buffer("out", "__global cjac_real *"),
        ))
        gather = KernelSignature("cjac_gather_columns", (
            factor, int_arg("lds"), int_arg("m"), order, int_arg("exponent"),
            buffer("dst", f"__global {store} *"), int_arg("ldd"), int_arg("r"),
        ))
        normalized = KernelSignature("cjac_normalized_columns", (
            buffer("src", f"__global const {store} *"), int_arg("lds"), int_arg("m"), order,
            buffer("dst", "__global cjac_elem *"), int_arg("ldd"),
            buffer("nonfinite", "__global int *"),
        ))
        as_uploaded = (buffer("src", "__global const cjac_elem *"), int_arg("ldr"),
                       int_arg("n"), int_arg("rows_are_rows"))
        stats = KernelSignature("cjac_hermitian_stats", (
            *as_uploaded, buffer("stats", "__global cjac_real *"),
        ))
        load = KernelSignature("cjac_hermitian_load", (
            *as_uploaded, int_arg("shift"), buffer("dst", "__global cjac_elem *"),
            int_arg("ldd"),
        ))
        return {sig.name: sig for sig in (column_max, gather, normalized, stats, load)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {
            "real_ctype": "double", "complex_": self.dtype == "complex128",
            "layout": self.layout, "store_ctype": self.store_ctype,
            "work_group_size": self.work_group_size,
            "size_defines": c_defines({"WG": self.work_group_size, "HT": self.hermitian_tile,
                                       "HB": self.hermitian_block}),
            "signatures": self.signatures,
        }


@dataclass
class Operands:
    """G (m x r) and optionally V (r x r) in column-major device buffers.

    Column c of G starts at element ``c * ldg``; ``columns - r`` border
    columns follow the r columns of G, border column ``r + i`` being the unit
    vector ``e_(m + i)`` (so ``rows = m + columns - r`` rows are in use).
    `column_signs` is the signature of the r columns of G (+1 or -1).
    V has `v_rows` rows in use (``columns``, the default: V is square; a
    rank of a distributed run holds all rows of its columns of V).
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
    #: Rows of V in use (None: ``columns``, set so by the constructor).
    v_rows: int | None = None

    def __post_init__(self) -> None:
        if self.v_rows is None:
            self.v_rows = self.columns

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


def bordered_columns(r: int, column_multiple: int) -> int:
    """Columns of an r-column G on the device: bordered to a multiple of
    `column_multiple` (at least one)."""
    return round_up(max(r, 1), column_multiple)


def leading_dimensions(m: int, r: int, columns: int) -> tuple[int, int, int]:
    """``(rows, ldg, ldv)`` of an ``m x r`` G bordered to `columns` columns:
    the rows in use (one new row per border column) and the leading
    dimensions of G and V."""
    rows = m + columns - r
    return rows, round_up(max(rows, 1), ROW_ALIGNMENT), round_up(columns, ROW_ALIGNMENT)


def _sizes(m: int, r: int, column_multiple: int) -> tuple[int, int, int, int]:
    """``(columns, rows, ldg, ldv)`` of the bordered problem."""
    columns = bordered_columns(r, column_multiple)
    return (columns, *leading_dimensions(m, r, columns))


def _to_split(columns: np.ndarray) -> np.ndarray:
    """Complex rows (one per column of G) -> float rows holding re, then im."""
    return np.ascontiguousarray(np.concatenate([columns.real, columns.imag], axis=1))


def _from_split(planes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_to_split`."""
    half = planes.shape[1] // 2
    return planes[:, :half] + 1j * planes[:, half:]


def _identity_buffer(queue: cl.CommandQueue, columns: int, ldv: int, dtype: np.dtype,
                     split: bool) -> cl.Buffer:
    """V = I, `columns` columns of `ldv` elements (in the sweeps' layout).

    In double precision ``cjac_gather_columns`` writes it on the device: with
    no columns of G (``r = 0``) and no rows (``m = 0``) every column is its
    border unit vector ``e_j``.  Single precision (devices without fp64, which
    lack that program) builds it on the host.
    """
    if np.dtype(dtype).name in COLUMNS_DTYPES:
        buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                           np.dtype(dtype).itemsize * ldv * columns)
        unused = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY, 16)
        kernel, _ = _columns_kernel(queue, "cjac_gather_columns", dtype, split, src=unused,
                                    lds=0, m=0, order=unused, exponent=0, dst=buffer, ldd=ldv,
                                    r=0)
        cl.enqueue_nd_range_kernel(queue, kernel, (round_up(ldv, _GATHER_ROWS), columns),
                                   (_GATHER_ROWS, 1))
        queue.finish()  # the kernel object (and `unused`) may go before it ran otherwise
        return buffer
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
    g = buffer_holding(queue, host)
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
    host = read_buffer(queue, ops.g, (ops.columns, stride), part_dtype)
    V = None
    if ops.v is not None:
        v_host = read_buffer(queue, ops.v, (ops.columns, 2 * ops.ldv if ops.split else ops.ldv),
                             part_dtype)
    if ops.split:
        host = _from_split(host)
    G = host[:ops.r, :ops.m].T
    if ops.v is not None:
        V = (_from_split(v_host) if ops.split else v_host)[:ops.r, :ops.r].T
    ops.transfer_seconds += time.perf_counter() - start
    return G, V


def _columns_kernel(queue: cl.CommandQueue, name: str, dtype: np.dtype, split: bool = False,
                    **values: object) -> tuple[cl.Kernel, ColumnsSpec]:
    """Kernel `name` of the column program for `dtype` (and the sweeps' layout),
    its arguments bound by name; and the program's spec."""
    spec = ColumnsSpec(np.dtype(dtype).name, "split" if split else "interleaved")
    program = build_program(queue.context, queue.device, spec)
    return spec.signatures[name].kernel(program, **values), spec


def column_max(queue: cl.CommandQueue, source: cl.Buffer, lds: int, m: int,
               columns: int, dtype: np.dtype = np.float64) -> np.ndarray:
    """``max_i |a_ic|`` of the first `columns` columns of a column-major buffer
    (float64, or interleaved complex128); NaN where a column holds one."""
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 8 * max(columns, 1))
    kernel, spec = _columns_kernel(queue, "cjac_column_max", dtype, src=source, lds=lds, m=m,
                                   out=out)
    wg = spec.work_group_size
    cl.enqueue_nd_range_kernel(queue, kernel, (columns * wg,), (wg,))
    result = np.empty(columns)
    cl.enqueue_copy(queue, result, out)
    return result


@dataclass
class HermitianUpload:
    """A square matrix M as the host holds it, in a device buffer, and what
    :func:`cljacobi.validation.symmetric_part` would record of it, computed
    on the device (:func:`upload_hermitian`).

    Row r of the buffer (at element ``r * ld``) is row r of M when
    `rows_are_rows`, else column r.
    """

    queue: cl.CommandQueue
    buffer: cl.Buffer
    ld: int
    n: int
    rows_are_rows: bool
    dtype: np.dtype
    #: max|M - M^*| (non-finite differences dropped)
    asymmetry: float
    #: largest modulus of the Hermitian part (NaN if an entry is not finite)
    largest: float
    #: smallest nonzero modulus of the Hermitian part (0.0 if none)
    smallest: float
    #: whether every entry of M is finite (both triangles, both parts)
    finite: bool
    #: seconds of the upload and the statistics
    seconds: float = 0.0

    def load(self, dst: cl.Buffer, ldd: int, shift: int) -> None:
        """Enqueue ``dst[j * ldd + i] = 2^shift s_ij`` for ``i >= j`` (the lower
        triangle of the Hermitian part, column-major; nothing above it)."""
        blocks = -(-self.n // HERMITIAN_BLOCK)
        kernel, _ = _columns_kernel(self.queue, "cjac_hermitian_load", self.dtype,
                                    src=self.buffer, ldr=self.ld, n=self.n,
                                    rows_are_rows=int(self.rows_are_rows), shift=shift,
                                    dst=dst, ldd=ldd)
        size = blocks * HERMITIAN_TILE
        cl.enqueue_nd_range_kernel(self.queue, kernel, (size, size),
                                   (HERMITIAN_TILE, HERMITIAN_TILE))


def upload_hermitian(queue: cl.CommandQueue, M: np.ndarray, name: str, *,
                     ld: int, buffer: cl.Buffer | None = None) -> HermitianUpload:
    """M (n x n, float64 or complex128) to the device as it is, checked there.

    The device computes what :func:`cljacobi.validation.symmetric_part`
    records (``cjac_hermitian_stats``; maxima and minima are exact, so the
    values are the same for real M; the modulus of a complex entry is the
    device's ``hypot``, which OpenCL allows 4 ulp, where numpy's is the C
    library's: the scaling reads only their binary exponents, and the
    factorization's window has :data:`cljacobi.scaling.GROWTH_BITS` to
    spare), and the asymmetry test raises its ValueError
    (:func:`cljacobi.validation.check_asymmetry`), before anything else is
    launched.  No host copy of the Hermitian part is made: the caller loads
    it, scaled, where it wants it (:meth:`HermitianUpload.load`).  A C- or
    Fortran-ordered M is copied as it is (rows of M, or rows of M^T); any
    other is made C-contiguous first.  `buffer` (``ld * n`` elements at
    least) receives it, or a new one.  A device whose work-groups cannot
    hold ``HERMITIAN_TILE^2`` work-items is a DeviceCapabilityError before
    anything is copied.
    """
    start = time.perf_counter()
    check_work_group_size(queue.device, HERMITIAN_TILE * HERMITIAN_TILE,
                          "the device's check of M")
    n = M.shape[0]
    dtype = np.dtype(M.dtype)
    rows_are_rows = M.flags.c_contiguous or not M.flags.f_contiguous
    rows = np.ascontiguousarray(M) if rows_are_rows else M.T
    item = dtype.itemsize
    if buffer is None:
        buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, item * ld * max(n, 1))
    write_buffer(queue, buffer, rows, pitch=item * ld)
    blocks = -(-n // HERMITIAN_BLOCK)
    stats_buf = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, 32 * blocks * blocks)
    kernel, _ = _columns_kernel(queue, "cjac_hermitian_stats", dtype, src=buffer, ldr=ld, n=n,
                                rows_are_rows=int(rows_are_rows), stats=stats_buf)
    size = blocks * HERMITIAN_TILE
    cl.enqueue_nd_range_kernel(queue, kernel, (size, size), (HERMITIAN_TILE, HERMITIAN_TILE))
    stats = np.empty((blocks, blocks, 4))
    cl.enqueue_copy(queue, stats, stats_buf)
    lower = stats[np.tril_indices(blocks)]  # the blocks (bi, bj), bi >= bj
    asymmetry, smallest = float(lower[:, 0].max()), float(lower[:, 2].min())
    largest = float(lower[:, 1].max()) if not (lower[:, 3] == 2).any() else np.nan
    check_asymmetry(M, name, asymmetry, largest)
    return HermitianUpload(queue, buffer, ld, n, rows_are_rows, dtype, asymmetry, largest,
                           smallest if np.isfinite(smallest) else 0.0,
                           not lower[:, 3].any(), time.perf_counter() - start)


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
    kernel, _ = _columns_kernel(queue, "cjac_gather_columns", dtype, split, src=source,
                                lds=lds, m=m, order=order_buf, exponent=exponent, dst=g,
                                ldd=ldg, r=r)
    cl.enqueue_nd_range_kernel(queue, kernel, (round_up(ldg, _GATHER_ROWS), columns),
                               (_GATHER_ROWS, 1))
    v = _identity_buffer(queue, columns, ldv, dtype, split) if accumulate_v else None
    queue.finish()
    signs = np.where(np.arange(r) < p, 1, -1)
    return Operands(g, ldg, rows, columns, v, ldv, m, r, _signature(signs, r), dtype, split,
                    time.perf_counter() - start)


class NormalizedColumns(NamedTuple):
    """:func:`normalized_columns`' result."""

    #: The normalized columns (m x len(order), Fortran-ordered).
    vectors: np.ndarray
    #: Whether every entry of `vectors` is finite (tested on the device as
    #: they were written).
    finite: bool


def normalized_columns(queue: cl.CommandQueue, operands: Operands, order: np.ndarray, *,
                       out: np.ndarray | None = None) -> NormalizedColumns:
    """``G[:, order] / ||G[:, order]||`` of double precision operands, on the
    host (m x len(order), Fortran-ordered): the eigenvectors, normalized and
    ordered on the device so that only they cross the bus, and whether they
    are all finite (known without reading them again on the host).  `out`, a
    C-ordered ``(len(order), m)`` array of the operands' dtype (say one
    :func:`cljacobi._threads.touched_empty_soon` prepared), receives them
    transposed instead of a new array."""
    start = time.perf_counter()
    result = enqueue_normalized_columns(queue, operands, order).read(queue, out)
    operands.transfer_seconds += time.perf_counter() - start
    return result


class NormalizedOnDevice(NamedTuple):
    """:func:`enqueue_normalized_columns`' result: the columns in a buffer of
    their own, once `done`, to be read (:meth:`read`, :meth:`read_soon`)."""

    vectors: cl.Buffer
    nonfinite: cl.Buffer
    shape: tuple[int, int]
    dtype: np.dtype
    done: cl.Event

    def read(self, queue: cl.CommandQueue, out: np.ndarray | None = None) -> NormalizedColumns:
        """The columns and their finiteness on the host, read through `queue`
        (after its commands: `done` must be among them, or over)."""
        host = read_buffer(queue, self.vectors, self.shape, self.dtype, out=out)
        nonfinite = np.zeros(1, dtype=np.int32)
        cl.enqueue_copy(queue, nonfinite, self.nonfinite)
        return NormalizedColumns(host.T, not nonfinite[0])

    def read_soon(self, queue: cl.CommandQueue, out: Future[np.ndarray]
                  ) -> Future[NormalizedColumns]:
        """:meth:`read` into ``out.result()`` by the background thread
        (:func:`cljacobi._threads.in_background`), through
        :func:`side_queue(queue) <cljacobi.host.transfers.side_queue>` once
        `done`: the copy crosses the bus while `queue` goes on with its
        kernels."""
        queue.flush()  # the kernel starts, whatever the host does next

        def download() -> NormalizedColumns:
            self.done.wait()
            return self.read(side_queue(queue), out.result())

        return in_background(download)


def enqueue_normalized_columns(queue: cl.CommandQueue, operands: Operands, order: np.ndarray
                               ) -> NormalizedOnDevice:
    """Enqueue ``cjac_normalized_columns``: ``G[:, order] / ||G[:, order]||``
    into a buffer of its own, read from G as the commands before it leave it
    (:func:`normalized_columns`, which also reads them)."""
    ops = operands
    count = len(order)
    out_buf = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY,
                        ops.dtype.itemsize * max(ops.m * count, 1))
    order_buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                          hostbuf=np.ascontiguousarray(order, dtype=np.int32))
    nonfinite_buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=np.zeros(1, dtype=np.int32))
    kernel, spec = _columns_kernel(queue, "cjac_normalized_columns", ops.dtype, ops.split,
                                   src=ops.g, lds=ops.ldg, m=ops.m, order=order_buf, dst=out_buf,
                                   ldd=ops.m, nonfinite=nonfinite_buf)
    wg = spec.work_group_size
    done = cl.enqueue_nd_range_kernel(queue, kernel, (count * wg,), (wg,))
    return NormalizedOnDevice(out_buf, nonfinite_buf, (count, ops.m), ops.dtype, done)
