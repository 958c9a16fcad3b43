"""N games advanced in batches: the chess side of self-play behind one interface, two engines.

A pool (the :class:`~pool_interface.GamePool` protocol of :mod:`chesscore.pool_interface`) holds ``n`` games
(slots ``0..n-1``) and, per batch of slots, plays policy-slot moves and reports each game's end (``REASONS``
codes of :mod:`chesscore.native_core`, ``rules.game_end`` in its order), and writes the current positions'
112 planes, legal masks and **sorted** legal policy indices. Two engines implement it and agree move for
move (``tests/chesscore/test_game_pool.py``):

* ``"native"`` (:class:`native_pool.NativePool`, the default): the compiled core, optionally sharded over
  worker threads;
* ``"python-chess"`` (:class:`PythonChessPool`): python-chess boards, the encoder's ring buffers and
  ``rules.game_end`` — the reference the core is checked against, and the fallback where no C compiler is.

The legal indices come sorted ascending in both, so a sampler that picks the j-th legal move picks the same
move in either engine. Both check every board, index, move and action alike (:mod:`chesscore.boundary`)
and refuse a bad one with the same named exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import chess
import numpy as np

from pdx_lightning.chesscore.boundary import (
    IllegalMoveError,
    check_actions,
    check_board,
    check_cap,
    check_games,
    check_index,
    check_move,
    check_pool_size,
)
from pdx_lightning.chesscore.encoding import GameHistory, encode_rows, pack_planes
from pdx_lightning.chesscore.moves import MoveIndexError, index_to_move, legal_indices
from pdx_lightning.chesscore.native_core import R_CHECKMATE, REASONS
from pdx_lightning.chesscore.native_pool import NativePool
from pdx_lightning.chesscore.pool_interface import GamePool, Positions, empty_positions, trim
from pdx_lightning.chesscore.rules import DRAW, RESULT_NONE, WIN, game_end

Backend = Literal["native", "python-chess"]
BACKENDS: tuple[str, ...] = get_args(Backend)
_CODE = {reason: code for code, reason in enumerate(REASONS)}


def result_codes(reason: np.ndarray) -> np.ndarray:
    """Reason codes -> result codes from the mover's view: ``RESULT_NONE``, ``WIN`` (checkmate), ``DRAW``."""
    out = np.full(reason.shape, RESULT_NONE, dtype=np.int64)
    out[reason != 0] = DRAW
    out[reason == R_CHECKMATE] = WIN
    return out


class PythonChessPool:
    """The pool (:class:`~pool_interface.GamePool`) on python-chess boards (module docstring): the reference
    engine."""

    def __init__(self, n: int, claim_draws: bool, max_plies: int | None) -> None:
        self.n, self.claim_draws, self.max_plies = check_pool_size(n), claim_draws, check_cap(max_plies)
        self.boards = [chess.Board() for _ in range(self.n)]
        self.hist = [GameHistory(b) for b in self.boards]
        self.legal_moves = [list(b.legal_moves) for b in self.boards]

    def reset(self, i: int) -> None:
        self.set_board(i, chess.Board())

    def set_board(self, i: int, board: chess.Board) -> None:
        """Game ``i`` becomes ``board`` (root and move stack); ``boundary.InvalidBoardError`` if no pool plays it."""
        i = check_index(i, self.n)
        self.boards[i] = check_board(board, i).copy()
        self.hist[i] = GameHistory(self.boards[i])
        self.legal_moves[i] = list(self.boards[i].legal_moves)

    def board(self, i: int) -> chess.Board:
        return self.boards[check_index(i, self.n)].copy()

    def moves(self, i: int) -> list[chess.Move]:
        return list(self.boards[check_index(i, self.n)].move_stack)

    def n_moves(self, i: int) -> int:
        return len(self.boards[check_index(i, self.n)].move_stack)

    def root_fen(self, i: int) -> str:
        return self.boards[check_index(i, self.n)].root().fen()

    def push(self, i: int, move: chess.Move) -> None:
        """Play ``move`` (python-chess's) in game ``i``; ``boundary.IllegalMoveError`` (a ValueError) if it
        is not legal."""
        i = check_index(i, self.n)
        if check_move(move, i) not in self.legal_moves[i]:
            raise IllegalMoveError(f"game {i}: {move.uci()} is not a legal move")
        self._advance(i, move)

    def _advance(self, i: int, move: chess.Move) -> None:
        b = self.boards[i]
        b.push(move)
        self.hist[i].push(b)
        self.legal_moves[i] = list(b.legal_moves)

    def plies(self, games: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.array([self.boards[i].ply() for i in check_games(games, self.n)], np.int32)

    def _reason(self, i: int) -> int:
        b = self.boards[i]
        end = game_end(
            b,
            legal=self.legal_moves[i],
            repetitions=self.hist[i].repetitions(),
            claim_draws=self.claim_draws,
            max_plies=self.max_plies,
        )
        return 0 if end is None else _CODE[end.reason]

    def _move_of(self, i: int, action: int) -> chess.Move:
        try:
            move = index_to_move(action, self.boards[i])
        except MoveIndexError:
            move = None
        if move is None or move not in self.legal_moves[i]:
            raise IllegalMoveError(
                f"game {i}: policy slot {action} is not a legal move (legal: "
                f"{', '.join(m.uci() for m in self.legal_moves[i])}); no game of this call "
                f"was played"
            )
        return move

    def play(self, games: Sequence[int] | np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As ``NativePool.play``: distinct games, every slot checked before any game is played."""
        games = check_games(games, self.n, distinct=True)
        actions = check_actions(actions, len(games))
        moves = [self._move_of(int(i), int(a)) for i, a in zip(games, actions)]
        reason, plies = np.zeros(len(games), np.int32), np.zeros(len(games), np.int32)
        for r, (i, move) in enumerate(zip(games.tolist(), moves)):
            self._advance(i, move)
            reason[r], plies[r] = self._reason(i), self.boards[i].ply()
        return reason, plies

    def positions(self, games: Sequence[int] | np.ndarray, packed: bool = False) -> Positions:
        games = check_games(games, self.n).tolist()
        x, mask, index, count = empty_positions(len(games))
        encode_rows([self.hist[i].row(self.boards[i]) for i in games], out=x)
        mask[:] = False
        for r, i in enumerate(games):
            ix = np.sort(legal_indices(self.boards[i], self.legal_moves[i]))
            count[r] = len(ix)
            index[r, : len(ix)] = ix
            index[r, len(ix) :] = ix[0] if len(ix) else 0
            mask[r, ix] = True
        return trim(pack_planes(x), None, index, count) if packed else trim(x, mask, index, count)

    def close(self) -> None:
        pass


def open_pool(
    backend: str, n: int, *, claim_draws: bool, max_plies: int | None, workers: int = 1, timeout_s: float = 600.0
) -> GamePool:
    """A pool of ``n`` games at the standard position: ``"native"`` (compiled core, ``workers`` threads, each
    shard of a call given ``timeout_s``) or ``"python-chess"`` (one thread; ``workers`` must be 1)."""
    if backend == "native":
        return NativePool(n, claim_draws=claim_draws, max_plies=max_plies, workers=workers, timeout_s=timeout_s)
    if backend == "python-chess":
        if workers != 1:
            raise ValueError("the python-chess backend plays in one thread: workers must be 1")
        return PythonChessPool(n, claim_draws, max_plies)
    raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")


__all__ = ["BACKENDS", "GamePool", "Positions", "PythonChessPool", "open_pool", "result_codes"]
