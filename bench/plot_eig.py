"""Plot a bench_eig.py JSON file: seconds and max relative eigenvalue error per n.

    python bench/plot_eig.py bench/results/eig-....json   # writes the .png beside it
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def plot(path: Path) -> Path:
    payload = json.loads(path.read_text())
    records = payload["records"]
    # One line per solver and test matrix (the hard-input families time
    # several matrices per n: "A" beside "DAD", the ranks).
    lines = sorted({(r["solver"], r.get("problem", "")) for r in records})
    fig, (ax_time, ax_err) = plt.subplots(1, 2, figsize=(11, 4.2))
    for solver, problem in lines:
        rows = sorted((r for r in records if (r["solver"], r.get("problem", "")) ==
                       (solver, problem)), key=lambda r: r["n"])
        sizes = [r["n"] for r in rows]
        label = f"{solver} {problem}".strip()
        style = "o--" if problem in ("A", "paper", "") and len(lines) > 8 else "o-"
        ax_time.loglog(sizes, [r["seconds"] for r in rows], style, label=label)
        ax_err.loglog(sizes, [max(r["max_rel_eig_error"], 1e-17) for r in rows], style,
                      label=label)
    ax_time.set(xlabel="n", ylabel="seconds (median)", title="time")
    ax_err.set(xlabel="n", ylabel="max |λ - λ'| / |λ|", title="relative eigenvalue error")
    for ax in (ax_time, ax_err):
        ax.grid(True, which="both", alpha=0.3)
    ax_time.legend(fontsize=8)
    fig.suptitle(f"{payload['benchmark']} — {payload['device']} — {payload['date']}", fontsize=9)
    fig.tight_layout()
    out = path.with_suffix(".png")
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(plot(Path(name)))
