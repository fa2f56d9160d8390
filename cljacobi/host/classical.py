"""The classical (largest-pivot) two-sided Jacobi method on the device.

``templates/classical.cl.mako`` runs every step of the method of Wang et
al. ("Implementing the Jacobi Algorithm for Solving Eigenvalues of Symmetric
Matrices with CUDA") in one launch of one work-group, as the paper's single
kernel does, or (on GPUs) three launches a step over the whole device, with
the same results bit for bit; this module is its spec (:class:`ClassicalSpec`, the
specialization and the kernel's arguments, declared once) and the run
(:func:`classical_run`).  :mod:`cljacobi.classical_reference` is the numpy
reference of the same steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import pyopencl as cl

from .device import require_fp64
from .launch import enqueue_kernel, set_scalar_arg
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg, real_arg
from .sizes import check_power_of_two
from .transfers import buffer_holding

__all__ = ["CLASSICAL_RESCAN_LIST", "CLASSICAL_STEP_BATCH", "CLASSICAL_WORK_GROUP",
           "ClassicalRun", "ClassicalSpec",
           "CyclicRun", "classical_run", "cyclic_run", "cyclic_sweeps"]

#: Work-items of the one work-group (a power of two): a step touches O(n)
#: entries, so the group strides over rows and columns.
CLASSICAL_WORK_GROUP = 256

#: Rows whose cache entry a step rescans with the whole work-group (rows p and
#: q, and those whose largest entry was in column p or q; more are scanned
#: one work-item each).
CLASSICAL_RESCAN_LIST = 64


@dataclass(frozen=True)
class ClassicalSpec:
    """Specialization parameters of ``templates/classical.cl.mako``.

    Attributes
    ----------
    dtype : {"float64", "complex128"}
        Real symmetric or complex Hermitian (interleaved) data.
    work_group_size : int
        Work-items of the one work-group, a power of two.
    """

    family: ClassVar[str] = "classical"
    dtype: str
    work_group_size: int = CLASSICAL_WORK_GROUP

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(f"the classical kernel handles float64 or complex128, not "
                             f"{self.dtype!r}")
        check_power_of_two("work_group_size", self.work_group_size)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The kernel's arguments, declared once."""
        element = "__global cjac_elem *"
        step = (buffer("pairs", "__global const int *"), int_arg("first"),
                int_arg("pairs_per_step"), buffer("rot", "__global cjac_real *"))
        rotations = KernelSignature("cjac_cyclic_rotations", (
            buffer("a", "__global const cjac_elem *"), int_arg("n"), *step, real_arg("tol"),
            real_arg("floor_"), buffer("counter", "__global int *"),
        ))
        columns = KernelSignature("cjac_cyclic_columns", (
            buffer("a", element), buffer("v", element), int_arg("n"), int_arg("compute_v"),
            *step,
        ))
        rows = KernelSignature("cjac_cyclic_rows", (buffer("a", element), int_arg("n"), *step))
        cache = (buffer("row_value", "__global cjac_real *"), buffer("row_arg", "__global int *"))
        state = (buffer("state", "__global int *"), buffer("rot", "__global cjac_real *"))
        step_pivot = KernelSignature("cjac_classical_step_pivot", (
            buffer("a", "__global const cjac_elem *"), int_arg("n"), int_arg("max_rotations"),
            real_arg("tol"), *cache, *state))
        step_rotate = KernelSignature("cjac_classical_step_rotate", (
            buffer("a", element), buffer("v", element), int_arg("n"), int_arg("compute_v"),
            *cache, *state, buffer("rescan", "__global int *")))
        step_rescan = KernelSignature("cjac_classical_step_rescan", (
            buffer("a", "__global const cjac_elem *"), int_arg("n"), *cache,
            buffer("state", "__global const int *"), buffer("rescan", "__global int *")))
        kernel = KernelSignature("cjac_classical", (
            buffer("a", element), buffer("v", element), int_arg("n"), int_arg("compute_v"),
            int_arg("max_rotations"), real_arg("tol"), *cache,
            buffer("result", "__global int *"),
        ))
        return {sig.name: sig for sig in (kernel, step_pivot, step_rotate, step_rescan,
                                          rotations, columns, rows)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {"real_ctype": "double", "complex_": self.dtype == "complex128",
                "size_defines": c_defines({"WG": self.work_group_size,
                                           "TODO": CLASSICAL_RESCAN_LIST}),
                "signatures": self.signatures}


class ClassicalRun(NamedTuple):
    """The final matrix (its diagonal: the eigenvalues), V, and how it went."""

    A: np.ndarray
    V: np.ndarray | None
    rotations: int
    converged: bool
    seconds: float


#: Steps the host enqueues between two looks at the stop flag (per-step launches).
CLASSICAL_STEP_BATCH = 256


def classical_run(queue: cl.CommandQueue, A: np.ndarray, *, max_rotations: int,
                  tol: float, compute_v: bool, launches: str = "auto") -> ClassicalRun:
    """The classical Jacobi method on the Hermitian `A` (not modified).

    Parameters
    ----------
    queue : pyopencl.CommandQueue
    A : numpy.ndarray
        n x n, float64 or complex128, Hermitian (both triangles).
    max_rotations : int
        Steps at most.
    tol : float
        Stop when the largest off-diagonal modulus is at most ``tol * max_i
        |a_ii|``.
    compute_v : bool
        Accumulate the eigenvectors.
    launches : {"auto", "one", "per-step"}, optional
        "one": every step in one launch of one work-group (``cjac_classical``,
        the paper's single kernel); "per-step": three launches a step that
        spread the step over the device (``cjac_classical_step_*``), the
        same results bit for bit; "auto": per-step on GPUs (one work-group
        leaves the other compute units idle: at n = 8192 a step took 6.4 ms
        in one work-group of the H200), one launch elsewhere (a CPU device
        pays more per launch than a step costs).

    Returns
    -------
    ClassicalRun
    """
    if launches not in ("auto", "one", "per-step"):
        raise ValueError(f"launches must be 'auto', 'one' or 'per-step', not {launches!r}")
    start = time.perf_counter()
    n = A.shape[0]
    program, spec, matrices = _upload(queue, A, compute_v)
    flags, ctx = cl.mem_flags, queue.context
    row_value = cl.Buffer(ctx, flags.READ_WRITE, 8 * max(n, 1))
    row_arg = cl.Buffer(ctx, flags.READ_WRITE, 4 * max(n, 1))
    if launches == "auto":
        launches = "per-step" if queue.device.type & cl.device_type.GPU else "one"
    if launches == "one":
        result = np.zeros(2, np.int32)
        result_buf = cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=result)
        kernel = spec.signatures["cjac_classical"].kernel(
            program, a=matrices.a, v=matrices.v, n=n, compute_v=int(compute_v),
            max_rotations=max_rotations, tol=tol, row_value=row_value, row_arg=row_arg,
            result=result_buf)
        wg = spec.work_group_size
        cl.enqueue_nd_range_kernel(queue, kernel, (wg,), (wg,))
        cl.enqueue_copy(queue, result, result_buf)
        rotations, converged = int(result[0]), bool(result[1])
    else:
        rotations, converged = _per_step(queue, program, spec, matrices, n, max_rotations, tol,
                                         compute_v, row_value, row_arg)
    out, V = _fetch(queue, matrices)
    return ClassicalRun(out, V, rotations, converged, time.perf_counter() - start)


def _per_step(queue: cl.CommandQueue, program: cl.Program, spec: ClassicalSpec,
              matrices: _Matrices, n: int, max_rotations: int, tol: float, compute_v: bool,
              row_value: cl.Buffer, row_arg: cl.Buffer) -> tuple[int, bool]:
    """The steps of :func:`classical_run` three launches each; (rotations,
    converged)."""
    flags, ctx = cl.mem_flags, queue.context
    state = np.zeros(4, np.int32)
    state_buf = cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=state)
    rot = cl.Buffer(ctx, flags.READ_WRITE, 8 * 8)
    rescan = cl.Buffer(ctx, flags.READ_WRITE | flags.COPY_HOST_PTR,
                       hostbuf=np.ones(max(n, 1), np.int32))  # every row at the start
    cache = {"row_value": row_value, "row_arg": row_arg}
    sigs, wg = spec.signatures, spec.work_group_size
    pivot = sigs["cjac_classical_step_pivot"].kernel(
        program, a=matrices.a, n=n, max_rotations=max_rotations, tol=tol, state=state_buf,
        rot=rot, **cache)
    rotate = sigs["cjac_classical_step_rotate"].kernel(
        program, a=matrices.a, v=matrices.v, n=n, compute_v=int(compute_v), state=state_buf,
        rot=rot, rescan=rescan, **cache)
    rows = sigs["cjac_classical_step_rescan"].kernel(
        program, a=matrices.a, n=n, state=state_buf, rescan=rescan, **cache)
    rescan_size = ((n - 1) * wg,)
    cl.enqueue_nd_range_kernel(queue, rows, rescan_size, (wg,))
    while state[2] == 0 and state[3] < max_rotations:
        for _ in range(min(CLASSICAL_STEP_BATCH, max_rotations - int(state[3]))):
            enqueue_kernel(queue, pivot, (wg,), (wg,))
            enqueue_kernel(queue, rotate, (n,), None)
            enqueue_kernel(queue, rows, rescan_size, (wg,))
        cl.enqueue_copy(queue, state, state_buf)
    return int(state[3]), bool(state[2] == 1)


class _Matrices(NamedTuple):
    """A and V (or a placeholder) on the device, and the host V to fetch into."""

    a: cl.Buffer
    v: cl.Buffer
    V: np.ndarray | None
    shape: tuple[int, int]
    dtype: np.dtype


def _upload(queue: cl.CommandQueue, A: np.ndarray, compute_v: bool
            ) -> tuple[cl.Program, ClassicalSpec, _Matrices]:
    """The program and A (column-major) and V = I on the device, after the
    fp64 and memory checks (before any launch)."""
    require_fp64(queue.device)
    n = A.shape[0]
    dtype = np.dtype(A.dtype)
    check_global_memory(queue.device, {"A": dtype.itemsize * n * n,
                                       "V": dtype.itemsize * n * n if compute_v else 0})
    largest = 1 << (int(queue.device.max_work_group_size).bit_length() - 1)
    spec = ClassicalSpec(dtype.name, min(CLASSICAL_WORK_GROUP, largest))
    program = build_program(queue.context, queue.device, spec)
    a = buffer_holding(queue, np.asfortranarray(A))
    V = np.eye(n, dtype=dtype, order="F") if compute_v else None
    v = buffer_holding(queue, V if compute_v else np.zeros(1, dtype))
    return program, spec, _Matrices(a, v, V, (n, n), dtype)


def _fetch(queue: cl.CommandQueue, matrices: _Matrices) -> tuple[np.ndarray, np.ndarray | None]:
    """The final A and V back on the host (after the queue has finished)."""
    out = np.empty(matrices.shape, dtype=matrices.dtype, order="F")
    cl.enqueue_copy(queue, out, matrices.a)
    if matrices.V is not None:
        cl.enqueue_copy(queue, matrices.V, matrices.v)
    queue.finish()
    return out, matrices.V


class CyclicRun(NamedTuple):
    """The final matrix, V, and the sweeps of the parallel cyclic method."""

    A: np.ndarray
    V: np.ndarray | None
    sweeps: int
    rotations_per_sweep: list[int]
    converged: bool
    seconds: float
    #: w of the blocked method (:func:`cljacobi.host.two_sided.blocked_cyclic_run`), 0 pointwise
    block_width: int = 0


def cyclic_run(queue: cl.CommandQueue, A: np.ndarray, *, strategy: str, max_sweeps: int,
               tol: float, compute_v: bool) -> CyclicRun:
    """The parallel cyclic two-sided Jacobi method on the Hermitian `A`.

    Per step of the strategy's table (:func:`cljacobi.strategies.step_table`;
    an odd n gets a virtual column), three launches: the rotations of the
    step's pairs from the same A, A J and V J by columns, J^* (A J) by rows.
    A pair rotates when ``|a_ij| > tol max(sqrt(|a_ii a_jj|), max_k |a_kk|)``
    (the relative test, with an absolute floor for zero diagonals, ``max_k``
    over the input); the sweeps end after one without a rotation.
    """
    from ..strategies import step_table

    start = time.perf_counter()
    n = A.shape[0]
    program, spec, matrices = _upload(queue, A, compute_v)
    order = n + n % 2
    tables = [step_table(strategy, order, sweep=s).pairs for s in (0, 1)]
    steps, per_step = tables[0].shape[:2]
    flags, ctx = cl.mem_flags, queue.context
    pairs = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                      hostbuf=np.ascontiguousarray(np.concatenate(tables), dtype=np.int32))
    rot = cl.Buffer(ctx, flags.READ_WRITE, 8 * 4 * per_step)
    counter = cl.Buffer(ctx, flags.READ_WRITE, 4)
    floor = float(np.abs(np.diagonal(A)).max(initial=0.0))
    common = {"n": n, "pairs": pairs, "first": 0, "pairs_per_step": per_step, "rot": rot}
    sigs = spec.signatures
    launches = [
        (sigs["cjac_cyclic_rotations"].kernel(program, a=matrices.a, tol=tol, floor_=floor,
                                              counter=counter, **common),
         sigs["cjac_cyclic_rotations"], (per_step,)),
        (sigs["cjac_cyclic_columns"].kernel(program, a=matrices.a, v=matrices.v,
                                            compute_v=int(compute_v), **common),
         sigs["cjac_cyclic_columns"], (n, per_step)),
        (sigs["cjac_cyclic_rows"].kernel(program, a=matrices.a, **common),
         sigs["cjac_cyclic_rows"], (n, per_step)),
    ]
    launches = [(kernel, sig.position("first"), size, None) for kernel, sig, size in launches]
    counts, converged = cyclic_sweeps(queue, launches, counter, steps=steps,
                                      per_step=per_step, max_sweeps=0 if n < 2 else max_sweeps)
    out, V = _fetch(queue, matrices)
    return CyclicRun(out, V, len(counts), counts, converged or n < 2,
                     time.perf_counter() - start)


def cyclic_sweeps(queue: cl.CommandQueue,
                  launches: list[tuple[cl.Kernel, int, tuple, tuple | None]],
                  counter: cl.Buffer, *, steps: int, per_step: int, max_sweeps: int
                  ) -> tuple[list[int], bool]:
    """The sweep loop of the parallel cyclic methods (pointwise and blocked).

    Every step of a sweep enqueues `launches` (kernel, the position of its
    ``first`` argument, global and local size) with ``first`` the step's
    offset into the step tables, ``((sweep % 2) * steps + step) * per_step``
    (the tables of even and odd sweeps one after the other).  `counter`
    (int32, any length: the kernels add the sweep's rotations to it) is
    zeroed before a sweep and summed after it; the sweeps end after one
    without a rotation.  Returns the rotations of every sweep and whether
    the sweeps converged.
    """
    length = counter.size // 4
    count = np.zeros(length, np.int32)
    counts: list[int] = []
    for sweep in range(max_sweeps):
        cl.enqueue_copy(queue, counter, np.zeros(length, np.int32))
        for s in range(steps):
            first = np.int32(((sweep % 2) * steps + s) * per_step)
            for kernel, position, size, local in launches:
                set_scalar_arg(kernel, position, first)
                enqueue_kernel(queue, kernel, size, local)
        cl.enqueue_copy(queue, count, counter)
        counts.append(int(count.sum()))
        if counts[-1] == 0:
            return counts, True
    return counts, False
