"""Every code the compiled core returns (``pdx_limits.h``'s ``PDX_E_*``) becomes a named exception, and a
failing call changes nothing: a test per code, through ``NativeCore`` and the pools, plus the core's own checks
with Python's bypassed (issue 37). ``PDX_E_NOMEM`` needs an allocation to fail: a build with ``-DPDX_FAULTS``."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore import boundary, native_core
from pdx_lightning.chesscore.boundary import GameIndexError, IllegalMoveError, InvalidBoardError
from pdx_lightning.chesscore.game_pool import PythonChessPool, open_pool
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.chesscore.native_core import (
    E_BOARD,
    E_ILLEGAL,
    E_INDEX,
    E_NOMEM,
    E_WINDOW,
    WINDOW,
    CoreMemoryError,
    NativeCoreError,
    NativeCoreMissing,
    ReversibleLimitError,
)

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")
SOURCES = sorted(Path(native_core.__file__).parent.glob("*.c"))  # the core's C files
SHUFFLE = [chess.Move.from_uci(u) for u in ("g1f3", "g8f6", "f3g1", "f6g8")]
E2E4 = chess.Move.from_uci("e2e4")


def _shuffled(plies: int) -> chess.Board:
    """The start and ``plies`` knight moves back and forth (no capture, no pawn move)."""
    b = chess.Board()
    for k in range(plies):
        b.push(SHUFFLE[k % 4])
    return b


def _slot(board: chess.Board, move: chess.Move) -> int:
    return move_to_index(move, board.turn)


def test_illegal_moves_and_slots_change_nothing_in_either_pool():
    for pool in (PythonChessPool(3, False, None), open_pool("native", 3, claim_draws=False, max_plies=None)):
        with pytest.raises(IllegalMoveError, match="game 1: e2e5 is not a legal move"):
            pool.push(1, chess.Move.from_uci("e2e5"))
        e2e4 = _slot(chess.Board(), E2E4)
        with pytest.raises(
            IllegalMoveError,
            match=r"game 2: policy slot 0 is not a legal move \(legal: .*e2e4.*\); "
            r"no game of this call was played",
        ):
            pool.play([0, 2, 1], [e2e4, 0, e2e4])
        assert [pool.n_moves(i) for i in range(3)] == [0, 0, 0]
    core = native_core.NativeCore(1)
    assert core.lib.pdx_core_push_move(core._h, 0, 0) == E_ILLEGAL


def test_the_window_limit_is_named_and_the_move_is_not_applied():
    """Past WINDOW positions since the last capture or pawn move the core refuses the move (it used to apply
    it, report "not a legal move" from push and leave play's failing and later rows unset and unplayed)."""
    core = native_core.NativeCore(3)
    board = _shuffled(WINDOW - 1)  # the root and 199 moves: the window is full
    core.set_board(0, board)
    core.set_board(2, chess.Board())
    move = SHUFFLE[(WINDOW - 1) % 4]
    with pytest.raises(
        ReversibleLimitError,
        match=rf"game 0: {move.uci()}: more than {WINDOW} positions since the last "
        r"capture or pawn move",
    ):
        core.push(0, move)
    assert core.n_moves(0) == WINDOW - 1 and core.moves(0) == board.move_stack
    assert sorted(m.uci() for m in core.legal_moves(0)) == sorted(m.uci() for m in board.legal_moves)
    slots = [_slot(board, move), _slot(chess.Board(), E2E4)]
    with pytest.raises(
        ReversibleLimitError, match=r"game 0: policy slot \d+: more than 200 .*no game of this call was played"
    ):
        core.play(np.array([0, 2]), np.array(slots), False, None)
    assert core.n_moves(2) == 0  # the later row was not played either, and it says so
    core.push(0, chess.Move.from_uci("e7e5"))  # a pawn move empties the window
    assert core.n_moves(0) == WINDOW and core.repetitions(0) == 1
    with pytest.raises(
        ReversibleLimitError, match="move 200 of the move stack .*the game was reset to the standard start"
    ):
        core.set_board(1, _shuffled(WINDOW))
    assert core.n_moves(1) == 0
    pool = open_pool("native", 1, claim_draws=False, max_plies=None)
    pool.push(0, E2E4)
    with pytest.raises(ReversibleLimitError):
        pool.set_board(0, _shuffled(WINDOW))
    assert pool.root_fen(0) == chess.STARTING_FEN and pool.moves(0) == []


def test_the_cores_own_board_check_refuses_what_slips_past_python(monkeypatch):
    """Python's check bypassed: the core's valid_root refuses the board itself (PDX_E_BOARD), game unchanged."""
    core = native_core.NativeCore(1)
    core.push(0, E2E4)
    monkeypatch.setattr(native_core, "check_board", lambda board, game: board)
    for fen in (
        "4k3/8/8/3Pn3/8/8/8/4K3 w - e6 0 1",
        "4k3/8/8/8/8/8/1p6/4K3 b - a1 0 1",
        "4k3/8/8/8/8/8/8/4KK2 w - - 0 1",
        "QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/QQQQQQQQ/8/8/8/K1k5 w - - 0 1",
        "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",
        "4k3/4R3/8/8/8/8/8/4K3 w - - 0 1",
        "4k3/8/8/8/8/8/8/4K3 w - - 0 1000001",
        "4k3/8/8/8/8/8/8/4K3 w - - 1000001 1",
    ):
        board = chess.Board(fen)
        with pytest.raises(InvalidBoardError, match="game 0: the chess core refused the board: " + fen.split()[0]):
            core.set_board(0, board)
        assert core.moves(0) == [E2E4]
    board = chess.Board("4k3/8/8/8/8/8/8/4K3 w - - 0 1")
    board.castling_rights = chess.BB_H1  # bad castling rights reach the core as given
    fields_of = native_core._board_fields

    def as_given(b):
        fields, keep = fields_of(b)
        return (fields[0], fields[1], b.castling_rights, *fields[3:]), keep

    monkeypatch.setattr(native_core, "_board_fields", as_given)
    with pytest.raises(InvalidBoardError, match="refused the board"):
        core.set_board(0, board)
    bbs = (ctypes.c_uint64 * 12)(*([0] * 5 + [1 << 4] + [0] * 4 + [1 << 4, 1 << 60]))  # two pieces on e1
    assert core.lib.pdx_core_set(core._h, 0, ctypes.addressof(bbs), 0, 0, -1, 0, 1) == E_BOARD


def test_the_cores_own_index_checks_answer_what_slips_past_python(monkeypatch):
    """Python's checks bypassed: every entry point answers PDX_E_INDEX (GameIndexError), never reads out of bounds."""
    core = native_core.NativeCore(2)
    monkeypatch.setattr(native_core, "check_index", lambda i, n: i)
    monkeypatch.setattr(native_core, "check_games", lambda g, n, distinct=False: np.ascontiguousarray(g, np.int32))
    bad = np.array([0, 7], np.int32)
    calls = [
        lambda: core.reset(2),
        lambda: core.push(-1, E2E4),
        lambda: core.moves(5),
        lambda: core.n_moves(5),
        lambda: core.legal_moves(9),
        lambda: core.repetitions(-4),
        lambda: core.perft(3, 1),
        lambda: core.set_board(2, chess.Board()),
        lambda: core.status(bad, False, None),
        lambda: core.play(bad, np.array([796, 796]), False, None),
        lambda: core.encode(bad, np.empty((2, 112, 8, 8), np.float32)),
        lambda: core.pack(bad, np.empty((2, 100), np.int64)),
        lambda: core.legal(bad, None, np.empty((2, boundary.LEGAL_STRIDE), np.int64), np.empty(2, np.int32)),
    ]
    for call in calls:
        with pytest.raises(GameIndexError, match="out of range for the chess core"):
            call()
    assert core.n_moves(0) == 0  # play's first row was not played


@pytest.fixture(scope="module")
def fault_build(tmp_path_factory) -> Path:
    """The core built with -DPDX_FAULTS ($PDX_CORE_FAULTS_LIB: a prebuilt one, e.g. the sanitizer build's)."""
    if os.environ.get("PDX_CORE_FAULTS_LIB"):
        return Path(os.environ["PDX_CORE_FAULTS_LIB"])
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for the fault-injection build")
    out = tmp_path_factory.mktemp("faults") / "pdx_core_faults.so"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run(
        [cc, "-O1", "-std=c99", "-fPIC", "-shared", "-DPDX_FAULTS", *map(str, SOURCES), "-o", str(out)],
        check=True,
        env=env,
    )
    return out


def test_out_of_memory_is_named_and_changes_nothing(fault_build, monkeypatch):
    monkeypatch.setenv("PDX_CORE_LIB", str(fault_build))
    monkeypatch.setattr(native_core, "_lib", None)
    core = native_core.NativeCore(2)
    fail = core.lib.pdx_fault_fail_allocs
    fail(1)  # the first move list allocation fails
    with pytest.raises(CoreMemoryError, match="game 1: e2e4: the chess core ran out of memory"):
        core.push(1, E2E4)
    assert core.n_moves(1) == 0
    fail(1)
    with pytest.raises(
        CoreMemoryError, match="game 1: policy slot .*ran out of memory.*no game of this call was played"
    ):
        core.play(np.array([1, 0]), np.array([_slot(chess.Board(), E2E4)] * 2), False, None)
    assert core.n_moves(0) == core.n_moves(1) == 0 and isinstance(CoreMemoryError("x"), MemoryError)
    fail(1)
    with pytest.raises(CoreMemoryError, match="could not allocate 3 games"):
        native_core.NativeCore(3)
    core.push(1, E2E4)  # allocations work again
    assert core.moves(1) == [E2E4]
    assert core.lib.pdx_core_push_move(core._h, 1, 0) == E_ILLEGAL
    fail(1)
    assert core.lib.pdx_core_push_move(core._h, 0, 12 | 28 << 6) == E_NOMEM


def test_every_code_has_its_exception_and_an_unknown_code_is_named():
    for code, exc in (
        (E_ILLEGAL, IllegalMoveError),
        (E_WINDOW, ReversibleLimitError),
        (E_NOMEM, CoreMemoryError),
        (E_BOARD, InvalidBoardError),
        (E_INDEX, GameIndexError),
        (-99, NativeCoreError),
    ):
        with pytest.raises(exc):
            native_core._raise(code, 0, "x")
    with pytest.raises(NativeCoreError, match="unknown code -99"):
        native_core._raise(-99, 3, "x")


def test_a_stale_or_missing_library_is_a_user_error_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(native_core, "_lib", None)
    monkeypatch.setattr(native_core, "LIMITS", (1, 256, 256, 200, 0, 0))
    with pytest.raises(
        NativeCoreMissing,
        match=rf"is stale \(limits \({native_core.ABI}, 416, 416, 200, 1000000, 1000000\), this pdx "
        r"needs \(1, 256.*`pip install -e \.`",
    ):
        native_core.NativeCore(1)
    monkeypatch.setenv("PDX_CORE_LIB", str(tmp_path / "nowhere.so"))
    assert not native_core.available()
    with pytest.raises(NativeCoreMissing, match="nowhere.so could not be loaded"):
        native_core.NativeCore(1)
