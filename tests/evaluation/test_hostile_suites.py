"""Hostile puzzle suites (.csv, .csv.zst): streamed with bounds, refused by name (issue 20)."""

from __future__ import annotations

import pytest
import zstandard

from hostile_files import GiB, MiB, baseline_peak_mb, refusal_peak_mb, zstd_of_zeros
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation.suite import MAX_RECORD_LINES, PuzzleFormatError, SuiteLimitError, load_suite

IMPORTS = "from pdx_lightning.evaluation.suite import load_suite, PuzzleFormatError"
HEADER = "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n"
ROW = (
    "00008,r6k/pp2r2p/4Rp1Q/3p4/8/1N1P2R1/PqP2bPP/7K b - - 0 24,f2g3 e6e7 b2b1 b3c1 b1c1 h6c1,1852,75,97,"
    "6109,crushing hangingPiece long middlegame,https://lichess.org/787zsVup/black#48,\n"
)


@pytest.fixture(scope="module")
def baseline() -> float:
    return baseline_peak_mb(IMPORTS)


def _refused(path, env=None) -> tuple[float, str]:
    return refusal_peak_mb(f"load_suite({str(path)!r})", "PuzzleFormatError", env, IMPORTS)


def test_a_zstd_bomb_suite_is_refused_in_bounded_memory(tmp_path, baseline):
    for byte, name in ((b"\0", "zeros.csv.zst"), (b"\n", "newlines.csv.zst")):  # no line ends / blank lines
        bomb = zstd_of_zeros(tmp_path / name, GiB, byte, prefix=HEADER.encode())
        assert bomb.stat().st_size < MiB
        peak, msg = _refused(bomb)
        assert name in msg and ("a decompression bomb" in msg or "a line longer than" in msg), msg
        assert peak - baseline < 64, f"{name}: peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_a_giant_line_is_refused_without_reading_it(tmp_path, baseline):
    p = tmp_path / "sparse.csv"
    with open(p, "wb") as f:  # 1 GiB without a line end, no disk used
        f.write(HEADER.encode())
        f.truncate(GiB)
    peak, msg = _refused(p)
    assert "sparse.csv:2: a line longer than 65,536 characters" in msg and "PDX_MAX_LINE_BYTES=128K" in msg
    assert peak - baseline < 64, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_an_unclosed_quote_cannot_grow_one_record_without_bound(tmp_path):
    p = tmp_path / "quote.csv"
    p.write_text(HEADER + ROW + '00009,"' + "x,y\n" * (MAX_RECORD_LINES + 10))
    with pytest.raises(SuiteLimitError, match=r"quote.csv:\d+: one CSV record spans more than 64 lines"):
        load_suite(p, skip_bad=True)  # not skippable: the rest is unreadable


def test_zstd_window_truncation_size_and_magic_are_named(tmp_path, monkeypatch):
    data = (HEADER + ROW * 2000).encode()
    frame = zstandard.ZstdCompressor(level=3).compress(data)
    p = tmp_path / "s.csv.zst"
    p.write_bytes(frame)
    assert len(load_suite(p)) == 2000
    p.write_bytes(frame[: len(frame) // 2])
    with pytest.raises(SuiteLimitError, match="truncated zstd stream"):  # zstandard alone would stop quietly
        load_suite(p)
    p.write_bytes(frame)
    monkeypatch.setenv("PDX_MAX_ZSTD_WINDOW", "64K")
    with pytest.raises(
        SuiteLimitError,
        match=r"decoding window \(limit 64.0 KiB\).*"
        r"PDX_MAX_ZSTD_WINDOW=128K",
    ):
        load_suite(p)
    monkeypatch.delenv("PDX_MAX_ZSTD_WINDOW")
    monkeypatch.setenv("PDX_MAX_SUITE_BYTES", "100K")
    with pytest.raises(
        SuiteLimitError,
        match=r"decompresses to more than the limit.*"
        r"PDX_MAX_SUITE_BYTES=200K",
    ):
        load_suite(p)
    p.write_bytes(data)  # plain text named .zst
    with pytest.raises(SuiteLimitError, match="not a zstandard file") as e:
        load_suite(p)
    assert isinstance(e.value, UserError) and isinstance(e.value, PuzzleFormatError)
    assert e.value.path == str(p)
