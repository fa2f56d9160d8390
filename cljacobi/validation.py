"""Argument checking shared by the public functions, in scipy's order:
options first, then the arrays."""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ._threads import all_finite, map_in_threads

__all__ = [
    "HERMITIAN_RTOL",
    "ON_NONCONVERGENCE",
    "as_float_matrix",
    "as_signature",
    "check_asymmetry",
    "check_flag",
    "check_max_sweeps",
    "check_on_nonconvergence",
    "check_queue_argument",
    "compute_dtype",
    "nonfinite_error",
    "require_finite",
    "symmetric_part",
]

#: Largest asymmetry accepted, relative to max|M|: ``|M - M^T| <= HERMITIAN_RTOL * max|M|``.
#: Generous enough for matrices assembled by floating-point products
#: (``G @ diag(J) @ G.T``); the lower triangle is what is used.
HERMITIAN_RTOL = float(np.sqrt(np.finfo(np.float64).eps))


def check_flag(value: object, name: str) -> bool:
    """A boolean option as numpy takes one: a bool, a numpy bool, or the integer 0 or 1.

    Anything else (strings such as ``"no"``, None, floats, arrays, other
    integers) is a TypeError naming the option, rather than being read by
    its truth value.
    """
    if isinstance(value, (bool, np.bool_)) or (
        isinstance(value, numbers.Integral) and value in (0, 1)
    ):
        return bool(value)
    raise TypeError(f"{name} must be True or False (or 0 or 1), not {value!r}")


def check_max_sweeps(max_sweeps: object) -> int:
    """A positive integer number of sweeps."""
    if isinstance(max_sweeps, bool) or not isinstance(max_sweeps, numbers.Integral):
        raise TypeError(f"max_sweeps must be a positive integer, not {max_sweeps!r}")
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be a positive integer, not {max_sweeps}")
    return int(max_sweeps)


#: Allowed values of ``on_nonconvergence``.
ON_NONCONVERGENCE = ("raise", "warn")


def check_on_nonconvergence(value: object) -> str:
    """``"raise"`` or ``"warn"``; anything else is a ValueError listing both."""
    if not isinstance(value, str) or value not in ON_NONCONVERGENCE:
        raise ValueError(
            f"on_nonconvergence must be one of {', '.join(map(repr, ON_NONCONVERGENCE))}, "
            f"not {value!r}"
        )
    return value


def check_queue_argument(queue: object) -> None:
    """A pyopencl.CommandQueue, a pyopencl.Context or None (checked before the arrays)."""
    import pyopencl as cl

    if queue is not None and not isinstance(queue, (cl.CommandQueue, cl.Context)):
        raise TypeError(
            f"queue must be a pyopencl.CommandQueue, a pyopencl.Context or None, "
            f"not {type(queue).__name__}"
        )


def result_dtype_of(dtype: np.dtype, name: str) -> np.dtype:
    """The dtype the results of input of `dtype` come back in (numpy's rule):
    float64 for integers and bools, float32 for float16/32, complex64 for
    complex64, else float64/complex128; the computation is in float64 or
    complex128 (:func:`compute_dtype`).  A TypeError names `name` for any other
    dtype or a wider one."""
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    if dtype.kind == "f":
        if dtype.itemsize > 8:
            raise TypeError(f"{name} has dtype {dtype}; float64 is the widest supported")
        return np.dtype(np.float32 if dtype.itemsize <= 4 else np.float64)
    if dtype.kind == "c":
        if dtype.itemsize > 16:
            raise TypeError(f"{name} has dtype {dtype}; complex128 is the widest supported")
        return np.dtype(np.complex64 if dtype.itemsize <= 8 else np.complex128)
    raise TypeError(f"{name} has unsupported dtype {dtype}; expected a real or complex array")


def compute_dtype(result_dtype: np.dtype) -> np.dtype:
    """float64 or complex128: what input of `result_dtype` is computed in."""
    return np.dtype(np.complex128 if result_dtype.kind == "c" else np.float64)


def as_float_matrix(
    a: object, name: str, *, check_finite: bool, square: bool, stacked: bool = False
) -> tuple[np.ndarray, np.dtype]:
    """`a` as a 2-D float64 or complex128 array (a view where possible) and the result dtype.

    With ``stacked=True`` any ``ndim >= 2`` is accepted: a stack of matrices
    over the leading dimensions, like numpy.linalg's ``(..., m, n)``.

    Integer and bool input is promoted to float64 like numpy; float16/32 are
    computed in float64 and results returned in float32 (numpy's ``eigh``
    returns float32 for them too).  Complex input is computed in complex128;
    complex64 results are returned for complex64 input.
    """
    array = np.asarray(a)
    result_dtype = result_dtype_of(array.dtype, name)
    if array.ndim != 2 and not (stacked and array.ndim > 2):
        wanted = "at least 2-D (..., m, n)" if stacked else "a 2-D array"
        raise ValueError(f"{name} must be {wanted}, got {array.ndim} dimension(s)")
    if square and array.shape[-2] != array.shape[-1]:
        raise ValueError(f"{name} must be square, got shape {array.shape}")
    array = array.astype(compute_dtype(result_dtype), copy=False)
    if check_finite:
        require_finite(array, name)
    return array, result_dtype


def require_finite(array: np.ndarray, name: str) -> None:
    """Raise the ValueError of ``check_finite`` where `array` holds an inf or a NaN."""
    if not all_finite(array):
        raise nonfinite_error(name)


def nonfinite_error(name: str) -> ValueError:
    """The ValueError of ``check_finite`` for the array called `name`."""
    return ValueError(f"{name} must not contain infs or NaNs")


def as_signature(J: object, shape: tuple[int, ...]) -> np.ndarray:
    """The signature `J` of a factor G of `shape` ``(..., m, n)``: entries +1 and -1,
    as an array of shape ``(..., n)`` (broadcast from ``(n,)`` when one J serves
    the whole stack).

    Integer and real arrays whose entries are exactly +1 or -1 are accepted;
    bool (True/False do not say which sign), complex, string and object
    arrays are a TypeError naming J, other values a ValueError.
    """
    signs = np.asarray(J)
    leading, n = shape[:-2], shape[-1]
    if signs.dtype.kind == "b":
        raise TypeError(
            "J must hold the signs +1 and -1 as integers or reals, not booleans "
            "(True and False do not say which sign)"
        )
    if signs.dtype.kind not in "iuf":
        raise TypeError(
            f"J must be an integer or real array of +1 and -1, not of dtype {signs.dtype}"
        )
    if signs.shape not in {(n,), leading + (n,)}:
        raise ValueError(
            f"J must have shape ({n},) to match G of shape {shape}"
            + (f" (or {leading + (n,)}, one per matrix)" if leading else "")
            + f", got {signs.shape}"
        )
    if not np.all((signs == 1) | (signs == -1)):
        bad = signs[(signs != 1) & (signs != -1)].flat[0].item()
        raise ValueError(f"J must contain only +1 and -1, not {bad!r}")
    return np.broadcast_to(signs, leading + (n,))


#: Side of the square tiles in which :func:`symmetric_part` transposes (cache-sized).
_TILE = 256


class SymmetricPart(NamedTuple):
    """:func:`symmetric_part`'s result: the matrix and the magnitudes of its entries."""

    #: The symmetric (Hermitian) matrix built from the lower triangle.
    matrix: np.ndarray
    #: Smallest nonzero |entry| (0.0 for the zero matrix).
    smallest: float
    #: Largest |entry| (NaN if an entry is not finite).
    largest: float


def symmetric_part(M: np.ndarray, name: str) -> SymmetricPart:
    """A new symmetric (Hermitian) matrix from the lower triangle of `M`, after checking.

    Raises ValueError stating the largest asymmetry if
    ``max|M - M^*| > HERMITIAN_RTOL * max|M|`` (``M^* = M.T`` for real `M`;
    for complex `M` this also bounds the imaginary parts of the diagonal,
    which are then dropped).  Works tile by tile, so the transposed reads
    stay in cache, and in the same pass records the smallest nonzero and the
    largest magnitude of the result's entries (for :mod:`cljacobi.scaling`).
    """
    complex_ = np.iscomplexobj(M)
    n = M.shape[0]
    S = np.empty((n, n), dtype=M.dtype)

    def block_row(i0: int) -> tuple[float, float, float, bool]:
        """Tiles (i0, j0 <= i0): their part of S and (asymmetry, largest,
        smallest nonzero, all finite); block rows write disjoint parts of S."""
        asymmetry, largest, smallest, finite = 0.0, 0.0, np.inf, True
        i1 = min(n, i0 + _TILE)
        with np.errstate(invalid="ignore"):  # inf - inf with check_finite=False
            for j0 in range(0, i0 + 1, _TILE):
                j1 = min(n, j0 + _TILE)
                lower = M[i0:i1, j0:j1]
                mirror = M[j0:j1, i0:i1].T
                if complex_:
                    mirror = mirror.conj()
                asymmetry = max(asymmetry, float(np.max(np.abs(lower - mirror))))
                if i0 == j0:
                    upper = np.tril(lower, -1).T
                    S[i0:i1, i0:i1] = np.tril(lower) + (upper.conj() if complex_ else upper)
                    if complex_:
                        np.fill_diagonal(S[i0:i1, i0:i1], lower.diagonal().real)
                    magnitudes = np.abs(S[i0:i1, i0:i1])
                else:
                    S[i0:i1, j0:j1] = lower
                    S[j0:j1, i0:i1] = lower.T.conj() if complex_ else lower.T
                    magnitudes = np.abs(lower)
                top = float(magnitudes.max())
                finite = finite and np.isfinite(top)
                largest = max(largest, top) if finite else largest
                nonzero = magnitudes[magnitudes > 0]
                if nonzero.size:
                    smallest = min(smallest, float(nonzero.min()))
        return asymmetry, largest, smallest, finite

    # numpy releases the GIL on these tiles
    rows = map_in_threads(block_row, range(0, n, _TILE))
    # Maxima and minima: the same whatever order the block rows finished in.
    asymmetry = max((row[0] for row in rows), default=0.0)
    largest = max((row[1] for row in rows), default=0.0)
    smallest = min((row[2] for row in rows), default=np.inf)
    finite = all(row[3] for row in rows)
    check_asymmetry(M, name, asymmetry, largest)
    return SymmetricPart(S, smallest if np.isfinite(smallest) else 0.0,
                         largest if finite else np.nan)


def check_asymmetry(M: np.ndarray, name: str, asymmetry: float, largest: float) -> None:
    """Raise :func:`symmetric_part`'s ValueError if ``asymmetry = max|M -
    M^*|`` exceeds ``HERMITIAN_RTOL * max|M|``; `largest` is the largest
    modulus of the lower triangle (NaN passes: non-finite entries are
    reported by the scaling)."""
    if asymmetry > HERMITIAN_RTOL * largest:
        # max|M| also counts the upper triangle: at most largest + asymmetry,
        # so only this case needs it.
        scale = float(np.max(np.abs(M)))
        if asymmetry > HERMITIAN_RTOL * scale:
            complex_ = np.iscomplexobj(M)
            kind, adjoint = ("Hermitian", "M.conj().T") if complex_ else ("symmetric", "M.T")
            adjoint = adjoint.replace("M", name)
            raise ValueError(
                f"{name} is not {kind}: max|{name} - {adjoint}| = {asymmetry:.3g} exceeds "
                f"{HERMITIAN_RTOL:.3g} * max|{name}| = {HERMITIAN_RTOL * scale:.3g}"
            )
