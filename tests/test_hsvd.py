"""hsvd: G = U diag(S) Vh with U orthonormal (unitary columns) and Vh J-orthogonal
(J-unitary), real and complex G (parametrized by ``dtype``).

hsvd's wrong inputs are a table in test_inputs.py; the storage layouts of complex
G are compared in test_complex.py."""

from __future__ import annotations

import numpy as np
import pytest

import cljacobi

EPS = np.finfo(np.float64).eps


@pytest.mark.parametrize(
    "dtype,m,n,p",
    [(np.float64, *case) for case in
     [(1, 1, 1), (2, 2, 1), (5, 3, 0), (33, 33, 10), (64, 31, 31), (100, 64, 20)]]
    + [(np.complex128, *case) for case in [(2, 2, 1), (33, 33, 10), (64, 31, 31)]],
)
def test_identities(dtype, m, n, p, rng):
    G = rng.standard_normal((m, n))
    if dtype == np.complex128:
        G = G + 1j * rng.standard_normal((m, n))
    J = np.array([1] * p + [-1] * (n - p))
    rng.shuffle(J)
    (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, return_info=True)
    tol = 100 * max(m, n) * EPS
    assert U.shape == (m, n) and S.shape == (n,) and Vh.shape == (n, n)
    assert U.dtype == dtype and Vh.dtype == dtype and S.dtype == np.float64
    assert np.all(np.diff(S) <= 0), "S descending"
    assert np.linalg.norm(U * S @ Vh - G) <= tol * np.linalg.norm(G)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= tol
    VJ = Vh @ np.diag(J) @ Vh.conj().T
    assert np.linalg.norm(VJ - np.diag(J_S)) <= tol * np.linalg.norm(Vh) ** 2
    assert sorted(J_S.tolist()) == sorted(J.tolist())
    # The eigenvalues of G J G^* are J_S * S^2.
    w = np.sort(J_S * S**2)
    M = (G * J) @ G.conj().T
    w_np = np.linalg.eigvalsh(M)
    nonzero = np.sort(np.concatenate([w, np.zeros(m - n)]))
    assert np.max(np.abs(nonzero - w_np)) <= tol * np.abs(w_np).max()
    assert info.positive == p


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_vh_is_j_unitary_between_the_signatures(dtype, rng):
    """README and HSVDResult: ``Vh diag(J_in) Vh^* = diag(J_out)``, J_in the signature
    passed in, J_out the one returned; ``diag(J_out)`` on both sides does not hold."""
    n = 9
    G = rng.standard_normal((12, n))
    if dtype == np.complex128:
        G = G + 1j * rng.standard_normal((12, n))
    J_in = np.array([-1, 1, -1, -1, 1, 1, -1, 1, -1])
    U, S, Vh, J_out = cljacobi.hsvd(G, J_in)
    assert not np.array_equal(J_out, J_in)  # else the two readings coincide
    tol = 100 * n * EPS * np.linalg.norm(Vh) ** 2
    assert np.linalg.norm(Vh @ np.diag(J_in) @ Vh.conj().T - np.diag(J_out)) <= tol
    assert np.linalg.norm(Vh @ np.diag(J_out) @ Vh.conj().T - np.diag(J_out)) > 0.1
    # Hence G diag(J_in) G^* = U diag(J_out S^2) U^*.
    M = (G * J_in) @ G.conj().T
    assert np.linalg.norm((U * (J_out * S**2)) @ U.conj().T - M) <= tol * np.linalg.norm(M)


def test_j_identity_is_svd(rng):
    A = rng.standard_normal((40, 25))
    S_ours, J = cljacobi.hsvd(A, np.ones(25), compute_uv=False)
    assert np.all(J == 1)
    assert np.allclose(S_ours, np.linalg.svd(A, compute_uv=False), rtol=1e-13)

