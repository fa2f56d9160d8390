"""High-precision eigenvalue oracle for the tests (mpmath).

The matrix entries are converted to mpmath numbers *exactly* (float64,
float32 and x86 longdouble values are dyadic rationals), the eigenvalues are
computed by mpmath's Jacobi solvers (``mpmath.eigsy`` for real symmetric,
``mpmath.eighe`` for complex Hermitian matrices) at ``dps`` decimal digits,
and rounded once to float64.  With the default 50 digits the result is the
correctly rounded spectrum of the given floating-point matrix for all
practical purposes (eigenvalue condition in the relative sense permitting).

Cost (pure-Python mpmath backend, no gmpy2; measured on the dev container,
dps=50): n = 16: 0.07 s real / 0.10 s complex; n = 32: 0.34 s / 0.55 s;
n = 64: 2.0 s / 3.4 s.  Time grows like n^3, so keep test matrices at
n <= 64 (n = 128 would take ~15-30 s).

:func:`singular_values_hiprec` and :func:`hyperbolic_eigenvalues_hiprec` choose
their working precision from the answer: the digits are raised until the
smallest value is resolved to :data:`DIGITS` digits (an absolutely accurate
mpmath solver at ``d`` digits resolves ``x`` to ``d - log10(max/x)`` digits), so
graded data spanning 1e-300..1 cost more digits but no care from the caller.
:func:`determined` measures what the data fix: the reference of a few
componentwise perturbed copies of the input.
"""

from __future__ import annotations

import mpmath
import numpy as np

__all__ = [
    "DIGITS",
    "MAX_N",
    "determined",
    "eigvals_factor_hiprec",
    "eigvalsh_hiprec",
    "hyperbolic_eigenvalues_hiprec",
    "singular_values_hiprec",
]

#: Largest order the tests should pass to these helpers (time ~ n^3).
MAX_N = 64

#: Correct decimal digits of every value the adaptive oracles return.
DIGITS = 25

#: Working digits beyond which the adaptive oracles give up (exactly singular data).
_MAX_DPS = 1500


def _to_mpf(x: np.floating) -> mpmath.mpf:
    """Exact conversion of a real numpy floating scalar to ``mpf``."""
    if isinstance(x, np.longdouble) and np.finfo(np.longdouble).nmant > 52:
        m, e = np.frexp(x)
        nm = np.finfo(np.longdouble).nmant + 1
        mi = int(np.ldexp(m, nm))  # integer-valued, exact
        return mpmath.ldexp(mpmath.mpf(mi), int(e) - nm)
    return mpmath.mpf(float(x))


def _to_mp(x: np.number) -> mpmath.mpf | mpmath.mpc:
    """Exact conversion of a real or complex numpy scalar."""
    if np.iscomplexobj(x):
        return mpmath.mpc(_to_mpf(x.real), _to_mpf(x.imag))
    return _to_mpf(x)


def _to_mp_rectangular(A: np.ndarray) -> mpmath.matrix:
    """Exact conversion of an m x n real or complex array."""
    m, n = A.shape
    out = mpmath.matrix(m, n)
    for i in range(m):
        for j in range(n):
            out[i, j] = _to_mp(A[i, j])
    return out


def _adaptive(compute, *, digits: int = DIGITS) -> np.ndarray:
    """Values from ``compute(dps)`` (an absolutely accurate mpmath solver, values
    sorted by decreasing magnitude), at working precision raised until the
    smallest one has `digits` correct digits."""
    dps = digits + 15
    while True:
        with mpmath.workdps(dps):
            values = compute()
            largest, smallest = abs(values[0]), abs(values[-1])
            spread = float(mpmath.log10(largest / smallest)) if smallest else float(dps)
        need = digits + 5 + int(np.ceil(spread))
        if need <= dps:
            return np.array([float(v) for v in values])
        if need > _MAX_DPS:
            raise ValueError("the data are singular to the oracle's working precision")
        dps = need + 10


def singular_values_hiprec(A: np.ndarray, digits: int = DIGITS) -> np.ndarray:
    """Singular values of a real or complex m x n matrix, descending, each with
    `digits` correct digits (mpmath's ``svd_r``/``svd_c`` at adaptive precision).

    ``A`` must have full rank ``min(m, n)``; values below float64's range come
    back as 0.
    """
    A = np.asarray(A)
    if min(A.shape) == 0:
        return np.zeros(0)
    complex_ = np.iscomplexobj(A)

    def compute():
        X = _to_mp_rectangular(A)
        S = (mpmath.svd_c if complex_ else mpmath.svd_r)(X, compute_uv=False)
        return sorted((S[k] for k in range(min(A.shape))), reverse=True)

    return _adaptive(compute, digits=digits)


def hyperbolic_eigenvalues_hiprec(
    G: np.ndarray, signs: np.ndarray, digits: int = DIGITS
) -> np.ndarray:
    """The n nonzero eigenvalues of ``G J G^*`` for an m x n ``G`` of full column
    rank, by decreasing magnitude, each with `digits` correct digits.

    ``G = Q R`` by mpmath's Householder QR; the eigenvalues are those of the
    Hermitian ``R J R^*`` (mpmath's ``eigsy``/``eighe``), at adaptive precision.
    """
    G = np.asarray(G)
    s = np.asarray(signs)
    n = G.shape[1]
    complex_ = np.iscomplexobj(G)

    def compute():
        _, R = mpmath.qr(_to_mp_rectangular(G), mode="skinny")
        H = mpmath.matrix(n, n)
        for i in range(n):
            for j in range(i, n):
                acc = mpmath.mpf(0)
                for k in range(max(i, j), n):
                    term = R[i, k] * (mpmath.conj(R[j, k]) if complex_ else R[j, k])
                    acc = acc + term if s[k] > 0 else acc - term
                H[i, j] = mpmath.re(acc) if i == j else acc
                H[j, i] = mpmath.conj(H[i, j]) if complex_ else H[i, j]
        E = (mpmath.eighe if complex_ else mpmath.eigsy)(H, eigvals_only=True)
        return sorted((mpmath.re(E[k]) for k in range(n)), key=abs, reverse=True)

    return _adaptive(compute, digits=digits)


def determined(
    reference, A: np.ndarray, rng: np.random.Generator, *, relative: float = 1e-15,
    trials: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """``(values, spread)``: ``reference(A)`` and, per value, the largest relative
    change of ``reference`` over `trials` copies of `A` with every entry
    multiplied by ``1 + relative * u`` (``|u| <= 1``, a random phase for complex
    data).

    ``spread`` is what the data determine: an algorithm whose backward error is
    componentwise of order eps cannot be held to less.  Perturbed values are
    matched to the unperturbed ones by position (both sorted alike).
    """
    values = reference(A)
    spread = np.zeros_like(values)
    for _ in range(trials):
        u = rng.uniform(-1.0, 1.0, A.shape)
        if np.iscomplexobj(A):
            u = u * np.exp(2j * np.pi * rng.uniform(size=A.shape))
        changed = reference(A * (1 + relative * u))
        spread = np.maximum(spread, np.abs(changed - values) / np.abs(values))
    return values, spread


def _to_mp_matrix(M: np.ndarray) -> tuple[mpmath.matrix, bool]:
    M = np.asarray(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    if M.dtype.kind in "biu":
        M = M.astype(np.float64)
    if M.dtype.kind not in "fc":
        raise ValueError(f"M must be real or complex floating, got {M.dtype}")
    n = M.shape[0]
    cplx = M.dtype.kind == "c"
    A = mpmath.matrix(n, n)
    # Use the upper triangle only, mirrored, so A is exactly symmetric/Hermitian.
    for i in range(n):
        for j in range(i, n):
            if cplx:
                z = mpmath.mpc(_to_mpf(M[i, j].real), _to_mpf(M[i, j].imag))
                if i == j:
                    A[i, i] = mpmath.mpc(z.real, 0)
                else:
                    A[i, j] = z
                    A[j, i] = mpmath.conj(z)
            else:
                a = _to_mpf(M[i, j])
                A[i, j] = a
                A[j, i] = a
    return A, cplx


def _eig_mp(A: mpmath.matrix, cplx: bool) -> np.ndarray:
    if A.rows == 0:
        return np.zeros(0)
    if cplx:
        E = mpmath.eighe(A, eigvals_only=True)
    else:
        E = mpmath.eigsy(A, eigvals_only=True)
    w = np.array([float(mpmath.re(E[k])) for k in range(A.rows)], dtype=np.float64)
    return np.sort(w)


def eigvalsh_hiprec(M: np.ndarray, dps: int = 50) -> np.ndarray:
    """Eigenvalues of a real symmetric / complex Hermitian matrix, high precision.

    Parameters
    ----------
    M : ndarray, shape (n, n)
        Real symmetric or complex Hermitian.  Only the upper triangle is read
        (and the real part of the diagonal).
    dps : int
        Decimal digits of the mpmath working precision.

    Returns
    -------
    ndarray, shape (n,), float64
        Eigenvalues, ascending, each rounded once to float64.
    """
    with mpmath.workdps(dps):
        A, cplx = _to_mp_matrix(M)
        return _eig_mp(A, cplx)


def eigvals_factor_hiprec(G: np.ndarray, signs: np.ndarray, dps: int = 50) -> np.ndarray:
    """Eigenvalues of ``G J G^*`` formed exactly, in high precision.

    ``G J G^*`` is formed at ``dps`` digits (exactly, when ``dps`` is large
    enough for the products and sums; 50 digits cover every float64 ``G`` of
    moderate dynamic range), then handled like :func:`eigvalsh_hiprec`.  Use
    it to measure the error of an algorithm that works on the factor,
    without the rounding of forming ``M`` in floating point.
    """
    G = np.asarray(G)
    s = np.asarray(signs)
    m, r = G.shape
    cplx = G.dtype.kind == "c"
    with mpmath.workdps(dps):
        if cplx:
            Gm = mpmath.matrix(
                [[mpmath.mpc(_to_mpf(G[i, k].real), _to_mpf(G[i, k].imag)) for k in range(r)]
                 for i in range(m)]
            ) if m and r else mpmath.matrix(m, r)
        else:
            Gm = mpmath.matrix([[_to_mpf(G[i, k]) for k in range(r)] for i in range(m)]) \
                if m and r else mpmath.matrix(m, r)
        A = mpmath.matrix(m, m)
        for i in range(m):
            for j in range(i, m):
                acc = mpmath.mpf(0) if not cplx else mpmath.mpc(0)
                for k in range(r):
                    term = Gm[i, k] * (mpmath.conj(Gm[j, k]) if cplx else Gm[j, k])
                    acc = acc + term if s[k] > 0 else acc - term
                if i == j:
                    A[i, i] = mpmath.re(acc) if cplx else acc
                else:
                    A[i, j] = acc
                    A[j, i] = mpmath.conj(acc) if cplx else acc
        return _eig_mp(A, cplx)


def eigvalsh_pencil_hiprec(M: np.ndarray, B: np.ndarray, dps: int = 50) -> np.ndarray:
    """Eigenvalues of ``M x = lambda B x`` (B Hermitian positive definite), high precision.

    ``B = L L^*`` by mpmath's Cholesky, then the eigenvalues of ``L^{-1} M
    L^{-*}``, all at ``dps`` digits; each rounded once to float64, ascending.
    """
    with mpmath.workdps(dps):
        A, cplx = _to_mp_matrix(M)
        C, cplx_b = _to_mp_matrix(B)
        L = mpmath.cholesky(C)
        L_inverse = mpmath.inverse(L)
        H = L_inverse * A * L_inverse.transpose_conj()
        n = H.rows
        for i in range(n):  # exactly Hermitian again after the rounding of the products
            for j in range(i + 1, n):
                H[j, i] = mpmath.conj(H[i, j])
            H[i, i] = mpmath.re(H[i, i])
        return _eig_mp(H, cplx or cplx_b)
