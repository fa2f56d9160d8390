"""Stacks of small GSVD pairs: cljacobi's batched gsvd against the peers.

One command, every solver on the same stacks, in one process:

* ``cljacobi`` -- ``gsvd`` of the stack on the device (three launches: every
  pair shortened by its two pivoted QRs, the implicit Hari-Zimmermann sweeps
  of all of them, every GSVD read off), given as numpy arrays (the upload
  and the download timed too) and as pyopencl arrays (uploaded before the
  clock starts; the results stay there); and one pair at a time
  (``variant="pointwise"``, timed on the first ``--one-at-a-time`` pairs
  and scaled to the stack);
* ``gsvd4py`` -- LAPACK ``xGGSVD3`` per pair on the host (``mode="econ"``),
  where gsvd4py is installed.

Families (``--families``): ``random`` (Gaussian A and B) and ``graded``
(A's columns scaled down to 2^-60, B Gaussian: the generalized singular
values span 18 orders of magnitude).  Per row: seconds (median of
``--repeat``), pairs per second, and on the first ``--check`` pairs the
largest error of the generalized singular values relative to each, against
cljacobi's one-pair path, and of the reconstruction ``max|A - U C X^H| /
(||A|| ||X||)``.

    CLJACOBI_DEVICE=nvidia python bench/bench_batched_gsvd.py \\
        --json bench/results/batched-gsvd-H200-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import announced_queue, median_time, stack_cases, write_results

#: (n, count): square pairs, A and B n x n.
STACKS = [(8, 10_000), (16, 2_000), (32, 500)]


def pair_stack(rng, count, n, complex_, family):
    A, B = rng.standard_normal((count, n, n)), rng.standard_normal((count, n, n))
    if complex_:
        A = A + 1j * rng.standard_normal(A.shape)
        B = B + 1j * rng.standard_normal(B.shape)
    if family == "graded":
        A = A * 2.0 ** -np.linspace(0, 60, n).round()
    return A, B


def accuracy(A, sigma, reference, U=None, C=None, X=None):
    record = {"sigma_relative_error": float((np.abs(sigma - reference) / reference).max())}
    if U is not None:
        Xh = np.swapaxes(X, -1, -2).conj()
        scale = np.linalg.norm(A, 2, axis=(-2, -1)) * np.linalg.norm(X, 2, axis=(-2, -1))
        residual = np.abs(A - (U * C[..., None, :]) @ Xh).max(axis=(-2, -1)) / scale
        record["reconstruction"] = float(residual.max())
    return record


def run_stack(args, queue, family, dtype, n, count, records, A, B) -> None:
    import cljacobi

    check = min(args.check, count)
    one = [cljacobi.gsvd(A[b], B[b], variant="pointwise") for b in range(check)]
    reference = np.array([r.C / r.S for r in one])

    def report(name, seconds, extra):
        row = {"solver": name, "family": family, "dtype": dtype, "n": n, "count": count,
               "seconds": seconds, "pairs_per_second": count / seconds, **extra}
        records.append(row)
        print(f"{dtype:10s} {family:7s} n={n:3d} x{count:6d}  {name:34s} {seconds:9.4f} s "
              f"{row['pairs_per_second']:10.0f}/s  sigma rel "
              f"{row.get('sigma_relative_error', float('nan')):.1e}  recon "
              f"{row.get('reconstruction', float('nan')):.1e}"
              + (f"  sweeps {row['sweeps_mean']:.1f} (QRs {row['shortening_seconds']:.4f} s, "
                 f"sweeps {row['sweeps_seconds']:.4f} s)" if "sweeps_mean" in row else ""),
              flush=True)

    seconds, _, result = median_time(lambda: cljacobi.gsvd(A, B), args.repeat)
    _, infos = cljacobi.gsvd(A, B, return_info=True)
    U, _, C, S, X = result
    report("cljacobi gsvd (numpy stack)", seconds,
           {**accuracy(A[:check], (C / S)[:check], reference, U[:check], C[:check],
                       X[:check]),
            "sweeps_mean": float(np.mean([info.sweeps for info in infos])),
            "variant": infos[0].variant,
            # the upload and the QRs, the sweeps; the rest is the extraction and download
            "sweeps_seconds": float(sum(info.seconds["sweeps"] for info in infos)),
            "shortening_seconds": float(sum(info.seconds["factorization"]
                                            for info in infos))})
    import pyopencl.array as cl_array

    A_device, B_device = (cl_array.to_device(queue, x) for x in (A, B))
    seconds, _, result = median_time(lambda: cljacobi.gsvd(A_device, B_device), args.repeat)
    same = all(np.array_equal(getattr(result, name).get(), getattr(
        cljacobi.gsvd(A, B), name)) for name in ("C", "S", "X"))
    report("cljacobi gsvd (device stack)", seconds, {"equal_to_numpy_stack": same})
    few = min(args.one_at_a_time, count)
    seconds, _, _ = median_time(
        lambda: [cljacobi.gsvd(A[b], B[b], variant="pointwise") for b in range(few)], 1)
    report("cljacobi one pair at a time", seconds * count / few, {"timed_pairs": few})
    if "gsvd4py" in args.peers:
        try:
            import gsvd4py
        except ImportError:
            return

        def lapack():
            return [gsvd4py.gsvd(A[b], B[b], mode="econ") for b in range(count)]

        seconds, _, out = median_time(lapack, args.repeat)
        sigma = np.array([np.diag(r[2]) / np.diag(r[3]) for r in out[:check]])
        sigma = -np.sort(-sigma, axis=1)
        report("gsvd4py (LAPACK ggsvd3, host)", seconds, accuracy(A[:check], sigma, reference))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="*", default=[f"{n}x{c}" for n, c in STACKS],
                        help="n x count, e.g. 16x2000")
    parser.add_argument("--dtypes", nargs="*", default=["float64", "complex128"])
    parser.add_argument("--families", nargs="*", default=["random", "graded"],
                        choices=["random", "graded"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", type=int, default=50,
                        help="pairs of each stack whose accuracy is measured")
    parser.add_argument("--one-at-a-time", type=int, default=20,
                        help="pairs timed one call each (scaled to the stack)")
    parser.add_argument("--peers", nargs="*", default=["gsvd4py"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    queue, device = announced_queue()
    rng = np.random.default_rng(2026)
    records = []
    for dtype, n, count, family in stack_cases(args):
        A, B = pair_stack(rng, count, n, dtype.startswith("c"), family)
        run_stack(args, queue, family, dtype, n, count, records, A, B)
    write_results(args.json, "batched_gsvd", device, records)


if __name__ == "__main__":
    main()
