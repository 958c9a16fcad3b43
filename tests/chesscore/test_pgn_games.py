"""Reading human games from PGN: headers, clocks, speed categories, refused games, filters, .zst."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from pdx_lightning.chesscore.pgn_games import (MoveFilter, PgnGameError, ReadStats, parse_time_control, read_games,
                                           speed_category)

FIX = Path(__file__).parents[1] / "fixtures"
GAMES20, EDGE = FIX / "lichess_games_20.pgn", FIX / "lichess_games_edge.pgn"


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
    cases = {"15+0": "ultrabullet", "60+0": "bullet", "120+1": "bullet", "180+0": "blitz", "180+2": "blitz",
             "300+3": "blitz", "480+0": "rapid", "600+0": "rapid", "1500+0": "classical", "-": "correspondence",
             "": "unknown", "x+y": "unknown"}
    assert {tc: speed_category(tc) for tc in cases} == cases


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
    assert stats.games == 5 and stats.skipped == {"malformed": 1, "variant": 1, "setup": 1}
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
    assert g.clock_before(58) == 31.0 and f.keeps(g, 58) is None      # 30. Ree3
    assert g.clock_before(60) == 29.0 and f.keeps(g, 60) == "clock"   # 31. Qe2
    assert MoveFilter(rating_max=1699).keeps(g, 0) == "rating" and MoveFilter(rating_max=1699).keeps(g, 1) is None
    assert MoveFilter(time_controls=("blitz",)).keeps_game(g) is False
    with pytest.raises(ValueError, match="unknown time control"):
        MoveFilter(time_controls=("blitzz",))


def test_lichess_from_position_games_are_setup_games(tmp_path):
    text = edge_case(tmp_path, 3).read_text().replace('[SetUp "1"]', '[Variant "From Position"]\n[SetUp "1"]')
    (tmp_path / "fp.pgn").write_text(text)
    stats = ReadStats()
    assert list(read_games(tmp_path / "fp.pgn", skip_bad=True, stats=stats)) == []
    assert stats.skipped == {"malformed": 0, "variant": 0, "setup": 1}
