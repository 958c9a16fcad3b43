"""The compiled chess core (``pdx_core.c``) through ctypes: N games, one call per batch.

``pip install -e .`` (``setup.sh``) builds ``pdx_core.c`` with the system's C compiler into
``chesscore/_pdx_core*.so``; this module loads it and wraps its entry points with numpy buffers.
The C code keeps python-chess's conventions (squares, castling as the king's two-square move, the
rules of :mod:`chesscore.rules`, the planes of :mod:`chesscore.encoding`, the policy layout of
:mod:`chesscore.moves`); python-chess remains the oracle, and the tests compare the two move by move.

ctypes releases the GIL during every call, and each call touches only the games it is given, so
threads may play disjoint games of one :class:`NativeCore` at the same time.
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import threading
from pathlib import Path

import chess
import numpy as np

from pdx_lightning.chesscore.rules import Reason
from pdx_lightning.errors import UserError

LEGAL_STRIDE = 256            # columns of the legal-index buffer (at most 218 legal moves)
MAX_MOVES = 256               # legal moves a position can hold in the core

# the core's reason codes (pdx_core.c, enum R_*), 0 = the game goes on
REASONS: tuple[Reason | None, ...] = (None, Reason.CHECKMATE, Reason.INSUFFICIENT_MATERIAL, Reason.STALEMATE,
                                      Reason.SEVENTY_FIVE_MOVES, Reason.FIVEFOLD, Reason.FIFTY_MOVES,
                                      Reason.THREEFOLD, Reason.PLY_CAP)
R_CHECKMATE, R_CAP = 1, 8


class NativeCoreError(RuntimeError):
    """The compiled core refused a move or position."""


class NativeCoreMissing(NativeCoreError, UserError):
    """The compiled core was not built (the message says how to build it, or to use python-chess)."""


_lib = None
_lock = threading.Lock()


def _library_path() -> Path | None:
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = here / f"_pdx_core{suffix}"
        if p.exists():
            return p
    return None


def available() -> bool:
    """Whether the compiled core was built (``pip install -e .``)."""
    return _library_path() is not None


def library() -> ctypes.CDLL:
    """The loaded core (loaded once); :class:`NativeCoreError` with the fix when it was not built."""
    global _lib
    with _lock:
        if _lib is None:
            path = _library_path()
            if path is None:
                raise NativeCoreMissing("pdx's compiled chess core is not built: run `bash setup.sh` or "
                                      "`pip install -e .` (needs a C compiler, e.g. Debian's gcc), or use "
                                      "--model.selfplay.backend python-chess")
            lib = ctypes.CDLL(str(path))
            P, i32, i64, u64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_uint64
            sig = {"pdx_core_new": (P, [i32]), "pdx_core_free": (None, [P]), "pdx_core_reset": (i32, [P, i32]),
                   "pdx_core_set": (i32, [P, i32, P, i32, u64, i32, i32, i32]),
                   "pdx_core_push_move": (i32, [P, i32, i32]),
                   "pdx_core_status": (None, [P, i32, P, i32, i32, P, P]),
                   "pdx_core_play": (i32, [P, i32, P, P, i32, i32, P, P]),
                   "pdx_core_encode": (None, [P, i32, P, P]), "pdx_core_pack": (None, [P, i32, P, P]), "pdx_core_legal": (None, [P, i32, P, P, P, P]),
                   "pdx_core_moves": (i32, [P, i32, P, i32]), "pdx_core_legal_moves": (i32, [P, i32, P]),
                   "pdx_core_repetitions": (i32, [P, i32]), "pdx_core_perft": (i64, [P, i32, i32])}
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
    bbs = (ctypes.c_uint64 * 12)(*[board.pieces_mask(pt, color) for color in (chess.WHITE, chess.BLACK)
                                   for pt in chess.PIECE_TYPES])
    ep = board.ep_square if board.ep_square is not None else -1
    return (ctypes.addressof(bbs), int(board.turn == chess.BLACK), board.clean_castling_rights(), ep,
            board.halfmove_clock, board.fullmove_number), bbs


class NativeCore:
    """``n`` games in the compiled core, each starting at the standard position."""

    def __init__(self, n: int) -> None:
        self.lib = library()
        self.n = n
        self._h = self.lib.pdx_core_new(n)
        if not self._h:
            raise NativeCoreError(f"the chess core could not allocate {n} games")

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            self.lib.pdx_core_free(h)

    # ---- one game -------------------------------------------------------------------------
    def reset(self, i: int) -> None:
        """Game ``i`` starts over from the standard position."""
        self._check(self.lib.pdx_core_reset(self._h, i), i)

    def set_board(self, i: int, board: chess.Board) -> None:
        """Game ``i`` becomes ``board``: its root (``board.root()``) and then its move stack."""
        root = board.root()
        if root.chess960 or type(root) is not chess.Board:
            raise NativeCoreError("the chess core plays standard chess only")
        fields, keep = _board_fields(root)
        self._check(self.lib.pdx_core_set(self._h, i, *fields), i)
        del keep
        for move in board.move_stack:
            self.push(i, move)

    def push(self, i: int, move: chess.Move) -> None:
        code = self.lib.pdx_core_push_move(self._h, i, encode_move(move))
        if code == -1:
            raise NativeCoreError(f"game {i}: {move.uci()} is not a legal move")
        self._check(code, i)

    def moves(self, i: int) -> list[chess.Move]:
        """Game ``i``'s moves from its root."""
        n = self.lib.pdx_core_moves(self._h, i, None, 0)
        buf = np.empty(n, dtype=np.uint16)
        self.lib.pdx_core_moves(self._h, i, _ptr(buf), n)
        return [decode_move(int(m)) for m in buf]

    def n_moves(self, i: int) -> int:
        """How many moves game ``i`` has played from its root."""
        return self.lib.pdx_core_moves(self._h, i, None, 0)

    def legal_moves(self, i: int) -> list[chess.Move]:
        """The current position's legal moves (generation order)."""
        buf = np.empty(MAX_MOVES, dtype=np.uint16)
        n = self.lib.pdx_core_legal_moves(self._h, i, _ptr(buf))
        return [decode_move(int(m)) for m in buf[:n]]

    def repetitions(self, i: int) -> int:
        return self.lib.pdx_core_repetitions(self._h, i)

    def perft(self, i: int, depth: int) -> int:
        return self.lib.pdx_core_perft(self._h, i, depth)

    # ---- batches ----------------------------------------------------------------------------
    def play(self, games: np.ndarray, actions: np.ndarray, claim_draws: bool, max_plies: int | None
             ) -> tuple[np.ndarray, np.ndarray]:
        """Play policy slot ``actions[r]`` in ``games[r]``; the reason codes (``REASONS``) and plies after."""
        games, actions = _i32(games), np.ascontiguousarray(actions, dtype=np.int64)
        reason, plies = np.empty(len(games), np.int32), np.empty(len(games), np.int32)
        code = self.lib.pdx_core_play(self._h, len(games), _ptr(games), _ptr(actions), int(claim_draws),
                                      -1 if max_plies is None else max_plies, _ptr(reason), _ptr(plies))
        if code > 0:
            g = int(games[code - 1])
            raise NativeCoreError(f"game {g}: policy slot {int(actions[code - 1])} is not a legal move "
                                  f"(legal: {', '.join(m.uci() for m in self.legal_moves(g))})")
        self._check(-code if code < 0 else 0, int(games[-code - 1]) if code < 0 else -1)
        return reason, plies

    def status(self, games: np.ndarray, claim_draws: bool, max_plies: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The reason codes and plies of the games' current positions."""
        games = _i32(games)
        reason, plies = np.empty(len(games), np.int32), np.empty(len(games), np.int32)
        self.lib.pdx_core_status(self._h, len(games), _ptr(games), int(claim_draws),
                                 -1 if max_plies is None else max_plies, _ptr(reason), _ptr(plies))
        return reason, plies

    def encode(self, games: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Lc0's 112 planes of the games' current positions into ``out`` ((n, 112, 8, 8) float32)."""
        games = _i32(games)
        if out.shape != (len(games), 112, 8, 8) or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"out buffer has shape {out.shape} {out.dtype}, need {(len(games), 112, 8, 8)} "
                             f"float32, contiguous")
        self.lib.pdx_core_encode(self._h, len(games), _ptr(games), _ptr(out))
        return out

    def pack(self, games: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The planes of the games' current positions packed into ``out`` ((n, 100) int64, the layout of
        ``encoding.expand_packed``)."""
        games = _i32(games)
        if out.shape != (len(games), 100) or out.dtype != np.int64 or not out.flags.c_contiguous:
            raise ValueError(f"out buffer has shape {out.shape} {out.dtype}, need {(len(games), 100)} int64")
        self.lib.pdx_core_pack(self._h, len(games), _ptr(games), _ptr(out))
        return out

    def legal(self, games: np.ndarray, mask: np.ndarray | None, index: np.ndarray, count: np.ndarray) -> None:
        """Legal masks ((n, 4288) bool; None: not written), sorted legal policy indices ((n, 256) int64,
        padded with each row's first) and legal-move counts ((n,) int32) into the given buffers."""
        games = _i32(games)
        self.lib.pdx_core_legal(self._h, len(games), _ptr(games), _ptr(mask), _ptr(index), _ptr(count))

    def _check(self, code: int, i: int) -> None:
        if code == -1:
            raise NativeCoreError(f"game {i}: more than 200 positions since the last capture or pawn move")
        if code == -2:
            raise MemoryError(f"game {i}: the chess core ran out of memory for its move list")


def _i32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)
