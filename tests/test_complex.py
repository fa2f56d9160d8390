"""What only complex input has: the complex kernels, their storage layouts,
the unitary diagonal similarity, and the definite (Cholesky) path, real and complex.

The complex kernels come from the same templates as the real ones (element
type and storage layout are PointwiseSpec parameters); one parallel step is
checked against cljacobi.reference's phase convention in both layouts, the
layouts against each other bitwise, and the single-precision kernels in both.
The tests that have a real and a complex case (against numpy and the oracle on
random, paper, singular and graded matrices, single precision, small cases) are
in test_eig_indefinite.py and test_hsvd.py, parametrized by ``dtype``; the
"not Hermitian" inputs are rows of test_inputs.py's table.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.factorization import definite_factorize
from cljacobi.host.diagonal import DIAG_DTYPE, sort_diagonal
from cljacobi.host.pointwise import LAYOUT_ENV, complex_layout
from cljacobi.host.pointwise_plan import PointwiseSpec
from cljacobi.host.programs import build_program, render
from cljacobi.matrices import graded, paper_spectrum, with_spectrum
from cljacobi.reference import PairKind, pair_rotation
from cljacobi.strategies import step_table

EPS = np.finfo(np.float64).eps
LD = 64
LAYOUTS = ["interleaved", "split"]


def _complex_normal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _hermitian_with_inertia(n, p, rng, dtype=np.complex128):
    magnitudes = rng.uniform(0.1, 10.0, n)
    lam = np.concatenate([magnitudes[:p], -magnitudes[p:]])
    return with_spectrum(lam, rng=rng, dtype=dtype), np.sort(lam)


# --- rendering -------------------------------------------------------------------------


def test_render_complex_specs():
    inter = render(PointwiseSpec("complex128", 32, True, "interleaved"))
    split = render(PointwiseSpec("complex128", 32, True, "split"))
    single = render(PointwiseSpec("complex64", 32, False, "split"))
    assert "typedef double2 cjac_real2" in inter and "typedef float2 cjac_real2" in single
    assert "__global cjac_real2 *G" in inter and "__global cjac_real2 *V" in inter
    assert "__global cjac_real *G" in split and "(size_t)(c) * 2 * (ld)" in split
    real = render(PointwiseSpec("float64", 32, True))
    assert "typedef double2" not in real and "typedef cjac_real cjac_elem" in real


def test_kernel_spec_layout_errors():
    with pytest.raises(ValueError, match="layout"):
        PointwiseSpec("complex128", 32, False, "planar")
    with pytest.raises(ValueError, match="complex dtypes only"):
        PointwiseSpec("float64", 32, False, "split")


def test_layout_selection(monkeypatch):
    monkeypatch.delenv(LAYOUT_ENV, raising=False)
    assert complex_layout() in LAYOUTS
    assert complex_layout("split") == "split"
    monkeypatch.setenv(LAYOUT_ENV, "Split")
    assert complex_layout() == "split"
    monkeypatch.setenv(LAYOUT_ENV, "planar")
    with pytest.raises(ValueError, match="interleaved"):
        complex_layout()


# --- one step against the reference ------------------------------------------------------


def _pack(columns, layout):
    return columns if layout == "interleaved" else np.concatenate(
        [columns.real, columns.imag], axis=1)


def _unpack(raw, layout, r):
    if layout == "interleaved":
        return raw.view(np.complex128).reshape(r, LD)
    planes = raw.view(np.float64).reshape(r, 2 * LD)
    return planes[:, :LD] + 1j * planes[:, LD:]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("p", [0, 3, 8])
def test_one_step_against_reference(queue, rng, layout, p):
    """One parallel step: each pair rotated with s = t e^{i alpha} as cljacobi.reference does."""
    m, r, wg = 29, 8, 16
    G = _complex_normal(rng, (m, r)) * 2.0 ** rng.integers(-8, 8, r)
    G[:, 5] = G[:, 1] * (1e-3 - 2e-3j) + G[:, 5] * 1e-12
    G[:, 6] = 0.0
    G[0, 6] = 1j
    spec = PointwiseSpec("complex128", wg, True, layout)
    program = build_program(queue.context, queue.device, spec)
    columns = np.zeros((r, LD), np.complex128)
    columns[:, :m] = G.T
    identity = np.zeros((r, LD), np.complex128)
    identity[np.arange(r), np.arange(r)] = 1
    mf, ctx = cl.mem_flags, queue.context
    g = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=_pack(columns, layout))
    v = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=_pack(identity, layout))
    d = cl.Buffer(ctx, mf.READ_WRITE, DIAG_DTYPE.itemsize * r)
    peak = cl.Buffer(ctx, mf.READ_WRITE, 8 * r)
    stepper = cl.Buffer(ctx, mf.READ_WRITE, 16 * (r // 2))
    zeros = np.zeros(r // 2, np.int32)
    status = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    rotations = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    size = ((r // 2) * wg,), (wg,)
    signatures = spec.signatures
    cl.enqueue_nd_range_kernel(queue, signatures["cjac_precompute"].kernel(
        program, G=g, ldg=LD, m=m, D=d, peak=peak, keep_peaks=0, stepper=stepper, r=r, p=p),
        *size)
    diagonal = np.empty(r, DIAG_DTYPE)
    cl.enqueue_copy(queue, diagonal, d)
    np.testing.assert_allclose(np.sort(diagonal["d"]), np.sort(np.sum(abs(G) ** 2, axis=0)),
                               rtol=10 * EPS)
    diagonal = sort_diagonal(diagonal)
    cl.enqueue_copy(queue, d, diagonal)
    cl.enqueue_nd_range_kernel(queue, signatures["cjac_step"].kernel(
        program, G=g, ldg=LD, m=m, V=v, ldv=LD, mv=r, D=d, peak=peak, peak_rounding=1,
        stepper=stepper, status=status, rotations=rotations, r=r), *size)

    expected_G, expected_V = G.copy(), np.eye(r, dtype=np.complex128)
    expected_status = np.zeros(r // 2, np.int32)
    rotated = 0
    for slot, (i, j) in enumerate(step_table("mm", r).pairs[0]):
        ci, cj = diagonal["rho"][i], diagonal["rho"][j]
        hyperbolic = diagonal["j"][i] != diagonal["j"][j]
        gi, gj = G[:, ci], G[:, cj]
        a_ij = np.vdot(gi, gj)
        kind, t, c = pair_rotation(diagonal["d"][i], diagonal["d"][j], abs(a_ij), hyperbolic)
        if kind != PairKind.ROTATE:
            continue
        rotated += 1
        s = t * a_ij / abs(a_ij)
        s_i = np.conj(s) if hyperbolic else -np.conj(s)
        expected_G[:, ci], expected_G[:, cj] = c * (gi + s_i * gj), c * (gj + s * gi)
        vi, vj = expected_V[:, ci].copy(), expected_V[:, cj].copy()
        expected_V[:, ci], expected_V[:, cj] = c * (vi + s_i * vj), c * (vj + s * vi)
        expected_status[slot] = 3 if abs(t) > np.sqrt(EPS) / 2 else 1
    assert rotated >= 2

    raw_g, raw_v = np.empty(columns.size * 2), np.empty(columns.size * 2)
    cl.enqueue_copy(queue, raw_g, g)
    cl.enqueue_copy(queue, raw_v, v)
    got_G = _unpack(raw_g, layout, r)[:, :m].T
    got_V = _unpack(raw_v, layout, r)[:, :r].T
    scale = np.abs(G).max(axis=0)
    np.testing.assert_allclose(got_G / scale, expected_G / scale, rtol=0, atol=1e-13)
    np.testing.assert_allclose(got_V, expected_V, rtol=0, atol=1e-13)
    got_status = np.empty(r // 2, np.int32)
    cl.enqueue_copy(queue, got_status, status)
    assert got_status.tolist() == expected_status.tolist()
    new = np.empty(r, DIAG_DTYPE)
    cl.enqueue_copy(queue, new, d)
    np.testing.assert_allclose(new["d"], np.sum(abs(got_G) ** 2, axis=0)[new["rho"]],
                               rtol=20 * EPS)


# --- eig_indefinite: layouts and unitary similarity --------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layouts_bitwise_identical(layout, rng):
    """Both storages do the same arithmetic: identical results, also with V (hsvd)."""
    M, _ = _hermitian_with_inertia(37, 15, rng)
    w, U = cljacobi.eig_indefinite(M, _layout=layout)
    w_ref, U_ref = cljacobi.eig_indefinite(M, _layout="interleaved")
    assert U.dtype == np.complex128
    assert np.array_equal(w, w_ref) and np.array_equal(U, U_ref)
    G = _complex_normal(rng, (20, 9))
    J = np.array([1, -1, 1, 1, -1, 1, -1, -1, 1])
    ours, reference = cljacobi.hsvd(G, J, _layout=layout), cljacobi.hsvd(G, J)
    assert all(np.array_equal(a, b) for a, b in zip(ours, reference))
    A = _complex_normal(rng, (17, 11))
    ours, reference = cljacobi.svd(A, _layout=layout), cljacobi.svd(A, _layout="interleaved")
    assert all(np.array_equal(a, b) for a, b in zip(ours, reference))


@pytest.mark.parametrize("n,p", [(20, 9), (32, 32), (32, 0)])
def test_unitary_diagonal_similarity(n, p, rng):
    """E M E^* with E = diag(+-1, +-i) is exact and has the spectrum of the real graded M."""
    M, _, _ = graded(n, p=p, low_exponent=-30, rng=rng)
    E = rng.choice(np.array([1, -1, 1j, -1j]), size=n)
    Mc = E[:, None] * M * E.conj()[None, :]
    exact = eigvalsh_hiprec(M)
    w, U = cljacobi.eig_indefinite(Mc)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(np.eye(n) - U.conj().T @ U) <= 50 * n * EPS


# --- definite matrices ---------------------------------------------------------------------


def _definite_cases(rng, n, dtype):
    yield "uniform", with_spectrum(rng.uniform(0.1, 10.0, n), rng=rng, dtype=dtype), False
    yield "paper", with_spectrum(np.abs(paper_spectrum(n, rng=rng)), rng=rng, dtype=dtype), False
    yield "graded", graded(n, p=n, low_exponent=-30, rng=rng, dtype=dtype)[0], True


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("n", [8, 24])
@pytest.mark.parametrize("sign", [1, -1])
def test_definite_at_least_as_accurate_as_eigh(dtype, n, sign, rng):
    """Definite input takes the Cholesky path; its relative eigenvalue errors are no larger
    than LAPACK's (up to the working-precision floor 4 n eps) and far smaller when graded."""
    for name, M, is_graded in _definite_cases(rng, n, dtype):
        M = sign * M
        exact = eigvalsh_hiprec(M)
        (w, U), info = cljacobi.eig_indefinite(M, return_info=True)
        assert info.factorization == "cholesky" and info.positive == (n if sign > 0 else 0)
        ours = np.max(np.abs(w - exact) / np.abs(exact))
        lapack = np.max(np.abs(np.linalg.eigvalsh(M) - exact) / np.abs(exact))
        assert ours <= max(lapack, 4 * n * EPS), (name, ours, lapack)
        if is_graded:
            assert ours <= 1e-12, (name, ours)
            if n >= 16:  # a few graded rows can happen to suit LAPACK's ordering
                assert lapack >= 1e4 * ours, (name, ours, lapack)
        scale = 50 * n * EPS * np.linalg.norm(M)
        assert np.linalg.norm(M @ U - U * w) <= scale


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_definite_factorize(dtype, rng):
    n = 12
    M, _, _ = graded(n, p=n, low_exponent=-20, rng=rng, dtype=dtype)
    for sign in (1, -1):
        factor = definite_factorize(sign * M)
        assert factor.G.shape == (n, n) and factor.p == (n if sign > 0 else 0)
        assert factor.G.dtype == np.dtype(dtype) and factor.G.flags.f_contiguous
        assert set(factor.signs.tolist()) == {sign}
        rebuilt = (factor.G * factor.signs) @ factor.G.conj().T
        d = np.sqrt(np.abs(M.diagonal()))
        assert np.max(np.abs(rebuilt - sign * M) / np.outer(d, d)) <= 10 * n * EPS
    # Not definite: one wrong-signed diagonal entry, a 2x2 indefinite pivot hidden by a
    # positive diagonal, a positive semidefinite singular matrix, a zero diagonal entry.
    indefinite, _, _ = graded(n, p=n - 1, rng=rng, dtype=dtype)
    hidden = np.array([[1.0, 2.0], [2.0, 1.0]], dtype=dtype)
    X = rng.standard_normal((n, n - 3)).astype(dtype)
    zero_diagonal = np.eye(3, dtype=dtype)
    zero_diagonal[1, 1] = 0
    for bad in (indefinite, hidden, X @ X.conj().T, zero_diagonal):
        assert definite_factorize(bad) is None


def test_nearly_semidefinite_falls_back(rng):
    """A positive semidefinite matrix perturbed at rounding level is left to Bunch-Parlett,
    which reports its numerical rank and exact zero eigenvalues."""
    X = _complex_normal(rng, (20, 12))
    M = X @ X.conj().T
    M = np.tril(M) + np.tril(M, -1).conj().T
    np.fill_diagonal(M, M.diagonal().real)
    (w, _), info = cljacobi.eig_indefinite(M, return_info=True)
    assert info.factorization == "bunch-parlett" and info.rank == 12
    assert np.count_nonzero(w == 0) == 8


# --- private layout option and single-precision kernels --------------------------------------------------


def test_private_layout_is_checked():
    with pytest.raises(ValueError, match="layout"):
        cljacobi.eig_indefinite(np.array([[1.0, 1j], [-1j, -1.0]]), _layout="planar")


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_single_precision_kernels(dtype, layout, rng):
    """The float32/complex64 kernels (what a device without fp64 runs), forced here:
    accuracy of order n eps_single relative to ||M|| / |lambda|, results in single."""
    n = 40
    lam = np.concatenate([rng.uniform(0.1, 10, n // 2), -rng.uniform(0.1, 10, n // 2)])
    M = with_spectrum(lam, rng=rng, dtype=dtype)
    (w, U), info = cljacobi.eig_indefinite(M, return_info=True, _single=True, _layout=layout)
    assert info.precision == "single" and w.dtype == np.float32 and U.dtype == np.dtype(dtype)
    exact = np.linalg.eigvalsh(M.astype(np.complex128))
    eps32 = np.finfo(np.float32).eps
    assert np.max(np.abs(w - exact)) <= 10 * n * eps32 * np.abs(exact).max()
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 10 * n * eps32
    (_, info64) = cljacobi.eig_indefinite(M, return_info=True)
    assert info64.precision == "double"  # the CI device has fp64
    A = rng.standard_normal((30, 20)).astype(dtype)
    (U, S, Vh), info = cljacobi.svd(A, return_info=True, _single=True, _layout=layout)
    assert info.precision == "single" and U.dtype == np.dtype(dtype) and S.dtype == np.float32
    S_np = np.linalg.svd(A.astype(np.complex128), compute_uv=False)
    assert np.max(np.abs(S - S_np) / S_np) <= 10 * 30 * eps32
    assert np.linalg.norm(U * S @ Vh - A) <= 10 * 30 * eps32 * np.linalg.norm(A)
