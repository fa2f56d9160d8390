"""What an event costs a kernel launch: chains of dependent launches of one
in-order queue, each launch enqueued by pyopencl (which always asks the
driver for an event) or by ``cljacobi.host.launch.enqueue_kernel`` (none).

A kernel of a given length (a loop of integer multiply-adds, 64 work-groups
of 512 work-items, about the size of the rotate kernel's launch) is
launched `--launches` times back to back; the wall time of the chain over
the launches is the device's time per launch once the host is ahead, and
the kernel's own duration comes from a profiling queue.  The two ways
alternate `--rounds` times.

    CLJACOBI_DEVICE=nvidia python bench/launch_events.py \
        --out bench/results/launch-events-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import write_results

from cljacobi.host.device import default_queue
from cljacobi.host.launch import enqueue_kernel, loader_enqueue

SOURCE = """
__kernel void busy(__global long *out, const int iterations)
{
    long v = get_global_id(0);
    for (int i = 0; i < iterations; ++i)
        v = v * 6364136223846793005L + 1442695040888963407L;
    if (get_local_id(0) == 0)
        out[get_group_id(0)] += v;  /* each launch depends on the one before */
}
"""

GROUPS, WORK_GROUP = 64, 512


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[0, 2000, 20000])
    parser.add_argument("--launches", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if loader_enqueue() is None:
        raise SystemExit("no OpenCL loader found: every launch would take an event")
    queue = default_queue()
    profiling = cl.CommandQueue(queue.context, queue.device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
    kernel = cl.Program(queue.context, SOURCE).build().busy
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * GROUPS)
    cl.enqueue_fill_buffer(queue, out, np.int64(0), 0, 8 * GROUPS)
    sizes = ((GROUPS * WORK_GROUP,), (WORK_GROUP,))
    ways = {"pyopencl (an event)": lambda: cl.enqueue_nd_range_kernel(queue, kernel, *sizes),
            "enqueue_kernel (no event)": lambda: enqueue_kernel(queue, kernel, *sizes)}
    records = []
    print(f"# {queue.device.name.strip()}: us a launch, {args.launches} dependent launches")
    print("| iterations | kernel alone | " + " | ".join(ways) + " |")
    print("| --- | --- |" + " --- |" * len(ways))
    for iterations in args.iterations:
        kernel.set_args(out, np.int32(iterations))
        events = [cl.enqueue_nd_range_kernel(profiling, kernel, *sizes) for _ in range(200)]
        profiling.finish()
        alone = float(np.median([(e.profile.end - e.profile.start) * 1e-3 for e in events]))
        per_launch: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, launch in ways.items():
                queue.finish()
                start = time.perf_counter()
                for _ in range(args.launches):
                    launch()
                queue.finish()
                per_launch[name].append((time.perf_counter() - start) / args.launches * 1e6)
        records.append({"iterations": iterations, "kernel_us": alone,
                        "launch_us": per_launch, "launches": args.launches})
        print(f"| {iterations} | {alone:.2f} | "
              + " | ".join(" / ".join(f"{t:.2f}" for t in per_launch[name]) for name in ways)
              + " |", flush=True)
    write_results(args.out, "launch_events", queue.device.name.strip(), records)


if __name__ == "__main__":
    main()
