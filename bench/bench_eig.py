"""eig_indefinite beside LAPACK and cuSOLVER, on the same matrices, in one process.

Matrices: the family of Novaković & Singer 2011, Sect. 5 -- random spectra
uniform in [-a, -a 1e-5] U [a 1e-5, a], a from their Table 2, about half of
the eigenvalues positive -- built as Q diag(lambda) Q^T.

Peers (each when importable): numpy.linalg.eigh (LAPACK syevd),
cupy.linalg.eigh (cuSOLVER syevd), cupyx.cusolver.syevj (cuSOLVER Jacobi).

For each n and solver: median seconds over --repeat runs after one untimed run,
relative eigenvalue errors against the prescribed spectrum, ||I - U^T U||_F,
||M U - U diag(w)||_F / ||M||_F, and for cljacobi the sweeps, rotations and the
per-phase time split.  Writes JSON (and a markdown table on stdout).

    python bench/bench_eig.py --sizes 1024 2048 4096 --out bench/results/eig.json

Complex Hermitian matrices (same spectra, Haar unitary eigenvectors), with
both device storage layouts of complex data timed side by side:

    python bench/bench_eig.py --dtype complex128 --layout interleaved split \
        --sizes 1024 2048 4096 --out bench/results/eig-complex.json

Hard inputs (real), each beside its easy counterpart of the same order
(``--family``):

* ``graded``: ``A = B + B^T + 30 diag(+-1)`` (B standard normal) and
  ``M = D A D``, ``d_i = 2^-k_i`` with ``k_i`` random integers in [0, 40],
  sorted;
* ``rank``: ``G J G^T`` with ``G`` n x r standard normal, r = n/2, n/10 and 1,
  J random signs, plain and graded (``D G J G^T D``, D as above), after the
  full-rank ``A`` of the graded family, the time they are held to;
* ``definite``: positive definite ``Q diag(|lambda|) Q^T`` (the paper's
  spectra, their moduli), positive definite graded ``D A D`` (``A = B B^T / n
  + I``, D as above) and positive semidefinite ``G G^T`` of rank n/10; with
  ``--factorization auto host`` the device's complete pivoting beside the
  host's pivoted Cholesky (``xPSTRF``);
* ``cluster``: the paper's spectra beside two clustered ones,
  ``Q diag(+1 (n/2 times), -1 (n/2 times)) Q^T`` and the same with every
  eigenvalue moved by a relative ``1e-10 u``, u uniform in [-1, 1] (tight but
  distinct); their reference is the prescribed spectrum.

Their reference is the singular values of the matrix by LAPACK ``dgejsv``
(preconditioned one-sided Jacobi, relatively accurate on such data): the
error reported is that of the sorted ``|lambda|``, for the nonzero ones
relative, for the (n - r) zero ones against ``||M||``.  ``--factorization``
times the J-factorization's host and device versions side by side:

    python bench/bench_eig.py --family graded --sizes 1024 2048 4096 \
        --factorization auto host --out bench/results/eig-graded.json
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
from common import eigh_peers, environment, median_time, write_results

import cljacobi
from cljacobi.host.device import default_queue
from cljacobi.host.matrix_products import ENV_VAR as PRODUCTS_ENV
from cljacobi.host.matrix_products import MATRIX_PRODUCTS
from cljacobi.host.pointwise import FINISHING_ENV, FINISHINGS
from cljacobi.matrices import paper_spectrum, with_spectrum


def _magnitudes(M):
    """Singular values of M (descending) by LAPACK dgejsv: the reference |lambda|."""
    from scipy.linalg import lapack

    sva, *_, work, _iwork, info = lapack.dgejsv(M, joba=2, jobu=3, jobv=3)
    if info != 0:
        raise RuntimeError(f"dgejsv failed, info = {info}")
    return np.sort(sva * (work[0] / work[1]))[::-1]


class Problem:
    """One test matrix and its reference: the exact spectrum (sorted), or the
    magnitudes of the eigenvalues and the rank."""

    def __init__(self, label, M, *, spectrum=None, rank=None):
        self.label, self.M = label, M
        self.spectrum = spectrum
        self.magnitudes = _magnitudes(M) if spectrum is None else None
        self.rank = M.shape[0] if rank is None else rank

    def accuracy(self, w, U):
        if self.spectrum is not None:
            rel = np.abs(w - self.spectrum) / np.abs(self.spectrum)
            zeros = np.zeros(0)
        else:
            r = self.rank
            ours = np.sort(np.abs(w))[::-1]
            rel = np.abs(ours[:r] - self.magnitudes[:r]) / self.magnitudes[:r]
            zeros = ours[r:] / np.linalg.norm(self.M, 2)
        out = {"max_rel_eig_error": float(rel.max()), "median_rel_eig_error": float(np.median(rel)),
               "max_zero_eig": float(zeros.max(initial=0.0))}
        return {**out, **_vector_accuracy(self.M, w, U)}


def graded_family(n, rng):
    """The graded family: A = B + B^T + 30 diag(+-1) and D from 2^-k, k in [0, 40] sorted."""
    B = rng.standard_normal((n, n))
    A = B + B.T + 30 * np.diag(rng.choice([-1.0, 1.0], n))
    d = 2.0 ** -np.sort(rng.integers(0, 41, n))
    return A, d


def _problems(family, n, rng, dtype):
    if family == "paper":
        lam = paper_spectrum(n, rng=rng)
        return [Problem("paper", with_spectrum(lam, rng=rng, dtype=dtype), spectrum=np.sort(lam))]
    if family == "graded":
        A, d = graded_family(n, rng)
        return [Problem("A", A), Problem("DAD", d[:, None] * A * d[None, :])]
    if family == "cluster":
        lam = paper_spectrum(n, rng=rng)
        problems = [Problem("paper", with_spectrum(lam, rng=rng, dtype=dtype),
                            spectrum=np.sort(lam))]
        signs = np.repeat([1.0, -1.0], [n - n // 2, n // 2])
        for label, spectrum in (("+-1 clusters", signs),
                                ("+-1 clusters, 1e-10 apart",
                                 signs * (1 + 1e-10 * rng.uniform(-1, 1, n)))):
            problems.append(Problem(label, with_spectrum(spectrum, rng=rng, dtype=dtype),
                                    spectrum=np.sort(spectrum)))
        return problems
    if family == "definite":
        lam = np.abs(paper_spectrum(n, rng=rng))
        B = rng.standard_normal((n, n))
        A = B @ B.T / n + np.eye(n)
        d = 2.0 ** -np.sort(rng.integers(0, 41, n))
        G = rng.standard_normal((n, max(n // 10, 1)))
        return [Problem("paper, |lambda|", with_spectrum(lam, rng=rng, dtype=dtype),
                        spectrum=np.sort(lam)),
                Problem("DAD, A = B B^T / n + I", d[:, None] * A * d[None, :]),
                Problem(f"G G^T, rank {G.shape[1]}", G @ G.T, rank=G.shape[1])]
    A, d = graded_family(n, rng)
    problems = [Problem("A (full rank, for scale)", A)]
    for r in sorted({n // 2, max(n // 10, 1), 1}, reverse=True):
        G = rng.standard_normal((n, r))
        GJ = G * rng.choice([-1.0, 1.0], r)
        M = GJ @ G.T
        M = (M + M.T) / 2
        problems.append(Problem(f"rank {r}", M, rank=r))
        problems.append(Problem(f"rank {r}, DMD", d[:, None] * M * d[None, :], rank=r))
    return problems


def _vector_accuracy(M, w, U):
    out = {}
    if U is not None:
        n = M.shape[0]
        out["orthogonality"] = float(np.linalg.norm(U.conj().T @ U - np.eye(n)))
        out["residual"] = float(np.linalg.norm(M @ U - U * w) / np.linalg.norm(M))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repeat-large", type=int, default=1,
                        help="repeats for n >= 4096 (cljacobi and numpy)")
    parser.add_argument("--seed", type=int, default=2011)
    parser.add_argument("--skip", nargs="*", default=[], help="peer names to skip")
    parser.add_argument("--numpy-max", type=int, default=4096, help="largest n for numpy.eigh")
    parser.add_argument("--variants", nargs="+", default=["auto"],
                        help="cljacobi variants to time: auto, pointwise, bo:W, fb:W")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--dtype", choices=["float64", "complex128"], default="float64",
                        help="real symmetric or complex Hermitian test matrices")
    parser.add_argument("--layout", nargs="+", choices=["interleaved", "split"],
                        default=[None], help="complex storage layout(s) on the device; each "
                        "is timed as its own solver (default: the library's choice)")
    parser.add_argument("--family", choices=["paper", "graded", "rank", "cluster", "definite"],
                        default="paper",
                        help="test matrices (see the module docstring)")
    parser.add_argument("--factorization", nargs="+", default=["auto"],
                        choices=["auto", "host", "device"],
                        help="eig_indefinite's factorization= values to time")
    parser.add_argument("--matrix-products", nargs="+", default=["auto"],
                        choices=["auto", *MATRIX_PRODUCTS],
                        help="forms of the blocked Gram and update kernels to time "
                        f"(through {PRODUCTS_ENV}; each is its own solver)")
    parser.add_argument("--finishing", nargs="+", default=["certified"], choices=FINISHINGS,
                        help="how the pointwise sweeps after blocked ones go (through "
                        f"{FINISHING_ENV}; each is its own solver)")
    args = parser.parse_args()
    dtype = np.dtype(args.dtype)
    if args.family in ("graded", "rank", "definite") and dtype.kind == "c":
        parser.error("--family graded, rank and definite are real")
    layouts = args.layout if dtype.kind == "c" else [None]

    queue = default_queue()
    device = queue.device.name.strip()
    print(f"# cljacobi device: {device}")
    peers = {k: v for k, v in eigh_peers().items() if k not in args.skip}
    rng = np.random.default_rng(args.seed)

    # Peers that cannot take this dtype are dropped here; every solver's first
    # call at each size is an untimed warm-up (median_time).
    warm = with_spectrum(paper_spectrum(512, rng=rng), rng=rng, dtype=dtype)
    for name, solve in list(peers.items()):
        try:
            solve(warm)
        except Exception as error:
            print(f"# peer {name} fails on {dtype.name} input, skipped: {error!r}")
            del peers[name]

    records = []
    for n in args.sizes:
        repeat = args.repeat_large if n >= 4096 else args.repeat
        for problem in _problems(args.family, n, rng, dtype):
            M = problem.M
            for layout, variant_spec, factorization, products, finishing in itertools.product(
                    layouts, args.variants, args.factorization, args.matrix_products,
                    args.finishing):
                records.append(_run_cljacobi(problem, n, dtype, layout, variant_spec,
                                             factorization, repeat, products, finishing))
            for name, solve in peers.items():
                if name == "numpy.eigh" and n > args.numpy_max:
                    continue
                reps = repeat if name == "numpy.eigh" else max(repeat, 3)
                seconds, times, (w, U) = median_time(lambda: solve(M), reps)
                records.append({"n": n, "problem": problem.label, "solver": name,
                                "dtype": dtype.name, "seconds": seconds, "all_seconds": times,
                                **problem.accuracy(np.asarray(w), np.asarray(U))})
                print(f"n={n} {problem.label} {name} {seconds:.3f}s", flush=True)

    # Markdown table: one row per n and problem, ratios cljacobi / peer.
    print("\n(ratio: the fastest cljacobi variant's seconds / the solver's seconds)")
    print("\n| n | problem | solver | seconds | cljacobi / solver | sweeps | rank "
          "| max rel. eig. error | max zero eig. | ||I-U^TU|| | residual |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key in dict.fromkeys((r["n"], r["problem"]) for r in records):
        rows = [r for r in records if (r["n"], r["problem"]) == key]
        ours = min((r for r in rows if r["solver"].startswith("cljacobi")),
                   key=lambda r: r["seconds"])
        for r in rows:
            ratio = ours["seconds"] / r["seconds"]
            print(f"| {key[0]} | {key[1]} | {r['solver']} | {r['seconds']:.4g} | {ratio:.3g} | "
                  f"{r.get('sweeps', '')} | {r.get('rank', '')} | "
                  f"{r['max_rel_eig_error']:.2e} | {r['max_zero_eig']:.1e} | "
                  f"{r.get('orthogonality', float('nan')):.1e} | "
                  f"{r.get('residual', float('nan')):.1e} |")

    titles = {"paper": "Novakovic-Singer 2011 spectra", "graded": "graded D A D beside A",
              "rank": "rank-deficient G J G^T, plain and graded",
              "cluster": "clustered spectra beside the paper's",
              "definite": "definite and semidefinite matrices"}
    write_results(args.out, f"eig_indefinite, {titles[args.family]}, {dtype.name}",
                  device, records)


def _run_cljacobi(problem, n, dtype, layout, variant_spec, factorization, repeat,
                  products="auto", finishing="certified"):
    """Time eig_indefinite on one problem with one set of options; its record."""
    variant, _, width = variant_spec.partition(":")
    options = {"variant": variant, "block_width": int(width) if width else None,
               "factorization": factorization, "_layout": layout}
    with environment(**{PRODUCTS_ENV: products, FINISHING_ENV: finishing}):
        seconds, times, (result, info) = median_time(
            lambda: cljacobi.eig_indefinite(problem.M, return_info=True, **options), repeat)
    name = f"cljacobi[{variant_spec}" + (f",{layout}" if layout else "") + (
        f",{factorization}" if factorization != "auto" else "") + (
        f",{products}" if products != "auto" else "") + (
        f",{finishing}]" if finishing != "certified" else "]")
    rec = {
        "n": n, "problem": problem.label, "solver": name, "dtype": dtype.name,
        "layout": layout, "seconds": seconds, "all_seconds": times,
        "variant": info.variant, "block_width": info.block_width,
        "matrix_products": info.matrix_products,
        "sweeps": info.sweeps, "blocked_sweeps": info.blocked_sweeps,
        "certified_sweeps": info.certified_sweeps,
        "rotations": info.rotations, "rotations_per_sweep": info.rotations_per_sweep,
        "phases": info.seconds, "work_group_size": info.work_group_size,
        "factorization": info.factorization, "rank": info.rank,
        **problem.accuracy(result.eigenvalues, result.eigenvectors),
    }
    if info.blocked_sweeps:
        # Gram (2 m K^2) and update (2 m K^2) per block pair, K = 2w:
        # 8 m r^2 flops per blocked sweep on the square factor (m = r = n),
        # four times as many real flops for complex data.
        flops = 8.0 * n**3 * info.blocked_sweeps * (4 if dtype.kind == "c" else 1)
        rec["block_step_gflops"] = flops / info.seconds["blocked_sweeps"] / 1e9
    print(f"n={n} {problem.label} {name} {seconds:.3f}s sweeps={info.sweeps} "
          f"[{info.matrix_products or 'pointwise'}] "
          f"(blocked {info.blocked_sweeps}, certified {info.certified_sweeps}) rank={info.rank} {info.factorization} "
          + ", ".join(f"{k}={v:.3f}" for k, v in info.seconds.items())
          + (f" block GFLOP/s={rec['block_step_gflops']:.1f}"
             if "block_step_gflops" in rec else ""), flush=True)
    return rec

if __name__ == "__main__":
    main()
