"""Hard pairs of columns: dependent, nearly parallel, tiny, clustered; each family
against a 50-digit oracle (tests/hiprec.py).

* sparse rank-deficient ``svd`` / ``hsvd``: the remainders of dependent
  columns must be recognised (and zeroed) instead of being rotated sweep after
  sweep until they underflow;
* nearly parallel columns with opposite signs (``|t| -> 1`` of a hyperbolic
  rotation): computed from the columns, or ``LinAlgError`` where no hyperbolic
  rotation exists -- never a warning beside a wrong answer (one suite,
  ``_NearlyParallelColumns``, run by a subclass per variant);
* clusters of equal eigenvalues: sweeps of the default strategy;
* the accuracy of the full-block variant ``fb``.

Real and complex data are one test parametrized by ``dtype``.

"Determined by the data" is made explicit where the answer is ill-conditioned:
the oracle is evaluated again on the data perturbed componentwise by about
1e-15, and the difference is the part of the error the algorithm is not
asked to beat.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse
from hiprec import eigvals_factor_hiprec, eigvalsh_hiprec

import cljacobi
from cljacobi.host.blocked import BlockedHSVD
from cljacobi.matrices import paper_spectrum, with_spectrum

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]
VARIANTS = ["pointwise", "bo", "fb", "stream"]
#: Relative size of the componentwise perturbation that probes the data.
PROBE = 1e-15


def _blocks(variant: str, block_width: int) -> dict:
    """The keywords of `variant` with `block_width` where it has blocks."""
    if variant == "pointwise":
        return {"variant": variant}
    return {"variant": variant, "block_width": block_width}


def _probe(X: np.ndarray, seed: int) -> np.ndarray:
    """X with every entry moved by a random relative PROBE (zeros stay zero)."""
    rng = np.random.default_rng(seed)
    scale = 1 + PROBE * rng.uniform(-1, 1, X.shape)
    if np.iscomplexobj(X):
        scale = scale + 1j * PROBE * rng.uniform(-1, 1, X.shape)
    return X * scale


def _sparse(m: int, n: int, density: float, state: int, dtype=np.float64) -> np.ndarray:
    """scipy.sparse.random's pattern and values; complex: the values turned by random phases."""
    A = scipy.sparse.random(m, n, density=density, random_state=state).toarray()
    if dtype is np.complex128:
        phases = np.random.default_rng(state).uniform(0, 2 * np.pi, A.shape)
        A = A * np.exp(1j * phases)
    return A


def _singular_values_hiprec(A: np.ndarray) -> np.ndarray:
    """Singular values of A, descending, from the 50-digit eigenvalues of A^* A."""
    lam = eigvals_factor_hiprec(A.conj().T, np.ones(A.shape[0]))
    return np.sqrt(np.maximum(lam, 0))[::-1]


# ---------------------------------------------------------------------------
# 1. sparse rank-deficient svd and hsvd
# ---------------------------------------------------------------------------

#: random_state of scipy.sparse.random(40, 30, density=0.03) that did not
#: converge (ConvergenceError even with max_sweeps=1000), and two that did.
NONCONVERGING = [1, 10, 13, 15, 17, 19, 21, 35]
SPARSE_CASES = ([(40, 30, 0.03, s, np.float64) for s in NONCONVERGING + [0, 2]]
                + [(30, 30, 0.06, s, np.float64) for s in (3, 4)]
                + [(50, 24, 0.05, s, np.float64) for s in (5, 6)]
                + [(40, 30, 0.03, s, np.complex128) for s in (1, 10, 35)]
                + [(24, 24, 0.08, s, np.complex128) for s in (7, 8)])


def _check_svd_against_oracle(A, U, S, Vh, S_exact, *, zero_tol):
    """Factors of A, the nonzero singular values to relative accuracy, zeros as zeros."""
    m, n = A.shape
    k = min(m, n)
    tol = 50 * max(m, n) * EPS
    assert np.linalg.norm(U * S @ Vh - A) <= tol * np.linalg.norm(A)
    assert np.linalg.norm(U.conj().T @ U - np.eye(k)) <= tol
    assert np.linalg.norm(Vh @ Vh.conj().T - np.eye(k)) <= tol
    nonzero = S_exact > zero_tol
    # the rank is that of the data (rank deficiency here is structural, so the
    # exact zero singular values stay zero under componentwise perturbations)
    assert np.array_equal(S > zero_tol, nonzero)
    return np.abs(S[nonzero] - S_exact[nonzero]) / S_exact[nonzero]


@pytest.mark.parametrize("m,n,density,state,dtype", SPARSE_CASES)
def test_sparse_rank_deficient_svd(m, n, density, state, dtype):
    A = _sparse(m, n, density, state, dtype)
    (U, S, Vh), info = cljacobi.svd(A, return_info=True)
    assert info.converged and info.sweeps <= 12, info.rotations_per_sweep
    S_exact = _singular_values_hiprec(A)
    norm = np.linalg.norm(A, 2)
    relerr = _check_svd_against_oracle(A, U, S, Vh, S_exact, zero_tol=20 * n * EPS * norm)
    # The nonzero singular values are as accurate as the data determine them.
    S_probe = _singular_values_hiprec(_probe(A, state))[: len(relerr)]
    sensitivity = np.abs(S_probe - S_exact[: len(relerr)]) / S_exact[: len(relerr)] / PROBE
    assert np.all(relerr <= 20 * n * EPS * (1 + sensitivity)), (relerr / EPS, sensitivity)


@pytest.mark.parametrize("variant", ["bo", "fb", "stream"])
@pytest.mark.parametrize("state", [10, 13, 19, 35])
def test_sparse_rank_deficient_svd_blocked(variant, state):
    """The blocked kernels leave what the Gram matrices cannot resolve to the
    pointwise sweeps instead of rotating remainders on and on."""
    A = _sparse(40, 30, 0.03, state)
    (U, S, Vh), info = cljacobi.svd(A, **_blocks(variant, 4), return_info=True)
    assert info.converged and info.sweeps <= 16, info.rotations_per_sweep
    S_exact = _singular_values_hiprec(A)
    relerr = _check_svd_against_oracle(A, U, S, Vh, S_exact,
                                       zero_tol=600 * EPS * np.linalg.norm(A, 2))
    assert relerr.max() <= 1e-13


def test_sparse_family_converges():
    """All 40 random states of the report (8 of which did not converge), each in
    a few sweeps; the factors reproduce A."""
    for state in range(40):
        A = _sparse(40, 30, 0.03, state)
        (U, S, Vh), info = cljacobi.svd(A, return_info=True)
        assert info.converged and info.sweeps <= 10, (state, info.rotations_per_sweep)
        assert np.linalg.norm(U * S @ Vh - A) <= 1000 * EPS * np.linalg.norm(A)
        assert np.count_nonzero(S == 0) >= np.count_nonzero(~A.any(axis=0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("state", [1, 13, 21])
def test_sparse_rank_deficient_hsvd(state, dtype):
    """A rank-deficient sparse G: a LinAlgError that names the cause (never a
    ConvergenceError or a warning beside a result), or exactly
    rank-deficiency many singular values at the rounding level, and
    U diag(J S^2) U^* reproduces G J G^*."""
    G = _sparse(40, 30, 0.03, state, dtype)
    G = G[:, np.any(G != 0, axis=0)]  # hsvd refuses zero columns up front
    J = np.where(np.arange(G.shape[1]) % 3 == 0, -1, 1)
    rank = np.linalg.matrix_rank(G)
    assert rank < G.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            U, S, Vh, J_S = cljacobi.hsvd(G, J)
        except np.linalg.LinAlgError as caught:
            assert not isinstance(caught, cljacobi.ConvergenceError)
            # The remainder of a dependency within one sign, once rotated
            # against columns of the other sign, is not recognized as rounding
            # (pointwise.cl.mako, cjac_step) and may shrink until it underflows.
            assert ("opposite signs" in str(caught)
                    or "below the floating-point range" in str(caught)), caught
            return
    # hsvd cannot tell the remainder of a dependency from a column of a
    # row-graded G (pointwise.cl.mako, peak_rounding): what is left is zero or
    # at the rounding level of G.
    assert np.count_nonzero(S <= 30 * G.shape[0] * EPS * S.max()) == G.shape[1] - rank
    M = (G * J) @ G.conj().T
    assert np.linalg.norm((U * (J_S * S**2)) @ U.conj().T - M) <= 1e3 * EPS * np.linalg.norm(G) ** 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_full_rank_hsvd(seed, dtype):
    """Sparse G of full column rank with columns in few rows (dependent-looking
    pairs of one sign): J S^2 against the oracle's eigenvalues of G J G^*."""
    rng = np.random.default_rng(seed)
    m, n = 36, 18
    G = _sparse(m, n, 0.08, seed + 100, dtype)
    G[rng.permutation(m)[:n], np.arange(n)] += rng.uniform(0.5, 1.0, n)  # full rank
    J = np.where(rng.random(n) < 0.5, 1, -1)
    (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, return_info=True)
    assert info.converged
    lam = np.sort(J_S * S**2)
    exact = eigvals_factor_hiprec(G, J)
    exact = np.sort(exact[np.argsort(np.abs(exact))[m - n:]])
    assert np.max(np.abs(lam - exact) / np.abs(exact)) <= 100 * n * EPS


@pytest.mark.parametrize("exponent", [300, 480, 560])
def test_tiny_columns(exponent):
    """Columns graded down to 2^-exponent: near the bottom of the normal range
    of the squared norms (300, 480) relatively accurate singular values, no
    endless rotation; below it (560, where svd's scaling by the largest entry
    leaves the squared norm of the last column under 2^-1022 unless the
    factor is rescaled first) either that or a LinAlgError that says so --
    never a silent wrong answer."""
    rng = np.random.default_rng(exponent)
    n = 8
    B = rng.standard_normal((12, n))
    A = B * 2.0 ** -np.linspace(0, exponent, n).round()
    try:
        S = cljacobi.svd(A, compute_uv=False)
    except np.linalg.LinAlgError as error:
        assert exponent > 500 and "floating-point range" in str(error)
        return
    dps = 2 * exponent // 3 + 60  # the squares of the columns span 2 exponent bits
    # The oracle's eigenvalues (squares) are float64: centred by 2^(exponent/2)
    # (exact) they stay inside its range.
    half = exponent // 2
    lam = eigvals_factor_hiprec(np.ldexp(A.T, half), np.ones(A.shape[0]), dps=dps)
    exact = np.ldexp(np.sqrt(np.maximum(lam, 0))[::-1], -half)
    assert np.max(np.abs(S - exact) / exact) <= 1e-13


# ---------------------------------------------------------------------------
# 2. nearly parallel columns with opposite signs (|t| -> 1)
# ---------------------------------------------------------------------------


def _hsvd_eigenvalues(G, J, **options):
    """J S^2 of hsvd, ascending, with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, return_info=True, **options)
    m, n = G.shape
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 100 * n * EPS
    return np.sort(J_S * S**2), info


def _factor_eigenvalues(G, J):
    """The r eigenvalues of G J G^* of largest magnitude, ascending (50 digits)."""
    exact = eigvals_factor_hiprec(G, J)
    m, r = G.shape
    return np.sort(exact[np.argsort(np.abs(exact))[m - r:]])


def _nearly_parallel(rng, m, n, delta, dtype):
    """G with n/2 pairs of columns of opposite signs, each pair nearly parallel."""
    complex_ = dtype is np.complex128
    G = rng.standard_normal((m, n))
    if complex_:
        G = G + 1j * rng.standard_normal((m, n))
    J = np.ones(n, dtype=int)
    for k in range(0, n - 1, 2):
        phase = np.exp(1j * rng.uniform(0, 2 * np.pi)) if complex_ else rng.choice([-1, 1])
        G[:, k + 1] = phase * G[:, k] * rng.uniform(0.5, 2) + delta * G[:, k + 1]
        J[k + 1] = -1
    return G, J


class _NearlyParallelColumns:
    """The checks of this section, run by one subclass per variant (``variant``)."""

    variant: str

    def hsvd_eigenvalues(self, G, J):
        return _hsvd_eigenvalues(G, J, **_blocks(self.variant, 4))

    @pytest.mark.parametrize("delta", [1e-4, 1e-8, 1e-11])
    def test_two_nearly_parallel_columns(self, delta):
        """hsvd([[1, 1], [0, delta]], [1, -1]): J S^2 = -delta^2/2 +- delta sqrt(1 + delta^2/4),
        where the Gram entries round to coth 2phi = -1 (no rotation) for delta <= 1e-8."""
        G = np.array([[1.0, 1.0], [0.0, delta]])
        J = np.array([1, -1])
        lam, info = self.hsvd_eigenvalues(G, J)
        exact = _factor_eigenvalues(G, J)
        sensitivity = (np.abs(_factor_eigenvalues(_probe(G, 1), J) - exact) / np.abs(exact)
                       / PROBE)
        assert np.all(np.abs(lam - exact) <= 50 * EPS * (1 + sensitivity) * np.abs(exact)), (
            lam, exact, sensitivity)
        assert info.converged and not info.breakdown

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("m,n,delta,seed", [(8, 6, 1e-7, 0), (12, 10, 1e-10, 1),
                                                (20, 16, 1e-6, 2), (24, 12, 1e-12, 3)])
    def test_nearly_parallel_pairs_family(self, m, n, delta, seed, dtype):
        rng = np.random.default_rng([seed, dtype is np.complex128])
        G, J = _nearly_parallel(rng, m, n, delta, dtype)
        lam, _ = self.hsvd_eigenvalues(G, J)
        exact = _factor_eigenvalues(G, J)
        probed = _factor_eigenvalues(_probe(G, seed), J)
        sensitivity = np.abs(probed - exact) / np.abs(exact) / PROBE
        error = np.abs(lam - exact) / np.abs(exact)
        assert np.all(error <= 50 * n * EPS * (1 + sensitivity)), (error / EPS, sensitivity)
        # and eig_indefinite of the product agrees (it factors M afresh)
        M = (G * J) @ G.conj().T
        w = cljacobi.eig_indefinite(M, eigvals_only=True)
        assert np.allclose(np.sort(w[np.argsort(np.abs(w))[m - n:]]), exact,
                           rtol=1e-6, atol=100 * m * EPS * np.linalg.norm(M, 2))

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_parallel_columns_with_opposite_signs(self, dtype):
        """Columns g and u g (|u| = 1) of opposite signs: no hyperbolic rotation
        exists (|coth 2phi| = 1 exactly): LinAlgError, and no warning.  (A square
        G: a tall one is shortened by QR first, whose rounding makes the pair
        independent at the eps level, which the data cannot tell from exact
        dependence.)  With a third column the process can go on, shrinking the
        dependent pair, and the eigenvalues it is near (0 here, in G J G^* =
        h h^*) are determined by the data only to eps ||G||^2 (a componentwise
        perturbation makes the pair independent): a LinAlgError or eigenvalues
        that good."""
        g = np.array([1.0, 2.0, -1.0, 0.5])
        h = np.array([0.5, -1.0, 3.0, 1.0])
        u = 1j if dtype is np.complex128 else -1.0  # exact products
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(np.linalg.LinAlgError, match="parallel to working precision"):
                cljacobi.hsvd(np.stack([g[:2], u * g[:2]], axis=1), np.array([1, -1]),
                              **_blocks(self.variant, 4))
            G = np.stack([g, u * g, h], axis=1)
            J = np.array([1, -1, 1])
            try:
                lam, _ = self.hsvd_eigenvalues(G, J)
            except np.linalg.LinAlgError as error:
                assert "parallel to working precision" in str(error)
                return
        exact = np.array([0.0, 0.0, h @ h])
        assert np.max(np.abs(lam - exact)) <= 30 * EPS * np.linalg.norm(G) ** 2


class TestNearlyParallelColumnsPointwise(_NearlyParallelColumns):
    variant = "pointwise"


class TestNearlyParallelColumnsBO(_NearlyParallelColumns):
    variant = "bo"


class TestNearlyParallelColumnsFB(_NearlyParallelColumns):
    """The pairs family ran for pointwise and bo only before; fb passes it as well."""

    variant = "fb"


def test_blocked_rotate_kernel_flags_dependent_pairs(queue):
    """cjac_block_rotate sets the broken status bit for a hyperbolic pair it cannot
    rotate, as cjac_step does, and leaves the pair to the pointwise sweeps."""
    G = np.zeros((8, 8))
    G[2:, :6] = np.random.default_rng(3).standard_normal((6, 6))
    G[0, 6], G[0, 7], G[1, 7] = 1.0, 1.0, 1e-9  # coth 2phi rounds to -1
    signs = np.array([1, 1, 1, -1, -1, -1, 1, -1], dtype=np.int8)
    order = np.argsort(-signs, kind="stable")
    driver = BlockedHSVD(queue, accumulate_v=False, block_width=4, variant="bo")
    G_after, _, stats = driver.run(G[:, order], signs[order], max_sweeps=3)
    assert stats.breakdown
    pair = [list(order).index(6), list(order).index(7)]
    assert np.array_equal(G_after[:2, pair], G[:2, [6, 7]]), "the dependent pair was rotated"


# ---------------------------------------------------------------------------
# 3. clusters of equal eigenvalues: sweeps of the default strategy
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [64, 100])
def test_plus_minus_one_clusters_sweeps(n, dtype):
    """Q diag(+1 x n/2, -1 x n/2) Q^*: 26 sweeps at n = 100 before (the ME base
    of order 50 came from a round-robin-like factorisation, and rounding noise
    in the clusters was rotated as if it were data); now 7."""
    rng = np.random.default_rng(n + (dtype is np.complex128))
    lam = np.array([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    M = with_spectrum(lam, rng=rng, dtype=dtype)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.strategy == "me" and info.sweeps <= 8, info.rotations_per_sweep
    assert np.max(np.abs(w - np.sort(lam))) <= 20 * n * EPS
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 20 * n * EPS
    assert np.linalg.norm(M @ U - U * w) <= 20 * n * EPS * np.linalg.norm(M, 2)


@pytest.mark.parametrize("n", [64, 100])
def test_repeated_singular_values_sweeps(n):
    rng = np.random.default_rng(n)
    S = np.array([2.0] * (n // 2) + [1.0] * (n - n // 2))
    Q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    Q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q1 * S) @ Q2.T
    S_ours, info = cljacobi.svd(A, compute_uv=False, return_info=True)
    assert info.sweeps <= 8, info.rotations_per_sweep
    assert np.max(np.abs(S_ours - S)) <= 20 * n * EPS


# ---------------------------------------------------------------------------
# 4. accuracy of the blocked variants, fb included 
# ---------------------------------------------------------------------------


def _residual_ratio(M, w, U):
    """||M U - U diag(w)||_F / (n eps ||M||_2), LAPACK's test ratio (pass: <= 30)."""
    n = M.shape[0]
    return np.linalg.norm(M @ U - U * w) / (n * EPS * np.linalg.norm(M, 2))


@pytest.mark.parametrize("n,w,dtype", [(64, 4, np.float64), (64, 4, np.complex128),
                                       (150, 8, np.float64)])
def test_full_block_residual(n, w, dtype):
    """fb gave ratios of 54-62 at n = 150 (bo and pointwise: 11-13): the cosine
    of every rotation was rounded to 1 for |t| < sqrt(eps/2), so each of fb's
    2.5x more rotations shrank or grew the accumulated transformation a little,
    always in the same direction."""
    rng = np.random.default_rng([n, dtype is np.complex128])
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng, dtype=dtype)
    ratios = {}
    for variant in VARIANTS:
        (lam, U), info = cljacobi.eig_indefinite(M, **_blocks(variant, w),
                                                  return_info=True)
        ratios[variant] = _residual_ratio(M, lam, U)
        assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 30 * n * EPS
    assert max(ratios.values()) <= 30, ratios
    assert ratios["fb"] <= 3 * max(ratios["bo"], 1.0), ratios


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_block_eigenvalues_against_oracle(dtype):
    n = 48
    rng = np.random.default_rng([n, dtype is np.complex128, 1])
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng, dtype=dtype)
    exact = eigvalsh_hiprec(M)
    norm = np.abs(exact).max()
    errors = {}
    for variant in VARIANTS:
        lam = cljacobi.eig_indefinite(M, eigvals_only=True, **_blocks(variant, 4))
        errors[variant] = np.max(np.abs(lam - exact)) / (n * EPS * norm)
    assert max(errors.values()) <= 5, errors


def test_full_block_transformation_stays_j_orthogonal(queue):
    """V accumulated through fb's W (hsvd): V^* J V = J to a few eps ||V||^2 per
    column, where the rounded cosines drifted by ~0.3 eps per 1000 rotations."""
    rng = np.random.default_rng(11)
    n = 120
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng)
    from cljacobi.factorization import j_factorize

    factor = j_factorize(M)
    J = factor.signs.astype(float)
    driver = BlockedHSVD(queue, accumulate_v=True, block_width=8, variant="fb")
    _, V, stats = driver.run(factor.G, factor.signs.astype(np.int8), max_sweeps=60)
    assert stats.converged and stats.rotations > 100_000
    drift = np.linalg.norm(V.T @ (J[:, None] * V) - np.diag(J)) / np.linalg.norm(V, 2) ** 2
    assert drift <= 0.3 * n * EPS, drift / EPS
