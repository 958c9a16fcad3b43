"""`pdx data puzzles`: tactics suites the way lichess-puzzler finds them.

Follows ``generator.py`` of lichess-puzzler (analyze_position, cook_mate,
cook_advantage), with node budgets instead of its 25M-node searches:

- every game position is evaluated (``--scan-nodes``) from the side to move,
  the *solver*; the previous position's evaluation, negated, is ``prev``;
- skipped: fewer than two legal moves; ``prev`` > +300 cp while no mate is
  in sight (already winning); the solver already up in material (1/3/3/5/9);
- a mate in <= 15 for the solver: ``cook_mate`` -- every solver move must be
  an only-move (below) and the best move a mate, the defender answers with
  Stockfish's best move (``--nodes``), until checkmate;
- else if eval >= +200 cp and ``wc(eval) > wc(prev) + 0.6`` (the setup move
  was a blunder), unless eval < +400 cp and the solver is not down material:
  ``cook_advantage`` -- MultiPV 2 at every ply; at a solver ply the best move
  must be an only-move, else the line ends there; the best move must keep
  >= +200 cp; a repetition cancels. The line is trimmed until its length is
  odd and its last solver move had an alternative (an only *legal* move is
  no puzzle), and one-move advantage lines are dropped.

Only-move (``is_valid_attack``): no second move, or ``wc(best) > wc(second)
+ 0.7``, or the best is mate in 1 and the best non-mating move has
``wc <= 0.6``. ``wc(cp) = 2 / (1 + exp(-0.00368208 cp)) - 1`` (mate = +-1).
``AltMoves``: every checkmating move at a ply whose solution move mates, else
the solution move alone. Themes: ``mate mateInK`` or ``advantage`` (final
eval < 600 cp) / ``crushing``, plus ``oneMove``/``short``/``long``/``veryLong``.

``--from-shards DIR``: instead of playing games, the candidates are labelled
positions (``pdx data positions``) whose stored MultiPV search already shows
a winning only-move for the side to move (the first test of a tactic, so most
positions that could never make one are never searched); each is taken with
its game's last move as the setup move, ``prev`` and its own score come from
scans as in a game, and every rule above applies unchanged. The list is frozen
in ``<out>.candidates`` (see ``common``). A network distilled on that position
set has seen these positions: evaluate it on suites made from games.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass

import chess
import chess.engine
import numpy as np
from chess.engine import Cp, Mate, Score

from pdx_lightning import argtypes
from pdx_lightning.datagen import common

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
MATE_SOON = Mate(15)
MAX_LINE = 30  # plies; a guard, lichess lines are far shorter
PER_GAME = 3  # puzzles taken from one game at most (positions of one game are alike)


def win_chances(score: Score) -> float:
    """lichess' win chances in [-1, 1] of a score from the solver's side."""
    mate = score.mate()  # None exactly when not score.is_mate()
    if mate is not None:
        return 1.0 if mate > 0 else -1.0
    cp = score.score()
    assert cp is not None  # a centipawn score: only mate scores have no score() without mate_score
    return 2 / (1 + math.exp(-0.00368208 * cp)) - 1


def material_diff(board: chess.Board, side: chess.Color) -> int:
    return sum(v * (len(board.pieces(p, side)) - len(board.pieces(p, not side))) for p, v in VALUES.items())


@dataclass
class Pair:
    """Best and second-best move with scores from the winner's side."""

    best: chess.Move
    score: Score
    second: Score | None


def next_pair(engine, board: chess.Board, winner: chess.Color, nodes: int, multipv: int = 2) -> Pair:
    infos = engine.analyse(board, chess.engine.Limit(nodes=nodes), multipv=multipv)
    second = infos[1]["score"].pov(winner) if len(infos) > 1 else None
    return Pair(infos[0]["pv"][0], infos[0]["score"].pov(winner), second)


def valid_mate_in_one(engine, board: chess.Board, pair: Pair, nodes: int) -> bool:
    if pair.score != Mate(1):
        return False
    if pair.second is None or win_chances(pair.second) <= 0.6:
        return True
    if pair.second == Mate(1):  # several mates in 1: how good is the best non-mating move?
        mates = set(common.mating_moves(board))
        others = [m for m in board.legal_moves if m not in mates]
        if not others:
            return True
        info = engine.analyse(board, chess.engine.Limit(nodes=nodes), root_moves=others)
        return win_chances(info["score"].pov(board.turn)) < 0.6
    return False


def valid_attack(engine, board: chess.Board, pair: Pair, nodes: int) -> bool:
    return (
        pair.second is None
        or valid_mate_in_one(engine, board, pair, nodes)
        or win_chances(pair.score) > win_chances(pair.second) + 0.7
    )


def cook_mate(engine, board: chess.Board, winner: chess.Color, nodes: int) -> list[chess.Move] | None:
    line: list[chess.Move] = []
    while not board.is_game_over():
        if len(line) >= MAX_LINE:
            return None
        if board.turn == winner:
            pair = next_pair(engine, board, winner, nodes)
            mate = pair.score.mate()  # None exactly when not pair.score.is_mate()
            if not valid_attack(engine, board, pair, nodes) or not (mate is not None and mate > 0):
                return None
            move = pair.best
        else:
            move = engine.play(board, chess.engine.Limit(nodes=nodes)).move
        board.push(move)
        line.append(move)
    return line if board.is_checkmate() else None


def cook_advantage(engine, board: chess.Board, winner: chess.Color, nodes: int) -> list[Pair] | None:
    pairs: list[Pair] = []
    while not board.is_game_over() and len(pairs) < MAX_LINE:
        if board.is_repetition(2):
            return None
        solver = board.turn == winner
        pair = next_pair(engine, board, winner, nodes, multipv=2 if solver else 1)
        if solver and not valid_attack(engine, board, pair, nodes):
            break
        if pair.score < Cp(200):
            return None
        pairs.append(pair)
        board.push(pair.best)
    while pairs and (len(pairs) % 2 == 0 or pairs[-1].second is None):
        pairs.pop()  # end on a solver move that had an alternative
    return pairs


def _themes(line: list[chess.Move], mate: bool, final: Score | None) -> list[str]:
    solver_moves = (len(line) + 1) // 2
    themes = ["mate", f"mateIn{solver_moves}"] if mate else ["crushing" if final >= Cp(600) else "advantage"]
    return themes + [{1: "oneMove", 2: "short", 3: "long"}.get(solver_moves, "veryLong")]


def _alts(board: chess.Board, line: list[chess.Move]) -> list[list[str]]:
    b, alts = board.copy(), []
    for i, move in enumerate(line):
        if i % 2 == 0:
            mates = common.mating_moves(b)
            alts.append([m.uci() for m in mates] if move in mates else [move.uci()])
        b.push(move)
    return alts


def analyze_position(
    engine, board: chess.Board, prev: Score, score: Score, nodes: int
) -> tuple[list[chess.Move], bool, Score | None] | None:
    """(line, is_mate, final eval) of a puzzle starting with the solver to move in ``board``."""
    winner = board.turn
    if board.legal_moves.count() < 2:
        return None
    if prev > Cp(300) and score < MATE_SOON:
        return None  # too much of a winning position to start with
    if material_diff(board, winner) > 0:
        return None  # already up in material
    if score > MATE_SOON:
        line = cook_mate(engine, board.copy(), winner, nodes)
        return (line, True, None) if line else None
    if score >= Cp(200) and win_chances(score) > win_chances(prev) + 0.6:
        if score < Cp(400) and material_diff(board, winner) > -1:
            return None  # not clearly winning and not from being down in material
        pairs = cook_advantage(engine, board.copy(), winner, nodes)
        if not pairs or len(pairs) == 1:
            return None  # nothing, or a one-mover
        return [p.best for p in pairs], False, pairs[-1].score
    return None


def _row(engine, args, game: int, board: chess.Board, found) -> dict:
    line, mate, final = found
    pid = common.puzzle_id("t", args.seed, game, board.ply())
    return common.make_row(pid, board, line, _alts(board, line), _themes(line, mate, final), engine)


def task(engine, args: argparse.Namespace, game: int) -> list[dict]:
    """Up to ``PER_GAME`` tactics from one game and its one-move branches.

    Every position of the game is a candidate with the game's last move as the
    setup move; besides, at every position ``args.branches`` random legal moves
    are tried as the setup move (blunders a weak player could make there).
    """
    rng = random.Random(f"tactics-{args.seed}-{game}")
    limit = chess.engine.Limit(nodes=args.scan_nodes)
    prev: Score = Cp(20)
    rows: list[dict] = []
    for board in common.play_game(engine, rng, style="blunders"):
        if board.is_game_over():
            break
        score = engine.analyse(board, limit)["score"].pov(board.turn)
        found = analyze_position(engine, board, prev, score, args.nodes)
        if found:
            rows.append(_row(engine, args, game, board, found))
        # a blunder there can only make a puzzle if the blunderer's opponent is not yet
        # winning (prev <= +300 cp) and the blunderer not far ahead (up-in-material rule)
        legal = sorted(board.legal_moves, key=chess.Move.uci) if Cp(-300) <= score <= Cp(600) else []
        for setup in rng.sample(legal, min(args.branches, len(legal))):
            branch = board.copy()
            branch.push(setup)
            if branch.is_game_over():
                continue
            s = engine.analyse(branch, limit)["score"].pov(branch.turn)
            found = analyze_position(engine, branch, -score, s, args.nodes)
            if found:
                rows.append(_row(engine, args, game, branch, found))
                break
        if len(rows) >= PER_GAME:
            break
        prev = -score
    return rows


def shard_candidates(directory) -> list[list[str]]:
    """Move lists (UCI, from the start) of the labelled positions in ``directory`` that can open a tactic by
    their stored MultiPV search: the side to move has a setup move behind it, is not up in material, its
    best move scores >= +200 cp (or mates) and is an only-move by the stored scores
    (``wc(best) > wc(second) + 0.7``). Shard then record order."""
    from pdx_lightning.supervised.shards import iter_shards  # noqa: PLC0415

    def wc(cp, mate):
        return np.where(mate != 0, np.sign(mate), 2 / (1 + np.exp(-0.00368208 * cp)) - 1)

    out = []
    for shard in iter_shards(directory):
        cp, mate = shard.cand_cp.astype(np.float64), shard.cand_mate
        best, second = wc(cp[:, 0], mate[:, 0]), wc(cp[:, 1], mate[:, 1])
        winning = ((cp[:, 0] >= 200) & (mate[:, 0] == 0)) | (mate[:, 0] > 0)
        keep = winning & (shard.n_cand >= 2) & (best > second + 0.7) & (shard.ply >= 1)
        for i in np.flatnonzero(keep).tolist():
            board = shard.board(i)
            if not board.is_game_over() and material_diff(board, board.turn) <= 0:
                out.append([m.uci() for m in board.move_stack])
    return out


def shard_task(engine, args: argparse.Namespace, game: int) -> list[dict]:
    """``--from-shards``: candidate ``game``; ``prev`` from a scan of the position before its setup move,
    the candidate's own score from a scan, then the same rules as a game position."""
    board = common.candidate_board(args, game, lambda: shard_candidates(args.from_shards))
    limit = chess.engine.Limit(nodes=args.scan_nodes)
    parent = board.copy()
    parent.pop()
    prev = engine.analyse(parent, limit)["score"].pov(board.turn)
    score = engine.analyse(board, limit)["score"].pov(board.turn)
    found = analyze_position(engine, board, prev, score, args.nodes)
    return [_row(engine, args, game, board, found)] if found else []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_common_arguments(parser, count=1000, nodes=100_000)
    parser.add_argument(
        "--branches",
        type=argtypes.int_in(0, 64),
        default=2,
        help="random setup moves tried at every game position besides the game's own "
        "(default %(default)s; 0 = game moves only, as lichess-puzzler)",
    )
    parser.add_argument(
        "--from-shards",
        metavar="DIR",
        help="candidates from a `pdx data positions` "
        "directory (positions whose stored MultiPV search shows a winning only-move, each "
        "with its game's last move as the setup move) instead of games",
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "from_shards", None):
        end = common.count_candidates(args, lambda: shard_candidates(args.from_shards))
        return common.generate(shard_task, args, "tactics", end=end)
    return common.generate(task, args, "tactics")


if __name__ == "__main__":  # `python -m pdx_lightning.datagen.puzzle_suite` == `pdx data puzzles`
    raise SystemExit(common.main(add_arguments, run))
