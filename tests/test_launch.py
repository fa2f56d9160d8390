"""Launches without events (cljacobi.host.launch)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host import launch

SOURCE = """
__kernel void scaled_index(__global double *out, const double scale)
{
    out[get_global_id(0) + get_global_size(0) * get_global_id(1)] =
        scale * (get_global_id(0) + 1000 * get_global_id(1));
}
"""


@pytest.fixture
def kernel(queue):
    return cl.Program(queue.context, SOURCE).build().scaled_index


def _run(queue, kernel, global_size, local_size):
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * int(np.prod(global_size)))
    kernel.set_args(out, np.float64(0.5))
    launch.enqueue_kernel(queue, kernel, global_size, local_size)
    result = np.empty(global_size[::-1])
    cl.enqueue_copy(queue, result, out)
    return result


def test_the_loader_is_found():
    """On Linux the loader pyopencl loaded is found, so CI runs the launches
    without events."""
    assert launch.loader_enqueue() is not None


@pytest.mark.parametrize("global_size,local_size", [((64,), (16,)), ((32, 6), (8, 2)),
                                                    ((48,), None)])
def test_enqueue_kernel_runs_the_launch(queue, kernel, monkeypatch, global_size, local_size):
    """The launch runs with its arguments and sizes, without pyopencl's
    enqueue on a queue that does not profile."""
    called = []
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", lambda *a, **k: called.append(a))
    result = _run(queue, kernel, global_size, local_size)
    index = np.indices(global_size[::-1])  # (rows, columns) or (columns,)
    rows = index[0] if len(global_size) == 2 else 0
    np.testing.assert_array_equal(result, 0.5 * (index[-1] + 1000 * rows))
    assert called == []


def test_profiling_queue_keeps_the_events(queue, kernel, monkeypatch):
    """On a profiling queue the launch goes through pyopencl, whose events
    the profilers read."""
    profiling = cl.CommandQueue(queue.context, queue.device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
    enqueue, events = cl.enqueue_nd_range_kernel, []
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel",
                        lambda *a, **k: events.append(enqueue(*a, **k)))
    result = _run(profiling, kernel, (16,), (4,))
    np.testing.assert_array_equal(result, 0.5 * np.arange(16))
    assert len(events) == 1 and events[0].profile.end >= events[0].profile.start


def test_set_scalar_arg(queue, kernel, monkeypatch):
    """A scalar argument set through the loader is the one the launch sees,
    without pyopencl's set_arg."""
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 8)
    kernel.set_args(out, np.float64(1.0))
    assert launch.loader_set_arg() is not None
    monkeypatch.setattr(cl.Kernel, "set_arg", lambda *a: pytest.fail("pyopencl's set_arg"))
    launch.set_scalar_arg(kernel, 1, np.float64(-2.5))
    launch.enqueue_kernel(queue, kernel, (8,), (4,))
    result = np.empty(8)
    cl.enqueue_copy(queue, result, out)
    np.testing.assert_array_equal(result, -2.5 * np.arange(8))


def test_a_refused_argument_raises_pyopencls_error(kernel):
    """An argument of the wrong size (an int32 where the kernel takes a
    double) raises the error pyopencl names."""
    with pytest.raises(cl.Error, match="INVALID_ARG_SIZE"):
        launch.set_scalar_arg(kernel, 1, np.int32(3))


def test_a_refused_launch_raises_pyopencls_error(queue, kernel):
    """A launch the driver refuses (a local size that does not divide the
    global one) raises the error pyopencl names."""
    out = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 10)
    kernel.set_args(out, np.float64(1.0))
    with pytest.raises(cl.Error, match="INVALID_WORK_GROUP_SIZE"):
        launch.enqueue_kernel(queue, kernel, (10,), (4,))
