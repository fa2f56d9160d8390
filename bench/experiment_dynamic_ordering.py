"""Dynamic ordering of the block pairs (fewer outer steps?)

Bečka, Okša & Vajteršic ("Dynamic ordering for a parallel block-Jacobi SVD
algorithm", Parallel Computing 28, 2002) pair, at every parallel step, the
blocks whose columns are furthest from orthogonal instead of following a
cyclic table: the weight of a block pair is the norm of its off-diagonal
block of the Gram matrix, and a greedy maximum-weight matching chooses the
step's pairs.  This counts the outer steps the library's blocked step
(``cjac_block_gram``, ``cjac_block_rotate`` with one inner sweep,
``cjac_block_update``) needs to bring the largest relative cosine of two
columns, max |g_i^* g_j| / (||g_i|| ||g_j||), below 1e-4, 1e-8 and 1e-12,

* ``me``: the library's cyclic ME table of the blocks, step after step;
* ``dynamic``: each step's pairs by a greedy matching on the weights
  ``||C_PQ||_F`` of the relative cosines C (scale-invariant, so graded
  columns do not hide behind their norms), computed exactly on the host
  from the current factor,

from the same J-factor.  Step counts do not depend on the device.  The
exact weights cost a Gram matrix of all columns a step (a sweep's Gram
work every step); what the papers use instead are estimates, so the step
counts here bound what any cheaper form of the ordering could gain.

    CLJACOBI_DEVICE=0:0 python bench/experiment_dynamic_ordering.py --sizes 256 512 \\
        --json results/experiment-dynamic-ordering-pocl-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import announced_queue, write_results
from experiment_finishing_sweep import case_arguments, cases

THRESHOLDS = (1e-4, 1e-8, 1e-12)


def relative_cosines(G: np.ndarray) -> np.ndarray:
    """|g_i^* g_j| / (||g_i|| ||g_j||) off the diagonal (0 with a zero column)."""
    norms = np.linalg.norm(G, axis=0)
    scaled = G / np.where(norms > 0, norms, 1)
    C = np.abs(scaled.conj().T @ scaled)
    np.fill_diagonal(C, 0)
    return C


def greedy_pairs(C: np.ndarray, width: int) -> np.ndarray:
    """The blocks paired by decreasing weight ||C_PQ||_F, each block once
    (ties by the pair's index: the same pairs on every run)."""
    blocks = C.shape[0] // width
    weights = np.linalg.norm(C.reshape(blocks, width, blocks, width), axis=(1, 3))
    P, Q = np.triu_indices(blocks, 1)
    order = np.argsort(-weights[P, Q], kind="stable")
    free = np.ones(blocks, bool)
    pairs = []
    for p, q in zip(P[order], Q[order]):
        if free[p] and free[q]:
            free[p] = free[q] = False
            pairs.append((p, q))
    return np.array(pairs, dtype=np.int32)


def run(queue, G, signs, width: int, ordering: str, max_sweeps: int) -> dict:
    from cljacobi.host.blocked import BlockedHSVD
    from cljacobi.host.operands import download
    from cljacobi.host.pointwise import PointwiseHSVD
    from cljacobi.strategies import step_table

    pointwise = PointwiseHSVD(queue, accumulate_v=False, strategy="me", rotation=2)
    operands = pointwise.upload(G, signs, column_multiple=2 * width)
    blocked = BlockedHSVD(queue, accumulate_v=False, block_width=width, variant="bo")
    blocks = operands.columns // width
    table = step_table("me", blocks).pairs
    reached: dict[float, int | None] = dict.fromkeys(THRESHOLDS)
    largest = []
    C = relative_cosines(download(queue, operands)[0])
    for step in range(max_sweeps * len(table)):
        pairs = table[step % len(table)] if ordering == "me" else greedy_pairs(C, width)
        blocked.run_operands(operands, max_sweeps=1,
                             outer_pairs=np.ascontiguousarray(pairs[None], dtype=np.int32))
        C = relative_cosines(download(queue, operands)[0])
        largest.append(float(C.max()))
        for threshold in THRESHOLDS:
            if reached[threshold] is None and largest[-1] <= threshold:
                reached[threshold] = step + 1
        if reached[THRESHOLDS[-1]] is not None:
            break
    return {"steps_per_sweep": len(table), "steps_to": {str(t): s for t, s in reached.items()},
            "largest_cosine": largest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    case_arguments(parser)
    parser.add_argument("--max-sweeps", type=int, default=20)
    args = parser.parse_args()

    queue, device = announced_queue()
    records = []
    for family, n, G, signs, width in cases(args, np.float64):
        record = {"family": family, "n": n, "width": width, "rank": G.shape[1]}
        for ordering in ("me", "dynamic"):
            result = run(queue, G, signs, width, ordering, args.max_sweeps)
            record[ordering] = result
        records.append(record)
        print(f"{family:7s} n={n:4d} w={width:2d} steps/sweep "
              f"{record['me']['steps_per_sweep']:3d}  steps to "
              + "  ".join(f"{t:.0e}: me {record['me']['steps_to'][str(t)]} / dynamic "
                          f"{record['dynamic']['steps_to'][str(t)]}"
                          for t in THRESHOLDS), flush=True)
    write_results(args.json, "experiment_dynamic_ordering", device, records)


if __name__ == "__main__":
    main()
