"""Everything a pointwise run needs from the device, checked before any work.

:func:`pointwise_footprint` computes the device buffers of
:class:`~cljacobi.host.pointwise.PointwiseHSVD` for a given problem size (the
same bordering and padding, eq. (4.1) of Novaković & Singer 2011), so the
public functions can refuse a problem that does not fit *before* the
O(n^3) factorization on the host and before any launch.
"""

from __future__ import annotations

import pyopencl as cl

from .device import require_fp64
from .diagonal import DIAG_DTYPE
from .limits import check_global_memory, check_local_memory, choose_work_group_size
from .operands import ROW_ALIGNMENT
from .sizes import REAL_ELEMENT_BYTES, round_up

__all__ = ["pointwise_footprint", "preflight"]


def pointwise_footprint(
    rows: int, columns: int, accumulate_v: bool, element_bytes: int = REAL_ELEMENT_BYTES
) -> dict[str, int]:
    """Bytes of every device buffer of a pointwise run on a ``rows x columns`` factor
    with `element_bytes` per matrix element (8 float64, 16 complex128)."""
    bordered = columns % 2
    r_pad = columns + bordered
    ldg = round_up(max(rows + bordered, 1), ROW_ALIGNMENT)
    ldv = round_up(r_pad, ROW_ALIGNMENT)
    slots = r_pad // 2
    buffers = {"G": element_bytes * ldg * r_pad}
    if accumulate_v:
        buffers["V"] = element_bytes * ldv * r_pad
    buffers["packed diagonal"] = DIAG_DTYPE.itemsize * r_pad
    buffers["column peaks"] = DIAG_DTYPE["d"].itemsize * r_pad
    buffers["stepper"] = 16 * slots
    buffers["status words"] = 2 * 4 * slots + 8
    return buffers


def preflight(
    queue: cl.CommandQueue,
    *,
    rows: int,
    columns: int,
    accumulate_v: bool,
    element_bytes: int = REAL_ELEMENT_BYTES,
    single: bool = False,
) -> None:
    """Raise before any launch if the device cannot run a ``rows x columns`` problem.

    Checks fp64 (:func:`~cljacobi.host.device.require_fp64`), global memory
    (every buffer against ``max_mem_alloc_size``, the sum against
    ``global_mem_size``), the work-group size and the local memory of the
    step kernel.  Each error names the device and the limit.

    Raises
    ------
    DeviceCapabilityError
        No fp64, too small a work-group or too little local memory.
    DeviceMemoryError
        The buffers do not fit (also a :class:`MemoryError`).
    """
    device = queue.device
    if not single:  # the single precision kernels run where fp64 is missing
        require_fp64(device)
    check_global_memory(
        device, pointwise_footprint(rows, columns, accumulate_v, element_bytes)
    )
    size = choose_work_group_size(device, rows + columns % 2)
    check_local_memory(device, 2 * size * REAL_ELEMENT_BYTES, "the pointwise step kernel")
