"""The experiment of Wang et al. (the classical Jacobi method on a GPU),
reproduced in shape: the device kernel against a sequential implementation
for a fixed number of iterations.

"Implementing the Jacobi Algorithm for Solving Eigenvalues of Symmetric
Matrices with CUDA" times its Jacobi_on_gpu on a GTX 460 against a
sequential code on one i5-760 core, for n = 1024 .. 10240 at 10000
iterations (speedup 3.02 to 13.71) and for n = 2048 and 8192 at 1000 ..
16000 iterations (a steady speedup).  Here: ``cljacobi``'s one-launch kernel
(``templates/classical.cl.mako``, eigenvalues only, as the paper) on the
device ``CLJACOBI_DEVICE`` names (on a GPU three launches a step over the
whole device; ``one_launch_seconds``: the paper's single kernel, one
work-group), against the sequential baseline
``cljacobi.classical_reference.classical_jacobi`` (numpy on the host, the
same steps and the same O(n) search cache; the paper's sequential code
scans all n(n-1)/2 entries a step, O(n^2)).  Random symmetric matrices,
uniform entries in [0, 1); the steps are exactly `iterations` (tolerance 0).
The sequential runs follow the device runs, ``--jobs`` processes at a time
(one core each).

    CLJACOBI_DEVICE=nvidia python bench/bench_classical.py \\
        --out bench/results/classical-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time
from pathlib import Path

import numpy as np
from common import write_results

from cljacobi.classical_reference import classical_jacobi
from cljacobi.host.classical import classical_run
from cljacobi.host.device import default_queue

#: [W] Figure 8 / the text: speedups at 10000 iterations (the ends given).
PAPER = {1024: 3.02, 10240: 13.71}


def _matrix(n: int, seed: int) -> np.ndarray:
    X = np.random.default_rng([seed, n]).uniform(size=(n, n))
    return np.triu(X) + np.triu(X, 1).T


def _sequential(n: int, iterations: int, seed: int) -> tuple[float, np.ndarray]:
    """Seconds of the sequential baseline (one process) and its diagonal."""
    A = _matrix(n, seed)
    start = time.perf_counter()
    reference = classical_jacobi(A, max_rotations=iterations, tol=0.0, compute_v=False)
    return time.perf_counter() - start, np.diagonal(reference.A).copy()


def _device(queue, A: np.ndarray, iterations: int, launches: str) -> tuple[float, object]:
    classical_run(queue, A[:64, :64], max_rotations=8, tol=0.0, compute_v=False,
                  launches=launches)  # warm up
    start = time.perf_counter()
    run = classical_run(queue, A, max_rotations=iterations, tol=0.0, compute_v=False,
                        launches=launches)
    return time.perf_counter() - start, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[1024, 2048, 4096, 6144, 8192, 10240])
    parser.add_argument("--iterations", type=int, default=10000)
    parser.add_argument("--sweep-sizes", type=int, nargs="*", default=[2048, 8192])
    parser.add_argument("--sweep-iterations", type=int, nargs="*",
                        default=[1000, 2000, 4000, 8000, 16000])
    parser.add_argument("--one-launch-max", type=int, default=4096,
                        help="also time the one-launch kernel up to this n")
    parser.add_argument("--jobs", type=int, default=1,
                        help="sequential baselines run in this many processes at once "
                             "(each one process on one core, after the device runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# device: {device}; sequential: numpy on the host, one process per run, "
          f"{args.jobs} at a time")
    runs = [(n, args.iterations) for n in args.sizes]
    runs += [(n, it) for n in args.sweep_sizes for it in args.sweep_iterations
             if (n, it) not in runs]
    records = []
    diagonals = {}
    for n, iterations in runs:
        A = _matrix(n, args.seed)
        seconds, run = _device(queue, A, iterations, "auto")
        record = {"n": n, "iterations": iterations, "device_seconds": seconds,
                  "rotations": run.rotations}
        if n <= args.one_launch_max:
            one, one_run = _device(queue, A, iterations, "one")
            record["one_launch_seconds"] = one
            record["launch_modes_bitwise_equal"] = bool(np.array_equal(one_run.A, run.A))
        if iterations == 10000 and n in PAPER:
            record["paper_speedup"] = PAPER[n]
        diagonals[n, iterations] = np.diagonal(run.A).copy()
        records.append(record)
        print(record, flush=True)
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_sequential, n, it, args.seed) for n, it in runs]
        for record, future in zip(records, futures):
            host, diagonal = future.result()
            scale = np.abs(_matrix(record["n"], args.seed)).max()
            record.update(sequential_seconds=host, speedup=host / record["device_seconds"],
                          max_diagonal_difference=float(np.abs(
                              diagonals[record["n"], record["iterations"]] - diagonal).max()
                              / scale))
            print(record, flush=True)
    print("\n| n | iterations | device s | one launch s | sequential s | speedup | paper |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['n']} | {r['iterations']} | {r['device_seconds']:.3f} | "
              f"{r.get('one_launch_seconds', float('nan')):.3f} | "
              f"{r['sequential_seconds']:.3f} | {r['speedup']:.2f} | "
              f"{r.get('paper_speedup', '')} |")
    write_results(args.out, "classical Jacobi, fixed iterations, device vs sequential numpy",
                  device, records)


if __name__ == "__main__":
    main()
