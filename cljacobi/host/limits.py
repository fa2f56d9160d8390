"""Device limits, checked before anything is launched.

Each check raises an error that names the device and the limit, so a problem
that cannot run on a device fails up front instead of inside a kernel.
"""

from __future__ import annotations

import pyopencl as cl

from ..errors import DeviceCapabilityError, DeviceMemoryError
from .matrix_products import compute_capability
from .sizes import check_power_of_two

__all__ = [
    "MIN_WORK_GROUP_SIZE",
    "STATIC_LOCAL_MEMORY_NV90",
    "check_global_memory",
    "check_local_memory",
    "check_work_group_size",
    "choose_work_group_size",
    "static_local_memory",
]

#: The smallest work-group the kernels are written for.
MIN_WORK_GROUP_SIZE = 1

#: Smallest work-group chosen automatically (fewer program variants to build).
_WORK_GROUP_FLOOR = 16

#: Largest work-group the pointwise kernels use, by device class: a GPU wants
#: many rows in flight per column pair; a CPU device runs a work-group on one
#: core, where a moderate width vectorizes and keeps the local reductions short.
_WORK_GROUP_CAP = {"gpu": 256, "other": 64}


def _device_name(device: cl.Device) -> str:
    return device.name.strip()


def choose_work_group_size(device: cl.Device, rows: int, *, requested: int | None = None) -> int:
    """Work-items per work-group for a kernel streaming columns of `rows` entries.

    The smallest power of two covering `rows`, capped by the device class and
    by the device's ``max_work_group_size``.  An explicit `requested` size
    must be a power of two the device accepts.
    """
    device_max = int(device.max_work_group_size)
    if requested is not None:
        check_power_of_two("work_group_size", requested)
        if requested > device_max:
            raise DeviceCapabilityError(
                f"work_group_size={requested} exceeds the maximal work-group size "
                f"{device_max} of device {_device_name(device)!r}"
            )
        return requested
    if device_max < MIN_WORK_GROUP_SIZE:
        raise DeviceCapabilityError(
            f"device {_device_name(device)!r} allows work-groups of at most {device_max} "
            f"work-items; cljacobi needs {MIN_WORK_GROUP_SIZE}"
        )
    cap = _WORK_GROUP_CAP["gpu" if device.type & cl.device_type.GPU else "other"]
    size = _WORK_GROUP_FLOOR
    while size < rows and size < cap:
        size *= 2
    while size > device_max:
        size //= 2
    return size


#: Bytes of local memory a work-group's static ``__local`` arrays may take on
#: an NVIDIA device of compute capability 9.0 or later (H100, H200), beyond
#: the 48 KB its OpenCL reports: the shared memory a block may have there
#: is 227 KB, and a kernel whose static arrays take 224 KB builds and runs
#: (checked against numpy on an H200), while 227 KB does not build.  Local
#: memory given as a kernel argument stays within the reported 48 KB
#: (bench/README.md, "Static local memory beyond 48 KB").
STATIC_LOCAL_MEMORY_NV90 = 224 * 1024


def static_local_memory(device: cl.Device) -> int:
    """Bytes of local memory per work-group for a kernel's static ``__local``
    arrays: :data:`STATIC_LOCAL_MEMORY_NV90` on NVIDIA devices of compute
    capability 9.0 and later, else the device's ``local_mem_size``."""
    reported = int(device.local_mem_size)
    capability = compute_capability(device)
    if capability is not None and capability >= (9, 0):
        return max(reported, STATIC_LOCAL_MEMORY_NV90)
    return reported


def check_local_memory(device: cl.Device, nbytes: int, what: str,
                       available: int | None = None) -> None:
    """Raise if `nbytes` of local memory per work-group exceed `available`
    (default the device's ``local_mem_size``; :func:`static_local_memory`
    for kernels whose local arrays are all static)."""
    if available is None:
        available = int(device.local_mem_size)
    if nbytes > available:
        raise DeviceCapabilityError(
            f"{what} needs {nbytes} bytes of local memory per work-group; device "
            f"{_device_name(device)!r} has {available}"
        )


def check_work_group_size(device: cl.Device, size: int, what: str, detail: str = "") -> None:
    """Raise :class:`DeviceCapabilityError` if `what` needs work-groups of
    more than the device's ``max_work_group_size`` work-items (`detail`
    appended to the message)."""
    available = int(device.max_work_group_size)
    if size > available:
        raise DeviceCapabilityError(
            f"{what} needs work-groups of {size} work-items; device "
            f"{_device_name(device)!r} allows {available}{detail}")


def check_global_memory(device: cl.Device, buffers: dict[str, int]) -> None:
    """Raise :class:`DeviceMemoryError` if the named buffers cannot be allocated.

    Checks every buffer against ``max_mem_alloc_size`` and the total against
    ``global_mem_size``.
    """
    name = _device_name(device)
    max_alloc = int(device.max_mem_alloc_size)
    for label, nbytes in buffers.items():
        if nbytes > max_alloc:
            raise DeviceMemoryError(
                f"buffer {label!r} needs {nbytes / 2**20:.1f} MiB; device {name!r} allocates "
                f"at most {max_alloc / 2**20:.1f} MiB in one buffer"
            )
    total = sum(buffers.values())
    available = int(device.global_mem_size)
    if total > available:
        raise DeviceMemoryError(
            f"the problem needs {total / 2**20:.1f} MiB of device memory; device {name!r} "
            f"has {available / 2**20:.1f} MiB"
        )
