"""The two game pools (``chesscore.game_pool``): the compiled core (1 and 3 worker threads) and python-chess
play the same games from the same policy slots, report the same ends and plies, and write the same planes,
masks and sorted legal indices; worker failures are named."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
from core_oracle import same_positions

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.game_pool import PythonChessPool, open_pool, result_codes
from pdx_lightning.chesscore.pool_interface import ChessWorkerError
from pdx_lightning.chesscore.rules import DRAW, RESULT_NONE, WIN

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("claim_draws,max_plies", [(False, 60), (True, None)])
def test_native_and_python_chess_pools_play_the_same_games(workers, claim_draws, max_plies):
    n = 12
    ref = PythonChessPool(n, claim_draws, max_plies)
    pool = open_pool("native", n, claim_draws=claim_draws, max_plies=max_plies, workers=workers)
    rng = random.Random(workers)
    games = np.arange(n)
    ended = 0
    for ply in range(150):
        pos = same_positions(ref, pool, games)
        # a random legal policy slot per game, favouring the lowest (quiet shuffles repeat positions)
        cols = [min(rng.randrange(c), rng.randrange(c)) if ply % 3 else rng.randrange(c) for c in pos.count]
        actions = pos.legal[np.arange(n), cols]
        ra, pa = ref.play(games, actions)
        rb, pb = pool.play(games, actions)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(pa, pb)
        for i in np.flatnonzero(ra):
            ended += 1
            assert pool.board(i).move_stack == ref.board(i).move_stack
            ref.reset(i)
            pool.reset(i)
    assert ended >= (5 if max_plies else 1)  # the ply cap ends many; claims end some
    assert [pool.moves(i) for i in games] == [ref.moves(i) for i in games]
    assert [pool.n_moves(i) for i in games] == [ref.n_moves(i) for i in games]


def test_result_codes_from_the_movers_view():
    assert result_codes(np.array([0, 1, 2, 3, 8], np.int32)).tolist() == [RESULT_NONE, WIN, DRAW, DRAW, DRAW]


def test_set_board_push_and_roots_agree():
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    ref, pool = PythonChessPool(2, False, None), open_pool("native", 2, claim_draws=False, max_plies=None)
    for p in (ref, pool):
        p.set_board(1, board)
        p.push(1, chess.Move.from_uci("f1b5"))
        with pytest.raises(ValueError, match="game 1: e1g1 is not a legal move"):
            p.push(1, chess.Move.from_uci("e1g1"))
    assert pool.root_fen(1) == ref.root_fen(1) == board.fen()
    assert pool.board(1) == ref.board(1) and pool.board(1).move_stack == ref.board(1).move_stack
    same_positions(ref, pool, [0, 1])


def test_a_failing_worker_is_named():
    pool = open_pool("native", 8, claim_draws=False, max_plies=None, workers=2)
    e2e4 = 12 * 64 + 28  # canonical frame: 1. e4, then 1... e5 for Black
    pool.play(np.arange(8), np.full(8, e2e4))
    with pytest.raises(ChessWorkerError, match=r"chess worker 1 \(games 4\.\.7\) failed: game 4: policy slot"):
        pool.play(np.arange(8), np.where(np.arange(8) < 4, e2e4, 0))  # slot 0 (a1a1) is never legal


def test_unknown_backend_and_threads_for_python_chess_are_refused():
    with pytest.raises(ValueError, match="backend must be one of native, python-chess"):
        open_pool("stockfish", 2, claim_draws=False, max_plies=None)
    with pytest.raises(ValueError, match="workers must be 1"):
        open_pool("python-chess", 2, claim_draws=False, max_plies=None, workers=2)
