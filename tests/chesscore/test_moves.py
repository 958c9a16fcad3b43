import random

import chess
import pytest
import torch

from pdx_lightning.chesscore.moves import (
    N_FROM_TO,
    POLICY_SIZE,
    MoveIndexError,
    index_to_move,
    legal_indices,
    legal_mask,
    move_to_index,
)


def _random_positions(n_games: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n_games):
        b = chess.Board()
        for _ in range(rng.randint(0, 160)):
            moves = list(b.legal_moves)
            if not moves:
                break
            yield b
            b.push(rng.choice(moves))


def test_round_trip_random_games_both_colors():
    seen = {"white": 0, "black": 0, "castle": 0, "ep": 0}
    for b in _random_positions(120, seed=0):
        idx = legal_indices(b)
        assert len(set(idx.tolist())) == len(idx), "two legal moves share a policy slot"
        for m, i in zip(b.legal_moves, idx):
            assert index_to_move(int(i), b) == m
            seen["castle"] += b.is_castling(m)
            seen["ep"] += b.is_en_passant(m)
        seen["white" if b.turn else "black"] += 1
    assert min(seen.values()) > 0, seen


@pytest.mark.parametrize(
    "fen,turn",
    [
        ("8/P6k/8/8/8/8/7K/8 w - - 0 1", chess.WHITE),
        ("8/7K/8/8/8/8/p6k/8 b - - 0 1", chess.BLACK),
        ("1n6/P6k/8/8/8/8/7K/8 w - - 0 1", chess.WHITE),
    ],
)
def test_every_promotion_piece_round_trips(fen, turn):
    b = chess.Board(fen)
    assert b.turn == turn
    promos = [m for m in b.legal_moves if m.promotion]
    assert {m.promotion for m in promos} == {chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT}
    idx = [move_to_index(m, b.turn) for m in promos]
    assert len(set(idx)) == len(idx)
    for m, i in zip(promos, idx):
        assert index_to_move(i, b) == m
        # knight promotion shares the plain from-to slot (Lc0 layout); the others are in the tail
        assert (i < N_FROM_TO) == (m.promotion == chess.KNIGHT)


def test_canonical_frame_mirrors_black():
    # 1. e4 for White and 1... e5 for Black are the same canonical move e2e4
    assert (
        move_to_index(chess.Move.from_uci("e2e4"), chess.WHITE)
        == move_to_index(chess.Move.from_uci("e7e5"), chess.BLACK)
        == chess.E2 * 64 + chess.E4
    )
    # a7a8q for White: from-file 0, to-file 0, queen slot 0
    assert move_to_index(chess.Move.from_uci("a7a8q"), chess.WHITE) == N_FROM_TO
    assert move_to_index(chess.Move.from_uci("h2g1b"), chess.BLACK) == N_FROM_TO + 7 * 24 + 6 * 3 + 2


def test_bad_indices_and_moves_are_named_errors():
    with pytest.raises(MoveIndexError):
        index_to_move(POLICY_SIZE, chess.Board())
    with pytest.raises(MoveIndexError):
        move_to_index(chess.Move.from_uci("a2a4q"), chess.WHITE)


def test_legal_mask_batched_matches_per_board():
    boards = list(_random_positions(5, seed=3))[:64]
    mask = legal_mask(boards)
    assert mask.shape == (len(boards), POLICY_SIZE) and mask.dtype == torch.bool
    for row, b in zip(mask, boards):
        assert row.sum().item() == b.legal_moves.count()
        assert set(torch.nonzero(row).flatten().tolist()) == set(legal_indices(b).tolist())


def test_indices_mask_is_the_one_mask_builder():
    from pdx_lightning.chesscore.moves import indices_mask

    boards = [
        chess.Board(),
        chess.Board("k7/2K5/8/8/8/8/8/1Q6 b - - 0 1"),
        chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"),
    ]  # the last one is stalemate
    idx = [legal_indices(b) for b in boards]
    mask = indices_mask(idx)
    assert mask.shape == (3, POLICY_SIZE) and mask.dtype == torch.bool
    assert mask.sum(1).tolist() == [20, len(idx[1]), 0]  # the stalemated board has an all-False row
    for row, ix in zip(mask, idx):
        assert set(torch.nonzero(row).flatten().tolist()) == set(ix.tolist())
    assert torch.equal(legal_mask(boards, [list(b.legal_moves) for b in boards]), mask)
    assert indices_mask([]).shape == (0, POLICY_SIZE)
