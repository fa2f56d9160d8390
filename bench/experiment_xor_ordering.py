"""Hypercube (XOR) ordering of the block pairs: as few sweeps as the ME table?

With a power-of-two number of blocks P, step s of a sweep can pair block b
with block ``b ^ m_s`` for masks ``m_1, ..., m_{P-1}``, every nonzero mask
once: each step is a perfect matching and a sweep meets every pair of
blocks once.  Two consecutive steps with masks m and m' then split the
blocks into groups of four, ``{b, b^m, b^m', b^m^m'}``, within which the
first step's pairs (b, b^m), (b^m', b^m^m') become the second step's
(b, b^m'), (b^m, b^m^m').  That is what a kernel would need to compute the
next step's Gram matrices while it updates the current step's block pairs
(the update's rows of four blocks are the next Gram's rows), saving the
Gram kernel's pass over G.  This counts the blocked sweeps until the
library's blocked driver stops (a sweep without a big rotation) with

* ``me``: the library's outer table (``OUTER_STRATEGY``, two alternating
  sweeps), as ``eig_indefinite`` runs it;
* ``xor``: the masks 1, 2, ..., P - 1 in order;
* ``xor-gray``: the masks in Gray-code order, ``i ^ (i >> 1)``, consecutive
  masks differing in one bit;
* ``xor-alternating``: the masks 1, ..., P - 1 in even sweeps and
  P - 1, ..., 1 in odd ones (sweep by sweep, as the ME table alternates);

on the same J-factor, columns padded to a power-of-two number of blocks
for all three.  Sweep counts do not depend on the device.

    CLJACOBI_DEVICE=0:0 python bench/experiment_xor_ordering.py --sizes 256 512 \\
        --widths 8 16 --json results/experiment-xor-ordering-pocl-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import announced_queue, write_results
from experiment_finishing_sweep import case_arguments, cases

ORDERINGS = ("me", "xor", "xor-gray", "xor-alternating")


def xor_table(blocks: int, gray: bool) -> np.ndarray:
    """One sweep of the hypercube ordering: ``(blocks - 1, blocks / 2, 2)``,
    step s pairing b < b ^ m_s in increasing b."""
    if blocks < 2 or blocks & (blocks - 1):
        raise ValueError(f"the XOR ordering needs a power-of-two number of blocks, not {blocks}")
    steps = []
    for i in range(1, blocks):
        mask = i ^ (i >> 1) if gray else i
        steps.append([(b, b ^ mask) for b in range(blocks) if b < b ^ mask])
    return np.asarray(steps, dtype=np.int32)


def run(queue, G, signs, width: int, ordering: str, variant: str) -> dict:
    from cljacobi.host.blocked import BlockedHSVD
    from cljacobi.host.pointwise import PointwiseHSVD

    blocks = 1 << max(1, int(np.ceil(np.log2(-(-G.shape[1] // width)))))
    pointwise = PointwiseHSVD(queue, accumulate_v=False, strategy="me", rotation=2)
    operands = pointwise.upload(G, signs, column_multiple=blocks * width)
    assert operands.columns == blocks * width, (operands.columns, blocks, width)
    blocked = BlockedHSVD(queue, accumulate_v=False, block_width=width, variant=variant)
    if ordering == "xor-alternating":
        table = xor_table(blocks, False)
        rotations = []
        for sweep in range(60):
            stats = blocked.run_operands(
                operands, max_sweeps=1,
                outer_pairs=np.ascontiguousarray(table if sweep % 2 == 0 else table[::-1]))
            rotations += stats.rotations_per_sweep
            if stats.converged:
                break
    else:
        table = None if ordering == "me" else xor_table(blocks, ordering == "xor-gray")
        stats = blocked.run_operands(operands, max_sweeps=60, outer_pairs=table)
        rotations = list(stats.rotations_per_sweep)
    state = pointwise.run_operands(operands, max_sweeps=60, fetch=False)
    return {"blocks": blocks, "blocked_sweeps": len(rotations),
            "blocked_rotations": rotations,
            "pointwise_sweeps": state.stats.sweeps,
            "values": np.sort(state.signs * state.d)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    case_arguments(parser)
    parser.add_argument("--variant", default="offdiag", choices=["bo", "offdiag"])
    args = parser.parse_args()

    queue, device = announced_queue()
    records = []
    for family, n, G, signs, width in cases(args, np.float64):
        record = {"family": family, "n": n, "width": width, "rank": G.shape[1],
                  "variant": args.variant}
        for ordering in ORDERINGS:
            record[ordering] = run(queue, G, signs, width, ordering, args.variant)
        reference = record["me"].pop("values")
        for ordering in ORDERINGS[1:]:
            values = record[ordering].pop("values")
            scale = np.maximum(np.abs(reference), np.finfo(float).tiny)
            record[ordering]["largest_relative_difference_to_me"] = float(
                np.max(np.abs(values - reference) / scale))
        records.append(record)
        print(f"{family:7s} n={n:4d} w={width:2d} blocks {record['me']['blocks']:3d}  "
              + "  ".join(f"{o}: {record[o]['blocked_sweeps']} + {record[o]['pointwise_sweeps']}"
                          for o in ORDERINGS)
              + "  values vs me: "
              + " ".join(f"{record[o]['largest_relative_difference_to_me']:.1e}"
                         for o in ORDERINGS[1:]), flush=True)
    write_results(args.json, "experiment_xor_ordering", device, records)


if __name__ == "__main__":
    main()
