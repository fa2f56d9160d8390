"""The solvers on an MPI communicator (``comm=``), one OpenCL device per rank.

``eig_indefinite``, ``hsvd``, ``svd`` and ``gsvd`` with ``comm=`` (an
``mpi4py`` intracommunicator) are called on every rank.  The input is given
whole on rank 0 (the other ranks pass None, and get None back), or on every
rank its block columns (gathered to rank 0, and every rank gets its columns
of the result: :func:`solve_on`).  Rank 0 validates it and prepares the
factor (scaling, the J-factorization, the QR shortening) as one device
would; the sweeps then run on all ranks (:mod:`cljacobi.host.distributed`:
two stripes of the factor's columns per rank, exchanged by the
Mantharam-Eberlein table), and rank 0 reads the result off as one device
would.  With one rank the single-device sweeps run.

The steps of a call, on every rank:

1. each rank resolves its device (:func:`rank_queue`; no collective call
   depends on how, so a rank that fails cannot leave the others in one),
   and all ranks learn
   whether every one did (an error on any rank raises on all of them:
   :class:`~cljacobi.errors.DistributedError` naming the rank, or the
   error itself on the rank it happened on);
2. rank 0 runs the one solver pipeline (:func:`cljacobi._solve.solve`); its
   sweeps (:func:`run_sweeps`) send a job to the other ranks, which wait
   for jobs in :func:`serve`;
3. rank 0 ends the call by telling the others that it is done, or that it
   failed (they then raise :class:`~cljacobi.errors.DistributedError`).

A rank that fails *during* the sweeps cannot be answered by the others,
which wait for its stripes: it prints the error and aborts the
communicator (``MPI_Abort``), so no rank hangs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import pyopencl as cl

from ._arrays import is_device_array
from ._results import SolveInfo
from .errors import DistributedError
from .host.blocked import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES
from .host.device import ENV_VAR, default_queue, has_fp64, list_devices, resolve_queue
from .host.distributed import (
    META_COLUMNS,
    HZStripeSweeps,
    RankStripes,
    StripeLayout,
    StripeSweeps,
    exchange_plan,
)
from .host.hz import HZRun, border_pair
from .host.limits import check_global_memory
from .host.operands import ROW_ALIGNMENT
from .host.pointwise import HSVDState, complex_layout
from .host.sizes import round_up
from .host.sweeps import RunStats
from .host.variants import choose_variant

__all__ = ["check_comm", "node_rank", "rank_queue", "run_hz", "run_sweeps", "serve", "solve_on"]

#: Tag of the messages that scatter and gather the stripes (the exchange
#: between steps uses tags below it).
_SCATTER_TAG = 100


def check_comm(comm: Any) -> Any:
    """`comm` if it is an ``mpi4py`` intracommunicator (TypeError otherwise;
    ImportError naming the ``mpi`` extra without ``mpi4py``)."""
    try:
        from mpi4py import MPI
    except ImportError as error:  # pragma: no cover - the test extra installs mpi4py
        raise ImportError("comm= needs mpi4py: pip install 'cljacobi[mpi]'") from error
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm must be an mpi4py intracommunicator (such as "
                        f"MPI.COMM_WORLD), not {type(comm).__name__}")
    return comm


_rank_queues: dict[int, cl.CommandQueue] = {}


def node_rank(comm: Any) -> int:
    """This rank's index among the ranks of `comm` on its node (a collective
    call: every rank of `comm` makes it)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    return local_rank


def rank_queue(local_rank: int) -> cl.CommandQueue:
    """The default queue of the rank with node index `local_rank`
    (:func:`node_rank`): the device ``CLJACOBI_DEVICE`` names when it is set;
    otherwise GPU number ``local_rank mod g`` of this node's ``g`` GPUs with
    fp64 (the default device where the node has no such GPU).  Not a
    collective call."""
    if os.environ.get(ENV_VAR, "").strip():
        return default_queue()
    gpus = [entry.device for entry in list_devices()
            if entry.device.type & cl.device_type.GPU and has_fp64(entry.device)]
    if not gpus:
        return default_queue()
    index = local_rank % len(gpus)
    queue = _rank_queues.get(index)
    if queue is None:
        device = gpus[index]
        queue = _rank_queues[index] = cl.CommandQueue(cl.Context([device]), device)
    return queue


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def collective(comm: Any, action: Callable[[], Any]) -> Any:
    """``action()`` on every rank, then all ranks learn whether it failed
    anywhere: it raises on the rank where it failed (the error itself) and
    :class:`DistributedError` on the others, naming the ranks and errors."""
    error, failure = None, None
    try:
        value = action()
    except Exception as caught:  # noqa: BLE001 - handed to every rank
        error, failure, value = caught, _describe(caught), None
    failures = comm.allgather(failure)
    if error is not None:
        raise error
    failed = [(rank, text) for rank, text in enumerate(failures) if text is not None]
    if failed:
        raise DistributedError("; ".join(f"rank {rank} failed: {text}" for rank, text in failed))
    return value


#: Seconds between printing why a rank aborts and ``MPI_Abort``: the launcher
#: forwards a rank's output asynchronously and may tear the job down before
#: the message reaches its own stderr (MPICH's hydra lost it in about 1 of 30
#: aborts without the pause).
ABORT_GRACE_SECONDS = 0.5


def abort(comm: Any, error: BaseException) -> NoReturn:
    """Print `error` and abort the communicator (``MPI_Abort``): a rank failing
    while others wait for its stripes.  Raises `error` should the abort
    return before the process ends."""
    sys.stderr.write(
        f"cljacobi: rank {comm.Get_rank()} of {comm.Get_size()} failed during the "
        f"distributed sweeps ({_describe(error)}); aborting the communicator\n")
    sys.stderr.flush()
    time.sleep(ABORT_GRACE_SECONDS)
    comm.Abort(1)
    raise error


@dataclass(frozen=True)
class _Job:
    """What rank 0 tells the others about one factor's sweeps."""

    layout: StripeLayout
    rows: int
    dtype: str
    split: bool
    accumulate_v: bool
    variant: str
    block_width: int
    strategy: str
    rotation: int
    sort_diagonal: bool
    peak_rounding: bool
    max_sweeps: int

    def serve(self, comm: Any, queue: cl.CommandQueue) -> None:
        """A rank other than 0: its part of the job."""
        stripes, sweeps = collective(comm, lambda: _prepare(comm, queue, self))
        _one_sided_job(comm, sweeps, stripes, self)


@dataclass(frozen=True)
class _HZJob:
    """What rank 0 tells the others about a GSVD's sweeps."""

    width: int
    rows: int
    rows_z: int
    dtype: str
    prescaled: bool
    criterion: str
    strategy: str
    block_width: int
    variant: str
    enhanced_dots: bool
    max_sweeps: int
    #: The n of the tolerance sqrt(n) eps (one device's: its bordered columns).
    order: int

    def serve(self, comm: Any, queue: cl.CommandQueue) -> None:
        """A rank other than 0: its part of the job."""
        arrays, sweeps = collective(comm, lambda: _prepare_hz(comm, queue, self))
        _hz_job(comm, sweeps, arrays, self)


@dataclass(frozen=True)
class _Done:
    """Rank 0's last message of a call: None when it succeeded, else its error."""

    failure: str | None = None


def solve_on(comm: Any, queue: Any, data: Any, on_root: Callable[[Any, Any, cl.CommandQueue], Any],
             *, signature: Any = None, return_info: bool = False) -> Any:
    """Run one public call on `comm`.

    `data` is this rank's input: the whole matrix on rank 0 and None on the
    others, or on every rank its block columns (then `signature`, hsvd's J,
    is the rank's part of J too).  ``on_root(data, signature, queue)`` runs
    the pipeline on rank 0 with this rank's queue; the other ranks
    :func:`serve` its sweeps.  Returns rank 0's result (None elsewhere), or
    for block columns every rank's part (:func:`_scatter_result`).
    """
    check_comm(comm)
    given = comm.allgather(data is not None)
    if not given[0] or (any(given[1:]) and not all(given)):
        missing = [rank for rank, has in enumerate(given) if not has]
        raise ValueError(
            f"comm=: give the input whole on rank 0 (None on the others) or on every rank "
            f"its block columns; ranks {missing} gave None")
    columns = all(given) and len(given) > 1
    # Every rank takes part in the collective calls, whatever its queue.
    local_rank = node_rank(comm)
    own_queue = collective(comm, lambda: resolve_queue(queue) if queue is not None
                           else rank_queue(local_rank))
    counts = None
    if columns:
        data, signature, counts = collective(
            comm, lambda: _gather_columns(comm, data, signature))
    if comm.Get_rank() != 0:
        serve(comm, own_queue)
        result = None
    else:
        try:
            result = on_root(data, signature, own_queue)
        except BaseException as error:
            comm.bcast(_Done(_describe(error)), root=0)
            raise
        comm.bcast(_Done(), root=0)
    if counts is None:
        return result
    return _scatter_result(comm, result, counts, return_info)


def _check_columns(local: Any) -> tuple[np.ndarray, ...]:
    """This rank's block columns as numpy matrices (a pair of them for the
    GSVD); TypeError or ValueError naming what is wrong."""
    parts = local if isinstance(local, tuple) else (local,)
    if any(is_device_array(part) for part in parts):
        raise TypeError("comm= with block columns on every rank takes numpy arrays, not "
                        "pyopencl arrays (a pyopencl array may be given whole on rank 0)")
    parts = tuple(np.asarray(part) for part in parts)
    if any(part.ndim != 2 for part in parts):
        raise ValueError(f"comm= with block columns on every rank takes one matrix (or one "
                         f"pair): this rank's columns have shape "
                         f"{[part.shape for part in parts]}")
    return parts


def _gather_columns(comm: Any, local: Any, signature: Any) -> tuple[Any, Any, list[int]]:
    """Rank 0's whole matrix (or pair of matrices) from every rank's block
    columns (in rank order), and hsvd's J likewise; the ranks' column counts.

    Every rank makes the same collective calls whatever its input: each
    checks its own first (:func:`collective`), then the shapes are shared
    and judged alike everywhere."""
    parts = collective(comm, lambda: _check_columns(local))
    shapes = comm.allgather([(part.shape, part.dtype.str) for part in parts])
    if len({len(rank_shapes) for rank_shapes in shapes}) != 1:
        raise ValueError(f"the ranks gave different numbers of matrices: "
                         f"{[len(rank_shapes) for rank_shapes in shapes]}")
    counts = [rank_shapes[0][0][1] for rank_shapes in shapes]
    wholes = []
    for k, part in enumerate(parts):
        of_part = [rank_shapes[k] for rank_shapes in shapes]
        rows = {shape[0] for shape, _ in of_part}
        if len(rows) != 1 or [shape[1] for shape, _ in of_part] != counts:
            raise ValueError(f"the ranks' block columns do not fit together (the same rows, "
                             f"the same columns of every matrix): shapes by rank {shapes}")
        dtype = np.result_type(*(np.dtype(code) for _, code in of_part))
        m, n = rows.pop(), sum(counts)
        # Column-major blocks: rank k's columns follow rank k - 1's.
        block = np.asfortranarray(part, dtype=dtype)
        whole = np.empty((n, m), dtype=dtype) if comm.Get_rank() == 0 else None
        comm.Gatherv(block.T, (whole, [c * m for c in counts]) if whole is not None else None,
                     root=0)
        wholes.append(None if whole is None else whole.T)
    signs = comm.gather(None if signature is None else np.asarray(signature), root=0)
    if comm.Get_rank() != 0:
        return None, None, counts
    J = None if signature is None else np.concatenate([np.ravel(p) for p in signs])
    return (tuple(wholes) if isinstance(local, tuple) else wholes[0]), J, counts


def _scatter_result(comm: Any, result: Any, counts: list[int], return_info: bool) -> Any:
    """Every rank's part of rank 0's result, as the input came: each
    two-dimensional array with as many columns as the input (``sum(counts)``)
    is split by `counts`, any other matrix's columns evenly
    (``numpy.array_split``), and vectors (eigenvalues, singular values, J)
    and the info go to every rank whole."""
    rank = comm.Get_rank()
    if rank == 0:
        value, info = result if return_info else (result, None)
        fields = list(value) if isinstance(value, tuple) else [value]
        if hasattr(value, "Z"):  # gsvd's result carries Z beside its fields
            fields.append(value.Z)
        kind = type(value) if isinstance(value, tuple) else None
        shapes = [(np.shape(a), np.asarray(a).dtype.str) for a in fields]
    else:
        value = info = kind = shapes = fields = None
    kind, shapes, info = comm.bcast((kind, shapes, info), root=0)
    n, parts = sum(counts), []
    for k, (shape, code) in enumerate(shapes):
        array = fields[k] if rank == 0 else None
        if len(shape) != 2:
            parts.append(comm.bcast(array, root=0))
            continue
        rows, cols = shape
        split = counts if cols == n else [len(c) for c in np.array_split(np.arange(cols),
                                                                         len(counts))]
        local = np.empty((rows, split[rank]), dtype=np.dtype(code), order="F")
        send = None
        if rank == 0:
            send = (np.ascontiguousarray(np.asarray(array).T), [c * rows for c in split])
        comm.Scatterv(send, local.T, root=0)
        parts.append(local)
    if kind is None:
        value = parts[0]
    else:  # a named tuple (EighResult, ...) or a plain one ((S, J))
        value = kind(*parts) if hasattr(kind, "_fields") else kind(parts)
    return (value, info) if return_info else value


def serve(comm: Any, queue: cl.CommandQueue) -> None:
    """A rank other than 0: run the sweeps of every job rank 0 sends, until it
    says it is done (DistributedError if it failed)."""
    while True:
        job = comm.bcast(None, root=0)
        if isinstance(job, _Done):
            if job.failure is not None:
                raise DistributedError(f"rank 0 failed: {job.failure}")
            return
        job.serve(comm, queue)


def _prepare(comm: Any, queue: cl.CommandQueue, job: _Job) -> tuple[RankStripes, StripeSweeps]:
    """This rank's sweeps object and host stripes (V set to its columns of
    the identity; G and the metadata arrive from rank 0), after checking
    that its device holds them."""
    width = job.layout.width
    dtype = np.dtype(job.dtype)
    ldg, ldv = round_up(job.rows, ROW_ALIGNMENT), round_up(job.layout.columns, ROW_ALIGNMENT)
    local = 2 * width
    check_global_memory(queue.device, {
        "G stripes": dtype.itemsize * ldg * local,
        **({"V stripes": dtype.itemsize * ldv * local} if job.accumulate_v else {}),
    })
    sweeps = StripeSweeps(
        comm, queue, layout=job.layout, rows=job.rows, dtype=dtype, split=job.split,
        accumulate_v=job.accumulate_v, variant=job.variant, block_width=job.block_width,
        strategy=job.strategy, rotation=job.rotation, sort_diagonal=job.sort_diagonal,
        peak_rounding=job.peak_rounding)
    stripes = sweeps.new_stripes()
    held = exchange_plan(job.layout.ranks)[0][comm.Get_rank()].stripes
    columns = np.concatenate([np.arange(s * width, (s + 1) * width) for s in held])
    if stripes.v is not None:
        stripes.v[...] = 0
        identity = stripes.v.view(np.float64) if not job.split else stripes.v
        # Column c of V starts as e_c (the real part's entry for split data).
        step = 2 if dtype.kind == "c" and not job.split else 1
        identity[np.arange(local), columns * step] = 1.0
    return stripes, sweeps


def _sweep_and_gather(comm: Any, incoming: list[np.ndarray],
                      run: Callable[[], tuple[list[np.ndarray], Any]]
                      ) -> tuple[list[list[np.ndarray]], Any] | None:
    """Every rank's side of one job: receive its stripes from rank 0 into
    the C-contiguous `incoming`, ``run()`` the outermost sweeps (which
    returns the final arrays and the statistics) and send the final arrays
    back.  Rank 0 (whose own stripes travel to itself) gets every rank's
    arrays, in rank order, and the statistics; the others None.  A failure
    here aborts the communicator (the others wait for this rank)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    try:
        for k, array in enumerate(incoming):
            comm.Recv(array, source=0, tag=_SCATTER_TAG + k)
        outgoing, stats = run()
        first_tag = _SCATTER_TAG + len(incoming)
        requests = [comm.Isend(array, dest=0, tag=first_tag + k)
                    for k, array in enumerate(outgoing)]
        gathered = None
        if rank == 0:
            gathered = []
            for source in range(size):
                arrays = [np.empty_like(array) for array in outgoing]
                for k, array in enumerate(arrays):
                    comm.Recv(array, source=source, tag=first_tag + k)
                gathered.append(arrays)
        from mpi4py import MPI

        MPI.Request.Waitall(requests)
    except Exception as error:  # noqa: BLE001 - the others wait for this rank
        abort(comm, error)
    return (gathered, stats) if rank == 0 else None


def _one_sided_job(comm: Any, sweeps: StripeSweeps, stripes: RankStripes, job: _Job
                   ) -> tuple[list[list[np.ndarray]], Any] | None:
    """:func:`_sweep_and_gather` of the one-sided method: G and the metadata
    arrive (V starts as the identity's columns), G, the metadata and V return."""
    def run() -> tuple[list[np.ndarray], Any]:
        sweeps.load(stripes)
        stats = sweeps.run(max_sweeps=job.max_sweeps)
        final = sweeps.unload()
        return [final.g, final.meta] + ([final.v] if final.v is not None else []), stats

    return _sweep_and_gather(comm, [stripes.g, stripes.meta], run)


def run_sweeps(G: np.ndarray, signs: np.ndarray, *, plan: Any, accumulate_v: bool,
               info: SolveInfo, index: tuple[int, ...], peak_rounding: bool) -> HSVDState:
    """Rank 0's side of the sweeps of one factor on ``plan.comm``: what
    :func:`cljacobi._solve.run_sweeps` returns, with the sweeps on all ranks.

    `G` is the host factor (m x r) with signature `signs`.  The variant and
    block width are chosen as on one device for the whole factor; stripes
    are as narrow as the ranks allow, a multiple of the block width
    (bordered columns fill the last ones).
    """
    comm, queue = plan.comm, plan.queue
    size = comm.Get_size()
    m, r = G.shape
    complex_ = np.iscomplexobj(G)
    dtype = np.dtype(np.complex128 if complex_ else np.float64)
    element_bytes = COMPLEX_ELEMENT_BYTES if complex_ else REAL_ELEMENT_BYTES
    variant, block_width = choose_variant(queue.device, r, plan.variant, plan.block_width,
                                          element_bytes=element_bytes, rows=m)
    layout = StripeLayout.for_columns(r, size, block_width or 1)
    columns = layout.columns
    rows = m + columns - r
    split = complex_ and complex_layout(plan.layout, blocked=variant != "pointwise") == "split"
    options = plan.options
    job = _Job(layout, rows, dtype.name, split, accumulate_v, variant, block_width,
               options.strategy, options.rotation, options.sort_diagonal, peak_rounding,
               plan.max_sweeps)
    info.strategy, info.rotation = options.strategy, options.rotation
    info.sort_diagonal = options.sort_diagonal
    info.variant, info.block_width = variant, block_width
    info.device = queue.device.name.strip()
    info.precision, info.ranks = "double", size

    start = time.perf_counter()
    comm.bcast(job, root=0)
    stripes, sweeps = collective(comm, lambda: _prepare(comm, queue, job))
    # Every rank's two stripes of G, bordered (border column c >= r is the
    # unit vector e_(m + c - r)), and their metadata; a failure here leaves
    # the others waiting for them, so it aborts.
    width = layout.width
    ldg = round_up(rows, ROW_ALIGNMENT)
    requests, sent = [], []
    try:
        for rank, step in enumerate(exchange_plan(size)[0]):
            held = np.concatenate([np.arange(s * width, (s + 1) * width)
                                   for s in step.stripes])
            real = held < r
            columns_g = np.zeros((2 * width, ldg), dtype=dtype)  # row c: local column c
            columns_g[real, :m] = G[:, held[real]].T
            columns_g[~real, m + held[~real] - r] = 1.0
            g = np.empty_like(stripes.g)
            if split:
                g[:, :ldg], g[:, ldg:] = columns_g.real, columns_g.imag
            else:
                g[...] = columns_g
            meta = np.zeros((2 * width, META_COLUMNS))
            meta[:, 0] = held
            meta[:, 1] = np.where(real, np.asarray(signs)[np.minimum(held, r - 1)], 1)
            sent += [g, meta]  # referenced until the sends complete
            requests += [comm.Isend(g, dest=rank, tag=_SCATTER_TAG),
                         comm.Isend(meta, dest=rank, tag=_SCATTER_TAG + 1)]
    except Exception as error:  # noqa: BLE001 - the others wait for their stripes
        abort(comm, error)
    outcome = _one_sided_job(comm, sweeps, stripes, job)
    from mpi4py import MPI

    MPI.Request.Waitall(requests)
    gathered, stats = outcome
    G_final, V_final, d, final_signs = _assemble(gathered, job, m, r, split)
    elapsed = time.perf_counter() - start

    info.blocked_sweeps = stats.blocked_sweeps
    info.sweeps = stats.sweeps
    info.rotations_per_sweep = list(stats.rotations_per_sweep)
    info.rotations = sum(stats.rotations_per_sweep)
    info.converged = stats.converged
    info.breakdown = stats.breakdown
    info.seconds["sweeps"] = info.seconds.get("sweeps", 0.0) + stats.seconds["sweeps"]
    info.seconds["communication"] = stats.seconds["communication"]
    info.seconds["distributed"] = elapsed
    run_stats = RunStats(sweeps=stats.sweeps, rotations=info.rotations,
                         rotations_per_sweep=list(stats.rotations_per_sweep),
                         converged=stats.converged, breakdown=stats.breakdown,
                         tiny_column=stats.tiny_column)
    return HSVDState(G=G_final, V=V_final, d=d, signs=final_signs, stats=run_stats)


def _assemble(gathered: list[list[np.ndarray]], job: _Job, m: int, r: int, split: bool
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """The gathered stripes as ``(G, V, d, signs)`` of the first r columns,
    border stripped, in the original column order."""
    dtype = np.dtype(job.dtype)
    ldg = round_up(job.rows, ROW_ALIGNMENT)
    ldv = round_up(job.layout.columns, ROW_ALIGNMENT)
    G = np.empty((m, r), dtype=dtype, order="F")
    V = np.empty((r, r), dtype=dtype, order="F") if job.accumulate_v else None
    d = np.empty(r)
    signs = np.empty(r, dtype=np.int8)

    def columns_of(rows: np.ndarray, length: int, count: int) -> np.ndarray:
        if split:  # each row: the real parts (length), then the imaginary parts
            return (rows[:, :count] + 1j * rows[:, length:length + count]).T
        return rows[:, :count].T

    for parts in gathered:
        g, meta = parts[0], parts[1]
        held = meta[:, 0].astype(np.int64)
        real = held < r
        G[:, held[real]] = columns_of(g[real], ldg, m)
        if V is not None:
            V[:, held[real]] = columns_of(parts[2][real], ldv, r)
        d[held[real]] = meta[real, 3]
        signs[held[real]] = meta[real, 1]
    return G, V, d, signs


# -- the GSVD -----------------------------------------------------------------------


def _prepare_hz(comm: Any, queue: cl.CommandQueue, job: _HZJob
                ) -> tuple[list[np.ndarray], HZStripeSweeps]:
    """This rank's (empty) column-major F, G, Z stripes and sweeps object,
    after checking that its device holds them."""
    dtype = np.dtype(job.dtype)
    local = 2 * job.width
    check_global_memory(queue.device, {
        "F and G stripes": 2 * dtype.itemsize * job.rows * local,
        "Z stripes": dtype.itemsize * job.rows_z * local})
    arrays = [np.empty((rows, local), dtype=dtype, order="F")
              for rows in (job.rows, job.rows, job.rows_z)]
    sweeps = HZStripeSweeps(
        comm, queue, width=job.width, prescaled=job.prescaled, criterion=job.criterion,
        strategy=job.strategy, block_width=job.block_width, variant=job.variant,
        enhanced_dots=job.enhanced_dots, order=job.order)
    return arrays, sweeps


def _hz_job(comm: Any, sweeps: HZStripeSweeps, arrays: list[np.ndarray], job: _HZJob
            ) -> tuple[list[list[np.ndarray]], Any] | None:
    """:func:`_sweep_and_gather` of the GSVD: F, G and Z's stripes (through
    their C-contiguous transposes) arrive and return."""
    def run() -> tuple[list[np.ndarray], Any]:
        stats = sweeps.run(*arrays, max_sweeps=job.max_sweeps)
        return [array.T for array in arrays], stats

    return _sweep_and_gather(comm, [array.T for array in arrays], run)


def run_hz(pair: Any, *, plan: Any, info: SolveInfo) -> HZRun:
    """Rank 0's side of a GSVD's sweeps on ``plan.comm``: the
    :class:`~cljacobi.host.hz.HZRun` of :func:`cljacobi.host.hz.hz_sweeps`,
    with the sweeps on all ranks (:class:`~cljacobi.host.distributed.HZStripeSweeps`).

    F and G are bordered as on one device (:func:`cljacobi.host.hz.border_pair`:
    zero columns in F, unit columns in new rows of G and Z) to ``2 s``
    stripes of a multiple of the block width, and share their rows.
    """
    if pair.positive_rows is not None:  # pragma: no cover - eig_indefinite(M, B) refuses comm
        raise ValueError("the indefinite pencil runs on one device")
    comm, queue = plan.comm, plan.queue
    size = comm.Get_size()
    F, G, Z = pair.F, pair.G, pair.Z
    (mf, n), mg = F.shape, G.shape[0]
    layout = StripeLayout.for_columns(n, size, pair.block_width or 1)
    F_b, G_b, Z_b = border_pair(F, G, Z, layout.columns)
    width = layout.width
    job = _HZJob(width, F_b.shape[0], Z_b.shape[0], np.dtype(F.dtype).name, pair.prescaled,
                 pair.criterion, plan.options.strategy, pair.block_width, pair.variant,
                 pair.enhanced_dots, plan.max_sweeps,
                 round_up(n, 2 * pair.block_width) if pair.block_width else n)
    info.ranks = size

    start = time.perf_counter()
    comm.bcast(job, root=0)
    arrays, sweeps = collective(comm, lambda: _prepare_hz(comm, queue, job))
    requests, sent = [], []
    try:  # a failure here leaves the others waiting for their stripes
        for rank, step in enumerate(exchange_plan(size)[0]):
            held = np.concatenate([np.arange(s * width, (s + 1) * width)
                                   for s in step.stripes])
            for k, whole in enumerate((F_b, G_b, Z_b)):
                part = np.ascontiguousarray(whole[:, held].T)
                sent.append(part)  # referenced until the sends complete
                requests.append(comm.Isend(part, dest=rank, tag=_SCATTER_TAG + k))
    except Exception as error:  # noqa: BLE001
        abort(comm, error)
    gathered, stats = _hz_job(comm, sweeps, arrays, job)
    from mpi4py import MPI

    MPI.Request.Waitall(requests)
    for rank, step in enumerate(exchange_plan(size)[0]):
        held = np.concatenate([np.arange(s * width, (s + 1) * width) for s in step.stripes])
        for whole, part in zip((F_b, G_b, Z_b), gathered[rank]):
            whole[:, held] = part.T
    if stats.breakdown:
        raise np.linalg.LinAlgError(sweeps.failure or (
            "B is not of full column rank: a pivot submatrix of B^* B was not positive "
            "definite in floating point on another rank (numerically dependent columns)"))
    # The border columns are those with a nonzero in G's border rows.
    real = ~np.any(G_b[mg:], axis=0)
    info.seconds["communication"] = stats.seconds["communication"]
    info.seconds["distributed"] = time.perf_counter() - start
    info.blocked_sweeps = stats.blocked_sweeps
    return HZRun(F_b[:mf, real], G_b[:mg, real], Z_b[:n, real], stats.sweeps,
                 stats.converged, list(stats.rotations_per_sweep), [],
                 stats.seconds["sweeps"])
