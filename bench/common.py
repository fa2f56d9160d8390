"""Helpers the benchmark scripts share: timing, profiling queues, the CuPy peers,
the JSON results."""

from __future__ import annotations

import datetime as dt
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def profiling_queue():
    """A queue with event profiling on the device ``CLJACOBI_DEVICE`` names."""
    import pyopencl as cl

    from cljacobi.host.device import default_queue

    base = default_queue()
    return cl.CommandQueue(base.context, base.device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, list[float], Any]:
    """``(median seconds, all seconds, last result)`` of `repeat` timed calls
    after one untimed call (program builds, step tables, library handles and
    first-touch allocations of this size stay out of the timings)."""
    result = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, result


def on_gpu(solve: Callable[[Any], tuple]) -> Callable[[Any], tuple]:
    """A CuPy solver as a host-to-host function: the upload, the solve and
    the download are timed together, synchronized on both ends."""
    import cupy

    def run(A):
        dA = cupy.asarray(A)
        cupy.cuda.Device().synchronize()
        results = solve(dA)
        cupy.cuda.Device().synchronize()
        return tuple(cupy.asnumpy(x) for x in results)

    return run


def write_results(path: Path | None, benchmark: str, device: str, records: list) -> None:
    """Write `records` as JSON with the date, the device and the host (if `path`)."""
    if path is None:
        return
    import numpy as np

    import cljacobi

    payload = {
        "benchmark": benchmark,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device, "host": platform.node(), "cpu": platform.processor(),
        "numpy": np.__version__, "cljacobi": cljacobi.__version__,
        "records": records,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1))
    print(f"# wrote {path}")


def eigh_peers() -> dict[str, Callable[[Any], tuple]]:
    """The Hermitian eigensolvers to time beside cljacobi: LAPACK through
    numpy, and with CuPy cuSOLVER's syevd and its Jacobi syevj; each takes the
    host matrix and returns ``(w, V)``."""
    import numpy as np

    peers = {"numpy.eigh": lambda M: np.linalg.eigh(M)}
    try:
        import cupy
        import cupyx.cusolver

        peers["cupy.eigh (syevd)"] = on_gpu(lambda dM: cupy.linalg.eigh(dM))
        peers["cusolver.syevj"] = on_gpu(
            lambda dM: cupyx.cusolver.syevj(dM, with_eigen_vector=True))
    except Exception as error:
        print(f"# cupy peers unavailable: {error!r}")
    return peers
