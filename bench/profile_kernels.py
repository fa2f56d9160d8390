"""Device time per OpenCL kernel and per transfer of one cljacobi call.

Runs ``eig_indefinite`` on the 2011 paper's family (or, with ``--solver
gsvd``, ``gsvd`` on the GSVD paper's pairs of ``bench_gsvd.py``; with
``--solver svd``, ``svd`` of a standard normal n x n matrix with U and Vh)
on a
profiling command queue, records an OpenCL event for every
kernel launch and copy the library enqueues, and prints, per kernel name,
the launches, the summed device seconds and (for the blocked Gram and update
kernels) the achieved GFLOP/s.  The wall-clock time split of ``info.seconds``
is printed beside it, so that host time shows as the difference.
``--by-sweep`` (``eig_indefinite``) also sums each kernel's device seconds
sweep by sweep, beside the sweep's rotations
(``results/sweep-profile-H200-2026-11-28.md``).

    CLJACOBI_DEVICE=nvidia python bench/profile_kernels.py --n 4096 \
        --variant bo --block-width 16 --out bench/results/profile-<device>-<date>.json
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
from common import profiling_queue

import cljacobi
from cljacobi.matrices import paper_spectrum, with_spectrum


def _device_seconds(event: cl.Event) -> float:
    """Seconds `event`'s command ran on the device (waiting for it first)."""
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


class Recorder:
    """Wraps pyopencl's enqueue functions to keep every event with a label."""

    def __init__(self) -> None:
        self.events: list[tuple[str, cl.Event]] = []
        self._originals = {}

    def __enter__(self):  # -> Self (typing.Self needs Python 3.11)
        launch = cl.enqueue_nd_range_kernel
        copy = cl.enqueue_copy
        self._originals = {"enqueue_nd_range_kernel": launch, "enqueue_copy": copy}

        def recorded_launch(queue, kernel, *args, **kwargs):
            event = launch(queue, kernel, *args, **kwargs)
            self.events.append((kernel.function_name, event))
            return event

        def recorded_copy(queue, dest, src, **kwargs):
            event = copy(queue, dest, src, **kwargs)
            if isinstance(dest, np.ndarray):
                label = "copy device->host"
            elif isinstance(src, np.ndarray):
                label = "copy host->device"
            else:
                label = "copy device->device"
            self.events.append((label, event))
            return event

        cl.enqueue_nd_range_kernel = recorded_launch
        cl.enqueue_copy = recorded_copy
        return self

    def __exit__(self, *exc) -> None:
        for name, function in self._originals.items():
            setattr(cl, name, function)

    def launch_seconds(self, label: str) -> list[float]:
        """Device seconds of every launch (or copy) recorded as `label`, in order."""
        return [_device_seconds(event) for name, event in self.events if name == label]

    def by_sweep(self) -> list[dict[str, float]]:
        """Device seconds of every label, sweep by sweep: from the first
        sweep's first launch (a Gram launch of the blocked sweeps, else a
        pointwise step), each sweep up to and including the
        ``cjac_sweep_status`` launch that ends it, blocked or pointwise."""
        starts = ("cjac_block_gram", "cjac_step", "cjac_precompute")
        first = next((i for i, (label, _) in enumerate(self.events) if label in starts),
                     len(self.events))
        sweeps: list[dict[str, float]] = []
        current: dict[str, float] = collections.defaultdict(float)
        for label, event in self.events[first:]:
            current[label] += _device_seconds(event)
            if label == "cjac_sweep_status":
                sweeps.append(dict(current))
                current = collections.defaultdict(float)
        return sweeps

    def totals(self) -> dict[str, dict[str, float]]:
        seconds = collections.defaultdict(float)
        counts = collections.Counter()
        for label, event in self.events:
            seconds[label] += _device_seconds(event)
            counts[label] += 1
        return {label: {"launches": counts[label], "seconds": seconds[label]}
                for label in sorted(seconds, key=seconds.get, reverse=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--variant", default="auto")
    parser.add_argument("--block-width", type=int, default=None)
    parser.add_argument("--dtype", default="float64", choices=("float64", "complex128"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solver", default="eig_indefinite", choices=("eig_indefinite", "gsvd", "svd"))
    parser.add_argument("--by-sweep", action="store_true",
                        help="eig_indefinite: each kernel's seconds sweep by sweep")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.solver == "gsvd":
        return profile_gsvd(args)
    if args.solver == "svd":
        return profile_svd(args)

    queue = profiling_queue()
    rng = np.random.default_rng(args.seed)
    lam = paper_spectrum(args.n, rng=rng)
    M = with_spectrum(lam, rng=rng, dtype=np.dtype(args.dtype))
    solve = {"variant": args.variant, "block_width": args.block_width, "queue": queue,
             "return_info": True}
    cljacobi.eig_indefinite(M[:256, :256] if args.n > 256 else M, **solve)  # build programs

    with Recorder() as recorder:
        start = time.perf_counter()
        (w, _U), info = cljacobi.eig_indefinite(M, **solve)
        wall = time.perf_counter() - start
    kernels = recorder.totals()
    n = args.n
    w_used = info.block_width or 0
    for name in ("cjac_block_gram", "cjac_block_update"):
        if name in kernels and info.blocked_sweeps:
            # 2 n^2 m flops per blocked sweep for each of the Gram matrices and
            # the update of G (m = n here): 4 n^3 each, 8 n^3 together.
            flops = 4.0 * n**3 * info.blocked_sweeps * (4 if args.dtype == "complex128" else 1)
            kernels[name]["gflops"] = flops / kernels[name]["seconds"] / 1e9
    rel = np.abs(np.sort(w) - np.sort(lam)) / np.abs(np.sort(lam))
    record = {
        "device": queue.device.name.strip(),
        "date": dt.date.today().isoformat(),
        "n": n, "dtype": args.dtype, "variant": info.variant, "block_width": w_used,
        "wall_seconds": wall, "info_seconds": info.seconds, "sweeps": info.sweeps,
        "blocked_sweeps": info.blocked_sweeps, "factorization": info.factorization,
        "max_rel_eig_error": float(rel.max()),
        "device_seconds_total": sum(k["seconds"] for k in kernels.values()),
        "kernels": kernels,
    }
    print(f"# {record['device']}  n={n} {args.dtype} {info.variant}:{w_used}  "
          f"wall {wall:.3f} s  sweeps {info.sweeps} ({info.blocked_sweeps} blocked)  "
          f"max rel err {rel.max():.1e}")
    print("# info.seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in info.seconds.items()))
    print(f"# device seconds in all: {record['device_seconds_total']:.3f}")
    for name, entry in kernels.items():
        extra = f"  {entry['gflops']:.0f} GFLOP/s" if "gflops" in entry else ""
        print(f"{name:28s} {entry['launches']:7d} {entry['seconds']:8.3f} s{extra}")
    if args.by_sweep:
        record["by_sweep"] = _print_by_sweep(recorder.by_sweep(), info.rotations_per_sweep,
                                             info.blocked_sweeps)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1))


def _print_by_sweep(sweeps: list[dict[str, float]], rotations: list[int],
                    blocked: int) -> list[dict]:
    """A markdown table of each sweep's rotations and device milliseconds by
    kernel (the kernels of any sweep, the costliest first; "finishing": the
    pointwise or certified sweeps after the blocked ones); the rows as
    records."""
    totals: dict[str, float] = collections.defaultdict(float)
    for sweep in sweeps:
        for label, seconds in sweep.items():
            totals[label] += seconds
    labels = [label for label in sorted(totals, key=totals.get, reverse=True)
              if label.startswith("cjac_")]
    print("\n| sweep | rotations | " + " | ".join(f"{label} ms" for label in labels) + " |")
    print("| --- " * (len(labels) + 2) + "|")
    rows = []
    for s, sweep in enumerate(sweeps):
        kind = "blocked" if s < blocked else "finishing"
        count = rotations[s] if s < len(rotations) else None
        print(f"| {s + 1} ({kind}) | {count} | "
              + " | ".join(f"{1e3 * sweep.get(label, 0.0):.2f}" for label in labels) + " |")
        rows.append({"sweep": s + 1, "kind": kind, "rotations": count, "seconds": sweep})
    return rows


def profile_gsvd(args: argparse.Namespace) -> None:
    """The kernels of one gsvd call: two Gram matrices, the block kernel and
    three updates per outer step, the pointwise step kernel."""
    from bench_gsvd import paper_pair

    queue = profiling_queue()
    A, B, exact = paper_pair(args.n, args.dtype, np.random.default_rng(args.seed))
    solve = {"variant": args.variant, "block_width": args.block_width, "queue": queue,
             "return_info": True}
    cljacobi.gsvd(A[:512, :512], B[:512, :512], **solve)  # build programs
    with Recorder() as recorder:
        start = time.perf_counter()
        (_U, _V, C, S, _X), info = cljacobi.gsvd(A, B, **solve)
        wall = time.perf_counter() - start
    kernels = recorder.totals()
    record = {
        "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
        "solver": "gsvd", "n": args.n, "dtype": args.dtype, "variant": info.variant,
        "block_width": info.block_width, "wall_seconds": wall, "info_seconds": info.seconds,
        "sweeps": info.sweeps, "transformations": info.rotations_per_sweep,
        "max_rel_sigma_error": float(np.max(np.abs(C / S - exact) / exact)),
        "device_seconds_total": sum(k["seconds"] for k in kernels.values()),
        "kernels": kernels,
    }
    _report(record, f"gsvd n={args.n} {args.dtype} {info.variant}:{info.block_width}  "
                    f"wall {wall:.3f} s  sweeps {info.sweeps}", args.out)


def profile_svd(args: argparse.Namespace) -> None:
    """The kernels of one svd call (U and Vh): the device QR, the sweeps,
    Q applied to V."""
    queue = profiling_queue()
    rng = np.random.default_rng(args.seed)
    A = rng.standard_normal((args.n, args.n))
    if args.dtype == "complex128":
        A = A + 1j * rng.standard_normal((args.n, args.n))
    solve = {"variant": args.variant, "block_width": args.block_width, "queue": queue,
             "return_info": True}
    cljacobi.svd(A, **solve)  # builds the programs of this size's plan
    with Recorder() as recorder:
        start = time.perf_counter()
        (_, S, _), info = cljacobi.svd(A, **solve)
        wall = time.perf_counter() - start
    kernels = recorder.totals()
    exact = np.linalg.svd(A, compute_uv=False)
    record = {
        "device": queue.device.name.strip(), "date": dt.date.today().isoformat(),
        "solver": "svd", "n": args.n, "dtype": args.dtype, "variant": info.variant,
        "block_width": info.block_width, "factorization": info.factorization,
        "wall_seconds": wall, "info_seconds": info.seconds, "sweeps": info.sweeps,
        "max_rel_sigma_error": float(np.max(np.abs(S - exact) / exact)),
        "device_seconds_total": sum(k["seconds"] for k in kernels.values()),
        "kernels": kernels,
    }
    _report(record, f"svd n={args.n} {args.dtype} {info.variant}:{info.block_width} "
                    f"{info.factorization}  wall {wall:.3f} s  sweeps {info.sweeps}", args.out)


def _report(record: dict, title: str, out: Path | None) -> None:
    """The record's summary (the call, its phases, every kernel's device
    seconds), and the record as JSON in `out`."""
    print(f"# {record['device']}  {title}")
    print("# info.seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in record["info_seconds"].items()))
    print(f"# device seconds in all: {record['device_seconds_total']:.3f}")
    for name, entry in record["kernels"].items():
        print(f"{name:28s} {entry['launches']:7d} {entry['seconds']:8.3f} s")
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
