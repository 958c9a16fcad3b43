"""Dirichlet noise at the root (self-play's exploration): the mixing by hand, the order, the refusals."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore.boundary import CoreArgumentError
from pdx_lightning.nets import load_model
from pdx_lightning.search import BatchedSearch, SearchSettings
from pdx_lightning.search.batched import RootNoise
from pdx_lightning.search.forest import SearchStateError
from tests.helpers import prior_round


@pytest.fixture(scope="module")
def net():
    return load_model("random:tiny")


def expanded_root(net) -> BatchedSearch:
    bs = BatchedSearch(net, SearchSettings(nodes=8), slots=1, reuse=False)
    bs.forget(0)
    bs._sync(0, chess.Board())
    bs.forest.begin(np.zeros(1, np.int32))
    bs._waves(np.zeros(1, np.int32), 1, None)  # the root expanded, no child yet
    return bs


def test_noise_mixes_each_prior_by_hand_and_keeps_the_edges_sorted(net):
    bs = expanded_root(net)
    before = bs.forest.root(0)
    k = len(before.moves)
    eta = np.arange(1, k + 1, dtype=np.float32)
    bs.forest.root_noise(0, eta, 0.25)
    after = bs.forest.root(0)
    want = {m: prior_round(0.75 * p + 0.25 * e / eta.sum()) for m, p, e in zip(before.moves, before.prior, eta)}
    assert sorted(after.moves, key=str) == sorted(before.moves, key=str)
    got = dict(zip(after.moves, after.prior))
    assert all(abs(got[m] - want[m]) <= 1e-3 * want[m] for m in want)
    assert all(a >= b for a, b in zip(after.prior, after.prior[1:]))  # sorted by prior again


def test_zero_eps_searches_exactly_as_without_noise(net):
    boards = [chess.Board(), chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")]
    plain = BatchedSearch(net, SearchSettings(nodes=32), slots=2, reuse=False).search(boards)
    noised = BatchedSearch(net, SearchSettings(nodes=32), slots=2, reuse=False).search(
        boards, noise=RootNoise(0.3, 0.0, np.random.default_rng(0))
    )
    for a, b in zip(plain, noised):
        assert a.visits() == b.visits() and a.best == b.best


def test_noise_changes_the_visits_and_is_seeded(net):
    def run(seed):
        bs = BatchedSearch(net, SearchSettings(nodes=64), slots=1, reuse=False)
        return bs.search([chess.Board()], noise=RootNoise(0.3, 0.25, np.random.default_rng(seed)))[0].visits()

    assert run(1) == run(1) and run(1) != run(2)


def test_noise_is_refused_where_it_cannot_apply(net):
    bs = expanded_root(net)
    k = len(bs.forest.root(0).moves)
    with pytest.raises(CoreArgumentError, match="finite values >= 0"):
        bs.forest.root_noise(0, np.full(k, -1.0), 0.25)
    with pytest.raises(CoreArgumentError, match="eps must be in"):
        bs.forest.root_noise(0, np.ones(k), 1.5)
    with pytest.raises(SearchStateError):
        bs.forest.root_noise(0, np.ones(k + 1), 0.25)  # not one per root edge
    bs._waves(np.zeros(1, np.int32), 8, None)  # children made: too late for noise
    with pytest.raises(SearchStateError):
        bs.forest.root_noise(0, np.ones(k), 0.25)
