"""cljacobi.gsvd beside LAPACK ggsvd3 (gsvd4py) and the generalized
eigenproblem route (scipy.linalg.eigh(A^H A, B^H B)), on the same pairs, in one
process.

Pairs (``--family``) as in Novaković & Singer, "Implicit Hari-Zimmermann
algorithm for the generalized SVD on the GPUs", Sect. 5.1.2, ``A = U_F
Sigma_F X``, ``B = U_G Sigma_G X`` with random unitary ``U_F``, ``U_G``:

* ``paper``: the diagonals of ``Sigma_F``, ``Sigma_G`` and of the eigenvalues
  ``Lambda_X`` of a random symmetric (Hermitian) ``X`` uniform in (1e-10, 1),
  as the paper's generator draws them;
* ``graded``: ``Sigma_F`` log-uniform in (1e-10, 1), ``Sigma_G`` log-uniform
  in (1e-3, 1) and X of condition 1e3 (``kappa(B)`` about 1e6), the
  generalized singular values over 13 orders of magnitude.

The reference is the prescribed ``Sigma_F / Sigma_G``.  Errors: the largest relative error of
the generalized singular values, and the paper's residuals ``||A - U C
X^H|| / ||A||``, ``||B - V S X^H|| / ||B||``.  The paper's V100 times
(DHZ0-(ME-FB-ME)) are printed beside for orientation only.

    CLJACOBI_DEVICE=nvidia python bench/bench_gsvd.py --sizes 512 1024 2048 \\
        --out bench/results/gsvd-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from common import median_time, write_results

import cljacobi

#: [NS] Table (V100, real DHZ0-(ME-FB-ME)), seconds: orientation only.
PAPER_V100 = {1024: 0.694, 2048: 2.02, 4096: 17.5, 8192: 128.7}


def _random(shape, dtype, rng):
    X = rng.standard_normal(shape)
    return X + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else X


def _unitary(n, dtype, rng):
    return np.linalg.qr(_random((n, n), dtype, rng))[0]


def _uniform(n, rng):
    """n values uniform in (0, 1), those below 1e-10 drawn again ([NS] Sect. 5.1.2)."""
    values = rng.uniform(0, 1, n)
    while np.any(values <= 1e-10):
        small = values <= 1e-10
        values[small] = rng.uniform(0, 1, int(small.sum()))
    return values


def paper_pair(n, dtype, rng):
    """The paper's generator: Sigma_F, Sigma_G, Lambda_X uniform in (1e-10, 1)."""
    sigma_f, sigma_g = _uniform(n, rng), _uniform(n, rng)
    Q = _unitary(n, dtype, rng)
    X = (Q * _uniform(n, rng)) @ Q.conj().T
    A = _unitary(n, dtype, rng) @ (sigma_f[:, None] * X)
    B = _unitary(n, dtype, rng) @ (sigma_g[:, None] * X)
    return A, B, np.sort(sigma_f / sigma_g)[::-1]


def graded_pair(n, dtype, rng):
    """Generalized singular values over 13 orders of magnitude."""
    sigma_f = np.exp(rng.uniform(np.log(1e-10), 0, n))
    sigma_g = np.exp(rng.uniform(np.log(1e-3), 0, n))
    W = _unitary(n, dtype, rng) @ np.diag(np.logspace(0, -3, n)) @ _unitary(n, dtype, rng)
    A = _unitary(n, dtype, rng) @ (sigma_f[:, None] * W)
    B = _unitary(n, dtype, rng) @ (sigma_g[:, None] * W)
    return A, B, np.sort(sigma_f / sigma_g)[::-1]


def _ours(variant):
    name, _, rest = variant.partition(":")
    width, _, dots = rest.partition(":")
    options = {"variant": name, "block_width": int(width) if width else None,
               "dots": dots or "ordinary"}

    def solve(A, B):
        (U, V, C, S, X), info = cljacobi.gsvd(A, B, return_info=True, **options)
        return U, V, C, S, X, info

    return solve


def _solvers(max_lapack, variants):

    def lapack(A, B):
        import gsvd4py

        U, V, C, S, X = gsvd4py.gsvd(A, B, mode="econ")
        return U, V, np.diag(C), np.diag(S), X, None

    def eigh_route(A, B):
        import scipy.linalg

        w = scipy.linalg.eigh(A.conj().T @ A, B.conj().T @ B, eigvals_only=True)
        sigma = np.sqrt(np.abs(w))[::-1]
        return None, None, sigma / np.hypot(sigma, 1), 1 / np.hypot(sigma, 1), None, None

    solvers = {f"cljacobi.gsvd[{v}]": (_ours(v), None) for v in variants}
    solvers.update({"gsvd4py (ggsvd3)": (lapack, max_lapack),
                    "scipy eigh(A^H A, B^H B)": (eigh_route, None)})
    return solvers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--dtype", choices=["float64", "complex128"], default="float64")
    parser.add_argument("--lapack-max", type=int, default=1024, help="largest n for ggsvd3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--family", choices=["paper", "graded"], default="paper")
    parser.add_argument("--variants", nargs="+", default=["auto"],
                        help="cljacobi variants: auto, pointwise, bo:W, fb:W, and :enhanced "
                        "after W for the enhanced dot products")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    device = cljacobi.host.device.default_queue().device.name.strip()
    print(f"# cljacobi device: {device}")
    records = []
    for n in args.sizes:
        A, B, exact = {"paper": paper_pair, "graded": graded_pair}[args.family](
            n, args.dtype, rng)
        for name, (solve, largest) in _solvers(args.lapack_max, args.variants).items():
            if largest is not None and n > largest:
                continue
            repeat = args.repeat if n < 4096 else 1
            start = time.perf_counter()
            seconds, _, (U, V, C, S, X, info) = median_time(
                lambda solve=solve, A=A, B=B: solve(A, B), repeat)
            record = {"n": n, "dtype": args.dtype, "solver": name, "seconds": seconds,
                      "wall": time.perf_counter() - start,
                      "sigma_error": float(np.max(np.abs(C / S - exact) / exact))}
            if U is not None:
                record["residual_A"] = float(np.linalg.norm(A - U * C @ X.conj().T)
                                             / np.linalg.norm(A))
                record["residual_B"] = float(np.linalg.norm(B - V * S @ X.conj().T)
                                             / np.linalg.norm(B))
            if info is not None:
                record.update(sweeps=info.sweeps, transformations=info.rotations_per_sweep,
                              variant=f"{info.variant}:{info.block_width}",
                              split={k: round(v, 4) for k, v in info.seconds.items()})
            records.append(record)
            print(n, name, f"{seconds:.3f} s", {k: v for k, v in record.items()
                                                 if k not in ("n", "solver", "seconds")},
                  flush=True)
    print("\n| n | solver | seconds | sweeps | max rel. error of C/S | residual A | residual B "
          "| paper V100 (real) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['n']} | {r['solver']} | {r['seconds']:.3g} | {r.get('sweeps', '')} | "
              f"{r['sigma_error']:.2e} | {r.get('residual_A', float('nan')):.1e} | "
              f"{r.get('residual_B', float('nan')):.1e} | {PAPER_V100.get(r['n'], '')} |")
    write_results(args.out, f"gsvd, {args.family} pairs, {args.dtype}", device, records)


if __name__ == "__main__":
    main()
