"""Device choice (CLJACOBI_DEVICE, queue=) and the limits checked before launch."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import cljacobi
from cljacobi.errors import DeviceCapabilityError, DeviceMemoryError, DeviceNotFoundError
from cljacobi.host import device as device_module
from cljacobi.host.device import ENV_VAR, list_devices, select_device
from cljacobi.host.limits import check_global_memory, check_local_memory, choose_work_group_size


def test_automatic_choice_has_fp64():
    chosen = select_device("")
    assert device_module.has_fp64(chosen)
    gpus = [e for e in list_devices() if e.is_gpu and device_module.has_fp64(e.device)]
    if gpus:
        assert chosen == gpus[0].device


def test_index_and_substring_specs(queue):
    entries = list_devices()
    target = next(e for e in entries if e.device == queue.device)
    by_index = select_device(f"{target.platform_index}:{target.device_index}")
    assert by_index == queue.device
    needle = target.device.name.strip()[:6].upper()  # case-insensitive
    assert device_module.has_fp64(select_device(needle))
    by_platform = select_device(target.platform.name.strip().lower())
    assert by_platform.platform == target.platform


@pytest.mark.parametrize("spec", ["no-such-device-xyz", "97:3"])
def test_no_match_lists_devices(spec):
    with pytest.raises(DeviceNotFoundError) as caught:
        select_device(spec)
    message = str(caught.value)
    assert spec in message and "devices seen" in message
    for entry in list_devices():
        assert entry.device.name.strip() in message


def test_env_var_is_read(monkeypatch, queue):
    monkeypatch.setenv(ENV_VAR, "no-such-device-xyz")
    with pytest.raises(DeviceNotFoundError, match="no-such-device-xyz"):
        cljacobi.eig_indefinite(np.array([[1.0, 2.0], [2.0, -1.0]]))
    # An explicit queue bypasses the variable.
    w = cljacobi.eig_indefinite(np.array([[1.0, 2.0], [2.0, -1.0]]), queue=queue, eigvals_only=True)
    assert np.allclose(w, [-np.sqrt(5), np.sqrt(5)])


def test_context_accepted(queue):
    M = np.array([[2.0, 1.0, 0.0], [1.0, -1.0, 3.0], [0.0, 3.0, 0.5]])
    w_ctx = cljacobi.eig_indefinite(M, queue=queue.context, eigvals_only=True)
    w_q = cljacobi.eig_indefinite(M, queue=queue, eigvals_only=True)
    assert np.array_equal(w_ctx, w_q)


class _FakeDevice:
    """Just the attributes the limit checks read."""

    name = "Fake Device"
    type = cl.device_type.GPU
    max_work_group_size = 64
    local_mem_size = 1024
    max_mem_alloc_size = 1 << 20
    global_mem_size = 3 << 20


def test_memory_limits_raise_before_launch():
    fake = _FakeDevice()
    with pytest.raises(DeviceMemoryError, match="Fake Device") as caught:
        check_global_memory(fake, {"G": 2 << 20})
    assert isinstance(caught.value, MemoryError)
    with pytest.raises(DeviceMemoryError, match="has 3.0 MiB"):
        check_global_memory(fake, {"G": 1 << 20, "V": 1 << 20, "W": 1 << 20, "D": 8})
    check_global_memory(fake, {"G": 1 << 20, "V": 1 << 20})


def test_local_memory_and_work_group_limits():
    fake = _FakeDevice()
    with pytest.raises(DeviceCapabilityError, match="local memory"):
        check_local_memory(fake, 4096, "a kernel")
    assert choose_work_group_size(fake, 10_000) == 64
    assert choose_work_group_size(fake, 3) == 16
    with pytest.raises(DeviceCapabilityError, match="maximal work-group size 64"):
        choose_work_group_size(fake, 100, requested=128)
    with pytest.raises(ValueError, match="power of two"):
        choose_work_group_size(fake, 100, requested=48)


def test_huge_problem_is_refused_before_launch(queue):
    """A G that cannot fit the device memory fails with MemoryError, not in a kernel."""
    from cljacobi.host.pointwise import PointwiseHSVD

    n = int(np.sqrt(queue.device.global_mem_size / 8)) + 64

    class _Huge:  # behaves like an (n x n) float64 array for the size computation only
        shape = (n, n)

    with pytest.raises(DeviceMemoryError):
        PointwiseHSVD(queue, accumulate_v=True).run(_Huge(), np.ones(n, dtype=np.int8), max_sweeps=1)


def _pocl_entries():
    return [e for e in list_devices() if "pocl" in e.platform.version.lower()]


@pytest.mark.parametrize("spec", ["pocl", "PoCL", "cpu", "CPU"])
def test_readme_selectors_find_the_cpu_device(spec):
    """The selectors README shows for the CPU device work with PoCL's real names
    (platform "Portable Computing Language", device named after the CPU model)."""
    assert _pocl_entries(), "the install provides PoCL"
    chosen = select_device(spec)
    entry = next(e for e in list_devices() if e.device == chosen)
    assert device_module.compiler_error(chosen) is None
    if spec.lower() == "pocl":
        assert "pocl" in entry.platform.version.lower()
    else:
        assert chosen.type & cl.device_type.CPU


def test_nvidia_selector_finds_nvidia_or_says_what_it_saw():
    nvidia = [e for e in list_devices() if "nvidia" in e.platform.name.lower()]
    if nvidia:
        assert select_device("nvidia").platform == nvidia[0].platform
    else:
        with pytest.raises(DeviceNotFoundError, match="devices seen"):
            select_device("nvidia")


def test_device_that_cannot_compile_is_passed_over(monkeypatch):
    """A runtime whose compiler fails the probe is skipped for a working one, and
    when every match fails the error carries the compiler's message."""
    usable = [e for e in list_devices() if device_module.has_fp64(e.device)]
    first = usable[0].device
    real = device_module.compiler_error

    def broken_first(device):
        return "error: unknown target CPU 'generic'" if device == first else real(device)

    monkeypatch.setattr(device_module, "compiler_error", broken_first)
    spec = f"{usable[0].platform_index}:{usable[0].device_index}"
    with pytest.raises(DeviceCapabilityError, match="unknown target CPU 'generic'"):
        select_device(spec)
    if any(real(e.device) is None for e in usable[1:]):
        chosen = select_device("")
        assert chosen != first and real(chosen) is None


def test_device_listing_command(capsys):
    assert device_module.main(["--check"]) == 0
    out = capsys.readouterr().out
    for entry in list_devices():
        assert entry.device.name.strip() in out
        assert f"work-groups up to {entry.device.max_work_group_size} items" in out
    assert "selected:" in out and "local memory" in out


def test_check_runs_a_kernel_in_a_child_process(monkeypatch, capsys):
    """--check runs the probe kernel on the selected device in a child process
    (the same exact values here), reports a child's crash or wrong values
    with the reason, and then exits with status 1."""
    selected = select_device()
    assert device_module.run_error(selected) is None
    monkeypatch.setattr(device_module, "_RUN_PROBE", "import os; os.abort()")
    assert "killed by SIGABRT" in device_module.run_error(selected)
    monkeypatch.setattr(device_module, "_RUN_PROBE",
                        "import sys; sys.exit('8-wide fma gave wrong values')")
    assert device_module.run_error(selected).endswith("(exit status 1: 8-wide fma gave wrong values)")
    capsys.readouterr()
    assert device_module.main(["--check"]) == 1
    assert "check: a probe kernel with 8-wide double vectors failed" in capsys.readouterr().out
    assert device_module.main([]) == 0  # the listing alone runs no probe


def test_show_devices_says_why(monkeypatch, capsys):
    """cljacobi.show_devices names the selected device and the rule that chose it."""
    import io

    import cljacobi

    usable = [e for e in list_devices() if device_module.compiler_error(e.device) is None
              and device_module.has_fp64(e.device)]
    spec = f"{usable[0].platform_index}:{usable[0].device_index}"
    monkeypatch.setenv(device_module.ENV_VAR, spec)
    buffer = io.StringIO()
    cljacobi.show_devices(file=buffer)
    text = buffer.getvalue()
    assert f"selected: {usable[0].device.name.strip()}" in text
    assert f"{spec!r} names platform:device indices" in text
    assert "unset" in device_module.selection_reason("")
    assert "device type" in device_module.selection_reason("cpu")
    assert "matched against" in device_module.selection_reason("pocl")
    monkeypatch.setenv(device_module.ENV_VAR, "no-such-device-xyz")
    assert device_module.main(["--check"]) == 1
    assert "no usable device" in capsys.readouterr().out


def test_build_logs_go_to_the_debug_logger(caplog):
    """A successful build's log (a CompilerWarning from pyopencl) is logged at
    DEBUG naming what was built; other warnings still reach the caller."""
    import logging
    import types
    import warnings

    from cljacobi.host.programs import built

    class Program:
        def build(self, devices):
            warnings.warn("Build on <device> succeeded, but said: 1 warning generated.",
                          cl.CompilerWarning, stacklevel=2)
            warnings.warn("not the compiler's", UserWarning, stacklevel=2)
            return self

        def get_build_info(self, device, what):
            return "1 warning generated."

    program = Program()
    fake_device = types.SimpleNamespace(name=" Fake device ")
    with caplog.at_level(logging.DEBUG, logger="cljacobi"), \
            warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert built(program, fake_device, "the probe") is program
    assert [w.category for w in seen] == [UserWarning]
    assert "the probe" in caplog.text and "1 warning generated." in caplog.text


def test_device_probe_build_log_is_not_warned(queue, monkeypatch):
    """The double precision probe of device selection builds through the same
    path: a compiler's log does not become a warning on the user's line."""
    import warnings

    original = cl.Program.build

    def build_with_log(self, *args, **kwargs):
        program = original(self, *args, **kwargs)
        warnings.warn("Build succeeded, but said: 1 warning generated.", cl.CompilerWarning,
                      stacklevel=2)
        return program

    monkeypatch.setattr(cl.Program, "build", build_with_log)
    monkeypatch.setattr(device_module, "_probe_results", {})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert device_module.compiler_error(queue.device) is None
    assert not [w for w in seen if issubclass(w.category, cl.CompilerWarning)]
