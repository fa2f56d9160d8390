"""The singular value decomposition by one-sided Jacobi with ``J = I``.

With every sign in ``J`` equal to +1 the hyperbolic method of Novaković &
Singer (BIT 51, 2011) is Hestenes' one-sided Jacobi SVD: the columns of a
factor are orthogonalized by plane rotations only (their eq. (2.4)), the
singular values are the final column norms, the left singular vectors the
normalized columns and the right ones the accumulated rotations.  The same
pointwise kernels and driver as :func:`cljacobi.eig_indefinite` run it, for
real and complex matrices.

The method is relatively accurate for column-scaled matrices ``A = B D``:
the singular values get relative errors of order ``eps cond(B)`` whatever
``D`` is (Demmel & Veselić 1992, Sect. 4).  A tall ``A`` (``m >= 5n/3``) is
first reduced to the triangular factor of a QR factorization with column
pivoting, ``A P = Q R``, which keeps that accuracy (Drmač 1997; Drmač &
Veselić 2008, ``xGEJSV``) and lets the sweeps work on ``n`` instead of ``m``
rows; a wide ``A`` is handled through ``A^*``.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl
import scipy.linalg

from ._arrays import is_device_array, to_device, to_host
from ._results import SolveInfo
from .eig import (
    DEFAULT_MAX_SWEEPS,
    _checked_queue,
    _ldexp,
    _name,
    _new_info,
    _power_of_two_exponent,
    _require_finite,
    _run_device,
    _solve_all,
    _Sweeps,
    _unit_columns,
)
from .host.variants import check_variant_options
from .options import resolve_options
from .validation import (
    as_float_matrix,
    check_flag,
    check_max_sweeps,
    check_on_nonconvergence,
    check_queue_argument,
)

__all__ = ["QR_RATIO", "SVDResult", "svd"]

#: A is reduced to its QR triangle first when ``m >= QR_RATIO * n``; about
#: where LAPACK's ``xGESDD`` switches to a QR-first path (``mnthr ~ 11n/6``).
QR_RATIO = 5.0 / 3.0


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
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
    _layout: str | None = None,
    _single: bool | None = None,
):
    """Singular value decomposition by one-sided Jacobi rotations on an OpenCL device.

    Mirrors :func:`numpy.linalg.svd`: ``A = U @
    diag(S) @ Vh`` with ``S`` descending, and `full_matrices`, `compute_uv`
    may be given by position as there (``svd(A, False, False)``); unlike
    numpy, `full_matrices` defaults to False.  Hestenes' one-sided Jacobi method
    (the hyperbolic method of Novaković & Singer 2011 with ``J = I``, only
    the trigonometric rotations of their eq. (2.4)) runs on ``A`` when
    ``m >= n``, on the R of ``A P = Q R`` (QR with column pivoting) when
    ``m >= 5n/3``, and on ``A^*`` when ``m < n``.  V is accumulated on the
    device only when ``compute_uv=True``.

    Parameters
    ----------
    A : (..., m, n) array_like or pyopencl.array.Array
        Real or complex; a stack over the leading dimensions is solved
        matrix by matrix and stacked like numpy (``info`` is then a list).
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
    on_nonconvergence, variant, block_width
        As in :func:`cljacobi.eig_indefinite`.
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the device ``CLJACOBI_DEVICE`` names.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (``info.rank`` is the
        number of nonzero singular values; ``info.factorization`` is
        ``"qr"`` when A was reduced to R first).
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

    Notes
    -----
    Singular values of a column-scaled ``A = B D`` are computed with relative
    errors of order ``eps cond(B)`` (Demmel & Veselić 1992, Theorem 4.1),
    so tiny singular values of graded matrices are accurate where the
    bidiagonalization-based LAPACK ``xGESDD`` loses them.  Exactly zero
    singular values get left (or right) singular vectors completing an
    orthonormal basis.

    References
    ----------
    .. [1] V. Novaković and S. Singer, BIT Numer. Math. 51 (2011), Sect. 2, 4.
    .. [2] J. Demmel and K. Veselić, "Jacobi's method is more accurate than
       QR", SIAM J. Matrix Anal. Appl. 13(4), 1204-1245 (1992).
    .. [3] Z. Drmač and K. Veselić, "New fast and accurate Jacobi SVD
       algorithm I", SIAM J. Matrix Anal. Appl. 29(4), 1322-1342 (2008).
    """
    full_matrices = check_flag(full_matrices, "full_matrices")
    compute_uv = check_flag(compute_uv, "compute_uv")
    check_finite = check_flag(check_finite, "check_finite")
    return_info = check_flag(return_info, "return_info")
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    on_nonconvergence = check_on_nonconvergence(on_nonconvergence)
    check_variant_options(variant, block_width)
    check_queue_argument(queue)
    host, array_queue = to_host(A, queue)
    stack, result_dtype = as_float_matrix(
        host, "A", check_finite=check_finite, square=False, stacked=True
    )
    m, n = stack.shape[-2:]
    k = min(m, n)
    run_queue = None
    if k and (m, n) != (1, 1) and np.any(stack):  # else every matrix is answered on the host
        # The sweeps run on A, A^* or R: at most max(m, n) rows and k columns.
        run_queue = _checked_queue(
            queue, array_queue, stack, rows=max(m, n), columns=k, accumulate_v=compute_uv,
            result_dtype=result_dtype, single=_single,
        )

    sweeps = _Sweeps(
        "svd", run_queue, max_sweeps, on_nonconvergence, variant, block_width, _layout,
        result_dtype, _single, options,
    )

    def solve(index: tuple[int, ...], matrix: np.ndarray):
        return _svd_single(
            matrix, index=index, full_matrices=full_matrices, compute_uv=compute_uv,
            sweeps=sweeps,
        )

    S0 = np.zeros(k)
    template = SVDResult(
        np.zeros((m, m if full_matrices else k), stack.dtype), S0,
        np.zeros((n if full_matrices else k, n), stack.dtype),
    ) if compute_uv else S0
    result, info = _solve_all(stack, solve, template, sweeps)
    if is_device_array(A):
        result = to_device(result, array_queue or run_queue)
    return (result, info) if return_info else result


def _svd_single(
    A: np.ndarray,
    *,
    index: tuple[int, ...],
    full_matrices: bool,
    compute_uv: bool,
    sweeps: _Sweeps,
) -> tuple[Any, SolveInfo]:
    """svd of one validated float64/complex128 matrix: ``(result, info)``."""
    total_start = time.perf_counter()
    m, n = A.shape
    k = min(m, n)
    info = _new_info()

    def finish(U: np.ndarray | None, S: np.ndarray, Vh: np.ndarray | None):
        result = S if not compute_uv else SVDResult(U, S, Vh)
        _require_finite(f"a singular value of {_name('A', index)}",
                        *((S,) if not compute_uv else result))
        info.seconds["total"] = time.perf_counter() - total_start
        return result, info

    if k == 0 or not np.any(A):
        info.rank = 0
        return finish(np.eye(m, m if full_matrices else k, dtype=A.dtype), np.zeros(k),
                      np.eye(n if full_matrices else k, n, dtype=A.dtype))

    # Work on B (mb x nb, mb >= nb): A itself or A^*.
    transposed = m < n
    B = A.conj().T if transposed else A
    mb, nb = B.shape
    exponent = _power_of_two_exponent(B)
    B = _ldexp(B, -exponent)
    if m == n == 1:  # A = (a / |a|) |a| 1, no rotation: answered on the host
        sigma = np.abs(B[0])
        info.rank = info.positive = 1
        return finish(B / sigma, np.ldexp(sigma, exponent), np.ones((1, 1), dtype=A.dtype))

    start = time.perf_counter()
    Q = None
    perm = None
    if mb >= QR_RATIO * nb:
        info.factorization = "qr"
        if compute_uv:
            Q, R, perm = scipy.linalg.qr(B, mode="economic", pivoting=True, check_finite=False)
        else:
            R, perm = scipy.linalg.qr(B, mode="r", pivoting=True, check_finite=False)
            R = R[:nb]
        B = R
    info.seconds["factorization"] = time.perf_counter() - start

    signs = np.ones(nb, dtype=np.int8)
    state = _run_device(
        np.asarray(B), signs, sweeps=sweeps, accumulate_v=compute_uv, info=info, index=index
    )
    info.positive = nb
    sigma = np.linalg.norm(state.G, axis=0)
    order = np.argsort(-sigma, kind="stable")
    sigma = sigma[order]
    with np.errstate(over="ignore"):  # a singular value beyond float64: finish raises
        S = np.ldexp(sigma, exponent)
    info.rank = int(np.count_nonzero(sigma > 0))
    if not compute_uv:
        return finish(None, S, None)

    U_B = _unit_columns(state.G[:, order], sigma, Q, mb if full_matrices else nb)
    # G_final = B V with V unitary: B = U_B diag(sigma) V^*.
    V_B = state.V[:, order]
    if perm is not None:
        # B_original[:, perm] = Q R, so B_original = Q R P^T: rows of V permuted.
        V_rows = np.empty_like(V_B)
        V_rows[perm] = V_B
        V_B = V_rows

    if transposed:
        # A = B^* = V_B diag(S) U_B^*.
        return finish(V_B, S, U_B.conj().T)
    return finish(U_B, S, V_B.conj().T)
