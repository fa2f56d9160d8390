"""Bunch-Parlett complete pivoting on the device against the host version."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyopencl as cl
import pytest
from hiprec import eigvalsh_hiprec

import cljacobi
import cljacobi.factorization as host_factorization
from cljacobi.factorization import j_factorize
from cljacobi.host import factorization as device_factorization
from cljacobi.host.factorization import j_factorize_device
from cljacobi.matrices import graded

EPS = np.finfo(np.float64).eps
DTYPES = [np.float64, np.complex128]


def _standard(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Standard normal entries; complex ones with independent real and imaginary parts."""
    X = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        X = X + 1j * rng.standard_normal(shape)
    return X


def _hermitian(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    X = _standard(rng, (n, n), dtype)
    return X + X.conj().T


def _cases(rng: np.random.Generator, dtype: type) -> Iterator[tuple[str, np.ndarray, bool]]:
    """``(label, M, whether M takes a 2x2 pivot)``."""
    antidiagonal = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=dtype)
    if np.dtype(dtype).kind == "c":
        antidiagonal[1, 0] = (3 - 4j) / 5  # |b| = 1, a nontrivial phase
        antidiagonal[0, 1] = antidiagonal[1, 0].conjugate()
    yield "2x2 antidiagonal", antidiagonal, True
    yield "zero", np.zeros((5, 5), dtype=dtype), False
    for n in (1, 3, 16, 17, 33, 70):
        yield f"random {n}", _hermitian(rng, n, dtype), False
    # mu1 = 0 < alpha mu0: the first pivot (at least) is 2x2.
    zero_diagonal = _hermitian(rng, 20, dtype)
    np.fill_diagonal(zero_diagonal, 0.0)
    yield "zero diagonal (2x2 pivots)", zero_diagonal, True
    X = _standard(rng, (40, 9), dtype)
    yield "rank 9 of 40", (X * np.array([1, -1, 1, -1, 1, 1, -1, 1, -1])) @ X.conj().T, False
    yield "graded", graded(36, p=15, rng=rng, dtype=dtype)[0], False


@pytest.mark.parametrize("dtype", DTYPES)
def test_same_factor_as_host(queue, rng, monkeypatch, dtype):
    two_by_two = 0
    host_pivot_2x2 = host_factorization._pivot_2x2

    def counting_pivot_2x2(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nonlocal two_by_two
        two_by_two += 1
        return host_pivot_2x2(X)

    monkeypatch.setattr(host_factorization, "_pivot_2x2", counting_pivot_2x2)
    for label, M, takes_2x2 in _cases(rng, dtype):
        two_by_two = 0
        device = j_factorize_device(M, queue)
        host = j_factorize(M)
        assert not takes_2x2 or two_by_two > 0, label
        assert device.G.dtype == np.dtype(dtype) and device.G.flags.f_contiguous, label
        assert device.G.shape == host.G.shape, label
        if label == "rank 9 of 40":
            assert device.G.shape[1] == 9, label
        assert device.p == host.p and np.array_equal(device.signs, host.signs), label
        # Same pivots: the factors agree to rounding (fused multiply-adds differ).
        scale = max(np.abs(host.G).max(initial=0.0), 1e-300)
        assert np.abs(device.G - host.G).max(initial=0.0) <= 1e3 * EPS * scale, label
        J = device.signs.astype(float)
        residual = np.linalg.norm((device.G * J) @ device.G.conj().T - M)
        assert residual <= 10 * M.shape[0] * EPS * max(np.linalg.norm(M), 1e-300), label


def test_complex_lower_triangle_only(queue, rng):
    """Only the lower triangle counts; the imaginary parts of the diagonal are dropped."""
    M = _hermitian(rng, 12, np.complex128)
    messy = np.tril(M) + np.triu(_standard(rng, (12, 12), np.complex128), 1)
    messy[np.diag_indices(12)] += 1j * rng.standard_normal(12)
    clean = j_factorize_device(M, queue)
    assert np.array_equal(j_factorize_device(messy, queue).G, clean.G)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reproducible(queue, rng, dtype):
    M = _hermitian(rng, 50, dtype)
    first = j_factorize_device(M, queue)
    again = j_factorize_device(M, queue)
    assert np.array_equal(first.G, again.G)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0, 9, 17, 24])
def test_eig_with_device_factorization(rng, p, dtype):
    M, _, _ = graded(24, p=p, low_exponent=-30, rng=rng, dtype=dtype)
    exact = eigvalsh_hiprec(M)
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    # Definite matrices (p = 0, 24) too: the device's complete pivoting.
    assert info.factorization == "bunch-parlett-device" and info.positive == p
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(U.conj().T @ U - np.eye(24)) <= 100 * 24 * EPS


def test_complex_eig_with_device_factorization(rng):
    M = _hermitian(rng, 60, np.complex128)
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.factorization == "bunch-parlett-device"
    norm = np.linalg.norm(M, 2)
    assert np.max(np.abs(w - np.linalg.eigvalsh(M))) <= 100 * 60 * EPS * norm
    assert np.linalg.norm(M @ U - U * w) <= 100 * 60 * EPS * norm


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_launch_per_step(queue, rng, monkeypatch, dtype):
    """One launch that only searches (and decides the first pivot), then one
    launch per pivot step, each applying a pivot and deciding the next."""
    n = 40
    # Dominant diagonal of both signs: n 1x1 pivots, so n steps.
    M = 0.01 * _hermitian(rng, n, dtype)
    np.fill_diagonal(M, np.where(np.arange(n) % 2, -1.0, 1.0) * (1 + np.arange(n)))
    launched: list[str] = []
    enqueue = device_factorization.enqueue_kernel

    def counting_enqueue(queue, kernel, *args, **kwargs):
        launched.append(kernel.function_name)
        return enqueue(queue, kernel, *args, **kwargs)

    monkeypatch.setattr(device_factorization, "enqueue_kernel", counting_enqueue)
    device = j_factorize_device(M, queue)
    assert device.G.shape == (n, n)
    assert launched == ["cjac_bp_step"] * (n + 1)
    monkeypatch.undo()
    host = j_factorize(M)
    assert np.abs(device.G - host.G).max() <= 1e3 * EPS * np.abs(host.G).max()


def test_pivots_through_the_rank_test(queue, rng, monkeypatch):
    """The entrywise rank test (turned on midway) and 2x2 pivots on a graded
    matrix: the same pivots, rank and signs as the host, and the factor
    bitwise repeatable."""
    n = 48
    M = graded(n, p=20, rng=rng)[0]
    X = _standard(rng, (n, 5), np.float64)
    M = M + 1e-18 * (X * np.array([1, -1, 1, 1, -1])) @ X.T
    np.fill_diagonal(M[:10, :10], 0.0)
    seen = {"2x2": 0, "testing": 0}
    pivot_2x2, start_testing = host_factorization._pivot_2x2, host_factorization._BlockLower.start_testing

    def counting_2x2(X):
        seen["2x2"] += 1
        return pivot_2x2(X)

    def counting_testing(self, *args, **kwargs):
        seen["testing"] += 1
        return start_testing(self, *args, **kwargs)

    monkeypatch.setattr(host_factorization, "_pivot_2x2", counting_2x2)
    monkeypatch.setattr(host_factorization._BlockLower, "start_testing", counting_testing)
    device, host = j_factorize_device(M, queue), j_factorize(M)
    assert seen["2x2"] > 0 and seen["testing"] == 1
    assert device.G.shape == host.G.shape
    assert device.p == host.p and np.array_equal(device.signs, host.signs)
    scale = np.abs(host.G).max()
    assert np.abs(device.G - host.G).max() <= 1e3 * EPS * scale
    assert np.array_equal(j_factorize_device(M, queue).G, device.G)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_kernel_per_kind_of_launch(queue, rng, monkeypatch, dtype):
    """Real factorizations run a kernel for the first launch, one for the
    launches before the entrywise rank test and one for those with it
    (KERNEL_PER_LAUNCH), complex ones one kernel for all: the factor, its
    signs and rank bitwise those of one kernel for all, through 2x2 pivots
    and the rank test."""
    n = 48
    M = graded(n, p=20, rng=rng, dtype=dtype)[0]
    X = _standard(rng, (n, 5), dtype)
    M = M + 1e-18 * (X * np.array([1, -1, 1, 1, -1])) @ X.conj().T
    np.fill_diagonal(M[:10, :10], 0.0)
    built: list[str] = []
    build = device_factorization.build_program

    def recording_build(ctx, device, spec, *args, **kwargs):
        built.append(spec.launch)
        return build(ctx, device, spec, *args, **kwargs)

    monkeypatch.setattr(device_factorization, "build_program", recording_build)
    started = []
    start_testing = device_factorization._Elimination._start_testing

    def counting_start(self, k):
        started.append(k)
        return start_testing(self, k)

    monkeypatch.setattr(device_factorization._Elimination, "_start_testing", counting_start)
    per_launch = j_factorize_device(M, queue)
    real = np.dtype(dtype) == np.float64
    assert sorted(built) == (["first", "plain", "testing"] if real else ["any"])
    built.clear()
    monkeypatch.setattr(device_factorization, "KERNEL_PER_LAUNCH", ())
    one = j_factorize_device(M, queue)
    assert built == ["any"]
    assert np.array_equal(per_launch.G, one.G) and np.array_equal(per_launch.signs, one.signs)
    assert per_launch.p == one.p and len(started) == 2  # the rank test ran in both
    with pytest.raises(ValueError, match="launch must be one of"):
        device_factorization.BunchParlettSpec("float64", launch="second")


def test_factorization_option():
    with pytest.raises(ValueError, match="factorization must be one of"):
        cljacobi.eig_indefinite(np.eye(3), factorization="gpu")


@pytest.mark.parametrize("variant", ["pointwise", "bo"])
@pytest.mark.parametrize("dtype, layout", [(np.float64, None), (np.complex128, "split"),
                                           (np.complex128, "interleaved")])
def test_factor_stays_on_device(rng, variant, dtype, layout):
    """Full rank: G goes from the factorization into the (blocked) sweeps
    without leaving the device, with the same accuracy as through the host."""
    M, _, _ = graded(40, p=17, low_exponent=-30, rng=rng)
    if dtype == np.complex128:  # a unitary diagonal similarity keeps the spectrum
        phases = np.exp(1j * rng.uniform(0, 2 * np.pi, 40))
        M = (phases[:, None] * M) * phases.conj()
    exact = eigvalsh_hiprec(M)
    options = {"variant": variant, "block_width": None if variant == "pointwise" else 8,
               "_layout": layout}
    (w, U), info = cljacobi.eig_indefinite(
        M, factorization="device", return_info=True, **options)
    assert info.factorization == "bunch-parlett-device" and info.rank == 40
    assert info.variant == variant
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(U.conj().T @ U - np.eye(40)) <= 100 * 40 * EPS
    w_host = cljacobi.eig_indefinite(M, factorization="host", eigvals_only=True, **options)
    assert np.max(np.abs(w - w_host) / np.abs(exact)) <= 1e-12
    assert np.linalg.norm(M @ U - U * w) <= 1e-12 * np.linalg.norm(M)
    w_only = cljacobi.eig_indefinite(M, factorization="device", eigvals_only=True, **options)
    assert np.array_equal(w_only, w)


@pytest.mark.parametrize("rank", [40, 31])
def test_eigenvectors_checked_once(rng, monkeypatch, rank):
    """Eigenvectors normalized on the device, which tested them as it wrote
    them, are not read again on the host; every other result array is, and
    a device that reports a non-finite entry gets the host's LinAlgError."""
    import cljacobi._solve as pipeline
    import cljacobi.eig as eig_module

    X = rng.standard_normal((40, rank))
    M = (X * np.where(np.arange(rank) % 3 == 0, -1.0, 1.0)) @ X.T
    checked = []

    def recording_all_finite(array: np.ndarray) -> bool:
        checked.append(array)
        return bool(np.isfinite(array).all())

    monkeypatch.setattr(pipeline, "all_finite", recording_all_finite)
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.factorization == "bunch-parlett-device" and info.rank == rank
    assert np.linalg.norm(M @ U - U * w) <= 1e-12 * np.linalg.norm(M)
    assert any(array is w for array in checked)
    assert any(array is U for array in checked) == (rank < 40)  # rank < n: U built on the host

    device_columns = eig_module.normalized_columns

    def reporting_nan(*args, **kwargs):
        U, _ = columns = device_columns(*args, **kwargs)
        U[0, 0] = np.nan
        return columns._replace(finite=False)

    monkeypatch.setattr(eig_module, "normalized_columns", reporting_nan)
    with pytest.raises(np.linalg.LinAlgError, match="an eigenvalue of M exceeds"):
        cljacobi.eig_indefinite(M, factorization="device")


def test_rank_deficient_factor_through_host(rng):
    """A rank-deficient G is shortened by QR on the host; the zero eigenvalues stay exact."""
    X = rng.standard_normal((30, 7))
    M = (X * np.array([1, -1, 1, -1, 1, 1, -1])) @ X.T
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.rank == 7 and np.count_nonzero(w == 0) == 23
    reference = np.linalg.eigvalsh(M)
    assert np.max(np.abs(w - reference)) <= 1e-12 * np.abs(reference).max()
    assert np.linalg.norm(M @ U - U * w) <= 1e-12 * np.linalg.norm(M)


def test_fence_specialization(queue):
    """NVIDIA's devices publish a step's stores by membar.gl, others by mem_fence."""
    from cljacobi.host.factorization import global_fence_for
    from cljacobi.host.matrix_products import compute_capability

    nvidia = compute_capability(queue.device) is not None
    assert global_fence_for(queue.device) == ("ptx" if nvidia else "opencl")


@pytest.mark.parametrize("dtype", DTYPES)
def test_exactly_hermitian_rows(queue, rng, dtype):
    """An exactly Hermitian matrix uploaded by rows (conjugated back on the
    device, no transposed host copy) gives the factor bit for bit."""
    from cljacobi.host.factorization import factor_on_device

    M = _hermitian(rng, 45, dtype)
    np.fill_diagonal(M, M.diagonal().real)
    by_columns = factor_on_device(M, queue).to_host()
    by_rows = factor_on_device(M, queue, exactly_hermitian=True).to_host()
    assert np.array_equal(by_rows.G, by_columns.G)
    assert np.array_equal(by_rows.signs, by_columns.signs)


def _as_stored(M: np.ndarray, order: str) -> np.ndarray:
    """M C-ordered, Fortran-ordered, or a strided view (neither)."""
    if order == "F":
        return np.asfortranarray(M)
    if order == "strided":
        wide = np.zeros((M.shape[0], 2 * M.shape[1]), M.dtype)
        wide[:, ::2] = M
        return wide[:, ::2]
    return np.ascontiguousarray(M)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F", "strided"])
@pytest.mark.parametrize("n", [1, 17, 64, 130])
def test_hermitian_upload_against_symmetric_part(queue, rng, dtype, order, n):
    """cjac_hermitian_stats records what validation.symmetric_part does (the
    largest and smallest nonzero modulus of the Hermitian part: exactly for
    real M, to the device's hypot for complex M, which OpenCL allows 4 ulp;
    the asymmetry to the rounding of the modulus), and cjac_hermitian_load writes
    2^shift times its lower triangle, column-major, nothing above it; from
    M stored by rows, by columns or neither, across tile and block edges."""
    from cljacobi.host.operands import upload_hermitian
    from cljacobi.validation import symmetric_part

    M = _hermitian(rng, n, dtype) * 2.0 ** rng.integers(-30, 30, (n, n))
    M = np.tril(M) + np.tril(M, -1).conj().T
    M[n - 1, 0] *= 1 + 1e-15  # within the tolerance: the lower triangle counts
    if n > 3:
        M[2, 1] = M[1, 2] = 0.0  # zeros are not the smallest nonzero
    ld = -(-n // 32) * 32
    upload = upload_hermitian(queue, _as_stored(M, order), "M", ld=ld)
    S, smallest, largest = symmetric_part(M, "M")
    if np.dtype(dtype).kind == "c":
        np.testing.assert_allclose([upload.smallest, upload.largest], [smallest, largest],
                                   rtol=8 * EPS, atol=0)
    else:
        assert (upload.smallest, upload.largest) == (smallest, largest)
    asymmetry = np.max(np.abs(M - M.conj().T))
    assert abs(upload.asymmetry - asymmetry) <= 8 * EPS * asymmetry
    item = np.dtype(dtype).itemsize
    dst = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, item * ld * n)
    cl.enqueue_fill_buffer(queue, dst, np.full(1, 7.0), 0, item * ld * n)  # marks untouched
    marker = np.frombuffer(np.full(2, 7.0).tobytes(), dtype)[0]
    upload.load(dst, ld, -5)
    stored = np.empty((n, ld), dtype)
    cl.enqueue_copy(queue, stored, dst)
    A0 = stored[:, :n].T  # A0[i, j] = entry (i, j), column-major on the device
    lower = np.tril_indices(n)
    assert np.array_equal(A0[lower], (S * 2.0**-5)[lower])
    assert np.all(A0[np.triu_indices(n, 1)] == marker)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hermitian_upload_refuses_asymmetric(queue, rng, dtype):
    """The device's asymmetry test raises symmetric_part's ValueError, naming M."""
    from cljacobi.host.operands import upload_hermitian
    from cljacobi.validation import symmetric_part

    M = _hermitian(rng, 70, dtype)
    M[50, 3] += 1e-3 * np.abs(M).max()
    with pytest.raises(ValueError) as on_host:
        symmetric_part(M, "M[2]")
    with pytest.raises(ValueError, match=r"M\[2\] is not .*exceeds") as on_device:
        upload_hermitian(queue, M, "M[2]", ld=96)
    # the same test and message; the asymmetry printed to 3 digits
    assert str(on_device.value) == str(on_host.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_uploaded_matrix_factors_bit_for_bit(queue, rng, dtype, order):
    """factor_on_device of an upload (checked and scaled on the device) gives
    the factor of the host's scaled Hermitian part bit for bit, and
    eig_indefinite takes that route for an indefinite M: its eigenvalues
    those of the Hermitian part from the lower triangle."""
    from cljacobi.host.factorization import factor_on_device, upload_for_factorization
    from cljacobi.matrices import with_spectrum
    from cljacobi.scaling import matrix_shift_from_range
    from cljacobi.validation import symmetric_part

    n = 61
    lam = rng.uniform(1, 4, n) * np.where(np.arange(n) % 3, 1, -1)
    M = with_spectrum(lam, rng=rng, dtype=dtype)
    M[40, 7] += 1e-15 * np.abs(M).max()  # not exactly Hermitian
    S, smallest, largest = symmetric_part(M, "M")
    shift = matrix_shift_from_range(smallest, largest, n)
    scaled = np.ldexp(S.real, shift) + (1j * np.ldexp(S.imag, shift) if S.dtype.kind == "c"
                                         else 0)
    on_host = factor_on_device(scaled, queue, exactly_hermitian=True).to_host()
    uploaded = factor_on_device(upload_for_factorization(_as_stored(M, order), queue), queue,
                                shift=shift).to_host()
    assert np.array_equal(uploaded.G, on_host.G)
    assert np.array_equal(uploaded.signs, on_host.signs) and uploaded.p == on_host.p
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.factorization == "bunch-parlett-device"
    exact = eigvalsh_hiprec(S)
    assert np.max(np.abs(w - exact) / np.abs(exact)) <= 1e-12
    again = cljacobi.eig_indefinite(_as_stored(M, order), factorization="device")
    assert np.array_equal(again.eigenvalues, w) and np.array_equal(again.eigenvectors, U)


def test_hermitian_upload_refuses_small_work_groups(queue, rng):
    """A device whose work-groups are smaller than the check's tiles is told
    so before anything is copied or launched."""
    from cljacobi.errors import DeviceCapabilityError
    from cljacobi.host.operands import HERMITIAN_TILE, upload_hermitian

    class _Small:
        """The queue's device with a smaller work-group limit."""

        def __init__(self, device):
            self._device = device
            self.max_work_group_size = HERMITIAN_TILE * HERMITIAN_TILE - 1

        def __getattr__(self, name):
            return getattr(self._device, name)

    class _Queue:
        device = _Small(queue.device)

    with pytest.raises(DeviceCapabilityError, match=r"check of M needs work-groups of 256"):
        upload_hermitian(_Queue(), _hermitian(rng, 8, np.float64), "M", ld=32)


def test_resident_groups_hint_marks_the_kernels_of_a_required_size():
    """`.minnctapersm` goes after the parameters of every kernel with a
    `.reqntid` directive, once; PTX without such a kernel, or no PTX, is left
    alone (None)."""
    from cljacobi.host.programs import with_resident_groups

    ptx = (".version 9.0\n.target sm_90\n.address_size 64\n"
           ".entry sized(\n\t.param .u64 sized_param_0\n)\n.reqntid 16, 16, 1\n{\n\tret;\n}\n"
           ".entry free(\n\t.param .u32 free_param_0\n)\n{\n\tret;\n}\n")
    hinted = with_resident_groups(ptx, 4)
    assert hinted is not None
    assert hinted.count(".minnctapersm") == 1
    assert ".entry sized(\n\t.param .u64 sized_param_0\n)\n.minnctapersm 4\n.reqntid 16, 16, 1" \
        in hinted
    assert hinted.replace("\n.minnctapersm 4", "") == ptx
    assert with_resident_groups(hinted, 4) is None  # never twice
    assert with_resident_groups(ptx.replace(".reqntid 16, 16, 1\n", ""), 4) is None
    assert with_resident_groups("not ptx at all", 3) is None


def test_resident_groups_on_nvidia_only(queue, rng, monkeypatch):
    """The plan asks NVIDIA's devices (those with a compute capability) for
    4 (real) or 3 (complex) resident work-groups of the step kernel, other
    devices for none; a program built with the hint where the binary is no
    PTX is the plain one; and the factor is bitwise the one without the
    hint."""
    from cljacobi.host import factorization
    from cljacobi.host.programs import build_program, with_resident_groups

    device = queue.device
    if factorization.compute_capability(device) is None:
        for dtype in DTYPES:
            assert factorization.BunchParlettPlan.for_device(device, 64, dtype).spec \
                .resident_groups == 0
    with monkeypatch.context() as patch:
        patch.setattr(factorization, "compute_capability", lambda device: (9, 0))
        patch.setattr(factorization, "global_fence_for", lambda device: "opencl")
        specs = {np.dtype(dtype).name: factorization.BunchParlettPlan.for_device(
            device, 64, dtype).spec for dtype in DTYPES}
    assert specs["float64"].resident_groups == 4 and specs["complex128"].resident_groups == 3
    plain = factorization.BunchParlettSpec("float64", specs["float64"].global_fence)
    hinted = specs["float64"]
    program = build_program(queue.context, device, hinted)
    assert cl.Kernel(program, "cjac_bp_step").num_args == len(
        hinted.signatures["cjac_bp_step"].args)
    plain_binary = build_program(queue.context, device, plain).get_info(
        cl.program_info.BINARIES)[0]
    if factorization.compute_capability(device) is None:  # no PTX: the plain program
        assert program.get_info(cl.program_info.BINARIES)[0] == plain_binary
    else:  # PTX whose step kernel has a required work-group size, to take the hint
        assert with_resident_groups(plain_binary.decode("ascii"), 4) is not None
    for dtype in DTYPES:
        M = _hermitian(rng, 200, dtype)
        hinted_factor = factorization.factor_on_device(M, queue).to_host()
        with monkeypatch.context() as patch:
            patch.setattr(factorization, "RESIDENT_GROUPS", dict.fromkeys(
                factorization.RESIDENT_GROUPS, 0))
            plain_factor = factorization.factor_on_device(M, queue).to_host()
        assert np.array_equal(hinted_factor.G, plain_factor.G)
        assert np.array_equal(hinted_factor.signs, plain_factor.signs)


def test_resident_groups_fall_back_to_the_program_built(queue):
    """Where the PTX with the hint does not build (here: a device that takes
    no PTX), the program built from source is kept."""
    from cljacobi.host.factorization import BunchParlettSpec
    from cljacobi.host.programs import _resident

    ptx = (b".version 9.0\n.target sm_90\n.address_size 64\n"
           b".entry k(\n\t.param .u64 k_param_0\n)\n.reqntid 256, 1, 1\n{\n\tret;\n}\n")

    class Built:
        """A built program whose binary is that PTX."""

        def get_info(self, what):
            return [queue.device] if what == cl.program_info.DEVICES else [ptx]

    if "NVIDIA" in queue.device.vendor:
        pytest.skip("NVIDIA's OpenCL builds PTX")
    built = Built()
    assert _resident(queue.context, queue.device, built, 4,
                     BunchParlettSpec("float64", resident_groups=4)) is built


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sign", [1, -1])
def test_definite_takes_the_pivots_of_pivoted_cholesky(queue, rng, dtype, sign):
    """On a definite M the largest |s_ij| of every Schur complement is on its
    diagonal, so the device's complete pivoting takes 1x1 pivots at the
    largest diagonal entry, xPSTRF's: the factor is the host's pivoted
    Cholesky factor up to rounding, with J = +-I, for a plain and a graded
    M (whose pivots follow the grading)."""
    n = 60
    X = _standard(rng, (n, n), dtype)
    A = X @ X.conj().T / n + np.eye(n)
    d = np.ldexp(1.0, -np.arange(n) // 2)
    for M in (sign * A, sign * (d[:, None] * A * d[None, :])):
        device = j_factorize_device(M, queue)
        cholesky = host_factorization.definite_factorize(M)
        assert cholesky is not None and device.G.shape == (n, n)
        assert np.all(device.signs == sign) and device.p == (n if sign > 0 else 0)
        # column k of both is sqrt(d_k) times the k-th pivot's column, rows in M's order
        scale = np.abs(cholesky.G).max(axis=0)
        assert np.all(np.abs(device.G - cholesky.G) <= 1e3 * EPS * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [1, 13, 39])
def test_singular_basis_by_columns(rng, dtype, rank):
    """A singular M factored on the device: the null space's basis comes from
    the device by columns into the run of zero eigenvalues, the other
    eigenvectors around it; the whole basis Fortran-ordered, unitary, the
    null space orthogonal to the others, M U = U diag(w), repeatable."""
    n = 40
    X = _standard(rng, (n, rank), dtype)
    M = (X * np.where(np.arange(rank) % 3 == 1, -1.0, 1.0)) @ X.conj().T
    (w, U), info = cljacobi.eig_indefinite(M, factorization="device", return_info=True)
    assert info.factorization == "bunch-parlett-device" and info.rank == rank
    assert np.all(np.diff(w) >= 0) and np.count_nonzero(w == 0) == n - rank
    zero = np.flatnonzero(w == 0)
    assert np.array_equal(zero, np.arange(zero[0], zero[0] + n - rank))
    assert U.flags.f_contiguous and U.dtype == np.dtype(dtype)
    assert np.linalg.norm(U.conj().T @ U - np.eye(n)) <= 100 * n * EPS
    assert np.linalg.norm(M @ U - U * w) <= 100 * n * EPS * np.linalg.norm(M)
    assert np.linalg.norm(M @ U[:, zero]) <= 100 * n * EPS * np.linalg.norm(M)
    again = cljacobi.eig_indefinite(M, factorization="device")
    assert np.array_equal(again[0], w) and np.array_equal(again[1], U)
