"""Arms across seeds: each seed's numbers and the aggregate, for accuracy, p* and strength.

An *arm* is a (term, temperature, β) of the sweep's RL cells; with ``seeds:`` in the sweep config it has
one cell per seed (``forward_kl-adaptive-b0.01``, ``…-s1``, ``…-s2``; ``seed`` in sweep.json's cells).
For every arm with cells of at least two seeds, and every suite the base was scored on:

* accuracy: each seed's, the mean over seeds with a 95% interval from a stratified two-level bootstrap
  (seeds resampled; within each seed its puzzles, paired with the base's; :func:`seed_bootstrap`), the
  difference from the base in points with its interval, and P(> base), the share of bootstrap
  replicates in which the arm's mean is above the base's;
* p*: the geometric-mean ratio to the base (exp of the mean per-puzzle log ratio), same bootstrap.

Strength (``arena.json``, argmax games against the base on paired openings): per seed the Elo from
that cell's pentanomial record against the base (± 95%, as the match block prints it); pooled, the Elo
of the seeds' records summed (opening pairs as independent units); and the two-level bootstrap of the
per-pair scores (seeds resampled, pairs within each) with P(> base). A runs directory whose arms have
one seed each gets none of this (:func:`sections` returns nothing).
"""

from __future__ import annotations

import math

import numpy as np

from pdx_lightning.evaluation.elo import score_to_elo
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.match import pentanomial_elo
from pdx_lightning.evaluation.replicates import (
    N_RESAMPLES,
    SeedAggregate,
    pair_scores,
    reversed_pentanomial,
    seed_bootstrap,
)
from pdx_lightning.experiments.arms import TEMP_LABEL, TEMPERATURES, TERM_LABEL, TERMS
from pdx_lightning.experiments.report.runs import NM, Runs
from pdx_lightning.experiments.report.tables import _beta, arena_label

# the suites of the across-seed tables, in this order, when the base was scored on them
SEED_SUITES = ("real", "real_hard", "tactics", "hard", "mates", "selection")


def arms(runs: Runs) -> list[tuple[tuple, list[dict]]]:
    """``((term, temperature, beta), cells by seed)`` for every arm with evaluated cells of >= 2 seeds."""
    default = runs.sweep["config"].get("seed", 0)
    groups: dict[tuple, dict[int, dict]] = {}
    for c in runs.sweep["cells"]:
        if c["kind"] == "rl" and c["name"] in runs.evals:
            groups.setdefault((c["term"], c["temperature"], c["beta"]), {})[c.get("seed", default)] = c
    order = lambda k: (TERMS.index(k[0]), TEMPERATURES.index(k[1]), k[2])  # noqa: E731
    return [
        (k, [g[s] for s in sorted(g)]) for k, g in sorted(groups.items(), key=lambda kv: order(kv[0])) if len(g) >= 2
    ]


def puzzle_units(doc: dict | None, suite: str, ids: list) -> tuple[np.ndarray, np.ndarray] | None:
    """(solved 0/1, log p*) per puzzle of ``suite`` in an eval document, when scored on puzzles ``ids``."""
    s = (doc or {}).get("suites", {}).get(suite)
    if not s or not s.get("per_puzzle") or s.get("ids") != ids:
        return None
    pp = s["per_puzzle"]
    return (
        np.asarray(pp["solved"], dtype=np.float64),
        np.asarray([-math.inf if v is None else v for v in pp["log_p_star"]], dtype=np.float64),
    )


def suite_aggregates(runs: Runs, suite: str, depth: int | None = None) -> list[dict]:
    """Per arm on ``suite`` (only its mate-in-``depth`` puzzles when given): its cells, the accuracy
    aggregate and the log-p* aggregate (None: p* not finite)."""
    b = (runs.base or {}).get("suites", {}).get(suite)
    base = puzzle_units(runs.base, suite, b["ids"]) if b else None
    if base is None:
        return []
    keep = None if depth is None else np.asarray(b.get("depth") or [], dtype=object) == depth
    if keep is not None:
        if keep.shape != base[0].shape or not keep.any():
            return []
        base = (base[0][keep], base[1][keep])
    out = []
    for (term, temp, beta), cells in arms(runs):
        units = [
            (c, u if keep is None else (u[0][keep], u[1][keep]))
            for c in cells
            if (u := puzzle_units(runs.evals[c["name"]], suite, b["ids"]))
        ]
        if len(units) < 2:
            continue
        acc = seed_bootstrap([u[0] for _, u in units], base[0])
        finite = all(np.isfinite(u[1]).all() for _, u in units) and np.isfinite(base[1]).all()
        logp = seed_bootstrap([u[1] for _, u in units], base[1]) if finite else None
        out.append(
            {"term": term, "temperature": temp, "beta": beta, "cells": [c for c, _ in units], "acc": acc, "log_p": logp}
        )
    return out


def _seeds(cells: list[dict], default: int) -> str:
    return ", ".join(str(c.get("seed", default)) for c in cells)


def table_seeds(runs: Runs, suite: str) -> str:
    """One row per arm with several seeds: each seed's accuracy, the mean [95%], Δ vs base, P(> base), p*."""
    default = runs.sweep["config"].get("seed", 0)
    rows = []
    for a in suite_aggregates(runs, suite):
        acc: SeedAggregate = a["acc"]
        lp: SeedAggregate | None = a["log_p"]
        assert acc.diff is not None and acc.diff_ci is not None  # aggregated against the base
        ratio = NM
        if lp:
            assert lp.diff is not None and lp.diff_ci is not None  # aggregated against the base
            ratio = f"{math.exp(lp.diff):.2f}× [{math.exp(lp.diff_ci[0]):.2f}, {math.exp(lp.diff_ci[1]):.2f}]"
        rows.append(
            [
                TERM_LABEL[a["term"]],
                TEMP_LABEL[a["temperature"]],
                _beta(a),
                _seeds(a["cells"], default),
                " / ".join(f"{100 * v:.2f}" for v in acc.per_seed),
                f"{100 * acc.mean:.2f} [{100 * acc.ci[0]:.2f}, {100 * acc.ci[1]:.2f}]",
                f"{100 * acc.diff:+.2f} [{100 * acc.diff_ci[0]:+.2f}, {100 * acc.diff_ci[1]:+.2f}]",
                f"{acc.p_better:.3f}",
                ratio,
                f"{lp.p_better:.3f}" if lp else NM,
            ]
        )
    if not rows:
        return f"*{NM}*"
    return markdown_table(
        [
            "Exploration term",
            "Self-play τ",
            "β",
            "Seeds",
            "Acc. per seed (%)",
            "Mean acc. [95%]",
            "Δ vs base (points) [95%]",
            "P(acc. > base)",
            "p* ratio to base [95%]",
            "P(p* > base)",
        ],
        rows,
    )


def table_depths(runs: Runs, suite: str = "mates") -> str:
    """Tables 3–4 across seeds: per arm and mate depth, Δ accuracy vs the base and the p* ratio [95%]."""
    depths = sorted(
        {d for d in ((runs.base or {}).get("suites", {}).get(suite) or {}).get("depth") or [] if isinstance(d, int)}
    )
    per_depth = {
        d: {(a["term"], a["temperature"], a["beta"]): a for a in suite_aggregates(runs, suite, d)} for d in depths
    }
    keys = [k for k, _ in arms(runs) if all(k in per_depth[d] for d in depths)]
    if not depths or not keys:
        return f"*{NM}*"
    rows = []
    for k in keys:
        cells = []
        for d in depths:
            acc, lp = per_depth[d][k]["acc"], per_depth[d][k]["log_p"]
            ratio = (
                f"{math.exp(lp.diff):.2f}× [{math.exp(lp.diff_ci[0]):.2f}, {math.exp(lp.diff_ci[1]):.2f}]" if lp else NM
            )
            cells.append(f"{100 * acc.diff:+.1f} [{100 * acc.diff_ci[0]:+.1f}, {100 * acc.diff_ci[1]:+.1f}]; {ratio}")
        rows.append([TERM_LABEL[k[0]], TEMP_LABEL[k[1]], _beta({"beta": k[2]}), *cells])
    return markdown_table(["Exploration term", "Self-play τ", "β", *(f"mate-in-{d}" for d in depths)], rows)


def oriented_match(arena: dict, a: str, b: str) -> dict | None:
    """The match block entry of ``a`` against ``b`` with ``a``'s pentanomial record (oriented)."""
    for m in arena.get("matches", []):
        if {m["a"], m["b"]} == {a, b} and m.get("pentanomial"):
            ptn = m["pentanomial"] if m["a"] == a else reversed_pentanomial(m["pentanomial"])
            return {**m, "ptn": ptn}
    return None


def _elo_text(elo: float, half: float) -> str:
    if not (math.isfinite(elo) and math.isfinite(half)):
        return f"{elo:+.0f}" if not math.isnan(elo) else NM
    return f"{elo:+.1f} ± {half:.1f}"


def arena_aggregates(runs: Runs) -> list[dict]:
    """Per arm with several seeds in ``arena.json``: each seed's record against the base, the pooled
    pentanomial Elo and the two-level bootstrap of the pair scores."""
    arena = runs.files.get("arena")
    if not arena or not arena.get("matches"):
        return []
    base = arena.get("base", "base")
    out = []
    for (term, temp, beta), cells in arms(runs):
        per = []
        for c in cells:
            label = arena_label(arena, {c["name"], c["checkpoint"]})
            if label is not None and (m := oriented_match(arena, label, base)):
                elo, half = pentanomial_elo(tuple(m["ptn"]))
                per.append({"cell": c, "ptn": m["ptn"], "games": 2 * sum(m["ptn"]), "elo": elo, "half": half})
        if len(per) < 2:
            continue
        pooled = [sum(p["ptn"][k] for p in per) for k in range(5)]
        agg = seed_bootstrap([pair_scores(p["ptn"]) for p in per], 0.5)
        out.append(
            {
                "term": term,
                "temperature": temp,
                "beta": beta,
                "per_seed": per,
                "pooled": pooled,
                "pooled_elo": pentanomial_elo(tuple(pooled)),
                "bootstrap": agg,
            }
        )
    return out


def table_arena_seeds(runs: Runs) -> str:
    default = runs.sweep["config"].get("seed", 0)
    rows = []
    for a in arena_aggregates(runs):
        agg: SeedAggregate = a["bootstrap"]
        lo, hi = (score_to_elo(v) if 0 < v < 1 else (math.inf if v >= 1 else -math.inf) for v in agg.ci)
        rows.append(
            [
                TERM_LABEL[a["term"]],
                TEMP_LABEL[a["temperature"]],
                _beta(a),
                _seeds([p["cell"] for p in a["per_seed"]], default),
                " / ".join(_elo_text(p["elo"], p["half"]) for p in a["per_seed"]),
                str(sum(p["games"] for p in a["per_seed"])),
                "[" + ", ".join(map(str, a["pooled"])) + "]",
                _elo_text(*a["pooled_elo"]),
                f"{score_to_elo(agg.mean):+.1f} [{lo:+.1f}, {hi:+.1f}]",
                f"{agg.p_better:.3f}",
            ]
        )
    if not rows:
        return f"*{NM}*"
    return markdown_table(
        [
            "Exploration term",
            "Self-play τ",
            "β",
            "Seeds",
            "Elo vs base per seed (pairs, ± 95%)",
            "Games",
            "Ptnml(0-2) pooled",
            "Elo pooled (± 95%)",
            "Elo, seed bootstrap [95%]",
            "P(> base)",
        ],
        rows,
    )


SUITE_TITLE = {
    "real": "real Lichess puzzles",
    "real_hard": "real Lichess puzzles, hard",
    "tactics": "tactics",
    "hard": "hard",
    "mates": "mates (every depth)",
    "selection": "selection suite",
}


def sections(runs: Runs) -> list[str]:
    """The Markdown of the across-seed sections (none when no arm has cells of two seeds)."""
    if not arms(runs):
        return []
    suites = [s for s in SEED_SUITES if ((runs.base or {}).get("suites", {}).get(s) or {}).get("per_puzzle")]
    md = [
        "## Across seeds: accuracy and p* per arm",
        "",
        "Every arm (term, τ, β) with cells of several seeds: each seed's argmax accuracy, the mean over "
        "seeds with its 95% interval from a stratified two-level bootstrap (seeds resampled with "
        "replacement; within each drawn seed its puzzles, paired with the base's on the same puzzles; "
        f"`scipy.stats.bootstrap`, percentile, {N_RESAMPLES:,} resamples), the mean difference from the frozen base "
        "and P(> base), the share of bootstrap replicates in which the arm's mean is above the base's. p* "
        "ratio: the geometric-mean ratio to the base, same bootstrap on the per-puzzle log ratios.",
        "",
    ]
    for s in suites:
        assert runs.base is not None  # suites are the base's
        n = runs.base["suites"][s]["n"]
        md += [f"### {SUITE_TITLE.get(s, s)} ({n} puzzles)", "", table_seeds(runs, s), ""]
    if "mates" in suites:
        md += [
            "### Tables 3–4 across seeds: by mate depth",
            "",
            table_depths(runs),
            "",
            "Per arm and mate depth (the mates suite's puzzles of that depth only): the mean accuracy "
            "difference from the base in points [95%], then the geometric-mean p* ratio to the base [95%], "
            "both from the same two-level bootstrap.",
            "",
        ]
    md += [
        "## Across seeds: strength against the base",
        "",
        table_arena_seeds(runs),
        "",
        "Argmax games against the base on paired openings (`arena.json`'s match block): per seed the Elo "
        "from that cell's pentanomial record (opening pairs, ± 95%); pooled: the seeds' records summed; "
        "seed bootstrap: the two-level bootstrap of the per-pair scores (seeds resampled, pairs within "
        "each), mapped to Elo, and P(> base) = the share of replicates scoring above ½.",
        "",
    ]
    return md
