"""Which column pivoting does gsvd's shortening need?  A measured experiment.

[NS] Sect. 2 shortens by two column-pivoted QRs (LAPACK xGEQP3, whose
pivoting keeps half of its flops in matrix-vector form: 1.9 s of the 4.5 s
host factorization at n = 4096 on the H200 host, against 0.9 s unpivoted).
This script runs ``cljacobi.gsvd`` on the same pairs with the shortening
replaced by cheaper ones, and reports time, sweeps and the errors:

* ``xgeqp3 both``: gsvd as shipped ([NS] Sect. 2);
* ``xgeqp3 A, xgeqrf B``: B's QR unpivoted (``P_2 = I``);
* ``norm-sorted, xgeqrf``: both QRs unpivoted, A's columns sorted by
  decreasing norm first (the cheap pivoting of one-sided Jacobi codes).

    CLJACOBI_DEVICE=nvidia python bench/experiment_gsvd_shortening.py \\
        --sizes 2048 4096 --out bench/results/gsvd-shortening-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg
from bench_gsvd import graded_pair, paper_pair
from common import write_results

import cljacobi

GSVD = sys.modules["cljacobi.gsvd"]
SHIPPED = GSVD._shorten


def _unpivoted_b(A, B, *, compute_q):
    """xGEQP3 for A as shipped, B P_1 by xGEQRF (P_2 = I); square pairs only."""
    mode = "raw" if compute_q else "r"
    first = scipy.linalg.qr(A, mode=mode, pivoting=True, overwrite_a=True, check_finite=False)
    R_F, p_1 = first[-2], first[-1]
    second = scipy.linalg.qr(B[:, p_1], mode=mode, overwrite_a=True, check_finite=False)
    R_G = second[-1] if compute_q else second[0]
    n = A.shape[1]
    identity = np.arange(n)
    return GSVD._Shortened(np.asfortranarray(R_F), np.asfortranarray(R_G[:n]),
                           first[0] if compute_q else None, second[0] if compute_q else None,
                           p_1, None, identity, A.shape[0])


def _norm_sorted(A, B, *, compute_q):
    """Both unpivoted, A's columns sorted by decreasing norm first."""
    mode = "raw" if compute_q else "r"
    p_1 = np.argsort(-np.linalg.norm(A, axis=0), kind="stable")
    first = scipy.linalg.qr(A[:, p_1], mode=mode, overwrite_a=True, check_finite=False)
    second = scipy.linalg.qr(B[:, p_1], mode=mode, overwrite_a=True, check_finite=False)
    R_F = first[-1] if compute_q else first[0]
    R_G = second[-1] if compute_q else second[0]
    n = A.shape[1]
    return GSVD._Shortened(np.asfortranarray(R_F[:n]), np.asfortranarray(R_G[:n]),
                           first[0] if compute_q else None, second[0] if compute_q else None,
                           p_1, None, np.arange(n), A.shape[0])


VARIANTS = {"xgeqp3 both": SHIPPED, "xgeqp3 A, xgeqrf B": _unpivoted_b,
            "norm-sorted, xgeqrf": _norm_sorted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--families", nargs="+", default=["paper", "graded"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = cljacobi.host.device.default_queue().device.name.strip()
    print(f"# cljacobi device: {device}")
    records = []
    for family in args.families:
        for n in args.sizes:
            A, B, exact = {"paper": paper_pair, "graded": graded_pair}[family](
                n, "float64", np.random.default_rng(args.seed))
            for name, shorten in VARIANTS.items():
                GSVD._shorten = shorten
                try:
                    start = time.perf_counter()
                    (U, V, C, S, X), info = cljacobi.gsvd(A, B, return_info=True)
                    seconds = time.perf_counter() - start
                finally:
                    GSVD._shorten = SHIPPED
                record = {
                    "family": family, "n": n, "shortening": name, "seconds": seconds,
                    "split": {k: round(v, 4) for k, v in info.seconds.items()},
                    "sweeps": info.sweeps,
                    "sigma_error": float(np.max(np.abs(C / S - exact) / exact)),
                    "residual_A": float(np.linalg.norm(A - U * C @ X.T) / np.linalg.norm(A)),
                    "residual_B": float(np.linalg.norm(B - V * S @ X.T) / np.linalg.norm(B)),
                }
                records.append(record)
                print(record, flush=True)
    write_results(args.out, "gsvd shortening experiment", device, records)


if __name__ == "__main__":
    main()
