"""The pointwise implicit Hari-Zimmermann sweeps of the GSVD on the device.

``templates/hz.cl.mako`` transforms every pivot pair of a parallel step in
one launch (one work-group per pair); this module is its spec
(:class:`HZSpec`, the specialization and the kernel's arguments, declared
once) and the sweep loop (:func:`hz_sweeps`): the steps of a sweep come from
the strategy tables of :mod:`cljacobi.strategies`, the three counters of a
sweep (transformations, big ones, pivot pairs of B not positive definite)
are read once per sweep, and the loop stops after a sweep without a big
transformation (criteria C1/C2 of Novaković & Singer, "Implicit
Hari-Zimmermann algorithm for the generalized SVD on the GPUs", Sect. 2.5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import pyopencl as cl

from ..strategies import step_table
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg
from .sizes import check_power_of_two

__all__ = ["CRITERIA", "HZ_DTYPES", "HZ_WORK_GROUP", "HZRun", "HZSpec", "hz_sweeps"]

#: Convergence criteria of the paper's Sect. 2.5.
CRITERIA = ("C1", "C2")

#: Element types of the kernels.
HZ_DTYPES = ("float64", "complex128")

#: Work-items per pivot pair: enough to stream two columns of a few thousand rows.
HZ_WORK_GROUP = 128

#: Sweep counters, as ``templates/hz.cl.mako`` numbers them.
_TRANSFORMED, _BIG, _NOT_DEFINITE = 0, 1, 2


@dataclass(frozen=True)
class HZSpec:
    """Specialization parameters of ``templates/hz.cl.mako``.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"`` (complex interleaved).
    prescaled : bool
        The standard version (``diag(B) = I`` assumed, the columns of G
        normalized once beforehand) or the not-scaled one (``D_k`` in every
        step; Sect. 2.1).
    criterion : str
        ``"C1"`` or ``"C2"``, which transformations are small (Sect. 2.5).
    work_group_size : int
        Work-items per pivot pair, a power of two.
    """

    family: ClassVar[str] = "hz"
    dtype: str
    prescaled: bool = False
    criterion: str = "C1"
    work_group_size: int = HZ_WORK_GROUP

    def __post_init__(self) -> None:
        if self.dtype not in HZ_DTYPES:
            raise ValueError(f"the HZ kernels handle {HZ_DTYPES}, not {self.dtype}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, not {self.criterion!r}")
        check_power_of_two("work_group_size", self.work_group_size)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The step kernel's arguments, declared once."""
        column = "__global cjac_elem *"
        step = KernelSignature("cjac_hz_step", (
            buffer("f", column), int_arg("ldf"), int_arg("mf"),
            buffer("g", column), int_arg("ldg"), int_arg("mg"),
            buffer("zz", column), int_arg("ldz"), int_arg("n"),
            buffer("pairs", "__global const int *"), int_arg("first"),
            buffer("counters", "__global int *"),
        ))
        return {step.name: step}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {
            "real_ctype": "double", "complex_": self.dtype == "complex128",
            "prescaled": self.prescaled, "criterion": self.criterion,
            "work_group_size": self.work_group_size,
            "size_defines": c_defines({"WG": self.work_group_size}),
            "signatures": self.signatures,
        }


class HZRun(NamedTuple):
    """The final ``F_N = F Z_N``, ``G_N = G Z_N`` and ``Z_N``, and how they were reached."""

    F: np.ndarray
    G: np.ndarray
    Z: np.ndarray
    sweeps: int
    converged: bool
    transformations: list[int]
    big_transformations: list[int]
    seconds: float


def hz_sweeps(
    queue: cl.CommandQueue,
    F: np.ndarray,
    G: np.ndarray,
    Z: np.ndarray,
    *,
    prescaled: bool,
    criterion: str = "C1",
    strategy: str = "me",
    max_sweeps: int = 30,
) -> HZRun:
    """Pointwise implicit Hari-Zimmermann sweeps on the device until convergence.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        Where to run (fp64 checked by the caller).
    F, G : numpy.ndarray
        ``m_F x n`` and ``m_G x n``, float64 or complex128 alike; not modified.
    Z : numpy.ndarray
        ``n x n``, the transformation so far (``Z_0``); not modified.
    prescaled, criterion : optional
        As :class:`HZSpec`.
    strategy : str, optional
        Parallel strategy of :func:`cljacobi.strategies.step_table` (the
        generalized Mantharam-Eberlein ordering by default, the paper's
        choice, Sect. 2.2); an odd ``n`` gets a virtual column that the
        kernel skips.
    max_sweeps : int, optional
        Sweeps before giving up (``converged`` False).

    Returns
    -------
    HZRun
        Raises ``numpy.linalg.LinAlgError`` if a pivot submatrix of
        ``G^* G`` was not positive definite (numerically dependent columns).
    """
    start = time.perf_counter()
    dtype = np.dtype(F.dtype)
    spec = HZSpec(dtype.name, prescaled=prescaled, criterion=criterion)
    program = build_program(queue.context, queue.device, spec)
    (mf, n), mg = F.shape, G.shape[0]
    check_global_memory(queue.device, {name: dtype.itemsize * rows * n
                                       for name, rows in (("F", mf), ("G", mg), ("Z", n))})
    mf_buffer = cl.mem_flags
    columns = [cl.Buffer(queue.context, mf_buffer.READ_WRITE | mf_buffer.COPY_HOST_PTR,
                         hostbuf=np.asfortranarray(Y)) for Y in (F, G, Z)]
    counters = cl.Buffer(queue.context, mf_buffer.READ_WRITE, 3 * 4)
    zero = np.zeros(3, dtype=np.int32)
    signature = spec.signatures["cjac_hz_step"]
    order = n + n % 2
    wg = spec.work_group_size
    transformations: list[int] = []
    big: list[int] = []
    converged = n < 2
    for sweep in range(0 if converged else max_sweeps):
        table = step_table(strategy, order, sweep=sweep).pairs.astype(np.int32)
        steps, per_step = table.shape[:2]
        pairs = cl.Buffer(queue.context, mf_buffer.READ_ONLY | mf_buffer.COPY_HOST_PTR,
                          hostbuf=np.ascontiguousarray(table))
        kernel = signature.kernel(
            program, f=columns[0], ldf=mf, mf=mf, g=columns[1], ldg=mg, mg=mg, zz=columns[2],
            ldz=n, n=n, pairs=pairs, first=0, counters=counters)
        cl.enqueue_copy(queue, counters, zero)
        for step in range(steps):
            signature.bind(kernel, first=step * per_step)
            cl.enqueue_nd_range_kernel(queue, kernel, (per_step * wg,), (wg,))
        counts = np.empty(3, dtype=np.int32)
        cl.enqueue_copy(queue, counts, counters)
        if counts[_NOT_DEFINITE]:
            raise np.linalg.LinAlgError(
                f"{int(counts[_NOT_DEFINITE])} pivot submatrices of B^* B were not positive "
                "definite in floating point: the columns of B are numerically dependent"
                + (" (prescaled: the column norms of B drifted from 1)" if prescaled else ""))
        transformations.append(int(counts[_TRANSFORMED]))
        big.append(int(counts[_BIG]))
        if big[-1] == 0:  # Sect. 2.5: a sweep without big transformations
            converged = True
            break
    results = [np.empty((rows, n), dtype=dtype, order="F") for rows in (mf, mg, n)]
    for host, device in zip(results, columns):
        cl.enqueue_copy(queue, host, device)
    queue.finish()
    return HZRun(*results, len(transformations), converged, transformations, big,
                 time.perf_counter() - start)
