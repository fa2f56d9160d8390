"""The singular value decomposition by one-sided Jacobi with ``J = I``.

With every sign in ``J`` equal to +1 the hyperbolic method of Novaković &
Singer (BIT 51, 2011) is Hestenes' one-sided Jacobi SVD: the columns of a
factor are orthogonalized by plane rotations only (their eq. (2.4)), the
singular values are the final column norms, the left singular vectors the
normalized columns and the right ones the accumulated rotations.  The same
pointwise kernels and driver as :func:`cljacobi.eig_indefinite` run it, for
real and complex matrices.

The sweeps run on a preconditioned factor, as in LAPACK's ``xGEJSV``
(Drmač & Veselić 2008, parts I and II): ``B = A`` (or ``A^*`` when A is
wide, so that ``B`` is ``m x n`` with ``m >= n``) is factored
``B[:, p] = Q R`` by Householder QR with its rows sorted by decreasing
max-norm and its columns pivoted (LAPACK ``xGEQP3`` on the host,
:func:`cljacobi.shortening.pivoted_reflectors`, or the kernels of
``templates/qr.cl.mako`` on the device, :func:`cljacobi.host.qr.pivoted_qr_on_device`),
and the one-sided Jacobi method runs on ``X = R^*``.  Column pivoting makes
``R`` row-graded, so the columns of ``R^*`` are graded like the singular
values and nearly orthogonal: the sweeps converge about as fast on graded
singular values as on a Gaussian matrix (``bench/bench_svd_sweeps.py``),
where Jacobi on ``A`` itself needs 2-4 times as many.  Then
``R = V_X diag(sigma) U_X^*`` gives ``A``'s left singular vectors
``Q V_X`` from the accumulated rotations (on the device the reflectors
applied to ``V_X``, Q never formed; on the host Q formed by LAPACK
``xORGQR`` and a product) and the right ones from the normalized columns.

Accuracy: singular values of a column-scaled ``A = B D`` get relative errors
of order ``eps cond(B)`` whatever ``D`` is (Demmel & Veselić 1992, Sect. 4;
the pivoted QR keeps it, Drmač & Veselić 2008); the row sorting keeps
row-graded ``A = D B`` accurate too and makes the result independent of the
order of the rows.  ``B`` is scaled by an exact power of two first, as
:func:`cljacobi.hsvd` does (:func:`cljacobi.scaling.factor_shift`), so no
squared column norm overflows or underflows.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl

from . import _solve
from ._results import SolveInfo
from ._solve import (
    DEFAULT_MAX_SWEEPS,
    Factored,
    OnDevice,
    SweepPlan,
    check_factorization,
    factors_on_device,
    ldexp,
    name_of,
    unit_columns,
)
from ._threads import any_nonzero, in_row_blocks, peaks
from .host.factorization import DeviceJFactor
from .host.operands import column_max, download, normalized_columns
from .host.pointwise import HSVDState
from .host.qr import DeviceQR, pivoted_qr_on_device
from .scaling import factor_shift, factor_shift_from_maxima, unshift
from .shortening import pivoted_reflectors, rows_by_peak
from .validation import check_flag

__all__ = ["SVDResult", "svd"]


class SVDResult(NamedTuple):
    """Singular value decomposition ``A = U @ diag(S) @ Vh``, as :func:`numpy.linalg.svd`.

    Attributes
    ----------
    U : ndarray, shape (m, k) or (m, m)
        Orthonormal (unitary) columns, ``k = min(m, n)``.
    S : ndarray, shape (k,)
        Singular values, descending, real.
    Vh : ndarray, shape (k, n) or (n, n)
        Orthonormal rows.
    """

    U: np.ndarray
    S: np.ndarray
    Vh: np.ndarray


def svd(
    A: np.ndarray,
    full_matrices: bool = False,
    compute_uv: bool = True,
    *,
    check_finite: bool = True,
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
    """Singular value decomposition by one-sided Jacobi rotations on an OpenCL device.

    Mirrors :func:`numpy.linalg.svd`: ``A = U @
    diag(S) @ Vh`` with ``S`` descending, and `full_matrices`, `compute_uv`
    may be given by position as there (``svd(A, False, False)``); unlike
    numpy, `full_matrices` defaults to False.  Hestenes' one-sided Jacobi method
    (the hyperbolic method of Novaković & Singer 2011 with ``J = I``, only
    the trigonometric rotations of their eq. (2.4)) runs on ``R^*`` from a
    row-sorted, column-pivoted QR factorization ``B P = Q R`` of ``B = A``
    (``A^*`` when ``m < n``), the preconditioning of LAPACK's ``xGEJSV``.
    V is accumulated on the device only when ``compute_uv=True``.

    Parameters
    ----------
    A : (..., m, n) array_like or pyopencl.array.Array
        Real or complex; a stack over the leading dimensions is stacked like
        numpy (``info`` is then a list), with the sweeps of the whole stack
        in one launch (``variant="batched"``, below).
        A pyopencl array is copied to the host and the results come back as
        pyopencl arrays on its queue.  Integer and bool input is computed as float64,
        float32 (complex64) in float64 (complex128) and returned in single
        precision, like numpy; on a device without fp64 single precision
        input runs single precision kernels (relative errors of the singular
        values of order ``n eps_single cond(B)`` for ``A = B D``).
    full_matrices : bool, optional
        Return ``U`` (m, m) and ``Vh`` (n, n), completed with orthonormal
        bases of the complements like numpy; default ``(m, k)`` and ``(k, n)``
        with ``k = min(m, n)``.  Like every flag of cljacobi, a bool, a numpy
        bool, or the integer 0 or 1 (anything else is a TypeError).
    compute_uv : bool, optional
        Compute ``U`` and ``Vh``; if False only ``S`` is returned.
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries.
    strategy, rotation, sort_diagonal
        Pivot strategy, rotation algorithm and packed-diagonal sort, as in
        :func:`cljacobi.eig_indefinite`.
    max_sweeps : int, optional
        Sweeps before :class:`~cljacobi.ConvergenceError`.
    on_nonconvergence, block_width, comm
        As in :func:`cljacobi.eig_indefinite`.
    variant : {"auto", "pointwise", "bo", "offdiag", "fb", "stream", "batched"}, optional
        As in :func:`cljacobi.eig_indefinite`; "batched" factors every
        matrix of a stack by the same QR on the device (one launch), then
        sweeps all the ``R^*`` in one launch, each with its V in the local
        memory of one work-group, for ``min(m, n)`` from 2 up to
        ``cljacobi.host.batched.batched_order_limit(device, complex_,
        compute_uv, "svd")`` (real 52 and complex 36 on a device with 48
        KiB), in a slot of global memory above it up to
        ``cljacobi.host.batched.BATCHED_GLOBAL_ORDER_LIMIT`` (128); "auto"
        takes it for such stacks (``A.ndim > 2``).
    factorization : {"auto", "host", "device"}, optional
        Where the row-sorted, column-pivoted QR runs: LAPACK ``xGEQP3`` on
        the host, or the kernels of ``qr.cl.mako`` on the device (the same
        reflectors, but the column norms recomputed at every step where
        ``xGEQP3`` downdates them, so near ties may pivot otherwise).
        "auto": on the device if it is a GPU with fp64 and
        ``min(m, n) >= 256``.  A stack run by ``variant="batched"`` is
        factored by its own kernel on the device, which "host" rules out.
        Q is applied where the QR ran (``info.factorization``).
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the device ``CLJACOBI_DEVICE`` names.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (``info.rank`` is the
        number of nonzero singular values; ``info.factorization`` is
        ``"qr"`` or ``"qr-device"``: the sweeps ran on ``R^*`` of a QR on
        the host or the device; ``info.sweeps`` counts them).
    _layout : {"interleaved", "split"}, optional
        Private, for benchmarks: device storage of complex data.
    _single : bool, optional
        Private, for tests: force or forbid the single precision kernels
        (default: only for single precision input on a device without fp64).

    Returns
    -------
    SVDResult(U, S, Vh), or S
        ``S`` alone with ``compute_uv=False``; ``(result, info)`` with
        ``return_info=True``.

    Raises
    ------
    ValueError
        `A` less than 2-D or not finite; an unknown option value.
    TypeError
        Unsupported dtype, or a flag that is not a bool, 0 or 1.
    ConvergenceError
        No convergence within `max_sweeps` (a ``numpy.linalg.LinAlgError``).
    numpy.linalg.LinAlgError
        The column norms of ``B`` (or of ``R^*``) span more than float64
        holds at once, about ``2^1000`` (``1e300``): their squares would
        overflow or underflow.  The message gives both magnitudes.

    Notes
    -----
    Singular values of a column-scaled ``A = B D`` are computed with relative
    errors of order ``eps cond(B)`` (Demmel & Veselić 1992, Theorem 4.1),
    so tiny singular values of graded matrices are accurate where the
    bidiagonalization-based LAPACK ``xGESDD`` loses them; the row sorting
    of the QR does the same for row-graded ``A = D B`` (``xGEJSV`` with
    ``JOBA = 'F'``), and the result does not depend on the order of A's
    rows.  Nonzero singular values from about ``2^-1074`` to ``2^1024``
    come back as long as no two are more than about ``2^1000`` apart (an
    exact power-of-two scaling centers them, :mod:`cljacobi.scaling`; below
    ``2^-1022`` they are subnormal, to an absolute ``2^-1075``).  Exactly
    zero singular values get left (or right) singular vectors completing an
    orthonormal basis.

    References
    ----------
    .. [1] V. Novaković and S. Singer, BIT Numer. Math. 51 (2011), Sect. 2, 4.
    .. [2] J. Demmel and K. Veselić, "Jacobi's method is more accurate than
       QR", SIAM J. Matrix Anal. Appl. 13(4), 1204-1245 (1992).
    .. [3] Z. Drmač and K. Veselić, "New fast and accurate Jacobi SVD
       algorithm I", SIAM J. Matrix Anal. Appl. 29(4), 1322-1342 (2008);
       "... II", ibid., 1343-1362: the preconditioning by QR with column
       pivoting and the Jacobi sweeps on ``R^T``.
    .. [4] A. J. Cox and N. J. Higham, "Stability of Householder QR
       factorization for weighted least squares problems" (1998): row
       sorting with column pivoting makes Householder QR row-wise stable.
    """
    full_matrices = check_flag(full_matrices, "full_matrices")
    compute_uv = check_flag(compute_uv, "compute_uv")
    check_finite = check_flag(check_finite, "check_finite")
    return_info = check_flag(return_info, "return_info")
    check_factorization(factorization)
    plan = _solve.sweep_plan(
        "svd", strategy=strategy, rotation=rotation, sort_diagonal=sort_diagonal,
        max_sweeps=max_sweeps, on_nonconvergence=on_nonconvergence, variant=variant,
        block_width=block_width, queue=queue, layout=_layout, single=_single, batched=True)
    method = _SVD(full_matrices=full_matrices, compute_uv=compute_uv,
                  factorization=factorization)
    if comm is not None:  # the sweeps on all ranks (cljacobi.distributed)
        return _solve.solve_on(comm, method, A, plan, queue=queue,
                               check_finite=check_finite, return_info=return_info)
    return _solve.solve(method, A, plan, queue=queue, check_finite=check_finite,
                        return_info=return_info)


@dataclass(frozen=True)
class _SVD:
    """svd's part of the pipeline: the row-sorted, column-pivoted QR of A (or
    A^*) and the sweeps on ``R^*`` (``J = I``), then U, S and Vh."""

    full_matrices: bool
    compute_uv: bool
    factorization: str = "auto"
    argument = "A"
    #: A stack may run in one launch, after the QR of every matrix (cljacobi._batch).
    batched_problem = "svd"
    square = False
    value_name = "a singular value"

    def validate(self, A: np.ndarray, array_queue: cl.CommandQueue | None) -> None:
        pass

    def device_shape(self, A: np.ndarray) -> tuple[int, int, bool] | None:
        m, n = A.shape[-2:]
        k = min(m, n)
        # 1 x 1, empty and zero matrices are answered on the host; the sweeps run
        # on R^*, k x k.
        return (k, k, self.compute_uv) if k and (m, n) != (1, 1) and any_nonzero(A) else None

    def template(self, A: np.ndarray) -> Any:
        m, n = A.shape[-2:]
        k = min(m, n)
        S0 = np.zeros(k)
        if not self.compute_uv:
            return S0
        return SVDResult(
            np.zeros((m, m if self.full_matrices else k), A.dtype), S0,
            np.zeros((n if self.full_matrices else k, n), A.dtype),
        )

    def _result(self, U: np.ndarray | None, S: np.ndarray, Vh: np.ndarray | None) -> Any:
        return SVDResult(U, S, Vh) if self.compute_uv else S

    def factor(self, A: np.ndarray, index: tuple[int, ...], plan: SweepPlan,
               info: SolveInfo) -> Factored | Any:
        m, n = A.shape
        k = min(m, n)
        full_matrices, compute_uv = self.full_matrices, self.compute_uv
        if k == 0 or not any_nonzero(A):
            info.rank = 0
            return self._result(np.eye(m, m if full_matrices else k, dtype=A.dtype),
                                np.zeros(k), np.eye(n if full_matrices else k, n, dtype=A.dtype))

        # Work on B (mb x nb, mb >= nb): A itself or A^*.
        transposed = m < n
        B = A.conj().T if transposed else A
        name = name_of("A", index)
        b_name = f"{name}^*" if transposed else name

        start = time.perf_counter()
        x_name = f"the triangular factor of {b_name}"
        signs = np.ones(B.shape[1], dtype=np.int8)
        if (m, n) != (1, 1) and factors_on_device(self.factorization, plan.queue.device,
                                                  B.shape[1]):
            source, qr, exponent = _factor_on_device(B, b_name, x_name, plan.queue)
            info.factorization = "qr-device"
            info.seconds["factorization"] = time.perf_counter() - start
            # G and V stay on the device for the extraction.
            return Factored(source, signs, accumulate_v=compute_uv, fetch=False,
                            kept={"qr": qr, "exponent": exponent, "transposed": transposed,
                                  "shape": B.shape})
        # Center the column norms in float64's range (an exact power of two, as hsvd
        # does; zero columns stay zero).
        exponent, rows = _shift_and_row_order(B, b_name)
        B = ldexp(B, exponent)
        if m == n == 1:  # A = (a / |a|) |a| 1, no rotation: answered on the host
            sigma = np.abs(B[0])
            info.rank = info.positive = 1
            return self._result(B / sigma, unshift(sigma, exponent, f"a singular value of {name}"),
                                np.ones((1, 1), dtype=A.dtype))
        # B[rows][:, columns] = Q R, Q kept as its reflectors.
        qr = pivoted_reflectors(B, rows)
        info.factorization = "qr"
        # The sweeps run on X = R^*, whose columns (the rows of R) are centered too.
        X = qr.r_adjoint()
        x_exponent = factor_shift(X, x_name, zero_columns=True)
        X = ldexp(X, x_exponent)
        info.seconds["factorization"] = time.perf_counter() - start
        return Factored(X, signs, accumulate_v=compute_uv,
                        kept={"qr": qr, "exponent": exponent + x_exponent,
                              "transposed": transposed, "shape": B.shape})

    def extract(self, state: HSVDState, factored: Factored, index: tuple[int, ...],
                plan: SweepPlan, info: SolveInfo) -> Any:
        kept = factored.kept
        qr, (mb, nb) = kept["qr"], kept["shape"]
        info.positive = nb
        operands = state.operands  # G and V left on the device (the device QR's path)
        # The final column norms: on the host, or the sweeps' squared norms.
        sigma = np.linalg.norm(state.G, axis=0) if operands is None else np.sqrt(state.d)
        order = np.argsort(-sigma, kind="stable")
        sigma = sigma[order]
        S = unshift(sigma, kept["exponent"], f"a singular value of {name_of('A', index)}")
        info.rank = int(np.count_nonzero(sigma > 0))
        if not self.compute_uv:
            return S
        # X V_x = U_x diag(sigma) with V_x unitary: R = V_x diag(sigma) U_x^*, so
        # B[rows][:, columns] = (Q V_x) diag(sigma) U_x^*; with full_matrices
        # Q's trailing columns complete U_B.
        columns = mb if self.full_matrices else nb
        if operands is not None and (operands.split or not np.all(sigma > 0)):
            # Zero singular values (their vectors completed) or split complex
            # storage: G and V come to the host.
            start = time.perf_counter()
            G, V = download(plan.queue, operands)
            info.seconds["transfer"] += time.perf_counter() - start
            state, operands = state._replace(G=G, V=V), None
        if operands is None:
            U_B = qr.q_times(state.V, order, columns)
            V_B_adjoint = _right_vectors_adjoint(state.G, sigma, order, qr.columns, nb)
        else:
            # U_x normalized on the device (its download a transfer, as
            # eig_indefinite counts it), then Q applied to V where it is, in a
            # thread, while the host gathers V_B^* from U_x.
            start = time.perf_counter()
            U_x = normalized_columns(plan.queue, operands, order).vectors
            info.seconds["transfer"] += time.perf_counter() - start
            with ThreadPoolExecutor(max_workers=1) as applier:
                applied = applier.submit(qr.q_times_buffer, operands.v, operands.ldv, order,
                                         columns)
                V_B_adjoint = _rows_gathered(U_x.T, np.argsort(qr.columns))
            U_B = applied.result()
        if kept["transposed"]:
            # A = B^* = V_B diag(S) U_B^*.
            return SVDResult(V_B_adjoint.conj().T, S, U_B.conj().T)
        return SVDResult(U_B, S, V_B_adjoint)


def _factor_on_device(B: np.ndarray, b_name: str, x_name: str, queue: cl.CommandQueue
                      ) -> tuple[OnDevice, DeviceQR, int]:
    """The host path's QR and ``X = R^*`` with the data on the device: B's
    shift and row order from :func:`_shift_and_row_order`, the shift applied
    as B is loaded, and X left on the device for the sweeps, centered by the
    shift its column maxima give (zero columns allowed, as on the host).
    Returns the sweeps' source, the QR, and the two shifts' sum."""
    qr = pivoted_qr_on_device(B, queue, scaling=lambda: _shift_and_row_order(B, b_name))
    exponent = qr.exponent
    n = B.shape[1]
    X = qr.r_adjoint_buffer()
    maxima = column_max(queue, X, n, n, n, qr.dtype)
    x_exponent = factor_shift_from_maxima(maxima[maxima != 0], n, x_name)
    factor = DeviceJFactor(queue, X, n, n, np.arange(n, dtype=np.int32),
                           np.ones(n, dtype=np.int8), n, qr.dtype)
    return OnDevice(factor, x_exponent), qr, exponent + x_exponent


def _shift_and_row_order(B: np.ndarray, b_name: str) -> tuple[int, np.ndarray]:
    """The power of two that centers B's column norms
    (:func:`cljacobi.scaling.factor_shift`, zero columns allowed) and the
    row order of the shifted B (:func:`cljacobi.shortening.sort_rows`), from
    one threaded pass over ``|B|`` (maxima are exact, and scaling by a power
    of two rounds monotonically, so both are those functions' results)."""
    row_peaks, column_peaks = peaks(B)
    exponent = factor_shift_from_maxima(column_peaks[column_peaks != 0], B.shape[0], b_name)
    return exponent, rows_by_peak(np.ldexp(row_peaks, exponent))


def _rows_gathered(source: np.ndarray, positions: np.ndarray, *, rows: np.ndarray | None = None,
                   divisors: np.ndarray | None = None) -> np.ndarray:
    """``conj(source[rows][:, positions])`` (all rows in order by default;
    divided row by row by `divisors` where given), C-ordered, gathered in
    threads, one pass over `source`."""
    count = source.shape[0] if rows is None else len(rows)
    out = np.empty((count, len(positions)), dtype=source.dtype)
    scale = np.ones((count, 1)) if divisors is None else divisors[:, None]

    def fill(part: np.ndarray, quotient: np.ndarray, block: np.ndarray) -> None:
        np.take(part if rows is None else source[part], positions, axis=1, out=block)
        if divisors is not None:
            np.divide(block, quotient, out=block)
        if np.iscomplexobj(block):
            np.conjugate(block, out=block)

    in_row_blocks(fill, source if rows is None else rows, scale, out)
    return out


def _right_vectors_adjoint(G: np.ndarray, sigma: np.ndarray, order: np.ndarray,
                           pivots: np.ndarray, columns: int) -> np.ndarray:
    """``V_B^*`` (C-ordered): ``V_B[pivots] = U_x``, ``U_x`` the columns
    ``G[:, order] / sigma`` completed to `columns` orthonormal ones
    (:func:`cljacobi._solve.unit_columns`).  Without a zero singular value,
    row c of ``V_B^*`` is ``conj(G[inverse, order[c]]) / sigma_c``, gathered
    from G's contiguous columns (:func:`_rows_gathered`)."""
    if not np.all(sigma > 0) or G.strides[0] != G.itemsize:  # not columns contiguous
        U_x = unit_columns(G[:, order], sigma, None, columns)
        V_B = np.empty_like(U_x)
        V_B[pivots] = U_x
        return V_B.conj().T
    # Row j of G.T is column j of G, contiguous (as downloaded).
    return _rows_gathered(G.T, np.argsort(pivots), rows=order, divisors=sigma)
