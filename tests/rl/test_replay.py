"""The replay buffer of searched self-play: reuse, the ring, the samplers, the targets, checkpoints."""

from __future__ import annotations

import io

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.boundary import MAX_MOVES
from pdx_lightning.chesscore.encoding import encode_boards, pack_planes
from pdx_lightning.chesscore.moves import legal_indices
from pdx_lightning.rl.replay import Positions, ReplayBuffer


def rows(n: int, surprise=None, result=None, start: int = 0) -> Positions:
    packed = np.repeat(pack_planes(encode_boards([chess.Board()])), n, axis=0)
    packed[:, 99] = np.arange(start, start + n)  # the rule-50 word tells rows apart
    legal = np.full((n, MAX_MOVES), -1, np.int16)
    legal[:, :3] = [5, 9, 700]
    visits = np.zeros((n, MAX_MOVES), np.float32)
    visits[:, :3] = [0.5, 0.25, 0.25]
    res = np.zeros(n, np.int8) if result is None else np.asarray(result, np.int8)
    wdl = np.tile(np.array([0.2, 0.5, 0.3], np.float32), (n, 1))
    s = np.ones(n, np.float32) if surprise is None else np.asarray(surprise, np.float32)
    return Positions(packed, legal, visits, res, wdl, s)


def ids(buf: ReplayBuffer, r: np.ndarray) -> list[int]:
    return sorted(int(x) for x in buf.rows.packed[r, 99])


def test_every_position_is_presented_exactly_reuse_times_then_leaves():
    buf = ReplayBuffer(capacity=32, reuse=3, seed=1)
    buf.add(rows(10))
    seen: dict[int, int] = {}
    while len(buf):
        for i in ids(buf, buf.draw(4)):
            seen[i] = seen.get(i, 0) + 1
    assert seen == dict.fromkeys(range(10), 3) and buf.presented == 30 and buf.admitted == 10


def test_the_ring_overwrites_the_oldest_and_counts_it():
    buf = ReplayBuffer(capacity=4, reuse=2)
    buf.add(rows(3, start=0))
    buf.add(rows(3, start=3))
    assert len(buf) == 4 and buf.overwritten == 2 and buf.admitted == 6
    assert ids(buf, np.flatnonzero(buf.live)) == [2, 3, 4, 5]
    buf.add(rows(9, start=10))  # more than the capacity: its last rows
    assert ids(buf, np.flatnonzero(buf.live)) == [15, 16, 17, 18] and buf.admitted == 15


def test_surprise_weights_are_capped_relative_to_the_mean():
    buf = ReplayBuffer(capacity=8, sampling="surprise", surprise_cap=2.0)
    buf.add(rows(3, surprise=[1.0, 1.0, 4.0]))  # mean 2: weights 0.5, 0.5, min(2, 2) -> 1/6, 1/6, 4/6
    np.testing.assert_allclose(buf._weights(np.flatnonzero(buf.live)), [1 / 6, 1 / 6, 4 / 6])


def test_surprise_sampling_prefers_surprising_rows():
    buf = ReplayBuffer(capacity=64, reuse=10**6, sampling="surprise", surprise_share=1.0, seed=3)
    buf.add(rows(20, surprise=[0.01] * 10 + [1.0] * 10))
    counts = np.zeros(20)
    for _ in range(400):
        for i in ids(buf, buf.draw(2)):
            counts[i] += 1
    assert counts[10:].sum() > 3 * counts[:10].sum()


def test_batch_targets_by_hand():
    buf = ReplayBuffer(capacity=8, value_mix=0.25)
    buf.add(rows(3, result=[0, 2, -1]))  # win, loss, cut at the ply cap
    b = buf.batch(np.arange(3))
    assert b.mask.sum(1).tolist() == [3, 3, 3] and b.mask[0, [5, 9, 700]].all()
    assert torch.allclose(b.target[0, [5, 9, 700]], torch.tensor([0.5, 0.25, 0.25]))
    search = torch.tensor([0.2, 0.5, 0.3])
    assert torch.allclose(b.wdl_target[0], 0.75 * torch.tensor([1.0, 0, 0]) + 0.25 * search)
    assert torch.allclose(b.wdl_target[1], 0.75 * torch.tensor([0, 0, 1.0]) + 0.25 * search)
    assert torch.allclose(b.wdl_target[2], search)  # cut: the search's W/D/L
    assert b.planes.shape == (3, 112, 8, 8)


@pytest.mark.parametrize("sampling", ["uniform", "surprise"])
def test_a_restored_buffer_draws_what_the_original_draws(sampling):
    a = ReplayBuffer(capacity=16, reuse=2, sampling=sampling, seed=5)
    a.add(rows(12, surprise=np.linspace(0.1, 2, 12)))
    a.draw(5)
    blob = io.BytesIO()
    torch.save(a.state_dict(), blob)
    blob.seek(0)
    b = ReplayBuffer(capacity=16, reuse=2, sampling=sampling, seed=99)
    b.load_state_dict(torch.load(blob, weights_only=True))
    for _ in range(4):
        assert ids(a, a.draw(3)) == ids(b, b.draw(3))
    assert (a.admitted, a.presented, len(a)) == (b.admitted, b.presented, len(b))
    with pytest.raises(ValueError, match="capacity"):
        ReplayBuffer(capacity=8).load_state_dict(a.state_dict())


def test_rows_hold_every_legal_move_and_a_narrower_checkpoint_loads():
    """Rows are ``MAX_MOVES`` wide (the one move cap): a board set up with 236 legal moves (above the 218 of
    reachable positions) is stored whole; a checkpoint written when rows held 218 columns loads, padded."""
    board = chess.Board("kn2Q1Q1/nnQQ4/Q4Q1Q/2Q4Q/4Q3/1Q4Q1/3Q4/Q4QK1 w - - 0 1")
    r = rows(2)
    r.legal[1], r.visits[1] = -1, 0.0
    r.legal[1, :236], r.visits[1, :236] = legal_indices(board, list(board.legal_moves)), 1 / 236
    buf = ReplayBuffer(capacity=4)
    buf.add(r)
    assert buf.batch(np.array([0, 1])).mask.sum(1).tolist() == [3, 236]
    old = ReplayBuffer(capacity=4)
    old.add(rows(3))
    state = old.state_dict()
    state["legal"], state["visits"] = state["legal"][:, :218], state["visits"][:, :218]
    new = ReplayBuffer(capacity=4)
    new.load_state_dict(state)
    for f in ("legal", "visits"):
        np.testing.assert_array_equal(getattr(new.rows, f), getattr(old.rows, f))
