"""Host dense-LA pieces of gsvd at n (the GPU host's cores)."""
import sys, time, cProfile, pstats
import numpy as np, scipy.linalg, scipy.linalg.lapack as lp
n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
rng = np.random.default_rng(0)
A = rng.standard_normal((n, n))
def t(label, f, reps=1):
    s = time.perf_counter(); r = f(); e = time.perf_counter() - s
    print(f"{label:40s} {e:7.3f} s", flush=True); return r
np.show_config() if False else None
t("gemm", lambda: A @ A)
t("qr pivoting r", lambda: scipy.linalg.qr(A, mode="r", pivoting=True))
raw = t("qr pivoting raw", lambda: scipy.linalg.qr(A, mode="raw", pivoting=True))
t("qr pivoting economic (Q formed)", lambda: scipy.linalg.qr(A, mode="economic", pivoting=True))
t("qr no pivoting raw", lambda: scipy.linalg.qr(A, mode="raw"))
(qr, tau), R, p = raw
C = np.asfortranarray(rng.standard_normal((n, n)))
work = lp.dormqr("L", "N", qr, tau, C, -1)[1]
t("dormqr", lambda: lp.dormqr("L", "N", qr, tau, C, int(work[0])))
t("solve(Z^H, I)", lambda: np.linalg.solve(A.T, np.eye(n)))
t("inv", lambda: np.linalg.inv(A))
t("norms", lambda: np.linalg.norm(A, axis=0))
