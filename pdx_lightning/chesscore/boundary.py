"""The one checked way into the game pools: boards, game indices, moves, actions and buffers.

Both pools (:mod:`chesscore.native_pool` on the compiled core, and ``game_pool.PythonChessPool``) and
:class:`native_core.NativeCore` pass every argument through these checks before they act, so a bad
input is refused with a named exception and one line saying what is wrong and where, never reaching
the C core (which checks again what its memory safety rests on, ``pdx_rules.c``'s ``valid_root``):

* a **board** (:func:`check_board`) must be standard chess (a plain ``chess.Board``, not Chess960), its
  root must pass python-chess's ``Board.status()`` (one king a side, at most 16 men and 8 pawns a side,
  no pawn on a back rank, castling rights equal to ``clean_castling_rights()``, an en-passant square only
  right after a double push, the side not to move not in check, no impossible check), its clocks must be
  in range (below) and every move of its move stack legal: :class:`InvalidBoardError`;
* a **game index** must be an integer in ``[0, n)``: :class:`GameIndexError`; a batch is a 1-D integer
  array, its games distinct where a call plays them;
* **actions**, **out buffers**, pool sizes and caps must have the documented shape, dtype and range:
  :class:`CoreArgumentError`, :class:`BufferLayoutError`; a move or policy slot no legal move has:
  :class:`IllegalMoveError`.

**Bounds.** A position with one king and at most 16 men a side has at most 10 + 15 x 27 = 415
pseudo-legal moves (a king's 8 steps and 2 castlings; any other man at most a queen's 27), and play never
adds men, so ``MAX_MOVES`` = 416, the one move cap (``pdx_limits.h``'s, which the core reports and
:mod:`native_core` checks at load), sizes every buffer of one position's moves; the legal-index and logit
rows are ``LEGAL_STRIDE`` = ``MAX_MOVES`` wide. Positions reachable from the start have at most 218.
A root's fullmove number is at most ``MAX_FULLMOVE`` and its halfmove clock at most ``MAX_HALFMOVE``
(1,000,000 each, far above any game: the longest possible game has under 9,000 moves); with them the ply
counter (2 x fullmove, plus the < 26,000 plies a game can add in the core) stays far inside int32 and the
halfmove plane is exact in float32.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import chess
import numpy as np

from pdx_lightning.errors import UserError

MAX_MOVES = 416  # the one move cap (pdx_limits.h): > 415 pseudo-legal moves (module docstring)
LEGAL_STRIDE = MAX_MOVES  # columns of the legal-index (and logit) rows
MAX_FULLMOVE = 1_000_000
MAX_HALFMOVE = 1_000_000
INT32_MAX = 2**31 - 1


class InvalidBoardError(UserError, ValueError):
    """A board no pool plays (not standard chess, an invalid position, clocks out of range, an illegal
    move in its stack); the message names the game, what is wrong and the FEN."""


class GameIndexError(IndexError):
    """A game index that is not an integer in ``[0, n)`` (or a batch of them that is not 1-D)."""


class CoreArgumentError(ValueError):
    """An argument of a pool or core call out of its documented range (sizes, caps, actions, depths,
    a game repeated in a batch that plays)."""


class BufferLayoutError(CoreArgumentError):
    """An out buffer of the wrong shape, dtype, memory layout, or not writeable."""


class IllegalMoveError(ValueError):
    """A move or policy slot that no legal move of the game's position has."""


def _status_text(status: chess.Status) -> str:
    names = [flag.name for flag in chess.Status if flag and flag in status and flag.name is not None]
    return ", ".join(n.lower().replace("_", " ").replace(" ep ", " en-passant ") for n in names)


def safe_fen(board: chess.Board) -> str:
    """The board's FEN as stored (its en-passant square as set), or a placeholder if even that fails."""
    try:
        return board.fen(en_passant="fen")
    except Exception:  # noqa: BLE001  (a board too broken to print: the message still names the game)
        return "<unprintable board>"


def check_board(board: chess.Board, game: int | None = None) -> chess.Board:
    """``board`` if a pool can play it (module docstring), else :class:`InvalidBoardError`."""
    where = "board" if game is None else f"game {game}"
    if not isinstance(board, chess.Board) or type(board) is not chess.Board or board.chess960:
        kind = type(board).__name__ + (" (Chess960)" if getattr(board, "chess960", False) else "")
        raise InvalidBoardError(f"{where}: the game pools play standard chess only, got a {kind}")
    root = board.root()  # the clocks of the root only: play from it may pass the bounds (module docstring)
    for name, v, hi in (
        ("fullmove number", root.fullmove_number, MAX_FULLMOVE),
        ("halfmove clock", root.halfmove_clock, MAX_HALFMOVE),
    ):
        lo = 1 if name[0] == "f" else 0
        if type(v) is not int or not lo <= v <= hi:
            raise InvalidBoardError(f"{where}: the root's {name} {v!r} is outside [{lo}, {hi:,}]: {safe_fen(root)}")
    if root.ep_square is not None and (type(root.ep_square) is not int or not 0 <= root.ep_square < 64):
        raise InvalidBoardError(f"{where}: en-passant square {root.ep_square!r} is not a square: {safe_fen(root)}")
    status = root.status()
    if status != chess.STATUS_VALID:
        raise InvalidBoardError(f"{where}: invalid position ({_status_text(status)}): {safe_fen(root)}")
    b = root.copy(stack=False)
    for k, move in enumerate(board.move_stack):
        if not _encodable(move) or not b.is_legal(move):
            raise InvalidBoardError(
                f"{where}: move {k + 1} of the move stack ({_move_text(move)}) is not legal "
                f"in {b.fen()} (root {root.fen()})"
            )
        b.push(move)
    return board


def check_index(i, n: int) -> int:
    """``i`` as an int if it is a game of a pool of ``n``, else :class:`GameIndexError`."""
    if isinstance(i, (bool, np.bool_)):
        raise GameIndexError(f"game index must be an integer, got {i!r}")
    try:
        j = operator.index(i)
    except TypeError:
        raise GameIndexError(f"game index must be an integer, got {type(i).__name__} {i!r}") from None
    if not 0 <= j < n:
        raise GameIndexError(f"game index {j} out of range for a pool of {n} games (0..{n - 1})")
    return j


def check_games(games: Sequence[int] | np.ndarray, n: int, *, distinct: bool = False) -> np.ndarray:
    """A batch of game indices as a contiguous int32 array, after checking each is a game of a pool of
    ``n`` (and, with ``distinct``, that none repeats): :class:`GameIndexError` / :class:`CoreArgumentError`."""
    a = np.asarray(games)
    if a.ndim != 1:
        raise GameIndexError(f"game indices must be a 1-D sequence, got shape {a.shape}")
    if a.size == 0:
        return np.empty(0, np.int32)
    if a.dtype.kind == "O":
        a = np.array([check_index(i, n) for i in a], np.int64)
    elif a.dtype.kind not in "iu":
        raise GameIndexError(f"game indices must be integers, got dtype {a.dtype}")
    bad = np.flatnonzero((a < 0) | (a >= n))
    if len(bad):
        raise GameIndexError(f"game index {a[bad[0]]} (row {bad[0]}) out of range for a pool of {n} games (0..{n - 1})")
    out = np.ascontiguousarray(a, dtype=np.int32)
    if distinct:
        uniq, counts = np.unique(out, return_counts=True)
        if len(uniq) != len(out):
            g = int(uniq[np.argmax(counts > 1)])
            rows = np.flatnonzero(out == g).tolist()
            raise CoreArgumentError(
                f"game {g} appears more than once in one batch (rows {rows}): a call plays each game at most once"
            )
    return out


def check_actions(actions, rows: int) -> np.ndarray:
    """Policy slots, one per row: a 1-D integer array of length ``rows`` (int64, contiguous)."""
    a = np.asarray(actions)
    if a.shape != (rows,):
        raise CoreArgumentError(f"actions must have shape ({rows},), one per game, got {a.shape}")
    if rows and a.dtype.kind not in "iu":
        raise CoreArgumentError(f"actions must be integer policy slots, got dtype {a.dtype}")
    if a.dtype.kind == "u" and rows and a.max() > np.iinfo(np.int64).max:
        raise CoreArgumentError(f"action {a.max()} is not a policy slot")
    return np.ascontiguousarray(a, dtype=np.int64)


def _encodable(move) -> bool:
    return (
        isinstance(move, chess.Move)
        and type(move.from_square) is int
        and type(move.to_square) is int
        and 0 <= move.from_square < 64
        and 0 <= move.to_square < 64
        and move.drop is None
        and move.promotion in (None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN)
    )


def _move_text(move) -> str:
    try:
        return move.uci()
    except Exception:  # noqa: BLE001  (a move with squares off the board cannot print itself)
        return f"{type(move).__name__} {getattr(move, '__dict__', move)!r}"


def check_move(move: chess.Move, game: int) -> chess.Move:
    """A python-chess move the core can encode (squares 0..63, promotion N/B/R/Q or none, no drop), else
    :class:`IllegalMoveError` (no such move is ever legal)."""
    if not _encodable(move):
        raise IllegalMoveError(f"game {game}: {_move_text(move)} is not a legal move")
    return move


def check_buffer(name: str, a, shape: tuple[int, ...], dtype) -> np.ndarray:
    """``a`` if it is a writeable, C-contiguous numpy array of ``shape`` and ``dtype``, else
    :class:`BufferLayoutError`."""
    want = f"{shape} {np.dtype(dtype)}, C-contiguous and writeable"
    if not isinstance(a, np.ndarray):
        raise BufferLayoutError(f"{name} buffer must be a numpy array {want}, got {type(a).__name__}")
    if a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous or not a.flags.writeable:
        raise BufferLayoutError(
            f"{name} buffer is {a.shape} {a.dtype}"
            f"{'' if a.flags.c_contiguous else ', not contiguous'}"
            f"{'' if a.flags.writeable else ', read-only'}; need {want}"
        )
    return a


def check_pool_size(n) -> int:
    """A pool's size: 1 .. 2**31 - 1 games, else :class:`CoreArgumentError`."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or not 1 <= n <= INT32_MAX:
        raise CoreArgumentError(f"a pool holds 1 to {INT32_MAX:,} games, got {n!r}")
    return int(n)


def check_cap(max_plies) -> int | None:
    """A ply cap: None (no cap) or 0 .. 2**31 - 1, else :class:`CoreArgumentError`."""
    if max_plies is None:
        return None
    if (
        isinstance(max_plies, (bool, np.bool_))
        or not isinstance(max_plies, (int, np.integer))
        or not 0 <= max_plies <= INT32_MAX
    ):
        raise CoreArgumentError(f"max_plies must be None or an integer in [0, {INT32_MAX:,}], got {max_plies!r}")
    return int(max_plies)


__all__ = [
    "BufferLayoutError",
    "CoreArgumentError",
    "GameIndexError",
    "IllegalMoveError",
    "InvalidBoardError",
    "LEGAL_STRIDE",
    "MAX_FULLMOVE",
    "MAX_HALFMOVE",
    "MAX_MOVES",
    "check_actions",
    "check_board",
    "check_buffer",
    "check_cap",
    "check_games",
    "check_index",
    "check_move",
    "check_pool_size",
    "safe_fen",
]
