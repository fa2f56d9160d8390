"""Kernel variants of the blocked method, timed side by side in one process.

Every variant (block width w, Gram micro-tile, Gram row slices, rotate
work-group size, rows per Gram tile, the update kernel's tile rows and
register micro-tile) runs the same number of blocked sweeps
on the same n x n factor with a half positive, half negative signature, on a
profiling queue; the device seconds per sweep of each kernel and the GFLOP/s
of the Gram and update kernels (each 4 n^3 flops per sweep) are recorded.
Used to choose the defaults of ``cljacobi.host.blocked``.

    CLJACOBI_DEVICE=nvidia python bench/tune_blocked.py --n 4096 \
        --out bench/results/tune-blocked-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyopencl as cl
from profile_kernels import Recorder

from cljacobi.host.blocked import BlockedHSVD
from cljacobi.host.device import default_queue
from cljacobi.host.operands import upload

#: (w, gram_micro_tile, gram_row_slices, rotate_work_group_size, tile_rows,
#: update) with update = (update_tile_rows, update_micro_rows,
#: update_micro_cols); None takes the library default (for update: all three).
#: The update variants fit 48 KiB of local memory: W (2w x 2w) and the tile
#: (update_tile_rows x 2w) together, 48 KiB exactly for 32 rows at w = 32.
DEFAULT_VARIANTS = [
    (8, 4, None, None, None, None), (8, 2, None, None, None, None),
    (8, 4, 1, None, None, None), (8, 4, 2, None, None, None),
    (8, 4, None, 32, None, None), (8, 4, None, None, 64, None),
    (8, 4, None, None, None, (64, 2, 4)),
    (16, 4, None, None, None, None), (16, 2, None, None, None, None),
    (16, 4, 1, None, None, None), (16, 4, 2, None, None, None),
    (16, 4, 4, None, None, None), (16, 4, None, 64, None, None),
    (16, 4, None, 128, None, None), (16, 4, None, None, 64, None),
    (16, 4, None, None, None, (32, 2, 4)), (16, 4, None, None, None, (16, 4, 4)),
    (16, 4, None, None, None, (64, 2, 4)), (16, 4, None, None, None, (64, 4, 4)),
    (32, 4, None, None, None, None), (32, 4, None, 512, None, None),
    (32, 4, None, 1024, None, None), (32, 8, None, None, None, None),
    (32, 4, None, None, None, (32, 2, 4)), (32, 4, None, None, None, (16, 4, 4)),
    (32, 4, None, None, None, (16, 2, 4)), (32, 4, None, None, None, (32, 4, 8)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    base = default_queue()
    queue = cl.CommandQueue(
        base.context, base.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    n = args.n
    rng = np.random.default_rng(0)
    G = np.asfortranarray(rng.standard_normal((n, n)))
    signs = np.where(np.arange(n) < n // 2, 1, -1).astype(np.int8)
    records = []
    print("| w | micro-tile | slices | rotate wg | tile rows | update tile | gram s "
          "| rotate s | update s | gram GFLOP/s | update GFLOP/s | sweep s |")
    print("|---" * 12 + "|")
    for w, micro, slices, rotate_wg, tile_rows, update in DEFAULT_VARIANTS:
        update_rows, update_micro_rows, update_micro_cols = update or (None, None, None)
        try:
            driver = BlockedHSVD(queue, accumulate_v=False, block_width=w, variant="bo",
                                 gram_micro_tile=micro, gram_row_slices=slices,
                                 rotate_work_group_size=rotate_wg, tile_rows=tile_rows,
                                 update_tile_rows=update_rows,
                                 update_micro_rows=update_micro_rows,
                                 update_micro_cols=update_micro_cols)
            warm = upload(queue, G[:, :4 * w], signs[:4 * w], accumulate_v=False,
                          column_multiple=2 * w, dtype=np.float64)
            driver.run_operands(warm, max_sweeps=1)  # builds the program
            operands = upload(queue, G, signs, accumulate_v=False, column_multiple=2 * w,
                              dtype=np.float64)
            with Recorder() as recorder:
                stats = driver.run_operands(operands, max_sweeps=args.sweeps)
        except Exception as error:  # a variant the device cannot run
            print(f"# w={w} micro={micro} slices={slices} rotate={rotate_wg} "
                  f"tile_rows={tile_rows} update={update}: {error!r}")
            continue
        kernels = recorder.totals()
        per_sweep = {name: entry["seconds"] / stats.sweeps for name, entry in kernels.items()}
        flops = 4.0 * n**3
        record = {
            "block_width": w, "gram_micro_tile": micro, "gram_row_slices": slices,
            "rotate_work_group_size": rotate_wg, "tile_rows": tile_rows,
            "update_tile_rows": driver.update_tile_rows,
            "update_micro_rows": driver.update_micro_rows,
            "update_micro_cols": driver.update_micro_cols,
            "sweeps": stats.sweeps, "seconds_per_sweep": per_sweep,
            "gram_gflops": flops / per_sweep["cjac_block_gram"] / 1e9,
            "update_gflops": flops / per_sweep["cjac_block_update"] / 1e9,
            "sweep_seconds": sum(per_sweep.values()),
        }
        records.append(record)
        update_shape = (f"{driver.update_tile_rows} x {driver.update_micro_rows} x "
                        f"{driver.update_micro_cols}")
        print(f"| {w} | {micro} | {slices} | {rotate_wg} | {tile_rows} | {update_shape} "
              f"| {per_sweep['cjac_block_gram']:.4f} | {per_sweep['cjac_block_rotate']:.4f} "
              f"| {per_sweep['cjac_block_update']:.4f} | {record['gram_gflops']:.0f} "
              f"| {record['update_gflops']:.0f} | {record['sweep_seconds']:.4f} |")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": n, "records": records}, indent=1))


if __name__ == "__main__":
    main()
