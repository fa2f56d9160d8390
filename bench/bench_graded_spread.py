"""How accurately the data determine the eigenvalues of the graded family,
beside cljacobi's error on it.

For ``M = D A D`` of ``bench_eig.py --family graded`` the reference is the
magnitudes of the eigenvalues by LAPACK ``dgejsv``.  Every entry of M is
moved by a random relative ``--probe`` (1e-15) and the reference recomputed:
the largest relative change over ``--trials`` perturbations is what the data
determine (a floor no algorithm working on M in float64 can beat by much),
and cljacobi's relative error is reported beside it, eigenvalue by
eigenvalue (the largest ratio).

    CLJACOBI_DEVICE=0:0 python bench/bench_graded_spread.py --sizes 1024 2048 \\
        --out bench/results/graded-spread-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_eig  # noqa: E402

import cljacobi  # noqa: E402


def measure(n: int, *, seed: int, probe: float, trials: int, factorization: str) -> dict:
    rng = np.random.default_rng(seed)
    A, d = bench_eig.graded_family(n, rng)
    M = d[:, None] * A * d[None, :]
    reference = bench_eig._magnitudes(M)
    spread = np.zeros(n)
    for trial in range(trials):
        moved = M * (1 + probe * np.random.default_rng([seed, trial]).uniform(-1, 1, M.shape))
        moved = (moved + moved.T) / 2
        spread = np.maximum(spread, np.abs(bench_eig._magnitudes(moved) - reference) / reference)
    start = time.perf_counter()
    w = cljacobi.eig_indefinite(M, eigvals_only=True, factorization=factorization)
    seconds = time.perf_counter() - start
    error = np.abs(np.sort(np.abs(w))[::-1] - reference) / reference
    return {
        "n": n, "probe": probe, "trials": trials, "factorization": factorization,
        "seconds": seconds,
        "max_spread": float(spread.max()), "median_spread": float(np.median(spread)),
        "max_error": float(error.max()), "median_error": float(np.median(error)),
        "max_error_over_spread": float(np.max(error / np.maximum(spread, np.finfo(float).eps))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probe", type=float, default=1e-15)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--factorization", default="auto")
    parser.add_argument("--out")
    args = parser.parse_args()
    records = []
    device = cljacobi.host.device.resolve_queue(None).device.name.strip()
    for n in args.sizes:
        record = measure(n, seed=args.seed, probe=args.probe, trials=args.trials,
                         factorization=args.factorization)
        print(json.dumps(record), flush=True)
        records.append(record)
        if args.out:  # after every size: a run cut short keeps what it measured
            Path(args.out).write_text(json.dumps({
                "benchmark": "graded D A D: data spread beside cljacobi's error",
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "device": device, "records": records}, indent=1))


if __name__ == "__main__":
    main()
