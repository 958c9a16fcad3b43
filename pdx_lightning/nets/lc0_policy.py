"""Lc0's policy conventions in our 4,288-logit layout, for every family and the Lc0 format layer.

Our layout (``chesscore/moves.py``): ``from*64+to`` for every square pair, then
``4096 + from_file*24 + to_file*3 + {q,r,b}`` for the under/queen promotions, the knight
promotion on the plain pair. Lc0's attention policy head outputs exactly this layout; Lc0's
classic heads output its 1,858-move list, which :data:`POLICY_1858` / :data:`ATTN_TO_1858` map
index by index. One move-level difference: Lc0 scores castling on king-takes-rook (e1h1), we on
the king's destination (e1g1): :func:`castling_to_ours`.

This module sits beside ``nets/lc0/`` rather than inside it so that the models (``chessformer.py``,
other families) use it without importing the lc0 package, which imports the models.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

__all__ = ["ATTN_TO_1858", "POLICY_1858", "lc0_1858_moves", "policy_to_1858", "policy_from_1858", "castling_to_ours"]


@lru_cache(maxsize=1)
def _policy_maps() -> tuple[np.ndarray, list[str]]:
    """Lc0's classic 1,858 move list, in its order: every queen-line and knight move by
    from-square then to-square (a1 = 0 … h8 = 63), then the q/r/b promotions by from-file,
    to-file, piece. Returns (4288 → 1858 index or −1, the 1858 UCI strings)."""
    attn = np.full(4288, -1, dtype=np.int64)
    names: list[str] = []
    sq = lambda s: "abcdefgh"[s % 8] + str(s // 8 + 1)  # noqa: E731
    for f in range(64):
        for t in range(64):
            df, dr = abs(f % 8 - t % 8), abs(f // 8 - t // 8)
            if f != t and (df == 0 or dr == 0 or df == dr or {df, dr} == {1, 2}):
                attn[f * 64 + t] = len(names)
                names.append(sq(f) + sq(t))
    for ff in range(8):
        for tf in range(max(0, ff - 1), min(8, ff + 2)):
            for k, piece in enumerate("qrb"):
                attn[4096 + ff * 24 + tf * 3 + k] = len(names)
                names.append(sq(48 + ff) + sq(56 + tf) + piece)
    return attn, names


ATTN_TO_1858: np.ndarray = _policy_maps()[0]  # (4288,) our index → Lc0 1858 index, −1 if none
POLICY_1858: np.ndarray = np.flatnonzero(ATTN_TO_1858 >= 0)[np.argsort(ATTN_TO_1858[ATTN_TO_1858 >= 0])]
# POLICY_1858[i] = our index of Lc0's i-th move, (1858,). Index-level maps (same square pairs);
# at the move level only castling differs: our e1g1 is Lc0's e1h1 (see castling_to_ours).
ATTN_TO_1858.setflags(write=False)
POLICY_1858.setflags(write=False)
_POLICY_1858_INDEX = torch.tensor(POLICY_1858)  # a copy: torch warns about read-only numpy arrays


def lc0_1858_moves() -> list[str]:
    """Lc0's 1,858 policy moves (UCI, side-to-move frame); castling appears as e1h1/e1a1 there."""
    return list(_policy_maps()[1])


def policy_to_1858(policy: torch.Tensor) -> torch.Tensor:
    """``(B, 4288)`` logits in our layout → ``(B, 1858)`` in Lc0's classic order (what Lc0's
    attention head gathers). Castling: apply ``castling_to_ours`` first if the logits are ours."""
    return policy[:, _POLICY_1858_INDEX.to(policy.device)]


def policy_from_1858(policy: torch.Tensor, fill: float) -> torch.Tensor:
    """``(B, 1858)`` logits in Lc0's classic order → ``(B, 4288)`` in our index layout, ``fill``
    on the 2,430 slots no 1858 move occupies (square pairs no piece can move between; they are
    never legal). Castling stays king-takes-rook: apply ``castling_to_ours`` afterwards."""
    out = policy.new_full((policy.shape[0], 4288), fill)
    out[:, _POLICY_1858_INDEX.to(policy.device)] = policy
    return out


# Castling logits (side-to-move frame): ours (king's destination) and Lc0's (king takes rook).
_E1 = 4
_CASTLE_OURS = (_E1 * 64 + 6, _E1 * 64 + 2)  # e1g1, e1c1
_CASTLE_LC0 = (_E1 * 64 + 7, _E1 * 64 + 0)  # e1h1, e1a1


def castling_to_ours(policy: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Lc0 king-takes-rook castling logits → moves.py's layout (and back: it is an involution).

    ``policy`` is ``(B, 4288)``, ``x`` the input planes ``(B, 112, 8, 8)``. Wherever the side to
    move's king stands on e1 (plane 5 of ``x``), e1g1↔e1h1 and e1c1↔e1a1 are swapped. With the
    king on e1 the king-destination slots are only castling and the rook-square slots are never
    legal, so every legal move keeps its logit.
    """
    king_e1 = x[:, 5, 0, _E1] > 0.5  # (B,)
    cols = list(_CASTLE_OURS + _CASTLE_LC0)
    swapped = list(_CASTLE_LC0 + _CASTLE_OURS)
    out = policy.clone()
    out[:, cols] = torch.where(king_e1[:, None], policy[:, swapped], policy[:, cols])
    return out
