"""The batched QR: svd's and a tall hsvd's shortening of a stack on the device.

:func:`cljacobi.svd` sweeps ``X = R^*`` of the row-sorted, column-pivoted
QR of ``B = A`` (``A^*`` for a wide A), and :func:`cljacobi.hsvd` of a tall
factor sweeps its R (:mod:`cljacobi.shortening`).  For a stack,
``templates/batched_qr.cl.mako`` does that QR for every matrix in one launch,
one work-group per matrix: :func:`batched_qr` shifts each B by a power of two
(:func:`cljacobi.scaling.factor_shift`), sorts its rows, factors it by
Householder reflectors with column pivoting (LAPACK ``xGEQP3``), and leaves
the square factors for :func:`cljacobi.host.batched.batched_hsvd`;
:func:`batched_qr_results` shifts S back and forms the vectors through the
reflectors, in the layout of the caller's results.  Nothing crosses the bus
but the OR of the matrices' flags; a matrix the QR refuses is flagged
(:class:`cljacobi.host.batched.BatchStatus`) and its column maxima, read on
demand, give the one-matrix path's message.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ..scaling import factor_shift_bounds
from .batched import (
    BATCHED_GLOBAL_ORDER_LIMIT,
    FATAL,
    BatchedRun,
    BatchStatus,
    check_stack_spec,
    element_strides,
    flag_buffers,
    kernel_of,
    math_for,
    memory_pool,
    read_flags,
)
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg, long_arg

__all__ = ["QR_PROBLEMS", "BatchedQR", "BatchedQRResults", "BatchedQRSpec", "batched_qr",
           "batched_qr_results", "qr_work_group"]

#: The solvers whose stacks the batched QR shortens.
QR_PROBLEMS = ("svd", "hsvd")


@dataclass(frozen=True)
class BatchedQRSpec:
    """Specialization parameters of ``templates/batched_qr.cl.mako``; the
    sizes are kernel arguments, so one program serves every shape.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"``.
    problem : {"svd", "hsvd"}
        Which factor the QR leaves: svd's ``X = R^*`` (``J = I``, zero
        columns allowed), or hsvd's R with its columns of signature +1 first
        (a zero column refused).
    vectors : bool
        Whether :func:`batched_qr_results` forms U and Vh.
    work_group_size : int
        Work-items per matrix (:func:`qr_work_group`).
    math : {"library", "inline"}
        As :attr:`cljacobi.host.batched.BatchedSpec.math`.
    """

    family: ClassVar[str] = "batched_qr"
    dtype: str
    problem: str = "svd"
    vectors: bool = True
    work_group_size: int = 64
    math: str = "library"

    def __post_init__(self) -> None:
        check_stack_spec("the batched QR", self.dtype, self.work_group_size, self.math)
        if self.problem not in QR_PROBLEMS:
            raise ValueError(f"the batched QR shortens {QR_PROBLEMS}, not {self.problem!r}")

    @property
    def complex_(self) -> bool:
        return self.dtype == "complex128"

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """``cjac_batched_qr`` (the stack, as B or B^*; the workspace and the
        records; the factors) and ``cjac_batched_qr_results`` (the sweeps'
        results; S, U and Vh in the caller's layout); made once per spec."""
        return _signatures(self)

    def _make_signatures(self) -> dict[str, KernelSignature]:
        element = "cjac_elem"
        hsvd = self.problem == "hsvd"
        records = (buffer("status", "__global int *"), buffer("summary", "__global int *"))
        qr = (
            buffer("M", f"__global const {element} *"), int_arg("count"), long_arg("offset"),
            long_arg("matrix_stride"), long_arg("row_stride"), long_arg("col_stride"),
            int_arg("conjugate"), int_arg("rows"), int_arg("k"), int_arg("shift_low"),
            int_arg("shift_high"),
            *((buffer("signs", "__global const int *"), int_arg("sign_stride")) if hsvd else ()),
            buffer("workspace", f"__global {element} *"),
            buffer("row_keys", "__global cjac_real *"), buffer("row_order", "__global int *"),
            buffer("tau", f"__global {element} *"), buffer("column_order", "__global int *"),
            buffer("column_max", "__global cjac_real *"), buffer("exponents", "__global int *"),
            *records, buffer("factors", f"__global {element} *"),
            *((buffer("factor_signs", "__global int *"),) if hsvd else ()),
        )
        vectors = (
            buffer("workspace", f"__global const {element} *"),
            buffer("tau", f"__global const {element} *"),
            buffer("row_order", "__global const int *"),
            buffer("column_order", "__global const int *"),
            buffer("first", f"__global const {element} *"), int_arg("first_row_step"),
            int_arg("first_col_step"), int_arg("conjugate_first"),
            buffer("U_out", f"__global {element} *"), long_arg("u_matrix_stride"),
            int_arg("u_row_step"), int_arg("u_col_step"), int_arg("u_columns"),
            int_arg("conjugate_u"),
            buffer("second", f"__global const {element} *"), int_arg("second_row_step"),
            int_arg("second_col_step"), buffer("other_out", f"__global {element} *"),
            int_arg("other_pivot_step"), int_arg("other_step"), int_arg("conjugate_other"),
        )
        results = (
            int_arg("count"), int_arg("rows"), int_arg("k"),
            buffer("qr_status", "__global const int *"),
            buffer("sweep_status", "__global const int *"),
            buffer("exponents", "__global const int *"),
            buffer("S", "__global const cjac_real *"), buffer("S_out", "__global cjac_real *"),
            *records, *(vectors if self.vectors else ()),
        )
        return {"cjac_batched_qr": KernelSignature("cjac_batched_qr", qr),
                "cjac_batched_qr_results": KernelSignature("cjac_batched_qr_results", results)}

    def render_args(self) -> dict[str, object]:
        flags = {f"CJAC_B_{name}": int(flag) for name, flag in BatchStatus.__members__.items()}
        sizes = {"WG": self.work_group_size, "KMAX": BATCHED_GLOBAL_ORDER_LIMIT,
                 "CJAC_B_FATAL": int(FATAL)}
        return {"complex_": self.complex_, "problem": self.problem, "vectors": self.vectors,
                "math": self.math, "size_defines": c_defines({**sizes, **flags}),
                "signatures": self.signatures}


@cache
def _signatures(spec: BatchedQRSpec) -> dict[str, KernelSignature]:
    return spec._make_signatures()


def qr_work_group(device: cl.Device, k: int) -> int:
    """Work-items per matrix (the batched QR's, and the batched GSVD's per
    pair): on GPUs a warp for k <= 32, two above (a work-item a column in
    the reflectors' updates); on CPUs one.  A CPU runs a work-group's
    work-items one after another anyway: measured on PoCL (2 cores), svd
    stacks take the same time at 1 as at 8 or less (complex 32x32 x 2,000:
    0.46 s against 0.52 s), and PoCL 3 miscompiled the GSVD kernels' work-item
    loops at 8 (a loop's bound ignored after a uniform branch: wrong values
    and writes past a buffer's end; right with optimization off)."""
    if not device.type & cl.device_type.GPU:
        return 1
    return 32 if k <= 32 else 64


@dataclass
class BatchedQR:
    """What :func:`batched_qr` leaves on the device: the square `factors`
    ``(count, k, k)`` and their signature `signs` ``(count, k)`` int32 for
    the sweeps, the reflectors and the pivots for :func:`batched_qr_results`,
    and the records (read on demand)."""

    spec: BatchedQRSpec
    queue: cl.CommandQueue
    count: int
    rows: int
    k: int
    transposed: bool
    factors: cl_array.Array
    signs: cl_array.Array
    buffers: dict[str, cl.MemoryObjectHolder]
    summary_host: np.ndarray

    @property
    def summary(self) -> int:
        """The OR of every matrix's flags (its read was queued after the launch)."""
        self.queue.finish()
        return int(self.summary_host[0])

    def _read(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        host = np.empty(shape, dtype)
        cl.enqueue_copy(self.queue, host, self.buffers[name])
        return host

    @property
    def flags(self) -> np.ndarray:
        """Every matrix's flags (int32 ``(count,)``)."""
        return read_flags(self.queue, self.buffers["status"], self.count, self.summary)

    def exponents(self) -> np.ndarray:
        """The shift t of every matrix (int32 ``(count,)``; B was scaled by ``2^t``)."""
        return self._read("exponents", (self.count,), np.int32)

    def column_max(self) -> np.ndarray:
        """``max_i |b_ic|`` of every matrix, float64 ``(count, k)`` (NaN where
        a column holds one): what the shift was computed from."""
        return self._read("column_max", (self.count, self.k), np.float64)


@dataclass
class BatchedQRResults:
    """S ``(count, k)`` at its size, and U and Vh in the caller's layout (None
    without vectors), as device arrays; `flags` per matrix where S could
    not be shifted back (``VALUE_RANGE``)."""

    S: cl_array.Array
    U: cl_array.Array | None
    Vh: cl_array.Array | None
    summary: int
    status: cl.MemoryObjectHolder
    count: int
    queue: cl.CommandQueue

    @property
    def flags(self) -> np.ndarray:
        return read_flags(self.queue, self.status, self.count, self.summary)


def batched_qr(queue: cl.CommandQueue, stack: cl_array.Array, *, problem: str = "svd",
               signs: cl_array.Array | None = None, transposed: bool = False,
               vectors: bool = True, math: str | None = None) -> BatchedQR:
    """Shorten every matrix of `stack`, ``(count, m, n)`` float64 or
    complex128 on `queue`'s device (any strides of whole elements), to a
    square factor: ``B = A`` (``A^*`` with `transposed`), ``m_B x k`` with
    ``m_B >= k``, shifted by ``2^t`` (:func:`cljacobi.scaling.factor_shifts`'
    t), its rows sorted by decreasing max-norm (stably), ``B[:, p] = Q R``
    by Householder QR with column pivoting.  ``problem="svd"`` gives
    ``X = R^*`` (signature +1); ``"hsvd"`` (`signs` int32 ``(count, k)`` or
    ``(k,)``) gives R's columns of signature +1 first, each sign in pivot
    order, and their signature.

    Nothing is read back but the OR of the flags (queued; read by
    :attr:`BatchedQR.summary`): ``NOT_FINITE``, ``FACTOR_RANGE`` (the
    shift's range, :func:`cljacobi.scaling.factor_shift_from_maxima`) and,
    for hsvd, ``ZERO_COLUMN``; a flagged matrix's factor is zero.
    """
    if problem not in QR_PROBLEMS:
        raise ValueError(f"the batched QR shortens {QR_PROBLEMS}, not {problem!r}")
    offset, matrix_stride, row_stride, col_stride = element_strides(stack, "the batched QR")
    count, m, n = stack.shape
    rows, k = (n, m) if transposed else (m, n)
    if transposed:
        row_stride, col_stride = col_stride, row_stride
    if rows < k or not 1 <= k <= BATCHED_GLOBAL_ORDER_LIMIT:
        raise ValueError(f"the batched QR takes m_B >= k, k from 1 to "
                         f"{BATCHED_GLOBAL_ORDER_LIMIT}; B is {rows} x {k}")
    hsvd = problem == "hsvd"
    if hsvd and (signs is None or signs.dtype != np.int32 or not signs.flags.c_contiguous
                 or signs.shape not in {(k,), (count, k)}):
        raise ValueError(f"hsvd's signs must be contiguous int32 of shape ({k},) or "
                         f"({count}, {k})")
    device = queue.device
    spec = BatchedQRSpec("complex128" if stack.dtype == np.complex128 else "float64", problem,
                         vectors, qr_work_group(device, k),
                         math_for(device) if math is None else math)
    itemsize = stack.dtype.itemsize
    check_global_memory(device, {"QR workspace": count * rows * k * itemsize,
                                 "square factors": count * k * k * itemsize})
    program = build_program(queue.context, device, spec)
    pool = memory_pool(queue)
    status, summary = flag_buffers(queue, count)
    buffers = {
        "workspace": pool.allocate(count * rows * k * itemsize),
        "row_keys": pool.allocate(count * rows * 8),
        "row_order": pool.allocate(count * rows * 4),
        "tau": pool.allocate(count * k * itemsize),
        "column_order": pool.allocate(count * k * 4),
        "column_max": pool.allocate(count * k * 8),
        "exponents": pool.allocate(count * 4),
        "status": status, "summary": summary,
    }
    factors = cl_array.empty(queue, (count, k, k), stack.dtype, allocator=pool)
    factor_signs = (cl_array.empty(queue, (count, k), np.int32, allocator=pool) if hsvd
                    else cl_array.to_device(queue, np.ones(k, np.int32)))
    shift_low, shift_high = factor_shift_bounds(rows)
    signature = spec.signatures["cjac_batched_qr"]
    values = {**buffers, "M": stack.base_data, "count": count, "offset": offset,
              "matrix_stride": matrix_stride, "row_stride": row_stride,
              "col_stride": col_stride, "conjugate": int(transposed and spec.complex_),
              "rows": rows, "k": k, "shift_low": shift_low, "shift_high": shift_high,
              "factors": factors.data}
    if hsvd:
        values.update(signs=signs.data, sign_stride=k if signs.ndim == 2 else 0,
                      factor_signs=factor_signs.data)
    kernel = kernel_of(program, signature)
    signature.bind(kernel, **{arg.name: values[arg.name] for arg in signature.args})
    cl.enqueue_nd_range_kernel(queue, kernel, (count * spec.work_group_size,),
                               (spec.work_group_size,))
    summary_host = np.empty(1, np.int32)
    cl.enqueue_copy(queue, summary_host, summary, is_blocking=False)
    return BatchedQR(spec, queue, count, rows, k, transposed, factors, factor_signs, buffers,
                     summary_host)


def batched_qr_results(qr: BatchedQR, run: BatchedRun, *, full_matrices: bool = False
                       ) -> BatchedQRResults:
    """The decompositions of the stack `qr` shortened, from the sweeps' `run`
    on its factors (``X = U_x diag(S) Vh_x``): S shifted back by ``2^-t``
    (flagged ``VALUE_RANGE`` where float64 cannot hold a value), and with
    vectors

    * svd, ``B = A`` (m x n, m >= n): ``U = Q Vh_x^*`` (m x k, or m x m with
      `full_matrices`, the trailing columns completing it through the
      reflectors) and ``Vh = (P U_x)^*``;
    * svd, ``B = A^*`` (wide A): ``U = P U_x`` and ``Vh = (Q Vh_x^*)^*``;
    * hsvd of a tall G: ``U = Q U_R`` and ``Vh = Vh_R`` with its columns
      back in G's order;

    Q's rows back in B's order.  A matrix flagged by the QR or the sweeps
    (:data:`cljacobi.host.batched.FATAL`) has nothing written.
    """
    queue, spec, count, rows, k = qr.queue, qr.spec, qr.count, qr.rows, qr.k
    svd = spec.problem == "svd"
    dtype = np.dtype(spec.dtype)
    u_columns = rows if full_matrices and svd else k
    pool = memory_pool(queue)
    status, summary = flag_buffers(queue, count)
    S_out = cl_array.empty(queue, (count, k), np.float64, allocator=pool)
    values = {"count": count, "rows": rows, "k": k, "qr_status": qr.buffers["status"],
              "sweep_status": run.status, "exponents": qr.buffers["exponents"],
              "S": run.values.data, "S_out": S_out.data, "status": status, "summary": summary}
    U = Vh = None
    if spec.vectors:
        if svd and qr.transposed:  # U = P U_x (k x k), Vh = U_B^* (u_columns x n)
            Vh = U_B = cl_array.empty(queue, (count, u_columns, rows), dtype, allocator=pool)
            U = other = cl_array.empty(queue, (count, k, k), dtype, allocator=pool)
            u_steps, conjugate_u, other_steps, conjugate_other = (1, rows), 1, (k, 1), 0
        else:  # U = Q Y (rows x u_columns); svd: Vh = (P U_x)^*, hsvd: Vh_R's columns back
            U = U_B = cl_array.empty(queue, (count, rows, u_columns), dtype, allocator=pool)
            Vh = other = cl_array.empty(queue, (count, k, k), dtype, allocator=pool)
            u_steps, conjugate_u = (u_columns, 1), 0
            other_steps, conjugate_other = (1, k), int(svd)
        # svd: Y = Vh_x^*, the other side from U_x's rows; hsvd: Y = U_R, the
        # other side from Vh_R's columns
        first, second = (run.Vh, run.U) if svd else (run.U, run.Vh)
        first_steps, second_steps = ((1, k), (k, 1)) if svd else ((k, 1), (1, k))
        values.update(
            workspace=qr.buffers["workspace"], tau=qr.buffers["tau"],
            row_order=qr.buffers["row_order"], column_order=qr.buffers["column_order"],
            first=first.data, first_row_step=first_steps[0], first_col_step=first_steps[1],
            conjugate_first=int(svd), U_out=U_B.data, u_matrix_stride=rows * u_columns,
            u_row_step=u_steps[0], u_col_step=u_steps[1], u_columns=u_columns,
            conjugate_u=conjugate_u, second=second.data, second_row_step=second_steps[0],
            second_col_step=second_steps[1], other_out=other.data,
            other_pivot_step=other_steps[0], other_step=other_steps[1],
            conjugate_other=conjugate_other)
    program = build_program(queue.context, queue.device, spec)
    signature = spec.signatures["cjac_batched_qr_results"]
    kernel = kernel_of(program, signature)
    signature.bind(kernel, **{arg.name: values[arg.name] for arg in signature.args})
    cl.enqueue_nd_range_kernel(queue, kernel, (count * spec.work_group_size,),
                               (spec.work_group_size,))
    flags_or = np.empty(1, np.int32)
    cl.enqueue_copy(queue, flags_or, summary)
    return BatchedQRResults(S_out, U, Vh, int(flags_or[0]), status, count, queue)
