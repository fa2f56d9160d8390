"""Q applied to an n x n matrix on the device: the Q kernels' sizes timed side by side.

One row-sorted, column-pivoted QR of a standard normal n x n matrix on the
device, then ``DeviceQR.q_times_buffer`` of an orthogonal V already there
(as ``svd`` applies Q to the sweeps' V) with every `--slabs` x `--tiles`
variant of ``ColumnQRSpec.apply_slab`` and ``apply_tile``
(``templates/qr.cl.mako``: ``cjac_qr_block_z``, ``cjac_qr_block_tz``,
``cjac_qr_block_update``): the best and median wall milliseconds of three
calls (the upload of nothing, the kernels and the download of ``Q V``), and
the largest difference from the first variant's result (the slabs change
the order of the sums, the tiles do not).  Used to choose ``APPLY_SLAB``
and ``APPLY_TILE`` of ``cljacobi.host.qr``.

    CLJACOBI_DEVICE=nvidia python bench/tune_q_apply.py --n 4096 --dtype float64 \\
        > bench/results/tune-q-apply-<device>-<date>.txt
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from cljacobi.host.device import default_queue
from cljacobi.host.programs import build_program
from cljacobi.host.qr import pivoted_qr_on_device
from cljacobi.host.transfers import buffer_holding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--dtype", default="float64", choices=("float64", "complex128"))
    parser.add_argument("--slabs", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--tiles", type=int, nargs="+", default=None,
                        help="columns a work-group (default 16 32 64, complex 8 16 32)")
    args = parser.parse_args()
    n, dtype = args.n, np.dtype(args.dtype)
    tiles = args.tiles or ([16, 32, 64] if dtype.kind == "f" else [8, 16, 32])
    queue = default_queue()
    print(f"# device: {queue.device.name.strip()}")
    rng = np.random.default_rng(0)
    qr = pivoted_qr_on_device(rng.standard_normal((n, n)).astype(dtype), queue)
    V = np.linalg.qr(rng.standard_normal((n, n)))[0].astype(dtype)
    source = buffer_holding(queue, np.asfortranarray(V))  # column-major, as the sweeps' V
    order, plan, first = np.arange(n), qr.plan, None
    for slab in args.slabs:
        for tile in tiles:
            spec = dataclasses.replace(plan.spec, apply_slab=slab, apply_tile=tile)
            qr.plan = dataclasses.replace(plan, spec=spec)
            qr.program = build_program(queue.context, queue.device, spec)
            result = qr.q_times_buffer(source, n, order)
            seconds = []
            for _ in range(3):
                queue.finish()
                start = time.perf_counter()
                qr.q_times_buffer(source, n, order)
                seconds.append(time.perf_counter() - start)
            first = result if first is None else first
            print(f"n={n} {dtype} slab={slab} tile={tile}: {1e3 * min(seconds):.1f} ms "
                  f"(median {1e3 * sorted(seconds)[1]:.1f}) maxdiff {np.abs(result - first).max():.1e}",
                  flush=True)


if __name__ == "__main__":
    main()
