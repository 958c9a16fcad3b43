"""The checked boundary into the game pools (``chesscore.boundary``, issue 37): every board, index, move, action
and buffer is checked before the compiled core sees it, alike in both pools, and refused with a named one-line
exception. The inputs that used to crash the process (SIGSEGV, SIGBUS, heap overflow) run in a subprocess, so
a regression fails a test instead of killing pytest."""

from __future__ import annotations

import subprocess
import sys

import chess
import chess.variant
import numpy as np
import pytest
from core_oracle import agree, same_positions

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.boundary import (
    LEGAL_STRIDE,
    MAX_FULLMOVE,
    MAX_HALFMOVE,
    MAX_MOVES,
    BufferLayoutError,
    CoreArgumentError,
    GameIndexError,
    IllegalMoveError,
    InvalidBoardError,
)
from pdx_lightning.chesscore.encoding import GameHistory
from pdx_lightning.chesscore.game_pool import PythonChessPool, open_pool
from pdx_lightning.chesscore.moves import POLICY_SIZE, move_to_index
from pdx_lightning.errors import UserError

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")
BACKENDS = ("native", "python-chess")
QUEENS_236 = "kn2Q1Q1/nnQQ4/Q4Q1Q/2Q4Q/4Q3/1Q4Q1/3Q4/Q4QK1 w - - 0 1"  # 236 legal moves (hill-climbed)
E2E4 = chess.Move.from_uci("e2e4")


def _pool(backend: str, n: int = 2, **kw):
    return open_pool(backend, n, claim_draws=kw.get("claim_draws", False), max_plies=kw.get("max_plies"))


# ---- boards -------------------------------------------------------------------------------------------
BAD_BOARDS = [  # (FEN, what the message says)
    ("4k3/8/8/3Pn3/8/8/8/4K3 w - e6 0 1", "invalid en-passant square"),  # e.p. "captures" a knight
    ("4k3/8/8/8/8/8/1p6/4K3 b - a1 0 1", "invalid en-passant square"),  # b2a1 without promotion
    ("QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ w - - 0 1", "no white king"),
    ("QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/8/8/8/K1k5 w - - 0 1", "too many white pieces"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 0 1073741825", "fullmove number 1073741825 is outside"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 0 2147483653", "fullmove number 2147483653 is outside"),
    ("4k3/8/8/8/8/8/8/4K3 w - - 1000001 1", "halfmove clock 1000001 is outside"),
    ("4k3/8/8/8/8/8/8/4KK2 w - - 0 1", "too many kings"),
    ("P3k3/8/8/8/8/8/8/4K3 w - - 0 1", "pawns on backrank"),
    ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "bad castling rights"),
    ("4k3/8/8/8/8/8/8/R3K3 w - - 0 1", None),  # valid: the control
    ("4k3/4R3/8/8/8/8/8/4K3 w - - 0 1", "opposite check"),
    ("4k3/8/8/8/1b6/5n2/8/4K2r w - - 0 1", "too many checkers"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fen,why", BAD_BOARDS)
def test_invalid_boards_are_refused_alike_naming_game_and_fen(backend, fen, why):
    pool = _pool(backend)
    pool.push(1, E2E4)
    board = chess.Board(fen)
    if why is None:
        pool.set_board(1, board)
        assert pool.root_fen(1) == board.fen()
        return
    with pytest.raises(InvalidBoardError) as e:
        pool.set_board(1, board)
    msg = str(e.value)
    assert isinstance(e.value, UserError) and isinstance(e.value, ValueError) and "\n" not in msg
    assert msg.startswith("game 1: ") and why in msg and fen.split()[0] in msg, msg
    assert pool.moves(1) == [E2E4] and pool.root_fen(1) == chess.STARTING_FEN  # the game is as it was


@pytest.mark.parametrize("backend", BACKENDS)
def test_variants_chess960_and_illegal_move_stacks_are_refused(backend):
    pool = _pool(backend)
    with pytest.raises(InvalidBoardError, match="game 0: the game pools play standard chess only, got a AtomicBoard"):
        pool.set_board(0, chess.variant.AtomicBoard())
    with pytest.raises(InvalidBoardError, match=r"Board \(Chess960\)"):
        pool.set_board(0, chess.Board(chess960=True))
    b = chess.Board()
    b.push(E2E4)
    b.push(chess.Move.from_uci("e7e4"))  # python-chess pushes what it is given
    with pytest.raises(InvalidBoardError, match=r"game 0: move 2 of the move stack \(e7e4\) is not legal"):
        pool.set_board(0, b)
    b = chess.Board()
    b.push(chess.Move(12, 28, drop=chess.KNIGHT))  # a drop python-chess pushes: not standard chess
    with pytest.raises(InvalidBoardError, match=r"game 0: move 1 of the move stack \(N@e4\) is not legal"):
        pool.set_board(0, b)
    b = chess.Board()
    b.fullmove_number = 0  # set directly: no FEN parser to clamp it
    with pytest.raises(InvalidBoardError, match=r"fullmove number 0 is outside \[1, 1,000,000\]"):
        pool.set_board(0, b)
    b = chess.Board()
    b.ep_square = 64
    with pytest.raises(InvalidBoardError, match="en-passant square 64 is not a square"):
        pool.set_board(0, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_clock_bounds_are_inclusive_and_the_ply_count_is_exact(backend):
    board = chess.Board(f"4k3/8/8/8/8/8/8/4K2R b K - {MAX_HALFMOVE} {MAX_FULLMOVE}")
    pool = _pool(backend, max_plies=10)
    pool.set_board(0, board)
    assert pool.plies([0]).tolist() == [2 * (MAX_FULLMOVE - 1) + 1] == [board.ply()]
    reason, plies = pool.play([0], [move_to_index(chess.Move.from_uci("e8d8"), chess.BLACK)])
    assert reason.tolist() == [4] and plies.tolist() == [2 * MAX_FULLMOVE]  # 75 moves comes before the cap


def test_a_board_with_236_legal_moves_is_played_and_agrees_with_python_chess():
    """Above the 218 of reachable positions; the buffers hold any board the boundary accepts (> 415)."""
    assert MAX_MOVES == LEGAL_STRIDE > 10 + 15 * 27 and native_core.POLICY == POLICY_SIZE
    board = chess.Board(QUEENS_236)
    assert board.legal_moves.count() == 236
    core = native_core.NativeCore(1)
    core.set_board(0, board)
    agree(core, 0, board, GameHistory(board), 3)
    ref, pool = PythonChessPool(2, False, None), _pool("native")
    for p in (ref, pool):
        p.set_board(1, board)
    assert same_positions(ref, pool, [0, 1]).count.tolist() == [20, 236]


# ---- indices, moves, actions, buffers, sizes ---------------------------------------------------------------
BAD_CALLS = [  # (call on a pool of 2, exception, message)
    (lambda p: p.push(2, E2E4), GameIndexError, "game index 2 out of range for a pool of 2 games"),
    (lambda p: p.push(-1, E2E4), GameIndexError, "game index -1 out of range"),
    (lambda p: p.push(True, E2E4), GameIndexError, "game index must be an integer"),
    (lambda p: p.push(0.0, E2E4), GameIndexError, "game index must be an integer"),
    (lambda p: p.moves(10**7), GameIndexError, "game index 10000000 out of range"),
    (lambda p: p.n_moves(2), GameIndexError, "out of range"),
    (lambda p: p.root_fen(-3), GameIndexError, "out of range"),
    (lambda p: p.board(2), GameIndexError, "out of range"),
    (lambda p: p.reset(2), GameIndexError, "out of range"),
    (lambda p: p.set_board(2, chess.Board()), GameIndexError, "out of range"),
    (lambda p: p.plies([0, 5]), GameIndexError, r"game index 5 \(row 1\) out of range"),
    (lambda p: p.positions([10**7]), GameIndexError, "game index 10000000"),
    (lambda p: p.positions(np.array([2**32])), GameIndexError, "game index 4294967296"),  # no wrap to game 0
    (lambda p: p.positions([10**30]), GameIndexError, "out of range"),
    (lambda p: p.positions([[0]]), GameIndexError, "1-D"),
    (lambda p: p.positions([0.5]), GameIndexError, "must be integers"),
    (lambda p: p.positions(np.array([True])), GameIndexError, "must be integers"),
    (lambda p: p.play([10**7], [796]), GameIndexError, "game index 10000000"),
    (lambda p: p.play([0, 1, 0], [796, 796, 796]), CoreArgumentError, r"game 0 appears more than once.*rows \[0, 2\]"),
    (lambda p: p.play([0, 1], [796]), CoreArgumentError, r"actions must have shape \(2,\)"),
    (lambda p: p.play([0], [796.0]), CoreArgumentError, "integer policy slots"),
    (lambda p: p.play([0], [2**64 - 1]), CoreArgumentError, "not a policy slot"),
    (lambda p: p.play([0], [-5]), IllegalMoveError, "game 0: policy slot -5 is not a legal move"),
    (lambda p: p.play([1], [10**12]), IllegalMoveError, "game 1: policy slot 1000000000000 is not a legal move"),
    (lambda p: p.push(0, chess.Move(64 + 12, 28)), IllegalMoveError, "is not a legal move"),  # no bit mixing
    (lambda p: p.push(0, chess.Move.null()), IllegalMoveError, "is not a legal move"),
    (lambda p: p.push(0, chess.Move(12, 28, drop=chess.PAWN)), IllegalMoveError, "is not a legal move"),
    (lambda p: p.push(0, chess.Move(12, 28, promotion=chess.KING)), IllegalMoveError, "is not a legal move"),
    (lambda p: p.push(0, "e2e4"), IllegalMoveError, "is not a legal move"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", range(len(BAD_CALLS)))
def test_bad_indices_moves_and_actions_are_refused_alike(backend, k):
    call, exc, match = BAD_CALLS[k]
    pool = _pool(backend)
    with pytest.raises(exc, match=match):
        call(pool)
    assert pool.moves(0) == [] and pool.moves(1) == []  # nothing was played


@pytest.mark.parametrize("backend", BACKENDS)
def test_pool_sizes_and_caps_are_checked(backend):
    for n in (0, -1, 2**31, 2.0, True):
        with pytest.raises(CoreArgumentError, match="a pool holds 1 to 2,147,483,647 games"):
            _pool(backend, n)
    for cap in (-1, 2**31, 10.0):
        with pytest.raises(CoreArgumentError, match="max_plies must be None or an integer"):
            _pool(backend, 1, max_plies=cap)


def test_buffers_are_checked_before_the_core_writes():
    core = native_core.NativeCore(2)
    g = np.array([0])
    index, count, mask = np.empty((1, LEGAL_STRIDE), np.int64), np.empty(1, np.int32), np.empty((1, POLICY_SIZE), bool)
    for args, match in [
        ((None, np.empty((1, 4), np.int64), count), r"index buffer is \(1, 4\) int64; need \(1, 416\)"),
        ((None, index.astype(np.int32), count), "index buffer is .* int32"),
        ((None, index, np.empty(2, np.int32)), r"count buffer is \(2,\)"),
        ((mask.astype(np.uint8), index, count), "mask buffer is .* uint8"),
        ((None, np.empty((1, 2 * LEGAL_STRIDE), np.int64)[:, ::2], count), "not contiguous"),
    ]:
        with pytest.raises(BufferLayoutError, match=match):
            core.legal(g, *args)
    core.legal(g, mask, index, count)
    assert count.tolist() == [20] and mask.sum() == 20
    ro = np.empty((1, 100), np.int64)
    ro.flags.writeable = False
    with pytest.raises(BufferLayoutError, match="read-only"):
        core.pack(g, ro)
    with pytest.raises(BufferLayoutError, match=r"out buffer is \(2, 112, 8, 8\)"):
        core.encode(g, np.empty((2, 112, 8, 8), np.float32))
    with pytest.raises(BufferLayoutError, match="must be a numpy array"):
        core.encode(g, [[0.0]])
    for depth in (-1, 33, 2.0):
        with pytest.raises(CoreArgumentError, match="perft depth"):
            core.perft(0, depth)


# ---- what used to kill the process ---------------------------------------------------------------
CRASHERS = r"""
import chess, ctypes, numpy as np
from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.game_pool import open_pool
pool = open_pool("native", 2, claim_draws=False, max_plies=None)
e2e4 = chess.Move.from_uci("e2e4")
cases = {
    "ep_takes_a_knight": lambda: pool.set_board(0, chess.Board("4k3/8/8/3Pn3/8/8/8/4K3 w - e6 0 1")),
    "ep_on_a1": lambda: pool.set_board(0, chess.Board("4k3/8/8/8/8/8/1p6/4K3 b - a1 0 1")),
    "queens_with_kings": lambda: pool.set_board(
        0, chess.Board("QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/K1k5 w - - 0 1")
    ),
    "queens_without_kings": lambda: pool.set_board(0, chess.Board("QQQQQQQQ/" * 7 + "QQQQQQQQ w - - 0 1")),
    "fullmove_2_30": lambda: pool.set_board(0, chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 1073741825")),
    "positions_1e7": lambda: pool.positions([10**7]),
    "play_1e7": lambda: pool.play([10**7], [796]),
    "moves_1e7": lambda: pool.moves(10**7),
    "push_2": lambda: pool.push(2, e2e4),
    "push_minus_1": lambda: pool.push(-1, e2e4),
    "positions_2_32": lambda: pool.positions(np.array([2**32])),
    "legal_1x4": lambda: pool.core.legal(np.array([0]), None, np.empty((1, 4), np.int64), np.empty(1, np.int32)),
}
lib, h = pool.core.lib, pool.core._h            # the core's own checks, without Python's
queens = (ctypes.c_uint64 * 12)(0, 0, 0, 0, 2**64 - 2**8, 1, 0, 0, 0, 0, 0, 4)
cases.update({
    "c_set_queens": lambda: lib.pdx_core_set(h, 0, ctypes.addressof(queens), 0, 0, -1, 0, 1),
    "c_push_1e7": lambda: lib.pdx_core_push_move(h, 10**7, 796),
    "c_moves_minus_1": lambda: lib.pdx_core_moves(h, -1, None, 0),
    "c_play_1e7": lambda: lib.pdx_core_play(h, 1, np.array([10**7], np.int32).ctypes.data, np.array([796]).ctypes.data,
                                            0, -1, np.empty(1, np.int32).ctypes.data, np.empty(1, np.int32).ctypes.data,
                                            np.full(1, -1, np.int32).ctypes.data),
})
for name, case in cases.items():
    try:
        got = case()
    except Exception as e:
        got = type(e).__name__
    print(name, got, flush=True)
reason, plies = pool.play([0, 1], [796, 796])
print("still_plays", pool.moves(0) == [e2e4] and plies.tolist() == [1, 1], flush=True)
"""
CRASH_EXPECTED = {
    "ep_takes_a_knight": "InvalidBoardError",
    "ep_on_a1": "InvalidBoardError",
    "queens_with_kings": "InvalidBoardError",
    "queens_without_kings": "InvalidBoardError",
    "fullmove_2_30": "InvalidBoardError",
    "positions_1e7": "GameIndexError",
    "play_1e7": "GameIndexError",
    "moves_1e7": "GameIndexError",
    "push_2": "GameIndexError",
    "push_minus_1": "GameIndexError",
    "positions_2_32": "GameIndexError",
    "legal_1x4": "BufferLayoutError",
    "c_set_queens": str(native_core.E_BOARD),
    "c_push_1e7": str(native_core.E_INDEX),
    "c_moves_minus_1": str(native_core.E_INDEX),
    "c_play_1e7": str(native_core.E_INDEX),
    "still_plays": "True",
}


def test_inputs_that_crashed_the_process_are_refused_in_a_subprocess():
    run = subprocess.run([sys.executable, "-c", CRASHERS], capture_output=True, text=True, timeout=300)
    got = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    crashed = [name for name in CRASH_EXPECTED if name not in got]
    assert run.returncode == 0, (f"the process died (code {run.returncode}) at {crashed[:1]}", run.stderr[-3000:])
    assert got == CRASH_EXPECTED


def test_a_threaded_pool_names_bad_arguments_before_any_shard_runs():
    pool = open_pool("native", 8, claim_draws=False, max_plies=None, workers=2)
    e2e4 = np.full(8, move_to_index(E2E4, chess.WHITE))
    with pytest.raises(GameIndexError, match=r"game index 8 \(row 7\)"):  # not a ChessWorkerError
        pool.play(np.array([0, 1, 2, 3, 4, 5, 6, 8]), e2e4)
    with pytest.raises(CoreArgumentError, match="game 3 appears more than once"):  # two shards, one game
        pool.play(np.array([0, 1, 2, 3, 4, 5, 6, 3]), e2e4)
    with pytest.raises(GameIndexError):
        pool.positions(np.arange(9))
    assert [pool.n_moves(i) for i in range(8)] == [0] * 8
    pool.close()
