"""Pure-numpy reference of the stream SVD (Strumpen, Hoffmann & Agarwal 2003).

V. Strumpen, H. Hoffmann and A. Agarwal, "A Stream Algorithm for the SVD",
MIT-LCS-TM-641 (2003), cited as [SHA].  Its Algorithm 1, the "Stream
Hestenes SVD", orthogonalizes the *rows* of an ``M x N`` matrix ``A`` (row
major) by one-sided Hestenes transformations, grouped into block
transformations of two row groups of ``R`` rows:

* phase 1 (lines 14-23): all ``R^2`` rotations between the two groups
  (``i < j`` only when a group meets itself) from the same, not yet updated
  inner products: ``S[i] = a_i^T a_i`` recomputed at the start of the block
  transformation (lines 10-13) and ``g = a_i^T a_j``;
* phase 2 (lines 24-30): the rotations applied to the rows in the fixed
  order ``i`` then ``j``.

A block sweep takes the groups ``I <= J`` in row order (lines 6-9; its
Figure 5); the sweeps repeat until a sweep finds every ``|a_i^T a_j| <=
delta = eps sum_i S[i]`` (lines 1-3, 18-19).  ``R = 1`` is the cyclic-by-rows
Hestenes method.

The count of Hestenes transformations is the paper's (its Tables 1-3):
``M (M - 1) / 2`` per block sweep, the last (converged) sweep included,
whether or not a pair was rotated: 960 = 8 sweeps of 120 pairs for M = 16.

Phase 2 applies the rotations on anti-diagonals ``i + j = const`` of the
group pair at once: rotations of one anti-diagonal touch distinct rows, and
every rotation comes after those of its row ``i`` with smaller ``j`` and of
its row ``j`` with smaller ``i``, the only ones it does not commute with, so
every element goes through the same floating-point operations as in the
paper's sequential order (bitwise the same rows).  The kernels of
``variant="stream"`` compose the same rotations into one ``2R x 2R``
transformation the same way.

Slips of the paper corrected here: Procedure 2's ``t = sign(w) / (|w| +
sqrt(1 + w^2))`` with ``sign(0) = 0`` would not rotate a pair of equal norms
at all; ``sign(w)`` is taken as 1 for ``w >= 0`` (the 45-degree rotation the
formula means).  Line 20 guards the division by ``|g| > eps`` with the
*absolute* ``eps``; that is kept as printed (it matters only for
``||A||_F^2 < 1``, where ``delta < eps``; the driver's ``max_sweeps`` bounds
the loop then).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["StreamResult", "golub_kahan", "jacobi", "stream_block_transformation", "stream_svd"]

#: [SHA] Sect. 5: "a value of eps = 1e-15".
PAPER_EPS = 1e-15


class StreamResult(NamedTuple):
    """What :func:`stream_svd` returns.

    Attributes
    ----------
    sigma : ndarray, shape (M,)
        The row norms of the final ``A`` (line 32), in row order (not sorted).
    B : ndarray, shape (M, N)
        The final ``A = U^T A_0`` with mutually orthogonal rows.
    U : ndarray, shape (M, M) or None
        ``U^T`` accumulated by the same rotations (``U^T A_0 = B``), if asked.
    sweeps : int
        Block sweeps, the converged one included.
    transformations : int
        Hestenes transformations as [SHA] counts them: ``sweeps M (M - 1) / 2``.
    rotations : int
        Those with a rotation other than the identity (``|g| > delta``).
    converged : bool
    """

    sigma: np.ndarray
    B: np.ndarray
    U: np.ndarray | None
    sweeps: int
    transformations: int
    rotations: int
    converged: bool


def jacobi(a: float, b: float, g: float) -> tuple[float, float]:
    """[SHA] Procedure 2: ``c, s`` of the rotation for squared norms ``a``,
    ``b`` and inner product ``g != 0`` (``sign(0)`` taken as 1: see the module
    notes)."""
    w = (b - a) / (2.0 * g)
    t = (1.0 if w >= 0 else -1.0) / (abs(w) + math.sqrt(1.0 + w * w))
    c = 1.0 / math.sqrt(1.0 + t * t)
    return c, t * c


def golub_kahan(n: int) -> np.ndarray:
    """The Golub-Kahan matrix of [SHA] Sect. 5: 1 on the diagonal, -1 above it."""
    return np.eye(n) - np.triu(np.ones((n, n)), 1)


class _Rotations(NamedTuple):
    """The rotations of a block transformation: rows i, j and c, s, in the
    order of phase 2 (i, then j)."""

    i: np.ndarray
    j: np.ndarray
    c: np.ndarray
    s: np.ndarray


def _phase_one(A: np.ndarray, S: np.ndarray, rows_i: range, rows_j: range, same: bool,
               eps: float, delta: float) -> tuple[_Rotations, bool]:
    """Lines 14-23: the rotations of a group pair from the stale inner
    products (Procedure 2 evaluated elementwise, as :func:`jacobi`)."""
    g = A[rows_i.start:rows_i.stop] @ A[rows_j.start:rows_j.stop].T
    i, j = np.meshgrid(np.arange(rows_i.start, rows_i.stop),
                       np.arange(rows_j.start, rows_j.stop), indexing="ij")
    pairs = i < j if same else np.ones(g.shape, bool)
    unconverged = pairs & (np.abs(g) > delta)  # lines 18-19
    rotate = unconverged & (np.abs(g) > eps)  # line 20, as printed
    g, i, j = g[rotate], i[rotate], j[rotate]  # row-major: i, then j
    w = (S[j] - S[i]) / (2.0 * g)
    t = np.where(w >= 0, 1.0, -1.0) / (np.abs(w) + np.sqrt(1.0 + w * w))
    c = 1.0 / np.sqrt(1.0 + t * t)
    return _Rotations(i, j, c, t * c), not unconverged.any()


def _phase_two(A: np.ndarray, U: np.ndarray | None, rotations: _Rotations) -> None:
    """Lines 24-30: ``a_i, a_j <- c a_i - s a_j, s a_i + c a_j`` in the order
    i then j, one anti-diagonal ``i + j`` at a time (see the module notes)."""
    if rotations.i.size == 0:
        return
    wave = rotations.i + rotations.j
    order = np.argsort(wave, kind="stable")
    bounds = np.flatnonzero(np.diff(wave[order])) + 1
    for part in np.split(order, bounds):
        i, j = rotations.i[part], rotations.j[part]
        c, s = rotations.c[part, None], rotations.s[part, None]
        for X in (A,) if U is None else (A, U):
            x_i, x_j = X[i], X[j]
            X[i], X[j] = c * x_i - s * x_j, s * x_i + c * x_j


def stream_svd(
    A: np.ndarray,
    R: int,
    *,
    eps: float = PAPER_EPS,
    max_sweeps: int = 1000,
    compute_u: bool = False,
) -> StreamResult:
    """[SHA] Algorithm 1, the Stream Hestenes SVD of the rows of `A`.

    Parameters
    ----------
    A : ndarray, shape (M, N)
        Real; not modified.
    R : int
        The network size: rows per group (``R = 1``: cyclic by rows).
    eps : float, optional
        The paper's epsilon (1e-15 in its experiments): ``delta = eps
        sum_i ||a_i||^2``.
    max_sweeps : int, optional
        Block sweeps before giving up (``converged`` False).
    compute_u : bool, optional
        Accumulate ``U^T`` ([SHA] Sect. 4, "Computing U and V").

    Returns
    -------
    StreamResult
    """
    A = np.array(A, dtype=np.float64, copy=True)
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D, got shape {A.shape}")
    if R < 1:
        raise ValueError(f"R must be >= 1, got {R}")
    M = A.shape[0]
    U = np.eye(M) if compute_u else None
    S = np.einsum("ij,ij->i", A, A)  # lines 1-2
    delta = eps * float(S.sum())  # line 3
    sweeps = rotations = 0
    converged = M < 2
    while not converged and sweeps < max_sweeps:  # lines 4-30
        sweeps += 1
        converged = True
        for lb_i in range(0, M, R):
            rows_i = range(lb_i, min(lb_i + R, M))
            for lb_j in range(lb_i, M, R):
                rows_j = range(lb_j, min(lb_j + R, M))
                for rows in (rows_i, rows_j):  # lines 10-13
                    S[rows.start:rows.stop] = np.einsum(
                        "ij,ij->i", A[rows.start:rows.stop], A[rows.start:rows.stop])
                block, block_converged = _phase_one(A, S, rows_i, rows_j, lb_i == lb_j,
                                                    eps, delta)
                converged &= block_converged
                rotations += block.i.size
                _phase_two(A, U, block)
    sigma = np.sqrt(np.einsum("ij,ij->i", A, A))  # lines 31-32
    return StreamResult(sigma, A, U, sweeps, sweeps * (M * (M - 1) // 2), rotations, converged)


def stream_block_transformation(A: np.ndarray, signs: np.ndarray, *,
                                whole_group: bool) -> np.ndarray:
    """The ``2w x 2w`` transformation of ``variant="stream"`` for one block pair.

    The column form of lines 10-30 that ``cjac_block_rotate`` (its
    ``inner_method="stream"`` body) computes, from the Gram matrix ``A =
    X^* X`` of the block pair ``X = [G_P G_Q]`` and the signs of its columns:
    every pair ``(a, b)``, ``a < w <= b``, gets the rotation the pointwise
    kernel would give it on ``A`` (:func:`cljacobi.reference.pair_rotation`,
    trigonometric or hyperbolic by the signs; ``g_a' = c (g_a + s_a g_b)``,
    ``g_b' = c (g_b + s_b g_a)``), and ``W`` is their product in the order a,
    then b: ``X W`` is the block pair after the block transformation.  With
    `whole_group`, the pairs ``a < b`` within each block come first, from
    ``A``, and the pairs across from ``W_1^* A W_1`` after them (Figure
    5(b)'s diagonal block transformations, then the next one with fresh
    inner products).
    """
    from .reference import PairKind, pair_rotation  # one-sided Jacobi's rotations

    order = A.shape[0]
    w = order // 2
    complex_ = np.iscomplexobj(A)
    W = np.eye(order, dtype=A.dtype)

    def compose(gram: np.ndarray, pairs: list[tuple[int, int]]) -> None:
        rotations = []
        for a, b in pairs:  # phase 1: all from the same Gram matrix
            hyperbolic = signs[a] != signs[b]
            a_ab = gram[a, b]
            kind, t, c = pair_rotation(gram[a, a].real, gram[b, b].real,
                                       abs(a_ab) if complex_ else a_ab, hyperbolic)
            if kind == PairKind.ROTATE:
                s_b = t * a_ab / abs(a_ab) if complex_ else t
                rotations.append((a, b, c, s_b, np.conj(s_b) if hyperbolic else -np.conj(s_b)))
        for a, b, c, s_b, s_a in rotations:  # phase 2: in the order a, then b
            w_a, w_b = W[:, a].copy(), W[:, b].copy()
            W[:, a], W[:, b] = c * (w_a + s_a * w_b), c * (w_b + s_b * w_a)

    if whole_group:
        compose(A, [(a, b) for a in range(order) for b in range(a + 1, order)
                    if (a < w) == (b < w)])
        A = W.conj().T @ A @ W
    compose(A, [(a, b) for a in range(w) for b in range(w, order)])
    return W
