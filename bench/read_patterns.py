"""Read bandwidth of a streaming kernel against plain loads in the blocked
Gram kernel's pattern, on an n = 4096 G (column-major, ld = n + 16).

The pattern: work-group (k, c) of 64 work-items reads rows c * CH .. of the
64 columns of blocks k and 127 - k (w = 32) in stretches of SR rows, each
lane 16 bytes (two rows) of one column at a time, as the staged Gram
kernel's copies do.  Device microseconds, best and median of 10 launches
(``bench/README.md``, "The real Gram kernel's rows through local memory").

    CLJACOBI_DEVICE=nvidia python bench/read_patterns.py
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl

from cljacobi.host.device import default_queue

N = 4096
LD = N + 16
BLOCK_PAIRS = N // 64

SOURCE = r"""
__kernel void stream(__global const double2 *G, const long count, __global double *out)
{
    double s = 0;
    for (long i = get_global_id(0); i < count; i += get_global_size(0)) {
        const double2 v = G[i];
        s += v.x + v.y;
    }
    if (s == 1234.5)  /* never: keeps the loads */
        out[get_global_id(0)] = s;
}

/* Work-group (pair k, chunk c), 64 items: rows [c CH, c CH + CH) of the 64
 * columns of blocks k and (2 pairs - 1) - k, warp w taking every other
 * stretch of SR rows; lane l reads rows 2 (l % (SR / 2)), +1 of columns
 * l / (SR / 2) + (64 / (SR / 2)) i. */
__kernel void gram_pattern(__global const double *G, const int ld, const int CH, const int SR,
                           __global double *out)
{
    const int k = get_group_id(0), c = get_group_id(1);
    const int lid = get_local_id(0), warp = lid / 32, lane = lid % 32;
    const int lanes_a_column = SR / 2, columns_a_load = 32 / lanes_a_column;
    const int P = k, Q = 2 * get_num_groups(0) - 1 - k;
    double s = 0;
    for (int base = c * CH + warp * SR; base < c * CH + CH; base += 2 * SR) {
        const int row = base + 2 * (lane % lanes_a_column);
        for (int i = 0; i < 64 / columns_a_load; ++i) {
            const int a = lane / lanes_a_column + columns_a_load * i;
            const int column = a < 32 ? P * 32 + a : Q * 32 + a - 32;
            const double2 v = vload2(0, G + (size_t)column * ld + row);
            s += v.x + v.y;
        }
    }
    if (s == 1234.5)  /* never: keeps the loads */
        out[lid] = s;
}
"""


def timed(launch: Callable[[], cl.Event], repeat: int = 10) -> tuple[float, float]:
    """Best and median device seconds of `repeat` launches."""
    seconds = []
    for _ in range(repeat):
        event = launch()
        event.wait()
        seconds.append((event.profile.end - event.profile.start) * 1e-9)
    seconds.sort()
    return seconds[0], seconds[len(seconds) // 2]


def main() -> None:
    context = default_queue().context
    queue = cl.CommandQueue(context, context.devices[0],
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    G = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8 * LD * N)
    cl.enqueue_fill_buffer(queue, G, np.float64(1.0), 0, 8 * LD * N)
    out = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8 << 20)
    program = cl.Program(context, SOURCE).build()
    stream, gram_pattern = cl.Kernel(program, "stream"), cl.Kernel(program, "gram_pattern")
    units = context.devices[0].max_compute_units
    for groups in (4 * units, 16 * units):
        best, median = timed(lambda groups=groups: stream(
            queue, (groups * 256,), (256,), G, np.int64(LD * N // 2), out))
        print(f"stream, {groups} work-groups of 256: best {1e6 * best:.1f} us "
              f"({8 * LD * N / best / 1e12:.2f} TB/s), median {1e6 * median:.1f} us")
    for stretch in (16, 32, 64):
        for chunks in (4, 8, 16):
            best, median = timed(lambda stretch=stretch, chunks=chunks: gram_pattern(
                queue, (64 * BLOCK_PAIRS, chunks), (64, 1), G, np.int32(LD),
                np.int32(N // chunks), np.int32(stretch), out))
            print(f"Gram pattern, stretches of {stretch} rows, {chunks} chunks "
                  f"({BLOCK_PAIRS * chunks} work-groups of 64): best {1e6 * best:.1f} us "
                  f"({8 * N * N / best / 1e12:.2f} TB/s), median {1e6 * median:.1f} us")


if __name__ == "__main__":
    main()
