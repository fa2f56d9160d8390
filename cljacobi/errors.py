"""Exceptions raised by cljacobi.

All numerical failures derive from :class:`numpy.linalg.LinAlgError`, so code
written for numpy/scipy catches them unchanged; device problems derive from
:class:`RuntimeError` and always name the device and the limit involved.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = [
    "ConvergenceError",
    "ConvergenceWarning",
    "DeviceCapabilityError",
    "DeviceMemoryError",
    "DeviceNotFoundError",
    "DistributedError",
    "warn_unconverged",
]


class ConvergenceError(np.linalg.LinAlgError):
    """The Jacobi sweeps did not converge within ``max_sweeps``.

    Attributes
    ----------
    info : object
        The sweep statistics gathered so far (the same object that
        ``return_info=True`` returns), so the caller can see how far it got.
    """

    def __init__(self, message: str, info: Any = None) -> None:
        super().__init__(message)
        self.info = info


class ConvergenceWarning(RuntimeWarning):
    """Issued instead of :class:`ConvergenceError` with ``on_nonconvergence="warn"``.

    The result returned with it is the partial one after ``max_sweeps``
    sweeps: eigenvalues and vectors read off the not yet orthogonal factor,
    so residual and orthogonality are only as good as the last sweep left
    them; ``info.converged`` is False.
    """


class DeviceNotFoundError(RuntimeError):
    """No OpenCL device matches the request (or none is usable at all)."""


class DeviceCapabilityError(RuntimeError):
    """The chosen device lacks something the computation needs.

    Raised before anything is launched: missing fp64, too little global or
    local memory, too small a work-group.
    """


class DeviceMemoryError(DeviceCapabilityError, MemoryError):
    """The problem does not fit the device's global memory (checked before launch)."""


class DistributedError(RuntimeError):
    """Another rank of a ``comm=`` call failed (the message names the rank and
    its error); raised on the ranks where nothing went wrong, so that none of
    them waits for the failed one."""


def warn_unconverged(unconverged: np.ndarray, leading: tuple[int, ...], caller: str, *,
                     stacklevel: int = 4) -> None:
    """The :class:`ConvergenceWarning` of a call whose matrices (C order) flagged
    in `unconverged` did not converge; `stacklevel` points at the public
    function's caller."""
    if not unconverged.any():
        return
    where_ = ""
    if leading:
        hits = [tuple(int(i) for i in np.unravel_index(k, leading))
                for k in np.flatnonzero(unconverged)]
        where_ = f" (matrices {hits} of the stack)"
    warnings.warn(
        f"{caller} did not converge in max_sweeps sweeps{where_}; the partial result is "
        "returned (info.converged is False)",
        ConvergenceWarning,
        stacklevel=stacklevel,
    )
