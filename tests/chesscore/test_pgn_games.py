"""Reading human games from PGN: headers, clocks, speed categories, refused games, filters, .zst."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pdx_lightning.chesscore.pgn_games import (
    BAD_REASONS,
    MoveFilter,
    PgnGameError,
    ReadStats,
    parse_time_control,
    read_games,
    speed_category,
)
from pdx_lightning.chesscore.pgn_values import PgnValueError

FIX = Path(__file__).parents[1] / "fixtures"
GAMES20, EDGE = FIX / "lichess_games_20.pgn", FIX / "lichess_games_edge.pgn"


def reasons(**counts: int) -> dict[str, int]:
    """``ReadStats.skipped`` with these counts and zeros elsewhere."""
    return {**dict.fromkeys(BAD_REASONS, 0), **counts}


def edge_case(tmp_path: Path, k: int) -> Path:
    """Game ``k`` (1-based) of the edge-case fixture alone in a file."""
    games = re.split(r"\n\n(?=\[Event )", EDGE.read_text().strip())
    path = tmp_path / f"case{k}.pgn"
    path.write_text(games[k - 1] + "\n")
    return path


def test_first_game_headers_moves_and_clocks():
    games = list(read_games(GAMES20))
    assert [g.number for g in games] == list(range(1, 21))
    g = games[0]  # 1. e4 {1:00} c5 {1:00} 2. Nf3 {1:00} d6 {0:59} ... 33. Qxe6+ 1-0, 60+0
    assert (g.white_elo, g.black_elo, g.time_control, g.base, g.increment) == (1703, 1698, "60+0", 60.0, 0.0)
    assert g.speed == "bullet" and g.result == 1 and len(g.moves) == 65 and g.line == 1
    assert [m.uci() for m in g.moves[:3]] == ["e2e4", "c7c5", "g1f3"]
    assert g.clocks[:4] == (60.0, 60.0, 60.0, 59.0) and g.clocks[-1] == 26.0
    # before a move: the mover's clock after their previous move; the base for their first
    assert [g.clock_before(p) for p in (0, 1, 2, 3, 5)] == [60.0, 60.0, 60.0, 60.0, 59.0]
    assert g.rating(0) == 1703 and g.rating(1) == 1698


def test_time_controls_follow_lichess_speeds():
    assert parse_time_control("180+2") == (180.0, 2.0) and parse_time_control("-") == (None, None)
    cases = {
        "15+0": "ultrabullet",
        "60+0": "bullet",
        "120+1": "bullet",
        "180+0": "blitz",
        "180+2": "blitz",
        "300+3": "blitz",
        "480+0": "rapid",
        "600+0": "rapid",
        "1500+0": "classical",
        "-": "correspondence",
        "": "unknown",
        "?": "unknown",
        "40/7200:3600": "unknown",
    }
    assert {tc: speed_category(tc) for tc in cases} == cases
    with pytest.raises(PgnValueError, match="not a number of seconds"):
        speed_category("x+y")  # was "unknown"; now refused like any impossible value (issue 37)


def test_refused_games_say_file_line_game_and_ply(tmp_path):
    with pytest.raises(PgnGameError, match=r"case2\.pgn:1: game 1: Variant 'Crazyhouse'"):
        list(read_games(edge_case(tmp_path, 2)))
    with pytest.raises(PgnGameError, match=r"game 1: a SetUp/FEN header"):
        list(read_games(edge_case(tmp_path, 3)))
    # 1. d4 d5 2. c4 ... 3. Ke5: the 5th ply
    with pytest.raises(PgnGameError, match=r"game 1, ply 5 \(move 3\.\): illegal san: 'Ke5'"):
        list(read_games(edge_case(tmp_path, 4)))
    # in the whole file the variant is game 2, after the clockless game 1 was yielded
    seen = []
    with pytest.raises(PgnGameError, match=r"lichess_games_edge\.pgn:\d+: game 2: Variant"):
        for g in read_games(EDGE):
            seen.append(g.number)
    assert seen == [1]


def test_skip_bad_counts_by_reason_and_keeps_clockless_games():
    stats = ReadStats()
    games = list(read_games(EDGE, skip_bad=True, stats=stats))
    assert [g.number for g in games] == [1, 5]
    assert stats.games == 5 and stats.skipped == reasons(malformed=1, variant=1, setup=1)
    assert len(stats.bad) == 3 and "ply 5" in stats.bad[2]
    clockless = games[0]
    assert not clockless.has_clocks and clockless.clock_before(7) is None
    assert MoveFilter(min_clock=30).keeps(clockless, 40) is None  # no clock: kept


def test_zst_reads_the_same_games(tmp_path):
    import zstandard

    path = tmp_path / "g.pgn.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(GAMES20.read_bytes()))
    a, b = list(read_games(GAMES20)), list(read_games(path, max_games=5))
    assert [g.moves for g in b] == [g.moves for g in a[:5]] and b[0].clocks == a[0].clocks


def test_move_filter_reasons():
    g = next(read_games(GAMES20))  # 1703 vs 1698, 60+0; White's clock: 0:00:31 after 29. Re5, 0:00:29 after 30. Ree3
    f = MoveFilter(skip_plies=10, min_clock=30, rating_min=1700)
    assert f.keeps(g, 9) == "opening" and f.keeps(g, 10) is None and f.keeps(g, 11) == "rating"
    assert g.clock_before(58) == 31.0 and f.keeps(g, 58) is None  # 30. Ree3
    assert g.clock_before(60) == 29.0 and f.keeps(g, 60) == "clock"  # 31. Qe2
    assert MoveFilter(rating_max=1699).keeps(g, 0) == "rating" and MoveFilter(rating_max=1699).keeps(g, 1) is None
    assert MoveFilter(time_controls=("blitz",)).keeps_game(g) is False
    with pytest.raises(ValueError, match="unknown time control"):
        MoveFilter(time_controls=("blitzz",))


def test_lichess_from_position_games_are_setup_games(tmp_path):
    text = edge_case(tmp_path, 3).read_text().replace('[SetUp "1"]', '[Variant "From Position"]\n[SetUp "1"]')
    (tmp_path / "fp.pgn").write_text(text)
    stats = ReadStats()
    assert list(read_games(tmp_path / "fp.pgn", skip_bad=True, stats=stats)) == []
    assert stats.skipped == reasons(setup=1)


# ---------------------------------------------------------------- issue 37: hostile values, games run together

UNCLOSED = FIX / "pgn_unclosed_comment.pgn"


def write_games(tmp_path: Path, *games: tuple[dict, str], name: str = "g.pgn") -> Path:
    """A PGN file of ``(headers, movetext)`` games, a blank line between and after headers."""
    text = "".join("".join(f'[{k} "{v}"]\n' for k, v in h.items()) + f"\n{moves}\n\n" for h, moves in games)
    (tmp_path / name).write_text(text)
    return tmp_path / name


GOOD = (
    {"Event": "ok", "WhiteElo": "1500", "BlackElo": "1500", "TimeControl": "180+0", "Result": "1-0"},
    "1. e4 { [%clk 0:03:00] } e5 { [%clk 0:03:00] } 2. Nf3 { [%clk 0:02:59] } 1-0",
)


def with_headers(**changes: str) -> tuple[dict, str]:
    return {**GOOD[0], **changes}, GOOD[1]


@pytest.mark.parametrize(
    "header,value,why",
    [
        ("TimeControl", "1e400+1e400", r"TimeControl '1e400\+1e400': base '1e400' is not a number of seconds"),
        ("TimeControl", "nan", r"TimeControl 'nan': base 'nan' is not a number of seconds"),
        ("TimeControl", "-60+0", r"TimeControl '-60\+0': base '-60' is not a number of seconds"),
        ("TimeControl", "99999999+0", r"TimeControl '99999999\+0': base 1e\+08 s is above 604,800 s \(a week\)"),
        ("WhiteElo", "-500", r"WhiteElo '-500' is not a rating \(an integer 0\.\.4000\)"),
        ("BlackElo", "-1e23", r"BlackElo '-1e23' is not a rating"),
        ("BlackElo", "12000", r"BlackElo '12000' is not a rating"),
    ],
)
def test_impossible_header_values_are_refused_with_file_line_and_game(tmp_path, header, value, why):
    path = write_games(tmp_path, GOOD, with_headers(**{header: value}), GOOD)
    with pytest.raises(PgnGameError, match=rf"g\.pgn:9: game 2: {why}.* \(--skip-bad skips and counts such games\)$"):
        list(read_games(path))
    stats = ReadStats()
    assert [g.number for g in read_games(path, skip_bad=True, stats=stats)] == [1, 3]
    assert stats.skipped == reasons(bad_header=1) and "game 2" in stats.bad[0]


def test_impossible_ratings_are_never_yielded_and_absent_ones_are_unrated(tmp_path):
    path = write_games(
        tmp_path,
        with_headers(WhiteElo="-500"),
        with_headers(BlackElo="-1e23"),
        with_headers(WhiteElo="?", BlackElo=""),
        with_headers(WhiteElo="0", BlackElo="4000"),
    )
    stats = ReadStats()
    games = list(read_games(path, skip_bad=True, stats=stats))
    assert [(g.number, g.white_elo, g.black_elo) for g in games] == [(3, None, None), (4, 0, 4000)]
    assert stats.skipped == reasons(bad_header=2) and stats.games == 4


def test_bad_clock_comments_name_the_ply(tmp_path):
    bad = GOOD[0], "1. e4 { [%clk 0:03:00] } e5 { [%clk 0:99:00] } 1-0"
    path = write_games(tmp_path, bad)
    with pytest.raises(
        PgnGameError,
        match=r"g\.pgn:1: game 1, ply 2 \(move 1\.\.\.\): clock comment "
        r"'\[%clk 0:99:00\]' is out of range",
    ):
        list(read_games(path))
    huge = GOOD[0], f"1. e4 {{ [%clk {'9' * 400}:00:00] }} 1-0"
    stats = ReadStats()
    games = list(read_games(write_games(tmp_path, huge, GOOD, name="h.pgn"), skip_bad=True, stats=stats))
    assert games[0].number == 2
    assert stats.skipped == reasons(bad_clock=1)


def test_speed_never_raises_stopiteration_for_games_read():
    for g in read_games(GAMES20):
        assert g.speed in ("bullet", "blitz", "rapid", "classical", "ultrabullet")


def test_an_unclosed_comment_does_not_merge_the_next_game(tmp_path):
    # python-chess alone reads game 1 as 1. e4 e5 2. Nf3 d5 3. c4 c6: game 2's moves appended, no error
    with pytest.raises(
        PgnGameError,
        match=r"pgn_unclosed_comment\.pgn:1: game 1: line 11 \(\[Event \"Rated Blitz "
        r"game\"\]\) starts another game's headers inside this game's moves: a \{ "
        r"comment left open, or no blank line before it \(the next game would be "
        r"merged into this one\) \(--skip-bad",
    ):
        list(read_games(UNCLOSED))
    stats = ReadStats()
    games = list(read_games(UNCLOSED, skip_bad=True, stats=stats))
    assert [(g.number, g.line, g.headers["White"], [m.uci() for m in g.moves]) for g in games] == [
        (3, 21, "e", ["c2c4", "e7e5", "b1c3"])
    ]
    assert stats.games == 3 and stats.skipped == reasons(merged=2) and "line 11" in stats.bad[0]


def test_a_missing_blank_line_between_games_is_caught_too(tmp_path):
    path = tmp_path / "noblank.pgn"
    path.write_text('[Event "a"]\n\n1. e4 e5 1-0\n[Event "b"]\n[Site "x"]\n\n1. d4 d5 0-1\n\n[Event "c"]\n\n1. c4 *\n')
    with pytest.raises(PgnGameError, match=r"noblank\.pgn:1: game 1: line 4 \(\[Event \"b\"\]\) starts another"):
        list(read_games(path))
    stats = ReadStats()
    assert [(g.number, g.headers["Event"]) for g in read_games(path, skip_bad=True, stats=stats)] == [(3, "c")]
    assert stats.skipped == reasons(merged=2)  # game b's moves (read apart from its headers) go with it


def test_comments_and_headers_that_are_fine_are_not_flagged(tmp_path):
    path = tmp_path / "fine.pgn"
    path.write_text(
        '[Event "a"]\n\n[Site "blank line between headers"]\n[Bad header line\n\n'
        '1. e4 { a comment\nover [two] lines [%clk 0:01:00] } e5 { see [Event "x"] inline } 1-0\n\n'
        '[Event "b"]\n\n1. d4 *\n'
    )
    games = list(read_games(path))
    assert [g.headers["Event"] for g in games] == ["a", "b"] and games[0].clocks == (60.0, None)


def test_opening_books_refuse_a_merged_game_too(tmp_path):
    from pdx_lightning.chesscore.pgn_games import PgnGameLines, _Builder, read_pgn_game

    with open(UNCLOSED) as f:
        lines = PgnGameLines(f, UNCLOSED)
        with pytest.raises(PgnGameError, match=r"pgn_unclosed_comment\.pgn:1: unreadable PGN game: line 11 "):
            read_pgn_game(lines, _Builder, PgnGameError, "unreadable PGN game")
