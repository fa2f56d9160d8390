"""Bunch-Parlett complete pivoting on the device (``templates/bunch_parlett.cl.mako``).

The same factorization as :func:`cljacobi.factorization.j_factorize`,
``M = G J G^*`` with 1x1 and diagonalized 2x2 pivots (Bunch & Parlett 1971;
Slapničar 1992), but the O(n^3) Schur-complement updates and the complete
pivot search run on the OpenCL device.  The pivot decisions stay on the
device too (a small step state every launch reads), so the host enqueues the
steps in batches and reads the state once per batch; it steps in once, when
the remaining entries first fall below the normwise rank tolerance, to turn
the entrywise rank test on, which the kernel then decides on the device.
Real symmetric (float64) and complex Hermitian (complex128, stored as
interleaved (re, im) pairs on the device) input.

One pivot step is one launch of ``cjac_bp_step``: the rank-1 or rank-2
update of the trailing matrix, read through the symmetric interchanges of
the pivot (no row or column moves in memory) and written into the other of
two buffers, fused with the search for the next pivot; its last work-group
to finish decides that pivot, whose new columns of G the next launch's
work-groups compute from the pivot columns and store beside its update.  With
thousands of steps the launches' latency bounds small and medium
factorizations, hence one launch a step, and the interchanges, strided in
column-major storage, are never made.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..factorization import BUNCH_PARLETT_ALPHA, JFactor, entry_noise_level, rank_noise_level
from .device import require_fp64
from .launch import enqueue_kernel
from .limits import check_global_memory, check_work_group_size
from .matrix_products import compute_capability
from .operands import HermitianUpload, upload_hermitian
from .programs import build_program
from .signatures import KernelSignature, buffer, c_defines, c_struct, int_arg, real_arg
from .sizes import check_power_of_two, round_up
from .transfers import read_buffer

__all__ = ["BunchParlettPlan", "BunchParlettSpec", "DeviceJFactor", "factor_on_device",
           "j_factorize_device"]

#: Side of the square work-group of the step kernel.
TILE = 16
#: Row tiles per work-group (one partial-maximum record each strip of
#: `UPDATE_STRIP` tiles, fewer records for the last work-group to reduce).
#: Chosen with ``bench/tune_factorization.py`` (see ``bench/README.md``).
UPDATE_STRIP = 32
#: Row tiles whose entries a work-item loads before it stores any (loads in
#: flight at once).  Chosen with ``bench/tune_factorization.py``.
LOADS_AHEAD = 8
#: Pivot steps enqueued between two reads of the step state (a launch past
#: the last step is a no-op).  64 against 32 on one H200, medians of the
#: factorization's seconds, the same factors: real n = 1024 0.0167 -> 0.0162,
#: 4096 0.1339 -> 0.1320, 8192 0.6908 -> 0.6801 s, complex 4096 0.2363 ->
#: 0.2349 s; 128 measured alike (``bench/README.md``).
STEPS_PER_BATCH = 64
#: Work-groups of the step kernel a compute unit holds at once on NVIDIA's
#: devices, by dtype (``.minnctapersm``, :mod:`cljacobi.host.programs`): the
#: compiler's own choice, 80 registers (real) and 104 (complex), holds 3 and
#: 2; capped at 64 and 80 the kernel takes 3-6% less time (H200,
#: ``bench/README.md``).
RESIDENT_GROUPS = {"float64": 4, "complex128": 3}

#: The kinds of launch the step kernel is rendered for (its ``launch``):
#: every kind in one kernel, or each in its own.
LAUNCHES = ("any", "first", "plain", "testing")

#: The dtypes whose factorization runs a kernel for each kind of launch
#: (the others one kernel for all): on the H200 the real step kernels took
#: 5% less time at n = 4096 and 8192, the complex ones 1.5% more
#: (``bench/results/factorization-experiments-H200-2026-11-27.md``, section 7);
#: with the resident-groups hint, ``factor_on_device`` of real n = 2048 /
#: 4096 / 8192 0.0467 / 0.1612 / 0.769 s -> 0.0439 / 0.1553 / 0.740 s
#: (``bench/README.md``, "A kernel for each kind of launch").
KERNEL_PER_LAUNCH = ("float64",)


class _Word(enum.IntEnum):
    """Words of the step state (see ``bunch_parlett.cl.mako``)."""

    K = 0  # first position not yet eliminated
    S = 1  # size of the pivot last chosen
    P = 2
    Q = 3  # its positions, p <= q
    FLAG = 4  # a _Flag
    PENDING = 5  # the pivot chosen was not taken
    TESTING = 6  # the entrywise rank test is on
    CUR = 7  # the working matrix is in A1 (else A0)
    TICKET = 8  # work-groups of the running launch done


#: Words of the step state.
_STATE_WORDS = len(_Word)


class _Flag(enum.IntEnum):
    """Values of the state's flag word."""

    RUNNING = 0
    SMALL = 1  # below the normwise tolerance for the first time: the host steps in
    DONE = 2


#: One partial-maximum record (``cjac_bp_max`` of the template, rendered from it).
_RECORD_DTYPE = np.dtype([("off_value", np.float64), ("diag_value", np.float64),
                          ("off_row", np.int32), ("off_col", np.int32),
                          ("diag_index", np.int32), ("pad", np.int32)])


@dataclass(frozen=True)
class BunchParlettSpec:
    """Specialization parameters of ``templates/bunch_parlett.cl.mako``.

    Attributes
    ----------
    dtype : str
        ``"float64"`` or ``"complex128"`` (stored interleaved on the device).
    global_fence : str
        How a work-group publishes its stores before taking the step's
        ticket: ``"opencl"`` (``mem_fence``) or ``"ptx"`` (NVIDIA's
        ``membar.gl``, a fence for the whole device; :func:`global_fence_for`).
    strip : int
        Row tiles per work-group (one partial-maximum record each).
    ahead : int
        Row tiles whose entries a work-item loads at once.
    tile : int
        Side of the square work-group.
    resident_groups : int
        Work-groups a compute unit should hold at once (NVIDIA: the
        ``.minnctapersm`` hint, :func:`cljacobi.host.programs.build_program`);
        0 leaves it to the compiler.
    launch : str
        The kinds of launch the kernel serves (:data:`LAUNCHES`): ``"any"``,
        or only the first launch, the launches before the entrywise rank
        test, or those with it.
    """

    family: ClassVar[str] = "bunch_parlett"
    dtype: str
    global_fence: str = "opencl"
    strip: int = UPDATE_STRIP
    ahead: int = LOADS_AHEAD
    tile: int = TILE
    resident_groups: int = 0
    launch: str = "any"

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "complex128"):
            raise ValueError(f"the device factorization takes float64 or complex128, "
                             f"not {self.dtype!r}")
        if self.global_fence not in ("opencl", "ptx"):
            raise ValueError(f"global_fence must be 'opencl' or 'ptx', not {self.global_fence!r}")
        check_power_of_two("tile", self.tile)
        if self.strip < 1 or self.ahead < 1:
            raise ValueError(f"strip and ahead must be positive, not {self.strip}, {self.ahead}")
        if self.resident_groups < 0:
            raise ValueError(f"resident_groups must be nonnegative, not {self.resident_groups}")
        if self.launch not in LAUNCHES:
            raise ValueError(f"launch must be one of {LAUNCHES}, not {self.launch!r}")

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """The arguments of the kernel, declared once."""
        elem, real = "__global cjac_elem *", "__global cjac_real *"
        step = KernelSignature("cjac_bp_step", (
            buffer("A0", elem), buffer("A1", elem), int_arg("lda"), int_arg("n"),
            buffer("state", "__global int *"), buffer("G", elem), int_arg("ldg"),
            buffer("signs", real), buffer("perm", "__global int *"),
            buffer("partial", "__global cjac_bp_max *"), int_arg("row_groups"),
            buffer("scale", real), buffer("row_norms0", real), buffer("row_norms1", real),
            real_arg("noise_level"), buffer("tolerance", real),
            real_arg("rank_noise"), int_arg("conjugated"),
        ))
        return {step.name: step}

    def render_args(self) -> dict[str, object]:
        """The keyword arguments the template is rendered with."""
        constants = {f"CJAC_BP_{word.name}": int(word) for word in _Word}
        constants.update({f"CJAC_BP_{flag.name}": int(flag) for flag in _Flag})
        return {
            "real_ctype": "double", "complex_": self.dtype == "complex128",
            "layout": "interleaved", "tile": self.tile, "strip": self.strip,
            "ahead": self.ahead, "launch": self.launch,
            "global_fence": self.global_fence, "alpha": BUNCH_PARLETT_ALPHA,
            "state_defines": c_defines(constants),
            "record_struct": c_struct("cjac_bp_max", _RECORD_DTYPE),
            "signatures": self.signatures,
        }


@dataclass(frozen=True)
class BunchParlettPlan:
    """Every size of one device factorization, decided once (:meth:`for_device`).

    Attributes
    ----------
    spec : BunchParlettSpec
        The program.
    n, lda : int
        Order, and the leading dimension of A and G on the device.
    tiles, row_groups : int
        Column tiles and row strips of the grid of the whole matrix: one
        partial-maximum record each.
    """

    spec: BunchParlettSpec
    n: int
    lda: int
    tiles: int
    row_groups: int

    @classmethod
    def for_device(cls, device: cl.Device, n: int, dtype: np.dtype) -> BunchParlettPlan:
        """The plan for an order-`n` `dtype` matrix on `device`, after checking
        that the device has fp64, the work-group size and the memory (before
        any launch)."""
        require_fp64(device)
        dtype = np.dtype(dtype)
        nvidia = compute_capability(device) is not None
        spec = BunchParlettSpec(dtype.name, global_fence_for(device), UPDATE_STRIP, LOADS_AHEAD,
                                 resident_groups=RESIDENT_GROUPS[dtype.name] if nvidia else 0)
        check_work_group_size(device, spec.tile * spec.tile, "the device factorization")
        tiles = -(-n // spec.tile)
        plan = cls(spec, n, round_up(n, 32), tiles, -(-tiles // spec.strip))
        item = dtype.itemsize
        check_global_memory(device, {
            "A": item * plan.lda * n, "A (next step)": item * plan.lda * n,
            "G": item * plan.lda * n, "|M| for the rank test": 8 * plan.lda * n,
            "partial maxima": plan.record_bytes})
        return plan

    @property
    def record_bytes(self) -> int:
        return _RECORD_DTYPE.itemsize * self.tiles * self.row_groups

    def step_range(self, trailing: int) -> tuple[int, int]:
        """Global size of a step covering `trailing` rows and columns (at
        least one work-group, which decides the end when nothing is left)."""
        tile = self.spec.tile
        t = max(-(-trailing // tile), 1)
        return (-(-t // self.spec.strip) * tile, t * tile)


def global_fence_for(device: cl.Device) -> str:
    """The step kernel's fence before its ticket: NVIDIA's ``membar.gl``
    where the device is NVIDIA's (its compiler turns OpenCL's
    ``mem_fence(CLK_GLOBAL_MEM_FENCE)`` into ``membar.cta``, a fence for the
    work-group only), ``mem_fence`` elsewhere."""
    return "ptx" if compute_capability(device) is not None else "opencl"


@dataclass
class DeviceJFactor:
    """``M = G J G^*`` with G left on the device.

    Column ``order[j]`` of `buffer` (column-major, leading dimension `ld`,
    `n` rows in the original row order of M) is column j of G; the signs
    are sorted, the first `p` positive, as in :class:`JFactor`.
    """

    queue: cl.CommandQueue
    buffer: cl.Buffer
    ld: int
    n: int
    order: np.ndarray
    signs: np.ndarray
    p: int
    dtype: np.dtype

    @property
    def rank(self) -> int:
        return len(self.order)

    def to_host(self) -> JFactor:
        """The same factor with G in host memory (Fortran-ordered)."""
        columns = read_buffer(self.queue, self.buffer, (self.n, self.ld), self.dtype)
        G = columns[self.order, :self.n].T  # gathering rows is a contiguous copy
        return JFactor(G, self.signs, self.p)


def j_factorize_device(
    M: np.ndarray, queue: cl.CommandQueue, *, rank_tol: float | None = None
) -> JFactor:
    """Rank-revealing J-factorization ``M = G J G^*`` computed on the device.

    Parameters
    ----------
    M : numpy.ndarray
        Real symmetric or complex Hermitian ``n x n`` matrix; only its lower
        triangle is used (the imaginary parts of the diagonal are ignored).
        Real input is factored in float64, complex input in complex128.
    queue : pyopencl.CommandQueue
        Where to run; the device needs fp64.
    rank_tol : float, optional
        As in :func:`cljacobi.factorization.j_factorize`.

    Returns
    -------
    JFactor
        As :func:`cljacobi.factorization.j_factorize`: ``G`` (float64 or
        complex128, Fortran-contiguous) with the same pivots, rank and signs.
        Ties in the pivot search go to the smaller (column, row), so the
        result is deterministic; it may differ from the host version in the
        last bits (fused multiply-adds).
    """
    M = np.asarray(M)
    if M.shape[0] == 0:
        dtype = np.complex128 if np.iscomplexobj(M) else np.float64
        return JFactor(np.zeros((0, 0), dtype=dtype, order="F"), np.zeros(0, np.int8), 0)
    return factor_on_device(M, queue, rank_tol=rank_tol).to_host()


def upload_for_factorization(M: np.ndarray, queue: cl.CommandQueue,
                             name: str = "M") -> HermitianUpload:
    """M (float64 or complex128, ``n >= 1``) to the device as it is, with what
    :func:`cljacobi.validation.symmetric_part` records of it computed there
    (:func:`cljacobi.host.operands.upload_hermitian`; its asymmetry
    ValueError names `name`), in the buffer :func:`factor_on_device` then
    takes for the factorization's second working matrix: no host copy of
    the Hermitian part, and no more device memory than the factorization's."""
    M = np.asarray(M)
    plan = BunchParlettPlan.for_device(queue.device, M.shape[0], M.dtype)
    return upload_hermitian(queue, M, name, ld=plan.lda)


def factor_on_device(
    M: np.ndarray | HermitianUpload, queue: cl.CommandQueue, *,
    rank_tol: float | None = None, exactly_hermitian: bool = False, shift: int = 0,
) -> DeviceJFactor:
    """:func:`j_factorize_device` with the factor G left in device memory.

    Parameters
    ----------
    M : numpy.ndarray or HermitianUpload
        Real symmetric or complex Hermitian ``n x n`` matrix, ``n >= 1`` (only
        its lower triangle is used); or one :func:`upload_for_factorization`
        put on the device, of which ``2^shift`` times the Hermitian part is
        factored (the device scales it as it loads it).
    queue : pyopencl.CommandQueue
        Where to run, for the sweeps that follow on the same device.
    rank_tol : float, optional
        As in :func:`cljacobi.factorization.j_factorize`.
    exactly_hermitian : bool, optional
        The caller guarantees ``M == M^*`` exactly (both triangles, a real
        diagonal): the rows of a C-ordered M then go to the device as they
        are, as the conjugates of its columns, and the first launch
        conjugates them back, instead of a transposed copy on the host.
        The same bits either way.
    shift : int, optional
        For an uploaded M: the power of two it is scaled by (exact).

    Returns
    -------
    DeviceJFactor
        G in a device buffer, with its column order and signs.

    Notes
    -----
    Every pivot step is one launch of ``cjac_bp_step``, after one launch
    that only searches; the host reads the step state once per
    `STEPS_PER_BATCH` steps, and steps in once more when the remaining
    entries first fall below the normwise tolerance.
    """
    if isinstance(M, HermitianUpload):
        plan = BunchParlettPlan.for_device(queue.device, M.n, M.dtype)
        elimination = _Elimination(queue, plan, M, shift=shift)
        return elimination.run(rank_tol)
    M = np.asarray(M)
    dtype = np.dtype(np.complex128 if np.iscomplexobj(M) else np.float64)
    plan = BunchParlettPlan.for_device(queue.device, M.shape[0], dtype)
    elimination = _Elimination(queue, plan, M.astype(dtype, copy=False),
                               exactly_hermitian=exactly_hermitian)
    return elimination.run(rank_tol)


class _Elimination:
    """The device buffers and the kernel of one factorization."""

    def __init__(self, queue: cl.CommandQueue, plan: BunchParlettPlan,
                 M: np.ndarray | HermitianUpload, *, exactly_hermitian: bool = False,
                 shift: int = 0) -> None:
        self.queue, self.plan = queue, plan
        n, lda, item = plan.n, plan.lda, M.dtype.itemsize
        self.dtype = M.dtype
        ctx, mf = queue.context, cl.mem_flags

        def zeroed(nbytes: int) -> cl.Buffer:
            buf = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
            cl.enqueue_fill_buffer(queue, buf, np.zeros(1, np.int32), 0, nbytes)
            return buf

        # Column c of A0 is column c of M (row c of M^T), or, for an exactly
        # Hermitian C-ordered M, row c of M, its conjugate, which the first
        # launch conjugates back (the same numbers for real M); padded to lda
        # rows on the device by a rectangular copy (no padded host copy).  The
        # kernel reads only the lower triangle, so only the lower triangle of
        # M counts, as on the host; the first launch drops the imaginary parts
        # of the diagonal.
        # An uploaded M (upload_for_factorization) is loaded from its buffer,
        # scaled and lower triangle only, which then serves as A1.
        A0 = zeroed(item * n * lda)
        if isinstance(M, HermitianUpload):
            if M.ld != lda:
                raise ValueError(f"an uploaded M needs leading dimension {lda}, not {M.ld}")
            conjugated, self._rows = False, None
            M.load(A0, lda, shift)
            A1 = M.buffer
        else:
            as_rows = exactly_hermitian and M.flags.c_contiguous
            conjugated = as_rows and M.dtype.kind == "c"
            rows = self._rows = M if as_rows else np.ascontiguousarray(M.T)  # until copied
            cl.enqueue_copy(queue, A0, rows, buffer_origin=(0, 0), host_origin=(0, 0),
                            region=(item * n, n), buffer_pitches=(item * lda,),
                            host_pitches=(item * n,), is_blocking=False)
            A1 = cl.Buffer(ctx, mf.READ_WRITE, item * n * lda)
        self.G = zeroed(item * n * lda)
        self.signs = cl.Buffer(ctx, mf.READ_WRITE, 8 * n)
        # Step state (k, s, p, q, flag, pending, testing, cur, ticket) = 0:
        # nothing decided, so the first launch only searches.
        self.state = np.zeros(_STATE_WORDS, np.int32)
        self.state_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=self.state)
        self.tolerance = cl.Buffer(ctx, mf.READ_WRITE, 8)
        # Kept for the life of the kernel (setting an argument does not hold the buffer).
        self.arguments = buffers = {
            "A0": A0, "A1": A1, "lda": lda,
            "n": n, "state": self.state_buf,
            "G": self.G, "ldg": lda, "signs": self.signs,
            "perm": cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                              hostbuf=np.arange(n, dtype=np.int32)),
            "partial": cl.Buffer(ctx, mf.READ_WRITE, plan.record_bytes),
            "row_groups": plan.row_groups,
            # |m_ij| by original row and column, and the row norms of the
            # factor by position (read from one, stored into the other), for
            # the entrywise rank test.
            "scale": cl.Buffer(ctx, mf.READ_WRITE, 8 * n * lda),
            "row_norms0": zeroed(8 * n), "row_norms1": zeroed(8 * n),
            "noise_level": entry_noise_level(n),
            "tolerance": self.tolerance, "rank_noise": rank_noise_level(n),
            "conjugated": int(conjugated),
        }
        signature = plan.spec.signatures["cjac_bp_step"]
        launches = LAUNCHES[1:] if plan.spec.dtype in KERNEL_PER_LAUNCH else ("any",)
        kernels = {launch: signature.kernel(
            build_program(ctx, queue.device, replace(plan.spec, launch=launch)),
            **{a.name: buffers[a.name] for a in signature.args}) for launch in launches}
        #: The step kernel of each kind of launch (the same one for all where
        #: the dtype has one kernel).
        self.steps = {launch: kernels.get(launch, kernels.get("any"))
                      for launch in LAUNCHES[1:]}

    def _enqueue_step(self, trailing: int, launch: str | None = None) -> None:
        """One launch of the step kernel for `trailing` rows: of the kind
        given, else "testing" or "plain" as the rank test is on or not (the
        state's TESTING word, which only the host sets)."""
        launch = launch or ("testing" if self.state[_Word.TESTING] else "plain")
        tile = self.plan.spec.tile
        enqueue_kernel(self.queue, self.steps[launch], self.plan.step_range(trailing),
                       (tile, tile))

    def _enqueue_steps(self, k: int) -> None:
        """A batch of pivot steps from position `k` (exact: all launched steps ran).

        Every step advances k by at least one, so the j-th launch of the
        batch updates from position k + j or later, at most n - (k + j)
        trailing rows; a launch that finds the flag set is a no-op, and so
        are all after it.  A pivot that ends at n is applied by one more
        launch (at k = n), which sets the flag.
        """
        for lower_k in range(k, min(k + STEPS_PER_BATCH, self.plan.n + 1)):
            self._enqueue_step(self.plan.n - lower_k)

    def _read_state(self) -> tuple[int, int]:
        cl.enqueue_copy(self.queue, self.state, self.state_buf)
        return int(self.state[_Word.K]), int(self.state[_Word.FLAG])

    def _start_testing(self, k: int) -> None:
        """Turn the entrywise rank test on: no pivot was taken at k (the
        state's PENDING is set), so one launch only searches, dropping the
        noise of the trailing matrix, and decides again."""
        self.state[_Word.FLAG] = _Flag.RUNNING
        self.state[_Word.TESTING] = 1
        cl.enqueue_copy(self.queue, self.state_buf, self.state)
        self._enqueue_step(self.plan.n - k)

    def run(self, rank_tol: float | None) -> DeviceJFactor:
        """Eliminate until the rank test stops; the factor left on the device.

        The tolerance of the normwise rank test is the given one, or (a
        negative value left for the kernel) ``n eps max|m_ij|`` over the
        lower triangle from the first search, the host's default."""
        n = self.plan.n
        scaled_test = rank_tol is None
        tolerance = np.array([-1.0 if scaled_test else max(rank_tol, 0.0)])
        cl.enqueue_copy(self.queue, self.tolerance, tolerance)
        self._enqueue_step(n, "first")  # the first search, which decides the first pivot
        while True:
            k, flag = self._read_state()
            if flag == _Flag.DONE:
                break
            if flag == _Flag.SMALL:
                if not scaled_test:
                    break
                self._start_testing(k)
            self._enqueue_steps(k)
        signs = np.empty(n)
        cl.enqueue_copy(self.queue, signs, self.signs)
        self.queue.finish()
        signs = np.where(signs[:k] > 0, 1, -1).astype(np.int8)
        order = np.concatenate((np.flatnonzero(signs > 0), np.flatnonzero(signs < 0)))
        return DeviceJFactor(self.queue, self.G, self.plan.lda, n, order.astype(np.int32),
                             signs[order], int(np.count_nonzero(signs > 0)), self.dtype)
