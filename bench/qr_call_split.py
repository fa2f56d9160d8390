"""Where the device QR's call goes: launches, steps, the upload.

The device QR (``cljacobi.host.qr.pivoted_qr_on_device``) uploads A, then
enqueues one ``cjac_qr_step`` launch a column.  This times, on the
``CLJACOBI_DEVICE`` device:

- the host's cost of a launch (4096 launches of an empty kernel: host time
  of the loop, and time to the end);
- an n x n float64 upload both ways: a buffer created with
  ``COPY_HOST_PTR`` (creation, then its first use on the device) against
  ``cljacobi.host.transfers.buffer_holding`` (a blocking ``enqueue_copy``);
- whole QRs of an n x n standard normal matrix, with the moment the host
  has enqueued the last step: where that moment is the QR's end, the driver
  held the host back, so the device, not the host, bounds the QR;
- on a profiling queue, the whole call beside the steps' device time (start
  to end of each launch) and the device's idle time between them.

    CLJACOBI_DEVICE=nvidia python bench/qr_call_split.py --n 4096
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl
from common import announced_queue, profiling_queue

from cljacobi.host.qr import pivoted_qr_on_device
from cljacobi.host.transfers import buffer_holding

LAUNCHES = 4096


def empty_launches(queue: cl.CommandQueue, global_size: int) -> tuple[float, float]:
    """Microseconds a launch of an empty kernel: the host's loop, and to the end."""
    program = cl.Program(queue.context, "__kernel void empty(__global double *x) "
                         "{ if (get_global_id(0) == 0) x[0] += 1.0; }").build()
    kernel = program.empty
    counter = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8)  # kept alive to the end
    kernel.set_args(counter)
    queue.finish()
    start = time.perf_counter()
    for _ in range(LAUNCHES):
        cl.enqueue_nd_range_kernel(queue, kernel, (global_size,), (256,))
    enqueued = time.perf_counter()
    queue.finish()
    end = time.perf_counter()
    return 1e6 * (enqueued - start) / LAUNCHES, 1e6 * (end - start) / LAUNCHES


def upload_seconds(queue: cl.CommandQueue, B: np.ndarray) -> tuple[float, float, float]:
    """Seconds to create a ``COPY_HOST_PTR`` buffer of B, then to its first
    use on the device (an 8-byte copy out of it), and of ``buffer_holding``."""
    flags = cl.mem_flags
    first_use = cl.Buffer(queue.context, flags.READ_WRITE, 8)
    queue.finish()
    start = time.perf_counter()
    created = cl.Buffer(queue.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=B)
    made = time.perf_counter()
    cl.enqueue_copy(queue, first_use, created, byte_count=8)
    queue.finish()
    used = time.perf_counter()
    held = buffer_holding(queue, B, flags.READ_ONLY)
    queue.finish()
    end = time.perf_counter()
    del created, held
    return made - start, used - made, end - used


def qr_enqueue_and_wall(queue: cl.CommandQueue, B: np.ndarray) -> tuple[float, float]:
    """Seconds until the QR's pivots are asked for (every step enqueued), and
    of the whole call."""
    original = cl.enqueue_copy
    marks = {}

    def copy(copy_queue, dest, src, **kwargs):
        if isinstance(dest, np.ndarray) and dest.dtype == np.int32 and dest.size == B.shape[1]:
            marks["enqueued"] = time.perf_counter()
        return original(copy_queue, dest, src, **kwargs)

    cl.enqueue_copy = copy
    try:
        queue.finish()
        start = time.perf_counter()
        pivoted_qr_on_device(B, queue)
        end = time.perf_counter()
    finally:
        cl.enqueue_copy = original
    return marks["enqueued"] - start, end - start


def step_seconds(queue: cl.CommandQueue, B: np.ndarray) -> tuple[float, float, float]:
    """Seconds of the whole call, and device seconds of the QR's steps and
    between them, on a profiling queue."""
    original = cl.enqueue_nd_range_kernel
    events = []

    def launch(launch_queue, kernel, *args, **kwargs):
        event = original(launch_queue, kernel, *args, **kwargs)
        if kernel.function_name == "cjac_qr_step":
            events.append(event)
        return event

    cl.enqueue_nd_range_kernel = launch
    try:
        queue.finish()
        start = time.perf_counter()
        pivoted_qr_on_device(B, queue)
        wall = time.perf_counter() - start
    finally:
        cl.enqueue_nd_range_kernel = original
    starts = np.array([event.profile.start for event in events], dtype=np.int64)
    ends = np.array([event.profile.end for event in events], dtype=np.int64)
    return (wall, 1e-9 * float((ends - starts).sum()),
            1e-9 * float((starts[1:] - ends[:-1]).sum()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    queue, _ = announced_queue()
    for global_size in (256, 256 * LAUNCHES):
        loop, total = empty_launches(queue, global_size)
        print(f"empty kernel, {global_size} work-items: the host's loop {loop:.1f} us a "
              f"launch, to the end {total:.1f} us a launch")
    B = np.random.default_rng(0).standard_normal((args.n, args.n))
    for _ in range(args.repeats):
        create, first_use, copy = upload_seconds(queue, B)
        print(f"upload of {B.nbytes / 1e6:.0f} MB: COPY_HOST_PTR {create:.4f} s to create, "
              f"{first_use:.4f} s more to its first use; buffer_holding {copy:.4f} s")
    for _ in range(args.repeats):  # the first builds the program
        enqueued, wall = qr_enqueue_and_wall(queue, B)
        print(f"QR n = {args.n}: every step enqueued after {enqueued:.4f} s, whole call "
              f"{wall:.4f} s ({1e6 * wall / args.n:.0f} us a step)")
    profiled = profiling_queue()
    for _ in range(2):
        wall, busy, idle = step_seconds(profiled, B)
        print(f"QR n = {args.n} on a profiling queue: whole call {wall:.4f} s, steps "
              f"{busy:.4f} s on the device, {idle:.4f} s between them")


if __name__ == "__main__":
    main()
