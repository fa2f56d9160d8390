"""Public solvers: the indefinite Hermitian eigenproblem and the hyperbolic SVD.

Both run the one-sided hyperbolic Jacobi method of Novaković & Singer,
"A GPU-based hyperbolic SVD algorithm", BIT 51 (2011) (GPUJACH1) on an
OpenCL device, on real or complex data.  ``eig_indefinite`` first factors
``M = G J G^*``: by Cholesky with diagonal pivoting when that proves M
definite with a margin, otherwise by Bunch-Parlett complete pivoting
(Slapničar 1992), on the host or on the device (see eig_indefinite's Notes).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from . import _solve
from ._results import EighResult, SolveInfo
from ._solve import (
    DEFAULT_MAX_SWEEPS,
    FACTORIZATIONS,
    Factored,
    OnDevice,
    SweepPlan,
    check_factorization,
    factors_on_device,
    ldexp,
    name_of,
    orthogonal_complement,
    single_precision,
    unit_columns,
)
from ._threads import any_nonzero, touched_empty_soon
from .factorization import definite_factorize, j_factorize
from .generalized import EigGeneralized
from .host.factorization import DeviceJFactor, factor_on_device, upload_for_factorization
from .host.operands import (
    HermitianUpload,
    column_max,
    enqueue_normalized_columns,
    normalized_columns,
)
from .host.pointwise import HSVDState
from .host.qr import pivoted_qr_on_device
from .hyperbolic_svd import hsvd
from .scaling import factor_shift, factor_shift_from_maxima, matrix_shift_from_range, unshift
from .validation import check_flag, nonfinite_error, require_finite, symmetric_part

__all__ = ["DEFAULT_MAX_SWEEPS", "FACTORIZATIONS", "eig_indefinite", "hsvd"]

#: Whether the eigenvectors of a factor on the device come down beside the
#: certified finishing sweeps (their columns normalized as the blocked sweeps
#: left them; the few the finishing sweeps change read again after them)
#: instead of after them.  The same bits either way; False for comparison.
EIGENVECTORS_BESIDE_FINISHING = True


def eig_indefinite(
    M: np.ndarray,
    B: np.ndarray | None = None,
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
    comm: Any = None,
    _layout: str | None = None,
    _single: bool | None = None,
):
    """Eigenvalues and eigenvectors of a real symmetric or complex Hermitian,
    possibly indefinite, matrix.

    Factors ``M = G J G^*`` by Bunch-Parlett complete pivoting (rank
    revealing, 2x2 pivots diagonalized; complex 2x2 pivots give a +/- pair),
    or, where the factorization runs on the host and Cholesky with diagonal
    pivoting proves M positive or negative definite with a margin (see
    Notes), by that (``J = +-I``, only trigonometric rotations follow), and
    orthogonalizes the columns of G
    (``n x r`` for M of rank r) by one-sided hyperbolic Jacobi rotations on
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
    B : (n, n) array_like, optional
        Hermitian positive definite: solve ``M x = lambda B x`` instead
        (``scipy.linalg.eigh(M, B)``'s problem; one matrix pair, numpy
        arrays).  ``M = G J G^*`` and ``B = L L^*`` (pivoted Cholesky) are
        factored on the host, and the implicit Hari-Zimmermann method of the
        GSVD runs on ``(G^*, L^*)`` with the J-weighted scalar product
        (pointwise kernel; :mod:`cljacobi.generalized`).  Eigenvalues
        ascending, eigenvectors B-orthonormal (``X^* B X = I``), as scipy
        returns them.  B not positive definite is a LinAlgError.
    eigvals_only : bool, optional
        Return only the eigenvalues.  This and every other flag take a bool,
        a numpy bool, or the integer 0 or 1, like numpy; anything else
        (``"yes"``, None) is a TypeError naming the option.
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries.  If False, that scan is
        skipped; a non-finite entry is still noticed by the scaling (which
        reads ``max|M|``) and raises ``numpy.linalg.LinAlgError`` instead of
        giving a result.
    overwrite_a : bool, optional
        Permit `M` to be used as workspace (scipy's convention).  This version
        always factors a symmetrized copy, so `M` is left intact either way.
    strategy : {"auto", "mm", "me", "ring", "round-robin"}, optional
        Parallel pivot strategy of the pointwise sweeps (docs/design.md, Appendix
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
    variant : {"auto", "pointwise", "bo", "offdiag", "fb", "stream", "batched"}, optional
        The pointwise GPUJACH1 kernel, or the blocked block-oriented ("bo",
        one inner sweep over all pairs of a block pair's 2w columns, the
        GSVD paper's; "offdiag", the parallel block-oriented algorithm of
        Novakovic & Singer 2011, Sect. 5: all pairs in the first outer step
        of a sweep, then only the w^2 pairs across the two blocks, an even
        `block_width` or 1), full-block ("fb", inner sweeps to
        convergence) or stream ("stream": the block transformation of
        Strumpen, Hoffmann & Agarwal's stream SVD, all rotations between the
        two blocks computed from the same Gram matrix and applied in a fixed
        order as one 2w x 2w transformation, w = `block_width` their R)
        kernels, which are followed by pointwise sweeps that
        decide convergence.  "auto" takes "offdiag" on GPUs for orders from
        ``cljacobi.host.variants.AUTO_BLOCKED_MIN_ORDER`` on, else pointwise;
        "auto" with a `block_width` is always "offdiag" of that width ("bo"
        for an odd width; on CPUs and at small orders too).
        "batched" solves a whole stack in one launch, each matrix in the
        local memory of one work-group (factorization, sweeps with one
        work-item per pivot pair, eigenvectors; README, "Stacks of small
        matrices"); "auto" takes it for stacks (``M.ndim > 2``) of orders
        2 to 128 (``cljacobi.host.batched.BATCHED_GLOBAL_ORDER_LIMIT``; in
        local memory up to ``cljacobi.host.batched.batched_order_limit``,
        real 72 and complex 52 on a device with 48 KiB, in global memory
        above).
        The blocked variants run real and complex Hermitian M in double
        precision; single precision runs pointwise (a blocked variant there
        is a ValueError).
    block_width : int, optional
        Block width w of the blocked variants (pivot blocks 2w x 2w in local
        memory); ValueError naming the device limit if it does not fit, and
        with ``variant="pointwise"``, which has no blocks.
        Complex elements take twice the local memory, so the default width
        for complex M is the widest of the same candidates that fits
        (``cljacobi.host.variants.AUTO_BLOCK_WIDTHS``; w = 16 on a device
        with 48 KiB).
    factorization : {"auto", "host", "device"}, optional
        Where the Bunch-Parlett factorization runs: numpy on the host, or the
        OpenCL kernels of ``bunch_parlett.cl.mako`` (same pivots, same rank
        test), for real and complex M, and with it the null-space
        complement of a singular M (by the QR kernels of ``qr.cl.mako``).
        "auto": on the device if it is a GPU and ``n >= 256``.  On the
        host an M that pivoted Cholesky proves definite (see Notes) is
        factored by it; on the device every M goes to complete pivoting,
        which takes Cholesky's pivots on a definite one
        (``info.factorization``).  With B, where both M and B are factored.
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the queue of a pyopencl array argument, else
        the device ``CLJACOBI_DEVICE`` names.  Calls from several threads may
        share one queue.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (for a stack: a list of
        them, one per matrix in C order of the leading indices).
    comm : mpi4py.MPI.Intracomm, optional
        Run the sweeps on all ranks of `comm`, one OpenCL device each
        (:mod:`cljacobi.distributed`; needs the ``mpi`` extra).  Call on
        every rank with the same options; the input is given on rank 0 (the
        others pass None) and the result is returned there (None on the
        others).  Stacks are solved by rank 0's device alone when they run
        in one launch.
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
        Unsupported dtype (strings, objects, longdouble) or `queue`; a flag
        that is not a bool, 0 or 1.
    ConvergenceError
        No convergence within `max_sweeps` (a ``numpy.linalg.LinAlgError``),
        unless ``on_nonconvergence="warn"``.
    numpy.linalg.LinAlgError
        Non-finite input with ``check_finite=False``; an eigenvalue beyond
        float64's range (above its largest number, or nonzero below its
        smallest subnormal); two columns of the factor with opposite signs in
        J parallel to working precision (no hyperbolic rotation exists, so no
        eigendecomposition to relative accuracy through it).
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

    Which factorization runs: where it runs on the host, pivoted Cholesky
    (LAPACK ``xPSTRF``, about half the work of Bunch-Parlett) is tried first
    and kept only if it shows M definite with a margin
    (:func:`cljacobi.factorization.definite_factorize`): the diagonal
    entries are nonzero and of one sign, all n steps complete with positive
    pivots, and every pivot ``l_kk^2`` exceeds the rounding-error bound of
    its entry, ``4 n eps (|m_kk| + ||l_(k,1:k-1)||^2)``, so definite graded
    matrices keep it however wide their scaling is.  Otherwise, and for
    every M where the factorization runs on the device (`factorization`),
    Bunch-Parlett complete pivoting decides the rank and the inertia,
    dropping the entries of the trailing matrix within their rounding-error
    bound ``4 n eps (|m_ij| + ||g_i|| ||g_j||)``; on a definite M it takes
    the pivots of ``xPSTRF`` (README, "Which factorization runs").
    """
    eigvals_only = check_flag(eigvals_only, "eigvals_only")
    check_finite = check_flag(check_finite, "check_finite")
    check_flag(overwrite_a, "overwrite_a")
    return_info = check_flag(return_info, "return_info")
    plan = _solve.sweep_plan(
        "eig_indefinite", strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal,
        max_sweeps=max_sweeps, on_nonconvergence=on_nonconvergence, variant=variant,
        block_width=block_width, queue=queue, layout=_layout, single=_single, batched=True)
    check_factorization(factorization)
    if B is not None:
        if comm is not None:
            raise ValueError("eig_indefinite(M, B) runs on one device: comm=None")
        if variant not in ("auto", "pointwise") or block_width is not None:  # not "batched"
            raise ValueError("eig_indefinite(M, B) runs the pointwise kernel only: variant "
                             "'auto' or 'pointwise', no block_width")
        pair_plan = _solve.SweepPlan(**{**plan.__dict__, "caller": "eig_indefinite(M, B)"})
        return _solve.solve(EigGeneralized(eigvals_only, factorization), (M, B), pair_plan,
                            queue=queue, check_finite=check_finite, return_info=return_info)
    method = _EigIndefinite(eigvals_only=eigvals_only, factorization=factorization)
    if comm is not None:  # the sweeps on all ranks (cljacobi.distributed)
        return _solve.solve_on(comm, method, M, plan, queue=queue,
                               check_finite=check_finite, return_info=return_info)
    return _solve.solve(method, M, plan, queue=queue, check_finite=check_finite,
                        return_info=return_info)


@dataclass(frozen=True)
class _EigIndefinite:
    """eig_indefinite's part of the pipeline: factor ``M = G J G^*``, read
    ``lambda_i = j_i ||g_i||^2`` and the normalized columns off the final G."""

    eigvals_only: bool
    factorization: str
    argument = "M"
    #: A stack of small matrices may run in one launch (cljacobi._batch).
    batched_problem = "eig"
    #: M's check for infs and NaNs is made in factor(): on the device as M
    #: is loaded (cjac_hermitian_stats), else on the host.
    checks_finite_on_upload = True
    square = True
    value_name = "an eigenvalue"

    def validate(self, A: np.ndarray, array_queue: cl.CommandQueue | None) -> None:
        pass

    def device_shape(self, A: np.ndarray) -> tuple[int, int, bool] | None:
        n = A.shape[-1]
        # 0 x 0, 1 x 1 and zero matrices are answered on the host.
        return (n, n, False) if n >= 2 and any_nonzero(A) else None

    def template(self, A: np.ndarray) -> Any:
        n = A.shape[-1]
        if self.eigvals_only:
            return np.zeros(n)
        return EighResult(np.zeros(n), np.zeros((n, n), A.dtype))

    def _result(self, w: np.ndarray, U: np.ndarray | None) -> Any:
        return w if self.eigvals_only else EighResult(w, U)

    def factor(self, M: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
               info: SolveInfo) -> Factored | Any:
        n = M.shape[0]
        if n == 0:
            return self._result(np.empty(0), np.empty((0, 0), dtype=M.dtype))
        # M goes to the device as it is where the device factors it: the
        # device checks it and loads its Hermitian part, scaled (no host
        # pass over M, no host copy).  Else the host builds the Hermitian part.
        upload = self._upload(M, index, plan)
        if plan.finite_left_to_factor:
            if upload is None:
                require_finite(M, name_of("M", index))
            elif not upload.finite:
                raise nonfinite_error(name_of("M", index))
        if upload is None:
            symmetric, smallest, largest = symmetric_part(M, name_of("M", index))
        else:
            smallest, largest = upload.smallest, upload.largest
        # The shift also catches inf/NaN that check_finite=False let through.
        shift = matrix_shift_from_range(smallest, largest, n, name_of("M", index))
        if n == 1:
            value = symmetric[0, 0].real
            info.rank = int(value != 0)
            info.positive = int(value > 0)
            return self._result(np.array([value]), np.ones((1, 1), dtype=symmetric.dtype))
        if largest == 0:  # the zero matrix, like 1 x 1 ones: answered without the device
            return self._result(np.zeros(n), np.eye(n, dtype=M.dtype))

        start = time.perf_counter() - (0.0 if upload is None else upload.seconds)
        if upload is None:
            scaled = ldexp(symmetric, shift, out=symmetric)
            source, signs, positive = self._factor_scaled(scaled, index, plan, info)
        else:
            device_factor = factor_on_device(upload, plan.queue, shift=shift)
            source, signs, positive = self._device_factor(device_factor, index, plan, info)
        info.rank, info.positive = len(signs), int(positive)
        kept = {"n": n, "dtype": M.dtype, "shift": shift}
        if len(signs) == 0:
            info.seconds["factorization"] = time.perf_counter() - start
            return self._result(np.zeros(n), np.eye(n, dtype=M.dtype))
        if not isinstance(source, OnDevice):
            # A tall G (singular M) is swept as it is: the sweeps depend on
            # G^* G only, so they are those of a QR-shortened R, without the
            # QR; the columns of a factor from complete pivoting carry its
            # scale, and the rotations treat every row alike (no row grading
            # is lost).  Center the squared column norms (the eigenvalue
            # magnitudes) in float64's range.
            exponent = factor_shift(source, f"the factor G of {name_of('M', index)}")
            source = ldexp(source, exponent)
        else:
            exponent = source.exponent
        kept["exponent"] = exponent
        info.seconds["factorization"] = time.perf_counter() - start
        # A factor on the device stays there: its eigenvectors are normalized
        # there; so does a host factor when only the eigenvalues are wanted.
        on_device = isinstance(source, OnDevice)
        on_settled = None
        if on_device and not self.eigvals_only:
            # The array the eigenvectors come down into, its pages mapped by
            # a host thread while the device sweeps (a download into fresh
            # memory waits for its page faults).
            kept["eigenvectors"] = touched_empty_soon((len(signs), n), M.dtype)
            if len(signs) < n:  # and the whole basis, the null space's columns with them
                kept["basis"] = touched_empty_soon((n, n), M.dtype)
            if EIGENVECTORS_BESIDE_FINISHING:
                on_settled = functools.partial(self._eigenvectors_soon, kept, index, plan)
        return Factored(source, signs, fetch=not (self.eigvals_only or on_device), kept=kept,
                        on_settled=on_settled)

    def _eigenvalues(self, d: np.ndarray, signs: np.ndarray, kept: dict[str, Any],
                     index: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(w, order, columns)``: the eigenvalues by column of G (zeros
        appended for a singular M), the order that sorts them, and the
        columns of G the eigenvectors come down from, in that order (all of
        them, by column, for a singular M)."""
        n, rank = kept["n"], len(signs)
        # 2^(2t) 2^s M = (2^t G) J (2^t G)^T: undo both shifts exactly.
        w = unshift(signs * d, 2 * kept["exponent"] + kept["shift"],
                    f"an eigenvalue of {name_of('M', index)}")
        if rank < n:
            w = np.concatenate([w, np.zeros(n - rank)])
        order = np.argsort(w, kind="stable")
        return w, order, order if rank == n else np.arange(rank)

    def _eigenvectors_soon(self, kept: dict[str, Any], index: tuple[int, ...], plan: SweepPlan,
                           d: np.ndarray, signs: np.ndarray, operands: Any
                           ) -> Callable[[], None] | None:
        """The eigenvectors of the factor as the blocked sweeps left it,
        normalized on the device now and brought down beside the certified
        finishing sweeps (``Factored.on_settled``; the download starts when
        the first certificate's kernels are enqueued, so that the host's
        copies do not slow its launches): those sweeps rotate few pairs or
        none, so :meth:`extract` then reads again only the columns they
        changed, or that moved in the order."""
        try:
            _, _, columns = self._eigenvalues(d, signs, kept, index)
        except np.linalg.LinAlgError:  # an eigenvalue beyond float64: extract says so
            return None
        normalized = enqueue_normalized_columns(plan.queue, operands, columns)

        def download() -> None:
            kept["early"] = (columns, normalized.read_soon(plan.queue, kept["eigenvectors"]))

        return download

    def _eigenvectors(self, state: HSVDState, kept: dict[str, Any], columns: np.ndarray,
                      plan: SweepPlan) -> tuple[np.ndarray, bool]:
        """The normalized columns `columns` of the final G (m x len(columns))
        and whether they are all finite: those that came down beside the
        finishing sweeps (:meth:`_eigenvectors_soon`), the columns those
        sweeps changed and the positions whose column changed read again;
        else all of them now."""
        early = kept.pop("early", None)
        if early is not None:
            early_columns, download = early
            U, finite = download.result()  # it fills kept["eigenvectors"]: wait for it
            if state.unsettled_columns is not None:
                stale = np.flatnonzero((columns != early_columns)
                                       | np.isin(columns, state.unsettled_columns))
                if len(stale):
                    fresh = normalized_columns(plan.queue, state.operands, columns[stale])
                    U[:, stale] = fresh.vectors
                    finite = finite and fresh.finite
                return U, finite
        return normalized_columns(plan.queue, state.operands, columns,
                                  out=kept["eigenvectors"].result())

    def _upload(self, M: np.ndarray, index: tuple[int, ...], plan: SweepPlan
                ) -> HermitianUpload | None:
        """M on the device, checked there (:func:`upload_for_factorization`),
        where the device factors it by Bunch-Parlett: a double precision M on
        a device :func:`factors_on_device` takes, definite or not.  None
        otherwise: the host builds the Hermitian part."""
        n = M.shape[0]
        if (plan.queue is None or n < 2 or M.dtype not in (np.float64, np.complex128)
                or not factors_on_device(self.factorization, plan.queue.device, n)):
            return None
        return upload_for_factorization(M, plan.queue, name_of("M", index))

    def _factor_scaled(self, scaled: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
                       info: SolveInfo) -> tuple[np.ndarray | OnDevice, np.ndarray, int]:
        """``(G, signs, p)`` of the scaled M: G on the host, or left on the device."""
        n = scaled.shape[0]
        # "auto": on a GPU with fp64 (single precision sweeps on a GPU without
        # fp64 get a host factor).  Definite or not: on a definite M complete
        # pivoting takes xPSTRF's pivots (the largest |s_ij| of a definite
        # Schur complement is on its diagonal, so every pivot is 1x1 at the
        # largest diagonal entry), and on a GPU that beats the host's Cholesky
        # and its passes over M (bench/README.md, "Definite matrices on the
        # device").
        if factors_on_device(self.factorization, plan.queue.device, n):
            # `scaled` is exactly Hermitian: its rows go to the device as the
            # conjugates of its columns (no transposed copy).
            device_factor = factor_on_device(scaled, plan.queue, exactly_hermitian=True)
            return self._device_factor(device_factor, index, plan, info)
        # On the host, definite M: Cholesky with diagonal pivoting (half the
        # work, the same relative accuracy); otherwise Bunch-Parlett.
        factor = definite_factorize(scaled)
        if factor is not None:
            info.factorization = "cholesky"
        else:
            factor = j_factorize(scaled)
            info.factorization = "bunch-parlett"
        return factor.G, factor.signs, factor.p

    def _device_factor(self, device_factor: DeviceJFactor, index: tuple[int, ...],
                       plan: SweepPlan, info: SolveInfo
                       ) -> tuple[np.ndarray | OnDevice, np.ndarray, int]:
        """``(G, signs, p)`` of a device factorization: G left on the device
        (double precision sweeps), else brought to the host."""
        info.factorization = "bunch-parlett-device"
        if not single_precision(plan.queue, plan.result_dtype, plan.single):
            # G (n x rank) stays on the device; the power-of-two shift
            # comes from its column maxima.
            n = device_factor.n
            maxima = column_max(plan.queue, device_factor.buffer, device_factor.ld, n,
                                device_factor.rank, device_factor.dtype)
            exponent = factor_shift_from_maxima(
                maxima[device_factor.order], n, f"the factor G of {name_of('M', index)}")
            return OnDevice(device_factor, exponent), device_factor.signs, device_factor.p
        factor = device_factor.to_host()
        return factor.G, factor.signs, factor.p

    def extract(self, state: HSVDState, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        kept = factored.kept
        n, rank = kept["n"], len(factored.signs)
        w, order, columns = self._eigenvalues(state.d, state.signs, kept, index)
        if self.eigvals_only:
            return w[order]
        if isinstance(factored.source, OnDevice):
            start = time.perf_counter()
            U, finite = self._eigenvectors(state, kept, columns, plan)
            info.seconds["transfer"] += time.perf_counter() - start
            if rank == n:
                if finite:  # tested on the device as it was written
                    factored.finite_results.append(U)
                return EighResult(w[order], U)
            # The zero eigenvalues appended last sort into one run, in their
            # order (a stable sort keeps equal keys in order, and any other
            # key equal to 0 has a smaller index): the null space's columns
            # go there as they come from the device, by columns, and U's
            # columns around them, each a contiguous copy.
            zeros = n - rank
            start = int(np.flatnonzero(order == rank)[0])
            basis = kept["basis"].result()  # row p: the eigenvector at position p
            pivoted_qr_on_device(U, plan.queue).q_times(
                np.zeros((rank, 0), U.dtype), np.arange(0), zeros, by_columns=True,
                out=basis[start:start + zeros])
            np.take(U.T, order[:start], axis=0, out=basis[:start], mode="clip")
            np.take(U.T, order[start + zeros:], axis=0, out=basis[start + zeros:], mode="clip")
            return EighResult(w[order], basis.T)
        else:
            norms = np.linalg.norm(state.G, axis=0)
            if rank == n or not np.all(norms):
                U = unit_columns(state.G, norms, None, n)
                return EighResult(w[order], U[:, order])
            U = state.G / norms
        # For rank < n the basis is completed by the null space of M, the
        # orthogonal complement of the eigenvectors of the nonzero eigenvalues.
        if factors_on_device(self.factorization, plan.queue.device, n):
            # Q's trailing columns from a QR of U on the device (the reflectors
            # applied to [0; I]).
            null_space = pivoted_qr_on_device(U, plan.queue).q_times(
                np.zeros((rank, 0), U.dtype), np.arange(0), n - rank)
        else:
            null_space = orthogonal_complement(U, n - rank)
        position = np.empty(n, dtype=np.intp)
        position[order] = np.arange(n)
        eigenvectors = np.empty((n, n), dtype=np.result_type(U, null_space), order="F")
        eigenvectors[:, position[:rank]] = U
        eigenvectors[:, position[rank:]] = null_space
        return EighResult(w[order], eigenvectors)
