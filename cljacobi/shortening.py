"""Householder QR with row sorting and column pivoting, and the shortening of tall factors.

Both Jacobi solvers reduce a tall factor to a square triangular one before the
sweeps: ``svd`` every ``A`` (the preconditioner of LAPACK's ``xGEJSV``),
``hsvd`` and ``eig_indefinite`` a tall ``G`` (Novaković & Singer 2011,
Sect. 1).  A plain Householder QR is backward stable only normwise, and
column by column; the rows of a row-graded ``A = D B`` (``D`` diagonal,
``B`` well conditioned) get errors of the size of the largest rows, so the
small singular values of such an ``A`` are lost (relative errors of order 1
and beyond), and permuting its rows changes the answer.  Sorting the rows by
decreasing norm and pivoting the columns makes Householder QR row-wise
backward stable (Powell & Reid 1969; Cox & Higham 1998): the computed ``R``
is the exact factor of ``Π A P + δA`` with ``|δa_ij| <= c(m, n) eps max_k
|a_ik|`` for every row ``i``.  This is ``xGEJSV``'s row pivoting
(``JOBA = 'F'``, rows by decreasing max-norm, the source notes citing Cox &
Higham); with it the small singular values of row-graded matrices come out
accurate (the tests measure it against a high-precision oracle, and
``xGEJSV``'s notes call this "not completely understood theoretically, but it
works well in practice"), and a row permutation of ``A`` no longer changes
them.  The column pivoting makes ``R`` row-graded, ``R = D_R R_0`` with a
well conditioned ``R_0`` for column-graded ``A = B D`` (Drmač & Veselić
2008, part I), which is what lets the ``J = I`` sweeps run on ``R^*``.

References
----------
.. [1] M. J. D. Powell and J. K. Reid, "On applying Householder
   transformations to linear least squares problems", Proc. IFIP Congress
   1968, 122-126 (1969).
.. [2] A. J. Cox and N. J. Higham, "Stability of Householder QR factorization
   for weighted least squares problems", in Numerical Analysis 1997,
   Pitman Res. Notes Math. 380, 57-73 (1998).
.. [3] Z. Drmač and K. Veselić, "New fast and accurate Jacobi SVD algorithm
   I", SIAM J. Matrix Anal. Appl. 29(4), 1322-1342 (2008); "... II", ibid.,
   1343-1362.
.. [4] V. Novaković and S. Singer, "A GPU-based hyperbolic SVD algorithm",
   BIT Numer. Math. 51(4), 1009-1030 (2011), Sect. 1.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np
import scipy.linalg

__all__ = ["PivotedQR", "Reflectors", "Shortened", "completed_columns", "pivoted_qr",
           "pivoted_qr_stack", "pivoted_reflectors", "rows_by_peak", "shorten", "sort_rows"]


class PivotedQR(NamedTuple):
    """``A[:, columns] = Q @ R`` from :func:`pivoted_qr`.

    Attributes
    ----------
    Q : numpy.ndarray or None
        ``m x k`` orthonormal columns (``k = min(m, n)``), rows in the order
        of ``A`` (the row sorting is folded in); None unless asked for.
    R : numpy.ndarray
        ``k x n`` upper trapezoidal, ``|r_11| >= |r_22| >= ...``.
    columns : numpy.ndarray
        The column pivots (int).
    """

    Q: np.ndarray | None
    R: np.ndarray
    columns: np.ndarray


class Reflectors(NamedTuple):
    """``A[rows][:, columns] = Q R`` from :func:`pivoted_reflectors`, with Q kept
    as its Householder reflectors (LAPACK ``xGEQP3``'s output).

    Attributes
    ----------
    packed : numpy.ndarray
        ``m x n`` (``m >= n``), Fortran-ordered: R on and above the diagonal,
        the reflectors ``v_j`` below it (their leading 1 implicit).
    tau : numpy.ndarray
        The reflectors' scalars: ``Q = H_0 ... H_{n-1}``,
        ``H_j = I - tau_j v_j v_j^*``.
    rows : numpy.ndarray
        The row order the QR factored (:func:`sort_rows`).
    columns : numpy.ndarray
        The column pivots.
    """

    packed: np.ndarray
    tau: np.ndarray
    rows: np.ndarray
    columns: np.ndarray

    @property
    def R(self) -> np.ndarray:
        """The ``n x n`` upper triangular factor."""
        n = self.packed.shape[1]
        return np.triu(self.packed[:n])

    def r_adjoint(self) -> np.ndarray:
        """``R^*``, ``n x n``."""
        return self.R.conj().T

    def q_times(self, V: np.ndarray, order: np.ndarray, columns: int | None = None) -> np.ndarray:
        """``Q_full [[V[:, order], 0], [0, I]]``: ``Q @ V[:, order]`` for the
        ``n x r`` `V`, completed to `columns` (default ``len(order)``) by
        ``Q_full``'s columns ``n ..``; rows in A's order.

        LAPACK ``xORGQR`` (``xUNGQR``) forms the columns of Q needed and a
        matrix product applies them: on a 16-core host at n = 4096 that took
        1.01 s where ``xORMQR`` applying the reflectors as they are took 1.67 s.
        """
        m, n = self.packed.shape
        count = len(order)
        columns = completed_columns(count, columns, m, n)
        extra = columns - count
        form_q = _lapack(self.packed.dtype)[1]
        reflectors = np.zeros((m, n + extra), dtype=self.packed.dtype, order="F")
        reflectors[:, :n] = self.packed
        work = form_q(reflectors, self.tau, lwork=-1)[1][0]
        Q, _, info = form_q(reflectors, self.tau, lwork=max(int(work.real), 1),
                            overwrite_a=True)
        if info != 0:
            raise np.linalg.LinAlgError(f"xORGQR failed (info {info})")
        out = np.empty((m, columns), dtype=np.result_type(Q, V))
        out[self.rows, :count] = Q[:, :n] @ V[:, order]
        out[self.rows, count:] = Q[:, n:]
        return out


class Shortened(NamedTuple):
    """A factor prepared for the hyperbolic sweeps by :func:`shorten`.

    Attributes
    ----------
    Q : numpy.ndarray or None
        ``m x n`` orthonormal columns with ``G[:, columns] = Q @ R``; None
        when ``G`` was not tall (then ``R = G[:, columns]``) or Q was not
        asked for.
    R : numpy.ndarray
        The factor the sweeps run on: ``n x n`` for a tall ``m x n`` G, else
        ``G[:, columns]`` (`G` itself when its signs are sorted already).
    columns : numpy.ndarray
        Column order: ``signs[columns]`` is +1 first, then -1.
    """

    Q: np.ndarray | None
    R: np.ndarray
    columns: np.ndarray


def pivoted_qr(A: np.ndarray, *, compute_q: bool = True) -> PivotedQR:
    """Householder QR of `A` with its rows sorted and its columns pivoted.

    The rows are sorted by decreasing max-norm, then LAPACK ``xGEQP3``
    factors ``A[rows][:, columns] = Q_s R`` (and ``xORGQR``/``xUNGQR`` forms
    ``Q_s``); the row order is undone in ``Q``.  The LAPACK routines are
    called directly, as :func:`scipy.linalg.qr` with ``pivoting=True`` calls
    them (the same bits), without its per-call overhead, which dominated
    the QR of small matrices (17 us against 4 us at 8 x 8), a stack's cost
    in the batched svd.  This is the first step of ``xGEJSV`` with row
    pivoting (Drmač & Veselić 2008): row-wise backward stable (Cox & Higham
    1998), so row-graded data keep their accuracy (see the module notes).

    Parameters
    ----------
    A : numpy.ndarray
        ``m x n``, real or complex (float64 or complex128); not modified.
    compute_q : bool, optional
        Form Q (default); otherwise ``PivotedQR.Q`` is None (cheaper).

    Returns
    -------
    PivotedQR
        ``(Q, R, columns)`` with ``A[:, columns] = Q @ R``.
    """
    A = np.asarray(A)
    Q, R, columns = pivoted_qr_stack(A[None], compute_q=compute_q)
    return PivotedQR(None if Q is None else Q[0], R[0], columns[0])


def completed_columns(count: int, columns: int | None, m: int, n: int) -> int:
    """The columns of ``Q_full [[V[:, order], 0], [0, I]]`` for `count` columns
    of V and an ``m x n`` QR: `columns` (default `count`), which the ``m - n``
    trailing columns of ``Q_full`` can complete to, else ValueError."""
    columns = count if columns is None else columns
    if not 0 <= columns - count <= m - n:
        raise ValueError(f"{count} columns are completed to {count} .. {count + m - n}, "
                         f"not {columns}")
    return columns


def sort_rows(stack: np.ndarray) -> np.ndarray:
    """The rows of every matrix of `stack` (``(..., m, n)``) by decreasing
    max-norm ``max_j |a_ij|``, stably (ties keep their order): exact (no
    overflow or underflow, unlike a 2-norm), and the norm of Cox & Higham's
    row-wise analysis."""
    return rows_by_peak(np.abs(stack).max(axis=-1))


def rows_by_peak(peaks: np.ndarray) -> np.ndarray:
    """:func:`sort_rows` from the rows' max-norms `peaks` (``(..., m)``),
    computed where the matrix is looked at anyway."""
    return np.argsort(-peaks, axis=-1, kind="stable")


def pivoted_reflectors(A: np.ndarray, rows: np.ndarray | None = None) -> Reflectors:
    """:func:`pivoted_qr` of a tall `A` with Q left as its reflectors.

    LAPACK ``xGEQP3`` on the host, :func:`pivoted_qr`'s factorization
    (:func:`cljacobi.host.qr.pivoted_qr_on_device` is the device's).

    Parameters
    ----------
    A : numpy.ndarray
        ``m x n``, ``m >= n >= 1``, float64 or complex128; not modified.
    rows : numpy.ndarray, optional
        :func:`sort_rows` of `A`, where the caller has it (computed when not
        given).

    Returns
    -------
    Reflectors
        ``A[rows][:, columns] = Q R``.
    """
    A = np.asarray(A)
    rows = sort_rows(A) if rows is None else np.asarray(rows)
    geqp3 = _lapack(A.dtype)[0]
    packed, jpvt, tau, _, info = geqp3(np.asfortranarray(A[rows]),
                                       lwork=_workspaces(*A.shape, A.dtype)[0],
                                       overwrite_a=True)
    if info != 0:
        raise np.linalg.LinAlgError(f"xGEQP3 failed (info {info})")
    return Reflectors(packed, tau, rows, jpvt.astype(np.intp) - 1)


def pivoted_qr_stack(stack: np.ndarray, *, compute_q: bool = True) -> PivotedQR:
    """:func:`pivoted_qr` of every matrix of a ``(count, m, n)`` stack.

    The row sorting, the extraction of R and the return of Q's rows to
    their order are done for the whole stack at once (the same stable sort
    and the same copies per matrix), leaving one ``xGEQP3`` (and
    ``xORGQR``/``xUNGQR``) call per matrix (the per-matrix Python work
    dominated a stack of small matrices).  A matrix's factors do not depend
    on the stack it is in.  It is the LAPACK reference that the device's
    batched QR (``templates/batched_qr.cl.mako``) is tested against.

    Returns
    -------
    PivotedQR
        ``(Q, R, columns)`` of shapes ``(count, m, k)`` (None without
        `compute_q`), ``(count, k, n)`` and ``(count, n)``, ``k = min(m, n)``:
        ``stack[b][:, columns[b]] = Q[b] @ R[b]``.
    """
    stack = np.asarray(stack)
    count, m, n = stack.shape
    k = min(m, n)
    if k == 0:
        Q = np.zeros((count, m, 0), stack.dtype) if compute_q else None
        return PivotedQR(Q, np.zeros((count, 0, n), stack.dtype),
                         np.broadcast_to(np.arange(n), (count, n)).copy())
    rows = sort_rows(stack)
    sorted_stack = np.take_along_axis(stack, rows[:, :, None], axis=1)
    geqp3, form_q = _lapack(stack.dtype)
    geqp3_work, form_q_work = _workspaces(m, n, stack.dtype)
    R = np.empty((count, k, n), stack.dtype)
    columns = np.empty((count, n), np.intp)
    Q_sorted = np.empty((count, m, k), stack.dtype) if compute_q else None
    for b in range(count):
        qr, jpvt, tau, _, info = geqp3(sorted_stack[b], lwork=geqp3_work, overwrite_a=True)
        if info != 0:
            raise np.linalg.LinAlgError(f"xGEQP3 failed (info {info})")
        R[b] = qr[:k]
        columns[b] = jpvt
        if compute_q:
            Q_sorted[b], _, info = form_q(qr[:, :k], tau[:k], lwork=form_q_work,
                                          overwrite_a=True)
            if info != 0:
                raise np.linalg.LinAlgError(f"xORGQR failed (info {info})")
    lower = _strictly_lower(k, n)
    R[:, lower[0], lower[1]] = 0
    columns -= 1
    if not compute_q:
        return PivotedQR(None, R, columns)
    Q = np.empty_like(Q_sorted)
    np.put_along_axis(Q, rows[:, :, None], Q_sorted, axis=1)
    return PivotedQR(Q, R, columns)


@cache
def _strictly_lower(k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The indices below the diagonal of a k x n matrix (``np.triu``'s zeros,
    which cost more than the QR of a small matrix to recompute)."""
    return np.tril_indices(k, -1, n)


@cache
def _workspaces(m: int, n: int, dtype: np.dtype) -> tuple[int, int]:
    """The optimal workspaces of xGEQP3 and xORGQR/xUNGQR for an m x n
    matrix, as LAPACK reports them (what scipy.linalg.qr asks for on every
    call; the blocking, and so the bits, depend on them), once per shape."""
    geqp3, form_q = _lapack(dtype)
    k = min(m, n)
    geqp3_work = geqp3(np.zeros((m, n), dtype), lwork=-1)[3][0]
    form_q_work = form_q(np.zeros((m, k), dtype), np.zeros(k, dtype), lwork=-1)[1][0]
    return max(int(geqp3_work.real), 1), max(int(form_q_work.real), 1)


@cache
def _lapack(dtype: np.dtype) -> tuple:
    """``(xGEQP3, xORGQR or xUNGQR)`` of scipy's LAPACK for `dtype`."""
    probe = np.zeros((1, 1), dtype)
    names = ("geqp3", "ungqr" if dtype.kind == "c" else "orgqr")
    return tuple(scipy.linalg.get_lapack_funcs(names, (probe,)))


def shorten(G: np.ndarray, signs: np.ndarray, *, compute_q: bool = True) -> Shortened:
    """Reduce a tall factor to a square one for the hyperbolic sweeps.

    If ``G`` is ``m x n`` with ``m > n``, :func:`pivoted_qr` factors
    ``G[:, p] = Q R``; since ``G J G^* = Q (R J_p R^*) Q^*`` with
    ``J_p = J[p]``, the hyperbolic SVD of ``R`` with ``J_p`` gives that of
    ``G`` (eigenvectors premultiplied by ``Q``; Novaković & Singer 2011,
    Sect. 1).  A column permutation of ``G`` permutes ``J`` alike, so any
    pivot order is admissible; the columns of ``R`` are then put in the
    order the sweeps expect, the +1 signs first (stably: within a sign in
    pivot order).  ``R`` is no longer triangular then, which the sweeps do
    not need.  A square or wide ``G`` is only reordered by its signs.

    Row sorting and column pivoting keep row-graded factors accurate, which
    a plain QR does not: see the module notes.  (The transposed factor
    ``R^*``, which speeds up the ``J = I`` sweeps, is not admissible here:
    ``R^* J R`` is not similar to ``R J R^*``.)

    Parameters
    ----------
    G : numpy.ndarray
        Two-dimensional factor, real or complex; not modified.
    signs : numpy.ndarray
        The diagonal of ``J``, +1 and -1, one per column of ``G``.
    compute_q : bool, optional
        Form Q of a tall G (default); False when only the values are wanted
        (the same R, bitwise, for less work: Q is None then).

    Returns
    -------
    Shortened
        ``(Q, R, columns)``: ``G[:, columns] = Q @ R`` (``R`` alone when
        ``Q`` is None) and ``signs[columns]`` sorted +1 first.

    Raises
    ------
    ValueError
        If ``G`` is not two-dimensional, or `signs` does not match its columns.
    """
    G = np.asarray(G)
    if G.ndim != 2:
        raise ValueError(f"G must be a 2-D array, got shape {G.shape}")
    signs = np.asarray(signs)
    m, n = G.shape
    if signs.shape != (n,):
        raise ValueError(f"signs must have shape ({n},) to match G of shape {G.shape}")
    if m <= n:
        columns = np.argsort(-signs, kind="stable")
        unchanged = np.array_equal(columns, np.arange(n))
        return Shortened(None, G if unchanged else G[:, columns], columns)
    Q, R, pivots = pivoted_qr(G, compute_q=compute_q)
    by_sign = np.argsort(-signs[pivots], kind="stable")
    return Shortened(Q, R[:, by_sign], pivots[by_sign])
