"""The batched implicit Hari-Zimmermann sweeps: a stack of GSVD pairs in one launch.

``templates/batched_hz.cl.mako`` runs the pointwise method of
``templates/hz.cl.mako`` (the same 2x2 decisions, its ``pair_math``) on every
pair ``(F, G, Z)`` of a stack, one work-group per pair and one work-item per
pivot pair of a step, until a sweep has no big transformation ([NS] Sect.
2.5).  :func:`launch_batched_hz` sweeps device stacks in place (the gsvd
stacks' route, after :func:`cljacobi.host.batched_gsvd.batched_gsvd_shorten`);
:func:`batched_hz_sweeps` uploads host stacks, launches once and reads back
F, G, Z and the records; :class:`BatchedHZSpec` is the template's
specialization.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .hz import CRITERIA, HZ_COUNTERS, HZ_DTYPES, pointwise_tables
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg

__all__ = ["BATCHED_HZ_ORDER_LIMIT", "BatchedHZLaunch", "BatchedHZRun", "BatchedHZSpec",
           "HZFlags", "batched_hz_sweeps", "hz_row_split", "launch_batched_hz"]

#: The largest n of a stack's pairs (the batched sweeps keep three n x n
#: matrices per pair in global memory; larger pairs go one at a time).
BATCHED_HZ_ORDER_LIMIT = 128


class HZFlags:
    """Bits of a pair's record (``CJAC_HZ_<name>`` in the kernel)."""

    #: A pivot submatrix of B^H B was not positive definite (the sweep ended there).
    NOT_DEFINITE = 1
    #: max_sweeps ran without a sweep free of big transformations.
    NOT_CONVERGED = 2


@dataclass(frozen=True)
class BatchedHZSpec:
    """Specialization parameters of ``templates/batched_hz.cl.mako``; n, the
    stack's count and the tables are kernel arguments.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"``.
    prescaled, criterion, enhanced_dots
        As :class:`cljacobi.host.hz.HZSpec`.
    lanes : int
        The pivot pairs of a step, rounded up to a power of two.
    row_split : int
        Work-items per pivot pair (a power of two): each sums and updates
        every ``row_split``-th row, and the partial sums are added in a
        fixed tree (1: one work-item per pivot pair).
    """

    family: ClassVar[str] = "batched_hz"
    dtype: str
    prescaled: bool = False
    criterion: str = "C1"
    enhanced_dots: bool = False
    lanes: int = 1
    row_split: int = 1

    def __post_init__(self) -> None:
        if self.dtype not in HZ_DTYPES:
            raise ValueError(f"the batched HZ sweeps run {HZ_DTYPES}, not {self.dtype}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, not {self.criterion!r}")
        if self.lanes < 1 or self.lanes & (self.lanes - 1):
            raise ValueError(f"lanes must be a power of two, not {self.lanes}")
        if self.row_split < 1 or self.row_split & (self.row_split - 1):
            raise ValueError(f"row_split must be a power of two, not {self.row_split}")

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The stacks of F, G and Z (read and written), their order, the step
        tables, and the records."""
        return _signatures(self)

    def _make_signatures(self) -> dict[str, KernelSignature]:
        element = "cjac_elem"
        args = (
            buffer("F", f"__global {element} *"), buffer("G", f"__global {element} *"),
            buffer("Z", f"__global {element} *"), int_arg("count"), int_arg("n"),
            int_arg("order"), buffer("pairs", "__global const int2 *"), int_arg("steps"),
            int_arg("per_step"), int_arg("max_sweeps"), buffer("info", "__global int *"),
            buffer("transformations", "__global int *"),
        )
        return {"cjac_batched_hz": KernelSignature("cjac_batched_hz", args)}

    def render_args(self) -> dict[str, object]:
        flags = {f"CJAC_HZ_{name}": value for name, value in vars(HZFlags).items()
                 if name.isupper()}
        return {"complex_": self.dtype == "complex128", "prescaled": self.prescaled,
                "criterion": self.criterion, "enhanced_dots": self.enhanced_dots,
                "row_split": self.row_split,
                "size_defines": c_defines({"LANES": self.lanes, "ROW_SPLIT": self.row_split,
                                           **HZ_COUNTERS, **flags}),
                "signatures": self.signatures}


@cache
def _signatures(spec: BatchedHZSpec) -> dict[str, KernelSignature]:
    return spec._make_signatures()


@dataclass
class BatchedHZRun:
    """The final F, G, Z of every pair (``(count, n, n)``, host arrays), and
    per pair the sweeps, the flags (:class:`HZFlags`), the pivot
    submatrices of B^H B that were not positive definite in its last sweep,
    and the transformations of each sweep."""

    F: np.ndarray
    G: np.ndarray
    Z: np.ndarray
    sweeps: np.ndarray
    flags: np.ndarray
    not_definite: np.ndarray
    transformations: list[list[int]]
    seconds: float


def batched_hz_sweeps(queue: cl.CommandQueue, F: np.ndarray, G: np.ndarray, Z: np.ndarray, *,
                      prescaled: bool, criterion: str, enhanced_dots: bool, strategy: str,
                      max_sweeps: int, row_split: int | None = None) -> BatchedHZRun:
    """Implicit Hari-Zimmermann sweeps on every pair of the stacks F, G, Z
    (``(count, n, n)``, float64 or complex128 alike; not modified), one
    launch (see the module notes); as :func:`cljacobi.host.hz.hz_sweeps`
    for each pair, pointwise, but that a pair whose B^H B is not positive
    definite is flagged instead of raising.  `row_split` as
    :func:`launch_batched_hz`'s."""
    start = time.perf_counter()
    dtype = np.dtype(F.dtype)
    # column c of pair b at b n^2 + c n: each pair's matrices column-major
    stacks = [cl_array.to_device(queue, np.ascontiguousarray(np.swapaxes(Y, -1, -2), dtype))
              for Y in (F, G, Z)]
    launch = launch_batched_hz(queue, *stacks, prescaled=prescaled, criterion=criterion,
                               enhanced_dots=enhanced_dots, strategy=strategy,
                               max_sweeps=max_sweeps, row_split=row_split)
    F_out, G_out, Z_out = (np.swapaxes(stack.get(), -1, -2) for stack in stacks)
    records, counts = launch.records()
    return BatchedHZRun(F_out, G_out, Z_out, records[:, 0], records[:, 1], records[:, 2],
                        counts, time.perf_counter() - start)


@dataclass
class BatchedHZLaunch:
    """A launch of :func:`launch_batched_hz`: its records on the device, int32
    ``info`` ``(count, 3)`` (sweeps, flags, the pivot submatrices not
    positive definite) and ``transformations`` ``(count, max(max_sweeps,
    1))``, read by :meth:`records`."""

    queue: cl.CommandQueue
    info: cl_array.Array
    transformations: cl_array.Array

    def records(self) -> tuple[np.ndarray, list[list[int]]]:
        """``info`` on the host, and each pair's transformations per sweep."""
        records, counts = self.info.get(), self.transformations.get()
        return records, [[int(x) for x in counts[b, : records[b, 0]]]
                         for b in range(records.shape[0])]


def launch_batched_hz(queue: cl.CommandQueue, F: cl_array.Array, G: cl_array.Array,
                      Z: cl_array.Array, *, prescaled: bool, criterion: str,
                      enhanced_dots: bool, strategy: str, max_sweeps: int,
                      row_split: int | None = None) -> BatchedHZLaunch:
    """The sweeps of :func:`batched_hz_sweeps` on device stacks, in place:
    F, G and Z contiguous ``(count, n, n)`` on `queue`, pair b's column c at
    ``[b, c]`` (each pair column-major); `row_split` work-items per pivot
    pair (default :func:`hz_row_split`)."""
    count, n = F.shape[0], F.shape[-1]
    if not 1 <= n <= BATCHED_HZ_ORDER_LIMIT:
        raise ValueError(f"the batched HZ sweeps take n from 1 to {BATCHED_HZ_ORDER_LIMIT}, "
                         f"not {n}")
    pairs, steps, per_step = pointwise_tables(strategy, n)
    lanes = 1 << max(per_step - 1, 0).bit_length()
    split = hz_row_split(queue.device, n, lanes) if row_split is None else row_split
    spec = BatchedHZSpec(np.dtype(F.dtype).name, prescaled=prescaled, criterion=criterion,
                         enhanced_dots=enhanced_dots, lanes=lanes, row_split=split)
    device = queue.device
    check_global_memory(device, {"F, G and Z": 3 * F.nbytes,
                                 "transformations per sweep": count * max(max_sweeps, 1) * 4})
    program = build_program(queue.context, device, spec)
    info = cl_array.empty(queue, (count, 3), np.int32)
    transformations = cl_array.empty(queue, (count, max(max_sweeps, 1)), np.int32)
    table = cl_array.to_device(queue, pairs)
    (signature,) = spec.signatures.values()
    kernel = signature.kernel(
        program, F=F.data, G=G.data, Z=Z.data, count=count, n=n, order=n, pairs=table.data,
        steps=steps, per_step=per_step, max_sweeps=max_sweeps, info=info.data,
        transformations=transformations.data)
    group = lanes * split
    if count:
        cl.enqueue_nd_range_kernel(queue, kernel, (count * group,), (group,))
    return BatchedHZLaunch(queue, info, transformations)


def hz_row_split(device: cl.Device, n: int, lanes: int) -> int:
    """Work-items per pivot pair of the batched sweeps (`lanes` pivot pairs a
    step): 1 on CPUs, which run a work-group's work-items one after another;
    on GPUs 4 up to n = 24, 8 up to 96 and 16 above, as measured on an H200
    (real stacks, sweeps alone: n = 16 x 2,000 5.4 -> 3.4 ms at 4, 32 x 500
    6.0 -> 2.3 ms and 64 x 200 22.7 -> 4.2 ms at 8, 128 x 100 101 -> 21 ms
    at 16; complex 64 x 200 44 -> 8.1 ms at 8), halved while the work-group
    would exceed the device's."""
    if not device.type & cl.device_type.GPU:
        return 1
    split = 4 if n <= 24 else 8 if n <= 96 else 16
    while split > 1 and lanes * split > int(device.max_work_group_size):
        split //= 2
    return split
