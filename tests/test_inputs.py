"""Input validation of every public function, in scipy's order (options, then
the arrays), dtype promotion, layouts, stacks and pyopencl arrays."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi import eig as eig_module
from cljacobi.matrices import with_spectrum
from cljacobi.validation import HERMITIAN_RTOL


def _symmetric(n, rng, p=None):
    p = n // 2 if p is None else p
    lam = np.concatenate([rng.uniform(0.5, 4.0, p), -rng.uniform(0.5, 4.0, n - p)])
    return with_spectrum(lam, rng=rng)


def _signature(n, p):
    return np.array([1] * p + [-1] * (n - p))


# ----------------------------------------------------------------- wrong inputs


@pytest.mark.parametrize(
    "bad,error,match",
    [
        (np.ones((2, 3)), ValueError, "square"),
        (np.ones(3), ValueError, "2-D"),
        (np.float64(2.0), ValueError, "2-D"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), ValueError, "infs or NaNs"),
        (np.array([[1.0, np.inf], [np.inf, 1.0]]), ValueError, "infs or NaNs"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), ValueError, "not symmetric"),
        (np.array([["a", "b"], ["b", "a"]]), TypeError, "dtype"),
        (np.array([[1.0, None], [None, 1.0]], dtype=object), TypeError, "dtype"),
        (np.zeros((2, 2), dtype="datetime64[s]"), TypeError, "dtype"),
        (np.ones((3, 2, 3)), ValueError, "square"),
    ],
)
def test_eig_wrong_inputs(bad, error, match):
    with pytest.raises(error, match=match):
        cljacobi.eig_indefinite(bad)


def test_longdouble_refused_where_wider():
    M = np.eye(2, dtype=np.longdouble)
    if np.dtype(np.longdouble).itemsize <= 8:
        assert cljacobi.eig_indefinite(M, eigvals_only=True).tolist() == [1.0, 1.0]
    else:
        with pytest.raises(TypeError, match="float64 is the widest"):
            cljacobi.eig_indefinite(M)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"max_sweeps": 0}, ValueError, "max_sweeps"),
        ({"max_sweeps": 2.5}, TypeError, "max_sweeps"),
        ({"max_sweeps": True}, TypeError, "max_sweeps"),
        ({"on_nonconvergence": "ignore"}, ValueError, r"'raise', 'warn'"),
        ({"on_nonconvergence": None}, ValueError, "on_nonconvergence"),
        ({"queue": "gpu"}, TypeError, "queue"),
    ],
)
@pytest.mark.parametrize("function", ["eig_indefinite", "hsvd"])
def test_options_checked_before_the_array(function, kwargs, error, match):
    """A bad option is reported even when the array is bad too (scipy's order)."""
    bad_array = np.array([["x"]])
    with pytest.raises(error, match=match):
        if function == "eig_indefinite":
            cljacobi.eig_indefinite(bad_array, **kwargs)
        else:
            cljacobi.hsvd(bad_array, np.ones(1), **kwargs)


def test_asymmetry_tolerance_is_the_documented_one(rng):
    M = _symmetric(6, rng)
    scale = np.max(np.abs(M))
    inside = M.copy()
    inside[4, 1] += 0.5 * HERMITIAN_RTOL * scale
    w = cljacobi.eig_indefinite(inside, eigvals_only=True)
    # Only the lower triangle is used.
    lower = np.tril(inside) + np.tril(inside, -1).T
    assert np.array_equal(w, cljacobi.eig_indefinite(lower, eigvals_only=True))
    outside = M.copy()
    outside[4, 1] += 4 * HERMITIAN_RTOL * scale
    with pytest.raises(ValueError, match="max\\|M - M.T\\| = ") as caught:
        cljacobi.eig_indefinite(outside)
    assert f"{4 * HERMITIAN_RTOL * scale:.3g}"[:3] in str(caught.value)


def test_check_finite_off_still_never_returns_garbage():
    for value in (np.nan, np.inf, -np.inf):
        M = np.array([[1.0, value], [value, 2.0]])
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            cljacobi.eig_indefinite(M, check_finite=False)
        with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
            cljacobi.hsvd(M, np.array([1, -1]), check_finite=False)
    with pytest.raises(np.linalg.LinAlgError):
        cljacobi.eig_indefinite(np.array([[np.nan]]), check_finite=False)


def test_hsvd_wrong_inputs():
    with pytest.raises(ValueError, match=r"\+1 and -1"):
        cljacobi.hsvd(np.eye(3), np.array([1, 0, -1]))
    with pytest.raises(ValueError, match=r"\+1 and -1"):
        cljacobi.hsvd(np.eye(2), np.array(["1", "-1"]))
    with pytest.raises(ValueError, match="shape"):
        cljacobi.hsvd(np.eye(3), np.ones(2))
    with pytest.raises(ValueError, match="m >= n"):
        cljacobi.hsvd(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="column 1 of G is zero"):
        cljacobi.hsvd(np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), np.array([1, -1]))
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.hsvd(np.array([[1.0, np.nan], [0.0, 1.0]]), np.array([1, -1]))


def test_hsvd_rank_deficient_is_an_error_not_nan():
    G = np.array([[1.0, 1.0], [1.0, 1.0]])  # equal columns: one rotates to exactly zero
    with pytest.raises(np.linalg.LinAlgError, match="rank deficient"):
        cljacobi.hsvd(G, np.ones(2))


# ----------------------------------------------------------------- promotion


@pytest.mark.parametrize(
    "dtype,result",
    [(bool, np.float64), (np.int8, np.float64), (np.uint16, np.float64), (np.int64, np.float64),
     (np.float16, np.float32), (np.float32, np.float32), (np.float64, np.float64)],
)
def test_dtype_promotion(dtype, result):
    M = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1]]).astype(dtype)
    w, U = cljacobi.eig_indefinite(M)
    assert w.dtype == result and U.dtype == result
    expected = np.linalg.eigvalsh(M.astype(np.float64))
    assert np.allclose(w, expected, atol=1e-6 if result == np.float32 else 1e-14)
    U, S, Vh, J = cljacobi.hsvd(M, np.array([1, -1, 1]))
    assert U.dtype == S.dtype == Vh.dtype == result and J.dtype == np.int8


def test_float32_result_beyond_float32_range_is_an_error():
    big = np.float32(3e38)
    M = np.array([[big, big], [big, big]], dtype=np.float32)  # eigenvalue 6e38
    with pytest.raises(np.linalg.LinAlgError, match="range of float32"):
        cljacobi.eig_indefinite(M)
    w = cljacobi.eig_indefinite(M.astype(np.float64), eigvals_only=True)
    assert np.isclose(w[1], 2 * float(big), rtol=1e-15)


# ----------------------------------------------------------------- tiny sizes


@pytest.fixture
def no_device(monkeypatch):
    """Fail the test if any device is resolved or any run is started."""

    def refuse(*args, **kwargs):
        raise AssertionError("the device was used")

    monkeypatch.setattr(eig_module, "resolve_queue", refuse)
    monkeypatch.setattr(eig_module, "PointwiseHSVD", refuse)


def test_empty_and_one_by_one_without_device(no_device):
    w, U = cljacobi.eig_indefinite(np.empty((0, 0)))
    assert w.shape == (0,) and U.shape == (0, 0)
    w, U = cljacobi.eig_indefinite(np.array([[-3.5]], dtype=np.float32))
    assert w.tolist() == [-3.5] and U.tolist() == [[1.0]] and w.dtype == np.float32
    w, U = cljacobi.eig_indefinite(np.zeros((3, 1, 1)))
    assert w.shape == (3, 1) and U.shape == (3, 1, 1) and not w.any()
    w, U = cljacobi.eig_indefinite(np.empty((0, 5, 5)))
    assert w.shape == (0, 5) and U.shape == (0, 5, 5)
    U, S, Vh, J = cljacobi.hsvd(np.empty((4, 0)), np.empty(0))
    assert U.shape == (4, 0) and S.shape == (0,) and Vh.shape == (0, 0)
    U, S, Vh, J = cljacobi.hsvd(np.empty((0, 4, 3)), np.ones(3))
    assert U.shape == (0, 4, 3) and S.shape == (0, 3)
    assert Vh.shape == (0, 3, 3) and J.shape == (0, 3)


def test_zero_matrix_without_launch(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a run was started")

    monkeypatch.setattr(eig_module, "PointwiseHSVD", refuse)
    (w, U), info = cljacobi.eig_indefinite(np.zeros((5, 5)), return_info=True)
    assert np.array_equal(w, np.zeros(5)) and np.array_equal(U, np.eye(5))
    assert info.rank == 0 and info.sweeps == 0


# ----------------------------------------------------------------- layouts


def test_layouts_give_identical_results(rng):
    M = _symmetric(12, rng)
    reference = cljacobi.eig_indefinite(M)
    big = np.zeros((36, 24))
    big[::3, 1::2] = M
    for variant in (np.asfortranarray(M), big[::3, 1::2], M[::-1, ::-1][::-1, ::-1], M.T):
        w, U = cljacobi.eig_indefinite(variant)
        assert np.array_equal(w, reference.eigenvalues)
        assert np.array_equal(U, reference.eigenvectors)
    G = rng.standard_normal((10, 6))
    J = _signature(6, 2)
    first = cljacobi.hsvd(G, J)
    for variant in (np.asfortranarray(G), np.repeat(G, 2, axis=1)[:, ::2]):
        again = cljacobi.hsvd(variant, J)
        for a, b in zip(first, again):
            assert np.array_equal(a, b)


# ----------------------------------------------------------------- stacks


def test_stacked_eig(rng):
    stack = np.stack([_symmetric(7, rng, p) for p in range(6)]).reshape(2, 3, 7, 7)
    w, U = cljacobi.eig_indefinite(stack)
    assert w.shape == (2, 3, 7) and U.shape == (2, 3, 7, 7)
    for index in np.ndindex(2, 3):
        single = cljacobi.eig_indefinite(stack[index])
        assert np.array_equal(w[index], single.eigenvalues)
        assert np.array_equal(U[index], single.eigenvectors)
    w_only, infos = cljacobi.eig_indefinite(stack, eigvals_only=True, return_info=True)
    assert np.array_equal(w_only, w)
    assert len(infos) == 6 and [info.positive for info in infos] == list(range(6))


def test_stacked_hsvd(rng):
    G = rng.standard_normal((3, 9, 5))
    J_each = np.array([_signature(5, p) for p in (0, 2, 5)])
    U, S, Vh, J = cljacobi.hsvd(G, J_each)
    assert U.shape == (3, 9, 5) and S.shape == (3, 5) and Vh.shape == (3, 5, 5)
    for k in range(3):
        single = cljacobi.hsvd(G[k], J_each[k])
        for stacked, alone in zip((U[k], S[k], Vh[k], J[k]), single):
            assert np.array_equal(stacked, alone)
    S_shared, J_shared = cljacobi.hsvd(G, _signature(5, 2), compute_uv=False)
    assert np.array_equal(S_shared[1], S[1]) and np.array_equal(J_shared[1], J[1])
    with pytest.raises(ValueError, match="one per matrix"):
        cljacobi.hsvd(G, np.ones((2, 5)))


def test_stack_error_names_the_matrix(rng):
    stack = np.stack([_symmetric(4, rng), np.triu(np.ones((4, 4)))])
    with pytest.raises(ValueError, match=r"M\[1\] is not symmetric"):
        cljacobi.eig_indefinite(stack)
    G = np.ones((2, 3, 2))
    G[:, 1, 1] = 3.0  # independent columns (equal ones have no hyperbolic SVD)
    G[1, :, 0] = 0
    with pytest.raises(ValueError, match=r"column 0 of G\[1\] is zero"):
        cljacobi.hsvd(G, np.array([1, -1]))


# ----------------------------------------------------------------- device arrays


def test_pyopencl_arrays_in_and_out(queue, rng):
    M = _symmetric(9, rng)
    host = cljacobi.eig_indefinite(M)
    device_M = cl_array.to_device(queue, M)
    w, U = cljacobi.eig_indefinite(device_M)
    assert isinstance(w, cl_array.Array) and isinstance(U, cl_array.Array)
    assert w.queue is queue and U.queue is queue
    assert np.array_equal(w.get(), host.eigenvalues)
    assert np.array_equal(U.get(), host.eigenvectors)
    w_only = cljacobi.eig_indefinite(device_M, eigvals_only=True)
    assert isinstance(w_only, cl_array.Array) and np.array_equal(w_only.get(), host.eigenvalues)

    G = rng.standard_normal((8, 5))
    J = _signature(5, 3)
    expected = cljacobi.hsvd(G, J)
    result = cljacobi.hsvd(cl_array.to_device(queue, G), cl_array.to_device(queue, J))
    assert type(result).__name__ == "HSVDResult"
    for device_part, host_part in zip(result, expected):
        assert isinstance(device_part, cl_array.Array)
        assert np.array_equal(device_part.get(), host_part)
    one = cljacobi.eig_indefinite(cl_array.to_device(queue, np.array([[2.0]])))
    assert isinstance(one.eigenvalues, cl_array.Array) and one.eigenvalues.get().tolist() == [2.0]


def test_pyopencl_array_without_queue(queue, rng):
    """An array with no queue attached is read through queue= or a new queue."""
    M = _symmetric(7, rng)
    expected = cljacobi.eig_indefinite(M)
    detached = cl_array.to_device(queue, M).with_queue(None)
    assert detached.queue is None
    w, U = cljacobi.eig_indefinite(detached)
    assert isinstance(w, cl_array.Array) and w.queue is not None
    assert np.array_equal(w.get(), expected.eigenvalues)
    assert np.array_equal(U.get(), expected.eigenvectors)
    w_q = cljacobi.eig_indefinite(detached, queue=queue, eigvals_only=True)
    assert w_q.queue is queue and np.array_equal(w_q.get(), expected.eigenvalues)
    G = rng.standard_normal((6, 4))
    J = np.array([1, -1, 1, -1])
    S, J_S = cljacobi.hsvd(cl_array.to_device(queue, G).with_queue(None), J, compute_uv=False)
    S_host, J_host = cljacobi.hsvd(G, J, compute_uv=False)
    assert np.array_equal(S.get(), S_host) and np.array_equal(J_S.get(), J_host)
