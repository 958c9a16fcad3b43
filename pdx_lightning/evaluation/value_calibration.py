"""``pdx eval value``: each network's value head (W/D/L) against a stronger reference, on positions that
games actually reached.

``pdx eval humans`` scores a value head against the results of human games; a network inside a search
reads its value head at the leaves of positions the search itself steers to, which human games rarely
reach. This command takes its positions from any PGN games (pdx's own match records, such as the
``reports/searched/*.pgn.xz`` games pdx's 64-node search played, or human games) and compares each
network's W/D/L with a reference's on the same positions.

Positions. Every game of every ``--pgn`` file is read as ``pdx eval humans`` reads it
(:func:`pdx_lightning.chesscore.pgn_games.read_games`: plain or compressed, bounded, a bad game refused in
one line or with ``--skip-bad`` skipped and counted), games from a ``FEN`` header too. A game's positions
are the one before each move and the one after its last move, each with the game's history (the
networks' 112-plane input reads the last eight positions): a match record's game starts from its
opening's FEN, and the opening line the arena wrote in its comment (``opening ID: e2e4 e7e5 ...``,
:func:`~pdx_lightning.evaluation.arena_game.opening_line`) is replayed from the standard start when it
reaches that FEN, as the arena played it; otherwise the history starts at the FEN. Left out: positions
before ply ``--skip-plies`` (counted from the standard start, or from the FEN's move number: opening
theory), a set-up game's first position (its opening's, given to both players, not reached), and
positions where the game is over or a draw can be claimed (:func:`~pdx_lightning.chesscore.rules.game_end`
with claimed draws: checkmate, stalemate, insufficient material, threefold repetition, the 50-move
rule: the rules, not a judgement, decide them). ``--positions N`` of the rest are drawn uniformly
without replacement (reservoir sampling, seeded by ``--seed``: the same files, order and seed give the
same positions), then ordered by file, game and ply.

Reference. Stockfish at a fixed search (``--reference sf:nodes=N``, :mod:`pdx_lightning.engines.stockfish`
spec: ``nodes=``, ``depth=``, ``movetime=`` (ms), ``hash=`` (MB, default 16); one thread) with
``UCI_ShowWDL``: the W/D/L it reports for the side to move after the search, its own win-rate model of its
evaluation (Stockfish 15.1, Debian's: a logistic function of the evaluation and the game's ply, fitted
to its self-play games). Each position is searched once from a cleared engine (``ucinewgame``: the same
W/D/L in any order or run) with the game's moves (repetitions and the move count are the game's); a
position reached twice with the same reversible moves since the last capture or pawn move is searched
once (cached for the run).

Metrics per network, over the same positions, with ref and net the reference's and the network's
W/D/L for the side to move:

* cross-entropy ``H(ref, net) = −Σ ref_i log net_i`` and ``KL(ref ‖ net) = H(ref, net) − H(ref)`` in
  nats (``net_i`` floored at :data:`EPS` before the log: a float32 softmax can round to 0);
* the Brier score of the three-way W/D/L, ``Σ_i (net_i − ref_i)²`` (0 to 2);
* the expected score ``E = W + D/2``: the mean absolute error ``|E_net − E_ref|`` and the mean signed
  bias ``E_net − E_ref`` (positive: the network is too optimistic for the side to move);
* sign agreement: the share of positions, among those whose reference ``E`` is not exactly ½, where
  ``E_net − ½`` has the reference's sign (which side is better);
* a calibration table: positions binned by the network's ``E`` (ten bins of 0.1), per bin the count, the
  mean network ``E`` and the mean reference ``E`` (a calibrated head has them equal).

The means carry 95% intervals clustered by game (positions of one game are not independent:
:func:`~pdx_lightning.evaluation.stats.cluster_mean_interval`), and every network after the first is
paired with it on the same positions (differences of KL, Brier and ``|ΔE|``, also clustered by game;
the cross-entropy's difference is the KL's).

JSON (``--json``)::

    {"command": "eval value", "pgn": [...], "games": {read, used, empty, skipped_bad, bad,
     history_from_start, history_from_fen}, "positions": {candidates, sampled, unique, skipped{opening,
     game_over}, seed, skip_plies},
     "reference": {"spec", "engine", "model", "limit", "hash_mb", "threads", "entropy", "mean_e",
                   "mean_draw", "mean_depth", "seconds", "positions_per_s"},
     "models": [{"name", "label", "weights", "sha256", "network", "metrics": {positions, cross_entropy,
                 cross_entropy_ci, kl, kl_ci, brier, brier_ci, e_mae, e_mae_ci, e_bias, e_bias_ci,
                 sign_agreement, sign_positions, mean_e, mean_draw, calibration: [{bin, lo, hi,
                 positions, net_e, ref_e}]}}],
     "paired": [{"baseline", "label", kl_diff, kl_diff_ci, brier_diff, brier_diff_ci, e_mae_diff,
                 e_mae_diff_ci}],
     "samples": [{"pgn", "game", "ply", "fen", "reference": [w, d, l], "models": [[w, d, l], ...]}],
     "seconds": {read, reference, networks}, "environment": {...}}
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np

from pdx_lightning import argtypes
from pdx_lightning.chesscore.pgn_games import HumanGame, ReadStats, read_games
from pdx_lightning.chesscore.rules import game_end
from pdx_lightning.engines.stockfish import (
    StockfishNotFound,
    StockfishSpecError,
    open_engine,
    parse_stockfish_spec,
)
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation.arena_game import opening_line
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.stats import cluster_mean_interval
from pdx_lightning.files.atomicfile import atomic_write_text
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.runtime.environment import environment
from pdx_lightning.runtime.jsonio import write_json
from pdx_lightning.runtime.progress import progress

EPS = 1e-12  # a network probability's floor before its log
E_BINS = 10  # calibration bins of the network's expected score, 0.1 wide
POSITIONS, SEED, SKIP_PLIES = 2000, 0, 8
MAX_POSITIONS = 100_000  # each sampled position is held with its game's history until the end
REFERENCE = "sf:nodes=20000"
HASH_MB = 16
CHUNK = 4096  # positions encoded at once for the networks (~117 MB of float32 planes)


class ValueCalibrationError(UserError, ValueError):
    """A ``pdx eval value`` flag that cannot be used (says which and its value)."""


class NoPositionsError(UserError, ValueError):
    """Nothing to score: no game of the input was usable, or every position was left out."""


# ---------------------------------------------------------------- the metrics (pure)


def expected_score(wdl: np.ndarray) -> np.ndarray:
    """``E = W + D/2`` of W/D/L rows ``(..., 3)``."""
    w = np.asarray(wdl, dtype=np.float64)
    return w[..., 0] + 0.5 * w[..., 1]


def cross_entropy(ref: np.ndarray, net: np.ndarray) -> np.ndarray:
    """``H(ref, net) = −Σ ref_i log net_i`` per row in nats; a term with ``ref_i = 0`` is 0, ``net_i`` is
    floored at :data:`EPS`."""
    ref, net = np.asarray(ref, dtype=np.float64), np.asarray(net, dtype=np.float64)
    return -np.where(ref > 0, ref * np.log(np.maximum(net, EPS)), 0.0).sum(-1)


def entropy(p: np.ndarray) -> np.ndarray:
    """``H(p) = −Σ p_i log p_i`` per row in nats."""
    return cross_entropy(p, p)


def kl_divergence(ref: np.ndarray, net: np.ndarray) -> np.ndarray:
    """``KL(ref ‖ net) = Σ ref_i log(ref_i / net_i)`` per row in nats (``H(ref, net) − H(ref)``)."""
    return cross_entropy(ref, net) - entropy(ref)


def brier(ref: np.ndarray, net: np.ndarray) -> np.ndarray:
    """The three-way Brier score ``Σ_i (net_i − ref_i)²`` per row (0 to 2)."""
    d = np.asarray(net, dtype=np.float64) - np.asarray(ref, dtype=np.float64)
    return (d * d).sum(-1)


def sign_agreement(net_e: np.ndarray, ref_e: np.ndarray) -> tuple[int, int]:
    """``(agreeing, counted)``: among the positions whose reference ``E`` is not ½ (``counted``), those where
    ``E_net − ½`` has the sign of ``E_ref − ½`` (a network ``E`` of exactly ½ agrees with neither side)."""
    net_e, ref_e = np.asarray(net_e, dtype=np.float64), np.asarray(ref_e, dtype=np.float64)
    counted = ref_e != 0.5
    agree = np.sign(net_e - 0.5) == np.sign(ref_e - 0.5)
    return int((agree & counted).sum()), int(counted.sum())


def calibration_table(net_e: np.ndarray, ref_e: np.ndarray, bins: int = E_BINS) -> list[dict[str, Any]]:
    """Positions binned by the network's ``E`` into ``bins`` equal bins of [0, 1] (``[lo, hi)``, the last
    one closed): per bin ``{bin, lo, hi, positions, net_e, ref_e}`` with the mean network and reference
    ``E`` (NaN in an empty bin)."""
    net_e, ref_e = np.asarray(net_e, dtype=np.float64), np.asarray(ref_e, dtype=np.float64)
    idx = np.clip(np.floor(net_e * bins).astype(np.int64), 0, bins - 1)
    rows = []
    for b in range(bins):
        sel = idx == b
        n = int(sel.sum())
        lo, hi = b / bins, (b + 1) / bins
        rows.append(
            {
                "bin": f"{lo:.1f}-{hi:.1f}",
                "lo": lo,
                "hi": hi,
                "positions": n,
                "net_e": float(net_e[sel].mean()) if n else math.nan,
                "ref_e": float(ref_e[sel].mean()) if n else math.nan,
            }
        )
    return rows


def clustered_mean(x: np.ndarray, clusters: np.ndarray | None = None) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the mean of ``x`` with its 95% interval, clustered by ``clusters`` (one id per
    value; None: each value its own cluster), :func:`~pdx_lightning.evaluation.stats.cluster_mean_interval`."""
    x = np.asarray(x, dtype=np.float64)
    if clusters is None:
        clusters = np.arange(len(x))
    _, c = np.unique(np.asarray(clusters), return_inverse=True, axis=0)
    c = c.reshape(-1)
    s = np.bincount(c, weights=x)
    n = np.bincount(c).astype(np.float64)
    return cluster_mean_interval(
        len(x), float(s.sum()), float((s * s).sum()), float((n * s).sum()), float((n * n).sum()), len(n)
    )


def _per_position(ref: np.ndarray, net: np.ndarray) -> dict[str, np.ndarray]:
    d = expected_score(net) - expected_score(ref)
    return {
        "cross_entropy": cross_entropy(ref, net),
        "kl": kl_divergence(ref, net),
        "brier": brier(ref, net),
        "e_mae": np.abs(d),
        "e_bias": d,
    }


def value_metrics(ref: np.ndarray, net: np.ndarray, clusters: np.ndarray | None = None) -> dict[str, Any]:
    """Every metric of one network's W/D/L rows ``net`` against the reference's ``ref`` (both ``(N, 3)``, the
    side to move's): the means with their intervals clustered by ``clusters`` (the game of each position;
    None: independent positions), sign agreement, mean ``E`` and draw probability, and the calibration
    table (module docstring)."""
    ref, net = np.asarray(ref, dtype=np.float64), np.asarray(net, dtype=np.float64)
    out: dict[str, Any] = {"positions": len(ref)}
    for key, x in _per_position(ref, net).items():
        m, lo, hi = clustered_mean(x, clusters)
        out[key], out[f"{key}_ci"] = m, [lo, hi]
    net_e, ref_e = expected_score(net), expected_score(ref)
    agree, counted = sign_agreement(net_e, ref_e)
    out["sign_agreement"] = agree / counted if counted else math.nan
    out["sign_positions"] = counted
    out["mean_e"] = float(net_e.mean()) if len(net) else math.nan
    out["mean_draw"] = float(net[:, 1].mean()) if len(net) else math.nan
    out["calibration"] = calibration_table(net_e, ref_e)
    return out


def paired_metrics(
    ref: np.ndarray, net: np.ndarray, base: np.ndarray, clusters: np.ndarray | None = None
) -> dict[str, Any]:
    """``net`` minus ``base`` on the same positions: the mean differences of KL, Brier and ``|ΔE|`` with
    their intervals clustered by ``clusters`` (negative: ``net`` is closer to the reference)."""
    a, b = _per_position(ref, net), _per_position(ref, base)
    out: dict[str, Any] = {}
    for key in ("kl", "brier", "e_mae"):
        m, lo, hi = clustered_mean(a[key] - b[key], clusters)
        out[f"{key}_diff"], out[f"{key}_diff_ci"] = m, [lo, hi]
    return out


# ---------------------------------------------------------------- positions


@dataclass
class Sampled:
    """A sampled position: the board with its game's history, where it comes from."""

    board: chess.Board
    pgn: int  # index of its --pgn file
    game: int  # the game's number in that file (1-based)
    ply: int  # plies from the standard start (board.ply(): the FEN's move number without history)

    @classmethod
    def of(cls, board: chess.Board, pgn: int, game: int) -> Sampled:
        """A copy of the live ``board`` (with its history) as a sampled position."""
        return cls(board.copy(), pgn, game, board.ply())


def start_board(game: HumanGame) -> tuple[chess.Board, bool]:
    """``(board, from_start)``: the board the game's moves start from, with the history that reached it;
    ``from_start``: that history begins at the standard start (a set-up game whose comment's opening line
    reaches its FEN, :func:`~pdx_lightning.evaluation.arena_game.opening_line`), else it begins at the FEN."""
    if game.fen is None:
        return chess.Board(), True
    line = opening_line(game.comment)
    if line:
        board = chess.Board()
        try:
            for uci in line:
                board.push_uci(uci)
        except ValueError:  # an illegal or malformed move: not this game's line
            pass
        else:
            if board.fen() == game.fen:
                return board, True
    return chess.Board(game.fen), False


def game_positions(
    game: HumanGame, start: chess.Board, skip_plies: int, skipped: dict[str, int]
) -> Iterator[chess.Board]:
    """The positions of ``game`` from ``start`` (:func:`start_board`) that are scored (module docstring), the
    others counted in ``skipped`` (``opening``, ``game_over``). The board is live (``start`` itself, moved
    on): copy what you keep before the next item."""
    board = start
    for k in range(len(game.moves) + 1):
        if k:
            board.push(game.moves[k - 1])
        if board.ply() < skip_plies or (k == 0 and game.fen is not None):
            skipped["opening"] += 1
        elif game_end(board, claim_draws=True) is not None:
            skipped["game_over"] += 1
        else:
            yield board


class Reservoir:
    """A uniform sample of ``size`` items without replacement from a stream of unknown length (Algorithm R),
    seeded: the same stream and seed keep the same items. ``offer(make)`` builds an item only if kept."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.rng, self.seen = size, random.Random(seed), 0
        self.items: list = []

    def offer(self, make: Callable[[], Any]) -> None:
        i = self.seen
        self.seen += 1
        if i < self.size:
            self.items.append(make())
            return
        j = self.rng.randrange(i + 1)
        if j < self.size:
            self.items[j] = make()


@dataclass
class PositionSample:
    positions: list[Sampled]
    candidates: int  # positions eligible before sampling
    games_used: int
    from_start: int  # games whose history begins at the standard start
    skipped: dict[str, int] = field(default_factory=dict)


def sample_positions(
    games: Iterable[tuple[int, HumanGame]], n: int, seed: int, skip_plies: int, bar=None
) -> PositionSample:
    """``n`` positions drawn uniformly from every scored position of ``games`` (``(pgn index, game)`` pairs),
    ordered by file, game and ply."""
    res = Reservoir(n, seed)
    skipped = {"opening": 0, "game_over": 0}
    used = from_start = 0
    for pgn, game in games:
        used += 1
        start, known = start_board(game)
        from_start += known
        for board in game_positions(game, start, skip_plies, skipped):
            res.offer(functools.partial(Sampled.of, board, pgn, game.number))
        if bar is not None:
            bar.update(1)
    positions = sorted(res.items, key=lambda s: (s.pgn, s.game, s.ply))
    return PositionSample(positions, res.seen, used, from_start, skipped)


# ---------------------------------------------------------------- the reference


def reference_key(board: chess.Board) -> tuple[str, tuple[str, ...]]:
    """What a fixed search of ``board`` depends on: the FEN (with the move counters) and the moves since the
    last capture or pawn move (the repetitions the engine sees)."""
    tail = board.move_stack[len(board.move_stack) - min(board.halfmove_clock, len(board.move_stack)) :]
    return board.fen(), tuple(m.uci() for m in tail)


def limit_text(limit: chess.engine.Limit) -> str:
    """``20,000 nodes`` / ``depth 12`` / ``200 ms a position`` (the spec's fields, joined)."""
    parts = []
    if limit.nodes is not None:
        parts.append(f"{limit.nodes:,} nodes")
    if limit.depth is not None:
        parts.append(f"depth {limit.depth}")
    if limit.time is not None:
        parts.append(f"{limit.time * 1000:g} ms a position")
    return ", ".join(parts)


def parse_reference(spec: str) -> tuple[chess.engine.Limit, int]:
    """``(limit, hash MB)`` of a ``--reference`` spec: Stockfish at full strength (``nodes=``, ``depth=``,
    ``movetime=``, ``hash=``); anything else is :class:`ValueCalibrationError` naming the flag."""
    try:
        limit, options = parse_stockfish_spec(spec)
    except StockfishSpecError as e:
        raise ValueCalibrationError(f"--reference: {e}") from None
    hash_mb = int(options.pop("Hash", HASH_MB))
    if options:  # elo= or skill=: a weakened engine is no reference
        raise ValueCalibrationError(
            f"--reference {spec!r}: the reference is Stockfish at full strength (nodes=, depth=, movetime=, "
            f"hash=), not a weakened one (elo=, skill=)"
        )
    return limit, hash_mb


class StockfishReference:
    """Stockfish (one thread, ``UCI_ShowWDL``) at a fixed limit: the W/D/L of a position for the side to
    move, searched once from a cleared engine and cached by :func:`reference_key`."""

    def __init__(self, spec: str, path: str | None = None) -> None:
        self.spec = spec
        self.limit, self.hash_mb = parse_reference(spec)
        try:
            self.engine = open_engine(path, threads=1, hash_mb=self.hash_mb, options={"UCI_ShowWDL": True})
        except StockfishNotFound as e:
            raise ValueCalibrationError(f"--stockfish: {e}") from None
        self.name = str(self.engine.id.get("name", "Stockfish"))
        self.cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self.depths: list[int] = []
        self.seconds = 0.0

    @property
    def model(self) -> str:
        return f"{self.name}'s UCI_ShowWDL win-rate model at {limit_text(self.limit)}"

    def wdl(self, board: chess.Board) -> np.ndarray:
        """``(3,)`` W/D/L probabilities of ``board`` for the side to move."""
        key = reference_key(board)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        t0 = time.perf_counter()
        info = self.engine.analyse(board, self.limit, game=object())  # a new game: ucinewgame, hash cleared
        self.seconds += time.perf_counter() - t0
        pov = info.get("wdl")
        if pov is None:
            raise RuntimeError(f"{self.name} reported no W/D/L (UCI_ShowWDL) for {board.fen()!r}")
        w = pov.pov(board.turn)
        self.cache[key] = out = np.array([w.wins, w.draws, w.losses], dtype=np.float64) / w.total()
        if "depth" in info:
            self.depths.append(int(info["depth"]))
        return out

    def close(self) -> None:
        self.engine.quit()


# ---------------------------------------------------------------- report


def _ci(m: float, ci: Sequence[float], fmt: str) -> str:
    if math.isnan(m):
        return "–"
    lo, hi = ci
    if math.isnan(lo):
        return f"{m:{fmt}}"
    return f"{m:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def _num(x: float, fmt: str) -> str:
    return "–" if math.isnan(x) else f"{x:{fmt}}"


def render(doc: dict) -> str:
    """The Markdown report of a JSON document (:func:`run`'s): the metrics per model, the pairings with the
    first, then each model's calibration table."""
    ref, pos = doc["reference"], doc["positions"]
    labels = [m["label"] for m in doc["models"]]
    out = [
        f"## Value calibration: W/D/L against {ref['model']}",
        "",
        f"{pos['sampled']:,} positions ({pos['unique']:,} distinct) drawn from {pos['candidates']:,} of "
        f"{doc['games']['used']:,} games (seed {pos['seed']}, from ply {pos['skip_plies']}): "
        f"{', '.join(doc['pgn'])}. Reference: mean E {ref['mean_e']:.3f}, mean D {ref['mean_draw']:.3f}, "
        f"entropy {ref['entropy']:.3f} nats. W/D/L of the side to move; CE = H(ref, net), KL = KL(ref ‖ net) "
        "in nats; Brier over W, D, L (0–2); E = W + D/2, bias = net − ref; sign: E − ½ on the reference's side "
        "(positions with E_ref ≠ ½); [95%, clustered by game].",
        "",
        markdown_table(
            ["Model", "positions", "CE", "KL", "Brier", "E MAE", "E bias", "sign (%)", "mean E", "mean D"],
            [
                [
                    m["label"],
                    f"{s['positions']:,}",
                    f"{s['cross_entropy']:.4f}",
                    _ci(s["kl"], s["kl_ci"], ".4f"),
                    _ci(s["brier"], s["brier_ci"], ".4f"),
                    _ci(s["e_mae"], s["e_mae_ci"], ".4f"),
                    _ci(s["e_bias"], s["e_bias_ci"], "+.4f"),
                    _num(100 * s["sign_agreement"], ".1f"),
                    f"{s['mean_e']:.3f}",
                    f"{s['mean_draw']:.3f}",
                ]
                for m in doc["models"]
                for s in [m["metrics"]]
            ],
            right=range(1, 10),
        ),
    ]
    if doc["paired"]:
        out += [
            "",
            f"### Paired with {labels[0]} on the same positions (model − {labels[0]}; negative: closer to the "
            "reference)",
            "",
            markdown_table(
                ["Model", "ΔKL", "ΔBrier", "ΔE MAE"],
                [
                    [
                        p["label"],
                        _ci(p["kl_diff"], p["kl_diff_ci"], "+.4f"),
                        _ci(p["brier_diff"], p["brier_diff_ci"], "+.4f"),
                        _ci(p["e_mae_diff"], p["e_mae_diff_ci"], "+.4f"),
                    ]
                    for p in doc["paired"]
                ],
                right=range(1, 4),
            ),
        ]
    for m in doc["models"]:
        out += [
            "",
            f"### Calibration: {m['label']} (positions by the network's E; a calibrated head has equal means)",
            "",
            markdown_table(
                ["E (net)", "positions", "mean E (net)", "mean E (ref)"],
                [
                    [c["bin"], f"{c['positions']:,}", _num(c["net_e"], ".3f"), _num(c["ref_e"], ".3f")]
                    for c in m["metrics"]["calibration"]
                ],
                right=range(1, 4),
            ),
        ]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(
        parser,
        "model name or file (base:maia-1900, base:small, .ckpt, .pt, .pb.gz); repeat to compare (paired "
        "differences are against the first)",
    )
    parser.add_argument(
        "--label", action="append", help="a name per --model for the tables and JSON, same order (default: the model)"
    )
    parser.add_argument(
        "--pgn",
        action="append",
        required=True,
        help="PGN games to take positions from (.pgn, .pgn.zst, .pgn.gz, .pgn.bz2, .pgn.xz; games from a FEN "
        "too, such as pdx's match records reports/searched/*.pgn.xz); repeatable",
    )
    parser.add_argument(
        "--positions",
        type=argtypes.int_in(1, MAX_POSITIONS),
        default=POSITIONS,
        help="positions drawn uniformly (without replacement) from every scored position of the games",
    )
    parser.add_argument("--seed", type=argtypes.seed, default=SEED, help="the sample's seed")
    parser.add_argument(
        "--skip-plies",
        type=argtypes.int_in(0, 10_000),
        default=SKIP_PLIES,
        help="leave out positions before this ply, counted from the standard start (opening theory; a game "
        "from a FEN also leaves out its first position, its opening's)",
    )
    parser.add_argument(
        "--reference",
        default=REFERENCE,
        help="the reference: Stockfish at a fixed search, its UCI_ShowWDL W/D/L (sf:nodes=N, sf:depth=N, "
        "sf:movetime=MS; ,hash=MB; one thread)",
    )
    parser.add_argument("--stockfish", help="Stockfish binary (default: $STOCKFISH, stockfish on PATH, Debian's)")
    parser.add_argument("--max-games", type=argtypes.positive_int, help="read at most this many games of each file")
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip and count unusable games instead of failing on the first (what pdx eval humans refuses, "
        "games from a FEN apart; counts by reason in the JSON's games.skipped_bad)",
    )
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON (schema in the module docstring)")
    parser.add_argument("--md", metavar="OUT", help="write the Markdown report")


def check_args(args: argparse.Namespace) -> None:
    """Every flag checked before a model loads or a game is read: one line naming the flag and its value."""
    labels = args.label or list(args.model)
    if len(labels) != len(args.model):
        raise ValueCalibrationError(f"--label given {len(labels)} times for {len(args.model)} --model")
    for p in args.pgn:
        if not Path(p).is_file():
            raise ValueCalibrationError(f"--pgn {p}: no such file")
    parse_reference(args.reference)


def _games(args: argparse.Namespace, read: ReadStats) -> Iterator[tuple[int, HumanGame]]:
    for i, path in enumerate(args.pgn):
        for game in read_games(path, skip_bad=args.skip_bad, stats=read, max_games=args.max_games, setup=True):
            yield i, game


def _load_models(args: argparse.Namespace) -> list:
    from pdx_lightning.nets import ModelLoadError, load_model  # noqa: PLC0415  (torch loads here)
    from pdx_lightning.nets.inference import device_of  # noqa: PLC0415

    device = device_of(args.device)
    models = []
    for name in args.model:
        try:
            models.append(load_model(name, weights=args.weights).to(device).eval())
        except ModelLoadError as e:
            raise ValueCalibrationError(f"--model {name}: {e}") from None
    return models


def _identity(name: str, model) -> dict[str, Any]:
    """What names a network in the record: its file's sha256 (None for ``random:``) and family + config."""
    from pdx_lightning.nets import ModelLoadError, base_reference, network_record  # noqa: PLC0415

    try:
        network: dict | None = network_record(model)
    except (AttributeError, ModelLoadError):  # a network without a registered family's config
        network = None
    return {"sha256": base_reference(name)["sha256"], "network": network}


def network_wdl(models: Sequence, boards: Sequence[chess.Board], micro_batch: int) -> list[np.ndarray]:
    """Each model's ``(N, 3)`` W/D/L for the side to move of ``boards`` (their histories as input)."""
    import torch  # noqa: PLC0415

    from pdx_lightning.chesscore.encoding import encode_boards  # noqa: PLC0415
    from pdx_lightning.chesscore.moves import legal_mask  # noqa: PLC0415
    from pdx_lightning.nets.inference import evaluate  # noqa: PLC0415

    out: list[list[np.ndarray]] = [[] for _ in models]
    for i in range(0, len(boards), CHUNK):
        chunk = boards[i : i + CHUNK]
        x, mask = torch.from_numpy(encode_boards(chunk)), legal_mask(chunk)
        for k, model in enumerate(models):
            out[k].append(evaluate(model, x, mask, micro_batch)[1].double().numpy())
    return [np.concatenate(w) if w else np.zeros((0, 3)) for w in out]


def run(args: argparse.Namespace) -> int:
    check_args(args)
    labels = args.label or list(args.model)
    models = _load_models(args)
    reference = StockfishReference(args.reference, args.stockfish)
    try:
        t0 = time.perf_counter()
        read = ReadStats()
        with progress(desc="games", unit="game") as bar:
            sample = sample_positions(_games(args, read), args.positions, args.seed, args.skip_plies, bar)
        t_read = time.perf_counter() - t0
        if not sample.positions:
            raise NoPositionsError(
                f"no position to score in {', '.join(args.pgn)}: {read.summary()}, {sample.games_used} used; "
                f"left out: opening {sample.skipped['opening']}, game over {sample.skipped['game_over']}"
            )
        boards = [s.board for s in sample.positions]
        with progress(total=len(boards), desc="reference", unit="pos") as bar:
            ref_rows = []
            for b in boards:
                ref_rows.append(reference.wdl(b))
                bar.update(1)
        ref = np.stack(ref_rows)
    finally:
        reference.close()
    t1 = time.perf_counter()
    nets = network_wdl(models, boards, args.micro_batch)
    t_nets = time.perf_counter() - t1
    games = np.array([(s.pgn, s.game) for s in sample.positions])
    metrics = [value_metrics(ref, w, games) for w in nets]
    unique = len(reference.cache)
    doc: dict[str, Any] = {
        "command": "eval value",
        "pgn": list(args.pgn),
        "games": {
            "read": read.games,
            "used": sample.games_used,
            **{k: v for k, v in read.to_dict().items() if k != "games"},
            "history_from_start": sample.from_start,
            "history_from_fen": sample.games_used - sample.from_start,
        },
        "positions": {
            "candidates": sample.candidates,
            "sampled": len(boards),
            "unique": unique,
            "skipped": sample.skipped,
            "seed": args.seed,
            "skip_plies": args.skip_plies,
        },
        "reference": {
            "spec": args.reference,
            "engine": reference.name,
            "model": reference.model,
            "limit": {"nodes": reference.limit.nodes, "depth": reference.limit.depth, "time": reference.limit.time},
            "hash_mb": reference.hash_mb,
            "threads": 1,
            "entropy": float(entropy(ref).mean()),
            "mean_e": float(expected_score(ref).mean()),
            "mean_draw": float(ref[:, 1].mean()),
            "mean_depth": float(np.mean(reference.depths)) if reference.depths else math.nan,
            "seconds": reference.seconds,
            "positions_per_s": unique / reference.seconds if reference.seconds > 0 else math.nan,
        },
        "models": [
            {"name": name, "label": lab, "weights": args.weights, **_identity(name, model), "metrics": m}
            for name, lab, model, m in zip(args.model, labels, models, metrics)
        ],
        "paired": [
            {"baseline": labels[0], "label": labels[k], **paired_metrics(ref, nets[k], nets[0], games)}
            for k in range(1, len(models))
        ],
        "samples": [
            {
                "pgn": s.pgn,
                "game": s.game,
                "ply": s.ply,
                "fen": s.board.fen(),
                "reference": [round(float(v), 4) for v in ref[i]],
                "models": [[round(float(v), 6) for v in w[i]] for w in nets],
            }
            for i, s in enumerate(sample.positions)
        ],
        "seconds": {"read": t_read, "reference": reference.seconds, "networks": t_nets},
        "environment": environment(),
    }
    md = render(doc)
    print(md, end="")
    print(
        f"games: {read.summary()}, {sample.games_used} used; positions: {sample.candidates:,} candidates, "
        f"{len(boards):,} sampled, {unique:,} searched by {reference.name} "
        f"({doc['reference']['positions_per_s']:.1f}/s)"
    )
    if args.md:
        atomic_write_text(args.md, md)
    if args.json:
        write_json(args.json, doc)
    return 0
