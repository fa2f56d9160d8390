"""Device limits checked up front: memory, local memory, work-group size and
fp64 fail with errors naming the device and the limit, before the host
factorization and before any launch."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import cljacobi
from cljacobi import _solve as pipeline
from cljacobi import eig as eig_module
from cljacobi import hyperbolic_svd as hsvd_module
from cljacobi.errors import DeviceCapabilityError, DeviceMemoryError
from cljacobi.host import pointwise_plan as plan_module
from cljacobi.host.operands import Operands
from cljacobi.host.pointwise import PointwiseHSVD
from cljacobi.host.pointwise_plan import PointwisePlan, PointwiseSpec
from cljacobi.host.preflight import pointwise_footprint, preflight


class _Device:
    """A device with adjustable limits (only what the checks read)."""

    def __init__(self, **limits):
        self.name = "Tiny Test Device"
        self.type = cl.device_type.GPU
        self.extensions = "cl_khr_fp64"
        self.double_fp_config = 1
        self.max_work_group_size = 256
        self.local_mem_size = 48 * 1024
        self.max_mem_alloc_size = 1 << 30
        self.global_mem_size = 4 << 30
        for key, value in limits.items():
            setattr(self, key, value)


class _Queue:
    def __init__(self, device):
        self.device = device


@pytest.fixture
def fake_device(monkeypatch):
    """Route eig_indefinite/hsvd to a fake device; fail if work starts anyway."""

    def install(**limits):
        device = _Device(**limits)
        monkeypatch.setattr(pipeline, "resolve_queue", lambda queue: _Queue(device))

        def refuse(*args, **kwargs):
            raise AssertionError("work started although the device cannot take the problem")

        monkeypatch.setattr(eig_module, "j_factorize", refuse)
        monkeypatch.setattr(pipeline, "PointwiseHSVD", refuse)
        monkeypatch.setattr(hsvd_module, "shorten", refuse)
        return device

    return install


def test_memory_need_is_computed_up_front(fake_device):
    n = 300
    fake_device(global_mem_size=8 * n * n // 2, max_mem_alloc_size=8 * n * n // 2)
    with pytest.raises(DeviceMemoryError, match="Tiny Test Device") as caught:
        cljacobi.eig_indefinite(np.eye(n))
    assert isinstance(caught.value, MemoryError)
    assert "MiB" in str(caught.value)


def test_total_memory_includes_v_for_hsvd(fake_device):
    n = 200
    need_g = pointwise_footprint(n, n, accumulate_v=False)
    fake_device(global_mem_size=sum(need_g.values()) + 64)
    G = np.eye(n)
    with pytest.raises(DeviceMemoryError, match="device 'Tiny Test Device' has"):
        cljacobi.hsvd(G, np.ones(n))
    with pytest.raises(AssertionError, match="work started"):  # fits without V
        cljacobi.hsvd(G, np.ones(n), compute_uv=False)


def test_no_fp64_is_a_clear_error(fake_device):
    fake_device(extensions="cl_khr_global_int32_base_atomics", double_fp_config=0)
    with pytest.raises(DeviceCapabilityError, match="'Tiny Test Device' has no double precision"):
        cljacobi.eig_indefinite(np.eye(3))
    with pytest.raises(DeviceCapabilityError, match="fp64"):
        cljacobi.hsvd(np.eye(3), np.ones(3))
    # Float32 input passes the check: it runs the single precision kernels there.
    with pytest.raises(AssertionError, match="work started"):
        cljacobi.eig_indefinite(np.eye(3, dtype=np.float32))


def test_local_memory_limit(fake_device):
    fake_device(local_mem_size=64)
    with pytest.raises(DeviceCapabilityError, match=r"local memory .*'Tiny Test Device' has 64"):
        cljacobi.eig_indefinite(np.eye(40))


def test_work_group_limit(fake_device):
    fake_device(max_work_group_size=0)
    with pytest.raises(DeviceCapabilityError, match="work-groups of at most 0"):
        cljacobi.eig_indefinite(np.eye(4))


def test_small_problems_need_no_device(fake_device):
    fake_device(global_mem_size=0, extensions="", double_fp_config=0)
    assert cljacobi.eig_indefinite(np.array([[2.0]]), eigvals_only=True).tolist() == [2.0]


@pytest.mark.parametrize(
    "m,r,accumulate_v", [(1, 1, False), (5, 3, True), (64, 64, True), (100, 33, False)]
)
def test_footprint_matches_the_driver(m, r, accumulate_v, queue, monkeypatch, rng):
    """The up-front estimate covers exactly the buffers the driver checks and allocates
    (the driver allocates the sizes of the plan it checks)."""
    seen = {}

    def record(device, buffers):
        seen.update(buffers)

    monkeypatch.setattr(plan_module, "check_global_memory", record)
    G = rng.standard_normal((m, r))
    signs = np.ones(r, dtype=np.int8)
    PointwiseHSVD(queue, accumulate_v=accumulate_v).run(G, signs, max_sweeps=1)
    footprint = pointwise_footprint(m, r, accumulate_v)
    assert seen == footprint
    preflight(queue, rows=m, columns=r, accumulate_v=accumulate_v)  # the real device: fits


# --- the plan the checks and the driver share ---------------------------------------------


def test_plan_decides_every_size_once():
    device = _Device()
    plan = PointwisePlan.for_device(device, 100, 33, np.float64, accumulate_v=True)
    # one border column in a new row; leading dimensions rounded up to 32
    assert (plan.columns, plan.rows, plan.ldg, plan.ldv) == (34, 101, 128, 64)
    assert plan.work_group_size == 128  # the smallest power of two >= 101 rows (GPU: <= 256)
    assert plan.spec == PointwiseSpec("float64", 128, True)
    assert plan.buffers == pointwise_footprint(100, 33, True)
    ring = PointwisePlan.for_device(device, 100, 33, np.complex128, accumulate_v=False,
                                    layout="split", strategy="ring", column_multiple=16)
    assert (ring.columns, ring.rows, ring.slots) == (48, 115, 24)
    assert ring.spec == PointwiseSpec("complex128", 128, False, "split", strategy="table")
    assert ring.buffers["G"] == 16 * 128 * 48
    assert ring.buffers["step table"] == 8 * 24 * 47 * 2  # both ring sweeps' tables
    no_fp64 = _Device(extensions="", double_fp_config=0)
    single = PointwisePlan.for_device(no_fp64, 10, 10, np.float64, accumulate_v=False,
                                      single=True)
    assert single.spec.dtype == "float32" and single.buffers["G"] == 4 * 32 * 10
    with pytest.raises(DeviceCapabilityError, match="no double precision"):
        PointwisePlan.for_device(no_fp64, 10, 10, np.float64, accumulate_v=False)
    with pytest.raises(DeviceCapabilityError,
                       match="maximal work-group size 256 of device 'Tiny Test Device'"):
        PointwisePlan.for_device(device, 10, 10, np.float64, accumulate_v=False,
                                 work_group_size=512)


def test_plan_narrows_the_work_group_to_the_compiled_kernels(monkeypatch):
    """A kernel that takes fewer work-items than planned (register pressure)
    halves the planned size; a requested size is refused instead."""

    built = []
    monkeypatch.setattr(plan_module, "work_group_limit",
                        lambda context, device, spec: built.append(spec) or 32)
    plan = PointwisePlan.for_device(_Device(), 200, 10, np.float64, accumulate_v=False,
                                    context=object())
    assert plan.work_group_size == 32
    assert [spec.work_group_size for spec in built] == [256, 128, 64, 32]
    with pytest.raises(DeviceCapabilityError, match="at most 32 work-items per work-group on "
                       "device 'Tiny Test Device'; 64 were requested"):
        PointwisePlan.for_device(_Device(), 200, 10, np.float64, accumulate_v=False,
                                 work_group_size=64, context=object())


def test_plan_refuses_operands_of_another_geometry():
    def operands(ldg):
        return Operands(None, ldg, 11, 10, None, 32, 10, 9, np.ones(9), np.dtype(np.float64))

    plan = PointwisePlan.for_operands(_Device(), operands(32), accumulate_v=False)
    assert (plan.columns, plan.rows, plan.ldg, plan.ldv) == (10, 11, 32, 32)
    with pytest.raises(ValueError, match="ldg"):
        PointwisePlan.for_operands(_Device(), operands(64), accumulate_v=False)
