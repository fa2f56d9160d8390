"""Everything a pointwise run needs from the device, checked before any work.

:func:`preflight` asks for the :class:`~cljacobi.host.pointwise_plan.PointwisePlan`
of the largest factor a call sweeps (the bordering and padding of eq. (4.1)
of Novaković & Singer 2011, the work-group size, the buffers), the same plan
:class:`~cljacobi.host.pointwise.PointwiseHSVD` runs with, so the public
functions refuse a problem that does not fit *before* the O(n^3)
factorization on the host and before any launch.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from .pointwise_plan import PointwisePlan
from .sizes import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES

__all__ = ["pointwise_footprint", "preflight"]


def _dtype(element_bytes: int) -> np.dtype:
    """The double precision element type of `element_bytes` bytes."""
    return np.dtype(np.complex128 if element_bytes == COMPLEX_ELEMENT_BYTES else np.float64)


def pointwise_footprint(
    rows: int, columns: int, accumulate_v: bool, element_bytes: int = REAL_ELEMENT_BYTES
) -> dict[str, int]:
    """Bytes of every device buffer of a pointwise run on a ``rows x columns`` factor
    with `element_bytes` per matrix element (8 float64, 16 complex128): the
    plan's :attr:`~cljacobi.host.pointwise_plan.PointwisePlan.buffers`."""
    return PointwisePlan.buffers_of(rows, columns, _dtype(element_bytes),
                                    accumulate_v=accumulate_v)


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

    Parameters
    ----------
    queue : pyopencl.CommandQueue
        Its device is checked.
    rows, columns : int
        Shape of the largest factor the call sweeps.
    accumulate_v : bool
        Whether the sweeps accumulate V.
    element_bytes : int
        8 for real data (float64), 16 for complex (complex128).
    single : bool
        The float32/complex64 kernels run (a device without fp64).

    Checks fp64 (:func:`~cljacobi.host.device.require_fp64`), global memory
    (every buffer against ``max_mem_alloc_size``, the sum against
    ``global_mem_size``), the work-group size and the local memory of the
    step kernel (:meth:`PointwisePlan.for_device`).  Each error names the
    device and the limit.

    Raises
    ------
    DeviceCapabilityError
        No fp64, too small a work-group or too little local memory.
    DeviceMemoryError
        The buffers do not fit (also a :class:`MemoryError`).
    """
    PointwisePlan.for_device(queue.device, rows, columns, _dtype(element_bytes),
                             accumulate_v=accumulate_v, single=single)
