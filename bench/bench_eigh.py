"""cljacobi.eigh's methods beside cuSOLVER syevj (the same parallel cyclic
two-sided Jacobi method) and syevd, and LAPACK through numpy
(common.eigh_peers, bench_eig.py's peers), on the same matrices, in one
process.

Random symmetric matrices ``A = Q diag(lambda) Q^T`` with Haar Q and
eigenvalues uniform in [-1, 1]; for each n and solver the median of
`--repeat` runs after an untimed one, the eigenvalue error in units of
``n eps ||A||`` against LAPACK, ``||A V - V diag(w)|| / ||A||``, and for
cljacobi the sweeps and rotations.

    CLJACOBI_DEVICE=nvidia python bench/bench_eigh.py --sizes 1024 2048 4096 \\
        --out bench/results/eigh-<device>-<date>.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from common import eigh_peers, median_time, write_results

import cljacobi
from cljacobi.host.device import default_queue


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--methods", nargs="+", default=["two-sided", "one-sided"])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = default_queue().device.name.strip()
    print(f"# cljacobi device: {device}")
    rng = np.random.default_rng(args.seed)
    peers = eigh_peers()
    records = []
    for n in args.sizes:
        Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        A = (Q * rng.uniform(-1, 1, n)) @ Q.T
        A = (A + A.T) / 2
        exact = np.linalg.eigvalsh(A)
        unit = n * np.finfo(np.float64).eps * np.abs(exact).max()
        solvers = {f"cljacobi.eigh[{m}]": (lambda A, m=m: cljacobi.eigh(
            A, method=m, return_info=True)) for m in args.methods}
        solvers.update({name: (lambda A, solve=solve: (solve(A), None))
                        for name, solve in peers.items()})
        for name, solve in solvers.items():
            seconds, _, ((w, V), info) = median_time(lambda: solve(A), args.repeat)
            w, V = np.asarray(w), np.asarray(V)
            order = np.argsort(w)
            w, V = w[order], V[:, order]
            record = {"n": n, "solver": name, "seconds": seconds,
                      "eigenvalue_error_units": float(np.abs(w - exact).max() / unit),
                      "residual": float(np.linalg.norm(A @ V - V * w) / np.linalg.norm(A))}
            if info is not None:
                record.update(sweeps=info.sweeps, rotations=info.rotations)
            records.append(record)
            print(record, flush=True)
    print("\n| n | solver | seconds | sweeps | error / (n eps ||A||) | residual |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['n']} | {r['solver']} | {r['seconds']:.3g} | {r.get('sweeps', '')} | "
              f"{r['eigenvalue_error_units']:.2f} | {r['residual']:.1e} |")
    write_results(args.out, "eigh methods beside cuSOLVER", device, records)


if __name__ == "__main__":
    main()
