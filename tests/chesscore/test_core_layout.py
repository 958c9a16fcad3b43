"""The compiled core's C files by job and its one move cap (issue 64): the build lists every C file and header;
``pdx_limits.h``'s ``MAX_MOVES`` is the one number that sizes a buffer of one position's moves, in C and in
Python (``boundary.MAX_MOVES``, checked against the built library); a board beyond what the cap is proven
for is refused with a named error, and one at the top of the range is played and searched whole."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore import boundary, native_core
from pdx_lightning.chesscore.boundary import LEGAL_STRIDE, MAX_MOVES, InvalidBoardError
from pdx_lightning.chesscore.game_pool import open_pool
from pdx_lightning.search.forest import Forest
from pdx_lightning.search.settings import SearchSettings

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CORE = Path(native_core.__file__).parent
QUEENS_236 = "kn2Q1Q1/nnQQ4/Q4Q1Q/2Q4Q/4Q3/1Q4Q1/3Q4/Q4QK1 w - - 0 1"  # 236 legal moves, 16 men a side
SEVENTEEN = "rnbqkbnr/pppppppp/8/8/4N3/8/PPPPPPPP/RNBQKBNR w - - 0 1"  # the start and a 17th white man
needs_core = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")


def _code(path: Path) -> str:
    """A C file without its comments."""
    return re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)


def _define(name: str) -> int:
    (value,) = re.findall(rf"^#define {name} (\d+)\b", _code(CORE / "pdx_limits.h"), re.M)
    return int(value)


def test_the_build_lists_every_c_file_and_header():
    ext = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["ext-modules"]
    (core,) = [e for e in ext if e["name"] == "pdx_lightning.chesscore._pdx_core"]
    files = {p.relative_to(ROOT).as_posix() for p in CORE.glob("*.[ch]")}
    assert set(core["sources"]) == {f for f in files if f.endswith(".c")}
    assert set(core["depends"]) == {f for f in files if f.endswith(".h")}  # in the sdist, and a rebuild
    assert {Path(f).name for f in files} >= {"pdx_core.c", "pdx_rules.c", "pdx_encoding.c", "pdx_search.c"}


def test_one_move_cap_in_one_header():
    """MAX_MOVES is defined once, in pdx_limits.h, above the proven bound; no C file sizes moves otherwise."""
    code = {p.name: _code(p) for p in sorted(CORE.glob("*.[ch]"))}
    assert [n for n, c in code.items() if re.search(r"#define MAX_MOVES\b", c)] == ["pdx_limits.h"]
    assert _define("MAX_MOVES") > 10 + (_define("MAX_MEN") - 1) * 27  # a king's 10, any other man a queen's 27
    assert re.search(r"#define LEGAL_STRIDE MAX_MOVES\b", code["pdx_limits.h"])
    for name, c in code.items():  # no bound written out again (416, 415, or the 218 of reachable positions)
        assert not re.search(r"\b(416|415|218)\b", c.replace("#define MAX_MOVES 416", "")), name


def test_the_python_cap_is_the_c_cap():
    assert _define("MAX_MOVES") == boundary.MAX_MOVES and boundary.LEGAL_STRIDE == MAX_MOVES
    assert native_core.LIMITS[1:3] == (MAX_MOVES, LEGAL_STRIDE)
    if native_core.available():  # the built library reports the same limits (a stale one is refused at load)
        buf = (ctypes.c_int32 * len(native_core.LIMITS))()
        native_core.library().pdx_core_limits(buf)
        assert tuple(buf) == native_core.LIMITS


@pytest.mark.parametrize("backend", ["native", "python-chess"])
def test_a_board_beyond_the_cap_is_refused_by_name(backend):
    if backend == "native" and not native_core.available():
        pytest.skip("compiled chess core not built")
    pool = open_pool(backend, 1, claim_draws=False, max_plies=None)
    with pytest.raises(InvalidBoardError, match=r"game 0: invalid position \(too many white pieces\)"):
        pool.set_board(0, chess.Board(SEVENTEEN))
    assert pool.root_fen(0) == chess.STARTING_FEN  # the game is as it was
    pool.set_board(0, chess.Board(QUEENS_236))  # 16 men a side: inside the bound
    assert pool.board(0).legal_moves.count() == 236 and pool.positions([0]).count.tolist() == [236]


@needs_core
def test_the_core_itself_refuses_a_board_beyond_the_cap():
    """Python's check bypassed: pdx_core_set answers PDX_E_BOARD (valid_root's MAX_MEN) and writes nothing."""
    core = native_core.NativeCore(1)
    board = chess.Board(SEVENTEEN)
    bbs = (ctypes.c_uint64 * 12)(
        *(int(board.pieces_mask(t, c)) for c in (chess.WHITE, chess.BLACK) for t in chess.PIECE_TYPES)
    )
    assert core.lib.pdx_core_set(core._h, 0, ctypes.addressof(bbs), 0, 0, -1, 0, 1) == native_core.E_BOARD
    assert len(core.legal_moves(0)) == 20  # still the start


@needs_core
def test_a_root_above_218_moves_is_searched_and_reported_whole():
    core, forest = native_core.NativeCore(1), Forest(1, SearchSettings())
    core.set_board(0, chess.Board(QUEENS_236))
    forest.reset(0, core, 0)
    forest.begin([0])
    planes, legal, count = (
        np.empty((1, 112, 8, 8), np.float32),
        np.empty((1, LEGAL_STRIDE), np.int64),
        np.empty(1, np.int32),
    )
    assert forest.gather(np.array([0]), np.array([2]), planes, legal, count).tolist() == [True]
    assert count.tolist() == [236]
    forest.scatter(np.array([0]), np.zeros((1, LEGAL_STRIDE), np.float32), np.full((1, 3), 1 / 3, np.float32))
    root = forest.root(0)
    assert len(root.moves) == 236 and set(root.moves) == set(chess.Board(QUEENS_236).legal_moves)
    forest.root_noise(0, np.ones(236, np.float32), 0.25)  # one eta per root move
