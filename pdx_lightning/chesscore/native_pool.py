"""The pool on the compiled core (:mod:`chesscore.native_core`), sharded over worker threads.

Each batch call splits its games into ``workers`` contiguous shards and runs one C call per shard on a
thread (ctypes releases the GIL; a game belongs to one shard, so shards never touch the same state). A
game's moves depend only on its own state and the actions it is given, so the games are the same for
every worker count. A shard that raises stops the batch with :class:`~pool_interface.ChessWorkerError`
naming it (the failing shard played none of its games; the others may have played theirs); one that does
not return within ``timeout_s`` stops it too (a hang never becomes a silent stall). Threads share the process: a
crash of the C code ends the run, and ``--ckpt_path last`` resumes it.

Arguments are checked (:mod:`chesscore.boundary`) before any shard starts, so a bad board, index or
buffer raises its named exception here, not a worker error; a batch that plays names each game once,
so no two shards ever touch one game.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import chess
import numpy as np

from pdx_lightning.chesscore.boundary import check_actions, check_cap, check_games, check_index, check_pool_size
from pdx_lightning.chesscore.native_core import CoreMemoryError, NativeCore, ReversibleLimitError
from pdx_lightning.chesscore.pool_interface import ChessWorkerError, Positions, empty_positions, trim


class NativePool:
    """The pool (:class:`~pool_interface.GamePool`) on the compiled core."""

    def __init__(
        self, n: int, *, claim_draws: bool, max_plies: int | None, workers: int = 1, timeout_s: float = 600.0
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.n, self.claim_draws, self.max_plies = check_pool_size(n), claim_draws, check_cap(max_plies)
        self.core = NativeCore(self.n)
        self._roots = [chess.STARTING_FEN] * self.n
        self.workers, self.timeout_s = workers, timeout_s
        self._executor: ThreadPoolExecutor | None = None

    # ---- one game -------------------------------------------------------------------------
    def reset(self, i: int) -> None:
        i = check_index(i, self.n)
        self.core.reset(i)
        self._roots[i] = chess.STARTING_FEN

    def set_board(self, i: int, board: chess.Board) -> None:
        """Game ``i`` becomes ``board`` (root and move stack); ``boundary.InvalidBoardError`` if no pool plays it."""
        i = check_index(i, self.n)
        try:
            self.core.set_board(i, board)
        except (ReversibleLimitError, CoreMemoryError):
            self._roots[i] = chess.STARTING_FEN  # the core reset the game
            raise
        self._roots[i] = board.root().fen()

    def push(self, i: int, move: chess.Move) -> None:
        """Play ``move`` (python-chess's) in game ``i``; ``boundary.IllegalMoveError`` (a ValueError) if it
        is not legal."""
        self.core.push(i, move)

    def moves(self, i: int) -> list[chess.Move]:
        return self.core.moves(i)

    def n_moves(self, i: int) -> int:
        return self.core.n_moves(i)

    def root_fen(self, i: int) -> str:
        return self._roots[check_index(i, self.n)]

    def plies(self, games: Sequence[int] | np.ndarray) -> np.ndarray:
        return self.core.status(games, self.claim_draws, self.max_plies)[1]

    def board(self, i: int) -> chess.Board:
        """Game ``i`` as a python-chess board with its move stack (replayed: for callbacks and tests)."""
        b = chess.Board(self._roots[check_index(i, self.n)])
        for m in self.core.moves(i):
            b.push(m)
        return b

    # ---- batches ----------------------------------------------------------------------------
    def _sharded(self, games: np.ndarray, run: Callable[[slice], None]) -> None:
        if self.workers == 1 or len(games) < 2 * self.workers:
            run(slice(0, len(games)))
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="pdx-chess")
        bounds = np.linspace(0, len(games), self.workers + 1).astype(int)
        shards = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        futures = [self._executor.submit(run, s) for s in shards]
        for w, (shard, fut) in enumerate(zip(shards, futures)):
            try:
                fut.result(timeout=self.timeout_s)
            except FutureTimeout:
                raise ChessWorkerError(
                    f"chess worker {w} (games {games[shard.start]}..{games[shard.stop - 1]}) "
                    f"did not finish within {self.timeout_s:g} s"
                ) from None
            except Exception as e:
                raise ChessWorkerError(
                    f"chess worker {w} (games {games[shard.start]}..{games[shard.stop - 1]}) failed: {e}"
                ) from e

    def play(self, games: Sequence[int] | np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        games = check_games(games, self.n, distinct=True)
        actions = check_actions(actions, len(games))
        reason, plies = np.empty(len(games), np.int32), np.empty(len(games), np.int32)

        def run(s: slice) -> None:
            reason[s], plies[s] = self.core.play(games[s], actions[s], self.claim_draws, self.max_plies)

        self._sharded(games, run)
        return reason, plies

    def positions(self, games: Sequence[int] | np.ndarray, packed: bool = False) -> Positions:
        games = check_games(games, self.n)
        x, mask, index, count = empty_positions(len(games), packed)

        def run(s: slice) -> None:
            if packed:
                self.core.pack(games[s], x[s])
            else:
                self.core.encode(games[s], x[s])
            self.core.legal(games[s], None if mask is None else mask[s], index[s], count[s])

        self._sharded(games, run)
        return trim(x, mask, index, count)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
