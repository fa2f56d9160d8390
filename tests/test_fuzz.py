"""Seeded fuzzing of eig_indefinite and hsvd against numpy.

Every case draws a size, an inertia, a rank, a spectrum shape, a dtype, a
power-of-two scaling over the whole float64 range and a memory layout, and
checks the result against numpy (eigenvalues to ``O(n eps ||M||)``), its
own residual and orthogonality, and exact invariants (zeros of an exactly
singular matrix, the inertia fixed by the construction: an eigenvalue of
1e-290 flushed to zero fails it).  ``CLJACOBI_FUZZ_CASES`` (default 200) sets the
number of cases for eig_indefinite (half as many for hsvd) and
``CLJACOBI_FUZZ_SEED`` the seed; the default seed is fixed, so a failure is
reproducible from its case number.
"""

from __future__ import annotations

import os

import numpy as np

import cljacobi
from cljacobi.matrices import with_spectrum

EPS = np.finfo(np.float64).eps
CASES = int(os.environ.get("CLJACOBI_FUZZ_CASES", "200"))
SEED = int(os.environ.get("CLJACOBI_FUZZ_SEED", "20261122"))
SIZES = [2, 3, 4, 5, 7, 8, 11, 16, 17, 24, 31, 32, 33, 40]


def _layout(A, rng):
    """The same matrix as C, Fortran, a strided view or a transposed view."""
    kind = rng.integers(4)
    if kind == 1:
        return np.asfortranarray(A), "F"
    if kind == 2:
        big = np.zeros((A.shape[0] * 2, A.shape[1] * 3), dtype=A.dtype)
        big[::2, 1::3] = A
        return big[::2, 1::3], "strided"
    if kind == 3:
        return np.ascontiguousarray(A.T).T, "transposed"
    return A, "C"


def _eig_case(rng):
    """(input, float64 base matrix, 2^k scale exponent, expected dtype, inertia, label).

    ``inertia`` is ``(positive, zero, negative)`` where the construction fixes
    it exactly (Sylvester's law), else None.
    """
    n = int(rng.choice(SIZES))
    kind = rng.choice(["spectrum", "clustered", "lowrank", "graded", "wide", "integer"])
    exact = None
    if kind in ("spectrum", "clustered"):
        p = int(rng.integers(0, n + 1))
        if kind == "spectrum":
            magnitudes = 10.0 ** rng.uniform(-6, 1, n)
        else:
            # Three tight clusters (relative width 1e-12).
            clusters = np.resize(rng.uniform(0.5, 2, 3), n)
            magnitudes = clusters * (1 + 1e-12 * rng.standard_normal(n))
        base = with_spectrum(np.concatenate([magnitudes[:p], -magnitudes[p:]]), rng=rng)
        exact = (p, 0, n - p)
    elif kind == "lowrank":
        r = int(rng.integers(0, n + 1))
        p = int(rng.integers(0, r + 1))
        X = rng.integers(-3, 4, size=(n, r)).astype(float)
        r = int(np.linalg.matrix_rank(X)) if r else 0
        base = (X * np.array([1.0] * p + [-1.0] * (X.shape[1] - p))) @ X.T
        exact = (p, n - r, r - p) if r == X.shape[1] else None
    elif kind in ("graded", "wide"):
        # D A D, exact; "wide" puts entries and eigenvalues over ~1e-295..1e295.
        p = int(rng.integers(0, n + 1))
        lam = np.concatenate([rng.uniform(1, 10, p), -rng.uniform(1, 10, n - p)])
        A = with_spectrum(lam, rng=rng)
        exponents = rng.integers(-40, 1, n) if kind == "graded" else rng.integers(-490, 491, n)
        d = np.ldexp(1.0, exponents)
        base = d[:, None] * A * d[None, :]
        exact = (p, 0, n - p)
        if kind == "wide":
            return _layout(base, rng), base, 0, np.dtype(np.float64), exact, kind
    else:
        R = rng.integers(-5, 6, size=(n, n))
        base = (R + R.T).astype(float)
    dtype = np.dtype(np.float64)
    if kind == "integer":
        dtype = np.dtype(rng.choice([np.int64, np.int8, np.uint8, bool]))
        if dtype.kind in "ub":
            base = np.abs(base) if dtype.kind == "u" else (base > 0).astype(float)
        label = f"{kind}/{dtype}"
        return _layout(base.astype(dtype), rng), base, 0, np.dtype(np.float64), exact, label
    if rng.random() < 0.2:
        base = base.astype(np.float32).astype(np.float64)
        label = f"{kind}/float32"
        return _layout(base.astype(np.float32), rng), base, 0, np.dtype(np.float32), exact, label
    k = 0 if rng.random() < 0.3 else 2 * int(rng.integers(-480, 481))
    return _layout(np.ldexp(base, k), rng), base, k, dtype, exact, f"{kind}/2^{k}"


def test_fuzz_eig_indefinite():
    rng = np.random.default_rng(SEED)
    failures = []
    tried = 0
    for case in range(CASES):
        (M, layout), base, k, dtype, exact, label = _eig_case(rng)
        n = base.shape[0]
        tried += 1
        try:
            w, U = cljacobi.eig_indefinite(M)
            assert w.dtype == dtype and U.dtype == dtype, "dtype"
            w = np.ldexp(w.astype(np.float64), -k)
            U = U.astype(np.float64)
            tol = 1e-5 if dtype == np.float32 else 200 * n * EPS
            # The checks themselves work on base / 2^e (max|base| ~ 1), so that
            # their own norms neither overflow nor underflow.
            e = int(np.frexp(np.abs(base).max())[1]) if base.any() else 0
            unit, w_unit = np.ldexp(base, -e), np.ldexp(w, -e)
            reference = np.linalg.eigvalsh(unit)
            norm = max(np.abs(reference).max(), np.finfo(np.float64).tiny)
            assert np.all(np.diff(w) >= 0), "not ascending"
            assert np.max(np.abs(w_unit - reference)) <= tol * norm, "eigenvalues differ from numpy"
            residual = np.linalg.norm(unit @ U - U * w_unit) / (np.linalg.norm(unit) or 1.0)
            assert residual <= tol, f"residual {residual:.2e}"
            orthogonality = np.linalg.norm(U.T @ U - np.eye(n))
            assert orthogonality <= tol, f"orthogonality {orthogonality:.2e}"
            if exact is not None:
                positive, zero, negative = exact
                assert np.count_nonzero(w == 0) == zero, "zero eigenvalues not exact"
                assert np.count_nonzero(w > 0) == positive, "inertia"
                assert np.count_nonzero(w < 0) == negative, "inertia"
        except Exception as error:  # collect all, report together
            failures.append(
                f"case {case} ({label}, n={n}, {layout}): {type(error).__name__}: {error}"
            )
    assert tried == CASES
    assert not failures, f"{len(failures)} of {tried} failed:\n" + "\n".join(failures)


def test_fuzz_hsvd():
    rng = np.random.default_rng(SEED + 1)
    failures = []
    for case in range(CASES // 2):
        n = int(rng.choice(SIZES[:-3]))
        m = n + int(rng.integers(0, 12))
        p = int(rng.integers(0, n + 1))
        J = rng.permutation(np.array([1] * p + [-1] * (n - p)))
        column_exponents = rng.integers(-300, 301, n) if rng.random() < 0.4 else np.zeros(n, int)
        G = np.ldexp(rng.standard_normal((m, n)), column_exponents)
        G, layout = _layout(G, rng)
        label = (
            f"m={m}, n={n}, p={p}, "
            f"exponents {column_exponents.min()}..{column_exponents.max()}, {layout}"
        )
        try:
            U, S, Vh, J_S = cljacobi.hsvd(G, J)
            tol = 1e3 * m * EPS
            assert np.all(S > 0) and np.all(np.diff(S) <= 0), "S not positive descending"
            assert np.linalg.norm(U.T @ U - np.eye(n)) <= tol, "U not orthonormal"
            errors = np.linalg.norm(U * S @ Vh - G, axis=0) / np.linalg.norm(G, axis=0)
            assert errors.max() <= tol, f"column reconstruction {errors.max():.2e}"
            VJ = Vh @ np.diag(J) @ Vh.T
            J_error = np.linalg.norm(VJ - np.diag(J_S))
            assert J_error <= tol * np.linalg.norm(Vh) ** 2, "Vh not J-orthogonal"
            assert sorted(J_S.tolist()) == sorted(J.tolist()), "signature"
        except Exception as error:
            failures.append(f"case {case} ({label}): {type(error).__name__}: {error}")
    assert not failures, f"{len(failures)} of {CASES // 2} failed:\n" + "\n".join(failures)
