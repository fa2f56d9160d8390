"""Sweeps of the one-sided Jacobi SVD on graded singular values, with and without
the QR preconditioning of xGEJSV.

svd: ``A = X diag(sigma) Y^*`` (n x n, Haar X and Y, ``sigma`` log-uniform in
``[1e-5, 1]`` or ``[1e-12, 1]``) beside a standard normal ``A``.  Two rows per
case: Jacobi on ``A`` itself (what ``svd`` ran on a square ``A`` before the
preconditioning; ``hsvd(A, ones)`` runs it, same kernels, same rotations) and
``svd(A)`` (Jacobi on ``R^*`` from the row-sorted, column-pivoted QR
``A P = Q R``; Drmač & Veselić 2008).

hsvd: can the left QR help the hyperbolic sweeps too?  ``G P = Q R`` is
admissible (``J`` is only permuted), ``R^*`` is not.  Two rows per input:
``hsvd(G, J)`` and ``hsvd`` of ``R`` (columns ordered by sign) from
:func:`cljacobi.shortening.pivoted_qr`.  Inputs: ``G`` with graded singular
values and random signs, a standard normal ``G``, and the Bunch-Parlett
factor of ``eig_indefinite``'s matrix with the 2011 paper's spectrum.

    python bench/bench_svd_sweeps.py --sizes 256 --seeds 3

Writes ``bench/results/svd-sweeps[-complex]-<device>-<date>.json`` and
``.md`` (or ``--out PREFIX``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
from pathlib import Path

import numpy as np
from common import write_results

import cljacobi
from cljacobi.factorization import j_factorize
from cljacobi.host.device import default_queue
from cljacobi.matrices import paper_spectrum, with_singular_values, with_spectrum
from cljacobi.shortening import pivoted_qr

RESULTS = Path(__file__).resolve().parent / "results"


def _svd_inputs(n: int, rng: np.random.Generator, dtype: np.dtype) -> dict[str, np.ndarray]:
    normal = rng.standard_normal((n, n))
    if dtype.kind == "c":
        normal = normal + 1j * rng.standard_normal((n, n))
    inputs = {"standard normal": normal}
    for low in (-5, -12):
        sigma = 10.0 ** rng.uniform(low, 0, n)
        inputs[f"sigma log-uniform in [1e{low}, 1]"] = with_singular_values(
            sigma, n, rng=rng, dtype=dtype)
    return inputs


def _hsvd_inputs(n: int, rng: np.random.Generator, dtype: np.dtype):
    """``{name: (G, J)}``."""
    signs = np.where(rng.permutation(n) < n // 2, 1, -1)
    sigma = 10.0 ** rng.uniform(-5, 0, n)
    normal = rng.standard_normal((n, n))
    if dtype.kind == "c":
        normal = normal + 1j * rng.standard_normal((n, n))
    M = with_spectrum(paper_spectrum(n, rng=rng), rng=rng, dtype=dtype)
    factor = j_factorize(M)
    return {
        "G with sigma log-uniform in [1e-5, 1], J half +1": (
            with_singular_values(sigma, n, rng=rng, dtype=dtype), signs),
        "G standard normal, J half +1": (normal, signs),
        "Bunch-Parlett G of the 2011 paper's M": (factor.G, factor.signs),
    }


def _left_qr(G: np.ndarray, J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``R`` of ``G P = Q R`` with its columns ordered by sign, and ``J`` permuted alike."""
    _, R, columns = pivoted_qr(G, compute_q=False)
    by_sign = np.argsort(-J[columns], kind="stable")
    return R[:, by_sign], J[columns][by_sign]


def _markdown(payload: dict) -> str:
    title = ("# Jacobi sweeps with and without the QR preconditioning "
             f"({payload['device']}, {payload['date'][:10]})")
    source = (f"`bench/bench_svd_sweeps.py`, {payload['dtype']}, sweeps over "
              f"{payload['seeds']} seeds (min / median / max) and median seconds.")
    lines = [title, "", source, ""]
    for section in ("svd", "hsvd"):
        lines += [f"## {section}", "", "| n | input | solve | sweeps | seconds |",
                  "| --- | --- | --- | --- | --- |"]
        records = [r for r in payload["records"] if r["section"] == section]
        keys = list(dict.fromkeys((r["n"], r["input"], r["solve"]) for r in records))
        for n, name, solve in keys:
            rows = [r for r in records if (r["n"], r["input"], r["solve"]) == (n, name, solve)]
            sweeps = [r["sweeps"] for r in rows]
            seconds = statistics.median(r["seconds"] for r in rows)
            lines.append(f"| {n} | {name} | {solve} | {min(sweeps)} / "
                         f"{statistics.median(sweeps):g} / {max(sweeps)} | {seconds:.3f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--dtype", default="float64", choices=["float64", "complex128"])
    parser.add_argument("--out", type=Path, default=None,
                        help="output path prefix (default bench/results/svd-sweeps-DEVICE-DATE)")
    args = parser.parse_args()
    dtype = np.dtype(args.dtype)
    queue = default_queue()
    device = queue.device.name.strip()
    cljacobi.svd(np.eye(4), queue=queue)  # build the programs once

    records = []

    def record(section, n, seed, name, solve, info):
        records.append({"section": section, "n": n, "seed": seed, "input": name,
                        "solve": solve, "sweeps": info.sweeps, "rotations": info.rotations,
                        "seconds": info.seconds["total"], "variant": info.variant})
        print(f"{section} n={n} seed={seed} {name}: {solve}: {info.sweeps} sweeps, "
              f"{info.seconds['total']:.3f} s", flush=True)

    for n in args.sizes:
        for seed in range(args.seeds):
            rng = np.random.default_rng(seed)
            for name, A in _svd_inputs(n, rng, dtype).items():
                _, before = cljacobi.hsvd(A, np.ones(n), compute_uv=False, return_info=True,
                                          queue=queue)
                record("svd", n, seed, name, "Jacobi on A (before)", before)
                _, after = cljacobi.svd(A, compute_uv=False, return_info=True, queue=queue)
                record("svd", n, seed, name, "svd: Jacobi on R^* (after)", after)
            for name, (G, J) in _hsvd_inputs(n, rng, dtype).items():
                _, plain = cljacobi.hsvd(G, J, compute_uv=False, return_info=True, queue=queue)
                record("hsvd", n, seed, name, "hsvd(G, J)", plain)
                R, J_R = _left_qr(G, J)
                _, left = cljacobi.hsvd(R, J_R, compute_uv=False, return_info=True, queue=queue)
                record("hsvd", n, seed, name, "hsvd(R, J P), G P = Q R", left)

    date = dt.datetime.now(dt.timezone.utc)
    if args.out is None:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", device).strip("-").lower()[:40]
        kind = "-complex" if dtype.kind == "c" else ""
        out = RESULTS / f"svd-sweeps{kind}-{slug}-{date:%Y-%m-%d}"
    else:
        out = args.out
    write_results(out.with_suffix(".json"), "svd sweeps with and without the QR "
                  f"preconditioning, {dtype}", device, records)
    payload = {"device": device, "date": date.isoformat(), "dtype": str(dtype),
               "seeds": args.seeds, "records": records}
    table = _markdown(payload)
    print("\n" + table)
    out.with_suffix(".md").write_text(table)
    print(f"# wrote {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
