"""Pure-numpy reference of the classical (largest-pivot) two-sided Jacobi method.

The method of Wang, Xu, Jiang, Zhang, Ma and Li, "Implementing the Jacobi
Algorithm for Solving Eigenvalues of Symmetric Matrices with CUDA" (cited as
[W]): each step annihilates the off-diagonal entry ``a_pq`` of largest
modulus by the plane rotation ``R(p, q, theta)`` of its eq. (1)-(3), ``A <-
R^T A R`` (Algorithm 1).  The kernel ``cjac_classical`` of
``templates/classical.cl.mako`` runs the same steps; this module is what it
is tested against and the sequential baseline of ``bench/bench_classical.py``.

Algorithm 1 of [W], with its two slips corrected:

* line 2 prints ``omega = sign(y) x / sqrt(x^2 - y^2)``; the half-angle
  formulas of lines 3-4 need ``sin 2 theta = sign(y) x / sqrt(x^2 + y^2)``
  (``tan 2 theta = x / y`` by eq. (2));
* line 6 prints ``a_qq' = a_pp sin^2 - a_qq cos^2 - a_pq sin 2 theta``; the
  ``(q, q)`` entry of ``R^T A R`` is ``a_pp sin^2 + a_qq cos^2 - a_pq sin 2
  theta``.

Complex Hermitian A, ``a_pq = r e^{i alpha}``: the rotation of [W] on the
real ``r`` conjugated by ``diag(1, e^{-i alpha})``, ``J = [[c, -s e^{i
alpha}], [s e^{-i alpha}, c]]``, which the paper (real data only) does not
cover.

The search keeps the largest modulus of every row's part right of the
diagonal and its column (``row_max``, ``row_arg``); a step changes rows p
and q and the columns p and q of the other rows, so it rescans rows p and q
and the rows whose largest entry was in column p or q, and compares the two
new entries of the others: O(n) a step but for those rescans (the paper
scans all n(n-1)/2 entries).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["ClassicalResult", "blocked_cyclic_jacobi", "classical_jacobi", "cyclic_jacobi",
           "rotation"]


class ClassicalResult(NamedTuple):
    """What :func:`classical_jacobi` returns.

    Attributes
    ----------
    A : ndarray
        The final, nearly diagonal matrix (its diagonal: the eigenvalues).
    V : ndarray or None
        The accumulated rotations, ``A_final = V^* A V``.
    rotations : int
    converged : bool
        The largest off-diagonal modulus fell to ``tol * max_i |a_ii|``.
    """

    A: np.ndarray
    V: np.ndarray | None
    rotations: int
    converged: bool


def rotation(a_pp: float, a_qq: float, r: float) -> tuple[float, float]:
    """``(cos theta, sin theta)`` of [W] Algorithm 1 lines 1-4 for ``|a_pq| = r``
    (line 2 corrected: ``sqrt(x^2 + y^2)``)."""
    x, y = -r, 0.5 * (a_qq - a_pp)  # line 1
    omega = (1.0 if y >= 0 else -1.0) * x / math.hypot(x, y)  # line 2, eq. (4)
    sin = omega / math.sqrt(2.0 * (1.0 + math.sqrt(1.0 - omega * omega)))  # line 3
    return math.sqrt(1.0 - sin * sin), sin  # line 4


def _scan_rows(A: np.ndarray, rows: np.ndarray, row_value: np.ndarray,
               row_arg: np.ndarray) -> None:
    """The largest modulus right of the diagonal of each of `rows` (the first
    of equal ones), into the cache."""
    n = A.shape[0]
    for k in rows:
        if k >= n - 1:
            row_value[k], row_arg[k] = -1.0, -1
            continue
        tail = np.abs(A[k, k + 1:])
        j = int(np.argmax(tail))
        row_value[k], row_arg[k] = tail[j], k + 1 + j


def classical_jacobi(A: np.ndarray, *, max_rotations: int, tol: float | None = None,
                     compute_v: bool = True) -> ClassicalResult:
    """The classical Jacobi method of [W] on a Hermitian `A` (not modified).

    Parameters
    ----------
    A : ndarray, shape (n, n)
        Real symmetric or complex Hermitian.
    max_rotations : int
        Steps at most ([W] runs a fixed number of iterations).
    tol : float, optional
        Stop when the largest off-diagonal modulus is at most ``tol * max_i
        |a_ii|`` (the relative off-diagonal test; default ``n`` eps).
    compute_v : bool, optional
        Accumulate the eigenvectors.

    Returns
    -------
    ClassicalResult
    """
    A = np.array(A, dtype=np.result_type(A, np.float64), copy=True)
    n = A.shape[0]
    tol = n * np.finfo(np.float64).eps if tol is None else tol
    V = np.eye(n, dtype=A.dtype) if compute_v else None
    row_value, row_arg = np.empty(n), np.empty(n, dtype=np.int64)
    _scan_rows(A, np.arange(n), row_value, row_arg)
    rows = np.arange(n)
    rotations = 0
    converged = n < 2
    while not converged and rotations < max_rotations:
        p = int(np.argmax(row_value[: n - 1]))  # the first largest row
        q = int(row_arg[p])
        a_pq = A[p, q]
        r = abs(a_pq)
        if r <= tol * np.abs(np.diagonal(A)).max():
            converged = True
            break
        c, s = rotation(A[p, p].real, A[q, q].real, r)
        phase = a_pq / r  # e^{i alpha}
        a_pp, a_qq = A[p, p].real, A[q, q].real
        col_p, col_q = A[:, p].copy(), A[:, q].copy()
        # lines 10-11: the columns (A J); the rows (J^* A) by symmetry
        A[:, p] = c * col_p + s * np.conj(phase) * col_q
        A[:, q] = -s * phase * col_p + c * col_q
        A[p, :] = np.conj(A[:, p])
        A[q, :] = np.conj(A[:, q])
        # lines 5-7 (line 6 corrected)
        A[p, p] = a_pp * c * c + a_qq * s * s + r * 2 * s * c
        A[q, q] = a_pp * s * s + a_qq * c * c - r * 2 * s * c
        A[p, q] = A[q, p] = 0
        if V is not None:
            v_p, v_q = V[:, p].copy(), V[:, q].copy()
            V[:, p] = c * v_p + s * np.conj(phase) * v_q
            V[:, q] = -s * phase * v_p + c * v_q
        rotations += 1
        # the search cache: rows p, q and those whose largest entry was in
        # column p or q rescanned; the others compare their entries in p, q
        rescan = (rows == p) | (rows == q) | (row_arg == p) | (row_arg == q)
        for j in (p, q):
            moduli = np.abs(A[:, j])
            larger = ~rescan & (rows < j) & (moduli > row_value)
            row_value[larger], row_arg[larger] = moduli[larger], j
        _scan_rows(A, np.flatnonzero(rescan), row_value, row_arg)
    return ClassicalResult(A, V, rotations, converged)


def cyclic_jacobi(A: np.ndarray, *, strategy: str = "me", max_sweeps: int = 30,
                  tol: float | None = None, compute_v: bool = True
                  ) -> tuple[np.ndarray, np.ndarray | None, list[int], bool]:
    """The parallel cyclic two-sided Jacobi method (eigh's ``"two-sided"``).

    Per step of the strategy's table (:func:`cljacobi.strategies.step_table`;
    an odd n gets a virtual column that never rotates) every pair ``(i, j)``
    gets the rotation of :func:`rotation` from the same A, when ``|a_ij| >
    tol max(sqrt(|a_ii a_jj|), floor)`` (``floor``: the largest ``|a_kk|`` of
    the input); the step applies all of them, ``A <- J^* A J`` (the pairs
    are disjoint: the rotations commute), with ``a_ij = 0`` and a real
    diagonal in the pivot blocks.  Sweeps end after one without a rotation.

    Returns
    -------
    tuple
        ``(A, V, rotations_per_sweep, converged)``.
    """
    from .strategies import step_table  # local import: strategies is independent of this

    A = np.array(A, dtype=np.result_type(A, np.float64), copy=True)
    n = A.shape[0]
    tol = n * np.finfo(np.float64).eps if tol is None else tol
    floor = float(np.abs(np.diagonal(A)).max()) if n else 0.0
    V = np.eye(n, dtype=A.dtype) if compute_v else None
    counts: list[int] = []
    converged = n < 2
    for sweep in range(0 if converged else max_sweeps):
        count = 0
        for step in step_table(strategy, n + n % 2, sweep=sweep).pairs.tolist():
            J = np.eye(n, dtype=A.dtype)
            blocks = []
            for i, j in step:
                if j >= n:
                    continue
                a_ij, a_ii, a_jj = A[i, j], A[i, i].real, A[j, j].real
                r = abs(a_ij)
                if not r > tol * max(math.sqrt(abs(a_ii)) * math.sqrt(abs(a_jj)), floor):
                    continue
                c, s = rotation(a_ii, a_jj, r)
                phase = a_ij / r
                J[i, i], J[j, j], J[i, j], J[j, i] = c, c, -s * phase, s * np.conj(phase)
                blocks.append((i, j))
                count += 1
            A = J.conj().T @ A @ J
            for i, j in blocks:
                A[i, j] = A[j, i] = 0
                A[i, i], A[j, j] = A[i, i].real, A[j, j].real
            if V is not None:
                V = V @ J
        counts.append(count)
        if count == 0:
            converged = True
            break
    return A, V, counts, converged


def _pair_tangent(a_ii: float, a_jj: float, arg: float) -> float:
    """The tangent of the rotation that annihilates ``a_ij`` of a Hermitian 2 x 2
    block (``arg``: ``a_ij`` real, ``|a_ij|`` complex), as ``cjac_trig_tangent``
    of ``templates/arith.cl.mako``: ``kappa = (a_jj - a_ii) / (2 arg)``, ``t =
    sign(kappa) / (|kappa| + sqrt(1 + kappa^2))``, the root of ``t^2 + 2 kappa
    t - 1 = 0`` of modulus at most 1."""
    kappa = (a_jj - a_ii) / (2 * arg)
    if abs(kappa) >= math.sqrt(2 / np.finfo(np.float64).eps):
        return arg / (a_jj - a_ii)
    return math.copysign(1 / (abs(kappa) + math.sqrt(kappa * kappa + 1)), kappa)


def blocked_cyclic_jacobi(A: np.ndarray, *, block_width: int, strategy: str = "me",
                          inner_strategy: str = "me", inner_sweeps: int = 1,
                          max_sweeps: int = 30, tol: float | None = None,
                          compute_v: bool = True
                          ) -> tuple[np.ndarray, np.ndarray | None, list[int], bool]:
    """The blocked parallel cyclic two-sided Jacobi method (eigh's ``"two-sided"``
    with blocks; ``templates/two_sided.cl.mako``).

    A is padded with zero rows and columns to ``N``, a multiple of ``2 w``
    (``w = block_width``; the padding never rotates: its entries are 0), and
    cut into ``B = N / w`` blocks of w indices.  Per step of the outer
    strategy's table over the blocks (:func:`cljacobi.strategies.step_table`,
    order B), every block pair ``(I, J)`` of the step, with index set ``P = I
    u J`` (K = 2w indices, I's first):

    1. the diagonal block ``A[P, P]`` gets `inner_sweeps` sweeps of the inner
       strategy (order K; fewer where a sweep rotates nothing), each step's w
       rotations decided from the same block as in :func:`cyclic_jacobi` (the
       same test and floor) and applied together, ``A_PP <- R^* A_PP R`` and
       ``W_P <- W_P R`` with ``R = c [[1, s_j], [s_i, 1]]`` (``s_j = t
       e^{i alpha}``, ``s_i = -conj(s_j)``, t of :func:`_pair_tangent`), the
       pivot entries set to 0 and the pivot diagonal to its real part; the
       block is written back as its upper triangle and that triangle's
       conjugate (exactly Hermitian);
    2. then, for every two pairs ``P`` before ``Q`` of the step, ``A[P, Q] <-
       W_P^* (A[P, Q] W_Q)`` and ``A[Q, P] <- A[P, Q]^*`` (so A stays exactly
       Hermitian), and ``V[:, P] <- V[:, P] W_P``.

    A sweep that rotates nothing ends the sweeps.

    Returns
    -------
    tuple
        ``(A, V, rotations_per_sweep, converged)``, A and V of order n.
    """
    from .strategies import step_table

    A = np.array(A, dtype=np.result_type(A, np.float64), copy=True)
    n = A.shape[0]
    w = block_width
    N = -(-max(n, 1) // (2 * w)) * (2 * w)
    tol = n * np.finfo(np.float64).eps if tol is None else tol
    floor = float(np.abs(np.diagonal(A)).max()) if n else 0.0
    padded = np.zeros((N, N), dtype=A.dtype)
    padded[:n, :n] = A
    A = padded
    V = np.eye(N, dtype=A.dtype) if compute_v else None
    inner = step_table(inner_strategy, 2 * w).pairs.tolist()
    counts: list[int] = []
    converged = n < 2
    for sweep in range(0 if converged else max_sweeps):
        count = 0
        for step in step_table(strategy, N // w, sweep=sweep).pairs.tolist():
            sets = [np.r_[I * w:(I + 1) * w, J * w:(J + 1) * w] for I, J in step]
            transforms = []
            for P in sets:
                block = A[np.ix_(P, P)]
                W = np.eye(2 * w, dtype=A.dtype)
                for _ in range(inner_sweeps):
                    rotated = 0
                    for pairs in inner:
                        R = np.eye(2 * w, dtype=A.dtype)
                        pivots = []
                        for i, j in pairs:
                            a_ij, a_ii, a_jj = block[i, j], block[i, i].real, block[j, j].real
                            r = abs(a_ij)
                            if not r > tol * max(math.sqrt(abs(a_ii)) * math.sqrt(abs(a_jj)),
                                                 floor):
                                continue
                            arg = r if np.iscomplexobj(block) else a_ij
                            t = _pair_tangent(a_ii, a_jj, arg)
                            s_j = t * a_ij / arg if np.iscomplexobj(block) else t
                            c = 1 / math.sqrt(1 + t * t)
                            R[i, i] = R[j, j] = c
                            R[i, j], R[j, i] = c * s_j, -c * np.conj(s_j)
                            pivots.append((i, j))
                        block = R.conj().T @ block @ R
                        for i, j in pivots:
                            block[i, j] = block[j, i] = 0
                            block[i, i], block[j, j] = block[i, i].real, block[j, j].real
                        W = W @ R
                        rotated += len(pivots)
                    count += rotated
                    if not rotated:
                        break
                upper = np.triu(block)
                A[np.ix_(P, P)] = upper + np.triu(block, 1).conj().T
                transforms.append(W)
            for k, P in enumerate(sets):
                for Q, W_Q in zip(sets[k + 1:], transforms[k + 1:]):
                    tile = transforms[k].conj().T @ (A[np.ix_(P, Q)] @ W_Q)
                    A[np.ix_(P, Q)] = tile
                    A[np.ix_(Q, P)] = tile.conj().T
                if V is not None:
                    V[:, P] = V[:, P] @ transforms[k]
        counts.append(count)
        if count == 0:
            converged = True
            break
    return A[:n, :n], None if V is None else V[:n, :n], counts, converged
