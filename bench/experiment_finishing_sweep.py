"""Can blocked sweeps replace the finishing pointwise sweep? (sweep counts)

The blocked variants stop at the first blocked sweep without a big
transformation and hand over to pointwise sweeps, the last of which
rotates nothing: it certifies that every pair of columns passes the
relative orthogonality test.  A blocked sweep also meets every pair of
columns (inside the block pairs' inner sweeps, with the same test on their
Gram matrix), so a blocked sweep without any rotation certifies the same.
This measures, from the same factor, on any device (sweep counts do not
depend on it):

* ``current``: blocked sweeps until one without a big transformation, then
  pointwise sweeps until one without a big rotation (the library's rule);
* ``blocked to zero``: blocked sweeps until one without a big
  transformation, then more blocked sweeps (one at a time) until one
  without any rotation, then the pointwise sweeps, whose rotations show
  whether that certificate held;

with the rotations of every sweep and the largest relative difference of
the eigenvalues ``j d`` of the two schemes.  With the device seconds of a
blocked and a pointwise sweep (bench/README.md: 0.12 and 0.31 s for
complex n = 4096 on the H200) this tells whether the change pays.

    CLJACOBI_DEVICE=0:0 python bench/experiment_finishing_sweep.py --sizes 256 512 \\
        --json results/experiment-finishing-sweep-pocl-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import announced_queue, write_results


def factor(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scaled J-factor of M in sign order (as eig_indefinite sweeps it)."""
    from cljacobi._solve import ldexp
    from cljacobi.factorization import j_factorize
    from cljacobi.scaling import factor_shift

    result = j_factorize(M)
    G, signs = result.G, result.signs
    order = np.argsort(-signs, kind="stable")
    G, signs = G[:, order], signs[order]
    return ldexp(G, factor_shift(G)), signs


def matrix(family: str, n: int, dtype, rng) -> np.ndarray:
    from cljacobi.matrices import graded

    if family == "graded":
        return graded(n, rng=rng, dtype=dtype)[0]
    X = rng.standard_normal((n, n)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        X = X + 1j * rng.standard_normal((n, n))
    if family == "rank":  # rank n/2, indefinite
        r = n // 2
        Y = X[:, :r] * np.where(np.arange(r) % 2 == 0, 1.0, -1.0)
        return Y @ X[:, :r].conj().T
    return X + X.conj().T


def case_arguments(parser: argparse.ArgumentParser) -> None:
    """The factors' arguments both experiments take: sizes, families, widths."""
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    parser.add_argument("--families", nargs="+", default=["random", "graded", "rank"])
    parser.add_argument("--widths", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--json", type=Path)


def cases(args: argparse.Namespace, dtype):
    """``(family, n, G, signs, width)`` for the arguments of :func:`case_arguments`:
    the J-factor of each family's matrix of each size (seeded by n), at each width."""
    for family in args.families:
        for n in args.sizes:
            G, signs = factor(matrix(family, n, dtype, np.random.default_rng(n)))
            for width in args.widths:
                yield family, n, G, signs, width


def run(queue, G, signs, width: int, to_zero: bool, max_extra: int) -> dict:
    from cljacobi.host.blocked import BlockedHSVD
    from cljacobi.host.pointwise import PointwiseHSVD

    pointwise = PointwiseHSVD(queue, accumulate_v=False, strategy="mm", rotation=2)
    operands = pointwise.upload(G, signs, column_multiple=2 * width)
    blocked = BlockedHSVD(queue, accumulate_v=False, block_width=width, variant="bo")
    stats = blocked.run_operands(operands, max_sweeps=60)
    blocked_rotations = list(stats.rotations_per_sweep)
    extra = 0
    while to_zero and blocked_rotations[-1] and extra < max_extra:
        blocked_rotations += blocked.run_operands(operands, max_sweeps=1).rotations_per_sweep
        extra += 1
    state = pointwise.run_operands(operands, max_sweeps=60, fetch=False)
    return {"blocked_sweeps": len(blocked_rotations), "extra_blocked_sweeps": extra,
            "blocked_rotations": blocked_rotations,
            "pointwise_sweeps": state.stats.sweeps,
            "pointwise_rotations": list(state.stats.rotations_per_sweep),
            "values": np.sort(state.signs * state.d)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    case_arguments(parser)
    parser.add_argument("--dtypes", nargs="+", default=["float64", "complex128"])
    parser.add_argument("--max-extra", type=int, default=5)
    args = parser.parse_args()

    queue, device = announced_queue()
    records = []
    for dtype in args.dtypes:
        for family, n, G, signs, width in cases(args, dtype):
            current = run(queue, G, signs, width, False, 0)
            zero = run(queue, G, signs, width, True, args.max_extra)
            nonzero = current["values"] != 0
            difference = float(np.max(
                np.abs(zero["values"] - current["values"])[nonzero]
                / np.abs(current["values"][nonzero])))
            record = {"dtype": dtype, "family": family, "n": n, "width": width,
                      "rank": G.shape[1], "relative_difference": difference,
                      **{f"current_{k}": v for k, v in current.items() if k != "values"},
                      **{f"zero_{k}": v for k, v in zero.items() if k != "values"}}
            records.append(record)
            print(f"{dtype:10s} {family:7s} n={n:4d} w={width:2d}  current: "
                  f"{current['blocked_sweeps']} blocked + "
                  f"{current['pointwise_sweeps']} pointwise "
                  f"{current['pointwise_rotations']}  |  to zero: "
                  f"{zero['blocked_sweeps']} blocked (+{zero['extra_blocked_sweeps']}, "
                  f"last {zero['blocked_rotations'][-3:]}) + "
                  f"{zero['pointwise_sweeps']} pointwise "
                  f"{zero['pointwise_rotations']}  |  values differ {difference:.1e}",
                  flush=True)
    write_results(args.json, "experiment_finishing_sweep", device, records)


if __name__ == "__main__":
    main()
