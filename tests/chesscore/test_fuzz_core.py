"""The differential fuzzer (``fuzz_core.py``): the compiled core's pool and python-chess agree on ~20,000 random
positions (the default run; the slow run 200,000 from another seed; the soak is the CLI), and the runs reach
what they aim at: every game end, en-passant captures, castlings, promotions, double checks, every kind of root,
boards with more legal moves than a reachable position has."""

from __future__ import annotations

import fuzz_core
import fuzz_roots
import pytest

from pdx_lightning.chesscore import native_core

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")
ENDS = {
    "checkmate",
    "stalemate",
    "insufficient_material",
    "seventy_five_moves",
    "fivefold",
    "fifty_moves",
    "threefold",
    "ply_cap",
}


@pytest.mark.parametrize("positions,seed", [(20_000, 1), pytest.param(200_000, 2, marks=pytest.mark.slow)])
def test_native_pool_agrees_with_python_chess_on_random_positions(positions, seed):
    stats = fuzz_core.run(positions, seed)  # raises fuzz_core.Mismatch at the first disagreement
    assert stats.positions >= positions
    assert {reason for (_, reason) in stats.ends} == ENDS
    assert {
        claim
        for (k, reason) in stats.ends
        for claim in [fuzz_core.CONFIGS[k][0]]
        if reason in ("fifty_moves", "threefold")
    } == {True}  # claims only where claimed
    assert all(stats.moves[k] > 0 for k in ("en_passant", "castling", "promotion", "double_check")), stats.moves
    assert set(stats.roots) == set(fuzz_roots.KINDS)
    assert stats.max_legal > 218  # a hill-climbed 15-queen board (fuzz_roots.MOBILE)


def test_a_mismatch_names_the_game_with_its_root_and_moves(monkeypatch):
    real = fuzz_core.Pair.step

    def broken(self, packed):
        real(self, packed)
        if self.k == 1 and self.ref.n_moves(3) >= 2:
            self.ref.boards[3].halfmove_clock += 1  # the oracle's board drifts: the planes differ

    monkeypatch.setattr(fuzz_core.Pair, "step", broken)
    with pytest.raises(
        fuzz_core.Mismatch,
        match=r"seed 5, batch \d+: config claim_draws=True max_plies=None, game 3 "
        r"\(mode \w+\): root .* moves \w+",
    ):
        fuzz_core.run(5_000, 5)
