"""Argument checking shared by the public functions, in scipy's order:
options first, then the arrays."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "HERMITIAN_RTOL",
    "check_max_sweeps",
    "as_float_matrix",
    "symmetric_part",
]

#: Largest asymmetry accepted, relative to max|M|: ``|M - M^T| <= HERMITIAN_RTOL * max|M|``.
#: Generous enough for matrices assembled by floating-point products
#: (``G @ diag(J) @ G.T``); the lower triangle is what is used.
HERMITIAN_RTOL = float(np.sqrt(np.finfo(np.float64).eps))


def check_max_sweeps(max_sweeps: object) -> int:
    """A positive integer number of sweeps."""
    if isinstance(max_sweeps, bool) or not isinstance(max_sweeps, numbers.Integral):
        raise TypeError(f"max_sweeps must be a positive integer, not {max_sweeps!r}")
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be a positive integer, not {max_sweeps}")
    return int(max_sweeps)


def as_float_matrix(
    a: object, name: str, *, check_finite: bool, square: bool
) -> tuple[np.ndarray, np.dtype]:
    """`a` as a 2-D float64 or complex128 array (a view where possible) and the result dtype.

    Integer and bool input is promoted to float64 like numpy; float16/32 are
    computed in float64 and results returned in float32 (numpy's ``eigh``
    returns float32 for them too).  Complex input is computed in complex128;
    complex64 results are returned for complex64 input.
    """
    array = np.asarray(a)
    if array.dtype.kind in "biu":
        result_dtype = np.dtype(np.float64)
    elif array.dtype.kind == "f":
        result_dtype = np.dtype(np.float32 if array.dtype.itemsize <= 4 else np.float64)
        if array.dtype.itemsize > 8:
            raise TypeError(f"{name} has dtype {array.dtype}; float64 is the widest supported")
    elif array.dtype.kind == "c":
        result_dtype = np.dtype(np.complex64 if array.dtype.itemsize <= 8 else np.complex128)
        if array.dtype.itemsize > 16:
            raise TypeError(f"{name} has dtype {array.dtype}; complex128 is the widest supported")
    else:
        raise TypeError(
            f"{name} has unsupported dtype {array.dtype}; expected a real or complex array"
        )
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got {array.ndim} dimension(s)")
    if square and array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be square, got shape {array.shape}")
    array = array.astype(np.complex128 if result_dtype.kind == "c" else np.float64, copy=False)
    if check_finite and not np.isfinite(array).all():
        raise ValueError(f"{name} must not contain infs or NaNs")
    return array, result_dtype


def symmetric_part(M: np.ndarray, name: str) -> np.ndarray:
    """A new symmetric (Hermitian) matrix from the lower triangle of `M`, after checking.

    Raises ValueError stating the largest asymmetry if
    ``max|M - M^*| > HERMITIAN_RTOL * max|M|`` (``M^* = M.T`` for real `M`;
    for complex `M` this also bounds the imaginary parts of the diagonal,
    which are then dropped).
    """
    complex_ = np.iscomplexobj(M)
    scale = np.max(np.abs(M)) if M.size else 0.0
    asymmetry = np.max(np.abs(M - (M.conj().T if complex_ else M.T))) if M.size else 0.0
    if asymmetry > HERMITIAN_RTOL * scale:
        kind, adjoint = ("Hermitian", "M.conj().T") if complex_ else ("symmetric", "M.T")
        adjoint = adjoint.replace("M", name)
        raise ValueError(
            f"{name} is not {kind}: max|{name} - {adjoint}| = {asymmetry:.3g} exceeds "
            f"{HERMITIAN_RTOL:.3g} * max|{name}| = {HERMITIAN_RTOL * scale:.3g}"
        )
    lower = np.tril(M)
    if complex_:
        result = lower + np.tril(M, -1).conj().T
        np.fill_diagonal(result, M.diagonal().real)
        return result
    return lower + np.tril(M, -1).T
