"""`pdx data mates`: exact mate-in-N suites (N = 1..5) in Lichess puzzle CSV format.

A puzzle is a position from a mixed-strength game (see ``common.play_game``)
where the side to move mates in N and in no fewer moves. Its line alternates
the solver's mate-preserving moves with the defender's *longest* resistance
(ties broken by the seeded RNG); ``AltMoves`` holds, for every solver ply
with k moves left, every move that still mates within k moves.

How each solver move's mate distance is established:
- k <= 2 remaining moves: exactly, by brute force with python-chess
  (mate in 1 = a checkmating move; mate in 2 = every reply allows one), and
  likewise whether a defender reply allows mate in 1;
- k >= 3: one Stockfish search per legal move on the position after it,
  fresh hash each time, bounded by ``Limit(depth=4k+10, nodes=--nodes)``;
  a move shown to mate but later than k is searched again with 4x the nodes
  and 10 more plies, since a shallow search often finds a longer mate first.
  Defender replies are measured the same way. Every search is bounded.
Candidates come from a scan of every game position (``--scan-nodes``) that
reports a mate in N..N+2 and a fresh search (``depth=4N+10, nodes=--nodes``)
that reports mate in N (for N = 1: any position with a checkmating move).

``--from-shards DIR`` takes the candidates from a labelled position set (``pdx
data positions``) instead of playing games: every position whose stored best
line reports a mate in N..N+2 for the side to move, in shard and record order,
with its game's moves as history (the last one is the setup move); the same
fresh search and verification follow. No scan: about half the cost of a
mate-in-5 found in games. Task ``g`` is candidate ``g`` of a list frozen at the
first run in ``<out>.candidates`` (so a resumed run sees the same list whatever
was labelled since). A network distilled on that position set has seen these
positions with Stockfish's best move: evaluate it on suites made from games.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import numpy as np

from pdx_lightning import argtypes
from pdx_lightning.datagen import common

MAX_DEPTH = 5
# Depth caps are generous (4k + SLACK plies for a mate in k): in the simple positions mates
# live in, Stockfish needs up to ~5 plies per move to see the shortest mate, and the node
# budget (--nodes) is what bounds a search in complex ones.
SLACK = 10


def _has_mate_in_one(board: chess.Board) -> bool:
    return bool(common.mating_moves(board))


def _exact_after_solver_move(board: chess.Board, k: int) -> int | None:
    """Mate distance (in solver moves, this one included) after the solver's
    last move on ``board``, if <= k (k <= 2); exact."""
    if board.is_checkmate():
        return 1
    if k < 2 or board.is_game_over(claim_draw=False):
        return None
    for reply in list(board.legal_moves):
        board.push(reply)
        ok = _has_mate_in_one(board)
        board.pop()
        if not ok:
            return None
    return 2


def _engine_distance(engine, board: chess.Board, sign: int, plies: int, nodes: int) -> int | None:
    """Solver's mate distance (moves) in ``board`` from Stockfish, or None.

    ``sign`` is +1 when the solver is to move in ``board``, -1 when the defender is."""
    info = common.fresh_analyse(engine, board, chess.engine.Limit(depth=plies, nodes=nodes))
    score = info["score"].relative
    mate = score.mate() if score.is_mate() else None
    if mate is None or mate * sign <= 0:
        return None
    return mate if sign > 0 else 1 - mate


def solver_distances(
    engine, board: chess.Board, k: int, nodes: int, stop_below: int | None = None
) -> dict[chess.Move, int]:
    """Every solver move that mates within ``k`` moves, with its mate distance."""
    out = {}
    for move in list(board.legal_moves):
        board.push(move)
        if k <= 2:
            d = _exact_after_solver_move(board, k)
        elif board.is_checkmate():
            d = 1
        elif board.is_game_over(claim_draw=False):
            d = None
        else:
            d = _engine_distance(engine, board, -1, 4 * k + SLACK, nodes)
            if d is not None and d > k:  # a longer mate found first: look deeper
                d = _engine_distance(engine, board, -1, 4 * k + 2 * SLACK, 4 * nodes)
        board.pop()
        if d is not None and d <= k:
            out[move] = d
            if stop_below is not None and d < stop_below:
                break  # a shorter mate than claimed: the caller rejects anyway
    return out


def defender_distances(engine, board: chess.Board, j: int, nodes: int) -> dict[chess.Move, int | None]:
    """For every defender reply, the solver's mate distance afterwards (None: not within j)."""
    out = {}
    for reply in list(board.legal_moves):
        board.push(reply)
        if j == 1:
            d = 1 if _has_mate_in_one(board) else None
        elif board.is_game_over(claim_draw=False):
            d = None
        else:
            d = _engine_distance(engine, board, +1, 4 * j + SLACK, nodes)
            if d is None or d > j:
                d = _engine_distance(engine, board, +1, 4 * j + 2 * SLACK, 4 * nodes)
        board.pop()
        out[reply] = d if d is not None and d <= j else None
    return out


def solve(
    engine, board: chess.Board, n: int, nodes: int, rng: random.Random
) -> tuple[list[chess.Move], list[list[str]]] | None:
    """(line, AltMoves) if the solver to move in ``board`` mates in exactly ``n``."""
    b = board.copy()
    line: list[chess.Move] = []
    alts: list[list[str]] = []
    for k in range(n, 0, -1):
        dist = solver_distances(engine, b, k, nodes, stop_below=k)
        if not dist or min(dist.values()) != k:
            return None  # no mate in k, or a shorter one
        alts.append(sorted(m.uci() for m in dist))
        move = rng.choice(sorted(dist, key=chess.Move.uci))
        b.push(move)
        line.append(move)
        if k == 1:
            return (line, alts) if b.is_checkmate() else None
        replies = defender_distances(engine, b, k - 1, nodes)
        if any(d is None for d in replies.values()) or max(d for d in replies.values() if d is not None) != k - 1:
            return None  # an escape, or every reply is mated sooner (so k was not exact)
        longest = sorted((r for r, d in replies.items() if d == k - 1), key=chess.Move.uci)
        reply = rng.choice(longest)
        b.push(reply)
        line.append(reply)
    return None


def shard_candidates(directory: str | Path, n: int) -> list[list[str]]:
    """The move lists (UCI, from the start) of every labelled position in ``directory`` whose best line
    reports mate in ``n``..``n + 2`` for the side to move, with a setup move and the 50-move rule out of
    reach; shard then record order (duplicates across shards dropped by the reader)."""
    from pdx_lightning.supervised.shards import iter_shards  # noqa: PLC0415

    out = []
    for shard in iter_shards(directory):
        mate = shard.cand_mate[:, 0]
        for i in np.flatnonzero((mate >= n) & (mate <= n + 2) & (shard.ply >= 1)).tolist():
            board = shard.board(i)
            if board.halfmove_clock <= 60 and not board.is_game_over():
                out.append([m.uci() for m in board.move_stack])
    return out


def _positions(engine, args: argparse.Namespace, game: int, rng: random.Random) -> Iterator[chess.Board]:
    """Game ``game``'s positions, or with ``--from-shards`` candidate ``game`` alone."""
    if not getattr(args, "from_shards", None):
        yield from common.play_game(engine, rng)
        return
    yield common.candidate_board(args, game, lambda: shard_candidates(args.from_shards, args.depth))


def task(engine, args: argparse.Namespace, game: int) -> list[dict]:
    """One game (or one shard candidate); the first exact mate-in-``args.depth`` position found in it."""
    rng = random.Random(f"mates-{args.depth}-{args.seed}-{game}")
    n = args.depth
    for board in _positions(engine, args, game, rng):
        if board.is_game_over() or board.halfmove_clock > 60:  # keep the 50-move rule out of reach
            continue
        if n == 1:
            if not _has_mate_in_one(board):
                continue
        elif not getattr(args, "from_shards", None):
            score = engine.analyse(board, chess.engine.Limit(nodes=args.scan_nodes))["score"].relative
            if not (score.is_mate() and n <= score.mate() <= n + 2):
                continue
        if n > 1:  # one fresh, deeper search before the per-move verification (~35 searches)
            limit = chess.engine.Limit(depth=4 * n + SLACK, nodes=args.nodes)
            score = common.fresh_analyse(engine, board, limit)["score"].relative
            if score.mate() != n:
                continue
        found = solve(engine, board, n, args.nodes, rng)
        if found is None:
            continue
        line, alts = found
        themes = ["mate", f"mateIn{n}", {1: "oneMove", 2: "short", 3: "long"}.get(n, "veryLong")]
        pid = common.puzzle_id(f"m{n}", args.seed, game, board.ply())
        return [common.make_row(pid, board, line, alts, themes, engine)]
    return []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--depth",
        type=argtypes.int_in(1, MAX_DEPTH),
        required=True,
        metavar=f"{{1..{MAX_DEPTH}}}",
        help="N of mate-in-N",
    )
    common.add_common_arguments(parser, count=300, nodes=100_000)
    parser.add_argument(
        "--from-shards",
        metavar="DIR",
        help="candidates from a `pdx data positions` "
        "directory (positions whose stored best line mates in N..N+2) instead of games",
    )


def run(args: argparse.Namespace) -> int:
    end = None
    if getattr(args, "from_shards", None):
        end = common.count_candidates(args, lambda: shard_candidates(args.from_shards, args.depth))
    return common.generate(task, args, f"mate-in-{args.depth}", end=end)


if __name__ == "__main__":  # `python -m pdx_lightning.datagen.mate_suite` == `pdx data mates`
    raise SystemExit(common.main(add_arguments, run))
