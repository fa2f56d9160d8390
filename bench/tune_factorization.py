"""Bunch-Parlett on the device: kernel variants timed side by side.

For every variant (row tiles per work-group, row tiles whose entries a
work-item loads at once, and the work-groups of the one launch that runs
every step, 0 for one launch a step) the same matrix of the 2011 paper's
family is factored: the median wall seconds of `--repeat` runs on a plain
queue, then one run on a profiling queue for the device seconds of the
kernels.  Used to choose ``UPDATE_STRIP``, ``LOADS_AHEAD`` and
``RESIDENT_GROUPS_PER_UNIT`` of ``cljacobi.host.factorization`` (the pivots
do not depend on them: every variant's factor is compared bit for bit).

    CLJACOBI_DEVICE=nvidia python bench/tune_factorization.py --n 4096 \
        --variants 32:8:0 32:8:cu 16:8:cu --out bench/results/tune-factorization-<device>-<date>.json

A variant is ``strip:ahead:groups[:tile[:tasks]]``: the third field a
number of work-groups, or ``cu`` (one a compute unit), ``cu/2`` or ``2cu``;
the optional fourth the side of the work-group, the fifth the tasks a
work-group at least gets in a step (``TASKS_PER_GROUP``).  Strip and tile
are ``UPDATE_STRIP`` and ``TILE`` for one launch a step, ``RESIDENT_STRIP``
and ``RESIDENT_TILE`` for one launch; left out, the module's values.
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

#: Variants timed by default: one launch a step, and one launch for all.
DEFAULT_VARIANTS = ["32:8:0", "32:8:cu"]


def _groups(field: str, units: int) -> int:
    return {"cu": units, "cu/2": units // 2, "2cu": 2 * units}.get(field) or int(field)


def _launch_bands(recorder: Recorder, n: int) -> dict[str, float]:
    """Mean device microseconds of a step launch (one a step) by the
    trailing order it updates, in bands of n / 4."""
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
    parser.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS,
                        help="strip:ahead:groups")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    profiled = profiling_queue()
    queue = cl.CommandQueue(profiled.context, profiled.device)
    units = queue.device.max_compute_units
    rng = np.random.default_rng(0)
    M = with_spectrum(paper_spectrum(args.n, rng=rng), rng=rng,
                      dtype=np.dtype(args.dtype))
    step_names = ("UPDATE_STRIP", "LOADS_AHEAD", "TILE", "TASKS_PER_GROUP")
    resident_names = ("RESIDENT_STRIP", "LOADS_AHEAD", "RESIDENT_TILE", "TASKS_PER_GROUP")
    defaults = {name: getattr(factorization, name) for name in step_names + resident_names}
    records, reference = [], None
    print(f"n = {args.n} {args.dtype} on {queue.device.name.strip()} ({units} compute units)")
    print("| strip | loads ahead | work-groups | tile | tasks | wall s | kernel s |")
    print("|---|---|---|---|---|---|---|")
    try:
        for variant in args.variants:
            fields = variant.split(":")
            groups = _groups(fields[2], units)
            names = resident_names if groups else step_names
            values = [int(field) for field in fields[:2] + fields[3:]]
            values += [defaults[name] for name in names[len(values):]]
            for name, value in zip(names, values):
                setattr(factorization, name, value)
            strip, ahead, tile, tasks = values
            factorization.factor_on_device(M[:256, :256], queue, resident_groups=groups)
            walls = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                factor = factorization.factor_on_device(M, queue, resident_groups=groups)
                queue.finish()
                walls.append(time.perf_counter() - start)
            with Recorder() as recorder:
                factorization.factor_on_device(M, profiled, resident_groups=groups)
            kernels = recorder.totals()
            bands = _launch_bands(recorder, args.n) if not groups else {}
            G = factor.to_host().G
            same = reference is None or np.array_equal(G, reference)
            reference = G if reference is None else reference
            kernel = kernels.get("cjac_bp_steps" if groups else "cjac_bp_step", {})
            record = {"update_strip": strip, "loads_ahead": ahead, "tile": tile,
                      "tasks_per_group": tasks, "resident_groups": groups, "wall_seconds": statistics.median(walls),
                      "all_wall_seconds": walls, "kernels": kernels,
                      "same_factor": bool(same), "step_us_by_trailing": bands}
            records.append(record)
            print(f"| {strip} | {ahead} | {groups} | {tile} | {tasks} "
                  f"| {record['wall_seconds']:.4f} "
                  f"| {kernel.get('seconds', float('nan')):.4f} |"
                  + ("" if same else "  (factor differs!)")
                  + "".join(f" {band}: {us:.1f} us" for band, us in bands.items()), flush=True)
    finally:
        for name, value in defaults.items():
            setattr(factorization, name, value)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": args.n, "dtype": args.dtype, "records": records}, indent=1))


if __name__ == "__main__":
    main()
