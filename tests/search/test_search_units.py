"""The search's settings, its boundary into C, and its rules on hand-made positions (a network stub)."""

from __future__ import annotations

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.boundary import LEGAL_STRIDE, CoreArgumentError
from pdx_lightning.chesscore.native_core import NativeCore
from pdx_lightning.nets.seam import NetOutput
from pdx_lightning.search import BatchedSearch, SearchInputError, SearchSettingError, SearchSettings
from pdx_lightning.search.forest import Forest, SearchStateError
from pdx_lightning.search.spec import SearchSpecError, parse_search_spec


class Uniform(torch.nn.Module):
    """Every move's logit 0; W/D/L from a fixed q (side to move's view): the search's rules alone decide."""

    def __init__(self, q: float = 0.0) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.q = q

    def forward(self, x: torch.Tensor) -> NetOutput:
        b = x.shape[0]
        p = torch.tensor([(1 + self.q) / 2 - 0.05, 0.1, (1 - self.q) / 2 - 0.05]).clamp_min(1e-6)
        return NetOutput(torch.zeros(b, 4288) + 0 * self.w, p.log().expand(b, 3))


def test_settings_are_lc0s_defaults_and_checked_once():
    s = SearchSettings()
    assert (s.cpuct, s.cpuct_base, s.cpuct_factor, s.fpu_value, s.policy_softmax_temp) == (
        1.745,
        38739.0,
        3.894,
        0.330,
        1.359,
    )
    assert s.two_fold_draws and s.sticky_endgames
    for bad in ({"nodes": 0}, {"nodes": -3}, {"nodes": 10**7}, {"nodes": True}, {"cpuct": float("nan")}):
        with pytest.raises(SearchSettingError, match=next(iter(bad))):
            SearchSettings(**bad)
    with pytest.raises(
        SearchSettingError, match=r"nodes \(go nodes\): must be an integer >= 1 and <= 1,000,000, got 0"
    ):
        SearchSettings(nodes=0)


def test_spec_parsing():
    spec = parse_search_spec("search[nodes=16, cpuct=2.5,reuse=0]:base:maia-1900")
    s = spec.settings
    assert (s.nodes, s.cpuct, spec.reuse, spec.model, spec.value_model) == (16, 2.5, False, "base:maia-1900", None)
    for bad, why in (
        ("search[nodes=16]", "expected search"),
        ("search[nodes=x]:m", "not a valid int"),
        ("search[depth=3]:m", "unknown key 'depth'"),
        ("search[nodes]:m", "bad field"),
        ("search[reuse=maybe]:m", "not a valid bool"),
        ("search[nodes=0]:m", "must be an integer"),
    ):
        with pytest.raises(SearchSpecError if "must" not in why else SearchSettingError, match=why):
            parse_search_spec(bad)


def test_forest_boundary_refuses_bad_calls_by_name():
    core, forest = NativeCore(2), Forest(2, SearchSettings())
    with pytest.raises(CoreArgumentError, match="tree indices"):
        forest.begin([5])
    with pytest.raises(CoreArgumentError, match="once per call"):
        forest.begin([0, 0])
    with pytest.raises(SearchStateError, match="out of order"):
        forest.begin([0])  # no root yet
    forest.reset(0, core, 0)
    planes, legal, count = (
        np.empty((1, 112, 8, 8), np.float32),
        np.empty((1, LEGAL_STRIDE), np.int64),
        np.empty(1, np.int32),
    )
    with pytest.raises(SearchStateError):
        forest.scatter(np.array([0]), np.zeros((1, LEGAL_STRIDE), np.float32), np.zeros((1, 3), np.float32))
    forest.begin([0])
    with pytest.raises(CoreArgumentError, match="planes must be"):
        forest.gather(np.array([0]), np.array([4]), np.empty((1, 112, 8), np.float32), legal, count)
    assert forest.gather(np.array([0]), np.array([4]), planes, legal, count).tolist() == [True]
    assert count[0] == 20  # the start position's legal moves
    with pytest.raises(CoreArgumentError, match="NaN"):
        forest.scatter(np.array([0]), np.full((1, LEGAL_STRIDE), np.nan, np.float32), np.zeros((1, 3), np.float32))


def test_no_legal_move_and_finished_games_are_one_line():
    search = BatchedSearch(Uniform(), SearchSettings(nodes=8))
    mated = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    with pytest.raises(SearchInputError, match="no legal move"):
        search.search([mated])


def test_visits_add_up_and_tree_reuse_keeps_the_subtree():
    search = BatchedSearch(Uniform(), SearchSettings(nodes=32), slots=1)
    board = chess.Board()
    r = search.search([board])[0]
    assert r.root.root_visits == 32 and int(r.root.visits.sum()) == 31 and r.root.playouts == 32
    kept = r.visits()[r.best]
    board.push(r.best)
    r2 = search.search([board], nodes=kept + 1)[0]  # the reused subtree already holds `kept` visits
    assert r2.root.playouts == 1 and r2.root.root_visits == kept + 1
    fresh = BatchedSearch(Uniform(), SearchSettings(nodes=32), slots=1, reuse=False)
    fresh.search([chess.Board()])
    assert fresh.search([board], nodes=kept + 1)[0].root.playouts == kept + 1


def test_mate_in_one_is_proven_and_played():
    """A uniform network and a mate in one among 30-odd moves: the mate is a terminal win for the mover
    (Q = +1), found once visited and played whatever its visits (proven wins rank first)."""
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8#
    r = BatchedSearch(Uniform(), SearchSettings(nodes=64)).search([board])[0]
    assert r.best == chess.Move.from_uci("a1a8")
    i = r.root.moves.index(r.best)
    assert r.root.terminal[i] == 1 and r.root.q[i] == 1.0


def test_two_fold_repetition_inside_the_tree_is_a_draw():
    """Knights shuffle from a position that occurred before the root: a two-fold inside the tree is a draw
    only when its first occurrence is at or after the root (Lc0's rule), with at least 4 plies searched."""
    board = chess.Board()
    for m in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        board.push_uci(m)
    r = BatchedSearch(Uniform(q=0.5), SearchSettings(nodes=200)).search([board])[0]
    assert r.root.root_visits >= 200
    # every root move is visited or not; the shuffle back g1f3 leads to a position seen at ply 1 (before
    # the root): not a draw there, so the tree goes on below it
    assert r.visits()[chess.Move.from_uci("g1f3")] > 0


def test_waves_batch_every_game_in_flight():
    search = BatchedSearch(Uniform(), SearchSettings(nodes=16), slots=8)
    boards = [chess.Board() for _ in range(8)]
    search.search(boards)
    assert search.waves == 16 and search.evaluations <= 8 * 16
