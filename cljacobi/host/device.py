"""Choosing the OpenCL device and the default command queue.

The device comes from the ``CLJACOBI_DEVICE`` environment variable:

* ``"P:D"`` -- platform index ``P``, device index ``D`` (as listed by
  :func:`list_devices`);
* ``"cpu"``, ``"gpu"`` or ``"accelerator"`` -- the first device of that type
  (or whose names contain the word);
* any other text -- a case-insensitive substring of the platform's name,
  vendor or version, or of the device's name or vendor (``"nvidia"``,
  ``"pocl"``: PoCL names its platform "Portable Computing Language" and puts
  "PoCL" in the version, its CPU device after the CPU model);
* unset or empty -- the first GPU with fp64, else the first device with fp64.

Among the matching devices with fp64 the first whose OpenCL C compiler builds
a small double precision kernel is taken (:func:`compiler_error`; one probe
build per device and process), so a runtime that cannot compile for this
machine (for example PoCL 3.0 with LLVM 14 on a CPU that LLVM does not know,
"unknown target CPU 'generic'") is passed over for a working one.
``python -m cljacobi`` (:func:`show_devices`) lists the devices, their limits
and what the probe found, and which device is selected and why; with
``--check`` it also runs a kernel on the selected device in a child process
(:func:`run_error`), since a compiler that builds the probe may still crash
the process that runs a kernel (PoCL 3.0 with LLVM 14 on AMD Zen 4).

Every public function also accepts ``queue=``; then this module is not
consulted at all.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass

import pyopencl as cl

from ..errors import DeviceCapabilityError, DeviceNotFoundError
from .matrix_products import compute_capability, native_mma
from .programs import built

__all__ = [
    "ENV_VAR",
    "DeviceEntry",
    "compiler_error",
    "default_queue",
    "has_fp64",
    "list_devices",
    "require_fp64",
    "resolve_queue",
    "run_error",
    "select_device",
    "selection_reason",
    "show_devices",
]

ENV_VAR = "CLJACOBI_DEVICE"

_INDEX_SPEC = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")

#: Selector words that name a device type.
_DEVICE_TYPES = {
    "cpu": cl.device_type.CPU,
    "gpu": cl.device_type.GPU,
    "accelerator": cl.device_type.ACCELERATOR,
}

#: What the compiler probe builds: one double precision kernel.
_PROBE_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void cjac_probe(__global double *x) { x[get_global_id(0)] *= 2.0; }
"""


#: What :func:`run_error` runs in a child process on the device at
#: ``argv[1:3]`` ("P D"): 8-wide double vectors through OpenCL built-ins
#: (vload8, fma, vstore8), checked against exact values.  PoCL 3.0 with LLVM
#: 14 on AMD Zen 4 compiles for a target without AVX-512F but links its
#: AVX-512 built-in library, and a double8 passed to a built-in aborts the process
#: when the kernel is compiled at its first run ("Cannot select: i64 =
#: fma") or faults in it (vstore8).
_RUN_PROBE = """
import sys
import numpy as np
import pyopencl as cl
device = cl.get_platforms()[int(sys.argv[1])].get_devices()[int(sys.argv[2])]
context = cl.Context([device])
queue = cl.CommandQueue(context, device)
program = cl.Program(context, '''
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void cjac_probe(__global double *x)
{
    const double8 a = vload8(get_global_id(0), x);
    vstore8(fma(a, a, a), get_global_id(0), x);
}''').build()
x = np.arange(32, dtype=np.float64)
buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
program.cjac_probe(queue, (4,), None, buffer)
out = np.empty_like(x)
cl.enqueue_copy(queue, out, buffer)
if not np.array_equal(out, x * x + x):
    sys.exit("8-wide fma gave wrong values")
"""


@dataclass(frozen=True)
class DeviceEntry:
    """One device as enumerated: its indices, the objects and a description."""

    platform_index: int
    device_index: int
    platform: cl.Platform
    device: cl.Device

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & cl.device_type.GPU)

    def describe(self) -> str:
        kind = cl.device_type.to_string(self.device.type)
        fp64 = "fp64" if has_fp64(self.device) else "no fp64"
        return (
            f"{self.platform_index}:{self.device_index} "
            f"[{self.platform.name.strip()}, {' '.join(self.platform.version.split()[:4])}] "
            f"{self.device.name.strip()} ({kind}, {fp64})"
        )

    def matches(self, needle: str) -> bool:
        """Whether the lower-case selector `needle` names this device."""
        kind = _DEVICE_TYPES.get(needle)
        if kind is not None and self.device.type & kind:
            return True
        names = (self.platform.name, self.platform.vendor, self.platform.version,
                 self.device.name, self.device.vendor)
        return any(needle in name.lower() for name in names)


def has_fp64(device: cl.Device) -> bool:
    """Whether `device` supports double precision (``cl_khr_fp64`` or OpenCL 3 fp config)."""
    if "cl_khr_fp64" in device.extensions.split():
        return True
    try:
        return bool(device.double_fp_config)
    except cl.Error:
        return False


def require_fp64(device: cl.Device) -> None:
    """Raise :class:`DeviceCapabilityError` unless `device` has fp64."""
    if not has_fp64(device):
        raise DeviceCapabilityError(
            f"device {device.name.strip()!r} has no double precision (cl_khr_fp64); "
            "float64/complex128 computations need it. Choose another device with "
            f"{ENV_VAR} or pass queue=."
        )


_probe_results: dict[int, str | None] = {}
_probe_lock = threading.Lock()


def compiler_error(device: cl.Device) -> str | None:
    """None if `device`'s compiler builds a double precision kernel, else its message.

    The result is kept per device for the life of the process.
    """
    with _probe_lock:
        key = device.int_ptr
        if key not in _probe_results:
            try:
                built(cl.Program(cl.Context([device]), _PROBE_SOURCE), device,
                      "the double precision probe")
                _probe_results[key] = None
            except cl.Error as error:
                lines = [line.strip() for line in str(error).splitlines() if line.strip()]
                errors = [line for line in lines if "error" in line.lower()]
                _probe_results[key] = (errors or lines or ["the build failed"])[-1]
        return _probe_results[key]


def run_error(device: cl.Device, timeout: float = 300) -> str | None:
    """None if a double precision kernel with 8-wide vectors builds, runs and
    gives the exact values on `device` in a child process (which finds it by
    its :func:`list_devices` indices), else what went wrong (a crash of the
    device's compiler included: the child, not this process, dies).
    ``python -m cljacobi --check`` runs it."""
    entry = next(e for e in list_devices() if e.device.int_ptr == device.int_ptr)
    try:
        child = subprocess.run(
            [sys.executable, "-c", _RUN_PROBE, str(entry.platform_index),
             str(entry.device_index)], capture_output=True, text=True, timeout=timeout,
            check=False)
    except subprocess.TimeoutExpired:
        return f"a probe kernel did not finish in {timeout:g} s"
    if child.returncode == 0:
        return None
    errors = [line.strip() for line in child.stderr.splitlines()
              if "error" in line.lower() or line.startswith("8-wide")]
    if child.returncode < 0:
        died = f"killed by {signal.Signals(-child.returncode).name}"
    else:
        died = f"exit status {child.returncode}"
    return (f"a probe kernel with 8-wide double vectors failed in a child process "
            f"({died}{': ' + errors[-1] if errors else ''})")


def list_devices() -> list[DeviceEntry]:
    """All OpenCL devices of all platforms, in platform/device index order."""
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    entries = []
    for p_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        for d_index, device in enumerate(devices):
            entries.append(DeviceEntry(p_index, d_index, platform, device))
    return entries


def _seen(entries: list[DeviceEntry]) -> str:
    if not entries:
        return (
            "no OpenCL platform or device was found at all; "
            "`pip install cljacobi[pocl]` provides a CPU device"
        )
    return "devices seen:\n  " + "\n  ".join(e.describe() for e in entries)


def select_device(spec: str | None = None) -> cl.Device:
    """Return the device named by `spec` (default: the ``CLJACOBI_DEVICE`` variable).

    Parameters
    ----------
    spec : str, optional
        ``"P:D"`` indices, a device type (``"cpu"``, ``"gpu"``,
        ``"accelerator"``) or a case-insensitive substring of the platform's
        name, vendor or version or the device's name or vendor. ``None``
        reads ``CLJACOBI_DEVICE``; empty means automatic.

    Raises
    ------
    DeviceNotFoundError
        Nothing matches, or there is no OpenCL platform at all. The message
        names what was asked for and lists the devices seen.
    DeviceCapabilityError
        The devices that match lack fp64, or none of their compilers builds
        a double precision kernel (:func:`compiler_error`).
    """
    if spec is None:
        spec = os.environ.get(ENV_VAR, "")
    spec = spec.strip()
    entries = list_devices()
    if not entries:
        raise DeviceNotFoundError(f"{ENV_VAR}={spec!r}: {_seen(entries)}")

    if not spec:
        candidates = sorted(entries, key=lambda e: not e.is_gpu)  # GPUs first, stable
        wanted = "automatic choice"
    else:
        index_match = _INDEX_SPEC.match(spec)
        if index_match:
            indices = (int(index_match.group(1)), int(index_match.group(2)))
            candidates = [e for e in entries if (e.platform_index, e.device_index) == indices]
        else:
            candidates = [e for e in entries if e.matches(spec.lower())]
        if not candidates:
            raise DeviceNotFoundError(
                f"{ENV_VAR}={spec!r} matches no OpenCL device; {_seen(entries)}"
            )
        wanted = f"{ENV_VAR}={spec!r}"
    with_fp64 = [e for e in candidates if has_fp64(e.device)]
    if not with_fp64:
        raise DeviceCapabilityError(
            f"{wanted}: no matching OpenCL device has double precision (fp64); "
            f"{_seen(entries)}"
        )
    failures = []
    for entry in with_fp64:
        error = compiler_error(entry.device)
        if error is None:
            return entry.device
        failures.append(f"{entry.describe()}: {error}")
    raise DeviceCapabilityError(
        f"{wanted}: the OpenCL C compiler of every matching device with fp64 failed to "
        "build a test kernel:\n  " + "\n  ".join(failures) + "\n"
        "(PoCL 3.0 from pip cannot compile for CPUs its LLVM 14 does not know; "
        "a newer PoCL, e.g. Debian's pocl-opencl-icd, can.)"
    )


_queues: dict[str, cl.CommandQueue] = {}
_queues_lock = threading.Lock()


def default_queue() -> cl.CommandQueue:
    """The process-wide queue for the device ``CLJACOBI_DEVICE`` names.

    One context and in-order queue per distinct value of the variable, created
    on first use and reused afterwards.
    """
    spec = os.environ.get(ENV_VAR, "").strip()
    with _queues_lock:
        queue = _queues.get(spec)
        if queue is None:
            device = select_device(spec)
            context = cl.Context([device])
            queue = cl.CommandQueue(context, device)
            _queues[spec] = queue
        return queue


def resolve_queue(queue: cl.CommandQueue | cl.Context | None) -> cl.CommandQueue:
    """The queue to run on: `queue` itself, a new queue on a given context, or the default."""
    if queue is None:
        return default_queue()
    if isinstance(queue, cl.CommandQueue):
        return queue
    if isinstance(queue, cl.Context):
        return cl.CommandQueue(queue, queue.devices[0])
    raise TypeError(
        f"queue must be a pyopencl.CommandQueue, a pyopencl.Context or None, "
        f"not {type(queue).__name__}"
    )


def _size(nbytes: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= factor:
            return f"{nbytes / factor:.3g} {unit}"
    return f"{nbytes} B"


def selection_reason(spec: str | None = None) -> str:
    """Why `spec` (default: ``CLJACOBI_DEVICE``) selects the device it does:
    the rule of :func:`select_device` that applied, in words."""
    if spec is None:
        spec = os.environ.get(ENV_VAR, "")
    spec = spec.strip()
    if not spec:
        return (f"{ENV_VAR} is unset: the first GPU with fp64 whose compiler builds a "
                "double precision kernel, else the first such device")
    if _INDEX_SPEC.match(spec):
        return f"{ENV_VAR}={spec!r} names platform:device indices"
    if spec.lower() in _DEVICE_TYPES:
        return (f"{ENV_VAR}={spec!r} names a device type: the first such device with fp64 "
                "whose compiler builds a double precision kernel")
    return (f"{ENV_VAR}={spec!r} is matched against the platform's name, vendor and version "
            "and the device's name and vendor: the first match with fp64 whose compiler "
            "builds a double precision kernel")


def show_devices(file=None) -> None:
    """Print the OpenCL devices, what cljacobi needs of each, and the selection.

    One block a device: its ``P:D`` index (what ``CLJACOBI_DEVICE="P:D"``
    takes), platform and version, type, fp64 and whether the OpenCL C
    compiler builds cljacobi's double precision probe kernel, compute units,
    global memory and its largest allocation, local memory and the largest
    work-group, and for NVIDIA devices the compute capability and whether
    the blocked kernels use its FP64 tensor cores
    (:mod:`cljacobi.host.matrix_products`); then which device ``CLJACOBI_DEVICE`` selects and why, or
    why none can be used.  ``python -m cljacobi`` prints this.

    Parameters
    ----------
    file : file-like, optional
        Where to print (default ``sys.stdout``).
    """
    file = sys.stdout if file is None else file
    entries = list_devices()
    if not entries:
        print(_seen(entries), file=file)
    for entry in entries:
        device = entry.device
        status = compiler_error(device) if has_fp64(device) else "no fp64"
        print(f"{entry.describe()}: {status or 'builds fp64 kernels'}", file=file)
        print(f"    compute units {device.max_compute_units}, global memory "
              f"{_size(device.global_mem_size)} (largest allocation "
              f"{_size(device.max_mem_alloc_size)}), local memory "
              f"{_size(device.local_mem_size)}, work-groups up to "
              f"{device.max_work_group_size} items", file=file)
        capability = compute_capability(device)
        if capability is not None:
            print(f"    compute capability {capability[0]}.{capability[1]}, blocked Gram and "
                  f"update kernels on {native_mma(device) or 'fma (no FP64 tensor cores)'}",
                  file=file)
    try:
        device = select_device()
    except (DeviceNotFoundError, DeviceCapabilityError) as error:
        print(f"no usable device: {error}", file=file)
        return
    print(f"selected: {device.name.strip()} [{device.platform.name.strip()}]; "
          f"{selection_reason()}", file=file)


def main(argv: list[str] | None = None) -> int:
    """List the OpenCL devices and whether each builds double precision kernels.

    With ``--check`` the exit status is 1 when the device ``CLJACOBI_DEVICE``
    selects (automatic when unset) cannot be used, or fails to run a probe
    kernel in a child process (:func:`run_error`), so that an install script
    can react.
    """
    parser = argparse.ArgumentParser(prog="python -m cljacobi",
                                     description="List the OpenCL devices cljacobi can use.")
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 unless a usable fp64 device is selected "
                             "and runs a probe kernel in a child process")
    args = parser.parse_args(argv)
    show_devices()
    try:
        device = select_device()
    except (DeviceNotFoundError, DeviceCapabilityError):
        return 1 if args.check else 0
    if not args.check:
        return 0
    error = run_error(device)
    print(f"check: {error or 'the selected device runs a probe kernel with 8-wide double vectors'}")
    return 1 if error else 0
