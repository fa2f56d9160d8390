"""The blocked variants ("bo", "fb"): the block step kernel against numpy, and
eig_indefinite/hsvd through them with the same accuracy bar as pointwise."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.host.blocked import TILE_ROWS, blocked_local_bytes
from cljacobi.host.programs import KernelSpec, build_program
from cljacobi.host.variants import choose_variant
from cljacobi.matrices import graded, with_spectrum
from cljacobi.reference import PairKind, pair_rotation
from cljacobi.strategies import step_table

EPS = np.finfo(np.float64).eps


def _numpy_block_step(G, signs, P, Q, w, inner_sweeps):
    """Reference of one block step: Gram, inner ME sweeps in two-sided form, G W."""
    cols = np.r_[P * w : P * w + w, Q * w : Q * w + w]
    X = G[:, cols]
    A = X.T @ X
    W = np.eye(2 * w)
    s = signs[cols]
    table = step_table("me", 2 * w).pairs
    for _ in range(inner_sweeps):
        big = False
        for step in table:
            rotations = []
            for i, j in step:
                hyperbolic = s[i] != s[j]
                kind, t, c = pair_rotation(A[i, i], A[j, j], A[i, j], hyperbolic)
                if kind == PairKind.ROTATE:
                    rotations.append((i, j, t, c, t if hyperbolic else -t))
                    moved = abs(t) * np.sqrt(max(A[i, i], A[j, j]) / min(A[i, i], A[j, j]))
                    big |= moved > np.sqrt(EPS) / 2
            R = np.eye(2 * w)
            for i, j, t, c, ti in rotations:
                R[i, i], R[j, i], R[i, j], R[j, j] = c, c * ti, c * t, c
            A = R.T @ A @ R
            for i, j, *_ in rotations:
                A[i, j] = A[j, i] = 0.0
            W = W @ R
        if not big:
            break
    out = G.copy()
    out[:, cols] = X @ W
    return out, W


@pytest.mark.parametrize(
    "w,inner_sweeps,in_local", [(2, 1, True), (4, 1, False), (8, 30, True), (8, 30, False)]
)
def test_block_step_against_numpy(queue, rng, w, inner_sweeps, in_local):
    """Gram (in row chunks), inner sweeps and update kernels of one parallel step."""
    m, blocks = 45, 4
    r = blocks * w
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-4, 4, r)
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    ld, wg, K, slots = 64, 16, 2 * w, 2
    chunk_rows = TILE_ROWS  # two chunks for m = 45: the partial sums are exercised
    chunks = -(-m // chunk_rows)
    program = build_program(queue.context, queue.device, KernelSpec(
        "blocked", "float64", wg, False, block_width=w, inner_strategy="me",
        tile_rows=TILE_ROWS, transform_in_local=in_local))
    columns = np.zeros((r, ld))
    columns[:, :m] = G.T
    pairs = np.array([[0, 3], [1, 2]], dtype=np.int32)  # one outer step, two block pairs
    mf = cl.mem_flags
    ctx = queue.context
    g_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=columns)
    s_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=signs)
    p_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pairs)
    partial = cl.Buffer(ctx, mf.READ_WRITE, 8 * slots * chunks * K * K)
    transforms = cl.Buffer(ctx, mf.READ_WRITE, 8 * slots * K * K)
    rotated = cl.Buffer(ctx, mf.READ_WRITE, 4 * slots)
    zeros = np.zeros(slots, np.int32)
    status = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    rotations = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    step = np.int32(0)
    cl.Kernel(program, "cjac_block_gram")(
        queue, (slots * wg, chunks), (wg, 1), g_buf, np.int32(ld), np.int32(m),
        np.int32(chunk_rows), p_buf, step, partial)
    cl.Kernel(program, "cjac_block_rotate")(
        queue, (slots * wg,), (wg,), partial, np.int32(chunks), s_buf, p_buf, step,
        np.int32(inner_sweeps), transforms, rotated, status, rotations)
    cl.Kernel(program, "cjac_block_update")(
        queue, (slots * wg, chunks), (wg, 1), g_buf, np.int32(ld), np.int32(m),
        np.int32(chunk_rows), p_buf, step, transforms, rotated)
    cl.enqueue_copy(queue, columns, g_buf)
    expected = G
    transforms_expected = []
    for P, Q in pairs:
        expected, W = _numpy_block_step(expected, signs, P, Q, w, inner_sweeps)
        transforms_expected.append(W)
    scale = np.abs(G).max()
    np.testing.assert_allclose(columns[:, :m].T / scale, expected / scale, rtol=0, atol=1e-12)
    W_device = np.empty((slots, K, K))
    cl.enqueue_copy(queue, W_device, transforms)
    np.testing.assert_allclose(W_device, np.array(transforms_expected), rtol=0, atol=1e-12)
    counts = np.empty(2, np.int32)
    cl.enqueue_copy(queue, counts, rotations)
    assert counts.min() > 0


@pytest.mark.parametrize("variant", ["bo", "fb"])
@pytest.mark.parametrize("n,p,w", [(33, 10, 4), (64, 64, 8), (100, 30, 16), (70, 0, 32)])
def test_eig_blocked_matches_numpy(variant, n, p, w, rng, queue):
    magnitudes = rng.uniform(0.1, 10.0, n)
    M = with_spectrum(np.concatenate([magnitudes[:p], -magnitudes[p:]]), rng=rng)
    if blocked_local_bytes(w) > queue.device.local_mem_size:
        # A block that cannot fit is refused up front, naming the device's limit.
        with pytest.raises(ValueError, match=f"block_width={w} needs .* local memory"):
            cljacobi.eig_indefinite(M, variant=variant, block_width=w)
        return
    (w_ours, U), info = cljacobi.eig_indefinite(
        M, variant=variant, block_width=w, return_info=True)
    assert info.variant == variant and info.block_width == w
    # Blocked sweeps ran, then pointwise sweeps finished the job.
    assert 0 < info.blocked_sweeps < info.sweeps
    w_np = np.linalg.eigvalsh(M)
    assert np.max(np.abs(w_ours - w_np)) <= 50 * n * EPS * np.abs(w_np).max()
    assert np.linalg.norm(M @ U - U * w_ours) <= 50 * n * EPS * np.linalg.norm(M)
    assert np.linalg.norm(U.T @ U - np.eye(n)) <= 50 * n * EPS


@pytest.mark.parametrize("variant", ["bo", "fb"])
def test_blocked_graded_relative_accuracy(variant, rng):
    """The Gram route alone would lose the small eigenvalues; the pointwise finish keeps them."""
    M, _, _ = graded(40, p=17, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    w = cljacobi.eig_indefinite(M, eigvals_only=True, variant=variant, block_width=8)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12


def test_hsvd_blocked(rng):
    G = rng.standard_normal((60, 48))
    J = np.where(rng.random(48) < 0.4, 1, -1)
    U, S, Vh, J_S = cljacobi.hsvd(G, J, variant="bo", block_width=8)
    tol = 100 * 60 * EPS
    assert np.linalg.norm(U * S @ Vh - G) <= tol * np.linalg.norm(G)
    assert np.linalg.norm(U.T @ U - np.eye(48)) <= tol
    assert np.linalg.norm(Vh @ np.diag(J) @ Vh.T - np.diag(J_S)) <= tol * np.linalg.norm(Vh) ** 2


def test_blocked_reproducible(rng):
    M = with_spectrum(rng.uniform(-5, 5, 50), rng=rng)
    first = cljacobi.eig_indefinite(M, variant="fb", block_width=8)
    again = cljacobi.eig_indefinite(M, variant="fb", block_width=8)
    assert np.array_equal(first.eigenvalues, again.eigenvalues)
    assert np.array_equal(first.eigenvectors, again.eigenvectors)


class _SmallLocalGPU:
    name = "Small GPU"
    type = cl.device_type.GPU
    local_mem_size = 48 * 1024


def test_variant_choice_and_errors():
    gpu = _SmallLocalGPU()
    assert choose_variant(gpu, 100, "auto", None) == ("pointwise", 0)
    assert choose_variant(gpu, 1023, "auto", None) == ("pointwise", 0)
    assert choose_variant(gpu, 1024, "auto", None) == ("bo", 8)
    assert choose_variant(gpu, 4096, "auto", None) == ("bo", 16)
    assert choose_variant(gpu, 100, "fb", None) == ("fb", 8)
    assert choose_variant(gpu, 5000, "fb", None) == ("fb", 16)
    # w = 32 fits 48 KiB only with the transformation in global memory; w = 64 not at all.
    assert blocked_local_bytes(32) <= gpu.local_mem_size
    assert blocked_local_bytes(32, transform_in_local=True) > gpu.local_mem_size
    assert choose_variant(gpu, 4096, "bo", 32) == ("bo", 32)
    with pytest.raises(ValueError, match=r"block_width=64 .*'Small GPU' has 49152"):
        choose_variant(gpu, 4096, "bo", 64)
    with pytest.raises(ValueError, match="variant must be one of"):
        cljacobi.eig_indefinite(np.eye(3), variant="blocked")
    with pytest.raises(ValueError, match="block_width"):
        cljacobi.eig_indefinite(np.eye(3), variant="bo", block_width=0)
