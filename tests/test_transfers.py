"""cljacobi.host.transfers.buffer_holding: the bytes of the array, in its order."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host.transfers import buffer_holding


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
