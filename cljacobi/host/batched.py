"""The batched driver: a stack of small matrices solved in one launch.

``templates/batched.cl.mako`` holds every matrix of a work-group in local
memory and runs a whole solver on it.  For eig_indefinite: the checks and
the power-of-two scaling, Bunch-Parlett complete pivoting with the rank
decision, the one-sided sweeps with one work-item per pivot pair (the
pointwise kernel's pair transformation, ``templates/pair.cl.mako``), and the
extraction.  For hsvd of square factors: the columns in sign order, the
scaling, the same sweeps with V accumulated, and the extraction.
:class:`BatchedSpec` is the template's specialization,
:func:`batched_order_limit` the largest order that fits a device's local
memory, :func:`batched_eig` and :func:`batched_hsvd` the launches; the stack
and the results stay on the device, and only the OR of the matrices' flags
comes back (the per-matrix flags and records follow where it is not zero,
or on demand).
"""

from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from ..errors import DeviceCapabilityError
from ..strategies import step_table
from .diagonal import DIAG_DTYPE
from .limits import check_global_memory, check_local_memory
from .matrix_products import compute_capability
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, c_struct, int_arg, long_arg

__all__ = [
    "BATCHED_DTYPES",
    "BATCHED_GLOBAL_ORDER_LIMIT",
    "BATCHED_PROBLEMS",
    "BatchStatus",
    "BatchedRun",
    "BatchedSpec",
    "batched_eig",
    "batched_hsvd",
    "batched_order_limit",
    "element_strides",
    "flag_buffers",
    "kernel_of",
    "lane_sums_for",
    "math_for",
    "memory_pool",
    "read_flags",
    "row_vector_for",
]

#: How a pivot pair's work-items add their sums (:attr:`BatchedSpec.pair_sums`).
PAIR_SUMS = ("local", "shuffle")

#: Rows per explicit vector in a pair's loops (:attr:`BatchedSpec.row_vector`).
ROW_VECTORS = (1, 2, 4, 8, 16)

#: The kernel's math functions (:attr:`BatchedSpec.math`).
MATHS = ("library", "inline")

#: The element types of the batched kernel (double precision only).
BATCHED_DTYPES = ("float64", "complex128")

#: The solvers the batched kernel runs: eig_indefinite; hsvd of square G;
#: and svd's sweeps on R^* (the hsvd kernel with J = I and zero columns).
BATCHED_PROBLEMS = ("eig", "hsvd", "svd")

#: Work-items a work-group aims at: matrices are packed until it is reached.
TARGET_WORK_GROUP = 64

#: Ints of a matrix's info record: flags, sweeps, rank, positive, s, t.
INFO_WIDTH = 6
#: Reals of its report: max|M - M^*|, max|M|, smallest nonzero and largest
#: entry of the symmetrized M, smallest and largest column maximum of G
#: (hsvd: the first zero column of G in entry 0).
REPORT_WIDTH = 6


class BatchStatus(enum.IntFlag):
    """Bits of a matrix's flags (``CJAC_B_<name>`` in the kernel)."""

    NOT_FINITE = 1
    NOT_HERMITIAN = 2
    #: The nonzero entries span more than float64 holds in one scaled copy.
    ENTRY_RANGE = 4
    #: The squared column norms of the factor span more than float64 holds.
    FACTOR_RANGE = 8
    #: A hyperbolic pair was numerically dependent (Status.BROKEN).
    BREAKDOWN = 16
    #: A column below the normal range met one it is not orthogonal to.
    TINY_COLUMN = 32
    NOT_CONVERGED = 64
    #: An eigenvalue (or a singular value) beyond float64's range.
    VALUE_RANGE = 128
    #: hsvd: a zero column of G.
    ZERO_COLUMN = 256


#: The flags that leave a matrix without a result.
FATAL = (BatchStatus.NOT_FINITE | BatchStatus.NOT_HERMITIAN | BatchStatus.ENTRY_RANGE
         | BatchStatus.FACTOR_RANGE | BatchStatus.BREAKDOWN | BatchStatus.TINY_COLUMN
         | BatchStatus.ZERO_COLUMN)


@dataclass(frozen=True)
class BatchedSpec:
    """Specialization parameters of ``templates/batched.cl.mako``.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"``.
    order : int
        n, the order of every matrix of the stack (at least 2).
    matrices_per_group : int
        Matrices a work-group holds.
    rotation : {1, 2}
        Rotation algorithm of Zhou & Brent (1997), Sect. 2.
    sort_diagonal : bool
        Sort_Diagonal before the first and after every sweep.
    vectors : bool
        Whether the eigenvectors (hsvd: U and Vh) are computed.
    matrix_in_global : bool
        Each matrix in a slot of a global workspace instead of local memory
        (orders above :func:`batched_order_limit`, up to
        :data:`BATCHED_GLOBAL_ORDER_LIMIT`; eig only).
    problem : {"eig", "hsvd", "svd"}
        The solver: eig_indefinite, or hsvd of square factors (V accumulated
        in local memory beside G), or the same for svd's ``R^*`` (``J = I``,
        zero columns allowed, every column carrying its peak's rounding).
    row_split : int
        Work-items per pivot pair in the sweeps, a power of two: each takes
        every ``row_split``-th row of the pair, and the pair's sums are added
        in a fixed order (1: one work-item per pair; :func:`sweep_layout`).
    pair_sums : {"local", "shuffle"}
        How a pair's work-items add their sums (with ``row_split > 1``):
        through local memory and a barrier (every device), or with NVIDIA's
        ``shfl.sync`` inside a warp (no barrier); the same tree of additions,
        the same bits.
    row_vector : int
        Rows of a column per explicit OpenCL vector in a pair's loops, with
        ``row_split == 1`` (1: element by element).  On CPUs, whose OpenCL
        compilers run a work-group's work-items one after another and do not
        vectorize a sum (that would reorder it), the vectors are the SIMD
        lanes (:func:`row_vector_for`); each lane keeps its own partial
        sum, so the sums round differently from ``row_vector == 1``, and the
        rotated elements do not.
    lane_sums : {"local", "shuffle"}
        How the work-items of a matrix reduce over its lanes (the maxima and
        argmax of the factorization's pivot search, the checks, the sweeps'
        counts): a tree through local memory with a barrier a level (every
        device), or on NVIDIA its levels within a warp by ``shfl.sync``
        (:func:`lane_sums_for`); the same bits.
    math : {"library", "inline"}
        OpenCL's built-in math functions, or (CPUs: :func:`math_for`)
        clang's builtins for the scalar FMA, square root, absolute value,
        maximum, minimum and copysign (the same correctly rounded
        operations as instructions; PoCL 3.0 calls its built-ins without
        inlining them on some CPUs), hypot in one FMA and a square root
        where the squares neither overflow nor underflow (within 1.25 ulp),
        and row vectors loaded as vector types.
    """

    family: ClassVar[str] = "batched"
    dtype: str
    order: int
    matrices_per_group: int = 1
    rotation: int = 2
    sort_diagonal: bool = True
    vectors: bool = True
    matrix_in_global: bool = False
    problem: str = "eig"
    row_split: int = 1
    pair_sums: str = "local"
    row_vector: int = 1
    math: str = "library"
    lane_sums: str = "local"

    def __post_init__(self) -> None:
        if self.dtype not in BATCHED_DTYPES:
            raise ValueError(f"the batched kernel handles {BATCHED_DTYPES}, not {self.dtype}")
        if self.order < 2:
            raise ValueError(f"the batched kernel needs order >= 2, not {self.order}")
        if self.rotation not in (1, 2):
            raise ValueError(f"the batched kernel runs rotation 1 or 2, not {self.rotation}")
        if self.matrices_per_group < 1:
            raise ValueError("matrices_per_group must be positive")
        if self.problem not in BATCHED_PROBLEMS:
            raise ValueError(f"the batched kernel solves {BATCHED_PROBLEMS}, not {self.problem!r}")
        if self.row_split < 1 or self.row_split & (self.row_split - 1):
            raise ValueError(f"row_split must be a power of two, not {self.row_split}")
        if self.pair_sums not in PAIR_SUMS:
            raise ValueError(f"pair_sums must be one of {PAIR_SUMS}, not {self.pair_sums!r}")
        if self.row_vector not in ROW_VECTORS:
            raise ValueError(f"row_vector must be one of {ROW_VECTORS}, not {self.row_vector}")
        if self.row_vector > 1 and self.row_split > 1:
            raise ValueError("row vectors need one work-item per pair (row_split 1), "
                             f"not {self.row_split}")
        if self.row_vector == 16 and self.complex_:
            raise ValueError("complex row vectors hold at most 8 elements (16 doubles)")
        if self.lane_sums not in PAIR_SUMS:
            raise ValueError(f"lane_sums must be one of {PAIR_SUMS}, not {self.lane_sums!r}")
        if self.lane_sums == "shuffle" and self.work_group_size % 32:
            raise ValueError("lane_sums='shuffle' needs whole warps of 32 work-items, not "
                             f"{self.work_group_size}")
        if self.math not in MATHS:
            raise ValueError(f"math must be one of {MATHS}, not {self.math!r}")
        if self.pair_sums == "shuffle" and (self.row_split > 32 or self.work_group_size % 32):
            raise ValueError("pair_sums='shuffle' needs whole warps of 32 work-items and a "
                             f"row split of at most 32, not {self.work_group_size} work-items "
                             f"split {self.row_split}")

    @property
    def complex_(self) -> bool:
        return self.dtype == "complex128"

    @property
    def padded_order(self) -> int:
        """NPAD: n rounded up to even (room for the border column)."""
        return self.order + (self.order & 1)

    @property
    def lanes(self) -> int:
        """Work-items per matrix: the pivot pairs of a step, a power of two,
        times the row split."""
        return lanes_for(self.order, self.row_split)

    @property
    def leading_dimension(self) -> int:
        """LD: rows of a column in local memory, above n (the border row) and
        odd, so that the work-items of a step, which read the same row of
        different columns, hit different banks."""
        return (self.order + 1) | 1

    @property
    def work_group_size(self) -> int:
        return self.lanes * self.matrices_per_group

    @property
    def local_bytes(self) -> int:
        return local_bytes(self.order, self.complex_, self.vectors, self.matrices_per_group,
                           matrix_in_global=self.matrix_in_global, problem=self.problem,
                           row_split=self.row_split, pair_sums=self.pair_sums)

    @property
    def workspace_elements(self) -> int:
        """Elements of one matrix's slot in the global workspace (0 in local memory)."""
        if not self.matrix_in_global:
            return 0
        copies = 2 if self.problem != "eig" and self.vectors else 1  # G (and V)
        return copies * self.padded_order * self.leading_dimension

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The kernel of the problem: the stack, (hsvd: the signatures,) the
        step tables, the results, the records (and the global workspace);
        made once per spec (:func:`_signatures`), as every launch binds its
        arguments by these names."""
        return _signatures(self)

    def _make_signatures(self) -> dict[str, KernelSignature]:
        element = "cjac_elem"
        stack = (buffer("M", f"__global const {element} *"), int_arg("count"),
                 long_arg("offset"), long_arg("matrix_stride"), long_arg("row_stride"),
                 long_arg("col_stride"))
        tables = (buffer("pairs", "__global const int2 *"),
                  buffer("table_start", "__global const int2 *"), int_arg("sweep_tables"),
                  int_arg("max_sweeps"))
        records = (buffer("status", "__global int *"), buffer("summary", "__global int *"),
                   buffer("info", "__global int *"), buffer("report", "__global cjac_real *"),
                   buffer("rotations", "__global int *"))
        vector = buffer("U", f"__global {element} *")
        workspace = ((buffer("workspace", f"__global {element} *"),)
                     if self.matrix_in_global else ())
        if self.problem != "eig":
            name = "cjac_batched_hsvd"
            args = (*stack, buffer("signs", "__global const int *"), long_arg("sign_stride"),
                    *tables, buffer("S", "__global cjac_real *"),
                    buffer("J_out", "__global char *"),
                    *((vector, buffer("Vh", f"__global {element} *")) if self.vectors else ()),
                    *records, *workspace)
        else:
            name = "cjac_batched_eig"
            args = (*stack, *tables, buffer("W", "__global cjac_real *"),
                    *((vector,) if self.vectors else ()), *records, *workspace)
        return {name: KernelSignature(name, args)}

    def render_args(self) -> dict[str, object]:
        sizes = {
            "N": self.order, "NPAD": self.padded_order, "LD": self.leading_dimension,
            "LANES": self.lanes, "ROW_SPLIT": self.row_split, "MPG": self.matrices_per_group,
            "WG": self.work_group_size,
            "INFO_WIDTH": INFO_WIDTH, "REPORT_WIDTH": REPORT_WIDTH,
        }
        flags = {f"CJAC_B_{name}": int(flag) for name, flag in BatchStatus.__members__.items()}
        return {
            "complex_": self.complex_, "rotation": self.rotation,
            "sort_diagonal": self.sort_diagonal, "vectors": self.vectors,
            "matrix_in_global": self.matrix_in_global, "problem": self.problem,
            "row_split": self.row_split, "pair_sums": self.pair_sums,
            "row_vector": self.row_vector, "math": self.math, "lane_sums": self.lane_sums,
            "size_defines": c_defines({**sizes, **flags}),
            "diag_struct": c_struct("cjac_diag", DIAG_DTYPE),
            "signatures": self.signatures,
        }


@cache
def _signatures(spec: BatchedSpec) -> dict[str, KernelSignature]:
    return spec._make_signatures()


def lanes_for(order: int, row_split: int = 1) -> int:
    """Work-items per matrix: the smallest power of two >= ceil(n / 2), times
    `row_split`."""
    pairs = (order + 1) // 2
    return row_split << max(pairs - 1, 0).bit_length()


def local_bytes(order: int, complex_: bool, vectors: bool, matrices: int, *,
                matrix_in_global: bool = False, problem: str = "eig",
                row_split: int = 1, pair_sums: str = "local") -> int:
    """Local memory of a work-group of `matrices` matrices of order n (the
    matrices themselves not counted with `matrix_in_global`; hsvd with
    `vectors` keeps V beside G; a row split adds its pair sums in local
    memory)."""
    npad = order + (order & 1)
    ld = (order + 1) | 1
    element = 16 if complex_ else 8
    copies = 2 if problem != "eig" and vectors else 1
    per_matrix = ((0 if matrix_in_global else copies * npad * ld * element)  # A (and V)
                  + 2 * npad * DIAG_DTYPE.itemsize  # D and its sort buffer
                  + 8 * npad                        # peaks (and row norms, eigenvalues)
                  + 4 * order + 12 * npad           # perm, sign (and missing), second,
                                                    # column_of
                  + 4 + 128)                        # starts, state
    lanes = lanes_for(order, row_split)
    # a_ij and three real sums per work-item
    sums = element + 3 * 8 if row_split > 1 and pair_sums == "local" else 0
    return matrices * (per_matrix + lanes * (12 + sums))  # + scratch and keys


#: The largest order of the batched kernel with the matrices in global memory.
BATCHED_GLOBAL_ORDER_LIMIT = 128


def batched_order_limit(device: cl.Device, complex_: bool, vectors: bool = True,
                        problem: str = "eig") -> int:
    """The largest order whose matrix fits the device's local memory alone
    (eig: real n = 72 and complex n = 52 in 48 KiB; hsvd and svd with U and
    Vh: real 52 and complex 36); above it up to
    :data:`BATCHED_GLOBAL_ORDER_LIMIT` the kernel keeps the matrices in
    global memory."""
    return _order_limit(int(device.local_mem_size), complex_, vectors, problem)


@cache
def _order_limit(available: int, complex_: bool, vectors: bool, problem: str) -> int:
    order = 1
    while local_bytes(order + 1, complex_, vectors, 1, problem=problem) <= available:
        order += 1
    return order


def matrices_per_group(device: cl.Device, order: int, complex_: bool, vectors: bool, *,
                       matrix_in_global: bool = False, problem: str = "eig",
                       row_split: int = 1) -> int:
    """Matrices a work-group holds: up to :data:`TARGET_WORK_GROUP` work-items,
    within the local memory and the work-group size of the device."""
    lanes = lanes_for(order, row_split)
    count = max(1, TARGET_WORK_GROUP // lanes)
    limit = min(int(device.max_work_group_size), TARGET_WORK_GROUP * 4)
    while count > 1 and (local_bytes(order, complex_, vectors, count,
                                     matrix_in_global=matrix_in_global, problem=problem,
                                     row_split=row_split)
                         > int(device.local_mem_size) or count * lanes > limit):
        count //= 2
    return count


#: The sweeps' layout on GPUs, measured on an H100 (bench/README.md,
#: "bench_batched.py"): (solver, complex, matrices in global memory, pivot
#: pairs per step) -> (work-items per pair, how they add their sums); one
#: work-item per pair for the rest.  "hsvd" stands for svd too.  Where the
#: matrices are in local memory few work-groups fit an SM (six real
#: 64 x 64 ones) and a step's latency is the limit: two work-items per pair
#: halve it.  A matrix in global memory gains up to eight: the hsvd of
#: 2,000 real 64 x 64 factors went from 0.135 to 0.026 s.
GPU_SWEEP_LAYOUT = {
    # kernel alone, seconds for 2,000 matrices (n <= 64) or 500 (n = 128)
    ("eig", False, False, 32): (2, "shuffle"),    # real n = 33..64: 0.0101 -> 0.0089
    ("eig", False, True, 64): (8, "shuffle"),     # real n = 73..128: 0.147 -> 0.034 at 128
    ("eig", True, False, 16): (2, "shuffle"),     # complex n = 17..32: 0.0117 -> 0.0099
    ("eig", True, False, 32): (4, "shuffle"),     # complex n = 33..52: 0.0130 -> 0.0093
    ("eig", True, True, 32): (8, "local"),        # complex n = 53..64: 0.098 -> 0.023
    ("eig", True, True, 64): (8, "shuffle"),      # complex n = 65..128: 0.212 -> 0.058 at 128
    ("hsvd", False, False, 32): (4, "shuffle"),   # real n = 33..52: 0.0099 -> 0.0074
    ("hsvd", False, True, 32): (8, "shuffle"),    # real n = 53..64: 0.135 -> 0.026
    ("hsvd", False, True, 64): (8, "shuffle"),    # real n = 65..128: 0.249 -> 0.061 at 128
    ("hsvd", True, False, 16): (2, "shuffle"),    # complex n = 17..32: 0.0162 -> 0.0140
    ("hsvd", True, True, 32): (8, "shuffle"),     # complex n = 37..64: 0.091 -> 0.021
    ("hsvd", True, True, 64): (8, "shuffle"),     # complex n = 65..128: 0.358 -> 0.195 at 128
}


def sweep_layout(device: cl.Device, problem: str, order: int, complex_: bool,
                 matrix_in_global: bool) -> tuple[int, str]:
    """``(row_split, pair_sums)`` of the sweeps (:class:`BatchedSpec`) as
    measured: on GPUs the layout of :data:`GPU_SWEEP_LAYOUT`; one work-item
    per pair on CPUs, whose work-items of a work-group run one after
    another, and for the orders not in the table.  Whether it fits the
    device is :func:`_specialization`'s to decide."""
    if not device.type & cl.device_type.GPU:
        return 1, "local"
    solver = "eig" if problem == "eig" else "hsvd"
    return GPU_SWEEP_LAYOUT.get((solver, complex_, matrix_in_global, lanes_for(order)),
                                (1, "local"))


def row_vector_for(device: cl.Device, complex_: bool, order: int) -> int:
    """Rows per explicit vector in the sweeps' loops (:class:`BatchedSpec`).

    On GPUs 1: their work-items are the SIMD lanes.  On CPUs, as measured
    with PoCL 3.0 on two cores of an AVX-512 Xeon, whose preferred vector
    width of double is 8 (bench/README.md, "bench_batched.py"): complex
    elements by that width (a vector of 16 doubles), real ones by half of
    it (4,000 matrices 32 x 32: real 0.48 s at 4 against 0.52 s at 8,
    complex 0.74 s at 8 against 0.82 s at 4); at least 2, and at most half
    a column, the rest of which goes element by element.
    """
    if device.type & cl.device_type.GPU:
        return 1
    width = max(int(device.preferred_vector_width_double), 2)
    elements = width if complex_ else width // 2
    while elements > 2 and 2 * elements > order:
        elements //= 2
    return max(elements, 2)


def math_for(device: cl.Device) -> str:
    """The kernel's math functions (:class:`BatchedSpec`): clang's builtins
    on CPUs ("inline"), OpenCL's built-ins on GPUs ("library")."""
    return "library" if device.type & cl.device_type.GPU else "inline"


def lane_sums_for(device: cl.Device, work_group_size: int) -> str:
    """How a matrix's work-items reduce over its lanes (:class:`BatchedSpec`):
    by NVIDIA's shuffles where the work-group is whole warps, through local
    memory elsewhere."""
    nvidia = compute_capability(device) is not None
    return "shuffle" if nvidia and work_group_size % 32 == 0 else "local"


def _shuffles_fit(device: cl.Device, work_group_size: int, row_split: int) -> bool:
    """Whether a pair's sums can go by NVIDIA's shuffles: an NVIDIA device, a
    split within a warp, and whole warps."""
    return (compute_capability(device) is not None and 1 < row_split <= 32
            and work_group_size % 32 == 0)


@cache
def _tables(strategy: str, order: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Every step table up to the order n, for each even bordered rank:
    ``(pairs, table_start, sweep_tables)``; ``table_start[r / 2]`` is the
    first pair and the steps of rank r's table (entry 0 for rank 0)."""
    # The ring alternates forward and backward sweeps (Zhou & Brent 1997,
    # Sect. 4); mm's odd sweeps differ from its even ones only by the slot a
    # pair takes, and here every pair is one work-item's alone.
    sweeps = 2 if strategy == "ring" else 1
    npad = order + (order & 1)
    chunks, starts, offset = [], [(0, 0)], 0
    for r in range(2, npad + 1, 2):
        tables = [step_table(strategy, r, sweep=q) for q in range(sweeps)]
        pairs = np.concatenate([t.pairs for t in tables]).astype(np.int32)
        chunks.append(pairs.reshape(-1, 2))
        starts.append((offset, tables[0].steps))
        offset += pairs.shape[0] * pairs.shape[1]
    return (np.ascontiguousarray(np.concatenate(chunks)),
            np.array(starts, dtype=np.int32), sweeps)


_device_cache: dict[tuple[int, str, int], tuple[cl_array.Array, cl_array.Array, int]] = {}
_pools: dict[int, cl_tools.MemoryPool] = {}
_cache_lock = threading.Lock()


def check_stack_spec(what: str, dtype: str, work_group_size: int, math: str) -> None:
    """What the specs of the stack families around the sweeps (the batched
    QR, the GSVD's shortening and extraction) check alike: a dtype of
    float64 or complex128, a positive work-group, a known `math`;
    ValueError naming `what` (``"the batched QR"``)."""
    if dtype not in BATCHED_DTYPES:
        raise ValueError(f"{what} handles float64 and complex128, not {dtype}")
    if work_group_size < 1:
        raise ValueError("work_group_size must be positive")
    if math not in MATHS:
        raise ValueError(f"math must be one of {MATHS}, not {math!r}")


def memory_pool(queue: cl.CommandQueue) -> cl_tools.MemoryPool:
    """The context's pool for the launch's buffers: a stack of 262,144 2x2
    matrices takes 0.1 ms in the kernel, and fresh device buffers for its
    results cost ms a call (the pool keeps freed buffers for the next one,
    as CuPy's allocator does)."""
    key = queue.context.int_ptr
    with _cache_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
        return pool


def _device_tables(queue: cl.CommandQueue, strategy: str, order: int
                   ) -> tuple[cl_array.Array, cl_array.Array, int]:
    """:func:`_tables` on the device, uploaded once per context."""
    key = (queue.context.int_ptr, strategy, order)
    with _cache_lock:
        cached = _device_cache.get(key)
        if cached is None:
            pairs, starts, sweep_tables = _tables(strategy, order)
            cached = _device_cache[key] = (cl_array.to_device(queue, pairs),
                                           cl_array.to_device(queue, starts), sweep_tables)
        return cached


_thread_kernels = threading.local()


def kernel_of(program: cl.Program, signature: KernelSignature) -> cl.Kernel:
    """This thread's kernel object of `program` (creating one costs more than a
    small stack's launch; the arguments are bound for every call, so threads
    that share a queue never share one)."""
    kernels = getattr(_thread_kernels, "kernels", None)
    if kernels is None:
        kernels = _thread_kernels.kernels = {}
    key = (program.int_ptr, signature.name)
    kernel = kernels.get(key)
    if kernel is None:
        kernel = kernels[key] = cl.Kernel(program, signature.name)
    return kernel


@dataclass
class BatchedRun:
    """A launch's results: device arrays, and the OR of the flags on the host.

    ``values`` holds the eigenvalues ascending (eig) or the hyperbolic
    singular values descending (hsvd), ``(count, n)``; ``U`` the
    eigenvectors or U, ``(count, n, n)``, where asked for; hsvd adds ``J``
    (int8, the signature in the order of S) and ``Vh``.

    ``summary`` (the OR of every matrix's flags) is read at once: where it
    is zero no matrix needs a message, and :attr:`flags` is zero without a
    read-back.  The per-matrix records stay in device buffers until
    :attr:`flags` or :meth:`records` reads them: ``status`` (the flags,
    int32 ``(count,)``), ``info`` (int32 ``(count, 6)``: flags, sweeps,
    rank, positive, s, t), ``report`` (the magnitudes the error messages
    quote, float64 ``(count, 6)``) and ``rotations`` (int32, per sweep,
    ``(count, max(max_sweeps, 1))``).
    """

    values: cl_array.Array
    U: cl_array.Array | None
    queue: cl.CommandQueue
    count: int
    summary: int
    status: cl.MemoryObjectHolder
    info: cl.MemoryObjectHolder
    report: cl.MemoryObjectHolder
    rotations: cl.MemoryObjectHolder
    max_sweeps: int
    work_group_size: int
    seconds: float
    #: The launch (its profiling times where the queue profiles).
    event: cl.Event
    J: cl_array.Array | None = None
    Vh: cl_array.Array | None = None

    def _read(self, buffer: cl.MemoryObjectHolder, shape: tuple[int, ...],
              dtype: type) -> np.ndarray:
        host = np.empty(shape, dtype)
        cl.enqueue_copy(self.queue, host, buffer)
        return host

    @property
    def flags(self) -> np.ndarray:
        """Every matrix's flags on the host (read only where one is set)."""
        return read_flags(self.queue, self.status, self.count, self.summary)

    def records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(info, report, rotations)`` on the host."""
        rotations = self._read(self.rotations, (self.count, max(self.max_sweeps, 1)), np.int32)
        return (self._read(self.info, (self.count, INFO_WIDTH), np.int32),
                self._read(self.report, (self.count, REPORT_WIDTH), np.float64),
                rotations[:, : self.max_sweeps])


#: The initial value of the launch's OR of flags, filled on the device before
#: each launch (a fill costs 2 us on PoCL, a copy from the host 48 us).
NO_FLAGS = np.int32(0)


def flag_buffers(queue: cl.CommandQueue, count: int
                 ) -> tuple[cl.MemoryObjectHolder, cl.MemoryObjectHolder]:
    """A launch's per-matrix flags (int32 ``(count,)``) and their OR, zeroed
    on the device, as plain buffers of the pool: a pyopencl Array costs tens
    of microseconds to make, which a 2x2 stack's call notices."""
    pool = memory_pool(queue)
    status, summary = pool.allocate(max(count, 1) * 4), pool.allocate(4)
    cl.enqueue_fill_buffer(queue, summary, NO_FLAGS, 0, 4)
    return status, summary


def read_flags(queue: cl.CommandQueue, status: cl.MemoryObjectHolder, count: int,
               summary: int) -> np.ndarray:
    """Every matrix's flags on the host: zeros without a read where their OR
    `summary` is zero."""
    host = np.zeros(count, np.int32)
    if summary:
        cl.enqueue_copy(queue, host, status)
    return host


def element_strides(stack: cl_array.Array, what: str) -> tuple[int, int, int, int]:
    """The offset and strides of a ``(count, m, n)`` stack in elements
    (ValueError, naming `what` takes it, where one is not a whole number of
    elements)."""
    itemsize = stack.dtype.itemsize
    if stack.ndim != 3 or stack.offset % itemsize or any(s % itemsize for s in stack.strides):
        raise ValueError(f"{what} takes a (count, m, n) stack whose offset and strides are "
                         "whole elements")
    return (stack.offset // itemsize, *(s // itemsize for s in stack.strides))


def _launch(queue: cl.CommandQueue, spec: BatchedSpec, program: cl.Program, count: int,
            max_sweeps: int, arguments: dict[str, object], start: float,
            **results: cl_array.Array | None) -> BatchedRun:
    """Allocate the records (and the global workspace of `spec`), bind
    `arguments` and them by name, launch `spec`'s kernel (in `program`) over
    `count` matrices, read the OR of the flags back; the run's seconds count
    from `start`."""
    pool = memory_pool(queue)
    workspace_bytes = _workspace_bytes(spec, count)
    status, summary = flag_buffers(queue, count)  # plain buffers, as the records
    info = pool.allocate(count * INFO_WIDTH * 4)
    report = pool.allocate(count * REPORT_WIDTH * 8)
    # written for the sweeps run, read only up to them
    rotations = pool.allocate(count * max(max_sweeps, 1) * 4)
    values = {**arguments, "max_sweeps": max_sweeps, "status": status, "summary": summary,
              "info": info, "report": report, "rotations": rotations,
              "workspace": pool.allocate(workspace_bytes) if workspace_bytes else None}
    (signature,) = spec.signatures.values()
    kernel = kernel_of(program, signature)
    signature.bind(kernel, **{arg.name: values[arg.name] for arg in signature.args})
    groups = -(-count // spec.matrices_per_group)
    event = cl.enqueue_nd_range_kernel(queue, kernel, (groups * spec.work_group_size,),
                                       (spec.work_group_size,))
    # 4 bytes back instead of every matrix's flags (1 MB for 262,144 matrices,
    # and the host's work on them, took longer than the launch of 2x2 stacks)
    flags_or = np.empty(1, np.int32)
    cl.enqueue_copy(queue, flags_or, summary)
    seconds = time.perf_counter() - start
    return BatchedRun(results["values"], results.get("U"), queue, count, int(flags_or[0]),
                      status, info, report, rotations, max_sweeps, spec.work_group_size,
                      seconds, event, J=results.get("J"), Vh=results.get("Vh"))


def _specialization(queue: cl.CommandQueue, stack: cl_array.Array, problem: str, *,
                    vectors: bool, rotation: int, sort_diagonal: bool,
                    matrix_in_global: bool | None, row_split: int | None,
                    pair_sums: str | None, row_vector: int | None = None,
                    math: str | None = None, lane_sums: str | None = None) -> BatchedSpec:
    """The kernel's specialization for `stack` on `queue`'s device: the
    matrices in local memory up to :func:`batched_order_limit`, in global
    memory above (`matrix_in_global` None), or as `matrix_in_global` says;
    the sweeps' layout of :func:`sweep_layout`, halved where its work-items
    would exceed the device's work-group size or their scratch its local
    memory beside the matrix, or the `row_split` and `pair_sums` given (a
    split given without its sums: by shuffles where they fit); the row
    vectors of :func:`row_vector_for` with one work-item per pair, or the
    `row_vector` given; the math of :func:`math_for`, or the `math` given;
    the lanes' reductions of :func:`lane_sums_for`, or the `lane_sums`
    given; as many matrices per work-group as fit."""
    device, n = queue.device, stack.shape[-1]
    complex_ = stack.dtype == np.complex128
    dtype = "complex128" if complex_ else "float64"
    in_global = (n > batched_order_limit(device, complex_, vectors, problem)
                 if matrix_in_global is None else matrix_in_global)
    split, sums = sweep_layout(device, problem, n, complex_, in_global)
    if row_split is not None:  # asked for: by shuffles where they fit
        split, sums = row_split, "shuffle"
    chosen_math = math_for(device) if math is None else math
    while True:
        group = matrices_per_group(device, n, complex_, vectors, problem=problem,
                                   matrix_in_global=in_global, row_split=split)
        work_items = lanes_for(n, split) * group
        chosen = pair_sums
        if chosen is None:
            fit = _shuffles_fit(device, work_items, split)
            chosen = sums if sums == "local" or fit else "local"
        if row_vector is not None:
            vector = row_vector
        else:
            vector = row_vector_for(device, complex_, n) if split == 1 else 1
        spec = BatchedSpec(dtype, n, group, rotation, sort_diagonal, vectors, problem=problem,
                           matrix_in_global=in_global, row_split=split, pair_sums=chosen,
                           row_vector=vector, math=chosen_math,
                           lane_sums=(lane_sums_for(device, work_items)
                                      if lane_sums is None else lane_sums))
        if (row_split is not None or split == 1
                or (spec.local_bytes <= int(device.local_mem_size)
                    and spec.work_group_size <= int(device.max_work_group_size))):
            return spec
        split //= 2  # the measured layout does not fit this device: a smaller split


def _workspace_bytes(spec: BatchedSpec, count: int) -> int:
    """Bytes of the global workspace of a launch over `count` matrices (every
    work-group's slots; 0 with the matrices in local memory)."""
    groups = -(-count // spec.matrices_per_group)
    return (groups * spec.matrices_per_group * spec.workspace_elements
            * np.dtype(spec.dtype).itemsize)


def _prepare(queue: cl.CommandQueue, spec: BatchedSpec, stack: cl_array.Array, strategy: str,
             max_sweeps: int, results: dict[str, int]) -> tuple[dict[str, object], cl.Program]:
    """Check the device's local and global memory for `spec` and the launch's
    `results` (bytes by name, the workspace and the records added), and
    return the kernel arguments of the input stack and of the step tables,
    and the program."""
    device = queue.device
    count = stack.shape[0]
    for name in ("pair_sums", "lane_sums"):
        if getattr(spec, name) == "shuffle" and compute_capability(device) is None:
            raise DeviceCapabilityError(
                f"{name}='shuffle' needs NVIDIA's shfl.sync; device {device.name.strip()!r} "
                f"is not an NVIDIA device ({name}='local' runs everywhere)")
    check_local_memory(device, spec.local_bytes,
                       f"the batched {spec.problem} kernel at order {spec.order}")
    offset, matrix_stride, row_stride, col_stride = element_strides(stack,
                                                                     "the batched kernel")
    workspace_bytes = _workspace_bytes(spec, count)
    check_global_memory(device, {
        **({"matrices in global memory": workspace_bytes} if workspace_bytes else {}),
        **results, "rotations per sweep": count * max(max_sweeps, 1) * 4})
    pairs, starts, sweep_tables = _device_tables(queue, strategy, stack.shape[-1])
    arguments = {"M": stack.base_data, "count": stack.shape[0],
                 "offset": offset,
                 "matrix_stride": matrix_stride, "row_stride": row_stride,
                 "col_stride": col_stride, "pairs": pairs.data, "table_start": starts.data,
                 "sweep_tables": sweep_tables}
    return arguments, build_program(queue.context, device, spec)


def batched_eig(queue: cl.CommandQueue, stack: cl_array.Array, *, vectors: bool, strategy: str,
                rotation: int, sort_diagonal: bool, max_sweeps: int,
                matrix_in_global: bool | None = None, row_split: int | None = None,
                pair_sums: str | None = None, row_vector: int | None = None,
                math: str | None = None, lane_sums: str | None = None) -> BatchedRun:
    """Run the batched kernel on `stack`, ``(count, n, n)`` float64 or complex128 on
    `queue`'s device, any strides of whole elements.

    Returns the eigenvalues ``(count, n)`` ascending and, with `vectors`, the
    eigenvectors ``(count, n, n)`` as device arrays; a matrix with a fatal flag
    (:data:`FATAL`) has no result written.  The matrices go to global memory
    above :func:`batched_order_limit` (`matrix_in_global` None), or as
    `matrix_in_global` says (the same operations either way: the same bits).
    The sweeps split each pair's rows over `row_split` work-items, adding
    their sums as `pair_sums` says (None: :func:`sweep_layout`'s choice),
    or take `row_vector` rows at a time in one work-item (None:
    :func:`row_vector_for`'s choice); another split or vector width adds
    the sums in another order, the same results to rounding, and so does
    another `math` (None: :func:`math_for`'s choice); `lane_sums` (None:
    :func:`lane_sums_for`'s choice) gives the same bits either way.
    """
    count, n = stack.shape[0], stack.shape[-1]
    spec = _specialization(queue, stack, "eig", vectors=vectors, rotation=rotation,
                           sort_diagonal=sort_diagonal, matrix_in_global=matrix_in_global,
                           row_split=row_split, pair_sums=pair_sums, row_vector=row_vector,
                           math=math, lane_sums=lane_sums)
    itemsize = stack.dtype.itemsize
    arguments, program = _prepare(queue, spec, stack, strategy, max_sweeps, {
        "eigenvalues": count * n * 8,
        **({"eigenvectors": count * n * n * itemsize} if vectors else {}),
    })
    start = time.perf_counter()
    pool = memory_pool(queue)
    w = cl_array.empty(queue, (count, n), np.float64, allocator=pool)
    U = cl_array.empty(queue, (count, n, n), stack.dtype, allocator=pool) if vectors else None
    return _launch(queue, spec, program, count, max_sweeps,
                   {**arguments, "W": w.data, "U": U.data if vectors else None},
                   start, values=w, U=U)


def batched_hsvd(queue: cl.CommandQueue, stack: cl_array.Array, signs: cl_array.Array, *,
                 vectors: bool, strategy: str, rotation: int, sort_diagonal: bool,
                 max_sweeps: int, problem: str = "hsvd",
                 matrix_in_global: bool | None = None, row_split: int | None = None,
                 pair_sums: str | None = None, row_vector: int | None = None,
                 math: str | None = None, lane_sums: str | None = None) -> BatchedRun:
    """Run the batched hsvd on the square factors `stack`, ``(count, n, n)``
    float64 or complex128 on `queue`'s device (any strides of whole
    elements), with the signatures `signs`: int32 ``(count, n)``, or ``(n,)``
    for every matrix, contiguous.

    Returns S ``(count, n)`` descending, J ``(count, n)`` int8 (the
    signature in the order of S) and, with `vectors`, U and Vh
    ``(count, n, n)`` (:func:`cljacobi.hsvd`'s results) as device arrays; a
    matrix with a fatal flag (:data:`FATAL`) has no result written.  G and V
    stay in local memory up to :func:`batched_order_limit` with
    ``problem="hsvd"``, in a slot of a global workspace above it up to
    :data:`BATCHED_GLOBAL_ORDER_LIMIT` (`matrix_in_global` None), or as
    `matrix_in_global` says (the same operations: the same bits); ValueError
    above that limit.  ``problem="svd"`` sweeps svd's ``R^*``
    (`signs` all +1): zero columns are allowed, and every column carries
    its peak's rounding.  `row_split`, `pair_sums`, `row_vector`, `math`
    and `lane_sums` as for :func:`batched_eig`.
    """
    count, n = stack.shape[0], stack.shape[-1]
    if n > BATCHED_GLOBAL_ORDER_LIMIT:
        raise ValueError(f"the batched hsvd runs orders up to {BATCHED_GLOBAL_ORDER_LIMIT}, "
                         f"not {n}")
    if signs.dtype != np.int32 or not signs.flags.c_contiguous \
            or signs.shape not in {(n,), (count, n)}:
        raise ValueError(f"signs must be contiguous int32 of shape ({n},) or ({count}, {n})")
    spec = _specialization(queue, stack, problem, vectors=vectors, rotation=rotation,
                           sort_diagonal=sort_diagonal, matrix_in_global=matrix_in_global,
                           row_split=row_split, pair_sums=pair_sums, row_vector=row_vector,
                           math=math, lane_sums=lane_sums)
    itemsize = stack.dtype.itemsize
    arguments, program = _prepare(queue, spec, stack, strategy, max_sweeps, {
        "singular values and signature": count * n * 9,
        **({"U and Vh": 2 * count * n * n * itemsize} if vectors else {}),
    })
    start = time.perf_counter()
    pool = memory_pool(queue)
    S = cl_array.empty(queue, (count, n), np.float64, allocator=pool)
    J = cl_array.empty(queue, (count, n), np.int8, allocator=pool)
    U = cl_array.empty(queue, (count, n, n), stack.dtype, allocator=pool) if vectors else None
    Vh = cl_array.empty(queue, (count, n, n), stack.dtype, allocator=pool) if vectors else None
    return _launch(queue, spec, program, count, max_sweeps,
                   {**arguments, "signs": signs.data, "sign_stride": n if signs.ndim == 2 else 0,
                    "S": S.data, "J_out": J.data, "U": U.data if vectors else None,
                    "Vh": Vh.data if vectors else None}, start, values=S, U=U, J=J, Vh=Vh)
