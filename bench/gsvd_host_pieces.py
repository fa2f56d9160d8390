"""The host's dense linear algebra in gsvd, piece by piece, at one order.

Times (one run each, on the host's cores through numpy/scipy's LAPACK) the
pieces of ``cljacobi.gsvd`` that run on the host at order n: the
column-pivoted QR that shortens A or B (xGEQP3), an unpivoted one (xGEQRF,
for comparison), the application of Q to U (xORMQR), the LU solve for X,
and a GEMM for scale.

    python bench/gsvd_host_pieces.py 4096
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.linalg
import scipy.linalg.lapack as lapack


def _time(label: str, function) -> object:
    start = time.perf_counter()
    result = function()
    print(f"{label:40s} {time.perf_counter() - start:7.3f} s", flush=True)
    return result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n))
    _time("DGEMM", lambda: A @ A)
    (qr, tau), _, _ = _time("xGEQP3 (pivoted QR, reflectors)",
                            lambda: scipy.linalg.qr(A, mode="raw", pivoting=True))
    _time("xGEQP3 with Q formed", lambda: scipy.linalg.qr(A, mode="economic", pivoting=True))
    _time("xGEQRF (unpivoted QR)", lambda: scipy.linalg.qr(A, mode="raw"))
    C = np.asfortranarray(rng.standard_normal((n, n)))
    work = lapack.dormqr("L", "N", qr, tau, C, -1)[1]
    _time("xORMQR (Q U)", lambda: lapack.dormqr("L", "N", qr, tau, C, int(work[0])))
    _time("LU solve for X (Z^H X = I)", lambda: np.linalg.solve(A.T, np.eye(n)))


if __name__ == "__main__":
    main()
