"""Result types of the public functions (named tuples, like numpy's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

__all__ = ["EighResult", "HSVDResult", "SolveInfo"]


class EighResult(NamedTuple):
    """Eigendecomposition, as :func:`numpy.linalg.eigh` returns it.

    Attributes
    ----------
    eigenvalues : ndarray, shape (n,)
        Ascending.
    eigenvectors : ndarray, shape (n, n)
        Orthonormal columns; column ``i`` belongs to ``eigenvalues[i]``.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray


class HSVDResult(NamedTuple):
    """Hyperbolic SVD ``G = U @ diag(S) @ Vh`` with ``Vh @ diag(J_in) @ Vh^* = diag(J)``.

    `J_in` is the signature passed to :func:`cljacobi.hsvd`, `J` the one
    returned (`J_in` permuted to match `S`); ``Vh^* = Vh.conj().T``.

    Attributes
    ----------
    U : ndarray, shape (m, n)
        Orthonormal columns.
    S : ndarray, shape (n,)
        Hyperbolic singular values, descending.
    Vh : ndarray, shape (n, n)
        J-unitary between the two signatures:
        ``Vh @ diag(J_in) @ Vh.conj().T == diag(J)`` (to rounding).
    J : ndarray, shape (n,)
        The signature permuted to match `S`: ``G diag(J_in) G^*`` has the
        eigenvalues ``J * S**2`` with eigenvectors ``U``.
    """

    U: np.ndarray
    S: np.ndarray
    Vh: np.ndarray
    J: np.ndarray


@dataclass
class SolveInfo:
    """Statistics of one solve, returned with ``return_info=True``.

    Attributes
    ----------
    sweeps : int
        Sweeps run: ``r`` parallel steps each for ``"mm"`` (quasi-sweeps),
        ``r - 1`` for the cyclic strategies (r the bordered order).
    rotations : int
        Rotations applied in all sweeps together.
    rotations_per_sweep : list of int
    converged : bool
    rank : int
        ``eig_indefinite``: columns of the factor G (the numerical rank of
        M); ``svd``, ``hsvd``: the number of nonzero singular values (in the
        ``info`` of a :class:`~cljacobi.ConvergenceError`: of the partial
        result, the columns of the factor whose norms are nonzero).
    positive : int
        Positive signs in J (the number of positive eigenvalues).
    breakdown : bool
        Some hyperbolic pair was numerically dependent and left unrotated by
        the pointwise sweeps; such a call raises ``numpy.linalg.LinAlgError``
        instead of returning, so a returned ``info`` has it False.
    device : str
    work_group_size : int
        Of the pointwise kernel.
    variant : str
        "pointwise", "bo", "offdiag", "fb" or "stream": what ran (``variant="auto"`` resolved);
        "classical" for ``eigh(method="classical")``.
    block_width : int
        Block width of the blocked variants (0 for pointwise).
    matrix_products : str
        How the blocked Gram and update kernels multiplied: ``"fma"`` or a
        tensor-core form (:mod:`cljacobi.host.matrix_products`); empty for
        pointwise runs.
    blocked_sweeps : int
        Of ``sweeps``, how many were blocked sweeps (the rest pointwise).
    certified_sweeps : int
        Of the pointwise sweeps after blocked ones, how many were certified:
        every pair tested on its fresh Gram entry, only the pairs that may
        fail the test rotated (``docs/design.md``, "The certified finishing
        sweep").
    factorization : str
        ``eig_indefinite``: ``"cholesky"`` (M shown definite by pivoted
        Cholesky, where the factorization runs on the host; see its Notes),
        ``"bunch-parlett"`` (on the host) or
        ``"bunch-parlett-device"`` (the OpenCL kernels); ``svd``: ``"qr"``
        (the sweeps ran on ``R^*`` from the row-sorted, column-pivoted QR of
        A or ``A^*`` by LAPACK on the host), ``"qr-device"`` (the same QR by
        the kernels of ``qr.cl.mako``), empty for a zero, empty or 1 x 1 A,
        answered on the host; ``hsvd``: ``"qr"`` when a tall G was shortened to its
        triangular factor, else empty.
    precision : str
        ``"double"`` or ``"single"``: the precision the device computed in
        (single only for float32/complex64 input on a device without fp64).
    seconds : dict
        Wall-clock seconds per phase: ``factorization``, ``transfer``
        (host-device copies), ``sweeps`` (the kernels, status reads
        included), ``sort`` (the packed diagonal), ``total``; with a blocked
        variant also ``blocked_sweeps``, the part of ``sweeps`` spent in the
        blocked kernels.
    strategy : str
        The pivot strategy that ran (``"auto"`` resolved).
    rotation : int
        The rotation algorithm that ran (1, 2 or 3; ``None`` resolved).
    sort_diagonal : bool
        Whether the packed diagonal was sorted after every sweep.
    ranks : int
        Ranks of the communicator the sweeps ran on (``comm=``; 1 without).
        Their sweeps are outermost sweeps over the stripes, and ``seconds``
        has ``communication`` (rank 0's waiting for stripes and reductions)
        and ``distributed`` (rank 0's whole distributed run: scatter,
        sweeps, gather).
    """

    sweeps: int = 0
    rotations: int = 0
    rotations_per_sweep: list[int] = field(default_factory=list)
    converged: bool = True
    rank: int = 0
    positive: int = 0
    breakdown: bool = False
    device: str = ""
    work_group_size: int = 0
    variant: str = "pointwise"
    block_width: int = 0
    matrix_products: str = ""
    blocked_sweeps: int = 0
    certified_sweeps: int = 0
    factorization: str = ""
    precision: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    strategy: str = ""
    rotation: int = 0
    sort_diagonal: bool = True
    ranks: int = 1
