"""PGN header and clock values parsed defensively (issue 37): hand-made inf, nan, negative, huge,
garbage and empty values of ``TimeControl``, ``WhiteElo``/``BlackElo`` and ``[%clk]``."""

from __future__ import annotations

import pytest

from pdx_lightning.chesscore.pgn_values import (
    MAX_RATING,
    MAX_SECONDS,
    TIME_CONTROLS,
    PgnValueError,
    parse_clock,
    parse_rating,
    parse_time_control,
    speed_category,
)
from pdx_lightning.errors import UserError


def test_time_control_values():
    ok = {
        "180+2": (180.0, 2.0),
        "60": (60.0, 0.0),
        " 300+0 ": (300.0, 0.0),
        "0+1": (0.0, 1.0),
        "0.5+0.25": (0.5, 0.25),
        f"{MAX_SECONDS}+{MAX_SECONDS}": (MAX_SECONDS, MAX_SECONDS),
        "": (None, None),
        "?": (None, None),
        "-": (None, None),
        "40/9000": (None, None),
        "*180": (None, None),
        "40/7200:3600": (None, None),
        "40/5400+30:1800+30": (None, None),
    }
    assert {tc: parse_time_control(tc) for tc in ok} == ok
    bad = {
        "1e400+1e400": "not a number of seconds",
        "inf": "not a number of seconds",
        "nan+0": "not a number",
        "-5+0": "not a number",
        "180+-2": "increment '-2'",
        "1" * 400: "is above",
        f"{MAX_SECONDS + 1}+0": "is above",
        "180+9999999": "increment 1e\\+07 s is above",
        "x+y": "base 'x'",
        "180+": "increment ''",
        "+3": "base ''",
        "180+2+2": "increment '2\\+2'",
        "blitz": "base 'blitz'",
        "40/": "not a PGN time control",
        "1e3/60": "not a PGN time control",
        "180 + 2": "base '180 '",
    }
    for tc, why in bad.items():
        with pytest.raises(PgnValueError, match=why):
            parse_time_control(tc)


def test_speed_category_of_an_infinite_time_control_is_an_error_not_stopiteration():
    with pytest.raises(PgnValueError) as e:
        speed_category("1e400+1e400")
    assert isinstance(e.value, UserError) and "1e400+1e400" in str(e.value)
    assert speed_category(f"{MAX_SECONDS}+{MAX_SECONDS}") == "classical" and speed_category("-") == "correspondence"
    assert set(map(speed_category, ("15", "60+0", "180", "600", "1500", "?", "*60"))) <= set(TIME_CONTROLS)


def test_rating_values():
    assert [parse_rating(v) for v in (None, "", "?", "-", " 1500 ", "0", str(MAX_RATING))] == [
        None,
        None,
        None,
        None,
        1500,
        0,
        MAX_RATING,
    ]
    for v in (
        "-500",
        "-1e23",
        "1e23",
        "4001",
        "99999999999999999999",
        "9" * 5000,
        "1500.5",
        "inf",
        "nan",
        "abc",
        "+1500",
        "1 500",
        "١٥٠٠",
    ):
        with pytest.raises(PgnValueError, match=r"WhiteElo .* is not a rating \(an integer 0\.\.4000\)"):
            parse_rating(v, "WhiteElo")


def test_long_values_are_cut_in_messages():
    with pytest.raises(PgnValueError) as e:
        parse_rating("x" * 10_000, "BlackElo")
    assert len(str(e.value)) < 120


def test_clock_values():
    ok = {
        "[%clk 0:01:00]": 60.0,
        " [%clk 1:02:03] ": 3723.0,
        "[%clk 0:00:05.3]": 5.3,
        "x [%clk 0:0:7] y": 7.0,
        "[%clk 0:01:00] [%clk 9:99:99]": 60.0,
        "": None,
        "no clock here": None,
        "[%emt 0:00:01]": None,
        "[%clk 168:00:00]": float(MAX_SECONDS),
    }
    assert {c: parse_clock(c) for c in ok} == pytest.approx(ok)
    bad = {
        "[%clk -0:01:00]": "is not",
        "[%clk inf]": "is not",
        "[%clk nan:00:00]": "is not",
        "[%clk 0:01:00": "is not",
        "[%clk]": "is not",
        "[%clk 1e400:00:00]": "is not",
        "[%clk 0:60:00]": "out of range",
        "[%clk 0:00:60]": "out of range",
        "[%clk 168:00:01]": "out of range",
        f"[%clk {'9' * 400}:00:00]": "out of range",
        "[%clk 0:01:00:00]": "is not",
        "[%clk garbage]": "is not",
    }
    for comment, why in bad.items():
        with pytest.raises(PgnValueError, match=f"clock comment .* {why}"):
            parse_clock(comment)
