"""Tests of cljacobi.factorization: Bunch-Parlett J-factorization (the QR shortening
of its tall factors: test_shortening.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cljacobi import factorization as fz
from cljacobi.factorization import BUNCH_PARLETT_ALPHA, JFactor, j_factorize

EPS = np.finfo(np.float64).eps
SIZES = [1, 2, 3, 5, 31, 32, 33, 64, 100]
DTYPES = [np.float64, np.complex128]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _random(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _unitary(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    q, r = np.linalg.qr(_random(rng, (n, n), dtype))
    return q * (np.diagonal(r) / np.abs(np.diagonal(r)))  # Haar-distributed


def _hermitian(rng: np.random.Generator, n: int, dtype, p: int) -> np.ndarray:
    """Hermitian matrix with p positive and n - p negative eigenvalues in +-[1e-5, 1]."""
    lam = 10.0 ** rng.uniform(-5, 0, n)
    lam[p:] *= -1
    q = _unitary(rng, n, dtype)
    m = (q * lam) @ q.conj().T
    return (m + m.conj().T) / 2


def _product(f: JFactor) -> np.ndarray:
    return (f.G * f.signs) @ f.G.conj().T


def _rel_residual(m: np.ndarray, f: JFactor) -> float:
    return np.linalg.norm(m - _product(f)) / np.linalg.norm(m)


def _inertia(m: np.ndarray) -> tuple[int, int]:
    w = np.linalg.eigvalsh(m)
    tol = m.shape[0] * EPS * np.abs(w).max(initial=0.0) * 10
    return int(np.sum(w > tol)), int(np.sum(w < -tol))


def _check_structure(f: JFactor, n: int, dtype) -> None:
    r = f.G.shape[1]
    assert f.G.shape == (n, r)
    assert f.G.dtype == np.dtype(dtype)
    assert f.G.flags.f_contiguous
    assert f.signs.dtype == np.int8
    assert f.signs.shape == (r,)
    assert isinstance(f.p, int)
    np.testing.assert_array_equal(f.signs, [1] * f.p + [-1] * (r - f.p))


def _reference_factor(m: np.ndarray) -> JFactor:
    """Dense textbook Bunch-Parlett with complete pivoting (the oracle for the panels).

    Same pivot rule and the same 1x1/2x2 column formulas as the module, but on
    a full square matrix with explicit symmetric row/column swaps.
    """
    a = np.array(m, dtype=np.complex128 if np.iscomplexobj(m) else np.float64)
    n = a.shape[0]
    tol = n * EPS * np.abs(a).max()
    perm = np.arange(n)
    g = np.zeros_like(a)
    signs = np.zeros(n, dtype=np.int8)
    k = 0
    while k < n:
        trail = np.abs(a[k:, k:])
        mu0 = trail.max()
        if mu0 <= tol:
            break
        i = int(np.argmax(np.diagonal(trail)))
        if trail[i, i] >= BUNCH_PARLETT_ALPHA * mu0:
            pivots = [k + i]
        else:
            r, c = np.unravel_index(int(np.argmax(trail)), trail.shape)
            pivots = sorted([k + int(r), k + int(c)])
        for t, piv in enumerate(pivots):
            a[[k + t, piv], :] = a[[piv, k + t], :]
            a[:, [k + t, piv]] = a[:, [piv, k + t]]
            perm[[k + t, piv]] = perm[[piv, k + t]]
        s = len(pivots)
        w, sg = (fz._pivot_1x1 if s == 1 else fz._pivot_2x2)(a[k:, k : k + s].copy())
        g[perm[k:], k : k + s] = w
        signs[k : k + s] = sg
        for t in range(s):
            a[k + s :, k + s :] -= sg[t] * np.outer(w[s:, t], w[s:, t].conj())
        k += s
    order = np.concatenate((np.flatnonzero(signs[:k] > 0), np.flatnonzero(signs[:k] < 0)))
    return JFactor(g[:, order], signs[order], int(np.sum(signs > 0)))


# ---------------------------------------------------------------------------
# Reconstruction and inertia
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", ["positive", "negative", "indefinite", "random"])
def test_reconstruction_and_inertia(n: int, dtype, kind: str) -> None:
    rng = np.random.default_rng(1000 * n + len(kind) + (7 if dtype is np.complex128 else 0))
    if kind == "random":
        x = _random(rng, (n, n), dtype)
        m = x + x.conj().T
    else:
        p = {"positive": n, "negative": 0, "indefinite": n // 3 + (n > 1)}[kind]
        m = _hermitian(rng, n, dtype, p)
    f = j_factorize(m)
    _check_structure(f, n, dtype)
    pos, neg = _inertia(m)
    assert f.G.shape[1] == n
    assert (f.p, n - f.p) == (pos, neg)
    assert _rel_residual(m, f) <= 4 * n * EPS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, 33, 64])
def test_several_inertias(n: int, dtype) -> None:
    rng = np.random.default_rng(n)
    for p in range(0, n + 1, max(1, n // 6)):
        m = _hermitian(rng, n, dtype, p)
        f = j_factorize(m)
        assert f.p == p and f.G.shape[1] == n
        assert _rel_residual(m, f) <= 4 * n * EPS


@pytest.mark.parametrize(
    "m",
    [
        np.array([[0.0, 1.0], [1.0, 0.0]]),
        np.array([[0.0, -3.0], [-3.0, 0.0]]),
        np.array([[0.0, 1j], [-1j, 0.0]]),
        np.array([[0.5, 2 - 1j], [2 + 1j, -0.25]]),
        np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]),
    ],
    ids=["swap", "swap-negative", "swap-complex", "small-diagonal", "rank-2"],
)
def test_2x2_pivot_small_cases(m: np.ndarray) -> None:
    f = j_factorize(m)
    _check_structure(f, m.shape[0], m.dtype)
    np.testing.assert_array_equal(f.signs, [1, -1])
    assert np.linalg.norm(m - _product(f)) <= 4 * EPS * np.linalg.norm(m)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [2, 3, 31, 64, 100])
def test_zero_diagonal_forces_2x2_pivots(n: int, dtype, monkeypatch) -> None:
    calls = []
    original = fz._pivot_2x2

    def spy(x: np.ndarray):
        calls.append(x.shape[0])
        return original(x)

    monkeypatch.setattr(fz, "_pivot_2x2", spy)
    rng = np.random.default_rng(n)
    x = _random(rng, (n, n), dtype)
    m = x + x.conj().T
    np.fill_diagonal(m, 0)
    f = j_factorize(m)
    assert calls and calls[0] == n  # the first pivot is a 2x2 one
    pos, neg = _inertia(m)
    assert (f.p, f.G.shape[1] - f.p) == (pos, neg)
    assert _rel_residual(m, f) <= 4 * n * EPS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [7, 40, 100])
def test_matches_dense_reference(n: int, dtype) -> None:
    """The panel storage reproduces the textbook algorithm pivot for pivot."""
    rng = np.random.default_rng(n + 1)
    x = _random(rng, (n, n), dtype)
    m = x + x.conj().T
    f, ref = j_factorize(m), _reference_factor(m)
    np.testing.assert_array_equal(f.signs, ref.signs)
    np.testing.assert_allclose(f.G, ref.G, rtol=0, atol=1e-12 * np.abs(ref.G).max())


def test_thread_pool_gives_identical_result(monkeypatch) -> None:
    rng = np.random.default_rng(5)
    x = _random(rng, (150, 150), np.complex128)
    m = x + x.conj().T
    single = j_factorize(m)
    monkeypatch.setattr(fz, "_THREADS_MIN_N", 0)
    monkeypatch.setattr(fz, "_MAX_THREADS", 3)
    monkeypatch.setattr(fz, "usable_cpus", lambda: 3)
    threaded = j_factorize(m)
    np.testing.assert_array_equal(threaded.G, single.G)
    np.testing.assert_array_equal(threaded.signs, single.signs)


def test_panel_bounds_cover_columns() -> None:
    for n in [1, 5, 16, 31, 100, 1000, 5000]:
        bounds = fz._panel_bounds(n, 8)
        assert bounds[0] == 0 and bounds[-1] == n
        widths, heights = np.diff(bounds), n - bounds[:-1]
        assert np.all(widths >= 1)
        limit = np.maximum(fz._PANEL_BYTES // 8, fz._MIN_PANEL_WIDTH * heights)
        assert np.all(widths * heights <= limit)
        assert len(widths) >= 2 or n < 2 * fz._MIN_PANEL_WIDTH  # small n: several panels too


# ---------------------------------------------------------------------------
# Rank deficiency
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, 31, 64])
@pytest.mark.parametrize("rank", ["zero", "one", "half"])
def test_rank_deficient(n: int, dtype, rank: str) -> None:
    k = {"zero": 0, "one": 1, "half": n // 2}[rank]
    rng = np.random.default_rng(n + k)
    x = _random(rng, (n, k), dtype)
    s = rng.choice([-1.0, 1.0], k) * 10.0 ** rng.uniform(-2, 0, k)
    m = (x * s) @ x.conj().T
    m = (m + m.conj().T) / 2
    f = j_factorize(m)
    _check_structure(f, n, dtype)
    assert f.G.shape == (n, k)
    assert f.p == int(np.sum(s > 0))
    scale = max(np.linalg.norm(m), 1.0) if k == 0 else np.linalg.norm(m)
    assert np.linalg.norm(m - _product(f)) <= 4 * n * EPS * scale


def test_zero_matrix() -> None:
    f = j_factorize(np.zeros((4, 4)))
    assert f.G.shape == (4, 0) and f.signs.shape == (0,) and f.p == 0


def test_explicit_rank_tol() -> None:
    m = np.diag([2.0, -1e-10, 0.5])
    assert j_factorize(m).G.shape[1] == 3
    f = j_factorize(m, rank_tol=1e-8)
    assert f.G.shape[1] == 2 and f.p == 2
    np.testing.assert_allclose(_product(f), np.diag([2.0, 0.0, 0.5]), atol=1e-15)


# ---------------------------------------------------------------------------
# Graded matrices: small scales stay relatively accurate
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [10, 50, 100])
def test_graded_matrix_relative_accuracy(n: int, dtype) -> None:
    rng = np.random.default_rng(n + 11)
    q = _unitary(rng, n, dtype)
    lam = rng.uniform(1.0, 2.0, n) * rng.choice([-1.0, 1.0], n)
    a = (q * lam) @ q.conj().T  # well conditioned, indefinite
    a = (a + a.conj().T) / 2
    d = 2.0 ** -rng.integers(0, 31, n)  # powers of two: M = D A D is exact
    d[0], d[-1] = 1.0, 2.0**-30
    m = d[:, None] * a * d[None, :]
    # The entries of M go down to 2^-60 ~ 1e-18 |M|: far below the default
    # normwise rank tolerance n eps max|M|, which would truncate them.
    f = j_factorize(m, rank_tol=0.0)
    assert f.G.shape[1] == n
    assert f.p == int(np.sum(lam > 0))
    g = f.G / d[:, None]  # exact
    scaled = (g * f.signs) @ g.conj().T
    assert np.linalg.norm(a - scaled) / np.linalg.norm(a) <= 4 * n * EPS
    # entrywise, relative to the entry's own scale sqrt(|m_ii m_jj|) ~ d_i d_j:
    # the componentwise backward error bound of a symmetric indefinite
    # factorization, |dA| <= c n eps (|A| + |G| |G|^*) (Higham, Accuracy and
    # Stability of Numerical Algorithms, 2nd ed., Thm. 11.3)
    bound = 4 * n * EPS * (np.abs(a) + np.abs(g) @ np.abs(g).T)
    assert np.all(np.abs(a - scaled) <= bound)


# ---------------------------------------------------------------------------
# 2x2 rotation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "e",
    [
        [[0.0, 1.0], [1.0, 0.0]],
        [[0.3, -1.0], [-1.0, -0.6]],
        [[-0.64, 1.0], [1.0, 0.64]],
        [[0.6, 1.0], [1.0, 0.6]],
        [[0.0, 2 + 1j], [2 - 1j, 1e-3]],
        [[-1e-300, -1j], [1j, 0.0]],
    ],
)
def test_eigh_2x2(e) -> None:
    e = np.array(e)
    q, lam = fz._eigh_2x2(e)
    assert q.dtype == e.dtype
    np.testing.assert_allclose(q.conj().T @ q, np.eye(2), rtol=0, atol=4 * EPS)
    np.testing.assert_allclose((q * lam) @ q.conj().T, e, rtol=0, atol=8 * EPS * np.abs(e).max())
    assert lam[0] * lam[1] < 0
    np.testing.assert_allclose(np.sort(lam), np.linalg.eigvalsh(e), rtol=4 * EPS, atol=0)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_input_not_modified(dtype, layout: str) -> None:
    rng = np.random.default_rng(3)
    x = _random(rng, (80, 80), dtype)
    big = x + x.conj().T
    m = {"C": np.ascontiguousarray(big[:40, :40]), "F": np.asfortranarray(big[:40, :40])}.get(
        layout, big[::2, ::2]
    )
    before = m.copy()
    f = j_factorize(m)
    np.testing.assert_array_equal(m, before)
    assert not np.shares_memory(f.G, m)
    assert _rel_residual(m, f) <= 4 * 40 * EPS


def test_only_lower_triangle_referenced() -> None:
    rng = np.random.default_rng(4)
    for dtype in DTYPES:
        x = _random(rng, (33, 33), dtype)
        m = x + x.conj().T
        garbage = m.copy()
        iu = np.triu_indices(33, 1)
        garbage[iu] = 1e3 * _random(rng, (iu[0].size,), dtype)
        if np.dtype(dtype).kind == "c":
            garbage[np.diag_indices(33)] += 5j
        a, b = j_factorize(m), j_factorize(garbage)
        np.testing.assert_array_equal(a.G, b.G)
        np.testing.assert_array_equal(a.signs, b.signs)


@pytest.mark.parametrize(
    "dtype, expected",
    [(np.float32, np.float64), (np.int64, np.float64), (np.complex64, np.complex128)],
)
def test_dtype_promotion(dtype, expected) -> None:
    m = np.array([[2, 1, 0], [1, -3, 1], [0, 1, 1]], dtype=dtype)
    f = j_factorize(m)
    assert f.G.dtype == expected
    np.testing.assert_allclose(_product(f), m.astype(expected), atol=16 * EPS)


def test_empty() -> None:
    for dtype in DTYPES:
        f = j_factorize(np.zeros((0, 0), dtype=dtype))
        assert f.G.shape == (0, 0) and f.G.dtype == dtype
        assert f.signs.shape == (0,) and f.p == 0


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 2, 2), ()])
def test_wrong_shape(shape) -> None:
    with pytest.raises(ValueError, match="square"):
        j_factorize(np.zeros(shape))


def test_list_input() -> None:
    f = j_factorize([[1.0, 2.0], [2.0, 1.0]])
    assert (f.p, f.G.shape) == (1, (2, 2))
