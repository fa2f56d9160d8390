"""Tests of the numpy reference of the implicit Hari–Zimmermann GSVD.

Sections refer to V. Novaković and S. Singer, "Implicit Hari-Zimmermann
algorithm for the generalized SVD on the GPUs" ([NS]).
"""

from __future__ import annotations

import cmath
import math
from fractions import Fraction

import gsvd4py
import mpmath
import numpy as np
import pytest

from cljacobi import hz_reference as hz

EPS = float(np.finfo(np.float64).eps)
DTYPES = [np.float64, np.complex128]

#: Table 1 of [NS]: variant ID -> options of the drivers.
VARIANTS = {
    variant: dict(
        criterion="C2" if variant & 4 else "C1",
        prescale=not variant & 2,
        dot="enhanced" if variant & 1 else "ordinary",
    )
    for variant in range(8)
}


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


def random_matrix(rng, shape, dtype):
    M = rng.standard_normal(shape)
    if dtype == np.complex128:
        M = M + 1j * rng.standard_normal(shape)
    return M


def haar_columns(rng, m, n, dtype):
    """``m x n`` with orthonormal columns, Haar distributed (QR with fixed phases)."""
    Q, R = np.linalg.qr(random_matrix(rng, (m, n), dtype))
    return Q * (np.diag(R) / np.abs(np.diag(R)))


def uniform_above(rng, size, low=1e-10):
    """Uniform on (0, 1), values not above ``low`` redrawn ([NS], Sect. 5.1.2)."""
    x = rng.uniform(0.0, 1.0, size)
    while (bad := x <= low).any():
        x[bad] = rng.uniform(0.0, 1.0, bad.sum())
    return x


def sect512_pair(rng, m, p, n, dtype):
    """``F = U Sigma_F X``, ``G = V Sigma_G X`` as in [NS], Sect. 5.1.2.

    ``U``, ``V`` with random orthonormal columns, diagonals of ``Sigma_F``,
    ``Sigma_G`` and of ``Lambda_X`` uniform on ``(1e-10, 1)``, and ``X`` the
    Hermitian positive definite matrix with eigenvalues ``Lambda_X`` and
    random eigenvectors (the role of xLAGSY).
    """
    sigma_f, sigma_g, lambda_x = (uniform_above(rng, n) for _ in range(3))
    Q = haar_columns(rng, n, n, dtype)
    X = (Q * lambda_x) @ Q.conj().T
    F = (haar_columns(rng, m, n, dtype) * sigma_f) @ X
    G = (haar_columns(rng, p, n, dtype) * sigma_g) @ X
    return F, G


def kappa(Y):
    return np.linalg.cond(Y)


def kappa_scaled(Y):
    """Condition number of ``Y`` with unit columns (what relative accuracy depends on)."""
    return np.linalg.cond(Y / np.linalg.norm(Y, axis=0))


def gsv_mpmath(A, B, dps=50):
    """Generalized singular values of ``(A, B)`` at ``dps`` digits, descending.

    Square roots of the eigenvalues of ``(A^H A, B^H B)``, computed without
    forming the Gram matrices: ``B = Q R``, then the singular values of
    ``A R^{-1}``.  The float64 entries convert to mpmath exactly.
    """
    complex_ = np.iscomplexobj(A) or np.iscomplexobj(B)
    with mpmath.workdps(dps):
        def convert(M):
            entry = (lambda z: mpmath.mpc(z.real, z.imag)) if complex_ else mpmath.mpf
            return mpmath.matrix([[entry(z) for z in row] for row in M.tolist()])

        _, R = mpmath.qr(convert(B), mode="skinny")
        M = convert(A) * mpmath.inverse(R)
        values = (mpmath.svd_c if complex_ else mpmath.svd_r)(M, compute_uv=False)
        return np.sort(np.array([float(v) for v in values]))[::-1]


def gsv_lapack(A, B):
    _, _, C, S, _ = gsvd4py.gsvd(A, B, mode="econ")
    return np.diag(C) / np.diag(S)


def relative_error(x, reference):
    return float(np.max(np.abs(x - reference) / np.abs(reference)))


def assert_gsvd(A, B, result, tol_factor=1e2, u_rank=None):
    """The GSVD properties, to ``tol_factor * n * eps``.

    ``u_rank``: check only the first columns of ``U`` for orthonormality (the
    others belong to ``C_i`` that are zero to rounding, and are noise).
    """
    n = A.shape[1]
    tol = tol_factor * n * EPS
    U, V, C, S, X, Z = result.U, result.V, result.C, result.S, result.X, result.Z
    assert U.shape == (A.shape[0], n) and V.shape == (B.shape[0], n)
    assert X.shape == Z.shape == (n, n)
    XH = X.conj().T
    assert np.linalg.norm(A - (U * C) @ XH) / np.linalg.norm(A) < tol
    assert np.linalg.norm(B - (V * S) @ XH) / np.linalg.norm(B) < tol
    U = U[:, :u_rank]
    assert np.linalg.norm(U.conj().T @ U - np.eye(U.shape[1])) < tol
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) < tol
    assert np.all(C >= 0) and np.all(S >= 0)
    np.testing.assert_allclose(C**2 + S**2, 1.0, rtol=0, atol=4 * EPS)
    assert np.all(np.diff(C) <= 0), "C must be descending"
    # Z = X^{-H}, with X from the accumulated inverses ([NS], Sect. 1)
    assert np.linalg.norm(XH @ Z - np.eye(n)) < tol * kappa(Z)


# ---------------------------------------------------------------------------
# the 2 x 2 transformation ([NS], Sect. 2.1)
# ---------------------------------------------------------------------------


def pivots(A2, B2):
    """``hz_rotation`` arguments from ``2 x 2`` Gram matrices."""
    return A2[0, 0].real, A2[0, 1], A2[1, 1].real, B2[0, 0].real, B2[0, 1], B2[1, 1].real


def relative_offdiagonal(M):
    return abs(M[0, 1]) / math.sqrt(M[0, 0].real * M[1, 1].real)


def scalar(z, dtype):
    return complex(z) if dtype == np.complex128 else float(z)


@pytest.mark.parametrize("prescaled", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_pair_transformation_diagonalizes_both(dtype, prescaled, rng):
    for _ in range(200):
        F2, G2 = random_matrix(rng, (3, 2), dtype), random_matrix(rng, (3, 2), dtype)
        if prescaled:
            G2 = G2 / np.linalg.norm(G2, axis=0)
        A2, B2 = F2.conj().T @ F2, G2.conj().T @ G2
        if relative_offdiagonal(B2) > 0.9:  # keep B_k well conditioned: t_k >= 0.43
            continue
        T = hz.hz_rotation(*pivots(A2, B2), n=2, prescaled=prescaled)
        assert T.rotate and not T.exceptional
        assert T.Z.dtype == dtype
        A_new, B_new = T.Z.conj().T @ A2 @ T.Z, T.Z.conj().T @ B2 @ T.Z
        assert relative_offdiagonal(A_new) < 1e2 * EPS
        np.testing.assert_allclose(B_new, np.eye(2), rtol=0, atol=1e2 * EPS)


@pytest.mark.parametrize("prescaled", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_diagonal_pair_is_only_sorted(dtype, prescaled):
    # A_k = diag(1, 4), B_k = diag(b, b): relatively orthogonal, a'_ii < a'_jj
    b = 1.0 if prescaled else 4.0
    F = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], dtype=dtype)
    G = np.array([[0.0, 0.0], [0.0, 0.0], [2.0, 0.0], [0.0, 2.0]], dtype=dtype) * math.sqrt(b) / 2
    gram = hz.pivot_gram(F, G, 0, 1, prescaled=prescaled)
    T = hz.hz_rotation(*gram, n=2, prescaled=prescaled)
    assert not T.rotate and not T.big and not T.exceptional
    np.testing.assert_array_equal(T.Z, np.eye(2))
    F0, G0 = F.copy(), G.copy()
    Z, Zinv = np.eye(2, dtype=dtype), np.eye(2, dtype=dtype)
    outcome = hz.apply_pair(F, G, Z, 0, 1, T, Zinv=Zinv)
    assert outcome == hz.StepOutcome(rotated=False, big=False, swapped=True)  # Z_k := P_k
    np.testing.assert_array_equal(F, F0[:, ::-1])
    np.testing.assert_array_equal(G, G0[:, ::-1])
    np.testing.assert_array_equal(Z, np.eye(2)[:, ::-1])
    np.testing.assert_array_equal(Zinv, np.eye(2)[::-1])
    unsorted = hz.apply_pair(F0, G0, np.eye(2, dtype=dtype), 0, 1, T, sort=False)
    assert not unsorted.swapped


@pytest.mark.parametrize("zero", ["first", "second", "both"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_column_of_f_stays_exactly_zero(dtype, zero, rng):
    """A pair with a zero column of F: Z_k B-orthonormalizes the pair and keeps
    the zero column of F exactly zero (small when |b'_ij| is at rounding
    level); a zero a_ij with |b'_ij| below the threshold is relatively
    orthogonal."""
    F2, G2 = random_matrix(rng, (3, 2), dtype), random_matrix(rng, (3, 2), dtype)
    if zero in ("first", "both"):
        F2[:, 0] = 0
    if zero in ("second", "both"):
        F2[:, 1] = 0
    A2, B2 = F2.conj().T @ F2, G2.conj().T @ G2
    T = hz.hz_rotation(*pivots(A2, B2), n=2, prescaled=False)
    assert T.rotate and T.big and not T.exceptional
    F_new = F2 @ T.Z
    for column in {"first": [0], "second": [1], "both": [0, 1]}[zero]:
        assert np.all(F_new[:, column] == 0)
    A_new, B_new = T.Z.conj().T @ A2 @ T.Z, T.Z.conj().T @ B2 @ T.Z
    assert abs(A_new[0, 1]) <= 1e2 * EPS * np.abs(A2).max()
    np.testing.assert_allclose(B_new, np.eye(2), rtol=0, atol=1e2 * EPS)
    tiny = scalar(1e-17, dtype)
    assert hz.relatively_orthogonal(1.0, 0.0, 0.0, tiny, n=4)
    small = hz.hz_rotation(1.0, scalar(0, dtype), 0.0, 1.0, scalar(1e-9, dtype), 1.0, n=4,
                           prescaled=False)
    assert small.rotate and not small.big  # t = sqrt(1 - 1e-18) rounds to 1: C1 small


def test_relative_orthogonality_threshold():
    n = 16
    tol = EPS * math.sqrt(n)  # [NS], Sect. 2.1
    assert hz.relatively_orthogonal(4.0, 0.99 * tol * 2 * 3, 9.0, 0.99 * tol, n=n)
    assert not hz.relatively_orthogonal(4.0, 1.01 * tol * 2 * 3, 9.0, 0.5 * tol, n=n)
    assert not hz.relatively_orthogonal(4.0, 0.0, 9.0, 1.01 * tol, n=n)
    assert hz.relatively_orthogonal(0.0, 0.0, 9.0, 0.0, n=n)  # zero column of F


def test_complex_exception_is_the_papers_matrix():
    # [NS], Sect. 2.1.1: v_k = h_k = 0, i.e. arg(a'_ij) = arg(b'_ij) and a'_ii = a'_jj
    x, zeta = 0.3, 0.7
    b_ij, a_ij = cmath.rect(x, zeta), cmath.rect(0.5, zeta)
    T = hz.hz_rotation(2.0, a_ij, 2.0, 1.0, b_ij, 1.0, n=2)
    assert T.rotate and T.exceptional and T.big
    e = cmath.exp(1j * zeta)
    paper = np.array([[1 / math.sqrt(1 + x), -e / math.sqrt(1 - x)],
                      [e.conjugate() / math.sqrt(1 + x), 1 / math.sqrt(1 - x)]]) / math.sqrt(2)
    np.testing.assert_allclose(T.Z, paper, rtol=0, atol=2 * EPS)
    A2 = np.array([[2.0, a_ij], [a_ij.conjugate(), 2.0]])
    B2 = np.array([[1.0, b_ij], [b_ij.conjugate(), 1.0]])
    assert relative_offdiagonal(T.Z.conj().T @ A2 @ T.Z) < 10 * EPS
    np.testing.assert_allclose(T.Z.conj().T @ B2 @ T.Z, np.eye(2), atol=10 * EPS)


@pytest.mark.parametrize("x", [0.4, -0.4])
def test_real_exception_proportional_pair(x):
    # [NS], Sect. 2.1.2: cot(2 theta_k) = 0/0 when A'_k = a B'_k
    a = 3.0
    A2, B2 = a * np.array([[1.0, x], [x, 1.0]]), np.array([[1.0, x], [x, 1.0]])
    T = hz.hz_rotation(a, a * x, a, 1.0, x, 1.0, n=2)
    assert T.rotate and T.exceptional
    np.testing.assert_allclose(T.Z.T @ B2 @ T.Z, np.eye(2), atol=10 * EPS)
    np.testing.assert_allclose(T.Z.T @ A2 @ T.Z, a * np.eye(2), atol=10 * EPS)
    # the paper's matrix, with |x| and no sign, is right only for x >= 0 (a slip)
    r_plus, r_minus = 1 / math.sqrt(1 + abs(x)), 1 / math.sqrt(1 - abs(x))
    paper = np.array([[r_plus, -r_minus], [r_plus, r_minus]]) / math.sqrt(2)
    paper_is_right = np.allclose(paper.T @ B2 @ paper, np.eye(2), atol=10 * EPS)
    assert paper_is_right == (x > 0)


@pytest.mark.parametrize("v", [0.25, -0.25])
def test_complex_with_equal_diagonal_and_infinite_tan_gamma(v):
    # h_k = 0, v_k != 0: tan gamma_k = 2 v_k / h_k = +-inf; sin gamma_k must be sign(v_k)
    # (the paper's "sin theta = 1" would fail for v_k < 0)
    b_ij = cmath.rect(0.35, -1.1)
    a_ij = cmath.exp(1j * cmath.phase(b_ij)) * complex(0.6, v)
    A2 = np.array([[1.5, a_ij], [a_ij.conjugate(), 1.5]])
    B2 = np.array([[1.0, b_ij], [b_ij.conjugate(), 1.0]])
    T = hz.hz_rotation(*pivots(A2, B2), n=2)
    assert T.rotate and not T.exceptional
    assert relative_offdiagonal(T.Z.conj().T @ A2 @ T.Z) < 10 * EPS
    np.testing.assert_allclose(T.Z.conj().T @ B2 @ T.Z, np.eye(2), atol=10 * EPS)


def test_real_infinite_cotangent():
    # 2 a'_ij - (a'_ii + a'_jj) x_k = 0 exactly, h_k != 0: cot(2 theta_k) = inf, theta_k = 0
    a_ii, a_jj, x = 1.0, 3.0, 0.25
    a_ij = (a_ii + a_jj) * x / 2
    T = hz.hz_rotation(a_ii, a_ij, a_jj, 1.0, x, 1.0, n=2)
    assert T.rotate and not T.exceptional
    A2, B2 = np.array([[a_ii, a_ij], [a_ij, a_jj]]), np.array([[1.0, x], [x, 1.0]])
    assert relative_offdiagonal(T.Z.T @ A2 @ T.Z) < 10 * EPS
    np.testing.assert_allclose(T.Z.T @ B2 @ T.Z, np.eye(2), atol=10 * EPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_small_and_big_transformations(dtype):
    # [NS], Sect. 2.5: a transformation close to identity is small by C1 and C2
    tiny = scalar(1e-13 * (1 + 1j) if dtype == np.complex128 else 1e-13, dtype)
    args = (2.0, tiny, 1.0, 1.0, tiny, 1.0)
    for criterion, big in [("C1", False), ("C2", False), ("strict", True)]:
        T = hz.hz_rotation(*args, n=4, criterion=criterion)
        assert T.rotate and T.big == big
        assert T.Z[0, 0] == T.Z[1, 1] == 1.0  # diag(Z'_k) rounds to 1
    sizeable = hz.hz_rotation(2.0, scalar(0.5, dtype), 1.0, 1.0, scalar(0.3, dtype), 1.0, n=4)
    assert sizeable.rotate and sizeable.big


@pytest.mark.parametrize("prescaled", [True, False])
def test_pair_breakdown_when_b_not_positive_definite(prescaled):
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        hz.hz_rotation(2.0, 0.1, 1.0, 1.0, 1.0 + 4 * EPS, 1.0, n=2, prescaled=prescaled)


@pytest.mark.parametrize("prescaled", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_step_orthogonalizes_and_sorts(dtype, prescaled, rng):
    n = 5
    F, G = random_matrix(rng, (7, n), dtype), random_matrix(rng, (6, n), dtype)
    if prescaled:
        F, G, Z, Zinv = hz.prescale(F, G)
    else:
        Z, Zinv = np.eye(n, dtype=dtype), np.eye(n, dtype=dtype)
    F0, G0, Z0 = F.copy(), G.copy(), Z.copy()
    outcome = hz.hz_step(F, G, Z, 1, 3, Zinv=Zinv, prescaled=prescaled)
    assert outcome.rotated
    unchanged = [0, 2, 4]
    np.testing.assert_array_equal(F[:, unchanged], F0[:, unchanged])
    step = np.linalg.solve(Z0, Z)  # the embedded Z~_k
    np.testing.assert_allclose(F, F0 @ step, atol=1e2 * EPS * np.abs(F0).max())
    np.testing.assert_allclose(G, G0 @ step, atol=1e2 * EPS * np.abs(G0).max())
    np.testing.assert_allclose(Zinv @ Z, np.eye(n), atol=1e2 * EPS)
    a, b = np.linalg.norm(F[:, [1, 3]], axis=0) ** 2, np.linalg.norm(G[:, [1, 3]], axis=0) ** 2
    np.testing.assert_allclose(b, 1.0, rtol=1e2 * EPS)  # B_k+1 = I_2
    assert a[0] >= a[1]  # P_k: descending
    assert abs(np.vdot(F[:, 1], F[:, 3])) < 1e2 * EPS * math.sqrt(a[0] * a[1])
    assert abs(np.vdot(G[:, 1], G[:, 3])) < 1e2 * EPS


# ---------------------------------------------------------------------------
# the drivers and the extraction ([NS], Sect. 2.2, 2.4, 2.5)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("prescale", [True, False])
@pytest.mark.parametrize("ordering", hz.SEQUENTIAL_ORDERINGS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sequential_converges(dtype, ordering, prescale, rng):
    n = 12
    A, B = random_matrix(rng, (15, n), dtype), random_matrix(rng, (13, n), dtype)
    result = hz.gsvd_reference(A, B, ordering=ordering, prescale=prescale)
    assert 2 <= result.sweeps < 30
    assert_gsvd(A, B, result)


@pytest.mark.parametrize("n", [9, 12])
@pytest.mark.parametrize("strategy", ["me", "mm", "ring", "round-robin"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_parallel_converges(dtype, strategy, n, rng):
    A, B = random_matrix(rng, (n + 2, n), dtype), random_matrix(rng, (n, n), dtype)
    result = hz.gsvd_reference(A, B, parallel=True, strategy=strategy)
    assert 2 <= result.sweeps < 30
    assert_gsvd(A, B, result)
    sequential = hz.gsvd_reference(A, B)
    np.testing.assert_allclose(result.sigma, sequential.sigma, rtol=1e2 * n * EPS * kappa(B))


@pytest.mark.parametrize("dtype", DTYPES)
def test_agrees_with_ggsvd3(dtype, rng):
    n = 16
    F, G = sect512_pair(rng, 20, 18, n, dtype)
    reference = gsv_lapack(F, G)
    tol = n * EPS * max(kappa(F), kappa(G))
    for parallel in (False, True):
        result = hz.gsvd_reference(F, G, parallel=parallel)
        assert_gsvd(F, G, result)
        assert relative_error(result.sigma, reference) < tol


@pytest.mark.parametrize("dtype", DTYPES)
def test_agrees_with_mpmath(dtype, rng):
    n = 6
    F, G = sect512_pair(rng, n + 2, n + 1, n, dtype)
    reference = gsv_mpmath(F, G)
    tol = n * EPS * max(kappa_scaled(F), kappa_scaled(G))
    for prescale in (True, False):
        result = hz.gsvd_reference(F, G, prescale=prescale)
        assert relative_error(result.sigma, reference) < tol


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_variants_agree(dtype, variant, rng):
    # [NS], Table 1: prescaled or not, C1 or C2, ordinary or enhanced dot products
    n = 8
    F, G = sect512_pair(rng, n + 1, n, n, dtype)
    baseline = hz.gsvd_reference(F, G, **VARIANTS[0])
    result = hz.gsvd_reference(F, G, **VARIANTS[variant])
    assert_gsvd(F, G, result)
    tol = n * EPS * max(kappa_scaled(F), kappa_scaled(G))
    assert relative_error(result.sigma, baseline.sigma) < tol


@pytest.mark.parametrize("dtype", DTYPES)
def test_theta_rescaling_between_sweeps(dtype, rng):
    # [NS], Sect. 2.4, in the not-scaled version
    n = 8
    A, B = random_matrix(rng, (n, n), dtype), random_matrix(rng, (n, n), dtype)
    plain = hz.hz_gsvd_sequential(A, B, prescale=False)
    rescaled = hz.hz_gsvd_sequential(A, B, prescale=False, rescale_sweeps=True)
    assert rescaled.converged
    # Theta makes ||f_j||^2 + ||g_j||^2 = 1 before the last sweep, so the
    # columns of F_N and G_N are no longer than 1 (up to the last sweep's change)
    assert np.linalg.norm(rescaled.F, axis=0).max() < 1.5 < np.linalg.norm(plain.F, axis=0).max()
    result = hz.gsvd_from_hz(rescaled.F, rescaled.G, rescaled.Z, rescaled.Zinv)
    assert_gsvd(A, B, result)
    expected = hz.gsvd_from_hz(plain.F, plain.G, plain.Z, plain.Zinv)
    np.testing.assert_allclose(result.sigma, expected.sigma, rtol=1e2 * n * EPS * kappa(B))
    with pytest.raises(ValueError, match="prescale=False"):
        hz.hz_gsvd_sequential(A, B, rescale_sweeps=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_x_without_accumulated_inverse(dtype, rng):
    n = 7
    A, B = random_matrix(rng, (n, n), dtype), random_matrix(rng, (n + 1, n), dtype)
    run = hz.hz_gsvd_sequential(A, B)
    accumulated = hz.gsvd_from_hz(run.F, run.G, run.Z, run.Zinv)
    solved = hz.gsvd_from_hz(run.F, run.G, run.Z)
    assert_gsvd(A, B, solved)
    np.testing.assert_allclose(solved.X, accumulated.X, atol=1e2 * n * EPS * kappa(run.Z)
                               * np.abs(solved.X).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_shortening_gives_the_same_decomposition(dtype, rng):
    # [NS], Sect. 2: F'' = R_F P_2, G'' = R_G, Z = P'' Z''
    n = 6
    A, B = random_matrix(rng, (14, n), dtype), random_matrix(rng, (11, n), dtype)
    short = hz.gsvd_reference(A, B, shorten=True)
    assert_gsvd(A, B, short)
    plain = hz.gsvd_reference(A, B)
    np.testing.assert_allclose(short.sigma, plain.sigma, rtol=1e2 * n * EPS * kappa(B))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_generalized_singular_value(dtype, rng):
    n = 6
    A, B = random_matrix(rng, (n + 1, n), dtype), random_matrix(rng, (n, n), dtype)
    A[:, 2] = 0  # rank(A) = n - 1: one C_i = 0, to rounding
    result = hz.gsvd_reference(A, B)
    assert result.C[-1] < 1e2 * n * EPS * kappa(B) and result.S[-1] == pytest.approx(1.0)
    assert np.all(result.C[:-1] > 1e-3)
    assert_gsvd(A, B, result, u_rank=n - 1)  # U[:, -1] is noise: [NS] assume full rank


@pytest.mark.parametrize("dtype", DTYPES)
def test_exactly_zero_column_convention(dtype, rng):
    # a zero column of F_N: C_i = 0, S_i = 1, and U[:, i] completes U orthonormally
    n = 4
    F = (haar_columns(rng, n + 2, n, dtype) * [3.0, 0.0, 1.0, 0.5]).astype(dtype)
    G = haar_columns(rng, n, n, dtype) * [1.0, 2.0, 1.0, 0.5]
    Z = np.diag([1.0, 2.0, 3.0, 4.0]).astype(dtype)
    result = hz.gsvd_from_hz(F, G, Z)
    assert result.C[-1] == 0.0 and result.S[-1] == 1.0 and result.sigma[-1] == 0.0
    np.testing.assert_allclose(result.U.conj().T @ result.U, np.eye(n), atol=10 * EPS)
    np.testing.assert_allclose(result.C**2 + result.S**2, 1.0, atol=4 * EPS)
    XH = result.X.conj().T  # F_N = F Z_N for F := F_N Z_N^{-1}
    np.testing.assert_allclose((result.U * result.C) @ XH, F @ np.linalg.inv(Z), atol=10 * EPS)
    np.testing.assert_allclose((result.V * result.S) @ XH, G @ np.linalg.inv(Z), atol=10 * EPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_column_closed_form(dtype, rng):
    # [NS], Sect. 2, n = 1
    F, G = random_matrix(rng, (4, 1), dtype), random_matrix(rng, (3, 1), dtype)
    nf, ng = np.linalg.norm(F), np.linalg.norm(G)
    result = hz.gsvd_reference(F, G)
    np.testing.assert_allclose(result.C, [nf / math.hypot(nf, ng)], rtol=4 * EPS)
    np.testing.assert_allclose(result.S, [ng / math.hypot(nf, ng)], rtol=4 * EPS)
    np.testing.assert_allclose(result.Z, [[1 / math.hypot(nf, ng)]], rtol=4 * EPS)
    np.testing.assert_allclose(result.U, F / nf, rtol=4 * EPS)
    np.testing.assert_allclose(result.V, G / ng, rtol=4 * EPS)


@pytest.mark.parametrize("dtype", DTYPES)
def test_b_without_full_column_rank_raises(dtype, rng):
    n = 5
    A = random_matrix(rng, (n, n), dtype)
    dependent = random_matrix(rng, (n + 1, n), dtype)
    dependent[:, 4] = dependent[:, 0] - 2 * dependent[:, 1]
    zero_column = random_matrix(rng, (n, n), dtype)
    zero_column[:, 3] = 0
    low_rank = random_matrix(rng, (n, 2), dtype) @ random_matrix(rng, (2, n), dtype)
    for B in (dependent, zero_column, low_rank):
        with pytest.raises(np.linalg.LinAlgError, match="B"):
            hz.gsvd_reference(A, B)


def test_invalid_arguments(rng):
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    with pytest.raises(ValueError, match="min"):
        hz.gsvd_reference(rng.standard_normal((2, 3)), B)
    with pytest.raises(ValueError, match="criterion"):
        hz.hz_gsvd_sequential(A, B, criterion="C3")
    with pytest.raises(ValueError, match="strategy"):
        hz.hz_gsvd_parallel(A, B, strategy="diagonal")
    with pytest.raises(ValueError, match="ordering"):
        hz.hz_gsvd_sequential(A, B, ordering="random")


def test_no_convergence_warns(rng):
    A, B = rng.standard_normal((10, 10)), rng.standard_normal((10, 10))
    with pytest.warns(RuntimeWarning, match="no convergence in 1 sweeps"):
        run = hz.hz_gsvd_sequential(A, B, max_sweeps=1)
    assert not run.converged and run.sweeps == 1 and run.big_transformations > 0


# ---------------------------------------------------------------------------
# enhanced dot products ([NS], Appendix A)
# ---------------------------------------------------------------------------


def test_product_rounded_down_splits_exactly(rng):
    a = rng.standard_normal(500) * 10.0 ** rng.integers(-20, 20, 500)
    b = rng.standard_normal(500)
    c, d = hz._product_rounded_down(a, b)
    for ai, bi, ci, di in zip(a, b, c, d):
        exact = Fraction(ai) * Fraction(bi)
        assert Fraction(ci) <= exact and di >= 0  # c = MULrd(a, b), d >= 0
        assert abs(Fraction(ci) + Fraction(di) - exact) <= Fraction(EPS / 2) * Fraction(di)


@pytest.mark.parametrize("dtype", DTYPES)
def test_enhanced_dot_products_are_accurate(dtype, rng):
    x, y = random_matrix(rng, 200, dtype), random_matrix(rng, 200, dtype)
    norm = sum(Fraction(v.real) ** 2 + Fraction(v.imag) ** 2 for v in x.tolist())
    assert abs(Fraction(hz.enhanced_squared_norm(x)) - norm) <= 4 * EPS * norm
    if dtype == np.float64:
        products = [Fraction(p) * Fraction(q) for p, q in zip(x.tolist(), y.tolist())]
        exact, bound = sum(products), 4 * EPS * sum(abs(t) for t in products)
        assert abs(Fraction(hz.enhanced_dot(x, y)) - exact) <= bound
