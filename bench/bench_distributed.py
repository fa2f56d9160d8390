"""The solvers on several ranks (``comm=``) beside one device, in one MPI job.

    mpiexec -n 2 python bench/bench_distributed.py --sizes 8192 16384 \
        --json results/distributed-DEVICE-DATE.json

For every case rank 0 first solves alone (``comm=None``, its own device),
then all ranks solve together (``comm=MPI.COMM_WORLD``); both are timed on
rank 0 (median of ``--repeat`` runs after a warm-up), with the outermost
sweeps, rank 0's seconds in its local sweeps and waiting for stripes
(``info.seconds``), and the accuracy: the largest relative difference of
the eigenvalues (or singular values) from the one-device run, the residual
and the orthogonality of the distributed result.  Cases: ``eig`` (real and
complex, random and graded), ``gsvd`` (a random pair ``(A, B)``).

Ranks take GPU ``k mod g`` of their node (or ``CLJACOBI_DEVICE``): with more
ranks than GPUs they share one, which measures the method's overhead
(host staging, messages), not a speedup.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from common import write_results  # noqa: E402


def _timed(comm, call, repeat: int, warmup: int):
    """Median seconds on rank 0 of `repeat` runs after `warmup` untimed ones
    (program builds), all ranks starting together; and the last result."""
    times, result = [], None
    for run in range(warmup + repeat):
        comm.Barrier()
        start = time.perf_counter()
        result = call()
        comm.Barrier()
        if run >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _matrix(family: str, n: int, dtype, rng):
    from cljacobi.matrices import graded

    if family == "graded":
        return graded(n, rng=rng, dtype=dtype)[0]
    X = rng.standard_normal((n, n)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        X = X + 1j * rng.standard_normal((n, n))
    return X + X.conj().T


def main(argv=None) -> None:
    from mpi4py import MPI

    import cljacobi

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--dtypes", nargs="+", default=["float64"])
    parser.add_argument("--families", nargs="+", default=["random"])
    parser.add_argument("--gsvd-sizes", type=int, nargs="*", default=[])
    parser.add_argument("--variant", default="bo")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs before the first size of each case (default 1)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    records = []

    def report(record):
        if rank == 0:
            records.append(record)
            print({k: (float(f"{v:.4g}") if isinstance(v, float) else v)
                   for k, v in record.items()}, flush=True)

    for dtype in args.dtypes:
        for family in args.families:
            warmup = args.warmup
            for n in args.sizes:
                rng = np.random.default_rng(n)
                M = _matrix(family, n, dtype, rng) if rank == 0 else None
                options = {"variant": args.variant, "return_info": True}
                alone = None
                if rank == 0:
                    alone_seconds, alone = _timed(
                        MPI.COMM_SELF, lambda: cljacobi.eig_indefinite(M, **options),
                        args.repeat, warmup)
                comm.Barrier()
                seconds, together = _timed(
                    comm, lambda: cljacobi.eig_indefinite(M, comm=comm, **options), args.repeat,
                    warmup)
                warmup = 0
                if rank != 0:
                    continue
                (w, U), info = together
                (w1, _), info1 = alone
                norm = np.abs(w).max()
                report({
                    "case": "eig", "family": family, "dtype": dtype, "n": n, "ranks": size,
                    "device": info.device, "variant": info.variant,
                    "block_width": info.block_width,
                    "seconds_one_device": alone_seconds, "seconds": seconds,
                    "speedup": alone_seconds / seconds,
                    "sweeps_one_device": info1.sweeps, "sweeps": info.sweeps,
                    "blocked_sweeps": info.blocked_sweeps,
                    "local_sweep_seconds": info.seconds.get("sweeps", 0.0),
                    "communication_seconds": info.seconds.get("communication", 0.0),
                    "factorization_seconds": info.seconds.get("factorization", 0.0),
                    # rank 0's whole split (phases as SolveInfo names them), to
                    # find the host work around the sweeps
                    "seconds_split": {k: float(v) for k, v in info.seconds.items()},
                    "seconds_split_one_device": {k: float(v) for k, v in info1.seconds.items()},
                    "relative_difference": float(np.max(np.abs(w - w1) / np.abs(w1))),
                    "residual": float(np.linalg.norm(M @ U - U * w) / (np.sqrt(n) * norm)),
                    "orthogonality": float(np.abs(U.conj().T @ U - np.eye(n)).max()),
                })
    for n in args.gsvd_sizes:
        rng = np.random.default_rng(n)
        pair = (rng.standard_normal((n, n)), rng.standard_normal((n, n))) if rank == 0 \
            else (None, None)
        options = {"variant": args.variant, "return_info": True}
        if rank == 0:
            alone_seconds, alone = _timed(
                MPI.COMM_SELF, lambda: cljacobi.gsvd(*pair, **options), args.repeat,
                args.warmup)
        comm.Barrier()
        seconds, together = _timed(comm, lambda: cljacobi.gsvd(*pair, comm=comm, **options),
                                   args.repeat, args.warmup)
        if rank != 0:
            continue
        result, info = together
        one, info1 = alone
        A, B = pair
        report({
            "case": "gsvd", "dtype": "float64", "n": n, "ranks": size, "device": info.device,
            "variant": info.variant, "block_width": info.block_width,
            "seconds_one_device": alone_seconds, "seconds": seconds,
            "speedup": alone_seconds / seconds,
            "sweeps_one_device": info1.sweeps, "sweeps": info.sweeps,
            "blocked_sweeps": info.blocked_sweeps,
            "communication_seconds": info.seconds.get("communication", 0.0),
            "relative_difference": float(np.max(np.abs(result.C - one.C) / one.C)),
            "residual": float(np.linalg.norm(result.U * result.C @ result.X.T - A)
                              / np.linalg.norm(A)),
        })
    if rank == 0:
        write_results(args.json, "bench_distributed", records[0]["device"] if records else "",
                      records)


if __name__ == "__main__":
    main()
