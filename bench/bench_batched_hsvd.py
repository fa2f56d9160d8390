"""Stacks of small square factors: cljacobi's batched hsvd against the peers.

One command, every solver on the same stacks, in one process:

* ``cljacobi`` -- ``hsvd`` on a numpy stack (upload, one launch, download),
  on a pyopencl stack (device resident), and one matrix at a time
  (``variant="pointwise"``, timed on the first ``--one-at-a-time`` matrices
  and scaled to the stack);
* with ``J = I`` (the SVD) also ``cljacobi.svd`` on numpy and on device
  stacks (the row-sorted, column-pivoted QR of every matrix in one launch,
  the sweeps of all ``R^*`` in a second, U and Vh through the reflectors in
  a third), ``cupy.linalg.svd`` (cuSOLVER), ``torch.linalg.svd``
  on CUDA and ``numpy.linalg.svd`` on the host, where they are installed.

Every stack comes in two signatures (``--signatures``): ``identity`` (the
SVD, which the peers solve too) and ``mixed`` (half +1, half -1: the
hyperbolic SVD, cljacobi alone), and three families: random, column-graded
``G = B D`` (D from 1 to 2^-60) and rank-deficient (``n/4`` columns of the
+1 half repeated, so zero values under both signatures).  Per row: seconds (median of ``--repeat``
after a warm-up), matrices per second, cljacobi's sweeps, and on the first
``--check`` matrices the reconstruction error ``max |G - U S Vh| / ||G||``,
``max |U^* U - I|`` and the largest relative error of S against cljacobi's
one-matrix path (whose relative accuracy the test suite checks against
mpmath; for the rank-deficient family over the values above ``n eps``
times the largest); for the SVD peers S against the same.

    CLJACOBI_DEVICE=nvidia python bench/bench_batched_hsvd.py \\
        --json bench/results/batched-hsvd-H200-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    announced_queue,
    cupy_peer,
    median_time,
    stack_cases,
    time_gpu_peers,
    torch_peer,
    write_results,
)

#: (n, count): the eig stacks' orders up to the hsvd kernel's limit.
STACKS = [(2, 262_144), (8, 100_000), (32, 10_000), (48, 2_000)]


def factor_stack(rng, count, n, complex_, family):
    G = rng.standard_normal((count, n, n))
    if complex_:
        G = G + 1j * rng.standard_normal((count, n, n))
    if family == "graded":
        G = G * 2.0 ** -np.rint(np.linspace(0, 60, n))
    elif family == "rank":  # the last n/4 columns of the +1 half repeat its first ones
        q = n // 4
        G[:, :, n // 2 - q: n // 2] = G[:, :, :q]
    return G


def accuracy(G, U, S, Vh, reference, rank_deficient):
    """Reconstruction and orthogonality (where U is given) and S relative to
    `reference`, the one-matrix path's S (where S is given): every value, or
    for `rank_deficient` factors those above ``n eps`` times the largest (the
    others are the rounding of exact zeros)."""
    scale = np.linalg.norm(G, 2, axis=(-2, -1))
    record = {}
    if U is not None:
        record["reconstruction"] = float(
            (np.abs(G - (U * S[..., None, :]) @ Vh).max(axis=(-2, -1)) / scale).max())
        gram = np.swapaxes(U, -1, -2).conj() @ U - np.eye(G.shape[-1])
        record["orthogonality"] = float(np.abs(gram).max())
    if S is not None:
        floor = G.shape[-1] * np.finfo(np.float64).eps if rank_deficient else 0.0
        kept = reference > floor * reference.max(axis=-1, keepdims=True)
        record["relative_error"] = float((np.abs(S - reference)[kept] / reference[kept]).max())
    return record


def run_stack(args, family, signature, dtype, n, count, records, queue, G) -> None:
    import pyopencl.array as cl_array

    import cljacobi

    J = np.ones(n) if signature == "identity" else np.where(np.arange(n) < n // 2, 1, -1)
    check = G[: args.check]
    reference = np.array([cljacobi.hsvd(M, J, variant="pointwise", compute_uv=False)[0]
                          for M in check])

    def report(name, seconds, U, S, Vh, extra=None):
        row = {"solver": name, "family": family, "signature": signature, "dtype": dtype,
               "n": n, "count": count, "seconds": seconds,
               "matrices_per_second": count / seconds,
               **accuracy(check, U, S, Vh, reference, family == "rank"), **(extra or {})}
        records.append(row)
        print(f"{dtype:10s} {family:7s} J={signature:8s} n={n:3d} x{count:7d}  {name:28s} "
              f"{seconds:9.4f} s {row['matrices_per_second']:11.0f}/s"
              f"  recon {row.get('reconstruction', float('nan')):.1e}"
              f"  orth {row.get('orthogonality', float('nan')):.1e}"
              f"  S rel {row.get('relative_error', float('nan')):.1e}"
              + (f"  sweeps {row['sweeps_mean']:.1f}" if "sweeps_mean" in row else ""),
              flush=True)

    seconds, _, result = median_time(lambda: cljacobi.hsvd(G, J), args.repeat)
    _, infos = cljacobi.hsvd(check, J, compute_uv=False, return_info=True)
    report("cljacobi (numpy stack)", seconds, result.U[: args.check], result.S[: args.check],
           result.Vh[: args.check],
           {"sweeps_mean": float(np.mean([info.sweeps for info in infos])),
            "variant": infos[0].variant})
    del result
    d_G = cl_array.to_device(queue, G)

    def on_device():
        out = cljacobi.hsvd(d_G, J)
        queue.finish()
        return out

    seconds, _, d_result = median_time(on_device, args.repeat)
    report("cljacobi (device stack)", seconds, *(x[: args.check].get() for x in d_result[:3]))
    d_G = d_result = None  # the device memory back (not del: the closure reads d_G)
    few = min(args.one_at_a_time, count)
    seconds, _, _ = median_time(
        lambda: [cljacobi.hsvd(M, J, variant="pointwise") for M in G[:few]], 1)
    report("cljacobi one at a time (reference)", seconds * count / few, None, None, None,
           {"timed_matrices": few})
    if signature != "identity":
        return
    seconds, _, svd = median_time(lambda: cljacobi.svd(G), args.repeat)
    report("cljacobi.svd (numpy stack)", seconds, *(x[: args.check] for x in svd))
    del svd
    d_A = cl_array.to_device(queue, G)

    def svd_on_device():
        out = cljacobi.svd(d_A)
        queue.finish()
        return out

    seconds, _, d_svd = median_time(svd_on_device, args.repeat)
    report("cljacobi.svd (device stack)", seconds, *(x[: args.check].get() for x in d_svd))
    d_A = d_svd = None  # the device memory back (not del: the closure reads d_A)

    def svd(library, stack):
        return library.linalg.svd(stack, full_matrices=False)

    time_gpu_peers(args.peers, args.repeat, {
        "cupy": ("cupy.linalg.svd", cupy_peer(svd, G, args.check)),
        "torch": ("torch.linalg.svd (cuda)", torch_peer(svd, G, args.check))}, report)
    if "numpy" in args.peers:
        seconds, _, (n_U, n_S, n_Vh) = median_time(lambda: np.linalg.svd(G), args.repeat)
        report("numpy.linalg.svd (host)", seconds, n_U[: args.check], n_S[: args.check],
               n_Vh[: args.check])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="*", default=[f"{n}x{c}" for n, c in STACKS],
                        help="n x count, e.g. 8x100000")
    parser.add_argument("--dtypes", nargs="*", default=["float64", "complex128"])
    parser.add_argument("--families", nargs="*", default=["random", "graded", "rank"],
                        choices=["random", "graded", "rank"])
    parser.add_argument("--signatures", nargs="*", default=["identity", "mixed"],
                        choices=["identity", "mixed"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", type=int, default=100,
                        help="matrices of each stack whose accuracy is measured")
    parser.add_argument("--one-at-a-time", type=int, default=50,
                        help="matrices timed one call each (scaled to the stack)")
    parser.add_argument("--peers", nargs="*", default=["cupy", "torch", "numpy"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    queue, device = announced_queue()
    rng = np.random.default_rng(2026)
    records = []
    for dtype, n, count, family in stack_cases(args):
        G = np.ascontiguousarray(factor_stack(rng, count, n, dtype.startswith("c"), family))
        for signature in args.signatures:
            run_stack(args, family, signature, dtype, n, count, records, queue, G)
    write_results(args.json, "batched_hsvd", device, records)


if __name__ == "__main__":
    main()
