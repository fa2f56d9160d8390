"""The tensor-core ("mma") form of the blocked Gram and update kernels
(``cljacobi.host.matrix_products``): every fragment layout against numpy,
whole block steps and solves through it, and which form a device gets.

The forms a device does not have ("mma.m16n8k4" needs compute capability
9.0, "mma.m8n8k4" 8.0) are asserted to be refused there with a clear error;
"mma.emulated" (the same kernels with the product through local memory) runs
everywhere, so the fragment layouts are checked on every device.
"""

from __future__ import annotations

import gsvd4py
import numpy as np
import pytest
from hiprec import eigvalsh_hiprec
from test_blocked import (
    _block_step,
    _blocked_program,
    _blocked_spec,
    _check_block_step,
    _gram_expected,
    _update,
    _update_expected,
    _update_operands,
)

import cljacobi
from cljacobi.errors import DeviceCapabilityError
from cljacobi.host.blocked import (
    UPDATE_WARPS,
    BlockedHSVD,
    BlockedSpec,
    blocked_local_bytes,
    blocked_tuning,
    default_gram_stages,
    default_gram_warps,
    default_loads_ahead,
    gram_mma_teams,
    gram_mma_tiles,
    gram_team_stages_most,
)
from cljacobi.host.matrix_products import (
    ENV_VAR,
    MATRIX_PRODUCTS,
    MMA_MIN_ROWS,
    choose_matrix_products,
    compute_capability,
    mma_takes,
    mma_teamed,
    native_mma,
)
from cljacobi.host.programs import render
from cljacobi.matrices import graded

EPS = np.finfo(np.float64).eps

MMA_FORMS = [name for name in MATRIX_PRODUCTS if name != "fma"]
NEEDS = {"mma.m16n8k4": (9, 0), "mma.m8n8k4": (8, 0), "mma.emulated": None}


def _runs_here(queue, products):
    """Whether the device has the instruction of `products`."""
    needs = NEEDS[products]
    capability = compute_capability(queue.device)
    return needs is None or (capability is not None and capability >= needs)


def _refused_here(queue, products):
    """On a device without the instruction: the plan refuses it by name."""
    with pytest.raises(DeviceCapabilityError, match=f"{products}.*compute capability"):
        choose_matrix_products(queue.device, complex_=False, block_width=8,
                               requested=products)


#: Real data, and complex data in both storage layouts (as real and imaginary parts).
DATA = ["real", "interleaved", "split"]


def _draw(rng, shape, data):
    """Standard normal real or complex entries (scaled columns: graded)."""
    X = rng.standard_normal(shape)
    if data != "real":
        X = X + 1j * rng.standard_normal(shape)
    return X * 2.0 ** rng.integers(-6, 6, shape[1])


def _too_wide(w, data):
    """Widths the mma kernels refuse: Z = X, or [Re X, Im X], beyond 64
    columns other than 128 (complex w = 64 here)."""
    return not mma_takes(w, data != "real")


def _teamed(w, data):
    """Whether the Gram kernel splits its tiles among warps (Z of 128 real
    columns: real w = 64, complex w = 32)."""
    return mma_teamed(w, data != "real")


def _layout(data):
    """The storage layout of the kernels' data (real data: the helpers' default)."""
    return data if data != "real" else "split"


def _refused(queue, products, w=8, data="real"):
    """Whether this case cannot run here, after asserting how it is refused:
    by the plan on a device without the instruction, by the spec for a width
    the mma kernels do not take."""
    if not _runs_here(queue, products):
        _refused_here(queue, products)
        return True
    if _too_wide(w, data):
        with pytest.raises(ValueError, match="at most 32 for real data and 16 for complex"):
            _blocked_program(queue, w, products=products, complex_=data != "real",
                             layout=_layout(data))
        return True
    # The emulated teamed kernels (every product a pair of barriers, unrolled
    # by the hundred) take minutes to build on PoCL: there one case, complex
    # interleaved w = 32, covers the teams; the tensor-core forms run all.
    return products == "mma.emulated" and _teamed(w, data) and (w, data) != (32, "interleaved")


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32, 64])
@pytest.mark.parametrize("data", DATA)
def test_mma_gram_against_numpy(queue, rng, products, w, data):
    """Partial Gram matrices of two block pairs over row chunks of 48 (a
    partial group of 4 rows and a partial last chunk): numpy's to rounding,
    stored on and above the diagonal only with a real diagonal (checked by
    _block_step), bitwise the same run after run."""
    if _refused(queue, products, w, data):
        return
    m, blocks = 77, 4
    r = blocks * w
    G = _draw(rng, (m, r), data)
    signs = np.where(rng.random(r) < 0.5, 1, -1).astype(np.int32)
    pairs = [[0, 3], [1, 2]]
    layout = _layout(data)
    _, partial, _, _ = _block_step(queue, G, signs, pairs, w, 1, chunk_rows=48,
                                   products=products, layout=layout)
    expected = _gram_expected(G, pairs, w, 48)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(partial / scale, expected / scale, rtol=0, atol=1e-14)
    again = _block_step(queue, G, signs, pairs, w, 1, chunk_rows=48, products=products,
                        layout=layout)[1]
    assert np.array_equal(partial, again)


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32, 64])
@pytest.mark.parametrize("data", DATA)
def test_mma_update_against_numpy(queue, rng, products, w, data):
    """[X_P X_Q] <- [X_P X_Q] W for G (77 rows in chunks of 48) and V (6w
    rows in one partial chunk): numpy's to rounding, a pair with rotated = 0
    untouched, nothing written past the rows (the helper checks), bitwise
    repeatable."""
    if _refused(queue, products, w, data):
        return
    layout = _layout(data)
    for rows, chunk_rows in ((77, 48), (6 * w, 64)):
        X, pairs, W, rotated = _update_operands(rng, rows, w, complex_=data != "real")
        result = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows,
                         products=products, layout=layout)
        expected = _update_expected(X, pairs, w, W, rotated)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(result / scale, expected / scale, rtol=0, atol=1e-13)
        assert np.array_equal(result[:, w:2 * w], X[:, w:2 * w])
        assert np.array_equal(result[:, 3 * w:4 * w], X[:, 3 * w:4 * w])
        again = _update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows,
                        products=products, layout=layout)
        assert np.array_equal(result, again)


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32, 64])
@pytest.mark.parametrize("data", DATA)
def test_mma_loads_ahead_same_bits(queue, rng, products, w, data):
    """The Gram and update kernels with a warp's next rows loaded ahead
    (default_loads_ahead) and without: the same products in the same order,
    so the partial Gram matrices and the updated columns are bitwise the
    same.  Chunks of 288 rows, several stretches of a warp's rows each, and a
    partial last chunk.  The teamed Gram kernel has no loads ahead: refused."""
    if _refused(queue, products, w, data):
        return
    m, chunk_rows = 300, 288
    layout = _layout(data)
    G = _draw(rng, (m, 4 * w), data)
    signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
    if _teamed(w, data):
        with pytest.raises(ValueError, match="splits its tiles among 4 warps"):
            _block_step(queue, G, signs, [[0, 3], [1, 2]], w, 1, chunk_rows=chunk_rows,
                        products=products, layout=layout, loads_ahead=(True, False))
        if products == "mma.emulated":
            return  # the update's own tests cover it (a second emulated program)
    else:
        grams = [_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 1, chunk_rows=chunk_rows,
                             products=products, layout=layout, loads_ahead=(ahead, False))[1]
                 for ahead in (False, True)]
        assert np.array_equal(*grams)
    X, pairs, W, rotated = _update_operands(rng, m, w, complex_=data != "real")
    updates = [_update(queue, X, pairs, w, W, rotated, chunk_rows=chunk_rows, products=products,
                       layout=layout, loads_ahead=(False, ahead)) for ahead in (False, True)]
    assert np.array_equal(*updates)
    expected = _update_expected(X, pairs, w, W, rotated)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(updates[1] / scale, expected / scale, rtol=0, atol=1e-13)


#: Rows of the update kernel's operands in :func:`_updates_agree`.
UPDATE_ROWS = 300


def _updates_agree(queue, rng, products, w, data, variants, unlike=None):
    """The update kernel in each of `variants` (keyword arguments of
    ``_update``) on the same operands of UPDATE_ROWS rows: bitwise the same
    columns, numpy's to rounding, and other columns than the variant
    `unlike` (another arithmetic), if given.  Chunks of 288 rows (several
    blocks of rows a warp) and a partial last chunk.  On PoCL the emulated
    teamed widths are left to the tensor-core forms (their emulated
    programs take minutes to build)."""
    if _refused(queue, products, w, data) or (products == "mma.emulated"
                                                and _teamed(w, data)):
        return
    X, pairs, W, rotated = _update_operands(rng, UPDATE_ROWS, w, complex_=data != "real")
    updates = [_update(queue, X, pairs, w, W, rotated, chunk_rows=288, products=products,
                       layout=_layout(data), **variant)
               for variant in variants]
    for update in updates[1:]:
        assert np.array_equal(updates[0], update)
    if unlike is not None:
        assert not np.array_equal(updates[0], _update(
            queue, X, pairs, w, W, rotated, chunk_rows=288, products=products,
            layout=_layout(data), **unlike))
    expected = _update_expected(X, pairs, w, W, rotated)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(updates[1] / scale, expected / scale, rtol=0, atol=1e-13)


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32, 64])
@pytest.mark.parametrize("data", DATA)
def test_mma_update_column_parts_same_bits(queue, rng, products, w, data):
    """The update kernel with two warps a block of rows, each computing the
    columns of one block (``update_column_parts=2``), and with one warp
    computing all: the same products in the same order, bitwise the same
    columns, numpy's to rounding (:func:`_updates_agree`), with the loads
    ahead the data take by default."""
    ahead = (False, default_loads_ahead(data != "real", w)[1])
    _updates_agree(queue, rng, products, w, data,
                   [{"loads_ahead": ahead, "update_parts": parts} for parts in (1, 2)])


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32, 64])
@pytest.mark.parametrize("data", DATA)
def test_mma_update_stages_same_bits(queue, rng, products, w, data):
    """The staged update kernel (the rows of each block of rows copied to
    local memory by slices of 16 columns of Z, 2 to 4 stages, one or two
    warps a block of rows) against the register form: the same values in
    the same products, so bitwise the same columns, numpy's to rounding
    (:func:`_updates_agree`), at an odd leading dimension (the copies are 8
    bytes) and one of whole sectors."""
    _updates_agree(queue, rng, products, w, data,
                   [{"ld": ld, "update_parts": parts, "update_stages": stages}
                    for ld in (UPDATE_ROWS + 1, 320) for parts in (1, 2)
                    for stages in (0, 2, 4)])


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32])
@pytest.mark.parametrize("data", ["interleaved", "split"])
def test_mma_update_three_products(queue, rng, products, w, data):
    """Gauss's three real products a complex product in the staged update
    kernel (``update_products=3``): each entry is the same three sums over
    the same columns in the same order whatever the stages and the warps a
    block of rows, so bitwise the same columns, and numpy's update to
    rounding (:func:`_updates_agree`), at an odd leading dimension and one of
    whole sectors; the columns differ from those of the four products (the
    two sums are rounded), so the three were taken."""
    _updates_agree(queue, rng, products, w, data,
                   [{"ld": ld, "update_parts": parts, "update_stages": stages,
                     "update_products": 3}
                    for ld in (UPDATE_ROWS + 1, 320) for parts in (1, 2) for stages in (2, 4)],
                   unlike={"update_stages": 2, "update_products": 4})


def test_mma_update_three_products_refused():
    """Three products are a form of the staged update kernel, for complex
    data."""
    for complex_, stages in ((False, 2), (True, 0)):
        with pytest.raises(ValueError, match="update_products=3: the mma update kernel"):
            _blocked_spec(16, complex_=complex_, products="mma.emulated",
                          update_stages=stages, update_products=3)
    with pytest.raises(ValueError, match="update_products must be 3 or 4"):
        blocked_tuning(16, update_products=2)


def test_mma_update_stages_refused():
    """Stages are a form of the mma update kernel without loads ahead, of at
    least 2 stages."""
    for products, ahead, stages in (("fma", False, 2), ("mma.emulated", True, 2),
                                    ("mma.emulated", False, 1)):
        with pytest.raises(ValueError, match=f"update_stages={stages}: the staged update"):
            _blocked_spec(16, products=products, loads_ahead=(False, ahead),
                          update_stages=stages)
    with pytest.raises(ValueError, match="update_stages must be a non-negative integer"):
        blocked_tuning(16, update_stages=-1)


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("w", [8, 16, 32])
@pytest.mark.parametrize("stages", [2, 3])
def test_mma_gram_stages_same_bits(queue, rng, products, w, stages):
    """The staged Gram kernel (each warp's rows copied to local memory,
    `stages` stretches in flight) against the register form: the same
    values in the same products, so bitwise the same partial Gram matrices,
    and numpy's to rounding.  Chunks of 288 rows (several stretches a warp)
    and of 48 with 77 rows (a partial stretch and an odd last row, whose
    copy is 8 bytes and a zero)."""
    if _refused(queue, products, w):
        return
    for m, chunk_rows in ((300, 288), (77, 48)):
        G = _draw(rng, (m, 4 * w), "real")
        signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
        pairs = [[0, 3], [1, 2]]
        grams = [_block_step(queue, G, signs, pairs, w, 1, chunk_rows=chunk_rows,
                             products=products, gram_stages=n)[1] for n in (0, stages)]
        assert np.array_equal(*grams)
        expected = _gram_expected(G, pairs, w, chunk_rows)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(grams[1] / scale, expected / scale, rtol=0, atol=1e-14)


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize(("w", "data"), [(64, "real"), (32, "interleaved"), (32, "split")])
def test_mma_gram_team_stages_same_bits(queue, rng, products, w, data):
    """The teamed Gram kernel (Z of 128 real columns) with its rows copied to
    stages in local memory that its warps share, against the register form:
    the same values in the same products, so bitwise the same partial Gram
    matrices, and numpy's to rounding.  Chunks of 288 rows (several
    stretches) and of 48 with 77 rows (a partial stretch), at an odd
    leading dimension (8-byte copies).  On PoCL the emulated program, whose
    build takes minutes, is built for one case (complex interleaved, 3
    stages)."""
    if _refused(queue, products, w, data):
        return
    emulated = products == "mma.emulated"
    stages = [3] if emulated else list(range(2, gram_team_stages_most(w, data != "real") + 1))
    layout = _layout(data)
    for m, chunk_rows in ((300, 288), (77, 48)):
        G = _draw(rng, (m, 4 * w), data)
        signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
        pairs = [[0, 3], [1, 2]]
        grams = [_block_step(queue, G, signs, pairs, w, 1, chunk_rows=chunk_rows,
                             products=products, layout=layout, gram_stages=n, ld=m + 1)[1]
                 for n in [0, *stages]]
        for gram in grams[1:]:
            assert np.array_equal(grams[0], gram)
        expected = _gram_expected(G, pairs, w, chunk_rows)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(grams[1] / scale, expected / scale, rtol=0, atol=1e-14)


@pytest.mark.parametrize(("w", "complex_"), [(8, False), (32, False), (16, True), (64, False),
                                             (32, True)])
def test_gram_teams_cover_the_tiles(w, complex_):
    """The warps' teams of tiles are the tiles on and above the diagonal,
    each once, at most 20 a warp (the register budget of the 64-column
    kernel); one team up to 64 real columns, four at 128, with the warps
    the plan gives the kernel by default."""
    teams = gram_mma_teams(w, complex_)
    tiles = gram_mma_tiles(w, complex_)
    assert sorted(tile for team in teams for tile in team) == sorted(tiles)
    assert max(len(team) for team in teams) <= 20
    teamed = mma_teamed(w, complex_)
    assert len(teams) == (4 if teamed else 1)
    if teamed:
        assert len(tiles) == 72 and default_gram_warps(w, complex_) == 4
        assert default_loads_ahead(complex_, w)[0] is False
        assert 2 <= default_gram_stages(complex_, w) <= gram_team_stages_most(w, complex_)


def test_gram_stages_only_where_the_kernel_has_them():
    """Stages are a form of the real mma Gram kernel without loads ahead."""
    common = {"block_width": 8, "tile_rows": 32, "transform_in_local": False,
              "gram_micro_tile": 4, "gram_row_slices": 1, "rotate_work_group_size": 64,
              "update_tile_rows": 32, "update_micro_rows": 2, "update_micro_cols": 4}
    for dtype, products, ahead, stages in (("float64", "fma", False, 2),
                                           ("complex128", "mma.emulated", False, 2),
                                           ("float64", "mma.emulated", True, 2),
                                           ("float64", "mma.emulated", False, 1)):
        with pytest.raises(ValueError, match="the staged Gram kernel takes"):
            BlockedSpec(dtype=dtype, matrix_products=products, gram_loads_ahead=ahead,
                        gram_stages=stages, **common)
    with pytest.raises(ValueError, match="gram_stages must be a non-negative integer"):
        blocked_tuning(8, gram_stages=-1)


def test_loads_ahead_only_in_the_mma_form():
    """The fma kernels have no loads ahead: a spec asking for them is refused."""
    with pytest.raises(ValueError, match="loads ahead are a form of the mma kernels"):
        BlockedSpec(dtype="float64", block_width=8, tile_rows=32, transform_in_local=False,
                    gram_micro_tile=4, gram_row_slices=1, rotate_work_group_size=64,
                    update_tile_rows=32, update_micro_rows=2, update_micro_cols=4,
                    update_loads_ahead=True)
    assert default_loads_ahead(False) == (False, True)
    assert default_loads_ahead(True) == (True, False)
    with pytest.raises(TypeError, match="update_loads_ahead must be a bool or None, not 1"):
        blocked_tuning(8, update_loads_ahead=1)


def test_loads_ahead_chosen_and_overridden(queue, rng):
    """A blocked run in the (emulated) mma form takes default_loads_ahead,
    and a choice given to BlockedHSVD; both give the same bits."""
    w, n = 8, 64
    G = rng.standard_normal((n + 3, n))
    signs = np.r_[np.ones(40), -np.ones(24)].astype(np.int8)
    results = []
    for ahead in (None, False, True):
        driver = BlockedHSVD(queue, accumulate_v=True, block_width=w, variant="bo",
                             matrix_products="mma.emulated", gram_loads_ahead=ahead,
                             update_loads_ahead=ahead)
        G_new, V, _ = driver.run(G, signs, max_sweeps=3)
        spec = driver.plan.spec
        expected = default_loads_ahead(False) if ahead is None else (ahead, ahead)
        assert (spec.gram_loads_ahead, spec.update_loads_ahead) == expected
        results.append((G_new, V))
    for G_new, V in results[1:]:
        assert np.array_equal(G_new, results[0][0]) and np.array_equal(V, results[0][1])


def test_gram_stages_chosen_and_overridden(queue, rng):
    """A real blocked run in the (emulated) mma form takes
    default_gram_stages, the register form where it is asked for or where
    Gram loads ahead are, and any count of stages given; all give the same
    bits.  Complex data keep the register form."""
    w, n = 8, 64
    G = rng.standard_normal((n + 3, n))
    signs = np.r_[np.ones(40), -np.ones(24)].astype(np.int8)
    results = []
    for stages, ahead, expected in ((None, None, default_gram_stages(False)), (0, None, 0),
                                    (3, None, 3), (None, True, 0)):
        driver = BlockedHSVD(queue, accumulate_v=True, block_width=w, variant="bo",
                             matrix_products="mma.emulated", gram_stages=stages,
                             gram_loads_ahead=ahead)
        G_new, V, _ = driver.run(G, signs, max_sweeps=3)
        assert driver.plan.spec.gram_stages == expected
        results.append((G_new, V))
    assert default_gram_stages(False) >= 2 and default_gram_stages(True) == 0
    for G_new, V in results[1:]:
        assert np.array_equal(G_new, results[0][0]) and np.array_equal(V, results[0][1])


@pytest.mark.parametrize("products", MMA_FORMS)
@pytest.mark.parametrize("data", DATA)
def test_mma_block_step_against_numpy(queue, rng, products, data):
    """A whole step (Gram, inner sweeps, update) in the mma form: numpy's
    rotations and transformations to rounding."""
    if _refused(queue, products):
        return
    w, m = 8, 45
    G = _draw(rng, (m, 4 * w), data)
    signs = np.where(rng.random(4 * w) < 0.5, 1, -1).astype(np.int32)
    _check_block_step(queue, G, signs, [[0, 3], [1, 2]], w, 30, products=products,
                      layout=_layout(data))


def _blocked_hsvd(queue, G, signs, w, products):
    driver = BlockedHSVD(queue, accumulate_v=True, block_width=w, variant="bo",
                         matrix_products=products)
    G_new, V, stats = driver.run(G, signs, max_sweeps=40)
    return driver, G_new, V, stats


@pytest.mark.parametrize("products", MMA_FORMS)
def test_mma_blocked_sweeps(queue, rng, products):
    """Blocked sweeps to convergence in the mma form: G V stays G, V is
    J-unitary, the columns end J-orthogonal as with the fma form, and the
    run is bitwise repeatable."""
    if _refused(queue, products):
        return
    w, n = 8, 64
    G = rng.standard_normal((n + 3, n)) * 2.0 ** rng.integers(-8, 8, n)
    signs = np.r_[np.ones(40), -np.ones(24)].astype(np.int8)
    driver, G_new, V, stats = _blocked_hsvd(queue, G, signs, w, products)
    assert driver.plan.spec.matrix_products == products
    assert driver.plan.spec.gram_work_group_size == 32 * default_gram_warps(w)
    assert stats.converged
    scale = np.abs(G).max()
    np.testing.assert_allclose(G_new / scale, G @ V / scale, rtol=0, atol=1e-13)
    J = np.diag(signs.astype(float))
    np.testing.assert_allclose(V.T @ J @ V, J, rtol=0, atol=1e-11 * np.abs(V).max() ** 2)
    _, fma_G, _, _ = _blocked_hsvd(queue, G, signs, w, "fma")
    norms = np.linalg.norm(G_new, axis=0)
    np.testing.assert_allclose(norms, np.linalg.norm(fma_G, axis=0), rtol=1e-10)
    _, again, _, _ = _blocked_hsvd(queue, G, signs, w, products)
    assert np.array_equal(G_new, again)


def test_eig_indefinite_through_emulated_mma(monkeypatch, rng):
    """The public solver with CLJACOBI_MATRIX_PRODUCTS=mma.emulated (the
    tensor-core kernels' data flow): a graded indefinite matrix's eigenvalues
    to high relative accuracy, the run records the form."""
    M, _, _ = graded(40, p=17, low_exponent=-30, rng=rng)
    exact = eigvalsh_hiprec(M)
    monkeypatch.setenv(ENV_VAR, "mma.emulated")
    (w, U), info = cljacobi.eig_indefinite(M, variant="bo", block_width=8, return_info=True)
    assert info.matrix_products == "mma.emulated"
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(M @ U - U * w) <= 50 * 40 * EPS * np.linalg.norm(M)
    assert np.linalg.norm(U.T @ U - np.eye(40)) <= 50 * 40 * EPS


def test_complex_eig_indefinite_through_emulated_mma(monkeypatch, rng):
    """Complex Hermitian data through the emulated tensor-core kernels (real
    and imaginary parts as one real matrix): LAPACK's eigenvalues, unitary
    eigenvectors, the fma run's eigenvalues to rounding."""
    n = 48
    A = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    M = A + A.conj().T
    fma = cljacobi.eig_indefinite(M, variant="bo", block_width=8)
    monkeypatch.setenv(ENV_VAR, "mma.emulated")
    (w, U), info = cljacobi.eig_indefinite(M, variant="bo", block_width=8, return_info=True)
    assert info.matrix_products == "mma.emulated"
    np.testing.assert_allclose(w, np.linalg.eigvalsh(M), rtol=0, atol=1e3 * EPS * n)
    np.testing.assert_allclose(w, fma.eigenvalues, rtol=0, atol=1e3 * EPS * n)
    assert np.linalg.norm(M @ U - U * w) <= 50 * n * EPS * np.linalg.norm(M)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 50 * n * EPS


def test_choice_of_the_form(queue, monkeypatch):
    """"auto" takes the device's tensor cores for w a multiple of 8 (at most 32
    real, 16 complex, or 64 and 32) and factors of MMA_MIN_ROWS rows or
    more, else "fma";
    requests are checked against the data and the device;
    the environment variable applies where nothing is requested."""
    device = queue.device
    monkeypatch.delenv(ENV_VAR, raising=False)
    native = native_mma(device)
    assert choose_matrix_products(device, complex_=False, block_width=16) == (native or "fma")
    assert choose_matrix_products(device, complex_=True, block_width=16) == (native or "fma")
    assert choose_matrix_products(device, complex_=True, block_width=32) == (native or "fma")
    assert choose_matrix_products(device, complex_=True, block_width=24) == "fma"
    assert choose_matrix_products(device, complex_=True, block_width=64) == "fma"
    assert choose_matrix_products(device, complex_=False, block_width=4) == "fma"
    assert choose_matrix_products(device, complex_=False, block_width=16,
                                  rows=MMA_MIN_ROWS - 1) == "fma"
    assert choose_matrix_products(device, complex_=False, block_width=16,
                                  rows=MMA_MIN_ROWS) == (native or "fma")
    assert choose_matrix_products(device, complex_=False, block_width=16, rows=64,
                                  requested="mma.emulated") == "mma.emulated"
    assert choose_matrix_products(device, complex_=False, block_width=16,
                                  requested="fma") == "fma"
    assert choose_matrix_products(device, complex_=False, block_width=8,
                                  requested="mma.emulated") == "mma.emulated"
    assert choose_matrix_products(device, complex_=True, block_width=8,
                                  requested="mma.emulated") == "mma.emulated"
    with pytest.raises(ValueError, match=r"at most 16 \(or 32\) for complex data"):
        choose_matrix_products(device, complex_=True, block_width=24, requested="mma.emulated")
    assert choose_matrix_products(device, complex_=True, block_width=32,
                                  requested="mma.emulated") == "mma.emulated"
    with pytest.raises(ValueError, match="block_width=12"):
        choose_matrix_products(device, complex_=False, block_width=12,
                               requested="mma.emulated")
    with pytest.raises(ValueError, match="matrix_products must be"):
        choose_matrix_products(device, complex_=False, block_width=8, requested="tensor")
    monkeypatch.setenv(ENV_VAR, "mma.emulated")
    assert choose_matrix_products(device, complex_=False, block_width=8) == "mma.emulated"
    assert choose_matrix_products(device, complex_=False, block_width=8,
                                  requested="auto") == (native or "fma")
    monkeypatch.setenv(ENV_VAR, "tensor")
    with pytest.raises(ValueError, match=f"{ENV_VAR} must be"):
        choose_matrix_products(device, complex_=False, block_width=8)
    with pytest.raises(ValueError, match="matrix_products must be"):
        BlockedHSVD(queue, accumulate_v=False, block_width=8, variant="bo",
                    matrix_products="tensor")


def test_native_form_follows_the_compute_capability(queue):
    """NVIDIA devices report their compute capability; the native form is the
    newest instruction it allows, and other devices have none."""
    capability = compute_capability(queue.device)
    native = native_mma(queue.device)
    if capability is None:
        assert native is None
        assert "cl_nv_device_attribute_query" not in queue.device.extensions.split() or \
            "NVIDIA" not in queue.device.vendor.upper()
    else:
        assert native == ("mma.m16n8k4" if capability >= (9, 0) else
                          "mma.m8n8k4" if capability >= (8, 0) else None)


def test_mma_spec_checks_and_sizes(queue):
    """The spec refuses widths the fragments do not tile or registers do not hold;
    the work-groups are whole warps and the local memory is the sums, W and
    (emulated) the scratch."""
    common = {"block_width": 8, "tile_rows": 64, "transform_in_local": True,
              "gram_micro_tile": 4, "gram_row_slices": 1, "rotate_work_group_size": 16,
              "update_tile_rows": 32, "update_micro_rows": 4, "update_micro_cols": 4}
    with pytest.raises(ValueError, match="at most 32 for real data and 16 for complex"):
        BlockedSpec(dtype="complex128", layout="split", matrix_products="mma.emulated",
                    **{**common, "block_width": 24})
    teamed = {**common, "block_width": 32, "gram_warps": 4}
    assert len(BlockedSpec(dtype="complex128", layout="split", matrix_products="mma.emulated",
                           **teamed).gram_teams) == 4
    with pytest.raises(ValueError, match="splits its tiles among 4 warps: gram_warps=4"):
        BlockedSpec(dtype="complex128", layout="split", matrix_products="mma.emulated",
                    **{**teamed, "gram_warps": 2})
    with pytest.raises(ValueError, match="matrix_products must be one of"):
        BlockedSpec(dtype="float64", matrix_products="dmma", **common)
    spec = BlockedSpec(dtype="float64", matrix_products="mma.emulated", gram_warps=2,
                       update_warps=3, **common)
    assert (spec.gram_work_group_size, spec.update_work_group_size) == (64, 96)
    assert gram_mma_tiles(8) == ((0, 0), (0, 1))
    assert len(gram_mma_tiles(32)) == 20 and len(gram_mma_tiles(32, True)) == 72
    # teamed: the stored tiles, 74 KB, instead of the 128 x 129 sums
    assert blocked_local_bytes(32, element_bytes=16, matrix_products="mma.m16n8k4",
                               gram_warps=4, update_warps=8) == 8 * 128 * 132  # the update's M
    K = 64
    fma = blocked_local_bytes(32, transform_in_local=False)
    mma = blocked_local_bytes(32, transform_in_local=False, matrix_products="mma.m16n8k4")
    emulated = blocked_local_bytes(32, transform_in_local=False,
                                   matrix_products="mma.emulated", gram_warps=UPDATE_WARPS,
                                   update_warps=UPDATE_WARPS)
    assert mma <= fma
    assert emulated >= 8 * K * (K + 4) + 8 * 96 * UPDATE_WARPS


def test_mma_template_renders_only_its_products(queue):
    """The native forms carry the PTX of their instruction and nothing of the
    others; the emulated and fma forms carry no PTX."""
    def _spec(products):
        return BlockedSpec(dtype="float64", block_width=8, tile_rows=64,
                           transform_in_local=True, gram_micro_tile=4, gram_row_slices=1,
                           rotate_work_group_size=16, update_tile_rows=32,
                           update_micro_rows=4, update_micro_cols=4,
                           matrix_products=products)

    texts = {products: render(_spec(products)) for products in MATRIX_PRODUCTS}
    assert "mma.sync.aligned.m16n8k4" in texts["mma.m16n8k4"]
    assert "m8n8k4" not in texts["mma.m16n8k4"].replace("mma.m8n8k4", "")
    assert texts["mma.m8n8k4"].count("mma.sync.aligned.m8n8k4") == 2
    for products in ("fma", "mma.emulated"):
        assert "asm" not in texts[products]
    assert "cjac_mma_emulated" in texts["mma.emulated"]
    assert "CJAC_MMA" not in texts["fma"]


@pytest.mark.parametrize("data", ["real", "interleaved"])
def test_gsvd_through_emulated_mma(monkeypatch, rng, data):
    """The GSVD's block level (Gram matrices of F and G, updates of F, G and Z
    by the same kernels) in the emulated tensor-core form: the generalized
    singular values of LAPACK's ggsvd3 and of the fma run."""
    n = 40
    A, B = _draw(rng, (48, n), data), _draw(rng, (44, n), data)
    fma = cljacobi.gsvd(A, B, variant="bo", block_width=8)
    monkeypatch.setenv(ENV_VAR, "mma.emulated")
    result, info = cljacobi.gsvd(A, B, variant="bo", block_width=8, return_info=True)
    assert info.converged and info.matrix_products == "mma.emulated"
    sigma = result.C / result.S
    _, _, C, S, _ = gsvd4py.gsvd(A, B, mode="econ")
    expected = np.diag(C) / np.diag(S)
    assert np.max(np.abs(sigma - expected) / expected) <= 100 * n * EPS
    assert np.max(np.abs(sigma - fma.C / fma.S) / sigma) <= 100 * n * EPS


def test_stream_variant_through_emulated_mma(monkeypatch, rng):
    """The stream rotate kernel between the emulated tensor-core Gram and
    update kernels: hsvd's S equal to the fma run's to rounding."""
    G = rng.standard_normal((70, 48)) * 2.0 ** rng.integers(-8, 8, 48)
    J = np.where(np.arange(48) < 30, 1, -1)
    _, S_fma, _, _ = cljacobi.hsvd(G, J, variant="stream", block_width=8)
    monkeypatch.setenv(ENV_VAR, "mma.emulated")
    (U, S, Vh, _), info = cljacobi.hsvd(G, J, variant="stream", block_width=8,
                                        return_info=True)
    assert info.matrix_products == "mma.emulated"
    np.testing.assert_allclose(S, S_fma, rtol=1e-12)
    np.testing.assert_allclose(U * S @ Vh, G, rtol=0, atol=1e-13 * np.abs(G).max())
