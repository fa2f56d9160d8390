"""Exact power-of-two scaling that keeps every computation inside float64's range.

The one-sided method works with squared column norms ``d_k = ||g_k||^2`` and
dot products ``g_i^T g_j`` of the factor G.  For ``M = G J G^T`` the ``d_k``
are of the size of the eigenvalues, so a matrix whose eigenvalues span
``1e-300 .. 1e300`` needs squared norms over that whole range, which float64
holds (its normal range is ``2^-1022 .. 2^1024``, about ``1e-308 .. 1e308``)
only if the data sit in the *middle* of it.  One global scaling that puts
``max|M|`` near 1 (the obvious choice) pushes ``1e-300`` down to ``1e-600``,
where it underflows to zero, and returns a wrong eigenvalue.

Scaling by a power of two is exact, and multiplying a matrix by ``2^s``
multiplies its eigenvalues by ``2^s`` and leaves the eigenvectors alone, so
two shifts are applied and undone exactly:

1. :func:`matrix_shift` -- ``M -> 2^s M`` centers the exponents of the
   nonzero entries of M between the largest safe exponent (room for ``n``
   terms and element growth, :data:`GROWTH_BITS`) and the smallest normal
   one, so the factorization neither overflows nor flushes an entry to a
   subnormal.  The Bunch-Parlett factorization commutes with this scaling
   (every step is homogeneous), and so does everything after it.
2. :func:`factor_shift` -- ``G -> 2^t G`` (that is ``M -> 2^(2t) M``) centers
   the squared column norms of the factor in ``[2^D_lo, 2^D_hi]``: above
   ``D_lo`` the terms that underflow in a squared norm or a dot product
   (each wrong by at most ``2^-1075``) change it by less than half an ulp;
   below ``D_hi`` no squared norm, dot product or hyperbolic update
   overflows, with :data:`GROWTH_BITS` bits to spare.

The eigenvalues of M are ``j_k d_k 2^-(2t + s)``.  Both shifts depend only on
exponents of the data, so ``M`` and ``4^k M`` give bitwise identical
eigenvectors and eigenvalues differing by exactly ``4^k`` while they fit
(``s`` is even, so that square roots of scaled pivots stay exact).

The one-sided SVDs (``svd``, ``hsvd``) apply the second shift alone, to the
factor they are given, and undo it on the singular values with
:func:`unshift`.

When the data span more than float64 can hold in one scaled copy -- nonzero
entries of M more than about ``2^2000`` apart (``1e600``), or squared norms
of G likewise (column norms, hence singular values, more than about
``2^1000``, ``1e300``, apart) -- an error says so: cljacobi never flushes data
to zero silently.  Likewise a result beyond float64's range (an eigenvalue
above its largest number, a singular value below its smallest subnormal) is
an error, not an inf or a zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "GROWTH_BITS",
    "NOT_FINITE",
    "exponent_range",
    "factor_shift",
    "factor_shift_bounds",
    "factor_shift_from_maxima",
    "matrix_shift",
    "matrix_shift_from_range",
    "unshift",
]

#: Bits of headroom below overflow kept for element growth (Bunch-Parlett
#: pivot growth, hyperbolic rotations that lengthen both columns).
GROWTH_BITS = 16

#: frexp exponent of the smallest normal float64: 2^-1022 = 0.5 * 2^-1021.
_NORMAL_EXP = int(np.frexp(np.finfo(np.float64).tiny)[1])
#: frexp exponent just above the largest float64 (max < 2^1024 = 0.5 * 2^1025).
_OVERFLOW_EXP = int(np.finfo(np.float64).maxexp)

#: The LinAlgError message for inf or NaN input that ``check_finite=False``
#: let through (the scaling is where it shows).
NOT_FINITE = (
    "the input contains infs or NaNs (check_finite=False skipped the up-front "
    "check; no result can be computed from them)"
)


def _power(exponent: int) -> str:
    """``2^e`` with its decimal order of magnitude (2.0 ** e may overflow)."""
    return f"2^{exponent} (~1e{round(exponent * 0.30103)})"


def _bits(count: int) -> int:
    """Smallest b with ``count <= 2^b``."""
    return max(int(count) - 1, 0).bit_length()


def exponent_range(array: np.ndarray) -> tuple[int, int] | None:
    """frexp exponents ``(e_lo, e_hi)`` of the smallest and largest nonzero ``|a_ij|``.

    ``2^(e-1) <= |x| < 2^e`` for ``(m, e) = frexp(x)``.  None if `array` has
    no nonzero entry.  Non-finite entries raise :class:`numpy.linalg.LinAlgError`
    (they reach here only with ``check_finite=False``).
    """
    magnitudes = np.abs(array)
    if magnitudes.size == 0:
        return None
    largest = float(magnitudes.max())
    if not np.isfinite(largest):
        raise np.linalg.LinAlgError(NOT_FINITE)
    if largest == 0:
        return None
    smallest = float(magnitudes[magnitudes > 0].min())
    return int(np.frexp(smallest)[1]), int(np.frexp(largest)[1])


def matrix_shift(M: np.ndarray, name: str = "M") -> int:
    """Exponent ``s`` such that ``2^s M`` is safe to factor (see the module notes).

    Afterwards every nonzero entry lies in ``[2^-1022, 2^(1024 - GROWTH_BITS
    - bits(n))]``, the exponent range of the entries centered in that window
    (to within one, as ``s`` is even).

    Raises
    ------
    ValueError
        The nonzero entries span more than that window: some would have to be
        flushed to subnormals or zero (the message gives both magnitudes).
    """
    return _shift_for(exponent_range(M), M.shape[-1], name)


def matrix_shift_from_range(smallest: float, largest: float, n: int, name: str = "M") -> int:
    """:func:`matrix_shift` of an order-n matrix from its smallest nonzero and
    largest entry magnitudes (0.0 and 0.0 for the zero matrix), e.g. as
    :func:`cljacobi.validation.symmetric_part` records them."""
    if not np.isfinite(largest):
        raise np.linalg.LinAlgError(NOT_FINITE)
    if largest == 0:
        return _shift_for(None, n, name)
    extent = int(np.frexp(smallest)[1]), int(np.frexp(largest)[1])
    return _shift_for(extent, n, name)


def _shift_for(extent: tuple[int, int] | None, n: int, name: str) -> int:
    if extent is None:
        return 0
    e_lo, e_hi = extent
    top = _OVERFLOW_EXP - GROWTH_BITS - _bits(n)
    bottom = _NORMAL_EXP
    # s is even (2 bits of the window go to that), so that the factor of 2^s M
    # is exactly 2^(s/2) times the factor of M: square roots stay exact where
    # they were (diag(-1, 4) gives exactly -1 and 4).
    if e_hi - e_lo > top - bottom - 2:
        raise ValueError(
            f"the nonzero entries of {name} span magnitudes {_power(e_lo - 1)} to "
            f"{_power(e_hi)}; cljacobi handles a ratio of at most 2^{top - bottom - 2} in "
            "float64 without flushing the small ones to zero"
        )
    s = 2 * ((top + bottom - e_hi - e_lo) // 4)
    if e_hi + s > top:
        s -= 2
    elif e_lo + s < bottom:
        s += 2
    return s


def factor_shift(G: np.ndarray, name: str = "G", *, zero_columns: bool = False) -> int:
    """Exponent ``t`` such that the squared column norms of ``2^t G`` are safe.

    With ``e_k`` the frexp exponent of ``max_i |g_ik|`` and m the rows,
    ``2^(2 e_k - 2) <= ||g_k||^2 < m 2^(2 e_k)``.  Afterwards every squared
    norm lies in ``[2^D_lo, 2^D_hi]`` with ``D_lo = -1021 + bits(m)`` (the
    underflow of ``m`` terms, each at most ``2^-1075``, is below half an ulp)
    and ``D_hi = 1024 - GROWTH_BITS``; the interval of admissible ``t`` is
    split in the middle.  With ``zero_columns=True`` zero columns are allowed
    (they stay zero under any shift) and the others decide.

    Raises
    ------
    ValueError
        A column of `G` is zero (unless `zero_columns`).
    numpy.linalg.LinAlgError
        The column norms span more than float64 can hold at once (the
        message gives the range); a ``LinAlgError`` is a ``ValueError``.
    """
    if G.size == 0:
        return 0
    maxima = np.abs(G).max(axis=0)
    if zero_columns:
        maxima = maxima[maxima != 0]  # an inf or NaN stays, to be reported
    return factor_shift_from_maxima(maxima, G.shape[0], name)


def factor_shift_bounds(m: int) -> tuple[int, int]:
    """``(low, high)`` with which the admissible shifts of an m-row factor
    whose column maxima have frexp exponents from ``e_min`` to ``e_max`` are
    ``t_lo = ceil((low - 2 e_min) / 2)`` to ``t_hi = floor((high - 2 e_max) /
    2)`` (what the batched QR kernel is given)."""
    # 2 e_min - 2 + 2t >= d_lo  and  2 e_max + bits(m) + 2t <= d_hi.
    d_lo = _NORMAL_EXP + _bits(m)
    d_hi = _OVERFLOW_EXP - GROWTH_BITS
    return d_lo + 2, d_hi - _bits(m)


def _shift_range(e_min, e_max, m: int):
    """The admissible shifts ``t_lo .. t_hi`` of a factor whose column maxima
    have frexp exponents from `e_min` to `e_max` (ints, or int64 arrays: the
    same integer arithmetic either way)."""
    low, high = factor_shift_bounds(m)
    return -((2 * e_min - low) // 2), (high - 2 * e_max) // 2


def factor_shifts(column_max: np.ndarray, m: int, names: Sequence[str], *,
                  zero_columns: bool = False) -> np.ndarray:
    """:func:`factor_shift` of every factor of a stack from its column maxima
    ``(count, n)`` at once (the same shifts); a factor it refuses raises the
    message :func:`factor_shift_from_maxima` gives, named by `names`, the
    first in stack order."""
    column_max = np.asarray(column_max, dtype=np.float64)
    used = column_max != 0 if zero_columns else np.ones(column_max.shape, bool)
    exponents = np.frexp(np.where(used, column_max, 1.0))[1].astype(np.int64)
    e_min = np.where(used, exponents, np.iinfo(np.int64).max // 4).min(axis=-1)
    e_max = np.where(used, exponents, np.iinfo(np.int64).min // 4).max(axis=-1)
    t_lo, t_hi = _shift_range(e_min, e_max, m)
    refused = (~np.isfinite(column_max).all(axis=-1) | (t_lo > t_hi)
               | (~zero_columns & (column_max == 0).any(axis=-1)))
    for b in np.flatnonzero(refused & used.any(axis=-1)):
        factor_shift_from_maxima(column_max[b][used[b]], m, names[b])  # raises
    return np.where(used.any(axis=-1), (t_lo + t_hi) // 2, 0)


def factor_shift_from_maxima(column_max: np.ndarray, m: int, name: str = "G") -> int:
    """:func:`factor_shift` of an m-row factor from its column maxima ``max_i |g_ik|``
    (computed where the factor lives, e.g. on the device)."""
    if column_max.size == 0:
        return 0
    if not np.isfinite(column_max).all():
        raise np.linalg.LinAlgError(f"{name} contains infs or NaNs")
    zero = np.flatnonzero(column_max == 0)
    if zero.size:
        raise ValueError(
            f"column {int(zero[0])} of {name} is zero: {name} must have full column rank"
        )
    exponents = np.frexp(column_max)[1].astype(np.int64)
    t_lo, t_hi = _shift_range(int(exponents.min()), int(exponents.max()), m)
    if t_lo > t_hi:
        raise np.linalg.LinAlgError(
            f"the column norms of {name} range from about {_power(int(exponents.min()) - 1)} "
            f"to {_power(int(exponents.max()))}: their squares (eigenvalue magnitudes, squared "
            "singular values) span more than float64 can hold at once"
        )
    return (t_lo + t_hi) // 2


def _lost(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Where a nonzero value came back infinite or zero from its unshift."""
    return (values != 0) & (~np.isfinite(out) | (out == 0))


def unshift_rows(values: np.ndarray, shifts: np.ndarray, whats: Sequence[str]) -> np.ndarray:
    """:func:`unshift` of every row of `values` ``(count, k)`` by its own
    shift, at once; the first row that cannot be returned raises its
    LinAlgError, named by `whats`."""
    values = np.asarray(values)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(values, -np.asarray(shifts)[:, None])
    for b in np.flatnonzero(_lost(values, out).any(axis=-1)):
        unshift(values[b], int(shifts[b]), whats[b])  # raises
    return out


def unshift(values: np.ndarray, shift: int, what: str) -> np.ndarray:
    """``values * 2^-shift``: values computed from data scaled by ``2^shift``, back
    at their true size.

    Exact in float64's normal range.  A value below it comes back subnormal,
    with an absolute error of at most ``2^-1075`` (what float64 data of that
    size carry anyway).

    Raises
    ------
    numpy.linalg.LinAlgError
        A nonzero value that float64 cannot hold at all: beyond its largest
        number, or below its smallest subnormal (it would come back as 0).
        `what` names the values in the message ("a singular value of A").
    """
    values = np.asarray(values)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(values, -shift)
    lost = _lost(values, out)
    if lost.any():
        k = int(np.flatnonzero(lost)[0])
        if np.isfinite(out[k]):
            exponent = int(np.frexp(values[k])[1]) - 1 - shift  # |value| >= 2^exponent
            raise np.linalg.LinAlgError(
                f"{what} is about {_power(exponent)}, below the smallest float64 "
                f"({np.finfo(np.float64).smallest_subnormal:.3g}), and cannot be returned"
            )
        raise np.linalg.LinAlgError(
            f"{what} exceeds the largest float64 ({np.finfo(np.float64).max:.3g}) and "
            "cannot be returned"
        )
    return out
