"""The blocked parallel cyclic two-sided Jacobi method on the device.

eigh's ``method="two-sided"`` with ``variant="bo"`` or ``"fb"``: the method
of cuSOLVER's ``syevj``, block pairs as the parallel unit.  The matrix is
padded with zeros to a multiple of ``K = 2 w`` and cut into blocks of w
indices; per step of the outer strategy (a :func:`cljacobi.strategies.step_table`
over the blocks) two launches of ``templates/two_sided.cl.mako``:

1. ``cjac_two_sided_solve``: inner sweeps on the diagonal block of every block
   pair (one sweep for ``"bo"``, until a sweep rotates nothing for ``"fb"``),
   the block written back and its transformation W stored;
2. ``cjac_two_sided_update``: every off-diagonal tile ``A[P_k, P_l] <- W_k^*
   A[P_k, P_l] W_l`` and its conjugate transpose, and ``V[:, P_k] <- V[:,
   P_k] W_k`` by row chunks (one launch for both: at n = 1024 the host's
   enqueues, not the device, set the pace of three launches a step).

The sweeps end after one that rotates nothing.  This module is the family's
spec (:class:`TwoSidedSpec`, the specialization and the kernels' arguments,
declared once) and the run (:func:`blocked_cyclic_run`);
:func:`cljacobi.classical_reference.blocked_cyclic_jacobi` is the numpy
reference of the same steps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..errors import DeviceCapabilityError
from ..strategies import step_table
from .blocked import inner_step_pairs, inner_table_bytes
from .classical import CyclicRun, cyclic_sweeps
from .device import require_fp64
from .limits import check_global_memory, check_local_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg, real_arg
from .sizes import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES, round_up
from .transfers import buffer_holding

__all__ = ["TWO_SIDED_INNER_SWEEPS", "TwoSidedSpec", "blocked_cyclic_run",
           "two_sided_block_width", "two_sided_local_bytes"]

#: Inner sweeps per block pair and outer step: "bo" one, "fb" until a sweep
#: rotates nothing (at most this many).
TWO_SIDED_INNER_SWEEPS = {"bo": 1, "fb": 30}

#: Block widths tried, widest first, by :func:`two_sided_block_width`.
TWO_SIDED_BLOCK_WIDTHS = (16, 8, 4, 2, 1)

#: Inner strategy on the K x K diagonal blocks.
INNER_STRATEGY = "me"


def _micro(block_width: int) -> int:
    """M of the M x M register micro-tiles of the update kernel: 64 work-items
    a tile where K = 2w allows it."""
    K = 2 * block_width
    return max(1, K // 8)


@dataclass(frozen=True)
class TwoSidedSpec:
    """Specialization parameters of ``templates/two_sided.cl.mako``.

    Attributes
    ----------
    dtype : {"float64", "complex128"}
        Real symmetric or complex Hermitian (interleaved) data.
    block_width : int
        w; the diagonal blocks and tiles are K x K with K = 2w.
    solve_work_group_size : int
        Work-items of the solve kernel (any positive count; w^2 gives one
        2 x 2 block of the inner update to each).
    micro : int
        M: every work-item of the update kernel computes an M x M block of a
        product; M divides K.
    inner_strategy : str
        The inner strategy's step table of order K (every step covers
        0..K-1).
    """

    family: ClassVar[str] = "two_sided"
    dtype: str
    block_width: int
    solve_work_group_size: int
    micro: int
    inner_strategy: str = INNER_STRATEGY

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(f"the two-sided family handles float64 or complex128, not "
                             f"{self.dtype!r}")
        for name in ("block_width", "solve_work_group_size", "micro"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        K = 2 * self.block_width
        if K % self.micro:
            raise ValueError(f"micro={self.micro} does not divide K={K}")
        inner_step_pairs(self.inner_strategy, K)

    @property
    def complex_(self) -> bool:
        return self.dtype == "complex128"

    @property
    def update_work_group_size(self) -> int:
        """Work-items of the update kernel, one per micro-tile."""
        return (2 * self.block_width // self.micro) ** 2

    @property
    def constants(self) -> dict[str, int]:
        """The sizes the template is written in, as its ``#define`` names."""
        w = self.block_width
        K = 2 * w
        return {"BW": w, "K": K, "LDA": K + 1, "LDW": K + 1,
                "INNER_STEPS": len(step_table(self.inner_strategy, K).pairs),
                "SOLVE_WG": self.solve_work_group_size, "UPDATE_NM": K // self.micro,
                "UPDATE_WG": self.update_work_group_size}

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The kernels' arguments, declared once."""
        element = "__global cjac_elem *"
        step = (buffer("outer_pairs", "__global const int2 *"), int_arg("first"))
        solve = KernelSignature("cjac_two_sided_solve", (
            buffer("a", element), int_arg("ld"), *step,
            buffer("transforms", element), buffer("rotated", "__global int *"),
            buffer("rotations", "__global int *"), real_arg("tol"), real_arg("floor_"),
            int_arg("inner_sweeps"),
        ))
        transforms = (buffer("transforms", "__global const cjac_elem *"),
                      buffer("rotated", "__global const int *"))
        update = KernelSignature("cjac_two_sided_update", (
            buffer("a", element), buffer("v", element), int_arg("ld"), *step, int_arg("slots"),
            int_arg("chunks"), *transforms,
        ))
        identity = KernelSignature("cjac_two_sided_identity", (buffer("v", element),
                                                               int_arg("ld")))
        return {sig.name: sig for sig in (solve, update, identity)}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {"real_ctype": "double", "complex_": self.complex_,
                "inner_pairs": inner_step_pairs(self.inner_strategy, 2 * self.block_width),
                "micro": self.micro, "size_defines": c_defines(self.constants),
                "signatures": self.signatures}


def two_sided_local_bytes(block_width: int, *, element_bytes: int) -> int:
    """Local memory of the family's largest kernel (the solve kernel's two
    blocks, per-pair rotation data and inner pair table; the update kernel's
    two blocks)."""
    K = 2 * block_width
    blocks = 2 * K * (K + 1) * element_bytes
    per_pair = block_width * (8 + 2 * element_bytes + 8 + 3 * 4)
    return blocks + per_pair + 4 + inner_table_bytes(block_width)


def two_sided_block_width(device: cl.Device, n: int, *, element_bytes: int,
                          requested: int | None = None) -> int:
    """The block width of a run: `requested` (checked against the device's
    local memory), else the widest of :data:`TWO_SIDED_BLOCK_WIDTHS` that fits
    and leaves at least two blocks (so that a step has a pair)."""
    if requested is not None:
        check_local_memory(device, two_sided_local_bytes(requested, element_bytes=element_bytes),
                           f"method='two-sided' with block_width={requested}")
        return requested
    available = int(device.local_mem_size)
    for width in TWO_SIDED_BLOCK_WIDTHS:
        if 2 * width <= max(n, 2) and two_sided_local_bytes(
                width, element_bytes=element_bytes) <= available:
            return width
    raise DeviceCapabilityError(
        f"device {device.name.strip()!r} has {available} bytes of local memory, too few for "
        "the blocked two-sided kernels")


def blocked_cyclic_run(queue: cl.CommandQueue, A: np.ndarray, *, strategy: str,
                       block_width: int | None, inner_sweeps: int, max_sweeps: int,
                       tol: float, compute_v: bool, solve_work_group_size: int | None = None,
                       micro: int | None = None) -> CyclicRun:
    """The blocked parallel cyclic two-sided Jacobi method on the Hermitian `A`
    (not modified).

    Parameters
    ----------
    queue : pyopencl.CommandQueue
    A : numpy.ndarray
        n x n, float64 or complex128, Hermitian (both triangles).
    strategy : str
        The outer strategy over the blocks.
    block_width : int or None
        w (None: :func:`two_sided_block_width`).
    inner_sweeps : int
        Inner sweeps per diagonal block and step, at most.
    max_sweeps : int
        Outer sweeps at most.
    tol : float
        A pair rotates when ``|a_ij| > tol max(sqrt(|a_ii a_jj|), floor)``,
        ``floor`` the largest ``|a_kk|`` of `A` (as the pointwise method).
    compute_v : bool
        Accumulate the eigenvectors.
    solve_work_group_size, micro : int, optional
        :class:`TwoSidedSpec`'s (default: w^2 capped at 256; K / 8).

    Returns
    -------
    CyclicRun
        A and V of order n (the padding dropped), the rotations of every
        sweep.
    """
    start = time.perf_counter()
    require_fp64(queue.device)
    n = A.shape[0]
    dtype = np.dtype(A.dtype)
    element_bytes = COMPLEX_ELEMENT_BYTES if dtype.kind == "c" else REAL_ELEMENT_BYTES
    w = two_sided_block_width(queue.device, n, element_bytes=element_bytes,
                              requested=block_width)
    K = 2 * w
    N = round_up(max(n, 1), K)
    blocks, slots = N // w, N // K
    tables = [step_table(strategy, blocks, sweep=s).pairs for s in (0, 1)]
    steps = tables[0].shape[0]
    check_global_memory(queue.device, {
        "A": dtype.itemsize * N * N, "V": dtype.itemsize * N * N if compute_v else 0,
        "transformations": dtype.itemsize * slots * K * K})
    device_max = int(queue.device.max_work_group_size)
    spec = TwoSidedSpec(dtype.name, w,
                        solve_work_group_size=solve_work_group_size or min(w * w, 256, device_max),
                        micro=micro or _micro(w))
    if spec.update_work_group_size > device_max:
        raise DeviceCapabilityError(
            f"the two-sided update kernel needs work-groups of {spec.update_work_group_size} "
            f"items; device {queue.device.name.strip()!r} allows {device_max}")
    program = build_program(queue.context, queue.device, spec)

    flags, ctx = cl.mem_flags, queue.context
    if N == n:
        padded = np.asfortranarray(A)
    else:
        padded = np.zeros((N, N), dtype=dtype, order="F")
        padded[:n, :n] = A
    a = buffer_holding(queue, padded)
    v = cl.Buffer(ctx, flags.READ_WRITE, dtype.itemsize * (N * N if compute_v else 1))
    if compute_v:
        identity = spec.signatures["cjac_two_sided_identity"].kernel(program, v=v, ld=N)
        cl.enqueue_nd_range_kernel(queue, identity, (N, N), None)
    outer_pairs = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR,
                            hostbuf=np.ascontiguousarray(np.concatenate(tables), np.int32))
    transforms = cl.Buffer(ctx, flags.READ_WRITE, dtype.itemsize * slots * K * K)
    rotated = cl.Buffer(ctx, flags.READ_WRITE, 4 * slots)
    rotations = cl.Buffer(ctx, flags.READ_WRITE, 4 * slots)
    floor = float(np.abs(np.diagonal(A)).max(initial=0.0))
    common = {"ld": N, "outer_pairs": outer_pairs, "first": 0}
    sigs = spec.signatures
    solve = sigs["cjac_two_sided_solve"].kernel(
        program, a=a, transforms=transforms, rotated=rotated, rotations=rotations, tol=tol,
        floor_=floor, inner_sweeps=inner_sweeps, **common)
    launches = [(solve, sigs["cjac_two_sided_solve"],
                 (slots * spec.solve_work_group_size,), (spec.solve_work_group_size,))]
    tiles = slots * (slots - 1) // 2 + (slots * (N // K) if compute_v else 0)
    wg = spec.update_work_group_size
    if tiles:
        launches.append((sigs["cjac_two_sided_update"].kernel(
            program, a=a, v=v, slots=slots, chunks=N // K, transforms=transforms,
            rotated=rotated, **common),
            sigs["cjac_two_sided_update"], (tiles * wg,), (wg,)))
    launches = [(kernel, sig.position("first"), size, local)
                for kernel, sig, size, local in launches]

    counts, converged = cyclic_sweeps(queue, launches, rotations, steps=steps, per_step=slots,
                                      max_sweeps=0 if n < 2 else max_sweeps)
    out = np.empty((N, N), dtype=dtype, order="F")
    cl.enqueue_copy(queue, out, a)
    V = np.empty((N, N), dtype=dtype, order="F") if compute_v else None
    if compute_v:
        cl.enqueue_copy(queue, V, v)
    queue.finish()
    if N != n:
        out = np.array(out[:n, :n], order="F")
        V = None if V is None else np.array(V[:n, :n], order="F")
    return CyclicRun(out, V, len(counts), counts, converged or n < 2,
                     time.perf_counter() - start, w)
