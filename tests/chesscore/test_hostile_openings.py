"""Hostile opening files (EPD/FEN/UCI lines, PGN): streamed with bounds, refused by name (issue 20)."""

from __future__ import annotations

import pytest

from hostile_files import GiB, baseline_peak_mb, refusal_peak_mb
from pdx_lightning.chesscore.opening_files import (
    OpeningFormatError,
    OpeningLimitError,
    load_openings,
    read_opening_lines,
)
from pdx_lightning.errors import UserError

IMPORTS = "from pdx_lightning.chesscore.opening_files import load_openings, OpeningFormatError"
SHUFFLE = "Nf3 Nf6 Ng1 Ng8 "  # legal forever: a game of any length


@pytest.fixture(scope="module")
def baseline() -> float:
    return baseline_peak_mb(IMPORTS)


@pytest.mark.parametrize("name", ["huge.epd", "huge.pgn"])
def test_a_giant_line_is_refused_without_reading_it(tmp_path, baseline, name):
    p = tmp_path / name
    with open(p, "wb") as f:  # 1 GiB of NULs without a line end (sparse)
        f.write(b"e2e4 e7e5\n" if name.endswith(".epd") else b'[Event "x"]\n')
        f.truncate(GiB)
    peak, msg = refusal_peak_mb(f"load_openings({str(p)!r})", "OpeningFormatError", imports=IMPORTS)
    assert f"{name}:2: a line longer than 65,536 characters" in msg and "PDX_MAX_LINE_BYTES=128K" in msg
    assert peak - baseline < 48, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_a_pgn_game_past_the_game_bound_is_refused(tmp_path, monkeypatch):
    p = tmp_path / "long.pgn"
    movetext = "\n".join([SHUFFLE * 4] * 1250)  # 80 KB of movetext, 20,000 plies
    p.write_text('[Event "ok"]\n\n1. e4 e5 *\n\n[Event "long"]\n\n' + movetext + " *\n")
    monkeypatch.setenv("PDX_MAX_PGN_GAME_BYTES", "64K")
    with pytest.raises(
        OpeningLimitError,
        match=r"long.pgn:5: a PGN game longer than 65,536 characters "
        r"\(limit 64.0 KiB\).*PDX_MAX_PGN_GAME_BYTES=128K",
    ):
        load_openings(p)
    monkeypatch.setenv("PDX_MAX_PGN_GAME_BYTES", "1M")
    monkeypatch.setenv("PDX_MAX_OPENING_PLIES", "5000")  # the move budget stops the parse mid-game
    with pytest.raises(
        OpeningLimitError,
        match=r"long.pgn:5: the file holds more than 5,000 moves.*"
        r"PDX_MAX_OPENING_PLIES=10000",
    ):
        load_openings(p)
    monkeypatch.delenv("PDX_MAX_OPENING_PLIES")
    openings = load_openings(p)
    assert [len(o.board.move_stack) for o in openings] == [2, 20_000]


def test_opening_and_move_counts_are_bounded(tmp_path, monkeypatch):
    p = tmp_path / "many.epd"
    p.write_text("# a comment\n" + "e2e4 e7e5\n" * 11)
    monkeypatch.setenv("PDX_MAX_OPENINGS", "10")
    with pytest.raises(
        OpeningLimitError,
        match=r"many.epd:12: the file holds more than 10 openings.*"
        r"PDX_MAX_OPENINGS=20",
    ) as e:
        read_opening_lines(p)
    assert isinstance(e.value, OpeningFormatError) and isinstance(e.value, UserError)
    monkeypatch.setenv("PDX_MAX_OPENINGS", "11")
    assert len(load_openings(p)) == 11
    monkeypatch.setenv("PDX_MAX_OPENING_PLIES", "21")
    with pytest.raises(OpeningLimitError, match=r"many.epd:12: the file holds more than 21 moves"):
        load_openings(p)


def test_pgn_game_lines_are_reported_where_the_game_starts(tmp_path):
    p = tmp_path / "g.pgn"
    p.write_text('\n\n[Event "a"]\n\n1. e4 e5 *\n\n\n[Event "b"]\n\n1. e4 e5 2. Qxf8 *\n')
    with pytest.raises(OpeningFormatError, match=r"g.pgn:8: PGN game 2: illegal san: 'Qxf8'"):
        load_openings(p)
