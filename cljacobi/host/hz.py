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
from functools import cache
from typing import ClassVar, NamedTuple

import numpy as np
import pyopencl as cl

from ..strategies import step_table
from .launch import enqueue_kernel, set_scalar_arg
from .limits import check_global_memory
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, int_arg
from .sizes import check_power_of_two, round_up
from .transfers import buffer_holding

__all__ = ["CRITERIA", "HZ_COUNTERS", "HZ_DTYPES", "HZ_WORK_GROUP", "HZRun", "HZSpec", "border_pair",
           "hz_sweeps", "not_definite_error", "pointwise_tables"]

#: Convergence criteria of the paper's Sect. 2.5.
CRITERIA = ("C1", "C2")

#: Element types of the kernels.
HZ_DTYPES = ("float64", "complex128")

#: Work-items per pivot pair: enough to stream two columns of a few thousand rows.
HZ_WORK_GROUP = 128

#: The counters of a sweep, by their index in the counters buffer (rendered
#: into ``templates/hz.cl.mako``): transformations, big ones, and pivot pairs
#: whose ``B'_k`` was not positive definite.
HZ_COUNTERS = {"HZ_TRANSFORMED": 0, "HZ_BIG": 1, "HZ_NOT_DEFINITE": 2}
_TRANSFORMED, _BIG, _NOT_DEFINITE = HZ_COUNTERS.values()


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
    enhanced_dots : bool
        The dot products and squared norms of the pivot submatrices by the
        enhanced procedure of [NS] Appendix A (the paper's variants 1, 3, 5
        and 7) instead of ordinary sums.
    indefinite : bool
        ``A = F^* J F`` with ``J = diag(I_p, -I)`` over the rows of F (the
        kernel takes p): the definite pencil of ``eig_indefinite(M, B)``;
        pointwise only.
    block_width : int
        0: the pointwise kernel alone; w > 0: also ``cjac_hz_block``, the
        block level (Sect. 2.3, 2.4): the Cholesky factors of the two Gram
        matrices of a 2w-column block pair, the inner pointwise sweeps on
        them and the rescaling Theta, one work-group of w^2 items each.
    """

    family: ClassVar[str] = "hz"
    dtype: str
    prescaled: bool = False
    criterion: str = "C1"
    work_group_size: int = HZ_WORK_GROUP
    block_width: int = 0
    enhanced_dots: bool = False
    indefinite: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in HZ_DTYPES:
            raise ValueError(f"the HZ kernels handle {HZ_DTYPES}, not {self.dtype}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"criterion must be one of {CRITERIA}, not {self.criterion!r}")
        check_power_of_two("work_group_size", self.work_group_size)
        if self.block_width:
            check_power_of_two("block_width", self.block_width)
            if self.indefinite:
                raise ValueError("the blocked level forms F^* F unweighted: the indefinite "
                                 "pencil runs pointwise")

    @property
    def inner_pairs(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The inner strategy's steps for order 2w (the generalized ME ordering)."""
        if not self.block_width:
            return ()
        table = step_table("me", 2 * self.block_width).pairs
        return tuple(tuple((int(i), int(j)) for i, j in step) for step in table)

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The kernels' arguments, declared once.

        ``n`` is the number of columns, ``mz`` the rows of Z (n, or all rows
        of a rank's stripes of Z) and ``order`` the n of the relative
        orthogonality tolerance ``sqrt(n) eps`` (the whole problem's: the
        columns, or all columns of a distributed run).
        """
        column = "__global cjac_elem *"
        step = KernelSignature("cjac_hz_step", (
            buffer("f", column), int_arg("ldf"), int_arg("mf"),
            buffer("g", column), int_arg("ldg"), int_arg("mg"),
            buffer("zz", column), int_arg("ldz"), int_arg("mz"), int_arg("n"),
            int_arg("order"),
            buffer("pairs", "__global const int *"), int_arg("first"),
            buffer("counters", "__global int *"),
        ) + ((int_arg("positive_rows"),) if self.indefinite else ()))
        if not self.block_width:
            return {step.name: step}
        partial = "__global const cjac_elem *"
        block = KernelSignature("cjac_hz_block", (
            buffer("partial_f", partial), buffer("partial_g", partial), int_arg("chunks"),
            int_arg("order"), int_arg("inner_sweeps"),
            buffer("transforms", "__global cjac_elem *"), buffer("rotated", "__global int *"),
            buffer("counters", "__global int *"),
        ))
        return {step.name: step, block.name: block}

    @property
    def constants(self) -> dict[str, int]:
        """The sizes rendered as ``#define`` lines."""
        sizes = {"WG": self.work_group_size, **HZ_COUNTERS}
        if self.block_width:
            sizes.update(BW=self.block_width, HZ_INNER_STEPS=len(self.inner_pairs),
                         HZ_BLOCK_WG=self.block_width ** 2)
        return sizes

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        return {
            "real_ctype": "double", "complex_": self.dtype == "complex128",
            "prescaled": self.prescaled, "criterion": self.criterion,
            "enhanced_dots": self.enhanced_dots, "indefinite": self.indefinite,
            "work_group_size": self.work_group_size,
            "size_defines": c_defines(self.constants),
            "block_width": self.block_width, "inner_pairs": self.inner_pairs,
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
    #: The form of the block level's Gram and update kernels (of F and G;
    #: :mod:`cljacobi.host.matrix_products`), empty without one.
    matrix_products: str = ""


class _Pair(NamedTuple):
    """F, G and Z on the device (column-major, leading dimension = rows)."""

    f: cl.Buffer
    g: cl.Buffer
    z: cl.Buffer
    rows_f: int
    rows_g: int
    rows_z: int
    columns: int
    #: The n of the tolerance sqrt(n) eps.
    order: int


def border_pair(F: np.ndarray, G: np.ndarray, Z: np.ndarray, columns: int) -> tuple[np.ndarray, ...]:
    """F, G, Z bordered to `columns` columns (a multiple of 2w; [NS] Sect. 3.1):
    zero columns in F, unit columns e_(m_G + j) in G, e_(n + j) in Z, so that a
    border column is relatively orthogonal to every other and never
    transformed (a sorting P_k may move it; its G column tells it apart).
    F and G get the same rows, for one Gram and update plan."""
    (mf, n), mg = F.shape, G.shape[0]
    extra = columns - n
    rows = max(mf, mg + extra)
    F_b = np.zeros((rows, columns), dtype=F.dtype, order="F")
    F_b[:mf, :n] = F
    G_b = np.zeros((rows, columns), dtype=F.dtype, order="F")
    G_b[:mg, :n] = G
    G_b[mg + np.arange(extra), n + np.arange(extra)] = 1
    Z_b = np.zeros((columns, columns), dtype=F.dtype, order="F")
    Z_b[:n, :n] = Z
    Z_b[n + np.arange(extra), n + np.arange(extra)] = 1
    return F_b, G_b, Z_b


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
    block_width: int = 0,
    variant: str = "bo",
    positive_rows: int | None = None,
    enhanced_dots: bool = False,
    order: int | None = None,
    outer_pairs: np.ndarray | None = None,
) -> HZRun:
    """Implicit Hari-Zimmermann sweeps on the device until convergence.

    With a `block_width` w the block-oriented sweeps of [NS] Sect. 2.3 run
    first (block pairs of 2w columns: the Cholesky factors of their two Gram
    matrices, inner pointwise sweeps on those, the transformation rescaled by
    Theta (Sect. 2.4) and applied to F, G and Z by the blocked family's GEMM)
    until one of them has no big transformation; pointwise
    sweeps then finish and decide convergence, as for the other solvers.

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        Where to run (fp64 checked by the caller).
    F, G : numpy.ndarray
        ``m_F x n`` and ``m_G x n``, float64 or complex128 alike; not modified.
    Z : numpy.ndarray
        ``n x n``, the transformation so far (``Z_0``); not modified (any
        number of rows: a rank's stripes of Z hold all of them).
    prescaled, criterion : optional
        As :class:`HZSpec`.
    strategy : str, optional
        Parallel strategy of the pointwise sweeps
        (:func:`cljacobi.strategies.step_table`; the generalized
        Mantharam-Eberlein ordering by default, the paper's choice, Sect.
        2.2); an odd ``n`` gets a virtual column that the kernel skips.
    max_sweeps : int, optional
        Sweeps (blocked and pointwise together) before giving up
        (``converged`` False).
    block_width : int, optional
        0 (pointwise only) or the block width w.
    variant : {"bo", "fb"}, optional
        With a block width: one inner sweep per block pair (BO), or inner
        sweeps until one transforms nothing, at most
        :data:`cljacobi.host.blocked.FULL_BLOCK_INNER_SWEEPS` (FB).
    positive_rows : int, optional
        The indefinite pencil ``A = F^* J F``, ``J = diag(I_p, -I)`` with
        p = `positive_rows` over the rows of F (pointwise only); None: ``A =
        F^* F``.
    enhanced_dots : bool, optional
        As :class:`HZSpec`.
    order : int, optional
        The n of the tolerance ``sqrt(n) eps`` of [NS] Sect. 2.5 (default:
        the bordered columns; a rank of a distributed run passes the whole
        problem's).  Z may have any number of rows (all of a rank's stripes).
    outer_pairs : numpy.ndarray, optional
        The block pairs of a blocked sweep's steps (``steps x blocks/2 x
        2``, each block once a step) instead of the outer strategy's table
        (as :meth:`cljacobi.host.blocked.BlockedHSVD.run_operands`).

    Returns
    -------
    HZRun
        Raises ``numpy.linalg.LinAlgError`` if a pivot submatrix of
        ``G^* G`` was not positive definite (numerically dependent columns).
    """
    start = time.perf_counter()
    dtype = np.dtype(F.dtype)
    (mf, n), mg = F.shape, G.shape[0]
    columns = round_up(n, 2 * block_width) if block_width else n
    # F and G share the blocked kernels' plan, so they need the same rows.
    bordered = bool(block_width) and (columns != n or F.shape[0] != G.shape[0])
    if bordered:
        F, G, Z = border_pair(F, G, Z, columns)
    check_global_memory(queue.device, {name: dtype.itemsize * Y.size
                                       for name, Y in (("F", F), ("G", G), ("Z", Z))})
    buffers = [buffer_holding(queue, np.asfortranarray(Y)) for Y in (F, G, Z)]
    pair = _Pair(*buffers, F.shape[0], G.shape[0], Z.shape[0], columns,
                 columns if order is None else order)
    counters = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * len(HZ_COUNTERS))
    spec = HZSpec(dtype.name, prescaled=prescaled, criterion=criterion, block_width=block_width,
                  enhanced_dots=enhanced_dots, indefinite=positive_rows is not None)
    program = build_program(queue.context, queue.device, spec)
    transformations: list[int] = []
    big: list[int] = []
    converged = n < 2
    products = ""
    if block_width and not converged:
        products = _blocked_sweeps(queue, program, spec, pair, counters, max_sweeps,
                                   transformations, big, variant, outer_pairs)
    if not converged:
        converged = _pointwise_sweeps(queue, program, spec, pair, counters, strategy,
                                      max_sweeps - len(transformations), transformations, big,
                                      positive_rows)
    results = [np.empty((rows, columns), dtype=dtype, order="F")
               for rows in (pair.rows_f, pair.rows_g, pair.rows_z)]
    for host, device in zip(results, buffers):
        cl.enqueue_copy(queue, host, device)
    queue.finish()
    F_out, G_out, Z_out = results
    if bordered:  # the border columns are those with a nonzero in G's border rows
        real = ~np.any(G_out[mg:], axis=0)
        F_out, G_out, Z_out = F_out[:mf, real], G_out[:mg, real], Z_out[:n, real]
    return HZRun(F_out, G_out, Z_out, len(transformations), converged, transformations, big,
                 time.perf_counter() - start, products)


def not_definite_error(count: int, prescaled: bool) -> np.linalg.LinAlgError:
    """The error of a sweep that met `count` pivot submatrices of ``B^* B``
    that were not positive definite."""
    return np.linalg.LinAlgError(
        f"B is not of full column rank: {count} pivot submatrices of B^* B were not positive "
        "definite in floating point (numerically dependent columns)"
        + (" (prescaled: the column norms of B drifted from 1)" if prescaled else ""))


@cache
def pointwise_tables(strategy: str, n: int) -> tuple[np.ndarray, int, int]:
    """Both step tables of `strategy` for the pointwise sweeps of n columns (a
    virtual one for an odd n, which the kernels skip): ``(pairs, steps,
    per_step)``, the two tables one after the other.  Every strategy's table
    repeats with period 2 (the ring alternates its forward and backward
    sweeps, MM its slot assignment): sweep s takes table ``s % 2``."""
    order = n + n % 2
    tables = [step_table(strategy, order, sweep=s).pairs for s in (0, 1)]
    steps, per_step = tables[0].shape[:2]
    return np.ascontiguousarray(np.concatenate(tables), dtype=np.int32), steps, per_step


def _read_counters(queue: cl.CommandQueue, counters: cl.Buffer, prescaled: bool,
                   transformations: list[int], big: list[int]) -> None:
    counts = np.empty(len(HZ_COUNTERS), dtype=np.int32)
    cl.enqueue_copy(queue, counts, counters)
    if counts[_NOT_DEFINITE]:
        raise not_definite_error(int(counts[_NOT_DEFINITE]), prescaled)
    transformations.append(int(counts[_TRANSFORMED]))
    big.append(int(counts[_BIG]))


def _pointwise_sweeps(queue, program, spec, pair, counters, strategy, max_sweeps,
                      transformations, big, positive_rows=None) -> bool:
    """Pointwise sweeps until one has no big transformation (Sect. 2.5)."""
    signature = spec.signatures["cjac_hz_step"]
    n = pair.columns
    wg = spec.work_group_size
    tables, steps, per_step = pointwise_tables(strategy, n)  # both go up once
    pairs = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=tables)
    kernel = signature.kernel(
        program, f=pair.f, ldf=pair.rows_f, mf=pair.rows_f, g=pair.g, ldg=pair.rows_g,
        mg=pair.rows_g, zz=pair.z, ldz=pair.rows_z, mz=pair.rows_z, n=n, order=pair.order,
        pairs=pairs, first=0,
        counters=counters, **({"positive_rows": positive_rows} if spec.indefinite else {}))
    first = signature.position("first")
    zero = np.zeros(len(HZ_COUNTERS), dtype=np.int32)
    for sweep in range(max(max_sweeps, 0)):
        cl.enqueue_copy(queue, counters, zero)
        for step in range(steps):
            set_scalar_arg(kernel, first, np.int32(((sweep % 2) * steps + step) * per_step))
            enqueue_kernel(queue, kernel, (per_step * wg,), (wg,))
        _read_counters(queue, counters, spec.prescaled, transformations, big)
        if big[-1] == 0:
            return True
    return False


def _blocked_sweeps(queue, program, spec, pair, counters, max_sweeps, transformations,
                    big, variant, outer_pairs=None) -> str:
    """Block sweeps ([NS] Sect. 2.3, BO or FB) until one has no big
    transformation; the form of the Gram and update kernels of F and G."""
    from .blocked import FULL_BLOCK_INNER_SWEEPS, OUTER_STRATEGY, BlockedPlan

    w = spec.block_width
    plans = [BlockedPlan.for_device(queue.device, rows=rows, columns=pair.columns,
                                    dtype=spec.dtype, block_width=w, variant="bo",
                                    accumulate_v=False)
             for rows in (pair.rows_f, pair.rows_z)]
    fg_plan, z_plan = plans
    programs = [build_program(queue.context, queue.device, plan.spec) for plan in plans]
    if outer_pairs is None:
        tables = [step_table(OUTER_STRATEGY, fg_plan.blocks, sweep=s).pairs for s in (0, 1)]
    else:
        tables = [outer_pairs, outer_pairs]
    outer_steps = len(tables[0])
    outer = np.ascontiguousarray(np.concatenate(tables), np.int32)
    ctx, flags = queue.context, cl.mem_flags
    outer_buf = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=outer)
    partials = [cl.Buffer(ctx, flags.READ_WRITE, fg_plan.partial_bytes) for _ in range(2)]
    transforms = cl.Buffer(ctx, flags.READ_WRITE, fg_plan.transforms_bytes)
    rotated = cl.Buffer(ctx, flags.READ_WRITE, 4 * fg_plan.slots)
    step = {"outer_pairs": outer_buf, "step": 0}
    # Per outer step, in order: the Gram matrices of F and G, the inner sweeps,
    # the updates of F, G and Z; (kernel, position of its step argument or
    # None, global size, local size), the positions found once.
    launches = []
    gram_sig = fg_plan.spec.signatures["cjac_block_gram"]
    for data, partial in ((pair.f, partials[0]), (pair.g, partials[1])):
        kernel = gram_sig.kernel(programs[0], G=data, ldg=pair.rows_f, m=pair.rows_f,
                                 chunk_rows=fg_plan.gram_chunks.rows, partial=partial, **step)
        launches.append((kernel, gram_sig.position("step"), *fg_plan.launches()["gram"]))
    block = spec.signatures["cjac_hz_block"].kernel(
        program, partial_f=partials[0], partial_g=partials[1],
        chunks=fg_plan.gram_chunks.count, order=pair.order,
        inner_sweeps=1 if variant == "bo" else FULL_BLOCK_INNER_SWEEPS,
        transforms=transforms, rotated=rotated, counters=counters)
    launches.append((block, None, (fg_plan.slots * w * w,), (w * w,)))
    for plan, prog, data, rows in ((fg_plan, programs[0], pair.f, pair.rows_f),
                                   (fg_plan, programs[0], pair.g, pair.rows_g),
                                   (z_plan, programs[1], pair.z, pair.rows_z)):
        update_sig = plan.spec.signatures["cjac_block_update"]
        kernel = update_sig.kernel(prog, X=data, ldx=rows, m=rows,
                                   chunk_rows=plan.update_g_chunks.rows, transforms=transforms,
                                   rotated=rotated, **step)
        launches.append((kernel, update_sig.position("step"), *plan.launches()["update_g"]))
    zero = np.zeros(len(HZ_COUNTERS), dtype=np.int32)
    for sweep in range(max_sweeps):
        cl.enqueue_copy(queue, counters, zero)
        for s in range(outer_steps):
            index = np.int32((sweep % 2) * outer_steps + s)
            for kernel, step_arg, global_size, local_size in launches:
                if step_arg is not None:
                    set_scalar_arg(kernel, step_arg, index)
                enqueue_kernel(queue, kernel, global_size, local_size)
        _read_counters(queue, counters, spec.prescaled, transformations, big)
        if big[-1] == 0:
            break
    return fg_plan.spec.matrix_products
