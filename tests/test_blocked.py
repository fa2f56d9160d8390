"""The blocked variants ("bo", "offdiag", "fb"): the block step kernels against numpy, for
real and complex Hermitian data (both complex storage layouts), and
eig_indefinite/hsvd/svd through them with the same accuracy bar as pointwise."""

from __future__ import annotations

import dataclasses
import re
from fractions import Fraction

import numpy as np
import pyopencl as cl
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
from cljacobi.errors import DeviceCapabilityError
from cljacobi.host.blocked import (
    COMPLEX_ELEMENT_BYTES,
    FULL_BLOCK_INNER_SWEEPS,
    GRAM_MICRO_TILE,
    GRAM_MMA_MAX_CHUNK_ROWS,
    GRAM_STAGED_MAX_CHUNK_ROWS,
    GRAM_TEAM_STAGES,
    ROTATE_MAX_WORK_GROUP,
    TILE_ROWS,
    UPDATE_GROUPS_PER_UNIT,
    UPDATE_MICRO_COLS,
    UPDATE_MICRO_ROWS,
    UPDATE_MMA_GROUPS_PER_UNIT,
    UPDATE_MMA_GROUPS_PER_UNIT_COMPLEX,
    UPDATE_PRODUCTS_STAGED_COMPLEX,
    UPDATE_STAGES_TEAMED,
    UPDATE_TILE_ROWS,
    UPDATE_TILE_ROWS_NARROW,
    UPDATE_WARPS_COMPLEX,
    UPDATE_WARPS_TEAMED,
    BlockedHSVD,
    BlockedPlan,
    BlockedSpec,
    _row_chunks,
    blocked_local_bytes,
    default_transform_lanes,
    gram_work_group_size,
    local_memory_fit,
    offdiag_step_pairs,
    transform_registers_take,
    update_work_group_size,
)
from cljacobi.host.limits import STATIC_LOCAL_MEMORY_NV90, static_local_memory
from cljacobi.host.matrix_products import compute_capability
from cljacobi.host.programs import build_program, render
from cljacobi.host.signatures import c_defines
from cljacobi.host.status import Status
from cljacobi.host.variants import choose_variant
from cljacobi.matrices import graded, with_spectrum
from cljacobi.reference import PairKind, pair_rotation
from cljacobi.strategies import step_table

EPS = np.finfo(np.float64).eps
LAYOUTS = ["interleaved", "split"]


def _numpy_block_step(G, signs, P, Q, w, inner_sweeps, table=None):
    """Reference of one block step: Gram, inner ME sweeps (or the steps of
    `table`) in two-sided form, G W.

    Real or complex G.  A pair's rotation is the pointwise kernel's column
    update g_i' = c (g_i + s_i g_j), g_j' = c (g_j + s_j g_i) (s_j = t, s_i =
    -t or t for real data; s_j = t e^{i alpha}, s_i = -conj(s_j) or conj(s_j)
    for complex a_ij = |a_ij| e^{i alpha}, t from |a_ij|), i.e. X <- X R with
    R = c [[1, s_j], [s_i, 1]] on rows and columns (i, j), and on the Gram
    matrix A <- R^* A R, which annihilates a_ij.
    """
    complex_ = np.iscomplexobj(G)
    cols = np.r_[P * w : P * w + w, Q * w : Q * w + w]
    X = G[:, cols]
    A = X.conj().T @ X
    W = np.eye(2 * w, dtype=G.dtype)
    s = signs[cols]
    table = step_table("me", 2 * w).pairs if table is None else table
    for _ in range(inner_sweeps):
        big = False
        for step in table:
            rotations = []
            for i, j in step:
                hyperbolic = s[i] != s[j]
                a_ii, a_jj, a_ij = A[i, i].real, A[j, j].real, A[i, j]
                kind, t, c = pair_rotation(a_ii, a_jj, abs(a_ij) if complex_ else a_ij,
                                           hyperbolic)
                if kind == PairKind.ROTATE:
                    s_j = t * a_ij / abs(a_ij) if complex_ else t
                    s_i = np.conj(s_j) if hyperbolic else -np.conj(s_j)
                    rotations.append((i, j, c, s_j, s_i, c * c * (a_ii + a_jj)))
                    moved = abs(t) * np.sqrt(max(a_ii, a_jj) / min(a_ii, a_jj))
                    big |= moved > np.sqrt(EPS) / 2
            R = np.eye(2 * w, dtype=G.dtype)
            for i, j, c, s_j, s_i, _ in rotations:
                R[i, i], R[j, i], R[i, j], R[j, j] = c, c * s_i, c * s_j, c
            A = R.conj().T @ A @ R
            for i, j, *_, size in rotations:
                # The phase convention annihilates the pivot entry (to the rounding
                # of R^* A R, which grows with cosh^2 for a hyperbolic rotation).
                assert abs(A[i, j]) <= 1e3 * EPS * size
                A[i, j] = A[j, i] = 0.0
            W = W @ R
        if not big:
            break
    out = G.copy()
    out[:, cols] = X @ W
    return out, W


def _complex_normal(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _to_device_columns(columns, layout):
    """Rows = columns of a matrix, as the device buffer holds them: real
    float64, complex128 interleaved, or split (each column's real parts, then
    its imaginary parts)."""
    if np.iscomplexobj(columns) and layout == "split":
        return np.ascontiguousarray(np.concatenate([columns.real, columns.imag], axis=1))
    return np.ascontiguousarray(columns)


def _from_device_columns(raw, like, layout):
    """Inverse of :func:`_to_device_columns` (`like`: shape and dtype)."""
    if np.iscomplexobj(like) and layout == "split":
        half = raw.shape[1] // 2
        return raw[:, :half] + 1j * raw[:, half:]
    return raw


_UPDATE_DEFAULTS = (UPDATE_TILE_ROWS, UPDATE_MICRO_ROWS, UPDATE_MICRO_COLS)


def _spec_type(complex_, layout):
    """(dtype, layout) of the BlockedSpec for real or complex data."""
    return ("complex128", layout) if complex_ else ("float64", "interleaved")


def _blocked_spec(w, *, in_local=None, micro_tile=GRAM_MICRO_TILE, slices=1, rotate_wg=16,
                  tile_rows=TILE_ROWS, update=_UPDATE_DEFAULTS, complex_=False, layout="split",
                  inner_method="sweeps", products="fma", loads_ahead=(False, False),
                  gram_stages=0, in_registers=False, transform_lanes=0, update_parts=1,
                  update_stages=0, update_products=4):
    """The spec of these sizes; W in the rotate kernel's local memory by
    default wherever that fits the most static local memory a device gives
    (not at real w = 64: 285 KB)."""
    if in_local is None:
        in_local = blocked_local_bytes(
            w, transform_in_local=True,
            element_bytes=COMPLEX_ELEMENT_BYTES if complex_ else 8) <= STATIC_LOCAL_MEMORY_NV90
    update_rows, update_micro_rows, update_micro_cols = update
    dtype, spec_layout = _spec_type(complex_, layout)
    return BlockedSpec(
        dtype=dtype, layout=spec_layout, block_width=w, inner_strategy="me",
        inner_method=inner_method,
        tile_rows=tile_rows, transform_in_local=in_local, gram_micro_tile=micro_tile,
        gram_row_slices=slices, rotate_work_group_size=rotate_wg,
        update_tile_rows=update_rows, update_micro_rows=update_micro_rows,
        update_micro_cols=update_micro_cols, matrix_products=products,
        gram_loads_ahead=loads_ahead[0], update_loads_ahead=loads_ahead[1],
        gram_stages=gram_stages, transform_in_registers=in_registers,
        transform_lanes=transform_lanes if in_registers else 0,
        update_column_parts=update_parts, update_stages=update_stages,
        update_products=update_products)


def _blocked_program(queue, w, **sizes):
    """(program, spec) of the blocked kernels with these sizes (:func:`_blocked_spec`)."""
    spec = _blocked_spec(w, **sizes)
    return build_program(queue.context, queue.device, spec), spec


def _block_step(queue, G, signs, pairs, w, inner_sweeps, *, chunk_rows=TILE_ROWS,
                in_local=None, micro_tile=GRAM_MICRO_TILE, slices=1, rotate_wg=16,
                tile_rows=TILE_ROWS, update=_UPDATE_DEFAULTS, layout="split",
                whole_group=None, products="fma", inner_method=None,
                loads_ahead=(False, False), gram_stages=0, in_registers=False,
                transform_lanes=0, ld=None):
    """One parallel step on the device: (G after the step, partial Gram matrices,
    transformations, rotation counts).  Complex G is stored in `layout`.
    `whole_group` (0 or 1) runs the "stream" rotate kernel instead of the
    inner sweeps, or with ``inner_method="offdiag"`` that one."""
    m, r = G.shape
    K, slots = 2 * w, len(pairs)
    complex_ = np.iscomplexobj(G)
    dtype = np.complex128 if complex_ else np.float64
    ld = ld or -(-m // 16) * 16 + 16
    chunks = -(-m // chunk_rows)
    program, spec = _blocked_program(
        queue, w, in_local=in_local, micro_tile=micro_tile, slices=slices, rotate_wg=rotate_wg,
        tile_rows=tile_rows, update=update, complex_=complex_, layout=layout,
        inner_method=inner_method or ("sweeps" if whole_group is None else "stream"),
        products=products, loads_ahead=loads_ahead, gram_stages=gram_stages,
        in_registers=in_registers, transform_lanes=transform_lanes)
    gram_wg, update_wg = spec.gram_work_group_size, spec.update_work_group_size
    columns = np.full((r, ld), complex(np.nan, np.nan) if complex_ else np.nan,
                      dtype)  # rows past m must not be read
    columns[:, :m] = G.T
    raw = _to_device_columns(columns, layout)
    pairs = np.ascontiguousarray(pairs, dtype=np.int32)
    mf = cl.mem_flags
    ctx = queue.context
    g_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=raw)
    s_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=signs)
    p_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=pairs)
    item = np.dtype(dtype).itemsize
    # NaN where the Gram kernel must not write: below the diagonal
    partial = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                        hostbuf=np.full((slots, chunks, K, K), np.nan, dtype))
    transforms = cl.Buffer(ctx, mf.READ_WRITE, item * slots * K * K)
    rotated = cl.Buffer(ctx, mf.READ_WRITE, 4 * slots)
    peak = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.zeros(r))
    zeros = np.zeros(slots, np.int32)
    status = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    rotations = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=zeros)
    sigs = spec.signatures
    step = {"outer_pairs": p_buf, "step": 0}
    gram = sigs["cjac_block_gram"].kernel(
        program, G=g_buf, ldg=ld, m=m, chunk_rows=chunk_rows, partial=partial, **step)
    rotate = sigs["cjac_block_rotate"].kernel(
        program, partial=partial, chunks=chunks, m=m, signs=s_buf, peak=peak,
        inner_sweeps=inner_sweeps, transforms=transforms, rotated=rotated, status=status,
        rotations=rotations, **step,
        **({} if whole_group is None else {"whole_group": whole_group}))
    update_kernel = sigs["cjac_block_update"].kernel(
        program, X=g_buf, ldx=ld, m=m, chunk_rows=chunk_rows, transforms=transforms,
        rotated=rotated, **step)
    cl.enqueue_nd_range_kernel(queue, gram, (slots * gram_wg, chunks), (gram_wg, 1))
    cl.enqueue_nd_range_kernel(queue, rotate, (slots * rotate_wg,), (rotate_wg,))
    cl.enqueue_nd_range_kernel(queue, update_kernel, (slots * update_wg, chunks), (update_wg, 1))
    cl.enqueue_copy(queue, raw, g_buf)
    columns = _from_device_columns(raw, columns, layout)
    partial_host = np.empty((slots, chunks, K, K), dtype)
    cl.enqueue_copy(queue, partial_host, partial)
    partial_host = _hermitian_from_upper(partial_host)
    W_device = np.empty((slots, K, K), dtype)
    cl.enqueue_copy(queue, W_device, transforms)
    counts = np.empty(slots, np.int32)
    cl.enqueue_copy(queue, counts, rotations)
    return columns[:, :m].T, partial_host, W_device, counts


def _hermitian_from_upper(partial):
    """The partial Gram matrices as the kernels read them: the stored entries
    on and above the diagonal, each mirrored (conjugated) below, after
    asserting that nothing was stored below (still NaN) and that the stored
    ones are finite with a real diagonal."""
    K = partial.shape[-1]
    below = np.tril(np.ones((K, K), bool), -1)
    assert np.isnan(partial[..., below]).all(), "the Gram kernel wrote below the diagonal"
    assert np.isfinite(partial[..., ~below]).all()
    assert not np.diagonal(partial, axis1=-2, axis2=-1).imag.any()
    upper = np.where(below, 0, partial)
    return upper + np.swapaxes(np.triu(upper, 1), -1, -2).conj()


def _check_block_step(queue, G, signs, pairs, w, inner_sweeps, **sizes):
    """The device step against :func:`_numpy_block_step`; returns the device results."""
    G_device, partial, W_device, counts = _block_step(
        queue, G, signs, pairs, w, inner_sweeps, **sizes)
    expected = G
    transforms_expected = []
    for P, Q in pairs:
        expected, W = _numpy_block_step(expected, signs, P, Q, w, inner_sweeps)
        transforms_expected.append(W)
    scale = np.abs(G).max()
    np.testing.assert_allclose(G_device / scale, expected / scale, rtol=0, atol=1e-12)
    np.testing.assert_allclose(W_device, np.array(transforms_expected), rtol=0, atol=1e-12)
    assert counts.min() > 0
    return G_device, partial, W_device


@pytest.mark.parametrize(
    "w,inner_sweeps,in_local", [(2, 1, True), (4, 1, False), (8, 30, True), (8, 30, False)]
)
def test_block_step_against_numpy(queue, rng, w, inner_sweeps, in_local):
    """Gram (in row chunks), inner sweeps and update kernels of one parallel step."""
    m, blocks = 45, 4
    r = blocks * w
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-4, 4, r)
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    pairs = [[0, 3], [1, 2]]  # one outer step, two block pairs
    # chunk_rows = TILE_ROWS: two chunks for m = 45, the partial sums are exercised
    _check_block_step(queue, G, signs, pairs, w, inner_sweeps, in_local=in_local)


def _two_pair_step(rng, w, complex_):
    """(G, signs, pairs): 45 rows of 4 blocks of graded columns, real or
    complex, a random signature, and one outer step of two block pairs."""
    m, r = 45, 4 * w
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-4, 4, r)
    if complex_:
        G = G + 1j * rng.standard_normal((m, r))
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    return G, signs, [[0, 3], [1, 2]]


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("whole_group", [0, 1])
@pytest.mark.parametrize("w,in_local", [(2, True), (4, False), (8, True)])
def test_stream_block_step_against_numpy(queue, rng, w, in_local, whole_group, complex_):
    """The "stream" rotate kernel (Strumpen, Hoffmann & Agarwal's block
    transformation: every rotation from the same Gram matrix, composed in the
    order a, then b) is cljacobi.stream_reference.stream_block_transformation,
    on a mix of trigonometric and hyperbolic pairs, and the update applies it."""
    from cljacobi.stream_reference import stream_block_transformation

    G, signs, pairs = _two_pair_step(rng, w, complex_)
    G_device, _, W_device, counts = _block_step(
        queue, G, signs, pairs, w, 1, in_local=in_local, whole_group=whole_group,
        rotate_wg=min(w * w, 16))
    expected = G.copy()
    for slot, (P, Q) in enumerate(pairs):
        cols = np.r_[P * w: P * w + w, Q * w: Q * w + w]
        X = G[:, cols]
        W = stream_block_transformation(X.conj().T @ X, signs[cols],
                                        whole_group=bool(whole_group))
        np.testing.assert_allclose(W_device[slot], W, rtol=0, atol=1e-12 * np.abs(W).max())
        expected[:, cols] = X @ W
        rotations = w * w if not whole_group else w * (2 * w - 1)
        assert counts[slot] == rotations  # random data: every pair rotates
    # the same program runs both steps of a sweep: whole_group is an argument
    scale = np.abs(G).max()
    np.testing.assert_allclose(G_device / scale, expected / scale, rtol=0, atol=1e-12)


def test_offdiag_step_pairs():
    """The "offdiag" table: w - 1 steps within the blocks (ME on each), then w
    steps across; every step covers 0..2w-1 and every pair appears once."""
    for w in (1, 2, 4, 8, 16, 32):
        table = offdiag_step_pairs("me", w)
        assert len(table) == 2 * w - 1
        for step in table:
            assert sorted(i for pair in step for i in pair) == list(range(2 * w))
            assert all(i < j for i, j in step)
        pairs = [pair for step in table for pair in step]
        assert len(set(pairs)) == len(pairs) == w * (2 * w - 1)
        across = table[w - 1:]
        assert all((i < w) != (j < w) for step in across for i, j in step)
        assert all((i < w) == (j < w) for step in table[:w - 1] for i, j in step)
    with pytest.raises(ValueError, match="even block width"):
        offdiag_step_pairs("me", 3)
    with pytest.raises(ValueError, match="even block_width"):
        cljacobi.eig_indefinite(np.eye(12), variant="offdiag", block_width=3)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("whole_group", [0, 1])
@pytest.mark.parametrize("w,in_local", [(2, True), (4, False), (8, True)])
def test_offdiag_block_step_against_numpy(queue, rng, w, in_local, whole_group, complex_):
    """The "offdiag" rotate kernel is one inner sweep over the steps of
    offdiag_step_pairs: all of them with whole_group (the first outer step of
    a sweep), else only the w steps across the blocks (Novakovic & Singer
    2011, Sect. 5); the update applies the W it built."""
    G, signs, pairs = _two_pair_step(rng, w, complex_)
    G_device, _, W_device, counts = _block_step(
        queue, G, signs, pairs, w, 1, in_local=in_local, whole_group=whole_group,
        inner_method="offdiag", rotate_wg=min(w * w, 16))
    table = offdiag_step_pairs("me", w)
    table = table if whole_group else table[w - 1:]
    expected = G
    for slot, (P, Q) in enumerate(pairs):
        expected, W = _numpy_block_step(expected, signs, P, Q, w, 1, table=table)
        np.testing.assert_allclose(W_device[slot], W, rtol=0, atol=1e-12 * np.abs(W).max())
        # random data: every pair of the steps run rotates
        assert counts[slot] == (w * (2 * w - 1) if whole_group else w * w)
    scale = np.abs(G).max()
    np.testing.assert_allclose(G_device / scale, expected / scale, rtol=0, atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("whole_group", [0, 1])
@pytest.mark.parametrize("w,lanes,rows", [(4, 1, 1), (4, 2, 1), (8, 2, 1), (8, 4, 1), (16, 8, 1),
                                          (4, 2, 2), (8, 2, 4), (8, 4, 2), (16, 4, 2)])
def test_offdiag_transform_in_registers(queue, rng, w, lanes, rows, whole_group, complex_):
    """W in registers in the steps across the blocks (the lanes of a row pass
    W's entries on through local memory here), `rows` rows of W a work-item,
    gives bitwise the W, G and rotation counts of W in its global slot, and
    both are the reference's."""
    G, signs, pairs = _two_pair_step(rng, w, complex_)
    wg = 2 * w * lanes // rows
    results = [_block_step(queue, G, signs, pairs, w, 1, in_local=False,
                           whole_group=whole_group, inner_method="offdiag",
                           rotate_wg=wg, in_registers=in_registers, transform_lanes=lanes)
               for in_registers in (False, True)]
    for name, in_global, in_registers in zip(("G", "partial", "W", "counts"), *results):
        np.testing.assert_array_equal(in_registers, in_global, err_msg=name)
    table = offdiag_step_pairs("me", w)
    expected = G
    for slot, (P, Q) in enumerate(pairs):
        expected, W = _numpy_block_step(expected, signs, P, Q, w, 1,
                                        table=table if whole_group else table[w - 1:])
        np.testing.assert_allclose(results[1][2][slot], W, rtol=0,
                                   atol=1e-12 * np.abs(W).max())


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("w", [8, 16, 32])
def test_offdiag_transform_lane_a_column(queue, rng, w, complex_):
    """On a device with the tensor-core products (where W's entries pass on
    by shfl.sync, PTX), a lane for every column of P and several rows of W a
    lane (the default there, default_transform_lanes) gives bitwise the W, G
    and rotation counts of W in its global slot.  Elsewhere the layout runs
    through local memory with two columns a lane (the test above)."""
    capability = compute_capability(queue.device)
    if capability is None or capability < (9, 0):
        pytest.skip("shfl.sync beside mma.m16n8k4: NVIDIA compute capability 9.0")
    G, signs, pairs = _two_pair_step(rng, w, complex_)
    wg = min(w * w, ROTATE_MAX_WORK_GROUP)
    lanes = default_transform_lanes(w, wg, "ptx")
    assert lanes == w and 2 * w * w // wg >= 1
    results = [_block_step(queue, G, signs, pairs, w, 1, in_local=False, whole_group=whole_group,
                           inner_method="offdiag", rotate_wg=wg, in_registers=in_registers,
                           transform_lanes=lanes, products="mma.m16n8k4")
               for whole_group in (0, 1) for in_registers in (False, True)]
    for in_global, in_registers in (results[:2], results[2:]):
        for name, a, b in zip(("G", "partial", "W", "counts"), in_registers, in_global):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_transform_in_registers_is_checked():
    """BlockedSpec refuses W in registers where the rotate kernel cannot keep
    it there, naming what it needs; the shuffle follows the matrix products."""
    base = _blocked_spec(8, in_local=False, inner_method="offdiag", rotate_wg=32)
    spec = dataclasses.replace(base, transform_in_registers=True)
    assert (spec.shuffle, spec.rotate_exchange) == ("local", 4 * 8 * 8)
    assert "w_exchange" in render(spec) and "shfl.sync" not in render(spec)
    ptx = dataclasses.replace(spec, matrix_products="mma.m16n8k4")
    assert (ptx.shuffle, ptx.rotate_exchange) == ("ptx", 0)
    assert "shfl.sync" in render(ptx) and "w_exchange" not in render(ptx)
    assert base.rotate_exchange == 0 and "w_right" not in render(base)
    for change in ({"inner_method": "sweeps"}, {"transform_in_local": True},
                   {"rotate_work_group_size": 24}, {"rotate_work_group_size": 128}):
        with pytest.raises(ValueError, match="transform_in_registers needs inner_method "
                                             "'offdiag', W outside local memory"):
            dataclasses.replace(spec, **change)
    assert not transform_registers_take("offdiag", 32, 64 * 64, False)  # 64 lanes
    assert transform_registers_take("offdiag", 32, 512, False)
    # a lane a column of P: through shfl.sync only; several rows a work-item
    assert transform_registers_take("offdiag", 32, 512, False, 32, "ptx")
    assert not transform_registers_take("offdiag", 32, 512, False, 32, "local")
    assert transform_registers_take("offdiag", 32, 512, False, 16, "local")
    assert not transform_registers_take("offdiag", 32, 512, False, 3, "ptx")
    assert (default_transform_lanes(32, 512, "ptx"), default_transform_lanes(32, 512, "local"),
            default_transform_lanes(8, 64, "ptx")) == (32, 0, 8)
    ptx_lanes = dataclasses.replace(ptx, rotate_work_group_size=64, transform_lanes=8)
    assert "W_ROWS 2" in render(ptx_lanes) and "W_LANES 8" in render(ptx_lanes)
    with pytest.raises(ValueError, match="L=8"):
        dataclasses.replace(spec, rotate_work_group_size=64, transform_lanes=8)  # local: w/2
    with pytest.raises(ValueError, match="transform_lanes is a layout of W in registers"):
        dataclasses.replace(base, transform_lanes=4)
    with pytest.raises(ValueError, match="transform_lanes must be a non-negative integer"):
        dataclasses.replace(spec, transform_lanes=-1)


def _gram_expected(G, pairs, w, chunk_rows):
    """The partial Gram matrices X^* X per block pair and row chunk, in numpy."""
    m = G.shape[0]
    out = []
    for P, Q in pairs:
        cols = np.r_[P * w : P * w + w, Q * w : Q * w + w]
        out.append([G[first:first + chunk_rows, cols].conj().T
                    @ G[first:first + chunk_rows, cols]
                    for first in range(0, m, chunk_rows)])
    return np.array(out)


def _assert_refused(queue, rng, w, match="work-groups of", **sizes):
    """Kernel sizes beyond the device's work-group (or local memory) limit: a
    clear error before any launch."""
    G = rng.standard_normal((4 * w, 4 * w))
    with pytest.raises(DeviceCapabilityError, match=match):
        driver = BlockedHSVD(queue, accumulate_v=False, block_width=w, variant="bo", **sizes)
        driver.run(G, np.ones(4 * w, np.int8), max_sweeps=1)


@pytest.mark.parametrize("w", [3, 8, 16, 32])
@pytest.mark.parametrize("micro_tile", [1, 2, 4, 8])
@pytest.mark.parametrize("slices", [1, 3, 8])
def test_gram_micro_tiles_against_numpy(queue, rng, w, micro_tile, slices):
    """Every micro-tile and slice count: the partial Gram matrices (stored on
    and above the diagonal only, which _block_step checks), with K = 2w padded
    where the micro-tile does not divide it and row counts that leave partial
    tiles and chunks."""
    if gram_work_group_size(w, micro_tile, slices) > queue.device.max_work_group_size:
        _assert_refused(queue, rng, w, gram_micro_tile=micro_tile, gram_row_slices=slices)
        return
    m, blocks = 77, 4
    r = blocks * w
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-6, 6, r)
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    pairs = [[0, 3], [1, 2]]
    chunk_rows = 48  # not a multiple of the tile: a half tile ends every chunk
    _, partial, _, _ = _block_step(queue, G, signs, pairs, w, 1, chunk_rows=chunk_rows,
                                   micro_tile=micro_tile, slices=slices)
    expected = _gram_expected(G, pairs, w, chunk_rows)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(partial / scale, expected / scale, rtol=0, atol=1e-14)
    program, _ = _blocked_program(queue, w, micro_tile=micro_tile, slices=slices)
    kernel = cl.Kernel(program, "cjac_block_gram")
    assert kernel.get_work_group_info(
        cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, queue.device)[0] == \
        gram_work_group_size(w, micro_tile, slices)


def test_gram_one_slice_sums_rows_in_order(queue, rng):
    """With one row slice every entry is the in-order fma chain over the rows,
    whatever the micro-tile: the partial Gram matrices agree bitwise."""
    w, m = 8, 70
    G = rng.standard_normal((m, 4 * w))
    signs = np.ones(4 * w, np.int32)
    results = [_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 1, micro_tile=tile)[1]
               for tile in (1, 2, 4, 8)]
    for other in results[1:]:
        assert np.array_equal(results[0], other)


def _update(queue, X, pairs, w, W, rotated, *, chunk_rows, update=_UPDATE_DEFAULTS,
            layout="split", products="fma", loads_ahead=(False, False), update_parts=1,
            update_stages=0, update_products=4, ld=None):
    """The update kernel alone: [X_P X_Q] <- [X_P X_Q] W_k for the block pairs
    with ``rotated[k]``, X (m x r) column-major with a padded leading dimension
    (`ld`, default a multiple of 16; complex X stored in `layout`)."""
    m, r = X.shape
    K, slots = 2 * w, len(pairs)
    complex_ = np.iscomplexobj(X)
    dtype = np.complex128 if complex_ else np.float64
    ld = ld or -(-m // 16) * 16 + 16
    chunks = -(-m // chunk_rows)
    program, spec = _blocked_program(queue, w, update=update, complex_=complex_,
                                     layout=layout, products=products, loads_ahead=loads_ahead,
                                     update_parts=update_parts, update_stages=update_stages,
                                     update_products=update_products)
    update_wg = spec.update_work_group_size
    columns = np.full((r, ld), complex(np.nan, np.nan) if complex_ else np.nan,
                      dtype)  # rows past m must not be read
    columns[:, :m] = X.T
    raw = _to_device_columns(columns, layout)
    mf = cl.mem_flags
    ctx = queue.context
    x_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=raw)
    p_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                      hostbuf=np.ascontiguousarray(pairs, dtype=np.int32))
    w_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                      hostbuf=np.ascontiguousarray(W, dtype=dtype).reshape(slots, K * K))
    r_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR,
                      hostbuf=np.asarray(rotated, dtype=np.int32))
    kernel = spec.signatures["cjac_block_update"].kernel(
        program, X=x_buf, ldx=ld, m=m, chunk_rows=chunk_rows, outer_pairs=p_buf, step=0,
        transforms=w_buf, rotated=r_buf)
    assert kernel.get_work_group_info(
        cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, queue.device)[0] == update_wg
    cl.enqueue_nd_range_kernel(queue, kernel, (slots * update_wg, chunks), (update_wg, 1))
    cl.enqueue_copy(queue, raw, x_buf)
    columns = _from_device_columns(raw, columns, layout)
    assert np.isnan(columns[:, m:].real).all()  # nothing written past the rows
    assert np.isnan(columns[:, m:].imag).all() or not complex_
    return columns[:, :m].T.copy()


def _update_expected(X, pairs, w, W, rotated):
    out = X.copy()
    for (P, Q), W_k, flag in zip(pairs, W, rotated):
        if flag:
            cols = np.r_[P * w : P * w + w, Q * w : Q * w + w]
            out[:, cols] = X[:, cols] @ W_k
    return out


def _update_operands(rng, rows, w, complex_=False):
    """Three block pairs over six block columns, the middle one not rotated."""
    K = 2 * w
    draw = _complex_normal if complex_ else (lambda rng, shape: rng.standard_normal(shape))
    X = draw(rng, (rows, 6 * w)) * 2.0 ** rng.integers(-6, 6, 6 * w)
    W = draw(rng, (3, K, K)) + np.eye(K)
    return X, [[0, 5], [3, 1], [2, 4]], W, [1, 0, 1]


#: (update_tile_rows, update_micro_rows, update_micro_cols): the defaults, the
#: GPU candidates, micro-tiles dividing neither the tile nor K, one row per
#: work-item, and a work-group of 256 K items (beyond 4096 for w >= 16).
UPDATE_SIZES = [_UPDATE_DEFAULTS, (16, 4, 4), (32, 2, 4), (64, 2, 4), (12, 3, 5), (7, 7, 3),
                (5, 1, 1), (256, 1, 1)]


def _update_refusal(queue, w, update):
    """The match of the error the driver raises for these sizes, or None if they run."""
    rows, _, micro_cols = update
    if blocked_local_bytes(w, update_tile_rows=rows, update_micro_cols=micro_cols) > \
            queue.device.local_mem_size:
        return "local memory"  # checked first, when the driver is made
    if update_work_group_size(w, *update) > queue.device.max_work_group_size:
        return "update kernel .* needs work-groups of"
    return None


@pytest.mark.parametrize("w", [3, 8, 16, 32])
@pytest.mark.parametrize("update", UPDATE_SIZES)
def test_update_kernel_against_numpy(queue, rng, w, update):
    """The update kernel for G (77 rows in chunks of 48: partial tiles in every
    chunk) and for V (r_pad = 6w rows, one partial chunk) against numpy; a pair
    with rotated = 0 stays untouched; every tile and micro-tile shape gives
    bitwise the results of the defaults (the same fma chain over a), run after
    run."""
    refusal = _update_refusal(queue, w, update)
    if refusal:
        _assert_refused(queue, rng, w, match=refusal, update_tile_rows=update[0],
                        update_micro_rows=update[1], update_micro_cols=update[2])
        return
    for rows, chunk_rows in ((77, 48), (6 * w, 32)):
        X, pairs, W, rotated = _update_operands(rng, rows, w)
        result = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows, update=update)
        expected = _update_expected(X, pairs, w, W, rotated)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(result / scale, expected / scale, rtol=0, atol=1e-13)
        assert np.array_equal(result[:, w:2 * w], X[:, w:2 * w])  # block 1: pair not rotated
        assert np.array_equal(result[:, 3 * w:4 * w], X[:, 3 * w:4 * w])
        again = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows, update=update)
        assert np.array_equal(result, again)
        reference = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows)
        assert np.array_equal(result, reference)


def _fma(x, y, z):
    """Correctly rounded x * y + z."""
    return float(Fraction(x) * Fraction(y) + Fraction(z))


@pytest.mark.parametrize("w,update", [(3, (12, 3, 5)), (8, (32, 4, 4)), (8, (16, 2, 3))])
def test_update_kernel_fma_chain(queue, rng, w, update):
    """Every output is the fma chain over a = 0, ..., K-1 from 0, bitwise."""
    X, pairs, W, rotated = _update_operands(rng, 21, w)
    result = _update(queue, X, pairs, w, W, rotated, chunk_rows=16, update=update)
    expected = X.copy()
    for (P, Q), W_k, flag in zip(pairs, W, rotated):
        if not flag:
            continue
        cols = np.r_[P * w : P * w + w, Q * w : Q * w + w]
        for row in range(X.shape[0]):
            for b, col in enumerate(cols):
                y = 0.0
                for a, source in enumerate(cols):
                    y = _fma(X[row, source], W_k[a, b], y)
                expected[row, col] = y
    assert np.array_equal(result, expected)


@pytest.mark.parametrize("update", [(16, 4, 4), (12, 3, 5), (7, 7, 3)])
def test_block_step_update_sizes(queue, rng, update):
    """Whole steps with other update tiles: the same results as numpy."""
    w, m = 8, 45
    G = rng.standard_normal((m, 4 * w)) * 2.0 ** rng.integers(-4, 4, 4 * w)
    signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
    _check_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 30, update=update)


@pytest.mark.parametrize("w", [8, 16, 32])
@pytest.mark.parametrize("micro_tile", [1, 2, 4])
@pytest.mark.parametrize("rotate_wg", [1, 7, 64, "w*w"])
@pytest.mark.parametrize("in_local", [True, False])
def test_block_step_sizes_against_numpy(queue, rng, w, micro_tile, rotate_wg, in_local):
    """Gram micro-tiles and rotate work-group sizes (fewer items than pairs,
    not a power of two, up to one item per 2 x 2 block) through a whole step."""
    rotate_wg = w * w if rotate_wg == "w*w" else rotate_wg
    slices = 3
    if max(rotate_wg, gram_work_group_size(w, micro_tile, slices)) > \
            queue.device.max_work_group_size:
        _assert_refused(queue, rng, w, gram_micro_tile=micro_tile, gram_row_slices=slices,
                        rotate_work_group_size=rotate_wg)
        return
    if in_local and blocked_local_bytes(
            w, transform_in_local=True, gram_micro_tile=micro_tile) > queue.device.local_mem_size:
        pytest.skip("W does not fit the device's local memory")
    m, blocks = 53, 4
    r = blocks * w
    G = rng.standard_normal((m, r)) * 2.0 ** rng.integers(-4, 4, r)
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    _check_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 30 if w == 8 else 1,
                      in_local=in_local, micro_tile=micro_tile, slices=slices,
                      rotate_wg=rotate_wg)


@pytest.mark.parametrize("w", [8, 16])
def test_rotate_work_group_size_bitwise(queue, rng, w):
    """The rotate kernel does the same operations whatever its work-group size."""
    m = 64
    G = rng.standard_normal((m, 4 * w))
    signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
    results = [_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 30, rotate_wg=size,
                           in_local=size % 2 == 0)
               for size in (1, 5, 16, w * w)]
    for G_other, _, W_other, _ in results[1:]:
        assert np.array_equal(results[0][0], G_other)
        assert np.array_equal(results[0][2], W_other)


def _assert_true_refusal(device: cl.Device, message: str) -> None:
    """A refusal names the device's real limit and a need above it."""
    local = re.search(r"needs (\d+) bytes of local memory .* has (\d+)", message)
    items = re.search(r"needs work-groups of (\d+) work-items; .* allows (\d+)", message)
    assert local or items, message
    need, limit = map(int, (local or items).groups())
    actual = device.local_mem_size if local else device.max_work_group_size
    assert limit == actual and need > limit, message


@pytest.mark.parametrize("w", [8, 16, 32])
@pytest.mark.parametrize(
    "sizes", [{}, {"gram_micro_tile": 1}, {"gram_micro_tile": 2, "gram_row_slices": 1},
              {"gram_micro_tile": 4, "gram_row_slices": 5, "rotate_work_group_size": 32},
              {"gram_micro_tile": 8, "tile_rows": 16, "rotate_work_group_size": 3},
              {"update_tile_rows": 16, "update_micro_rows": 4, "update_micro_cols": 4},
              {"update_tile_rows": 9, "update_micro_rows": 3, "update_micro_cols": 5},
              {"update_tile_rows": 64, "update_micro_rows": 2, "update_micro_cols": 4}])
def test_blocked_driver_tuning_knobs(queue, rng, w, sizes):
    """BlockedHSVD with every kernel variant on an odd-sized problem (bordered
    columns, partial tiles): the same factorization G_new = G V, J-orthogonal V."""
    m, r = 3 * w + 5, 3 * w + 1
    G = with_spectrum(rng.uniform(0.5, 20.0, r) * np.where(rng.random(r) < 0.4, -1, 1),
                      rng=rng)[:, :r]
    G = np.vstack([G, rng.standard_normal((m - r, r))])
    signs = np.where(rng.random(r) < 0.4, -1, 1).astype(np.int32)
    try:
        driver = BlockedHSVD(queue, accumulate_v=True, block_width=w, variant="bo", **sizes)
        G_new, V, stats = driver.run(G, signs, max_sweeps=30)
    except DeviceCapabilityError as error:
        _assert_true_refusal(queue.device, str(error))
        return
    assert stats.sweeps > 0
    tol = 200 * m * EPS
    assert np.linalg.norm(G @ V - G_new) <= tol * np.linalg.norm(G) * np.linalg.norm(V)
    J = np.diag(signs.astype(float))
    assert np.linalg.norm(V.T @ J @ V - J) <= tol * np.linalg.norm(V) ** 2
    # Reproducible bitwise from run to run.
    G_again, V_again, _ = driver.run(G, signs, max_sweeps=30)
    assert np.array_equal(G_new, G_again) and np.array_equal(V, V_again)


def test_blocked_tuning_knob_errors(queue):
    with pytest.raises(ValueError, match="gram_micro_tile must be a positive integer"):
        BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo", gram_micro_tile=0)
    with pytest.raises(ValueError, match="rotate_work_group_size must be a positive"):
        BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                    rotate_work_group_size=2.5)
    with pytest.raises(ValueError, match="gram_row_slices must be a positive integer"):
        BlockedSpec(dtype="float64", block_width=8, inner_strategy="me", tile_rows=TILE_ROWS,
                    transform_in_local=True, gram_micro_tile=4, gram_row_slices=0,
                    rotate_work_group_size=16, update_tile_rows=64, update_micro_rows=4,
                    update_micro_cols=4)
    with pytest.raises(ValueError, match="update_micro_cols must be a positive integer"):
        BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                    update_micro_cols=-1)
    with pytest.raises(ValueError, match="update_tile_rows=10 must be a multiple of "
                                         "update_micro_rows=4"):
        BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                    update_tile_rows=10, update_micro_rows=4)
    with pytest.raises(ValueError, match="update_tile_rows=10 must be a multiple"):
        BlockedSpec(dtype="float64", block_width=8, inner_strategy="me", tile_rows=TILE_ROWS,
                    transform_in_local=True, gram_micro_tile=4, gram_row_slices=1,
                    rotate_work_group_size=16, update_tile_rows=10, update_micro_rows=4,
                    update_micro_cols=4)
    too_many = int(queue.device.max_work_group_size) + 1
    driver = BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                         rotate_work_group_size=too_many)
    with pytest.raises(DeviceCapabilityError, match="rotate kernel .* needs work-groups"):
        driver.run(np.eye(32), np.ones(32, np.int32), max_sweeps=1)
    # One entry per item: 16 columns of max // 16 + 1 rows (a small tile).
    rows = int(queue.device.max_work_group_size) // 16 + 1
    driver = BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                         update_tile_rows=rows, update_micro_rows=1, update_micro_cols=1)
    with pytest.raises(DeviceCapabilityError, match="update kernel .* needs work-groups"):
        driver.run(np.eye(32), np.ones(32, np.int32), max_sweeps=1)


@pytest.mark.parametrize("variant,n,p,w", [
    *[(variant, *case) for variant in ("bo", "offdiag", "fb")
      for case in [(33, 10, 4), (64, 64, 8), (100, 30, 16), (70, 0, 32)]],
    # "stream" with R = w at most about sqrt(n), where its sweeps stay few
    # (R = 32 at n = 70 needs more than 60: the stream paper's Table 1)
    ("stream", 33, 10, 4), ("stream", 64, 64, 8), ("stream", 100, 30, 8), ("stream", 70, 0, 8),
])
def test_eig_blocked_matches_numpy(variant, n, p, w, rng, queue):
    magnitudes = rng.uniform(0.1, 10.0, n)
    M = with_spectrum(np.concatenate([magnitudes[:p], -magnitudes[p:]]), rng=rng)
    if blocked_local_bytes(w, stream=variant == "stream") > queue.device.local_mem_size:
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


@pytest.mark.parametrize("variant", ["bo", "offdiag", "fb", "stream"])
def test_blocked_graded_relative_accuracy(variant, rng):
    """The Gram route alone would lose the small eigenvalues; the pointwise finish keeps them."""
    M, _, _ = graded(40, p=17, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    w = cljacobi.eig_indefinite(M, eigvals_only=True, variant=variant, block_width=8)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12


@pytest.mark.parametrize("variant", ["bo", "offdiag", "stream"])
def test_hsvd_blocked(variant, rng):
    G = rng.standard_normal((60, 48))
    J = np.where(rng.random(48) < 0.4, 1, -1)
    U, S, Vh, J_S = cljacobi.hsvd(G, J, variant=variant, block_width=8)
    tol = 100 * 60 * EPS
    assert np.linalg.norm(U * S @ Vh - G) <= tol * np.linalg.norm(G)
    assert np.linalg.norm(U.T @ U - np.eye(48)) <= tol
    assert np.linalg.norm(Vh @ np.diag(J) @ Vh.T - np.diag(J_S)) <= tol * np.linalg.norm(Vh) ** 2


@pytest.mark.parametrize("variant", ["offdiag", "fb", "stream"])
def test_blocked_reproducible(variant, rng):
    M = with_spectrum(rng.uniform(-5, 5, 50), rng=rng)
    first = cljacobi.eig_indefinite(M, variant=variant, block_width=8)
    again = cljacobi.eig_indefinite(M, variant=variant, block_width=8)
    assert np.array_equal(first.eigenvalues, again.eigenvalues)
    assert np.array_equal(first.eigenvectors, again.eigenvectors)


class _SmallLocalGPU:
    name = "Small GPU"
    type = cl.device_type.GPU
    local_mem_size = 48 * 1024


def test_variant_choice_and_errors():
    gpu = _SmallLocalGPU()
    assert choose_variant(gpu, 100, "auto", None) == ("pointwise", 0)
    assert choose_variant(gpu, 127, "auto", None) == ("pointwise", 0)
    assert choose_variant(gpu, 128, "auto", None) == ("offdiag", 16)
    assert choose_variant(gpu, 511, "auto", None) == ("offdiag", 16)
    assert choose_variant(gpu, 512, "auto", None) == ("offdiag", 32)
    assert choose_variant(gpu, 2047, "auto", None) == ("offdiag", 32)
    assert choose_variant(gpu, 511, "offdiag", None) == ("offdiag", 16)
    assert choose_variant(gpu, 2048, "auto", None) == ("offdiag", 32)
    # a width with "auto": that blocked variant, "bo" for odd widths
    assert choose_variant(gpu, 100, "auto", 8) == ("offdiag", 8)
    assert choose_variant(gpu, 100, "auto", 1) == ("offdiag", 1)
    assert choose_variant(gpu, 100, "auto", 7) == ("bo", 7)
    with pytest.raises(ValueError, match="'offdiag' needs an even block_width"):
        choose_variant(gpu, 100, "offdiag", 7)
    assert choose_variant(gpu, 100, "fb", None) == ("fb", 16)
    assert choose_variant(gpu, 5000, "fb", None) == ("fb", 32)
    tiny = _SmallLocalGPU()
    tiny.local_mem_size = 16 * 1024  # neither w = 32 nor w = 16 fits
    assert choose_variant(tiny, 4096, "auto", None) == ("offdiag", 8)
    # w = 32 fits 48 KiB only with the transformation in global memory; w = 64 not at all.
    assert blocked_local_bytes(32) <= gpu.local_mem_size
    assert blocked_local_bytes(32, transform_in_local=True) > gpu.local_mem_size
    assert choose_variant(gpu, 4096, "bo", 32) == ("bo", 32)
    with pytest.raises(ValueError, match=r"block_width=64 .*'Small GPU' has 49152"):
        choose_variant(gpu, 4096, "bo", 64)
    # "stream" keeps the K x K tangents beside the Gram matrix: w = 32 does not fit 48 KiB.
    assert blocked_local_bytes(32, stream=True) > gpu.local_mem_size
    assert blocked_local_bytes(16, stream=True, transform_in_local=True) <= gpu.local_mem_size
    assert choose_variant(gpu, 5000, "stream", None) == ("stream", 16)
    assert choose_variant(gpu, 100, "stream", None) == ("stream", 8)  # sqrt(100) = 10
    with pytest.raises(ValueError, match=r"block_width=32 .*'Small GPU' has 49152"):
        choose_variant(gpu, 4096, "stream", 32)
    with pytest.raises(ValueError, match="variant must be one of"):
        cljacobi.eig_indefinite(np.eye(3), variant="blocked")
    with pytest.raises(ValueError, match="block_width"):
        cljacobi.eig_indefinite(np.eye(3), variant="bo", block_width=0)



@pytest.mark.parametrize("complex_,layout", [(False, "interleaved"), (True, "interleaved"),
                                             (True, "split")])
def test_blocked_template_declares_the_spec_signatures(queue, complex_, layout):
    """The kernels take exactly the arguments the host binds by name; the sizes
    and the status bits come from the Python side, and the work-groups the
    program requires are the spec's."""
    for inner_method in ("sweeps", "stream"):
        _check_declared_signatures(queue, _blocked_spec(
            8, slices=3, rotate_wg=64, update=(12, 3, 5), complex_=complex_, layout=layout,
            inner_method=inner_method))


def _check_declared_signatures(queue, spec):
    source = render(spec)
    for sig in spec.signatures.values():
        assert f"void {sig.name}({sig.parameters})" in source
    assert c_defines(spec.constants) in source
    assert f"#define CJAC_BIG {int(Status.BIG)}" in source
    assert f"#define CJAC_BROKEN {int(Status.BROKEN)}" in source
    program = build_program(queue.context, queue.device, spec)
    for name, size in (("cjac_block_gram", spec.gram_work_group_size),
                       ("cjac_block_rotate", 64),
                       ("cjac_block_update", spec.update_work_group_size)):
        kernel = cl.Kernel(program, name)
        assert kernel.num_args == len(spec.signatures[name].args)
        assert kernel.get_work_group_info(
            cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, queue.device)[0] == size
    assert spec.gram_work_group_size == gram_work_group_size(8, GRAM_MICRO_TILE, 3)
    assert spec.update_work_group_size == update_work_group_size(8, 12, 3, 5)


class _LocalMemory:
    """The test device with another local memory size."""

    def __init__(self, device, local_mem_size):
        self._device = device
        self.local_mem_size = local_mem_size

    def __getattr__(self, name):
        return getattr(self._device, name)


def test_blocked_plan_decides_the_sizes(queue):
    """BlockedPlan: the defaults, row chunks and launch sizes, W in local memory
    where it fits, and the refusals before any launch."""
    device = queue.device
    m = 300
    plan = BlockedPlan.for_device(device, rows=m, columns=64, dtype=np.float64, block_width=8,
                                  variant="fb", accumulate_v=True)
    spec = plan.spec
    assert plan.inner_sweeps == FULL_BLOCK_INNER_SWEEPS and (plan.blocks, plan.slots) == (8, 4)
    assert (spec.dtype, spec.layout, spec.tile_rows, spec.gram_micro_tile) == \
        ("float64", "interleaved", TILE_ROWS, GRAM_MICRO_TILE)
    assert (spec.update_tile_rows, spec.update_micro_rows, spec.update_micro_cols) == \
        (UPDATE_TILE_ROWS_NARROW, UPDATE_MICRO_ROWS, UPDATE_MICRO_COLS)
    assert spec.rotate_work_group_size == min(64, ROTATE_MAX_WORK_GROUP,
                                              device.max_work_group_size)
    assert spec.transform_in_local == local_memory_fit(device, 8).transform_in_local
    assert plan.local_bytes == blocked_local_bytes(8, transform_in_local=spec.transform_in_local)
    for chunks, rows in ((plan.gram_chunks, m), (plan.update_g_chunks, m),
                         (plan.update_v_chunks, 64)):
        assert chunks.rows % TILE_ROWS == 0
        assert (chunks.count - 1) * chunks.rows < rows <= chunks.count * chunks.rows
    launches = plan.launches()
    assert launches["gram"] == ((4 * spec.gram_work_group_size, plan.gram_chunks.count),
                                (spec.gram_work_group_size, 1))
    assert launches["rotate"] == ((4 * spec.rotate_work_group_size,),
                                  (spec.rotate_work_group_size,))
    assert launches["update_v"][1] == (spec.update_work_group_size, 1)
    # 48 KiB: real w = 32 runs with W in global memory, w = 16 keeps it local;
    # complex w = 32 does not fit, and the refusal names the device's limit.
    small = _LocalMemory(device, 48 * 1024)
    for w, in_local in ((16, True), (32, False)):
        plan = BlockedPlan.for_device(small, rows=m, columns=4 * w, dtype=np.float64,
                                      block_width=w, variant="bo", accumulate_v=False)
        assert plan.spec.transform_in_local == in_local and plan.local_bytes <= 48 * 1024
    with pytest.raises(DeviceCapabilityError, match=r"the complex blocked kernels with "
                       r"block_width=32 needs 98304 bytes .* has 49152"):
        BlockedPlan.for_device(small, rows=m, columns=128, dtype=np.complex128,
                               layout="split", block_width=32, variant="bo",
                               accumulate_v=False)
    with pytest.raises(DeviceCapabilityError, match="rotate kernel .* needs work-groups of"):
        BlockedPlan.for_device(device, rows=m, columns=64, dtype=np.float64, block_width=8,
                               variant="bo", accumulate_v=False,
                               rotate_work_group_size=device.max_work_group_size + 1)
    with pytest.raises(ValueError, match="multiple of 16"):
        BlockedPlan.for_device(device, rows=m, columns=40, dtype=np.float64, block_width=8,
                               variant="bo", accumulate_v=False)
    with pytest.raises(ValueError, match="tile_rows must be a positive integer"):
        BlockedPlan.for_device(device, rows=m, columns=64, dtype=np.float64, block_width=8,
                               variant="bo", accumulate_v=False, tile_rows=0)

def test_row_chunks_of_the_tensor_core_kernels(queue):
    """The mma Gram kernel's chunks hold at most GRAM_MMA_MAX_CHUNK_ROWS rows
    (GRAM_STAGED_MAX_CHUNK_ROWS staged) and its update kernel aims at
    UPDATE_MMA_GROUPS_PER_UNIT work-groups per compute unit (complex data:
    UPDATE_MMA_GROUPS_PER_UNIT_COMPLEX, of UPDATE_WARPS_COMPLEX warps); the fma kernels
    keep their chunks.  Every chunking covers the rows."""
    device = queue.device
    m = 8 * GRAM_STAGED_MAX_CHUNK_ROWS + 100
    plans = {(products, stages): BlockedPlan.for_device(
        device, rows=m, columns=32, dtype=np.float64, block_width=8, variant="bo",
        accumulate_v=False, matrix_products=products, gram_stages=stages)
        for products, stages in (("fma", None), ("mma.emulated", 0), ("mma.emulated", 2))}
    fma, mma, staged = plans["fma", None], plans["mma.emulated", 0], plans["mma.emulated", 2]
    assert fma.gram_chunks == _row_chunks(m, 2, device)
    assert fma.update_g_chunks == _row_chunks(m, 2, device, UPDATE_GROUPS_PER_UNIT)
    assert mma.update_g_chunks == _row_chunks(m, 2, device, UPDATE_MMA_GROUPS_PER_UNIT)
    assert mma.gram_chunks.rows == min(fma.gram_chunks.rows, GRAM_MMA_MAX_CHUNK_ROWS)
    assert staged.gram_chunks.rows == min(fma.gram_chunks.rows, GRAM_STAGED_MAX_CHUNK_ROWS)
    complex_mma = BlockedPlan.for_device(
        device, rows=m, columns=32, dtype=np.complex128, block_width=8, variant="bo",
        accumulate_v=False, matrix_products="mma.emulated")
    assert complex_mma.update_g_chunks == _row_chunks(m, 2, device,
                                                      UPDATE_MMA_GROUPS_PER_UNIT_COMPLEX)
    assert complex_mma.spec.update_warps == UPDATE_WARPS_COMPLEX
    for chunks in (fma.gram_chunks, mma.gram_chunks, staged.gram_chunks, fma.update_g_chunks,
                   mma.update_g_chunks, complex_mma.update_g_chunks):
        assert chunks.rows % TILE_ROWS == 0
        assert (chunks.count - 1) * chunks.rows < m <= chunks.count * chunks.rows


# --- complex Hermitian data ------------------------------------------------------------


def _complex_step_operands(rng, m, w, blocks=4):
    """Complex G with graded columns, a nearly dependent pair and a mixed signature."""
    r = blocks * w
    G = _complex_normal(rng, (m, r)) * 2.0 ** rng.integers(-4, 4, r)
    G[:, 1] = G[:, 2] * (0.3 - 0.4j) + 1e-3 * G[:, 1]
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    return G, signs


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("w,inner_sweeps,in_local", [(3, 1, True), (3, 30, False), (8, 1, False),
                                                     (8, 30, True), (16, 1, True),
                                                     (16, 30, False), (32, 1, True)])
def test_complex_block_step_against_numpy(queue, rng, layout, w, inner_sweeps, in_local):
    """Complex Gram (Hermitian, in row chunks), inner sweeps with the phase of
    a_ij (R^* A R, W R) and complex update of one parallel step against the
    numpy reference; the two layouts agree bitwise."""
    if in_local and blocked_local_bytes(w, transform_in_local=True,
                                        element_bytes=COMPLEX_ELEMENT_BYTES) > \
            queue.device.local_mem_size:
        pytest.skip("complex W does not fit the device's local memory")
    m = 77  # two chunks of TILE_ROWS, the second one partial
    G, signs = _complex_step_operands(rng, m, w)
    pairs = [[0, 3], [1, 2]]
    G_device, partial, W_device = _check_block_step(
        queue, G, signs, pairs, w, inner_sweeps, in_local=in_local, layout=layout)
    assert np.abs(W_device.imag).max() > 0  # the phases did go into W
    other = "split" if layout == "interleaved" else "interleaved"
    G_other, partial_other, W_other, _ = _block_step(
        queue, G, signs, pairs, w, inner_sweeps, in_local=in_local, layout=other)
    assert np.array_equal(G_device, G_other)
    assert np.array_equal(partial, partial_other) and np.array_equal(W_device, W_other)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("w", [3, 8, 16, 32])
@pytest.mark.parametrize("micro_tile,slices", [(1, 1), (4, 3), (8, 2)])
def test_complex_gram_against_numpy(queue, rng, layout, w, micro_tile, slices):
    """Complex partial Gram matrices X^* X for padded micro-tiles, row slices
    and partial tiles and chunks: against numpy, stored on and above the
    diagonal only, the diagonal real (both checked by _block_step)."""
    if gram_work_group_size(w, micro_tile, slices) > queue.device.max_work_group_size:
        pytest.skip("work-group too large for the device")
    m = 77
    G, signs = _complex_step_operands(rng, m, w)
    pairs = [[0, 3], [1, 2]]
    chunk_rows = 48
    _, partial, _, _ = _block_step(queue, G, signs, pairs, w, 1, chunk_rows=chunk_rows,
                                   micro_tile=micro_tile, slices=slices, layout=layout)
    expected = _gram_expected(G, pairs, w, chunk_rows)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(partial / scale, expected / scale, rtol=0, atol=1e-14)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("w", [3, 8, 16, 32])
@pytest.mark.parametrize("update", [_UPDATE_DEFAULTS, (64, 4, 4), (12, 3, 5), (7, 7, 3)])
def test_complex_update_kernel_against_numpy(queue, rng, layout, w, update):
    """The complex update kernel for G (77 rows in chunks of 48) and V (6w rows)
    against numpy in both layouts; an unrotated pair stays untouched; every
    tile shape gives bitwise the results of the defaults, and the layouts
    bitwise the same numbers."""
    if _update_refusal(queue, w, update) or blocked_local_bytes(
            w, update_tile_rows=update[0], update_micro_cols=update[2],
            element_bytes=COMPLEX_ELEMENT_BYTES) > queue.device.local_mem_size:
        pytest.skip("these update sizes do not fit the device")
    for rows, chunk_rows in ((77, 48), (6 * w, 32)):
        X, pairs, W, rotated = _update_operands(rng, rows, w, complex_=True)
        result = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows, update=update,
                         layout=layout)
        expected = _update_expected(X, pairs, w, W, rotated)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(result / scale, expected / scale, rtol=0, atol=1e-13)
        assert np.array_equal(result[:, w:2 * w], X[:, w:2 * w])  # block 1: pair not rotated
        assert np.array_equal(result[:, 3 * w:4 * w], X[:, 3 * w:4 * w])
        reference = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows,
                            layout="interleaved")
        assert np.array_equal(result, reference)


def test_real_blocked_source_has_no_complex_code(queue):
    """The real kernels are rendered with the real element operations only."""
    spec = {"block_width": 8, "inner_strategy": "me", "tile_rows": TILE_ROWS,
            "transform_in_local": True, "gram_micro_tile": 4, "gram_row_slices": 1,
            "rotate_work_group_size": 16, "update_tile_rows": 64, "update_micro_rows": 4,
            "update_micro_cols": 4}
    real = render(BlockedSpec(dtype="float64", **spec))
    assert "typedef double2 cjac_real2" not in real and "typedef cjac_real cjac_elem;" in real
    for layout in LAYOUTS:
        source = render(BlockedSpec(dtype="complex128", layout=layout, **spec))
        assert "typedef cjac_real2 cjac_elem;" in source
    with pytest.raises(ValueError, match="float64 or complex128"):
        BlockedSpec(dtype="complex64", layout="split", **spec)


def _hermitian(n, p, rng):
    magnitudes = rng.uniform(0.1, 10.0, n)
    lam = np.concatenate([magnitudes[:p], -magnitudes[p:]])
    return with_spectrum(lam, rng=rng, dtype=np.complex128)


@pytest.mark.parametrize("variant", ["bo", "offdiag", "fb"])
@pytest.mark.parametrize("n,p,w", [(33, 10, 8), (64, 64, 8), (100, 30, 16), (70, 0, 16)])
def test_eig_blocked_complex_matches_numpy(variant, n, p, w, rng, queue):
    """Complex Hermitian indefinite M through the blocked kernels, then the
    pointwise finish: eigenvalues, residual and unitarity as for pointwise."""
    M = _hermitian(n, p, rng)
    (w_ours, U), info = cljacobi.eig_indefinite(
        M, variant=variant, block_width=w, return_info=True)
    assert info.variant == variant and info.block_width == w
    assert 0 < info.blocked_sweeps < info.sweeps
    w_np = np.linalg.eigvalsh(M)
    assert np.max(np.abs(w_ours - w_np)) <= 1e-12 * np.linalg.norm(M, 2)
    assert np.linalg.norm(M @ U - U * w_ours) <= 50 * n * EPS * np.linalg.norm(M)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 50 * n * EPS


@pytest.mark.parametrize("variant", ["bo", "offdiag", "fb"])
@pytest.mark.parametrize("n,p", [(40, 17), (48, 48)])
def test_blocked_graded_complex_relative_accuracy(variant, n, p, rng):
    """Graded complex M = D A D against the 50-digit oracle: the pointwise
    finish keeps the relative accuracy the Gram route alone would lose."""
    M, _, _ = graded(n, p=p, low_exponent=-30, rng=rng, dtype=np.complex128)
    exact = eigvalsh_hiprec(M)
    w, info = cljacobi.eig_indefinite(M, eigvals_only=True, variant=variant, block_width=8,
                                      return_info=True)
    assert info.blocked_sweeps > 0
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12


@pytest.mark.parametrize("variant,w", [("bo", 16), ("fb", 8)])
def test_blocked_complex_layouts_bitwise(variant, w, rng):
    """Both complex layouts give bitwise the same results, run after run."""
    M = _hermitian(57, 25, rng)
    results = [cljacobi.eig_indefinite(M, variant=variant, block_width=w, _layout=layout)
               for layout in ("split", "interleaved", "split")]
    for other in results[1:]:
        assert np.array_equal(results[0].eigenvalues, other.eigenvalues)
        assert np.array_equal(results[0].eigenvectors, other.eigenvectors)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_blocked_driver_complex(queue, rng, layout):
    """BlockedHSVD.run on complex G (odd sizes, bordered): G_new = G V with a
    J-unitary V, the same bits in both layouts and from run to run."""
    w, m, r = 8, 29, 21
    G = _complex_normal(rng, (m, r)) * 2.0 ** rng.integers(-3, 3, r)
    signs = np.where(np.arange(r) < 12, 1, -1).astype(np.int32)
    driver = BlockedHSVD(queue, accumulate_v=True, block_width=w, variant="fb")
    G_new, V, stats = driver.run(G, signs, max_sweeps=30, layout=layout)
    assert stats.sweeps > 0 and stats.rotations > 0
    assert G_new.dtype == np.complex128 and V.dtype == np.complex128
    tol = 200 * m * EPS
    assert np.linalg.norm(G @ V - G_new) <= tol * np.linalg.norm(G) * np.linalg.norm(V)
    J = np.diag(signs.astype(float))
    assert np.linalg.norm(V.conj().T @ J @ V - J) <= tol * np.linalg.norm(V) ** 2
    other = "split" if layout == "interleaved" else "interleaved"
    G_other, V_other, _ = driver.run(G, signs, max_sweeps=30, layout=other)
    assert np.array_equal(G_new, G_other) and np.array_equal(V, V_other)


@pytest.mark.parametrize("variant", ["bo", "offdiag", "fb"])
def test_hsvd_and_svd_blocked_complex(variant, rng):
    G = _complex_normal(rng, (60, 48))
    J = np.where(rng.random(48) < 0.4, 1, -1)
    (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, variant=variant, block_width=8,
                                          return_info=True)
    assert info.variant == variant and info.blocked_sweeps > 0
    tol = 100 * 60 * EPS
    assert np.linalg.norm(U * S @ Vh - G) <= tol * np.linalg.norm(G)
    assert np.linalg.norm(U.conj().T @ U - np.eye(48)) <= tol
    assert np.linalg.norm(Vh @ np.diag(J) @ Vh.conj().T - np.diag(J_S)) <= \
        tol * np.linalg.norm(Vh) ** 2
    A = _complex_normal(rng, (50, 40))
    (U, S, Vh), info = cljacobi.svd(A, variant=variant, block_width=8, return_info=True)
    assert info.variant == variant and info.blocked_sweeps > 0
    np.testing.assert_allclose(S, np.linalg.svd(A, compute_uv=False), rtol=1e-12)
    assert np.linalg.norm(U * S @ Vh - A) <= tol * np.linalg.norm(A)


def test_blocked_complex_reproducible(rng):
    M = _hermitian(50, 20, rng)
    first = cljacobi.eig_indefinite(M, variant="fb", block_width=8)
    again = cljacobi.eig_indefinite(M, variant="fb", block_width=8)
    assert np.array_equal(first.eigenvalues, again.eigenvalues)
    assert np.array_equal(first.eigenvectors, again.eigenvectors)


def test_variant_choice_complex():
    """Complex data: their own rule on the 16-byte byte counts.  On 48 KiB
    complex w = 32 does not fit, w = 16 does (with W in local memory)."""
    gpu = _SmallLocalGPU()
    complex_bytes = {"element_bytes": COMPLEX_ELEMENT_BYTES}
    assert blocked_local_bytes(32, **complex_bytes) > gpu.local_mem_size
    assert blocked_local_bytes(16, transform_in_local=True, **complex_bytes) \
        <= gpu.local_mem_size
    assert choose_variant(gpu, 127, "auto", None, **complex_bytes) == ("pointwise", 0)
    for order in (128, 1024, 2048, 4096, 8192):  # w = 16 wherever it fits
        assert choose_variant(gpu, order, "auto", None, **complex_bytes) == ("offdiag", 16)
    assert choose_variant(gpu, 100, "fb", None, **complex_bytes) == ("fb", 16)
    with pytest.raises(ValueError, match=r"block_width=32 needs 98304 .*'Small GPU' has 49152"):
        choose_variant(gpu, 4096, "bo", 32, **complex_bytes)
    tiny = _SmallLocalGPU()
    tiny.local_mem_size = 16 * 1024  # real w = 8 fits, complex w = 8 not
    assert choose_variant(tiny, 4096, "auto", None) == ("offdiag", 8)
    assert choose_variant(tiny, 4096, "auto", None, **complex_bytes) == ("pointwise", 0)


class _TensorCoreGPU(_SmallLocalGPU):
    """An NVIDIA GPU as its OpenCL reports it: 48 KiB of local memory and a
    compute capability (``cl_nv_device_attribute_query``)."""

    extensions = "cl_khr_fp64 cl_nv_device_attribute_query"

    def __init__(self, major, minor=0):
        self.compute_capability_major_nv, self.compute_capability_minor_nv = major, minor


class _PlannedTensorCoreGPU(_TensorCoreGPU):
    """The same, with what a plan reads of a device (an H200's figures)."""

    max_work_group_size = 1024
    max_compute_units = 132
    double_fp_config = 63


def test_static_local_memory_and_complex_width_32():
    """Compute capability 9.0 gives the blocked kernels' static local arrays
    STATIC_LOCAL_MEMORY_NV90 bytes, and there "auto" takes complex w = 32
    (the teamed tensor-core Gram kernel) from order 4096 on; 8.0 and other
    devices keep the reported 48 KiB and w = 16, and real data keep w = 32."""
    complex_bytes = {"element_bytes": COMPLEX_ELEMENT_BYTES}
    h200, a100, other = _TensorCoreGPU(9), _TensorCoreGPU(8), _SmallLocalGPU()
    assert static_local_memory(h200) == STATIC_LOCAL_MEMORY_NV90 == 224 * 1024
    assert static_local_memory(a100) == static_local_memory(other) == 48 * 1024
    assert local_memory_fit(h200, 32, **complex_bytes).transform_in_local
    for order, w in ((2048, 16), (4095, 16), (4096, 32), (8192, 32)):
        assert choose_variant(h200, order, "auto", None, **complex_bytes) == ("offdiag", w)
    for device in (a100, other):
        assert choose_variant(device, 8192, "auto", None, **complex_bytes) == ("offdiag", 16)
        with pytest.raises(ValueError, match=r"block_width=32 needs 98304 .* has 49152"):
            choose_variant(device, 4096, "bo", 32, **complex_bytes)
    assert choose_variant(h200, 8192, "auto", None) == ("offdiag", 32)
    assert choose_variant(h200, 4096, "bo", 64) == ("bo", 64)  # asked for: it fits


def test_plan_of_the_static_local_width():
    """On compute capability 9.0 the plan of complex w = 32 (which fits only
    the static local memory) keeps A alone in the rotate kernel's local
    memory and W in registers, a lane a column of P, and gives the update
    kernel UPDATE_WARPS_TEAMED warps, two a block of rows, its rows and the
    Gram kernel's through local memory (UPDATE_STAGES_TEAMED and
    GRAM_TEAM_STAGES stages), and Gauss's three real products a complex
    product in the staged update; complex w = 16 and real w = 32 (which fit
    the reported 48 KiB) keep their plans."""
    h200 = _PlannedTensorCoreGPU(9)

    def spec(dtype, w, **tuning):
        return BlockedPlan.for_device(h200, rows=4096, columns=4096, dtype=dtype,
                                      block_width=w, variant="offdiag", accumulate_v=True,
                                      **tuning).spec

    wide = spec("complex128", 32)
    assert wide.matrix_products == "mma.m16n8k4" and wide.transform_lanes == 32
    assert (wide.transform_in_local, wide.transform_in_registers) == (False, True)
    assert (wide.update_warps, wide.update_column_parts) == (UPDATE_WARPS_TEAMED, 2)
    assert (wide.update_stages, wide.gram_stages) == (UPDATE_STAGES_TEAMED, GRAM_TEAM_STAGES)
    assert wide.update_products == UPDATE_PRODUCTS_STAGED_COMPLEX == 3
    assert spec("complex128", 32, update_loads_ahead=True).update_stages == 0
    assert spec("complex128", 32, update_loads_ahead=True).update_products == 4
    assert spec("complex128", 32, update_products=4).update_products == 4
    assert spec("complex128", 32, update_stages=2, gram_stages=2).update_stages == 2
    assert spec("complex128", 32, update_column_parts=1, update_warps=8).update_column_parts == 1
    narrow = spec("complex128", 16)
    assert (narrow.transform_in_local, narrow.transform_in_registers) == (True, False)
    assert (narrow.update_warps, narrow.update_column_parts) == (UPDATE_WARPS_COMPLEX, 1)
    assert (narrow.update_stages, narrow.gram_stages, narrow.update_products) == (0, 0, 4)
    real = spec("float64", 32)
    assert (real.transform_in_local, real.transform_in_registers, real.transform_lanes) == (
        False, True, 32)
    assert (real.update_column_parts, real.update_stages, real.update_products) == (1, 0, 4)
    with pytest.raises(ValueError, match="update_column_parts=2: .* update_warps=7"):
        spec("complex128", 32, update_warps=7)
    with pytest.raises(ValueError, match="update_column_parts=3"):
        spec("complex128", 32, update_column_parts=3)


def test_blocked_single_precision_refused(rng):
    M = _hermitian(16, 8, rng).astype(np.complex64)
    with pytest.raises(ValueError, match="double precision data only"):
        cljacobi.eig_indefinite(M, variant="bo", block_width=4, _single=True)
