"""The compiled chess core (``chesscore/*.c``: the games' entry points ``pdx_core.c``, the rules
``pdx_rules.c``, the encoding ``pdx_encoding.c``, the search ``pdx_search.c``) through ctypes: N games,
one call per batch.

``pip install -e .`` (``setup.sh``) builds the C files with the system's C compiler into
``chesscore/_pdx_core*.so``; this module loads it (or the library ``$PDX_CORE_LIB`` names, e.g. a
sanitizer build: ``tests/sanitize/run_sanitizers.sh``) and wraps its entry points with numpy buffers.
The C code keeps python-chess's conventions (squares, castling as the king's two-square move, the
rules of :mod:`chesscore.rules`, the planes of :mod:`chesscore.encoding`, the policy layout of
:mod:`chesscore.moves`); python-chess remains the oracle, and the tests compare the two move by move.

Every argument passes :mod:`chesscore.boundary`'s checks before a call, and every code the core returns
becomes a named exception (``_raise``): ``PDX_E_ILLEGAL`` :class:`~boundary.IllegalMoveError`,
``PDX_E_WINDOW`` :class:`ReversibleLimitError`, ``PDX_E_NOMEM`` :class:`CoreMemoryError`,
``PDX_E_BOARD`` :class:`~boundary.InvalidBoardError`, ``PDX_E_INDEX`` :class:`~boundary.GameIndexError`.
A :meth:`NativeCore.play` that raises played none of its games.

ctypes releases the GIL during every call, and each call touches only the games it is given, so
threads may play disjoint games of one :class:`NativeCore` at the same time.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import chess
import numpy as np

from pdx_lightning.chesscore.boundary import (
    LEGAL_STRIDE,
    MAX_FULLMOVE,
    MAX_HALFMOVE,
    MAX_MOVES,
    CoreArgumentError,
    GameIndexError,
    IllegalMoveError,
    InvalidBoardError,
    check_actions,
    check_board,
    check_buffer,
    check_cap,
    check_games,
    check_index,
    check_move,
    check_pool_size,
    safe_fen,
)
from pdx_lightning.chesscore.rules import Reason
from pdx_lightning.errors import UserError

ABI = 4  # pdx_limits.h's PDX_ABI: entry points and limits this module expects
WINDOW = 200  # positions a game holds since its last capture or pawn move
# pdx_core_limits(): the library's limits (pdx_limits.h) must be these, else it is stale
LIMITS = (ABI, MAX_MOVES, LEGAL_STRIDE, WINDOW, MAX_FULLMOVE, MAX_HALFMOVE)
POLICY = 4288  # moves.POLICY_SIZE (moves imports torch; test_core_boundary checks they agree)
MAX_PERFT_DEPTH = 32

# the core's reason codes (pdx_rules.h, enum R_*), 0 = the game goes on
REASONS: tuple[Reason | None, ...] = (
    None,
    Reason.CHECKMATE,
    Reason.INSUFFICIENT_MATERIAL,
    Reason.STALEMATE,
    Reason.SEVENTY_FIVE_MOVES,
    Reason.FIVEFOLD,
    Reason.FIFTY_MOVES,
    Reason.THREEFOLD,
    Reason.PLY_CAP,
)
R_CHECKMATE = 1
# the core's error codes (pdx_limits.h, enum PDX_E_*)
E_ILLEGAL, E_WINDOW, E_NOMEM, E_BOARD, E_INDEX = -1, -2, -3, -4, -5


class NativeCoreError(RuntimeError):
    """The compiled core failed (base of the errors only the compiled core raises)."""


class NativeCoreMissing(NativeCoreError, UserError):
    """The compiled core was not built, or is stale (the message says how to build it, or to use python-chess)."""


class ReversibleLimitError(NativeCoreError):
    """A move past ``WINDOW`` positions since the game's last capture or pawn move: the core keeps no more
    (the 75-move rule ends every game by then; only play past a game's end gets here)."""


class CoreMemoryError(NativeCoreError, MemoryError):
    """The core could not allocate its games or a game's move list."""


_lib = None
_lock = threading.Lock()


def _library_path() -> Path | None:
    env = os.environ.get("PDX_CORE_LIB")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = here / f"_pdx_core{suffix}"
        if p.exists():
            return p
    return None


def available() -> bool:
    """Whether the compiled core was built (``pip install -e .``), or ``$PDX_CORE_LIB`` names a file."""
    path = _library_path()
    return path is not None and path.exists()


_FIX = (
    "run `bash setup.sh` or `pip install -e .` (needs a C compiler, e.g. Debian's gcc), or use "
    "--model.selfplay.backend python-chess"
)


def _load(path: Path) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise NativeCoreMissing(f"pdx's compiled chess core {path} could not be loaded ({e}): {_FIX}") from None
    limits = None
    if hasattr(lib, "pdx_core_limits"):
        buf = (ctypes.c_int32 * len(LIMITS))()
        lib.pdx_core_limits.restype, lib.pdx_core_limits.argtypes = None, [ctypes.c_void_p]
        lib.pdx_core_limits(buf)
        limits = tuple(buf)
    if limits != LIMITS:
        raise NativeCoreMissing(
            f"pdx's compiled chess core {path} is stale (limits {limits}, this pdx needs {LIMITS}): {_FIX}"
        )
    return lib


def library() -> ctypes.CDLL:
    """The loaded core (loaded once); :class:`NativeCoreMissing` with the fix when it was not built."""
    global _lib  # noqa: PLW0603  (the library is loaded once, on first use, under _lock)
    with _lock:
        if _lib is None:
            path = _library_path()
            if path is None:
                raise NativeCoreMissing(f"pdx's compiled chess core is not built: {_FIX}")
            lib = _load(path)
            P, i32, i64, u64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_uint64
            sig = {
                "pdx_core_new": (P, [i32]),
                "pdx_core_free": (None, [P]),
                "pdx_core_reset": (i32, [P, i32]),
                "pdx_core_set": (i32, [P, i32, P, i32, u64, i32, i32, i32]),
                "pdx_core_push_move": (i32, [P, i32, i32]),
                "pdx_core_status": (i32, [P, i32, P, i32, i32, P, P, P]),
                "pdx_core_play": (i32, [P, i32, P, P, i32, i32, P, P, P]),
                "pdx_core_encode": (i32, [P, i32, P, P, P]),
                "pdx_core_pack": (i32, [P, i32, P, P, P]),
                "pdx_core_legal": (i32, [P, i32, P, P, P, P, P]),
                "pdx_core_moves": (i32, [P, i32, P, i32]),
                "pdx_core_legal_moves": (i32, [P, i32, P]),
                "pdx_core_repetitions": (i32, [P, i32]),
                "pdx_core_perft": (i64, [P, i32, i32]),
                # the search's forest (pdx_lightning.search.forest checks every argument)
                "pdx_forest_new": (P, [i32, P, P]),
                "pdx_forest_free": (None, [P]),
                "pdx_forest_reset": (i32, [P, i32, P, i32]),
                "pdx_forest_advance": (i32, [P, i32, P, i32, i32]),
                "pdx_forest_begin": (i32, [P, i32, P, P]),
                "pdx_forest_gather": (i32, [P, i32, P, P, P, P, P, P, P]),
                "pdx_forest_scatter": (i32, [P, i32, P, P, P, P]),
                "pdx_forest_root": (i32, [P, i32, i32, P, P, P, P, P, P]),
                "pdx_forest_pv": (i32, [P, i32, i32, P]),
                "pdx_forest_root_noise": (i32, [P, i32, i32, P, ctypes.c_float]),
                "pdx_fast_exp": (ctypes.c_float, [ctypes.c_float]),
                "pdx_fast_log": (ctypes.c_float, [ctypes.c_float]),
                "pdx_prior_round": (ctypes.c_float, [ctypes.c_float]),
            }
            for name, (res, args) in sig.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            lib.pdx_init()
            _lib = lib
    return _lib


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def encode_move(move: chess.Move) -> int:
    """python-chess move -> the core's 16-bit move."""
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def decode_move(m: int) -> chess.Move:
    """The core's 16-bit move -> python-chess move."""
    return chess.Move(m & 63, m >> 6 & 63, (m >> 12) or None)


def _board_fields(board: chess.Board) -> tuple:
    bbs = (ctypes.c_uint64 * 12)(
        *[board.pieces_mask(pt, color) for color in (chess.WHITE, chess.BLACK) for pt in chess.PIECE_TYPES]
    )
    ep = board.ep_square if board.ep_square is not None else -1
    return (
        ctypes.addressof(bbs),
        int(board.turn == chess.BLACK),
        board.clean_castling_rights(),
        ep,
        board.halfmove_clock,
        board.fullmove_number,
    ), bbs


def _raise(code: int, game: int, what: str, after: str = "") -> None:
    """The named exception of the core's error ``code`` for ``game`` (``what``: the move, slot or board)."""
    if code == E_ILLEGAL:
        raise IllegalMoveError(f"game {game}: {what} is not a legal move{after}")
    if code == E_WINDOW:
        raise ReversibleLimitError(
            f"game {game}: {what}: more than {WINDOW} positions since the last capture "
            f"or pawn move (the 75-move rule ends a game at 151){after}"
        )
    if code == E_NOMEM:
        raise CoreMemoryError(f"game {game}: {what}: the chess core ran out of memory for the move list{after}")
    if code == E_BOARD:
        raise InvalidBoardError(f"game {game}: the chess core refused the board: {what}{after}")
    if code == E_INDEX:
        raise GameIndexError(f"game index {game} out of range for the chess core{after}")
    raise NativeCoreError(f"game {game}: {what}: the chess core returned the unknown code {code}{after}")


class NativeCore:
    """``n`` games in the compiled core, each starting at the standard position. Every method checks its
    arguments (:mod:`chesscore.boundary`) and raises the core's error codes as named exceptions."""

    def __init__(self, n: int) -> None:
        self.lib = library()
        self.n = check_pool_size(n)
        self._h = self.lib.pdx_core_new(self.n)
        if not self._h:
            raise CoreMemoryError(f"the chess core could not allocate {n:,} games")

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            self.lib.pdx_core_free(h)

    # ---- one game -------------------------------------------------------------------------
    def reset(self, i: int) -> None:
        """Game ``i`` starts over from the standard position."""
        i = check_index(i, self.n)
        code = self.lib.pdx_core_reset(self._h, i)
        if code:
            _raise(code, i, "reset")

    def set_board(self, i: int, board: chess.Board) -> None:
        """Game ``i`` becomes ``board``: its root (``board.root()``) and then its move stack. A refused
        board (:class:`~boundary.InvalidBoardError`) leaves game ``i`` as it was; a stack the core cannot
        hold (:class:`ReversibleLimitError`, :class:`CoreMemoryError`) leaves it at the standard start."""
        i = check_index(i, self.n)
        check_board(board, i)
        root = board.root()
        fields, keep = _board_fields(root)
        code = self.lib.pdx_core_set(self._h, i, *fields)
        del keep
        if code:
            _raise(code, i, safe_fen(root))
        for k, move in enumerate(board.move_stack):
            code = self.lib.pdx_core_push_move(self._h, i, encode_move(move))
            if code:
                self.lib.pdx_core_reset(self._h, i)
                _raise(
                    code,
                    i,
                    f"move {k + 1} of the move stack ({move.uci()})",
                    f"; the game was reset to the standard start (root {root.fen()})",
                )

    def push(self, i: int, move: chess.Move) -> None:
        """Play ``move`` (python-chess's) in game ``i``: :class:`~boundary.IllegalMoveError` if it is not
        legal there; the game is unchanged when it raises."""
        i = check_index(i, self.n)
        check_move(move, i)
        code = self.lib.pdx_core_push_move(self._h, i, encode_move(move))
        if code:
            _raise(code, i, move.uci())

    def _count(self, code: int, i: int, what: str) -> int:
        if code < 0:
            _raise(code, i, what)
        return code

    def moves(self, i: int) -> list[chess.Move]:
        """Game ``i``'s moves from its root."""
        i = check_index(i, self.n)
        n = self.n_moves(i)
        buf = np.empty(n, dtype=np.uint16)
        self._count(self.lib.pdx_core_moves(self._h, i, _ptr(buf), n), i, "moves")
        return [decode_move(int(m)) for m in buf]

    def n_moves(self, i: int) -> int:
        """How many moves game ``i`` has played from its root."""
        i = check_index(i, self.n)
        return self._count(self.lib.pdx_core_moves(self._h, i, None, 0), i, "moves")

    def legal_moves(self, i: int) -> list[chess.Move]:
        """The current position's legal moves (generation order)."""
        i = check_index(i, self.n)
        buf = np.empty(MAX_MOVES, dtype=np.uint16)
        n = self._count(self.lib.pdx_core_legal_moves(self._h, i, _ptr(buf)), i, "legal moves")
        return [decode_move(int(m)) for m in buf[:n]]

    def repetitions(self, i: int) -> int:
        """Occurrences of game ``i``'s position since its last capture or pawn move, counting it."""
        i = check_index(i, self.n)
        return self._count(self.lib.pdx_core_repetitions(self._h, i), i, "repetitions")

    def perft(self, i: int, depth: int) -> int:
        """Leaf count of game ``i``'s move tree to ``depth`` (0 .. ``MAX_PERFT_DEPTH``) plies."""
        i = check_index(i, self.n)
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 0 <= depth <= MAX_PERFT_DEPTH:
            raise CoreArgumentError(f"perft depth must be an integer in [0, {MAX_PERFT_DEPTH}], got {depth!r}")
        return self._count(self.lib.pdx_core_perft(self._h, i, int(depth)), i, "perft")

    # ---- batches ----------------------------------------------------------------------------
    def _batch_fail(self, code: int, games: np.ndarray, where: np.ndarray, what: str = "", after: str = "") -> None:
        r = int(where[0])
        _raise(code, int(games[r]) if 0 <= r < len(games) else r, what, after)

    def play(
        self, games: Sequence[int] | np.ndarray, actions: np.ndarray, claim_draws: bool, max_plies: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Play policy slot ``actions[r]`` in ``games[r]`` (distinct games); the reason codes (``REASONS``)
        and plies after. A call that raises played none of the games."""
        games = check_games(games, self.n, distinct=True)
        actions = check_actions(actions, len(games))
        cap = check_cap(max_plies)
        reason, plies, where = np.empty(len(games), np.int32), np.empty(len(games), np.int32), np.full(1, -1, np.int32)
        code = self.lib.pdx_core_play(
            self._h,
            len(games),
            _ptr(games),
            _ptr(actions),
            int(bool(claim_draws)),
            -1 if cap is None else cap,
            _ptr(reason),
            _ptr(plies),
            _ptr(where),
        )
        if code:
            r = int(where[0])
            g = int(games[r])
            legal = f" (legal: {', '.join(m.uci() for m in self.legal_moves(g))})" if code == E_ILLEGAL else ""
            _raise(code, g, f"policy slot {int(actions[r])}", f"{legal}; no game of this call was played")
        return reason, plies

    def status(
        self, games: Sequence[int] | np.ndarray, claim_draws: bool, max_plies: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The reason codes and plies of the games' current positions."""
        games = check_games(games, self.n)
        cap = check_cap(max_plies)
        reason, plies, where = np.empty(len(games), np.int32), np.empty(len(games), np.int32), np.full(1, -1, np.int32)
        code = self.lib.pdx_core_status(
            self._h,
            len(games),
            _ptr(games),
            int(bool(claim_draws)),
            -1 if cap is None else cap,
            _ptr(reason),
            _ptr(plies),
            _ptr(where),
        )
        if code:
            self._batch_fail(code, games, where, "status")
        return reason, plies

    def encode(self, games: Sequence[int] | np.ndarray, out: np.ndarray) -> np.ndarray:
        """Lc0's 112 planes of the games' current positions into ``out`` ((n, 112, 8, 8) float32)."""
        games = check_games(games, self.n)
        check_buffer("out", out, (len(games), 112, 8, 8), np.float32)
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_core_encode(self._h, len(games), _ptr(games), _ptr(out), _ptr(where))
        if code:
            self._batch_fail(code, games, where, "planes")
        return out

    def pack(self, games: Sequence[int] | np.ndarray, out: np.ndarray) -> np.ndarray:
        """The planes of the games' current positions packed into ``out`` ((n, 100) int64, the layout of
        ``encoding.expand_packed``)."""
        games = check_games(games, self.n)
        check_buffer("out", out, (len(games), 100), np.int64)
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_core_pack(self._h, len(games), _ptr(games), _ptr(out), _ptr(where))
        if code:
            self._batch_fail(code, games, where, "packed planes")
        return out

    def legal(
        self, games: Sequence[int] | np.ndarray, mask: np.ndarray | None, index: np.ndarray, count: np.ndarray
    ) -> None:
        """Legal masks ((n, 4288) bool; None: not written), sorted legal policy indices ((n, LEGAL_STRIDE)
        int64, padded with each row's first) and legal-move counts ((n,) int32) into the given buffers."""
        games = check_games(games, self.n)
        if mask is not None:
            check_buffer("mask", mask, (len(games), POLICY), np.bool_)
        check_buffer("index", index, (len(games), LEGAL_STRIDE), np.int64)
        check_buffer("count", count, (len(games),), np.int32)
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_core_legal(
            self._h, len(games), _ptr(games), _ptr(mask), _ptr(index), _ptr(count), _ptr(where)
        )
        if code:
            self._batch_fail(code, games, where, "legal moves")
