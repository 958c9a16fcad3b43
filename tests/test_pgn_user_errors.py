"""Issue 37 (the PGN part) through the real CLI entry (``pdx_lightning.cli.main``): an infinite
``TimeControl``, impossible ratings and a ``{`` comment left open into the next game end
``pdx eval humans`` and ``pdx data pgn`` in one line (exit 2), or with ``--skip-bad`` are skipped
and counted in the summary, never scored, binned or merged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pdx_lightning.cli import main

FIX = Path(__file__).parent / "fixtures"
UNCLOSED = FIX / "pgn_unclosed_comment.pgn"
HUMANS = ("eval", "humans", "--model", "random:tiny", "--skip-plies", "0", "--min-clock", "0")
GAME = (
    '[Event "t"]\n[WhiteElo "{w}"]\n[BlackElo "{b}"]\n[TimeControl "{tc}"]\n[Result "1-0"]\n\n1. e4 e5 2. Nf3 1-0\n\n'
)


def pgn(tmp_path: Path, name: str, *games: dict) -> Path:
    """A PGN file of short games with these WhiteElo/BlackElo/TimeControl values (defaults: fine)."""
    path = tmp_path / name
    path.write_text("".join(GAME.format(**{"w": "1500", "b": "1500", "tc": "180+0", **g}) for g in games))
    return path


def one_line(capsys, rc: int, command: str, pattern: str) -> str:
    """Exit 2 and one stderr line ``pdx <command>: error: ...`` matching ``pattern``."""
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert err.startswith(f"pdx {command}: error: ") and re.search(pattern, err), err
    return err


@pytest.mark.parametrize("extra", [(), ("--time-control", "blitz")])
def test_infinite_time_control_is_one_line_in_eval_humans(tmp_path, capsys, extra):
    path = pgn(tmp_path, "inf.pgn", {}, {"tc": "1e400+1e400"})
    rc = main([*HUMANS, "--pgn", str(path), *extra])
    one_line(
        capsys,
        rc,
        "eval humans",
        r"inf\.pgn:9: game 2: TimeControl '1e400\+1e400': base '1e400' is not a "
        r"number of seconds .*\(--skip-bad skips and counts such games\)$",
    )


def test_infinite_time_control_is_one_line_in_data_pgn_and_counted_with_skip_bad(tmp_path, capsys):
    path = pgn(tmp_path, "inf.pgn", {}, {"tc": "1e400+1e400"})
    rc = main(["data", "pgn", "--pgn", str(path), "--out", str(tmp_path / "a"), "--time-control", "blitz"])
    one_line(capsys, rc, "data pgn", r"inf\.pgn:9: game 2: TimeControl '1e400\+1e400'")
    rc = main(
        [
            "data",
            "pgn",
            "--pgn",
            str(path),
            "--out",
            str(tmp_path / "b"),
            "--time-control",
            "blitz",
            "--skip-bad",
            "--skip-plies",
            "0",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["games_skipped_bad"]["bad_header"] == 1 and out["games_trained"] == 1
    assert "TimeControl '1e400+1e400'" in out["games_bad_first"][0]


def test_impossible_ratings_are_one_line_or_skipped_never_binned(tmp_path, capsys):
    path = pgn(tmp_path, "neg.pgn", {"w": "-500"}, {"b": "-1e23"}, {"w": "1500", "b": "1600"})
    rc = main([*HUMANS, "--pgn", str(path)])
    one_line(
        capsys,
        rc,
        "eval humans",
        r"neg\.pgn:1: game 1: WhiteElo '-500' is not a rating \(an integer "
        r"0\.\.4000\)",
    )
    rc = main([*HUMANS, "--pgn", str(path), "--skip-bad", "--json", str(tmp_path / "h.json")])
    assert rc == 0 and "skipped 2 bad" in capsys.readouterr().out
    doc = json.loads((tmp_path / "h.json").read_text())
    assert doc["games"]["skipped_bad"]["bad_header"] == 2 and doc["games"]["used"] == 1
    assert "BlackElo '-1e23'" in doc["games"]["bad"][1]
    assert [b["bin"] for b in doc["models"][0]["by_rating"]] == ["1500-1600", "1600-1700"]  # no "<1000"


def test_unclosed_comment_is_one_line_or_skipped_and_the_next_game_stays_apart(tmp_path, capsys):
    rc = main([*HUMANS, "--pgn", str(UNCLOSED)])
    one_line(
        capsys,
        rc,
        "eval humans",
        r"pgn_unclosed_comment\.pgn:1: game 1: line 11 \(\[Event \"Rated Blitz "
        r"game\"\]\) starts another game's headers inside this game's moves",
    )
    rc = main([*HUMANS, "--pgn", str(UNCLOSED), "--skip-bad", "--json", str(tmp_path / "h.json")])
    doc = json.loads((tmp_path / "h.json").read_text())
    assert rc == 0 and doc["games"]["read"] == 3 and doc["games"]["used"] == 1
    assert doc["games"]["skipped_bad"]["merged"] == 2
    assert doc["models"][0]["overall"]["positions"] == 3  # game 3's own three moves only
    capsys.readouterr()
    rc = main(["data", "pgn", "--pgn", str(UNCLOSED), "--out", str(tmp_path / "d")])
    one_line(capsys, rc, "data pgn", r"pgn_unclosed_comment\.pgn:1: game 1: line 11 ")


def test_skip_bad_help_says_what_it_skips(capsys):
    for command in (["eval", "humans"], ["data", "pgn"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "impossible TimeControl/WhiteElo/BlackElo values" in text and "comment left open" in text
