"""What a game pool is: the :class:`GamePool` protocol both engines satisfy, the batch of positions it
writes (:class:`Positions`) and the error of a failed chess worker (:class:`ChessWorkerError`).

The engines are :class:`~pdx_lightning.chesscore.game_pool.PythonChessPool` (python-chess boards) and
:class:`~pdx_lightning.chesscore.native_pool.NativePool` (the compiled core over worker threads);
``game_pool.open_pool`` makes either. Both import this module, never each other's internals, so the two
stay interchangeable behind the protocol (``tests/chesscore/test_game_pool.py`` checks both against it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import chess
import numpy as np

from pdx_lightning.chesscore.boundary import LEGAL_STRIDE
from pdx_lightning.chesscore.encoding import PACKED_WORDS
from pdx_lightning.chesscore.moves import POLICY_SIZE


class ChessWorkerError(RuntimeError):
    """A chess worker failed or hung during a batch (which worker, which games, why)."""


class Positions:
    """One batch of current positions: planes (``(b, 112, 8, 8)`` float32, or with ``packed`` the
    ``(b, 100)`` int64 of ``encoding.pack_planes``), legal masks (None when packed: the device rebuilds
    them from the indices), sorted legal indices (``(b, L)``, L = the batch's largest legal count, padded
    with each row's first index) and legal counts, as numpy arrays."""

    __slots__ = ("count", "legal", "mask", "x")

    def __init__(self, x: np.ndarray, mask: np.ndarray | None, legal: np.ndarray, count: np.ndarray) -> None:
        self.x, self.mask, self.legal, self.count = x, mask, legal, count


def empty_positions(b: int, packed: bool = False) -> tuple:
    """Buffers for :class:`Positions` of ``b`` games (the legal-index buffer is ``LEGAL_STRIDE`` wide)."""
    if packed:
        return (
            np.empty((b, PACKED_WORDS), np.int64),
            None,
            np.empty((b, LEGAL_STRIDE), np.int64),
            np.empty(b, np.int32),
        )
    return (
        np.empty((b, 112, 8, 8), np.float32),
        np.empty((b, POLICY_SIZE), np.bool_),
        np.empty((b, LEGAL_STRIDE), np.int64),
        np.empty(b, np.int32),
    )


def trim(x, mask, index, count) -> Positions:
    width = max(1, int(count.max())) if len(count) else 1
    return Positions(x, mask, index[:, :width], count)


@runtime_checkable
class GamePool(Protocol):
    """``n`` games (slots ``0..n-1``) advanced in batches: what self-play (``rl.selfplay``) and the
    benchmarks call on a pool. Every argument is checked (:mod:`chesscore.boundary`) and a bad one raises
    its named exception; a batch names each game once."""

    n: int

    def reset(self, i: int) -> None:
        """Game ``i`` back to the standard start."""
        ...

    def set_board(self, i: int, board: chess.Board) -> None:
        """Game ``i`` becomes ``board`` (root and move stack)."""
        ...

    def board(self, i: int) -> chess.Board:
        """Game ``i`` as a python-chess board with its move stack (a copy)."""
        ...

    def moves(self, i: int) -> list[chess.Move]:
        """The moves game ``i`` played since its root."""
        ...

    def n_moves(self, i: int) -> int: ...

    def root_fen(self, i: int) -> str: ...

    def push(self, i: int, move: chess.Move) -> None:
        """Play ``move`` in game ``i``; ``boundary.IllegalMoveError`` if it is not legal."""
        ...

    def plies(self, games: Sequence[int] | np.ndarray) -> np.ndarray:
        """The games' ply counts from the standard start (int32)."""
        ...

    def play(self, games: Sequence[int] | np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Play policy slot ``actions[r]`` in game ``games[r]`` (distinct games, every slot checked before
        any is played); the games' end reasons (``native_core.REASONS`` codes, 0 = on) and plies."""
        ...

    def positions(self, games: Sequence[int] | np.ndarray, packed: bool = False) -> Positions:
        """The games' current planes, legal masks and sorted legal indices."""
        ...

    def close(self) -> None:
        """Stop the pool's worker threads, if any."""
        ...


__all__ = ["ChessWorkerError", "GamePool", "Positions", "empty_positions", "trim"]
