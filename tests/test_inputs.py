"""Input validation of every public function, in scipy's order (options, then
the arrays), dtype promotion, layouts, stacks and pyopencl arrays.

The wrong inputs of each public function are one table (``test_eig_wrong_inputs``,
``test_hsvd_wrong_inputs``, ``test_svd_wrong_inputs``: the input and keywords, the
error, a regex of its message); the checks every function shares (options before
the array, boolean flags, check_finite=False, results beyond float64) are tables
parametrized by ``function``."""

from __future__ import annotations

import re

import numpy as np
import pyopencl.array as cl_array
import pytest

import cljacobi
from cljacobi import _solve as pipeline
from cljacobi.matrices import with_spectrum
from cljacobi.validation import HERMITIAN_RTOL

EPS = np.finfo(np.float64).eps


def _symmetric(n, rng, p=None):
    p = n // 2 if p is None else p
    lam = np.concatenate([rng.uniform(0.5, 4.0, p), -rng.uniform(0.5, 4.0, n - p)])
    return with_spectrum(lam, rng=rng)


def _signature(n, p):
    return np.array([1] * p + [-1] * (n - p))


# ----------------------------------------------------------------- wrong inputs


#: M[1] of this stack is not symmetric; M[0] is.
_STACK_ONE_ASYMMETRIC = np.stack([_symmetric(4, np.random.default_rng(4)),
                                  np.triu(np.ones((4, 4)))])


@pytest.mark.parametrize(
    "M,kwargs,error,match",
    [
        (np.ones((2, 3)), {}, ValueError, "square"),
        (np.ones(3), {}, ValueError, "2-D"),
        (np.float64(2.0), {}, ValueError, "2-D"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), {}, ValueError, "infs or NaNs"),
        (np.array([[1.0, np.inf], [np.inf, 1.0]]), {}, ValueError, "infs or NaNs"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), {}, ValueError, "not symmetric"),
        (np.array([[1.0, 2j], [2j, 1.0]]), {}, ValueError, "not Hermitian"),
        (np.array([[1.0 + 1j, 0], [0, 1.0]]), {}, ValueError, "not Hermitian"),
        (np.array([["a", "b"], ["b", "a"]]), {}, TypeError, "dtype"),
        (np.array([[1.0, None], [None, 1.0]], dtype=object), {}, TypeError, "dtype"),
        (np.zeros((2, 2), dtype="datetime64[s]"), {}, TypeError, "dtype"),
        (np.ones((3, 2, 3)), {}, ValueError, "square"),
        (_STACK_ONE_ASYMMETRIC, {}, ValueError, r"M\[1\] is not symmetric"),
        # Bad options beside a good array.
        (np.eye(2), {"max_sweeps": 0}, ValueError, "max_sweeps"),
        (np.eye(3), {"queue": "gpu"}, TypeError, "queue"),
    ],
)
def test_eig_wrong_inputs(M, kwargs, error, match):
    with pytest.raises(error, match=match):
        cljacobi.eig_indefinite(M, **kwargs)


@pytest.mark.parametrize("where", [(5, 2), (2, 5), (3, 3), (39, 0), (0, 39)],
                         ids=["lower", "upper", "diagonal", "corner", "far corner"])
@pytest.mark.parametrize("dtype,value", [
    (dtype, value) for dtype in (np.float64, np.complex128) for value in (np.nan, np.inf, -np.inf)
] + [(np.complex128, complex(1, np.nan))], ids=lambda x: str(x) if not isinstance(x, type)
    else x.__name__)
@pytest.mark.parametrize("factorization", ["device", "host"])
def test_eig_nonfinite_entry_of_either_triangle(factorization, value, where, dtype,
                                                monkeypatch):
    """One matrix's check for infs and NaNs is its factorization's: where the
    device factors M, the device tests every entry as M is loaded (both
    triangles, both parts of a complex entry) and the host makes no pass
    over M; on the host path the host checks it.  Either way the error is
    check_finite's."""
    from cljacobi import validation

    M = _symmetric(40, np.random.default_rng(3)).astype(dtype)
    original = M[where]
    M[where] = value
    checked = []

    def recording(array):
        checked.append(array)
        return validation_all_finite(array)

    validation_all_finite = validation.all_finite
    monkeypatch.setattr(validation, "all_finite", recording)
    with pytest.raises(ValueError, match=r"^M must not contain infs or NaNs$"):
        cljacobi.eig_indefinite(M, factorization=factorization)
    on_host = any(np.shares_memory(array, M) for array in checked)
    assert on_host == (factorization == "host")
    M[where] = original
    w = cljacobi.eig_indefinite(M, factorization=factorization, eigvals_only=True)
    assert np.all(np.isfinite(w))


def test_eig_nonfinite_before_a_device_error(monkeypatch):
    """A non-finite M on a device that cannot take it gets check_finite's
    error, as it did when the host checked M before the device checks."""
    from cljacobi.errors import DeviceCapabilityError
    from tests.test_preflight import _Device, _Queue

    device = _Device(local_mem_size=64)
    monkeypatch.setattr(pipeline, "resolve_queue", lambda queue: _Queue(device))
    M = np.eye(40)
    with pytest.raises(DeviceCapabilityError, match="local memory"):
        cljacobi.eig_indefinite(M)
    M[7, 30] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        cljacobi.eig_indefinite(M)


#: Column 0 of G[1] of this stack is zero.
_STACK_ONE_ZERO_COLUMN = np.random.default_rng(2).standard_normal((2, 3, 2))
_STACK_ONE_ZERO_COLUMN[1, :, 0] = 0


@pytest.mark.parametrize(
    "G,J,error,match",
    [
        (np.eye(3), np.array([1, 0, -1]), ValueError, r"only \+1 and -1, not 0"),
        (np.eye(3), np.array([1.0, -1.0, 0.5]), ValueError, r"only \+1 and -1, not 0.5"),
        (np.eye(2), np.array([True, False]), TypeError, "J must hold .* not booleans"),
        (np.eye(2), np.array([True, True]), TypeError, "not booleans"),
        (np.eye(2), True, TypeError, "not booleans"),
        (np.eye(2), np.array([1 + 0j, -1]), TypeError, "J must be .* real .* complex128"),
        (np.eye(2), np.array(["1", "-1"]), TypeError, "J must be .* real .* <U2"),
        (np.eye(2), np.array([1, -1], dtype=object), TypeError, "dtype object"),
        (np.eye(3), np.ones(2), ValueError, r"J must have shape \(3,\)"),
        (np.eye(3), np.ones((3, 1)), ValueError, "J must have shape"),
        (np.ones((2, 3)), np.ones(3), ValueError, "m >= n"),
        (np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0]]), np.array([1, -1]), ValueError,
         "column 1 of G is zero"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), np.array([1, -1]), ValueError,
         "infs or NaNs"),
        (np.ones(3), np.ones(3), ValueError, "2-D"),
        (np.array([["a"]]), np.ones(1), TypeError, "dtype"),
        # Dependent columns of opposite signs: no J-unitary V orthogonalizes them.
        (np.array([[1.0, 1.0], [1.0, 1.0]]), np.array([1, -1]), np.linalg.LinAlgError,
         "G could not be orthogonalized: .* opposite signs"),
        (np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 1.0], [0.0, 0.0, 3.0]]), np.array([1, -1, 1]),
         np.linalg.LinAlgError, "could not be orthogonalized"),
        # Column norms 1e600 apart: their squares cannot share float64's range.
        (np.diag([1e300, 1e-300]), np.array([1, -1]), np.linalg.LinAlgError,
         "span more than float64"),
        # Stacks: the matrix at fault is named; J is one signature or one per matrix.
        (_STACK_ONE_ZERO_COLUMN, np.array([1, -1]), ValueError, r"column 0 of G\[1\] is zero"),
        (np.random.default_rng(9).standard_normal((3, 9, 5)), np.ones((2, 5)), ValueError,
         "one per matrix"),
    ],
)
def test_hsvd_wrong_inputs(G, J, error, match):
    with pytest.raises(error, match=match):
        cljacobi.hsvd(G, J)


@pytest.mark.parametrize(
    "A,kwargs,error,match",
    [
        (np.ones(3), {}, ValueError, "2-D"),
        (np.array([[1.0, np.inf]]), {}, ValueError, "infs or NaNs"),
        (np.array([["a"]]), {}, TypeError, "dtype"),
        # Singular values 1e600 apart: their squares cannot share float64's range.
        (np.diag([1e300, 1e-300]), {}, np.linalg.LinAlgError, "span more than float64"),
        # Bad options beside a good array.
        (np.eye(2), {"full_matrices": "1"}, TypeError, "full_matrices"),
        (np.eye(2), {"full_matrices": 2}, TypeError, "full_matrices"),
        (np.eye(2), {"compute_uv": None}, TypeError, "compute_uv"),
        (np.eye(2), {"max_sweeps": 0}, ValueError, "max_sweeps"),
        (np.eye(2), {"queue": "gpu"}, TypeError, "queue"),
    ],
)
def test_svd_wrong_inputs(A, kwargs, error, match):
    with pytest.raises(error, match=match):
        cljacobi.svd(A, **kwargs)


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
        ({"variant": "blocked"}, ValueError, "variant must be one of"),
        ({"block_width": 0}, ValueError, "positive integer"),
        ({"variant": "pointwise", "block_width": 8}, ValueError,
         r"block_width=8 applies only to the blocked variants \('bo', 'offdiag', 'fb', 'stream'\)"),
    ],
)
@pytest.mark.parametrize("function", ["eig_indefinite", "hsvd", "svd"])
def test_options_checked_before_the_array(function, kwargs, error, match):
    """A bad option is reported even when the array is bad too (scipy's order)."""
    with pytest.raises(error, match=match):
        _call(function, np.array([["x"]]), **kwargs)


# Every boolean option of every public function, with a call that reaches it.
FLAGS = {
    "eig_indefinite": ("eigvals_only", "check_finite", "overwrite_a", "sort_diagonal",
                       "return_info"),
    "hsvd": ("compute_uv", "check_finite", "sort_diagonal", "return_info"),
    "svd": ("full_matrices", "compute_uv", "check_finite", "sort_diagonal", "return_info"),
}
FLAG_CASES = [(function, flag) for function, flags in FLAGS.items() for flag in flags]


def _call(function, array, **kwargs):
    if function == "hsvd":
        return cljacobi.hsvd(array, np.array([1, -1, 1][: array.shape[-1]]), **kwargs)
    return getattr(cljacobi, function)(array, **kwargs)


def test_flag_table_is_complete():
    """FLAGS names every bool-defaulted parameter of the public functions."""
    import inspect

    for function, flags in FLAGS.items():
        parameters = inspect.signature(getattr(cljacobi, function)).parameters.values()
        booleans = {p.name for p in parameters
                    if isinstance(p.default, bool) and not p.name.startswith("_")}
        assert booleans == set(flags), function


@pytest.mark.parametrize("function", ["eig_indefinite", "eigh", "hsvd", "svd", "gsvd"])
def test_readme_api_table_is_the_signature(function):
    """README's API table lists each public function exactly as it is declared."""
    import inspect
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    documented = re.search(rf"^\| `({function}\(.*?\))` \|", readme, re.MULTILINE).group(1)
    parts, keyword_only = [], False
    for p in inspect.signature(getattr(cljacobi, function)).parameters.values():
        if p.name.startswith("_"):
            continue
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            parts.append("*")
            keyword_only = True
        default = "" if p.default is p.empty else "=" + repr(p.default).replace("'", '"')
        parts.append(p.name + default)
    assert documented == f"{function}({', '.join(parts)})"


@pytest.mark.parametrize("bad", ["yes", "no", "", None, 2, -1, 1.0, np.float64(0.0),
                                 np.array(True), [True]])
@pytest.mark.parametrize("function,flag", FLAG_CASES)
def test_flags_refuse_non_booleans(function, flag, bad):
    """Strings, None, floats, arrays and integers other than 0/1 are a TypeError naming
    the option, checked before the array (a string array here)."""
    with pytest.raises(TypeError, match=f"{flag} must be True or False"):
        _call(function, np.array([["x"]]), **{flag: bad})


@pytest.mark.parametrize("function,flag", FLAG_CASES)
def test_flags_take_numpy_bools_and_0_1_like_numpy(function, flag):
    M = np.array([[2.0, 1.0, 0.0], [1.0, -3.0, 1.0], [0.0, 1.0, 1.0]])
    for value in (True, False):
        expected = _call(function, M, **{flag: value})
        for same in (np.bool_(value), int(value), np.int64(value), np.uint8(value)):
            result = _call(function, M, **{flag: same})
            assert type(result) is type(expected)
            pairs = list(zip(_arrays(result), _arrays(expected), strict=True))
            assert pairs and all(np.array_equal(a, b) for a, b in pairs)


def _arrays(result):
    """The arrays in a result, nested tuples flattened (a SolveInfo gives none)."""
    if isinstance(result, np.ndarray):
        return [result]
    if isinstance(result, tuple):
        return [array for item in result for array in _arrays(item)]
    return []


@pytest.mark.parametrize("function", ["eig_indefinite", "hsvd", "svd"])
def test_block_width_with_auto_runs_blocked(function, rng):
    """variant="auto" with a block_width asks for the blocked kernels: "offdiag" of that width,
    on any device and at any order (documented), never a silently ignored width."""
    M = _symmetric(12, rng)
    M = M[:, :3] if function == "hsvd" else M
    _, info = _call(function, M, block_width=8, return_info=True)
    assert (info.variant, info.block_width) == ("offdiag", 8)
    _, info = _call(function, M, return_info=True)
    assert info.variant == "pointwise"  # n = 12: below AUTO_BLOCKED_MIN_ORDER anywhere
    with pytest.raises(ValueError, match="with block_width=8 asks for the blocked kernels"):
        _call(function, M, block_width=8, _single=True)


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


@pytest.mark.parametrize("function", ["eig_indefinite", "hsvd", "svd"])
@pytest.mark.parametrize("shape", [(2, 2), (1, 1), (3, 2, 2)])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_check_finite_off_still_never_returns_garbage(function, shape, value):
    """Non-finite input that check_finite=False lets through is a LinAlgError that says
    so (not a message about rank deficiency or overflow)."""
    M = np.ones(shape)
    M[..., -1, 0] = M[..., 0, -1] = value
    with pytest.raises(np.linalg.LinAlgError, match="contains infs or NaNs"):
        _call(function, M, check_finite=False)


@pytest.mark.parametrize(
    "function,array,match",
    [
        ("eig_indefinite", np.full((2, 2), 1e308), "an eigenvalue of M exceeds"),
        ("svd", np.full((3, 3), 1e308), "a singular value of A exceeds"),
        ("svd", np.full((2, 3, 3), 1e308), r"a singular value of A\[0\] exceeds"),
        ("hsvd", np.array([[1.5e308, 1e300], [1.5e308, -1e300]]),
         "a hyperbolic singular value of G exceeds"),
    ],
)
def test_results_beyond_float64_say_so(function, array, match):
    """A result that overflows is a LinAlgError naming it, without numpy's warnings."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(np.linalg.LinAlgError, match=match + " the largest float64"):
            _call(function, array)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize(
    "G,J",
    [
        # Equal columns, one sign: one of them rotates to exactly zero.
        (np.array([[1.0, 1.0], [1.0, 1.0]]), [1, 1]),
        (np.array([[1.0, 1.0], [1.0, 1.0]]), [-1, -1]),
        # A duplicated column beside one of the other sign (a rounding-level S, or 0).
        (np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 1.0], [0.0, 0.0, 3.0]]), [1, 1, -1]),
        (np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 1.0], [0.0, 0.0, 3.0]]), [-1, -1, 1]),
        (np.array([[1.0, 0.0, 1.0], [2.0, 1.0, 2.0], [0.0, 3.0, 0.0], [1.0, 1.0, 1.0]]),
         [1, -1, 1]),
    ],
)
def test_hsvd_rank_deficient_within_one_sign(G, J, dtype):
    """A dependency among columns of one sign has a hyperbolic SVD: a zero singular value
    (exactly, or at rounding level as numpy.linalg.svd gives it), U completed to an
    orthonormal basis, Vh J-unitary; what the docstring promises."""
    G = G.astype(dtype)
    if dtype == np.complex128:
        G = G * np.exp(1j * np.arange(G.shape[0]))[:, None]  # same dependency, complex
    J = np.array(J)
    n = G.shape[1]
    (U, S, Vh, J_S), info = cljacobi.hsvd(G, J, return_info=True)
    assert np.all(np.isfinite(S)) and np.all(np.diff(S) <= 0)
    assert S[-1] <= 8 * EPS * S[0] and S[-2] > 0.1 * S[0]
    assert info.rank == n - (S[-1] == 0)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 10 * n * EPS
    assert np.linalg.norm(U * S @ Vh - G) <= 10 * n * EPS * np.linalg.norm(G)
    assert np.linalg.norm(Vh @ np.diag(J) @ Vh.conj().T - np.diag(J_S)) <= 10 * n * EPS
    assert np.array_equal(S, cljacobi.hsvd(G, J, compute_uv=False)[0])
    if np.all(J == 1):
        assert np.allclose(S, cljacobi.svd(G, compute_uv=False), rtol=0, atol=8 * EPS * S[0])


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

    monkeypatch.setattr(pipeline, "resolve_queue", refuse)
    monkeypatch.setattr(pipeline, "PointwiseHSVD", refuse)


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

    monkeypatch.setattr(pipeline, "PointwiseHSVD", refuse)
    (w, U), info = cljacobi.eig_indefinite(np.zeros((5, 5)), return_info=True)
    assert np.array_equal(w, np.zeros(5)) and np.array_equal(U, np.eye(5))
    assert info.rank == 0 and info.sweeps == 0


@pytest.fixture
def device_nowhere(monkeypatch):
    """CLJACOBI_DEVICE matching no device: any call that needs one fails."""
    monkeypatch.setenv("CLJACOBI_DEVICE", "nonexistent")
    with pytest.raises(cljacobi.DeviceNotFoundError, match="'nonexistent' matches no"):
        cljacobi.svd(np.eye(2))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_trivial_inputs_need_no_device(device_nowhere, dtype):
    """0 x 0, 1 x 1 and zero matrices are answered on the host (README), also in stacks."""
    w, U = cljacobi.eig_indefinite(np.zeros((4, 4), dtype))
    assert np.array_equal(w, np.zeros(4)) and np.array_equal(U, np.eye(4))
    assert w.dtype == np.finfo(dtype).dtype and U.dtype == dtype
    w, U = cljacobi.eig_indefinite(np.zeros((2, 3, 3), dtype))
    assert w.shape == (2, 3) and not w.any()
    w, U = cljacobi.eig_indefinite(np.full((2, 1, 1), -2.5, dtype))
    assert w.tolist() == [[-2.5], [-2.5]]

    U, S, Vh = cljacobi.svd(np.zeros((5, 3), dtype), full_matrices=True)
    assert np.array_equal(S, np.zeros(3)) and U.shape == (5, 5) and Vh.shape == (3, 3)
    assert cljacobi.svd(np.zeros((2, 4, 6), dtype), compute_uv=False).shape == (2, 4)
    a = np.array([[-3.0 + (4j if dtype == np.complex128 else 0)]], dtype)
    (U, S, Vh), info = cljacobi.svd(a, return_info=True)
    assert S.tolist() == [abs(a[0, 0])] and S.dtype == np.finfo(dtype).dtype
    assert np.isclose(U * S @ Vh, a, rtol=2 * EPS, atol=0)
    assert np.isclose(abs(U[0, 0]), 1, rtol=EPS, atol=0)
    assert Vh.tolist() == [[1.0]]
    assert info.rank == 1 and info.sweeps == 0
    S = cljacobi.svd(np.array([[[2.0]], [[0.0]], [[-1.0]]], dtype), compute_uv=False)
    assert S.tolist() == [[2.0], [0.0], [1.0]]
    assert cljacobi.svd(np.empty((0, 3), dtype), compute_uv=False).shape == (0,)


@pytest.mark.parametrize("a", [np.array([[-0.75]]), np.array([[3e-300 - 1e-300j]])],
                         ids=["float64", "complex128"])
def test_trivial_one_by_one_matches_the_device_path(a):
    """The host answer of a 1 x 1 svd is what the sweeps gave before."""
    expected_S = np.abs(a[0])
    U, S, Vh = cljacobi.svd(a)
    assert np.array_equal(S, expected_S) and np.array_equal(U, a / expected_S)
    assert np.array_equal(Vh, np.ones((1, 1)))


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
        # one launch for the stack (README, "Stacks of small matrices"): each
        # result is bitwise that of the same kernel on the matrix alone, and
        # the one-matrix path's to rounding
        single = cljacobi.eig_indefinite(stack[index], variant="batched")
        assert np.array_equal(w[index], single.eigenvalues)
        assert np.array_equal(U[index], single.eigenvectors)
        pointwise = cljacobi.eig_indefinite(stack[index])
        assert np.allclose(w[index], pointwise.eigenvalues, rtol=0, atol=64 * EPS * 7 * 4)
    w_only, infos = cljacobi.eig_indefinite(stack, eigvals_only=True, return_info=True)
    assert np.array_equal(w_only, w)
    assert len(infos) == 6 and [info.positive for info in infos] == list(range(6))


def test_stacked_hsvd(rng):
    G = rng.standard_normal((3, 9, 5))
    J_each = np.array([_signature(5, p) for p in (0, 2, 5)])
    U, S, Vh, J = cljacobi.hsvd(G, J_each)
    assert U.shape == (3, 9, 5) and S.shape == (3, 5) and Vh.shape == (3, 5, 5)
    for k in range(3):
        # one launch for the stack after the QR of each G (README, "Stacks of
        # small matrices"): bitwise the same kernel on the matrix alone, the
        # one-matrix path's result to rounding
        single = cljacobi.hsvd(G[k], J_each[k], variant="batched")
        for stacked, alone in zip((U[k], S[k], Vh[k], J[k]), single):
            assert np.array_equal(stacked, alone)
        pointwise = cljacobi.hsvd(G[k], J_each[k])
        assert np.allclose(S[k], pointwise.S, rtol=64 * EPS * 9, atol=0)
        assert np.array_equal(J[k], pointwise.J)
        assert np.allclose(Vh[k], pointwise.Vh, rtol=0, atol=1e-10 * np.abs(Vh[k]).max())
    S_shared, J_shared = cljacobi.hsvd(G, _signature(5, 2), compute_uv=False)
    assert np.array_equal(S_shared[1], S[1]) and np.array_equal(J_shared[1], J[1])


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


def test_pyopencl_arrays_with_strides(queue, rng):
    """Non-contiguous pyopencl arrays (slices with steps, reversed, transposed views)
    give the results of their host counterparts."""
    M = _symmetric(8, rng)
    base = np.zeros((3, 16, 24))
    base[1, ::2, 4:20:2] = M
    device = cl_array.to_device(queue, base)
    strided = device[1, ::2, 4:20:2]
    assert not strided.flags.forc
    w, U = cljacobi.eig_indefinite(strided)
    expected = cljacobi.eig_indefinite(M)
    assert np.array_equal(w.get(), expected.eigenvalues)
    assert np.array_equal(U.get(), expected.eigenvectors)
    A = rng.standard_normal((7, 10))
    wide = cl_array.to_device(queue, A)[::-1, ::3]
    assert np.array_equal(cljacobi.svd(wide, compute_uv=False).get(),
                          cljacobi.svd(A[::-1, ::3], compute_uv=False))
    J = cl_array.to_device(queue, np.array([1, 5, -1, 5, 1, 5, -1, 5]))[::2]
    G = rng.standard_normal((6, 4))
    S, J_S = cljacobi.hsvd(G, J, compute_uv=False)
    S_host, J_host = cljacobi.hsvd(G, np.array([1, -1, 1, -1]), compute_uv=False)
    assert np.array_equal(S, S_host) and np.array_equal(J_S, J_host)


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
