"""The device memory bandwidth an OpenCL kernel reaches: the floor of the
blocked kernels.

Each outer step of the blocked sweeps reads the whole factor G once in the
Gram kernel and reads and writes it once in the update kernel.  This script
times the same traffic without arithmetic, on an n x n float64 array: an
in-place read and write (``scale``, the update's traffic) and a read
(``sum``, the Gram kernel's), each a grid-stride loop over ``double2``
elements, with `groups` work-groups of 256 work-items, on a profiling queue
(device seconds, the median of `--repeat` launches).

    CLJACOBI_DEVICE=nvidia python bench/memory_bandwidth.py --sizes 4096 8192 \
        --out bench/results/memory-bandwidth-<device>-<date>.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import profiling_queue, write_results

SOURCE = """
__kernel void scale(__global double2 *x, const long count)
{
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        x[i] = x[i] * 1.0000001;
}

__kernel void sum(__global const double2 *x, const long count, __global double *out)
{
    double2 s = (double2)(0);
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        s += x[i];
    if (s.x == -1)  /* never: keeps the loads */
        out[0] = s.y;
}
"""

#: Work-items per work-group.
WORK_GROUP = 256


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    parser.add_argument("--groups-per-unit", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    queue = profiling_queue()
    device = queue.device
    program = cl.Program(queue.context, SOURCE).build()
    kernels = {name: cl.Kernel(program, name) for name in ("scale", "sum")}
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8)
    records = []
    print("| n | kernel | work-groups | device us | TB/s |")
    print("| --- | --- | --- | --- | --- |")
    for n in args.sizes:
        elements = n * n
        array = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * elements)
        cl.enqueue_fill_buffer(queue, array, np.float64(1.0), 0, 8 * elements)
        for per_unit in args.groups_per_unit:
            groups = per_unit * int(device.max_compute_units)
            for name, kernel in kernels.items():
                kernel.set_args(array, np.int64(elements // 2),
                                *((out,) if name == "sum" else ()))
                seconds = []
                for _ in range(args.repeat + 1):
                    event = cl.enqueue_nd_range_kernel(queue, kernel, (groups * WORK_GROUP,),
                                                       (WORK_GROUP,))
                    event.wait()
                    seconds.append((event.profile.end - event.profile.start) * 1e-9)
                median = float(np.median(seconds[1:]))  # the first launch warms up
                moved = 8 * elements * (2 if name == "scale" else 1)
                records.append({"n": n, "kernel": name, "work_groups": groups,
                                "seconds": median, "bytes": moved,
                                "tb_per_s": moved / median / 1e12})
                print(f"| {n} | {name} | {groups} | {median * 1e6:.1f} | "
                      f"{moved / median / 1e12:.2f} |", flush=True)
    write_results(args.out, "memory_bandwidth", device.name.strip(), records)


if __name__ == "__main__":
    main()
