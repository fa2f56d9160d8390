"""The ``comm=`` cases run under ``mpiexec`` by tests/test_distributed.py.

``mpiexec -n S python tests/distributed_cases.py OUT.npz cases`` runs every
case of :data:`CASES` on ``MPI.COMM_WORLD`` and rank 0 saves what came back
(results and info) to ``OUT.npz``; the test process checks them against the
single-device solver and the high-precision references.  The inputs come
from :func:`inputs`, which the test process calls too.

``... distributed_cases.py OUT failure KIND`` runs one failure scenario;
rank r writes what it raised (or "returned") to ``OUT.r`` (``abort``
instead makes rank 1 fail inside the sweeps: the job must end with an
error, not hang).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from cljacobi.matrices import graded

#: Case name -> (function, input, keyword arguments).
CASES = {
    # bordered: 50 columns in 2s stripes of a multiple of 8 columns
    "eig_bo": ("eig_indefinite", "random50", {"variant": "bo", "block_width": 8}),
    "eig_graded": ("eig_indefinite", "graded40", {"variant": "bo", "block_width": 8}),
    # "offdiag": the pairs within a block only in the first step of a local sweep
    "eig_graded_offdiag": ("eig_indefinite", "graded40",
                           {"variant": "offdiag", "block_width": 8}),
    "eig_graded_complex": ("eig_indefinite", "graded32c", {"variant": "pointwise"}),
    "eig_singular": ("eig_indefinite", "singular36", {"variant": "bo", "block_width": 8}),
    "eigvals": ("eig_indefinite", "random50", {"eigvals_only": True, "variant": "pointwise"}),
    "hsvd": ("hsvd", "tall45x30c", {"variant": "bo", "block_width": 8}),
    "svd": ("svd", "wide20x44", {"variant": "pointwise"}),
    "svd_device_qr": ("svd", "wide20x44", {"variant": "pointwise", "factorization": "device"}),
    "gsvd": ("gsvd", "pair33x30", {"variant": "bo", "block_width": 8}),
    "gsvd_complex": ("gsvd", "pair24c", {"variant": "pointwise"}),
}


def inputs(name: str) -> tuple[np.ndarray, ...]:
    """The input of a case (the same in every process)."""
    rng = np.random.default_rng(sum(map(ord, name)))
    if name == "random50":
        X = rng.standard_normal((50, 50))
        return (X + X.T,)
    if name == "graded40":
        return (graded(40, p=17, low_exponent=-30, rng=rng)[0],)
    if name == "graded32c":
        return (graded(32, p=20, low_exponent=-40, rng=rng, dtype=np.complex128)[0],)
    if name == "singular36":
        X = rng.standard_normal((36, 20))
        return (X @ np.diag(np.where(np.arange(20) < 12, 1.0, -1.0)) @ X.T,)
    if name == "tall45x30c":
        G = rng.standard_normal((45, 30)) + 1j * rng.standard_normal((45, 30))
        return G * np.logspace(0, -6, 30), np.where(np.arange(30) % 3 == 1, -1, 1)
    if name == "wide20x44":
        return (rng.standard_normal((20, 44)) * np.logspace(0, -8, 20)[:, None],)
    if name == "pair33x30":
        A = rng.standard_normal((33, 30)) * np.logspace(0, -6, 30)
        return A, rng.standard_normal((36, 30))
    if name == "pair24c":
        A = rng.standard_normal((24, 24)) + 1j * rng.standard_normal((24, 24))
        B = rng.standard_normal((30, 24)) + 1j * rng.standard_normal((30, 24))
        return A, B * np.logspace(0, -4, 24)
    raise KeyError(name)


def column_bounds(n: int, ranks: int) -> np.ndarray:
    """Uneven block columns: rank k holds a share proportional to k + 1."""
    weights = np.arange(1, ranks + 1)
    return np.concatenate([[0], np.cumsum(weights)]) * n // weights.sum()


def _call(cljacobi, function: str, args: tuple, kwargs: dict, comm):
    return getattr(cljacobi, function)(*args, comm=comm, return_info=True, **kwargs)


def _store(out: dict, prefix: str, result, info) -> None:
    values = result if isinstance(result, tuple) else (result,)
    for k, value in enumerate(values):
        out[f"{prefix}/{k}"] = np.asarray(value)
    out[f"{prefix}/sweeps"] = np.array([info.sweeps, info.blocked_sweeps, info.ranks])


def run_cases(path: str) -> None:
    from mpi4py import MPI

    import cljacobi

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    out: dict[str, np.ndarray] = {}
    for case, (function, source, kwargs) in CASES.items():
        args = inputs(source) if rank == 0 else tuple(None for _ in inputs(source))
        result = _call(cljacobi, function, args, kwargs, comm)
        if rank == 0:
            _store(out, case, *result)
        else:
            assert result is None, f"rank {rank} got {result!r}"
    # bitwise repeatability: the first case again
    function, source, kwargs = CASES["eig_bo"]
    args = inputs(source) if rank == 0 else (None,)
    again = _call(cljacobi, function, args, kwargs, comm)
    if rank == 0:
        _store(out, "eig_bo_again", *again)
    # block columns on every rank (uneven), results back in the same columns
    for case, function, source, kwargs in (
        ("columns_eig", "eig_indefinite", "random50", {"variant": "bo", "block_width": 8}),
        ("columns_hsvd", "hsvd", "tall45x30c", {"variant": "bo", "block_width": 8}),
        ("columns_gsvd", "gsvd", "pair33x30", {"variant": "bo", "block_width": 8}),
    ):
        whole = inputs(source)
        bounds = column_bounds(whole[0].shape[1], comm.Get_size())
        mine = slice(bounds[rank], bounds[rank + 1])
        # matrices: their block columns; hsvd's J: its entries for them
        args = tuple(a[:, mine] if a.ndim == 2 else a[mine] for a in whole)
        result, info = _call(cljacobi, function, args, kwargs, comm)
        parts = comm.gather(result, root=0)
        if rank == 0:
            gathered = tuple(
                np.concatenate([p[k] for p in parts], axis=1) if np.ndim(value) == 2
                else value for k, value in enumerate(result))
            _store(out, case, gathered, info)
            # the vectors are the same on every rank
            for p in parts:
                for k, value in enumerate(result):
                    if np.ndim(value) == 1:
                        assert np.array_equal(p[k], value)
    if rank == 0:
        np.savez(path, **out)


def run_failure(path: str, kind: str) -> None:
    from mpi4py import MPI

    import cljacobi

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    M = inputs("random50")[0]
    kwargs = {"variant": "bo", "block_width": 8}
    if kind == "bad_device":  # rank 0 chooses its device by default, rank 1 names none there is
        if rank == 1:
            os.environ["CLJACOBI_DEVICE"] = "no-such-device"
        else:
            os.environ.pop("CLJACOBI_DEVICE", None)
    if kind == "abort" and rank == 1:
        from cljacobi.host import distributed

        sweep = distributed.StripeSweeps.sweep

        calls = []

        def failing(self, *args):
            calls.append(args)
            if len(calls) == 2:
                raise RuntimeError("injected failure in the second local sweep")
            return sweep(self, *args)

        distributed.StripeSweeps.sweep = failing
    if kind == "device_columns":  # rank 1's block columns a pyopencl array: refused
        import pyopencl.array as cl_array

        from cljacobi.host.device import default_queue

        bounds = column_bounds(M.shape[1], comm.Get_size())
        mine = np.asfortranarray(M[:, bounds[rank]:bounds[rank + 1]])
        args = (cl_array.to_device(default_queue(), mine) if rank == 1 else mine,)
    elif kind == "root_error":
        args = (M[:, :40] if rank == 0 else None,)  # not square
    elif kind == "mismatch":
        args = (M if rank != 1 else None,)
    else:
        args = (M if rank == 0 else None,)
    try:
        cljacobi.eig_indefinite(*args, comm=comm, **kwargs)
        outcome = "returned"
    except Exception as error:  # noqa: BLE001 - reported to the test
        outcome = f"{type(error).__name__}: {error}"
    with open(f"{path}.{rank}", "w") as file:
        file.write(outcome)


if __name__ == "__main__":
    if sys.argv[2] == "cases":
        run_cases(sys.argv[1])
    else:
        run_failure(sys.argv[1], sys.argv[3])
