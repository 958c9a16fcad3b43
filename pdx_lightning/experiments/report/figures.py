"""The report's PNG figures (matplotlib, Agg), drawn from a loaded :class:`~.runs.Runs` only.

Figure 1 (p* ratio to the base by mate depth), Figure 5 (accuracy vs β with
Wilson bands), Figure 7 (trajectory coverage curves), Figure 8 (recovery by
the base's probability on and rank of the solution). Each function returns
the PNG's file name, or None when its inputs are absent (the report then says
*not measured*).
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from pdx_lightning.experiments.arms import (
    CONTROL,
    REGULARIZED,
    TEMP_LABEL,
    TEMPERATURES,
    TERM_LABEL,
    UNREGULARIZED,
)
from pdx_lightning.experiments.report.recovery_tables import recovery
from pdx_lightning.experiments.report.runs import Runs, by_depth, suite_summary

COLORS: dict[str | None, str] = {
    "none": "tab:gray",
    "entropy": "tab:orange",
    "reverse_kl": "tab:blue",
    "forward_kl": "tab:green",
    CONTROL: "tab:red",
}


def save_figure(fig, out: Path, name: str) -> str:
    fig.tight_layout()
    fig.savefig(out / name, dpi=120)
    plt.close(fig)
    return name


# candidate ratio ticks in each decade, by preference: 1, then 2 and 5, then 1.5 and 3, then the rest
NICE_MANTISSAS = ((1,), (2, 5), (1.5, 3), (1.25, 2.5, 4, 6, 7, 8, 9))


def ratio_ticks(lo: float, hi: float, min_gap: float = 0.1) -> list[float]:
    """Tick values for a log-scaled ratio axis spanning [lo, hi]: the preferred round ratios first (1,
    then 2 and 5, ...; nearest 1 first within a tier), each kept only when at least ``min_gap`` of the
    axis's log10 span from every tick already kept, so no two labels overlap; past one decade only 1, 2
    and 5, past two only powers of ten."""
    if not 0 < lo < hi:
        return [1.0]
    span = math.log10(hi / lo)
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    cands = [
        (tier, abs(e + math.log10(m)), round(m * 10.0**e, 12))
        for tier, ms in enumerate(NICE_MANTISSAS)
        for m in ms
        for e in decades
    ]
    tiers = len(NICE_MANTISSAS) if span <= 1 else 2 if span <= 2 else 1  # a wide axis: decades (and 2, 5)
    picked: list[float] = []
    for tier, _dist, c in sorted(cands):
        if tier < tiers and lo <= c <= hi and all(abs(math.log10(c / t)) >= min_gap * span for t in picked):
            picked.append(c)
    return sorted(picked) or [float(f"{math.sqrt(lo * hi):.3g}")]  # no round ratio inside: the middle


def figure1(runs: Runs, out: Path) -> str | None:
    """Geometric-mean p* on each mate depth relative to the frozen base (ratios of Table 4's mate columns)."""
    rows = runs.rows()
    base = by_depth(rows[0])
    if not base:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows[1:]:
        assert r.cell is not None  # every row past the base has its sweep cell
        d = by_depth(r)
        depths = [k for k in sorted(d) if k in base and d[k].get("p_star_geo") and base[k].get("p_star_geo")]
        if depths:
            ax.plot(
                depths,
                [d[k]["p_star_geo"] / base[k]["p_star_geo"] for k in depths],
                marker="o",
                color=COLORS.get(r.term),
                ls="-" if r.cell.get("temperature") != "fixed" else ":",
                label=r.title(),
            )
    ax.axhline(1.0, color="k", ls="--", lw=1, label="frozen base")
    ax.set(yscale="log", xlabel="mate depth N", ylabel="p* / p*(base)", title="Solution probability vs base")
    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator(ratio_ticks(lo, hi)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}×"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # unlabelled: labels 0.8×/0.9×/1× collided
    ax.set_xticks(sorted(base))
    ax.legend(fontsize=7)
    return save_figure(fig, out, "figure1_pstar_ratio.png")


def figure5(runs: Runs, out: Path) -> tuple[str | None, str]:
    """Accuracy vs β per arm, one panel per temperature, 95% Wilson bands; dashed: base and β = 0."""
    suite = "tactics" if suite_summary(runs.base, "tactics") else "selection"
    cells = [c for c in runs.beta_cells() if c["name"] in runs.evals]
    temps = [t for t in TEMPERATURES if any(c["temperature"] == t for c in cells)]
    if not cells or not temps or not suite_summary(runs.base, suite):
        return None, suite
    sel = {s["cell"] for s in runs.sweep["selected"]}
    fig, axes = plt.subplots(1, len(temps), figsize=(5.5 * len(temps), 4), squeeze=False, sharey=True)
    base = suite_summary(runs.base, suite)
    for ax, temp in zip(axes[0], temps):
        for term in REGULARIZED:
            arm = sorted((c for c in cells if c["term"] == term and c["temperature"] == temp), key=lambda c: c["beta"])
            pts = [(c, s) for c in arm if (s := suite_summary(runs.evals[c["name"]], suite))]
            if not pts:
                continue
            b = [c["beta"] for c, _ in pts]
            ax.plot(b, [100 * s["acc"] for _, s in pts], marker="o", color=COLORS[term], label=TERM_LABEL[term])
            ax.fill_between(
                b,
                [100 * s["acc_ci"][0] for _, s in pts],
                [100 * s["acc_ci"][1] for _, s in pts],
                color=COLORS[term],
                alpha=0.15,
            )
            for c, s in pts:
                if c["name"] in sel:
                    ax.plot([c["beta"]], [100 * s["acc"]], marker="*", ms=14, color=COLORS[term], mec="k")
        assert base is not None  # checked above (suite_summary(runs.base, suite))
        ax.axhline(100 * base["acc"], color="k", ls="--", lw=1, label="frozen base")
        for c in cells:
            if (
                c["term"] == UNREGULARIZED
                and c["temperature"] == temp
                and (s := suite_summary(runs.evals[c["name"]], suite))
            ):
                ax.axhline(100 * s["acc"], color=COLORS[UNREGULARIZED], ls="--", lw=1, label="β = 0 (no regularizer)")
        ax.set(xscale="log", xlabel="β", title=f"self-play τ: {TEMP_LABEL[temp]}")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel(f"{suite} accuracy (%)")
    return save_figure(fig, out, "figure5_accuracy_vs_beta.png"), suite


def figure7(runs: Runs, out: Path) -> str | None:
    """Coverage Ω_K at the first position of coverage.json, one panel per depth: solid raw, dashed μ."""
    cov = runs.files["coverage"]
    if not cov or not cov.get("results"):
        return None
    pos = cov["positions"][0]["name"]
    depth_of = lambda res: res.get("depth", cov.get("depth"))  # noqa: E731 (one-depth files: top level)
    depths = sorted({depth_of(res) for res in cov["results"]})
    rows = {k: r for r in runs.rows() for k in r.keys}
    fig, axes = plt.subplots(1, len(depths), figsize=(6 * len(depths), 4), squeeze=False)
    for ax, depth in zip(axes[0], depths):
        for res in cov["results"]:
            if res["position"] != pos or depth_of(res) != depth or not res.get("curve", {}).get("k"):
                continue
            r = rows.get(res["model"])
            color = "k" if r is None or r.cell is None else COLORS.get(r.term)
            ax.plot(
                res["curve"]["k"],
                res["curve"]["mean"],
                ls="-" if res["play"] == "raw" else "--",
                color=color,
                label=f"{r.title() if r else res['model']} ({'raw' if res['play'] == 'raw' else 'μ'})",
            )
        ax.axhline(cov.get("target", 0.95), color="k", ls=":", lw=1)
        ax.set(
            xscale="log",
            xlabel="K (lines drawn without replacement)",
            ylabel=f"Ω^{depth}_K",
            title=f"Trajectory coverage at {pos}, depth {depth}",
        )
        ax.legend(fontsize=6)
    return save_figure(fig, out, "figure7_coverage.png")


def figure8(runs: Runs, out: Path) -> str | None:
    """Share of base-wrong positions recovered, by the base's probability on the solution and by its rank."""
    entries, _ = recovery(runs)
    if not entries:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    width = 0.8 / len(entries)
    for ax, key, xlabel in (
        (axes[0], "by_prob", "base probability on the solution"),
        (axes[1], "by_rank", "rank of the solution in the base"),
    ):
        bins = entries[0][1]["position"][key]
        for j, (label, m) in enumerate(entries):
            xs = [i + (j - (len(entries) - 1) / 2) * width for i in range(len(bins))]
            shares = [100 * b["recovered"] / b["n"] if b["n"] else 0 for b in m["position"][key]]
            ax.bar(xs, shares, width, label=label)
        ax.set_xticks(range(len(bins)), [f"{b['bin']}\n(n={b['n']})" for b in bins])
        ax.set(xlabel=xlabel)
    axes[0].set_ylabel("recovered (% of base-wrong positions)")
    axes[0].legend(fontsize=7)
    return save_figure(fig, out, "figure8_recovery.png")


def draw_all(runs: Runs, out: Path) -> dict[str, tuple[str | None, str]]:
    """Title → (PNG name or None, caption), in the paper's order."""
    f5, suite = figure5(runs, out)
    return {
        "Figure 1: p* relative to the base by mate depth": (
            figure1(runs, out),
            "Geometric-mean solution probability on each mate-in-N suite divided by "
            "the frozen base's (dashed, 1×); solid adaptive τ, dotted τ≡1; models of Table 1.",
        ),
        "Figure 5: accuracy vs β": (
            f5,
            f"Argmax accuracy on the {suite} suite against β, shaded 95% Wilson bands; stars mark β* "
            "(chosen on the selection suite); dashed: frozen base and β = 0.",
        ),
        "Figure 7: trajectory coverage": (
            figure7(runs, out),
            "Ω_K from `coverage.json` (one panel per depth N): mass covered by K distinct "
            "lines drawn without replacement (mean over seeds); solid raw π, dashed tempered μ; dotted: the target.",
        ),
        "Figure 8: what fine-tuning recovers": (
            figure8(runs, out),
            "Share of the base's wrong solver positions on the tactics suite where the "
            "model's argmax is accepted, binned by the base's probability on the accepted moves (left) and "
            "their rank (right).",
        ),
    }
