"""Arms across seeds as the RL literature reports them (rliable's definitions, computed with scipy in
:mod:`pdx_lightning.evaluation.run_aggregates`): per arm and metric the mean and interquartile mean of the
per-seed scores with percentile-bootstrap 95% intervals over seeds, and the probability of improvement
over the base and between arms; plus the direct games between two arms of the same seed.

A seed's score on a metric is one number per cell, measured against the frozen base on the same
material: Elo against the base (its pentanomial record in ``arena.json``), and on each suite the
accuracy difference from the base (points) and the mean per-puzzle log p* ratio to the base. So the
base is the fixed reference 0 and P(> base) is the share of seeds above it.
"""

from __future__ import annotations

import math

import numpy as np

from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.match import pentanomial_elo
from pdx_lightning.evaluation.run_aggregates import N_RESAMPLES, Interval, improvement, run_aggregate
from pdx_lightning.experiments.arms import TEMP_LABEL, TERM_LABEL
from pdx_lightning.experiments.report.runs import NM, Runs
from pdx_lightning.experiments.report.seeds import SEED_SUITES, SUITE_TITLE, arms, oriented_match, puzzle_units
from pdx_lightning.experiments.report.tables import arena_label

Arm = tuple  # (term, temperature, beta)


def _arm_label(arm: Arm) -> str:
    term, temp, beta = arm
    return f"{TERM_LABEL[term]}, {TEMP_LABEL[temp]}" + ("" if beta is None else f", β = {beta:g}")


def per_seed_scores(runs: Runs) -> dict[str, dict[Arm, dict[int, float]]]:
    """``{metric: {arm: {seed: score}}}`` for Elo vs base and each suite's Δ accuracy and log p* ratio."""
    default = runs.sweep["config"].get("seed", 0)
    out: dict[str, dict[Arm, dict[int, float]]] = {}
    arena = runs.files.get("arena") or {}
    base_label = arena.get("base", "base")
    suites = [s for s in SEED_SUITES if ((runs.base or {}).get("suites", {}).get(s) or {}).get("per_puzzle")]
    for arm, cells in arms(runs):
        for c in cells:
            seed = c.get("seed", default)
            label = arena_label(arena, {c["name"], c["checkpoint"]})
            if label is not None and (m := oriented_match(arena, label, base_label)):
                out.setdefault("elo", {}).setdefault(arm, {})[seed] = pentanomial_elo(tuple(m["ptn"]))[0]
            for s in suites:
                assert runs.base is not None  # suites are the base's
                ids = runs.base["suites"][s]["ids"]
                base, u = puzzle_units(runs.base, s, ids), puzzle_units(runs.evals.get(c["name"]), s, ids)
                if base is None or u is None:
                    continue
                out.setdefault(f"acc:{s}", {}).setdefault(arm, {})[seed] = 100 * (u[0].mean() - base[0].mean())
                d = u[1] - base[1]
                if np.isfinite(d).all():
                    out.setdefault(f"logp:{s}", {}).setdefault(arm, {})[seed] = float(d.mean())
    return out


def _metric_title(metric: str) -> str:
    if metric == "elo":
        return "Elo vs base"
    kind, suite = metric.split(":")
    return f"{SUITE_TITLE.get(suite, suite)}: " + ("Δ acc. (points)" if kind == "acc" else "p* ratio")


def _fmt(metric: str, v: float) -> str:
    return f"{math.exp(v):.3f}×" if metric.startswith("logp") else f"{v:+.1f}" if metric == "elo" else f"{v:+.2f}"


def _fmt_ci(metric: str, iv: Interval) -> str:
    return f"{_fmt(metric, iv.value)} [{_fmt(metric, iv.ci[0])}, {_fmt(metric, iv.ci[1])}]"


def aggregate_rows(scores: dict[str, dict[Arm, dict[int, float]]]) -> list[list[str]]:
    rows = []
    for metric, by_arm in scores.items():
        for arm, per in by_arm.items():
            if len(per) < 2:
                continue
            a = run_aggregate([per[s] for s in sorted(per)], reference=0.0)
            assert a.p_above is not None  # reference given
            rows.append(
                [
                    _metric_title(metric),
                    _arm_label(arm),
                    str(len(per)),
                    _fmt_ci(metric, a.mean),
                    _fmt_ci(metric, a.iqm),
                    f"{a.p_above.value:.2f} [{a.p_above.ci[0]:.2f}, {a.p_above.ci[1]:.2f}]",
                ]
            )
    return rows


def improvement_rows(scores: dict[str, dict[Arm, dict[int, float]]], first: str, second: str) -> list[list[str]]:
    """P(``first`` > ``second``) per metric, for every pair of arms with those terms and one temperature."""
    rows = []
    for metric, by_arm in scores.items():
        for a, pa in by_arm.items():
            for b, pb in by_arm.items():
                if a[0] == first and b[0] == second and a[1] == b[1] and len(pa) >= 2 and len(pb) >= 2:
                    p = improvement(list(pa.values()), list(pb.values()))
                    rows.append(
                        [
                            _metric_title(metric),
                            _arm_label(a),
                            _arm_label(b),
                            f"{len(pa)} / {len(pb)}",
                            f"{p.value:.2f} [{p.ci[0]:.2f}, {p.ci[1]:.2f}]",
                        ]
                    )
    return rows


def direct_rows(runs: Runs, first: str, second: str) -> list[list[str]]:
    """The games between ``first``'s and ``second``'s cells of the same seed (one temperature/β), per seed
    and pooled (pentanomial Elo of the summed records, ± 95%)."""
    arena = runs.files.get("arena") or {}
    default = runs.sweep["config"].get("seed", 0)
    by_arm = dict(arms(runs))
    rows = []
    for a, cells in by_arm.items():
        b = (second, *a[1:])
        if a[0] != first or b not in by_arm:
            continue
        others = {c.get("seed", default): c for c in by_arm[b]}
        recs = []
        for c in cells:
            seed = c.get("seed", default)
            o = others.get(seed)
            la = arena_label(arena, {c["name"], c["checkpoint"]})
            lb = o and arena_label(arena, {o["name"], o["checkpoint"]})
            if la and lb and (m := oriented_match(arena, la, lb)):
                elo, half = pentanomial_elo(tuple(m["ptn"]))
                recs.append(m["ptn"])
                rows.append(
                    [_arm_label(a), _arm_label(b), str(seed), str(2 * sum(m["ptn"])), f"{elo:+.1f} ± {half:.1f}"]
                )
        if len(recs) >= 2:
            pooled = [sum(r[k] for r in recs) for k in range(5)]
            elo, half = pentanomial_elo(tuple(pooled))
            rows.append([_arm_label(a), _arm_label(b), "pooled", str(2 * sum(pooled)), f"{elo:+.1f} ± {half:.1f}"])
    return rows


def sections(runs: Runs) -> list[str]:
    """The Markdown of the rliable-style section (none when no arm has cells of two seeds)."""
    if not arms(runs):
        return []
    scores = per_seed_scores(runs)
    md = [
        "## Across seeds: mean, IQM and probability of improvement",
        "",
        "rliable's aggregates over seeds (Agarwal et al., 2021; `pdx_lightning/evaluation/run_aggregates.py`, "
        "scipy): each seed's score is its cell's Elo against the base, or on a suite its accuracy difference "
        "from the base and its geometric-mean p* ratio to the base. Mean and interquartile mean (IQM, "
        "`scipy.stats.trim_mean(·, 0.25)`) with percentile-bootstrap 95% intervals over seeds "
        f"({N_RESAMPLES:,} resamples; one metric is one task, so the stratified bootstrap resamples the "
        "seeds only); P(> base): the share of seeds above the base, same bootstrap.",
        "",
        markdown_table(["Metric", "Arm", "Seeds", "Mean [95%]", "IQM [95%]", "P(> base) [95%]"], aggregate_rows(scores))
        if scores
        else f"*{NM}*",
        "",
    ]
    pairs = [("forward_kl", "reverse_kl"), ("forward_kl", "none"), ("forward_kl", "entropy")]
    rows = [r for f, s in pairs for r in improvement_rows(scores, f, s)]
    if rows:
        md += [
            "### Probability of improvement between arms",
            "",
            "P(X > Y): the probability that a seed of X scores above a seed of Y (Mann–Whitney U over every "
            "pair of seeds / the number of pairs, ties ½), with X's and Y's seeds resampled independently "
            "for the 95% interval.",
            "",
            markdown_table(["Metric", "X", "Y", "Seeds (X / Y)", "P(X > Y) [95%]"], rows),
            "",
        ]
    direct = direct_rows(runs, "forward_kl", "reverse_kl")
    if direct:
        md += [
            "### Forward KL against reverse KL, same seed, played directly",
            "",
            markdown_table(["X", "Y", "Seed", "Games", "Elo of X over Y (pairs, ± 95%)"], direct),
            "",
            "Argmax games on paired openings between the two anchored arms' cells of one seed (`arena.json`'s "
            "match block); pooled: the seeds' pentanomial records summed.",
            "",
        ]
    return md
