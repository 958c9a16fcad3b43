"""The compiled core and the native pool against python-chess, the oracle: the comparisons the core's tests
and the differential fuzzer (``fuzz_core.py``) share.

* :func:`agree`: everything the core says about one game (legal moves, mask and sorted indices, planes,
  repetition count, game ends with claims on and off and a ply cap) equals python-chess's view of the board;
  :func:`legal_moves_agree` and :func:`ends_agree` are its parts the fuzzer runs on every position.
* :func:`same_positions`: two pools write the same planes, masks, sorted legal indices and counts for a batch
  (and, with ``packed``, the same packed words, which ``expand_packed`` turns back into the planes).

Importable from the tests of this folder and from ``fuzz_core.py`` (pytest and ``python tests/chesscore/...``
both put this folder on ``sys.path``).
"""

from __future__ import annotations

import chess
import numpy as np
import torch

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.encoding import GameHistory, encode_rows, expand_packed, pack_planes
from pdx_lightning.chesscore.moves import legal_indices, legal_mask
from pdx_lightning.chesscore.rules import game_end


def legal_moves_agree(core: native_core.NativeCore, i: int, board: chess.Board, legal: list[chess.Move]) -> None:
    """The core's legal moves of game ``i`` are python-chess's ``legal`` (as sets, each move once)."""
    got = core.legal_moves(i)
    assert len(got) == len(legal) and set(got) == set(legal), (
        board.fen(),
        sorted(m.uci() for m in got),
        sorted(m.uci() for m in legal),
    )


def ends_agree(
    core: native_core.NativeCore,
    games: np.ndarray,
    boards: list[chess.Board],
    hists: list[GameHistory],
    legals: list[list[chess.Move]],
    caps: tuple[int | None, ...],
) -> None:
    """Repetition counts, and the core's game end and plies of each game for claims on and off and each
    cap in ``caps``, equal ``rules.game_end`` on python-chess's boards (one batched status call per setting)."""
    for i, board, hist in zip(games, boards, hists):
        assert core.repetitions(int(i)) == hist.repetitions(), board.fen()
    want_plies = [b.ply() for b in boards]
    for claim in (False, True):
        for cap in caps:
            reason, plies = core.status(games, claim, cap)
            assert plies.tolist() == want_plies
            for r, (board, hist, legal) in enumerate(zip(boards, hists, legals)):
                want = game_end(board, legal=legal, repetitions=hist.repetitions(), claim_draws=claim, max_plies=cap)
                assert native_core.REASONS[reason[r]] == (want.reason if want else None), (board.fen(), claim, cap)


def agree(core: native_core.NativeCore, i: int, board: chess.Board, hist: GameHistory, max_plies: int) -> None:
    """Everything the core says about game ``i`` equals python-chess's view of ``board``."""
    legal = list(board.legal_moves)
    legal_moves_agree(core, i, board, legal)
    mask, index, count = (
        np.empty((1, 4288), bool),
        np.empty((1, native_core.LEGAL_STRIDE), np.int64),
        np.empty(1, np.int32),
    )
    core.legal(np.array([i]), mask, index, count)
    assert count[0] == len(legal)
    assert index[0, : count[0]].tolist() == sorted(legal_indices(board, legal).tolist())
    assert np.array_equal(mask, legal_mask([board], [legal]).numpy())
    planes = core.encode(np.array([i]), np.empty((1, 112, 8, 8), np.float32))
    np.testing.assert_array_equal(planes, encode_rows([hist.row(board)]), err_msg=board.fen())
    ends_agree(core, np.array([i]), [board], [hist], [legal], (None, max_plies))


def _equal(a: np.ndarray, b: np.ndarray) -> None:
    if not np.array_equal(a, b):  # the fast check; numpy's report only on a difference
        np.testing.assert_array_equal(a, b)


def same_positions(a, b, games, packed: bool = True):
    """Pools ``a`` and ``b`` write the same positions for ``games`` (with ``packed`` also the same packed
    words, and ``expand_packed`` gives the planes back); ``a``'s unpacked positions."""
    pa, pb = a.positions(games), b.positions(games)
    for x, y in ((pa.x, pb.x), (pa.mask, pb.mask), (pa.count, pb.count), (pa.legal, pb.legal)):
        _equal(x, y)
    if packed:
        ka, kb = a.positions(games, packed=True), b.positions(games, packed=True)
        assert ka.mask is None and kb.mask is None
        _equal(ka.x, kb.x)
        _equal(ka.x, pack_planes(pa.x))
        _equal(expand_packed(torch.from_numpy(ka.x)).numpy(), pa.x)
        _equal(ka.legal, pa.legal)
    return pa
