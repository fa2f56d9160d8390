"""Bunch-Parlett on the device: kernel variants timed side by side.

For every variant (row tiles per work-group, row tiles whose entries a
work-item loads at once) the same matrix of the 2011 paper's family, made
exactly symmetric and uploaded by rows as ``eig_indefinite`` does, is
factored: the median wall seconds of `--repeat` runs on a plain queue, then
one run on a profiling queue for the device seconds of the step kernel and
its mean microseconds a launch by the trailing order the launch updates (in
bands of n / 4).  Used to choose ``UPDATE_STRIP`` and ``LOADS_AHEAD`` of
``cljacobi.host.factorization`` (the pivots do not depend on them: every
variant's factor is compared bit for bit).

    CLJACOBI_DEVICE=nvidia python bench/tune_factorization.py --n 4096 \
        --variants 32:8 32:4 16:8 --out bench/results/tune-factorization-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import profiling_queue
from profile_kernels import Recorder

from cljacobi.host import factorization
from cljacobi.matrices import paper_spectrum, with_spectrum

#: strip:ahead variants timed by default.
DEFAULT_VARIANTS = ["32:1", "32:2", "32:4", "32:8", "16:4", "64:4"]


def _launch_bands(recorder: Recorder, n: int) -> dict[str, float]:
    """Mean device microseconds of a step launch by the trailing order it
    updates, in bands of n / 4."""
    steps = [event for label, event in recorder.events if label == "cjac_bp_step"]
    bands: dict[int, list[float]] = {}
    for k, event in enumerate(steps):
        low = min((n - k) * 4 // n, 3) * n // 4
        bands.setdefault(low, []).append((event.profile.end - event.profile.start) * 1e-3)
    return {f"{low}-{low + n // 4}": sum(us) / len(us) for low, us in sorted(bands.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--dtype", default="float64", choices=["float64", "complex128"])
    parser.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS, help="strip:ahead")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    profiled = profiling_queue()
    queue = cl.CommandQueue(profiled.context, profiled.device)
    rng = np.random.default_rng(0)
    M = with_spectrum(paper_spectrum(args.n, rng=rng), rng=rng, dtype=np.dtype(args.dtype))
    M = (M + M.conj().T) / 2  # exactly Hermitian: uploaded by rows

    def factor(on: cl.CommandQueue, matrix: np.ndarray) -> factorization.DeviceJFactor:
        return factorization.factor_on_device(matrix, on, exactly_hermitian=True)

    defaults = factorization.UPDATE_STRIP, factorization.LOADS_AHEAD
    records, reference = [], None
    print(f"n = {args.n} {args.dtype} on {queue.device.name.strip()}")
    print("| strip | loads ahead | wall s | step kernel s | us a launch by trailing order |")
    print("|---|---|---|---|---|")
    try:
        for variant in args.variants:
            strip, ahead = (int(field) for field in variant.split(":"))
            factorization.UPDATE_STRIP, factorization.LOADS_AHEAD = strip, ahead
            factor(queue, np.ascontiguousarray(M[:256, :256]))  # builds the program
            walls = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                result = factor(queue, M)
                queue.finish()
                walls.append(time.perf_counter() - start)
            with Recorder() as recorder:
                factor(profiled, M)
            kernels = recorder.totals()
            bands = _launch_bands(recorder, args.n)
            G = result.to_host().G
            same = reference is None or np.array_equal(G, reference)
            reference = G if reference is None else reference
            record = {"update_strip": strip, "loads_ahead": ahead,
                      "wall_seconds": statistics.median(walls), "all_wall_seconds": walls,
                      "kernels": kernels, "step_us_by_trailing": bands,
                      "same_factor": bool(same)}
            records.append(record)
            print(f"| {strip} | {ahead} | {record['wall_seconds']:.4f} "
                  f"| {kernels['cjac_bp_step']['seconds']:.4f} | "
                  + ", ".join(f"{band}: {us:.1f}" for band, us in bands.items()) + " |"
                  + ("" if same else "  (factor differs!)"), flush=True)
    finally:
        factorization.UPDATE_STRIP, factorization.LOADS_AHEAD = defaults
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": args.n, "dtype": args.dtype, "records": records}, indent=1))


if __name__ == "__main__":
    main()
