"""The batched kernel with its matrices in local memory against the same
kernel with them in global memory (``matrix_in_global``), on the same
device stacks: what decides where ``batched_order_limit`` switches.

    CLJACOBI_DEVICE=nvidia python bench/batched_memory.py 8x100000xr 64x2000xr 52x2000xc

Each argument is ``n x count x (r|c)`` (real or complex); median of 3 after
an untimed run, eigenvectors included.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl.array as cl_array

import cljacobi.host.batched as hb
from cljacobi.host.device import default_queue


def main() -> None:
    queue = default_queue()
    print(f"# device: {queue.device.name.strip()}")
    rng = np.random.default_rng(0)
    for spec in sys.argv[1:]:
        n, count, kind = spec.split("x")
        n, count = int(n), int(count)
        X = rng.standard_normal((count, n, n))
        if kind == "c":
            X = X + 1j * rng.standard_normal((count, n, n))
        A = cl_array.to_device(queue, np.ascontiguousarray(X + np.swapaxes(X, -1, -2).conj()))
        cells = []
        for in_global in (False, True):
            def run():
                return hb.batched_eig(queue, A, vectors=True, strategy="me", rotation=2,
                                      sort_diagonal=True, max_sweeps=60,
                                      matrix_in_global=in_global)
            run()
            times = []
            for _ in range(3):
                queue.finish()
                start = time.perf_counter()
                run()
                queue.finish()
                times.append(time.perf_counter() - start)
            cells.append(f"{'global' if in_global else 'local'} {np.median(times):.4f}s")
        print(spec, *cells, flush=True)


if __name__ == "__main__":
    main()
