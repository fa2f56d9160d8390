"""Test-matrix generators (used by the tests and the benchmarks).

* :func:`paper_spectrum` -- the random indefinite spectra of Novaković &
  Singer (2011), Sect. 5 and Table 2;
* :func:`with_spectrum` -- a symmetric/Hermitian matrix ``Q diag(lam) Q^*``
  with a prescribed spectrum, built like LAPACK's ``xLAGSY``/``xLAGHE``
  (two-sided random Householder reflections) in extended precision and
  rounded once (docs/design.md, Appendix C);
* :func:`graded` -- graded matrices ``M = D A D`` with ``A`` well conditioned
  and ``D`` a diagonal of powers of two spanning many orders of magnitude:
  only a relatively accurate method gets their small eigenvalues right;
* :func:`with_singular_values` and :func:`column_graded` -- rectangular
  matrices ``X diag(sigma) Y^*`` and ``B D`` for the SVDs;
* :func:`kahan` -- Kahan's triangular matrix, the classic hard case of QR
  with column pivoting;
* :func:`gaussian` -- independent standard normal entries (real and
  imaginary parts for complex types).

Every random generator (all but :func:`kahan`) takes a
:class:`numpy.random.Generator` ``rng``; the same seed gives the same matrix
(for the same arguments, numpy version and platform ``longdouble``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = [
    "EXTENDED_MAX_N",
    "column_graded",
    "gaussian",
    "graded",
    "kahan",
    "paper_a",
    "paper_spectrum",
    "with_singular_values",
    "with_spectrum",
]

#: Largest order for which :func:`with_spectrum` builds in ``longdouble`` by
#: default.  numpy has no BLAS for ``longdouble``: the two-sided reflections
#: cost about ``(4/3) n^3`` scalar extended operations (~0.5 s at n = 512 on
#: x86-64, growing as n^3); above this size the float64 BLAS path is used.
EXTENDED_MAX_N = 512


def paper_a(n: int) -> float:
    """Spectrum scale ``a`` of Novaković & Singer (2011), Table 2.

    ``20`` for ``n <= 3168``, ``30`` for ``n <= 6368``, ``40`` for
    ``n <= 9568``, else ``50``.
    """
    if n <= 3168:
        return 20.0
    if n <= 6368:
        return 30.0
    if n <= 9568:
        return 40.0
    return 50.0


def _order_and_positive(n: int, p: int | None) -> tuple[int, int]:
    """Checked order n and number p of positive eigenvalues (default n // 2)."""
    n = int(n)
    if n < 0:
        raise ValueError("n must be >= 0")
    if p is None:
        p = n // 2
    if not 0 <= p <= n:
        raise ValueError(f"p must be in [0, {n}], got {p}")
    return n, p


def paper_spectrum(
    n: int,
    *,
    p: int | None = None,
    a: float | None = None,
    rng: np.random.Generator,
) -> np.ndarray:
    """Random indefinite spectrum of the 2011 paper's experiments (Sect. 5).

    Eigenvalues uniformly distributed in ``[-a, -a*1e-5] U [a*1e-5, a]``:
    ``p`` of them drawn from the positive interval, ``n - p`` from the
    negative one.

    Parameters
    ----------
    n : int
        Number of eigenvalues.
    p : int, optional
        Number of positive eigenvalues; default ``n // 2``.
    a : float, optional
        Scale; default :func:`paper_a` ``(n)`` (the paper's Table 2).
    rng : numpy.random.Generator
        Random source.

    Returns
    -------
    ndarray, shape (n,), float64
        The eigenvalues in ascending order (all nonzero; the condition number
        of the matrix is at most ``1e5``).

    References
    ----------
    V. Novaković and S. Singer, BIT 51 (2011), Sect. 5 and Table 2.
    """
    n, p = _order_and_positive(n, p)
    if a is None:
        a = paper_a(n)
    if not a > 0:
        raise ValueError("a must be positive")
    lo = a * 1e-5
    pos = rng.uniform(lo, a, size=p)
    neg = -rng.uniform(lo, a, size=n - p)
    return np.sort(np.concatenate([neg, pos]))


def _haar_sign(x0: np.ndarray) -> np.ndarray:
    """``x0 / |x0|`` (1 for ``x0 == 0``), real or complex scalar."""
    ax = abs(x0)
    return x0 / ax if ax != 0 else np.ones((), dtype=x0.dtype)[()]


def _lagsy_extended(lam: np.ndarray, rng: np.random.Generator, complex_: bool) -> np.ndarray:
    """``U diag(lam) U^*`` in longdouble, LAPACK ``xLAGSY``/``xLAGHE`` style.

    Starting from ``diag(lam)``, for ``k = n-2, ..., 0`` a Householder
    reflection ``H_k`` built from a Gaussian vector on indices ``k..n-1``
    (``v = x + sign(x_0) ||x|| e_0``, so that ``H_k e_0`` is uniform on the
    sphere) is applied from both sides.  The product of these reflections is
    Haar distributed up to diagonal signs/phases, which cancel in
    ``U diag(lam) U^*``.  Only the trailing block is ever full, so each step is
    a symmetric rank-2 update of it.
    """
    ld = np.clongdouble if complex_ else np.longdouble
    n = lam.shape[0]
    A = np.zeros((n, n), dtype=ld)
    A[np.arange(n), np.arange(n)] = lam.astype(np.longdouble)
    for k in range(n - 2, -1, -1):
        m = n - k
        x = rng.standard_normal(m)
        if complex_:
            x = x + 1j * rng.standard_normal(m)
        v = x.astype(ld)
        nx = np.sqrt(np.vdot(v, v).real) if complex_ else np.sqrt(v @ v)
        if nx == 0:
            continue
        v[0] = v[0] + _haar_sign(v[0]) * nx
        vv = np.vdot(v, v).real if complex_ else v @ v
        beta = np.longdouble(2) / vv
        B = A[k:, k:]
        # H B H with H = I - beta v v^*:  w = beta B v,  gamma = beta/2 v^* w,
        # x = w - gamma v,  H B H = B - v x^* - x v^*.
        w = beta * (B @ v)
        gamma = (beta / 2) * (np.vdot(v, w).real if complex_ else v @ w)
        y = w - gamma * v
        # rank-2 update as one (m x 2) @ (2 x m) product: fewer temporaries
        # than two np.outer calls (numpy has no BLAS for longdouble).
        B -= np.stack([v, y], axis=1) @ np.stack([y, v], axis=0).conj()
    return A


def _random_orthogonal(n: int, rng: np.random.Generator, complex_: bool) -> np.ndarray:
    """Haar-distributed orthogonal/unitary matrix in float64 (QR of Gaussian)."""
    Z = rng.standard_normal((n, n))
    if complex_:
        Z = (Z + 1j * rng.standard_normal((n, n))) / np.sqrt(2.0)
    # scipy's QR (dgeqrf + dorgqr); numpy's reduced-mode QR was much slower
    # under a multi-threaded OpenBLAS in our measurements.
    Q, R = scipy.linalg.qr(Z, overwrite_a=True, check_finite=False)
    dR = np.diagonal(R)
    ph = np.where(dR == 0, 1, dR / np.where(dR == 0, 1, np.abs(dR)))
    return Q * ph[None, :]


def with_spectrum(
    eigenvalues: np.ndarray,
    *,
    rng: np.random.Generator,
    dtype: np.dtype | type = np.float64,
    extended: bool | None = None,
) -> np.ndarray:
    """Random symmetric (Hermitian) matrix with the given eigenvalues.

    Returns ``M = Q diag(lam) Q^*`` with a random Haar orthogonal (unitary
    for a complex ``dtype``) ``Q``.

    Parameters
    ----------
    eigenvalues : array_like, shape (n,)
        Real eigenvalues.
    rng : numpy.random.Generator
        Random source.
    dtype : dtype, optional
        Output type: float64 (default), float32, complex128 or complex64.
    extended : bool, optional
        Build in ``numpy.longdouble`` (80-bit extended on x86-64; on platforms
        where ``longdouble`` is plain double this gives no gain) with the
        ``xLAGSY``-style two-sided reflections, then round once to ``dtype``.
        Default: ``n <= EXTENDED_MAX_N`` (512).  With ``extended=False`` (the
        default for larger ``n``) ``Q`` comes from a float64 QR factorization
        and the product is formed with float64 BLAS; ``Q`` is then orthogonal
        to ``O(n eps)`` and each entry of ``M`` carries ``O(n eps ||M||)``
        absolute error instead of one final rounding.  Either way the two
        paths consume the random stream differently, so they give different
        matrices for the same seed.  The float64 path takes a few seconds for
        ``n = 4096``; extended is ~0.5 s at ``n = 512`` and grows as ``n^3``.

    Returns
    -------
    ndarray, shape (n, n)
        Exactly symmetric (Hermitian, with a real diagonal): the strict upper
        triangle is mirrored after rounding.

    Notes
    -----
    Whatever the working precision, the final rounding to float64 already
    perturbs the eigenvalues by up to about ``eps ||M||`` in absolute terms,
    so eigenvalues much smaller than ``||M||`` are not exactly those
    requested; compare computed eigenvalues with a high-precision solution of
    the rounded matrix when that matters.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if lam.ndim != 1:
        raise ValueError("eigenvalues must be 1-D")
    if not np.all(np.isfinite(lam)):
        raise ValueError("eigenvalues must be finite")
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        raise ValueError(f"dtype must be a real or complex floating type, got {dt}")
    complex_ = dt.kind == "c"
    n = lam.shape[0]
    if extended is None:
        extended = n <= EXTENDED_MAX_N
    if n == 0:
        return np.zeros((0, 0), dtype=dt)
    if extended:
        M_hi = _lagsy_extended(lam, rng, complex_)
        M = M_hi.astype(dt)
    else:
        Q = _random_orthogonal(n, rng, complex_)
        M = ((Q * lam[None, :]) @ Q.conj().T).astype(dt)
    # exact symmetry: mirror the strict upper triangle.
    iu = np.triu_indices(n, 1)
    M.T[iu] = M[iu].conj() if complex_ else M[iu]
    if complex_:
        M[np.arange(n), np.arange(n)] = M.diagonal().real
    return M


def graded(
    n: int,
    *,
    p: int | None = None,
    low_exponent: int = -30,
    rng: np.random.Generator,
    dtype: np.dtype | type = np.float64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Graded symmetric indefinite matrix ``M = D A D``.

    ``A`` is a well-conditioned symmetric (Hermitian) indefinite matrix with
    ``p`` positive eigenvalues, all of magnitude in ``[1, 10]`` (built by
    :func:`with_spectrum`, so ``||A^{-1}|| <= 1`` up to rounding), and
    ``D = diag(2^k_i)`` with integer exponents ``k_i`` spread evenly over
    ``low_exponent .. 0`` (both ends included when ``n >= 2``) and shuffled.
    Since ``D`` holds powers of two, ``D A D`` is computed exactly, so ``M``
    is *exactly* the graded matrix.

    By the relative perturbation theory for graded matrices, the eigenvalues
    of ``M`` are determined to high relative accuracy by the data (about
    ``eps`` times a modest factor), although they span about
    ``2^(2 low_exponent)`` orders -- ``1e-18 .. 10`` for the default;
    a backward stable but not relatively accurate solver (LAPACK ``syevd``)
    gets the small ones with errors of order ``eps ||M|| / |lambda|``.

    Parameters
    ----------
    n : int
        Order.
    p : int, optional
        Number of positive eigenvalues (of ``A`` and, by Sylvester's law of
        inertia, of ``M``); default ``n // 2``.
    low_exponent : int, optional
        Smallest exponent of the scaling (default -30).  Keep
        ``2 * low_exponent`` above the exponent range limit of ``dtype``
        (e.g. ``>= -60`` for float32) so that ``M`` has no subnormals.
    rng : numpy.random.Generator
        Random source.
    dtype : dtype, optional
        float64 (default), float32, complex128 or complex64.

    Returns
    -------
    M : ndarray, shape (n, n)
        ``D A D``.
    A : ndarray, shape (n, n)
        The well-conditioned core.
    D : ndarray, shape (n, n)
        The diagonal scaling as a diagonal matrix (``np.diag(D)`` gives the
        vector of powers of two).
    """
    n, p = _order_and_positive(n, p)
    low_exponent = int(low_exponent)
    if low_exponent > 0:
        raise ValueError("low_exponent must be <= 0")
    mags = rng.uniform(1.0, 10.0, size=n)
    lam = np.concatenate([-mags[p:], mags[:p]])
    A = with_spectrum(lam, rng=rng, dtype=dtype)
    k = np.rint(np.linspace(low_exponent, 0, n)).astype(int) if n > 1 else np.zeros(n, int)
    rng.shuffle(k)
    dvec = np.ldexp(1.0, k)
    dt = A.dtype
    M = (dvec[:, None] * A * dvec[None, :]).astype(dt)
    D = np.diag(dvec).astype(dt.char.lower() if dt.kind == "c" else dt)
    return M, A, D


def gaussian(
    shape: tuple[int, ...],
    *,
    rng: np.random.Generator,
    dtype: np.dtype | type = np.float64,
) -> np.ndarray:
    """Standard normal entries of `shape`; for a complex `dtype` the real and the
    imaginary parts are drawn independently (real part first)."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def with_singular_values(
    sigma: np.ndarray,
    n: int,
    *,
    rng: np.random.Generator,
    dtype: np.dtype | type = np.float64,
) -> np.ndarray:
    """Random ``k x n`` matrix ``X diag(sigma) Y^*`` with ``k = len(sigma) <= n``.

    ``X`` is ``k x k`` and ``Y`` ``n x k`` with Haar-distributed orthonormal columns
    (unitary for a complex `dtype`), formed in float64 (complex128), so the
    singular values of the result agree with `sigma` to about
    ``k eps max(sigma)``.  Take the conjugate transpose for a tall matrix.

    Parameters
    ----------
    sigma : array_like, shape (k,)
        Nonnegative singular values.
    n : int
        Columns, ``n >= k``.
    rng : numpy.random.Generator
        Random source.
    dtype : dtype, optional
        float64 (default) or complex128.

    Returns
    -------
    ndarray, shape (k, n)
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    k = sigma.shape[0]
    if n < k:
        raise ValueError(f"n = {n} must be at least len(sigma) = {k}")
    complex_ = np.dtype(dtype).kind == "c"
    X = _random_orthogonal(k, rng, complex_)
    Y = _random_orthogonal(n, rng, complex_)[:, :k]
    return ((X * sigma) @ Y.conj().T).astype(dtype)


def column_graded(
    m: int,
    n: int,
    *,
    cond: float = 7.0,
    low_exponent: int = -100,
    rng: np.random.Generator,
    dtype: np.dtype | type = np.float64,
) -> np.ndarray:
    """Column-graded ``A = B D`` (m x n, either shape).

    ``B`` has singular values evenly spaced in ``[1, cond]`` (so
    ``cond(B) = cond`` up to rounding) and Haar singular vectors
    (:func:`with_singular_values`); ``D = diag(2^k_j)`` with integer exponents
    spread evenly over ``low_exponent .. 0`` and shuffled, so ``B D`` is
    exact.  One-sided Jacobi gets every singular value of ``A`` to a relative
    error of order ``eps cond(B)`` whatever ``D`` is (Demmel & Veselić 1992,
    Theorem 4.1); the transpose ``A^T = D B^T`` is row-graded.
    """
    k = min(m, n)
    B = with_singular_values(np.linspace(1.0, cond, k), max(m, n), rng=rng, dtype=dtype)
    if m >= n:
        B = B.conj().T
    exponents = np.rint(np.linspace(low_exponent, 0, n)).astype(int) if n > 1 else np.zeros(n, int)
    rng.shuffle(exponents)
    return B * np.ldexp(1.0, exponents)


def kahan(n: int, theta: float = 1.2, pert: float = 25.0) -> np.ndarray:
    """Kahan's upper triangular matrix, as MATLAB's ``gallery('kahan', n, theta, pert)``.

    ``K = diag(s^0, ..., s^(n-1)) (I - c T) + pert eps diag(n, ..., 1)`` with
    ``s = sin(theta)``, ``c = cos(theta)`` and ``T`` the strictly upper
    triangle of ones.  Every column of ``K - pert eps diag(...)`` has norm 1,
    so QR with column pivoting does not pivot (the small diagonal
    perturbation breaks the ties in that order) and ``|r_nn| = s^(n-1)``
    overestimates the smallest singular value by orders of magnitude.
    """
    s, c = np.sin(theta), np.cos(theta)
    K = np.eye(n) - c * np.triu(np.ones((n, n)), 1)
    K *= (s ** np.arange(n))[:, None]
    return K + pert * np.finfo(np.float64).eps * np.diag(np.arange(n, 0, -1.0))
