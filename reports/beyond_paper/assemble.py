"""Tactics against strength for every fine-tuned Maia-1900 cell: writes the figure, its points and report.md.

The paper's dissociation claim (a fine-tuned network gains on puzzles without gaining playing
strength, or the converse) in one picture, read from committed records only (no checkpoint, no runs/):

* ``reports/sweep_maia_seeds8/runs_json.tar.xz``: the eight-seed report's runs directory (its
  ``assemble.py`` builds it; it holds the seeds 0-2 cells of every arm of ``reports/sweep_maia_seeds/``):
  every cell's eval.json and the 1,000 argmax games of each cell against the base in arena.json;
* ``reports/sweep_maia_1024/cells_json.tar.xz`` and ``paper_recipe/cells_json.tar.xz``: the 1,024-game
  cells' eval.json, read with that report's own ``compare.py``; their 1,000 games against the base
  in ``reports/sweep_maia_1024/arena/*.json``.

Per cell: x, the accuracy difference from the base on the 4,956 real Lichess puzzles (points) with the
paired bootstrap 95% interval over puzzles the reports compute (:func:`seed_bootstrap`, one seed);
y, the Elo against the base from the cell's pentanomial record (opening pairs, ± 95%). The same
difference on the generated held-out tactics goes into the table. Across the cells: the Pearson
correlation with a percentile bootstrap 95% interval over cells, Spearman's ρ, how many cells lie
above (below) the base on each axis with the interval excluding 0, and how much of each axis's
between-cell spread exceeds its own measurement noise.

    .venv/bin/python -m reports.beyond_paper.assemble [OUT_DIR] # default: this directory
"""

from __future__ import annotations

import csv
import json
import math
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEEDS8 = ROOT / "reports" / "sweep_maia_seeds8" / "runs_json.tar.xz"
B1024 = ROOT / "reports" / "sweep_maia_1024"
FIGURE = "dissociation.png"
POINTS = "points.csv"
RECORDS = HERE / "records"  # the match records of matches.yaml (searched.py reads them)
X_SUITE, X2_SUITE = "real", "tactics"  # the figure's x (real Lichess puzzles); the table's second suite
RECIPE = "Table 2 recipe"  # the paper's rates and the reference code's switches
RECIPE_REF_LR = "Table 2 recipe, value head 3e-6"  # the same, the value head at the authors' code's rate
# The 1,024-game cells: (setting, the archive under reports/sweep_maia_1024/, cell, arena file stem)
CELLS_1024 = (
    ("maia.yaml rates", "cells_json.tar.xz", "none-adaptive", "base1024_none"),
    ("maia.yaml rates", "cells_json.tar.xz", "forward_kl-adaptive-b0.01", "base1024_fwd"),
    (RECIPE, "paper_recipe/cells_json.tar.xz", "forward_kl-adaptive-b0.01", "base_paper_recipe"),
    (RECIPE_REF_LR, "paper_recipe_ref_lr/cells_json.tar.xz", "forward_kl-adaptive-b0.01", "base_paper_recipe_ref_lr"),
)


@dataclass
class Point:
    term: str  # the exploration term (the colour)
    batch: int  # games per step (the marker)
    setting: str
    seed: int
    cell: str
    d_real: tuple[float, float, float]  # Δ accuracy (points), 95% low, high
    d_tactics: tuple[float, float, float]
    elo: float
    elo_half: float
    pentanomial: list[int]


def _compare_1024():
    """reports/sweep_maia_1024/compare.py: its readers of that report's archives."""
    from reports.sweep_maia_1024 import compare

    return compare


def _solved(cell: dict, base: dict, suite: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Per puzzle of ``suite``, solved (0/1) by the cell and by the base, on the base's puzzles."""
    from pdx_lightning.experiments.report.seeds import puzzle_units

    ids = base["suites"][suite]["ids"]
    units, ref = puzzle_units(cell, suite, ids), puzzle_units(base, suite, ids)
    if units is None or ref is None:
        raise SystemExit(f"assemble: {where}: {suite} was not scored on the base's puzzles")
    return units[0], ref[0]


def _delta(samples: list[np.ndarray], ref: np.ndarray) -> tuple[float, float, float]:
    """Accuracy difference from the base in points with its paired bootstrap 95% interval (over puzzles;
    with several seeds, the two-level bootstrap of the across-seed tables)."""
    from pdx_lightning.evaluation.replicates import seed_bootstrap

    agg = seed_bootstrap(samples, ref)
    assert agg.diff is not None and agg.diff_ci is not None  # a paired reference was given
    return 100 * agg.diff, 100 * agg.diff_ci[0], 100 * agg.diff_ci[1]


def _elo(arena: dict, label: str, where: str) -> tuple[float, float, list[int]]:
    from pdx_lightning.evaluation.match import pentanomial_elo
    from pdx_lightning.experiments.report.seeds import oriented_match

    m = oriented_match(arena, label, arena.get("base", "base"))
    if m is None:
        raise SystemExit(f"assemble: {where}: no paired games of {label!r} against the base")
    elo, half = pentanomial_elo(tuple(m["ptn"]))
    return elo, half, list(m["ptn"])


@dataclass
class Arm:
    term: str
    seeds: int
    d_real: tuple[float, float, float]  # mean over seeds, two-level bootstrap 95%
    elo: tuple[float, float]  # pooled pentanomial Elo, ± 95%


def _delta_of(ev: dict, base: dict, suite: str, where: str) -> tuple[float, float, float]:
    cell, ref = _solved(ev, base, suite, where)
    return _delta([cell], ref)


def collect() -> tuple[list[Point], list[Arm], dict]:
    """Every plotted cell; each 128-game arm across its seeds; the supervised control (not plotted)."""
    from pdx_lightning.experiments.report.runs import load_runs
    from pdx_lightning.experiments.report.seeds import arena_aggregates, arms
    from pdx_lightning.experiments.report.tables import arena_label

    points = []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(SEEDS8) as tar:
            tar.extractall(tmp, filter="data")
        runs = load_runs(tmp)
    base, arena = runs.base, runs.files["arena"]
    if base is None or arena is None:
        raise SystemExit(f"assemble: {SEEDS8}: no base/eval.json or arena.json")
    default = runs.sweep["config"].get("seed", 0)
    games = runs.sweep["config"]["games"]
    solved: dict[str, list[np.ndarray]] = {}
    for (term, _temp, _beta), cells in arms(runs):
        for c in cells:
            where = f"{SEEDS8.name}: {c['name']}"
            label = arena_label(arena, {c["name"], c["checkpoint"]}) or c["name"]
            ev = runs.evals[c["name"]]
            real, ref = _solved(ev, base, X_SUITE, where)
            solved.setdefault(term, []).append(real)
            points.append(
                Point(
                    term,
                    games,
                    "maia.yaml rates",
                    c.get("seed", default),
                    c["name"],
                    _delta([real], ref),
                    _delta_of(ev, base, X2_SUITE, where),
                    *_elo(arena, label, where),
                )
            )
    ref = _solved(base, base, X_SUITE, "base")[1]
    pooled = {a["term"]: a["pooled_elo"] for a in arena_aggregates(runs)}
    by_arm = [Arm(t, len(v), _delta(v, ref), pooled[t]) for t, v in solved.items()]
    ctrl = runs.sweep["control"]
    cc = next(c for c in runs.sweep["cells"] if c["name"] == ctrl)
    control = {
        "d_real": _delta_of(runs.evals[ctrl], base, X_SUITE, ctrl),
        "elo": _elo(arena, arena_label(arena, {ctrl, cc["checkpoint"]}) or ctrl, ctrl)[:2],
    }
    compare = _compare_1024()
    for setting, archive, cell, stem in CELLS_1024:
        if setting == RECIPE_REF_LR and not (B1024 / archive).is_file():
            continue  # its cell has not finished yet
        docs = compare.members(B1024 / archive)
        cfg = docs["config.lock.json"]  # the sweep config the cells ran with
        doc = json.loads((B1024 / "arena" / f"{stem}.json").read_text())
        label = next(p["label"] for p in doc["players"] if p["label"] != "base")
        ev = docs[f"cells/{cell}/eval.json"]
        where = f"{archive}: {cell}"
        points.append(
            Point(
                cell.split("-")[0],
                int(cfg["games"]),
                setting,
                int(cfg.get("seed", 0)),
                cell,
                _delta_of(ev, base, X_SUITE, where),
                _delta_of(ev, base, X2_SUITE, where),
                *_elo(doc, label, f"arena/{stem}.json"),
            )
        )
    return points, by_arm, control


def _spread(values: np.ndarray, halves: np.ndarray) -> dict:
    """Between-cell variance against the cells' mean measurement variance (half-width / 1.96, squared)."""
    from pdx_lightning.evaluation.elo import Z95

    observed = float(np.var(values, ddof=1))
    noise = float(np.mean((halves / Z95) ** 2))
    return {"sd": math.sqrt(observed), "noise_sd": math.sqrt(noise), "beyond_noise": max(0.0, 1 - noise / observed)}


def summarize(points: list[Point]) -> dict:
    """Across the plotted cells: correlation (bootstrap over cells), sign counts, spread against noise."""
    from scipy import stats

    from pdx_lightning.evaluation.replicates import N_RESAMPLES

    x = np.array([p.d_real[0] for p in points])
    x2 = np.array([p.d_tactics[0] for p in points])
    y = np.array([p.elo for p in points])
    half_x = np.array([(p.d_real[2] - p.d_real[1]) / 2 for p in points])
    half_y = np.array([p.elo_half for p in points])

    def pearson(a, b, axis=-1):
        return stats.pearsonr(a, b, axis=axis).statistic

    def corr(a: np.ndarray) -> dict:
        boot = stats.bootstrap(
            (a, y), pearson, paired=True, vectorized=True, n_resamples=N_RESAMPLES, method="percentile", rng=0
        )
        lo, hi = boot.confidence_interval
        rho = stats.spearmanr(a, y)
        return {"r": float(pearson(a, y)), "r_ci": (float(lo), float(hi)), "rho": rho.statistic, "rho_p": rho.pvalue}

    return {
        "n": len(points),
        "real": corr(x),
        "tactics": corr(x2),
        "real_up": sum(p.d_real[1] > 0 for p in points),
        "real_down": sum(p.d_real[2] < 0 for p in points),
        "tactics_up": sum(p.d_tactics[1] > 0 for p in points),
        "tactics_down": sum(p.d_tactics[2] < 0 for p in points),
        "elo_up": sum(p.elo - p.elo_half > 0 for p in points),
        "elo_down": sum(p.elo + p.elo_half < 0 for p in points),
        "elo_above": sum(p.elo > 0 for p in points),
        "x_range": (float(x.min()), float(x.max())),
        "y_range": (float(y.min()), float(y.max())),
        "x_spread": _spread(x, half_x),
        "y_spread": _spread(y, half_y),
    }


def figure(points: list[Point], by_arm: list[Arm], s: dict, out: Path) -> str:
    from matplotlib.lines import Line2D

    from pdx_lightning.experiments.arms import TERM_LABEL, TERMS
    from pdx_lightning.experiments.report.figures import COLORS, plt, save_figure

    markers = {128: "o", 1024: "s"}
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    ax.axhline(0, color="k", lw=0.8)
    ax.axvline(0, color="k", lw=0.8)
    for p in points:
        x, lo, hi = p.d_real
        recipe = p.setting.startswith(RECIPE)
        ax.errorbar(
            x,
            p.elo,
            xerr=[[x - lo], [hi - x]],
            yerr=p.elo_half,
            fmt="^" if p.setting == RECIPE_REF_LR else markers[p.batch],
            ms=7 if p.batch > 128 else 5,
            color=COLORS[p.term],
            mfc="white" if recipe else COLORS[p.term],
            mec=COLORS[p.term] if recipe or p.batch == 128 else "k",
            mew=2 if recipe else 1,
            ecolor=COLORS[p.term],
            elinewidth=0.7,
            capsize=2,
            alpha=0.55 if p.batch == 128 else 0.9,
            zorder=3 if p.batch > 128 else 2,
        )
    for a in by_arm:  # each 128-game arm over its seeds: the contrast the cells' noise blurs
        x, lo, hi = a.d_real
        ax.errorbar(
            x,
            a.elo[0],
            xerr=[[x - lo], [hi - x]],
            yerr=a.elo[1],
            fmt="D",
            ms=9,
            color=COLORS[a.term],
            mec="k",
            ecolor=COLORS[a.term],
            elinewidth=2.2,
            capsize=4,
            zorder=4,
        )
    lo = min(-0.5, min(p.d_real[1] for p in points) - 0.5)
    ax.set_xlim(lo, max(p.d_real[2] for p in points) + 0.5)
    r = s["real"]
    ax.text(
        0.02,
        0.03,
        f"{s['n']} cells: Pearson r = {r['r']:+.2f} [{r['r_ci'][0]:+.2f}, {r['r_ci'][1]:+.2f}]\n"
        f"Δ puzzles > 0 (95%): {s['real_up']}/{s['n']};  Δ Elo > 0 (95%): {s['elo_up']}/{s['n']}, "
        f"< 0: {s['elo_down']}/{s['n']}",
        transform=ax.transAxes,
        fontsize=8,
        va="bottom",
        bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"},
    )
    terms = [t for t in TERMS if any(p.term == t for p in points)]
    handles = [Line2D([], [], color=COLORS[t], marker="o", ls="", label=TERM_LABEL[t]) for t in terms]
    handles += [
        Line2D([], [], color="0.4", marker="o", ls="", alpha=0.55, label="one seed, 128 games per step"),
        Line2D([], [], color="0.4", mec="k", marker="D", ms=8, ls="", label="arm over its seeds, 128 games"),
        Line2D([], [], color="0.4", mec="k", marker="s", ms=7, ls="", label="1,024 games per step (seed 0)"),
        Line2D(
            [], [], color="0.4", mfc="white", mec="0.4", mew=2, marker="s", ms=7, ls="", label="1,024, Table 2 recipe"
        ),
    ]
    if any(p.setting == RECIPE_REF_LR for p in points):
        handles.append(
            Line2D(
                [],
                [],
                color="0.4",
                mfc="white",
                mec="0.4",
                mew=2,
                marker="^",
                ms=7,
                ls="",
                label="1,024, recipe, value head 3e-6",
            )
        )
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    ax.set(
        xlabel="Δ accuracy vs base on 4,956 real Lichess puzzles (points, paired 95%)",
        ylabel="Δ Elo vs base (1,000 argmax games, ± 95%)",
        title="Maia-1900 fine-tuned by self-play: tactics gain vs strength change",
    )
    return save_figure(fig, out, FIGURE)


def _ci(t: tuple[float, float, float]) -> str:
    return f"{t[0]:+.2f} [{t[1]:+.2f}, {t[2]:+.2f}]"


def write_points(points: list[Point], out: Path) -> None:
    with (out / POINTS).open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(
            ["term", "games_per_step", "setting", "seed", "cell"]
            + [f"d_{s}{k}" for s in ("real", "tactics") for k in ("", "_lo", "_hi")]
            + ["elo", "elo_half", "pentanomial"]
        )
        for p in points:
            w.writerow(
                [p.term, p.batch, p.setting, p.seed, p.cell]
                + [f"{v:.2f}" for v in (*p.d_real, *p.d_tactics)]
                + [f"{p.elo:.1f}", f"{p.elo_half:.1f}", " ".join(map(str, p.pentanomial))]
            )


def _side(elo: float, half: float) -> str:
    return "above the base" if elo - half > 0 else "below the base" if elo + half < 0 else "at the base"


def report(points: list[Point], by_arm: list[Arm], s: dict, control: dict) -> str:
    from pdx_lightning.evaluation.markdown import markdown_table
    from pdx_lightning.experiments.arms import TERM_LABEL

    n, r, t = s["n"], s["real"], s["tactics"]
    xs, ys = s["x_spread"], s["y_spread"]
    rows = [
        [
            TERM_LABEL[p.term],
            f"{p.batch:,}",
            p.setting,
            str(p.seed),
            _ci(p.d_real),
            _ci(p.d_tactics),
            f"{p.elo:+.1f} ± {p.elo_half:.1f}",
            "[" + ", ".join(map(str, p.pentanomial)) + "]",
        ]
        for p in points
    ]
    arm_rows = [
        [TERM_LABEL[a.term], str(a.seeds), _ci(a.d_real), f"{a.elo[0]:+.1f} ± {a.elo[1]:.1f}", _side(*a.elo)]
        for a in by_arm
    ]
    stats_rows = [
        [
            "Pearson r with Δ Elo [95%, bootstrap over cells]",
            f"{r['r']:+.2f} [{r['r_ci'][0]:+.2f}, {r['r_ci'][1]:+.2f}]",
            f"{t['r']:+.2f} [{t['r_ci'][0]:+.2f}, {t['r_ci'][1]:+.2f}]",
        ],
        ["Spearman ρ with Δ Elo (p)", f"{r['rho']:+.2f} ({r['rho_p']:.2g})", f"{t['rho']:+.2f} ({t['rho_p']:.2g})"],
        ["cells above the base (95% interval > 0)", f"{s['real_up']}/{n}", f"{s['tactics_up']}/{n}"],
        ["cells below the base (95% interval < 0)", f"{s['real_down']}/{n}", f"{s['tactics_down']}/{n}"],
        ["SD across cells / SD of measurement noise", f"{xs['sd']:.2f} / {xs['noise_sd']:.2f}", "–"],
    ]
    lo_x, hi_x = s["x_range"]
    lo_y, hi_y = s["y_range"]
    arm_x = [a.d_real[0] for a in by_arm]
    arm_y = sorted(by_arm, key=lambda a: -a.elo[0])
    ref_lr = any(p.setting == RECIPE_REF_LR for p in points)
    sides = "; ".join(f"{TERM_LABEL[a.term]} {a.elo[0]:+.1f} ± {a.elo[1]:.1f} ({_side(*a.elo)})" for a in arm_y)
    ctrl_x, (ctrl_elo, ctrl_half) = control["d_real"], control["elo"]
    return "\n".join(
        [
            "# Beyond the paper: the fine-tuned Maia-1900 cells",
            "",
            "## Tactics against strength: the dissociation in one picture",
            "",
            f"**Answer.** All {n} self-play cells gain on real Lichess puzzles (+{lo_x:.2f} to +{hi_x:.2f} "
            f"points; {s['real_up']} of {n} with the 95% interval above 0), while their Elo against the base "
            f"runs from {lo_y:+.1f} to {hi_y:+.1f} ({s['elo_up']} above the base, {s['elo_down']} below it, "
            f"{n - s['elo_up'] - s['elo_down']} within their ± 95%). The puzzle gain does not predict the "
            f"strength change: across the cells Pearson r = {r['r']:+.2f} [{r['r_ci'][0]:+.2f}, "
            f"{r['r_ci'][1]:+.2f}], and averaged over seeds the four arms gain alike ({min(arm_x):+.2f} to "
            f"{max(arm_x):+.2f} points) but part in Elo by {arm_y[0].elo[0] - arm_y[-1].elo[0]:.0f}. Tactics up "
            f"with Elo up, flat or down depending on the exploration term: {sides} (128 games per step, "
            "seeds pooled).",
            "",
            f"![Δ tactics vs Δ Elo]({FIGURE})",
            "",
            "x: argmax accuracy difference from the frozen Maia-1900 on the 4,956 real Lichess puzzles "
            "(`data/lichess/`, CC0), in points, with the paired bootstrap 95% interval over puzzles "
            "(`seed_bootstrap`, one seed; as `reports/sweep_maia_1024/report.md`). y: Elo against the base "
            "from the cell's 1,000 argmax games on the 500 paired openings of `data/openings_uho_600.epd` "
            "(pentanomial, ± 95%). Colour: exploration term (adaptive τ; β = 1e-2 where regularized); "
            "circles: 128 games per step (`reports/sweep_maia_seeds8/`: seeds 0–7 of the anchored arms, "
            "0–2 of the others), faint; diamonds with thick bars: each of those arms over its seeds (the table "
            "below); squares: 1,024 games per step (`reports/sweep_maia_1024/`, seed 0; hollow: "
            "the Table 2 recipe"
            + ("; hollow triangle: the same with the value head at 3e-6" if ref_lr else "")
            + "). Every cell 2,000 steps. Read from the committed records by `assemble.py`.",
            "",
            f"Not plotted: the supervised puzzle-tuned control, {_ci(ctrl_x)} points and "
            f"{ctrl_elo:+.1f} ± {ctrl_half:.1f} Elo (trained on puzzles, not by self-play; off this scale).",
            "",
            "### By arm (128 games per step, seeds pooled)",
            "",
            markdown_table(["Exploration term", "Seeds", "Δ real (points) [95%]", "Elo vs base pooled", ""], arm_rows),
            "",
            "Δ real: mean over seeds with the two-level bootstrap 95% interval (seeds, then puzzles paired with "
            "the base), as the eight-seed report's across-seed tables; Elo: the seeds' pentanomial records "
            'summed (`reports/sweep_maia_seeds8/report.md`, "Across seeds: strength against the base").',
            "",
            "### Across the cells",
            "",
            markdown_table([f"{n} cells", "Δ real Lichess (the figure)", "Δ generated tactics (1,000)"], stats_rows),
            "",
            f"Δ Elo: SD {ys['sd']:.1f} across the cells against a measurement noise SD of {ys['noise_sd']:.1f} "
            f"({100 * ys['beyond_noise']:.0f}% of its variance beyond noise); Δ real puzzles: "
            f"{100 * xs['beyond_noise']:.0f}% beyond noise (noise SD: the interval's half-width / 1.96). Cells "
            f"with Elo above 0 (point estimate): {s['elo_above']}/{n}. The puzzle gain barely varies between "
            "cells beyond its own noise, so a correlation across cells is pulled towards 0 by that noise; the "
            "arms' contrast (same gain, different Elo) is the sharper test.",
            "",
            "### The points",
            "",
            markdown_table(
                [
                    "Exploration term",
                    "Games/step",
                    "Setting",
                    "Seed",
                    "Δ real (points) [95%]",
                    "Δ tactics (points) [95%]",
                    "Elo vs base",
                    "Ptnml(0-2)",
                ],
                rows,
            ),
            "",
            "Δ tactics: the same difference on the 1,000 generated held-out tactics (`data/heldout/`). "
            "Ptnml(0-2): the cell's opening pairs scoring 0, ½, 1, 1½, 2. "
            f"The same points, machine-readable: [`{POINTS}`]({POINTS}).",
            "",
            *searched_sections(points),
        ]
    )


def _searched():
    """searched.py here: the searched and ladder tables from records/."""
    from reports.beyond_paper import searched

    return searched


def searched_sections(points: list[Point]) -> list[str]:
    """Under search (the real Lc0) and on the Stockfish ladder: the tables of the match records of matches.yaml
    committed to records/, and what has not been run yet."""
    from pdx_lightning.evaluation.markdown import markdown_table

    mod = _searched()
    committed = {(p.term, p.batch, p.setting, p.seed): f"{p.elo:+.1f} ± {p.elo_half:.1f}" for p in points}
    header, rows = mod.searched_rows(RECORDS, committed)
    lad_header, nets, rungs = mod.ladder_rows(RECORDS)
    joint = mod.joint_ladder(RECORDS)
    out = [
        "## Under search: the real Lc0 at 1, 16 and 64 nodes",
        "",
        "Each cell retrained from its sweep config (`run.sh cells`; the checkpoints were not kept), exported "
        "with `pdx export lc0` and played against the released `maia-1900.pb.gz` by the real Lc0 v0.31 on "
        "both sides (`--backend=eigen --threads=1`, Lc0's default search settings, the same node limit on "
        "both sides), 1,000 games on the 500 paired openings of `data/openings_uho_600.epd`. Elo of the "
        'cell against the base from the pentanomial record (± 95%) with LOS. "Retrained = committed": '
        "every suite's per-puzzle outcome and the final metrics equal the committed cell's (`same_cell.py`); "
        "a retrained cell that differs is a new draw of the same configuration, whose single pass is measured "
        "again (pdx's arena on its checkpoint and on the exported files), and the searched matches speak for "
        "it, not for the committed cell.",
        "",
    ]
    if rows:
        out += [markdown_table(header, rows), ""]
        for text in (mod.divergence_text(RECORDS), mod.search_mode_text(RECORDS)):
            if text:
                out += [text, ""]
    else:
        out += [
            "No match has been run yet: `pdx matches run reports/beyond_paper/matches.yaml` plays them; "
            "no result is claimed.",
            "",
        ]
    out += [
        "## Absolute scale: a Stockfish `UCI_Elo` ladder",
        "",
        "Each network (single pass) plays 400 games against each rung `sf:elo=1350 … 1950` (Stockfish 15.1, "
        "`UCI_Elo` calibrated at 60 s + 0.6 s against CCRL 40/4), the rungs 20 games each between them; "
        "BayesElo fit (the arena's default model) anchored at `sf:elo=1650` = 1650. The networks play one "
        "forward pass per move and the `sf:` players search to the depth their skill level fixes: neither "
        "side plays the calibration's time control, so the scale is the ladder's, tied to CCRL through the anchor. "
        "A ladder is not reproducible game for game: Stockfish draws its weakened move (`UCI_LimitStrength`) "
        "from a generator seeded by the clock; its uncertainty is the fit's interval.",
        "",
    ]
    if nets:
        out += [
            markdown_table(lad_header, nets),
            "",
            "All the ladders in one fit (the rungs are the same five players in each: the networks are compared "
            "through the same rung ratings; difference from the base ± 95% from the fit's covariance):",
            "",
            markdown_table(
                ["Network", "Elo, joint fit [95%]", "− the base's, joint fit"],
                [
                    [mod.cell_name(k), f"{lad[0]:.0f} [{lad[1]:.0f}, {lad[2]:.0f}]", mod.ladder_diff_text(k, lad)]
                    for k, lad in joint.items()
                ],
            ),
            "",
            "The rungs' own fit (the ladder's check: how far each lands from its nominal Elo):",
            "",
            markdown_table(["Ladder of", "Rung", "Fitted Elo", "Fitted − nominal"], rungs),
            "",
        ]
    else:
        out += [
            "The ladder has not been run yet: `pdx matches run reports/beyond_paper/matches.yaml --only "
            "'ladder_*'` plays it; no result is claimed.",
            "",
        ]
    out += value_section(mod)
    out += value_move_section(mod)
    out += pilot_section(mod)
    v_header, v_rows, data = mod.verdict_rows(RECORDS)
    out += [
        "## Verdicts: single pass, under search, on the ladder",
        "",
        "Per cell: Elo against the base played by the real Lc0 at 1 node (the single pass, on the exported "
        "files), at 16 and 64 nodes, the change from the single pass (the same 500 opening pairs at every node "
        "count: pair scores at N nodes minus at 1 node, 95% percentile bootstrap over the pairs; "
        '"unchanged" when the interval holds 0), and the rating on the Stockfish ladder above.',
        "",
    ]
    if v_rows:
        out += [
            "**Answer.** " + mod.search_answer(data),
            "",
            markdown_table(v_header, v_rows),
            "",
        ]
    else:
        out += ["No cell has its 1-node Lc0 match yet: no verdict is claimed.", ""]
    return out


def value_section(mod) -> list[str]:
    """The value heads on real games (searched.value_rows): what a search reads at its leaves."""
    from pdx_lightning.evaluation.markdown import markdown_table

    header, rows, doc = mod.value_rows(RECORDS)
    out = ["## The value heads on real games", ""]
    if doc is None:
        return [*out, "Not measured yet: `run.sh value` runs it; no result is claimed.", ""]
    o = doc["models"][0]["overall"]
    diffs = [p["overall"] for p in doc["paired"]]
    within = sum(d["value_nll_diff_ci"][0] <= 0 <= d["value_nll_diff_ci"][1] for d in diffs)
    ent = [m["overall"]["entropy"] - o["entropy"] for m in doc["models"][1:]]
    answer = (
        f"**Answer.** The cells' value heads predict the games' results as the base's does: differences "
        f"{min(d['value_nll_diff'] for d in diffs):+.4f} to {max(d['value_nll_diff'] for d in diffs):+.4f} nats, "
        f"{within} of {len(diffs)} intervals holding 0. Their policies are sharper: entropy "
        f"{min(ent):+.2f} to {max(ent):+.2f} nats from the base's {o['entropy']:.2f}, on the same positions."
    )
    return [
        *out,
        answer,
        "",
        "A search (Lc0's at 16 and 64 nodes) reads the value head at its leaves; a single pass reads only the "
        "policy. `pdx eval humans` on the files Lc0 plays, over the real Lichess games of "
        f"`data/lichess/games_2021-10_999.pgn.zst` ({o['positions']:,} positions of {o['value_games']:,} games: "
        "the first 10 plies and moves made under 30 s left out; "
        f"{o['value_positions']:,} of them in games with a result): the value NLL is −log P(the "
        "game's result) under the network's WDL for the side to move (ln 3 ≈ 1.099 for a head that says "
        "nothing), its intervals clustered by game; the difference is paired on the same positions.",
        "",
        markdown_table(header, rows),
        "",
    ]


def value_move_section(mod) -> list[str]:
    """The value heads' move choice on real puzzles (value_move.py, puzzles_value_move.json): how well
    what a search compares at its leaves ranks the moves."""
    from pdx_lightning.evaluation.markdown import markdown_table

    out = ["## The value heads' choice of move on real puzzles", ""]
    path = RECORDS / "puzzles_value_move.json"
    if not path.is_file():
        return [*out, "Not measured yet: `run.sh valuemove` runs it; no result is claimed.", ""]
    from reports.beyond_paper import value_move as vm

    rec = json.loads(path.read_text())
    header, rows = vm.rows(rec, mod.cell_name)
    return [
        *out,
        "**Answer.** " + value_move_answer(rec),
        "",
        "A search compares the positions it expands by their value-head evaluations. `pdx eval puzzles "
        "--move-by value` scores that ranking alone: at every solver position each legal move is played and "
        "the move whose resulting position the value head rates best for the mover (L + D/2 of the opponent's "
        "WDL; a mate by the rules) is the one scored, beside the policy's argmax on the same puzzles. "
        f"{rec['puzzles']:,} real Lichess puzzles (`data/lichess/puzzles_random_2k.csv`), the files Lc0 plays; "
        "solved = every solver move accepted (the puzzle scorer's rule); differences from the base paired by "
        "puzzle (gained/lost, exact McNemar p).",
        "",
        markdown_table(header, rows),
        "",
    ]


def value_move_answer(rec: dict) -> str:
    """The answer, from the record: each cell's change from the base by the policy and by the value head,
    and whether the value head's lost more (by its McNemar test)."""
    parts, worse = [], 0
    pol = {p["label"]: p for p in rec["policy"]["paired"]}
    for p in rec["value"]["paired"]:
        q = pol[p["label"]]
        sig = p["mcnemar_p"] < 0.05
        worse += sig and p["acc_diff"] < 0
        parts.append(
            f"{p['label']} {100 * p['acc_diff']:+.1f} points by its value head (p = {p['mcnemar_p']:.2g}), "
            f"{100 * q['acc_diff']:+.1f} by its policy"
        )
    b_pol, b_val = rec["policy"]["models"][0]["acc"], rec["value"]["models"][0]["acc"]
    n = len(rec["value"]["paired"])
    verdict = (
        f"{worse} of {n} cells' value heads choose worse than the base's (McNemar p < 0.05)"
        if worse
        else "no cell's value head chooses worse than the base's (every McNemar p ≥ 0.05 or a gain)"
    )
    return (
        f"The base solves {100 * b_pol:.1f}% of the puzzles by its policy and {100 * b_val:.1f}% by its value "
        f"head one ply deep. Against the base: {'; '.join(parts)}. So {verdict}."
    )


def pilot_section(mod) -> list[str]:
    """The temperature pilot (searched.pilot_rows, temperature.json): a flatter prior at search time."""
    from pdx_lightning.evaluation.markdown import markdown_table

    out = ["## A flatter prior at search time (pilot)", ""]
    header, rows, data = mod.pilot_rows(RECORDS)
    temp = RECORDS / "temperature.json"
    if not rows or not temp.is_file():
        return [
            *out,
            "Not run yet: `run.sh temperature`, then `pdx matches run reports/beyond_paper/matches.yaml "
            "--only 'pilot_*'`; no result is claimed.",
            "",
        ]
    t = json.loads(temp.read_text())
    ts = ", ".join(f"{c['label']} {c['matching_t']:.3f}" for c in t["cells"])
    answers = []
    for p in data:
        (e, h), (d, lo, hi), e0 = p["elo"], p["change"], p["default"][0]
        where = {"grows": "above 0", "shrinks": "below 0", "unchanged": "holds 0"}[mod.change_word(lo, hi)]
        part = " (its upper bound short of the whole loss)" if e0 < 0 and hi < -e0 else ""
        answers.append(
            f"At {p['nodes']} nodes with its priors as spread as the base's, {p['label']} plays {e:+.1f} ± {h:.1f} "
            f"against the base, {e0:+.1f} at the default temperature on the same openings; the change, {d:+.1f} "
            f"[{lo:+.1f}, {hi:+.1f}], {where}{part}."
        )
    return [
        *out,
        "**Answer.** " + " ".join(answers),
        "",
        "Lc0 divides the policy logits by its policy softmax temperature (default "
        f"{t['lc0_default_t']}) before its search priors. `temperature.py` finds, over {t['positions']:,} "
        "real-game positions (every 7th ply from ply 10 of the 999 Lichess games), the temperature at which "
        f"each cell's mean prior entropy equals the base's at the default ({t['base']['entropy_default']:.3f} "
        f"nats): {ts}. The pilot plays the cell at that temperature against the base at the default, the first "
        "opening pairs of the same suite, and compares with the same pairs of the default-temperature match "
        "(paired by opening, 95% bootstrap). A pilot: fewer games than the matches above, one cell.",
        "",
        markdown_table(header, rows),
        "",
    ]


def main(out: Path = HERE) -> int:
    out.mkdir(parents=True, exist_ok=True)
    points, by_arm, control = collect()
    s = summarize(points)
    figure(points, by_arm, s, out)
    write_points(points, out)
    (out / "report.md").write_text(report(points, by_arm, s, control))
    print(f"wrote {out / 'report.md'}, {out / FIGURE}, {out / POINTS} ({len(points)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(Path(a) for a in sys.argv[1:2])))
