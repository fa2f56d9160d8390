"""The experiment of Wang et al. (the classical Jacobi method on a GPU),
reproduced in shape: the device kernel against a sequential implementation
for a fixed number of iterations.

"Implementing the Jacobi Algorithm for Solving Eigenvalues of Symmetric
Matrices with CUDA" times its Jacobi_on_gpu on a GTX 460 against a
sequential code on one i5-760 core, for n = 1024 .. 10240 at 10000
iterations (speedup 3.02 to 13.71) and for n = 2048 and 8192 at 1000 ..
16000 iterations (a steady speedup).  Here: ``cljacobi``'s one-launch kernel
(``templates/classical.cl.mako``, eigenvalues only, as the paper) on the
device ``CLJACOBI_DEVICE`` names, against the sequential baseline
``cljacobi.classical_reference.classical_jacobi`` (numpy on the host, the
same steps and the same O(n) search cache; the paper's sequential code
scans all n(n-1)/2 entries a step, O(n^2)).  Random symmetric matrices,
uniform entries in [0, 1); the steps are exactly `iterations` (tolerance 0).

    CLJACOBI_DEVICE=nvidia python bench/bench_classical.py \\
        --out bench/results/classical-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from common import write_results

from cljacobi.classical_reference import classical_jacobi
from cljacobi.host.classical import classical_run
from cljacobi.host.device import default_queue

#: [W] Figure 8 / the text: speedups at 10000 iterations (the ends given).
PAPER = {1024: 3.02, 10240: 13.71}


def _matrix(n: int, rng: np.random.Generator) -> np.ndarray:
    X = rng.uniform(size=(n, n))
    return np.triu(X) + np.triu(X, 1).T


def _measure(queue, A: np.ndarray, iterations: int) -> dict:
    classical_run(queue, A[:64, :64], max_rotations=8, tol=0.0, compute_v=False)  # warm up
    start = time.perf_counter()
    run = classical_run(queue, A, max_rotations=iterations, tol=0.0, compute_v=False)
    device = time.perf_counter() - start
    start = time.perf_counter()
    reference = classical_jacobi(A, max_rotations=iterations, tol=0.0, compute_v=False)
    host = time.perf_counter() - start
    agree = float(np.abs(np.diagonal(run.A) - np.diagonal(reference.A)).max()
                  / np.abs(A).max())
    return {"device_seconds": device, "sequential_seconds": host, "speedup": host / device,
            "rotations": run.rotations, "max_diagonal_difference": agree}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[1024, 2048, 4096, 6144, 8192, 10240])
    parser.add_argument("--iterations", type=int, default=10000)
    parser.add_argument("--sweep-sizes", type=int, nargs="*", default=[2048, 8192])
    parser.add_argument("--sweep-iterations", type=int, nargs="*",
                        default=[1000, 2000, 4000, 8000, 16000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# device: {device}; sequential: numpy on the host (one process)")
    rng = np.random.default_rng(args.seed)
    records = []
    matrices = {}
    for n in sorted(set(args.sizes) | set(args.sweep_sizes)):
        matrices[n] = _matrix(n, rng)
    runs = [(n, args.iterations) for n in args.sizes]
    runs += [(n, it) for n in args.sweep_sizes for it in args.sweep_iterations
             if (n, it) not in runs]
    for n, iterations in runs:
        record = {"n": n, "iterations": iterations, **_measure(queue, matrices[n], iterations)}
        if iterations == 10000 and n in PAPER:
            record["paper_speedup"] = PAPER[n]
        records.append(record)
        print(record, flush=True)
    print("\n| n | iterations | device s | sequential s | speedup |")
    print("| --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['n']} | {r['iterations']} | {r['device_seconds']:.3f} | "
              f"{r['sequential_seconds']:.3f} | {r['speedup']:.2f} |")
    write_results(args.out, "classical Jacobi, fixed iterations, device vs sequential numpy",
                  device, records)


if __name__ == "__main__":
    main()
