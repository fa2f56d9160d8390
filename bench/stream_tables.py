"""Tables 1 and 2 of the stream SVD paper, recomputed with cljacobi.stream_reference.

V. Strumpen, H. Hoffmann and A. Agarwal, "A Stream Algorithm for the SVD"
(2003): the number of Hestenes transformations until convergence of its
Algorithm 1 (eps = 1e-15) for N x N matrices, N = 16 .. 2048, and network
sizes R = 1 .. 128: Table 1 for uniformly random matrices, Table 2 for the
Golub-Kahan matrix.  Printed beside the paper's counts, with the ratio to
R = 1; an entry that needs more than ``--cap`` transformations is reported
as a lower bound (the paper's largest entries run to 1.4e10).

    python bench/stream_tables.py --matrix random --sizes 16 32 64 128 256 512 \\
        --out bench/results/stream-table1-<date>.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from common import write_results

from cljacobi.stream_reference import golub_kahan, stream_svd

#: [SHA] Table 1 (random matrices) and Table 2 (Golub-Kahan), by (R, N).
PAPER = {
    "random": {
        1: [960, 4464, 20160, 97536, 391680, 1700608, 7332864, 33538048],
        2: [960, 4464, 20160, 97536, 391680, 1831424, 7856640, 33538048],
        4: [1080, 4960, 22176, 97536, 424320, 1962240, 7856640, 33538048],
        8: [1440, 5456, 24192, 121920, 456960, 1831424, 7856640, 33538048],
        16: [2040, 8928, 30240, 113792, 489600, 2093056, 8904192, 35634176],
        32: [None, 28768, 88704, 243840, 750720, 2485504, 9427968, 37730304],
        64: [None, None, 395136, 1853184, 5940480, 15305472, 47663616, 127863808],
        128: [None, None, None, 35259264, 84178560, 490167552, 2817914880, 14306073600],
    },
    "golub-kahan": {
        1: [960, 4464, 20160, 81280, 391680, 1962240, 8380416, 39826432],
        2: [960, 4960, 24192, 105664, 456960, 2093056, 9427968, 37730304],
        4: [1080, 4960, 24192, 105664, 456960, 2093056, 9427968, 37730304],
        8: [1560, 5952, 26208, 113792, 522240, 2223872, 9951744, 41922560],
        16: [1800, 8432, 34272, 121920, 554880, 2616320, 9951744, 44018688],
        # the paper prints 48,210,940 for N = 2048: not a multiple of the
        # 2,096,128 pairs of a sweep (23 sweeps are 48,210,944), a misprint
        32: [None, 17856, 70560, 203200, 685440, 2485504, 10475520, 48210940],
        64: [None, None, 233856, 609600, 2023680, 5232640, 12046848, 54499328],
        128: [None, None, None, 2787904, 11554560, 43823360, 142990848, 146728960],
    },
}
SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048]


def matrix(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Uniform random entries in [0, 1) ([SHA] Sect. 5), or Golub-Kahan."""
    return rng.uniform(size=(n, n)) if kind == "random" else golub_kahan(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", choices=sorted(PAPER), default="random")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES[:6])
    parser.add_argument("--widths", type=int, nargs="+", default=sorted(PAPER["random"]))
    parser.add_argument("--cap", type=float, default=3e7,
                        help="transformations at most per entry (a lower bound beyond)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    records = []
    for n in args.sizes:
        A = matrix(args.matrix, n, np.random.default_rng(args.seed))
        exact = np.linalg.svd(A, compute_uv=False)
        for R in args.widths:
            if R > n:
                continue
            pairs = n * (n - 1) // 2
            start = time.perf_counter()
            result = stream_svd(A, R, max_sweeps=max(int(args.cap // pairs), 1))
            seconds = time.perf_counter() - start
            paper = PAPER[args.matrix][R][SIZES.index(n)] if n in SIZES else None
            sigma = np.sort(result.sigma)[::-1]
            record = {"N": n, "R": R, "transformations": result.transformations,
                      "sweeps": result.sweeps, "converged": result.converged,
                      "paper": paper, "seconds": round(seconds, 2),
                      "max_rel_sigma_error": float(np.max(np.abs(sigma - exact) / exact))}
            records.append(record)
            print(record, flush=True)
    widths = sorted({r["R"] for r in records})
    sizes = sorted({r["N"] for r in records})
    by = {(r["R"], r["N"]): r for r in records}
    print(f"\n{args.matrix}: ours / paper (ratio to R = 1, ours / paper)\n")
    print("| R \\ N | " + " | ".join(map(str, sizes)) + " |")
    print("| --- " * (len(sizes) + 1) + "|")
    for R in widths:
        cells = []
        for n in sizes:
            r, base = by.get((R, n)), by.get((1, n))
            if r is None:
                cells.append("")
                continue
            ours = f"{r['transformations']:,}" + ("" if r["converged"] else "+")
            paper = f"{r['paper']:,}" if r["paper"] else "-"
            ratio = ""
            if base and r["paper"] and PAPER[args.matrix][1][SIZES.index(n)]:
                ratio = (f" ({r['transformations'] / base['transformations']:.2f} / "
                         f"{r['paper'] / PAPER[args.matrix][1][SIZES.index(n)]:.2f})")
            cells.append(f"{ours} / {paper}{ratio}")
        print(f"| {R} | " + " | ".join(cells) + " |")
    write_results(args.out, f"stream SVD transformations, {args.matrix}", "numpy (host)",
                  records)


if __name__ == "__main__":
    main()
