"""Choosing the OpenCL device and the default command queue.

The device comes from the ``CLJACOBI_DEVICE`` environment variable:

* ``"P:D"`` -- platform index ``P``, device index ``D`` (as listed by
  :func:`list_devices`);
* any other text -- a case-insensitive substring of the platform name or the
  device name (``"nvidia"``, ``"pocl"``, ``"cpu"``); the first matching device
  with fp64 is taken;
* unset or empty -- the first GPU with fp64, else the first device with fp64.

Every public function also accepts ``queue=``; then this module is not
consulted at all.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass

import pyopencl as cl

from ..errors import DeviceCapabilityError, DeviceNotFoundError

__all__ = [
    "ENV_VAR",
    "DeviceEntry",
    "default_queue",
    "has_fp64",
    "list_devices",
    "require_fp64",
    "resolve_queue",
    "select_device",
]

ENV_VAR = "CLJACOBI_DEVICE"

_INDEX_SPEC = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


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
            f"[{self.platform.name.strip()}] {self.device.name.strip()} ({kind}, {fp64})"
        )


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
        ``"P:D"`` indices or a case-insensitive substring of the platform or
        device name. ``None`` reads ``CLJACOBI_DEVICE``; empty means automatic.

    Raises
    ------
    DeviceNotFoundError
        Nothing matches, or there is no OpenCL platform at all. The message
        names what was asked for and lists the devices seen.
    DeviceCapabilityError
        The devices that match lack fp64.
    """
    if spec is None:
        spec = os.environ.get(ENV_VAR, "")
    spec = spec.strip()
    entries = list_devices()
    if not entries:
        raise DeviceNotFoundError(f"{ENV_VAR}={spec!r}: {_seen(entries)}")

    if not spec:
        with_fp64 = [e for e in entries if has_fp64(e.device)]
        gpus = [e for e in with_fp64 if e.is_gpu]
        if gpus:
            return gpus[0].device
        if with_fp64:
            return with_fp64[0].device
        raise DeviceCapabilityError(
            f"no OpenCL device with double precision (fp64) was found; {_seen(entries)}"
        )

    index_match = _INDEX_SPEC.match(spec)
    if index_match:
        wanted = (int(index_match.group(1)), int(index_match.group(2)))
        matches = [e for e in entries if (e.platform_index, e.device_index) == wanted]
    else:
        needle = spec.lower()
        matches = [
            e
            for e in entries
            if needle in e.platform.name.lower() or needle in e.device.name.lower()
        ]
    if not matches:
        raise DeviceNotFoundError(f"{ENV_VAR}={spec!r} matches no OpenCL device; {_seen(entries)}")
    for entry in matches:
        if has_fp64(entry.device):
            return entry.device
    raise DeviceCapabilityError(
        f"{ENV_VAR}={spec!r} matches only devices without double precision (fp64); "
        f"{_seen(entries)}"
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
