"""Parallel pivot strategies: the step tables that the OpenCL kernels consume.

A *parallel step* of a one-sided Jacobi method on ``r`` columns (``r`` even)
orthogonalises ``r/2`` disjoint column pairs at once, one pair per work-group.
A *strategy* is the sequence of such steps that makes up a sweep.  This module
turns each strategy of docs/design.md, Appendix A, into an integer table
``pairs[s, k] = (i, j)``: work-group (slot) ``k`` processes columns ``i`` and
``j`` in step ``s`` of the sweep.  Everything is 0-based and pure numpy; the
kernels either read the table from device memory or (for MM) reproduce it
with the on-device stepper that :func:`mm_stepper_update` emulates.

Strategies
----------
``"mm"``
    Modified modulus strategy ([NS11]_, Sect. 2, Fig. 1, and Sect. 4,
    Algorithms 4.3 and 4.4; convergence of the modulus strategy in their
    Appendix; the modulus strategy itself is from [LP89]_).
    Quasi-cyclic: ``r`` steps per quasi-sweep, the ``r/2`` pairs
    ``(i, i + r/2)`` are met twice, all others once.  The device stepper
    simply continues, so the second quasi-sweep has the reversed slot
    assignment, and the third equals the first.
``"me"``
    Generalised Mantharam–Eberlein strategy ([ME93]_; generalised to all
    even orders as in [N15]_ and Novaković & Singer, implicit
    Hari–Zimmermann GSVD on GPUs, Sect. 2.2).  Cyclic, ``r - 1`` steps.
    Built from a base table for ``b`` (``b/2`` odd, ``r = b 2^k``) by
    doubling; bases up to :data:`ME_SEARCH_MAX_BASE` come from the search of
    docs/design.md, Appendix A, larger ones from a block-recursive construction on
    the two halves (:func:`_me_base_halves`).
``"round-robin"``
    Round-robin ordering of [BL85]_, with the index movement of docs/design.md,
    Appendix A.  Cyclic, ``r - 1`` steps; the movement returns to its start
    after a sweep, so all sweeps agree.
``"ring"``
    Parallel ring ordering of [ZB97]_, Sect. 4 and Fig. 2: forward
    and backward sweeps alternate (forward on even sweep numbers).  Cyclic,
    ``r - 1`` steps.  :attr:`StepTable.larger_first` gives the
    compare-exchange direction of every pair so that a sweep also *sorts* the
    column norms (see :func:`step_table`).

Orientation and slot order
--------------------------
In every table ``pairs[s, k, 0] < pairs[s, k, 1]`` (as Algorithm 4.5 of the
2011 paper assumes).  The slot order is the strategy's own: for MM it is the
block index ``k`` of Algorithms 4.3/4.4; for ME it is the order in which the
construction emits the pairs; for round-robin slot ``k`` is Brent–Luk's
processor ``k``; for ring slot ``k`` is Zhou–Brent's ring column ``k + 1``.

References
----------
.. [BL85] R. P. Brent, F. T. Luk, The solution of singular-value and
   symmetric eigenvalue problems on multiprocessor arrays, SIAM J. Sci. Stat.
   Comput. 6(1), 69-84 (1985).
.. [LP89] F. T. Luk, H. Park, A proof of convergence for two parallel Jacobi
   SVD algorithms, IEEE Trans. Comput. C-38(6), 806-811 (1989).
.. [ME93] M. Mantharam, P. J. Eberlein, Block recursive algorithm to generate
   Jacobi-sets, Parallel Comput. 19, 481-496 (1993).
.. [ZB97] B. B. Zhou, R. P. Brent, A parallel ring ordering algorithm for
   efficient one-sided Jacobi SVD computations, J. Parallel Distrib. Comput.
   (1997), doi:10.1006/jpdc.1997.1304.
.. [NS11] V. Novaković, S. Singer, A GPU-based hyperbolic SVD algorithm,
   BIT Numer. Math. 51 (2011).
.. [N15] V. Novaković, A hierarchically blocked Jacobi SVD algorithm for
   single and multiple graphics processing units, SIAM J. Sci. Comput.
   37(1), C1-C30 (2015).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

__all__ = [
    "STRATEGIES",
    "MMStepperState",
    "StepTable",
    "mm_closed_form",
    "mm_stepper_init",
    "mm_stepper_update",
    "step_table",
]

STRATEGIES: tuple[str, ...] = ("mm", "me", "ring", "round-robin")
"""Names accepted by :func:`step_table`."""

#: Largest ME base order ``b`` built by the backtracking search of docs/design.md,
#: Appendix A.  The search is instantaneous up to here (b = 22 visits about
#: 5e4 nodes) and explodes right after (b = 26 and 30 exceed 1e7 nodes), so
#: larger bases use the block-recursive construction :func:`_me_base_halves`.
ME_SEARCH_MAX_BASE = 22


class StepTable(NamedTuple):
    """One sweep of a parallel pivot strategy.

    Attributes
    ----------
    name : str
        Strategy name, one of :data:`STRATEGIES`.
    order : int
        The (even) number of columns ``r``.
    pairs : numpy.ndarray
        ``int32`` array of shape ``(steps, r // 2, 2)``;
        ``pairs[s, k] = (i, j)``, ``i < j``, is the column pair that slot
        (work-group) ``k`` processes in step ``s``.  The pairs of one step
        are disjoint.  Read-only (tables are cached).
    larger_first : numpy.ndarray or None
        For ``"ring"``: ``bool`` array of shape ``(steps, r // 2)``, True
        where column ``pairs[s, k, 0]`` must receive the larger of the two
        new norms (the compare-exchange direction of Zhou & Brent 1997,
        Sect. 4), False where ``pairs[s, k, 1]`` must.  None otherwise.
    cyclic : bool
        True if every pair ``{i, j}`` occurs exactly once per sweep
        (False only for the quasi-cyclic ``"mm"``).
    """

    name: str
    order: int
    pairs: np.ndarray
    larger_first: np.ndarray | None
    cyclic: bool

    @property
    def steps(self) -> int:
        """Number of parallel steps in the sweep."""
        return int(self.pairs.shape[0])


# --------------------------------------------------------------------------
# argument checking
# --------------------------------------------------------------------------


def _check_order(order: int) -> int:
    try:
        n = operator.index(order)
    except TypeError:
        raise TypeError(f"order must be an integer, got {type(order).__name__}") from None
    if n < 2 or n % 2:
        raise ValueError(f"order must be even and >= 2 (pad odd orders by bordering), got {n}")
    return n


def _check_name(name: str) -> str:
    if name not in STRATEGIES:
        allowed = ", ".join(repr(s) for s in STRATEGIES)
        raise ValueError(f"unknown strategy {name!r}; allowed: {allowed}")
    return name


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _oriented(pairs: np.ndarray) -> np.ndarray:
    """Return ``pairs`` (..., 2) with each pair as ``(min, max)``, ``int32``."""
    out = np.empty(pairs.shape, dtype=np.int32)
    np.minimum(pairs[..., 0], pairs[..., 1], out=out[..., 0])
    np.maximum(pairs[..., 0], pairs[..., 1], out=out[..., 1])
    return out


# --------------------------------------------------------------------------
# modified modulus (MM)
# --------------------------------------------------------------------------


class MMStepperState(NamedTuple):
    """State vector ``S_D = (ip, jp, i_blk, j_blk)`` of Novaković & Singer 2011.

    Each field is an ``int64`` array of length ``r / 2``, indexed by the block
    (slot) ``k``; ``(i_blk[k], j_blk[k])`` is the pivot pair of block ``k``,
    ``ip`` and ``jp`` are auxiliary.
    """

    ip: np.ndarray
    jp: np.ndarray
    i_blk: np.ndarray
    j_blk: np.ndarray


def mm_stepper_init(order: int) -> MMStepperState:
    """Initialize the modified modulus stepper (Algorithm 4.3 of [NS11]_).

    Block ``k`` starts on the antidiagonal, ``k <-> (k, r - k - 1)``.

    Parameters
    ----------
    order : int
        Even number of columns ``r >= 2``.

    Returns
    -------
    MMStepperState
        ``(ip, jp, i_blk, j_blk)`` with ``ip = i_blk = k`` and
        ``jp = j_blk = r - k - 1`` for ``k = 0, ..., r/2 - 1``.
    """
    r = _check_order(order)
    k = np.arange(r // 2, dtype=np.int64)
    return MMStepperState(k.copy(), r - 1 - k, k.copy(), r - 1 - k)


def mm_stepper_update(state: MMStepperState, order: int) -> MMStepperState:
    """Advance the modified modulus stepper by one step (Algorithm 4.4 of [NS11]_).

    An exact, vectorised emulation of ``Update_Stepper`` in 0-based indexing
    (every block ``k`` independently)::

        if ip + jp >= r - 1:            # the paper's "> r - 1" is 1-based
            ip += 1
            if ip == jp:
                ip -= r / 2; jp = ip    # j_blk keeps its old value
            i_blk = ip
        else:
            jp += 1; j_blk = jp

    Parameters
    ----------
    state : MMStepperState
        Current ``(ip, jp, i_blk, j_blk)``; not modified.
    order : int
        Even number of columns ``r``.

    Returns
    -------
    MMStepperState
        The state for the next step (new arrays).
    """
    r = _check_order(order)
    ip, jp, i_blk, j_blk = (np.asarray(a, dtype=np.int64) for a in state)
    return MMStepperState(*_mm_update(ip, jp, i_blk, j_blk, r))


def _mm_update(
    ip: np.ndarray, jp: np.ndarray, i_blk: np.ndarray, j_blk: np.ndarray, r: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Branch-free form of Algorithm 4.4 on all blocks at once (new arrays)."""
    move_i = ip + jp >= r - 1
    ip_next = ip + move_i
    wrap = move_i & (ip_next == jp)
    ip_next = np.where(wrap, ip_next - r // 2, ip_next)
    jp_next = np.where(wrap, ip_next, jp + ~move_i)
    return (
        ip_next,
        jp_next,
        np.where(move_i, ip_next, i_blk),
        np.where(move_i, j_blk, jp_next),
    )


def mm_closed_form(order: int, step: int) -> set[tuple[int, int]]:
    """Pairs of step ``step`` of the modified modulus strategy, closed form.

    docs/design.md, Appendix A: with ``s = (step - 1) mod r`` the step holds every
    pair ``{i, j}``, ``i != j``, with ``i + j = s (mod r)``, plus
    ``{s/2, s/2 + r/2}`` when ``s`` is even ([NS11]_, Fig. 1; step 0 is the
    antidiagonal).  The slot assignment is not part of the closed form.

    Parameters
    ----------
    order : int
        Even number of columns ``r``.
    step : int
        Step number; taken modulo ``r`` (every quasi-sweep has the same sets).

    Returns
    -------
    set of tuple of int
        The ``r/2`` pairs ``(i, j)``, ``i < j``.
    """
    r = _check_order(order)
    s = (operator.index(step) - 1) % r
    pairs = {(i, (s - i) % r) for i in range(r) if i < (s - i) % r}
    if s % 2 == 0:
        pairs.add((s // 2, s // 2 + r // 2))
    return pairs


@functools.lru_cache(maxsize=4)
def _mm_two_quasi_sweeps(r: int) -> np.ndarray:
    """Pairs ``(i_blk, j_blk)`` of the device stepper for steps ``0, ..., 2r - 1``.

    The stepper has period ``2r`` (tested), so these two quasi-sweeps are all
    there is: quasi-sweep ``q`` is ``[(q % 2) * r : (q % 2 + 1) * r]``.
    """
    state = tuple(mm_stepper_init(r))
    pairs = np.empty((2 * r, r // 2, 2), dtype=np.int32)
    for s in range(2 * r):
        pairs[s, :, 0] = state[2]
        pairs[s, :, 1] = state[3]
        state = _mm_update(*state, r)
    return _readonly(pairs)


# --------------------------------------------------------------------------
# Mantharam-Eberlein (ME)
# --------------------------------------------------------------------------


def _me_base_search(b: int) -> np.ndarray:
    """ME base table by the backtracking search of docs/design.md, Appendix A.

    Steps are built one after another: a step starts with the first unused
    pair in row-cyclic order and is completed greedily (smallest free index
    with its smallest free, unused partner), backtracking within the step and,
    if no step can be completed, into the previous steps.  This finds the
    lexicographically first 1-factorisation of ``K_b``; its steps are then
    taken in reverse order, so the table ends with ``(0,1)(2,3)...``.
    Exponential in the worst case: use for ``b <= ME_SEARCH_MAX_BASE``.
    """
    full = (1 << b) - 1
    unused = [full & ~(1 << v) for v in range(b)]  # bitmask of unused partners of v
    steps: list[list[tuple[int, int]]] = []

    def matchings(free: int) -> Iterator[list[tuple[int, int]]]:
        # perfect matchings of the vertex set `free` by unused pairs, in lexicographic order
        if not free:
            yield []
            return
        v = (free & -free).bit_length() - 1
        cand = unused[v] & free
        while cand:
            u = (cand & -cand).bit_length() - 1
            cand &= cand - 1
            for rest in matchings(free & ~((1 << v) | (1 << u))):
                yield [(v, u), *rest]

    def extend() -> bool:
        if len(steps) == b - 1:
            return True
        for step in matchings(full):
            for v, u in step:
                unused[v] &= ~(1 << u)
                unused[u] &= ~(1 << v)
            steps.append(step)
            if extend():
                return True
            steps.pop()
            for v, u in step:
                unused[v] |= 1 << u
                unused[u] |= 1 << v
        return False

    if not extend():  # pragma: no cover - K_b always has a 1-factorisation
        raise RuntimeError(f"no 1-factorisation found for b = {b}")
    return np.array(steps[::-1], dtype=np.int32).reshape(b - 1, b // 2, 2)


def _me_base_halves(b: int) -> np.ndarray:
    """ME base table for large ``b`` (``b/2`` odd), block-recursive on the halves.

    Used for ``b > ME_SEARCH_MAX_BASE``, where the search explodes.  With
    ``q = b/2`` (odd), ``A = 0..q-1`` and ``B = q..b-1``: the first ``q - 1``
    steps pair every index of A with one of B (the "far" pairs, a cyclic Latin
    square), the last ``q`` steps pair the indices within each half (the
    "near" ones) plus one pair across, from the ME table of ``K_{q+1}`` (built
    the same way, recursively): on A with vertex ``q`` as the absent partner,
    on B shifted by ``q - 1`` with vertex 0 absent, the two absent partners of
    a step paired with each other.  So neighbouring indices -- columns with
    close eigenvalue estimates, once the packed diagonal is sorted -- meet in
    consecutive steps at the end of a sweep, as in the doubled and the
    searched tables (their last steps pair ``2k, 2k+1``, then indices 2 apart,
    ...).  The relabelled circle factorisation used before spread the pairs
    of every distance over all steps and, like round-robin, converged only
    linearly on clusters of equal eigenvalues: n = 300 with eigenvalues
    +-1 (150 each) took 35 sweeps with ME, 19 once the orthogonality threshold
    no longer rotated rounding noise, against 10 with the ring ordering
    (bench/results/strategies-clusters-*.md).

    Every pair once, the pairs of a step sorted by their first index, and the
    last step ``(0,1)(2,3)...`` as in the searched tables; unlike them, step
    ``s`` does not start with ``(0, b - 1 - s)``.
    """
    q = b // 2
    inner = _me_pairs(q + 1).astype(np.int64)  # q steps of (q + 1) / 2 pairs
    first, second = inner[:, :, 0], inner[:, :, 1]
    half = (q - 1) // 2
    # A: the pairs without vertex q; its partner is the index of A left out.
    on_a = inner[second != q].reshape(q, half, 2)
    a_out = np.where(second == q, first, -1).max(axis=1)
    # B: the pairs without vertex 0, shifted to q - 1 + v; 0's partner is left out.
    on_b = inner[first != 0].reshape(q, half, 2) + (q - 1)
    b_out = np.where(first == 0, second, -1).max(axis=1) + (q - 1)
    across = np.stack([a_out, b_out], axis=-1)[:, None, :]
    within = np.concatenate([on_a, on_b, across], axis=1)
    # The other q - 1 perfect matchings between A and B: a -> partner[(a + k) mod q].
    partner = np.empty(q, dtype=np.int64)
    partner[a_out] = b_out
    shifts = np.arange(1, q)
    shifts = shifts[np.argsort(-partner[shifts], kind="stable")]  # index 0 meets far B first
    a = np.arange(q)
    far = np.stack([np.broadcast_to(a, (q - 1, q)), partner[(a[None, :] + shifts[:, None]) % q]],
                   axis=-1)
    table = np.concatenate([far, within])
    order = np.argsort(table[:, :, 0], axis=1, kind="stable")
    return np.take_along_axis(table, order[:, :, None], axis=1).astype(np.int32)


@functools.lru_cache(maxsize=32)
def _me_base(b: int) -> np.ndarray:
    """Cached ME base table for ``b`` with ``b/2`` odd (search or construction)."""
    if b % 4 != 2:
        raise ValueError(f"ME base order must be 2 mod 4, got {b}")
    table = _me_base_search(b) if b <= ME_SEARCH_MAX_BASE else _me_base_halves(b)
    return _readonly(table)


def _me_double(table: np.ndarray) -> np.ndarray:
    """One ME doubling step ``m -> 2m`` (docs/design.md, Appendix A; [ME93]_).

    Each old step with pairs ``(i, j)`` gives the "cross" step
    ``(2i, 2j+1)(2i+1, 2j)...`` and then the "straight" step
    ``(2i, 2j)(2i+1, 2j+1)...``; the final step is ``(0,1)(2,3)...``.
    """
    steps, half, _ = table.shape
    m = 2 * half
    i = 2 * table[:, :, 0].astype(np.int32)
    j = 2 * table[:, :, 1].astype(np.int32)
    cross = np.stack([np.stack([i, j + 1], -1), np.stack([i + 1, j], -1)], axis=2)
    straight = np.stack([np.stack([i, j], -1), np.stack([i + 1, j + 1], -1)], axis=2)
    both = np.stack([cross.reshape(steps, m, 2), straight.reshape(steps, m, 2)], axis=1)
    last = np.arange(2 * m).reshape(1, m, 2)
    return np.concatenate([both.reshape(2 * steps, m, 2), last]).astype(np.int32)


def _me_pairs(n: int) -> np.ndarray:
    b = n
    while b % 4 == 0:
        b //= 2
    table = _me_base(b)
    while table.shape[1] * 2 < n:
        table = _me_double(table)
    return _readonly(np.array(table, dtype=np.int32))


# --------------------------------------------------------------------------
# round-robin (Brent-Luk)
# --------------------------------------------------------------------------


def _round_robin_pairs(n: int) -> np.ndarray:
    """Brent-Luk round-robin table, slot ``k`` holding ``(L_k, R_k)``.

    The movement of docs/design.md, Appendix A, keeps ``L_0`` fixed and carries
    every other index one place along the cycle of positions
    ``R_0 -> L_1 -> L_2 -> ... -> L_{h-1} -> R_{h-1} -> R_{h-2} -> ... -> R_1
    -> R_0`` (``h = n/2``) of length ``n - 1``; so after ``s`` steps the
    position ``q`` on the cycle holds the index that started at ``q - s``, and
    a sweep returns to the start.
    """
    h = n // 2
    k = np.arange(1, h)
    start = np.empty(n - 1, dtype=np.int32)  # index initially at each cycle position
    start[0] = 1  # R_0
    start[k] = 2 * k  # L_k
    start[n - 1 - k] = 2 * k + 1  # R_k
    left_pos = np.concatenate([[0], k])  # cycle positions of L_1.., (L_0 handled apart)
    right_pos = np.concatenate([[0], n - 1 - k])  # cycle positions of R_0, R_1, ...
    s = np.arange(n - 1)[:, None]
    left = start[(left_pos - s) % (n - 1)]
    left[:, 0] = 0  # L_0 never moves
    right = start[(right_pos - s) % (n - 1)]
    return _oriented(np.stack([left, right], axis=-1))


# --------------------------------------------------------------------------
# ring (Zhou-Brent)
# --------------------------------------------------------------------------


def _ring_layout(n: int, sweep: int) -> tuple[np.ndarray, np.ndarray]:
    """Ring layout ``(top, bottom)`` (labels per ring column) at the start of a sweep.

    A forward sweep starts with ring column ``c`` holding ``(2c+1, 2c)``: the
    labels ``0, ..., n-1`` counted left to right between columns and bottom
    up within a column (Zhou & Brent's convention).  By the proof of their
    Proposition 1 a sweep exchanges the rows and reverses the column order
    (``t_k`` ends at the bottom and ``b_k`` at the top of column
    ``n/2 - k + 1``), so a backward sweep starts with column ``c`` holding
    ``(n-2-2c, n-1-2c)``, and the next forward sweep with the initial layout
    again (both checked by simulation in the tests).
    """
    c = np.arange(n // 2, dtype=np.int32)
    if sweep % 2:
        return n - 2 - 2 * c, n - 1 - 2 * c
    return 2 * c + 1, 2 * c


def _ring_sweep(
    n: int, top: np.ndarray, bottom: np.ndarray, backward: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Simulate one ring sweep of Zhou & Brent (1997), Sect. 4, Fig. 2.

    ``top[c]``/``bottom[c]`` are the labels at ring column ``c``.  In
    Zhou-Brent's step ``s = 1, ..., n-1`` the pairs are the ring columns;
    then the up-and-down arrow, in column ``ceil(s/2)`` (it moves one column
    every two steps), exchanges top and bottom of its column, and all bottom
    entries shift one column to the right, the rightmost one to the left end.

    Compare-exchange of a forward sweep (sorts nondecreasing along the ring,
    bottom up and left to right): the larger element goes to the bottom,
    except in the arrow's column at an even step, where it goes to the top.
    A backward sweep has the same data flow and the opposite direction
    (sorts nonincreasing).

    Returns
    -------
    pairs : ndarray
        ``int32`` ``(n - 1, n/2, 2)``, ``pairs[s, c] = (top, bottom)``.
    larger_top : ndarray
        ``bool`` ``(n - 1, n/2)``, True if the top label takes the larger norm.
    top, bottom : ndarray
        The layout after the sweep.
    """
    h = n // 2
    top = np.array(top, dtype=np.int32)
    bottom = np.array(bottom, dtype=np.int32)
    pairs = np.empty((n - 1, h, 2), dtype=np.int32)
    larger_top = np.full((n - 1, h), backward, dtype=bool)
    for s in range(1, n):
        arrow = (s + 1) // 2 - 1
        pairs[s - 1, :, 0] = top
        pairs[s - 1, :, 1] = bottom
        if s % 2 == 0:
            larger_top[s - 1, arrow] = not backward
        top[arrow], bottom[arrow] = bottom[arrow], top[arrow]
        bottom = np.concatenate((bottom[-1:], bottom[:-1]))
    return pairs, larger_top, top, bottom


def _ring_table(n: int, sweep: int) -> tuple[np.ndarray, np.ndarray]:
    """Ring table oriented ``i < j`` and its ``larger_first`` (sweep parity only)."""
    top, bottom = _ring_layout(n, sweep)
    raw, larger_top, _, _ = _ring_sweep(n, top, bottom, backward=bool(sweep % 2))
    top_is_first = raw[:, :, 0] < raw[:, :, 1]
    larger_first = larger_top == top_is_first
    return _oriented(raw), larger_first


@functools.lru_cache(maxsize=16)
def _cached_table(name: str, n: int, parity: int) -> StepTable:
    if name == "mm":
        pairs = _mm_two_quasi_sweeps(n)[parity * n : (parity + 1) * n]
        return StepTable(name, n, pairs, None, cyclic=False)
    if name == "me":
        return StepTable(name, n, _me_pairs(n), None, cyclic=True)
    if name == "round-robin":
        return StepTable(name, n, _readonly(_round_robin_pairs(n)), None, cyclic=True)
    pairs, larger_first = _ring_table(n, parity)
    return StepTable(name, n, _readonly(pairs), _readonly(larger_first), cyclic=True)


# --------------------------------------------------------------------------
# public entry point
# --------------------------------------------------------------------------


def step_table(name: str, order: int, *, sweep: int = 0) -> StepTable:
    """Step table of one sweep of a parallel pivot strategy.

    Parameters
    ----------
    name : {"mm", "me", "ring", "round-robin"}
        The strategy (see the module docstring and docs/design.md, Appendix A).
    order : int
        Even number of columns ``r >= 2`` (pad odd orders by bordering).
    sweep : int, optional
        0-based sweep number.  It matters for

        * ``"mm"`` ([NS11]_, Sect. 2, Fig. 1): the device stepper
          (Algorithms 4.3/4.4) continues across quasi-sweeps, so odd
          quasi-sweeps have the reversed slot assignment,
          ``pairs[:, ::-1]`` of the even ones;
        * ``"ring"`` ([ZB97]_, Sect. 4): forward sweep on even, backward
          sweep on odd sweep numbers.

        ``"me"`` and ``"round-robin"`` are the same every sweep.

    Returns
    -------
    StepTable
        ``pairs`` has ``r`` steps for ``"mm"`` and ``r - 1`` for the others.

    Raises
    ------
    ValueError
        For an unknown ``name`` (the message lists :data:`STRATEGIES`), an
        odd order or one below 2, or a negative ``sweep``.

    Notes
    -----
    *Ring ordering and sorting.*  Zhou & Brent move the indices physically
    around a ring of processors; here the labels are the fixed storage
    indices (columns addressed through ``rho``, nothing is swapped), and the
    table lists which labels meet.  At the start of a forward sweep ring
    column ``c`` holds labels ``(2c+1, 2c)`` (top, bottom), i.e. ``0, ...,
    n-1`` left to right and bottom up.  The compare-exchange rule of their
    Sect. 4 (larger to the bottom, except in the arrow's column at even steps;
    reversed in a backward sweep) expressed on labels puts, for both sweep
    directions, the larger norm on the *smaller* index: ``larger_first`` is
    all True.  So a sweep is a sorting network: for any input, applying
    "larger norm to ``pairs[s, k, 0]``" to every pair, step by step, leaves
    the norms in *descending order of the index* (physically: nondecreasing
    along the ring after a forward sweep, nonincreasing after a backward one,
    as in the paper); and if the norms are already sorted so, no
    compare-exchange moves anything and the Jacobi pairs are exactly the
    table's.  The backward sweep follows the reading that it has the forward
    sweep's data flow with the opposite compare direction ("essentially the
    same ... one sorts into nondecreasing and the other into nonincreasing
    order"); its label pairs are those of the forward sweep relabelled by
    ``i -> n - 1 - i``, slot by slot.
    """
    _check_name(name)
    n = _check_order(order)
    sweep = operator.index(sweep)
    if sweep < 0:
        raise ValueError(f"sweep must be >= 0, got {sweep}")
    parity = sweep % 2 if name in ("mm", "ring") else 0
    return _cached_table(name, n, parity)
