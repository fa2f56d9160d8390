"""Pure-numpy reference of the implicit Hari–Zimmermann method for the GSVD.

This module is a readable oracle, not a fast solver: it loops over column
pairs in Python, so use it on small matrices only.  Only the optional
shortening of :func:`gsvd_reference` (pivoted QR) uses scipy.  It follows

    V. Novaković and S. Singer, "Implicit Hari-Zimmermann algorithm for the
    generalized SVD on the GPUs" (cited below as [NS], by section and, where
    the paper numbers nothing, by the name of the displayed formula).

The method
----------
Given ``F`` (``m_F x n``) and ``G`` (``m_G x n``) with ``min(m_F, m_G) >= n``
and ``G`` of full column rank, the pencil ``(A, B) = (F^* F, G^* G)`` is
diagonalised *implicitly*: pairs of columns of ``F`` and ``G`` are
transformed from the right by the same nonsingular ``2 x 2`` matrix, which
jointly diagonalises the ``2 x 2`` pivot submatrices of ``A`` and ``B``
([NS], Sect. 2.1), and the transformations are accumulated in ``Z``.  When
all column pairs are relatively orthogonal, ``F Z = U Sigma_F`` and
``G Z = V Sigma_G`` with ``U^* U = V^* V = I`` and
``Sigma_F^2 + Sigma_G^2 = I`` ([NS], Sect. 1 and the post-iterative
rescaling of Sect. 2.4).  In the convention of LAPACK ``xGGSVD3`` (and of
``gsvd4py``), ``A = U diag(C) X^H``, ``B = V diag(S) X^H`` with ``C =
diag(Sigma_F)``, ``S = diag(Sigma_G)`` and ``X^H = Z^{-1}``, so ``Z =
X^{-H}``.

Variants ([NS], Table 1): *prescaled* (``prescale=True``, IDs 0, 1, 4, 5)
normalises the columns of ``G`` once by ``Z_0`` and then assumes
``diag(B) = I``; *not scaled* (``prescale=False``, IDs 2, 3, 6, 7) rescales
every pivot pair by ``D_k`` instead.  The convergence ``criterion`` is C1
(IDs 0-3) or C2 (IDs 4-7) of [NS], Sect. 2.5; ``dot="enhanced"`` selects the
dot products of [NS], Appendix A (odd IDs).

Slips in the paper, corrected here (each is also marked at the code)
--------------------------------------------------------------------
1. Sect. 2, the prescaling ``(Z_0)_jj := 1/sqrt(||g_j||_F)``: the column
   norms of ``G Z_0`` are unity only for ``(Z_0)_jj := 1/||g_j||_F``, which
   is what Sect. 3.3 of the paper uses.
2. Sect. 2.1.1, "``cos theta = 1/(1 + tan^2 theta)``": the identity is
   ``cos theta = 1/sqrt(1 + tan^2 theta)``.
3. Sect. 2.1.1, "``tan theta = infinity``, ``cos theta = 0``, ``sin theta =
   1``": for ``tan theta = -infinity`` (e.g. ``tan gamma_k = 2 v_k / h_k``
   with ``h_k = +0``, ``v_k < 0``) it must be ``sin theta = -1``, i.e.
   ``sin theta = sign(tan theta)``; with ``+1`` the transformation does not
   diagonalise ``A'_k``.
4. Sect. 2.1.2, the exception for a proportional pivot pair: the matrix given
   there (built from ``|x|`` only) normalises ``B'_k`` only for ``x_k >= 0``.
   The correct one is the complex exception of Sect. 2.1.1 with
   ``e^{i zeta_k} = sign(x_k)``.

Deviations (not slips) are stated where they occur: pairs with *both*
off-diagonal elements exactly zero count as relatively orthogonal (the
paper's strict test fails for an exactly zero column of ``F``); the
between-sweep rescaling of Sect. 2.4 is applied to ``F``, ``G`` *and* ``Z``,
so that ``F_0 Z_k = F_k`` keeps holding; square roots of sums of squares are
evaluated by ``hypot``, and ``t_k = sqrt(1 - x_k^2)`` without cancellation.
A pivot pair with ``|b'_ij| >= 1`` (``B'_k`` not positive definite, which the
prescaled version can meet when the norms of the columns of ``G`` drift from
1 on nearly dependent columns) raises ``numpy.linalg.LinAlgError``.

Accumulated inverse
-------------------
Besides ``Z_N`` the drivers accumulate ``Zinv = Z_N^{-1} = Z~_N^{-1} ...
Z~_0^{-1} Z_0^{-1}`` from the ``2 x 2`` inverses, and :func:`gsvd_from_hz`
puts ``Theta^{-1}`` in front ([NS], Sect. 1), so that ``X = (Theta^{-1}
Zinv)^H`` is obtained without inverting ``Z``.
"""

from __future__ import annotations

import cmath
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import numpy as np

__all__ = [
    "CRITERIA",
    "SEQUENTIAL_ORDERINGS",
    "BlockOutcome",
    "GSVDResult",
    "HZResult",
    "PairTransform",
    "StepOutcome",
    "apply_pair",
    "block_transformation",
    "enhanced_dot",
    "enhanced_squared_norm",
    "gsvd_from_hz",
    "gsvd_reference",
    "hz_gsvd_parallel",
    "semidefinite_cholesky",
    "hz_gsvd_sequential",
    "hz_rotation",
    "hz_step",
    "pivot_gram",
    "prescale",
    "relatively_orthogonal",
    "theta_rescale",
]

EPS = float(np.finfo(np.float64).eps)

CRITERIA: tuple[str, ...] = ("C1", "C2", "strict")
"""Convergence criteria: C1 or C2 of [NS], Sect. 2.5 (stop after a sweep
without *big* transformations), or "strict" (stop after a sweep without any
transformation, the inner-level criterion of Sect. 2.5)."""

SEQUENTIAL_ORDERINGS: tuple[str, ...] = ("row-cyclic", "column-cyclic")
"""Cyclic pivot orderings of :func:`hz_gsvd_sequential`."""

_DOTS = ("ordinary", "enhanced")


# ---------------------------------------------------------------------------
# dot products ([NS], Appendix A)
# ---------------------------------------------------------------------------


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(p, e)`` with ``p = fl(a b)`` and ``a b = p + e`` exactly (Dekker).

    Veltkamp's splitting; exact unless the products over- or underflow.
    """
    split = 134217729.0  # 2^27 + 1
    a_big, b_big = split * a, split * b
    a_hi = a_big - (a_big - a)
    b_hi = b_big - (b_big - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    p = a * b
    e = ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    return p, e


def _product_rounded_down(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Emulate ``c = MULrd(a, b)``, ``d = FMArn(a, b, -c)`` of [NS], Appendix A.

    Round-to-nearest gives ``a b = p + e``; rounding down is ``p`` if ``e >= 0``
    and the predecessor of ``p`` otherwise.  Then ``a b - c = (p - c) + e``,
    where ``p - c`` is exact (0 or one ulp), so one rounded addition gives the
    FMA's ``d``, which is ``>= 0``.
    """
    p, e = _two_product(a, b)
    c = np.where(e < 0, np.nextafter(p, -np.inf), p)
    d = (p - c) + e
    return c, d


def enhanced_dot(x: np.ndarray, y: np.ndarray) -> float:
    """Real dot product ``x^T y`` by the procedure of [NS], Appendix A.

    Each product is split as ``a b = c + d`` with ``c`` rounded towards
    ``-infinity``, so that all ``d >= 0`` and their sum suffers no
    cancellation; the sum of the ``d`` is added to the sum of the ``c``.

    Parameters
    ----------
    x, y : ndarray, shape (m,)
        Real vectors.

    Returns
    -------
    float
        ``sum(c) + sum(d)``.
    """
    c, d = _product_rounded_down(np.asarray(x, np.float64), np.asarray(y, np.float64))
    return float(np.sum(c) + np.sum(d))


def enhanced_squared_norm(x: np.ndarray) -> float:
    """Squared Euclidean norm ``x^* x`` by [NS], Appendix A.

    Real ``x``: :func:`enhanced_dot` of ``x`` with itself.  Complex ``x``: the
    paper's simpler procedure: per element, ``c_r, d_r`` from ``Re(a)^2`` and
    ``c_i, d_i`` from ``Im(a)^2``, ``e = d_r + d_i``, ``s = (e + min(c_r,
    c_i)) + max(c_r, c_i)``; the result is the sum of the ``s``.

    Parameters
    ----------
    x : ndarray, shape (m,)

    Returns
    -------
    float
    """
    x = np.asarray(x)
    if not np.iscomplexobj(x):
        return enhanced_dot(x, x)
    c_r, d_r = _product_rounded_down(x.real, x.real)
    c_i, d_i = _product_rounded_down(x.imag, x.imag)
    e = d_r + d_i
    s = (e + np.minimum(c_r, c_i)) + np.maximum(c_r, c_i)
    return float(np.sum(s))


def _dot(x: np.ndarray, y: np.ndarray, dot: str) -> float | complex:
    """``x^* y``; enhanced ([NS], Appendix A) only for real data: the paper
    defines no enhanced complex dot product except the squared norm."""
    if dot == "enhanced" and not (np.iscomplexobj(x) or np.iscomplexobj(y)):
        return enhanced_dot(x, y)
    value = np.vdot(x, y)
    return complex(value) if np.iscomplexobj(value) else float(value)


def _squared_norm(x: np.ndarray, dot: str) -> float:
    if dot == "enhanced":
        return enhanced_squared_norm(x)
    return float(np.vdot(x, x).real)


# ---------------------------------------------------------------------------
# the 2 x 2 transformation ([NS], Sect. 2.1)
# ---------------------------------------------------------------------------


class PairTransform(NamedTuple):
    """Outcome of :func:`hz_rotation` for one pivot pair ``(i, j)``.

    Attributes
    ----------
    Z : ndarray, shape (2, 2)
        ``D_k Z'_k`` of [NS], Sect. 2.1 (``D_k = I`` when prescaled), before
        the sorting permutation ``P_k``; the identity if ``rotate`` is False.
        Real for real pivots, complex for complex ones.
    rotate : bool
        False if the pair is relatively orthogonal ([NS], Sect. 2.1): no
        non-trivial transformation, only the sorting permutation may apply.
    big : bool
        A "big" transformation under the chosen criterion ([NS], Sect. 2.5):
        neither C1 nor C2 (as chosen) classifies it as small.  Always True
        for the exceptional transformations; False if ``rotate`` is False.
    exceptional : bool
        The exceptional formula of Sect. 2.1.1 / 2.1.2 was used.
    a_ii, a_jj : float
        The diagonal of ``A'_k`` (``a_ii / b_ii``, ``a_jj / b_jj`` when not
        prescaled); :func:`apply_pair` sorts by it when ``rotate`` is False.
    """

    Z: np.ndarray
    rotate: bool
    big: bool
    exceptional: bool
    a_ii: float
    a_jj: float


def relatively_orthogonal(
    a_ii: float, a_ij: complex, a_jj: float, b_ij: complex, *, n: int
) -> bool:
    """Numerical relative orthogonality of a pivot pair ([NS], Sect. 2.1).

    ``|b'_ij| < eps sqrt(n)`` and ``|a'_ij| < sqrt(a'_ii) sqrt(a'_jj) eps
    sqrt(n)``, for the (rescaled, ``diag(B'_k) = I``) pivot elements.

    Parameters
    ----------
    a_ii, a_ij, a_jj, b_ij : float or complex
        Elements of ``A'_k`` and the off-diagonal element of ``B'_k``.
    n : int
        Number of columns (the paper's order of the problem).

    Returns
    -------
    bool
        True if no transformation is needed.  Also True when both
        off-diagonal elements are exactly zero, or ``a_ij`` is and ``|b_ij|``
        passes (a deviation: the strict inequality fails there when a column
        of ``F`` is zero, although the pivot pair is diagonal to rounding).
    """
    if a_ij == 0 and b_ij == 0:
        return True
    tol = EPS * math.sqrt(n)
    # a_ij = 0 passes too (a deviation: a zero column of F, a_ii a_jj = 0, would
    # fail the strict inequality for ever once B'_k is diagonal to rounding)
    return abs(b_ij) < tol and (a_ij == 0 or abs(a_ij) < math.sqrt(a_ii) * math.sqrt(a_jj) * tol)


def _ieee_divide(numerator: float, denominator: float) -> float:
    """``numerator / denominator`` as IEEE 754 (``+-inf`` for ``x/0``, ``x != 0``).

    The paper assumes an arithmetic that does not trap on ``+-1/0`` ([NS],
    Sect. 2.1.2); Python floats raise instead, numpy float64 does not.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(numerator) / np.float64(denominator))


def _cos_sin_from_tan(tangent: float) -> tuple[float, float]:
    """``(cos theta, sin theta)`` from ``tan theta``, ``|theta| <= pi/2``.

    [NS], Sect. 2.1.1: ``cos theta = 1/sqrt(1 + tan^2 theta)`` (the paper
    prints ``1/(1 + tan^2 theta)``, a slip) and ``sin theta = tan theta cos
    theta``; both via ``hypot(1, tan theta)``, which does not overflow.  For
    ``tan theta = +-infinity``: ``cos theta = 0`` and ``sin theta =
    sign(tan theta)`` (the paper's ``sin theta = 1`` is a slip for
    ``-infinity``).
    """
    if math.isinf(tangent):
        return 0.0, math.copysign(1.0, tangent)
    secant = math.hypot(1.0, tangent)
    return 1.0 / secant, tangent / secant


def _sqrt_one_minus_square(x: float) -> float:
    """``t_k := sqrt(1 - x_k^2)`` ([NS], Sect. 2.1.1, 2.1.2), ``|x_k| < 1``.

    As printed for ``|x_k| < 1/2`` (then ``t_k = 1`` exactly for tiny
    ``x_k``, which criterion C1 looks at); as ``(1 - |x_k|)(1 + |x_k|)``
    otherwise, where ``1 - |x_k|`` is exact and ``1 - x_k^2`` would cancel.
    """
    x = abs(x)
    return math.sqrt(1.0 - x * x if x < 0.5 else (1.0 - x) * (1.0 + x))


def _proportional_pair(x: float, phase: complex) -> np.ndarray:
    """The exceptional ``Z'_k`` of [NS], Sect. 2.1.1 (and 2.1.2, corrected).

    ``(1/sqrt 2) [[1/sqrt(1+x), -e^{i zeta}/sqrt(1-x)],
    [e^{-i zeta}/sqrt(1+x), 1/sqrt(1-x)]]`` with ``x = |b'_ij|`` and
    ``phase = e^{i zeta} = b'_ij / |b'_ij|``, which is ``sign(b'_ij)`` in the
    real case.  The paper's real formula, with ``|x|`` and no sign, is a slip:
    for ``b'_ij < 0`` its columns are not ``B'_k``-normalised.
    """
    plus = 1.0 / math.sqrt(2.0 * (1.0 + x))
    minus = 1.0 / math.sqrt(2.0 * (1.0 - x))
    return np.array(
        [[plus, -phase * minus], [np.conj(phase) * plus, minus]],
        dtype=np.complex128 if isinstance(phase, complex) else np.float64,
    )


class _Angles(NamedTuple):
    """``Z'_k`` with the quantities that criteria C1 and C2 look at."""

    Z: np.ndarray
    cos_phi: float
    cos_psi: float
    t: float


def _complex_transformation(
    a_ii: float, a_ij: complex, a_jj: float, b_ij: complex
) -> _Angles | np.ndarray:
    """``Z'_k`` of [NS], Sect. 2.1.1, or the exceptional matrix (an ndarray)."""
    x = abs(b_ij)  # x_k := |b'_ij|
    zeta = cmath.phase(b_ij) if b_ij != 0 else 0.0  # zeta_k := arg(b'_ij), or 0
    phase = cmath.rect(1.0, zeta)  # e^{i zeta_k}
    z = phase.conjugate() * a_ij  # z_k := e^{-i zeta_k} a'_ij
    u, v = z.real, z.imag  # u_k := Re(z_k), v_k := Im(z_k)
    h = a_jj - a_ii  # h_k := a'_jj - a'_ii
    if v == 0.0 and h == 0.0:  # "An exception" of Sect. 2.1.1
        return _proportional_pair(x, phase)
    t = _sqrt_one_minus_square(x)  # t_k := sqrt(1 - x_k^2)
    tau = 1.0 if h >= 0.0 else -1.0  # tau_k := sign(1, h_k)
    # tan(2 theta_k) := tau_k (2 u_k - (a'_ii + a'_jj) x_k) / (t_k sqrt(h_k^2 + 4 v_k^2))
    tan_2theta = _ieee_divide(tau * (2.0 * u - (a_ii + a_jj) * x), t * math.hypot(h, 2.0 * v))
    tan_gamma = _ieee_divide(2.0 * v, h)  # tan gamma_k := 2 v_k / h_k
    cos_2theta, sin_2theta = _cos_sin_from_tan(tan_2theta)
    cos_gamma, sin_gamma = _cos_sin_from_tan(tan_gamma)
    # cos phi_k, cos psi_k := sqrt(1 +- x_k sin 2theta_k + t_k cos gamma_k cos 2theta_k) / sqrt 2
    common = t * cos_gamma * cos_2theta
    cos_phi = math.sqrt(1.0 + x * sin_2theta + common) / math.sqrt(2.0)
    cos_psi = math.sqrt(1.0 - x * sin_2theta + common) / math.sqrt(2.0)
    skew = t * sin_gamma * cos_2theta
    # e^{i alpha_k} sin phi_k :=
    #     e^{i zeta_k} ((sin 2theta_k - x_k) + i t_k sin gamma_k cos 2theta_k) / (2 cos psi_k)
    sin_phi = phase * complex(sin_2theta - x, skew) / (2.0 * cos_psi)
    # e^{-i beta_k} sin psi_k :=
    #     e^{-i zeta_k} ((sin 2theta_k + x_k) - i t_k sin gamma_k cos 2theta_k) / (2 cos phi_k)
    sin_psi = phase.conjugate() * complex(sin_2theta + x, -skew) / (2.0 * cos_phi)
    # Z'_k := (1/t_k) [[cos phi_k, e^{i alpha_k} sin phi_k], [-e^{-i beta_k} sin psi_k, cos psi_k]]
    Z = np.array([[cos_phi, sin_phi], [-sin_psi, cos_psi]], dtype=np.complex128) / t
    return _Angles(Z, cos_phi, cos_psi, t)


def _real_transformation(a_ii: float, a_ij: float, a_jj: float, x: float) -> _Angles | np.ndarray:
    """``Z'_k`` of [NS], Sect. 2.1.2, or the exceptional matrix (an ndarray)."""
    h = a_jj - a_ii
    denominator = 2.0 * a_ij - (a_ii + a_jj) * x
    if h == 0.0 and denominator == 0.0:  # cot(2 theta_k) = 0/0: "An exception" of Sect. 2.1.2
        return _proportional_pair(abs(x), 1.0 if x >= 0.0 else -1.0)  # slip corrected, see there
    t = _sqrt_one_minus_square(x)  # t_k := sqrt(1 - x_k^2)
    root_plus, root_minus = math.sqrt(1.0 + x), math.sqrt(1.0 - x)
    xi = x / (root_plus + root_minus)  # xi_k := x_k / (sqrt(1 + x_k) + sqrt(1 - x_k))
    eta = x / ((1.0 + root_plus) * (1.0 + root_minus))  # eta_k
    # cot(2 theta_k) := t_k (a'_jj - a'_ii) / (2 a'_ij - (a'_ii + a'_jj) x_k)
    cot_2theta = _ieee_divide(t * h, denominator)
    # tan theta_k := sign(1, cot 2theta_k) / (|cot 2theta_k| + sqrt(1 + cot^2 2theta_k)); the
    # sqrt as hypot (no overflow); -0 counts as +0, keeping theta_k in (-pi/4, pi/4].
    sign = 1.0 if cot_2theta >= 0.0 else -1.0
    tan_theta = sign / (abs(cot_2theta) + math.hypot(1.0, cot_2theta))
    cos_theta, sin_theta = _cos_sin_from_tan(tan_theta)
    cos_phi = cos_theta + xi * (sin_theta - eta * cos_theta)
    cos_psi = cos_theta - xi * (sin_theta + eta * cos_theta)
    sin_phi = sin_theta - xi * (cos_theta + eta * sin_theta)
    sin_psi = sin_theta + xi * (cos_theta - eta * sin_theta)
    # Z'_k := (1/t_k) [[cos phi_k, sin phi_k], [-sin psi_k, cos psi_k]]
    Z = np.array([[cos_phi, sin_phi], [-sin_psi, cos_psi]]) / t
    return _Angles(Z, cos_phi, cos_psi, t)


def _zero_column_transformation(zero_first: bool, b: complex, complex_pair: bool) -> _Angles:
    """``Z'_k`` for a pair with a zero column of F (``a'_ij = 0`` and ``a'_ii``
    or ``a'_jj`` zero), keeping it exactly zero.

    Not in [NS]: for one zero column its formulas give the same ``Z'_k`` in
    exact arithmetic (the zero column's eigenvector of the pencil is ``e_i``
    or ``e_j``), but in floating point they mix a rounding-sized multiple of
    the other column into the zero one, and a zero column that turns into
    noise never becomes relatively orthogonal to its like (A with fewer rows
    than columns).  For two zero columns (``A'_k = 0``) the paper's
    exceptional formula rotates by 45 degrees however small ``|b|`` is, a
    big transformation in every sweep; this one is the identity to rounding
    when ``|b|`` is at rounding level, and small by C1 and C2 then.  With
    ``t = sqrt(1 - |b|^2)``: f_j = 0: ``Z'_k = [[1/t, 0], [-conj(b)/t, 1]]``
    (``cos phi = 1``, ``cos psi = t``; also for f_i = f_j = 0); f_i = 0 alone:
    ``Z'_k = [[1, -b/t], [0, 1/t]]`` (``cos phi = t``, ``cos psi = 1``); ``Z'^* B'_k Z' = I``, and
    ``Z'^* A'_k Z'`` is diagonal as A'_k is.
    """
    t = _sqrt_one_minus_square(abs(b))
    dtype = np.complex128 if complex_pair else np.float64
    if zero_first:
        return _Angles(np.array([[1.0, -b / t], [0.0, 1.0 / t]], dtype=dtype), t, 1.0, t)
    return _Angles(np.array([[1.0 / t, 0.0], [-np.conj(b) / t, 1.0]], dtype=dtype), 1.0, t, t)


def _is_small(angles: _Angles, criterion: str) -> bool:
    """Small transformation by C1 or C2 of [NS], Sect. 2.5 ("strict": never small)."""
    if criterion == "C1":  # (cos phi_k)/t_k = (cos psi_k)/t_k = 1, i.e. diag(Z'_k) = (1, 1)
        return bool(angles.Z[0, 0] == 1.0 and angles.Z[1, 1] == 1.0)
    if criterion == "C2":  # cos phi_k = cos psi_k = 1
        return angles.cos_phi == 1.0 and angles.cos_psi == 1.0
    return False


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")


def _rescaled_pivots(
    a_ii: float, a_ij: complex, a_jj: float, b_ii: float, b_ij: complex,
    b_jj: float,
) -> tuple[tuple[float, float | complex, float, float | complex], tuple[float, float]]:
    """``A'_k = D_k A_k D_k``, ``B'_k = D_k B_k D_k`` of the not-scaled version.

    [NS], Sect. 2.1: ``D_11 = 1/sqrt(b_ii)``, ``D_22 = 1/sqrt(b_jj)``; the
    elements as in Sect. 3.5.3.  Returns ``((a'_ii, a'_ij, a'_jj, b'_ij),
    (D_11, D_22))``.
    """
    d_i, d_j = 1.0 / math.sqrt(b_ii), 1.0 / math.sqrt(b_jj)
    # a'_ii := a_ii / b_ii, a'_jj := a_jj / b_jj; a'_ij, b'_ij scaled by D_11 D_22
    return (a_ii / b_ii, a_ij * d_i * d_j, a_jj / b_jj, b_ij * d_i * d_j), (d_i, d_j)


def _check_positive_definite(b_ij: complex, prescaled: bool) -> None:
    """``t_k = sqrt(1 - |b'_ij|^2) > 0`` needs ``B'_k`` positive definite (Sect. 2.1.1)."""
    if abs(b_ij) < 1.0:
        return
    hint = " (the prescaled version assumes diag(B) = I; try prescale=False)"
    raise np.linalg.LinAlgError(
        f"pivot submatrix of B is not positive definite in floating point, |b'_ij| = "
        f"{abs(b_ij)!r} >= 1: the columns of G (B) are numerically dependent"
        + (hint if prescaled else "")
    )


def hz_rotation(
    a_ii: float,
    a_ij: complex,
    a_jj: float,
    b_ii: float,
    b_ij: complex,
    b_jj: float,
    *,
    n: int,
    prescaled: bool = True,
    criterion: str = "C1",
) -> PairTransform:
    """The ``2 x 2`` Hari–Zimmermann transformation of one pivot pair.

    Computes ``Z_k`` with ``Z_k^* A_k Z_k`` diagonal and ``Z_k^* B_k Z_k =
    I_2`` for the pivot submatrices ``A_k = [[a_ii, a_ij], [conj(a_ij),
    a_jj]]`` and ``B_k = [[b_ii, b_ij], [conj(b_ij), b_jj]]`` ([NS],
    Sect. 2.1; ``Z'_k`` from Sect. 2.1.1 if ``a_ij`` or ``b_ij`` is complex,
    else from Sect. 2.1.2).

    Parameters
    ----------
    a_ii, a_ij, a_jj : float or complex
        ``f_i^* f_i``, ``f_i^* f_j``, ``f_j^* f_j``.
    b_ii, b_ij, b_jj : float or complex
        ``g_i^* g_i``, ``g_i^* g_j``, ``g_j^* g_j``.  When ``prescaled``,
        ``b_ii`` and ``b_jj`` are not used: the prescaled algorithm assumes
        ``diag(B_k) = I`` ([NS], Sect. 2, "It is assumed that diag(B) = I").
    n : int
        Number of columns, for the relative orthogonality test.
    prescaled : bool, optional
        True: the standard version, ``A'_k = A_k``, ``B'_k = B_k`` with unit
        diagonal.  False: rescale by ``D_k = diag(1/sqrt(b_ii),
        1/sqrt(b_jj))``, ``A'_k = D_k A_k D_k``, ``B'_k = D_k B_k D_k``, and
        return ``Z_k = D_k Z'_k`` ([NS], Sect. 2.1).
    criterion : {"C1", "C2", "strict"}, optional
        Which transformations count as small ([NS], Sect. 2.5).

    Returns
    -------
    PairTransform
        ``Z`` is ``D_k Z'_k`` (the identity for a relatively orthogonal
        pair, which is then *not* rescaled, as the paper prescribes); the
        sorting permutation ``P_k`` is left to :func:`apply_pair`.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``|b'_ij| >= 1``: ``B'_k`` is not positive definite (``t_k`` would
        not be real), i.e. the columns of ``G`` are numerically dependent, or,
        prescaled, their norms have drifted from 1 (Sect. 2.1).
    """
    _check_choice("criterion", criterion, CRITERIA)
    if prescaled:
        d_i = d_j = 1.0
    else:
        (a_ii, a_ij, a_jj, b_ij), (d_i, d_j) = _rescaled_pivots(a_ii, a_ij, a_jj, b_ii, b_ij, b_jj)
    complex_pair = np.iscomplexobj(a_ij) or np.iscomplexobj(b_ij)
    identity = np.eye(2, dtype=np.complex128 if complex_pair else np.float64)
    if relatively_orthogonal(a_ii, a_ij, a_jj, b_ij, n=n):
        return PairTransform(identity, False, False, False, a_ii, a_jj)
    _check_positive_definite(b_ij, prescaled)
    if a_ij == 0 and (a_ii == 0 or a_jj == 0):  # a zero column of F (or two)
        found = _zero_column_transformation(a_ii == 0 and a_jj != 0, b_ij, complex_pair)
    elif complex_pair:
        found = _complex_transformation(a_ii, complex(a_ij), a_jj, complex(b_ij))
    else:
        found = _real_transformation(a_ii, float(a_ij), a_jj, float(b_ij))
    exceptional = isinstance(found, np.ndarray)
    Z_prime = found if exceptional else found.Z
    big = exceptional or not _is_small(found, criterion)
    Z = Z_prime * np.array([[d_i], [d_j]])  # Z_k := D_k Z'_k (rows scaled)
    return PairTransform(Z, True, big, exceptional, a_ii, a_jj)


# ---------------------------------------------------------------------------
# one step ([NS], Sect. 2.1)
# ---------------------------------------------------------------------------


class StepOutcome(NamedTuple):
    """What one pivot step did.

    Attributes
    ----------
    rotated : bool
        A non-trivial transformation was applied (the pair was not
        relatively orthogonal).
    big : bool
        It was a big transformation ([NS], Sect. 2.5).
    swapped : bool
        The sorting permutation ``P_k`` exchanged the two columns.
    """

    rotated: bool
    big: bool
    swapped: bool


def pivot_gram(
    F: np.ndarray, G: np.ndarray, i: int, j: int, *, prescaled: bool = True, dot: str = "ordinary"
) -> tuple[float, float | complex, float, float, float | complex, float]:
    """Elements of the pivot submatrices ``A_k``, ``B_k`` of columns ``i, j``.

    ([NS], Sect. 2.1, the displays of ``A_k`` and ``B_k``.)  When
    ``prescaled``, ``b_ii = b_jj = 1`` are not computed, as the paper
    assumes; otherwise they are the recomputed squared norms of ``g_i``,
    ``g_j``.

    Returns
    -------
    tuple
        ``(a_ii, a_ij, a_jj, b_ii, b_ij, b_jj)``.
    """
    f_i, f_j, g_i, g_j = F[:, i], F[:, j], G[:, i], G[:, j]
    a_ii, a_jj = _squared_norm(f_i, dot), _squared_norm(f_j, dot)
    if prescaled:
        b_ii = b_jj = 1.0
    else:
        b_ii, b_jj = _squared_norm(g_i, dot), _squared_norm(g_j, dot)
    return a_ii, _dot(f_i, f_j, dot), a_jj, b_ii, _dot(g_i, g_j, dot), b_jj


def _inverse_2x2(Z: np.ndarray) -> np.ndarray:
    """Inverse of a ``2 x 2`` matrix by its adjugate."""
    (p, q), (r, s) = Z
    return np.array([[s, -q], [-r, p]]) / (p * s - q * r)


def _swap_columns(Y: np.ndarray, i: int, j: int) -> None:
    Y[:, [i, j]] = Y[:, [j, i]]


def apply_pair(
    F: np.ndarray,
    G: np.ndarray,
    Z: np.ndarray,
    i: int,
    j: int,
    transform: PairTransform,
    *,
    Zinv: np.ndarray | None = None,
    sort: bool = True,
    dot: str = "ordinary",
) -> StepOutcome:
    """Apply a pair transformation and the sorting permutation, in place.

    ``[y_i y_j] := [y_i y_j] Z_k`` for ``Y`` in ``F, G, Z`` ([NS], Sect. 2.1,
    the column updates), and the rows ``i, j`` of ``Zinv`` are premultiplied
    by ``Z_k^{-1}``.  Then, with ``sort``, the columns are exchanged
    (``Z_k := Z_k P_k``) if ``a_ii;k+1 < a_jj;k+1`` (Sect. 2.1): for a
    rotated pair judged by the squared norms of the new columns of ``F``
    (Sect. 3.5.3), for a relatively orthogonal one by ``diag(A'_k)``.

    Parameters
    ----------
    F, G, Z : ndarray
        Modified in place (columns ``i`` and ``j``).
    i, j : int
        The pivot pair, ``i < j``.
    transform : PairTransform
        From :func:`hz_rotation` for this pair.
    Zinv : ndarray, optional
        ``Z^{-1}``, modified in place (rows ``i`` and ``j``).
    sort : bool, optional
        Apply the sorting permutation ``P_k``.
    dot : {"ordinary", "enhanced"}, optional
        How the new squared column norms are computed for sorting.

    Returns
    -------
    StepOutcome
    """
    if transform.rotate:
        for Y in (F, G, Z):  # [y_i;k+1 y_j;k+1] := [y_i;k y_j;k] Z_k (Sect. 2.1)
            Y[:, [i, j]] = Y[:, [i, j]] @ transform.Z
        if Zinv is not None:  # Z_{k+1}^{-1} = Z~_k^{-1} Z_k^{-1} (Sect. 1)
            Zinv[[i, j], :] = _inverse_2x2(transform.Z) @ Zinv[[i, j], :]
        # a_ii;k+1, a_jj;k+1 as the squared norms of the new columns (Sect. 3.5.3)
        a_ii, a_jj = _squared_norm(F[:, i], dot), _squared_norm(F[:, j], dot)
    else:
        a_ii, a_jj = transform.a_ii, transform.a_jj
    swapped = sort and a_ii < a_jj  # P_k keeps diag(A'_k) descending
    if swapped:
        for Y in (F, G, Z):
            _swap_columns(Y, i, j)
        if Zinv is not None:
            Zinv[[i, j], :] = Zinv[[j, i], :]
    return StepOutcome(transform.rotate, transform.big, swapped)


def hz_step(
    F: np.ndarray,
    G: np.ndarray,
    Z: np.ndarray,
    i: int,
    j: int,
    *,
    Zinv: np.ndarray | None = None,
    prescaled: bool = True,
    criterion: str = "C1",
    sort: bool = True,
    dot: str = "ordinary",
) -> StepOutcome:
    """One step ``k`` of the sequential one-sided method on the pair ``(i, j)``.

    Forms ``A_k``, ``B_k`` (:func:`pivot_gram`), computes ``Z_k``
    (:func:`hz_rotation`) and applies it with the sorting permutation
    (:func:`apply_pair`); ``F``, ``G``, ``Z`` (and ``Zinv``) are modified in
    place, so pass copies.  ([NS], Sect. 2.1.)

    Parameters
    ----------
    F, G, Z : ndarray
        ``F_k``, ``G_k`` (``n`` columns each) and ``Z_k`` (``n x n``).
    i, j : int
        The pivot pair, ``0 <= i < j < n``.
    Zinv : ndarray, optional
        ``Z_k^{-1}``, updated to ``Z_{k+1}^{-1}``.
    prescaled, criterion : optional
        As in :func:`hz_rotation`.
    sort : bool, optional
        Apply the sorting permutation ``P_k``.
    dot : {"ordinary", "enhanced"}, optional
        Dot products: ordinary, or those of [NS], Appendix A.

    Returns
    -------
    StepOutcome
        Whether it rotated, whether that was big (for C1/C2), and whether the
        columns were swapped.
    """
    _check_choice("dot", dot, _DOTS)
    gram = pivot_gram(F, G, i, j, prescaled=prescaled, dot=dot)
    transform = hz_rotation(*gram, n=F.shape[1], prescaled=prescaled, criterion=criterion)
    return apply_pair(F, G, Z, i, j, transform, Zinv=Zinv, sort=sort, dot=dot)


# ---------------------------------------------------------------------------
# rescalings ([NS], Sect. 2 and 2.4)
# ---------------------------------------------------------------------------


def prescale(F: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, ...]:
    """The prescaling ``F_0 = F Z_0``, ``G_0 = G Z_0`` of [NS], Sect. 2.

    ``(Z_0)_jj := 1/||g_j||_F``, so that ``diag(G_0^* G_0) = I``.  (The
    paper's Sect. 2 prints ``1/sqrt(||g_j||_F)``, a slip; Sect. 3.3 has
    ``1/||g_j||_F``.)

    Returns
    -------
    tuple of ndarray
        ``(F_0, G_0, Z_0, Z_0^{-1})``.
    """
    norms = np.linalg.norm(G, axis=0)
    Z_0, Z_0_inverse = np.diag(1.0 / norms).astype(F.dtype), np.diag(norms).astype(F.dtype)
    return F / norms, G / norms, Z_0, Z_0_inverse


def _theta(F: np.ndarray, G: np.ndarray) -> np.ndarray:
    """``Theta_jj := (||f_j||^2 + ||g_j||^2)^{-1/2}`` ([NS], Sect. 2.4)."""
    return 1.0 / np.hypot(np.linalg.norm(F, axis=0), np.linalg.norm(G, axis=0))


def theta_rescale(
    F: np.ndarray, G: np.ndarray, Z: np.ndarray, Zinv: np.ndarray | None = None
) -> None:
    """Between-sweep rescaling by ``Theta`` ([NS], Sect. 2.4), in place.

    ``Y := Y Theta`` for ``Y`` in ``F, G, Z`` and ``Zinv := Theta^{-1} Zinv``.
    The paper rescales only ``Z`` there; that keeps ``F_0 Z_k = F_k`` only
    for columns already normalised to ``||f_j||^2 + ||g_j||^2 = 1`` (by the
    block transformations ``Z^(l) Theta^(l)``), which the pointwise method does
    not do, so here all three are rescaled alike (a diagonal congruence that
    changes nothing else).
    """
    theta = _theta(F, G)
    for Y in (F, G, Z):
        Y *= theta
    if Zinv is not None:
        Zinv /= theta[:, None]


# ---------------------------------------------------------------------------
# the block level ([NS], Sect. 2.3 and 2.4)
# ---------------------------------------------------------------------------


class BlockOutcome(NamedTuple):
    """Result of :func:`block_transformation`.

    Attributes
    ----------
    Z : ndarray, shape (2w, 2w)
        ``Z~ = Z^ Theta~`` ([NS], Sect. 2.4; ``Z^`` alone when prescaled), to
        postmultiply the block column pair of F, G and Z with.
    transformations, big : int
        Transformations of the inner sweeps, and the big ones among them.
    """

    Z: np.ndarray
    transformations: int
    big: int


def semidefinite_cholesky(M: np.ndarray) -> np.ndarray:
    """Upper triangular ``R`` with ``R^* R = M`` (unpivoted, [NS] Sect. 2.3).

    A pivot at or below ``2w eps`` times its original diagonal element (``M``
    positive semidefinite in floating point: dependent columns in the block)
    gives a zero row of ``R``, so that ``R^* R = M`` to that rounding level.
    """
    M = np.array(M, dtype=np.result_type(M, np.float64), copy=True)
    order = M.shape[0]
    diagonal = M.diagonal().real.copy()
    R = np.zeros_like(M)
    for j in range(order):
        d = M[j, j].real
        r_jj = np.sqrt(d) if d > order * EPS * diagonal[j] else 0.0
        R[j, j] = r_jj
        if r_jj > 0:
            R[j, j + 1:] = M[j, j + 1:] / r_jj
        # the trailing matrix: M(r, c) -= conj(R(j, r)) R(j, c)
        M[j + 1:, j + 1:] -= np.outer(R[j, j + 1:].conj(), R[j, j + 1:])
    return R


def block_transformation(
    A_hat: np.ndarray,
    B_hat: np.ndarray,
    *,
    n: int,
    inner_sweeps: int = 1,
    prescaled: bool = False,
    criterion: str = "C1",
    dot: str = "ordinary",
) -> BlockOutcome:
    """The transformation of one block column pair ([NS], Sect. 2.3, 2.4).

    ``A_hat = [F_P F_Q]^* [F_P F_Q]`` and ``B_hat`` alike for G (2w x 2w);
    their Cholesky factors (:func:`semidefinite_cholesky`) take the place of
    the block columns, and the parallel pointwise method runs on them with
    the generalized Mantharam-Eberlein ordering of order 2w: one sweep
    (``inner_sweeps=1``, BO) or until a sweep transforms nothing, at most
    `inner_sweeps` (FB).  When prescaled, the columns of the factor of
    ``B_hat`` are first scaled to unit norm (``Z^`` starts from that
    diagonal); otherwise ``Z~ = Z^ Theta~`` with ``Theta~_cc =
    (||f^_c||^2 + ||g^_c||^2)^(-1/2)`` of the transformed factors
    (Sect. 2.4).  A pivot pair of ``B^`` not positive definite is left
    alone, as the kernel leaves it to the pointwise level.

    Parameters
    ----------
    A_hat, B_hat : ndarray, shape (2w, 2w)
        Hermitian positive (semi)definite.
    n : int
        Columns of the whole problem, for the relative orthogonality test.
    inner_sweeps, prescaled, criterion, dot : optional
        As described; `criterion` is C1 or C2 for counting big ones.

    Returns
    -------
    BlockOutcome
    """
    from .strategies import step_table  # local import: strategies is independent of this

    F_hat, G_hat = semidefinite_cholesky(A_hat), semidefinite_cholesky(B_hat)
    order = F_hat.shape[0]
    dtype = np.result_type(F_hat, G_hat)
    F_hat, G_hat = F_hat.astype(dtype), G_hat.astype(dtype)
    Z = np.eye(order, dtype=dtype)
    if prescaled:
        norms = np.linalg.norm(G_hat, axis=0)
        scale = np.where(norms > 0, 1 / np.where(norms > 0, norms, 1), 1)
        F_hat, G_hat, Z = F_hat * scale, G_hat * scale, Z * scale
    transformations = big = 0
    table = step_table("me", order).pairs
    for _ in range(inner_sweeps):
        rotated_in_sweep = 0
        for step in table.tolist():
            transforms = []
            for i, j in step:
                gram = pivot_gram(F_hat, G_hat, i, j, prescaled=prescaled, dot=dot)
                try:
                    transforms.append(hz_rotation(*gram, n=n, prescaled=prescaled,
                                                  criterion=criterion))
                except np.linalg.LinAlgError:  # B'_k not positive definite: left alone
                    transforms.append(None)
            for (i, j), transform in zip(step, transforms):
                if transform is None:
                    continue
                outcome = apply_pair(F_hat, G_hat, Z, i, j, transform, dot=dot)
                rotated_in_sweep += outcome.rotated
                big += outcome.big
        transformations += rotated_in_sweep
        if rotated_in_sweep == 0:
            break
    if not prescaled:
        norm2 = (np.linalg.norm(F_hat, axis=0) ** 2 + np.linalg.norm(G_hat, axis=0) ** 2)
        Z = Z * np.where(norm2 > 0, 1 / np.sqrt(np.where(norm2 > 0, norm2, 1)), 1)
    return BlockOutcome(Z, transformations, big)


# ---------------------------------------------------------------------------
# drivers ([NS], Sect. 2.2 and 2.5)
# ---------------------------------------------------------------------------


class HZResult(NamedTuple):
    """Result of :func:`hz_gsvd_sequential` and :func:`hz_gsvd_parallel`.

    Attributes
    ----------
    F, G : ndarray
        ``F_N = F Z_N`` and ``G_N = G Z_N``, with relatively orthogonal
        columns, roughly sorted by ``||f_j|| / ||g_j||`` descendingly (as far
        as the permutations ``P_k`` got; :func:`gsvd_from_hz` sorts fully).
    Z : ndarray, shape (n, n)
        The accumulated transformation ``Z_N`` (not yet rescaled by the final
        ``Theta``; see :func:`gsvd_from_hz`).
    Zinv : ndarray, shape (n, n)
        ``Z_N^{-1}``, accumulated from the ``2 x 2`` inverses.
    sweeps : int
        Sweeps performed, including the last one (without big
        transformations).
    converged : bool
        False if ``max_sweeps`` ran out.
    transformations, big_transformations : int
        Counts of all non-trivial and of the big transformations ([NS],
        Sect. 2.5 and 3.1.1).
    """

    F: np.ndarray
    G: np.ndarray
    Z: np.ndarray
    Zinv: np.ndarray
    sweeps: int
    converged: bool
    transformations: int
    big_transformations: int


def _as_pair(F: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 / complex128 copies of ``F`` and ``G``."""
    F, G = np.asarray(F), np.asarray(G)
    if F.ndim != 2 or G.ndim != 2:
        raise ValueError("F and G must be 2-D arrays")
    if F.shape[1] != G.shape[1]:
        raise ValueError(f"F and G must have the same number of columns: {F.shape}, {G.shape}")
    if F.shape[1] < 1:
        raise ValueError("F and G must have at least one column")
    if F.shape[0] < F.shape[1] or G.shape[0] < G.shape[1]:
        raise ValueError(f"need min(m_F, m_G) >= n ([NS], Sect. 2), got {F.shape} and {G.shape}")
    dtype = np.complex128 if np.iscomplexobj(F) or np.iscomplexobj(G) else np.float64
    F, G = F.astype(dtype), G.astype(dtype)  # copies
    if not (np.isfinite(F).all() and np.isfinite(G).all()):
        raise ValueError("F and G must be finite")
    if not np.linalg.norm(G, axis=0).all():
        raise np.linalg.LinAlgError("G (B) has a zero column: it is not of full column rank")
    return F, G


def _sequential_pairs(n: int, ordering: str) -> list[tuple[int, int]]:
    """Pivot pairs of one sweep of a cyclic sequential ordering."""
    if ordering == "row-cyclic":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    return [(i, j) for j in range(n) for i in range(j)]  # column-cyclic


def _parallel_steps(n: int, strategy: str, sweep: int) -> Iterator[list[tuple[int, int]]]:
    """Steps of one (quasi-)sweep of a parallel strategy ([NS], Sect. 2.2).

    Tables from :func:`cljacobi.strategies.step_table`.  An odd ``n`` gets a
    virtual column ``n`` (padding to even order, the role of bordering in
    [NS], Sect. 3.1) whose pairs are left out: a bordered column would be
    moved around by the sorting.
    """
    from .strategies import step_table  # local import: strategies is independent of this

    order = n + n % 2
    for step in step_table(strategy, order, sweep=sweep).pairs:
        yield [(i, j) for i, j in step.tolist() if j < n]


class _Options(NamedTuple):
    max_sweeps: int
    prescale: bool
    criterion: str
    sort: bool
    dot: str
    rescale_sweeps: bool


def _check_options(options: _Options) -> None:
    _check_choice("criterion", options.criterion, CRITERIA)
    _check_choice("dot", options.dot, _DOTS)
    if options.max_sweeps < 1:
        raise ValueError(f"max_sweeps must be >= 1, got {options.max_sweeps}")
    if options.rescale_sweeps and options.prescale:
        raise ValueError(
            "rescale_sweeps needs prescale=False: after the Theta rescaling diag(B) != I, "
            "which the prescaled transformations assume"
        )


def _iterate(
    F: np.ndarray,
    G: np.ndarray,
    steps_of_sweep: Callable[[int, int], Iterable[list[tuple[int, int]]]],
    options: _Options,
    caller: str,
) -> HZResult:
    """Sweeps of (parallel) steps until convergence ([NS], Sect. 2.2, 2.5).

    ``steps_of_sweep(n, sweep)`` gives the steps of a sweep, each a list of
    disjoint pivot pairs.  In each step the transformations of all its pairs
    are computed from the same ``F_k``, ``G_k`` before any is applied, as
    concurrent tasks would; for one pair per step this is the sequential
    method.
    """
    _check_options(options)
    F, G = _as_pair(F, G)
    n = F.shape[1]
    if options.prescale:
        F, G, Z, Zinv = prescale(F, G)
    else:  # the not-scaled version starts from Z_0 := I (Sect. 2.1)
        Z, Zinv = np.eye(n, dtype=F.dtype), np.eye(n, dtype=F.dtype)
    transformations = big_transformations = sweeps = 0
    converged = n < 2
    for sweep in range(0 if converged else options.max_sweeps):
        sweeps += 1
        rotated_in_sweep = big_in_sweep = 0
        for step in steps_of_sweep(n, sweep):
            transforms = [
                hz_rotation(
                    *pivot_gram(F, G, i, j, prescaled=options.prescale, dot=options.dot),
                    n=n, prescaled=options.prescale, criterion=options.criterion,
                )
                for i, j in step
            ]
            for (i, j), transform in zip(step, transforms):
                outcome = apply_pair(F, G, Z, i, j, transform, Zinv=Zinv, sort=options.sort,
                                     dot=options.dot)
                rotated_in_sweep += outcome.rotated
                big_in_sweep += outcome.big
        transformations += rotated_in_sweep
        big_transformations += big_in_sweep
        # Sect. 2.5: stop after a sweep without big transformations (C1/C2), or without any
        if (rotated_in_sweep if options.criterion == "strict" else big_in_sweep) == 0:
            converged = True
            break
        if options.rescale_sweeps and sweep + 1 < options.max_sweeps:
            theta_rescale(F, G, Z, Zinv)  # Sect. 2.4: after each but the last sweep
    if not converged:
        warnings.warn(f"{caller}: no convergence in {options.max_sweeps} sweeps", RuntimeWarning,
                      stacklevel=3)
    return HZResult(F, G, Z, Zinv, sweeps, converged, transformations, big_transformations)


def hz_gsvd_sequential(
    F: np.ndarray,
    G: np.ndarray,
    *,
    ordering: str = "row-cyclic",
    max_sweeps: int = 30,
    prescale: bool = True,
    criterion: str = "C1",
    sort: bool = True,
    dot: str = "ordinary",
    rescale_sweeps: bool = False,
) -> HZResult:
    """Sequential pointwise implicit Hari–Zimmermann method ([NS], Sect. 2.1).

    Parameters
    ----------
    F : ndarray, shape (m_F, n)
        Real or complex, ``m_F >= n``; not modified.
    G : ndarray, shape (m_G, n)
        Of full column rank, ``m_G >= n``; not modified.
    ordering : {"row-cyclic", "column-cyclic"}, optional
        Cyclic pivot ordering of a sweep.
    max_sweeps : int, optional
        Sweeps before giving up (a ``RuntimeWarning``; ``converged=False``).
        30, the limit of the paper's Algorithm 6.
    prescale : bool, optional
        True: the standard version with ``Z_0`` (Sect. 2); False: the
        not-scaled version with ``D_k`` in every step (Sect. 2.1).
    criterion : {"C1", "C2", "strict"}, optional
        Convergence: no big transformation (C1 or C2, Sect. 2.5) or no
        transformation at all ("strict") in a sweep.
    sort : bool, optional
        Apply the sorting permutations ``P_k`` (Sect. 2.1).
    dot : {"ordinary", "enhanced"}, optional
        Dot products of Appendix A for "enhanced".
    rescale_sweeps : bool, optional
        Rescale by ``Theta`` after each but the last sweep (Sect. 2.4; see
        :func:`theta_rescale`).  Only with ``prescale=False``.

    Returns
    -------
    HZResult
        Pass ``F, G, Z, Zinv`` to :func:`gsvd_from_hz`.
    """
    _check_choice("ordering", ordering, SEQUENTIAL_ORDERINGS)
    options = _Options(max_sweeps, prescale, criterion, sort, dot, rescale_sweeps)

    def steps_of_sweep(n: int, sweep: int) -> Iterator[list[tuple[int, int]]]:
        return ([pair] for pair in _sequential_pairs(n, ordering))

    return _iterate(F, G, steps_of_sweep, options, "hz_gsvd_sequential")


def hz_gsvd_parallel(
    F: np.ndarray,
    G: np.ndarray,
    *,
    strategy: str = "me",
    max_sweeps: int = 30,
    prescale: bool = True,
    criterion: str = "C1",
    sort: bool = True,
    dot: str = "ordinary",
    rescale_sweeps: bool = False,
) -> HZResult:
    """Parallel pointwise implicit Hari–Zimmermann method ([NS], Sect. 2.2).

    A step transforms ``floor(n/2)`` disjoint pivot pairs, all computed from
    the same ``F_k``, ``G_k``; the steps of a sweep come from a parallel
    strategy table of :func:`cljacobi.strategies.step_table`.

    Parameters
    ----------
    F, G : ndarray
        As in :func:`hz_gsvd_sequential`.
    strategy : {"me", "mm", "ring", "round-robin"}, optional
        Parallel strategy: the generalised Mantharam–Eberlein (ME, cyclic,
        ``n - 1`` steps; the paper's inner-level choice) or the modified
        modulus (MM, quasi-cyclic, ``n`` steps) of Sect. 2.2, or the ring and
        round-robin orderings of :mod:`cljacobi.strategies`.
    max_sweeps, prescale, criterion, sort, dot, rescale_sweeps : optional
        As in :func:`hz_gsvd_sequential`.

    Returns
    -------
    HZResult
    """
    from .strategies import STRATEGIES

    _check_choice("strategy", strategy, STRATEGIES)
    options = _Options(max_sweeps, prescale, criterion, sort, dot, rescale_sweeps)
    return _iterate(F, G, lambda n, sweep: _parallel_steps(n, strategy, sweep), options,
                    "hz_gsvd_parallel")


# ---------------------------------------------------------------------------
# extraction of the GSVD ([NS], Sect. 2.4, the post-iterative phase)
# ---------------------------------------------------------------------------


class GSVDResult(NamedTuple):
    """A generalized SVD ``A = U diag(C) X^H``, ``B = V diag(S) X^H``.

    Attributes
    ----------
    U : ndarray, shape (m, n)
        Orthonormal columns.
    V : ndarray, shape (p, n)
        Orthonormal columns.
    C, S : ndarray, shape (n,)
        ``Sigma_F`` and ``Sigma_G`` of [NS]: ``C`` descending, ``C^2 + S^2
        = 1``, ``C, S >= 0``.
    X : ndarray, shape (n, n)
        Nonsingular, ``X^H = Z^{-1}``.
    Z : ndarray, shape (n, n)
        ``X^{-H}``: ``A Z = U diag(C)``, ``B Z = V diag(S)``.
    sigma : ndarray, shape (n,)
        Generalized singular values ``C / S`` (``Sigma = Sigma_G^{-1}
        Sigma_F``), descending; ``inf`` where ``S = 0``.
    sweeps : int or None
        Sweeps of the iteration, if known.
    """

    U: np.ndarray
    V: np.ndarray
    C: np.ndarray
    S: np.ndarray
    X: np.ndarray
    Z: np.ndarray
    sigma: np.ndarray
    sweeps: int | None = None


def _normalized_columns(Y: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``Y diag(norms)^{-1}``; zero columns become an orthonormal completion.

    A zero column (a zero generalized singular value for ``F``, or an
    infinite one for ``G``) has no direction of its own; as LAPACK does, any
    unit vector orthogonal to the other columns serves.
    """
    zero = norms == 0
    Q = np.empty_like(Y)
    Q[:, ~zero] = Y[:, ~zero] / norms[~zero]
    if zero.any():
        complete = np.linalg.qr(Q[:, ~zero], mode="complete")[0]
        Q[:, zero] = complete[:, (~zero).sum():][:, : zero.sum()]
    return Q


def gsvd_from_hz(
    F: np.ndarray, G: np.ndarray, Z: np.ndarray, Zinv: np.ndarray | None = None
) -> GSVDResult:
    """Extract the GSVD from the final ``F_N``, ``G_N``, ``Z_N`` ([NS], Sect. 2.4).

    The post-iterative rescaling of Sect. 2.4::

        (Sigma~_F)_jj := ||f_j||,   (Sigma~_G)_jj := ||g_j||,
        Theta_jj := ((Sigma~_F)_jj^2 + (Sigma~_G)_jj^2)^{-1/2},
        Sigma_F := Sigma~_F Theta,  Sigma_G := Sigma~_G Theta,
        U := F_N Sigma~_F^{-1},     V := G_N Sigma~_G^{-1},    Z := Z_N Theta,

    followed by the symmetric permutation ``P_0`` (Sect. 1) that sorts
    ``Sigma = Sigma_G^{-1} Sigma_F`` descendingly.  For ``n = 1`` this is the
    paper's closed form of Sect. 2 (``Sigma_F = ||F|| / sqrt(||F||^2 +
    ||G||^2)``, ...).

    Parameters
    ----------
    F, G : ndarray, shape (m, n), (p, n)
        ``F_N``, ``G_N`` with relatively orthogonal columns.
    Z : ndarray, shape (n, n)
        ``Z_N``.
    Zinv : ndarray, shape (n, n), optional
        ``Z_N^{-1}`` as accumulated by the drivers; then ``X = (Theta^{-1}
        Zinv)^H`` involves no inversion.  Without it ``X`` is obtained by
        solving ``Z^H X = I``.

    Returns
    -------
    GSVDResult
        With ``A = U diag(C) X^H`` for the original ``A`` with ``A Z_N = F_N``
        (and likewise ``B``).  An exactly zero column of ``F_N`` gives
        ``C_i = 0``, ``S_i = 1``, and ``U[:, i]`` completes the other columns
        to an orthonormal set (likewise ``V``).  [NS] assume ``F`` of full
        column rank: for a rank-deficient ``F`` the column of ``F_N`` of a zero
        generalized singular value is rounding noise, not exactly zero, and
        so is its ``U[:, i]`` (not orthogonal to the others; it is multiplied
        by a ``C_i`` at rounding level).
    """
    norm_f, norm_g = np.linalg.norm(F, axis=0), np.linalg.norm(G, axis=0)
    theta = 1.0 / np.hypot(norm_f, norm_g)  # Theta_jj
    C, S = norm_f * theta, norm_g * theta  # Sigma_F, Sigma_G
    U, V = _normalized_columns(F, norm_f), _normalized_columns(G, norm_g)
    Z = Z * theta  # Z := Z_N Theta
    if Zinv is not None:
        X = (Zinv / theta[:, None]).conj().T  # X^H = Theta^{-1} Z_N^{-1} (Sect. 1)
    else:
        X = np.linalg.solve(Z.conj().T, np.eye(Z.shape[0], dtype=Z.dtype))
    order = np.argsort(-C, kind="stable")  # P_0 of Sect. 1: Sigma descending
    with np.errstate(divide="ignore"):
        sigma = C / S
    return GSVDResult(U[:, order], V[:, order], C[order], S[order], X[:, order], Z[:, order],
                      sigma[order])


def _shorten(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, ...]:
    """The shortening of [NS], Sect. 2, by column-pivoted QR factorizations.

    ``A P_1 = Q_F R_F``, ``(B P_1) P_2 = Q_G R_G``, ``F'' = R_F P_2``,
    ``G'' = R_G``; returns ``(F'', G'', Q_F, Q_G, q)`` with ``q`` the index
    form of ``P'' = P_1 P_2`` (``A[:, q] = Q_F F''``).
    """
    from scipy.linalg import qr  # pivoted QR; numpy has none

    Q_F, R_F, p_1 = qr(A, mode="economic", pivoting=True)
    Q_G, R_G, p_2 = qr(B[:, p_1], mode="economic", pivoting=True)
    return R_F[:, p_2], R_G, Q_F, Q_G, p_1[p_2]


def gsvd_reference(
    A: np.ndarray,
    B: np.ndarray,
    *,
    parallel: bool = False,
    shorten: bool = False,
    **options,
) -> GSVDResult:
    """GSVD of ``(A, B)`` by the implicit Hari–Zimmermann method.

    ``A = U diag(C) X^H``, ``B = V diag(S) X^H`` in the economy sizes of
    ``gsvd4py.gsvd(A, B, mode="econ")`` (LAPACK ``xGGSVD3``) for ``m, p >=
    n`` and ``B`` of full column rank.

    Parameters
    ----------
    A : ndarray, shape (m, n)
    B : ndarray, shape (p, n)
        Of full column rank.
    parallel : bool, optional
        Use :func:`hz_gsvd_parallel` instead of :func:`hz_gsvd_sequential`.
    shorten : bool, optional
        First shorten ``(A, B)`` to square ``n x n`` factors by column-pivoted
        QR ([NS], Sect. 2); then ``Z = P'' Z''``, ``U = Q_F U''``, ``V =
        Q_G V''``.  Needs scipy.
    **options
        Passed to the driver (``prescale``, ``criterion``, ``max_sweeps``,
        ``ordering`` or ``strategy``, ...).

    Returns
    -------
    GSVDResult

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``B`` is not of full column rank (numerically, by
        ``numpy.linalg.matrix_rank``).
    ValueError
        For ``m < n``, ``p < n``, mismatched column counts or non-finite data.
    """
    A, B = _as_pair(A, B)
    n = A.shape[1]
    rank = np.linalg.matrix_rank(B)
    if rank < n:
        raise np.linalg.LinAlgError(
            f"B is not of full column rank (numerical rank {rank} < n = {n}); the implicit "
            "Hari-Zimmermann method needs B^H B positive definite"
        )
    if shorten:
        F, G, Q_F, Q_G, q = _shorten(A, B)
    else:
        F, G = A, B
    driver = hz_gsvd_parallel if parallel else hz_gsvd_sequential
    hz = driver(F, G, **options)
    result = gsvd_from_hz(hz.F, hz.G, hz.Z, hz.Zinv)._replace(sweeps=hz.sweeps)
    if not shorten:
        return result
    Z, X = np.empty_like(result.Z), np.empty_like(result.X)
    Z[q], X[q] = result.Z, result.X  # Z := P'' Z'' (Sect. 2), X = Z^{-H} = P'' X''
    return result._replace(U=Q_F @ result.U, V=Q_G @ result.V, Z=Z, X=X)
