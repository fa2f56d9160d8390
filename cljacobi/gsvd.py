"""The generalized SVD by the implicit Hari-Zimmermann method.

``gsvd(A, B)`` computes ``A = U diag(C) X^H``, ``B = V diag(S) X^H`` as
LAPACK ``xGGSVD3`` (and its Python wrapper ``gsvd4py``) define it, by the
method of V. Novaković and S. Singer, "Implicit Hari-Zimmermann algorithm
for the generalized SVD on the GPUs" (cited as [NS]): tall ``A`` and ``B``
are shortened to square factors by column-pivoted QR (Sect. 2), pairs of
columns of ``F`` and ``G`` are transformed by the same nonsingular 2x2
matrix until all pairs are relatively orthogonal (Sect. 2.1, the kernel of
``templates/hz.cl.mako``), and the GSVD is read off the final ``F Z``,
``G Z`` and ``Z`` (Sect. 2.4).  ``cljacobi.hz_reference`` is the numpy
reference of the same method.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyopencl as cl
import scipy.linalg

from . import _solve
from ._results import SolveInfo
from ._solve import DEFAULT_MAX_SWEEPS, Factored, HZPair, complete, ldexp
from .host.hz import CRITERIA, HZRun
from .host.sizes import check_power_of_two
from .validation import check_flag

__all__ = ["GSVDResult", "gsvd", "gsvdvals"]

#: What ``variant`` takes.
VARIANTS = ("auto", "pointwise", "bo", "fb", "batched")

#: What ``dots`` takes.
DOTS = ("ordinary", "enhanced")

#: ``variant="auto"`` runs the blocked level on GPUs from this order on.
AUTO_BLOCKED_MIN_ORDER = 512

#: Default block widths of the blocked level (the inner kernel holds three
#: 2w x 2w matrices in local memory: 25 KiB for real w = 16, 13 KiB for complex w = 8).
AUTO_BLOCK_WIDTH = 16
AUTO_COMPLEX_BLOCK_WIDTH = 8



class _GSVDFields(NamedTuple):
    U: np.ndarray | None
    V: np.ndarray | None
    C: np.ndarray
    S: np.ndarray
    X: np.ndarray | None


class GSVDResult(_GSVDFields):
    """``A = U @ diag(C) @ X^H`` and ``B = V @ diag(S) @ X^H`` (``X^H = X.conj().T``).

    Unpacks as ``U, V, C, S, X`` (``gsvd4py``'s order); ``Z`` is an attribute.

    Attributes
    ----------
    U : ndarray, shape (m, n), or None
        Orthonormal columns (None with ``compute_uv=False``); for ``m < n``
        the last ``n - m`` columns are zero (their ``C`` is zero by
        structure) and the first m are orthonormal.
    V : ndarray, shape (p, n), or None
        Orthonormal columns (None with ``compute_uv=False``).
    C, S : ndarray, shape (n,)
        ``C`` descending, ``C**2 + S**2 == 1`` (to rounding), both >= 0; the
        generalized singular values are ``C / S``.
    X : ndarray, shape (n, n), or None
        Nonsingular (None with ``compute_x=False``).
    Z : ndarray, shape (n, n)
        ``X^{-H}``, the method's own output ([NS] Sect. 2.4): ``A Z = U
        diag(C)``, ``B Z = V diag(S)``; available without inverting anything.
    """

    Z: np.ndarray

    def __new__(cls, U, V, C, S, X, Z):
        result = super().__new__(cls, U, V, C, S, X)
        result.Z = Z
        return result

    def __getnewargs__(self):  # pickling (and mpi4py) keeps Z
        return (*self, self.Z)


def gsvd(
    A: Any,
    B: Any,
    *,
    compute_uv: bool = True,
    compute_x: bool = True,
    check_finite: bool = True,
    prescale: bool = False,
    criterion: str = "C1",
    dots: str = "ordinary",
    strategy: str = "auto",
    variant: str = "auto",
    block_width: int | None = None,
    max_sweeps: int = DEFAULT_MAX_SWEEPS,
    on_nonconvergence: str = "raise",
    queue: cl.CommandQueue | cl.Context | None = None,
    return_info: bool = False,
    comm: Any = None,
) -> GSVDResult | tuple[GSVDResult, SolveInfo] | None:
    """Generalized singular value decomposition of the pair ``(A, B)``.

    ``A = U diag(C) X^H`` and ``B = V diag(S) X^H`` with orthonormal
    columns in ``U`` and ``V``, ``C**2 + S**2 = 1`` and ``X`` nonsingular,
    the economy form of LAPACK ``xGGSVD3`` (``gsvd4py.gsvd(A, B,
    mode="econ")``) for ``B`` of full column rank.  Computed by the implicit
    Hari-Zimmermann method on an OpenCL device (see the module notes).

    Parameters
    ----------
    A : (..., m, n) array_like
        Real or complex, not modified; with ``m < n`` the ``n - m``
        smallest ``C`` are zero (A has rank at most m).  A stack of pairs
        (A and B with the same leading shape) gives stacked results, each
        pair as it alone gives (to rounding; see `variant`).
    B : (..., p, n) array_like
        Real or complex, of full column rank (so ``p >= n``); not modified.
    compute_uv : bool, optional
        Return U and V (default); otherwise they are None (the columns of
        ``F Z`` and ``G Z`` are still formed, the products with the QR
        factors are skipped).
    compute_x : bool, optional
        Return X, which takes one ``n x n`` solve with ``Z^H``; otherwise X
        is None and ``Z = X^{-H}`` is there as computed.
    check_finite : bool, optional
        Raise ValueError for NaN or inf entries (default).
    prescale : bool, optional
        False (default): the not-scaled version, which rescales every pivot
        pair by ``D_k`` ([NS] Sect. 2.1, IDs 2, 3, 6, 7 of its Table 1);
        True: the standard version, with the columns of B normalized once and
        ``diag(B^H B) = I`` assumed afterwards (IDs 0, 1, 4, 5), which can
        meet a pivot submatrix that is not positive definite when B's
        columns are nearly dependent (LinAlgError).
    criterion : {"C1", "C2"}, optional
        Which transformations count as small; the sweeps stop after one
        without a big transformation ([NS] Sect. 2.5).
    strategy : {"auto", "me", "mm", "ring", "round-robin"}, optional
        Parallel pivot strategy (:mod:`cljacobi.strategies`); "auto" is the
        Mantharam-Eberlein ordering.
    variant : {"auto", "pointwise", "bo", "fb", "batched"}, optional
        The pointwise kernel alone, or the block-oriented level of [NS]
        Sect. 2.3 first ("bo": block pairs of ``2 * block_width`` columns,
        one inner sweep on the Cholesky factors of their two Gram matrices,
        the 2w x 2w transformation rescaled by Theta (Sect. 2.4; not with
        `prescale`) and applied to F, G and Z as one GEMM each) until a sweep
        has no big transformation, then pointwise sweeps that finish and
        decide convergence; "fb" (full block) runs the inner sweeps until
        one transforms nothing (at most 30).  "auto": "bo" on GPUs from n =
        :data:`AUTO_BLOCKED_MIN_ORDER` on, else pointwise.  "batched" (which
        "auto" takes for a stack of pairs of up to
        ``cljacobi.host.batched_hz.BATCHED_HZ_ORDER_LIMIT`` (128) columns):
        the whole stack on the device in three launches, every pair
        shortened as one pair is (``templates/batched_gsvd.cl.mako``), the
        pointwise sweeps of all of them (``templates/batched_hz.cl.mako``)
        and every GSVD read off; a stack with another variant runs pair by
        pair.
    block_width : int, optional
        w of "bo" (a power of two); default :data:`AUTO_BLOCK_WIDTH` real,
        :data:`AUTO_COMPLEX_BLOCK_WIDTH` complex.
    max_sweeps : int, optional
        Sweeps (blocked and pointwise together) before the method counts as
        not converged.
    on_nonconvergence : {"raise", "warn"}, optional
        As in :func:`cljacobi.eig_indefinite`.
    queue : pyopencl.CommandQueue or pyopencl.Context, optional
        Where to run; default: the device ``CLJACOBI_DEVICE`` names.
    return_info : bool, optional
        Also return a :class:`~cljacobi.SolveInfo` (``rotations_per_sweep``
        counts the transformations of each sweep).
    comm : mpi4py.MPI.Intracomm, optional
        Run the sweeps on all ranks of `comm`, one OpenCL device each
        (:mod:`cljacobi.distributed`: stripes of F, G and Z, as in [NS]
        Sect. 4).  Call on every rank with the same options, with the pair
        on rank 0 (the others pass None for A and B) and the result returned
        there, or with every rank's block columns of A and B (the same
        columns of both) and every rank's block columns of U, V, X and Z
        returned (C and S whole).

    Returns
    -------
    GSVDResult
        ``(U, V, C, S, X)`` with ``Z`` as an attribute; with
        ``return_info=True`` the pair ``(result, info)``.

    Raises
    ------
    ValueError
        Not 2-D, different column counts, NaN or inf, unknown options.
    numpy.linalg.LinAlgError
        B not of full column rank: fewer rows than columns, a zero pivot of the pivoted QR that
        shortens the pair, a pivot submatrix of ``B^H B``
        not positive definite in floating point during the sweeps, or a
        column of the final ``B Z`` at the rounding level of that product
        (``max(p, n) eps ||B|| ||z_j||``, LAPACK's ``TOLB`` per column); a
        result beyond float64's range.
    ConvergenceError
        No convergence within `max_sweeps` (unless ``on_nonconvergence="warn"``).
    DeviceCapabilityError
        The device lacks fp64.
    """
    compute_uv, compute_x = check_flag(compute_uv, "compute_uv"), check_flag(compute_x, "compute_x")
    check_finite = check_flag(check_finite, "check_finite")
    prescale, return_info = check_flag(prescale, "prescale"), check_flag(return_info, "return_info")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, not {criterion!r}")
    if dots not in DOTS:
        raise ValueError(f"dots must be one of {DOTS}, not {dots!r}")
    if variant not in VARIANTS:  # the one-sided solvers' "stream" is not a GSVD variant
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    plan = _solve.sweep_plan(
        "gsvd", strategy=strategy, rotation=None, sort_diagonal=True, max_sweeps=max_sweeps,
        on_nonconvergence=on_nonconvergence, variant=variant, block_width=block_width,
        queue=queue, batched=True)
    if block_width is not None:
        check_power_of_two("block_width", block_width)
    method = _GSVD(compute_uv=compute_uv, compute_x=compute_x, prescale=prescale,
                   criterion=criterion, enhanced_dots=dots == "enhanced", variant=variant,
                   block_width=block_width)
    if comm is not None:  # the sweeps on all ranks (cljacobi.distributed)
        pair = None if A is None and B is None else (A, B)
        return _solve.solve_on(comm, method, pair, plan, queue=queue,
                               check_finite=check_finite, return_info=return_info)
    return _solve.solve(method, (A, B), plan, queue=queue, check_finite=check_finite,
                        return_info=return_info)


@dataclass(frozen=True)
class _GSVD:
    """gsvd's part of the pipeline: scale and shorten the pair, hand it to the
    implicit Hari-Zimmermann sweeps, read the GSVD off the final F, G, Z."""

    compute_uv: bool
    compute_x: bool
    prescale: bool
    criterion: str
    enhanced_dots: bool
    variant: str
    block_width: int | None
    argument = "A, B"
    pair = True
    #: Stacks of pairs take cljacobi._batch_gsvd.
    pair_stacks = True
    square = False
    value_name = "a generalized singular value"

    def validate(self, pair: tuple[np.ndarray, np.ndarray], array_queue: Any) -> None:
        A, B = pair
        if A.shape[1] != B.shape[1]:
            raise ValueError(f"A and B must have the same number of columns, got A {A.shape} "
                             f"and B {B.shape}")
        if B.shape[0] < B.shape[1]:
            raise np.linalg.LinAlgError(
                f"B has fewer rows than columns ({B.shape}), so it is not of full column rank: "
                "the GSVD by the implicit Hari-Zimmermann method needs B^H B positive definite")

    def device_shape(self, pair: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, bool] | None:
        (m, n), p = pair[0].shape, pair[1].shape[0]
        return (max(m, n) + p, n, True) if n else None  # F and G, and Z as "V"

    def template(self, pair: Any) -> None:  # stacks take cljacobi._batch_gsvd
        return None

    def factor(self, pair: tuple[np.ndarray, np.ndarray], index: tuple[int, ...],
               plan: _solve.SweepPlan, info: SolveInfo) -> Factored | GSVDResult:
        A, B = pair
        dtype = np.result_type(A, B)
        for name, array in (("A", A), ("B", B)):
            if not np.isfinite(array).all():  # check_finite=False let it through
                raise np.linalg.LinAlgError(f"{name} contains infs or NaNs")
        # Copies (never the caller's arrays), scaled by exact powers of two so that
        # the largest entries are near 1 and no squared norm or dot product of the
        # sweeps overflows or underflows; the extraction puts the powers back.
        F, G = np.array(A, dtype=dtype, order="F"), np.array(B, dtype=dtype, order="F")
        (m, n), p = F.shape, G.shape[0]
        if n == 0:
            empty = np.empty((0, 0), dtype=dtype)
            return GSVDResult(np.empty((m, 0), dtype) if self.compute_uv else None,
                              np.empty((p, 0), dtype) if self.compute_uv else None,
                              np.empty(0), np.empty(0), empty if self.compute_x else None, empty)
        start = time.perf_counter()
        shifts = (_unit_shift(F), _unit_shift(G))
        F, G = ldexp(F, shifts[0], out=F), ldexp(G, shifts[1], out=G)
        # Sect. 2: A P_1 = Q_F R_F, (B P_1) P_2 = Q_G R_G; F = R_F P_2, G = R_G.  Square
        # pairs too: without the pivoted QRs the errors of C/S grew 5x on the paper's
        # pairs at n = 2048 and 4096 (bench/results/gsvd-large-no-qr-H200-2026-11-25.json).
        shortened = _shorten(F, G, compute_q=self.compute_uv)
        info.factorization = "qr"
        info.seconds["factorization"] = time.perf_counter() - start
        if self.prescale:  # Sect. 2 (Z_0)_jj := 1/||g_j|| (the paper prints 1/sqrt(||g_j||): slip)
            norms = np.linalg.norm(shortened.G, axis=0)
            F0, G0, Z0 = shortened.F / norms, shortened.G / norms, np.diag(1 / norms)
        else:
            F0, G0, Z0 = shortened.F, shortened.G, np.eye(n)
        width = _block_width(plan.queue.device, n, dtype, self.variant, self.block_width)
        source = HZPair(F0, G0, Z0.astype(dtype), prescaled=self.prescale,
                        criterion=self.criterion, block_width=width,
                        variant="fb" if self.variant == "fb" else "bo",
                        enhanced_dots=self.enhanced_dots)
        return Factored(source, np.empty(0, dtype=np.int8),
                        kept={"shortened": shortened, "shifts": shifts})

    def extract(self, state: HZRun, factored: Factored, index: tuple[int, ...],
                plan: _solve.SweepPlan, info: SolveInfo) -> GSVDResult:
        kept = factored.kept
        return _extract(state.F, state.G, state.Z, kept["shortened"], kept["shifts"],
                        compute_uv=self.compute_uv, compute_x=self.compute_x,
                        dtype=plan.result_dtype)


def _block_width(device: cl.Device, n: int, dtype: np.dtype, variant: str,
                 block_width: int | None) -> int:
    """The block width of the run, 0 for pointwise only."""
    if variant in ("pointwise", "batched"):
        return 0
    if variant == "auto" and block_width is None and not (
            bool(device.type & cl.device_type.GPU) and n >= AUTO_BLOCKED_MIN_ORDER):
        return 0
    if block_width is not None:
        return block_width
    return AUTO_COMPLEX_BLOCK_WIDTH if np.dtype(dtype).kind == "c" else AUTO_BLOCK_WIDTH


def gsvdvals(A: Any, B: Any, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(C, S)`` of :func:`gsvd` (descending ``C``, ``C**2 + S**2 = 1``),
    without U, V and X; `options` as there."""
    result = gsvd(A, B, compute_uv=False, compute_x=False, **options)
    if options.get("return_info"):
        result, info = result
        return (result.C, result.S), info
    return result.C, result.S


class _Shortened(NamedTuple):
    """``A P_1 W P_2 = Q_F F[:m]`` and ``B P_1 W P_2 = Q_G G`` with square F, G
    ([NS] Sect. 2); ``W`` is the identity (None) unless ``m < n``, where the
    last ``n - m`` rows of F are zero and so are its first ``n - m`` columns
    before ``P_2``."""

    F: np.ndarray
    G: np.ndarray
    Q_F: tuple[np.ndarray, np.ndarray] | None  # Householder reflectors and tau
    Q_G: tuple[np.ndarray, np.ndarray] | None
    p_1: np.ndarray
    W: np.ndarray | None
    p_2: np.ndarray
    rows_a: int

    def original_z(self, Z: np.ndarray) -> np.ndarray:
        """``P_1 W P_2 Z``: the Z of the pair (A, B) from that of (F, G)."""
        out = np.empty_like(Z)
        if self.W is None:
            out[self.p_1[self.p_2]] = Z  # one row scatter
            return out
        rows = np.empty_like(Z)
        rows[self.p_2] = Z
        out[self.p_1] = self.W @ rows
        return out


def _shorten(A: np.ndarray, B: np.ndarray, *, compute_q: bool) -> _Shortened:
    """(A is overwritten.)  [NS] Sect. 2: ``A P_1 = Q_F R_F``, ``(B P_1) P_2 = Q_G R_G`` by
    column-pivoted QR; ``F = R_F P_2``, ``G = R_G``.  For ``m < n`` the
    ``m x n`` R_F is reduced further to ``R_F W = [0 T]`` by an RQ
    factorization (``W = Q^H`` of ``R_F = [0 T] Q``; LAPACK xGGSVP3 makes the
    same exact zero columns), and B's QR is of ``B P_1 W``: A of rank <= m
    gets n - m exactly zero columns, which the sweeps keep zero.  B of less
    than full column rank is a LinAlgError (a zero pivot of its QR)."""
    mode = "raw" if compute_q else "r"  # Q stays in reflectors: _apply_q
    (m, n), dtype = A.shape, np.result_type(A, B)
    first = scipy.linalg.qr(A, mode=mode, pivoting=True, overwrite_a=True, check_finite=False)
    R_F, p_1 = first[-2], first[-1]
    B_1, W = B[:, p_1], None
    if m < n:
        R_F, Q = scipy.linalg.rq(R_F, check_finite=False)
        W = Q.conj().T
        R_F[:, : n - m] = 0  # exact zeros, whatever rounding the RQ left there
        R_F = np.concatenate([R_F, np.zeros((n - m, n), dtype=R_F.dtype)])
        B_1 = B_1 @ W
    second = scipy.linalg.qr(B_1, mode=mode, pivoting=True, overwrite_a=True,
                             check_finite=False)
    R_G, p_2 = second[-2], second[-1]
    R_F, R_G = R_F[:n].astype(dtype, copy=False), R_G[:n]
    pivots = np.abs(np.diagonal(R_G))
    if not pivots[-1] > n * np.finfo(np.float64).eps * pivots[0]:
        raise rank_error(pivots[-1], pivots[0])
    return _Shortened(np.asfortranarray(R_F[:, p_2]), np.asfortranarray(R_G),
                      first[0] if compute_q else None, second[0] if compute_q else None,
                      p_1, W, p_2, m)


#: The message of a C, S, X or Z beyond float64.
RESULT_RANGE = "a result of gsvd exceeds the largest float64"


def rank_error(r_nn: float, r_11: float) -> np.linalg.LinAlgError:
    """B's pivoted QR failed the rank test ``|r_nn| > n eps |r_11|``."""
    return np.linalg.LinAlgError(
        f"B is not of full column rank (its pivoted QR has |r_nn| = {r_nn:.3g} "
        f"against |r_11| = {r_11:.3g}): the GSVD by the implicit Hari-Zimmermann "
        "method needs B^H B positive definite")


def rank_z_error(columns: int) -> np.linalg.LinAlgError:
    """`columns` columns of B Z at the rounding level of that product."""
    return np.linalg.LinAlgError(
        f"B is not of full column rank: {columns} column(s) of B Z are at the "
        "rounding level of the product (the GSVD by the implicit Hari-Zimmermann method "
        "needs B^H B positive definite)")


def _apply_q(reflectors: tuple[np.ndarray, np.ndarray], Y: np.ndarray) -> np.ndarray:
    """``Q [Y; 0]`` for the Q of a Householder QR in LAPACK's compact form
    (xORMQR / xUNMQR: Q is never formed, which saves its 4/3 n^3 flops)."""
    raw, tau = reflectors
    rows = raw.shape[0]
    C = np.zeros((rows, Y.shape[1]), dtype=np.result_type(raw, Y), order="F")
    C[: Y.shape[0]] = Y
    if Y.shape[1] == 0 or tau.size == 0:
        return C
    apply = scipy.linalg.lapack.zunmqr if np.iscomplexobj(C) else scipy.linalg.lapack.dormqr
    raw = raw[:, : tau.size].astype(C.dtype, copy=False)  # the reflectors' columns
    tau = tau.astype(C.dtype, copy=False)
    work = apply("L", "N", raw, tau, C, -1)[1]
    product, _, info = apply("L", "N", raw, tau, C, max(int(work[0].real), 1), overwrite_c=1)
    if info != 0:
        raise RuntimeError(f"LAPACK xORMQR/xUNMQR failed (info = {info})")
    return product


def _unit_columns(Y: np.ndarray, norms: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``Y diag(norms)^-1``; a column at rounding level (`noise`: a zero C or
    S, or one below what the data determine) becomes a unit vector orthogonal
    to the others (:func:`cljacobi._solve.complete`), as LAPACK completes it:
    its direction is rounding, and it enters ``U diag(C)`` times a C at
    rounding level.  `Y` is a copy of the caller's, scaled in place."""
    Y /= np.where(noise, 1, norms)
    return Y if not noise.any() else complete(Y, ~noise, Y.shape[1])


def _unit_shift(A: np.ndarray) -> int:
    """``-e`` with ``2^(e-1) <= max|a_ij| < 2^e``: ``2^-e A`` has its largest entry
    in [1/2, 1), exactly (0 for the zero matrix)."""
    largest = float(np.abs(A).max(initial=0.0))
    return -int(np.frexp(largest)[1]) if largest else 0


def _extract(F: np.ndarray, G: np.ndarray, Z: np.ndarray, shortened: _Shortened,
             shifts: tuple[int, int], *, compute_uv: bool, compute_x: bool,
             dtype: np.dtype) -> GSVDResult:
    """[NS] Sect. 2.4, the post-iterative rescaling: ``(Sigma~_F)_jj = ||f_j||``,
    ``(Sigma~_G)_jj = ||g_j||``, ``Theta_jj = ((Sigma~_F)_jj^2 + (Sigma~_G)_jj^2)^(-1/2)``,
    ``C = Sigma~_F Theta``, ``S = Sigma~_G Theta``, ``U = F Sigma~_F^-1``,
    ``V = G Sigma~_G^-1``, ``Z := Z Theta``; then ``P_0`` sorts ``C`` descending
    (Sect. 1) and the shortening is undone (``Z := P_1 W P_2 Z``, ``U := Q_F U``).

    F and G are those of ``2^a A`` and ``2^b B`` (``shifts = (a, b)``): the
    true norms are ``2^-a ||f_j||`` and ``2^-b ||g_j||``, which may be
    beyond float64 where their ratio, the generalized singular value
    ``sigma_j``, is not; so ``C = 1/sqrt(1 + sigma^-2)``, ``S = 1/sqrt(1 +
    sigma^2)`` and ``Theta_jj = C_j / ||A z_j|| = S_j / ||B z_j||``, each
    from the larger of the two."""
    shift_a, shift_b = shifts
    norm_f, norm_g = np.linalg.norm(F, axis=0), np.linalg.norm(G, axis=0)
    # f_j = F_0 z_j: a column no larger than the rounding of that product
    # (max(m, n) eps ||F_0|| ||z_j||, LAPACK xGGSVD3's TOLA per column) has no
    # direction of its own.
    z_norms = np.linalg.norm(Z, axis=0)
    eps = np.finfo(np.float64).eps
    noise_f = norm_f <= max(F.shape) * eps * np.linalg.norm(shortened.F) * z_norms
    noise_g = norm_g <= max(G.shape) * eps * np.linalg.norm(shortened.G) * z_norms
    rows_a, n = shortened.rows_a, F.shape[1]
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        sigma = np.ldexp(norm_f / norm_g, shift_b - shift_a)  # B of full rank: norm_g > 0
        # A with m < n rows has rank <= m: its n - m smallest generalized
        # singular values are zero by structure (what rounding left there goes).
        structural = np.zeros(n, bool)
        structural[np.argsort(sigma, kind="stable")[: max(n - rows_a, 0)]] = True
        sigma[structural] = 0
        C, S = 1 / np.hypot(1, 1 / sigma), 1 / np.hypot(1, sigma)
        theta = np.where(C >= S, np.ldexp(C / norm_f, shift_a), np.ldexp(S / norm_g, shift_b))
    order = np.argsort(-C, kind="stable")
    Z = Z[:, order]  # F order: whole columns gathered, then scaled in place
    Z *= theta[order]
    Z_original = shortened.original_z(Z)
    U = V = X = None
    if np.any(noise_g):
        raise rank_z_error(int(noise_g.sum()))
    if compute_uv:
        rows = min(rows_a, F.shape[0])  # F's rows beyond A's are zero
        if structural.any():
            U = np.zeros((rows, n), dtype=F.dtype)  # the structural zeros' columns stay 0
            U[:, ~structural] = _unit_columns(F[:rows, ~structural], norm_f[~structural],
                                              noise_f[~structural])
            U = U[:, order]
        else:  # whole columns gathered first (F order), then scaled
            U = _unit_columns(F[:rows, order], norm_f[order], noise_f[order])
        V = _unit_columns(G[:, order], norm_g[order], noise_g[order])
        if shortened.Q_F is not None:
            U, V = _apply_q(shortened.Q_F, U), _apply_q(shortened.Q_G, V)
    if compute_x:  # X^H = Z^-1
        X = np.linalg.solve(Z_original.conj().T, np.eye(Z.shape[0], dtype=Z.dtype))
    for array in (C, S, X, Z_original):  # U and V have unit columns
        if array is not None and not np.isfinite(array).all():
            raise np.linalg.LinAlgError(RESULT_RANGE)
    real = np.finfo(dtype).dtype

    def cast(array: np.ndarray | None) -> np.ndarray | None:
        return None if array is None else array.astype(dtype, copy=False)

    return GSVDResult(cast(U), cast(V), C[order].astype(real), S[order].astype(real),
                      cast(X), cast(Z_original))
