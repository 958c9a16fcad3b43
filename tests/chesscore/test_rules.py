"""chess.rules against python-chess: every reason, both colours, the en-passant repetition rule,
the ply cap, claims on and off, the result type and its PGN strings."""

from __future__ import annotations

import random

import chess
import pytest

from pdx_lightning.chesscore.encoding import GameHistory, row_from_board
from pdx_lightning.chesscore.rules import (
    DRAW,
    LOSS,
    WIN,
    GameResult,
    GameResultError,
    Reason,
    game_end,
    legal_ep_square,
    ply_cap_reached,
    repetition_count,
    repetition_key,
    stack_repetition_key,
)
from tests.helpers import result_of_outcome, result_of_pgn

SHUFFLE = "g1f3 g8f6 f3g1 f6g8"
BLACK_SHUFFLE = "g8f6 g1f3 f6g8 f3g1"


def push(board: chess.Board, ucis: str) -> chess.Board:
    for u in ucis.split():
        board.push_uci(u)
    return board


def python_chess_end(board: chess.Board, claim_draws: bool) -> GameResult | None:
    """The expected result from python-chess's own primitives (claims of the position on the board)."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return result_of_outcome(outcome)
    if claim_draws and board.is_fifty_moves():
        return GameResult(None, Reason.FIFTY_MOVES)
    if claim_draws and board.is_repetition(3):
        return GameResult(None, Reason.THREEFOLD)
    return None


def python_chess_count(board: chess.Board) -> int:
    return max(n for n in range(1, 7) if board.is_repetition(n))


# ---------------------------------------------------------------- each reason, both colours


@pytest.mark.parametrize(
    "fen, moves, winner",
    [
        ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8", chess.WHITE),  # back-rank mate by White
        (chess.STARTING_FEN, "f2f3 e7e5 g2g4 d8h4", chess.BLACK),  # fool's mate by Black
    ],
)
def test_checkmate_either_colour(fen, moves, winner):
    b = push(chess.Board(fen), moves)
    end = game_end(b)
    assert end == GameResult(winner, Reason.CHECKMATE) == result_of_outcome(b.outcome())
    assert end.pgn_result == b.outcome().result() and end.termination == "normal"
    assert end.wdl_for(not b.turn) == WIN and end.wdl_for(b.turn) == LOSS
    assert game_end(b, legal=[]) == end  # a cached (empty) legal list is enough


@pytest.mark.parametrize(
    "fen, move",
    [
        ("k7/2K5/8/8/8/8/8/1Q6 w - - 0 1", "b1b6"),  # Black stalemated
        ("1q6/8/8/8/8/8/2k5/K7 b - - 0 1", "b8b3"),  # White stalemated
    ],
)
def test_stalemate_either_colour(fen, move):
    b = push(chess.Board(fen), move)
    assert b.is_stalemate()
    assert game_end(b) == GameResult(None, Reason.STALEMATE) == result_of_outcome(b.outcome())


def test_insufficient_material_precedes_stalemate_as_in_python_chess():
    kk = chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")
    assert game_end(kk).reason == Reason.INSUFFICIENT_MATERIAL
    knight = chess.Board("8/8/4k3/8/8/3K4/8/6n1 b - - 0 1")
    assert game_end(knight).reason == Reason.INSUFFICIENT_MATERIAL
    stale = chess.Board("k7/2K5/1B6/8/8/8/8/8 b - - 0 1")  # stalemated *and* K+B v K
    assert stale.is_stalemate()
    want = GameResult(None, Reason.INSUFFICIENT_MATERIAL)
    assert game_end(stale) == result_of_outcome(stale.outcome()) == want
    assert game_end(chess.Board("8/8/4k3/8/8/3K4/4R3/8 w - - 0 1")) is None  # a rook mates


@pytest.mark.parametrize("turn", ["w", "b"])
def test_seventy_five_and_fifty_move_rules(turn):
    rook = "8/8/4k3/8/8/3K4/4R3/8" if turn == "w" else "8/4r3/4k3/8/8/3K4/8/8"
    move = "e2e1" if turn == "w" else "e7e8"
    at99 = chess.Board(f"{rook} {turn} - - 99 80")
    assert at99.can_claim_fifty_moves() and game_end(at99, claim_draws=True) is None  # no claim by a move
    b = push(at99.copy(), move)
    assert game_end(b, claim_draws=False) is None
    assert game_end(b, claim_draws=True) == GameResult(None, Reason.FIFTY_MOVES)
    assert game_end(b, claim_draws=True).text == "50-move rule"
    b = push(chess.Board(f"{rook} {turn} - - 149 80"), move)
    for claim in (False, True):
        assert game_end(b, claim_draws=claim) == GameResult(None, Reason.SEVENTY_FIVE_MOVES)
    assert result_of_outcome(b.outcome()).reason == Reason.SEVENTY_FIVE_MOVES


def test_mate_on_the_75th_move_is_a_mate():
    b = push(chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 149 80"), "a1a8")
    assert b.halfmove_clock == 150 and game_end(b).reason == Reason.CHECKMATE


def test_threefold_claim_on_off_and_fivefold_automatic():
    b = push(chess.Board(), f"{SHUFFLE} g1f3 g8f6 f3g1")
    # python-chess would let Black claim by announcing f6g8; the rule here claims only the board
    assert b.can_claim_threefold_repetition() and not b.is_repetition(3)
    assert game_end(b, claim_draws=True) is None
    push(b, "f6g8")  # the start position for the third time
    assert b.is_repetition(3) and repetition_count(b) == 3
    assert game_end(b, claim_draws=False) is None
    assert game_end(b, claim_draws=True) == GameResult(None, Reason.THREEFOLD)
    push(b, f"{SHUFFLE} {SHUFFLE}")
    assert b.is_fivefold_repetition() and repetition_count(b) == 5
    for claim in (False, True):
        assert game_end(b, claim_draws=claim) == GameResult(None, Reason.FIVEFOLD)


def test_threefold_with_black_to_move():
    b = push(chess.Board(), f"e2e4 {BLACK_SHUFFLE} {BLACK_SHUFFLE}")  # Black to move after e4, three times
    assert b.turn == chess.BLACK and b.is_repetition(3)
    assert game_end(b, claim_draws=True).reason == Reason.THREEFOLD


def test_ply_cap_counts_from_the_standard_start_and_rules_come_first():
    b = push(chess.Board(), "g1f3 g8f6 f3g1")
    assert game_end(b, max_plies=4) is None
    end = game_end(b, max_plies=3)
    assert end == GameResult(None, Reason.PLY_CAP, "3-ply cap")
    assert end.text == "3-ply cap" and end.termination == "adjudication" and end.pgn_result == "1/2-1/2"
    fen = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 10")  # ply 19 (fullmove 10, Black to move)
    assert fen.ply() == 19 and ply_cap_reached(fen, 19) and not ply_cap_reached(fen, 20)
    assert game_end(fen, max_plies=19).reason == Reason.PLY_CAP
    mate = push(chess.Board(), "f2f3 e7e5 g2g4 d8h4")
    assert game_end(mate, max_plies=4).reason == Reason.CHECKMATE


# ---------------------------------------------------------------- the en-passant part of the key

# White plays e2e4 next to Black's d4 pawn. Pinned: capturing d4xe3 e.p. would empty the 4th rank
# between the black king on a4 and the rook on h4, so the capture is illegal. Free: the rook is on h5.
PINNED = "6n1/8/8/8/k2p3R/8/4P3/6NK w - - 0 1"
FREE = "6n1/8/8/7R/k2p4/8/4P3/6NK w - - 0 1"


def test_ep_square_counts_only_when_an_ep_capture_is_legal():
    pinned, free = push(chess.Board(PINNED), "e2e4"), push(chess.Board(FREE), "e2e4")
    assert pinned.ep_square == free.ep_square == chess.E3  # python-chess stores it either way
    assert pinned.has_pseudo_legal_en_passant() and not pinned.has_legal_en_passant()
    assert legal_ep_square(pinned) is None and legal_ep_square(free) == chess.E3
    plain = push(chess.Board(), "e2e4")  # nobody next to the pawn
    assert legal_ep_square(plain) is None
    for b in (pinned, free, plain):
        assert repetition_key(b) == b._transposition_key()


@pytest.mark.parametrize("fen, third_at", [(PINNED, 9), (FREE, 10)])
def test_repetition_after_a_double_push_follows_the_legal_ep_rule(fen, third_at):
    """After e2e4 the knights shuffle. With a pinned capturer the position after e2e4 (ply 1) recurs at
    plies 5 and 9: its e.p. square does not count. With a legal capture it never recurs, and the first
    position to occur three times is the one after Black's first knight move (plies 2, 6, 10). A
    pseudo-legal e.p. rule would say ply 10 for both."""
    b = chess.Board(fen)
    hist = GameHistory(b)
    first_threefold = None
    for k, u in enumerate(f"e2e4 {BLACK_SHUFFLE} {BLACK_SHUFFLE} {BLACK_SHUFFLE}".split(), 1):
        b.push_uci(u)
        hist.push(b)
        assert repetition_count(b) == hist.repetitions() == python_chess_count(b)
        assert game_end(b, claim_draws=True) == python_chess_end(b, True)
        assert row_from_board(b).rep[0] == b.is_repetition(2)  # the encoder's repetition plane, same rule
        if first_threefold is None and game_end(b, claim_draws=True):
            first_threefold = k
    assert first_threefold == third_at


def test_stack_keys_equal_python_chess_keys_when_popped_back():
    for fen, moves in (
        (PINNED, f"e2e4 {BLACK_SHUFFLE}"),
        (FREE, f"e2e4 {BLACK_SHUFFLE}"),
        (chess.STARTING_FEN, "e2e4 d7d5 e4e5 f7f5 g1f3 g8f6 e1e2"),
    ):
        b = push(chess.Board(fen), moves)
        keys = [stack_repetition_key(b, p) for p in range(len(b.move_stack))]
        replay = chess.Board(fen)
        for p, move in enumerate(b.move_stack):
            assert keys[p] == replay._transposition_key(), (fen, p)
            replay.push(move)


# ---------------------------------------------------------------- random games against python-chess


def _games(seed: int, n: int, plies: int):
    """Random games from sparse positions (many reversible moves: repetitions, 50/75-move counts)."""
    rng = random.Random(seed)
    starts = [
        "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
        "r3k3/8/8/8/8/8/8/4K2R b Kq - 90 1",
        "4k3/3p4/8/4P3/8/8/8/4K3 b - - 0 1",
        chess.STARTING_FEN,
    ]
    for g in range(n):
        b = chess.Board(starts[g % len(starts)])
        hist = GameHistory(b)
        for _ in range(plies):
            yield b, hist
            legal = list(b.legal_moves)
            if not legal:
                break
            quiet = [m for m in legal if not b.is_zeroing(m)]
            move = rng.choice(quiet if quiet and rng.random() < 0.9 else legal)
            if len(b.move_stack) >= 2 and rng.random() < 0.5:  # often undo one's own last move: repetitions
                last = b.move_stack[-2]
                back = chess.Move(last.to_square, last.from_square)
                move = back if back in quiet else move
            b.push(move)
            hist.push(b)


def test_random_games_agree_with_python_chess():
    seen: set[Reason] = set()
    for b, hist in _games(seed=0, n=12, plies=220):
        legal = list(b.legal_moves)
        assert repetition_key(b) == b._transposition_key()
        count = repetition_count(b)
        assert count == hist.repetitions() == python_chess_count(b)
        for claim in (False, True):
            want = python_chess_end(b, claim)
            assert game_end(b, claim_draws=claim) == want
            assert game_end(b, legal=legal, repetitions=count, claim_draws=claim) == want
            if want:
                seen.add(want.reason)
    # the games reach these rules (else the test would check little)
    assert {Reason.THREEFOLD, Reason.FIFTY_MOVES, Reason.FIVEFOLD} <= seen


# ---------------------------------------------------------------- the result type


def test_result_type_and_pgn_strings():
    cases = {"1-0": chess.WHITE, "0-1": chess.BLACK, "1/2-1/2": None}
    for pgn, winner in cases.items():
        reason = Reason.ADJUDICATION if winner is not None else Reason.STALEMATE
        r = result_of_pgn(pgn, reason)
        assert r.winner == winner and r.pgn_result == pgn and r.is_draw == (winner is None)
        assert str(r).startswith(pgn)
    white = GameResult(chess.WHITE, Reason.CHECKMATE)
    assert (white.score_for(chess.WHITE), white.score_for(chess.BLACK)) == (1.0, 0.0)
    assert (white.wdl_for(chess.WHITE), white.wdl_for(chess.BLACK)) == (WIN, LOSS)
    draw = GameResult(None, Reason.THREEFOLD)
    assert draw.score_for(chess.WHITE) == draw.score_for(chess.BLACK) == 0.5
    assert draw.wdl_for(chess.BLACK) == DRAW and draw.text == "threefold repetition"
    adj = GameResult(chess.BLACK, Reason.ADJUDICATION, "adjudication: value heads agree Black wins")
    assert adj.termination == "adjudication" and adj.text.endswith("Black wins") and adj.pgn_result == "0-1"
    assert {r.termination for r in (white, draw)} == {"normal"}
    with pytest.raises(GameResultError, match="checkmate has a winner"):
        GameResult(None, Reason.CHECKMATE)
    with pytest.raises(GameResultError, match="stalemate is a draw"):
        GameResult(chess.WHITE, Reason.STALEMATE)
    with pytest.raises(GameResultError, match="rules.Reason"):
        GameResult(None, "stalemate")
