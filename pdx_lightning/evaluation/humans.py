"""``pdx eval humans``: how often a network plays the move a human played (move matching).

Every position of every game of a PGN file (``chesscore.pgn_games``: streamed, refused or skipped
games said in one line), from the game's own move history (the 112-plane input with the real last
eight positions), that the move filter keeps, is scored by every model in one pass: positions are
batched across games (``--batch``, default 1024, per encode; ``--micro-batch`` per network call),
and only running totals are kept, so memory does not grow with the file.

Per position and model, with π the model's policy softmax over the legal moves and ``h`` the
human's move:

* top-1 match: ``argmax π = h`` (the move the network plays, ties to the first index);
* top-k match (k = 3, 5): ``rank(h) <= k``, rank = 1 + the number of legal moves strictly more
  probable than ``h``;
* NLL: ``-log π(h)`` in nats;
* entropy: ``H(π)`` over the legal moves in nats (how spread the policy is: a search such as Lc0's
  spreads its visits by it);
* value NLL: ``-log P(r)``, with P the model's WDL head (the side to move's win/draw/loss) and r the
  game's result from the mover's side, in nats: how well the value head (what a search such as Lc0's
  reads at its leaves) predicts how the game ended. Positions of games without a result (``*``) have
  none.

The positions of one game are not independent (one player, one result), so the intervals of the means
(NLL, entropy, value NLL) and of the paired mean differences are clustered by game (the cluster-robust
variance, ``stats.cluster_mean_interval``, t with games − 1 degrees of freedom), not per position. The
match rates' Wilson intervals and the McNemar test count positions as independent: approximate, and
narrower than a clustered interval would be.

The matches are counted as plain running sums, not with torchmetrics' ``MulticlassAccuracy(top_k=...)``:
its top-k is ``torch.topk``, which breaks a tie among equally probable moves by index where the rank rule
above does not depend on the order, and the sums are kept per breakdown bin and per model, with the
paired discordant counts McNemar needs, in one process (no ranks to synchronise).

Reported overall and by the mover's rating (100-point bins, ``--bins``), the game's Lichess speed
category (from the ``TimeControl`` header as base + 40 x increment: ultrabullet < 30 s, bullet < 180,
blitz < 480, rapid < 1500, classical; ``-`` is correspondence), the mover's clock before the move
(< 30 s, 30–120 s, >= 120 s, none) and the game phase (ply of the position: 0–19, 20–39, 40–59,
60+), with 95% Wilson intervals on the match rates and game-clustered t intervals on the means; each
model after the first is paired with the first on the same positions: exact McNemar on top-1
(positions it matches and the first does not, and the reverse), the mean NLL difference and the mean
value-NLL difference (clustered by game). Header and clock
values are checked as read (``chesscore.pgn_values``): a rating is an integer 0..4000, a
``TimeControl`` finite seconds up to a week, so an impossible value refuses the game (one line) or,
with ``--skip-bad``, skips and counts it; it is never placed in a bin. Every flag is checked before
a model loads (a NaN, an infinity, a value out of range, an inverted rating range: one line naming
the flag), and an input that leaves no position to score is one line too (exit 2).

Protocol defaults follow Maia's evaluation as it is commonly described (McIlroy-Young et al., KDD 2020,
"Aligning Superhuman AI with Human Behavior"; the 10-ply opening cut was not checked against the
paper's text here): the first 10 plies of each game are skipped (``--skip-plies``) and moves
made with under 30 s on the clock are dropped (``--min-clock``; the Maia authors, interviewed by
Wikinews in 2021: games were truncated where either player had 30 seconds or fewer). Here the clock
rule drops single moves, and games without clocks keep every move.

JSON (``--json``)::

    {"command": "eval humans", "pgn": [...], "filters": MoveFilter.to_dict(), "games": {read, used,
     empty, skipped_bad{malformed, variant, setup, bad_header, bad_clock, merged, headers_only, truncated,
     null_move}, bad[...]},
     "positions_skipped": {opening, clock, rating, time_control}, "bins": [...],
     "models": [{"name", "label", "weights", "overall": {positions, top1, top1_ci, top3, top3_ci,
                 top5, top5_ci, nll, nll_ci, entropy, entropy_ci, games, value_positions, value_games, value_nll,
                 value_nll_ci},
                 "by_rating": [{bin, lo, hi, ...}], "by_time_control": [...],
                 "by_clock": [...], "by_phase": [...]}],
     "paired": [{"baseline", "model", "overall": {positions, gained, lost, mcnemar_p, top1_diff,
                 nll_diff, nll_diff_ci, value_nll_diff, value_nll_diff_ci}, "by_rating": [...], ...}],
     "seconds", "positions_per_s"}
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.encoding import EncodedRow, encode_rows, row_from_board
from pdx_lightning.chesscore.moves import indices_mask, legal_indices, move_to_index
from pdx_lightning.chesscore.pgn_games import (
    TIME_CONTROLS,
    HumanGame,
    MoveFilter,
    ReadStats,
    add_filter_arguments,
    check_flag,
    filter_from_args,
    read_games,
    skip_bad_help,
)
from pdx_lightning.chesscore.pgn_values import MAX_RATING
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.stats import (
    bin_edges_labels,
    cluster_mean_interval,
    mcnemar_exact,
    wilson_interval,
)
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.nets.inference import device_of, evaluate
from pdx_lightning.runtime.jsonio import write_json
from pdx_lightning.runtime.progress import progress

RATING_BINS: tuple[float, ...] = tuple(range(1000, 2501, 100))  # 100-point bins, < 1000 and >= 2500 pooled
CLOCK_EDGES = (30.0, 120.0)
CLOCK_LABELS = ("<30 s", "30-120 s", ">=120 s", "none")
PHASE_EDGES = (20, 40, 60)
TOP_K = (1, 3, 5)
SKIP_PLIES, MIN_CLOCK = 10, 30.0  # Maia's evaluation protocol (module docstring)
MAX_BATCH = 65536  # positions encoded at once: ~7 KB each (112 planes), ~0.5 GB at this bound


class HumansArgumentError(UserError, ValueError):
    """A ``pdx eval humans`` flag that cannot be used (says which)."""


def phase_labels(edges: Sequence[int] = PHASE_EDGES) -> list[str]:
    """``0-19, 20-39, 40-59, 60+`` for edges 20, 40, 60 (plies of the position, 0-based)."""
    lows = [0, *edges]
    return [f"{lo}-{hi - 1}" for lo, hi in zip(lows, edges)] + [f"{lows[-1]}+"]


@dataclass
class Axis:
    """One breakdown: its labels; a position's code is an index into them."""

    name: str
    labels: list[str]


def axes_for(bins: Sequence[float]) -> list[Axis]:
    return [
        Axis("overall", ["all"]),
        Axis("rating", [lab for *_, lab in bin_edges_labels(bins)] + ["unrated"]),
        Axis("time_control", list(TIME_CONTROLS)),
        Axis("clock", list(CLOCK_LABELS)),
        Axis("phase", phase_labels()),
    ]


def position_codes(
    ratings: np.ndarray, speeds: np.ndarray, clocks: np.ndarray, plies: np.ndarray, bins: Sequence[float]
) -> dict[str, np.ndarray]:
    """Each position's bin index on every axis of :func:`axes_for` (NaN rating: ``unrated``; NaN clock:
    ``none``)."""
    n_rating = len(bins) + 1
    rating = np.searchsorted(np.asarray(bins, float), ratings, side="right")
    clock = np.searchsorted(np.asarray(CLOCK_EDGES), clocks, side="right")
    return {
        "overall": np.zeros(len(plies), np.int64),
        "rating": np.where(np.isnan(ratings), n_rating, rating).astype(np.int64),
        "time_control": speeds.astype(np.int64),
        "clock": np.where(np.isnan(clocks), len(CLOCK_LABELS) - 1, clock).astype(np.int64),
        "phase": np.searchsorted(np.asarray(PHASE_EDGES), plies, side="right").astype(np.int64),
    }


NO_RESULT = -1  # the outcome code of a position whose game has no result


def outcome_code(result: int | None, ply: int) -> int:
    """The game's result from the side to move at ``ply`` as a WDL index (0 win, 1 draw, 2 loss), or
    ``NO_RESULT``; ``result``: +1 White won, -1 Black won, 0 draw (``HumanGame.result``)."""
    if result is None:
        return NO_RESULT
    mover = result if ply % 2 == 0 else -result
    return 1 - mover


@dataclass
class MatchScores:
    """Per model (M) and position (B): top-k matches and NLL of the human move, and the value head's NLL
    of the game's result (NaN where the game has none)."""

    top: dict[int, np.ndarray]  # k -> (M, B) bool
    nll: np.ndarray  # (M, B) float64, nats
    vnll: np.ndarray  # (M, B) float64, nats; NaN without a result
    entropy: np.ndarray  # (M, B) float64, nats: H(π) over the legal moves


@torch.inference_mode()
def score_positions(
    models: Sequence[torch.nn.Module],
    x: torch.Tensor,
    mask: torch.Tensor,
    human: torch.Tensor,
    micro_batch: int = 512,
    outcome: torch.Tensor | None = None,
) -> MatchScores:
    """Match and NLL of the human moves ``human`` (B,) policy indices, legal under ``mask`` (B, P); the
    value NLL of ``outcome`` (B,) WDL indices from the mover's side (``NO_RESULT``: none; default none)."""
    top: dict[int, list[torch.Tensor]] = {k: [] for k in TOP_K}
    nll, vnll, ent = [], [], []
    if outcome is None:
        outcome = torch.full_like(human, NO_RESULT)
    known = outcome >= 0
    for model in models:
        logp, wdl = evaluate(model, x, mask, micro_batch)  # (B, P), -inf off the legal moves; (B, 3)
        lp = logp.gather(1, human[:, None])[:, 0]  # (B,)
        rank = (logp > lp[:, None]).sum(1) + 1  # (B,)
        for k in TOP_K:
            top[k].append((logp.argmax(1) == human) if k == 1 else rank <= k)
        nll.append(-lp.double())
        lpd = logp.double()
        ent.append(-torch.where(torch.isfinite(lpd), lpd.exp() * lpd, 0.0).sum(1))
        p = wdl.double().gather(1, outcome.clamp(min=0)[:, None])[:, 0]
        vnll.append(torch.where(known, -torch.log(p), torch.nan))
    return MatchScores(
        {k: torch.stack(v).numpy() for k, v in top.items()},
        torch.stack(nll).numpy(),
        torch.stack(vnll).numpy(),
        torch.stack(ent).numpy(),
    )


class Tally:
    """Running totals per axis bin and model: n, top-1/3/5 matches; per model against the first: gained,
    lost (top-1 discordant pairs). The means (NLL, entropy, value NLL) and the paired differences (NLL,
    value NLL) are kept as per-game running sums (``CLUSTER``: positions n, Σ x, Σ S_g², Σ n_g S_g, Σ n_g²,
    games; ``stats.cluster_mean_interval``), their intervals clustered by game: ``add`` takes whole games."""

    FIELDS = ("n", "top1", "top3", "top5")
    PAIRED = ("gained", "lost")
    CLUSTER = ("n", "sum", "s2", "ns", "n2", "games")
    MEANS = ("nll", "entropy", "value_nll", "nll_diff", "value_nll_diff")

    def __init__(self, n_models: int, axes: list[Axis]) -> None:
        self.axes = axes
        self.counts = {a.name: np.zeros((len(a.labels), n_models, len(self.FIELDS))) for a in axes}
        self.paired = {a.name: np.zeros((len(a.labels), n_models, len(self.PAIRED))) for a in axes}
        self.means = {
            q: {a.name: np.zeros((len(a.labels), n_models, len(self.CLUSTER))) for a in axes} for q in self.MEANS
        }

    def add(self, codes: dict[str, np.ndarray], s: MatchScores, games: np.ndarray | None = None) -> None:
        """Add positions: their bin on each axis (``codes``), their scores, and the game each comes from
        (``games``, (B,) ids; every game's positions in this one call; default: each its own game)."""
        t1 = s.top[1]
        per = np.stack([np.ones_like(s.nll), t1, s.top[3], s.top[5]], -1)  # (M, B, F)
        pair = np.stack([t1 & ~t1[:1], ~t1 & t1[:1]], -1).astype(np.float64)  # (M, B, 2)
        games = np.arange(s.nll.shape[1]) if games is None else np.asarray(games)
        known = ~np.isnan(s.vnll[0])  # positions of games with a result (the value NLL's)
        groups = (  # the quantities of one set of positions share its clusters
            (np.ones(len(games), bool), {"nll": s.nll, "entropy": s.entropy, "nll_diff": s.nll - s.nll[:1]}),
            (known, {"value_nll": s.vnll, "value_nll_diff": s.vnll - s.vnll[:1]}),
        )
        for a in self.axes:
            np.add.at(self.counts[a.name], codes[a.name], per.transpose(1, 0, 2))
            np.add.at(self.paired[a.name], codes[a.name], pair.transpose(1, 0, 2))
            for keep, xs in groups:
                adds = [(self.means[q][a.name], x[:, keep]) for q, x in xs.items()]
                _add_clustered(adds, codes[a.name][keep], games[keep])

    def group(self, axis: str, j: int, m: int) -> dict:
        n, *sums = self.counts[axis][j, m]
        n = int(n)
        out: dict = {"positions": n}
        for k, v in zip(TOP_K, sums[:3]):
            out[f"top{k}"] = float(v / n) if n else math.nan
            out[f"top{k}_ci"] = list(wilson_interval(int(round(v)), n))  # noqa: RUF046  (NumPy < 2 rounds to a float64)
        for q in ("nll", "entropy", "value_nll"):
            mean, lo, hi = _clustered(self.means[q][axis][j, m])
            out.update({q: mean, f"{q}_ci": [lo, hi]})
        v = self.means["value_nll"][axis][j, m]
        out.update(value_positions=int(v[0]), value_games=int(v[5]), games=int(self.means["nll"][axis][j, m, 5]))
        return out

    def pair_group(self, axis: str, j: int, m: int) -> dict:
        n = int(self.counts[axis][j, m, 0])
        gained, lost = self.paired[axis][j, m]
        d, lo, hi = _clustered(self.means["nll_diff"][axis][j, m])
        vd, vlo, vhi = _clustered(self.means["value_nll_diff"][axis][j, m])
        return {
            "positions": n,
            "gained": int(gained),
            "lost": int(lost),
            "mcnemar_p": mcnemar_exact(int(gained), int(lost)),
            "top1_diff": float((gained - lost) / n) if n else math.nan,
            "nll_diff": d,
            "nll_diff_ci": [lo, hi],
            "value_nll_diff": vd,
            "value_nll_diff_ci": [vlo, vhi],
        }

    def _breakdowns(self, m: int, fn) -> dict:
        out = {"overall": fn("overall", 0, m)}
        for a in self.axes[1:]:
            out[f"by_{a.name}"] = [
                {"bin": lab, **fn(a.name, j, m)} for j, lab in enumerate(a.labels) if self.counts[a.name][j, m, 0] > 0
            ]
        return out

    def summary(self, m: int) -> dict:
        return self._breakdowns(m, self.group)

    def compare(self, m: int) -> dict:
        return self._breakdowns(m, self.pair_group)


def _add_clustered(adds: list[tuple[np.ndarray, np.ndarray]], bins: np.ndarray, games: np.ndarray) -> None:
    """For each ``(acc, x)`` of ``adds``, add values ``x`` (M, B) of positions in axis bins ``bins`` (B,)
    from games ``games`` (B,) to ``acc`` (bins, M, ``Tally.CLUSTER``): each (bin, game) is one cluster,
    whole in this call, found once for every quantity."""
    if not len(bins):
        return
    keys, cluster = np.unique(np.stack([bins, games], 1), axis=0, return_inverse=True)
    cluster = cluster.reshape(-1)
    n_c = np.bincount(cluster, minlength=len(keys)).astype(np.float64)[:, None]  # (C, 1)
    for acc, x in adds:
        s_c = np.zeros((len(keys), x.shape[0]))
        np.add.at(s_c, cluster, x.T)  # (C, M)
        n = np.broadcast_to(n_c, s_c.shape)
        rows = np.stack([n, s_c, s_c**2, n * s_c, n**2, np.ones_like(s_c)], -1)  # (C, M, 6)
        np.add.at(acc, keys[:, 0], rows)


def _clustered(v: np.ndarray) -> tuple[float, float, float]:
    n, total, s2, ns, n2, games = (float(t) for t in v)
    return cluster_mean_interval(int(n), total, s2, ns, n2, int(games))


# ---------------------------------------------------------------- streaming


@dataclass
class _Pending:
    rows: list[EncodedRow] = field(default_factory=list)
    legal: list[np.ndarray] = field(default_factory=list)
    human: list[int] = field(default_factory=list)
    rating: list[float] = field(default_factory=list)
    speed: list[int] = field(default_factory=list)
    clock: list[float] = field(default_factory=list)
    ply: list[int] = field(default_factory=list)
    outcome: list[int] = field(default_factory=list)
    game: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class HumanEvalResult:
    tally: Tally
    read: ReadStats
    games_used: int
    skipped: dict[str, int]
    seconds: float

    @property
    def positions(self) -> int:
        return int(self.tally.counts["overall"][0, 0, 0])


def game_positions(game: HumanGame, filt: MoveFilter, skipped: dict[str, int]):
    """``(ply, board before the move, move)`` of every move of ``game`` the filter keeps; the others are
    counted in ``skipped`` by reason. The board is live (its move stack is the game so far): use it
    before the next item."""
    board = chess.Board()
    for ply, move in enumerate(game.moves):
        why = filt.keeps(game, ply)
        if why is None:
            yield ply, board, move
        else:
            skipped[why] = skipped.get(why, 0) + 1
        board.push(move)


def evaluate_games(
    models: Sequence[torch.nn.Module],
    games,
    filt: MoveFilter,
    read: ReadStats,
    bins: Sequence[float] = RATING_BINS,
    batch: int = 1024,
    micro_batch: int = 512,
    progress_desc: str | None = None,
) -> HumanEvalResult:
    """Score every kept position of ``games`` (an iterable of :class:`HumanGame`) with every model."""
    t0 = time.perf_counter()
    tally = Tally(len(models), axes_for(bins))
    speed_code = {s: i for i, s in enumerate(TIME_CONTROLS)}
    skipped = {"opening": 0, "clock": 0, "rating": 0, "time_control": 0}
    pend = _Pending()
    used = 0

    def flush() -> None:
        nonlocal pend
        if not pend:
            return
        x = torch.from_numpy(encode_rows(pend.rows))  # (B, 112, 8, 8)
        s = score_positions(
            models, x, indices_mask(pend.legal), torch.tensor(pend.human), micro_batch, torch.tensor(pend.outcome)
        )
        tally.add(
            position_codes(
                np.array(pend.rating, float),
                np.array(pend.speed),
                np.array(pend.clock, float),
                np.array(pend.ply),
                bins,
            ),
            s,
            np.array(pend.game),
        )
        bar.update(len(pend))
        pend = _Pending()

    with progress(desc=progress_desc or "", unit="pos", disable=progress_desc is None) as bar:
        for game in games:
            if not filt.keeps_game(game):
                skipped["time_control"] += len(game.moves)
                continue
            used += 1
            for ply, board, move in game_positions(game, filt, skipped):
                r = game.rating(ply)
                c = game.clock_before(ply)
                pend.rows.append(row_from_board(board))
                pend.legal.append(legal_indices(board))
                pend.human.append(move_to_index(move, board.turn))
                pend.rating.append(math.nan if r is None else float(r))
                pend.speed.append(speed_code[game.speed])
                pend.clock.append(math.nan if c is None else float(c))
                pend.ply.append(ply)
                pend.outcome.append(outcome_code(game.result, ply))
                pend.game.append(used)
            if len(pend) >= batch:  # whole games per batch: the value NLL is clustered by game
                flush()
        flush()
    return HumanEvalResult(tally, read, used, skipped, time.perf_counter() - t0)


# ---------------------------------------------------------------- report


def _value_text(m: float, ci: list[float], sign: str) -> str:
    """A value NLL (or difference) with its interval; "–" where no game had a result."""
    if math.isnan(m):
        return "–"
    return f"{m:{sign}.3f} [{ci[0]:{sign}.3f}, {ci[1]:{sign}.3f}]"


def fmt_rate(g: dict, key: str) -> str:
    lo, hi = g[f"{key}_ci"]
    return f"{100 * g[key]:.1f} ± {50 * (hi - lo):.1f}"


def render(labels: list[str], summaries: list[dict], paired: list[dict]) -> str:
    """Markdown: overall, then each breakdown (top-1 % per model), then the pairings with the first."""
    out = [
        "## Human move matching (top-k: % of human moves in the model's k most probable; ± half the 95% "
        "Wilson interval; NLL and entropy in nats)",
        "",
        markdown_table(
            [
                "Model",
                "positions",
                "top-1 (%)",
                "top-3 (%)",
                "top-5 (%)",
                "NLL",
                "entropy",
                "value NLL [95%, by game]",
            ],
            [
                [
                    lab,
                    s["overall"]["positions"],
                    fmt_rate(s["overall"], "top1"),
                    fmt_rate(s["overall"], "top3"),
                    fmt_rate(s["overall"], "top5"),
                    f"{s['overall']['nll']:.3f}",
                    f"{s['overall']['entropy']:.3f}",
                    _value_text(s["overall"]["value_nll"], s["overall"]["value_nll_ci"], ""),
                ]
                for lab, s in zip(labels, summaries)
            ],
        ),
    ]
    titles = {
        "rating": "mover's rating",
        "time_control": "time control (Lichess speed)",
        "clock": "mover's clock before the move",
        "phase": "ply of the position",
    }
    for axis, title in titles.items():
        key = f"by_{axis}"
        bins = [b["bin"] for b in summaries[0][key]]
        cell = {(i, b["bin"]): b for i, s in enumerate(summaries) for b in s[key]}
        out += [
            "",
            f"### By {title}: top-1 (%) / NLL",
            "",
            markdown_table(
                ["Bin", "positions", *labels],
                [
                    [
                        b,
                        cell[0, b]["positions"],
                        *[f"{100 * cell[i, b]['top1']:.1f} / {cell[i, b]['nll']:.2f}" for i in range(len(labels))],
                    ]
                    for b in bins
                ],
            ),
        ]
    if paired:
        out += [
            "",
            f"### Paired with {labels[0]} on the same positions (top-1: exact McNemar; ΔNLL and Δ value NLL: "
            "95% t clustered by game)",
            "",
            markdown_table(
                ["Model", "Δtop-1 (pts)", "gained", "lost", "McNemar p", "ΔNLL (nats)", "Δ value NLL (nats)"],
                [
                    [
                        p["label"],
                        f"{100 * p['overall']['top1_diff']:+.2f}",
                        p["overall"]["gained"],
                        p["overall"]["lost"],
                        f"{p['overall']['mcnemar_p']:.3g}",
                        f"{p['overall']['nll_diff']:+.3f} [{p['overall']['nll_diff_ci'][0]:+.3f}, "
                        f"{p['overall']['nll_diff_ci'][1]:+.3f}]",
                        _value_text(p["overall"]["value_nll_diff"], p["overall"]["value_nll_diff_ci"], "+"),
                    ]
                    for p in paired
                ],
            ),
        ]
    return "\n".join(out)


# ---------------------------------------------------------------- CLI


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(
        parser,
        "model name or file (base:maia-1900, base:small, .ckpt, .pt, .pb.gz); repeat to "
        "compare (paired statistics are against the first)",
    )
    parser.add_argument(
        "--label",
        action="append",
        help="a name per --model for the tables and JSON, same order (default: the model string)",
    )
    parser.add_argument(
        "--pgn",
        action="append",
        required=True,
        help="PGN file (.pgn, or compressed: .pgn.zst as Lichess's monthly dumps, .pgn.gz, .pgn.bz2, .pgn.xz); "
        "repeatable",
    )
    add_filter_arguments(
        parser,
        skip_plies=SKIP_PLIES,
        min_clock=MIN_CLOCK,
        skip_why="10: the opening cut Maia's move-matching is commonly described with, "
        "McIlroy-Young et al. 2020; book moves say little",
        clock_why="30: Maia drops moves under 30 s",
    )
    parser.add_argument("--max-games", type=int, help="read at most this many games of each file")
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help=skip_bad_help("the summary line and JSON games.skipped_bad"),
    )
    parser.add_argument(
        "--bins",
        type=_floats,
        default=list(RATING_BINS),
        help="inner edges of the mover's-rating bins, comma-separated (default: 1000,1100,...,2500)",
    )
    parser.add_argument("--batch", type=int, default=1024, help="positions encoded and scored together")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON (schema in the module docstring)")


def _games(args: argparse.Namespace, read: ReadStats):
    for path in args.pgn:
        yield from read_games(path, skip_bad=args.skip_bad, stats=read, max_games=args.max_games)


def check_arguments(args: argparse.Namespace) -> MoveFilter:
    """Every flag checked before any model loads or game is read (one line naming the flag); the
    move filter."""
    labels = args.label or list(args.model)
    if len(labels) != len(args.model):
        raise HumansArgumentError(f"--label given {len(labels)} times for {len(args.model)} --model")
    check_flag("--batch", args.batch, 1, MAX_BATCH, "positions held at once")
    check_flag("--micro-batch", args.micro_batch, 1)
    for edge in args.bins:
        check_flag("--bins", edge, 0, MAX_RATING, "rating edges")
    try:
        bin_edges_labels(args.bins)
    except ValueError as e:
        raise HumansArgumentError(f"--bins: {e}") from None
    filt = filter_from_args(args)
    missing = [p for p in args.pgn if not Path(p).is_file()]
    if missing:
        raise HumansArgumentError(f"PGN file {missing[0]} not found")
    return filt


class NoPositionsError(UserError, ValueError):
    """Nothing to score: no game of the input was usable, or the filters kept no move."""


def run(args: argparse.Namespace) -> int:
    from pdx_lightning.nets import load_model  # noqa: PLC0415

    filt = check_arguments(args)
    labels = args.label or list(args.model)
    device = device_of(args.device)
    models = [load_model(name, weights=args.weights).to(device).eval() for name in args.model]
    read = ReadStats()
    res = evaluate_games(
        models, _games(args, read), filt, read, args.bins, args.batch, args.micro_batch, progress_desc="humans"
    )
    games = {"read": read.games, "used": res.games_used, **{k: v for k, v in read.to_dict().items() if k != "games"}}
    print(
        f"games: {read.games} read, {res.games_used} used, {read.empty} empty, skipped "
        f"{sum(read.skipped.values())} bad {read.skipped}; positions: {res.positions} scored, skipped "
        f"{res.skipped}"
    )
    if not res.positions:
        filtered = ", ".join(f"{k} {v}" for k, v in res.skipped.items() if v) or "none"
        raise NoPositionsError(
            f"no positions to score in {', '.join(args.pgn)}: {read.summary()}, {res.games_used} used; "
            f"positions the filters skipped: {filtered}"
        )
    summaries = [res.tally.summary(m) for m in range(len(models))]
    paired = [
        {"baseline": labels[0], "model": args.model[m], "label": labels[m], **res.tally.compare(m)}
        for m in range(1, len(models))
    ]
    print(render(labels, summaries, paired))
    if args.json:
        write_json(
            args.json,
            {
                "command": "eval humans",
                "pgn": list(args.pgn),
                "filters": filt.to_dict(),
                "games": games,
                "positions_skipped": res.skipped,
                "bins": list(args.bins),
                "match_rule": "top-1: argmax = human move; top-k: 1 + #moves strictly more probable <= k",
                "models": [
                    {"name": n, "label": lab, "weights": args.weights, **s}
                    for n, lab, s in zip(args.model, labels, summaries)
                ],
                "paired": paired,
                "seconds": res.seconds,
                "positions_per_s": res.positions * len(models) / res.seconds if res.seconds > 0 else math.nan,
            },
        )
    return 0
