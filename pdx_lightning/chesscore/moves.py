"""Move <-> policy index, in the side-to-move canonical frame.

Policy layout (Lc0's attention-policy layout, 4,288 logits, one layout used
everywhere: sampling, losses, evaluation, export):

* ``0 .. 4095``: ``from * 64 + to`` over canonical squares (a1 = 0 … h8 = 63,
  board mirrored vertically when Black is to move, i.e. ``sq ^ 56``).
  A plain move, castling (king from → king to, e.g. e1g1) and a **knight**
  promotion use this slot; Lc0 encodes knight promotion as the plain move.
* ``4096 .. 4287``: the other promotions, from the 7th to the 8th rank in the
  canonical frame: ``4096 + from_file * 24 + to_file * 3 + k`` with
  ``k = 0, 1, 2`` for queen, rook, bishop. Only ``|from_file - to_file| <= 1``
  is ever legal; the other 8×8 cells stay masked.

Promotion pieces are scored separately (each has its own logit), so the same
distribution is used when sampling and in every loss.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import torch

N_FROM_TO = 64 * 64
N_PROMO = 8 * 8 * 3
POLICY_SIZE = N_FROM_TO + N_PROMO  # 4288, as Lc0's attention policy head

_PROMO_SLOT = {chess.QUEEN: 0, chess.ROOK: 1, chess.BISHOP: 2}
_SLOT_PROMO = (chess.QUEEN, chess.ROOK, chess.BISHOP)


class MoveIndexError(ValueError):
    """A move or policy index that has no meaning in the policy layout."""


def _canon(square: int, turn: chess.Color) -> int:
    return square if turn == chess.WHITE else square ^ 56


def move_to_index(move: chess.Move, turn: chess.Color) -> int:
    """Policy index of ``move`` played by side ``turn`` (see module docstring)."""
    f, t = _canon(move.from_square, turn), _canon(move.to_square, turn)
    promo = move.promotion
    if promo is None or promo == chess.KNIGHT:
        return f * 64 + t
    if promo not in _PROMO_SLOT or f // 8 != 6 or t // 8 != 7 or abs(f % 8 - t % 8) > 1:
        raise MoveIndexError(f"not a promotion the policy layout can express: {move.uci()}")
    return N_FROM_TO + (f % 8) * 24 + (t % 8) * 3 + _PROMO_SLOT[promo]


def index_to_move(index: int, board: chess.Board) -> chess.Move:
    """The move of ``board`` (side to move's view) that ``index`` names.

    Knight promotion is restored from the piece on the from-square, so
    ``index_to_move(move_to_index(m, b.turn), b) == m`` for every legal ``m``.
    """
    if not 0 <= index < POLICY_SIZE:
        raise MoveIndexError(f"policy index {index} outside [0, {POLICY_SIZE})")
    turn = board.turn
    if index < N_FROM_TO:
        f, t = divmod(index, 64)
        frm, to = _canon(f, turn), _canon(t, turn)
        promo = None
        if board.piece_type_at(frm) == chess.PAWN and t // 8 == 7:
            promo = chess.KNIGHT
        return chess.Move(frm, to, promo)
    r = index - N_FROM_TO
    ff, rest = divmod(r, 24)
    tf, k = divmod(rest, 3)
    return chess.Move(_canon(48 + ff, turn), _canon(56 + tf, turn), _SLOT_PROMO[k])


def legal_indices(board: chess.Board, moves: Sequence[chess.Move] | None = None) -> np.ndarray:
    """Policy indices (int64) of ``moves`` (default: the legal moves, in python-chess order)."""
    if moves is None:
        moves = list(board.legal_moves)
    turn = board.turn
    return np.fromiter((move_to_index(m, turn) for m in moves), dtype=np.int64, count=len(moves))


def indices_mask(indices: Sequence[np.ndarray]) -> torch.Tensor:
    """Bool mask ``(B, POLICY_SIZE)``, True at row ``i``'s policy indices ``indices[i]`` (int64 arrays,
    e.g. from :func:`legal_indices`). The one place a legal mask is built."""
    mask = torch.zeros(len(indices), POLICY_SIZE, dtype=torch.bool)
    if len(indices):
        rows = np.repeat(np.arange(len(indices)), [len(ix) for ix in indices])
        cols = np.concatenate(indices).astype(np.int64, copy=False)
        mask[torch.from_numpy(rows), torch.from_numpy(cols)] = True
    return mask


def legal_mask(boards: Sequence[chess.Board], moves: Sequence[Sequence[chess.Move]] | None = None) -> torch.Tensor:
    """Bool mask ``(B, POLICY_SIZE)``, True on each board's legal moves.

    Pass ``moves`` (each board's legal-move list) when the caller already
    generated them, so legal moves are not generated twice.
    """
    return indices_mask([legal_indices(b, None if moves is None else moves[i]) for i, b in enumerate(boards)])
