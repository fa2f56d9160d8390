"""cljacobi.host.transfers: the bytes of the array, in its order, on the
driver's path and through the pinned chunks (forced here with small chunks,
so that a copy spans several of them and both staging buffers)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi import _threads
from cljacobi.host import transfers
from cljacobi.host.transfers import buffer_holding, read_buffer, write_buffer


@pytest.mark.parametrize("order", ["C", "F", "strided"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int32])
def test_buffer_holds_the_array(order, dtype, queue, rng):
    A = (rng.standard_normal((7, 5)) * 100).astype(dtype)
    if np.iscomplexobj(A):
        A = A + 1j * rng.standard_normal((7, 5))
    source = {"C": np.ascontiguousarray(A), "F": np.asfortranarray(A), "strided": A[:, ::2]}[order]
    before = source.copy()
    buffer = buffer_holding(queue, source, cl.mem_flags.READ_ONLY)
    assert buffer.size == source.nbytes
    back = np.empty(source.size, source.dtype)
    cl.enqueue_copy(queue, back, buffer)
    in_memory = "F" if order == "F" else "C"
    np.testing.assert_array_equal(back, source.ravel(order=in_memory))
    np.testing.assert_array_equal(source, before)


def test_empty_array_gets_one_element(queue):
    buffer = buffer_holding(queue, np.zeros((0, 3)))
    assert buffer.size == 8


# chunks that do not divide the copies: a partial last chunk, both slots reused
CHUNK = 4096 + 24


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_write_and_read_back(staged, order, dtype, queue, rng):
    A = rng.standard_normal((301, 17)).astype(dtype)
    if np.iscomplexobj(A):
        A = A + 1j * rng.standard_normal((301, 17))
    source = np.asarray(A, order=order)
    before = source.copy()
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, source.nbytes + 64)
    write_buffer(queue, buffer, source, staged=staged, chunk_bytes=CHUNK)
    in_memory = source.ravel(order="K")
    back = read_buffer(queue, buffer, in_memory.shape, dtype, staged=staged, chunk_bytes=CHUNK)
    assert back.flags.c_contiguous
    np.testing.assert_array_equal(back, in_memory)
    # from a byte offset, as a 2-D array
    tail = read_buffer(queue, buffer, (10, 17), dtype, src_offset=5 * 17 * source.itemsize,
                       staged=staged, chunk_bytes=256)
    np.testing.assert_array_equal(tail, in_memory[5 * 17:15 * 17].reshape(10, 17))
    np.testing.assert_array_equal(source, before)
    # into the caller's array, which it returns
    out = np.full(in_memory.shape, np.nan, dtype=dtype)
    assert read_buffer(queue, buffer, out.shape, dtype, out=out, staged=staged,
                       chunk_bytes=CHUNK) is out
    np.testing.assert_array_equal(out, in_memory)


@pytest.mark.parametrize("out", [np.empty((4, 5)), np.empty((5, 4), np.float32),
                                 np.empty((5, 4), order="F"), np.empty((5, 8))[:, ::2]])
def test_read_buffer_checks_its_out(out, queue):
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 20)
    with pytest.raises(ValueError, match=r"writeable C-contiguous float64 array of shape \(5, 4\)"):
        read_buffer(queue, buffer, (5, 4), np.float64, out=out)


@pytest.mark.parametrize("staged", [False, True])
def test_pitched_write_keeps_the_gaps(staged, queue, rng):
    rows, columns, ld = 257, 30, 33
    source = rng.standard_normal((rows, columns))
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * ld * rows)
    cl.enqueue_copy(queue, buffer, np.full(ld * rows, -7.0))
    write_buffer(queue, buffer, source, pitch=8 * ld, staged=staged, chunk_bytes=CHUNK)
    back = read_buffer(queue, buffer, (rows, ld), np.float64)
    np.testing.assert_array_equal(back[:, :columns], source)
    assert (back[:, columns:] == -7.0).all()


def test_pitched_write_checks_its_rows(queue):
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 64)
    with pytest.raises(ValueError, match="rows fit the pitch"):
        write_buffer(queue, buffer, np.zeros((4, 8)), pitch=32)
    with pytest.raises(ValueError, match="C-contiguous 2-D"):
        write_buffer(queue, buffer, np.zeros((4, 4), order="F"), pitch=64)
    with pytest.raises(ValueError, match="C-contiguous 2-D"):
        write_buffer(queue, buffer, np.zeros(8), pitch=64)
    with pytest.raises(ValueError, match="C- or Fortran-contiguous"):
        write_buffer(queue, buffer, np.zeros((4, 8))[:, ::2])


def test_rows_longer_than_a_chunk_go_to_the_driver(queue, rng):
    source = rng.standard_normal((3, 1000))
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * 1024 * 3)
    write_buffer(queue, buffer, source, pitch=8 * 1024, staged=True, chunk_bytes=CHUNK)
    np.testing.assert_array_equal(read_buffer(queue, buffer, (3, 1024), np.float64)[:, :1000],
                                  source)


def test_staging_is_chosen_by_device_and_size(queue):
    """A CPU device shares the host's memory: no staging there, whatever the
    size; small copies never stage."""
    unified = queue.device.host_unified_memory
    assert transfers.stages_copies(queue.device) == (not unified)
    large = transfers._staging(queue, transfers.STAGED_MIN_BYTES, None, None)
    if large is not None:
        large.lock.release()
    assert (large is None) == unified
    assert transfers._staging(queue, transfers.STAGED_MIN_BYTES - 1, None, None) is None
    staging = transfers._staging(queue, 1, True, CHUNK)
    try:
        assert staging is not None and staging.chunk_bytes == CHUNK
        # busy in one thread: the next caller takes the driver's path
        assert transfers._staging(queue, 1, True, CHUNK) is None
    finally:
        staging.lock.release()


def test_solvers_through_the_pinned_chunks(queue, rng, monkeypatch):
    """Every copy of eig_indefinite and svd staged, in chunks that do not
    divide them (what a discrete GPU does with large ones): the same bits as
    the driver's copies."""
    import cljacobi
    from cljacobi.matrices import with_spectrum

    M = with_spectrum(np.linspace(-1, 1, 96) * 2.0 ** np.arange(96) / 2**90, rng=rng)
    A = rng.standard_normal((120, 96)) + 1j * rng.standard_normal((120, 96))
    options = {"variant": "offdiag", "block_width": 8, "queue": queue}

    def solve():
        w, U = cljacobi.eig_indefinite(M, **options)
        X, s, Yh = cljacobi.svd(A, **options)
        return w, U, X, s, Yh

    direct = solve()
    calls = []
    monkeypatch.setattr(transfers, "stages_copies", lambda device: True)
    monkeypatch.setattr(_threads, "THREADED_MIN_ELEMENTS", 1)  # chunks copied by blocks
    monkeypatch.setattr(transfers, "STAGED_MIN_BYTES", 1)
    monkeypatch.setattr(transfers, "STAGING_CHUNK_BYTES", CHUNK)
    monkeypatch.setattr(transfers, "_staging", _counting(transfers._staging, calls))
    staged = solve()
    assert sum(staging is not None for staging in calls) >= 4  # up and down, both solvers
    for a, b in zip(direct, staged, strict=True):
        assert np.array_equal(a, b)


def _counting(function, calls):
    def counted(*args, **kwargs):
        result = function(*args, **kwargs)
        calls.append(result)
        return result
    return counted


def test_side_queue(queue, rng):
    """One second queue per queue's context and device, kept; a copy through
    it sees what the first queue wrote once that has finished."""
    side = transfers.side_queue(queue)
    assert side is transfers.side_queue(queue) and side.int_ptr != queue.int_ptr
    assert side.context == queue.context and side.device == queue.device
    assert not side.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    A = rng.standard_normal((40, 3))
    buffer = buffer_holding(queue, A)
    queue.finish()
    assert np.array_equal(read_buffer(side, buffer, A.shape, A.dtype), A)
