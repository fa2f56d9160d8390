"""Scaling: entries near 1e300, near 1e-300 and mixed over that whole range
neither overflow nor underflow; eigenvalues checked against a high-precision
oracle; power-of-two scaling of the input is exactly equivariant."""

from __future__ import annotations

import numpy as np
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.matrices import with_spectrum
from cljacobi.scaling import (
    GROWTH_BITS,
    factor_shift,
    matrix_shift,
    matrix_shift_from_range,
    unshift,
)

EPS = np.finfo(np.float64).eps


def _base(n, p, rng):
    lam = np.concatenate([rng.uniform(1.0, 10.0, p), -rng.uniform(1.0, 10.0, n - p)])
    return with_spectrum(lam, rng=rng)


def _graded(n, p, low, high, rng):
    """D A D with D = 2^k, k evenly over [low, high] and shuffled: exact."""
    A = _base(n, p, rng)
    k = np.rint(np.linspace(low, high, n)).astype(int)
    rng.shuffle(k)
    d = np.ldexp(1.0, k)
    return d[:, None] * A * d[None, :]


def _relative_error(w, exact):
    return float(np.max(np.abs(w - exact) / np.abs(exact)))


# ----------------------------------------------------------------- the shifts


def test_matrix_shift_centers_the_exponents():
    M = np.array([[2.0**600, 2.0**-900], [2.0**-900, 3.0]])
    s = matrix_shift(M)
    scaled = np.ldexp(M, s)
    top = np.frexp(np.abs(scaled).max())[1]
    bottom = np.frexp(np.abs(scaled[scaled != 0]).min())[1]
    assert top <= 1024 - GROWTH_BITS - 1 and bottom >= -1021
    assert abs((top + bottom) - (1024 - GROWTH_BITS - 1 - 1021)) <= 2
    assert s % 2 == 0
    assert matrix_shift(np.zeros((3, 3))) == 0
    # Exactly equivariant: shifting the input by 4^k shifts s by -2k.
    assert matrix_shift(np.ldexp(M, -38)) == s + 38


def test_too_wide_a_range_is_a_clear_error():
    expected = r"span magnitudes 2\^-1074 \(~1e-323\) to 2\^1020 \(~1e307\); .* at most 2\^2025"
    with pytest.raises(ValueError, match=expected):
        cljacobi.eig_indefinite(np.diag([1e307, 5e-324, 1.0]))
    with pytest.raises(ValueError, match="zero"):
        factor_shift(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="span more than float64"):
        cljacobi.hsvd(np.diag([1e300, 1e-320]), np.array([1, -1]))


# ----------------------------------------------------------------- extremes


def test_regression_tiny_eigenvalue_beside_huge_one():
    """One global scale to max|M| ~ 1 flushed -1e-300 to an exact (wrong) 0."""
    w, U = cljacobi.eig_indefinite(np.diag([1e300, -1e-300, 3.0]))
    assert np.allclose(w, [-1e-300, 3.0, 1e300], rtol=4 * EPS, atol=0)
    assert np.array_equal(np.abs(U), np.eye(3)[:, [1, 2, 0]])


@pytest.mark.parametrize("factor", [1e300, 1e-300, 2.0**1020, 2.0**-1015, 3e-310])
def test_uniformly_huge_or_tiny(factor, rng):
    """Entries near the ends of the range (subnormals included) against a 50-digit oracle."""
    n = 10
    M = _base(n, 4, rng) * factor  # rounded once: the oracle sees the same matrix
    exact = eigvalsh_hiprec(M)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == n
    # Subnormal entries (3e-310 * a) carry fewer digits, but the eigenvalues of
    # the matrix as given are still found to the working accuracy.
    assert _relative_error(w, exact) <= 1e-13
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= 100 * n * EPS
    residual = np.linalg.norm(M / factor @ U - U * (w / factor)) / np.linalg.norm(M / factor)
    assert residual <= 100 * n * EPS


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n,p", [(12, 5), (16, 16)])
def test_graded_over_the_whole_range(n, p, seed):
    """M = D A D with entries from ~1e-300 to ~1e300 and eigenvalues spanning the
    same range: every eigenvalue to high relative accuracy (700-digit oracle)."""
    rng = np.random.default_rng(100 + seed)
    M = _graded(n, p, -498, 498, rng)
    magnitudes = np.abs(M[M != 0])
    assert magnitudes.min() < 1e-295 and magnitudes.max() > 1e295
    exact = eigvalsh_hiprec(M, dps=700)
    assert np.abs(exact).min() < 1e-290 and np.abs(exact).max() > 1e290
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.rank == n and info.positive == p
    assert _relative_error(w, exact) <= 1e-12
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= 100 * n * EPS


@pytest.mark.parametrize("k", [-1000, -520, 334, 990])
def test_power_of_two_equivariance_is_bitwise(k, rng):
    M = _base(9, 4, rng)
    w, U = cljacobi.eig_indefinite(M)
    w_k, U_k = cljacobi.eig_indefinite(np.ldexp(M, k))
    assert np.array_equal(w_k, np.ldexp(w, k))
    assert np.array_equal(U_k, U)
    G = rng.standard_normal((7, 5))
    J = np.array([1, -1, 1, -1, -1])
    first = cljacobi.hsvd(G, J)
    again = cljacobi.hsvd(np.ldexp(G, k // 2), J)
    assert np.array_equal(again.S, np.ldexp(first.S, k // 2))
    for a, b in ((first.U, again.U), (first.Vh, again.Vh), (first.J, again.J)):
        assert np.array_equal(a, b)


def test_hsvd_columns_of_wildly_different_scales(rng):
    """Columns from 2^-500 to 2^500: no squared norm under- or overflows."""
    m, n = 9, 6
    exponents = np.array([-500, 500, -250, 0, 250, -499])
    G = rng.standard_normal((m, n)) * np.ldexp(1.0, exponents)
    J = np.array([1, 1, -1, -1, 1, -1])
    U, S, Vh, J_S = cljacobi.hsvd(G, J)
    assert np.all(np.isfinite(S)) and np.all(S > 0)
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= 100 * n * EPS
    # Each column of G is reconstructed to its own scale.
    reconstructed = U * S @ Vh
    column_errors = np.linalg.norm(reconstructed - G, axis=0) / np.linalg.norm(G, axis=0)
    assert column_errors.max() <= 1e3 * n * EPS
    J_error = np.linalg.norm(Vh @ np.diag(J) @ Vh.T - np.diag(J_S))
    assert J_error <= 1e3 * n * EPS * np.linalg.norm(Vh) ** 2


def test_unshift_is_exact_or_an_error():
    """Values come back exactly, subnormal where they must; what float64 cannot
    hold (a nonzero value below 2^-1074 or above its largest) is an error."""
    values = np.array([1.5, 0.0, -3.0])
    assert np.array_equal(unshift(values, 10, "x"), values / 1024)
    assert np.array_equal(unshift(np.array([1.0, 0.0]), 1074, "x"), [5e-324, 0.0])
    with pytest.raises(np.linalg.LinAlgError, match="a value of A is about 2\\^-1076.*smallest"):
        unshift(np.array([1.0]), 1076, "a value of A")
    with pytest.raises(np.linalg.LinAlgError, match="exceeds the largest float64"):
        unshift(np.array([1.0]), -1024, "a value of A")
    # zero_columns: zero columns are passed over, an inf or NaN is not.
    G = np.array([[1.0, 0.0], [2.0, 0.0]])
    assert factor_shift(G, zero_columns=True) == factor_shift(G[:, :1])
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        factor_shift(np.array([[1.0, np.nan]]), zero_columns=True)


def test_eigenvalue_beyond_float64_is_an_error_not_inf():
    """A matrix whose eigenvalue exceeds the largest float64 cannot be answered;
    one whose eigenvalue is the largest float64 itself is."""
    largest = np.finfo(np.float64).max
    big = largest / 1.5  # eigenvalues 0 and 2 big = 1.33 x largest
    with pytest.raises(np.linalg.LinAlgError, match="exceeds the largest float64"):
        cljacobi.eig_indefinite(np.array([[big, big], [big, big]]))
    big = largest / 2  # exact: the eigenvalue 2 big is the largest float64
    w, U = cljacobi.eig_indefinite(np.array([[big, big], [big, big]]))
    assert w[0] == 0 and abs(w[1] - largest) <= 4 * EPS * largest
    assert np.abs(U.T @ U - np.eye(2)).max() <= 4 * EPS


@pytest.mark.parametrize("cosine", [2.0**-30, 2.0**-45])
@pytest.mark.parametrize("J", [[1, 1], [1, -1]])
def test_rotation_between_columns_2_to_the_1000_apart(cosine, J):
    """kappa = (a_jj - a_ii) / (2 a_ij) overflows here; t = 1/(2 kappa) must not become 0
    (that left the pair unrotated, with a warning and U orthogonal only to 1e-9)."""
    import warnings

    G = np.zeros((4, 2))
    G[:, 0] = np.ldexp([1.0, 0.0, 0.0, 0.0], 500)
    G[:, 1] = np.ldexp([cosine, 1.0, 0.5, 0.25], -500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (U, S, Vh, J_S), info = cljacobi.hsvd(G, np.array(J), return_info=True)
    assert not info.breakdown and info.converged
    assert np.abs(U.T @ U - np.eye(2)).max() <= 4 * EPS
    errors = np.linalg.norm(U * S @ Vh - G, axis=0) / np.linalg.norm(G, axis=0)
    assert errors.max() <= 10 * EPS


@pytest.mark.parametrize("n", [2, 5, 300, 600])
@pytest.mark.parametrize("complex_", [False, True])
def test_symmetric_part_records_the_magnitudes(rng, n, complex_):
    """The fused pass gives the same matrix and magnitude range as separate numpy passes."""
    from cljacobi.validation import symmetric_part

    X = rng.standard_normal((n, n)) * np.ldexp(1.0, rng.integers(-300, 300, (n, n)))
    if complex_:
        X = X + 1j * rng.standard_normal((n, n))
    M = np.tril(X) + np.tril(X, -1).conj().T
    if complex_:
        np.fill_diagonal(M, M.diagonal().real)
    M[0, -1] = M[-1, 0] = 0.0  # a zero entry is not the smallest magnitude
    S, smallest, largest = symmetric_part(M, "M")
    assert np.array_equal(S, M)
    magnitudes = np.abs(M)
    assert largest == magnitudes.max() and smallest == magnitudes[magnitudes > 0].min()
    assert matrix_shift_from_range(smallest, largest, n) == matrix_shift(M)
    M[n // 2, n // 3] = np.nan
    assert np.isnan(symmetric_part(M, "M").largest)
    with pytest.raises(np.linalg.LinAlgError):
        matrix_shift_from_range(0.5, np.nan, n)


def test_factor_shifts_of_a_stack_are_factor_shift(rng):
    """factor_shifts: every factor's factor_shift at once (zero columns
    allowed or not), and the first refused factor's own message."""
    from cljacobi.scaling import factor_shift, factor_shifts

    G = (rng.standard_normal((300, 7, 5)) * 2.0 ** rng.integers(-700, 700, (300, 1, 1))
         * 2.0 ** rng.integers(-200, 200, (300, 1, 5)))
    G[3] = 0
    G[4, :, 2] = 0
    names = [f"G[{b}]" for b in range(300)]
    shifts = factor_shifts(np.abs(G).max(axis=1), 7, names, zero_columns=True)
    assert np.array_equal(shifts, [factor_shift(g, zero_columns=True) for g in G])
    with pytest.raises(ValueError, match=r"column 0 of G\[3\] is zero"):
        factor_shifts(np.abs(G).max(axis=1), 7, names)
    H = rng.standard_normal((3, 6, 4))
    H[1, 0, 0], H[1, :, 1] = 1e300, 1e-300
    with pytest.raises(np.linalg.LinAlgError, match=r"column norms of G\[1\] range"):
        factor_shifts(np.abs(H).max(axis=1), 6, names)


def test_unshift_rows_is_unshift_of_every_row():
    """unshift_rows: each row by its own shift, as unshift; the first row that
    loses a value raises unshift's message for it."""
    from cljacobi.scaling import unshift_rows

    values = np.array([[4.0, 1.0, 0.0], [2.0, 1e-300, 3.0]])
    shifts = np.array([2, -5])
    out = unshift_rows(values, shifts, ["x of A[0]", "x of A[1]"])
    for row, shift, got in zip(values, shifts, out):
        assert np.array_equal(got, unshift(row, int(shift), "x"))
    with pytest.raises(np.linalg.LinAlgError, match=r"x of A\[1\] is about 2\^-1097"):
        unshift_rows(values, np.array([0, 100]), ["x of A[0]", "x of A[1]"])
