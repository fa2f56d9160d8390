"""The rank decision of the J-factorization on exactly singular and graded input.

The host (:func:`cljacobi.factorization.j_factorize`) and the device
(:func:`cljacobi.host.factorization.j_factorize_device`) versions make the same
decision by the same test: an entry of the trailing Schur complement within
its rounding-error bound ``n eps (|m_ij| + ||g_i|| ||g_j||)`` is noise and set to
zero, and the elimination stops when nothing else is left.  On a graded matrix
with exactly repeated rows the noise left by the repeats can be far larger
than the genuine entries of smaller scales; complete pivoting on it would
take a noise pivot (a spurious nonzero eigenvalue, and the small ones
spoiled).

References come from mpmath (``tests/hiprec.py``); that the data determine
them is checked by perturbing every entry by a relative ``1e-15`` and
recomputing the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.factorization import j_factorize
from cljacobi.host.factorization import j_factorize_device
from cljacobi.matrices import graded

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _graded_with_repeats(rng, n: int, repeats: int, dtype, low_exponent: int = -50):
    """``(M, expand)``: a graded ``M = D A D`` (:func:`cljacobi.matrices.graded`:
    A well conditioned, D powers of two from 1 down to ``2^low_exponent``), and
    the function that repeats `repeats` of the rows and columns of an n x n
    matrix exactly (order ``n + repeats``, rank n)."""
    M, _, _ = graded(n, rng=rng, low_exponent=low_exponent, dtype=dtype)
    rows = rng.permutation(np.concatenate([np.arange(n), rng.choice(n, repeats, replace=False)]))
    return M, lambda X: X[np.ix_(rows, rows)]


def _rank_deficient(rng, n: int, rank: int, dtype, graded: bool):
    """``G J G^*`` with G n x rank, optionally graded ``D G J G^* D``."""
    G = rng.standard_normal((n, rank))
    if np.dtype(dtype).kind == "c":
        G = G + 1j * rng.standard_normal((n, rank))
    M = (G * rng.choice([-1.0, 1.0], rank)) @ G.conj().T
    if graded:
        d = 2.0 ** -rng.integers(0, 41, n)
        M = d[:, None] * M * d[None, :]
    return (M + M.conj().T) / 2


def _perturbed(rng, M):
    """M with every entry changed by a relative 1e-15, Hermitian again."""
    P = M * (1 + 1e-15 * rng.choice([-1.0, 1.0], M.shape))
    return (P + P.conj().T) / 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(8))
def test_repeated_rows_of_graded_matrix_host_and_device_agree(queue, dtype, seed):
    rng = np.random.default_rng(seed)
    n = 20
    base, expand = _graded_with_repeats(rng, n, 2 + seed % 2, dtype)
    M = expand(base)
    host, device = j_factorize(M), j_factorize_device(M, queue)
    assert host.G.shape[1] == n
    assert device.G.shape[1] == n
    assert host.p == device.p
    np.testing.assert_array_equal(host.signs, device.signs)


@pytest.mark.parametrize("factorization", ["host", "device"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(4))
def test_repeated_rows_of_graded_matrix_eigenvalues(dtype, factorization, seed):
    """Every eigenvalue the data determine, the zero ones included."""
    rng = np.random.default_rng(100 + seed)
    n, repeats = 16, 2 + seed % 2
    base, expand = _graded_with_repeats(rng, n, repeats, dtype, low_exponent=-35)
    M = expand(base)
    (w, U), info = cljacobi.eig_indefinite(M, factorization=factorization, return_info=True)
    assert info.rank == n
    exact = eigvalsh_hiprec(M, dps=80)
    moved = eigvalsh_hiprec(expand(_perturbed(rng, base)), dps=80)
    norm = np.abs(exact).max()
    zero = np.argsort(np.abs(exact))[:repeats]
    nonzero = np.setdiff1d(np.arange(n + repeats), zero)
    assert np.all(np.abs(exact[zero]) <= 1e-30 * norm)  # the data's zeros
    assert np.all(np.abs(w[zero]) <= (n + repeats) * EPS * norm)
    # The nonzero ones the data determine -- a relative perturbation of 1e-15
    # of the entries leaves an eigenvalue within 1e-13 of each -- to 1e-12.
    e = exact[nonzero]
    data = np.abs(moved[nonzero][None, :] - e[:, None]).min(axis=1) / np.abs(e)
    determined = data <= 1e-13
    assert np.count_nonzero(determined) >= 0.75 * n
    rel = np.abs(w[nonzero] - e) / np.abs(e)
    assert rel[determined].max() <= 1e-12
    assert np.linalg.norm(U.conj().T @ U - np.eye(n + repeats)) <= 1e-13 * (n + repeats)


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, rank", [(40, 20), (60, 6), (30, 1)])
def test_rank_deficient_exact_rank_and_zero_eigenvalues(queue, dtype, graded, n, rank):
    """Rank n/2, n/10 and 1, plain and graded: the exact rank on host and
    device, the zero eigenvalues to ``n eps ||M||``, orthonormal vectors, and
    the nonzero eigenvalues against the high-precision reference."""
    rng = np.random.default_rng(n + rank + graded)
    M = _rank_deficient(rng, n, rank, dtype, graded)
    assert j_factorize(M).G.shape[1] == rank
    assert j_factorize_device(M, queue).G.shape[1] == rank
    for factorization in ("host", "device"):
        (w, U), info = cljacobi.eig_indefinite(M, factorization=factorization,
                                              return_info=True)
        assert info.rank == rank
        norm = np.linalg.norm(M, 2)
        order = np.argsort(np.abs(w))
        assert np.all(np.abs(w[order[: n - rank]]) <= n * EPS * norm)
        assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 1e-13 * n
        assert np.linalg.norm(M @ U - U * w) <= 1e-13 * n * norm
    exact = eigvalsh_hiprec(M, dps=60)
    big = np.argsort(np.abs(exact))[n - rank:]
    ours = w[np.argsort(np.abs(w))[n - rank:]]
    rel = np.abs(np.sort(ours) - np.sort(exact[big])) / np.abs(np.sort(exact[big]))
    assert rel.max() <= 1e-12
