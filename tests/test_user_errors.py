"""User mistakes end in one line through the real ``pdx`` entry (issue 18 items 6, 7): no traceback,
exit 2, and nothing left behind; help shows every option with its help text and default."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PDX = ROOT / ".venv" / "bin" / "pdx"


def _pdx(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    cmd = [str(PDX)] if PDX.exists() else [sys.executable, "-m", "pdx_lightning.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    return subprocess.run([*cmd, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _one_line(r: subprocess.CompletedProcess, command: str, *phrases: str) -> str:
    err = r.stderr.strip()
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
    assert "Traceback" not in r.stderr and len(err.splitlines()) == 1, r.stderr[-3000:]
    assert err.startswith(f"pdx {command}: error: "), err
    for phrase in phrases:
        assert phrase in err, err
    return err


ARENA = ("arena", "--model", "random:tiny", "--model", "random:tiny:1", "--quiet")


def test_arena_odd_games_is_one_line(tmp_path):
    _one_line(_pdx(*ARENA, "--games", "3", cwd=tmp_path), "arena", "even", "3")


@pytest.mark.slow  # two more pdx processes (~5 s of CPU each, mostly imports); the other arena cases stay fast
def test_arena_missing_or_bad_pgn_book_is_one_line(tmp_path):
    _one_line(_pdx(*ARENA, "--openings", "a.pgn", cwd=tmp_path), "arena", "a.pgn", "not found")
    (tmp_path / "bad.pgn").write_text('[Event "x"]\n\n1. e4 e5 2. Ke3 Ke6 3. Qh5 Kd9 *\n')
    _one_line(_pdx(*ARENA, "--openings", "bad.pgn", cwd=tmp_path), "arena", "bad.pgn")


@pytest.mark.slow  # the arena's one-line error path is the odd-games case's in the default run
def test_arena_bad_sprt_is_one_line(tmp_path):
    _one_line(_pdx(*ARENA, "--sprt", "10,0", cwd=tmp_path), "arena", "--sprt", "elo1 > elo0")


def test_report_on_a_directory_without_a_sweep_is_one_line_and_leaves_no_folder(tmp_path):
    (tmp_path / "notasweep").mkdir()
    out = tmp_path / "reports" / "x"
    _one_line(_pdx("report", "--runs", "notasweep", "--out", str(out), cwd=tmp_path), "report", "sweep.json", "--runs")
    assert not out.exists() and not (tmp_path / "reports").exists()


def test_traceback_flag_shows_the_traceback(tmp_path):
    r = _pdx("--traceback", *ARENA, "--games", "3", cwd=tmp_path)
    assert r.returncode != 0 and "Traceback" in r.stderr and "ArenaError" in r.stderr


# ---- help (item 7) ---------------------------------------------------------------------------


def _tool_parsers():
    from pdx_lightning.cli import build_parser

    def walk(parser, name):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sp in a.choices.items():
                    yield from walk(sp, f"{name} {n}")
        yield name, parser

    seen = {}
    for name, parser in walk(build_parser(), "pdx"):
        seen.setdefault(name, parser)
    return seen


def test_every_tool_option_has_help_text_and_defaults_are_shown():
    missing = [
        (name, a.option_strings or a.dest)
        for name, p in _tool_parsers().items()
        for a in p._actions
        if a.help is None and not isinstance(a, argparse._SubParsersAction)
    ]
    assert missing == []
    arena_help = _tool_parsers()["pdx arena"].format_help()
    for shown in ("(default: 20)", "(default: bayeselo)", "(default: 1024)", "(default: 0.0)"):
        assert shown in " ".join(arena_help.split()), shown
    assert "(default: None)" not in arena_help and "(default: False)" not in arena_help


def test_pdx_fit_help_lists_the_nested_self_play_options(tmp_path):
    r = _pdx("fit", "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    for opt in ("--model.algorithm.temperature", "--model.selfplay.n_games", "--model.selfplay.max_plies"):
        assert opt in r.stdout, opt
