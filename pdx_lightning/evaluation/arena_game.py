"""One arena game in flight: its board, history and end, the move that advances it, its PGN.

Game end, decided by ``chesscore.rules.game_end`` after every move: checkmate, stalemate, insufficient
material, 75-move rule, fivefold repetition; with ``claim_draws`` (``pdx arena``'s default, as
cutechess-cli and the paper's reference implementation) also the 50-move rule and threefold
repetition of the position on the board, claimed at once; ``max_plies`` (counted from the standard
start, opening line included) scores a draw. Optional adjudication when both players are networks:
``adjudicate=K`` ends a game as a draw when the movers' value heads put P(draw) ≥ ``adjudicate_draw``
for K consecutive plies (both heads agree for K ≥ 2), or as a win when they give the same side an
expected score ≥ ``adjudicate_win`` for K plies. Every game ends with a ``rules.GameResult``: PGN
``Result`` and ``Termination`` (``normal`` for the rules, ``adjudication`` for the ply cap and
adjudication) come from it, and its text (the specific rule) is the last move's comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import chess
import chess.pgn
import numpy as np

from pdx_lightning.chesscore.encoding import GameHistory
from pdx_lightning.chesscore.opening_files import Opening
from pdx_lightning.chesscore.pgn_record import game_pgn
from pdx_lightning.chesscore.rules import GameResult, Reason, game_end
from pdx_lightning.errors import UserError

MAX_PLIES = 512
UCI_MOVE = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")  # a move of an opening comment's line
# the notes of the three adjudications (the last move's comment in the PGN)
ADJUDICATED = {
    None: "adjudication: value heads agree on a draw",
    chess.WHITE: "adjudication: value heads agree White wins",
    chess.BLACK: "adjudication: value heads agree Black wins",
}


class ArenaError(UserError, ValueError):
    """An arena configuration that cannot be played (says which option)."""


def game_outcome(board: chess.Board, legal: list[chess.Move], claim_draws: bool = True) -> tuple[str, str] | None:
    """``(PGN result, reason text)`` if the game is over by ``rules.game_end`` (no ply cap), else None.

    ``legal`` is the list of legal moves of ``board`` (generated once per ply).
    """
    end = game_end(board, legal=legal, claim_draws=claim_draws)
    return None if end is None else (end.pgn_result, end.text)


@dataclass(frozen=True)
class GameRules:
    """When an arena game ends (module docstring); ``adjudicate`` 0 turns adjudication off."""

    max_plies: int = MAX_PLIES
    claim_draws: bool = True
    adjudicate: int = 0
    adjudicate_draw: float = 0.9
    adjudicate_win: float = 0.97


@dataclass(eq=False)
class Game:
    """One game in flight."""

    id: int
    white: int
    black: int
    opening: Opening
    round: str
    board: chess.Board = field(init=False)  # set by __post_init__ from the opening
    hist: GameHistory = field(init=False)
    legal: list[chess.Move] = field(init=False)
    moves: list = field(default_factory=list)
    end: GameResult | None = None
    streak_draw: int = 0  # consecutive plies the movers' value heads agreed on a draw,
    streak_white: int = 0  # on a White win,
    streak_black: int = 0  # on a Black win (adjudication)

    def __post_init__(self) -> None:
        self.board = self.opening.start()
        self.hist = GameHistory(self.board)
        self.legal = list(self.board.legal_moves)

    @property
    def result(self) -> str | None:
        """PGN result ("1-0", "0-1", "1/2-1/2"), None while the game goes on."""
        return self.end.pgn_result if self.end else None

    @property
    def reason(self) -> str | None:
        """Why the game ended, as text ("checkmate", "512-ply cap", ...), None while it goes on."""
        return self.end.text if self.end else None

    def rules_end(self, claim_draws: bool, max_plies: int | None = None) -> GameResult | None:
        """``rules.game_end`` at the current position (cached legal moves, ring-buffer repetitions)."""
        return game_end(
            self.board,
            legal=self.legal,
            repetitions=self.hist.repetitions(),
            claim_draws=claim_draws,
            max_plies=max_plies,
        )

    def play(self, move: chess.Move | None, wdl: np.ndarray | None, rules: GameRules, adjudicable: bool) -> None:
        """Push the mover's ``move`` and set ``end`` if the game is over; ``wdl`` is the mover's value
        head before the move (None for an engine), counted for adjudication when ``adjudicable``
        (both players are networks)."""
        if not move:  # net moves come from the legal mask, Stockfish's are checked by python-chess
            raise RuntimeError(f"game {self.id}: player returned no move in {self.board.fen()}")
        self.board.push(move)
        self.hist.push(self.board)
        self.moves.append(move)
        self.legal = list(self.board.legal_moves)
        over = self.rules_end(rules.claim_draws, rules.max_plies)
        if over is None and rules.adjudicate and adjudicable and wdl is not None:
            over = self._adjudication(wdl, rules)
        self.end = over

    def _adjudication(self, wdl: np.ndarray, rules: GameRules) -> GameResult | None:
        """Count the value heads' agreement streaks and end the game once one reaches K plies."""
        mover_white = not self.board.turn  # the side that just moved evaluated the position before its move
        s = float(wdl[0] + 0.5 * wdl[1])
        s_white = s if mover_white else 1.0 - s
        self.streak_draw = self.streak_draw + 1 if wdl[1] >= rules.adjudicate_draw else 0
        self.streak_white = self.streak_white + 1 if s_white >= rules.adjudicate_win else 0
        self.streak_black = self.streak_black + 1 if 1.0 - s_white >= rules.adjudicate_win else 0
        k = rules.adjudicate
        streaks = {None: self.streak_draw, chess.WHITE: self.streak_white, chess.BLACK: self.streak_black}
        for winner, streak in streaks.items():
            if streak >= k:
                return GameResult(winner, Reason.ADJUDICATION, ADJUDICATED[winner])
        return None

    def score_for(self, player: int) -> float:
        """The finished game's score (1, ½, 0) for ``player`` (an index into the players)."""
        assert self.end is not None  # called on finished games only
        return self.end.score_for(chess.WHITE if self.white == player else chess.BLACK)


def opening_comment(opening: Opening) -> str | None:
    """The game comment that records ``opening``'s line (``opening ID: e2e4 e7e5 ...``), None without one."""
    return f"opening {opening.id}: {' '.join(opening.line)}" if opening.line else None


def opening_line(comment: str) -> tuple[str, ...]:
    """The UCI moves from the standard start that :func:`opening_comment` wrote into ``comment``
    (empty when the comment is not such a line). Whether they reach the game's FEN is the reader's check."""
    head, sep, moves = comment.strip().rpartition(": ")
    ucis = tuple(moves.split())
    if not sep or not head.startswith("opening ") or not ucis:
        return ()
    return ucis if all(UCI_MOVE.fullmatch(u) for u in ucis) else ()


def to_pgn(g: Game, labels: list[str], event: str = "pdx arena") -> chess.pgn.Game:
    """The game as PGN: FEN/SetUp from the opening position, the opening line in the game comment
    (:func:`opening_comment`)."""
    assert g.end is not None  # written once the game has finished
    line = opening_comment(g.opening)
    return game_pgn(
        g.opening.board,
        g.moves,
        event=event,
        round=g.round,
        white=labels[g.white],
        black=labels[g.black],
        result=g.end.pgn_result,  # = g.result of a finished game
        termination=g.end.termination,
        tags={"Opening": g.opening.id},
        comment=line,
        end_comment=g.reason,
    )
