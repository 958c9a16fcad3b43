"""The compiled chess core (``chesscore/*.c``) against python-chess, the oracle: perft, and position by position
along random and repetition-seeking games from the start and from every position of the committed suites —
legal moves, legal masks and sorted indices, the 112 planes (``encoding``), repetition counts and game ends
(``rules.game_end``, claims on and off, with a ply cap)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import chess
import numpy as np
import pytest
from core_oracle import agree

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.boundary import IllegalMoveError
from pdx_lightning.chesscore.encoding import GameHistory, encode_boards
from pdx_lightning.chesscore.moves import legal_indices
from pdx_lightning.chesscore.rules import game_end, repetition_count

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")
DATA = Path(__file__).resolve().parents[2] / "data"

# (FEN, perft counts by depth): the standard perft suite (chessprogramming.org "Perft Results")
PERFT = [
    (chess.STARTING_FEN, [20, 400, 8902, 197281]),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", [48, 2039, 97862, 4085603]),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", [14, 191, 2812, 43238, 674624]),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", [6, 264, 9467, 422333]),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", [44, 1486, 62379, 2103487]),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", [46, 2079, 89890, 3894594]),
]


@pytest.mark.parametrize("fen,counts", PERFT)
def test_perft(fen, counts):
    core = native_core.NativeCore(1)
    core.set_board(0, chess.Board(fen))
    assert [core.perft(0, d + 1) for d in range(len(counts))] == counts


def _suite_fens() -> list[str]:
    fens = []
    for name in (
        "tactics.csv",
        "mates_in_1.csv",
        "mates_in_2.csv",
        "mates_in_3.csv",
        "mates_in_4.csv",
        "mates_in_5.csv",
        "lichess/puzzles_random_2k.csv",
        "lichess/puzzles_lila_seed.csv",
    ):
        with open(DATA / name, newline="") as f:
            fens += [row["FEN"] for row in csv.DictReader(f)]
    return fens


def _walk(core, i, board, rng, plies, repeat_bias):
    """Random plies from ``board`` in game ``i`` of the core and in python-chess, checking after each."""
    hist = GameHistory(board)
    agree(core, i, board, hist, board.ply() + plies // 2)
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal or game_end(board, legal=legal, repetitions=hist.repetitions()) is not None:
            return
        quiet = [m for m in legal if not board.is_capture(m) and board.piece_type_at(m.from_square) != chess.PAWN]
        move = rng.choice(quiet if quiet and rng.random() < repeat_bias else legal)
        # the policy slot, as self-play plays it
        _reason, _ = core.play(np.array([i]), np.array([legal_indices(board, [move])[0]]), False, None)
        board.push(move)
        hist.push(board)
        agree(core, i, board, hist, board.ply() + 3)


def test_random_games_from_the_start_agree_with_python_chess():
    rng = random.Random(0)
    core = native_core.NativeCore(4)
    for g in range(24):
        i = g % 4
        core.reset(i)
        _walk(core, i, chess.Board(), rng, 400, repeat_bias=0.9 if g % 2 else 0.0)


@pytest.mark.parametrize("stride", [8, pytest.param(1, marks=pytest.mark.slow)])
def test_every_suite_position_and_a_walk_from_it_agree_with_python_chess(stride):
    """Every ``stride``-th position of the suites (the slow run: all ~2,900)."""
    rng = random.Random(1)
    fens = _suite_fens()
    assert len(fens) > 2500
    fens = fens[::stride]
    core = native_core.NativeCore(1)
    for k, fen in enumerate(fens):
        board = chess.Board(fen)
        core.set_board(0, board)
        _walk(core, 0, board, rng, 6 if k % 10 else 60, repeat_bias=0.8)


def test_set_board_replays_the_move_stack_and_moves_come_back():
    board = chess.Board()
    for san in [
        "e4",
        "c5",
        "Nf3",
        "d6",
        "d4",
        "cxd4",
        "Nxd4",
        "Nf6",
        "Nc3",
        "a6",
        "Be3",
        "e5",
        "Nb3",
        "Be6",
        "f3",
        "Be7",
        "Qd2",
        "O-O",
        "O-O-O",
        "Nbd7",
        "g4",
        "b5",
    ]:
        board.push_san(san)
    core = native_core.NativeCore(2)
    core.set_board(1, board)
    assert core.moves(1) == board.move_stack and core.moves(0) == []
    hist = GameHistory(board)
    np.testing.assert_array_equal(
        core.encode(np.array([1]), np.empty((1, 112, 8, 8), np.float32)), encode_boards([board])
    )
    assert core.repetitions(1) == hist.repetitions() == repetition_count(board)


def test_an_illegal_policy_slot_is_refused_and_names_the_game():
    core = native_core.NativeCore(3)
    with pytest.raises(IllegalMoveError, match="game 2: policy slot 0 is not a legal move"):
        core.play(np.array([2]), np.array([0]), False, None)
    with pytest.raises(IllegalMoveError, match="e2e5 is not a legal move"):
        core.push(0, chess.Move.from_uci("e2e5"))


def test_a_missing_core_is_a_one_line_user_error_naming_the_fix(monkeypatch):
    from pdx_lightning.errors import UserError

    monkeypatch.setattr(native_core, "_lib", None)
    monkeypatch.setattr(native_core, "_library_path", lambda: None)
    with pytest.raises(
        UserError,
        match=r"compiled chess core is not built: run `bash setup.sh` or `pip install -e \.`"
        r".*--model\.selfplay\.backend python-chess",
    ):
        native_core.NativeCore(1)
