"""The batched GSVD's shortening and extraction: a stack of pairs on the device.

:func:`cljacobi.gsvd` of a stack of pairs ``(A, B)`` runs three launches, one
work-group per pair: :func:`batched_gsvd_shorten` scales and shortens every pair as the one-pair
path does ([NS] Sect. 2: ``templates/batched_gsvd.cl.mako``'s
``cjac_gsvd_shorten``), :func:`cljacobi.host.batched_hz.launch_batched_hz`
sweeps the square F, G, Z in place, and :func:`batched_gsvd_results` reads
the GSVD off them ([NS] Sect. 2.4) into device arrays in numpy's layout.
Nothing crosses the bus but the pairs' flags and sweep records (and, for
a message, the magnitudes it quotes), so device stacks never leave the
device.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .batched import (
    check_stack_spec,
    element_strides,
    flag_buffers,
    kernel_of,
    math_for,
    memory_pool,
    read_flags,
)
from .batched_hz import BATCHED_HZ_ORDER_LIMIT, BatchedHZLaunch, HZFlags
from .batched_qr import qr_work_group
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg, long_arg

__all__ = ["BatchedGSVD", "BatchedGSVDSpec", "BatchedShortening", "GSVDFlags",
           "batched_gsvd_results", "batched_gsvd_shorten"]


class GSVDFlags:
    """Bits of a pair's status (``CJAC_G_<name>`` in the kernels)."""

    #: A holds an inf or a NaN.
    NOT_FINITE_A = 1
    #: B holds an inf or a NaN.
    NOT_FINITE_B = 2
    #: B's pivoted QR has ``|r_nn| <= n eps |r_11|``.
    B_RANK = 4
    #: Columns of B Z at the rounding level of that product (after the sweeps).
    B_RANK_Z = 8
    #: Z^H met a zero pivot in its LU factorization (X cannot be formed).
    SINGULAR_Z = 16
    #: C, S, X or Z beyond float64.
    RESULT_RANGE = 32


@dataclass(frozen=True)
class BatchedGSVDSpec:
    """Specialization parameters of ``templates/batched_gsvd.cl.mako``; the
    sizes are kernel arguments, so one program serves every shape.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"``.
    prescaled : bool
        The shortening's ``(Z_0)_jj = 1/||g_j||`` ([NS] Sect. 2).
    compute_uv, compute_x : bool
        Whether the results kernel forms U and V, and X.
    work_group_size : int
        Work-items per pair (:func:`cljacobi.host.batched_qr.qr_work_group`).
    math : {"library", "inline"}
        As :attr:`cljacobi.host.batched.BatchedSpec.math`.
    """

    family: ClassVar[str] = "batched_gsvd"
    dtype: str
    prescaled: bool = False
    compute_uv: bool = True
    compute_x: bool = True
    work_group_size: int = 32
    math: str = "library"

    def __post_init__(self) -> None:
        check_stack_spec("the batched GSVD", self.dtype, self.work_group_size, self.math)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """``cjac_gsvd_shorten`` (the stacks A and B; the reflectors, pivots
        and records; the sweeps' F, G, Z) and ``cjac_gsvd_results`` (the
        sweeps' F, G, Z and records; C, S, U, V, X, Z); made once per spec."""
        return _signatures(self)

    def _make_signatures(self) -> dict[str, KernelSignature]:
        element = "cjac_elem"

        def stack(name: str) -> tuple:
            low = name.lower()
            return (buffer(name, f"__global const {element} *"), long_arg(f"{low}_offset"),
                    long_arg(f"{low}_matrix_stride"), long_arg(f"{low}_row_stride"),
                    long_arg(f"{low}_col_stride"))

        sizes = (int_arg("count"), int_arg("m"), int_arg("p"), int_arg("n"))
        records = (buffer("status", "__global int *"), buffer("summary", "__global int *"))
        shorten = (
            *stack("A"), *stack("B"), *sizes,
            buffer("work_a", f"__global {element} *"), buffer("work_b", f"__global {element} *"),
            buffer("tau_a", f"__global {element} *"), buffer("tau_b", f"__global {element} *"),
            buffer("pivots_a", "__global int *"), buffer("pivots_b", "__global int *"),
            buffer("work_r", f"__global {element} *"), buffer("rq_tau", f"__global {element} *"),
            buffer("exponents", "__global int *"), buffer("report", "__global cjac_real *"),
            *records, buffer("F", f"__global {element} *"), buffer("G", f"__global {element} *"),
            buffer("Z", f"__global {element} *"),
        )
        results = (
            buffer("F", f"__global const {element} *"),
            buffer("G", f"__global const {element} *"),
            buffer("Z", f"__global const {element} *"), *sizes,
            buffer("work_a", f"__global const {element} *"),
            buffer("work_b", f"__global const {element} *"),
            buffer("tau_a", f"__global const {element} *"),
            buffer("tau_b", f"__global const {element} *"),
            buffer("pivots_a", "__global const int *"), buffer("pivots_b", "__global const int *"),
            buffer("work_r", f"__global const {element} *"),
            buffer("rq_tau", f"__global const {element} *"),
            buffer("exponents", "__global const int *"),
            buffer("report", "__global const cjac_real *"),
            buffer("shorten_status", "__global const int *"),
            buffer("hz_info", "__global const int *"),
            buffer("scratch", f"__global {element} *"),
            buffer("scratch_tau", f"__global {element} *"),
            buffer("C_out", "__global cjac_real *"), buffer("S_out", "__global cjac_real *"),
            *((buffer("U_out", f"__global {element} *"),
               buffer("V_out", f"__global {element} *")) if self.compute_uv else ()),
            *((buffer("X_out", f"__global {element} *"),) if self.compute_x else ()),
            buffer("Z_out", f"__global {element} *"), buffer("noise_count", "__global int *"),
            *records,
        )
        return {"cjac_gsvd_shorten": KernelSignature("cjac_gsvd_shorten", shorten),
                "cjac_gsvd_results": KernelSignature("cjac_gsvd_results", results)}

    def render_args(self) -> dict[str, object]:
        flags = {f"CJAC_G_{name}": value for name, value in vars(GSVDFlags).items()
                 if name.isupper()}
        sizes = {"WG": self.work_group_size, "KMAX": BATCHED_HZ_ORDER_LIMIT,
                 "CJAC_HZ_NOT_DEFINITE": HZFlags.NOT_DEFINITE}
        return {"complex_": self.dtype == "complex128", "prescaled": self.prescaled,
                "compute_uv": self.compute_uv, "compute_x": self.compute_x, "math": self.math,
                "size_defines": c_defines({**sizes, **flags}), "signatures": self.signatures}


@cache
def _signatures(spec: BatchedGSVDSpec) -> dict[str, KernelSignature]:
    return spec._make_signatures()


def _launch(queue: cl.CommandQueue, spec: BatchedGSVDSpec, name: str, count: int,
            values: dict[str, object]) -> None:
    program = build_program(queue.context, queue.device, spec)
    signature = spec.signatures[name]
    kernel = kernel_of(program, signature)
    signature.bind(kernel, **{arg.name: values[arg.name] for arg in signature.args})
    if count:
        cl.enqueue_nd_range_kernel(queue, kernel, (count * spec.work_group_size,),
                                   (spec.work_group_size,))


def _summary(queue: cl.CommandQueue, summary: cl.MemoryObjectHolder) -> int:
    flags_or = np.empty(1, np.int32)
    cl.enqueue_copy(queue, flags_or, summary)
    return int(flags_or[0])


def _stack_bytes(count: int, m: int, p: int, n: int, itemsize: int, compute_uv: bool,
                 compute_x: bool) -> dict[str, int]:
    """The largest buffers of a stack's three launches, checked before the first."""
    square = count * n * n * itemsize
    needs = {"A QR workspace": count * m * n * itemsize,
             "B QR workspace": count * p * n * itemsize,
             "R_F W (m < n)": square if m < n else 0, "F": square, "G": square, "Z": square,
             "the result Z": square, "the extraction scratch": square}
    if compute_uv:
        needs.update({"U": count * m * n * itemsize, "V": count * p * n * itemsize})
    if compute_x:
        needs["X"] = square
    return needs


@dataclass
class BatchedShortening:
    """What :func:`batched_gsvd_shorten` leaves on the device: the sweeps'
    F, G, Z (contiguous ``(count, n, n)``, pair b's column c at ``[b, c]``),
    the reflectors and pivots for :func:`batched_gsvd_results`, and the
    records; ``summary`` is the OR of the pairs' :class:`GSVDFlags`."""

    spec: BatchedGSVDSpec
    queue: cl.CommandQueue
    count: int
    m: int
    p: int
    n: int
    F: cl_array.Array
    G: cl_array.Array
    Z: cl_array.Array
    buffers: dict[str, cl.MemoryObjectHolder]
    summary: int

    @property
    def flags(self) -> np.ndarray:
        """Every pair's flags (int32 ``(count,)``)."""
        return read_flags(self.queue, self.buffers["status"], self.count, self.summary)

    def report(self) -> np.ndarray:
        """float64 ``(count, 4)``: ``||F||_F``, ``||G||_F``, ``|r_11|`` and
        ``|r_nn|`` of R_G, of the scaled pair."""
        host = np.empty((self.count, 4), np.float64)
        cl.enqueue_copy(self.queue, host, self.buffers["report"])
        return host


def batched_gsvd_shorten(queue: cl.CommandQueue, A: cl_array.Array, B: cl_array.Array, *,
                         prescaled: bool, compute_uv: bool = True, compute_x: bool = True,
                         math: str | None = None) -> BatchedShortening:
    """Scale and shorten every pair of the stacks `A` ``(count, m, n)`` and
    `B` ``(count, p, n)`` (both float64 or both complex128 on `queue`'s
    device, any strides of whole elements; ``p >= n``) as
    :meth:`cljacobi.gsvd._GSVD.factor` does, in one launch: ``2^a A P_1 =
    Q_F R_F``, for ``m < n`` also ``R_F W = [0 T]`` (W unitary: the RQ of
    R_F), ``(2^b B P_1 W) P_2 = Q_G R_G``, ``F = [R_F W; 0] P_2``,
    ``G = R_G`` (and with `prescaled` ``F D``, ``G D``, ``Z_0 = D``).  A pair with inf or
    NaN, or whose R_G fails the rank test, is flagged (:class:`GSVDFlags`)
    and sweeps ``F = 0``, ``G = Z = I``.  `compute_uv` and `compute_x`
    choose what :func:`batched_gsvd_results` forms later (one program).
    """
    if A.dtype != B.dtype or A.dtype not in (np.float64, np.complex128):
        raise ValueError(f"the batched GSVD takes A and B both float64 or both complex128, "
                         f"not {A.dtype} and {B.dtype}")
    a_strides = element_strides(A, "the batched GSVD")
    b_strides = element_strides(B, "the batched GSVD")
    (count, m, n), p = A.shape, B.shape[1]
    if B.shape != (count, p, n) or p < n or not 1 <= n <= BATCHED_HZ_ORDER_LIMIT:
        raise ValueError(f"the batched GSVD takes stacks of pairs with p >= n, n from "
                         f"1 to {BATCHED_HZ_ORDER_LIMIT}; A is {A.shape}, B {B.shape}")
    device = queue.device
    spec = BatchedGSVDSpec(A.dtype.name, prescaled, compute_uv, compute_x,
                           qr_work_group(device, n), math_for(device) if math is None else math)
    itemsize = A.dtype.itemsize
    check_global_memory(device, _stack_bytes(count, m, p, n, itemsize, compute_uv, compute_x))
    pool = memory_pool(queue)
    status, summary = flag_buffers(queue, count)
    buffers = {
        "work_a": pool.allocate(max(count * m * n, 1) * itemsize),
        "work_b": pool.allocate(max(count * p * n, 1) * itemsize),
        "tau_a": pool.allocate(max(count * n, 1) * itemsize),
        "tau_b": pool.allocate(max(count * n, 1) * itemsize),
        "pivots_a": pool.allocate(max(count * n, 1) * 4),
        "pivots_b": pool.allocate(max(count * n, 1) * 4),
        # R_F W and the RQ's tau, for m < n only
        "work_r": pool.allocate((count * n * n if m < n else 1) * itemsize),
        "rq_tau": pool.allocate((count * n if m < n else 1) * itemsize),
        "exponents": pool.allocate(max(count * 2, 1) * 4),
        "report": pool.allocate(max(count * 4, 1) * 8),
        "status": status, "summary": summary,
    }
    F, G, Z = (cl_array.empty(queue, (count, n, n), A.dtype, allocator=pool) for _ in range(3))
    values = {**buffers, "count": count, "m": m, "p": p, "n": n, "F": F.data, "G": G.data,
              "Z": Z.data}
    for name, stack, (offset, matrix, row, col) in (("a", A, a_strides), ("b", B, b_strides)):
        values.update({name.upper(): stack.base_data, f"{name}_offset": offset,
                       f"{name}_matrix_stride": matrix, f"{name}_row_stride": row,
                       f"{name}_col_stride": col})
    _launch(queue, spec, "cjac_gsvd_shorten", count, values)
    return BatchedShortening(spec, queue, count, m, p, n, F, G, Z, buffers,
                             _summary(queue, summary))


@dataclass
class BatchedGSVD:
    """The stack's GSVD as device arrays in numpy's layout: C, S ``(count,
    n)`` float64 (C descending), U ``(count, m, n)``, V ``(count, p, n)``, X
    and Z ``(count, n, n)`` (U, V or X None where not formed); ``summary``
    the OR of the pairs' :class:`GSVDFlags`."""

    C: cl_array.Array
    S: cl_array.Array
    U: cl_array.Array | None
    V: cl_array.Array | None
    X: cl_array.Array | None
    Z: cl_array.Array
    summary: int
    status: cl.MemoryObjectHolder
    noise: cl.MemoryObjectHolder
    count: int
    queue: cl.CommandQueue

    @property
    def flags(self) -> np.ndarray:
        """Every pair's flags (int32 ``(count,)``)."""
        return read_flags(self.queue, self.status, self.count, self.summary)

    def noise_count(self) -> np.ndarray:
        """Per pair flagged ``B_RANK_Z``, how many columns of B Z are at
        rounding level (int32 ``(count,)``; other pairs' entries undefined)."""
        host = np.empty(self.count, np.int32)
        cl.enqueue_copy(self.queue, host, self.noise)
        return host


def batched_gsvd_results(shortening: BatchedShortening, sweeps: BatchedHZLaunch
                         ) -> BatchedGSVD:
    """The GSVD of every pair from the sweeps' F, G, Z of `shortening`
    (:func:`cljacobi.host.batched_hz.launch_batched_hz`, its records in
    `sweeps`), as :func:`cljacobi.gsvd._extract` reads it off one pair.  A
    pair flagged by the shortening or the sweeps (not positive definite)
    has nothing written; one with columns of B Z at rounding level, a
    singular Z or a result beyond float64 is flagged (:class:`GSVDFlags`)."""
    queue, spec = shortening.queue, shortening.spec
    count, m, p, n = shortening.count, shortening.m, shortening.p, shortening.n
    dtype = np.dtype(spec.dtype)
    pool = memory_pool(queue)
    status, summary = flag_buffers(queue, count)
    C, S = (cl_array.empty(queue, (count, n), np.float64, allocator=pool) for _ in range(2))
    Z = cl_array.empty(queue, (count, n, n), dtype, allocator=pool)
    U = V = X = None
    if spec.compute_uv:
        U = cl_array.empty(queue, (count, m, n), dtype, allocator=pool)
        V = cl_array.empty(queue, (count, p, n), dtype, allocator=pool)
    if spec.compute_x:
        X = cl_array.empty(queue, (count, n, n), dtype, allocator=pool)
    noise = pool.allocate(max(count, 1) * 4)
    values = {**shortening.buffers, "F": shortening.F.data, "G": shortening.G.data,
              "Z": shortening.Z.data, "count": count, "m": m, "p": p, "n": n,
              "shorten_status": shortening.buffers["status"], "hz_info": sweeps.info.data,
              "scratch": pool.allocate(max(count * n * n, 1) * dtype.itemsize),
              "scratch_tau": pool.allocate(max(count * n, 1) * dtype.itemsize),
              "C_out": C.data, "S_out": S.data, "Z_out": Z.data, "noise_count": noise,
              "status": status, "summary": summary}
    if U is not None:
        values.update(U_out=U.data, V_out=V.data)
    if X is not None:
        values.update(X_out=X.data)
    _launch(queue, spec, "cjac_gsvd_results", count, values)
    return BatchedGSVD(C, S, U, V, X, Z, _summary(queue, summary), status, noise, count, queue)
