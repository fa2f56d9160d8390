"""Where the time of eigh(method="two-sided") goes: every launch of the
blocked two-sided kernels (and of the pointwise ones with ``--variant
pointwise``) timed by OpenCL profiling events, summed per kernel.

    CLJACOBI_DEVICE=nvidia python bench/profile_two_sided.py --sizes 1024 4096
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np
import pyopencl as cl
from bench_eigh import family_matrix

from cljacobi.host import classical, two_sided
from cljacobi.host.device import default_queue
from cljacobi.host.two_sided import TWO_SIDED_INNER_SWEEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--family", default="random")
    parser.add_argument("--variant", default="bo", choices=["bo", "fb", "pointwise"])
    parser.add_argument("--block-width", type=int)
    parser.add_argument("--solve-wg", type=int, nargs="+", default=[None])
    parser.add_argument("--micro", type=int)
    args = parser.parse_args()
    base = default_queue()
    queue = cl.CommandQueue(base.context, base.device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    events: list[tuple[str, cl.Event]] = []
    enqueue = cl.enqueue_nd_range_kernel

    def recorded(queue, kernel, *rest, **options):
        event = enqueue(queue, kernel, *rest, **options)
        events.append((kernel.function_name, event))
        return event

    cl.enqueue_nd_range_kernel = recorded  # what host.two_sided and host.classical call
    rng = np.random.default_rng(0)
    for n, solve_wg in [(n, g) for n in args.sizes for g in args.solve_wg]:
        A = family_matrix(args.family, n, rng)
        tol = np.sqrt(n) * np.finfo(np.float64).eps
        for attempt in range(2):  # the first builds the program
            events.clear()
            start = time.perf_counter()
            if args.variant == "pointwise":
                run = classical.cyclic_run(queue, A, strategy="me", max_sweeps=60, tol=tol,
                                           compute_v=True)
            else:
                run = two_sided.blocked_cyclic_run(
                    queue, A, strategy="me", block_width=args.block_width,
                    inner_sweeps=TWO_SIDED_INNER_SWEEPS[args.variant], max_sweeps=60, tol=tol,
                    compute_v=True, solve_work_group_size=solve_wg, micro=args.micro)
            seconds = time.perf_counter() - start
        totals: dict[str, list[float]] = collections.defaultdict(list)
        for name, event in events:
            totals[name].append((event.profile.end - event.profile.start) * 1e-9)
        span = (max(e.profile.end for _, e in events)
                - min(e.profile.start for _, e in events)) * 1e-9
        print(f"n = {n}, {args.family}, {args.variant}, w = {run.block_width}, solve work-group "
              f"{solve_wg or 'default'}, micro {args.micro or 'default'}: {seconds:.3f} s, "
              f"{run.sweeps} sweeps, {len(events)} launches, {span:.3f} s from the first "
              "launch's start to the last one's end")
        for name, times in totals.items():
            print(f"  {name:24s} {sum(times):8.3f} s  {len(times):6d} launches  "
                  f"{1e6 * np.mean(times):8.1f} us each")


if __name__ == "__main__":
    main()
