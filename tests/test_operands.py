"""The device operands between the phases of a solve, against numpy."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from cljacobi.host.operands import ColumnsSpec, column_max, download, gather_factor, upload
from cljacobi.host.programs import build_program, render


def _device_columns(queue, A):
    """A (m x c) as a column-major device buffer with leading dimension ld."""
    m, c = A.shape
    ld = m + 3
    host = np.zeros((c, ld))
    host[:, :m] = A.T
    return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=host), ld


def test_column_max(queue, rng):
    A = rng.standard_normal((37, 11)) * np.logspace(-200, 200, 11)
    buffer, ld = _device_columns(queue, A)
    assert np.array_equal(column_max(queue, buffer, ld, 37, 11), np.abs(A).max(axis=0))
    A[5, 3] = np.nan
    buffer, ld = _device_columns(queue, A)
    assert np.isnan(column_max(queue, buffer, ld, 37, 11)[3])


@pytest.mark.parametrize("multiple", [2, 16])
@pytest.mark.parametrize("accumulate_v", [False, True])
def test_gather_factor(queue, rng, multiple, accumulate_v):
    m, r = 21, 13
    A = rng.standard_normal((m, r))
    buffer, ld = _device_columns(queue, A)
    order = rng.permutation(r).astype(np.int32)
    ops = gather_factor(queue, buffer, ld, m, order, 5, -7,
                        accumulate_v=accumulate_v, column_multiple=multiple)
    assert ops.columns % multiple == 0 and ops.columns >= r and ops.p == 5
    assert ops.rows == m + ops.columns - r
    G, V = download(queue, ops)
    assert np.array_equal(G, np.ldexp(A[:, order], -7))
    if accumulate_v:
        assert np.array_equal(V, np.eye(r))
    # The border: unit columns in new rows.
    host = np.empty((ops.columns, ops.ldg))
    cl.enqueue_copy(queue, host, ops.g)
    border = host[r:, :]
    expected = np.zeros_like(border)
    expected[np.arange(ops.columns - r), m + np.arange(ops.columns - r)] = 1
    assert np.array_equal(border, expected)
    assert np.array_equal(host[:r, m:], np.zeros((r, ops.ldg - m)))


@pytest.mark.parametrize("dtype, split", [(np.float64, False), (np.complex128, False),
                                          (np.complex128, True), (np.float32, False)])
def test_upload_download_roundtrip(queue, rng, dtype, split):
    G = rng.standard_normal((9, 5)).astype(dtype)
    if np.iscomplexobj(G):
        G = G + 1j * rng.standard_normal((9, 5))
    signs = np.array([1, 1, -1, -1, -1], np.int8)
    ops = upload(queue, G, signs, accumulate_v=True, column_multiple=4, dtype=dtype,
                 split=split)
    assert ops.columns == 8 and ops.rows == 12 and ops.p == 2
    assert list(ops.signs()) == [1, 1, -1, -1, -1, 1, 1, 1]
    back, V = download(queue, ops)
    assert np.array_equal(back, G) and np.array_equal(V, np.eye(5))


def test_normalized_columns(queue, rng):
    from cljacobi.host.operands import normalized_columns

    A = rng.standard_normal((23, 9)) * np.logspace(-100, 100, 9)
    ops = upload(queue, A, np.ones(9, np.int8), accumulate_v=False, column_multiple=16,
                 dtype=np.float64)
    order = rng.permutation(9)
    U, finite = normalized_columns(queue, ops, order)
    expected = A[:, order] / np.linalg.norm(A[:, order], axis=0)
    assert U.shape == (23, 9) and finite
    assert np.max(np.abs(U - expected)) <= 4 * np.finfo(float).eps
    # fixed order: repeatable; into a caller's array, which it returns transposed
    out = np.full((9, 23), np.nan)
    again = normalized_columns(queue, ops, order, out=out)
    assert again.finite and again.vectors.base is out and np.array_equal(out.T, U)


def test_normalized_columns_read_soon(queue, rng):
    """The same columns, read through the side queue by the background thread
    into the array a future gives, while the queue goes on: a kernel
    enqueued after them changes G, not the columns they hold."""
    from cljacobi._threads import in_background
    from cljacobi.host.operands import enqueue_normalized_columns, normalized_columns

    A = rng.standard_normal((23, 9)) * np.logspace(-100, 100, 9)
    ops = upload(queue, A, np.ones(9, np.int8), accumulate_v=False, column_multiple=16,
                 dtype=np.float64)
    order = rng.permutation(9)
    expected, finite = normalized_columns(queue, ops, order)
    out = in_background(np.full, (9, 23), np.nan)
    normalized = enqueue_normalized_columns(queue, ops, order)
    cl.enqueue_fill_buffer(queue, ops.g, np.float64(np.nan), 0, ops.g.size)
    soon = normalized.read_soon(queue, out)
    U, soon_finite = soon.result()
    assert soon_finite == finite and U.base is out.result()
    assert np.array_equal(U, expected)
    assert not normalized_columns(queue, ops, order).finite  # G did change after it


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("bad", ["zero column", "inf", "nan"])
def test_normalized_columns_tells_non_finite(queue, rng, dtype, bad):
    """The device's finiteness flag is what the host would find in the result."""
    from cljacobi.host.operands import normalized_columns

    A = rng.standard_normal((17, 6)).astype(dtype)
    if np.iscomplexobj(A):
        A = A + 1j * rng.standard_normal((17, 6))
    column = A[:, 4]
    if bad == "zero column":
        column[:] = 0  # 0 / 0
    elif bad == "inf":
        column[3] = complex(1, np.inf) if np.iscomplexobj(A) else np.inf
    else:
        column[11] = np.nan
    ops = upload(queue, A, np.ones(6, np.int8), accumulate_v=False, column_multiple=4,
                 dtype=dtype)
    for order in (np.arange(6), np.array([0, 1, 2, 3, 5])):
        U, finite = normalized_columns(queue, ops, order)
        assert finite == bool(np.isfinite(U).all()) == (4 not in order)


@pytest.mark.parametrize("split", [False, True])
def test_complex_gather_and_normalize(queue, rng, split):
    from cljacobi.host.operands import normalized_columns

    m, r = 19, 7
    A = rng.standard_normal((m, r)) + 1j * rng.standard_normal((m, r))
    host = np.zeros((r, m + 5), np.complex128)
    host[:, :m] = A.T
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=host)
    maxima = column_max(queue, buffer, m + 5, m, r, np.complex128)
    # hypot of the device: correctly rounded within an ulp or so, like numpy's abs
    np.testing.assert_allclose(maxima, np.abs(A).max(axis=0), rtol=4 * np.finfo(float).eps)
    order = rng.permutation(r).astype(np.int32)
    ops = gather_factor(queue, buffer, m + 5, m, order, 3, 4, accumulate_v=True,
                        column_multiple=4, dtype=np.complex128, split=split)
    assert ops.split == split and ops.dtype == np.complex128
    G, V = download(queue, ops)
    assert np.array_equal(G, np.ldexp(1.0, 4) * A[:, order])
    assert np.array_equal(V, np.eye(r))
    U, finite = normalized_columns(queue, ops, np.arange(r)[::-1])
    expected = G[:, ::-1] / np.linalg.norm(G[:, ::-1], axis=0)
    assert finite and np.max(np.abs(U - expected)) <= 4 * np.finfo(float).eps


@pytest.mark.parametrize("spec", [ColumnsSpec("float64"), ColumnsSpec("complex128", "split"),
                                  ColumnsSpec("complex128", "interleaved", 32)])
def test_columns_template_declares_the_spec_signatures(queue, spec):
    """The column kernels take exactly the arguments the host binds by name."""
    source = render(spec)
    for sig in spec.signatures.values():
        assert f"void {sig.name}({sig.parameters})" in source
    assert f"#define WG {spec.work_group_size}\n" in source
    program = build_program(queue.context, queue.device, spec)
    for sig in spec.signatures.values():
        assert cl.Kernel(program, sig.name).num_args == len(sig.args)


def test_columns_spec_errors():
    with pytest.raises(ValueError, match="float64 and complex128, not float32"):
        ColumnsSpec("float32")
    with pytest.raises(ValueError, match="complex dtypes only"):
        ColumnsSpec("float64", "split")
    with pytest.raises(ValueError, match="power of two"):
        ColumnsSpec("complex128", "split", 48)
