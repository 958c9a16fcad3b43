"""The Maia page's figure, drawn from this folder's committed records (``maia_vs_lc0.png``).

* left: each Maia's accuracy on the held-out suites (mates in 1 to 5, the tactics suite) as pdx scores
  it (bars, Wilson 95% interval) and as the real Lc0 scores the same file (``lc0_puzzles.json``:
  ``lc0_puzzles.py``'s count of solved puzzles on each side);
* right: the argmax arena's BayesElo ladder, base:small fixed at 0, ± 95% (``arena.json``: 10 players,
  2,700 games), with Maia-1900 in pdx and in the real Lc0 marked.

    .venv/bin/python -m reports.maia.figure    # writes maia_vs_lc0.png here
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).resolve().parent
NAME = "maia_vs_lc0.png"
MAIAS = ("maia-1100", "maia-1500", "maia-1900")
SUITES = ("mates_in_1", "mates_in_2", "mates_in_3", "mates_in_4", "mates_in_5", "tactics")
COLORS = {"maia-1100": "tab:blue", "maia-1500": "tab:orange", "maia-1900": "tab:green"}
# the two Maia-1900 players of the arena: the same file, run by pdx and by the real Lc0
PDX_1900, LC0_1900 = "maia-1900", "lc0-maia-1900"


def puzzles() -> dict[str, dict[str, dict]]:
    """``{maia: {suite: {"n", "pdx", "lc0", "ci"}}}``: puzzles, solved by each side, pdx's Wilson 95%."""
    suites = json.loads((HERE / "lc0_puzzles.json").read_text())["suites"]
    out: dict[str, dict[str, dict]] = {}
    for maia in MAIAS:
        for suite in SUITES:
            s = suites[f"{maia}/{suite}.csv"]
            row = {"n": s["n"], "pdx": s["solved"]["pdx"], "lc0": s["solved"]["lc0"], "ci": s["wilson95"]["pdx"]}
            out.setdefault(maia, {})[suite] = row
    return out


def ladder() -> list[dict]:
    """The arena's ratings, strongest first: player, Elo, 95% interval."""
    ratings = json.loads((HERE / "arena.json").read_text())["elo"]["ratings"]
    return sorted(ratings, key=lambda r: -r["elo"])


def figure(out: Path = HERE) -> Path:
    acc, ratings = puzzles(), ladder()
    per_pair = json.loads((HERE / "arena.json").read_text())["config"]["games"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.35, 1]})
    x = np.arange(len(SUITES))
    width = 0.26
    for k, maia in enumerate(MAIAS):
        xs = x + (k - 1) * width
        rows = [acc[maia][s] for s in SUITES]
        pdx = np.array([100 * r["pdx"] / r["n"] for r in rows])
        lo = pdx - np.array([100 * r["ci"][0] for r in rows])
        hi = np.array([100 * r["ci"][1] for r in rows]) - pdx
        left.bar(xs, pdx, width, color=COLORS[maia], alpha=0.75, label=f"{maia}: pdx (Wilson 95%)")
        left.errorbar(xs, pdx, yerr=[lo, hi], fmt="none", ecolor="0.3", capsize=2, lw=0.8)
        lc0 = [100 * r["lc0"] / r["n"] for r in rows]
        left.plot(
            xs, lc0, ls="", marker="_", ms=11, mew=2, color="k", label="the real Lc0, same file" if k == 0 else None
        )
    names = {"tactics": "tactics"} | {f"mates_in_{n}": f"mate in {n}" for n in range(1, 6)}
    counts = [acc[MAIAS[0]][s]["n"] for s in SUITES]
    left.set_xticks(x, [f"{names[s]}\n(n={n})" for s, n in zip(SUITES, counts)], fontsize=8)
    left.set(ylabel="puzzles solved (%)", ylim=(0, 100), title="Held-out suites: pdx and the real Lc0 agree")
    left.legend(fontsize=7, loc="upper center")
    y = np.arange(len(ratings))[::-1]
    for yi, r in zip(y, ratings):
        ours = r["player"] in (PDX_1900, LC0_1900)
        color = "tab:green" if ours else "0.45"
        lo, hi = r["ci95"]
        right.errorbar([r["elo"]], [yi], xerr=[[r["elo"] - lo], [hi - r["elo"]]], fmt="o", ms=5, capsize=2, color=color)
        text = f"{r['elo']:+.0f}" if r["elo"] else "0 (fixed)"
        right.annotate(text, (hi, yi), textcoords="offset points", xytext=(4, -3), fontsize=7)
    names = {LC0_1900: "Maia-1900 in the real Lc0"} | {m: f"Maia-{m.split('-')[1]} in pdx" for m in MAIAS}
    right.set_yticks(y, [names.get(r["player"], r["player"]) for r in ratings], fontsize=8)
    for tick, r in zip(right.get_yticklabels(), ratings):
        if r["player"] in (PDX_1900, LC0_1900):
            tick.set_fontweight("bold")
    right.set(
        xlabel="BayesElo (base:small = 0, ± 95%)",
        title=f"Argmax arena, {len(ratings)} players, {per_pair} games a pair",
    )
    right.set_xlim(right.get_xlim()[0], right.get_xlim()[1] + 90)
    right.grid(axis="x", color="0.9")
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
