"""Hermitian indefinite J-factorization ``M = G J G^*``.

Step 2 of ``eig_indefinite`` (see docs/design.md, "Data flow of eig_indefinite"):
a real symmetric or complex Hermitian, possibly indefinite and singular, ``M``
is factored by the symmetric indefinite factorization of Bunch and Parlett
with complete pivoting [1]_, post-processed as in Slapničar [2]_, [3]_ so that
every 2x2 pivot block is diagonalized and the block-diagonal ``D`` becomes a
signature matrix::

    M = G J G^*,    J = diag(I_p, -I_{r-p}),    r = rank(M).

``eig_indefinite`` sweeps a tall ``G`` (``n > r``) as it is: one-sided Jacobi
depends on ``G^* G`` only, so the sweeps are those of the QR-shortened ``R``
of [4]_ without the QR.  (:func:`cljacobi.shortening.shorten`, which ``hsvd``
uses for tall factors, is re-exported here.)

This module is pure numpy/scipy (no OpenCL). Exact complete pivoting needs
the whole updated Schur complement at every step, so the factorization is
bound by memory bandwidth: the trailing matrix lives in a lower
block-trapezoidal panel storage (about half of ``n^2`` entries), each panel
is updated in place and scanned for its largest entry while it is still in
cache, the sweep over the panels alternates direction, and large matrices
spread the panels over a few threads. Outside the panels only O(n)
vectorized work is done per step. (BLAS ``xGER`` would save one pass, but
OpenBLAS threads level-2 calls of this size and collapses when the CPUs are
shared, so the update is done by numpy.)

References
----------
.. [1] J. R. Bunch and B. N. Parlett, "Direct methods for solving symmetric
   indefinite systems of linear equations", SIAM J. Numer. Anal. 8(4),
   639-655 (1971). Complete pivoting with ``alpha = (1 + sqrt(17)) / 8``.
.. [2] I. Slapničar, "Accurate symmetric eigenreduction by a Jacobi method",
   Ph.D. thesis, Fernuniversität Hagen (1992). The factorization
   ``M = G J G^*`` with the 2x2 pivots diagonalized.
.. [3] I. Slapničar, "Componentwise analysis of direct factorization of real
   symmetric and Hermitian matrices", Linear Algebra Appl. 272, 227-275
   (1998).
.. [4] V. Novaković and S. Singer, "A GPU-based hyperbolic SVD algorithm",
   BIT Numer. Math. 51(4), 1009-1030 (2011), Sect. 1: the shortening of a
   tall ``G`` by the QR factorization.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import scipy.linalg

from ._threads import usable_cpus
from .shortening import shorten

__all__ = [
    "BUNCH_PARLETT_ALPHA", "JFactor", "definite_factorize", "diagonal_of_one_sign",
    "entry_noise_level", "j_factorize",
    "rank_noise_level",
    "shorten",
]

#: Bunch-Parlett growth-balancing constant ``(1 + sqrt(17)) / 8`` (about 0.6404).
BUNCH_PARLETT_ALPHA: float = (1.0 + math.sqrt(17.0)) / 8.0

# Working-storage panels hold about this many bytes: a panel and its outer
# product scratch stay in L2 between the update and the scan, while the
# number of panels (Python calls per step) stays small. Measured best among
# 128 KiB..1 MiB for n = 2048 and 4096 on two Xeon cores.
_PANEL_BYTES = 1 << 19
# Narrower panels than this only add Python overhead.
_MIN_PANEL_WIDTH = 8
# At least this many panels per matrix (so that small matrices run the
# multi-panel code paths too).
_MIN_PANELS = 16
# Worker threads for the panel updates (numpy releases the GIL inside its
# loops). The work is bound by cache bandwidth and the GIL: two threads gave
# 1.2x at n = 4096, four 1.3x at n = 8192, more were slower; below n = 3072
# threads did not pay.
_MAX_THREADS = 4
_THREADS_MIN_N = 3072
# numpy's buffered iteration grows the inner loop of a broadcast product up to
# its buffer size by copying; with a buffer shorter than the panel rows the
# outer products run on the contiguous fast path instead (4-5x faster).
_UFUNC_BUFSIZE = 128


@contextlib.contextmanager
def _ufunc_buffer(size: int) -> Iterator[None]:
    """Set numpy's (thread-local) ufunc buffer size for a ``with`` block."""
    old = np.setbufsize(size)
    try:
        yield
    finally:
        np.setbufsize(old)


class JFactor(NamedTuple):
    """Result of :func:`j_factorize`: ``M = G @ diag(signs) @ G^*``.

    Attributes
    ----------
    G : numpy.ndarray
        The ``n x r`` factor, ``r = rank(M)`` (numerical rank, see
        ``rank_tol``), Fortran-contiguous (columns contiguous), float64 for
        real input and complex128 for complex input. Its rows are in the
        original row order of ``M`` (no permutation is left over).
    signs : numpy.ndarray
        The diagonal of ``J``, length ``r``, int8, sorted as
        ``[+1] * p + [-1] * (r - p)``.
    p : int
        Number of positive signs, i.e. the number of positive eigenvalues of
        ``M`` (Sylvester's law of inertia); ``r - p`` is the number of negative
        ones.
    """

    G: np.ndarray
    signs: np.ndarray
    p: int


# ---------------------------------------------------------------------------
# Working storage
# ---------------------------------------------------------------------------


def _panel_bounds(n: int, itemsize: int) -> np.ndarray:
    """Column boundaries ``[0, ..., n]`` of the working-storage panels.

    Panel ``[c0, c1)`` is ``(n - c0) x (c1 - c0)``; its width grows towards the
    bottom-right so that all panels hold about the same number of entries:
    ``_PANEL_BYTES``, or less so that there are at least ``_MIN_PANELS`` of them.
    """
    area = max(1, min(_PANEL_BYTES // itemsize, n * n // (2 * _MIN_PANELS)))
    bounds = [0]
    while bounds[-1] < n:
        c0 = bounds[-1]
        width = max(_MIN_PANEL_WIDTH, area // (n - c0))
        bounds.append(min(n, c0 + width))
    return np.array(bounds, dtype=np.intp)


def _thread_count(n: int) -> int:
    """Worker threads for an order-``n`` factorization (1: no pool)."""
    if n < _THREADS_MIN_N:
        return 1
    return max(1, min(usable_cpus(), _MAX_THREADS))


class _BlockLower:
    """Hermitian matrix stored as lower block-trapezoidal column panels.

    Panel ``q`` holds columns ``[c0, c1)`` and rows ``[c0, n)`` of the matrix as
    a Fortran-ordered ``(n - c0) x (c1 - c0)`` view into one flat buffer, so its
    diagonal block is stored in full (both triangles) and every entry below
    the block diagonal exactly once. Entry ``(r, c)`` is stored at ``(r, c)`` if
    ``r >= c0(c)``, otherwise as ``conj`` of the stored ``(c, r)``.

    Eliminated positions (``< k`` during step ``k``) are kept at zero, so that a
    panel can be updated and scanned for its largest modulus as a whole.
    """

    def __init__(self, M: np.ndarray, dtype: np.dtype, threads: int = 1,
                 noise_level: float | None = None) -> None:
        n = M.shape[0]
        self.n = n
        self.dtype = dtype
        self.complex = dtype.kind == "c"
        bounds = _panel_bounds(n, dtype.itemsize)
        starts, stops = bounds[:-1], bounds[1:]
        heights = n - starts
        sizes = heights * (stops - starts)
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
        self.starts, self.stops, self.heights, self.offsets = starts, stops, heights, offsets
        self.bounds = bounds.tolist()
        self.buf = np.empty(int(sizes.sum()), dtype=dtype)
        # Panel q, F-ordered (n - c0) x (c1 - c0), is kept as its C-ordered
        # transpose: row j is column c0 + j of the matrix, so the outer
        # products of the updates are written row by row.
        self.panels_t: list[np.ndarray] = []
        for c0, c1, off, size in zip(starts, stops, offsets, sizes):
            panel = self.buf[off : off + size].reshape((n - c0, c1 - c0), order="F")
            panel[...] = M[c0:, c0:c1]
            self._hermitize_diagonal_block(panel[: c1 - c0])
            self.panels_t.append(panel.T)
        # Entry (r, c), r >= col_start[c], is buf[base[c] + r]; column c of
        # the matrix from row col_start[c] down is contiguous there.
        q = np.repeat(np.arange(len(starts)), stops - starts)
        columns = np.arange(n)
        self.col_start = starts[q]
        self.col_stop = stops[q]
        self.base = offsets[q] - starts[q] + (columns - starts[q]) * heights[q]
        self.diag_index = self.base + columns
        self.first = 0  # panels before this one are completely eliminated
        self.backward = False  # direction of the last sweep over the panels
        self.panel_max = np.zeros(len(starts))
        # The entrywise rank test (see `start_testing`): |m_ij| of the entries
        # now at (r, c), in the same storage and interchanged with them, and
        # the norms of the rows of the factor built so far, by position.
        self.noise_level = noise_level
        self.scale = np.abs(self.buf) if noise_level is not None else None
        self.row_norms = np.zeros(n)
        self.testing = False  # whether every update also drops rounding noise
        self.threads = max(1, min(threads, len(starts)))
        largest = int(sizes.max(initial=0))
        # Scratch per worker, as large as the largest panel: the outer
        # products; the moduli (complex data, or the rank test); the noise
        # bounds and where they hold (the rank test).
        testing = noise_level is not None
        self.outer: list[list[np.ndarray]] = []
        self.moduli: list[list[np.ndarray]] = []
        self.bounds_scratch: list[list[np.ndarray]] = []
        self.noise_masks: list[list[np.ndarray]] = []
        for _ in range(self.threads):
            self.outer.append(self._panel_views(np.empty(largest, dtype=dtype)))
            if self.complex or testing:
                self.moduli.append(self._panel_views(np.empty(largest)))
            if testing:
                self.bounds_scratch.append(self._panel_views(np.empty(largest)))
                self.noise_masks.append(self._panel_views(np.empty(largest, dtype=bool)))
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        for q in range(len(starts)):
            self.panel_max[q] = self._panel_max(q, 0)

    def _panel_views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Views of `flat` shaped like the (transposed) panels, each from its start."""
        return [flat[: p.size].reshape(p.shape) for p in self.panels_t]

    def _panels_of(self, buf: np.ndarray) -> list[np.ndarray]:
        """The transposed panels of a buffer laid out like `buf` (the matrix or its scale)."""
        return [buf[off : off + p.size].reshape(p.shape) for off, p in
                zip(self.offsets, self.panels_t)]

    def close(self) -> None:
        """Shut the worker pool down."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def _hermitize_diagonal_block(self, block: np.ndarray) -> None:
        """Make a square block Hermitian from its lower triangle (LAPACK 'L')."""
        upper = np.triu_indices(block.shape[0], 1)
        block[upper] = block.T[upper].conj()
        if self.complex:
            np.fill_diagonal(block, block.diagonal().real)

    def line(self, i: int, k: int, buf: np.ndarray | None = None) -> np.ndarray:
        """Column ``i`` of the matrix (or of `buf` laid out alike), rows ``k..n-1`` (a copy)."""
        if buf is None:
            buf = self.buf
        split = max(k, int(self.col_start[i]))
        head = buf[self.base[k:split] + i]  # stored as row i of earlier panels
        tail = buf[self.base[i] + split : self.base[i] + self.n]
        return np.concatenate((head.conj() if buf.dtype.kind == "c" else head, tail))

    def set_line(self, i: int, k: int, values: np.ndarray, buf: np.ndarray | None = None) -> None:
        """Set column ``i``, rows ``k..n-1``, to ``values`` and row ``i`` to their conjugates."""
        if buf is None:
            buf = self.buf
        split = max(k, int(self.col_start[i]))
        buf[self.base[i] + split : self.base[i] + self.n] = values[split - k :]
        stop = max(k, int(self.col_stop[i]))  # row i is stored in columns < col_stop[i]
        row = values[: stop - k]
        buf[self.base[k:stop] + i] = row.conj() if buf.dtype.kind == "c" else row

    def swap(self, i: int, j: int, k: int) -> None:
        """Symmetric swap of rows/columns ``i`` and ``j`` (both ``>= k``), in the
        matrix and in its scale, and of the row norms."""
        if i == j:
            return
        for buf in (self.buf, self.scale) if self.scale is not None else (self.buf,):
            col_i, col_j = self.line(i, k, buf), self.line(j, k, buf)
            # New column i is old column j with rows i and j exchanged, and vice versa.
            col_i[[i - k, j - k]] = col_i[[j - k, i - k]]
            col_j[[i - k, j - k]] = col_j[[j - k, i - k]]
            self.set_line(i, k, col_j, buf)
            self.set_line(j, k, col_i, buf)
        self.row_norms[[i, j]] = self.row_norms[[j, i]]

    def diagonal(self, k: int) -> np.ndarray:
        """Diagonal entries ``k..n-1`` (a copy)."""
        return self.buf[self.diag_index[k:]]

    def eliminate(self, k: int, s: int, W: np.ndarray, signs: np.ndarray) -> None:
        """Zero pivot lines ``k..k+s-1``, then Schur update ``A -= W diag(signs) W^*``.

        ``W`` holds the ``s`` new factor columns on positions ``k..n-1``; its
        pivot rows (the first ``s``) are left out of the update.
        """
        n = self.n
        zeros = np.zeros(n - k, dtype=self.dtype)
        for i in range(k, k + s):
            self.set_line(i, k, zeros)
        for t in range(s):  # ||g_i|| with the new columns, i = k + s .. n - 1
            np.hypot(self.row_norms[k + s :], np.abs(W[s:, t]), out=self.row_norms[k + s :])
        while self.first < len(self.starts) and self.stops[self.first] <= k + s:
            self.panel_max[self.first] = 0.0
            self.first += 1
        # Rows of the update (s x n, zero on eliminated positions) and the
        # signed conjugates that scale them, column by column.
        self._w = np.zeros((s, n), dtype=self.dtype)
        self._w[:, k + s :] = W[s:].T
        self._coef = self._w.conj() * signs[:, None].astype(np.float64)
        active = range(self.first, len(self.starts))
        self.backward = not self.backward
        if self.backward:  # alternate the sweep direction: reuse what is still cached
            active = active[::-1]
        if self.pool is None:
            self._update_panels(active, 0)
        else:
            t = self.threads
            list(self.pool.map(self._update_panels, [active[i::t] for i in range(t)], range(t)))

    def _update_panels(self, panels: Sequence[int], worker: int) -> None:
        """Update and rescan ``panels`` with the scratch buffers of ``worker``."""
        outers = self.outer[worker]
        with _ufunc_buffer(_UFUNC_BUFSIZE):
            for q in panels:
                c0, c1 = self.bounds[q], self.bounds[q + 1]
                panel_t, outer = self.panels_t[q], outers[q]
                for w, coef in zip(self._w, self._coef):
                    np.multiply(coef[c0:c1, None], w[None, c0:], out=outer)
                    np.subtract(panel_t, outer, out=panel_t)
                if self.testing:
                    self._drop_noise(q, worker)
                self.panel_max[q] = self._panel_max(q, worker)

    def _drop_noise(self, q: int, worker: int) -> None:
        """Set the entries of panel ``q`` within their rounding-error bound,
        ``|s_ij| <= noise_level (|m_ij| + ||g_i|| ||g_j||)``, to zero."""
        panel_t = self.panels_t[q]
        if panel_t.size == 0:
            return
        c0, c1 = self.bounds[q], self.bounds[q + 1]
        bound = self.bounds_scratch[worker][q]
        np.multiply(self.row_norms[c0:c1, None], self.row_norms[None, c0:], out=bound)
        np.add(bound, self._scale_panels[q], out=bound)
        np.multiply(bound, self.noise_level, out=bound)
        moduli = np.abs(panel_t, out=self.moduli[worker][q])
        noise = np.less_equal(moduli, bound, out=self.noise_masks[worker][q])
        np.putmask(panel_t, noise, 0)

    def start_testing(self) -> None:
        """Drop rounding noise from the trailing matrix now and after every update from now on.

        An entry ``s_ij`` of the trailing Schur complement within its
        rounding-error bound ``noise_level (|m_ij| + ||g_i|| ||g_j||)``, with
        ``||g_i||`` the norm of row ``i`` of the factor built so far, is set
        to zero: after ``k`` eliminated columns ``s_ij = m_ij - sum_c g_ic
        j_c g_jc`` is computed with an error of about
        ``k eps (|m_ij| + ||g_i|| ||g_j||)`` at most (Cauchy-Schwarz), so such
        an entry carries no information, and dropping it is a perturbation
        of M within the factorization's own componentwise backward error.
        The bound follows every scale of the data: a graded ``M = D A D``
        has ``||g_i|| ~ d_i`` and ``|s_ij| ~ d_i d_j``, kept however wide ``D``
        is, while an exactly singular M leaves ``|s_ij|`` at the noise
        level.  Complete pivoting then never picks noise (which on a graded
        matrix can be far larger than the genuine entries of smaller
        scales), and the elimination stops when nothing but noise is left:
        at the largest modulus 0.  The test is one more pass over the panels
        per step, folded into the update's.
        """
        self.testing = True
        self._scale_panels = self._panels_of(self.scale)
        for q in range(self.first, len(self.starts)):
            self._drop_noise(q, 0)
            self.panel_max[q] = self._panel_max(q, 0)

    def _panel_max(self, q: int, worker: int) -> float:
        """Largest modulus of the entries of panel ``q``."""
        panel_t = self.panels_t[q]
        if panel_t.size == 0:
            return 0.0
        if self.complex:
            return float(np.abs(panel_t, out=self.moduli[worker][q]).max())
        return max(float(panel_t.max()), -float(panel_t.min()))

    def max_entry(self) -> tuple[float, int, int]:
        """``(mu0, r, c)``: largest modulus of the live matrix and a position of it."""
        q = int(self.panel_max.argmax())
        panel_t = self.panels_t[q]
        col, row = np.unravel_index(int(np.abs(panel_t).argmax()), panel_t.shape)
        c0 = int(self.starts[q])
        return float(self.panel_max[q]), c0 + int(row), c0 + int(col)


# ---------------------------------------------------------------------------
# Pivots
# ---------------------------------------------------------------------------


def _eigh_2x2(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Jacobi rotation diagonalizing a Hermitian 2x2 block: ``E = Q diag(lam) Q^*``.

    With ``E = [[a, b], [conj(b), c]]``, ``b = |b| e^{i phi} != 0``, the real
    Jacobi formulas (Golub & Van Loan, *Matrix Computations*, 4th ed.,
    Alg. 8.5.1) are applied to
    ``[[a, |b|], [|b|, c]]``: ``kappa = (c - a) / (2|b|)``,
    ``t = sign(kappa) / (|kappa| + sqrt(1 + kappa^2))``, ``cs = 1/sqrt(1 + t^2)``,
    ``sn = t cs``, ``lam = (a - t|b|, c + t|b|)``, and the phase goes into the
    second row of ``Q = [[cs, sn], [-sn e^{-i phi}, cs e^{-i phi}]]``.
    """
    a, c = float(E[0, 0].real), float(E[1, 1].real)
    b = E[1, 0].conjugate()  # E[0, 1] of the Hermitian block
    beta = abs(b)
    kappa = (c - a) / (2.0 * beta)  # |kappa| <= alpha < 1 for a Bunch-Parlett pivot
    t = math.copysign(1.0, kappa) / (abs(kappa) + math.sqrt(1.0 + kappa * kappa))
    cs = 1.0 / math.sqrt(1.0 + t * t)
    sn = t * cs
    phase = np.conj(b / beta)  # e^{-i phi}; sign(b) for real E
    Q = np.array([[cs, sn], [-sn * phase, cs * phase]], dtype=E.dtype)
    lam = np.array([a - t * beta, c + t * beta])
    return Q, lam


def _pivot_1x1(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factor column ``l sqrt|d|`` of a 1x1 pivot ``d = X[0, 0]`` and ``sign(d)``.

    ``l = X / d`` is the column of the unit lower-triangular ``L``; the result
    is ``X / (sign(d) sqrt|d|)`` with the pivot entry set to ``sqrt|d|``.
    """
    d = float(X[0, 0].real)
    sign = 1 if d > 0 else -1
    root = math.sqrt(abs(d))
    G = X / (sign * root)
    G[0, 0] = root
    return G, np.array([sign], dtype=np.int8)


def _pivot_2x2(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two factor columns ``L Q |Lambda|^{1/2}`` of a 2x2 pivot ``E = X[:2]``.

    ``L = X E^{-1}`` and ``E = Q Lambda Q^*`` (:func:`_eigh_2x2`), so
    ``L Q |Lambda|^{1/2} = X Q diag(sign(lam) / sqrt|lam|)``: ``X`` is multiplied
    by a 2x2 matrix built from the stable rotation, and ``E^{-1}`` is never
    formed. ``E`` is indefinite (``det E < (alpha^2 - 1)|e_12|^2 < 0``) and both
    ``|lam_i| > (1 - alpha)|e_12|``, so the block is well conditioned. The
    pivot rows are set to ``Q |Lambda|^{1/2}`` (the identity block of ``L``).
    """
    Q, lam = _eigh_2x2(X[:2])
    signs = np.where(lam > 0, 1, -1).astype(np.int8)
    roots = np.sqrt(np.abs(lam))
    G = X @ (Q * (signs / roots))
    G[:2] = Q * roots
    return G, signs


def _choose_pivot(store: _BlockLower, k: int, mu0: float, r: int, c: int) -> tuple[int, ...]:
    """Bunch-Parlett complete pivoting: positions of a 1x1 or a 2x2 pivot."""
    diag = store.diagonal(k)
    i = int(np.abs(diag).argmax())
    if abs(diag[i]) >= BUNCH_PARLETT_ALPHA * mu0:
        return (k + i,)
    return (min(r, c), max(r, c))  # off-diagonal since mu1 < alpha mu0 <= |a_rc|


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------


def rank_noise_level(n: int) -> float:
    """The normwise rank tolerance of an order-``n`` matrix relative to ``max|m_ij|``, ``n eps``.

    Below it (``max|s_ij| <= n eps max|m_ij|``) :func:`j_factorize` (and the
    device version) start the entrywise test, :func:`entry_noise_level`.
    """
    return n * float(np.finfo(np.float64).eps)


def entry_noise_level(n: int) -> float:
    """Rounding-error level of an entry of an order-``n`` Schur complement, ``4 n eps``.

    After ``k <= n`` eliminated columns, ``s_ij = m_ij - sum_c g_ic j_c g_jc`` is
    computed by ``k`` updates of two roundings each (product and difference;
    one fused multiply-add on the device) from factor columns that carry
    rounding errors of their own, entering the products twice: an error of
    at most about ``4 k eps (|m_ij| + ||g_i|| ||g_j||)`` (Cauchy-Schwarz on the
    rows ``g_i`` of the factor so far).  An entry within
    ``entry_noise_level(n) (|m_ij| + ||g_i|| ||g_j||)`` is noise.  (Measured: the
    noise left by an exactly singular graded matrix reached ``32 eps`` times
    its bound at ``n = 24`` on the host, beyond ``n eps``.)
    """
    return 4 * rank_noise_level(n)


def j_factorize(M: np.ndarray, *, rank_tol: float | None = None) -> JFactor:
    """Rank-revealing J-factorization ``M = G J G^*`` of a Hermitian matrix.

    Bunch-Parlett symmetric indefinite factorization with complete pivoting
    [1]_: at each step, with ``A`` the trailing Schur complement,
    ``mu0 = max_ij |a_ij|`` and ``mu1 = max_i |a_ii|``; if
    ``mu1 >= alpha mu0`` (``alpha = (1 + sqrt(17)) / 8``) the largest diagonal
    entry is a 1x1 pivot, otherwise the off-diagonal entry attaining ``mu0``
    gives a 2x2 pivot. Following Slapničar [2]_, a 1x1 pivot ``d`` yields the
    column ``l sqrt|d|`` with sign ``sign(d)``, and a 2x2 pivot
    ``E = Q Lambda Q^*`` (indefinite, diagonalized by a Jacobi rotation)
    yields the two columns ``L Q |Lambda|^{1/2}`` with signs ``sign(Lambda)``.
    Symmetric permutations are applied to the working matrix only: ``G`` is
    returned in the original row order. Finally the columns are stably
    reordered so that the positive signs come first.

    Parameters
    ----------
    M : numpy.ndarray
        Real symmetric or complex Hermitian ``n x n`` matrix. Only its lower
        triangle is referenced (the imaginary part of the diagonal is ignored);
        ``M`` is not modified. Real input is factored in float64, complex input
        in complex128.
    rank_tol : float, optional
        The elimination stops when the largest modulus of the remaining Schur
        complement is ``<= rank_tol``; the number of columns produced so far is
        the numerical rank ``r``.  Negative values act as 0 (stop only at an
        exactly zero Schur complement).  Default (None): stop when the
        remaining entries are negligible both normwise,
        ``max|s_ij| <= n eps max|m_ij|``, and entrywise relative to their own
        rounding-error bound, ``|s_ij| <= 4 n eps (|m_ij| + ||g_i|| ||g_j||)``
        with ``g_i`` the rows of the factor built so far; so an exactly
        singular M gives ``r = rank(M)`` while a graded ``M = D A D`` keeps
        all its small scales, however wide ``D`` is.  A zero matrix gives
        ``r = 0``.

    Returns
    -------
    JFactor
        ``(G, signs, p)``: ``G`` is ``n x r`` and Fortran-contiguous, ``signs``
        is ``[+1] * p + [-1] * (r - p)`` (int8), and ``M`` equals
        ``G @ np.diag(signs) @ G.conj().T`` up to rounding.

    Raises
    ------
    ValueError
        If ``M`` is not a square two-dimensional array.

    Notes
    -----
    The cost is about ``n^3 / 6`` fused multiply-adds plus as many compares for
    the complete-pivoting search; with the 2x2 pivots diagonalized the
    factorization is the one the relative perturbation theory of [2]_, [3]_
    is about (graded matrices keep their small scales). Finiteness and
    Hermitian symmetry are not checked here.

    References
    ----------
    .. [1] J. R. Bunch and B. N. Parlett, SIAM J. Numer. Anal. 8(4), 639-655
       (1971).
    .. [2] I. Slapničar, "Accurate symmetric eigenreduction by a Jacobi
       method", Ph.D. thesis, Fernuniversität Hagen (1992).
    .. [3] I. Slapničar, Linear Algebra Appl. 272, 227-275 (1998).

    Examples
    --------
    >>> import numpy as np
    >>> M = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> G, signs, p = j_factorize(M)
    >>> signs.tolist(), p
    ([1, -1], 1)
    >>> bool(np.allclose(G @ np.diag(signs) @ G.T, M))
    True
    """
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be a square 2-D array, got shape {M.shape}")
    dtype = np.dtype(np.complex128 if np.iscomplexobj(M) else np.float64)
    n = M.shape[0]
    if n == 0:
        return JFactor(np.zeros((0, 0), dtype=dtype, order="F"), np.zeros(0, np.int8), 0)

    scaled_test = rank_tol is None
    store = _BlockLower(M, dtype, _thread_count(n), entry_noise_level(n) if scaled_test else None)
    if scaled_test:
        rank_tol = rank_noise_level(n) * float(store.panel_max.max())

    G = np.zeros((n, n), dtype=dtype, order="F")
    signs = np.zeros(n, dtype=np.int8)
    perm = np.arange(n)  # perm[position] = original row index
    k = 0
    try:
        while k < n:
            mu0, r, c = store.max_entry()
            if not mu0 > max(rank_tol, 0.0):
                # Normwise negligible.  With the default tolerance, stop only if
                # it is negligible entrywise too, relative to the rows' scales
                # in M: a graded matrix keeps its small scales.
                if not scaled_test:
                    break
                if not store.testing:
                    store.start_testing()
                    mu0, r, c = store.max_entry()
                if not mu0 > 0.0:
                    break
            pivots = _choose_pivot(store, k, mu0, r, c)
            for t, piv in enumerate(pivots):
                store.swap(k + t, piv, k)
                perm[[k + t, piv]] = perm[[piv, k + t]]
            s = len(pivots)
            X = np.stack([store.line(k + t, k) for t in range(s)], axis=1)
            W, sgn = _pivot_1x1(X) if s == 1 else _pivot_2x2(X)
            G[perm[k:], k : k + s] = W
            signs[k : k + s] = sgn
            store.eliminate(k, s, W, sgn)
            k += s
    finally:
        store.close()

    order = np.concatenate((np.flatnonzero(signs[:k] > 0), np.flatnonzero(signs[:k] < 0)))
    G = np.asfortranarray(G[:, order])
    signs = signs[order]
    return JFactor(G, signs, int(np.count_nonzero(signs > 0)))


def diagonal_of_one_sign(M: np.ndarray) -> bool:
    """Whether the real parts of M's diagonal are all positive or all negative
    (nonzero): :func:`definite_factorize`'s first test, without which it
    returns None.  Scaling M by a power of two keeps the answer."""
    diagonal = np.asarray(M).diagonal().real
    return diagonal.size > 0 and bool(np.all(diagonal > 0) or np.all(diagonal < 0))


def definite_factorize(M: np.ndarray) -> JFactor | None:
    """``M = G J G^*`` by Cholesky with diagonal pivoting when M is definite, else None.

    For a positive (negative) definite Hermitian ``M`` the J-factorization is
    ``P^T (+-M) P = L L^*`` (LAPACK ``xPSTRF``, complete = diagonal pivoting,
    the largest remaining diagonal entry each step), so ``G = P L``,
    ``J = I`` (``-I``), ``p = n`` (``0``), and the Jacobi phase applies only
    trigonometric rotations.  This is about half the work of Bunch-Parlett
    (no search over the whole Schur complement, a level-3 LAPACK kernel) and
    as relatively accurate: for ``M = D A D`` with ``D = diag(m_ii)^{1/2}``
    the pivoted Cholesky factor and the one-sided Jacobi method on it give
    the eigenvalues with relative errors of order ``eps cond(A)``
    (Demmel & Veselić 1992, Sect. 2 and 4; Slapničar 1998).

    Definiteness is never assumed; it is decided by the factorization itself:

    * all diagonal entries of M must be nonzero and of one sign (else None);
    * ``xPSTRF`` runs with tolerance 0, i.e. stops at the first pivot that is
      not positive; any stop before ``n`` columns means "not definite" (None);
    * a pivot ``l_kk^2`` within the rounding-error bound of its entry of the
      Schur complement, ``l_kk^2 <= 4 n eps (|m_{p_k p_k}| + ||l_{k,1:k-1}||^2)``
      (the entrywise noise test of :func:`j_factorize`), means M is
      numerically singular or indefinite at the working precision; None, so
      that the rank-revealing Bunch-Parlett path decides.  The bound follows
      the pivot's own scale, so a definite graded ``M = D A D`` keeps
      Cholesky however wide ``D`` is.

    Hence a returned factor is a successful Cholesky factorization of a
    matrix within a componentwise-relative backward error of ``+-M``, with
    every pivot well above its noise level; the caller falls back to
    :func:`j_factorize` on None.

    Parameters
    ----------
    M : numpy.ndarray
        Hermitian ``n x n`` (real or complex), ``n >= 1``; only the lower
        triangle is referenced, M is not modified.

    Returns
    -------
    JFactor or None
        ``(G, signs, p)`` with ``G`` ``n x n`` (lower triangular with
        permuted rows), Fortran-contiguous, float64 or complex128.

    References
    ----------
    .. [1] J. Demmel and K. Veselić, "Jacobi's method is more accurate than
       QR", SIAM J. Matrix Anal. Appl. 13(4), 1204-1245 (1992).
    .. [2] N. J. Higham, "Analysis of the Cholesky decomposition of a
       semi-definite matrix" (1990); LAPACK ``xPSTRF`` (Lucas 2004).
    """
    M = np.asarray(M)
    n = M.shape[0]
    complex_ = np.iscomplexobj(M)
    dtype = np.dtype(np.complex128 if complex_ else np.float64)
    if not diagonal_of_one_sign(M):
        return None
    diagonal = M.diagonal().real
    sign = 1 if diagonal[0] > 0 else -1
    A = np.array(np.tril(M) if sign > 0 else -np.tril(M), dtype=dtype, order="F")
    pstrf = scipy.linalg.lapack.zpstrf if complex_ else scipy.linalg.lapack.dpstrf
    L, piv, rank, info = pstrf(A, tol=0.0, lower=1, overwrite_a=1)
    if info < 0:
        raise RuntimeError(f"{pstrf.__name__} rejected argument {-info}")
    if info != 0 or rank != n:
        return None
    L = np.tril(L)
    piv = piv - 1  # LAPACK's 1-based pivot order: A[piv][:, piv] = L L^*
    if not np.all(np.isfinite(L)):
        return None
    squares = np.abs(L) ** 2
    pivots = squares.diagonal()
    done = squares.sum(axis=1) - pivots  # ||l_{k,1:k-1}||^2
    if np.any(pivots <= entry_noise_level(n) * (np.abs(diagonal[piv]) + done)):
        return None
    G = np.empty((n, n), dtype=dtype, order="F")
    G[piv, :] = L
    signs = np.full(n, sign, dtype=np.int8)
    return JFactor(G, signs, n if sign > 0 else 0)
