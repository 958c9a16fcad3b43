"""Every numeric flag of every ``pdx`` tool, fed nan, inf, -1, 0 and a huge value: refused while the
command line is parsed (one line naming the flag, exit 2) exactly when its declared range says so, and
its range's own ends accepted.

The walk builds the real parser (``pdx_lightning.cli.build_parser``) and reads each flag's range from
its ``pdx_lightning.argtypes`` type, so a flag added later is walked too; a numeric flag whose type is
not a checked one fails :func:`test_every_numeric_flag_has_a_checked_type`.

``python tests/test_flag_walk.py`` prints the walk as a markdown table (command, flag, value, result).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import math
import sys

import pytest

from pdx_lightning import argtypes
from pdx_lightning.cli import build_parser

# tools whose flags are checked in their own modules' tests (the UCI engine, the PGN readers)
OWN_TESTS = {"uci", "eval humans", "data pgn"}
# a valid value for each required flag, so that only the walked flag can fail
REQUIRED = {
    "--model": "m",
    "--out": "o",
    "--suite": "s",
    "--positions": "1",
    "--depth": "1",
    "--runs": "r",
    "--config": "c",
    "--base": "b",
    "--pgn": "p",
}
BAD = ("nan", "inf", "-inf", "-1", "0", "huge")
HUGE_INT, HUGE_FLOAT = str(10**30), "1e30"


def tools() -> dict[str, argparse.ArgumentParser]:
    """``{"arena": parser, "data positions": parser, ...}``: every tool's parser."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sp in a.choices.items():
                    walk(sp, f"{name} {n}".strip())
        if parser.get_default("_module"):
            out[name] = parser

    walk(build_parser(), "")
    return out


def _numeric(a: argparse.Action) -> bool:
    t = a.type
    if t is int or t is float or hasattr(t, "bounds") or hasattr(t, "item"):
        return True
    d = a.default[0] if isinstance(a.default, (list, tuple)) and a.default else a.default
    return isinstance(d, (int, float)) and not isinstance(d, bool) and a.nargs != 0


def numeric_flags() -> list[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    return [
        (name, p, a)
        for name, p in sorted(tools().items())
        if name not in OWN_TESTS
        for a in p._actions
        if a.option_strings and _numeric(a)
    ]


def _value(a: argparse.Action, bad: str) -> str:
    if bad != "huge":
        return bad
    return HUGE_INT if _bounds(a)[4] else HUGE_FLOAT


def _bounds(a: argparse.Action) -> tuple:
    t = getattr(a.type, "item", a.type)
    return t.bounds


def _valid(a: argparse.Action, text: str) -> bool:
    """What the flag's declared range says of ``text``."""
    lo, hi, lo_open, hi_open, integer = _bounds(a)
    try:
        v = int(text) if integer else float(text)
    except ValueError:
        return False
    if not math.isfinite(v):
        return False
    return (lo is None or (v > lo if lo_open else v >= lo)) and (hi is None or (v < hi if hi_open else v <= hi))


def _argv(name: str, p: argparse.ArgumentParser, a: argparse.Action, value: str) -> list[str]:
    flag = a.option_strings[-1]
    argv = name.split()
    for r in p._actions:
        if r.required and r.option_strings and r is not a:
            argv += [r.option_strings[-1], REQUIRED[r.option_strings[-1]]]
    if a.nargs is None:
        return [*argv, f"{flag}={value}"]  # how a negative value is given ("-inf" alone reads as a flag)
    n = a.nargs if isinstance(a.nargs, int) else 1
    return [*argv, flag, *([value] * n)]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def parse(argv: list[str]) -> tuple[int, list[str]]:
    """``pdx``'s parser on ``argv``: (exit status, stderr lines); 0 when it parses."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            _parser().parse_args(argv)
        except SystemExit as e:
            return int(e.code or 0), err.getvalue().strip().splitlines()
    return 0, []


def test_every_numeric_flag_has_a_checked_type():
    flags = numeric_flags()
    unchecked = [
        (n, a.option_strings[-1]) for n, _, a in flags if not hasattr(getattr(a.type, "item", a.type), "bounds")
    ]
    assert len(flags) > 60 and unchecked == []


WALK = [(n, p, a, bad) for n, p, a in numeric_flags() for bad in BAD]


@pytest.mark.parametrize(
    ("name", "parser", "action", "bad"), WALK, ids=[f"{w[0]} {w[2].option_strings[-1]} {w[3]}" for w in WALK]
)
def test_numeric_flag_values_are_refused_in_one_line_or_accepted_by_range(name, parser, action, bad):
    value = _value(action, bad)
    rc, lines = parse(_argv(name, parser, action, value))
    if _valid(action, value):
        assert rc == 0, lines
    else:
        assert rc == 2 and len(lines) == 1, lines
        flag = action.option_strings[-1]
        assert lines[0].startswith(f"pdx {name}: error: argument {flag}"), lines[0]
        # "-inf" after a multi-value flag reads as another flag: argparse says the value is missing
        assert value[:20] in lines[0] or (value == "-inf" and action.nargs is not None), lines[0]
    assert bad not in ("nan", "inf", "-inf") or rc == 2


@pytest.mark.parametrize(
    ("name", "parser", "action"), numeric_flags(), ids=[f"{n} {a.option_strings[-1]}" for n, _, a in numeric_flags()]
)
def test_the_ends_of_each_range_parse(name, parser, action):
    lo, hi, lo_open, hi_open, integer = _bounds(action)
    for end, is_open in ((lo, lo_open), (hi, hi_open)):
        if end is not None and not is_open:
            value = str(int(end)) if integer else repr(float(end))
            rc, lines = parse(_argv(name, parser, action, value))
            assert rc == 0, (value, lines)


def test_ordered_pairs_and_ranges_are_one_line(tmp_path, capsys):
    from pdx_lightning import cli

    cases = [
        (["data", "openings", "--out", str(tmp_path / "o.epd"), "--band", "100", "50"], "--band LO 100"),
        (
            ["data", "openings", "--out", str(tmp_path / "o.epd"), "--min-plies", "9", "--max-plies", "8"],
            "--min-plies 9",
        ),
        (
            ["data", "positions", "--out", str(tmp_path / "s"), "--positions", "1", "--play-nodes", "9", "3"],
            "--play-nodes LO 9",
        ),
        (
            ["eval", "puzzles", "--model", "m", "--suite", "s", "--rating-min", "2000", "--rating-max", "1000"],
            "--rating-min 2000",
        ),
        (
            ["eval", "recovery", "--base", "b", "--model", "m", "--suite", "s", "--prob-bins", "0.3,0.1"],
            "values must increase",
        ),
    ]
    for argv, phrase in cases:
        try:
            rc = cli.main(argv)
        except SystemExit as e:  # argparse's own exit (a flag's type refused it)
            rc = int(e.code or 0)
        assert rc == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and phrase in err[0], err
    assert list(tmp_path.iterdir()) == []  # refused before any output was created


def test_check_number_names_the_key():
    with pytest.raises(argtypes.SettingError, match=r"^--model.lr: must be a finite number > 0, got nan$"):
        argtypes.check_number("--model.lr", math.nan, 0, lo_open=True)
    with pytest.raises(argtypes.SettingError, match="--model.warmup_steps: must be an integer >= 0"):
        argtypes.check_number("--model.warmup_steps", -5, 0, integer=True)
    argtypes.check_number("--data.max_positions", None, 1, integer=True, optional=True)


def table() -> str:
    """The walk as a markdown table: one row per flag and bad value."""
    rows = ["| command | flag | value | result |", "|---|---|---|---|"]
    for name, p, a, bad in WALK:
        value = _value(a, bad)
        lines = parse(_argv(name, p, a, value))[1]
        msg = lines[0].split(": error: ", 1)[-1] if lines else "accepted"
        shown = f"huge ({value})" if bad == "huge" else value
        rows.append(f"| pdx {name} | {a.option_strings[-1]} | {shown} | {msg.replace('|', '/')} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
