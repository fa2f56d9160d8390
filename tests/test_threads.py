"""Elementwise host work in blocks of rows (cljacobi._threads): the same
elements as one call on the whole array, whatever the threads."""

from __future__ import annotations

import numpy as np
import pytest

from cljacobi import _threads
from cljacobi._solve import ldexp
from cljacobi._threads import (
    all_finite,
    any_nonzero,
    in_row_blocks,
    peaks,
    touched_empty,
    touched_empty_soon,
    worker_pool,
    worker_threads,
)


@pytest.fixture(params=[1, 2, 5], ids=lambda t: f"{t}cpus")
def threads(request, monkeypatch):
    """Small arrays go by blocks too, over 1, 2 or 5 threads."""
    monkeypatch.setattr(_threads, "THREADED_MIN_ELEMENTS", 1)
    monkeypatch.setattr(_threads, "usable_cpus", lambda: request.param)
    return request.param


@pytest.mark.parametrize("shape", [(7, 5), (3, 4, 2), (1, 9), (4,), (0, 3)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_in_row_blocks_covers_the_rows_in_order(threads, shape, order):
    array = np.arange(np.prod(shape), dtype=float).reshape(shape, order=order)
    blocks = in_row_blocks(lambda block: block.copy(), array)
    assert len(blocks) == (1 if threads < 2 or array.size == 0 else min(threads, shape[0]))
    assert np.array_equal(np.concatenate(blocks), array)


def test_in_row_blocks_in_the_kept_pool(threads):
    """The blocks run in the threads of one pool, kept from call to call
    (np.copyto, as the staged transfers call it)."""
    import threading

    source = np.arange(60.0).reshape(12, 5)
    target = np.zeros_like(source)
    names = []

    def copy(dst, src):
        names.append(threading.current_thread().name)
        np.copyto(dst, src)

    results = in_row_blocks(copy, target, source)
    assert np.array_equal(target, source)
    assert len(results) == (1 if threads < 2 else threads)
    assert all(name.startswith("cljacobi-worker") for name in names) == (threads >= 2)
    assert worker_pool() is worker_pool()


def test_in_row_blocks_inside_the_pool_runs_there(threads):
    """Called from one of the pool's threads, the blocks run in that thread:
    work of the pool never waits for the pool (no deadlock however many
    threads are busy)."""
    import threading

    array = np.arange(40.0).reshape(8, 5)

    def nested(_):
        here = threading.current_thread().name
        names = in_row_blocks(lambda block: threading.current_thread().name, array)
        return here, names

    for here, names in worker_pool().map(nested, range(2 * worker_threads())):
        assert set(names) == {here}


def test_a_forked_child_makes_its_own_pool(threads):
    """The parent's pool has no threads in a child made by fork: the child's
    blocks still run (in a pool of its own), and do not hang."""
    import multiprocessing

    worker_pool()  # the parent's, with its threads started
    in_row_blocks(np.copyto, np.zeros((6, 2)), np.ones((6, 2)))
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as child:
        total = child.apply_async(_sum_by_blocks, (np.arange(24.0).reshape(6, 4),)).get(60)
    assert total == np.arange(24.0).sum()


def _sum_by_blocks(array):
    _threads.THREADED_MIN_ELEMENTS = 1
    return float(sum(block.sum() for block in in_row_blocks(lambda b: b.copy(), array)))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_ldexp_by_blocks_is_exact(threads, rng, dtype):
    A = rng.standard_normal((37, 11)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * rng.standard_normal((37, 11))
    A[0, 0] = 2.0 ** -1070  # subnormal: exact only by ldexp, not by a product
    for exponent in (-40, 0, 3, 60):
        expected = np.ldexp(A.real, exponent) + (
            1j * np.ldexp(A.imag, exponent) if np.iscomplexobj(A) else 0)
        assert np.array_equal(ldexp(A, exponent), expected)
    B = A.copy()
    assert ldexp(B, -5, out=B) is B
    assert np.array_equal(B, ldexp(A, -5))
    F = np.asfortranarray(A)
    assert np.array_equal(ldexp(F, 9), ldexp(A, 9))


@pytest.mark.filterwarnings("error")
def test_all_finite(threads):
    A = np.ones((13, 6))
    assert all_finite(A)
    for value in (np.inf, -np.inf, np.nan):
        for index in ((0, 0), (12, 5), (6, 2)):
            B = A.copy()
            B[index] = value
            assert not all_finite(B)
    assert all_finite(np.empty((0, 4)))
    assert not all_finite(np.array(np.nan))
    # finite entries whose sum overflows; an inf and a -inf whose sum is nan;
    # complex entries with one non-finite part
    big = np.full((13, 6), np.finfo(np.float64).max)
    assert all_finite(big) and all_finite(np.full((13, 6), 3e38, dtype=np.float32))
    pair = A.copy()
    pair[0, 0], pair[5, 1] = np.inf, -np.inf
    assert not all_finite(pair)
    for part in (1, 1j):
        C = A.astype(np.complex128)
        C[4, 3] += part * np.inf
        assert not all_finite(C)
    # Fortran-ordered arrays and stacks (checked through their transpose),
    # strided views, integers
    for array in (np.asfortranarray(B), np.asfortranarray(np.stack([A, B, A])),
                  np.stack([A, B])[:, ::2, 1:], np.stack([B, A])[:, ::-1].T):
        assert all_finite(array) == bool(np.isfinite(array).all())
        assert all_finite(np.zeros_like(array))
    assert all_finite(np.arange(60).reshape(6, 10)) and all_finite(np.ones((3, 4), dtype=bool))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(13, 6), (1, 7), (9, 1)])
def test_peaks(threads, rng, dtype, shape):
    """Row and column maxima of |A| by blocks: numpy's, for A and its adjoint view."""
    A = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        A = A + 1j * rng.standard_normal(shape)
    A[0, -1] = 2.0 ** -1070
    for matrix in (A, A.conj().T):
        rows, columns = peaks(matrix)
        assert np.array_equal(rows, np.abs(matrix).max(axis=1))
        assert np.array_equal(columns, np.abs(matrix).max(axis=0))


def test_any_nonzero(threads):
    A = np.zeros((11, 4))
    assert not any_nonzero(A)
    for index in ((0, 0), (10, 3), (5, 1)):
        B = A.copy()
        B[index] = -1e-300
        assert any_nonzero(B) and any_nonzero(B.T)
    assert not any_nonzero(np.empty((0, 3)))
    stack = np.zeros((3, 4, 5))
    assert not any_nonzero(stack)
    for index in ((0, 0, 0), (2, 3, 4)):
        nonzero = stack.copy()
        nonzero[index] = 1
        assert any_nonzero(nonzero)
    assert any_nonzero(np.array(2.0)) and not any_nonzero(np.array(0.0))


@pytest.mark.parametrize("shape", [(9, 1000), (3, 7, 600), (5000,), (0, 4), (1,)])
def test_touched_empty(threads, shape):
    """The pages mapped, the shape, dtype and C order numpy's; the copy of a
    device fills it as it would np.empty."""
    for array in (touched_empty(shape, np.complex128),
                  touched_empty_soon(shape, np.complex128).result()):
        assert array.shape == shape and array.dtype == np.complex128 and array.flags.c_contiguous
        array[...] = 1 + 2j
        assert np.all(array == 1 + 2j)


def test_in_background_runs_in_order():
    """One background thread, first in first out: work may wait for the
    work submitted before it (a download for the array whose pages are
    being touched)."""
    import threading

    first = _threads.in_background(lambda: threading.current_thread().name)
    second = _threads.in_background(lambda: first.result() + " then again")
    assert second.result(timeout=60) == first.result() + " then again"
    assert first.result().startswith("cljacobi-background")
