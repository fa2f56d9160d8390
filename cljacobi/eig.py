"""Public solvers: the indefinite Hermitian eigenproblem and the hyperbolic SVD.

Both run the one-sided hyperbolic Jacobi method of Novaković & Singer,
"A GPU-based hyperbolic SVD algorithm", BIT 51 (2011) (GPUJACH1) on an
OpenCL device, on real or complex data.  ``eig_indefinite`` first factors
``M = G J G^*``: by Cholesky with diagonal pivoting when M is definite,
otherwise by Bunch-Parlett complete pivoting (Slapničar 1992), on the host
or on the device.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from ._arrays import is_device_array, solve_stack, to_device, to_host
from ._results import EighResult, HSVDResult, SolveInfo
from .errors import ConvergenceError, ConvergenceWarning
from .factorization import definite_factorize, j_factorize, shorten
from .host.blocked import COMPLEX_ELEMENT_BYTES, REAL_ELEMENT_BYTES, BlockedHSVD
from .host.device import has_fp64, resolve_queue
from .host.factorization import DeviceJFactor, factor_on_device
from .host.operands import Operands, column_max, gather_factor, normalized_columns
from .host.pointwise import HSVDState, PointwiseHSVD, complex_layout
from .host.preflight import preflight
from .host.variants import check_variant_options, choose_variant
from .options import JacobiOptions, resolve_options
from .scaling import factor_shift, factor_shift_from_maxima, matrix_shift_from_range
from .validation import (
    as_float_matrix,
    check_max_sweeps,
    check_on_nonconvergence,
    check_queue_argument,
    symmetric_part,
)

__all__ = ["DEFAULT_MAX_SWEEPS", "FACTORIZATIONS", "eig_indefinite", "hsvd"]

#: Where eig_indefinite's J-factorization runs.
FACTORIZATIONS = ("auto", "host", "device")

#: ``factorization="auto"`` factors on a GPU device from this order on.
AUTO_DEVICE_FACTORIZATION_MIN_ORDER = 256

#: Quasi-sweeps before giving up.  The 2011 paper needs at most 16 for
#: n = 4096 (its Table 3); the margin covers harder spectra.
DEFAULT_MAX_SWEEPS = 60


def _power_of_two_exponent(array: np.ndarray) -> int:
    """Exponent e with max|array| in [2^(e-1), 2^e); 0 for a zero array."""
    largest = float(np.max(np.abs(array))) if array.size else 0.0
    return int(np.frexp(largest)[1]) if largest > 0 else 0


def _ldexp(array: np.ndarray, exponent: int, out: np.ndarray | None = None) -> np.ndarray:
    """``array * 2**exponent``, exactly (no overflow/underflow), real or complex;
    into `out` (which may be `array`) if given."""
    if not np.iscomplexobj(array):
        return np.ldexp(array, exponent, out=out)
    if out is None:
        out = np.empty_like(array)
    out.real = np.ldexp(array.real, exponent)
    out.imag = np.ldexp(array.imag, exponent)
    return out


def _real_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for float32/complex64, float64 for float64/complex128."""
    return np.dtype(np.finfo(dtype).dtype)


def _single_precision(queue: cl.CommandQueue, result_dtype: np.dtype, single: bool | None) -> bool:
    """Whether the single precision kernels run: float32/complex64 data on a
    device without fp64 (or as forced by the private `single`)."""
    if single is not None:
        return single
    return _real_dtype(result_dtype) == np.float32 and not has_fp64(queue.device)


def _new_info() -> SolveInfo:
    return SolveInfo(seconds={"factorization": 0.0, "transfer": 0.0, "sweeps": 0.0, "sort": 0.0})


def _where(index: tuple[int, ...]) -> str:
    """How a message names one matrix of a stack ("" for a single matrix)."""
    return f" (matrix {index} of the stack)" if index else ""


def _name(base: str, index: tuple[int, ...]) -> str:
    """The argument name with the stack index, e.g. ``M[1, 0]``."""
    return f"{base}[{', '.join(map(str, index))}]" if index else base


@dataclass(frozen=True)
class _Sweeps:
    """How one call runs its sweeps: the same for every matrix of a stack."""

    queue: cl.CommandQueue | None
    max_sweeps: int
    on_nonconvergence: str
    variant: str
    block_width: int | None
    layout: str | None
    result_dtype: np.dtype
    single: bool | None
    options: JacobiOptions


@dataclass(frozen=True)
class _OnDevice:
    """A J-factor left on the device by :func:`factor_on_device`, to be
    scaled by ``2^exponent`` on its way into the sweeps (no host round trip)."""

    factor: DeviceJFactor
    exponent: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.factor.n, self.factor.rank

    @property
    def dtype(self) -> np.dtype:  # also what np.iscomplexobj reads
        return self.factor.dtype

    def operands(self, column_multiple: int, accumulate_v: bool, *, split: bool) -> Operands:
        f = self.factor
        return gather_factor(
            f.queue, f.buffer, f.ld, f.n, f.order, f.p, self.exponent,
            accumulate_v=accumulate_v, column_multiple=column_multiple, dtype=f.dtype,
            split=split,
        )


def _run_device(
    G: np.ndarray | _OnDevice,
    signs: np.ndarray,
    *,
    sweeps: _Sweeps,
    accumulate_v: bool,
    info: SolveInfo,
    index: tuple[int, ...] = (),
    fetch: bool = True,
) -> HSVDState:
    """Orthogonalize the columns of G on the device and fill `info`.

    `G` is a host array, or a double precision factor already on the device.
    ``fetch=False`` leaves the final G (and V) on the device, in
    ``state.operands``.

    The blocked variants run until no big block transformation happens, then
    pointwise sweeps finish and decide convergence, so every variant has the
    pointwise method's accuracy (the Gram matrices of the blocked kernels
    square the condition numbers).  Without convergence within
    ``sweeps.max_sweeps`` (blocked and pointwise quasi-sweeps together), raise
    :class:`ConvergenceError` carrying `info`, or, with
    ``sweeps.on_nonconvergence == "warn"``, return the partial state (the
    public function then warns).

    Precision: float64/complex128 kernels on a device with fp64; single
    precision kernels when the device lacks fp64 and the caller's data are
    single precision (``sweeps.result_dtype`` float32/complex64);
    ``sweeps.single`` overrides.
    The blocked kernels handle double precision data, real (float64) and
    complex Hermitian (complex128, in the layout of the pointwise phase);
    single precision runs pointwise ("auto"), and asking for a blocked
    variant there is a ValueError.  "auto" and the default block width
    follow :func:`cljacobi.host.variants.choose_variant` (a rule per element
    type; the local memory of 16-byte complex elements decides which widths
    fit).
    """
    queue, max_sweeps, options = sweeps.queue, sweeps.max_sweeps, sweeps.options
    variant, block_width = sweeps.variant, sweeps.block_width
    info.strategy, info.rotation = options.strategy, options.rotation
    info.sort_diagonal = options.sort_diagonal
    single = _single_precision(queue, sweeps.result_dtype, sweeps.single)
    info.precision = "single" if single else "double"
    if single:
        if variant in ("bo", "fb"):
            raise ValueError(
                f"variant={variant!r} handles double precision data only (float64, "
                "complex128); single precision runs variant='pointwise' or 'auto'"
            )
        variant = "pointwise"
    element_bytes = COMPLEX_ELEMENT_BYTES if np.iscomplexobj(G) else REAL_ELEMENT_BYTES
    variant, block_width = choose_variant(queue.device, G.shape[1], variant, block_width,
                                          element_bytes=element_bytes)
    info.variant, info.block_width = variant, block_width
    info.device = queue.device.name.strip()
    layout = complex_layout(sweeps.layout, blocked=variant != "pointwise")
    driver = PointwiseHSVD(
        queue, accumulate_v=accumulate_v, layout=layout, single=single,
        strategy=options.strategy, rotation=options.rotation,
        sort_diagonal=options.sort_diagonal,
    )
    # One set of device buffers for both phases, bordered for the blocks.
    column_multiple = 2 if variant == "pointwise" else 2 * block_width
    if isinstance(G, _OnDevice):
        operands = G.operands(column_multiple, accumulate_v, split=layout == "split")
    else:
        operands = driver.upload(G, signs, column_multiple=column_multiple)
    if variant != "pointwise":
        blocked_driver = BlockedHSVD(
            queue, accumulate_v=accumulate_v, block_width=block_width, variant=variant
        )
        blocked = blocked_driver.run_operands(operands, max_sweeps=max_sweeps)
        info.blocked_sweeps = blocked.sweeps
        info.rotations_per_sweep = list(blocked.rotations_per_sweep)
        for phase, seconds in blocked.seconds.items():
            info.seconds[phase] = info.seconds.get(phase, 0.0) + seconds
        info.seconds["blocked_sweeps"] = blocked.seconds["sweeps"]
    state = driver.run_operands(
        operands, max_sweeps=max(max_sweeps - info.blocked_sweeps, 1), fetch=fetch)
    stats = state.stats
    info.sweeps = info.blocked_sweeps + stats.sweeps
    info.rotations_per_sweep += stats.rotations_per_sweep
    info.rotations = sum(info.rotations_per_sweep)
    info.converged = stats.converged and info.sweeps <= max_sweeps
    info.breakdown = stats.breakdown
    if stats.breakdown or stats.tiny_column:
        # What was not rotated is not orthogonal: no result to relative accuracy.
        raise np.linalg.LinAlgError(
            "a pair of columns of the factor could not be orthogonalized"
            f"{_where(index)}: "
            + ("two columns with opposite signs in J are parallel to working precision "
               "(|coth 2phi| = 1, no hyperbolic rotation exists; G is numerically rank "
               "deficient, and G J G^* has no eigendecomposition to relative accuracy "
               "through it)" if stats.breakdown else
               "a column's squared norm fell below the floating-point range while it was "
               "not orthogonal to another one")
        )
    info.work_group_size = stats.work_group_size
    for phase, seconds in stats.seconds.items():
        info.seconds[phase] = info.seconds.get(phase, 0.0) + seconds
    if not info.converged and sweeps.on_nonconvergence == "raise":
        raise ConvergenceError(
            f"the hyperbolic Jacobi method did not converge in {max_sweeps} sweeps"
            f"{_where(index)} (rotations per sweep: {info.rotations_per_sweep}); pass a "
            "larger max_sweeps, or on_nonconvergence='warn' for the partial result",
            info,
        )
    return state


def _require_finite(index: tuple[int, ...], *arrays: np.ndarray | None) -> None:
    """Never hand out NaN or inf: raise LinAlgError if a result is not finite."""
    for array in arrays:
        if array is not None and not np.isfinite(array).all():
            raise np.linalg.LinAlgError(
                f"the computation produced non-finite values{_where(index)}; the input is "
                "numerically rank deficient or outside the range cljacobi handles"
            )


def _warn_about(infos: list[SolveInfo], leading: tuple[int, ...]) -> None:
    """The warnings of a finished call, once per call, pointing at the caller's line."""

    def which(flags: list[bool]) -> str:
        if not leading:
            return ""
        hits = [np.unravel_index(k, leading) for k, flag in enumerate(flags) if flag]
        return f" (matrices {[tuple(int(i) for i in h) for h in hits]} of the stack)"

    unconverged = [not info.converged for info in infos]
    if any(unconverged):
        warnings.warn(
            "the hyperbolic Jacobi method did not converge in max_sweeps sweeps"
            f"{which(unconverged)}; the partial result is returned (info.converged is False)",
            ConvergenceWarning,
            stacklevel=4,  # public function <- _solve_all <- here
        )


def _eig_single(
    M: np.ndarray,
    *,
    index: tuple[int, ...],
    eigvals_only: bool,
    factorization: str,
    sweeps: _Sweeps,
) -> tuple[Any, SolveInfo]:
    """eig_indefinite of one validated float64/complex128 matrix: ``(result, info)``."""
    total_start = time.perf_counter()
    n = M.shape[0]
    info = _new_info()

    def finish(w: np.ndarray, U: np.ndarray | None):
        _require_finite(index, w, U)
        info.seconds["total"] = time.perf_counter() - total_start
        return (w if eigvals_only else EighResult(w, U)), info

    if n == 0:
        return finish(np.empty(0), np.empty((0, 0), dtype=M.dtype))
    symmetric, smallest, largest = symmetric_part(M, _name("M", index))
    # The shift also catches inf/NaN that check_finite=False let through.
    shift = matrix_shift_from_range(smallest, largest, n, _name("M", index))
    if n == 1:
        value = symmetric[0, 0].real
        info.rank = int(value != 0)
        info.positive = int(value > 0)
        return finish(np.array([value]), np.ones((1, 1), dtype=symmetric.dtype))

    on_device = factorization == "device" or (
        factorization == "auto"
        and bool(sweeps.queue.device.type & cl.device_type.GPU)
        and n >= AUTO_DEVICE_FACTORIZATION_MIN_ORDER
    )
    start = time.perf_counter()
    scaled = _ldexp(symmetric, shift, out=symmetric)
    # Definite M: Cholesky with diagonal pivoting (cheaper, same relative
    # accuracy); otherwise Bunch-Parlett on the host or the device.
    factor = definite_factorize(scaled)
    info.factorization = "cholesky"
    source = None
    if factor is None and on_device:
        # `scaled` is exactly Hermitian, so its conjugate transpose (for real
        # data a Fortran-ordered view, no copy) is the same matrix, in the
        # device's column-major layout.
        device_factor = factor_on_device(scaled.conj().T, sweeps.queue)
        info.factorization = "bunch-parlett-device"
        single = _single_precision(sweeps.queue, sweeps.result_dtype, sweeps.single)
        if device_factor.rank == n and not single:
            # Square G: nothing to shorten, so G stays on the device; the
            # power-of-two shift comes from its column maxima.
            maxima = column_max(sweeps.queue, device_factor.buffer, device_factor.ld, n,
                                device_factor.rank, device_factor.dtype)[device_factor.order]
            factor_exponent = factor_shift_from_maxima(
                maxima, n, f"the factor G of {_name('M', index)}")
            source = _OnDevice(device_factor, factor_exponent)
            signs, positive = device_factor.signs, device_factor.p
        else:
            factor = device_factor.to_host()
    elif factor is None:
        factor = j_factorize(scaled)
        info.factorization = "bunch-parlett"
    if source is None:
        signs, positive = factor.signs, factor.p
    rank = len(signs)
    info.rank = rank
    info.positive = int(positive)
    if rank == 0:
        info.seconds["factorization"] = time.perf_counter() - start
        return finish(np.zeros(n), np.eye(n, dtype=M.dtype))
    Q = None
    if source is None:
        Q, R = shorten(factor.G)
        # Center the squared column norms (the eigenvalue magnitudes) in float64's range.
        factor_exponent = factor_shift(R, f"the factor G of {_name('M', index)}")
        source = _ldexp(R, factor_exponent)
    info.seconds["factorization"] = time.perf_counter() - start

    # G stays on the device when only the eigenvalues are wanted, or when the
    # eigenvectors can be normalized and ordered there (full rank).
    g_on_device = isinstance(source, _OnDevice)
    state = _run_device(
        source, signs, sweeps=sweeps, accumulate_v=False, info=info, index=index,
        fetch=not (eigvals_only or g_on_device),
    )
    # 2^(2t) 2^s M = (2^t G) J (2^t G)^T: undo both shifts exactly.
    with np.errstate(over="ignore"):  # an eigenvalue beyond float64: _require_finite raises
        w = np.ldexp(state.signs * state.d, -(2 * factor_exponent + shift))
    if rank < n:
        w = np.concatenate([w, np.zeros(n - rank)])
    order = np.argsort(w, kind="stable")
    if eigvals_only:
        return finish(w[order], None)

    if g_on_device:  # rank == n and Q is None
        start = time.perf_counter()
        U = normalized_columns(sweeps.queue, state.operands, order)
        info.seconds["transfer"] += time.perf_counter() - start
        return finish(w[order], U)
    U = state.G / np.linalg.norm(state.G, axis=0)
    if Q is not None:
        U = Q @ U
    if rank < n:
        # Complete the orthonormal basis: the null space of M.
        complete, _ = np.linalg.qr(U, mode="complete")
        U = np.concatenate([U, complete[:, rank:]], axis=1)
    return finish(w[order], U[:, order])


def eig_indefinite(
    M: np.ndarray,
    *,
    eigvals_only: bool = False,
    check_finite: bool = True,
    overwrite_a: bool = False,
    strategy: str = "auto",
    rotation: int | None = None,
    sort_diagonal: bool = True,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    on_nonconvergence: str = "raise",
    variant: str = "auto",
    block_width: int | None = None,
    factorization: str = "auto",
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
    _layout: str | None = None,
    _single: bool | None = None,
):
    """Eigenvalues and eigenvectors of a real symmetric or complex Hermitian,
    possibly indefinite, matrix.

    Factors ``M = G J G^*`` by Bunch-Parlett complete pivoting (rank
    revealing, 2x2 pivots diagonalized; complex 2x2 pivots give a +/- pair),
    or, when M is positive or negative definite, by Cholesky with diagonal
    pivoting (``J = +-I``, only trigonometric rotations follow), shortens a
    tall G by QR, and
    orthogonalizes the columns of G by one-sided hyperbolic Jacobi rotations on
    an OpenCL device (Novaković & Singer 2011, Sect. 2 and 4).  The
    eigenvalues are ``lambda_i = j_i ||g_i||^2`` and the eigenvectors the
    normalized columns of the final G; small eigenvalues are as accurate as
    the data determines them (relative accuracy), unlike LAPACK's.

    Parameters
    ----------
    M : (..., n, n) array_like or pyopencl.array.Array
        Real symmetric or complex Hermitian matrix, or a stack of them over
        the leading dimensions.  Only the lower triangle is used, after
        checking that ``max|M - M^*| <= sqrt(eps) * max|M|`` (ValueError
        stating the largest asymmetry otherwise).  Integer and bool input is
        promoted to float64; float16/float32 (complex64) input is computed in
        float64 (complex128) when the device has fp64 and returned in single
        precision like numpy.  On a device without fp64, single precision
        input runs the float32/complex64 kernels: the factorization stays in
        float64 on the host, the Jacobi sweeps run with ``eps = 2^-24``, and
        the eigenvalues carry relative errors of order ``n eps_single
        cond(A_s)`` (``A_s`` the diagonally scaled factor), about 1e-5 for
        well-scaled problems of order 100 (``info.precision`` says which ran).
        Any memory layout (C, Fortran, strided views) is accepted.  A
        pyopencl array is copied to the host and the results come back as
        pyopencl arrays on its queue.
    eigvals_only : bool, optional
        Return only the eigenvalues.
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries.  If False, that scan is
        skipped; a non-finite entry is still noticed by the scaling (which
        reads ``max|M|``) and raises ``numpy.linalg.LinAlgError`` instead of
        giving a result.
    overwrite_a : bool, optional
        Permit `M` to be used as workspace (scipy's convention).  This version
        always factors a symmetrized copy, so `M` is left intact either way.
    strategy : {"auto", "mm", "me", "ring", "round-robin"}, optional
        Parallel pivot strategy of the pointwise sweeps (DESIGN.md, Appendix
        A; :mod:`cljacobi.strategies`): modified modulus (Novaković & Singer
        2011), Mantharam-Eberlein, the ring ordering of Zhou & Brent (1997,
        Sect. 4) or Brent-Luk round-robin.  ``"auto"`` picks the measured
        default (:data:`cljacobi.options.DEFAULTS`).  An unknown name is a
        ValueError that lists these.
    rotation : {1, 2, 3}, optional
        Rotation algorithm of Zhou & Brent (1997), Sect. 2: 1 plain; 2
        exchange the pair's packed-diagonal entries so that its first
        position receives the larger eigenvalue estimate, then rotate; 3
        Nash's rotation, same effect without the exchange.  Hyperbolic pairs
        rotate alike in all three.  None: the measured default.
    sort_diagonal : bool, optional
        Sort the packed diagonal ``(d, rho, j)`` before the first and after
        every sweep (Novaković & Singer 2011, Sect. 4; positive part
        descending, negative part ascending).  False turns this sort off.
    max_sweeps : int, optional
        Quasi-sweeps (``n`` parallel steps each) before the method counts as
        not converged.
    on_nonconvergence : {"raise", "warn"}, optional
        Without convergence in `max_sweeps`: ``"raise"``
        :class:`~cljacobi.ConvergenceError` (default), or ``"warn"``: issue a
        :class:`~cljacobi.ConvergenceWarning` and return the partial result
        (eigenpairs read off the not yet orthogonal factor,
        ``info.converged`` False).
    variant : {"auto", "pointwise", "bo", "fb"}, optional
        The pointwise GPUJACH1 kernel, or the blocked block-oriented ("bo",
        one inner sweep per block pair) or full-block ("fb", inner sweeps to
        convergence) kernels, which are followed by pointwise sweeps that
        decide convergence.  "auto" takes "bo" on GPUs for orders from
        ``cljacobi.host.variants.AUTO_BLOCKED_MIN_ORDER`` on, else pointwise.
        The blocked variants run real and complex Hermitian M in double
        precision; single precision runs pointwise ("bo" or "fb" there is a
        ValueError).
    block_width : int, optional
        Block width w of the blocked variants (pivot blocks 2w x 2w in local
        memory); ValueError naming the device limit if it does not fit.
        Complex elements take twice the local memory, so the default width
        for complex M is the widest of the same candidates that fits
        (``cljacobi.host.variants.AUTO_BLOCK_WIDTHS``; w = 16 on a device
        with 48 KiB).
    factorization : {"auto", "host", "device"}, optional
        Where the Bunch-Parlett factorization runs: numpy on the host, or the
        OpenCL kernels of ``bunch_parlett.cl.mako`` (same pivots, same rank
        test), for real and complex M.  "auto": on the device if it is a GPU
        and ``n >= 256``.  Definite M is factored by pivoted Cholesky on the
        host either way (``info.factorization``).
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the queue of a pyopencl array argument, else
        the device ``CLJACOBI_DEVICE`` names.  Calls from several threads may
        share one queue.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (for a stack: a list of
        them, one per matrix in C order of the leading indices).
    _layout : {"interleaved", "split"}, optional
        Private, for benchmarks: the device storage of complex data (default
        ``$CLJACOBI_COMPLEX_LAYOUT``, else the library default: interleaved
        when blocked sweeps run, split for pointwise-only runs).
    _single : bool, optional
        Private, for tests: force (True) or forbid (False) the single
        precision kernels; default: single only for float32/complex64 input
        on a device without fp64.

    Returns
    -------
    EighResult(eigenvalues, eigenvectors)
        Ascending eigenvalues ``(..., n)`` and orthonormal eigenvectors
        ``(..., n, n)`` (columns); only the eigenvalues with
        ``eigvals_only=True``.  With ``return_info=True``, the pair
        ``(result, info)``.

    Raises
    ------
    ValueError
        `M` not square, less than 2-D, not symmetric, or not finite; an
        unknown option value; nonzero entries or eigenvalue magnitudes that
        span more than float64 holds at once (about ``1e600``, see
        :mod:`cljacobi.scaling`).
    TypeError
        Unsupported dtype (strings, objects, longdouble) or `queue`.
    ConvergenceError
        No convergence within `max_sweeps` (a ``numpy.linalg.LinAlgError``),
        unless ``on_nonconvergence="warn"``.
    numpy.linalg.LinAlgError
        Non-finite input with ``check_finite=False``; a pair of columns of the
        factor that cannot be orthogonalized to relative accuracy (columns of
        opposite signs parallel to working precision: no hyperbolic rotation
        exists).
    DeviceCapabilityError, DeviceMemoryError
        The device lacks fp64, memory, work-group size or local memory:
        checked before the factorization and before any launch.

    Notes
    -----
    A singular M of rank r gives ``n - r`` eigenvalues that are exactly zero,
    with eigenvectors spanning the orthogonal complement of the others.
    0 x 0 and 1 x 1 matrices, and the zero matrix, are answered on the host
    without touching the device.  M is scaled by powers of two (exact) so that
    no squared norm or dot product overflows or underflows; see
    :mod:`cljacobi.scaling` for the range handled.
    """
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    on_nonconvergence = check_on_nonconvergence(on_nonconvergence)
    check_variant_options(variant, block_width)
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"factorization must be one of {FACTORIZATIONS}, not {factorization!r}")
    check_queue_argument(queue)
    host, array_queue = to_host(M, queue)
    A, result_dtype = as_float_matrix(
        host, "M", check_finite=check_finite, square=True, stacked=True
    )
    n = A.shape[-1]
    run_queue = None
    if n >= 2 and A.size:
        run_queue = _checked_queue(
            queue, array_queue, A, rows=n, columns=n, accumulate_v=False,
            result_dtype=result_dtype, single=_single,
        )

    sweeps = _Sweeps(
        run_queue, max_sweeps, on_nonconvergence, variant, block_width, _layout, result_dtype,
        _single, options,
    )

    def solve(index: tuple[int, ...], matrix: np.ndarray):
        return _eig_single(
            matrix, index=index, eigvals_only=eigvals_only, factorization=factorization,
            sweeps=sweeps,
        )

    # Shapes and dtypes of one result (zeros: allocated lazily, never filled).
    template = np.zeros(n) if eigvals_only else EighResult(np.zeros(n), np.zeros((n, n), A.dtype))
    result, info = _solve_all(A, solve, template, result_dtype)
    if is_device_array(M):
        result = to_device(result, array_queue or run_queue or resolve_queue(queue))
    return (result, info) if return_info else result


def _checked_queue(
    queue: cl.CommandQueue | cl.Context | None,
    array_queue: cl.CommandQueue | None,
    A: np.ndarray,
    *,
    rows: int,
    columns: int,
    accumulate_v: bool,
    result_dtype: np.dtype,
    single: bool | None,
) -> cl.CommandQueue:
    """The queue to run on (`queue`, else a device array's, else the default),
    after checking that the device can take a ``rows x columns`` factor of
    `A`'s element type: before the factorization and before any launch."""
    run_queue = resolve_queue(queue if queue is not None else array_queue)
    preflight(
        run_queue, rows=rows, columns=columns, accumulate_v=accumulate_v,
        element_bytes=A.dtype.itemsize,
        single=_single_precision(run_queue, result_dtype, single),
    )
    return run_queue


def _solve_all(A: np.ndarray, solve: Any, template: Any, result_dtype: np.dtype) -> tuple[Any, Any]:
    """`solve` each matrix of `A` (one, or a stack over the leading dimensions),
    warn once for the whole call, and cast the results to `result_dtype`'s precision.

    Returns ``(result, info)``; for a stack, `info` is a list (C order).
    """
    leading = A.shape[:-2]
    if leading:
        result, info = solve_stack(A, solve, template)
        infos = info
    else:
        result, info = solve((), A)
        infos = [info]
    _warn_about(infos, leading)
    return _cast(result, result_dtype), info


def _cast(result: Any, dtype: np.dtype) -> Any:
    """Floating arrays of `result` (an array or a tuple of them) in the precision of
    `dtype`: real arrays (eigenvalues, singular values) in its real type, complex
    arrays in `dtype`; signs stay int8.

    Raises LinAlgError if a value exceeds the range of `dtype` (float32 input
    whose eigenvalue is beyond 3.4e38): no inf is handed out.
    """
    if isinstance(result, np.ndarray):
        if result.dtype.kind not in "fc":
            return result
        target = dtype if result.dtype.kind == "c" else _real_dtype(dtype)
        with np.errstate(over="ignore"):
            cast = result.astype(target, copy=False)
        # Unchanged arrays were checked by _require_finite already.
        if cast is not result and not np.isfinite(cast).all():
            raise np.linalg.LinAlgError(
                f"a result exceeds the range of {dtype} (largest {np.finfo(dtype).max:.3g}); "
                "pass the input as float64 to get it"
            )
        return cast
    converted = [_cast(item, dtype) for item in result]
    return type(result)(*converted) if hasattr(result, "_fields") else tuple(converted)


def hsvd(
    G: np.ndarray,
    J: np.ndarray,
    *,
    compute_uv: bool = True,
    check_finite: bool = True,
    strategy: str = "auto",
    rotation: int | None = None,
    sort_diagonal: bool = True,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    on_nonconvergence: str = "raise",
    variant: str = "auto",
    block_width: int | None = None,
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
    _layout: str | None = None,
    _single: bool | None = None,
):
    """Hyperbolic singular value decomposition ``G = U diag(S) Vh``.

    One-sided hyperbolic Jacobi (Novaković & Singer 2011): the columns of G
    are orthogonalized by rotations that are J-orthogonal, accumulated in V
    (eq. (2.1)).  Then ``G diag(J) G^* = U diag(J S^2) U^*``.

    Parameters
    ----------
    G : (..., m, n) array_like or pyopencl.array.Array
        Real or complex, of full column rank (m >= n, no zero column), or a stack of
        such.  A tall G is shortened by QR first.  Dtypes, layouts and
        device arrays as in :func:`eig_indefinite`.
    J : (n,) or (..., n) array_like
        The signature: entries +1 or -1 (one for the whole stack, or one per
        matrix).
    compute_uv : bool, optional
        Compute U and Vh (V is accumulated on the device).  If False only
        ``(S, J)`` are returned.
    check_finite, strategy, rotation, sort_diagonal, max_sweeps, on_nonconvergence
    variant, block_width, queue, return_info, _layout, _single
        As in :func:`eig_indefinite`.

    Returns
    -------
    HSVDResult(U, S, Vh, J)
        U (m, n) with orthonormal columns; S (n,) **descending** hyperbolic
        singular values; Vh (n, n) with ``Vh @ diag(J) @ Vh.T = diag(J)``;
        J (n,) the input signature permuted to match S (int8).  Stacked over
        the leading dimensions of `G`.  With ``compute_uv=False``, the pair
        ``(S, J)``.  With ``return_info=True``, ``(result, info)``.

    Raises
    ------
    ValueError
        Bad shapes, ``m < n``, a zero column, J not +-1, non-finite input,
        column norms spanning more than float64 holds at once.
    numpy.linalg.LinAlgError
        G numerically rank deficient (a singular value came out zero, or two
        columns of opposite signs in J parallel to working precision, which no
        hyperbolic rotation orthogonalizes), or non-finite input with
        ``check_finite=False``;
        :class:`~cljacobi.ConvergenceError` as in :func:`eig_indefinite`.
    """
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    on_nonconvergence = check_on_nonconvergence(on_nonconvergence)
    check_queue_argument(queue)
    check_variant_options(variant, block_width)
    host, array_queue = to_host(G, queue)
    A, result_dtype = as_float_matrix(
        host, "G", check_finite=check_finite, square=False, stacked=True
    )
    m, n = A.shape[-2:]
    leading = A.shape[:-2]
    signs = np.asarray(to_host(J, array_queue or queue)[0])
    if signs.shape not in {(n,), leading + (n,)}:
        raise ValueError(
            f"J must have shape ({n},) to match G of shape {A.shape}"
            + (f" (or {leading + (n,)}, one per matrix)" if leading else "")
            + f", got {signs.shape}"
        )
    if signs.dtype.kind not in "biuf" or not np.all((signs == 1) | (signs == -1)):
        raise ValueError("J must contain only +1 and -1")
    signs = np.broadcast_to(signs, leading + (n,))
    if m < n:
        raise ValueError(
            f"G of shape {A.shape} cannot have full column rank: hsvd needs m >= n"
        )
    run_queue = None
    if n and A.size:
        run_queue = _checked_queue(
            queue, array_queue, A, rows=n, columns=n, accumulate_v=compute_uv,
            result_dtype=result_dtype, single=_single,
        )

    sweeps = _Sweeps(
        run_queue, max_sweeps, on_nonconvergence, variant, block_width, _layout, result_dtype,
        _single, options,
    )

    def solve(index: tuple[int, ...], matrix: np.ndarray):
        return _hsvd_single(
            matrix, signs[index], index=index, compute_uv=compute_uv, sweeps=sweeps
        )

    S0, J0 = np.zeros(n), np.ones(n, dtype=np.int8)
    template = (
        HSVDResult(np.zeros((m, n), A.dtype), S0, np.zeros((n, n), A.dtype), J0)
        if compute_uv else (S0, J0)
    )
    result, info = _solve_all(A, solve, template, result_dtype)
    if is_device_array(G):
        result = to_device(result, array_queue or run_queue or resolve_queue(queue))
    return (result, info) if return_info else result


def _hsvd_single(
    G: np.ndarray,
    signs: np.ndarray,
    *,
    index: tuple[int, ...],
    compute_uv: bool,
    sweeps: _Sweeps,
) -> tuple[Any, SolveInfo]:
    """hsvd of one validated float64/complex128 matrix: ``(result, info)``."""
    total_start = time.perf_counter()
    m, n = G.shape
    info = _new_info()
    info.rank = n
    # J sorted +1 first (stable); columns of G permuted alike.
    perm = np.argsort(-signs, kind="stable")
    signs_sorted = signs[perm].astype(np.int8)
    info.positive = int(np.count_nonzero(signs_sorted > 0))

    def finish(result):
        _require_finite(index, *result)
        info.seconds["total"] = time.perf_counter() - total_start
        return result, info

    if n == 0:
        empty = np.empty(0)
        if not compute_uv:
            return finish((empty, signs_sorted))
        return finish(HSVDResult(
            np.empty((m, 0), G.dtype), empty, np.empty((0, 0), G.dtype), signs_sorted
        ))

    start = time.perf_counter()
    # Center the squared column norms in float64's range (exact).
    exponent = factor_shift(G, _name("G", index))
    Q, R = shorten(_ldexp(G[:, perm], exponent))
    info.seconds["factorization"] = time.perf_counter() - start

    state = _run_device(
        R, signs_sorted, sweeps=sweeps, accumulate_v=compute_uv, info=info, index=index
    )
    sigma = np.linalg.norm(state.G, axis=0)
    if not np.all(sigma > 0):
        raise np.linalg.LinAlgError(
            f"G is numerically rank deficient{_where(index)}: a hyperbolic singular value "
            "came out zero"
        )
    order = np.argsort(-sigma, kind="stable")
    S = np.ldexp(sigma, -exponent)[order]
    J_out = signs_sorted[order]
    if not compute_uv:
        return finish((S, J_out))
    U = state.G / sigma
    if Q is not None:
        U = Q @ U
    # G_perm = G_final V^{-1} with V^{-1} = J V^* J (V^* J V = J), so
    # G_perm = U Sigma (J V^* J); undo the column permutation of G.
    Vh_sorted = (signs_sorted[:, None] * state.V.conj().T) * signs_sorted[None, :]
    Vh = np.empty_like(Vh_sorted)
    Vh[:, perm] = Vh_sorted
    return finish(HSVDResult(U[:, order], S, Vh[order], J_out))
