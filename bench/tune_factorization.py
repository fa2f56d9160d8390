"""Bunch-Parlett on the device: kernel variants timed side by side.

For every (row tiles per work-group, row tiles whose entries a work-item
loads at once) the same matrix of the 2011 paper's family is factored on a
profiling queue; the wall seconds and the device seconds of the step
kernel are recorded.  Used to choose ``UPDATE_STRIP`` and ``LOADS_AHEAD`` of
``cljacobi.host.factorization`` (the pivots do not depend on them: every
variant's factor is compared bit for bit).

    CLJACOBI_DEVICE=nvidia python bench/tune_factorization.py --n 4096 \
        --out bench/results/tune-factorization-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
from common import profiling_queue
from profile_kernels import Recorder

from cljacobi.host import factorization
from cljacobi.matrices import paper_spectrum, with_spectrum

#: (UPDATE_STRIP, LOADS_AHEAD) pairs to time.
DEFAULT_VARIANTS = [(32, 1), (32, 2), (32, 4), (32, 8), (16, 4), (64, 4)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    queue = profiling_queue()
    rng = np.random.default_rng(0)
    M = with_spectrum(paper_spectrum(args.n, rng=rng), rng=rng)
    defaults = factorization.UPDATE_STRIP, factorization.LOADS_AHEAD
    records, reference = [], None
    print("| strip | loads ahead | wall s | step kernel s |")
    print("|---|---|---|---|")
    try:
        for strip, ahead in DEFAULT_VARIANTS:
            factorization.UPDATE_STRIP = strip
            factorization.LOADS_AHEAD = ahead
            factorization.factor_on_device(M[:256, :256], queue)  # builds the program
            with Recorder() as recorder:
                start = time.perf_counter()
                factor = factorization.factor_on_device(M, queue)
                wall = time.perf_counter() - start
            kernels = recorder.totals()
            G = factor.to_host().G
            same = reference is None or np.array_equal(G, reference)
            reference = G if reference is None else reference
            record = {"update_strip": strip, "loads_ahead": ahead,
                      "wall_seconds": wall, "kernels": kernels, "same_factor": bool(same)}
            records.append(record)
            print(f"| {strip} | {ahead} | {wall:.3f} "
                  f"| {kernels['cjac_bp_step']['seconds']:.3f} |"
                  + ("" if same else "  (factor differs!)"))
    finally:
        factorization.UPDATE_STRIP, factorization.LOADS_AHEAD = defaults
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": args.n, "records": records}, indent=1))


if __name__ == "__main__":
    main()
