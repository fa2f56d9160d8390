"""Stacks of small Hermitian matrices: cljacobi's batched kernel against the peers.

One command, every solver on the same stacks, in one process:

* ``cljacobi`` -- ``eig_indefinite`` on a numpy stack (upload, one launch,
  download) and on a pyopencl stack (device resident: only the per-matrix
  records cross the bus);
* ``cupy.linalg.eigh`` on a CuPy stack (cuSOLVER: its batched Jacobi
  ``syevjBatched`` for stacks up to n = 32, as CuPy picks it), if CuPy is there;
* ``torch.linalg.eigh`` on CUDA, if PyTorch with CUDA is there;
* ``numpy.linalg.eigh`` on the host's cores (LAPACK per matrix).

Every stack comes in four families (``--families``): random Hermitian (the
easy one), graded ``D A D`` (eigenvalues 1e-18..10), rank-deficient
``G J G^*`` of rank ceil(n/2), and clustered (two clusters of eigenvalues
spread by 1e-10).  Per row: seconds (median of ``--repeat`` after a
warm-up), matrices per second, cljacobi's sweeps and ranks, and the accuracy
of each solver on the first ``--check`` matrices: the largest eigenvalue
error against numpy relative to ``||A||``, the residual
``max ||A U - U diag(w)|| / ||A||``, ``max |U^* U - I|``, and for the graded
family the largest relative eigenvalue error against cljacobi's one-matrix
path (whose relative accuracy the test suite checks against mpmath).

    CLJACOBI_DEVICE=nvidia python bench/bench_batched.py \\
        --json bench/results/batched-H200-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (announced_queue, cupy_peer, median_time, stack_cases,  # noqa: E402
                    profiling_queue, time_gpu_peers, torch_peer, write_results)

#: The stacks of the issue: (n, count).
STACKS = [(2, 262_144), (8, 100_000), (32, 10_000), (64, 2_000)]


def hermitian_stack(rng, count, n, complex_):
    X = rng.standard_normal((count, n, n))
    if complex_:
        X = X + 1j * rng.standard_normal((count, n, n))
    return X + np.swapaxes(X, -1, -2).conj()


def graded_stack(rng, count, n, complex_):
    """``D A D`` with ``D = diag(2^k)``, k over -30..0: eigenvalues 1e-18..10."""
    A = hermitian_stack(rng, count, n, complex_)
    k = np.rint(np.linspace(-30, 0, n))
    D = 2.0 ** np.array([rng.permutation(k) for _ in range(count)])
    return D[:, :, None] * A * D[:, None, :]


def rank_stack(rng, count, n, complex_):
    """``G J G^*`` with G ``n x ceil(n/2)``: rank ceil(n/2), indefinite, the rest
    exactly singular."""
    r = (n + 1) // 2
    G = rng.standard_normal((count, n, r))
    if complex_:
        G = G + 1j * rng.standard_normal((count, n, r))
    signs = np.where(np.arange(r) % 2 == 0, 1.0, -1.0)
    M = (G * signs) @ np.swapaxes(G, -1, -2).conj()
    return (M + np.swapaxes(M, -1, -2).conj()) / 2


def clustered_stack(rng, count, n, complex_):
    """``Q diag(lambda) Q^*`` with the eigenvalues in two tight clusters, near
    +1 and -2, spread by 1e-10 inside each."""
    X = rng.standard_normal((count, n, n))
    if complex_:
        X = X + 1j * rng.standard_normal((count, n, n))
    Q = np.linalg.qr(X)[0]
    centres = np.where(np.arange(n) % 2 == 0, 1.0, -2.0)
    lam = centres * (1 + 1e-10 * rng.standard_normal((count, n)))
    M = (Q * lam[:, None, :]) @ np.swapaxes(Q, -1, -2).conj()
    return (M + np.swapaxes(M, -1, -2).conj()) / 2


#: The input families: random (easy) and the hard ones.
FAMILIES = {"random": hermitian_stack, "graded": graded_stack, "rank": rank_stack,
            "clustered": clustered_stack}


def accuracy(A, w, U, relative_reference=None):
    """Eigenvalue error against numpy relative to ||A||, residual and
    orthogonality; with `relative_reference`, also the largest relative
    eigenvalue error against it (graded data)."""
    reference = np.linalg.eigvalsh(A)
    scale = np.abs(reference).max(axis=-1)
    record = {"eigenvalue_error": float((np.abs(w - reference).max(axis=-1) / scale).max())}
    if U is not None:
        residual = np.abs(A @ U - U * w[..., None, :]).max(axis=(-2, -1)) / scale
        gram = np.swapaxes(U, -1, -2).conj() @ U - np.eye(A.shape[-1])
        record["residual"] = float(residual.max())
        record["orthogonality"] = float(np.abs(gram).max())
    if relative_reference is not None:
        record["relative_error"] = float(
            (np.abs(w - relative_reference) / np.abs(relative_reference)).max())
    return record


def run_stack(args, family, dtype, n, count, records, queue, A) -> None:
    """Time every solver on the stack `A` and record its accuracy."""
    import pyopencl.array as cl_array

    import cljacobi
    from cljacobi.errors import DeviceCapabilityError
    from cljacobi.host.batched import batched_eig
    from cljacobi.options import resolve_options

    check = A[: args.check]
    relative_reference = None
    if family == "graded":  # the reference whose relative accuracy the tests check
        relative_reference = np.array([cljacobi.eig_indefinite(M, variant="pointwise",
                                                               eigvals_only=True)
                                       for M in check])

    def report(name, seconds, w, U, extra=None):
        row = {"solver": name, "family": family, "dtype": dtype, "n": n, "count": count,
               "seconds": seconds, "matrices_per_second": count / seconds,
               **accuracy(check, w, U, relative_reference), **(extra or {})}
        records.append(row)
        print(f"{dtype:10s} {family:9s} n={n:3d} x{count:7d}  {name:26s} {seconds:9.4f} s "
              f"{row['matrices_per_second']:11.0f}/s  eig {row['eigenvalue_error']:.1e}"
              f"  res {row.get('residual', float('nan')):.1e}"
              f"  orth {row.get('orthogonality', float('nan')):.1e}"
              + (f"  relative {row['relative_error']:.1e}" if relative_reference is not None
                 else "")
              + (f"  sweeps {row['sweeps_mean']:.1f} (max {row['sweeps_max']})"
                 if "sweeps_mean" in row else ""), flush=True)

    # cljacobi, host stack in and out
    seconds, _, (w, U) = median_time(lambda: cljacobi.eig_indefinite(A), args.repeat)
    _, infos = cljacobi.eig_indefinite(check, return_info=True, eigvals_only=True)
    sweeps = [info.sweeps for info in infos]
    ranks = [info.rank for info in infos]
    report("cljacobi (numpy stack)", seconds, w[: args.check], U[: args.check],
           {"sweeps_mean": float(np.mean(sweeps)), "sweeps_max": int(np.max(sweeps)),
            "rank_min": int(np.min(ranks)), "rank_max": int(np.max(ranks)),
            "variant": infos[0].variant})
    del w, U
    # cljacobi, device stack in and out
    d_A = cl_array.to_device(queue, A)

    def on_device():
        result = cljacobi.eig_indefinite(d_A)
        queue.finish()
        return result

    seconds, _, (d_w, d_U) = median_time(on_device, args.repeat)
    report("cljacobi (device stack)", seconds, d_w[: args.check].get(),
           d_U[: args.check].get())
    del d_A, d_w, d_U
    # the launch alone, from the profiling queue's event
    p_queue = profiling_queue()
    p_A = cl_array.to_device(p_queue, A)
    options = resolve_options("auto", None, True)

    def kernel_alone(**variant):
        run = batched_eig(p_queue, p_A.reshape(count, n, n), vectors=True,
                          strategy=options.strategy, rotation=options.rotation,
                          sort_diagonal=True, max_sweeps=60, **variant)
        return (run.event.profile.end - run.event.profile.start) * 1e-9, run

    variants = [{"row_split": split, "pair_sums": sums, "matrix_in_global": in_global,
                 "row_vector": vector}
                for split in args.row_splits or [None] for sums in args.pair_sums or [None]
                for in_global in args.matrix_in_global or [None]
                for vector in args.row_vectors or [None]
                if not (split == 1 and sums == "shuffle")]
    for variant in variants:
        try:
            kernel_alone(**variant)
        except (ValueError, DeviceCapabilityError) as error:  # refused by the device or n
            print(f"# {variant}: {error}")
            continue
        kernel = float(np.median([kernel_alone(**variant)[0] for _ in range(args.repeat)]))
        run = kernel_alone(**variant)[1]
        asked = {key: value for key, value in variant.items() if value is not None}
        name = "cljacobi kernel alone" + (f" {asked}" if asked else "")
        report(name, kernel, run.values[: args.check].get(), run.U[: args.check].get(),
               {**variant, "work_group_size": run.work_group_size})
        del run
    del p_A

    def eigh(library, stack):
        return library.linalg.eigh(stack)

    time_gpu_peers(args.peers, args.repeat, {
        "cupy": ("cupy.linalg.eigh", cupy_peer(eigh, A, args.check)),
        "torch": ("torch.linalg.eigh (cuda)", torch_peer(eigh, A, args.check))}, report)
    if "numpy" in args.peers:
        seconds, _, (n_w, n_U) = median_time(lambda: np.linalg.eigh(A), args.repeat)
        report("numpy.linalg.eigh (host)", seconds, n_w[: args.check], n_U[: args.check])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="*", default=[f"{n}x{c}" for n, c in STACKS],
                        help="n x count, e.g. 8x100000")
    parser.add_argument("--dtypes", nargs="*", default=["float64", "complex128"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", type=int, default=200,
                        help="matrices of each stack whose accuracy is measured")
    parser.add_argument("--families", nargs="*", default=list(FAMILIES),
                        choices=list(FAMILIES))
    parser.add_argument("--peers", nargs="*", default=["cupy", "torch", "numpy"])
    parser.add_argument("--row-splits", nargs="*", type=int, default=None,
                        help="also time the launch alone with these work-items per "
                             "pivot pair (default: the device's choice only)")
    parser.add_argument("--pair-sums", nargs="*", default=None, choices=["local", "shuffle"],
                        help="also time the launch alone with these sums of a pair's "
                             "work-items (default: the device's choice only)")
    parser.add_argument("--row-vectors", nargs="*", type=int, default=None,
                        help="also time the launch alone with these rows per explicit "
                             "vector (default: the device's choice only)")
    parser.add_argument("--matrix-in-global", nargs="*", default=None,
                        type=lambda text: text == "true", help="true / false: also time the "
                        "launch alone with the matrices in global / local memory")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    queue, device = announced_queue()
    rng = np.random.default_rng(2026)
    records = []
    for dtype, n, count, family in stack_cases(args):
        stack = FAMILIES[family](rng, count, n, dtype.startswith("complex"))
        run_stack(args, family, dtype, n, count, records, queue, np.ascontiguousarray(stack))
    write_results(args.json, "batched", device, records)


if __name__ == "__main__":
    main()
