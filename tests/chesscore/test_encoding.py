import random

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore.encoding import GameHistory, encode_boards, encode_rows


def planes(board):
    x = encode_boards([board])
    assert x.shape == (1, 112, 8, 8) and x.dtype == np.float32
    return x[0]


def sq(square):
    """(row, col) of a canonical square in a plane."""
    return divmod(square, 8)


def test_start_position_white():
    x = planes(chess.Board())
    assert x[0].sum() == 8 and x[0][1].tolist() == [1.0] * 8  # our pawns on rank 2
    assert x[5][sq(chess.E1)] == 1 and x[5].sum() == 1  # our king e1
    assert x[6][6].tolist() == [1.0] * 8  # their pawns on rank 7
    assert x[11][sq(chess.E8)] == 1
    assert x[13:104].sum() == 0  # no history: zero-filled
    assert (x[104:108] == 1).all()  # all castling rights
    assert x[108].sum() == 0 and x[109].sum() == 0 and x[110].sum() == 0 and (x[111] == 1).all()


def test_black_to_move_is_mirrored_and_history_in_movers_frame():
    b = chess.Board()
    b.push_san("e4")
    x = planes(b)
    assert x[0][1].tolist() == [1.0] * 8  # Black's pawns, mirrored onto rank 2
    assert x[5][sq(chess.E1)] == 1  # Black's king e8 → e1
    # their (White's) pawn on e4 appears on e5 after the mirror
    assert x[6][sq(chess.E5)] == 1 and x[6][sq(chess.E2 ^ 56)] == 0
    # history step 1 (before 1. e4), still from Black's view: White's e-pawn on e2 → e7
    assert x[13 + 6][sq(chess.E7)] == 1
    assert (x[108] == 1).all()


def test_castling_rights_we_and_they():
    b = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1")
    x = planes(b)
    assert [x[p, 0, 0] for p in range(104, 108)] == [0, 1, 1, 0]  # we O-O-O, we O-O, they O-O-O, they O-O
    b = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1")
    x = planes(b)
    assert [x[p, 0, 0] for p in range(104, 108)] == [1, 0, 0, 1]


def test_en_passant_position_and_rule50():
    b = chess.Board("4k3/8/8/8/4p3/8/3P4/4K3 w - - 37 60")
    b.push_uci("d2d4")  # Black can take en passant; rule-50 reset by the pawn move
    x = planes(b)
    assert x[109, 0, 0] == 0
    b = chess.Board("4k3/8/8/8/8/8/8/4K2R w - - 37 60")
    assert planes(b)[109, 3, 3] == 37  # raw ply count, as Lc0 classic


def test_repetition_plane():
    b = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:  # back to the start position
        b.push_uci(uci)
    x = planes(b)
    assert (x[12] == 1).all()  # current position seen before
    assert x[13 + 12].sum() == 0 and x[4 * 13 + 12].sum() == 0  # the start itself (4 plies ago) was new


def test_short_history_from_fen_repeats_earliest_position():
    b = chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1")
    b.push_uci("h1h2")
    x = planes(b)
    # two real positions, then the earliest (the FEN) repeated in steps 2..7, as Lc0 does
    for h in range(2, 8):
        np.testing.assert_array_equal(x[13 * h : 13 * h + 13], x[13:26])
    # from the standard start the missing history stays zero
    s = chess.Board()
    s.push_uci("e2e4")
    assert planes(s)[26:104].sum() == 0


def test_ring_buffer_equals_generic_path():
    rng = random.Random(7)
    for _ in range(20):
        b = chess.Board()
        h = GameHistory(b)
        for _ in range(rng.randint(1, 120)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
            h.push(b)
        np.testing.assert_array_equal(encode_rows([h.row(b)]), encode_boards([b]))
        h2 = GameHistory(b)  # reset from a board mid-game
        np.testing.assert_array_equal(encode_rows([h2.row(b)]), encode_boards([b]))


def test_out_buffer_is_fully_overwritten_and_checked():
    boards = [chess.Board(), chess.Board("4k3/8/8/8/8/8/8/4K2R b K - 5 9")]
    out = np.full((2, 112, 8, 8), 7.0, dtype=np.float32)
    from pdx_lightning.chesscore.encoding import row_from_board

    encode_rows([row_from_board(b) for b in boards], out=out)
    np.testing.assert_array_equal(out, encode_boards(boards))
    with pytest.raises(ValueError, match="out buffer"):
        encode_rows([row_from_board(boards[0])], out=out)
