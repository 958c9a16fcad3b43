"""The step's logged scalars over the whole batch, across DDP ranks: a torchmetrics ``Metric``.

Each rank plays N / world_size games, so its own means describe only its share of the batch. Every
step, each rank summarises its share in one row (:func:`summary_row`: how many transitions, the
means of the loss terms, KLs, τ, ρ and A, A's standard deviation, the games that ended), and
:class:`StepSummaries` gathers the rows of every rank (torchmetrics' ``dist_reduce_fx="cat"``: one
all-gather per step); :func:`combine_summaries` then gives the whole batch's values: means weighted by
the ranks' transitions, A's pooled standard deviation, the finished games summed. On one process the
single row is the result, unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

# Per-row bookkeeping columns (not logged as such); the metric columns follow them.
N, SECONDS, FINISHED, LENGTH, WHITE, DRAW, BLACK, TOTAL_FINISHED, ADV_STD = range(9)
BOOKKEEPING = 9
# Metrics every rank computes alike (the all-reduced gradients' norm, β): the first rank's value.
SHARED = ("optim/grad_norm", "selfplay/beta")


def summary_row(
    means: Mapping[str, float],
    *,
    n: int,
    seconds: float,
    adv_std: float,
    finished: int,
    length_sum: int,
    white_win: int,
    draw: int,
    black_win: int,
    games_finished: int,
) -> torch.Tensor:
    """One rank's summary of its share of the step (float64 (9 + len(means),)): ``means`` are per-transition
    means over its ``n`` transitions (in a fixed key order, the same on every rank); the game counts
    are those of the games that ended this step, ``games_finished`` the rank's running total."""
    head = [n, seconds, finished, length_sum, white_win, draw, black_win, games_finished, adv_std]
    return torch.tensor(head + list(means.values()), dtype=torch.float64)


def combine_summaries(rows: torch.Tensor, names: Sequence[str]) -> tuple[dict[str, float], dict[str, float] | None]:
    """The whole batch's step metrics from the ranks' rows (R, 9 + len(names)); ``names`` label the mean columns.

    Returns (metrics, game metrics or None when no game ended on any rank). Means are weighted by the
    ranks' transitions; A's standard deviation is pooled (within plus between ranks, N − 1 in the
    denominator, as ``torch.std``); transitions per second count every rank's transitions over the
    slowest rank's seconds. A single row is returned as it is.
    """
    rows = rows.to(torch.float64).cpu()
    n = rows[:, N]
    total = float(n.sum())
    means = rows[:, BOOKKEEPING:]
    out: dict[str, float] = {}
    for j, name in enumerate(names):
        col = means[:, j]
        if rows.shape[0] == 1 or name in SHARED:
            out[name] = float(col[0])
        else:
            out[name] = float((col * n).sum() / total)
    adv_means = means[:, list(names).index("selfplay/adv_mean")] if "selfplay/adv_mean" in names else None
    if rows.shape[0] == 1:
        out["selfplay/adv_std"] = float(rows[0, ADV_STD])
    elif adv_means is not None and total > 1:
        within = ((n - 1).clamp(min=0) * rows[:, ADV_STD] ** 2).sum()
        between = (n * (adv_means - out["selfplay/adv_mean"]) ** 2).sum()
        out["selfplay/adv_std"] = math.sqrt(float(within + between) / (total - 1))
    else:
        out["selfplay/adv_std"] = 0.0
    out["selfplay/games_finished"] = float(rows[:, TOTAL_FINISHED].sum())
    out["perf/transitions_per_s"] = total / float(rows[:, SECONDS].max())
    finished = float(rows[:, FINISHED].sum())
    if not finished:
        return out, None
    games = {
        "selfplay/game_length": float(rows[:, LENGTH].sum()) / finished,
        "selfplay/white_win": float(rows[:, WHITE].sum()) / finished,
        "selfplay/draw": float(rows[:, DRAW].sum()) / finished,
        "selfplay/black_win": float(rows[:, BLACK].sum()) / finished,
    }
    return out, games


class StepSummaries(Metric):
    """The ranks' summary rows of one step, gathered on ``compute`` (every rank gets every row).

    ``update(row)`` once per step with :func:`summary_row`; ``compute()`` returns (R, k) rows of all
    ranks; ``reset()`` before the next step (``PDXModule`` does both)."""

    full_state_update = False
    rows: list[torch.Tensor]

    def __init__(self) -> None:
        super().__init__(sync_on_compute=True, compute_with_cache=False)
        self.add_state("rows", default=[], dist_reduce_fx="cat")

    def update(self, row: torch.Tensor) -> None:
        self.rows.append(row.reshape(1, -1).to(self.device))

    def compute(self) -> torch.Tensor:
        return dim_zero_cat(self.rows)


def combine_columns(rows: torch.Tensor, names: Sequence[str], reduce: Mapping[str, str]) -> dict[str, float]:
    """The ranks' rows (R, 1 + len(names)) combined per column: column 0 is each rank's count n, then one
    column per name. ``reduce[name]``: ``sum`` (every rank's total), ``first`` (a value every rank computes
    alike), ``mean`` (weighted by n; the default) or ``per:OTHER`` (weighted by the column OTHER, e.g. a
    per-game mean by the games that ended). A single row is returned as it is."""
    rows = rows.to(torch.float64).cpu()
    if rows.shape[0] == 1:
        return {name: float(rows[0, 1 + j]) for j, name in enumerate(names)}
    col = {name: rows[:, 1 + j] for j, name in enumerate(names)}
    out: dict[str, float] = {}
    for name in names:
        kind = reduce.get(name, "mean")
        if kind == "sum":
            out[name] = float(col[name].sum())
        elif kind == "first":
            out[name] = float(col[name][0])
        else:
            weight = col[kind[4:]] if kind.startswith("per:") else rows[:, 0]
            total = float(weight.sum())
            out[name] = float((col[name] * weight).sum() / total) if total else 0.0
    return out
