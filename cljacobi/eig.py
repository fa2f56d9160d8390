"""Public solvers: the indefinite Hermitian eigenproblem and the hyperbolic SVD.

Both run the one-sided hyperbolic Jacobi method of Novaković & Singer,
"A GPU-based hyperbolic SVD algorithm", BIT 51 (2011) (GPUJACH1) on an
OpenCL device.  ``eig_indefinite`` first factors ``M = G J G^T`` by
Bunch-Parlett complete pivoting (Slapničar 1992) on the host.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pyopencl as cl

from ._results import EighResult, HSVDResult, SolveInfo
from .errors import ConvergenceError
from .factorization import j_factorize, shorten
from .host.device import resolve_queue
from .host.pointwise import PointwiseHSVD, HSVDState
from .options import JacobiOptions, resolve_options
from .validation import as_float_matrix, check_max_sweeps, symmetric_part

__all__ = ["DEFAULT_MAX_SWEEPS", "eig_indefinite", "hsvd"]

#: Quasi-sweeps before giving up.  The 2011 paper needs at most 16 for
#: n = 4096 (its Table 3); the margin covers harder spectra.
DEFAULT_MAX_SWEEPS = 60


def _power_of_two_exponent(array: np.ndarray) -> int:
    """Exponent e with max|array| in [2^(e-1), 2^e); 0 for a zero array.

    Scaling by 2^-e is exact and keeps squared norms and dot products away
    from overflow and underflow.
    """
    largest = float(np.max(np.abs(array))) if array.size else 0.0
    return int(np.frexp(largest)[1]) if largest > 0 else 0


def _run_device(
    G: np.ndarray,
    signs: np.ndarray,
    *,
    queue: cl.CommandQueue,
    accumulate_v: bool,
    max_sweeps: int,
    options: JacobiOptions,
    info: SolveInfo,
) -> HSVDState:
    """Run the pointwise driver, fill `info`, raise ConvergenceError if it did not converge."""
    driver = PointwiseHSVD(
        queue, accumulate_v=accumulate_v, strategy=options.strategy,
        rotation=options.rotation, sort_diagonal=options.sort_diagonal,
    )
    state = driver.run(G, signs, max_sweeps=max_sweeps)
    stats = state.stats
    info.sweeps = stats.sweeps
    info.rotations = stats.rotations
    info.rotations_per_sweep = stats.rotations_per_sweep
    info.converged = stats.converged
    info.breakdown = stats.breakdown
    info.work_group_size = stats.work_group_size
    info.device = queue.device.name.strip()
    info.seconds.update(stats.seconds)
    if stats.breakdown:
        warnings.warn(
            "some hyperbolic pivot pairs were numerically linearly dependent and were left "
            "unrotated; the factor is (nearly) rank deficient and the results may be inaccurate",
            RuntimeWarning,
            stacklevel=3,
        )
    if not stats.converged:
        raise ConvergenceError(
            f"the hyperbolic Jacobi method did not converge in {max_sweeps} sweeps "
            f"(rotations in the last sweep: {stats.rotations_per_sweep[-1]})",
            info,
        )
    return state


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
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
):
    """Eigenvalues and eigenvectors of a real symmetric, possibly indefinite, matrix.

    Factors ``M = G J G^T`` by Bunch-Parlett complete pivoting (rank
    revealing, 2x2 pivots diagonalized), shortens a tall G by QR, and
    orthogonalizes the columns of G by one-sided hyperbolic Jacobi rotations on
    an OpenCL device (Novaković & Singer 2011, Sect. 2 and 4).  The
    eigenvalues are ``lambda_i = j_i ||g_i||^2`` and the eigenvectors the
    normalized columns of the final G; small eigenvalues are as accurate as
    the data determines them (relative accuracy), unlike LAPACK's.

    Parameters
    ----------
    M : (n, n) array_like
        Real symmetric matrix.  Only the lower triangle is used, after checking
        that ``max|M - M.T| <= sqrt(eps) * max|M|`` (ValueError otherwise).
        Integer and bool input is promoted to float64; float32 input is
        computed in float64 and returned as float32.
    eigvals_only : bool, optional
        Return only the eigenvalues.
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries.  If False, non-finite input
        gives NaN results or an exception from the factorization.
    overwrite_a : bool, optional
        Permit `M` to be used as workspace (scipy's convention).  This version
        always factors a symmetrized copy, so `M` is left intact either way.
    strategy : {"auto", "mm", "me", "ring", "round-robin"}, optional
        Parallel pivot strategy (DESIGN.md, Appendix A; :mod:`cljacobi.strategies`):
        modified modulus (Novaković & Singer 2011), Mantharam-Eberlein, the
        ring ordering of Zhou & Brent (1997, Sect. 4) or Brent-Luk
        round-robin.  ``"auto"`` picks the measured default
        (:data:`cljacobi.options.DEFAULTS`).  An unknown name is a ValueError
        that lists these.
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
        Sweeps (``r`` parallel steps each for ``"mm"``, ``r - 1`` for the
        cyclic strategies, ``r`` the bordered order) before
        :class:`~cljacobi.ConvergenceError` is raised.
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the device ``CLJACOBI_DEVICE`` names.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo`.

    Returns
    -------
    EighResult(eigenvalues, eigenvectors)
        Ascending eigenvalues and orthonormal eigenvectors (columns); only
        the eigenvalues with ``eigvals_only=True``.  With ``return_info=True``,
        the pair ``(result, info)``.

    Raises
    ------
    ValueError
        `M` not square, not 2-D, not symmetric, or not finite.
    TypeError
        Unsupported dtype (complex input is not handled by this version).
    ConvergenceError
        No convergence within `max_sweeps` (a ``numpy.linalg.LinAlgError``).
    DeviceCapabilityError, DeviceMemoryError
        The device lacks fp64, memory or work-group size (before any launch).

    Notes
    -----
    A singular M of rank r gives ``n - r`` eigenvalues that are exactly zero,
    with eigenvectors spanning the orthogonal complement of the others.
    """
    total_start = time.perf_counter()
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    M, result_dtype = as_float_matrix(M, "M", check_finite=check_finite, square=True)
    n = M.shape[0]
    info = SolveInfo(seconds={"factorization": 0.0, "transfer": 0.0, "sweeps": 0.0, "sort": 0.0})
    info.strategy, info.rotation = options.strategy, options.rotation
    info.sort_diagonal = options.sort_diagonal

    def finish(w: np.ndarray, U: np.ndarray | None):
        w = w.astype(result_dtype, copy=False)
        result = w if eigvals_only else EighResult(w, U.astype(result_dtype, copy=False))
        info.seconds["total"] = time.perf_counter() - total_start
        return (result, info) if return_info else result

    if n == 0:
        return finish(np.empty(0), np.empty((0, 0)))
    symmetric = symmetric_part(M, "M")
    if n == 1:
        info.rank = int(symmetric[0, 0] != 0)
        info.positive = int(symmetric[0, 0] > 0)
        return finish(symmetric[0].copy(), np.ones((1, 1)))

    exponent = _power_of_two_exponent(symmetric)
    scaled = np.ldexp(symmetric, -exponent)

    start = time.perf_counter()
    factor = j_factorize(scaled)
    Q, R = shorten(factor.G)
    info.seconds["factorization"] = time.perf_counter() - start
    rank = factor.G.shape[1]
    info.rank = rank
    info.positive = int(factor.p)

    if rank == 0:
        return finish(np.zeros(n), np.eye(n))

    resolved = resolve_queue(queue)
    state = _run_device(
        R, factor.signs, queue=resolved, accumulate_v=False, max_sweeps=max_sweeps,
        options=options, info=info,
    )
    w = np.ldexp(state.signs * state.d, exponent)
    if rank < n:
        w = np.concatenate([w, np.zeros(n - rank)])
    order = np.argsort(w, kind="stable")
    if eigvals_only:
        return finish(w[order], None)

    U = state.G / np.linalg.norm(state.G, axis=0)
    if Q is not None:
        U = Q @ U
    if rank < n:
        # Complete the orthonormal basis: the null space of M.
        complete, _ = np.linalg.qr(U, mode="complete")
        U = np.concatenate([U, complete[:, rank:]], axis=1)
    return finish(w[order], U[:, order])


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
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
):
    """Hyperbolic singular value decomposition ``G = U diag(S) Vh``.

    One-sided hyperbolic Jacobi (Novaković & Singer 2011): the columns of G
    are orthogonalized by rotations that are J-orthogonal, accumulated in V
    (eq. (2.1)).  Then ``G diag(J) G^T = U diag(J S^2) U^T``.

    Parameters
    ----------
    G : (m, n) array_like
        Real, of full column rank (m >= n).  A tall G is shortened by QR first.
    J : (n,) array_like
        The signature: entries +1 or -1.
    compute_uv : bool, optional
        Compute U and Vh (V is accumulated on the device).  If False only
        ``(S, J)`` are returned.
    check_finite, strategy, rotation, sort_diagonal, max_sweeps, queue, return_info
        As in :func:`eig_indefinite`.

    Returns
    -------
    HSVDResult(U, S, Vh, J)
        U (m, n) with orthonormal columns; S (n,) **descending** hyperbolic
        singular values; Vh (n, n) with ``Vh @ diag(J) @ Vh.T = diag(J)``;
        J (n,) the input signature permuted to match S.  With
        ``compute_uv=False``, the pair ``(S, J)``.  With ``return_info=True``,
        ``(result, info)``.
    """
    total_start = time.perf_counter()
    options = resolve_options(strategy, rotation, sort_diagonal)
    max_sweeps = check_max_sweeps(max_sweeps)
    G, result_dtype = as_float_matrix(G, "G", check_finite=check_finite, square=False)
    m, n = G.shape
    signs = np.asarray(J)
    if signs.shape != (n,):
        raise ValueError(f"J must have shape ({n},) to match G of shape {G.shape}, got {signs.shape}")
    if not np.all((signs == 1) | (signs == -1)):
        raise ValueError("J must contain only +1 and -1")
    if m < n:
        raise ValueError(
            f"G of shape {G.shape} cannot have full column rank: hsvd needs m >= n"
        )
    info = SolveInfo(seconds={"factorization": 0.0, "transfer": 0.0, "sweeps": 0.0, "sort": 0.0})
    info.strategy, info.rotation = options.strategy, options.rotation
    info.sort_diagonal = options.sort_diagonal
    info.rank = n

    # J sorted +1 first (stable); columns of G permuted alike.
    perm = np.argsort(-signs, kind="stable")
    signs_sorted = signs[perm].astype(np.int8)
    info.positive = int(np.count_nonzero(signs_sorted > 0))

    def finish(result):
        info.seconds["total"] = time.perf_counter() - total_start
        return (result, info) if return_info else result

    if n == 0:
        empty = np.empty(0, dtype=result_dtype)
        if not compute_uv:
            return finish((empty, signs_sorted))
        return finish(HSVDResult(np.empty((m, 0), result_dtype), empty,
                                 np.empty((0, 0), result_dtype), signs_sorted))

    exponent = _power_of_two_exponent(G)
    start = time.perf_counter()
    Q, R = shorten(np.ldexp(G[:, perm], -exponent))
    info.seconds["factorization"] = time.perf_counter() - start

    state = _run_device(
        R, signs_sorted, queue=resolve_queue(queue), accumulate_v=compute_uv,
        max_sweeps=max_sweeps, options=options, info=info,
    )
    sigma = np.linalg.norm(state.G, axis=0)
    order = np.argsort(-sigma, kind="stable")
    S = np.ldexp(sigma, exponent)[order].astype(result_dtype)
    J_out = signs_sorted[order]
    if not compute_uv:
        return finish((S, J_out))
    U = state.G / sigma
    if Q is not None:
        U = Q @ U
    # G_perm = G_final V^{-1} with V^{-1} = J V^T J (V^T J V = J), so
    # G_perm = U Sigma (J V^T J); undo the column permutation of G.
    Vh_sorted = (signs_sorted[:, None] * state.V.T) * signs_sorted[None, :]
    Vh = np.empty_like(Vh_sorted)
    Vh[:, perm] = Vh_sorted
    return finish(HSVDResult(
        U[:, order].astype(result_dtype),
        S,
        Vh[order].astype(result_dtype),
        J_out,
    ))
