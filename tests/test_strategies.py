"""Tests of cljacobi.strategies (docs/design.md, Appendix A)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from cljacobi import strategies as st
from cljacobi.strategies import (
    STRATEGIES,
    StepTable,
    mm_closed_form,
    mm_stepper_init,
    mm_stepper_update,
    step_table,
)

ORDERS = [2, 4, 6, 8, 10, 12, 16, 18, 30, 32, 34, 64, 100, 128]
CYCLIC = ["me", "ring", "round-robin"]


def parse(text: str) -> list[list[tuple[int, int]]]:
    """Parse docs/design.md's ``(0,7)(1,6) | (1,7)...`` notation into steps of pairs."""
    steps = []
    for step in text.split("|"):
        pairs = step.replace(" ", "").strip("()").split(")(")
        steps.append([tuple(int(x) for x in p.split(",")) for p in pairs])
    return steps


def pair_counts(pairs: np.ndarray, n: int) -> np.ndarray:
    """``counts[i, j]``: how often ``{i, j}`` occurs in the table (upper triangle)."""
    flat = pairs.reshape(-1, 2).astype(np.int64)
    lo, hi = flat.min(axis=1), flat.max(axis=1)
    return np.bincount(lo * n + hi, minlength=n * n).reshape(n, n)


def apply_compare_exchange(table: StepTable, values: np.ndarray) -> np.ndarray:
    """Run one sweep of compare-exchanges on the rows of ``values`` (trials x n).

    In every pair the larger value goes to ``pairs[s, k, 0]`` where
    ``larger_first`` is True and to ``pairs[s, k, 1]`` otherwise.
    """
    v = np.array(values, copy=True)
    for s in range(table.steps):
        i, j = table.pairs[s, :, 0], table.pairs[s, :, 1]
        lf = table.larger_first[s]
        a, b = v[:, i], v[:, j]
        hi, lo = np.maximum(a, b), np.minimum(a, b)
        v[:, i] = np.where(lf, hi, lo)
        v[:, j] = np.where(lf, lo, hi)
    return v


# ----------------------------------------------------------------------------
# every strategy
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", ORDERS)
@pytest.mark.parametrize("name", STRATEGIES)
@pytest.mark.parametrize("sweep", [0, 1])
def test_steps_are_disjoint_and_in_range(name: str, n: int, sweep: int) -> None:
    t = step_table(name, n, sweep=sweep)
    assert t.name == name and t.order == n
    assert t.pairs.dtype == np.int32
    assert t.pairs.shape == ((n if name == "mm" else n - 1), n // 2, 2)
    assert t.steps == t.pairs.shape[0]
    assert t.cyclic == (name != "mm")
    # i < j, and every step is a perfect matching of 0..n-1
    assert np.all(t.pairs[:, :, 0] < t.pairs[:, :, 1])
    flat = np.sort(t.pairs.reshape(t.steps, n), axis=1)
    assert np.array_equal(flat, np.broadcast_to(np.arange(n), flat.shape))
    if name == "ring":
        assert t.larger_first is not None
        assert t.larger_first.dtype == bool and t.larger_first.shape == t.pairs.shape[:2]
    else:
        assert t.larger_first is None


@pytest.mark.parametrize("n", ORDERS)
@pytest.mark.parametrize("name", CYCLIC)
@pytest.mark.parametrize("sweep", [0, 1])
def test_cyclic_strategies_meet_every_pair_once(name: str, n: int, sweep: int) -> None:
    counts = pair_counts(step_table(name, n, sweep=sweep).pairs, n)
    assert np.array_equal(counts, np.triu(np.ones((n, n), dtype=np.int64), 1))


@pytest.mark.parametrize("name", STRATEGIES)
def test_tables_are_read_only_and_cached(name: str) -> None:
    t = step_table(name, 10)
    with pytest.raises(ValueError):
        t.pairs[0, 0, 0] = 5
    assert step_table(name, 10) is t
    if name in ("mm", "ring"):
        assert step_table(name, 10, sweep=2) is t


def test_unknown_name_lists_strategies() -> None:
    with pytest.raises(ValueError) as exc:
        step_table("odd-even", 8)
    for name in STRATEGIES:
        assert repr(name) in str(exc.value)


@pytest.mark.parametrize("order", [1, 3, 7, 101, 0, -2])
@pytest.mark.parametrize("name", STRATEGIES)
def test_bad_order_raises(name: str, order: int) -> None:
    with pytest.raises(ValueError, match="even"):
        step_table(name, order)


def test_bad_arguments_raise() -> None:
    with pytest.raises(TypeError):
        step_table("mm", 8.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sweep"):
        step_table("ring", 8, sweep=-1)
    with pytest.raises(ValueError):
        mm_stepper_init(5)
    assert step_table("me", np.int64(8)).order == 8


# ----------------------------------------------------------------------------
# modified modulus
# ----------------------------------------------------------------------------

MM8 = parse(
    "(0,7)(1,6)(2,5)(3,4) | (1,7)(2,6)(3,5)(0,4) | (2,7)(3,6)(4,5)(0,1) |"
    "(3,7)(4,6)(1,5)(0,2) | (4,7)(5,6)(1,2)(0,3) | (5,7)(2,6)(1,3)(0,4) |"
    "(6,7)(2,3)(1,4)(0,5) | (3,7)(2,4)(1,5)(0,6)"
)


def test_mm_n8_matches_design_exactly() -> None:
    assert step_table("mm", 8).pairs.tolist() == [[list(p) for p in s] for s in MM8]


@pytest.mark.parametrize("n", ORDERS)
def test_mm_pair_multiplicities(n: int) -> None:
    counts = pair_counts(step_table("mm", n).pairs, n)
    i, j = np.triu_indices(n, 1)
    expected = np.where(j - i == n // 2, 2, 1)
    assert np.array_equal(counts[i, j], expected)
    assert counts[np.tril_indices(n)].sum() == 0


def _update_literal(state: tuple[list[int], ...], r: int) -> tuple[list[int], ...]:
    """Algorithm 4.4 (Update_Stepper), transcribed block by block, 0-based."""
    ip, jp, i_blk, j_blk = (list(a) for a in state)
    for k in range(r // 2):
        if ip[k] + jp[k] >= r - 1:
            ip[k] = ip[k] + 1
            if ip[k] == jp[k]:
                ip[k] = ip[k] - r // 2
                jp[k] = ip[k]
            i_blk[k] = ip[k]
        else:
            jp[k] = jp[k] + 1
            j_blk[k] = jp[k]
    return ip, jp, i_blk, j_blk


@pytest.mark.parametrize("n", ORDERS)
def test_mm_stepper_equals_table_and_closed_form(n: int) -> None:
    state = mm_stepper_init(n)
    h = n // 2
    assert state.i_blk.tolist() == list(range(h))
    assert state.j_blk.tolist() == [n - 1 - k for k in range(h)]
    literal = tuple(a.tolist() for a in state)
    tables = [step_table("mm", n, sweep=0).pairs, step_table("mm", n, sweep=1).pairs]
    for g in range(2 * n):  # two quasi-sweeps: the stepper just continues
        assert tuple(a.tolist() for a in state) == literal
        assert np.array_equal(tables[g // n][g % n], np.stack([state.i_blk, state.j_blk], -1))
        tabled = {(int(i), int(j)) for i, j in zip(state.i_blk, state.j_blk, strict=True)}
        assert tabled == mm_closed_form(n, g)
        state = mm_stepper_update(state, n)
        literal = _update_literal(literal, n)
    # period 2n: the third quasi-sweep is the first again
    assert [a.tolist() for a in state] == [a.tolist() for a in mm_stepper_init(n)]


@pytest.mark.parametrize("n", ORDERS)
def test_mm_second_quasi_sweep_reverses_slots(n: int) -> None:
    first = step_table("mm", n, sweep=0).pairs
    second = step_table("mm", n, sweep=1).pairs
    assert np.array_equal(second, first[:, ::-1])
    assert np.array_equal(step_table("mm", n, sweep=2).pairs, first)
    assert np.array_equal(step_table("mm", n, sweep=7).pairs, second)


def test_mm_closed_form_examples() -> None:
    assert mm_closed_form(8, 0) == {(0, 7), (1, 6), (2, 5), (3, 4)}
    assert mm_closed_form(8, 1) == {(1, 7), (2, 6), (3, 5), (0, 4)}
    assert mm_closed_form(8, 9) == mm_closed_form(8, 1)
    assert mm_closed_form(2, 0) == mm_closed_form(2, 1) == {(0, 1)}


def test_mm_stepper_does_not_modify_its_input() -> None:
    state = mm_stepper_init(8)
    before = [a.copy() for a in state]
    mm_stepper_update(state, 8)
    assert all(np.array_equal(a, b) for a, b in zip(state, before, strict=True))


# ----------------------------------------------------------------------------
# Mantharam-Eberlein
# ----------------------------------------------------------------------------

ME8 = parse(
    "(0,7)(1,6)(2,5)(3,4) | (0,6)(1,7)(2,4)(3,5) | (0,5)(1,4)(2,7)(3,6) |"
    "(0,4)(1,5)(2,6)(3,7) | (0,3)(1,2)(4,7)(5,6) | (0,2)(1,3)(4,6)(5,7) |"
    "(0,1)(2,3)(4,5)(6,7)"
)
ME6 = parse(
    "(0,5)(1,2)(3,4) | (0,4)(1,3)(2,5) | (0,3)(1,5)(2,4) | (0,2)(1,4)(3,5) | (0,1)(2,3)(4,5)"
)


def as_lists(table: list[list[tuple[int, int]]]) -> list[list[list[int]]]:
    return [[list(p) for p in s] for s in table]


def test_me_n8_and_n6_match_design_exactly() -> None:
    assert step_table("me", 8).pairs.tolist() == as_lists(ME8)
    assert step_table("me", 6).pairs.tolist() == as_lists(ME6)
    assert st._me_base(6).tolist() == as_lists(ME6)
    assert st._me_base_search(6).tolist() == as_lists(ME6)
    assert step_table("me", 2).pairs.tolist() == [[[0, 1]]]


def check_me_shape(table: np.ndarray, searched: bool = True) -> None:
    """Properties shared by every ME table (searched, constructed, doubled);
    step s starts with (0, n-1-s) where the base was searched (the search
    takes the first unused pair first)."""
    steps, h, _ = table.shape
    n = 2 * h
    assert steps == n - 1
    if searched:
        assert np.array_equal(table[:, 0],
                              np.stack([np.zeros(n - 1), n - 1 - np.arange(n - 1)], -1))
    assert table[-1].tolist() == [[2 * k, 2 * k + 1] for k in range(h)]
    assert np.all(np.diff(table[:, :, 0], axis=1) > 0)  # pairs sorted by first index
    assert np.all(table[:, :, 0] < table[:, :, 1])
    assert np.array_equal(pair_counts(table, n), np.triu(np.ones((n, n), dtype=np.int64), 1))


@pytest.mark.parametrize("n", ORDERS + [1000])
def test_me_structure(n: int) -> None:
    b = n // (n & -n) * 2 if n % 4 == 0 else n  # the base: n = b 2^k, b/2 odd
    check_me_shape(step_table("me", n).pairs, searched=b <= st.ME_SEARCH_MAX_BASE)


@pytest.mark.parametrize("b", [2, 6, 10, 14, 18, 22])
def test_me_searched_bases(b: int) -> None:
    check_me_shape(st._me_base_search(b))
    assert np.array_equal(st._me_base(b), st._me_base_search(b))


@pytest.mark.parametrize("b", [6, 10, 22, 26, 30, 34, 150, 250, 998])
def test_me_halves_construction(b: int) -> None:
    table = st._me_base_halves(b)
    check_me_shape(table, searched=False)
    if b > st.ME_SEARCH_MAX_BASE:
        assert np.array_equal(st._me_base(b), table)
    # Block-recursive: the first b/2 - 1 steps pair the halves, the rest pair
    # within them but for one pair a step.
    q = b // 2
    across = (table[:, :, 0] < q) & (table[:, :, 1] >= q)
    assert across[: q - 1].all() and (across[q - 1:].sum(axis=1) == 1).all()


def _double_literal(table: np.ndarray) -> list[list[tuple[int, int]]]:
    """The doubling rule of docs/design.md, Appendix A, written out with loops."""
    out = []
    for step in table.tolist():
        out.append([p for i, j in step for p in ((2 * i, 2 * j + 1), (2 * i + 1, 2 * j))])
        out.append([p for i, j in step for p in ((2 * i, 2 * j), (2 * i + 1, 2 * j + 1))])
    m = 2 * table.shape[1]
    out.append([(2 * k, 2 * k + 1) for k in range(m)])
    return out


@pytest.mark.parametrize("m", [2, 4, 6, 10, 16, 50, 64])
def test_me_doubling(m: int) -> None:
    assert step_table("me", 2 * m).pairs.tolist() == as_lists(
        _double_literal(step_table("me", m).pairs)
    )


@pytest.mark.parametrize("n", [8, 30, 100])
def test_me_same_every_sweep(n: int) -> None:
    assert np.array_equal(step_table("me", n, sweep=3).pairs, step_table("me", n).pairs)


# ----------------------------------------------------------------------------
# round-robin (Brent-Luk)
# ----------------------------------------------------------------------------


def _round_robin_literal(n: int, steps: int) -> list[list[tuple[int, int]]]:
    """docs/design.md, Appendix A, movement, slot by slot."""
    h = n // 2
    left = [2 * k for k in range(h)]
    right = [2 * k + 1 for k in range(h)]
    out = []
    for _ in range(steps):
        out.append([(min(a, b), max(a, b)) for a, b in zip(left, right, strict=True)])
        if h == 1:
            continue
        new_left = [left[0], right[0]] + [left[k - 1] for k in range(2, h)]
        new_right = [right[k + 1] for k in range(h - 1)] + [left[h - 1]]
        left, right = new_left, new_right
    return out


@pytest.mark.parametrize("n", ORDERS)
def test_round_robin_movement(n: int) -> None:
    literal = _round_robin_literal(n, 2 * (n - 1))
    t = step_table("round-robin", n)
    assert t.pairs.tolist() == as_lists(literal[: n - 1])
    # the movement returns to its start after a sweep: every sweep is the same
    assert t.pairs.tolist() == as_lists(literal[n - 1 :])
    assert step_table("round-robin", n, sweep=1) is t


def test_round_robin_n8() -> None:
    expected = parse(
        "(0,1)(2,3)(4,5)(6,7) | (0,3)(1,5)(2,7)(4,6) | (0,5)(3,7)(1,6)(2,4) |"
        "(0,7)(5,6)(3,4)(1,2) | (0,6)(4,7)(2,5)(1,3) | (0,4)(2,6)(1,7)(3,5) |"
        "(0,2)(1,4)(3,6)(5,7)"
    )
    assert step_table("round-robin", 8).pairs.tolist() == as_lists(expected)


# ----------------------------------------------------------------------------
# ring (Zhou-Brent)
# ----------------------------------------------------------------------------


def _ring_physical(n: int, values: list[float], sweeps: int) -> tuple[list, list]:
    """Zhou & Brent's ring, elements moving physically (independent transcription).

    Each ring column holds [top, bottom].  Forward sweep step s = 1..n-1:
    compare-exchange (smaller on top, larger at the bottom, except in the
    arrow's column at an even step where the larger goes on top), then the
    arrow's column (column ceil(s/2)) exchanges, then the bottoms move one
    column right (the rightmost to the first).  Backward: opposite compare.
    Values are (value, label) so the meetings of labels can be recorded too.
    Returns the final columns and, per sweep, the list of pairs of labels met.
    """
    h = n // 2
    cols = [[(values[2 * c + 1], 2 * c + 1), (values[2 * c], 2 * c)] for c in range(h)]
    met = []
    for sweep in range(sweeps):
        backward = sweep % 2 == 1
        met_sweep = []
        for s in range(1, n):
            arrow = (s + 1) // 2 - 1
            step = []
            for c in range(h):
                top, bot = cols[c]
                step.append(frozenset((top[1], bot[1])))
                larger_on_top = (c == arrow and s % 2 == 0) != backward
                small, large = sorted((top, bot))
                cols[c] = [large, small] if larger_on_top else [small, large]
            met_sweep.append(step)
            cols[arrow] = cols[arrow][::-1]
            bottoms = [col[1] for col in cols]
            bottoms = bottoms[-1:] + bottoms[:-1]
            cols = [[col[0], b] for col, b in zip(cols, bottoms, strict=True)]
        met.append(met_sweep)
    return cols, met


@pytest.mark.parametrize("n", [2, 4, 6, 8, 10, 12, 16, 18, 30])
def test_ring_physical_model_sorts_like_the_paper(n: int) -> None:
    """Prop. 2: forward sorts nondecreasing, backward nonincreasing (bottom up, left to right)."""
    rng = np.random.default_rng(n)
    for _ in range(20):
        values = rng.permutation(n).tolist()
        cols, _ = _ring_physical(n, values, 1)
        order = [v for col in cols for v, _ in (col[1], col[0])]
        assert order == sorted(order)
        cols, _ = _ring_physical(n, values, 2)
        order = [v for col in cols for v, _ in (col[1], col[0])]
        assert order == sorted(order, reverse=True)


@pytest.mark.parametrize("n", ORDERS)
def test_ring_table_is_the_papers_index_movement(n: int) -> None:
    """With the norms already in order nothing is exchanged, and the labels meet as tabled."""
    # norms descending by label (= nonincreasing along the ring at a forward sweep)
    _, met = _ring_physical(n, list(range(n, 0, -1)), 4)
    for sweep in range(4):
        t = step_table("ring", n, sweep=sweep)
        tabled = [[frozenset(map(int, p)) for p in step] for step in t.pairs]
        assert tabled == met[sweep]


@pytest.mark.parametrize("n", [4, 8, 10, 30])
def test_ring_layout_after_a_sweep(n: int) -> None:
    """Prop. 1 proof: t_k ends at the bottom and b_k at the top of column n/2 - k + 1."""
    h = n // 2
    top, bottom = st._ring_layout(n, 0)
    _, _, top1, bottom1 = st._ring_sweep(n, top, bottom, backward=False)
    for k in range(h):  # 0-based column k holds t = 2k+1 (top), b = 2k (bottom)
        assert bottom1[h - 1 - k] == 2 * k + 1 and top1[h - 1 - k] == 2 * k
    assert np.array_equal(top1, st._ring_layout(n, 1)[0])
    assert np.array_equal(bottom1, st._ring_layout(n, 1)[1])
    _, _, top2, bottom2 = st._ring_sweep(n, top1, bottom1, backward=True)
    assert np.array_equal(top2, top) and np.array_equal(bottom2, bottom)


@pytest.mark.parametrize("n", ORDERS)
@pytest.mark.parametrize("sweep", [0, 1])
def test_ring_sweep_sorts_random_inputs(n: int, sweep: int) -> None:
    """A sweep sorts any input into descending order of the column index."""
    t = step_table("ring", n, sweep=sweep)
    rng = np.random.default_rng(1000 * n + sweep)
    values = np.argsort(rng.random((200, n)), axis=1)  # random permutations
    ties = rng.integers(0, 3, size=(50, n))  # with many equal values
    for v in (values, ties, rng.standard_normal((50, n))):
        out = apply_compare_exchange(t, v)
        assert np.all(np.diff(out, axis=1) <= 0)
        assert np.array_equal(np.sort(out, axis=1), np.sort(v, axis=1))


@pytest.mark.parametrize("n", [2, 4, 6, 8, 10, 12, 14, 16])
@pytest.mark.parametrize("sweep", [0, 1])
def test_ring_sweep_is_a_sorting_network(n: int, sweep: int) -> None:
    """0-1 principle: sorting all 2^n zero-one inputs proves it sorts every input."""
    t = step_table("ring", n, sweep=sweep)
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    out = apply_compare_exchange(t, bits)
    assert np.all(np.diff(out, axis=1) <= 0)


@pytest.mark.parametrize("n", ORDERS)
def test_ring_sorted_input_is_left_alone(n: int) -> None:
    """Norms in descending index order: no compare-exchange ever swaps (Jacobi pairs kept)."""
    for sweep in (0, 1):
        t = step_table("ring", n, sweep=sweep)
        # larger norm always to the smaller index, i.e. pairs[s, k, 0]
        assert t.larger_first.all()
        v = np.arange(n, 0, -1)[None, :].astype(float)
        assert np.array_equal(apply_compare_exchange(t, v), v)


@pytest.mark.parametrize("n", ORDERS)
def test_ring_backward_is_relabelled_forward(n: int) -> None:
    fwd = step_table("ring", n, sweep=0).pairs
    bwd = step_table("ring", n, sweep=1).pairs
    assert np.array_equal(bwd, (n - 1 - fwd)[:, :, ::-1])
    assert np.array_equal(step_table("ring", n, sweep=2).pairs, fwd)


def test_ring_n8_forward_table() -> None:
    expected = parse(
        "(0,1)(2,3)(4,5)(6,7) | (0,6)(1,3)(2,5)(4,7) | (4,6)(0,3)(1,5)(2,7) |"
        "(2,6)(0,4)(3,5)(1,7) | (1,6)(2,4)(0,5)(3,7) | (3,6)(1,4)(0,2)(5,7) |"
        "(5,6)(3,4)(1,2)(0,7)"
    )
    assert step_table("ring", 8).pairs.tolist() == as_lists(expected)


# ----------------------------------------------------------------------------
# speed
# ----------------------------------------------------------------------------


@pytest.mark.slow
def test_generation_is_fast() -> None:
    st._cached_table.cache_clear()
    st._me_base.cache_clear()
    st._mm_two_quasi_sweeps.cache_clear()
    orders = list(range(2, 257, 2)) + [1000, 2048, 4096]
    start = time.perf_counter()
    for name, n in itertools.product(STRATEGIES, orders):
        step_table(name, n)
        step_table(name, n, sweep=1)
    elapsed = time.perf_counter() - start
    assert elapsed < 30.0, f"{elapsed:.1f} s"
    start = time.perf_counter()
    step_table("me", 2046)  # b = 2046: the largest base below 2048
    assert time.perf_counter() - start < 5.0
