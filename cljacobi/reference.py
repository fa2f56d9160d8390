"""Sequential pure-numpy reference of the one-sided hyperbolic Jacobi method.

This module is the *oracle* that the OpenCL kernels are compared with: a
plain, row-cyclic, pointwise implementation of the one-sided hyperbolic Jacobi
algorithm (Veselić 1993; Novaković & Singer 2011, Sect. 2), written for
clarity rather than speed.  Use it on small matrices only (it loops over
column pairs in Python).

Given a factor ``G`` (``m x r``) and a signature ``J = diag(signs)`` with
``signs[i] = +-1``, the method orthogonalises the columns of ``G`` by
right-multiplication with ``J``-unitary plane transformations,

* trigonometric rotations for pairs whose signs agree,
* hyperbolic rotations for pairs whose signs differ,

until the columns are numerically orthogonal.  Then ``M = G J G^*`` has the
eigenvalues ``lambda_i = j_i ||g_i||^2`` and the eigenvectors ``g_i / ||g_i||``
(of the final columns).

Conventions (shared with the kernels; see docs/design.md, Appendix B)
---------------------------------------------------------------------
For a pivot pair ``(i, j)``, ``i < j``, with ``a_ii = d_i``, ``a_jj = d_j``
(the *stored* squared column norms) and ``a_ij = g_i^* g_j``:

* relative orthogonality, eq. (2.3): skip the pair if
  ``|a_ij| < eps * sqrt(a_ii) * sqrt(a_jj)`` (or ``a_ij == 0``);
* trigonometric (``j_i == j_j``), eq. (2.4):
  ``kappa = (a_jj - a_ii) / (2 a_ij)``,
  ``t = sign(kappa) / (|kappa| + sqrt(1 + kappa^2))``, ``c = 1/sqrt(1 + t^2)``,
  ``g_i' = c (g_i - t g_j)``, ``g_j' = c (g_j + t g_i)``;
* hyperbolic (``j_i != j_j``), eq. (2.5):
  ``kappa = -(a_ii + a_jj) / (2 a_ij)``,
  ``t = sign(kappa) / (|kappa| + sqrt((|kappa| - 1)(|kappa| + 1)))``,
  ``c = 1/sqrt((1 - t)(1 + t))``,
  ``g_i' = c (g_i + t g_j)``, ``g_j' = c (g_j + t g_i)``.
  If rounding gives ``|kappa| <= 1`` the columns are numerically dependent:
  the pair is not rotated and the event is counted as a *breakdown*;
* for ``|kappa| >= sqrt(2/eps)`` (both kinds) ``t = 1/(2 kappa)``, evaluated
  as ``a_ij / (a_jj - a_ii)`` or ``-a_ij / (a_ii + a_jj)`` (finite where kappa
  itself overflows), and then ``c`` evaluates to 1; this also avoids
  overflow of ``kappa^2``;
* ``sign(kappa)`` is ``copysign(1, kappa)``, so ``kappa = +0`` gives the
  45-degree rotation ``t = 1`` and ``kappa = -0`` (``a_ii == a_jj`` with a
  negative real ``a_ij``) gives ``t = -1``, consistent with the complex rule;
* the new squared norms ``d_i, d_j`` are recomputed as the squared norms of
  the new columns (as GPUJACH1 does), not by the update formula (2.6);
* the pair is counted as a "big" rotation if
  ``|t| sqrt(max(a_ii, a_jj) / min(a_ii, a_jj)) > sqrt(eps)/2`` (how far the
  rotation moves the shorter column, relative to its norm; the paper's plain
  ``|t|`` stops too early when the norms differ widely); the process stops
  after the first sweep without a big rotation (Sect. 2 and eq. (4.2) of
  Novaković & Singer 2011).

Complex case (Hermitian ``M = G J G^*``).  Write ``a_ij = |a_ij| e^{i alpha}``.
Conceptually column ``j`` is first rotated by the phase, ``g_j <- e^{-i alpha}
g_j`` (which makes ``a_ij`` real and equal to ``|a_ij|``), the real formulas
are applied with ``|a_ij|``, and the phase is put back on the new column ``j``.
With the complex tangent ``s = t e^{i alpha}`` (``t`` real, from ``|a_ij|``)
the net update that is actually computed is

* trigonometric: ``g_i' = c (g_i - conj(s) g_j)``, ``g_j' = c (g_j + s g_i)``,
* hyperbolic:    ``g_i' = c (g_i + conj(s) g_j)``, ``g_j' = c (g_j + s g_i)``,

i.e. the ``2 x 2`` transformation applied from the right is
``c [[1, s], [-conj(s), 1]]`` (unitary) or ``c [[1, s], [conj(s), 1]]``
(``J``-unitary).  For real data ``e^{i alpha} = sign(a_ij)`` and this is
exactly the real formula evaluated with the signed ``a_ij`` (``t`` changes
sign with ``a_ij``), so real and complex code paths agree.

``V`` accumulation.  ``V`` starts as the identity and receives the same column
operations as ``G``, so that ``G_final = G @ V`` (up to rounding).  ``V`` is
what Novaković & Singer call ``V^{-*}`` (their eq. (2.1)); it is ``J``-unitary,
``V^* J V = J``.

References
----------
.. [1] V. Novaković and S. Singer, "A GPU-based hyperbolic SVD algorithm",
   BIT Numer. Math. 51 (2011), 1009-1030; eqs. (2.1)-(2.6), Sect. 4.
.. [2] K. Veselić, "A Jacobi eigenreduction algorithm for definite matrix
   pairs", Numer. Math. 64 (1993), 241-269.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import NamedTuple

import numpy as np

__all__ = [
    "PairKind",
    "ReferenceResult",
    "KAPPA_APART",
    "eig_from_factor",
    "hyperbolic_jacobi",
    "kappa_excess",
    "orthogonality_tolerance",
    "pair_rotation",
    "parallel_hyperbolic_jacobi",
    "rotation",
    "rotation_cosine_m1",
]


class PairKind:
    """Outcome codes of :func:`pair_rotation` (plain ints, usable as flags)."""

    #: a rotation is to be applied
    ROTATE = 0
    #: the pair is relatively orthogonal, eq. (2.3); nothing to do
    ORTHOGONAL = 1
    #: hyperbolic pair with ``|kappa| <= 1`` (numerically dependent columns)
    BREAKDOWN = 2
    #: a column whose squared norm is below the normal range meets a column it
    #: is not orthogonal to: neither eq. (2.3) nor a rotation can be evaluated
    TINY = 3


class ReferenceResult(NamedTuple):
    """Result of :func:`hyperbolic_jacobi`.

    Attributes
    ----------
    G : ndarray, shape (m, r)
        The final factor ``G V``, with numerically orthogonal columns, in the
        original column order.
    V : ndarray, shape (r, r), or None
        Accumulated transformation (``V^{-*}`` of [1]_, eq. (2.1)),
        ``J``-unitary; ``None`` if ``accumulate_v=False``.
    d : ndarray, shape (r,)
        Squared column norms of the final ``G`` (as maintained by the
        algorithm: recomputed from each newly rotated column).
    sweeps : int
        Number of sweeps performed, including the last (converged) one;
        0 when ``r < 2``.
    rotations : int
        Number of rotations applied (big and small ones).
    breakdowns : int
        Number of hyperbolic pairs skipped because ``|kappa| <= 1``.
    converged : bool
        Whether the stopping criterion was met within ``max_sweeps``.
    tiny : int
        Number of pairs skipped because a column below the normal range met a
        column it is not orthogonal to (:attr:`PairKind.TINY`).
    deflations : int
        Number of columns set to zero as the rounding remainder of dependent
        columns (see the module docstring).
    """

    G: np.ndarray
    V: np.ndarray | None
    d: np.ndarray
    sweeps: int
    rotations: int
    breakdowns: int
    converged: bool
    tiny: int = 0
    deflations: int = 0


def _moved(t: float, a_ii: float, a_jj: float) -> float:
    """``|t| sqrt(a_long / a_short)``: the relative change of the shorter column."""
    return abs(t) * (math.sqrt(max(a_ii, a_jj)) / math.sqrt(min(a_ii, a_jj)))


#: Hyperbolic pairs with ``|kappa|`` below this take ``|kappa| - 1`` computed
#: apart from the columns (``kappa_excess`` of :func:`pair_rotation`), as the
#: kernels do.
KAPPA_APART = 2.0


def orthogonality_tolerance(m: int, eps: float) -> float:
    """The relative orthogonality threshold of the sweeps, ``sqrt(m) eps``.

    Eq. (2.3) of the 2011 paper with the rounding level of a computed cosine
    of two length-``m`` columns in place of ``eps`` (LAPACK's ``xGESVJ``
    tolerance); see ``cjac_orthogonality_tolerance`` in ``arith.cl.mako``.
    """
    return eps * math.sqrt(max(m, 1))


def kappa_excess(g_i: np.ndarray, g_j: np.ndarray, a_ij: complex) -> float:
    """``|kappa| - 1`` of a hyperbolic pair, from the columns.

    ``(a_ii + a_jj - 2 |a_ij|) / (2 |a_ij|) = ||g_i - u g_j||^2 / (2 |a_ij|)``
    with ``u = conj(a_ij) / |a_ij|``: no cancellation, where the Gram entries
    lose it all for nearly parallel columns (docs/design.md, Appendix B).
    """
    u = np.conj(a_ij) / abs(a_ij)
    diff = g_i - u * g_j
    return float(np.vdot(diff, diff).real) / (2 * abs(a_ij))


def rotation_cosine_m1(t: float, hyperbolic: bool) -> np.floating:
    """``c - 1`` for ``c = 1/sqrt(1 + t^2)`` (or ``1/sqrt((1 - t)(1 + t))``), in t's type.

    ``c`` rounded alone is 1 for ``|t| < sqrt(eps/2)``, which lengthens (or
    shortens) every rotated column by ``t^2/2`` in the same direction; the
    rotations apply ``z + (c - 1) z`` with ``c - 1`` to working precision
    instead (``cjac_rotation_cosine_m1`` in ``arith.cl.mako``; here the
    residual of the rounded ``c`` is taken with fractions, where the kernel
    uses FMAs).
    """
    rt = type(t) if isinstance(t, np.floating) else np.float64
    t = rt(t)
    one = rt(1)
    c = one / np.sqrt((one - t) * (one + t)) if hyperbolic else one / np.sqrt(one + t * t)
    u = 1 - Fraction(float(t)) ** 2 if hyperbolic else 1 + Fraction(float(t)) ** 2
    e = float(1 - Fraction(float(c)) ** 2 * u)
    return rt((c - one) + rt(float(c) * e / 2))


def pair_rotation(
    a_ii: float,
    a_jj: float,
    a_ij: float,
    hyperbolic: bool,
    *,
    eps: float | None = None,
    tol: float | None = None,
    kappa_excess: float | None = None,
) -> tuple[int, float, float]:
    """Classify a pivot pair and compute its rotation.

    Same as :func:`rotation`, but distinguishes the "no rotation" cases.

    Parameters
    ----------
    a_ii, a_jj : float
        Squared norms of the columns ``g_i`` and ``g_j`` (``i < j``).
    a_ij : float
        ``g_i^* g_j``; in the complex case pass ``|a_ij|`` (see the module
        docstring for how the phase is applied).
    hyperbolic : bool
        ``True`` if the signs of the two columns differ.
    eps : float, optional
        Machine epsilon to use; default ``np.finfo(np.float64).eps``.
        If the inputs are numpy ``float32`` scalars and ``eps`` is the float32
        epsilon, all arithmetic is done in float32.
    tol : float, optional
        Relative orthogonality threshold of eq. (2.3); default `eps` (the
        sweeps pass :func:`orthogonality_tolerance`).
    kappa_excess : float, optional
        ``|kappa| - 1`` of a hyperbolic pair computed apart
        (:func:`kappa_excess`); used when ``|kappa| <`` :data:`KAPPA_APART`.
        Then ``t = sign(kappa) / (1 + x + sqrt(x (2 + x)))``, and a pair with
        ``x = 0`` or ``|t|`` rounding to 1 is a breakdown.

    Returns
    -------
    kind : int
        One of :class:`PairKind`.
    t : float
        ``tan(phi)`` or ``tanh(phi)`` (0 unless ``kind == ROTATE``).
    c : float
        ``cos(phi)`` or ``cosh(phi)`` (1 unless ``kind == ROTATE``).
    """
    if eps is None:
        eps = float(np.finfo(np.float64).eps)
    rt = type(a_ii) if isinstance(a_ii, np.floating) else np.float64
    a_ii, a_jj, a_ij = rt(a_ii), rt(a_jj), rt(a_ij)
    one, two = rt(1), rt(2)
    eps_r = rt(eps)
    tol_r = eps_r if tol is None else rt(tol)
    zero_t, one_c = rt(0), rt(1)

    # A zero column is orthogonal to everything; one whose squared norm is
    # below the normal range can be judged by neither eq. (2.3) nor a rotation.
    abs_a = abs(a_ij)
    if not (a_ii >= np.finfo(rt).tiny and a_jj >= np.finfo(rt).tiny):
        return (PairKind.ORTHOGONAL if abs_a == 0 else PairKind.TINY), zero_t, one_c
    # eq. (2.3): relatively orthogonal pair.
    if abs_a == 0 or abs_a <= tol_r * np.sqrt(a_ii) * np.sqrt(a_jj):
        return PairKind.ORTHOGONAL, zero_t, one_c

    big_kappa = np.sqrt(two / eps_r)
    with np.errstate(over="ignore"):
        if hyperbolic:
            kappa = -(a_ii + a_jj) / (two * a_ij)
        else:
            kappa = (a_jj - a_ii) / (two * a_ij)
    ak = abs(kappa)
    sgn = rt(math.copysign(1.0, float(kappa)))

    if hyperbolic and kappa_excess is not None and ak < KAPPA_APART:
        # |t| -> 1: t from x = |kappa| - 1 computed from the columns.
        x = rt(kappa_excess)
        t = one / (one + x + np.sqrt(x * (two + x)))
        if not (x > 0 and t < one):
            return PairKind.BREAKDOWN, zero_t, one_c
        t = sgn * t
    elif hyperbolic and not ak > one:
        # |kappa| <= 1: coth(2 phi) <= 1 has no solution; the columns are
        # numerically linearly dependent.  Never produce NaN.
        return PairKind.BREAKDOWN, zero_t, one_c
    elif ak >= big_kappa:
        # t ~ 1/(2 kappa), evaluated without kappa: kappa overflows to inf
        # when the squared norms are more than ~2^1024 apart, and t = 0
        # would leave a nonorthogonal pair unrotated.
        with np.errstate(under="ignore"):
            t = -a_ij / (a_ii + a_jj) if hyperbolic else a_ij / (a_jj - a_ii)
    elif hyperbolic:
        t = sgn / (ak + np.sqrt((ak - one) * (ak + one)))
    else:
        t = sgn / (ak + np.sqrt(one + kappa * kappa))

    if hyperbolic:
        c = one / np.sqrt((one - t) * (one + t))
    else:
        c = one / np.sqrt(one + t * t)
    return PairKind.ROTATE, t, c


def rotation(
    a_ii: float,
    a_jj: float,
    a_ij: float,
    hyperbolic: bool,
    *,
    eps: float | None = None,
) -> tuple[float, float] | None:
    """Rotation that annihilates ``a_ij`` of a ``2 x 2`` pivot block.

    Computes ``t = tan(phi)``, ``c = cos(phi)`` (trigonometric, eq. (2.4) of
    Novaković & Singer 2011) or ``t = tanh(phi)``, ``c = cosh(phi)``
    (hyperbolic, eq. (2.5)) such that the updated columns

    * trigonometric: ``g_i' = c (g_i - t g_j)``, ``g_j' = c (g_j + t g_i)``,
    * hyperbolic:    ``g_i' = c (g_i + t g_j)``, ``g_j' = c (g_j + t g_i)``

    satisfy ``g_i'^T g_j' = 0``; the new squared norms are, eq. (2.6),
    ``a_ii - t a_ij`` / ``a_jj + t a_ij`` (trig.) and ``a_ii + t a_ij`` /
    ``a_jj + t a_ij`` (hyp.).  See Veselić (1993) for the hyperbolic case.

    Parameters
    ----------
    a_ii, a_jj : float
        Squared norms ``||g_i||^2``, ``||g_j||^2`` (``i < j``).
    a_ij : float
        ``g_i^T g_j`` (real); for complex columns pass ``|a_ij|`` and apply
        the phase as described in the module docstring.
    hyperbolic : bool
        ``True`` if the signs ``j_i`` and ``j_j`` differ.
    eps : float, optional
        Machine epsilon (default: float64 epsilon).

    Returns
    -------
    (t, c) : tuple of float, or None
        ``None`` if the pair is relatively orthogonal,
        ``|a_ij| < eps sqrt(a_ii) sqrt(a_jj)`` (eq. (2.3)), and also for a
        hyperbolic pair with ``|kappa| <= 1`` (numerically dependent columns,
        a breakdown); use :func:`pair_rotation` to tell the two apart.

    References
    ----------
    V. Novaković and S. Singer, BIT 51 (2011), eqs. (2.3)-(2.6);
    K. Veselić, Numer. Math. 64 (1993).
    """
    kind, t, c = pair_rotation(a_ii, a_jj, a_ij, hyperbolic, eps=eps)
    if kind != PairKind.ROTATE:
        return None
    return t, c


def _check_factor(G: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    G = np.asarray(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D array, got shape {G.shape}")
    if G.dtype.kind in "biu":
        G = G.astype(np.float64)
    elif G.dtype.kind not in "fc":
        raise ValueError(f"G must be a real or complex floating array, got {G.dtype}")
    elif G.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        G = G.astype(np.complex128 if G.dtype.kind == "c" else np.float64)
    if not np.all(np.isfinite(G)):
        raise ValueError("G must be finite")
    s = np.asarray(signs)
    if s.ndim != 1 or s.shape[0] != G.shape[1]:
        raise ValueError(f"signs must have shape ({G.shape[1]},), got {s.shape}")
    if not np.all((s == 1) | (s == -1)):
        raise ValueError("signs must contain only +1 and -1")
    return G, s.astype(np.int8)


class _Pair(NamedTuple):
    """How :func:`_decide` would treat a pivot pair (what ``cjac_step`` computes)."""

    kind: int
    t: np.floating
    c: np.floating
    cm1: np.floating  # c - 1 to working precision
    a_ij: np.floating | complex
    tc: np.floating | complex  # s = t e^{i alpha}, the tangent with the phase of a_ij


def _decide(g_i: np.ndarray, g_j: np.ndarray, d_i: float, d_j: float, hyperbolic: bool,
            *, eps: float, tol: float, rt: type, peak: float, rounding: float) -> _Pair:
    """Classify the pair (g_i, g_j) with squared norms (d_i, d_j) and compute its rotation.

    `peak` is the larger of the two columns' largest squared norms so far: a
    hyperbolic pair whose difference ``g_i - u g_j`` is within ``rounding *
    peak`` (the rounding the columns carry: ``tol^2``, or 0 where the rows
    may be graded) is dependent, a breakdown.
    """
    if np.iscomplexobj(g_i):
        a_ij = np.vdot(g_i, g_j)  # g_i^* g_j
        arg = rt(abs(a_ij))
    else:
        a_ij = arg = rt(np.dot(g_i, g_j))
    excess = None
    if hyperbolic and arg != 0:
        excess = kappa_excess(g_i, g_j, a_ij)
        if 2 * abs(arg) * excess <= rounding * peak:
            excess = 0.0
    kind, t, c = pair_rotation(d_i, d_j, arg, hyperbolic, eps=eps, tol=tol,
                               kappa_excess=excess)
    cm1 = rotation_cosine_m1(t, hyperbolic) if kind == PairKind.ROTATE else rt(0)
    # s = t e^{i alpha}, the phase of a_ij; for real data s = t.
    tc = (a_ij / arg) * t if np.iscomplexobj(g_i) and kind == PairKind.ROTATE else t
    return _Pair(kind, t, c, cm1, a_ij, tc)


def _rotate_rows(X: np.ndarray, a: int, b: int, pair: _Pair, hyperbolic: bool,
                 turn: bool = False) -> None:
    """Rows a, b of X (columns of G or V, transposed) by eq. (2.4) or (2.5).

    ``g_a' = c (g_a -+ conj(s) g_b)``, ``g_b' = c (g_b + s g_a)``, the products
    with c as ``z + (c - 1) z``; with `turn` (Nash's rotation) the results are
    turned by pi/2 into ``(g_b', -g_a')``.
    """
    x, y = X[a].copy(), X[b].copy()
    s_i = np.conj(pair.tc) if hyperbolic else -np.conj(pair.tc)
    z_a, z_b = x + s_i * y, y + pair.tc * x
    new_a, new_b = z_a + pair.cm1 * z_a, z_b + pair.cm1 * z_b
    if turn:
        new_a, new_b = new_b, -new_a
    X[a], X[b] = new_a, new_b


def _sqnorm(x: np.ndarray, rt: type) -> np.floating:
    return rt(np.vdot(x, x).real)


def _deflate(Gt: np.ndarray, c: int, d: float, peak: float, rounding: float) -> bool:
    """Zero column c of G (row c of Gt) if its squared norm ``d`` fell to
    `rounding` (``tol^2``) times its peak: the rounding remainder of
    numerically dependent columns (``cjac_step``)."""
    if d > rounding * peak:
        return False
    Gt[c] = 0
    return True


def hyperbolic_jacobi(
    G: np.ndarray,
    signs: np.ndarray,
    *,
    max_sweeps: int = 60,
    accumulate_v: bool = True,
    peak_rounding: bool = True,
) -> ReferenceResult:
    """One-sided hyperbolic Jacobi (row-cyclic) on the factor ``G``.

    Orthogonalises the columns of ``G`` by trigonometric (equal signs) and
    hyperbolic (opposite signs) rotations, eqs. (2.3)-(2.6) of Novaković &
    Singer (2011), in row-cyclic order: ``(0,1), (0,2), ..., (0,r-1), (1,2),
    ..., (r-2,r-1)``; ``i < j`` in every pair.  This is the sequential
    algorithm of Veselić (1993) for the definite pair ``(G^* G, J)``.  It is
    the oracle for the GPU kernels; see the module docstring for every
    numerical detail (thresholds, breakdowns, complex phases).

    Parameters
    ----------
    G : ndarray, shape (m, r)
        The factor, real or complex (float32/complex64 are processed in their
        own precision with their own epsilon; other types become float64 or
        complex128).  Should have full column rank; it is not modified.
    signs : ndarray, shape (r,)
        Diagonal of ``J``, entries ``+1`` or ``-1``, in any order.
    max_sweeps : int, optional
        Maximum number of sweeps (default 60).  If exceeded, a
        ``RuntimeWarning`` is issued and ``converged`` is ``False``.
    accumulate_v : bool, optional
        Accumulate the transformations in ``V`` (default ``True``).  The
        final ``G`` does not depend on this (bitwise).
    peak_rounding : bool, optional
        Whether each column carries rounding of its largest norm so far times
        eps (default; False for a factor whose rows may be graded): as the
        kernel's argument of that name.

    Returns
    -------
    ReferenceResult
        ``(G, V, d, sweeps, rotations, breakdowns, converged)``; ``G_final ==
        G @ V`` up to rounding, ``V^* J V = J``.

    Notes
    -----
    Stopping criterion: after each sweep, stop if no rotation with
    ``|t| > sqrt(eps)/2`` was applied in it (this includes the case of no
    rotation at all, i.e. all pairs relatively orthogonal by eq. (2.3)).

    References
    ----------
    V. Novaković and S. Singer, "A GPU-based hyperbolic SVD algorithm",
    BIT 51 (2011), Sect. 2; K. Veselić, "A Jacobi eigenreduction algorithm
    for definite matrix pairs", Numer. Math. 64 (1993).
    """
    G, s = _check_factor(G, signs)
    if max_sweeps < 1:
        raise ValueError("max_sweeps must be >= 1")
    m, r = G.shape
    rt = np.float32 if G.dtype in (np.float32, np.complex64) else np.float64
    eps = float(np.finfo(rt).eps)
    big_tol = rt(math.sqrt(eps) / 2)

    # Work on the transpose so that each column of G is a contiguous row.
    Gt = np.array(G.T, dtype=G.dtype, order="C", copy=True)
    Vt = np.eye(r, dtype=G.dtype) if accumulate_v else None
    d = np.array([_sqnorm(Gt[k], rt) for k in range(r)], dtype=rt)

    sweeps = rotations = breakdowns = tiny = deflations = 0
    tol = orthogonality_tolerance(m, eps)
    rounding = tol * tol if peak_rounding else 0.0
    peak = d.copy()
    converged = r < 2
    if not converged:
        for _ in range(max_sweeps):
            sweeps += 1
            big = False
            for i in range(r - 1):
                for j in range(i + 1, r):
                    hyp = bool(s[i] != s[j])
                    pair = _decide(Gt[i], Gt[j], d[i], d[j], hyp, eps=eps, tol=tol, rt=rt,
                                   peak=max(peak[i], peak[j]), rounding=rounding)
                    breakdowns += pair.kind == PairKind.BREAKDOWN
                    tiny += pair.kind == PairKind.TINY
                    if pair.kind != PairKind.ROTATE:
                        continue
                    rotations += 1
                    if _moved(pair.t, d[i], d[j]) > big_tol:
                        big = True
                    _rotate_rows(Gt, i, j, pair, hyp)
                    if Vt is not None:
                        _rotate_rows(Vt, i, j, pair, hyp)
                    d[i], d[j] = _sqnorm(Gt[i], rt), _sqnorm(Gt[j], rt)
                    peak[i], peak[j] = max(peak[i], d[i]), max(peak[j], d[j])
                    short = i if d[i] <= d[j] else j
                    if not hyp and _deflate(Gt, short, d[short], peak[short], rounding):
                        d[short] = 0
                        deflations += 1
            if not big:
                converged = True
                break
        if not converged:
            warnings.warn(
                f"hyperbolic_jacobi: no convergence in {max_sweeps} sweeps "
                f"({rotations} rotations, {breakdowns} breakdowns)",
                RuntimeWarning,
                stacklevel=2,
            )

    return ReferenceResult(
        G=np.ascontiguousarray(Gt.T) if r else np.zeros((m, 0), G.dtype),
        V=None if Vt is None else np.ascontiguousarray(Vt.T),
        d=d,
        sweeps=sweeps,
        rotations=rotations,
        breakdowns=breakdowns,
        converged=converged,
        tiny=tiny,
        deflations=deflations,
    )


def eig_from_factor(
    G: np.ndarray, signs: np.ndarray, **kw: object
) -> tuple[np.ndarray, np.ndarray]:
    """Eigendecomposition of ``M = G J G^*`` from the factor, by Jacobi.

    Runs :func:`hyperbolic_jacobi` on ``G`` and returns the eigenvalues
    ``lambda_i = j_i ||g_i||^2`` (``||g_i||^2`` taken from the maintained
    squared norms ``d``) in ascending order, and the matching eigenvectors,
    the normalised final columns ``g_i / ||g_i||`` (Novaković & Singer 2011,
    Sect. 1-2).

    Parameters
    ----------
    G : ndarray, shape (m, r)
        Factor of full column rank.
    signs : ndarray, shape (r,)
        Diagonal of ``J`` (``+1``/``-1``).
    **kw
        Passed to :func:`hyperbolic_jacobi` (``max_sweeps``); ``accumulate_v``
        defaults to ``False`` here.

    Returns
    -------
    w : ndarray, shape (r,)
        Eigenvalues, ascending (real, of the working real precision).
    U : ndarray, shape (m, r)
        Orthonormal eigenvectors in columns, ``M U = U diag(w)``.  If
        ``m > r``, ``M`` has ``m - r`` further zero eigenvalues that are not
        returned.  A column that became exactly zero (rank deficiency) gives
        eigenvalue 0 and a zero vector.
    """
    kw.setdefault("accumulate_v", False)
    res = hyperbolic_jacobi(G, signs, **kw)  # type: ignore[arg-type]
    s = np.asarray(signs)
    d = res.d
    lam = np.where(s > 0, d, -d)
    order = np.argsort(lam, kind="stable")
    norms = np.sqrt(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(norms > 0, 1 / np.where(norms > 0, norms, 1), 0)
    U = res.G * scale.astype(res.G.real.dtype)[None, :]
    return lam[order], U[:, order]


def _sort_positions(d: np.ndarray, rho: np.ndarray, sg: np.ndarray) -> None:
    """Sort_Diagonal (Novaković & Singer 2011, Sect. 4) of the packed diagonal, in place.

    Positive entries first, descending in ``d``; negative entries after,
    ascending; stable, as ``cljacobi.host.diagonal.sort_diagonal``.
    """
    pos = np.flatnonzero(sg > 0)
    neg = np.flatnonzero(sg <= 0)
    order = np.concatenate([pos[np.argsort(-d[pos], kind="stable")],
                            neg[np.argsort(d[neg], kind="stable")]])
    d[:], rho[:], sg[:] = d[order], rho[order], sg[order]


def parallel_hyperbolic_jacobi(
    G: np.ndarray,
    signs: np.ndarray,
    *,
    strategy: str,
    rotation: int = 1,
    sort_diagonal: bool = True,
    max_sweeps: int = 60,
    accumulate_v: bool = True,
    peak_rounding: bool = True,
) -> ReferenceResult:
    """The pointwise device algorithm, run sequentially: the oracle for every strategy.

    Runs the steps of :func:`cljacobi.strategies.step_table` in order (the
    disjoint pairs of one parallel step one after another, which gives the
    same result as running them at once), on the packed diagonal
    ``(d, rho, j)`` of Novaković & Singer (2011), Sect. 4: pairs are
    *positions* ``i < j``, columns are addressed through ``rho``.  Every
    numerical detail is that of :func:`hyperbolic_jacobi` (the module
    docstring); on top of it:

    * bordering: an odd ``r`` gets a column that is a unit vector in a new
      row (their eq. (4.1)); the border is stripped from the result;
    * ``sort_diagonal``: Sort_Diagonal before the first and after every sweep
      (positive part descending in ``d``, negative part ascending);
    * ``rotation`` (Zhou & Brent 1997, Sect. 2): with 2 or 3 the first
      position ``i`` of a *trigonometric* pair receives the larger eigenvalue
      estimate ``j d`` -- the larger new squared norm in the positive sign
      group, the smaller in the negative one -- judged by the predicted new
      norms of eq. (2.6), ``a_ii - t a_ij`` and ``a_jj + t a_ij`` (the
      current ones if the pair is not rotated); norms equal to a relative
      ``sqrt(eps)/2`` are a tie and stay where they are.  Algorithm 2 then exchanges
      the packed-diagonal entries of ``i`` and ``j``; algorithm 3 (Nash)
      rotates through the complementary angle, ``(g_i', g_j') = (c (g_j + t
      g_i), -c (g_i - t g_j))``, and keeps ``rho`` (a pair with the border
      column is not turned, its data must stay where it is stripped).
      Hyperbolic pairs are rotated alike by all three (they have no
      complementary rotation).

    Parameters
    ----------
    G : ndarray, shape (m, r)
        Real factor of full column rank; not modified.
    signs : ndarray, shape (r,)
        Diagonal of ``J`` (``+1``/``-1``); positions start sign-partitioned,
        positive first (a stable partition of the columns).
    strategy : {"mm", "me", "ring", "round-robin"}
        Parallel pivot strategy; ``"mm"`` sweeps are quasi-sweeps of ``r``
        steps, the others have ``r - 1``.
    rotation : {1, 2, 3}
        Rotation algorithm.
    sort_diagonal : bool
        Sort the packed diagonal between sweeps.
    max_sweeps : int
        Sweeps before giving up (``converged=False``, with a warning).
    accumulate_v : bool
        Accumulate ``V`` with ``G_final = G @ V``.
    peak_rounding : bool
        As in :func:`hyperbolic_jacobi`.

    Returns
    -------
    ReferenceResult
        ``G``, ``V`` and ``d`` in the original column order.

    References
    ----------
    V. Novaković and S. Singer, BIT 51 (2011), Sect. 4, Algorithms 4.1-4.5;
    B. B. Zhou and R. P. Brent, J. Parallel Distrib. Comput. (1997), Sect. 2.
    """
    from .strategies import step_table  # local import: strategies is independent of this

    G, s = _check_factor(G, signs)
    if G.dtype.kind == "c":
        raise TypeError("parallel_hyperbolic_jacobi handles real factors only")
    if rotation not in (1, 2, 3):
        raise ValueError(f"rotation must be 1, 2 or 3, not {rotation!r}")
    if max_sweeps < 1:
        raise ValueError("max_sweeps must be >= 1")
    G = G.astype(np.float64)
    m, r = G.shape
    bordered = r % 2
    r_pad = r + bordered
    eps = float(np.finfo(np.float64).eps)
    big_tol = math.sqrt(eps) / 2

    Gt = np.zeros((r_pad, m + bordered))
    Gt[:r, :m] = G.T
    # the border column gets the sign -1, as the driver's Precompute_Data gives it
    sg_col = np.concatenate([s, [-1] * bordered]).astype(np.int8)
    if bordered:
        Gt[r, m] = 1.0
    Vt = np.eye(r_pad) if accumulate_v else None

    # packed diagonal by position, positions sign-partitioned (stable)
    rho = np.argsort(-sg_col, kind="stable")
    sg = sg_col[rho].copy()
    d = np.array([float(np.dot(Gt[c], Gt[c])) for c in rho])

    sweeps = rotations = breakdowns = tiny = deflations = 0
    tol = orthogonality_tolerance(m + bordered, eps)
    rounding = tol * tol if peak_rounding else 0.0
    peak = np.array([float(np.dot(Gt[c], Gt[c])) for c in range(r_pad)])  # by column
    converged = r < 2
    if sort_diagonal:
        _sort_positions(d, rho, sg)
    for sweep in range(0 if converged else max_sweeps):
        sweeps += 1
        big = False
        for step in step_table(strategy, r_pad, sweep=sweep).pairs:
            for i, j in step.tolist():
                ci, cj = rho[i], rho[j]
                hyp = bool(sg[i] != sg[j])
                pair = _decide(Gt[ci], Gt[cj], d[i], d[j], hyp, eps=eps, tol=tol,
                               rt=np.float64, peak=max(peak[ci], peak[cj]), rounding=rounding)
                rotate = pair.kind == PairKind.ROTATE
                breakdowns += pair.kind == PairKind.BREAKDOWN
                tiny += pair.kind == PairKind.TINY
                exchange = False
                if rotation != 1 and not hyp:
                    new_ii = d[i] - pair.t * pair.a_ij
                    new_jj = d[j] + pair.t * pair.a_ij
                    tie = big_tol * max(new_ii, new_jj)  # estimates equal to T_eps
                    exchange = bool(new_jj - new_ii > tie if sg[i] > 0 else new_ii - new_jj > tie)
                    # Nash's turn would move the border's data (column r): not done
                    exchange &= rotation != 3 or max(ci, cj) < r
                if rotate:
                    rotations += 1
                    big |= _moved(pair.t, d[i], d[j]) > big_tol
                turn = rotation == 3 and exchange
                if rotate or turn:
                    for rows in [Gt] + ([Vt] if Vt is not None else []):
                        _rotate_rows(rows, ci, cj, pair, hyp, turn)
                    if turn:
                        peak[[ci, cj]] = peak[[cj, ci]]
                    d[i], d[j] = float(np.dot(Gt[ci], Gt[ci])), float(np.dot(Gt[cj], Gt[cj]))
                    peak[ci], peak[cj] = max(peak[ci], d[i]), max(peak[cj], d[j])
                    short = i if d[i] <= d[j] else j
                    if not hyp and _deflate(Gt, rho[short], d[short], peak[rho[short]], rounding):
                        d[short] = 0.0
                        deflations += 1
                if rotation == 2 and exchange:
                    d[[i, j]], rho[[i, j]], sg[[i, j]] = d[[j, i]], rho[[j, i]], sg[[j, i]]
        if sort_diagonal:
            _sort_positions(d, rho, sg)
        if not big:
            converged = True
            break
    if not converged:
        warnings.warn(
            f"parallel_hyperbolic_jacobi: no convergence in {max_sweeps} sweeps",
            RuntimeWarning,
            stacklevel=2,
        )
    d_col = np.empty(r_pad)
    d_col[rho] = d
    return ReferenceResult(
        G=np.ascontiguousarray(Gt[:r, :m].T),
        V=None if Vt is None else np.ascontiguousarray(Vt[:r, :r].T),
        d=d_col[:r],
        sweeps=sweeps,
        rotations=rotations,
        breakdowns=breakdowns,
        converged=converged,
        tiny=tiny,
        deflations=deflations,
    )
