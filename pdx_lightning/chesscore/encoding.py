"""Lc0's classic 112-plane input, batched from python-chess bitboards.

Planes (all 8×8, square a1 = row 0 / col 0 in the side-to-move frame):

* ``13 * h + 0..5``   history step ``h`` (0 = current, 7 = seven plies ago):
  the side to move's pawns, knights, bishops, rooks, queens, king;
* ``13 * h + 6..11``  the opponent's, same order;
* ``13 * h + 12``     ones if that position occurred before (repetition);
* ``104..107``        castling rights: we O-O-O, we O-O, they O-O-O, they O-O;
* ``108``             ones if Black is to move;
* ``109``             the rule-50 ply count, raw (Lc0 classic; the network
  scales it, see ``ModelConfig.rule50_scale``);
* ``110``             zeros (Lc0's former move-count plane);
* ``111``             ones (board edge).

Side-to-move canonical: every history plane is drawn from the *current*
mover's point of view; when Black is to move the board is mirrored
vertically (``sq ^ 56``), as in Lc0. Missing history (fewer than 8 positions)
is zero-filled when the game started from the standard position and filled by
repeating the earliest known position otherwise, with the double pawn push
behind that position's en-passant square taken back (Lc0's ``encoder.cc``
for games set up from a FEN; checked against the real Lc0).

A position counts as a repetition by the one rule of ``chesscore.rules``
(``rules.repetition_key``: python-chess's transposition key, the en-passant
square only when an en-passant capture is legal), the rule that also ends
games.

Two paths share the vectorized plane construction:
``encode_boards`` reads each board's own state stack (no copies, no
push/pop); ``GameHistory`` is the per-game ring buffer self-play keeps, so a
step costs one snapshot per game instead of a history walk.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence
from typing import NamedTuple, overload

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.rules import RepetitionKey, repetition_key, stack_repetition_key

N_PLANES = 112
HISTORY = 8


class Snapshot(NamedTuple):
    """One position of a game: 12 absolute bitboards (White P..K, Black P..K) + its repetition key."""

    bbs: tuple[int, ...]
    key: RepetitionKey


def _bbs(pawns, knights, bishops, rooks, queens, kings, occ_w, occ_b) -> tuple[int, ...]:
    return (
        pawns & occ_w,
        knights & occ_w,
        bishops & occ_w,
        rooks & occ_w,
        queens & occ_w,
        kings & occ_w,
        pawns & occ_b,
        knights & occ_b,
        bishops & occ_b,
        rooks & occ_b,
        queens & occ_b,
        kings & occ_b,
    )


def snapshot_board(board: chess.Board) -> Snapshot:
    """Snapshot of the board's current position."""
    bbs = _bbs(
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied_co[chess.BLACK],
    )
    return Snapshot(bbs, repetition_key(board))


def _snapshot_state(board: chess.Board, ply: int) -> Snapshot:
    # python-chess's _BoardState: the position before move ``ply`` of the stack.
    st = board._stack[ply]
    return Snapshot(
        _bbs(st.pawns, st.knights, st.bishops, st.rooks, st.queens, st.kings, st.occupied_w, st.occupied_b),
        stack_repetition_key(board, ply),
    )


def _state_fields(st) -> tuple:
    # a python-chess _BoardState (a position of the move stack)
    return (
        st.pawns,
        st.knights,
        st.bishops,
        st.rooks,
        st.queens,
        st.kings,
        st.occupied_w,
        st.occupied_b,
        st.turn,
        st.castling_rights,
        st.ep_square,
    )


def _board_fields(b: chess.Board) -> tuple:
    return (
        b.pawns,
        b.knights,
        b.bishops,
        b.rooks,
        b.queens,
        b.kings,
        b.occupied_co[chess.WHITE],
        b.occupied_co[chess.BLACK],
        b.turn,
        b.castling_rights,
        b.ep_square,
    )


_START_FIELDS = _board_fields(chess.Board())


def _root_is_start(board: chess.Board) -> bool:
    """The game (``board`` and its move stack) began at the standard start position."""
    root = _state_fields(board._stack[0]) if board._stack else _board_fields(board)
    return root == _START_FIELDS


def _root_ep(board: chess.Board) -> int | None:
    """The en-passant square of the game's first position, as set up (python-chess keeps a FEN's)."""
    return board._stack[0].ep_square if board._stack else board.ep_square


class EncodedRow(NamedTuple):
    """What one board contributes to the batched plane construction."""

    bbs: list  # 8 tuples of 12 absolute bitboards, history step 0 = current
    rep: list  # 8 bools
    turn: bool  # side to move (chess.WHITE = True)
    castling: int  # castling-rights bitmask (rook squares)
    rule50: int


_EMPTY = (0,) * 12


def _undo_double_push(bbs: tuple[int, ...], ep: int | None) -> tuple[int, ...]:
    """The root position with the double pawn push behind its en-passant square ``ep`` taken
    back (Lc0 ``encoder.cc`` fills history before a FEN root so); ``bbs`` as is without one."""
    if ep is None:
        return bbs
    white = ep // 8 == 2  # e3: White just pushed e2e4; e6: Black e7e5
    frm, to, k = (ep - 8, ep + 8, 0) if white else (ep + 8, ep - 8, 6)
    if not bbs[k] >> to & 1 or any(b >> frm & 1 for b in bbs):
        return bbs  # no such push could have happened: leave it
    out = list(bbs)
    out[k] = bbs[k] & ~(1 << to) | (1 << frm)
    return tuple(out)


def _row_from_history(
    snaps: Sequence[Snapshot],
    reps: Sequence[bool],
    from_start: bool,
    turn: bool,
    castling: int,
    rule50: int,
    root_ep: int | None = None,
) -> EncodedRow:
    """``snaps``/``reps``: newest first, at most 8 entries. ``root_ep``: the en-passant square of
    the game's first position as set up (a FEN's, capturable or not), for the history fill."""
    n = len(snaps)
    bbs = [s.bbs for s in snaps]
    rep = list(reps)
    if n < HISTORY:
        # zero-fill from the standard start; else Lc0 repeats the earliest known position, with
        # the double pawn push behind a FEN's en-passant square undone
        fill_b, fill_r = (_EMPTY, False) if from_start else (_undo_double_push(bbs[-1], root_ep), rep[-1])
        bbs += [fill_b] * (HISTORY - n)
        rep += [fill_r] * (HISTORY - n)
    return EncodedRow(bbs, rep, turn, castling, rule50)


def row_from_board(board: chess.Board) -> EncodedRow:
    """History of ``board`` read from its move stack (no copy, no push/pop)."""
    stack = board._stack  # _BoardState before each move; positions are stack[0..n-1] + the board
    n = len(stack)
    cache: dict[int, Snapshot] = {}
    hm: dict[int, int] = {}

    def pos(p: int) -> Snapshot:
        if p not in cache:
            if p == n:
                cache[p] = snapshot_board(board)
                hm[p] = board.halfmove_clock
            else:
                cache[p] = _snapshot_state(board, p)
                hm[p] = stack[p].halfmove_clock
        return cache[p]

    snaps, reps = [], []
    for j in range(min(HISTORY, n + 1)):
        p = n - j
        s = pos(p)
        # earlier occurrences can only lie within this position's rule-50 window
        lo = max(0, p - hm[p])
        reps.append(any(pos(q).key == s.key for q in range(p - 2, lo - 1, -2)))
        snaps.append(s)
    return _row_from_history(
        snaps,
        reps,
        _root_is_start(board),
        board.turn,
        board.clean_castling_rights(),
        board.halfmove_clock,
        _root_ep(board),
    )


class GameHistory:
    """Ring buffer of one game's last 8 positions, for the self-play fast path.

    ``push(board)`` after every move made on ``board`` (the board is read, not
    stored). Repetition counts are kept only since the last irreversible move,
    which is all a repetition can reach back to.
    """

    def __init__(self, board: chess.Board) -> None:
        self.reset(board)

    def reset(self, board: chess.Board) -> None:
        """Start over from ``board`` (its move stack is taken as the game so far)."""
        positions = [_snapshot_state(board, p) for p in range(len(board._stack))] + [snapshot_board(board)]
        self.from_start = _root_is_start(board)
        self.root_ep = _root_ep(board)
        newest = positions[::-1][:HISTORY]
        self.snaps: deque[Snapshot] = deque(newest, maxlen=HISTORY)
        self.reps: deque[bool] = deque(row_from_board(board).rep[: len(newest)], maxlen=HISTORY)
        window = positions[max(0, len(positions) - 1 - board.halfmove_clock) :]
        self.counts = Counter(s.key for s in window)

    def push(self, board: chess.Board) -> None:
        """Record the position ``board`` reached after its last move."""
        s = snapshot_board(board)
        if board.halfmove_clock == 0:
            self.counts.clear()
        self.reps.appendleft(self.counts[s.key] > 0)
        self.counts[s.key] += 1
        self.snaps.appendleft(s)

    def repetitions(self) -> int:
        """Occurrences of the newest position since the last irreversible move, counting it
        (``rules.repetition_count`` from the ring buffer, for ``rules.game_end``)."""
        return self.counts[self.snaps[0].key]

    def row(self, board: chess.Board) -> EncodedRow:
        return _row_from_history(
            list(self.snaps),
            list(self.reps),
            self.from_start,
            board.turn,
            board.clean_castling_rights(),
            board.halfmove_clock,
            self.root_ep,
        )


class PackedRows(NamedTuple):
    """Rows as arrays: the compact form datasets store (~800 bytes/position)."""

    bbs: np.ndarray  # (B, 8, 12) uint64, absolute colors, history step 0 = current
    rep: np.ndarray  # (B, 8) bool
    black: np.ndarray  # (B,) bool, Black to move
    castling: np.ndarray  # (B,) uint64 castling-rights bitmask
    rule50: np.ndarray  # (B,) float32 halfmove clock

    @overload  # type: ignore[override]
    def __getitem__(self, sel: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, sel: slice | np.ndarray | np.integer | Sequence[int]) -> PackedRows: ...
    def __getitem__(self, sel):
        if isinstance(sel, int):
            return tuple.__getitem__(self, sel)
        return PackedRows(*(a[sel] for a in self))


def pack_rows(rows: Sequence[EncodedRow]) -> PackedRows:
    B = len(rows)
    return PackedRows(
        np.array([r.bbs for r in rows], dtype=np.uint64).reshape(B, HISTORY, 12),
        np.array([r.rep for r in rows], dtype=bool).reshape(B, HISTORY),
        np.fromiter((not r.turn for r in rows), dtype=bool, count=B),
        np.fromiter((r.castling for r in rows), dtype=np.uint64, count=B),
        np.fromiter((r.rule50 for r in rows), dtype=np.float32, count=B),
    )


def encode_packed(p: PackedRows, out: np.ndarray | None = None) -> np.ndarray:
    """Batched plane construction from packed rows: ``(B, 112, 8, 8)`` float32.

    ``out``: an optional preallocated float32 buffer of that shape, fully
    overwritten. Fresh 28 KB-per-position memory costs more page faults than
    the encoding itself, so hot loops pass a reused buffer.
    """
    B = p.bbs.shape[0]
    bbs, black = p.bbs.copy(), p.black
    # side to move first, then mirror ranks for Black (byteswap of a bitboard = vertical flip)
    bbs[black] = bbs[black][:, :, [6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5]].byteswap()
    bits = np.unpackbits(bbs.view(np.uint8).reshape(B, HISTORY, 12, 8, 1), axis=-1, bitorder="little")  # (B,8,12,8,8)
    if out is None:
        out = np.empty((B, N_PLANES, 8, 8), dtype=np.float32)
    elif out.shape != (B, N_PLANES, 8, 8) or out.dtype != np.float32:
        raise ValueError(f"out buffer has shape {out.shape} {out.dtype}, need {(B, N_PLANES, 8, 8)} float32")
    hist = out[:, :104].reshape(B, HISTORY, 13, 8, 8)
    hist[:, :, :12] = bits
    hist[:, :, 12] = p.rep[:, :, None, None]
    rights = np.stack(
        [p.castling & np.uint64(sq) != 0 for sq in (chess.BB_A1, chess.BB_H1, chess.BB_A8, chess.BB_H8)], axis=1
    )
    # white: we = (A1, H1), they = (A8, H8); black: swapped
    ours = np.where(black[:, None], rights[:, 2:], rights[:, :2])
    theirs = np.where(black[:, None], rights[:, :2], rights[:, 2:])
    out[:, 104:106] = ours[:, :, None, None]
    out[:, 106:108] = theirs[:, :, None, None]
    out[:, 108] = black[:, None, None]
    out[:, 109] = p.rule50[:, None, None]
    out[:, 110] = 0.0
    out[:, 111] = 1.0
    return out


def encode_rows(rows: Sequence[EncodedRow], out: np.ndarray | None = None) -> np.ndarray:
    """Batched plane construction from rows: ``(B, 112, 8, 8)`` float32 (see ``encode_packed``)."""
    return encode_packed(pack_rows(rows), out)


def encode_boards(boards: Iterable[chess.Board]) -> np.ndarray:
    """Encode boards (with their move stacks) as float32 ``(B, 112, 8, 8)``."""
    return encode_rows([row_from_board(b) for b in boards])


# ---------------------------------------------------------------- planes packed for the device

PACKED_WORDS = 100  # int64 words per position: 96 bitboards, repetitions, castling, Black, rule-50
_HIST_PLANES = [13 * h + k for h in range(HISTORY) for k in range(12)]  # plane of packed word w < 96


def pack_planes(x: np.ndarray) -> np.ndarray:
    """Planes ``(B, 112, 8, 8)`` → ``(B, 100)`` int64, the 35× smaller form self-play copies to a GPU:
    words 0..95 the history bitboards in plane order (``13 h + k``, k < 12), 96 the repetition planes'
    bits (bit h), 97 the castling planes 104..107 (bits 0..3), 98 plane 108 (Black), 99 plane 109
    (rule 50). Planes 110 and 111 are constant. :func:`expand_packed` inverts it."""
    B = x.shape[0]
    flat = x.reshape(B, N_PLANES, 64)
    out = np.empty((B, PACKED_WORDS), np.int64)
    bits = np.packbits(flat[:, _HIST_PLANES] != 0, axis=-1, bitorder="little")  # (B, 96, 8)
    out[:, :96] = np.ascontiguousarray(bits).view(np.int64).reshape(B, 96)
    weights = 1 << np.arange(8, dtype=np.int64)
    out[:, 96] = (flat[:, [13 * h + 12 for h in range(HISTORY)], 0] != 0) @ weights
    out[:, 97] = (flat[:, 104:108, 0] != 0) @ weights[:4]
    out[:, 98] = flat[:, 108, 0].astype(np.int64)
    out[:, 99] = flat[:, 109, 0].astype(np.int64)
    return out


def expand_packed(packed: torch.Tensor) -> torch.Tensor:
    """:func:`pack_planes`'s ``(B, 100)`` int64 → the planes ``(B, 112, 8, 8)`` float32, on ``packed``'s
    device (self-play builds a GPU batch's planes there from 800 bytes per position instead of copying
    28 KB)."""
    B, dev = packed.shape[0], packed.device
    shifts = torch.arange(64, device=dev)
    out = torch.zeros(B, N_PLANES, 64, dtype=torch.float32, device=dev)
    out[:, _HIST_PLANES] = ((packed[:, :96, None] >> shifts) & 1).float()
    out[:, [13 * h + 12 for h in range(HISTORY)]] = ((packed[:, 96:97] >> shifts[:8]) & 1).float()[:, :, None]
    out[:, 104:108] = ((packed[:, 97:98] >> shifts[:4]) & 1).float()[:, :, None]
    out[:, 108] = packed[:, 98:99].float()
    out[:, 109] = packed[:, 99:100].float()
    out[:, 111] = 1.0
    return out.reshape(B, N_PLANES, 8, 8)
