"""The eight-seed page's figures, drawn from this report's own records (``runs_json.tar.xz``).

``pdx report`` draws its figures from Table 1's models, one cell per arm (seed 0), which are the same
cells in the three-seed and the eight-seed sweeps; the results page of the eight seeds shows these
instead, each over every seed of the two anchored arms:

* ``seeds8_elo_by_seed.png``: each seed's Elo against the base (1,000 games, ± 95%), and the pooled
  8,000 games with the two-level bootstrap's 95% interval (``seeds.arena_aggregates``);
* ``seeds8_real_by_rating.png``: on the 4,956 real Lichess puzzles, by rating bin, the accuracy
  gained over the base and the geometric-mean p* relative to the base, the mean of the eight seeds
  with the range of the seeds shaded.

    .venv/bin/python reports/sweep_maia_seeds8/figures.py
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pdx_lightning.evaluation.elo import score_to_elo
from pdx_lightning.experiments.arms import TERM_LABEL
from pdx_lightning.experiments.report.figures import COLORS, ratio_ticks
from pdx_lightning.experiments.report.runs import Runs, load_runs, suite_summary
from pdx_lightning.experiments.report.seeds import arena_aggregates, arms

HERE = Path(__file__).resolve().parent
ANCHORED = ("forward_kl", "reverse_kl")


def figure_elo(runs: Runs, out: Path) -> Path:
    """Each seed's Elo against the base and the pooled games, for the anchored arms."""
    aggs = {a["term"]: a for a in arena_aggregates(runs) if a["term"] in ANCHORED}
    fig, ax = plt.subplots(figsize=(8, 4.4))
    for k, term in enumerate(ANCHORED):
        a = aggs[term]
        seeds = [p["cell"]["seed"] for p in a["per_seed"]]
        x = np.arange(len(seeds)) + (k - 0.5) * 0.22
        ax.errorbar(
            x,
            [p["elo"] for p in a["per_seed"]],
            yerr=[p["half"] for p in a["per_seed"]],
            fmt="o",
            ms=4,
            capsize=2,
            color=COLORS[term],
            label=f"{TERM_LABEL[term]}: each seed, 1,000 games",
        )
        lo, hi = (score_to_elo(v) for v in a["bootstrap"].ci)
        mid = score_to_elo(a["bootstrap"].mean)
        xp = len(seeds) + 0.6 + (k - 0.5) * 0.3
        ax.errorbar([xp], [mid], yerr=[[mid - lo], [hi - mid]], fmt="D", ms=7, capsize=4, color=COLORS[term], mec="k")
        ax.annotate(f"{mid:+.1f}", (xp, hi), textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
    n = len(aggs[ANCHORED[0]]["per_seed"])
    ax.axhline(0, color="k", ls="--", lw=1, label="frozen base")
    ax.set_xticks([*range(n), n + 0.6], [*(f"seed {i}" for i in range(n)), f"all {n}\n(seed bootstrap)"], fontsize=8)
    ax.set(ylabel="Elo vs the base (± 95%)", title=f"Maia-1900, {n} seeds: searchless strength against the base")
    ax.legend(fontsize=7, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.42))
    fig.tight_layout()
    path = out / "seeds8_elo_by_seed.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure_rating(runs: Runs, out: Path) -> Path:
    """Δ accuracy and the p* ratio against the base by rating bin on the real puzzles, over every seed."""
    base = suite_summary(runs.base, "real")
    assert base is not None, "the base was not scored on the real puzzles"
    bins = [b["bin"] for b in base["by_bin"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(bins))
    anchored = {key[0]: cells for key, cells in arms(runs) if key[0] in ANCHORED}
    for term in ANCHORED:
        cells = sorted(anchored[term], key=lambda c: c["seed"])
        acc, ratio = [], []
        for c in cells:
            got = {b["bin"]: b for b in suite_summary(runs.evals[c["name"]], "real")["by_bin"]}
            acc.append([100 * (got[b["bin"]]["acc"] - b["acc"]) for b in base["by_bin"]])
            ratio.append([got[b["bin"]]["p_star_geo"] / b["p_star_geo"] for b in base["by_bin"]])
        label = f"{TERM_LABEL[term]}, mean of {len(cells)} seeds (band: their range)"
        for ax, v, mean in ((left, np.array(acc), np.mean), (right, np.array(ratio), _geomean)):
            ax.plot(x, mean(v, axis=0), marker="o", ms=3, color=COLORS[term], label=label)
            ax.fill_between(x, v.min(axis=0), v.max(axis=0), color=COLORS[term], alpha=0.15)
    left.axhline(0, color="k", ls="--", lw=1, label="frozen base")
    right.axhline(1, color="k", ls="--", lw=1, label="frozen base")
    right.set_yscale("log")
    lo, hi = right.get_ylim()
    right.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ratio_ticks(lo, hi)))
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}×"))
    right.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ticks = [f"{k} (n={b['n']})" for k, b in zip(bins, base["by_bin"])]
    for ax in (left, right):
        ax.set_xticks(x, ticks, fontsize=6, rotation=40, ha="right")
        ax.set_xlabel("Lichess puzzle rating")
        ax.axvspan(bins.index("2000-2200") - 0.5, len(bins) - 0.5, color="0.9", zorder=0)
    left.set(ylabel="accuracy − base (points)", title="Real Lichess puzzles: accuracy gained over the base")
    right.set(ylabel="p* / p*(base), geometric mean", title="Real Lichess puzzles: solution probability vs base")
    left.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path = out / "seeds8_real_by_rating.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _geomean(v: np.ndarray, axis: int) -> np.ndarray:
    return np.exp(np.log(v).mean(axis=axis))


def main(out: Path = HERE) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(HERE / "runs_json.tar.xz") as tar:
            tar.extractall(tmp, filter="data")
        runs = load_runs(tmp)
        for path in (figure_elo(runs, out), figure_rating(runs, out)):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
