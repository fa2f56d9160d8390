"""cljacobi.svd beside LAPACK and cuSOLVER, on the same matrices, in one process.

Matrices: ``A = X diag(sigma) Y^*`` (m x n, m >= n) with Haar orthonormal
(unitary for --dtype complex128) X, Y and singular values log-uniform in
``[1e-5, 1]`` (``--family graded``: down to 1e-12; ``--family rank``: half
of them zero; the default is the dynamic range of the 2011 paper's spectra), formed in
float64/complex128; ``--aspect 2`` gives m = 2n (a tall A).

Peers (each when importable): numpy.linalg.svd (LAPACK gesdd),
cupy.linalg.svd (cuSOLVER gesvd), cupyx.cusolver.gesvdj (cuSOLVER Jacobi).

For each n and solver: median seconds over --repeat runs after one untimed run,
the largest relative singular value error against the prescribed sigma,
``||I - U^* U||_F``, ``||I - V^* V||_F``, ``||A - U S Vh||_F / ||A||_F``, and for
cljacobi the sweeps, rotations and per-phase seconds.  Complex data can be
timed in both device layouts in one run:

    python bench/bench_svd.py --dtype complex128 --layout interleaved split \\
        --sizes 1024 2048 4096 --out bench/results/svd-complex.json
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from common import environment, median_time, on_gpu, write_results

import cljacobi
from cljacobi.eig import FACTORIZATIONS
from cljacobi.host.device import default_queue
from cljacobi.host.pointwise import FINISHING_ENV, FINISHINGS


def _orthonormal(rng, m, n, dtype):
    X = rng.standard_normal((m, n))
    if dtype.kind == "c":
        X = X + 1j * rng.standard_normal((m, n))
    Q, R = np.linalg.qr(X)
    return Q * (np.diagonal(R) / np.abs(np.diagonal(R)))  # Haar


#: What ``--family`` takes: the singular values log-uniform in [1e-5, 1] (the
#: 2011 paper's dynamic range), graded down to 1e-12, or half of them zero
#: (rank n/2).
FAMILIES = ("loguniform", "graded", "rank")


def make_matrix(m, n, rng, dtype, family="loguniform"):
    """``A = X diag(sigma) Y^*`` and sigma (descending), sigma by `family`."""
    low = -12 if family == "graded" else -5
    sigma = np.sort(10.0 ** rng.uniform(low, 0, n))[::-1]
    if family == "rank":
        sigma[n // 2:] = 0
    X, Y = _orthonormal(rng, m, n, dtype), _orthonormal(rng, n, n, dtype)
    return (X * sigma) @ Y.conj().T, sigma


def _accuracy(A, sigma, U, S, Vh):
    nonzero = sigma > 0  # the zero ones (family "rank") against the largest
    out = {"max_rel_sv_error": float(np.max(np.abs(S - sigma)[nonzero] / sigma[nonzero])),
           "zero_sv_error": float(np.max(S[~nonzero], initial=0.0) / sigma[0])}
    if U is not None:
        k = S.shape[0]
        out["orthogonality_U"] = float(np.linalg.norm(U.conj().T @ U - np.eye(U.shape[1])))
        out["orthogonality_V"] = float(np.linalg.norm(Vh @ Vh.conj().T - np.eye(Vh.shape[0])))
        out["residual"] = float(np.linalg.norm(A - (U[:, :k] * S) @ Vh[:k]) / np.linalg.norm(A))
    return out


def _peers():
    peers = {"numpy.svd (gesdd)": lambda A: np.linalg.svd(A, full_matrices=False)}
    try:
        import cupy
        import cupyx.cusolver

        peers["cupy.svd (gesvd)"] = on_gpu(lambda dA: cupy.linalg.svd(dA, full_matrices=False))
        if hasattr(cupyx.cusolver, "gesvdj"):
            def gesvdj(dA):
                # cuSOLVER's gesvdj returns V with A = U diag(S) V^H, not Vh.
                U, S, V = cupyx.cusolver.gesvdj(dA, full_matrices=False)
                return U, S, V.conj().T

            peers["cusolver.gesvdj"] = on_gpu(gesvdj)
    except Exception as error:
        print(f"# cupy peers unavailable: {error!r}")
    return peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024],
                        help="n (columns); m = aspect * n rows")
    parser.add_argument("--aspect", type=float, default=1.0, help="m / n (>= 1)")
    parser.add_argument("--family", choices=FAMILIES, default="loguniform")
    parser.add_argument("--dtype", choices=["float64", "complex128"], default="float64")
    parser.add_argument("--layout", nargs="+", choices=["interleaved", "split"],
                        default=[None], help="complex storage layout(s) on the device")
    parser.add_argument("--values-only", action="store_true",
                        help="compute_uv=False for cljacobi (peers still compute U, V)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--skip", nargs="*", default=[], help="peer names to skip")
    parser.add_argument("--numpy-max", type=int, default=4096, help="largest n for numpy")
    parser.add_argument("--variants", nargs="+", default=["auto"],
                        help="cljacobi variants: auto, pointwise, bo:W, fb:W, stream:W")
    parser.add_argument("--finishing", nargs="+", default=["certified"], choices=FINISHINGS,
                        help="how the pointwise sweeps after blocked ones go (through "
                        f"{FINISHING_ENV}; each is its own solver)")
    parser.add_argument("--factorization", nargs="+", default=["auto"],
                        choices=FACTORIZATIONS,
                        help="where the QR runs (each is its own solver)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.aspect < 1:
        parser.error("--aspect must be >= 1")
    dtype = np.dtype(args.dtype)
    layouts = args.layout if dtype.kind == "c" else [None]
    compute_uv = not args.values_only

    def ours_name(layout, variant, finishing, factorization):
        tags = [tag for tag in (layout, None if variant == "auto" else variant,
                                None if finishing == "certified" else finishing,
                                None if factorization == "auto" else f"qr {factorization}")
                if tag]
        return "cljacobi.svd" + (f"[{', '.join(tags)}]" if tags else "")

    def variant_options(variant):
        name, _, width = variant.partition(":")
        return {"variant": name, "block_width": int(width) if width else None}

    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# cljacobi device: {device}")
    peers = {k: v for k, v in _peers().items() if k not in args.skip}
    rng = np.random.default_rng(args.seed)

    # Peers that cannot take this dtype are dropped here; every solver's first
    # call at each size is an untimed warm-up (median_time).
    warm, _ = make_matrix(int(64 * args.aspect), 64, rng, dtype)
    for name, solve in list(peers.items()):
        try:
            solve(warm)
        except Exception as error:
            print(f"# peer {name} fails on {dtype.name} input, skipped: {error!r}")
            del peers[name]

    records = []
    for n in args.sizes:
        m = int(round(args.aspect * n))
        A, sigma = make_matrix(m, n, rng, dtype, args.family)
        for layout in layouts:
            for variant, finishing, factorization in itertools.product(
                    args.variants, args.finishing, args.factorization):
                with environment(**{FINISHING_ENV: finishing}):
                    seconds, times, (result, info) = median_time(
                        lambda: cljacobi.svd(A, compute_uv=compute_uv, return_info=True,
                                             _layout=layout, factorization=factorization,
                                             **variant_options(variant)),
                        args.repeat)
                U, S, Vh = result if compute_uv else (None, result, None)
                name = ours_name(layout, variant, finishing, factorization)
                records.append({
                    "m": m, "n": n, "solver": name, "dtype": dtype.name,
                    "layout": layout, "compute_uv": compute_uv,
                    "variant": f"{info.variant}:{info.block_width}",
                    "matrix_products": info.matrix_products,
                    "seconds": seconds, "all_seconds": times, "sweeps": info.sweeps,
                    "blocked_sweeps": info.blocked_sweeps,
                    "certified_sweeps": info.certified_sweeps,
                    "rotations": info.rotations, "rotations_per_sweep": info.rotations_per_sweep,
                    "phases": info.seconds, "factorization": info.factorization,
                    "work_group_size": info.work_group_size,
                    **_accuracy(A, sigma, U, S, Vh),
                })
                print(f"m={m} n={n} {name} ({info.variant}:{info.block_width}) {seconds:.3f}s "
                      f"sweeps={info.sweeps} (blocked {info.blocked_sweeps}, certified "
                      f"{info.certified_sweeps}) "
                      f"[{info.matrix_products or 'pointwise'}] "
                      f"rotations={info.rotations} phases="
                      + ", ".join(f"{k}={v:.3f}" for k, v in info.seconds.items()), flush=True)
        for name, solve in peers.items():
            if name.startswith("numpy") and n > args.numpy_max:
                continue
            seconds, times, (U, S, Vh) = median_time(lambda: solve(A), args.repeat)
            records.append({"m": m, "n": n, "solver": name, "dtype": dtype.name,
                            "seconds": seconds, "all_seconds": times,
                            **_accuracy(A, sigma, np.asarray(U), np.asarray(S), np.asarray(Vh))})
            print(f"m={m} n={n} {name} {seconds:.3f}s", flush=True)

    print("\n| m x n | solver | seconds | cljacobi / solver | sweeps | max rel. sv error "
          "| ||I-U^*U|| | residual |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in args.sizes:
        rows = [r for r in records if r["n"] == n]
        ours = next(r for r in rows if r["solver"].startswith("cljacobi"))
        for r in rows:
            print(f"| {r['m']} x {n} | {r['solver']} | {r['seconds']:.4g} | "
                  f"{ours['seconds'] / r['seconds']:.3g} | {r.get('sweeps', '')} | "
                  f"{r['max_rel_sv_error']:.2e} | {r.get('orthogonality_U', float('nan')):.1e} | "
                  f"{r.get('residual', float('nan')):.1e} |")

    write_results(args.out, f"svd, family {args.family}, {dtype.name}, "
                  f"aspect {args.aspect}", device, records)

if __name__ == "__main__":
    main()
