"""Kernel variants of the blocked method, timed side by side in one process.

Every variant (blocked variant "bo" or "offdiag", block width w, Gram micro-tile, Gram row slices, rotate
work-group size, rows per Gram tile, the update kernel's tile rows and
register micro-tile) runs the same number of blocked sweeps
on the same n x n factor with a half positive, half negative signature, on a
profiling queue; the device seconds per sweep of each kernel and the GFLOP/s
of the Gram and update kernels (each 4 n^3 flops per sweep) are recorded.
Used to choose the defaults of ``cljacobi.host.blocked``.

    CLJACOBI_DEVICE=nvidia python bench/tune_blocked.py --n 4096 \
        --out bench/results/tune-blocked-<device>-<date>.json

``--set mma`` compares the FP64 tensor-core forms of the Gram and update
kernels (``matrix_products``, :mod:`cljacobi.host.matrix_products`; their
warps per work-group and rows per update warp) with the fma kernels;
``--set loads-ahead`` (``loads-ahead-complex``) those forms with a warp's
next rows loaded during its products and without.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import profiling_queue
from profile_kernels import Recorder

from cljacobi.host.blocked import BlockedHSVD
from cljacobi.host.operands import upload

#: Variants: the block width and BlockedHSVD's tuning keywords (the others
#: take the library defaults).  The first run (results/tune-blocked-H200-
#: 2026-11-22.json) compared the Gram micro-tiles, row slices, rotate
#: work-group sizes and Gram tile rows; this list compares the update kernel's
#: tile shapes and row chunks around the defaults chosen from it.
DEFAULT_VARIANTS: list[dict] = [
    {"block_width": 8}, {"block_width": 8, "tile_rows": 64},
    {"block_width": 16}, {"block_width": 16, "tile_rows": 64},
    *({"block_width": 16, "update_groups_per_unit": g} for g in (4, 8, 32)),
    *({"block_width": 16, "update_tile_rows": tr, "update_micro_rows": rr,
       "update_micro_cols": rc} for tr, rr, rc in ((32, 2, 4), (16, 4, 4), (64, 2, 4),
                                                  (64, 4, 4))),
    {"block_width": 32}, {"block_width": 32, "rotate_work_group_size": 512},
    {"block_width": 32, "tile_rows": 64},
    *({"block_width": 32, "update_groups_per_unit": g} for g in (4, 8, 32)),
    *({"block_width": 32, "update_tile_rows": tr, "update_micro_rows": rr,
       "update_micro_cols": rc} for tr, rr, rc in ((32, 2, 4), (16, 4, 4), (16, 2, 4),
                                                  (32, 4, 8))),
]

#: The tensor-core forms beside the fma kernels, at the widths "auto" takes on GPUs.
MMA_VARIANTS: list[dict] = [
    *({"block_width": w, "matrix_products": "fma"} for w in (16, 32)),
    *({"block_width": w, "matrix_products": "mma.m16n8k4", "gram_warps": gw,
       "update_warps": uw, "update_mma_rows": mr}
      for w in (16, 32) for gw, uw, mr in ((4, 4, 2), (2, 4, 2), (8, 4, 2), (4, 2, 2),
                                          (4, 8, 2), (4, 4, 1), (4, 8, 1))),
    {"block_width": 32, "matrix_products": "mma.m8n8k4"},
]

#: The same for complex data (w at most 16 for the tensor-core forms).
MMA_COMPLEX_VARIANTS: list[dict] = [
    *({"block_width": w, "matrix_products": "fma"} for w in (8, 16)),
    *({"block_width": w, "matrix_products": "mma.m16n8k4", "gram_warps": gw,
       "update_warps": uw, "update_mma_rows": mr}
      for w in (8, 16) for gw, uw, mr in ((2, 8, 1), (4, 4, 1), (2, 4, 2), (2, 2, 1))),
]

#: Row chunks of the tensor-core update kernel (work-groups per compute unit
#: and step; each work-group copies the block pair's W to local memory
#: first), real w = 32 and complex w = 16.
MMA_CHUNK_VARIANTS: list[dict] = [
    {"block_width": 32, "matrix_products": "mma.m16n8k4", "update_groups_per_unit": g,
     "update_mma_rows": r} for g in (2, 4, 8, 16, 32) for r in (1, 2)
]
MMA_CHUNK_COMPLEX_VARIANTS: list[dict] = [
    {"block_width": 16, "matrix_products": "mma.m16n8k4", "update_groups_per_unit": g}
    for g in (2, 4, 8, 16, 32)
]

#: Variant "offdiag" (the off-diagonal block only, except in a sweep's first
#: outer step) beside "bo", and the rotate kernel's work-group sizes.
ROTATE_VARIANTS: list[dict] = [
    {"block_width": w, "variant": v, "rotate_work_group_size": wg}
    for w in (16, 32) for v in ("bo", "offdiag") for wg in (256, 512, 1024) if wg <= w * w
]

#: The mma kernels with a warp's next rows loaded ahead and without
#: (:func:`cljacobi.host.blocked.default_loads_ahead`), "offdiag", real w = 32
#: and complex w = 16 (the Gram kernel's warps too: its registers change).
LOADS_AHEAD_VARIANTS: list[dict] = [
    {"block_width": 32, "variant": "offdiag", "gram_loads_ahead": g, "update_loads_ahead": u}
    for g, u in ((False, False), (False, True), (True, True))
]
LOADS_AHEAD_COMPLEX_VARIANTS: list[dict] = [
    {"block_width": 16, "variant": "offdiag", "gram_loads_ahead": g, "update_loads_ahead": u,
     "gram_warps": gw}
    for g, u, gw in ((False, False, 4), (True, False, 4), (True, False, 2), (True, True, 2))
]

#: The mma Gram kernel in its register form and staged through local memory
#: (2 to 4 stages a warp; 1 or 2 warps a work-group), "offdiag", real w = 32.
GRAM_STAGES_VARIANTS: list[dict] = [
    {"block_width": 32, "variant": "offdiag", "gram_stages": stages, "gram_warps": warps}
    for stages, warps in ((0, 2), (2, 2), (2, 1), (3, 1), (4, 1))
]

#: The "offdiag" rotate kernel with W in its global slot and in registers in
#: the steps across the blocks (``transform_in_registers``), real w = 32.
W_REGISTERS_VARIANTS: list[dict] = [
    {"block_width": 32, "variant": "offdiag", "transform_in_registers": in_registers}
    for in_registers in (False, True)
]

VARIANT_SETS = {"default": DEFAULT_VARIANTS, "mma": MMA_VARIANTS, "rotate": ROTATE_VARIANTS,
                "mma-complex": MMA_COMPLEX_VARIANTS, "mma-chunks": MMA_CHUNK_VARIANTS,
                "mma-chunks-complex": MMA_CHUNK_COMPLEX_VARIANTS,
                "loads-ahead": LOADS_AHEAD_VARIANTS,
                "loads-ahead-complex": LOADS_AHEAD_COMPLEX_VARIANTS,
                "gram-stages": GRAM_STAGES_VARIANTS, "w-registers": W_REGISTERS_VARIANTS}

#: The settings a record reports (resolved defaults included).
_SETTINGS = ("block_width", "gram_micro_tile", "gram_row_slices", "rotate_work_group_size",
             "tile_rows", "update_tile_rows", "update_micro_rows", "update_micro_cols",
             "update_groups_per_unit", "gram_warps", "update_warps", "update_mma_rows",
             "gram_loads_ahead", "update_loads_ahead", "gram_stages", "transform_in_registers")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--set", choices=sorted(VARIANT_SETS), default="default",
                        help="the variants to compare")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    queue = profiling_queue()
    n = args.n
    rng = np.random.default_rng(0)
    G = rng.standard_normal((n, n))
    if args.set.endswith("complex"):
        G = G + 1j * rng.standard_normal((n, n))
    G = np.asfortranarray(G)
    dtype = G.dtype
    signs = np.where(np.arange(n) < n // 2, 1, -1).astype(np.int8)
    records = []
    print("| variant | gram s | rotate s | update s | gram GFLOP/s | update GFLOP/s "
          "| sweep s |")
    print("|---" * 7 + "|")
    for variant in VARIANT_SETS[args.set]:
        w = variant["block_width"]
        label = ", ".join(f"{k}={v}" for k, v in variant.items())
        try:
            driver = BlockedHSVD(queue, accumulate_v=False, **{"variant": "bo", **variant})
            warm = upload(queue, G[:, :4 * w], signs[:4 * w], accumulate_v=False,
                          column_multiple=2 * w, dtype=dtype)
            driver.run_operands(warm, max_sweeps=1)  # builds the program
            operands = upload(queue, G, signs, accumulate_v=False, column_multiple=2 * w,
                              dtype=dtype)
            with Recorder() as recorder:
                stats = driver.run_operands(operands, max_sweeps=args.sweeps)
        except (cl.Error, ValueError, RuntimeError) as error:  # one the device cannot run
            print(f"# {label}: {error!r}")
            continue
        kernels = recorder.totals()
        per_sweep = {name: entry["seconds"] / stats.sweeps for name, entry in kernels.items()}
        rotate_launches = np.array(recorder.launch_seconds("cjac_block_rotate"))
        flops = 4.0 * n**3 * (4 if G.dtype.kind == "c" else 1)  # real flops
        record = {
            "variant": variant,
            "settings": {name: getattr(driver.plan.spec, name, getattr(driver, name, None))
                         for name in _SETTINGS},
            "matrix_products": driver.plan.spec.matrix_products,
            "sweeps": stats.sweeps, "seconds_per_sweep": per_sweep,
            "gram_gflops": flops / per_sweep["cjac_block_gram"] / 1e9,
            "update_gflops": flops / per_sweep["cjac_block_update"] / 1e9,
            "sweep_seconds": sum(per_sweep.values()),
            # "offdiag": a sweep's first launch runs every inner step, the
            # others the steps across the blocks only; their difference over
            # the extra steps is an inner step's cost, the rest the launch's
            "rotate_launch_seconds": {"median": float(np.median(rotate_launches)),
                                      "max": float(rotate_launches.max())},
        }
        records.append(record)
        print(f"| {label} | {per_sweep['cjac_block_gram']:.4f} "
              f"| {per_sweep['cjac_block_rotate']:.4f} | {per_sweep['cjac_block_update']:.4f} "
              f"| {record['gram_gflops']:.0f} | {record['update_gflops']:.0f} "
              f"| {record['sweep_seconds']:.4f} |")
        launch = record["rotate_launch_seconds"]
        print(f"#   rotate launch: median {1e6 * launch['median']:.1f} us, "
              f"max {1e6 * launch['max']:.1f} us")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": n, "records": records}, indent=1))


if __name__ == "__main__":
    main()
