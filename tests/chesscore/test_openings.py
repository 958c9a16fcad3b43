"""chess.openings: one reader for EPD / FEN / UCI lines and PGN books, errors naming file:line."""

from __future__ import annotations

import chess
import pytest

from pdx_lightning.chesscore import opening_files as openings
from pdx_lightning.chesscore.opening_files import (
    DEFAULT_SUITE,
    OpeningFormatError,
    load_openings,
    parse_line,
    read_opening_lines,
)

START_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -"


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_text_file_with_uci_epd_and_fen_lines(tmp_path):
    path = write(
        tmp_path,
        "mix.epd",
        "\n".join(
            [
                "# a comment, then a blank line",
                "",
                "e2e4 e7e5 g1f3",
                f'{START_E4} id "king-pawn"; c0 "e2e4"; ce 35;',
                f"{START_E4} 0 1",
                "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
            ]
        )
        + "\n",
    )
    uci, epd, fen, castle = load_openings(path)
    assert uci.line == ("e2e4", "e7e5", "g1f3") and len(uci.board.move_stack) == 3 and uci.id == "mix:3"
    assert uci.board.root() == chess.Board() and uci.root_fen == chess.STARTING_FEN
    assert (epd.id, epd.line, epd.eval_cp) == ("king-pawn", ("e2e4",), 35)
    assert epd.board.move_stack == [chess.Move.from_uci("e2e4")]
    assert fen.line == () and not fen.board.move_stack and fen.root_fen == fen.board.fen()
    assert castle.board.has_castling_rights(chess.WHITE) and castle.id == "mix:6"
    # self-play needs lines from the start: the plain FEN has none
    with pytest.raises(OpeningFormatError, match=r"mix.epd:5: no line from the standard start"):
        read_opening_lines(path)
    path.write_text("e2e4 e7e5 g1f3\n" + f'{START_E4} c0 "e2e4";\n')
    assert read_opening_lines(path) == [["e2e4", "e7e5", "g1f3"], ["e2e4"]]


def test_castling_is_normalized_to_the_kings_move():
    o = parse_line("e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 e1h1")  # king takes rook
    assert o.line[-1] == "e1g1" and o.board.piece_at(chess.G1) == chess.Piece.from_symbol("K")


@pytest.mark.parametrize(
    "text, message",
    [
        ("e2e4 e7e5 e1e3", r"bad.epd:2: move 3 'e1e3' is illegal"),
        (f'{START_E4} c0 "e2e5";', r"bad.epd:2: c0 move 1 'e2e5' is illegal"),
        (f'{START_E4} c0 "d2d4";', r"bad.epd:2: c0 line reaches"),
        ("8/8/8/8/8/8/8/8 w - -", r"bad.epd:2: invalid position"),
        ("hello world", r"bad.epd:2: not a FEN/EPD position"),
    ],
)
def test_bad_text_lines_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "bad.epd", f"e2e4\n{text}\n")
    with pytest.raises(OpeningFormatError, match=message):
        load_openings(path)
    with pytest.raises(OpeningFormatError, match=message):
        read_opening_lines(path)


def test_finished_lines_missing_and_empty_files(tmp_path):
    mate = write(tmp_path, "mate.txt", "d2d4\nf2f3 e7e5 g2g4 d8h4\n")
    assert len(load_openings(mate)) == 2  # the arena may start anywhere; a finished game ends at once
    with pytest.raises(OpeningFormatError, match=r"mate.txt:2: the line ends in a finished game"):
        read_opening_lines(mate)
    with pytest.raises(OpeningFormatError, match="not found"):
        load_openings(tmp_path / "nope.epd")
    with pytest.raises(OpeningFormatError, match=r"empty.epd: no openings"):
        read_opening_lines(write(tmp_path, "empty.epd", "# nothing\n\n"))
    binary = tmp_path / "binary.epd"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(OpeningFormatError, match="binary.epd: cannot read"):
        load_openings(binary)


PGN = """[Event "book"]
[Opening "Italian"]

1. e4 e5 2. Nf3 Nc6 3. Bc4 *

[Event "book"]

1. d4 d5 2. c4 *

[Event "from a position"]
[SetUp "1"]
[FEN "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]

1... c5 2. Nf3 *
"""


def test_pgn_book_end_positions_with_history(tmp_path):
    path = write(tmp_path, "book.pgn", PGN)
    italian, qgd, sicilian = load_openings(path)
    assert italian.id == "Italian" and italian.line == ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4")
    assert italian.board.fullmove_number == 3 and italian.board.turn == chess.BLACK
    assert qgd.id == "book:2" and qgd.line == ("d2d4", "d7d5", "c2c4")
    # set up from a FEN: history kept (the encoder sees it), no line from the standard start
    assert sicilian.line == () and [m.uci() for m in sicilian.board.move_stack] == ["c7c5", "g1f3"]
    assert sicilian.root_fen.startswith("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b")
    with pytest.raises(OpeningFormatError, match=r"book.pgn:10: no line from the standard start"):
        read_opening_lines(path)
    path.write_text(PGN.split('[Event "from a position"]')[0])
    assert read_opening_lines(path) == [list(italian.line), list(qgd.line)]


def test_bad_pgn_names_the_line_of_the_game(tmp_path):
    path = write(tmp_path, "bad.pgn", '[Event "ok"]\n\n1. e4 e5 *\n\n[Event "bad"]\n\n1. e4 e5 2. Ke3 *\n')
    with pytest.raises(OpeningFormatError, match=r"bad.pgn:5: PGN game 2: .*Ke3"):
        load_openings(path)
    path.write_text('[Event "x"]\n[SetUp "1"]\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n\n*\n')
    with pytest.raises(OpeningFormatError, match=r"bad.pgn:1: PGN game 1: invalid position"):
        load_openings(path)


def test_one_reader_for_arena_datagen_and_self_play():
    from pdx_lightning.datagen import opening_suite as datagen_openings
    from pdx_lightning.rl import selfplay

    for name in ("DEFAULT_SUITE", "Opening", "OpeningFormatError", "load_openings", "parse_opening"):
        assert getattr(datagen_openings, name) is getattr(openings, name)
    assert selfplay.read_opening_lines is openings.read_opening_lines
    suite = read_opening_lines(DEFAULT_SUITE)
    assert len(suite) == 200 and all(suite)
