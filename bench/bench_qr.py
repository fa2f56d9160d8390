"""svd's row-sorted, column-pivoted QR: the device kernels against LAPACK xGEQP3.

The device QR (``cljacobi.host.qr.pivoted_qr_on_device``, ``templates/qr.cl.mako``)
and the host's (``cljacobi.shortening.pivoted_reflectors``, LAPACK ``xGEQP3``
after the same row sort), on n x n matrices with columns graded from 1 to 1e-8,
whole calls (the row sort, the transfers and the launches included); for every
work-group size and columns per work-group asked for, the best of --repeat
runs after a warm-up, whether a second run gives the same bits, the residual
of the first 64 columns, and whether the pivots and ``|r_jj|`` agree with
xGEQP3's.  Q is applied by ``q_times`` (by blocks of reflectors), not timed here.

    CLJACOBI_DEVICE=nvidia python bench/bench_qr.py --sizes 1024 4096 8192 \\
        --out bench/results/qr-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from common import write_results

from cljacobi.host.device import default_queue
from cljacobi.host.qr import COLUMNS_PER_GROUP, pivoted_qr_on_device
from cljacobi.shortening import pivoted_reflectors


def _matrix(rng, n, dtype):
    A = rng.standard_normal((n, n))
    if dtype.kind == "c":
        A = A + 1j * rng.standard_normal((n, n))
    return A * np.logspace(0, -8, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "complex128"],
                        choices=["float64", "complex128"])
    parser.add_argument("--work-group-sizes", type=int, nargs="+", default=[None],
                        help="work-items a work-group (default: the library's choice)")
    parser.add_argument("--columns-per-group", type=int, nargs="+", default=[COLUMNS_PER_GROUP])
    parser.add_argument("--host-max", type=int, default=4096, help="largest n for xGEQP3")
    parser.add_argument("--complex-max", type=int, default=4096, help="largest complex n")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# device: {device}")
    rng = np.random.default_rng(args.seed)
    records = []
    for n in args.sizes:
        for dtype in map(np.dtype, args.dtypes):
            if dtype.kind == "c" and n > args.complex_max:
                continue
            A = _matrix(rng, n, dtype)
            host = None
            if n <= args.host_max:
                start = time.perf_counter()
                host = pivoted_reflectors(A)
                seconds = time.perf_counter() - start
                records.append({"n": n, "dtype": dtype.name, "solver": "xGEQP3 (host)",
                                "seconds": seconds})
                print(f"n={n} {dtype.name} xGEQP3 {seconds:.3f}s", flush=True)
            for size in args.work_group_sizes:
                for columns in args.columns_per_group:
                    options = {"work_group_size": size, "columns_per_group": columns}
                    pivoted_qr_on_device(A[:256, :256], queue, **options)  # build
                    times = []
                    for _ in range(args.repeat):
                        start = time.perf_counter()
                        qr = pivoted_qr_on_device(A, queue, **options)
                        qr.tau  # noqa: B018 -- waits for the launches
                        times.append(time.perf_counter() - start)
                    again = pivoted_qr_on_device(A, queue, **options)
                    bitwise = bool(np.array_equal(qr.packed, again.packed)
                                   and np.array_equal(qr.tau, again.tau))
                    Q = qr.q_times(np.eye(n, 64, dtype=dtype), np.arange(64))
                    R, first = qr.R, A[:, qr.columns][:, :64]
                    residual = float(np.linalg.norm(first - Q @ R[:64, :64])
                                     / np.linalg.norm(first))
                    record = {"n": n, "dtype": dtype.name, "solver": "device QR",
                              "work_group_size": qr.plan.spec.work_group_size,
                              "columns_per_group": columns, "seconds": min(times),
                              "all_seconds": times, "bitwise_repeatable": bitwise,
                              "residual_first_64": residual}
                    if host is not None:
                        record["same_pivots_as_xgeqp3"] = bool(
                            np.array_equal(host.columns, qr.columns))
                        d, dh = np.abs(np.diag(R)), np.abs(np.diag(host.R))
                        record["max_rel_diff_rjj"] = float(np.max(np.abs(d - dh) / dh))
                    records.append(record)
                    print(f"n={n} {dtype.name} device QR wg={record['work_group_size']} "
                          f"cols={columns} {min(times):.3f}s ({min(times) / n * 1e6:.1f} us a "
                          f"column) bitwise={bitwise} residual={residual:.1e}", flush=True)
    write_results(args.out, "pivoted QR, device against xGEQP3", device, records)


if __name__ == "__main__":
    main()
