"""Sweeps per pivot strategy, rotation algorithm and diagonal sort.

Reproduces the convergence findings of

* Zhou & Brent (1997), Tables I-V: ordinary one-sided Jacobi SVD (J = I) of
  random n x n matrices -- sorting rotations (algorithms 2 and 3) need fewer
  sweeps than algorithm 1 with the sequential cyclic order and with the ring
  ordering (their Tables I and III), round-robin with index sorting needs
  more (their Table II);
* Novaković & Singer (2011), Table 3: in the hyperbolic case sorting the
  packed diagonal saves sweeps and time, and the definite cases (p = 0 or
  p = n positive signs) are the fastest.

Cases: ``svd`` runs ``hsvd(A, ones)`` on a standard normal n x n ``A``;
``p=<k>`` runs ``eig_indefinite(M)`` on ``M = Q diag(lambda) Q^T`` with the
2011 paper's random spectrum (Sect. 5, Table 2) with ``k`` positive
eigenvalues, so that J has k positive signs.  ``--clusters`` adds spectra
with clusters of equal eigenvalues (:data:`CLUSTERS`), where Jacobi methods
need their rotations to leave rounding noise alone and their orderings to
meet the columns of a cluster close together.  Every configuration
(strategy x rotation x sort) runs on the same matrices; sweeps are
deterministic (the same on every device up to rounding), seconds are the
device's.

    python bench/bench_strategies.py --sizes 64 128 256 --seeds 3
    python bench/bench_strategies.py --sizes 512 1024 2048 --seeds 2   # on a GPU
    python bench/bench_strategies.py --sizes 100 300 --seeds 2 --rotations 1 2 \
        --clusters pm1 three tight svd-pairs

Writes ``bench/results/strategies-<device>-<date>.json`` and ``.md`` (or
``--out PREFIX``): the markdown has the mean sweeps per configuration and n
for each case, and a Table-3-like summary for the default strategy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import platform
import re
import statistics
import time
from pathlib import Path

import numpy as np

import cljacobi
from cljacobi.host.device import default_queue
from cljacobi.matrices import _random_orthogonal, paper_spectrum, with_spectrum
from cljacobi.options import DEFAULTS, ROTATIONS
from cljacobi.strategies import STRATEGIES

RESULTS = Path(__file__).resolve().parent / "results"

#: The cluster cases of ``--clusters``: name -> what it is.
CLUSTERS = {
    "pm1": "eig_indefinite, eigenvalues +1 and -1, n/2 each",
    "three": "eig_indefinite, eigenvalues 3, 1, -2 (n/4 each) and n/4 in -[1, 5]",
    "tight": "eig_indefinite, 1 + 1e-13 k and -(2 + 1e-13 k), n/2 each",
    "svd-pairs": "hsvd(A, ones), singular values 1 and 2, n/2 each",
}


def _cluster_spectrum(case: str, n: int, rng: np.random.Generator) -> np.ndarray:
    half, quarter = n // 2, n // 4
    if case == "pm1":
        return np.concatenate([np.ones(half), -np.ones(n - half)])
    if case == "three":
        return np.concatenate([np.full(quarter, 3.0), np.full(quarter, 1.0),
                               np.full(quarter, -2.0), -rng.uniform(1, 5, n - 3 * quarter)])
    if case == "tight":
        return np.concatenate([1 + 1e-13 * np.arange(half), -2 - 1e-13 * np.arange(n - half)])
    if case == "svd-pairs":
        return np.concatenate([np.ones(half), np.full(n - half, 2.0)])
    raise ValueError(f"unknown cluster case {case!r}; known: {list(CLUSTERS)}")


def _cases(n: int, ps: list[str]) -> list[tuple[str, int]]:
    """``(case name, positive signs)``: ``svd`` and ``p=k`` for k in the fractions."""
    out = [("svd", n)]
    for frac in ps:
        num, _, den = frac.partition("/")
        k = int(round(n * int(num) / int(den or 1)))
        out.append((f"p={k}", k))
    return out


def _problem(case: str, n: int, p: int, seed: int):
    """The matrix of one case and a function computing (result, info, error)."""
    rng = np.random.default_rng([seed, n, p, case == "svd"])
    if case in CLUSTERS:
        rng = np.random.default_rng([seed, n, list(CLUSTERS).index(case), 7])
    if case in ("svd", "svd-pairs"):
        if case == "svd":
            A = rng.standard_normal((n, n))
            reference = np.linalg.svd(A, compute_uv=False)
        else:
            reference = _cluster_spectrum(case, n, rng)[::-1]
            A = (_random_orthogonal(n, rng, False) * reference) @ _random_orthogonal(
                n, rng, False).T

        def solve(**options):
            (S, _), info = cljacobi.hsvd(A, np.ones(n), compute_uv=False, return_info=True,
                                        **options)
            return info, float(np.max(np.abs(S - reference) / reference))
        return solve
    lam = _cluster_spectrum(case, n, rng) if case in CLUSTERS else paper_spectrum(n, p=p,
                                                                                  rng=rng)
    M = with_spectrum(lam, rng=rng)
    lam_sorted = np.sort(lam)

    def solve(**options):
        w, info = cljacobi.eig_indefinite(M, eigvals_only=True, return_info=True, **options)
        return info, float(np.max(np.abs(w - lam_sorted) / np.abs(lam_sorted)))
    return solve


def _label(strategy: str, rotation: int) -> str:
    return f"{strategy}/{rotation}"


def _markdown(payload: dict) -> str:
    records = payload["records"]
    sizes = sorted({r["n"] for r in records})
    configs = list(dict.fromkeys((r["strategy"], r["rotation"]) for r in records))
    sorts = sorted({r["sort_diagonal"] for r in records}, reverse=True)

    def mean_sweeps(**key):
        sel = [r["sweeps"] for r in records if all(r[k] == v for k, v in key.items())]
        return statistics.mean(sel) if sel else None

    def fmt(x):
        return "" if x is None else f"{x:.1f}"

    lines = [
        f"# Sweeps per strategy, rotation algorithm and sort ({payload['device']}, "
        f"{payload['date'][:10]})",
        "",
        f"Mean sweeps over {payload['seeds']} seeds (`bench/bench_strategies.py`).  A sweep is "
        "r steps for `mm` (quasi-sweep) and r - 1 for the cyclic strategies.  "
        "`strategy/rotation`; `sorted` = packed diagonal sorted after every sweep "
        "(Novaković & Singer 2011, Sect. 4), `unsorted` = `sort_diagonal=False`.",
        "",
    ]
    for case in dict.fromkeys(r["case_kind"] for r in records):
        if case == "cluster":
            lines += _cluster_markdown(records, sizes, configs, sorts, mean_sweeps, fmt)
            continue
        title = ("Ordinary SVD, J = I: `hsvd(A, ones)`, A standard normal n x n "
                 "(Zhou & Brent 1997, Tables I-V)" if case == "svd" else
                 "Hyperbolic: `eig_indefinite` on the 2011 paper's spectra, p positive signs "
                 "(Novaković & Singer 2011, Table 3)")
        lines += [f"## {title}", ""]
        if case == "svd":
            cols = [(n, s) for n in sizes for s in sorts]
            lines.append("| strategy/rotation | " + " | ".join(
                f"n={n} {'sorted' if s else 'unsorted'}" for n, s in cols) + " |")
            lines.append("| --- |" + " --- |" * len(cols))
            for strat, rot in configs:
                lines.append(f"| {_label(strat, rot)} | " + " | ".join(
                    fmt(mean_sweeps(case="svd", n=n, sort_diagonal=s, strategy=strat,
                                    rotation=rot)) for n, s in cols) + " |")
            lines.append("")
            continue
        for n in sizes:
            ps = sorted({r["p"] for r in records if r["n"] == n and r["case_kind"] == "p"})
            cols = [(p, s) for p in ps for s in sorts]
            lines += [f"### n = {n}", ""]
            lines.append("| strategy/rotation | " + " | ".join(
                f"p={p} {'sorted' if s else 'unsorted'}" for p, s in cols) + " |")
            lines.append("| --- |" + " --- |" * len(cols))
            for strat, rot in configs:
                lines.append(f"| {_label(strat, rot)} | " + " | ".join(
                    fmt(mean_sweeps(case_kind="p", n=n, p=p, sort_diagonal=s, strategy=strat,
                                    rotation=rot)) for p, s in cols) + " |")
            lines.append("")
    # Table-3-like summary for the default strategy (of this cljacobi).
    strat, rot = DEFAULTS["pointwise"]
    lines += [f"## Default `{_label(strat, rot)}`: sweeps and seconds by p (as the 2011 "
              "paper's Table 3)", "",
              "Seconds: wall clock of one `eig_indefinite` call on this device (factorization "
              "included), mean over the seeds; on a shared CPU they are noisy.", "",
              "| n | p | sweeps sorted | seconds sorted | sweeps unsorted | seconds unsorted |",
              "| --- | --- | --- | --- | --- | --- |"]
    for n in sizes:
        for p in sorted({r["p"] for r in records if r["n"] == n and r["case_kind"] == "p"}):
            row = [str(n), str(p)]
            for s in (True, False):
                sel = [r for r in records if r["n"] == n and r["p"] == p
                       and r["case_kind"] == "p" and r["strategy"] == strat
                       and r["rotation"] == rot and r["sort_diagonal"] == s]
                row += ([fmt(statistics.mean(r["sweeps"] for r in sel)),
                         f"{statistics.mean(r['seconds'] for r in sel):.3g}"]
                        if sel else ["", ""])
            if any(row[2:]):
                lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines)


def _cluster_markdown(records, sizes, configs, sorts, mean_sweeps, fmt) -> list[str]:
    """The cluster cases: one table, a column per case, n and sort."""
    names = list(dict.fromkeys(r["case"] for r in records if r["case_kind"] == "cluster"))
    lines = ["## Clusters of equal eigenvalues (`--clusters`)", ""]
    lines += [f"- `{name}`: {CLUSTERS[name]}" for name in names] + [""]
    cols = [(name, n, s) for name in names for n in sizes for s in sorts
            if any(r["case"] == name and r["n"] == n for r in records)]
    lines.append("| strategy/rotation | " + " | ".join(
        f"{name} n={n}{'' if s else ' unsorted'}" for name, n, s in cols) + " |")
    lines.append("| --- |" + " --- |" * len(cols))
    for strat, rot in configs:
        lines.append(f"| {_label(strat, rot)} | " + " | ".join(
            fmt(mean_sweeps(case=name, n=n, sort_diagonal=s, strategy=strat, rotation=rot))
            for name, n, s in cols) + " |")
    lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--seeds", type=int, default=3, help="matrices per case and n")
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES),
                        choices=list(STRATEGIES))
    parser.add_argument("--rotations", type=int, nargs="+", default=list(ROTATIONS),
                        choices=list(ROTATIONS))
    parser.add_argument("--sort", choices=["both", "on", "off"], default="both",
                        help="sort_diagonal values to run")
    parser.add_argument("--ps", nargs="*", default=["0", "1/8", "1/2", "1"],
                        help="positive signs as fractions of n for the hyperbolic cases")
    parser.add_argument("--no-svd", action="store_true", help="skip the J = I SVD case")
    parser.add_argument("--clusters", nargs="*", default=[], choices=list(CLUSTERS),
                        help="cluster cases to add (see CLUSTERS)")
    parser.add_argument("--max-sweeps", type=int, default=60)
    parser.add_argument("--out", type=Path, default=None,
                        help="output path prefix (default bench/results/strategies-DEVICE-DATE)")
    parser.add_argument("--from-json", type=Path, default=None,
                        help="only re-render the markdown of an earlier run's JSON (to --out "
                             "or beside it)")
    args = parser.parse_args()
    if args.from_json is not None:
        payload = json.loads(args.from_json.read_text())
        out = args.out or args.from_json.with_suffix("")
        out.with_suffix(".md").write_text(_markdown(payload))
        print(f"# wrote {out.with_suffix('.md')}")
        return

    queue = default_queue()
    device = queue.device.name.strip()
    date = dt.datetime.now(dt.timezone.utc)
    sorts = {"both": [True, False], "on": [True], "off": [False]}[args.sort]
    configs = list(itertools.product(args.strategies, args.rotations, sorts))
    print(f"# device: {device}; {len(configs)} configurations", flush=True)
    cljacobi.hsvd(np.eye(8), np.ones(8))  # build the common programs once

    records = []
    for n in args.sizes:
        cases = _cases(n, args.ps)
        if args.no_svd:
            cases = [c for c in cases if c[0] != "svd"]
        cases += [(name, n if name == "svd-pairs" else n // 2) for name in args.clusters]
        for (case, p), seed in itertools.product(cases, range(args.seeds)):
            solve = _problem(case, n, p, seed)
            for strategy, rotation, sort_diagonal in configs:
                start = time.perf_counter()
                try:
                    info, error = solve(strategy=strategy, rotation=rotation,
                                        sort_diagonal=sort_diagonal, max_sweeps=args.max_sweeps,
                                        queue=queue)
                    sweeps, converged, rotations = info.sweeps, True, info.rotations
                except cljacobi.ConvergenceError as exc:
                    sweeps, converged, error = args.max_sweeps, False, float("nan")
                    rotations = exc.info.rotations if getattr(exc, "info", None) else -1
                seconds = time.perf_counter() - start
                records.append({
                    "n": n, "case": case,
                    "case_kind": ("svd" if case == "svd" else
                                  "cluster" if case in CLUSTERS else "p"),
                    "p": p, "seed": seed, "strategy": strategy, "rotation": rotation,
                    "sort_diagonal": sort_diagonal, "sweeps": sweeps, "rotations": rotations,
                    "converged": converged, "seconds": seconds, "max_rel_error": error,
                })
                print(f"n={n} {case} seed={seed} {strategy}/{rotation} "
                      f"sort={int(sort_diagonal)}: {sweeps} sweeps, {seconds:.3f}s, "
                      f"err {error:.1e}", flush=True)

    payload = {
        "benchmark": "sweeps per strategy, rotation algorithm and sort",
        "date": date.isoformat(timespec="seconds"),
        "device": device, "platform": queue.device.platform.name.strip(),
        "host": platform.node(), "numpy": np.__version__, "cljacobi": cljacobi.__version__,
        "seeds": args.seeds, "sizes": args.sizes, "default": DEFAULTS,
        "records": records,
    }
    table = _markdown(payload)
    print("\n" + table)
    if args.out is None:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", device).strip("-").lower()[:40]
        out = RESULTS / f"strategies-{slug}-{date:%Y-%m-%d}"
    else:
        out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1))
    out.with_suffix(".md").write_text(table)
    print(f"# wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
