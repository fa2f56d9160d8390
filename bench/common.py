"""Helpers the benchmark scripts share: timing, profiling queues, the CuPy peers,
the JSON results."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def environment(**values: str):
    """Set environment variables for the block, then restore them (for the
    library's process-wide switches, such as ``CLJACOBI_MATRIX_PRODUCTS``)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def profiling_queue():
    """A queue with event profiling on the device ``CLJACOBI_DEVICE`` names."""
    import pyopencl as cl

    from cljacobi.host.device import default_queue

    base = default_queue()
    return cl.CommandQueue(base.context, base.device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


def announced_queue():
    """The default queue (``CLJACOBI_DEVICE``) and its device's name, printed
    as the first line of a benchmark's output."""
    from cljacobi.host.device import default_queue

    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# device: {device}")
    return queue, device


def stack_cases(args: Any) -> Any:
    """``(dtype, n, count, family)`` for every stack a batched benchmark's
    arguments ask for (``--dtypes``, ``--stacks`` as ``n x count``,
    ``--families``), in that nesting."""
    for dtype in args.dtypes:
        for text in args.stacks:
            n, count = (int(x) for x in text.split("x"))
            for family in args.families:
                yield dtype, n, count, family


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


def time_gpu_peers(names: list[str], repeat: int, peers: dict[str, tuple[str, Callable]],
                   report: Callable[..., None]) -> None:
    """Time the GPU peers among `names`: ``peers[name] = (label, prepare)``,
    ``prepare()`` puts the stack on the GPU and returns ``(call, to_host)``
    (``call()`` solves, synchronized; ``to_host(result)`` gives the arrays
    ``report(label, seconds, *arrays)`` takes).  A peer that cannot run (not
    installed, no CUDA, a solver error) is printed, not raised."""
    for name in names:
        if name not in peers:
            continue
        label, prepare = peers[name]
        try:
            call, to_host = prepare()
            seconds, _, result = median_time(call, repeat)
            report(label, seconds, *to_host(result))
        except Exception as error:  # noqa: BLE001 - a missing peer is reported
            print(f"# {name}: {error!r}")


def cupy_peer(solve: Callable[[Any, Any], tuple], stack: Any, check: int) -> Callable:
    """A :func:`time_gpu_peers` entry for CuPy: ``solve(cupy, device_stack)``
    on the stack copied to the GPU, the first `check` matrices of each
    result read back."""
    def prepare():
        import cupy

        on_device = cupy.asarray(stack)

        def call():
            result = solve(cupy, on_device)
            cupy.cuda.Device().synchronize()
            return result

        return call, lambda result: [cupy.asnumpy(x[:check]) for x in result]

    return prepare


def torch_peer(solve: Callable[[Any, Any], tuple], stack: Any, check: int) -> Callable:
    """:func:`cupy_peer` for PyTorch on CUDA: ``solve(torch, cuda_tensor)``."""
    def prepare():
        import torch

        on_device = torch.from_numpy(stack).cuda()

        def call():
            result = solve(torch, on_device)
            torch.cuda.synchronize()
            return result

        return call, lambda result: [x[:check].cpu().numpy() for x in result]

    return prepare


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
