"""cljacobi.eigh's methods beside cuSOLVER syevj (the same parallel cyclic
two-sided Jacobi method) and syevd, and LAPACK through numpy
(common.eigh_peers, bench_eig.py's peers), on the same matrices, in one
process.

Families (``--families``), real symmetric (``--dtype complex128``: complex
Hermitian), ``Q`` Haar:

* ``random``: ``Q diag(lambda) Q^T``, eigenvalues uniform in [-1, 1];
* ``graded``: ``D S D`` with S of the random family and ``D = diag(10^(-6 k /
  (n - 1)))``: eigenvalues from 1 down to about 1e-12;
* ``rank``: ``Q_r diag(lambda) Q_r^T`` of rank n/2 (half the spectrum 0).

For each n, family and solver the median of `--repeat` runs after an
untimed one; the eigenvalue error in units of ``n eps ||A||`` against LAPACK,
the largest relative error of the eigenvalues above ``1e-3 ||A||`` and of all
of them against cljacobi's one-sided method when it runs (its eigenvalues
are accurate to the data: eig_indefinite), ``||A V - V diag(w)|| / ||A||``,
``||V^T V - I||``, and for cljacobi the sweeps and rotations.  A method is
``method[:variant[:w[:strategy]]]``, e.g. ``two-sided:bo:16:ring``.

    CLJACOBI_DEVICE=nvidia python bench/bench_eigh.py --sizes 1024 2048 4096 \\
        --methods two-sided one-sided --out bench/results/eigh-<device>-<date>.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from common import eigh_peers, median_time, write_results

import cljacobi
from cljacobi.host.device import default_queue

FAMILIES = ("random", "graded", "rank")


def family_matrix(family: str, n: int, rng: np.random.Generator,
                  dtype: str = "float64") -> np.ndarray:
    """A real symmetric (complex Hermitian) matrix of `family` (see the module
    docstring)."""
    X = rng.standard_normal((n, n))
    if dtype == "complex128":
        X = X + 1j * rng.standard_normal((n, n))
    Q = np.linalg.qr(X)[0]
    if family == "rank":
        Q = Q[:, : n // 2]
    A = (Q * rng.uniform(-1, 1, Q.shape[1])) @ Q.conj().T
    if family == "graded":
        D = 10.0 ** (-6 * np.arange(n) / max(n - 1, 1))
        A = D[:, None] * A * D[None, :]
    return (A + A.conj().T) / 2


def cljacobi_solver(spec: str):
    """``method[:variant[:w[:strategy]]]`` as a solver returning ``((w, V),
    info)``; an empty field keeps the default."""
    method, *rest = spec.split(":")
    options = {"method": method}
    for name, value in zip(("variant", "block_width", "strategy"), rest):
        if value:
            options[name] = int(value) if name == "block_width" else value
    return lambda A: cljacobi.eigh(A, return_info=True, **options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--families", nargs="+", default=["random"], choices=FAMILIES)
    parser.add_argument("--dtype", default="float64", choices=["float64", "complex128"])
    parser.add_argument("--methods", nargs="+", default=["two-sided", "one-sided"])
    parser.add_argument("--peers", nargs="*", help="peer names to run (default: all)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = default_queue().device.name.strip()
    print(f"# cljacobi device: {device}")
    rng = np.random.default_rng(args.seed)
    peers = eigh_peers()
    if args.peers is not None:
        peers = {name: solve for name, solve in peers.items()
                 if any(p in name for p in args.peers)}
    records = []
    for family in args.families:
        for n in args.sizes:
            A = family_matrix(family, n, rng, args.dtype)
            exact = np.linalg.eigvalsh(A)
            unit = n * np.finfo(np.float64).eps * np.abs(exact).max()
            solvers = {f"cljacobi.eigh[{m}]": cljacobi_solver(m) for m in args.methods}
            solvers.update({name: (lambda A, solve=solve: (solve(A), None))
                            for name, solve in peers.items()})
            eigenvalues = {}
            for name, solve in solvers.items():
                seconds, _, ((w, V), info) = median_time(lambda: solve(A), args.repeat)
                w, V = np.asarray(w), np.asarray(V)
                order = np.argsort(w)
                w, V = w[order], V[:, order]
                eigenvalues[name] = w
                record = {"n": n, "family": family, "dtype": args.dtype, "solver": name,
                          "seconds": seconds,
                          "eigenvalue_error_units": float(np.abs(w - exact).max() / unit),
                          "residual": float(np.linalg.norm(A @ V - V * w) / np.linalg.norm(A)),
                          "orthogonality": float(np.linalg.norm(V.conj().T @ V - np.eye(n)))}
                if info is not None:
                    record.update(sweeps=info.sweeps, rotations=info.rotations,
                                  variant=info.variant, block_width=info.block_width,
                                  strategy=info.strategy)
                records.append(record)
                print(record, flush=True)
            accurate = eigenvalues.get("cljacobi.eigh[one-sided]")
            if accurate is not None:
                large = np.abs(accurate) > 1e-3 * np.abs(accurate).max()
                nonzero = accurate != 0
                for record in records[-len(solvers):]:
                    relative = np.abs(eigenvalues[record["solver"]] - accurate)
                    record["relative_error_large"] = float(
                        (relative[large] / np.abs(accurate[large])).max())
                    record["relative_error_all"] = float(
                        (relative[nonzero] / np.abs(accurate[nonzero])).max())
    print("\n| family | n | solver | seconds | sweeps | error / (n eps ||A||) | "
          "rel. error (|l| > 1e-3 ||A||) | rel. error (all) | residual |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['family']} | {r['n']} | {r['solver']} | {r['seconds']:.3g} | "
              f"{r.get('sweeps', '')} | {r['eigenvalue_error_units']:.2f} | "
              f"{r.get('relative_error_large', float('nan')):.1e} | "
              f"{r.get('relative_error_all', float('nan')):.1e} | {r['residual']:.1e} |")
    write_results(args.out, "eigh methods beside cuSOLVER", device, records)


if __name__ == "__main__":
    main()
