"""Pivot strategies, rotation algorithms and the diagonal sort on the device.

* the driver consumes the step tables of cljacobi.strategies (and the MM
  stepper) exactly as the sequential oracle
  cljacobi.reference.parallel_hyperbolic_jacobi runs them: after one sweep,
  two sweeps (the ring's backward table) and at convergence, for every
  strategy x rotation algorithm x sort, bordering and both rotation kinds;
* the rotation algorithms 2 and 3 put the larger eigenvalue estimate first
  using the correct predicted norms (eq. (2.6)), and make the ring sweep a
  sorting network on the device (Zhou & Brent 1997, Sect. 4, Prop. 2);
* every public call takes strategy=, rotation=, sort_diagonal=;
* the convergence findings of Zhou & Brent (1997), Tables I-V, and
  Novaković & Singer (2011), Table 3, as orderings of sweep totals over a few
  seeds at sizes CI affords (bench/bench_strategies.py has the numbers).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import cljacobi
from cljacobi.host.pointwise import PointwiseHSVD
from cljacobi.matrices import paper_spectrum, with_spectrum
from cljacobi.reference import parallel_hyperbolic_jacobi
from cljacobi.strategies import STRATEGIES

EPS = np.finfo(np.float64).eps
ROTATIONS = (1, 2, 3)


def _run(queue, G, signs, **kw):
    max_sweeps = kw.pop("max_sweeps", 60)
    return PointwiseHSVD(queue, accumulate_v=True, **kw).run(G, signs, max_sweeps=max_sweeps)


def _reference(G, signs, max_sweeps=60, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # max_sweeps=1, 2: not converged
        return parallel_hyperbolic_jacobi(G, signs, max_sweeps=max_sweeps, **kw)


# ----------------------------------------------------------------------------
# the device against the sequential oracle
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("sort_diagonal", [True, False])
@pytest.mark.parametrize("rotation", ROTATIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_device_runs_the_tables_like_the_reference(queue, strategy, rotation, sort_diagonal):
    """After 1 and 2 sweeps and at convergence: same columns, V, norms and sweeps.

    r = 13 is odd (bordered to 14), J has both signs, the columns are graded;
    a wrong step index, table, orientation or exchange changes the columns
    after the first sweep by O(1).
    """
    rng = np.random.default_rng(13)
    m, r, p = 17, 13, 5
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-6, 7, r)
    signs = np.array([1] * p + [-1] * (r - p))
    options = dict(strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal)
    scale = np.abs(G).max()
    for max_sweeps in (1, 2, 60):
        ours = _run(queue, G, signs, max_sweeps=max_sweeps, **options)
        ref = _reference(G, signs, max_sweeps=max_sweeps, **options)
        # forced for 1 and 2; at convergence a last tiny rotation may round either way
        assert abs(ours.stats.sweeps - ref.sweeps) <= (max_sweeps > 2), max_sweeps
        if ours.stats.sweeps != ref.sweeps:
            continue  # not seen on PoCL; the eigenvalues are compared below
        np.testing.assert_allclose(ours.G / scale, ref.G / scale, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.V, ref.V, rtol=0, atol=1e-11 * np.abs(ref.V).max())
        np.testing.assert_allclose(ours.d, ref.d, rtol=1e-12)
    assert ours.stats.converged and ref.converged
    # the eigenvalues j ||g||^2 of G J G^T, against the row-cyclic oracle too
    lam = np.sort(ours.signs * ours.d)
    np.testing.assert_allclose(lam, np.sort(signs * ref.d), rtol=1e-13)
    w = np.linalg.eigvalsh((G * signs) @ G.T)
    w = w[np.abs(w) > 1e-9 * np.abs(w).max()]  # M is m x m of rank r
    np.testing.assert_allclose(lam, np.sort(w), rtol=1e-9)


@pytest.mark.parametrize("r", [24, 32])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_first_sweeps_match_for_doubled_tables(queue, strategy, r):
    """Larger orders (ME built by doubling from bases 6 and 2): the first two
    sweeps agree with the oracle, i.e. every step of both tables ran as tabled."""
    rng = np.random.default_rng(r)
    G = rng.standard_normal((r + 5, r))
    signs = np.array([1] * (r // 3) + [-1] * (r - r // 3))
    for rotation, max_sweeps in ((1, 1), (2, 2)):
        options = dict(strategy=strategy, rotation=rotation, sort_diagonal=False,
                       max_sweeps=max_sweeps)
        ours = _run(queue, G, signs, **options)
        ref = _reference(G, signs, **options)
        np.testing.assert_allclose(ours.G, ref.G, rtol=0, atol=1e-12 * np.abs(G).max())
        np.testing.assert_allclose(ours.d, ref.d, rtol=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rotations_2_and_3_give_the_same_norms(queue, strategy):
    """Nash's rotation is algorithm 1's composed with a quarter turn: the norms are
    bitwise those of algorithm 2 (which exchanges rho instead of the data)."""
    rng = np.random.default_rng(23)
    G = rng.standard_normal((30, 24))
    signs = np.array([1] * 10 + [-1] * 14)
    two = _run(queue, G, signs, strategy=strategy, rotation=2)
    three = _run(queue, G, signs, strategy=strategy, rotation=3)
    assert two.stats.sweeps == three.stats.sweeps
    assert two.stats.rotations_per_sweep == three.stats.rotations_per_sweep
    assert np.array_equal(np.sort(two.signs * two.d), np.sort(three.signs * three.d))
    # ... and the data really live in other physical columns
    assert not np.array_equal(two.positions, three.positions)


# ----------------------------------------------------------------------------
# sorting rotations
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("rotation", [2, 3])
@pytest.mark.parametrize("negative", [False, True])
def test_first_position_gets_the_larger_estimate(queue, rotation, negative):
    """One trigonometric pair: position 0 holds the larger lambda = j d afterwards.

    The norms are nearly equal and the pairs far from orthogonal, so the new
    order depends on the sign of t a_ij in the predicted norms (eq. (2.6),
    a_ii - t a_ij and a_jj + t a_ij): the wrong sign sorts backwards
    (docs/design.md, Appendix B).
    """
    rng = np.random.default_rng(7 + rotation + 10 * negative)
    signs = -np.ones(2, int) if negative else np.ones(2, int)
    exchanged = 0
    for _ in range(25):
        G = rng.standard_normal((6, 2))
        G[:, 1] = G[:, 1] * 0.1 + G[:, 0] * rng.uniform(0.9, 1.1)  # nearly equal, correlated
        out = _run(queue, G, signs, strategy="ring", rotation=rotation,
                   sort_diagonal=False, max_sweeps=1)
        d_by_position = out.d[out.positions]
        lam = (-1 if negative else 1) * d_by_position
        assert lam[0] >= lam[1]
        # the pair is orthogonal now, whichever way round
        g0, g1 = out.G[:, out.positions[0]], out.G[:, out.positions[1]]
        assert abs(g0 @ g1) <= 1e-14 * np.linalg.norm(g0) * np.linalg.norm(g1)
        exchanged += out.positions[0] != 0 if rotation == 2 else 0
    assert rotation == 3 or exchanged > 0  # algorithm 2 did exchange rho sometimes


@pytest.mark.parametrize("rotation", [1, 2, 3])
@pytest.mark.parametrize("p_is_r", [True, False])
def test_ring_sweep_sorts_on_the_device(queue, rotation, p_is_r):
    """Orthogonal columns (nothing rotates): a ring sweep with algorithm 2 or 3 is
    Zhou & Brent's sorting network -- lambda = j d descending by position after
    the forward and after the backward sweep; algorithm 1 moves nothing."""
    rng = np.random.default_rng(rotation)
    r = 16
    signs = np.ones(r, int) if p_is_r else -np.ones(r, int)
    for _ in range(4):
        G = np.diag(2.0 ** rng.permutation(r))  # distinct norms, orthogonal columns
        for sweeps in (1, 2):
            out = _run(queue, G, signs, strategy="ring", rotation=rotation,
                       sort_diagonal=False, max_sweeps=sweeps)
            lam = signs[0] * out.d[out.positions]
            if rotation == 1:
                assert out.positions.tolist() == list(range(r))
            else:
                assert np.all(np.diff(lam) < 0), (sweeps, lam)
            assert out.stats.rotations == 0


def test_round_robin_index_sorting_does_not_sort_in_a_sweep(queue):
    """Zhou & Brent, Sect. 3: with index sorting the round-robin ordering cannot
    sort the norms in one sweep (which is why it needs more sweeps)."""
    rng = np.random.default_rng(5)
    r = 16
    unsorted = 0
    for _ in range(6):
        G = np.diag(2.0 ** rng.permutation(r))
        out = _run(queue, G, np.ones(r, int), strategy="round-robin", rotation=2,
                   sort_diagonal=False, max_sweeps=1)
        unsorted += not np.all(np.diff(out.d[out.positions]) < 0)
    assert unsorted > 0


# ----------------------------------------------------------------------------
# the public API
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("sort_diagonal", [True, False])
@pytest.mark.parametrize("strategy, rotation", list(itertools.product(STRATEGIES, ROTATIONS)))
def test_eig_indefinite_every_option(queue, strategy, rotation, sort_diagonal):
    rng = np.random.default_rng(31)
    n = 24
    lam = paper_spectrum(n, p=9, rng=rng)
    M = with_spectrum(lam, rng=rng)
    (w, U), info = cljacobi.eig_indefinite(
        M, strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal, queue=queue,
        return_info=True,
    )
    assert (info.strategy, info.rotation, info.sort_diagonal) == (
        strategy, rotation, sort_diagonal)
    assert info.converged
    np.testing.assert_allclose(w, np.sort(lam), rtol=1e-12)
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= 50 * n * EPS
    assert np.linalg.norm(M @ U - U * w) <= 50 * n * EPS * np.linalg.norm(M)


@pytest.mark.parametrize("strategy", [*STRATEGIES, "auto"])
def test_hsvd_every_strategy(queue, strategy):
    rng = np.random.default_rng(37)
    m, n = 21, 15
    G = rng.standard_normal((m, n))
    J = np.array([1, -1] * 7 + [1])
    for rotation in (None, 1, 3):
        (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, strategy=strategy, rotation=rotation,
                                              queue=queue, return_info=True)
        assert info.strategy == (cljacobi.options.DEFAULTS["pointwise"][0]
                                 if strategy == "auto" else strategy)
        assert np.linalg.norm(U * S @ Vh - G) <= 200 * m * EPS * np.linalg.norm(G)
        assert np.linalg.norm(Vh @ np.diag(J) @ Vh.T - np.diag(J_S)) <= 1e-12 * np.linalg.norm(
            Vh) ** 2


# ----------------------------------------------------------------------------
# the papers' convergence findings, as orderings of sweep totals
# ----------------------------------------------------------------------------


def _svd_sweeps(queue, n, seeds, **options):
    """Total sweeps of hsvd(A, ones) over `seeds` standard normal n x n matrices."""
    total = 0
    for seed in range(seeds):
        A = np.random.default_rng([seed, n, 0]).standard_normal((n, n))
        _, info = cljacobi.hsvd(A, np.ones(n), compute_uv=False, queue=queue,
                                return_info=True, **options)
        total += info.sweeps
    return total


@pytest.fixture(scope="module")
def svd_sweeps(queue):
    """Sweep totals over 3 seeds, n = 128, J = I, for the configurations the tests compare.

    (At n = 64 the margins are a sweep or two; bench/bench_strategies.py shows
    them growing with n, as in Zhou & Brent's tables.)
    """
    wanted = [(x, 1, s) for x in ("mm", "me", "ring") for s in (True, False)]
    wanted += [(x, 2, s) for x in ("me", "ring", "round-robin") for s in (True, False)]
    wanted += [("mm", 2, True)]
    return {key: _svd_sweeps(queue, 128, 3, strategy=key[0], rotation=key[1],
                             sort_diagonal=key[2]) for key in wanted}


def test_ring_with_sorting_rotations_beats_no_sorting(svd_sweeps):
    """Zhou & Brent, Tables I and III: with the ring ordering (and no other sort)
    algorithm 2 needs fewer sweeps than algorithm 1."""
    s = svd_sweeps
    assert s["ring", 2, False] < s["ring", 1, False]


def test_round_robin_index_sorting_needs_more_sweeps(svd_sweeps):
    """Zhou & Brent, Table II vs Table III: round-robin with index sorting needs more
    sweeps than the ring ordering with the same rotation algorithm."""
    s = svd_sweeps
    for sort_diagonal in (True, False):
        assert s["round-robin", 2, sort_diagonal] > s["ring", 2, sort_diagonal]
        assert s["round-robin", 2, sort_diagonal] > s["me", 2, sort_diagonal]


def test_sorting_needs_fewer_sweeps_than_no_sorting(svd_sweeps):
    """Sorting -- sorting rotations plus the per-sweep diagonal sort -- against none
    at all, in aggregate over the strategies that sort (Zhou & Brent, Sect. 2 and
    5; Novaković & Singer 2011, Table 3)."""
    s = svd_sweeps
    strategies = ("mm", "me", "ring")
    assert sum(s[x, 2, True] for x in strategies) < sum(s[x, 1, False] for x in strategies)
    # and the diagonal sort alone, with the plain rotation
    assert sum(s[x, 1, True] for x in strategies) < sum(s[x, 1, False] for x in strategies)


@pytest.fixture(scope="module")
def hyperbolic_sweeps_128(queue):
    """Sweep totals of eig_indefinite over 2 seeds, n = 128, the 2011 paper's spectra.

    ``out[strategy, rotation, sort_diagonal, p]`` for the configurations compared.
    """
    n, seeds = 128, 2
    wanted = [(x, 2, True, p) for x in ("mm", "me", "ring") for p in (0, n // 2, n)]
    wanted += [(x, 1, s, p) for x in ("mm", "me", "ring") for s in (True, False)
               for p in (n // 8, n // 2)]
    matrices = {}
    for p in sorted({w[3] for w in wanted}):
        for seed in range(seeds):
            rng = np.random.default_rng([seed, n, p])
            matrices[p, seed] = with_spectrum(paper_spectrum(n, p=p, rng=rng), rng=rng)
    out = {}
    for strategy, rotation, sort_diagonal, p in wanted:
        total = 0
        for seed in range(seeds):
            _, info = cljacobi.eig_indefinite(
                matrices[p, seed], eigvals_only=True, strategy=strategy, rotation=rotation,
                sort_diagonal=sort_diagonal, queue=queue, return_info=True)
            assert info.positive == p
            total += info.sweeps
        out[strategy, rotation, sort_diagonal, p] = total
    return out


def test_definite_cases_need_fewest_sweeps(hyperbolic_sweeps_128):
    """Novaković & Singer 2011, Table 3 and Sect. 5: the definite cases (p = 0 or
    n) are the fastest; hyperbolic rotations (p = n/2) need more sweeps."""
    s, n = hyperbolic_sweeps_128, 128
    strategies = ("mm", "me", "ring")
    definite = sum(s[x, 2, True, 0] + s[x, 2, True, n] for x in strategies) / 2
    indefinite = sum(s[x, 2, True, n // 2] for x in strategies)
    assert definite < indefinite


def test_diagonal_sort_saves_sweeps_in_the_hyperbolic_case(hyperbolic_sweeps_128):
    """Novaković & Singer 2011, Table 3: sorting the packed diagonal after every
    sweep needs no more sweeps than not sorting (here: fewer, in aggregate)."""
    s, n = hyperbolic_sweeps_128, 128
    keys = [(x, p) for x in ("mm", "me", "ring") for p in (n // 8, n // 2)]
    assert sum(s[x, 1, True, p] for x, p in keys) < sum(s[x, 1, False, p] for x, p in keys)
