"""The paper's-batch page's figure, drawn from the committed records ``compare.py`` reads (``paper_batch.png``).

For each cell of the page's table, 128-game seed-0 cells beside the 1,024-game ones:

* left: Elo against the base from its 1,000 games on the 500 paired openings (pentanomial, ± 95%:
  :func:`compare.elo_record`);
* right: the geometric-mean p* ratio to the base on the real Lichess puzzles rated ≥ 2000, with the
  paired bootstrap 95% interval over puzzles (as the report's ``real ≥ 2000`` column).

    .venv/bin/python -m reports.sweep_maia_1024.figure    # writes paper_batch.png here
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from pdx_lightning.experiments.report.figures import COLORS, ratio_ticks
from reports.sweep_maia_1024.compare import ROOT, elo_record, members, units

HERE = Path(__file__).resolve().parent
NAME = "paper_batch.png"
SUITE = "real_hard"  # the real Lichess puzzles rated ≥ 2000
FWD, NONE = "forward_kl-adaptive-b0.01", "none-adaptive"
# (label, arm, games per step, the archive holding the cell's eval.json, the cell, the arena record, its label)
CELLS = (
    ("forward KL, 128 games (seed 0)", "forward_kl", 128, "sweep_maia_seeds/runs_json.tar.xz", FWD, None),
    ("no regularizer, 128 games (seed 0)", "none", 128, "sweep_maia_seeds/runs_json.tar.xz", NONE, None),
    (
        "forward KL, 1,024 games, maia.yaml rates",
        "forward_kl",
        1024,
        "sweep_maia_1024/cells_json.tar.xz",
        FWD,
        "base1024_fwd",
    ),
    (
        "forward KL, 1,024 games, the paper's recipe",
        "forward_kl",
        1024,
        "sweep_maia_1024/paper_recipe/cells_json.tar.xz",
        FWD,
        "base_paper_recipe",
    ),
    (
        "forward KL, 1,024 games, recipe, value head 3e-6",
        "forward_kl",
        1024,
        "sweep_maia_1024/paper_recipe_ref_lr/cells_json.tar.xz",
        FWD,
        "base_paper_recipe_ref_lr",
    ),
    ("no regularizer, 1,024 games", "none", 1024, "sweep_maia_1024/cells_json.tar.xz", NONE, "base1024_none"),
)


def points() -> list[dict]:
    """Per cell: its label, arm, batch, Elo ± 95% against the base, and the p* ratio on ``SUITE`` [95%]."""
    from pdx_lightning.evaluation.replicates import seed_bootstrap

    archives: dict[str, dict[str, dict]] = {}
    seeds = archives.setdefault(CELLS[0][3], members(ROOT / "reports" / CELLS[0][3]))
    _, _, base = units(seeds["base/eval.json"], SUITE)
    out = []
    for label, arm, games, archive, cell, arena_name in CELLS:
        records = archives.setdefault(archive, members(ROOT / "reports" / archive))
        if arena_name is None:
            arena, who = seeds["arena.json"], cell
        else:
            arena = json.loads((HERE / "arena" / f"{arena_name}.json").read_text())
            who = next(p["label"] for p in arena["players"] if p["label"] != "base")
        rec = elo_record(arena, who)
        if rec is None:
            raise SystemExit(f"figure: {arena_name or 'the seeds arena'} has no match of {who} against the base")
        _, _, lp = units(records[f"cells/{cell}/eval.json"], SUITE)
        r = seed_bootstrap([lp], base)
        out.append(
            {
                "label": label,
                "arm": arm,
                "games": games,
                "elo": rec[0],
                "half": rec[1],
                "ratio": math.exp(r.diff),
                "ratio_ci": tuple(math.exp(v) for v in r.diff_ci),
            }
        )
    return out


def figure(out: Path = HERE) -> Path:
    pts = points()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    y = np.arange(len(pts))[::-1]
    for yi, p in zip(y, pts):
        color = COLORS[p["arm"]]
        face = color if p["games"] == 1024 else "white"
        left.errorbar([p["elo"]], [yi], xerr=[p["half"]], fmt="o", ms=6, capsize=3, color=color, mfc=face)
        left.annotate(
            f"{p['elo']:+.1f}".replace("-", "−"),
            (p["elo"], yi),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=7,
        )
        lo, hi = p["ratio_ci"]
        right.errorbar(
            [p["ratio"]],
            [yi],
            xerr=[[p["ratio"] - lo], [hi - p["ratio"]]],
            fmt="o",
            ms=6,
            capsize=3,
            color=color,
            mfc=face,
        )
        right.annotate(
            f"{p['ratio']:.2f}×", (p["ratio"], yi), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
        )
    left.axvline(0, color="k", ls="--", lw=1)
    right.axvline(1, color="k", ls="--", lw=1)
    left.set_yticks(y, [p["label"] for p in pts], fontsize=8)
    left.set(xlabel="Elo vs the base (1,000 games, ± 95%)", title="Strength against Maia-1900")
    right.set_xscale("log")
    lo, hi = right.get_xlim()
    right.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ratio_ticks(lo, hi)))
    right.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}×"))
    right.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.set(xlabel="p* / p*(base), geometric mean [95%]", title="Real Lichess puzzles rated ≥ 2000")
    for ax in (left, right):
        ax.set_ylim(-0.6, len(pts) - 0.4)
        ax.grid(axis="x", color="0.9")
    handles = [
        plt.Line2D([], [], ls="", marker="o", color="k", mfc="white", label="128 games per step"),
        plt.Line2D([], [], ls="", marker="o", color="k", label="1,024 games per step"),
        plt.Line2D([], [], ls="--", color="k", lw=1, label="the base"),
    ]
    right.legend(handles=handles, fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / NAME
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main() -> int:
    print(f"wrote {figure()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
