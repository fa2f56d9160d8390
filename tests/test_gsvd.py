"""gsvd: the implicit Hari-Zimmermann kernels against LAPACK ggsvd3 (gsvd4py),
the numpy reference, and the GSVD's own identities."""

from __future__ import annotations

import gsvd4py
import numpy as np
import pytest
import scipy.linalg

import cljacobi
from cljacobi import hz_reference
from cljacobi.host.hz import hz_sweeps

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _random(shape, dtype, rng):
    X = rng.standard_normal(shape)
    return X + 1j * rng.standard_normal(shape) if dtype == np.complex128 else X


def _unitary(n, dtype, rng):
    return np.linalg.qr(_random((n, n), dtype, rng))[0]


def _check_identities(A, B, result, factor=30):
    U, V, C, S, X = result
    n = A.shape[1]
    tol = factor * n * EPS
    assert np.linalg.norm(A - U * C @ X.conj().T) <= tol * np.linalg.norm(A)
    assert np.linalg.norm(B - V * S @ X.conj().T) <= tol * np.linalg.norm(B)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= tol
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= tol
    assert np.abs(C**2 + S**2 - 1).max() <= 4 * EPS
    assert np.all(np.diff(C) <= 0) and np.all(C >= 0) and np.all(S >= 0)
    assert np.linalg.norm(result.Z.conj().T @ X - np.eye(n)) <= tol * np.linalg.cond(X)


def _ggsvd3_sigma(A, B):
    _, _, C, S, _ = gsvd4py.gsvd(A, B, mode="econ")
    return np.diag(C) / np.diag(S)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,p,n", [(8, 8, 8), (30, 20, 12), (9, 15, 9), (7, 7, 1), (40, 33, 33)])
@pytest.mark.parametrize("prescale", [False, True])
@pytest.mark.parametrize("variant,block_width", [("pointwise", None), ("bo", 4), ("fb", 4)])
def test_against_ggsvd3(m, p, n, prescale, variant, block_width, dtype, rng):
    A, B = _random((m, n), dtype, rng), _random((p, n), dtype, rng)
    A_copy, B_copy = A.copy(), B.copy()
    result, info = cljacobi.gsvd(A, B, prescale=prescale, variant=variant,
                                 block_width=block_width, return_info=True)
    assert info.variant == variant and info.block_width == (block_width or 0)
    assert np.array_equal(A, A_copy) and np.array_equal(B, B_copy)
    assert info.converged and result.U.dtype == dtype and result.C.dtype == np.float64
    _check_identities(A, B, result)
    sigma = result.C / result.S
    assert np.max(np.abs(sigma - _ggsvd3_sigma(A, B)) / sigma) <= 100 * n * EPS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kappa", [1e3, 1e7])
def test_paper_pairs(kappa, dtype, rng):
    """[NS] Sect. 5.1.2: A = U_F Sigma_F W, B = U_G Sigma_G W with unitary
    U_F, U_G, prescribed Sigma_F in (1e-10, 1) and Sigma_G, and a random W,
    B of condition about kappa (Sigma_G and W each sqrt(kappa)): the
    generalized singular values are Sigma_F / Sigma_G; cljacobi's errors are
    no worse than ggsvd3's on the same data."""
    n = 24
    sigma_f = np.exp(rng.uniform(np.log(1e-10), 0, n))
    sigma_g = np.exp(rng.uniform(-np.log(kappa) / 2, 0, n))
    W = _unitary(n, dtype, rng) @ np.diag(np.logspace(0, -np.log10(kappa) / 2, n)) \
        @ _unitary(n, dtype, rng)
    A = _unitary(n, dtype, rng) @ (sigma_f[:, None] * W)
    B = _unitary(n, dtype, rng) @ (sigma_g[:, None] * W)
    exact = np.sort(sigma_f / sigma_g)[::-1]
    for criterion, variant in (("C1", "pointwise"), ("C2", "pointwise"), ("C1", "bo")):
        C, S = cljacobi.gsvdvals(A, B, criterion=criterion, variant=variant, block_width=4
                                 if variant == "bo" else None)
        ours = np.max(np.abs(C / S - exact) / exact)
        lapack = np.max(np.abs(np.sort(_ggsvd3_sigma(A, B))[::-1] - exact) / exact)
        assert ours <= 10 * lapack + 1e3 * EPS, (ours, lapack)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("prescaled", [False, True])
@pytest.mark.parametrize("criterion", ["C1", "C2"])
@pytest.mark.parametrize("dots", ["ordinary", "enhanced"])
def test_kernel_against_reference(dots, prescaled, criterion, dtype, queue, rng):
    """The device's parallel sweeps are the reference's (same strategy, same
    formulas): the same number of sweeps and transformations, and the same
    GSVD to rounding."""
    n = 13
    A, B = _random((n + 2, n), dtype, rng), _random((n, n), dtype, rng)
    if prescaled:
        F, G, Z, _ = hz_reference.prescale(A, B)
    else:
        F, G, Z = A, B, np.eye(n, dtype=dtype)
    run = hz_sweeps(queue, F, G, Z, prescaled=prescaled, criterion=criterion, strategy="me",
                    enhanced_dots=dots == "enhanced")
    expected = hz_reference.hz_gsvd_parallel(A, B, strategy="me", prescale=prescaled,
                                             criterion=criterion, dot=dots)
    # The sorting P_k reads the 2x2 algebra on the device and recomputed norms
    # in the reference: near ties may order (and so count) one pair apart.
    assert run.converged and run.sweeps == expected.sweeps
    assert abs(sum(run.transformations) - expected.transformations) <= n
    ours = hz_reference.gsvd_from_hz(run.F, run.G, run.Z)
    theirs = hz_reference.gsvd_from_hz(expected.F, expected.G, expected.Z)
    assert np.max(np.abs(ours.sigma - theirs.sigma) / theirs.sigma) <= 100 * n * EPS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,block_width", [(8, 4), (13, 4), (40, 8)])
def test_blocked_level_against_reference(n, block_width, dtype, queue, rng):
    """The block-oriented level (bordered to a multiple of 2w, the border
    columns dropped afterwards) ends in the reference's GSVD."""
    A, B = _random((n, n), dtype, rng), _random((n, n), dtype, rng)
    run = hz_sweeps(queue, A, B, np.eye(n, dtype=dtype), prescaled=False,
                    block_width=block_width)
    assert run.converged and run.F.shape == (n, n) and run.Z.shape == (n, n)
    ours = hz_reference.gsvd_from_hz(run.F, run.G, run.Z)
    theirs = hz_reference.gsvd_reference(A, B, parallel=True, prescale=False)
    assert np.max(np.abs(ours.sigma - theirs.sigma) / theirs.sigma) <= 100 * n * EPS


def _block_kernel(queue, spec, A_hats, B_hats, *, n, inner_sweeps):
    """cjac_hz_block on given Gram matrices (one row chunk each): the
    transformations, row-major, and the counters."""
    import pyopencl as cl

    from cljacobi.host.hz import HZ_COUNTERS
    from cljacobi.host.programs import build_program

    program = build_program(queue.context, queue.device, spec)
    flags, w = cl.mem_flags, spec.block_width
    dtype = np.dtype(spec.dtype)

    def upload(array):
        return cl.Buffer(queue.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                         hostbuf=np.ascontiguousarray(array, dtype=dtype))

    slots = len(A_hats)
    transforms = cl.Buffer(queue.context, flags.READ_WRITE, slots * (2 * w) ** 2 * dtype.itemsize)
    counters = cl.Buffer(queue.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                         hostbuf=np.zeros(len(HZ_COUNTERS), np.int32))
    rotated = cl.Buffer(queue.context, flags.READ_WRITE, 4 * slots)
    partial_f, partial_g = upload(np.stack(A_hats)), upload(np.stack(B_hats))  # kept alive
    kernel = spec.signatures["cjac_hz_block"].kernel(
        program, partial_f=partial_f, partial_g=partial_g, chunks=1, order=n,
        inner_sweeps=inner_sweeps, transforms=transforms, rotated=rotated, counters=counters)
    cl.enqueue_nd_range_kernel(queue, kernel, (slots * w * w,), (w * w,))
    out = np.empty((slots, 2 * w, 2 * w), dtype=dtype)
    counts = np.empty(len(HZ_COUNTERS), np.int32)
    cl.enqueue_copy(queue, out, transforms)
    cl.enqueue_copy(queue, counts, counters)
    return out, counts


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("prescaled", [False, True])
@pytest.mark.parametrize("dots", ["ordinary", "enhanced"])
@pytest.mark.parametrize("inner_sweeps", [1, 30])
def test_block_kernel_against_reference(inner_sweeps, dots, prescaled, dtype, queue, rng):
    """cjac_hz_block (Cholesky factors of the two Gram matrices, the inner
    sweeps on them, Theta) is the reference's block transformation to
    rounding, for two block pairs of one launch; one pair with dependent
    columns in F (a semidefinite Gram matrix)."""
    from cljacobi.host.hz import HZ_COUNTERS, HZSpec

    w, n = 4, 64
    blocks = [(_random((20, 2 * w), dtype, rng), _random((20, 2 * w), dtype, rng))
              for _ in range(2)]
    blocks[1][0][:, 3] = blocks[1][0][:, 1] - 2 * blocks[1][0][:, 5]  # F rank-deficient
    A_hats = [F.conj().T @ F for F, _ in blocks]
    B_hats = [G.conj().T @ G for _, G in blocks]
    spec = HZSpec(np.dtype(dtype).name, prescaled=prescaled, block_width=w,
                  enhanced_dots=dots == "enhanced")
    ours, counts = _block_kernel(queue, spec, A_hats, B_hats, n=n, inner_sweeps=inner_sweeps)
    expected = [hz_reference.block_transformation(A, B, n=n, inner_sweeps=inner_sweeps,
                                                  prescaled=prescaled, dot=dots)
                for A, B in zip(A_hats, B_hats)]
    for Z, reference, (F, G) in zip(ours, expected, blocks):
        assert np.linalg.norm(Z - reference.Z) <= 1e-12 * np.linalg.norm(reference.Z)
        # what the block level is for: [F G] Z has (more) relatively orthogonal columns
        before = np.abs(np.triu(np.corrcoef((G).T.real if dtype == np.float64 else G.T), 1))
        GZ = G @ Z
        after = np.abs(np.triu(np.corrcoef(GZ.T.real if dtype == np.float64 else GZ.T), 1))
        assert after.max() < before.max()
    if inner_sweeps == 1:  # FB: the noise column of the rank-deficient F gets small
        # transformations in every inner sweep, as many as its rounding makes
        assert counts[HZ_COUNTERS["HZ_TRANSFORMED"]] == sum(e.transformations for e in expected)
        assert counts[HZ_COUNTERS["HZ_BIG"]] == sum(e.big for e in expected)
    if not prescaled:  # Theta: ||f~_c||^2 + ||g~_c||^2 = 1 for every column
        for Z, (F, G) in zip(ours, blocks):
            norm2 = np.linalg.norm(F @ Z, axis=0) ** 2 + np.linalg.norm(G @ Z, axis=0) ** 2
            assert np.abs(norm2 - 1).max() <= 1e-12


def test_semidefinite_cholesky(rng):
    """R^* R = M, upper triangular, also for a singular M (zero rows)."""
    F = rng.standard_normal((10, 6))
    F[:, 2] = F[:, 0] + F[:, 1]
    M = F.T @ F
    R = hz_reference.semidefinite_cholesky(M)
    assert np.allclose(np.tril(R, -1), 0)
    assert np.linalg.norm(R.T @ R - M) <= 50 * EPS * np.linalg.norm(M)
    assert abs(R[2, 2]) <= 1e-6 * abs(R[0, 0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", ["pointwise", "bo", "fb"])
@pytest.mark.parametrize("criterion", ["C1", "C2"])
def test_enhanced_dots(criterion, variant, dtype, rng):
    """dots="enhanced" ([NS] Appendix A) gives the GSVD that ordinary dots give,
    for every variant and criterion."""
    A, B = _random((30, 24), dtype, rng), _random((26, 24), dtype, rng)
    options = dict(variant=variant, block_width=None if variant == "pointwise" else 4,
                   criterion=criterion)
    enhanced = cljacobi.gsvd(A, B, dots="enhanced", **options)
    ordinary = cljacobi.gsvd(A, B, **options)
    _check_identities(A, B, enhanced)
    sigma, reference = enhanced.C / enhanced.S, ordinary.C / ordinary.S
    assert np.max(np.abs(sigma - reference) / reference) <= 1e3 * EPS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,p,n", [(3, 12, 10), (1, 6, 5), (7, 9, 8)])
@pytest.mark.parametrize("variant", ["pointwise", "bo"])
def test_fewer_rows_in_a(m, p, n, variant, dtype, rng):
    """A with m < n rows: the n - m smallest C are exactly zero with zero
    columns of U, the first m columns of U orthonormal, and the other
    generalized singular values those of the pencil (A^H A, B^H B)."""
    A, B = _random((m, n), dtype, rng), _random((p, n), dtype, rng)
    U, V, C, S, X = cljacobi.gsvd(A, B, variant=variant,
                                           block_width=None if variant == "pointwise" else 4)
    assert U.shape == (m, n) and V.shape == (p, n) and X.shape == (n, n)
    assert np.all(C[m:] == 0) and np.all(S[m:] == 1) and np.all(U[:, m:] == 0)
    tol = 30 * n * EPS
    assert np.linalg.norm(A - U * C @ X.conj().T) <= tol * np.linalg.norm(A)
    assert np.linalg.norm(B - V * S @ X.conj().T) <= tol * np.linalg.norm(B)
    assert np.linalg.norm(U[:, :m].conj().T @ U[:, :m] - np.eye(m)) <= tol
    assert np.linalg.norm(V.conj().T @ V - np.eye(n)) <= tol
    assert np.abs(C**2 + S**2 - 1).max() <= 4 * EPS
    pencil = scipy.linalg.eigvalsh(A.conj().T @ A, B.conj().T @ B)[::-1][:m]
    assert np.allclose((C / S)[:m], np.sqrt(pencil), rtol=1e-8)
    values = cljacobi.gsvdvals(A, B, variant=variant,
                               block_width=None if variant == "pointwise" else 4)
    np.testing.assert_array_equal(values[0], C)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["zero columns", "rank 3"])
@pytest.mark.parametrize("variant", ["pointwise", "bo"])
def test_rank_deficient_a(kind, variant, dtype, rng):
    """A square A of rank < n converges as fast as a full-rank one (exactly zero
    columns of F stay zero), with C zero to rounding where A Z is."""
    n = 12
    if kind == "zero columns":
        A = _random((n, n), dtype, rng)
        A[:, [2, 5, 7]] = 0
    else:
        A = _random((n, 3), dtype, rng) @ _random((3, n), dtype, rng)
    B = _random((n + 2, n), dtype, rng)
    result, info = cljacobi.gsvd(A, B, variant=variant, return_info=True,
                                 block_width=None if variant == "pointwise" else 4)
    assert info.sweeps <= 14
    _check_identities(A, B, result)
    rank = 3 if kind == "rank 3" else n - 3
    assert np.all(result.C[rank:] <= 1e3 * EPS) and np.all(result.C[:rank] > 1e-3)


@pytest.mark.parametrize("strategy", ["me", "mm", "ring", "round-robin"])
def test_strategies(strategy, rng):
    A, B = rng.standard_normal((20, 15)), rng.standard_normal((17, 15))
    result = cljacobi.gsvd(A, B, strategy=strategy)
    _check_identities(A, B, result)


def test_values_only_and_z_without_x(rng):
    """gsvdvals and compute_x=False: the same C and S (bitwise), Z = X^{-H} as computed."""
    A, B = rng.standard_normal((12, 10)), rng.standard_normal((11, 10))
    full = cljacobi.gsvd(A, B)
    C, S = cljacobi.gsvdvals(A, B)
    assert np.array_equal(C, full.C) and np.array_equal(S, full.S)
    no_x = cljacobi.gsvd(A, B, compute_x=False)
    assert no_x.X is None and np.array_equal(no_x.Z, full.Z)
    assert np.linalg.norm(A @ no_x.Z - no_x.U * no_x.C) <= 100 * EPS * np.linalg.norm(A @ no_x.Z)
    none = cljacobi.gsvd(A, B, compute_uv=False)
    assert none.U is None and none.V is None and np.array_equal(none.X, full.X)


@pytest.mark.parametrize("variant", ["pointwise", "bo", "fb"])
def test_bitwise_repeatable(variant, rng):
    A, B = _random((20, 16), np.complex128, rng), _random((18, 16), np.complex128, rng)
    options = {"variant": variant, "block_width": None if variant == "pointwise" else 4}
    first, second = cljacobi.gsvd(A, B, **options), cljacobi.gsvd(A, B, **options)
    for x, y in zip(first, second):
        assert np.array_equal(x, y)


def test_integer_and_single_precision_input(rng):
    """Integers are computed as float64 (numpy's promotion); float32 pairs in
    float64 and returned in float32."""
    A = rng.integers(-5, 6, (9, 6))
    B = np.eye(6) + 0.1 * rng.standard_normal((6, 6))
    result = cljacobi.gsvd(A, B)
    assert result.U.dtype == np.float64
    _check_identities(A.astype(float), B, result)
    single = cljacobi.gsvd(A.astype(np.float32), B.astype(np.float32))
    assert all(x.dtype == np.float32 for x in single)
    assert np.abs(single.C - result.C).max() <= 1e-6


@pytest.mark.parametrize("A,B,error,message", [
    (np.ones((4, 3)), np.ones((4, 2)), ValueError, "same number of columns"),
    (np.ones(4), np.ones((4, 4)), ValueError, "A must be a 2-D array"),
    (np.eye(3), np.ones((2, 3)), np.linalg.LinAlgError, "B has fewer rows than columns"),
    (np.full((3, 3), np.nan), np.eye(3), ValueError, "infs or NaNs"),
    (np.eye(3), np.ones((3, 3)), np.linalg.LinAlgError, "B is not of full column rank"),
    (np.eye(3), np.zeros((3, 3)), np.linalg.LinAlgError, "B is not of full column rank"),
    (np.array([["a"]]), np.eye(1), TypeError, "unsupported dtype"),
])
def test_wrong_inputs(A, B, error, message):
    with pytest.raises(error, match=message):
        cljacobi.gsvd(A, B)


@pytest.mark.parametrize("options,error,message", [
    ({"criterion": "C3"}, ValueError, "criterion must be one of"),
    ({"dots": "compensated"}, ValueError, "dots must be one of"),
    ({"variant": "fbo"}, ValueError, "variant must be one of"),
    ({"variant": "pointwise", "block_width": 8}, ValueError, "has no blocks"),
    ({"block_width": 6}, ValueError, "power of two"),
    ({"strategy": "zigzag"}, ValueError, "unknown strategy 'zigzag'"),
    ({"max_sweeps": 0}, ValueError, "max_sweeps"),
    ({"compute_uv": "yes"}, TypeError, "compute_uv"),
    ({"on_nonconvergence": "ignore"}, ValueError, "raise"),
])
def test_wrong_options(options, error, message):
    with pytest.raises(error, match=message):
        cljacobi.gsvd(np.eye(3), np.eye(3), **options)


def test_nonconvergence(rng):
    A, B = rng.standard_normal((12, 12)), rng.standard_normal((12, 12))
    with pytest.raises(cljacobi.ConvergenceError, match="did not converge in 1 sweeps"):
        cljacobi.gsvd(A, B, max_sweeps=1)
    with pytest.warns(cljacobi.ConvergenceWarning):
        _, info = cljacobi.gsvd(A, B, max_sweeps=1, on_nonconvergence="warn",
                                return_info=True)
    assert not info.converged and info.sweeps == 1


def test_zero_generalized_singular_value(rng):
    """A rank-deficient A: a zero C, S = 1, U still orthonormal (completed)."""
    A = rng.standard_normal((8, 5))
    A[:, 2] = 0
    B = rng.standard_normal((6, 5))
    result = cljacobi.gsvd(A, B)
    assert result.C[-1] <= 10 * EPS and abs(result.S[-1] - 1) <= EPS
    U = result.U
    assert np.linalg.norm(U.T @ U - np.eye(5)) <= 100 * EPS


def test_scaled_far_out_of_the_squares_range(rng):
    """Entries near 1e200 or 1e-200 (squared norms beyond float64) give the GSVD of
    the pair: the same C and S for (2^k A, 2^k B), generalized singular values
    scaled by 2^(j - k) for (2^j A, 2^k B)."""
    A, B = rng.standard_normal((10, 7)), rng.standard_normal((9, 7))
    C, S = cljacobi.gsvdvals(A, B)
    for j, k in ((660, 660), (-660, -660), (300, -300), (-330, 0)):
        A_s, B_s = np.ldexp(A, j), np.ldexp(B, k)
        result = cljacobi.gsvd(A_s, B_s)
        sigma = np.ldexp(C / S, j - k)
        assert np.max(np.abs(result.C / result.S - sigma) / sigma) <= 100 * EPS
        U, V, C_s, S_s, X = result
        # the residuals measured at the scale of A and B (their squares overflow)
        assert np.linalg.norm(A - np.ldexp(U * C_s @ X.T, -j)) <= 100 * EPS * np.linalg.norm(A)
        assert np.linalg.norm(B - np.ldexp(V * S_s @ X.T, -k)) <= 100 * EPS * np.linalg.norm(B)


def test_result_pickles_with_z():
    """GSVDResult keeps Z through pickle (multiprocessing, mpi4py's gather)."""
    import pickle

    from cljacobi.gsvd import GSVDResult

    result = GSVDResult(np.eye(2), np.eye(2), np.ones(2), np.zeros(2), np.eye(2), 2 * np.eye(2))
    copy = pickle.loads(pickle.dumps(result))
    assert all(np.array_equal(a, b) for a, b in zip(copy, result))
    assert np.array_equal(copy.Z, result.Z) and type(copy) is GSVDResult
