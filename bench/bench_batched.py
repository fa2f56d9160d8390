"""Stacks of small Hermitian matrices: cljacobi's batched kernel against the peers.

One command, every solver on the same stacks, in one process:

* ``cljacobi`` -- ``eig_indefinite`` on a numpy stack (upload, one launch,
  download) and on a pyopencl stack (device resident: only the per-matrix
  records cross the bus);
* ``cupy.linalg.eigh`` on a CuPy stack (cuSOLVER: its batched Jacobi
  ``syevjBatched`` for stacks up to n = 32, as CuPy picks it), if CuPy is there;
* ``torch.linalg.eigh`` on CUDA, if PyTorch with CUDA is there;
* ``numpy.linalg.eigh`` on the host's cores (LAPACK per matrix).

Per row: seconds (median of ``--repeat`` after a warm-up), matrices per
second, and the accuracy of each on the first ``--check`` matrices of the
stack: the largest eigenvalue error against numpy relative to ``||A||``, the
residual ``max ||A U - U diag(w)|| / ||A||`` and ``max |U^* U - I|``, and
on a stack of graded matrices ``D A D`` (the hard input: eigenvalues from
1e-18 to 10) the largest relative eigenvalue error against cljacobi's
one-matrix path (whose relative accuracy the test suite checks against
mpmath).

    CLJACOBI_DEVICE=nvidia python bench/bench_batched.py \\
        --json bench/results/batched-H200-DATE.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median_time, write_results  # noqa: E402

#: The stacks of the issue: (n, count).
STACKS = [(2, 262_144), (8, 100_000), (32, 10_000), (64, 2_000)]


def hermitian_stack(rng, count, n, complex_):
    X = rng.standard_normal((count, n, n))
    if complex_:
        X = X + 1j * rng.standard_normal((count, n, n))
    return X + np.swapaxes(X, -1, -2).conj()


def graded_stack(rng, count, n, complex_):
    """``D A D`` with ``D = diag(2^k)``, k over -30..0: eigenvalues 1e-18..10."""
    A = hermitian_stack(rng, count, n, complex_)
    k = np.rint(np.linspace(-30, 0, n))
    D = 2.0 ** np.array([rng.permutation(k) for _ in range(count)])
    return D[:, :, None] * A * D[:, None, :]


def accuracy(A, w, U):
    reference = np.linalg.eigvalsh(A)
    scale = np.abs(reference).max(axis=-1)
    record = {"eigenvalue_error": float((np.abs(w - reference).max(axis=-1) / scale).max())}
    if U is not None:
        residual = np.abs(A @ U - U * w[..., None, :]).max(axis=(-2, -1)) / scale
        gram = np.swapaxes(U, -1, -2).conj() @ U - np.eye(A.shape[-1])
        record["residual"] = float(residual.max())
        record["orthogonality"] = float(np.abs(gram).max())
    return record


def relative_error(w, reference):
    return float((np.abs(w - reference) / np.abs(reference)).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", nargs="*", default=[f"{n}x{c}" for n, c in STACKS],
                        help="n x count, e.g. 8x100000")
    parser.add_argument("--dtypes", nargs="*", default=["float64", "complex128"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", type=int, default=200,
                        help="matrices of each stack whose accuracy is measured")
    parser.add_argument("--peers", nargs="*", default=["cupy", "torch", "numpy"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import pyopencl.array as cl_array

    import cljacobi
    from cljacobi.host.device import default_queue

    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# device: {device}")
    rng = np.random.default_rng(2026)
    records = []
    for dtype in args.dtypes:
        complex_ = dtype.startswith("complex")
        for text in args.stacks:
            n, count = (int(x) for x in text.split("x"))
            A = np.ascontiguousarray(hermitian_stack(rng, count, n, complex_))
            check = A[: args.check]
            graded = graded_stack(rng, min(args.check, 64), n, complex_)
            graded_reference = np.array([cljacobi.eig_indefinite(M, variant="pointwise",
                                                                 eigvals_only=True)
                                         for M in graded])

            def report(name, seconds, w, U, w_graded, extra=None):
                row = {"solver": name, "dtype": dtype, "n": n, "count": count,
                       "seconds": seconds, "matrices_per_second": count / seconds,
                       **accuracy(check, w, U),
                       "graded_relative_error": relative_error(w_graded, graded_reference),
                       **(extra or {})}
                records.append(row)
                print(f"{dtype:10s} n={n:3d} x{count:7d}  {name:26s} {seconds:9.4f} s "
                      f"{row['matrices_per_second']:11.0f}/s  eig {row['eigenvalue_error']:.1e}"
                      f"  res {row.get('residual', float('nan')):.1e}"
                      f"  orth {row.get('orthogonality', float('nan')):.1e}"
                      f"  graded {row['graded_relative_error']:.1e}", flush=True)

            # cljacobi, host stack in and out
            seconds, _, (w, U) = median_time(lambda: cljacobi.eig_indefinite(A), args.repeat)
            _, infos = cljacobi.eig_indefinite(check, return_info=True, eigvals_only=True)
            w_graded = cljacobi.eig_indefinite(graded, eigvals_only=True)
            sweeps = [info.sweeps for info in infos]
            report("cljacobi (numpy stack)", seconds, w[: args.check], U[: args.check],
                   w_graded, {"sweeps_mean": float(np.mean(sweeps)),
                              "sweeps_max": int(np.max(sweeps)),
                              "variant": infos[0].variant})
            del w, U
            # cljacobi, device stack in and out
            d_A = cl_array.to_device(queue, A)

            def on_device():
                result = cljacobi.eig_indefinite(d_A)
                queue.finish()
                return result

            seconds, _, (d_w, d_U) = median_time(on_device, args.repeat)
            report("cljacobi (device stack)", seconds, d_w[: args.check].get(),
                   d_U[: args.check].get(), w_graded)
            del d_A, d_w, d_U

            if "cupy" in args.peers:
                try:
                    import cupy

                    c_A = cupy.asarray(A)

                    def cupy_eigh():
                        result = cupy.linalg.eigh(c_A)
                        cupy.cuda.Device().synchronize()
                        return result

                    seconds, _, (c_w, c_U) = median_time(cupy_eigh, args.repeat)
                    g_w = cupy.asnumpy(cupy.linalg.eigh(cupy.asarray(graded))[0])
                    report("cupy.linalg.eigh", seconds, cupy.asnumpy(c_w[: args.check]),
                           cupy.asnumpy(c_U[: args.check]), g_w)
                    del c_A, c_w, c_U
                except Exception as error:  # noqa: BLE001 - a missing peer is reported
                    print(f"# cupy: {error!r}")
            if "torch" in args.peers:
                try:
                    import torch

                    t_A = torch.from_numpy(A).cuda()

                    def torch_eigh():
                        result = torch.linalg.eigh(t_A)
                        torch.cuda.synchronize()
                        return result

                    seconds, _, (t_w, t_U) = median_time(torch_eigh, args.repeat)
                    g_w = torch.linalg.eigh(torch.from_numpy(graded).cuda())[0].cpu().numpy()
                    report("torch.linalg.eigh (cuda)", seconds, t_w[: args.check].cpu().numpy(),
                           t_U[: args.check].cpu().numpy(), g_w)
                    del t_A, t_w, t_U
                except Exception as error:  # noqa: BLE001
                    print(f"# torch: {error!r}")
            if "numpy" in args.peers:
                seconds, _, (n_w, n_U) = median_time(lambda: np.linalg.eigh(A), args.repeat)
                report("numpy.linalg.eigh (host)", seconds, n_w[: args.check],
                       n_U[: args.check], np.linalg.eigvalsh(graded))
    write_results(args.json, "batched", device, records)


if __name__ == "__main__":
    main()
