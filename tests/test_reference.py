"""Tests of the sequential reference (cljacobi.reference) and the generators.

Factors are built directly (``M = X J X^*`` from a known ``X``), so these
tests do not depend on the J-factorization module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cljacobi import matrices
from cljacobi.reference import (
    PairKind,
    ReferenceResult,
    eig_from_factor,
    hyperbolic_jacobi,
    pair_rotation,
    rotation,
)

try:  # tests/ on sys.path (pytest's default rootdir-less "prepend" import mode)
    from hiprec import eigvals_factor_hiprec, eigvalsh_hiprec
except ImportError:  # tests/ is a package
    from tests.hiprec import eigvals_factor_hiprec, eigvalsh_hiprec

EPS = np.finfo(np.float64).eps
SIZES = [1, 2, 3, 5, 31, 32, 33]


def _cases(sizes):
    out = []
    for n in sizes:
        for p in sorted({0, n, n // 2, 1}):
            if p <= n:
                out.append((n, p))
    return out


def _unitary(n, rng, cplx):
    Z = rng.standard_normal((n, n))
    if cplx:
        Z = Z + 1j * rng.standard_normal((n, n))
    Q, R = np.linalg.qr(Z)
    return Q


def _factor(n, p, rng, cplx=False):
    """Well-conditioned X (singular values in [1, 2]) and shuffled signs, p of them +1."""
    X = (_unitary(n, rng, cplx) * rng.uniform(1.0, 2.0, n)) @ _unitary(n, rng, cplx).conj().T
    s = np.array([1] * p + [-1] * (n - p), dtype=np.int64)
    rng.shuffle(s)  # interleaved signs: pair orientation (i < j) matters
    return X, s


def _form(X, s):
    return (X * s[None, :]) @ X.conj().T


def _relerr(w, w0):
    return float(np.max(np.abs(w - w0) / np.abs(w0))) if len(w0) else 0.0


# --------------------------------------------------------------------------
# rotation()
# --------------------------------------------------------------------------


def _apply(gi, gj, t, c, hyp):
    if hyp:
        return c * (gi + t * gj), c * (gj + t * gi)
    return c * (gi - t * gj), c * (gj + t * gi)


@pytest.mark.parametrize("hyp", [False, True])
def test_rotation_annihilates_random_pairs(hyp):
    rng = np.random.default_rng(11 + hyp)
    rotated = 0
    for _ in range(300):
        m = int(rng.integers(2, 6))
        gi = rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 3)
        gj = rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 3)
        if rng.random() < 0.3:  # nearly parallel columns
            gj = gi * rng.uniform(0.2, 5) + 1e-3 * rng.standard_normal(m) * np.linalg.norm(gi)
        a_ii, a_jj, a_ij = gi @ gi, gj @ gj, gi @ gj
        kind, t, c = pair_rotation(a_ii, a_jj, a_ij, hyp)
        res = rotation(a_ii, a_jj, a_ij, hyp)
        if kind != PairKind.ROTATE:
            assert res is None
            assert kind == PairKind.BREAKDOWN or abs(a_ij) < EPS * math.sqrt(a_ii * a_jj)
            continue
        rotated += 1
        assert res == (t, c)
        assert np.isfinite(t) and np.isfinite(c)
        if hyp:
            assert abs(t) < 1
            assert c >= 1 and abs(c * c * (1 - t) * (1 + t) - 1) < 8 * EPS
        else:
            assert abs(t) <= 1
            assert 0 < c <= 1 and abs(c * c * (1 + t * t) - 1) < 8 * EPS
        # exact-arithmetic annihilation (defining equation of t)
        if hyp:
            resid = (1 + t * t) * a_ij + t * (a_ii + a_jj)
            scale = (1 + t * t) * abs(a_ij) + abs(t) * (a_ii + a_jj)
        else:
            resid = (1 - t * t) * a_ij - t * (a_jj - a_ii)
            scale = (1 + t * t) * abs(a_ij) + abs(t) * (a_jj + a_ii)
        assert abs(resid) <= 16 * EPS * scale
        # apply to the columns: a_ij' = 0 relative to the new norms, and (2.6)
        gi2, gj2 = _apply(gi, gj, t, c, hyp)
        n_i, n_j = np.linalg.norm(gi2), np.linalg.norm(gj2)
        # computed columns carry errors ~ eps*c*(|g_i| + |t||g_j|)
        err_i = c * (np.linalg.norm(gi) + abs(t) * np.linalg.norm(gj))
        err_j = c * (np.linalg.norm(gj) + abs(t) * np.linalg.norm(gi))
        assert abs(gi2 @ gj2) <= 32 * EPS * (err_i * n_j + err_j * n_i)
        pred_i = a_ii + t * a_ij if hyp else a_ii - t * a_ij
        pred_j = a_jj + t * a_ij
        assert abs(n_i**2 - pred_i) <= 32 * EPS * err_i**2
        assert abs(n_j**2 - pred_j) <= 32 * EPS * err_j**2
    assert rotated > 200


@pytest.mark.parametrize("hyp", [False, True])
def test_rotation_none_for_orthogonal(hyp):
    e = np.eye(3)
    gi, gj = 3.0 * e[0], 5.0 * e[1]
    assert rotation(gi @ gi, gj @ gj, gi @ gj, hyp) is None
    # below the eq. (2.3) threshold eps*sqrt(a_ii)*sqrt(a_jj) ...
    a_ii, a_jj = 4.0, 9.0
    assert rotation(a_ii, a_jj, 0.9 * EPS * 6.0, hyp) is None
    assert rotation(a_ii, a_jj, -0.9 * EPS * 6.0, hyp) is None
    # ... and just above it a (tiny) rotation
    r = rotation(a_ii, a_jj, 1.1 * EPS * 6.0, hyp)
    assert r is not None and abs(r[0]) < 1e-14
    # zero column
    assert rotation(0.0, 1.0, 0.0, hyp) is None
    assert pair_rotation(0.0, 0.0, 0.0, hyp)[0] == PairKind.ORTHOGONAL


def test_rotation_breakdown_and_special_cases():
    # hyperbolic, identical columns: kappa = -1, numerically dependent
    kind, t, c = pair_rotation(1.0, 1.0, 1.0, True)
    assert kind == PairKind.BREAKDOWN and (t, c) == (0.0, 1.0)
    assert rotation(1.0, 1.0, 1.0, True) is None
    assert pair_rotation(1.0, 1.0, -1.0 + 1e-17, True)[0] == PairKind.BREAKDOWN
    # trigonometric, equal norms: kappa = +-0 -> t = +-1 (45 degrees)
    t, c = rotation(2.0, 2.0, 0.5, False)
    assert t == 1.0 and c == pytest.approx(math.sqrt(0.5), rel=1e-16)
    t, c = rotation(2.0, 2.0, -0.5, False)
    assert t == -1.0
    # huge |kappa|: t = 1/(2 kappa), c = 1, no overflow
    for hyp in (False, True):
        t, c = rotation(1.0, 1e20, 1.0, hyp)
        kappa = -(1.0 + 1e20) / 2.0 if hyp else (1e20 - 1.0) / 2.0
        assert t == 1.0 / (2.0 * kappa) and c == 1.0
        # kappa overflows to inf; t = 1/(2 kappa) is still computed (as
        # a_ij / (a_jj - a_ii)), not flushed to 0, which left the pair unrotated.
        t, c = rotation(1e-300, 1e300, 1e-10, hyp)
        assert t == (-1e-10 / (1e-300 + 1e300) if hyp else 1e-10 / (1e300 - 1e-300))
        assert t != 0.0 and c == 1.0
    # the sign of t follows a_ij (real case == complex rule with phase +-1)
    t1, _ = rotation(1.0, 3.0, 0.7, False)
    t2, _ = rotation(1.0, 3.0, -0.7, False)
    assert t1 == -t2
    t1, _ = rotation(1.0, 3.0, 0.7, True)
    t2, _ = rotation(1.0, 3.0, -0.7, True)
    assert t1 == -t2 and t1 < 0


# --------------------------------------------------------------------------
# hyperbolic_jacobi / eig_from_factor on well-conditioned factors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n,p", _cases(SIZES))
def test_eig_from_factor_real(n, p):
    rng = np.random.default_rng(1000 * n + p)
    X, s = _factor(n, p, rng)
    M = _form(X, s)
    w, U = eig_from_factor(X, s)
    assert w.shape == (n,) and U.shape == (n, n)
    assert np.all(np.diff(w) >= 0)
    assert np.sum(w > 0) == p  # inertia
    w0 = np.linalg.eigvalsh(M)
    # cond(M) <= 4: both solvers are relatively accurate to O(n eps)
    assert _relerr(w, w0) <= 20 * n * EPS
    nM = np.linalg.norm(M)
    assert np.linalg.norm(M @ U - U * w[None, :]) <= 10 * n * EPS * nM
    assert np.linalg.norm(np.eye(n) - U.T @ U) <= 10 * n * EPS


@pytest.mark.parametrize("n,p", _cases([1, 2, 5, 32]))
def test_eig_from_factor_complex(n, p):
    rng = np.random.default_rng(2000 * n + p)
    X, s = _factor(n, p, rng, cplx=True)
    M = _form(X, s)
    w, U = eig_from_factor(X, s)
    assert U.dtype == np.complex128 and w.dtype == np.float64
    w0 = np.linalg.eigvalsh(M)
    assert _relerr(w, w0) <= 20 * n * EPS
    nM = np.linalg.norm(M)
    assert np.linalg.norm(M @ U - U * w[None, :]) <= 10 * n * EPS * nM
    assert np.linalg.norm(np.eye(n) - U.conj().T @ U) <= 10 * n * EPS


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("n,p", _cases([2, 3, 5, 32, 33]))
def test_transformation_properties(n, p, cplx):
    rng = np.random.default_rng(3000 * n + p + 7 * cplx)
    X, s = _factor(n, p, rng, cplx=cplx)
    res = hyperbolic_jacobi(X, s)
    assert isinstance(res, ReferenceResult)
    assert res.converged and res.breakdowns == 0 and res.rotations > 0
    assert 1 <= res.sweeps <= 20
    V = res.V
    # G_final = G0 V to rounding
    assert np.linalg.norm(res.G - X @ V) <= 10 * n * EPS * np.linalg.norm(X) * np.linalg.norm(V)
    # V^* J V = J (V is J-unitary), relative to ||V||^2
    J = np.diag(s.astype(float))
    assert np.linalg.norm(V.conj().T @ J @ V - J) <= 10 * n * EPS * np.linalg.norm(V, 2) ** 2
    if p in (0, n):  # definite: only trigonometric rotations, V unitary
        assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= 10 * n * EPS
    # final columns relatively orthogonal; d holds their squared norms
    nrm = np.linalg.norm(res.G, axis=0)
    C = np.abs(res.G.conj().T @ res.G) / np.outer(nrm, nrm)
    np.fill_diagonal(C, 0)
    assert C.max() <= 4 * n * EPS
    assert np.max(np.abs(res.d - nrm**2) / nrm**2) <= 4 * n * EPS
    # accumulating V does not change the G computation (bitwise)
    res2 = hyperbolic_jacobi(X, s, accumulate_v=False)
    assert res2.V is None
    assert np.array_equal(res2.G, res.G) and np.array_equal(res2.d, res.d)
    assert (res2.sweeps, res2.rotations) == (res.sweeps, res.rotations)
    # input untouched
    assert not np.shares_memory(res.G, X)


def test_trivial_sizes():
    res = hyperbolic_jacobi(np.array([[3.0]]), np.array([-1]))
    assert res.sweeps == 0 and res.rotations == 0 and res.converged
    assert res.d.tolist() == [9.0] and res.V.tolist() == [[1.0]]
    w, U = eig_from_factor(np.array([[3.0]]), np.array([-1]))
    assert w.tolist() == [-9.0] and U.tolist() == [[1.0]]
    w, U = eig_from_factor(np.zeros((0, 0)), np.zeros(0, int))
    assert w.shape == (0,) and U.shape == (0, 0)
    # tall factor: r eigenvalues of the m x m M (the other m - r are zero)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((7, 4))
    s = np.array([1, -1, 1, -1])
    w, U = eig_from_factor(X, s)
    w0 = np.linalg.eigvalsh(_form(X, s))
    w0 = np.sort(w0[np.argsort(np.abs(w0))[3:]])
    assert _relerr(w, w0) < 1e-13 and U.shape == (7, 4)


def test_bad_input():
    with pytest.raises(ValueError):
        hyperbolic_jacobi(np.ones((3, 3)), np.array([1, -1]))
    with pytest.raises(ValueError):
        hyperbolic_jacobi(np.ones((3, 2)), np.array([1, 0]))
    with pytest.raises(ValueError):
        hyperbolic_jacobi(np.array([[1.0, np.nan]]), np.array([1, 1]))


def test_breakdown_dependent_columns():
    g = np.array([1.0, 2.0, -1.0])
    G = np.stack([g, g], axis=1)  # M = g g^T - g g^T = 0
    res = hyperbolic_jacobi(G, np.array([1, -1]))
    assert res.breakdowns == 1 and res.rotations == 0
    assert res.sweeps == 1 and res.converged
    assert np.array_equal(res.G, G) and np.all(np.isfinite(res.V))
    # same columns with equal signs: a 45-degree rotation makes one zero
    res = hyperbolic_jacobi(G, np.array([1, 1]))
    assert res.breakdowns == 0 and np.all(np.isfinite(res.G))
    w, U = eig_from_factor(G, np.array([1, 1]))
    assert w[0] <= 1e-15 and w[1] == pytest.approx(12.0, rel=1e-15)
    # a zero column never rotates and gives eigenvalue 0 with a zero vector
    G0 = np.stack([g, np.zeros(3)], axis=1)
    w, U = eig_from_factor(G0, np.array([-1, 1]))
    assert w.tolist() == [-6.0, 0.0] and np.all(U[:, 1] == 0)


def test_nonconvergence_warns():
    rng = np.random.default_rng(8)
    X, s = _factor(12, 6, rng)
    with pytest.warns(RuntimeWarning, match="no convergence"):
        res = hyperbolic_jacobi(X, s, max_sweeps=2)
    assert not res.converged and res.sweeps == 2


def test_complex_phase_handling():
    """Column and row phases do not change the spectrum of G J G^*."""
    rng = np.random.default_rng(9)
    n = 17
    X, s = _factor(n, 8, rng)
    w_real, _ = eig_from_factor(X, s)
    # real data stored as complex: same eigenvalues
    w_c, U_c = eig_from_factor(X.astype(complex), s)
    assert _relerr(w_c, w_real) <= 4 * n * EPS
    # G diag(e^{i theta}) has the same G J G^*; diag(e^{i phi}) G a unitarily similar one
    col = np.exp(1j * rng.uniform(0, 2 * np.pi, n))
    row = np.exp(1j * rng.uniform(0, 2 * np.pi, n))
    Y = row[:, None] * X * col[None, :]
    w_y, U_y = eig_from_factor(Y, s)
    assert _relerr(w_y, w_real) <= 20 * n * EPS
    My = _form(Y, s)
    assert np.linalg.norm(My @ U_y - U_y * w_y) <= 10 * n * EPS * np.linalg.norm(My)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_single_precision(dtype):
    rng = np.random.default_rng(10)
    n = 9
    X, s = _factor(n, 4, rng, cplx=np.dtype(dtype).kind == "c")
    res = hyperbolic_jacobi(X.astype(dtype), s)
    assert res.G.dtype == dtype and res.d.dtype == np.float32 and res.converged
    w, _ = eig_from_factor(X.astype(dtype), s)
    w0 = np.linalg.eigvalsh(_form(X, s))
    eps32 = np.finfo(np.float32).eps
    assert 100 * EPS < _relerr(w, w0) <= 20 * n * eps32


# --------------------------------------------------------------------------
# high relative accuracy
# --------------------------------------------------------------------------


def _jorthogonal_mix(s, rng, rounds=2, max_angle=0.3):
    """Random J-unitary W: rounds of random trig/hyperbolic plane rotations."""
    n = len(s)
    W = np.eye(n)
    for _ in range(rounds):
        for i in range(n - 1):
            for j in range(i + 1, n):
                phi = rng.uniform(-max_angle, max_angle)
                if s[i] == s[j]:
                    c, sn = math.cos(phi), math.sin(phi)
                    R = np.array([[c, sn], [-sn, c]])
                else:
                    c, sn = math.cosh(phi), math.sinh(phi)
                    R = np.array([[c, sn], [sn, c]])
                W[:, [i, j]] = W[:, [i, j]] @ R
    return W


@pytest.mark.parametrize("n,p", [(16, 8), (31, 15), (32, 1)])
def test_prescribed_paper_spectrum(n, p):
    """G = diag(sqrt|lam|) W with J-unitary W: G J G^T = diag(lam) exactly
    (in exact arithmetic); the Jacobi eigenvalues match the prescribed ones to
    high relative accuracy although they span 5 orders of magnitude."""
    rng = np.random.default_rng(40 + n)
    lam = matrices.paper_spectrum(n, p=p, rng=rng)
    s = np.where(lam > 0, 1, -1)
    W = _jorthogonal_mix(s, rng)
    G = np.sqrt(np.abs(lam))[:, None] * W
    w, _ = eig_from_factor(G, s)
    # ||W|| ||W^{-1}|| = ||W||^2 for J-unitary W; the rounding of G = S W alone
    # perturbs the eigenvalues relatively by ~ eps * kappa_w
    kappa_w = np.linalg.norm(W, 2) ** 2
    assert kappa_w < 100
    assert _relerr(w, lam) <= 20 * n * EPS * kappa_w
    assert _relerr(w, lam) <= 1e-12


@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("n,p", [(16, 8), (24, 1), (32, 16), (32, 0)])
def test_graded_relative_accuracy(n, p, cplx):
    rng = np.random.default_rng(500 + n + p + cplx)
    M, A, D = matrices.graded(n, p=p, rng=rng, dtype=np.complex128 if cplx else np.float64)
    # factor of the well-conditioned core from its (accurate) eigendecomposition
    lamA, Q = np.linalg.eigh(A)
    X = Q * np.sqrt(np.abs(lamA))[None, :]
    s = np.where(lamA > 0, 1, -1)
    G = np.diag(D)[:, None] * X  # row-graded factor: G J G^* = D A D + D O(eps) D
    ref = eigvalsh_hiprec(M)
    assert np.abs(ref).min() < 1e-15 * np.abs(ref).max()  # really graded
    w, _ = eig_from_factor(G, s)
    assert _relerr(w, ref) <= 1e-12
    # LAPACK (backward stable, not relatively accurate) is far off on the same M
    assert _relerr(np.linalg.eigvalsh(M), ref) > 1e-10
    if n == 16:  # the Jacobi error itself, against the exact G J G^*
        assert _relerr(w, eigvals_factor_hiprec(G, s)) <= 1e-12


# --------------------------------------------------------------------------
# generators and the high-precision helper
# --------------------------------------------------------------------------


def test_paper_spectrum():
    rng = np.random.default_rng(1)
    lam = matrices.paper_spectrum(1000, p=300, rng=rng)
    assert lam.shape == (1000,) and np.all(np.diff(lam) >= 0)
    assert np.sum(lam > 0) == 300
    assert np.all((np.abs(lam) >= 20e-5) & (np.abs(lam) <= 20))
    assert matrices.paper_spectrum(10, rng=rng).tolist().count(0) == 0
    assert np.sum(matrices.paper_spectrum(11, rng=rng) > 0) == 5
    assert [matrices.paper_a(k) for k in (160, 3168, 3169, 6368, 9568, 9569)] == [
        20, 20, 30, 30, 40, 50]
    lam = matrices.paper_spectrum(8, a=1.0, p=8, rng=rng)
    assert np.all((lam >= 1e-5) & (lam <= 1.0))


@pytest.mark.parametrize("extended", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_with_spectrum(dtype, extended):
    rng = np.random.default_rng(2)
    n = 24
    lam = matrices.paper_spectrum(n, rng=rng)
    M = matrices.with_spectrum(lam, rng=rng, dtype=dtype, extended=extended)
    assert M.dtype == dtype and np.array_equal(M, M.conj().T)
    w = eigvalsh_hiprec(M)
    # rounding M once perturbs the eigenvalues by O(eps ||M||) (absolute)
    bound = (2 if extended else 2 * n) * EPS * np.abs(lam).max()
    assert np.max(np.abs(w - lam)) <= bound
    # not nearly diagonal: Q is a full random orthogonal matrix
    assert np.linalg.norm(M - np.diag(np.diag(M))) > 0.5 * np.linalg.norm(M)


def test_graded_structure():
    rng = np.random.default_rng(3)
    M, A, D = matrices.graded(20, p=7, low_exponent=-40, rng=rng)
    d = np.diag(D)
    assert np.array_equal(D, np.diag(d))
    k = np.log2(d)
    assert np.array_equal(k, np.round(k)) and k.min() == -40 and k.max() == 0
    assert np.array_equal(M, d[:, None] * A * d[None, :])
    assert np.array_equal(A, A.T)
    wa = np.linalg.eigvalsh(A)
    assert np.sum(wa > 0) == 7 and np.all((np.abs(wa) > 1 - 1e-12) & (np.abs(wa) < 10 + 1e-12))


def test_hiprec_helper():
    rng = np.random.default_rng(4)
    B = rng.standard_normal((12, 12))
    M = B + B.T
    assert np.allclose(eigvalsh_hiprec(M), np.linalg.eigvalsh(M), rtol=0, atol=1e-13)
    Dg = np.diag([3.0, -1e-300, 2.0 ** -1000])
    assert eigvalsh_hiprec(Dg).tolist() == [-1e-300, 2.0 ** -1000, 3.0]
    Z = B + 1j * rng.standard_normal((12, 12))
    H = Z + Z.conj().T
    assert np.allclose(eigvalsh_hiprec(H), np.linalg.eigvalsh(H), rtol=0, atol=1e-13)
    X, s = _factor(6, 3, rng)
    assert np.allclose(eigvals_factor_hiprec(X, s), eigvalsh_hiprec(_form(X, s)), rtol=1e-14)
