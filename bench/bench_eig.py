"""eig_indefinite beside LAPACK and cuSOLVER, on the same matrices, in one process.

Matrices: the family of Novaković & Singer 2011, Sect. 5 -- random spectra
uniform in [-a, -a 1e-5] U [a 1e-5, a], a from their Table 2, about half of
the eigenvalues positive -- built as Q diag(lambda) Q^T.

Peers (each when importable): numpy.linalg.eigh (LAPACK syevd),
cupy.linalg.eigh (cuSOLVER syevd), cupyx.cusolver.syevj (cuSOLVER Jacobi).

For each n and solver: median seconds over --repeat runs after one untimed run,
relative eigenvalue errors against the prescribed spectrum, ||I - U^T U||_F,
||M U - U diag(w)||_F / ||M||_F, and for cljacobi the sweeps, rotations and the
per-phase time split.  Writes JSON (and a markdown table on stdout).

    python bench/bench_eig.py --sizes 1024 2048 4096 --out bench/results/eig.json

Complex Hermitian matrices (same spectra, Haar unitary eigenvectors), with
both device storage layouts of complex data timed side by side:

    python bench/bench_eig.py --dtype complex128 --layout interleaved split \
        --sizes 1024 2048 4096 --out bench/results/eig-complex.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from common import median_time, on_gpu, write_results

import cljacobi
from cljacobi.host.device import default_queue
from cljacobi.matrices import paper_spectrum, with_spectrum


def _accuracy(M, lam_sorted, w, U):
    rel = np.abs(w - lam_sorted) / np.abs(lam_sorted)
    out = {"max_rel_eig_error": float(rel.max()), "median_rel_eig_error": float(np.median(rel))}
    if U is not None:
        n = M.shape[0]
        out["orthogonality"] = float(np.linalg.norm(U.conj().T @ U - np.eye(n)))
        out["residual"] = float(np.linalg.norm(M @ U - U * w) / np.linalg.norm(M))
    return out


def _peers():
    peers = {"numpy.eigh": lambda M: np.linalg.eigh(M)}
    try:
        import cupy
        import cupyx.cusolver

        peers["cupy.eigh (syevd)"] = on_gpu(lambda dM: cupy.linalg.eigh(dM))
        peers["cusolver.syevj"] = on_gpu(
            lambda dM: cupyx.cusolver.syevj(dM, with_eigen_vector=True))
    except Exception as error:
        print(f"# cupy peers unavailable: {error!r}")
    return peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-large", type=int, default=1,
                        help="repeats for n >= 4096 (cljacobi and numpy)")
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--skip", nargs="*", default=[], help="peer names to skip")
    parser.add_argument("--numpy-max", type=int, default=4096, help="largest n for numpy.eigh")
    parser.add_argument("--variants", nargs="+", default=["auto"],
                        help="cljacobi variants to time: auto, pointwise, bo:W, fb:W")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--dtype", choices=["float64", "complex128"], default="float64",
                        help="real symmetric or complex Hermitian test matrices")
    parser.add_argument("--layout", nargs="+", choices=["interleaved", "split"],
                        default=[None], help="complex storage layout(s) on the device; each "
                        "is timed as its own solver (default: the library's choice)")
    args = parser.parse_args()
    dtype = np.dtype(args.dtype)
    layouts = args.layout if dtype.kind == "c" else [None]

    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# cljacobi device: {device}")
    peers = {k: v for k, v in _peers().items() if k not in args.skip}
    rng = np.random.default_rng(args.seed)

    # Peers that cannot take this dtype are dropped here; every solver's first
    # call at each size is an untimed warm-up (median_time).
    warm = with_spectrum(paper_spectrum(512, rng=rng), rng=rng, dtype=dtype)
    for name, solve in list(peers.items()):
        try:
            solve(warm)
        except Exception as error:
            print(f"# peer {name} fails on {dtype.name} input, skipped: {error!r}")
            del peers[name]

    records = []
    for n in args.sizes:
        lam = paper_spectrum(n, rng=rng)
        M = with_spectrum(lam, rng=rng, dtype=dtype)
        lam_sorted = np.sort(lam)
        repeat = args.repeat_large if n >= 4096 else args.repeat

        for layout in layouts:
            for variant_spec in args.variants:
                variant, _, width = variant_spec.partition(":")
                options = {"variant": variant, "block_width": int(width) if width else None,
                           "_layout": layout}
                seconds, times, (result, info) = median_time(
                    lambda: cljacobi.eig_indefinite(M, return_info=True, **options), repeat
                )
                name = f"cljacobi[{variant_spec}" + (f",{layout}]" if layout else "]")
                rec = {
                    "n": n, "solver": name, "dtype": dtype.name, "layout": layout,
                    "seconds": seconds, "all_seconds": times,
                    "variant": info.variant, "block_width": info.block_width,
                    "sweeps": info.sweeps, "blocked_sweeps": info.blocked_sweeps,
                    "rotations": info.rotations, "rotations_per_sweep": info.rotations_per_sweep,
                    "phases": info.seconds, "work_group_size": info.work_group_size,
                    "factorization": info.factorization,
                    **_accuracy(M, lam_sorted, result.eigenvalues, result.eigenvectors),
                }
                if info.blocked_sweeps:
                    # Gram (2 m K^2) and update (2 m K^2) per block pair, K = 2w:
                    # 8 m r^2 flops per blocked sweep on the square factor (m = r = n),
                    # four times as many real flops for complex data.
                    flops = 8.0 * n**3 * info.blocked_sweeps * (4 if dtype.kind == "c" else 1)
                    rec["block_step_gflops"] = flops / info.seconds["blocked_sweeps"] / 1e9
                records.append(rec)
                print(f"n={n} {name} {seconds:.3f}s sweeps={info.sweeps} "
                      f"(blocked {info.blocked_sweeps}) {info.factorization} "
                      + ", ".join(f"{k}={v:.3f}" for k, v in info.seconds.items())
                      + (f" block GFLOP/s={rec['block_step_gflops']:.1f}"
                         if "block_step_gflops" in rec else ""), flush=True)
        for name, solve in peers.items():
            if name == "numpy.eigh" and n > args.numpy_max:
                continue
            reps = repeat if name == "numpy.eigh" else max(repeat, 3)
            seconds, times, (w, U) = median_time(lambda: solve(M), reps)
            records.append({"n": n, "solver": name, "dtype": dtype.name,
                            "seconds": seconds, "all_seconds": times,
                            **_accuracy(M, lam_sorted, np.asarray(w), np.asarray(U))})
            print(f"n={n} {name} {seconds:.3f}s", flush=True)

    # Markdown table: one row per n, ratios cljacobi / peer.
    print("\n(ratio: the fastest cljacobi variant's seconds / the solver's seconds)")
    print("\n| n | solver | seconds | cljacobi / solver | sweeps | max rel. eig. error "
          "| ||I-U^TU|| | residual |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in args.sizes:
        ours = min((r for r in records if r["n"] == n and r["solver"].startswith("cljacobi")),
                   key=lambda r: r["seconds"])
        for r in (r for r in records if r["n"] == n):
            ratio = ours["seconds"] / r["seconds"]
            print(f"| {n} | {r['solver']} | {r['seconds']:.4g} | {ratio:.3g} | "
                  f"{r.get('sweeps', '')} | {r['max_rel_eig_error']:.2e} | "
                  f"{r.get('orthogonality', float('nan')):.1e} | "
                  f"{r.get('residual', float('nan')):.1e} |")

    write_results(args.out, f"eig_indefinite, Novakovic-Singer 2011 spectra, {dtype.name}",
                  device, records)

if __name__ == "__main__":
    main()
