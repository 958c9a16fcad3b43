"""Resuming an arena that was stopped: the finished games of its ``--pgn`` stream (``pdx arena --resume``).

The arena writes every game to ``--pgn`` as it finishes (``arena.py``), so a killed match keeps the
games it played. :func:`resumed_games` reads them back, checks each against the schedule the same
command builds again (its ``Round`` tag names the schedule slot: players, opening and starting
position must be that slot's), and rebuilds it by replaying its moves under the arena's rules: the
replay must end the game exactly at its last move, with the PGN's result and reason (an adjudicated
game ends with its adjudication note, which the replay cannot recompute: it is taken as written when
``--adjudicate`` is on). The arena then plays only the other slots.

A kill can cut the last game short (no termination marker after its moves): that game is dropped and
played again. Anything else that does not fit (another command's PGN, a game in two copies, a move
the replay refuses) is one :class:`ArenaResumeError` line naming ``file:line``; nothing is played.

Argmax networks and engines searching a fixed node count on one thread play every game the same
way whether the match ran at once or was resumed (up to the batched forward pass's rounding: the
games in flight, the batch, differ); sampled players draw the games after a resume from a fresh
seed, a different draw of the same distribution than an uninterrupted run's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import chess
import chess.pgn

from pdx_lightning.chesscore.opening_files import Opening
from pdx_lightning.chesscore.pgn_games import read_pgn_game
from pdx_lightning.chesscore.rules import GameResult, Reason
from pdx_lightning.evaluation.arena_game import ADJUDICATED, ArenaError, Game, GameRules
from pdx_lightning.files.safeio import FileLimitError, PgnGameLines


class ArenaResumeError(ArenaError):
    """A ``--pgn`` file that is not this arena's stopped run (says ``file:line`` and what differs)."""


class _ResumeLimitError(FileLimitError, ArenaResumeError):
    """A line or game of the ``--pgn`` file over its reading bound."""


class _PgnGame(chess.pgn.Game):
    terminated = False  # the movetext ended with its termination marker (1-0, 0-1, 1/2-1/2, *)


class _Recorder(chess.pgn.GameBuilder):
    """python-chess's GameBuilder, noting whether the movetext ended with its termination marker."""

    def __init__(self) -> None:
        super().__init__(Game=_PgnGame)

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.game.terminated = False
        super().visit_move(board, move)

    def visit_result(self, result: str) -> None:
        self.game.terminated = True
        super().visit_result(result)

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)  # raised as ArenaResumeError by the reader; not logged too


def round_slot(text: str) -> int | None:
    """The schedule index of a ``Round`` tag ``"k.c"`` (k ≥ 1 the opening pair, c ∈ {1, 2} its game)."""
    k, sep, c = text.partition(".")
    if not (sep and k.isdigit() and c in ("1", "2") and int(k) >= 1):
        return None
    return 2 * (int(k) - 1) + int(c) - 1


def resumed_games(
    path: str | os.PathLike,
    labels: Sequence[str],
    openings: Sequence[Opening],
    schedule: Sequence[tuple[int, int, int]],
    rules: GameRules,
) -> tuple[list[Game], list[str]]:
    """The finished games of the stopped arena's PGN file, rebuilt (schedule order), and their PGN text
    (the same order) to write back: the file without a game the kill cut short."""
    path = Path(path)
    games: dict[int, tuple[Game, str]] = {}
    with open(path, encoding="utf-8") as f:
        lines = PgnGameLines(f, path, error=_ResumeLimitError)
        cut: str | None = None  # where the game cut short began (only the last game may be)
        while (pgn := read_pgn_game(lines, _Recorder, ArenaResumeError, "unreadable PGN game")) is not None:
            where = f"{path}:{lines.game_line}"
            if cut is not None:
                raise ArenaResumeError(f"{cut}: a game cut short before the end of the file: not a stopped arena's PGN")
            if not pgn.terminated:
                cut = where
                continue
            g = _rebuild(pgn, where, labels, openings, schedule, rules)
            if g.id in games:
                raise ArenaResumeError(f"{where}: round {g.round} is in the file twice")
            games[g.id] = (g, str(pgn))
    ordered = [games[i] for i in sorted(games)]
    return [g for g, _ in ordered], [text for _, text in ordered]


def _rebuild(
    pgn: chess.pgn.Game,
    where: str,
    labels: Sequence[str],
    openings: Sequence[Opening],
    schedule: Sequence[tuple[int, int, int]],
    rules: GameRules,
) -> Game:
    """The arena game of one PGN game, checked against its schedule slot and replayed."""
    if pgn.errors:
        raise ArenaResumeError(f"{where}: {pgn.errors[0]}")
    h = pgn.headers
    gid = round_slot(h.get("Round", ""))
    if gid is None or gid >= len(schedule):
        raise ArenaResumeError(
            f"{where}: Round {h.get('Round')!r} is not a game of this arena's schedule ({len(schedule)} games)"
        )
    w, b, o = schedule[gid]
    opening = openings[o]
    found = (h.get("White"), h.get("Black"), h.get("Opening"), pgn.board().fen())
    wanted = (labels[w], labels[b], opening.id, opening.board.fen())
    for what, have, want in zip(("White", "Black", "Opening", "starting position"), found, wanted):
        if have != want:
            raise ArenaResumeError(
                f"{where}: round {h['Round']}: {what} is {have!r}, this arena's schedule has {want!r} "
                "(another command's PGN: resume with the same --model, --label, --openings, --games, "
                "--base-games and --seed)"
            )
    g = Game(gid, w, b, opening, h["Round"])
    g.end = g.rules_end(rules.claim_draws)
    moves = list(pgn.mainline_moves())
    for ply, move in enumerate(moves, 1):
        if g.end is not None:
            raise ArenaResumeError(
                f"{where}: round {g.round}: the game ended at ply {ply - 1} ({g.reason}) but goes on in the PGN"
            )
        g.play(move, None, rules, adjudicable=False)  # the reader checked legality
    note = pgn.end().comment.strip() if moves else pgn.comment.strip()
    if g.end is None:
        winner = {"1-0": chess.WHITE, "0-1": chess.BLACK, "1/2-1/2": None}.get(h.get("Result", ""), False)
        if not rules.adjudicate or winner is False or ADJUDICATED[winner] != note:
            raise ArenaResumeError(
                f"{where}: round {g.round}: the game is not over after its {len(moves)} moves "
                f"(result {h.get('Result')!r}, {note!r}"
                + ("" if rules.adjudicate else "; an adjudicated game needs --adjudicate")
                + ")"
            )
        g.end = GameResult(winner, Reason.ADJUDICATION, note)
    elif (g.result, g.reason) != (h.get("Result"), note):
        raise ArenaResumeError(
            f"{where}: round {g.round}: the PGN says {h.get('Result')} ({note}), its moves end in "
            f"{g.result} ({g.reason}) under this arena's rules (--max-plies, --claim-draws)"
        )
    return g
