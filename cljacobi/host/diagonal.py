"""The packed diagonal (d, rho, j) of Novaković & Singer 2011, Fig. 3, and its sort."""

from __future__ import annotations

import numpy as np

__all__ = ["DIAG_DTYPE", "DIAG_DTYPE_SINGLE", "sort_diagonal"]

#: The packed-diagonal entry; ``cjac_diag`` of ``pointwise.cl.mako`` is rendered
#: from it (:class:`cljacobi.host.pointwise_plan.PointwiseSpec`): 16 bytes, aligned.
DIAG_DTYPE = np.dtype([("d", np.float64), ("rho", np.int32), ("j", np.int32)], align=True)
#: ``cjac_diag`` of the single precision kernels: float d, then padding to 16 bytes.
DIAG_DTYPE_SINGLE = np.dtype(
    {"names": ["d", "rho", "j"], "formats": [np.float32, np.int32, np.int32],
     "offsets": [0, 4, 8], "itemsize": 16}
)


def sort_diagonal(diagonal: np.ndarray) -> np.ndarray:
    """Sort_Diagonal of Algorithm 4.1 (Sect. 4).

    The entries with positive sign come first, sorted by `d` decreasingly; the
    entries with negative sign follow, sorted increasingly.  The sort is stable,
    so equal keys keep their order and the result is deterministic.
    """
    positive = diagonal[diagonal["j"] > 0]
    negative = diagonal[diagonal["j"] <= 0]
    positive = positive[np.argsort(-positive["d"], kind="stable")]
    negative = negative[np.argsort(negative["d"], kind="stable")]
    return np.concatenate([positive, negative])
