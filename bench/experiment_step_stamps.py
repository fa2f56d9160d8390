"""Clock stamps per phase inside the factorization's step kernel (NVIDIA only).

A probe, not the library: the rendered ``bunch_parlett`` source is patched,
by text anchors, so that ``cjac_bp_step`` reads ``%clock64`` and
``%globaltimer`` (inline PTX) at the ends of its phases.

- Every work-group records the start of its launch and the time it took
  its ticket: ``atom_min`` and ``atom_max`` per step.
- The first ``--groups`` work-groups (by linear id) record their phases.
- The deciding work-group records its own phases and when it finished.

It factors ``with_spectrum(paper_spectrum(n))`` (seed 0; the second run is
the one read back). For bands of steps by trailing order it prints the
medians of:

- the launch's span, from the first work-group's start to the decision;
- the gap to the next launch's first start;
- a sample work-group's phases: the state and pivot, the rows of W, the
  entries, the reduction and record, the ticket;
- the deciding work-group's two phases: the records and reduction, then the
  decision and state.

The kernel's arithmetic is untouched, so the factor is the library's.

    CLJACOBI_DEVICE=nvidia python bench/experiment_step_stamps.py --n 4096 \\
        --out bench/results/step-stamps-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import profiling_queue

from cljacobi.host import factorization, programs
from cljacobi.host.matrix_products import compute_capability
from cljacobi.matrices import paper_spectrum, with_spectrum

_HELPERS = """
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
inline ulong cjac_clock(void) { ulong t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
inline ulong cjac_gtime(void) { ulong t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
"""

#: Extra kernel arguments, after the library's.
_EXTRA = ("stamps", "first_start", "last_ticket", "decider")


def _stamped(source: str, sampled: int) -> str:
    """The step kernel's source with the stamps (the anchors are lines of
    ``templates/bunch_parlett.cl.mako``)."""

    def insert(anchor: str, text: str, after: bool = False) -> None:
        nonlocal source
        if source.count(anchor) != 1:
            raise RuntimeError(f"the template changed: {anchor!r} not found once")
        source = source.replace(anchor, anchor + text if after else text + anchor)

    kernel = source.index("__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))")
    source = source[:kernel] + _HELPERS + source[kernel:]
    start = source.index("void cjac_bp_step(")
    close = source.index(")", start)
    source = (source[:close] + "".join(f", __global ulong *{name}" for name in _EXTRA)
              + source[close:])
    body = source.index("{", close) + 1
    source = (source[:body] + "\n    const ulong cjac_t0 = cjac_clock(), cjac_g0 = cjac_gtime();\n"
              + source[body:])
    insert("    if (s > 0 && gx == 0 && by == 0) {  /* the pivot rows of G, and the signs */",
           "    const ulong cjac_t1 = cjac_clock();\n    ulong cjac_t2 = 0, cjac_t3 = 0, cjac_t4 = 0;\n")
    insert("        barrier(CLK_LOCAL_MEM_FENCE);\n\n        const int col = col0 + ly;\n",
           "        cjac_t2 = cjac_clock();\n", after=True)
    insert("        best = cjac_bp_reduce(scratch, best, lid);\n", "        cjac_t3 = cjac_clock();\n")
    insert("            partial[by * row_groups + gx] = best;\n", "        cjac_t4 = cjac_clock();\n",
           after=True)
    insert("    if (!last)\n        return;  /* uniform over the work-group */", f"""\
    const ulong cjac_t5 = cjac_clock(), cjac_g5 = cjac_gtime();
    const int cjac_group = by * get_num_groups(0) + gx;
    if (lid == 0) {{
        atom_min(&first_start[k0], cjac_g0);
        atom_max(&last_ticket[k0], cjac_g5);
        if (cjac_group < {sampled}) {{
            __global ulong *o = stamps + ((size_t)k0 * {sampled} + cjac_group) * 6;
            o[0] = cjac_t1 - cjac_t0;
            o[1] = cjac_t2 ? cjac_t2 - cjac_t1 : 0;
            o[2] = cjac_t2 ? cjac_t3 - cjac_t2 : 0;
            o[3] = cjac_t2 ? cjac_t4 - cjac_t3 : 0;
            o[4] = cjac_t2 ? cjac_t5 - cjac_t4 : cjac_t5 - cjac_t1;
            o[5] = cjac_t5 - cjac_t0;
        }}
    }}
""")
    insert("    maxima = cjac_bp_reduce(scratch, maxima, lid);\n",
           "    const ulong cjac_t6 = cjac_clock();\n", after=True)
    insert("    /* Ends the work-group's last region at a barrier", """\
    if (lid == 0) {
        decider[(size_t)k0 * 3 + 0] = cjac_t6 - cjac_t5;
        decider[(size_t)k0 * 3 + 1] = cjac_clock() - cjac_t6;
        decider[(size_t)k0 * 3 + 2] = cjac_gtime();
    }
""")
    return source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--dtype", default="float64", choices=["float64", "complex128"])
    parser.add_argument("--groups", type=int, default=8, help="work-groups whose phases are kept")
    parser.add_argument("--bands", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    profiled = profiling_queue()
    queue = cl.CommandQueue(profiled.context, profiled.device)
    if compute_capability(queue.device) is None:
        raise SystemExit("the stamps are NVIDIA's %clock64 and %globaltimer: an NVIDIA device only")
    n, sampled, steps = args.n, args.groups, args.n + 1
    library_render = programs.render

    def render(spec):
        source = library_render(spec)
        return _stamped(source, sampled) if spec.family == "bunch_parlett" else source

    ctx, mf = queue.context, cl.mem_flags
    buffers: dict[str, cl.Buffer] = {}
    library_init = factorization._Elimination.__init__

    def init(self, queue, plan, M, **kwargs):
        library_init(self, queue, plan, M, **kwargs)
        fills = {"stamps": np.zeros(steps * sampled * 6, np.uint64),
                 "first_start": np.full(steps, np.iinfo(np.uint64).max, np.uint64),
                 "last_ticket": np.zeros(steps, np.uint64),
                 "decider": np.zeros(steps * 3, np.uint64)}
        for name, fill in fills.items():
            buffers[name] = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=fill)
        first = len(plan.spec.signatures["cjac_bp_step"].args)
        for kernel in set(self.steps.values()):
            for offset, name in enumerate(_EXTRA):
                kernel.set_arg(first + offset, buffers[name])

    rng = np.random.default_rng(0)
    dtype = np.dtype(args.dtype)
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng, dtype=dtype)
    M = (M + M.conj().T) / 2  # exactly Hermitian: uploaded by rows
    programs.render, factorization._Elimination.__init__ = render, init
    try:
        for _ in range(2):  # the first builds the programs
            factorization.factor_on_device(M, queue, exactly_hermitian=True)
            queue.finish()
    finally:
        programs.render, factorization._Elimination.__init__ = library_render, library_init

    def read(name: str) -> np.ndarray:
        host = np.empty(buffers[name].size // 8, np.uint64)
        cl.enqueue_copy(queue, host, buffers[name])
        return host

    stamps = read("stamps").reshape(steps, sampled, 6).astype(np.int64)
    first_start = read("first_start")
    launched = first_start < np.iinfo(np.uint64).max
    first_start = first_start.astype(np.float64)
    last_ticket = read("last_ticket").astype(np.float64)
    decider = read("decider").reshape(steps, 3).astype(np.float64)
    ks = np.flatnonzero(launched & (decider[:, 2] > 0))
    # %clock64 counts the SM's clocks, here taken at the device's maximum
    # (the H200 ran its steps at it: 1.97 clocks a ns against %globaltimer).
    cycles_per_ns = queue.device.max_clock_frequency / 1000.0
    following = dict(itertools.pairwise(ks))
    bands = []
    print(f"n = {n} {dtype.name} on {queue.device.name.strip()} "
          f"({cycles_per_ns:.2f} clocks a ns); microseconds, medians over the band's launches")
    print("| trailing order | launches | span | first start to last ticket | last ticket to "
          "decision | gap to the next launch | a group: state and pivot, rows of W, entries, "
          "reduction, ticket | decider: records, decision |")
    print("|---|---|---|---|---|---|---|---|")
    for band in range(args.bands):
        low, high = band * n // args.bands, (band + 1) * n // args.bands
        chosen = np.array([k for k in ks if low <= n - k < high])
        if len(chosen) == 0:
            continue
        phases = stamps[chosen][:, :, :5] / cycles_per_ns / 1e3
        active = stamps[chosen][:, :, 1] > 0
        gaps = [first_start[following[k]] - decider[k, 2] for k in chosen if k in following]
        record = {
            "trailing": f"{low}-{high}", "launches": len(chosen),
            "span_us": float(np.median(decider[chosen, 2] - first_start[chosen]) / 1e3),
            "first_start_to_last_ticket_us":
                float(np.median(last_ticket[chosen] - first_start[chosen]) / 1e3),
            "last_ticket_to_decision_us":
                float(np.median(decider[chosen, 2] - last_ticket[chosen]) / 1e3),
            "gap_to_next_launch_us": float(np.median(gaps) / 1e3) if gaps else None,
            "group_phases_us": [float(np.median(phases[:, :, j][active])) for j in range(5)],
            "decider_phases_us": [float(np.median(decider[chosen, j]) / cycles_per_ns / 1e3)
                                  for j in range(2)],
        }
        bands.append(record)
        print(f"| {record['trailing']} | {record['launches']} | {record['span_us']:.1f} "
              f"| {record['first_start_to_last_ticket_us']:.1f} "
              f"| {record['last_ticket_to_decision_us']:.1f} "
              f"| {record['gap_to_next_launch_us'] or 0:.1f} | "
              + ", ".join(f"{v:.2f}" for v in record["group_phases_us"]) + " | "
              + ", ".join(f"{v:.2f}" for v in record["decider_phases_us"]) + " |", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
            "n": n, "dtype": dtype.name, "clocks_per_ns": cycles_per_ns,
            "bands": bands}, indent=1))


if __name__ == "__main__":
    main()
