"""``pdx eval mates``: accuracy and solution probability by mate depth (Tables 3 and 4).

Same flags, scoring and ``--json`` schema as ``pdx eval puzzles`` (see
:mod:`pdx_lightning.evaluation.puzzle_scoring`); ``--suite`` may be given once per
depth file. Depth N = the number of solver moves of the puzzle's line; a
puzzle counts as solved only if the argmax at every solver position is
accepted (the marked move, a suite ``AltMoves`` entry — generated suites
list every mate-preserving move there — or any immediate mate).
"""

from __future__ import annotations

import argparse

from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.puzzle_scoring import add_arguments as _add_arguments
from pdx_lightning.evaluation.puzzle_scoring import check_args as check_args  # `pdx` checks the flags with it
from pdx_lightning.evaluation.puzzle_scoring import fmt_acc, fmt_ratio, run_eval

__all__ = ["add_arguments", "check_args", "run", "render_mates"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _add_arguments(parser)


def render_mates(names: list[str], summaries: list[dict], paired: list[dict]) -> str:
    depths = sorted({d["depth"] for s in summaries for d in s["by_depth"]})
    cell = {(i, d["depth"]): d for i, s in enumerate(summaries) for d in s["by_depth"]}
    n_row = ["n", *[cell[0, d]["n"] for d in depths]]
    out = [
        "## Mate-in-N accuracy (%), 95% Wilson intervals (Table 3 style)",
        "",
        markdown_table(
            ["Model", *map(str, depths)],
            [n_row, *[[n, *[fmt_acc(cell[i, d]) for d in depths]] for i, n in enumerate(names)]],
        ),
        "",
        "## Solution probability p* by depth: geometric mean (arithmetic) (Table 4 style)",
        "",
        markdown_table(
            ["Model", *map(str, depths)],
            [
                [n, *[f"{cell[i, d]['p_star_geo']:.3f} ({cell[i, d]['p_star_arith']:.3f})" for d in depths]]
                for i, n in enumerate(names)
            ],
        ),
    ]
    if paired:
        pc = {(j, d["depth"]): d for j, c in enumerate(paired) for d in c["by_depth"]}
        out += [
            "",
            f"## Paired p* ratio vs {names[0]} by depth (95% t-interval); Δacc (pts)",
            "",
            markdown_table(
                ["Model", *map(str, depths)],
                [
                    [c["model"], *[f"{fmt_ratio(pc[j, d])}; {100 * pc[j, d]['acc_diff']:+.2f}" for d in depths]]
                    for j, c in enumerate(paired)
                ],
            ),
        ]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    return run_eval(args, "eval mates", render_mates)
