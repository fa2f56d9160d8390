"""All eigenvalues and eigenvectors of a symmetric indefinite matrix on several devices.

Run on every rank of an MPI job, one OpenCL device per rank::

    mpiexec -n 2 python -m cljacobi.examples.distributed_eig 8192
    mpiexec -n 2 python -m cljacobi.examples.distributed_eig 1024 --columns --graded

Rank 0 builds the matrix (random, or with ``--graded`` the graded matrix of
:func:`cljacobi.matrices.graded`, whose small eigenvalues only a relatively
accurate solver gets), or with ``--columns`` every rank builds its own block
columns; ``cljacobi.eig_indefinite(..., comm=MPI.COMM_WORLD)`` solves it,
and rank 0 prints the time, the sweeps, the communication time and the
residual and orthogonality of the result.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv: list[str] | None = None) -> None:
    from mpi4py import MPI

    import cljacobi
    from cljacobi.matrices import graded

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="order of the matrix")
    parser.add_argument("--complex", action="store_true", help="complex Hermitian")
    parser.add_argument("--graded", action="store_true", help="graded D A D (default: random)")
    parser.add_argument("--columns", action="store_true",
                        help="every rank passes its block columns (default: whole on rank 0)")
    parser.add_argument("--variant", default="bo", help="'bo' (default), 'offdiag', 'fb', 'pointwise'")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()

    # The same matrix on every rank that needs it (one seed).
    rng = np.random.default_rng(2026)
    dtype = np.complex128 if args.complex else np.float64
    M = None
    if rank == 0 or args.columns:
        if args.graded:
            M = graded(args.n, rng=rng, dtype=dtype)[0]
        else:
            X = rng.standard_normal((args.n, args.n))
            if args.complex:
                X = X + 1j * rng.standard_normal((args.n, args.n))
            M = X + X.conj().T
    given = M
    if args.columns:
        bounds = np.linspace(0, args.n, size + 1).astype(int)
        given = M[:, bounds[rank]:bounds[rank + 1]]

    comm.Barrier()
    start = time.perf_counter()
    result = cljacobi.eig_indefinite(given, comm=comm, variant=args.variant, return_info=True)
    seconds = time.perf_counter() - start
    if result is None:  # whole on rank 0: the other ranks get None
        return
    (w, U), info = result
    if args.columns:
        U = np.concatenate(comm.allgather(U), axis=1)
    if rank != 0:
        return
    norm = np.linalg.norm(M, 2)
    print(f"n = {args.n} on {size} rank(s), device {info.device!r}: {seconds:.3f} s, "
          f"{info.sweeps} outermost sweeps ({info.blocked_sweeps} blocked), "
          f"{info.seconds.get('communication', 0.0):.3f} s waiting for stripes")
    print(f"residual ||MU - UW|| / ||M|| = {np.linalg.norm(M @ U - U * w) / norm:.2e}, "
          f"||U*U - I|| = {np.abs(U.conj().T @ U - np.eye(args.n)).max():.2e}")


if __name__ == "__main__":
    main()
