"""cljacobi: Jacobi-type eigensolvers and SVDs on any OpenCL device.

The headline call is :func:`eig_indefinite`, the eigendecomposition of a real
symmetric or complex Hermitian, possibly indefinite, matrix with high relative
accuracy: factor ``M = G J G^*`` with complete pivoting (pivoted Cholesky when
that proves M definite with a margin), then orthogonalize the columns of G by one-sided hyperbolic
Jacobi rotations on the device ``CLJACOBI_DEVICE`` names (Novaković & Singer,
BIT 51, 2011).  :func:`svd` is the same method with ``J = I``;
:func:`gsvd` the generalized SVD by the implicit Hari-Zimmermann method;
:func:`eigh` takes scipy's conventions and also runs the classical
two-sided Jacobi method.  With ``comm=`` (an ``mpi4py`` communicator) the
sweeps run on all its ranks, one device each (:mod:`cljacobi.distributed`).
"""

from ._results import EighResult, HSVDResult, SolveInfo
from .eig import eig_indefinite, hsvd
from .eigh import eigh
from .errors import (
    ConvergenceError,
    ConvergenceWarning,
    DeviceCapabilityError,
    DeviceMemoryError,
    DeviceNotFoundError,
    DistributedError,
)
from .gsvd import GSVDResult, gsvd, gsvdvals
from .host.device import show_devices
from .svd import SVDResult, svd

__all__ = [
    "ConvergenceError",
    "ConvergenceWarning",
    "DeviceCapabilityError",
    "DeviceMemoryError",
    "DeviceNotFoundError",
    "DistributedError",
    "EighResult",
    "GSVDResult",
    "HSVDResult",
    "SVDResult",
    "SolveInfo",
    "eig_indefinite",
    "eigh",
    "gsvd",
    "gsvdvals",
    "hsvd",
    "show_devices",
    "svd",
]

__version__ = "0.1.0"
