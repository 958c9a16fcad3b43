"""``pdx eval recovery``: which of the base's failures fine-tuning recovers (paper Section 3.5, Figure 8).

The base and each fine-tuned model are scored on the same suite by
:func:`pdx_lightning.evaluation.puzzle_scoring.score_suite` (argmax, multi-solution
credit, teacher-forced along the marked line). Two units are reported:

* **puzzle** — the base's wrong puzzles, each binned by the base's solution
  probability π_base(W(s)) (mass on the accepted moves) and by the solution's
  rank in the base's output (1 + moves strictly more probable than the best
  accepted one) at its *first failed* solver ply. *Recovered*: the fine-tuned
  model solves the puzzle. *Given back*: the base solves it and the fine-tuned
  model fails; binned at the fine-tuned model's first failed ply by the base's
  solution probability there and by the solution's rank in the *fine-tuned*
  output (the paper: mostly rank 2).
* **position** — the paper's unit (the policy is Markovian): every solver
  position on the marked lines where the base's argmax is wrong; recovered when
  the fine-tuned argmax there is correct; given back where the base is right
  and the fine-tuned model wrong.

Default bins as the paper's Figure 8: probability ``<0.05, 0.05–0.15,
0.15–0.3, ≥0.3``; rank ``1`` (only on ties with a wrong argmax), ``2``, ``3``,
``4–5``, ``6+``. Shares carry 95% Wilson intervals.

JSON (``--json OUT``)::

    {"command": "eval recovery", "base": name, "multi_solution": rule, "prob_bins": [0.05, 0.15, 0.3],
     "rank_bins": [2, 3, 4, 6], "suite": {"files", "rows", "selected", "puzzles", "skipped_bad"},
     "base_summary": {"puzzles", "solved", "positions", "positions_correct"},
     "models": [{"name",
                 "puzzle" | "position": {              # the same keys for both units
                    "base_wrong", "recovered", "recovered_share", "recovered_ci": [lo, hi],
                    "base_right", "given_back", "net" (= recovered − given_back),
                    "by_prob" | "by_rank": [{"bin", "lo", "hi", "n", "recovered", "share", "ci"}],
                    "given_back_by_prob" | "given_back_by_ft_rank": [{"bin", "lo", "hi", "given_back"}],
                    "base_p_geo": {"recovered", "unrecovered"},   # geometric mean π_base(solution)
                    "gap_median": {"recovered", "unrecovered"},   # median π_base(top) − π_base(solution)
                    "ft_gain_mean": mean π_ft(solution) − π_base(solution) over recovered,
                    "rating_mean": {"recovered", "base_solved", "base_failed"}}}],   # puzzle unit only
     "png": path | null}
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

import numpy as np

from pdx_lightning import argtypes
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.play import ModelCache, add_model_arguments, write_json
from pdx_lightning.evaluation.puzzle_scoring import (
    MULTI_SOLUTION_RULE,
    SuiteResult,
    add_suite_filter_arguments,
    load_from_args,
    score_suite,
)
from pdx_lightning.evaluation.puzzle_scoring import check_args as check_args  # `pdx` checks the flags with it
from pdx_lightning.evaluation.stats import assign_bins, bin_edges_labels, wilson_interval
from pdx_lightning.nets.inference import device_of

PROB_BINS: tuple[float, ...] = (0.05, 0.15, 0.3)
RANK_BINS: tuple[int, ...] = (2, 3, 4, 6)


def rank_bins(edges: Sequence[int]) -> list[tuple[float, float, str]]:
    """Integer rank bins ``[lo, hi)`` from inner edges (ranks start at 1): labels ``1``, ``2``, ``4-5``, ``6+``."""
    out = []
    for lo, hi, _ in bin_edges_labels(edges):
        first = 1 if lo == -math.inf else int(lo)
        if hi == math.inf:
            out.append((lo, hi, f"{first}+"))
        else:
            last = int(hi) - 1
            out.append((lo, hi, str(first) if first == last else f"{first}-{last}"))
    return out


def _binned(
    values: np.ndarray,
    labels: list,
    edges: Sequence[float],
    sel: np.ndarray,
    hit: np.ndarray,
    key: str,
    shares: bool = True,
) -> list[dict]:
    b = assign_bins(values, edges)
    out = []
    for j, (lo, hi, label) in enumerate(labels):
        n, k = int((sel & (b == j)).sum()), int((sel & hit & (b == j)).sum())
        row = {"bin": label, "lo": lo, "hi": hi}
        if shares:
            row.update({"n": n, key: k, "share": k / n if n else math.nan, "ci": list(wilson_interval(k, n))})
        else:
            row[key] = k
        out.append(row)
    return out


def _geo(p: np.ndarray) -> float:
    with np.errstate(divide="ignore"):  # a probability of exactly 0 gives a geometric mean of 0
        return float(np.exp(np.log(p).mean())) if p.size else math.nan


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if x.size else math.nan


def _unit(base_ok, ft_ok, p_base, rank_base, top_base, p_ft, gb_p_base, gb_rank_ft, prob_bins, rbins) -> dict:
    """Counts and bins for one unit; ``gb_*`` are the values at which given-back units are binned."""
    wrong, rec = ~base_ok, ~base_ok & ft_ok
    gave = base_ok & ~ft_ok
    n_wrong, n_rec = int(wrong.sum()), int(rec.sum())
    unrec = wrong & ~ft_ok
    prob_labels = bin_edges_labels(prob_bins)
    return {
        "base_wrong": n_wrong,
        "recovered": n_rec,
        "recovered_share": n_rec / n_wrong if n_wrong else math.nan,
        "recovered_ci": list(wilson_interval(n_rec, n_wrong)),
        "base_right": int(base_ok.sum()),
        "given_back": int(gave.sum()),
        "net": n_rec - int(gave.sum()),
        "by_prob": _binned(p_base, prob_labels, prob_bins, wrong, ft_ok, "recovered"),
        "by_rank": _binned(rank_base.astype(np.float64), rank_bins(rbins), rbins, wrong, ft_ok, "recovered"),
        "given_back_by_prob": _binned(gb_p_base, prob_labels, prob_bins, gave, gave, "given_back", shares=False),
        "given_back_by_ft_rank": _binned(
            gb_rank_ft.astype(np.float64), rank_bins(rbins), rbins, gave, gave, "given_back", shares=False
        ),
        "base_p_geo": {"recovered": _geo(p_base[rec]), "unrecovered": _geo(p_base[unrec])},
        "gap_median": {
            "recovered": _median(top_base[rec] - p_base[rec]),
            "unrecovered": _median(top_base[unrec] - p_base[unrec]),
        },
        "ft_gain_mean": float((p_ft[rec] - p_base[rec]).mean()) if n_rec else math.nan,
    }


def recovery_analysis(
    base: SuiteResult, ft: SuiteResult, prob_bins: Sequence[float] = PROB_BINS, rbins: Sequence[int] = RANK_BINS
) -> dict:
    """Recovered / given-back counts of ``ft`` against ``base`` (same puzzles, same order), both units."""
    if base.ids != ft.ids:
        raise ValueError("recovery needs both models scored on the same puzzles in the same order")
    p_base, p_ft = np.exp(base.ply_log_p), np.exp(ft.ply_log_p)
    top_base = np.exp(base.ply_top_log_p)
    # puzzle unit: the base's first failed ply (wrong puzzles), the fine-tuned model's (given back)
    start = base.offsets[:-1]
    at_base = start + np.maximum(base.first_fail, 0)
    at_ft = start + np.maximum(ft.first_fail, 0)
    puzzle = _unit(
        base.solved,
        ft.solved,
        p_base[at_base],
        base.ply_rank[at_base],
        top_base[at_base],
        p_ft[at_base],
        p_base[at_ft],
        ft.ply_rank[at_ft],
        prob_bins,
        rbins,
    )
    rating = base.rating
    rec = ~base.solved & ft.solved

    def mean_rating(sel):
        r = rating[sel & ~np.isnan(rating)]
        return float(r.mean()) if r.size else math.nan

    puzzle["rating_mean"] = {
        "recovered": mean_rating(rec),
        "base_solved": mean_rating(base.solved),
        "base_failed": mean_rating(~base.solved),
    }
    position = _unit(
        base.ply_correct, ft.ply_correct, p_base, base.ply_rank, top_base, p_ft, p_base, ft.ply_rank, prob_bins, rbins
    )
    return {"puzzle": puzzle, "position": position}


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", required=True, help="the base model the failures are counted against")
    add_model_arguments(parser, play=False)
    parser.add_argument("--suite", action="append", required=True, help="puzzle CSV / .csv.zst; repeatable")
    add_suite_filter_arguments(parser)
    parser.add_argument(
        "--prob-bins",
        type=argtypes.float_list(0, 1),
        default=list(PROB_BINS),
        help="inner edges of the base solution-probability bins (default 0.05,0.15,0.3)",
    )
    parser.add_argument(
        "--rank-bins",
        type=argtypes.int_list(1, 4288),
        default=list(RANK_BINS),
        help="inner edges of the solution-rank bins, [lo, hi) (default 2,3,4,6 → 1|2|3|4-5|6+)",
    )
    parser.add_argument("--png", metavar="OUT", help="write Figure 8 style bar plots (rows: puzzle, position unit)")


def render(base: str, names: list[str], analyses: list[dict]) -> str:
    out = [
        f"## Recovery vs {base} (Section 3.5): recovered = base wrong, fine-tuned right; "
        f"given back = base right, fine-tuned wrong",
        "",
        markdown_table(
            ["Model", "Unit", "Base wrong", "Recovered (%)", "Base right", "Given back", "Net"],
            [
                [
                    n,
                    u,
                    a[u]["base_wrong"],
                    f"{a[u]['recovered']} ({100 * a[u]['recovered_share']:.1f})" if a[u]["base_wrong"] else "0",
                    a[u]["base_right"],
                    a[u]["given_back"],
                    f"{a[u]['net']:+d}",
                ]
                for n, a in zip(names, analyses)
                for u in ("puzzle", "position")
            ],
        ),
    ]
    for unit, where in (("puzzle", "at the first failed solver ply"), ("position", "at the position")):
        for key, what in (("by_prob", "base solution probability"), ("by_rank", "solution rank under the base")):
            bins = analyses[0][unit][key]
            out += [
                "",
                f"### {unit.capitalize()} unit: recovered / base-wrong by {what} {where}",
                "",
                markdown_table(
                    ["Bin", "n", *names],
                    [
                        [
                            b["bin"],
                            b["n"],
                            *[
                                f"{a[unit][key][j]['recovered']} ({100 * a[unit][key][j]['share']:.0f}%)"
                                if b["n"]
                                else "–"
                                for a in analyses
                            ],
                        ]
                        for j, b in enumerate(bins)
                    ],
                ),
            ]
    return "\n".join(out)


def plot(names: list[str], analyses: list[dict], path: str) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), squeeze=False)
    width = 0.8 / max(1, len(names))
    for r, unit in enumerate(("puzzle", "position")):
        for c, (key, xlabel) in enumerate((("by_prob", "π_base(solution)"), ("by_rank", "rank of the solution"))):
            ax, bins = axes[r][c], analyses[0][unit][key]
            x = np.arange(len(bins))
            for i, (n, a) in enumerate(zip(names, analyses)):
                share = [0.0 if not b["n"] else b["share"] for b in a[unit][key]]
                ax.bar(
                    x + (i - (len(names) - 1) / 2) * width,
                    share,
                    width,
                    color=f"C{i % 10}",
                    label=f"{n}: +{a[unit]['recovered']} / −{a[unit]['given_back']}",
                )
            for j, b in enumerate(bins):
                ax.annotate(f"n={b['n']}", (j, 1.0), ha="center", va="bottom", fontsize=7)
            ax.set_xticks(x, [b["bin"] for b in bins], fontsize=8)
            ax.set_ylim(0, 1.1)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"recovered share ({unit}s)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=min(3, len(names)),
        fontsize=8,
        title="model: +recovered / −given back (puzzles)",
        title_fontsize=8,
    )
    fig.tight_layout(rect=(0, 0.08 + 0.03 * ((len(names) - 1) // 3), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    suite = load_from_args(args)
    if not suite.puzzles:
        print("no puzzles to score")
        return 1
    models = ModelCache(args.weights, device_of(args.device))
    base = score_suite(models(args.base), suite.puzzles, args.micro_batch, progress_desc="recovery")
    analyses = [
        recovery_analysis(
            base,
            score_suite(models(n), suite.puzzles, args.micro_batch, progress_desc="recovery"),
            args.prob_bins,
            args.rank_bins,
        )
        for n in args.model
    ]
    print(render(args.base, args.model, analyses))
    if args.png:
        plot(args.model, analyses, args.png)
    if args.json:
        write_json(
            args.json,
            {
                "command": "eval recovery",
                "base": args.base,
                "multi_solution": MULTI_SOLUTION_RULE,
                "prob_bins": args.prob_bins,
                "rank_bins": args.rank_bins,
                "suite": {
                    "files": suite.paths,
                    "rows": suite.n_rows,
                    "selected": suite.n_selected,
                    "puzzles": len(suite),
                    "skipped_bad": suite.n_bad,
                },
                "base_summary": {
                    "puzzles": len(suite),
                    "solved": int(base.solved.sum()),
                    "positions": base.n_positions,
                    "positions_correct": int(base.ply_correct.sum()),
                },
                "models": [{"name": n, **a} for n, a in zip(args.model, analyses)],
                "png": args.png,
            },
        )
    return 0
