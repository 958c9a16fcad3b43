"""What the human-game reader makes of damaged or unusual input: python-chess's own failures, null moves,
truncated, header-only and merged games, byte-order marks, and gzip/bzip2/zstd files (whole, concatenated,
truncated, corrupt, misnamed, bombs): games, a count by reason, or one line naming the file, line and game."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import tracemalloc
import zlib
from pathlib import Path

import chess.pgn
import pytest
import zstandard

from pdx_lightning.chesscore import pgn_games
from pdx_lightning.chesscore.pgn_games import BAD_REASONS, PgnFileError, PgnGameError, ReadStats, read_games
from pdx_lightning.files.safeio import FileLimitError, open_decompressed

FIX = Path(__file__).parents[1] / "fixtures"
GAMES20 = FIX / "lichess_games_20.pgn"
HEAD = '[Event "{e}"]\n[WhiteElo "1500"]\n[BlackElo "1600"]\n[TimeControl "180+0"]\n[Result "1-0"]\n\n'
GOOD = HEAD.format(e="good") + "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0\n\n"


def write(tmp_path: Path, text: str | bytes, name: str = "g.pgn") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def read_skipping(path: Path) -> tuple[list, ReadStats]:
    stats = ReadStats()
    games = list(read_games(path, skip_bad=True, stats=stats))
    assert stats.games == len(games) + stats.empty + sum(stats.skipped.values())  # every game counted once
    return games, stats


def only(**counts: int) -> dict[str, int]:
    return {**dict.fromkeys(BAD_REASONS, 0), **counts}


# ---------------------------------------------------------------- python-chess's own failures


def test_an_illegal_move_then_a_closing_parenthesis_is_a_bad_game_not_an_index_error(tmp_path):
    # python-chess's builder pops the game itself at that ")", and the NAG or comment after it raised IndexError
    for tail in ("$1", "{ c }", "e5"):
        path = write(tmp_path, HEAD.format(e="bad") + f"1. e4 Ke5 ) {tail} 1-0\n\n" + GOOD)
        with pytest.raises(PgnGameError, match=r"g\.pgn:1: game 1, ply 2 \(move 1\.\.\.\): illegal san: 'Ke5'"):
            list(read_games(path))
        games, stats = read_skipping(path)
        assert [(g.number, g.headers["Event"]) for g in games] == [(2, "good")]
        assert stats.skipped == only(malformed=1)


def test_whatever_python_chess_raises_is_one_line_and_the_next_game_is_read(tmp_path, monkeypatch):
    # without the builder's guard python-chess's real IndexError reaches the reader: one line, or a count
    monkeypatch.setattr(pgn_games._Builder, "end_variation", chess.pgn.GameBuilder.end_variation)
    path = write(tmp_path, HEAD.format(e="bad") + "1. e4 Ke5 ) $1\n2. Nf3 1-0\n\n" + GOOD)
    with pytest.raises(
        PgnGameError, match=r"g\.pgn:1: game 1: unreadable PGN \(IndexError: .*\) \(--skip-bad skips and counts"
    ):
        list(read_games(path))
    games, stats = read_skipping(path)
    assert [(g.number, g.headers["Event"]) for g in games] == [(2, "good")]  # read from its own headers
    assert stats.skipped == only(malformed=1) and "IndexError" in stats.bad[0]


# ---------------------------------------------------------------- null moves


@pytest.mark.parametrize("null", ["--", "Z0", "0000"])
def test_null_moves_are_refused_or_counted_never_scored(tmp_path, null):
    path = write(tmp_path, HEAD.format(e="null") + f"1. e4 e5 2. {null} Nc6 3. Nf3 1-0\n\n" + GOOD)
    with pytest.raises(PgnGameError, match=r"g\.pgn:1: game 1, ply 3 \(move 2\.\): a null move \(--, Z0, 0000\)"):
        list(read_games(path))
    games, stats = read_skipping(path)
    assert [g.number for g in games] == [2] and stats.skipped == only(null_move=1)


# ---------------------------------------------------------------- games cut short, header-only games


@pytest.mark.parametrize(
    "last,reason,why",
    [
        (
            "1. e4 e5 2. Nf3 Nc6 3. Bb5",
            "truncated",
            r"the file ends inside this game, after 5 plies and before its result",
        ),
        ("1. e4 e5 2. Nf3 Nc6 3. B", "truncated", r"the file ends inside this game, after 4 plies"),
        (
            "1. e4 e5 2. Nf3 { left open Nc6 3. Bb5 1-0\n",
            "truncated",
            r"a \{ comment is still open at the end of the file",
        ),
        ("1. e4 { [%clk 0:03:00] } e5 { [%clk 0:0", "truncated", r"a \{ comment is still open"),
        ("", "truncated", r"the file ends after this game's headers"),
    ],
)
def test_a_truncated_last_game_is_refused_or_counted(tmp_path, last, reason, why):
    path = write(tmp_path, GOOD + HEAD.format(e="cut") + last)
    with pytest.raises(PgnGameError, match=rf"g\.pgn:9: game 2: {why}"):
        list(read_games(path))
    games, stats = read_skipping(path)
    assert [g.number for g in games] == [1] and stats.skipped == only(**{reason: 1})


def test_a_game_without_its_result_inside_the_file_is_counted_as_truncated(tmp_path):
    path = write(tmp_path, HEAD.format(e="cut") + "1. e4 e5 2. Nf3\n\n" + GOOD)
    with pytest.raises(PgnGameError, match=r"game 1: its movetext ends after 3 plies without a result"):
        list(read_games(path))
    games, stats = read_skipping(path)
    assert [g.number for g in games] == [2] and stats.skipped == only(truncated=1)


@pytest.mark.parametrize("gap", ["", "\n", "\n\n"])
def test_a_header_only_game_is_not_merged_into_the_next(tmp_path, gap):
    # python-chess reads on through one blank line between header lines: the next game's headers would
    # overwrite this one's and its WhiteElo (absent from the next game) would be carried into it
    lone = '[Event "lone"]\n[Site "x"]\n[WhiteElo "2900"]\n[BlackElo "2900"]\n'
    nxt = GOOD.replace('[WhiteElo "1500"]\n', "")
    path = write(tmp_path, lone + gap + nxt)
    with pytest.raises(PgnGameError, match=r"g\.pgn:1: game 1: headers and no moves") as e:
        list(read_games(path))
    if gap != "\n\n":  # two blank lines already end the headers for python-chess: no next header is read
        assert re.search(rf"line {5 + len(gap)} \(\[Event \"good\"\]\) repeats one of its tags", str(e.value))
    games, stats = read_skipping(path)
    assert [(g.number, g.line, g.headers["Event"], g.white_elo, g.black_elo) for g in games] == [
        (2, 5 + len(gap), "good", None, 1600)
    ]
    assert stats.skipped == only(headers_only=1)


def test_a_game_with_only_a_result_is_empty_not_bad(tmp_path):
    games, stats = read_skipping(write(tmp_path, HEAD.format(e="aborted") + "1-0\n\n" + GOOD))
    assert [g.number for g in games] == [2] and stats.empty == 1 and stats.skipped == only()


# ---------------------------------------------------------------- byte-order marks


def test_a_byte_order_mark_is_skipped_at_the_start_and_where_files_were_joined(tmp_path):
    text = GAMES20.read_text()
    path = write(tmp_path, b"\xef\xbb\xbf" + text.encode() + b"\n" + b"\xef\xbb\xbf" + GOOD.encode())
    games = list(read_games(path))
    assert len(games) == 21 and games[0].moves == next(read_games(GAMES20)).moves
    assert games[-1].headers["Event"] == "good"


# ---------------------------------------------------------------- compressed files


def _expected():
    return [(g.moves, g.clocks, g.white_elo) for g in read_games(GAMES20)]


@pytest.mark.parametrize(
    "name,pack",
    [
        ("g.pgn.gz", gzip.compress),
        ("g.pgn.bz2", bz2.compress),
        ("g.pgn.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
        ("g.pgn.xz", lzma.compress),  # pdx's own match records (pdx matches: NAME.pgn.xz)
        ("g.pgn", gzip.compress),  # the content decides: a gzip file named .pgn is read as gzip
    ],
)
def test_compressed_files_read_the_same_games(tmp_path, name, pack):
    raw = GAMES20.read_bytes()
    path = write(tmp_path, pack(raw), name)
    assert [(g.moves, g.clocks, g.white_elo) for g in read_games(path)] == _expected()
    half = raw.index(b"[Event", len(raw) // 2)  # concatenated members / streams / frames (pigz, pbzip2, cat)
    path = write(tmp_path, pack(raw[:half]) + pack(raw[half:]), name)
    assert [(g.moves, g.clocks, g.white_elo) for g in read_games(path)] == _expected()


def zstd_cli(data: bytes) -> bytes:
    """zstd as its command line writes it: with each frame's checksum (without one a damaged literal goes unseen)."""
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


@pytest.mark.parametrize("suffix,pack", [(".gz", gzip.compress), (".bz2", bz2.compress), (".zst", zstd_cli)])
@pytest.mark.parametrize("damage", ["truncated", "corrupt second part", "garbage after"])
def test_damaged_compressed_files_are_one_line_even_with_skip_bad(tmp_path, suffix, pack, damage):
    raw = GAMES20.read_bytes()
    half = raw.index(b"[Event", len(raw) // 2)
    whole = pack(raw)
    if damage == "truncated":
        data = whole[: len(whole) - 40]
        why = rf"truncated {'zstd|gzip|bzip2'} stream \(the download or copy did not finish\?\)"
    else:
        second = bytearray(pack(raw[half:]))
        if damage == "corrupt second part":
            second[len(second) // 2] ^= 0xFF
        else:
            second = bytearray(b"\x01garbage that is no compressed stream")
        data = pack(raw[:half]) + bytes(second)
        why = r"corrupt (zstd|gzip|bzip2) stream at compressed byte ~[\d,]+ \(.+\)"
    path = write(tmp_path, data, "g.pgn" + suffix)
    for skip_bad in (False, True):
        with pytest.raises(FileLimitError, match=rf"^{re.escape(str(path))}: {why}$"):
            list(read_games(path, skip_bad=skip_bad))


def test_misnamed_and_unsupported_compressions_are_one_line(tmp_path):
    raw = GAMES20.read_bytes()
    cases = {
        "a.pgn.gz": (raw, r"named \.gz but its content is plain text, not gzip"),
        "b.pgn.zst": (bz2.compress(raw), r"named \.zst but its content is bzip2-compressed, not zstd"),
        "c.pgn.bz2": (b"", r"named \.bz2 but its content is plain text, not bzip2"),
        "d.pgn.xz": (bz2.compress(raw), r"named \.xz but its content is bzip2-compressed, not xz"),
        "e.pgn": (
            b"PK\x03\x04" + raw,
            r"a zip file; PGN is read as plain text or compressed with zstd, gzip, bzip2 or xz",
        ),
    }
    for name, (data, why) in cases.items():
        path = write(tmp_path, data, name)
        with pytest.raises(PgnFileError, match=rf"^{re.escape(str(path))}: {why}"):
            list(read_games(path, skip_bad=True))


@pytest.mark.parametrize(
    "kind,pack", [("gzip", lambda: zlib.compressobj(9, wbits=31)), ("bzip2", lambda: bz2.BZ2Compressor(1))]
)
def test_gzip_and_bzip2_bombs_are_refused_with_bounded_memory(tmp_path, kind, pack):
    c = pack()
    path = tmp_path / "bomb.bin"
    with open(path, "wb") as f:
        for _ in range(32):  # 32 MiB of zeros in a few KB
            f.write(c.compress(bytes(1 << 20)))
        f.write(c.flush())
    assert path.stat().st_size < 64 * 1024
    tracemalloc.start()
    try:
        with (
            pytest.raises(FileLimitError, match=r"expands more than 200x .*: a decompression bomb"),
            open_decompressed(path, kind) as stream,
        ):
            while stream.read(1 << 20):
                pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # a few MiB of chunks, not the 32 MiB content
