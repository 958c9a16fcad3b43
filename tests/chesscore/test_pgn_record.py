"""The one PGN builder of the arena and the self-play callback: tags, their order, comments (hand-written)."""

from __future__ import annotations

import datetime

import chess

from pdx_lightning.chesscore.pgn_record import game_pgn


def _today() -> str:
    return datetime.date.today().strftime("%Y.%m.%d")


def test_a_game_from_a_set_up_position_with_its_comments():
    root = chess.Board()
    root.push_uci("e2e4")  # the builder starts from the position, not from the root's own history
    moves = [chess.Move.from_uci("e7e5"), chess.Move.from_uci("g1f3")]
    game = game_pgn(
        root,
        moves,
        event="pdx arena",
        round="1.2",
        white="a",
        black="b",
        result="1/2-1/2",
        termination="adjudication",
        tags={"Opening": "x"},
        comment="opening x: e2e4",
        end_comment="adjudication: value heads agree on a draw",
    )
    assert str(game) == (
        '[Event "pdx arena"]\n[Site "pdx_lightning"]\n'
        f'[Date "{_today()}"]\n'
        '[Round "1.2"]\n[White "a"]\n[Black "b"]\n[Result "1/2-1/2"]\n'
        '[FEN "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]\n[SetUp "1"]\n'
        '[Termination "adjudication"]\n[PlyCount "2"]\n[Opening "x"]\n\n'
        "{ opening x: e2e4 } 1... e5 2. Nf3 { adjudication: value heads agree on a draw } 1/2-1/2"
    )


def test_a_game_from_the_start_has_no_fen_and_the_rule_on_its_last_move():
    board = chess.Board()
    for uci in ["f2f3", "e7e5", "g2g4", "d8h4"]:
        board.push_uci(uci)
    game = game_pgn(
        board.root(),
        board.move_stack,
        event="pdx self-play",
        round="7",
        white="online",
        black="online",
        result="0-1",
        termination="normal",
        tags={"Rank": "0"},
        end_comment="checkmate",
    )
    assert str(game) == (
        '[Event "pdx self-play"]\n[Site "pdx_lightning"]\n'
        f'[Date "{_today()}"]\n'
        '[Round "7"]\n[White "online"]\n[Black "online"]\n[Result "0-1"]\n'
        '[Termination "normal"]\n[PlyCount "4"]\n[Rank "0"]\n\n'
        "1. f3 e5 2. g4 Qh4# { checkmate } 0-1"
    )


def test_without_moves_the_end_comment_is_the_game_comment():
    game = game_pgn(
        chess.Board(),
        [],
        event="e",
        round="1",
        white="a",
        black="b",
        result="1/2-1/2",
        termination="normal",
        comment="opening o",
        end_comment="stalemate",
    )
    assert game.comment == "stalemate" and game.headers["PlyCount"] == "0"
    assert str(game).endswith('[PlyCount "0"]\n\n{ stalemate } 1/2-1/2')
