"""Table 1 on real Lichess puzzles: accuracy and p* overall, by rating bin, and paired with the base.

The sweep's optional roles ``real`` (every real puzzle) and ``real_hard`` (the high-rated ones) are
scored like the generated suites (:mod:`pdx_lightning.experiments.sweep.evaluate`); this module renders
them: Table 1's accuracy and p* columns for them, the paper's Figure 6 (right) as numbers (accuracy and
geometric p* per Lichess rating bin and model) and as a PNG, and each model's pairing with the base on
the same puzzles (p* ratio, puzzles gained/lost, exact McNemar p). A runs directory without these roles
gets none of it (:func:`sections` returns nothing), so older reports render unchanged.
"""

from __future__ import annotations

from pathlib import Path

from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.experiments.report import figures
from pdx_lightning.experiments.report.runs import NM, Runs, suite_summary
from pdx_lightning.experiments.report.tables import _beta, _paired, _pstar, fmt_acc

REAL_SUITES = ("real", "real_hard")


def _rating_min(runs: Runs, suite: str) -> str:
    spec = ((runs.base or {}).get("suites", {}).get(suite) or {}).get("spec") or {}
    return f" (rated ≥ {spec['rating_min']:g})" if spec.get("rating_min") is not None else ""


def table1_real(runs: Runs) -> str:
    """Per model (Table 1's rows): accuracy and p* (geometric, arithmetic) on ``real`` and ``real_hard``."""
    out = []
    for r in runs.rows():
        cells = []
        for suite in REAL_SUITES:
            s = suite_summary(r.eval, suite)
            cells += [fmt_acc(s), _pstar(s)[1]]
        out.append([r.label, r.tau, _beta(r.cell), *cells])
    return markdown_table(
        ["Model", "Self-play τ", "β*", "Acc. real (%)", "p* real", "Acc. real hard (%)", "p* real hard"], out
    )


def table_real_bins(runs: Runs, suite: str = "real") -> str:
    """Figure 6 (right) as numbers: accuracy (%) / geometric p* per rating bin, one row per model."""
    base = suite_summary(runs.base, suite)
    if not base:
        return f"*{NM}*"
    bins = [(b["bin"], b["n"]) for b in base["by_bin"]]
    out = []
    for r in runs.rows():
        got = {b["bin"]: b for b in (suite_summary(r.eval, suite) or {}).get("by_bin", [])}
        out.append(
            [
                r.label,
                r.tau,
                *[f"{100 * b['acc']:.1f} / {b['p_star_geo']:.3f}" if (b := got.get(k)) else NM for k, _ in bins],
            ]
        )
    return markdown_table(["Model", "Self-play τ", *[f"{k} (n={n})" for k, n in bins]], out)


def _paired_cell(p: dict | None) -> str:
    if not p or p.get("p_star_ratio") is None:
        return NM
    lo, hi = p["p_star_ratio_ci"]
    return f"{p['p_star_ratio']:.2f}× [{lo:.2f}, {hi:.2f}]; +{p['gained']}/−{p['lost']} (p {p['mcnemar_p']:.2g})"


def table_paired_real(runs: Runs) -> str:
    """Each model against the base on the real puzzles: p* ratio [95%], gained/lost, McNemar p."""
    out = [[r.label, r.tau, *[_paired_cell(_paired(r, s)) for s in REAL_SUITES]] for r in runs.rows()[1:]]
    return markdown_table(["Model", "Self-play τ", "Real all", "Real hard"], out)


def figure6(runs: Runs, out: Path, suite: str = "real") -> str | None:
    """Accuracy per rating bin on the real puzzles, one line per model of Table 1 (the paper's Figure 6
    right), with the base's 95% Wilson band."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 (figures set the Agg backend on import)

    base = suite_summary(runs.base, suite)
    if not base:
        return None
    labels = [b["bin"] for b in base["by_bin"]]
    fig, ax = plt.subplots(figsize=(8, 4))
    for r in runs.rows():
        got = {b["bin"]: b for b in (suite_summary(r.eval, suite) or {}).get("by_bin", [])}
        xs = [i for i, k in enumerate(labels) if k in got]
        if not xs:
            continue
        ys = [100 * got[labels[i]]["acc"] for i in xs]
        if r.cell is None:
            ax.fill_between(
                xs,
                [100 * got[labels[i]]["acc_ci"][0] for i in xs],
                [100 * got[labels[i]]["acc_ci"][1] for i in xs],
                color="k",
                alpha=0.12,
            )
            ax.plot(xs, ys, color="k", ls="--", marker=".", label="frozen base")
        else:
            ax.plot(
                xs,
                ys,
                color=figures.COLORS.get(r.term),
                marker="o",
                ms=3,
                ls="-" if r.cell.get("temperature") != "fixed" else ":",
                label=r.title(),
            )
    ax.set_xticks(range(len(labels)), [f"{k}\n(n={b['n']})" for k, b in zip(labels, base["by_bin"])], fontsize=6)
    ax.set(xlabel="Lichess puzzle rating", ylabel="accuracy (%)", title="Real Lichess puzzles: accuracy by rating")
    ax.legend(fontsize=7)
    return figures.save_figure(fig, out, "figure6_real_by_rating.png")


def sections(runs: Runs, out: Path) -> list[str]:
    """The Markdown of the real-puzzle sections (none when the base was not scored on ``real``)."""
    if not suite_summary(runs.base, "real"):
        return []
    n = {s: (suite_summary(runs.base, s) or {}).get("n", 0) for s in REAL_SUITES}
    png = figure6(runs, out)
    return [
        "## Table 1 (real Lichess puzzles): accuracy and p*",
        "",
        table1_real(runs),
        "",
        f"Real Lichess puzzles (CC0, `data/lichess/`): all {n['real']}; hard: the {n['real_hard']}"
        f"{_rating_min(runs, 'real_hard')}. Argmax accuracy, multi-solution scored (the marked move or any "
        "mate), ± half the 95% Wilson interval; p*: geometric mean (arithmetic) of the solution probability.",
        "",
        "## Figure 6 (right): accuracy by rating bin on the real puzzles",
        "",
        f"![Figure 6 (right)]({png})" if png else f"*{NM}*",
        "",
        table_real_bins(runs),
        "",
        "Per Lichess rating bin (n = the bin's puzzles): accuracy (%) / geometric-mean p*, models of Table 1; "
        "in the figure the frozen base's 95% Wilson band is shaded.",
        "",
        "## Real puzzles: paired with the base",
        "",
        table_paired_real(runs),
        "",
        'As in the section "Paired with the base" below, on the real puzzles: geometric-mean p* ratio '
        "to the base [95%], puzzles gained (+) and lost (−) against the base, exact McNemar p.",
        "",
    ]
