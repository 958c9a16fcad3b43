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


# ---------------------------------------------------------------- every numeric flag checked before any work

GAMES20 = FIX / "lichess_games_20.pgn"
BAD_FLAGS = [
    (("--rating-min", "nan"), r"--rating-min nan: not a finite number"),
    (("--rating-max", "nan"), r"--rating-max nan: not a finite number"),
    (("--min-clock", "nan"), r"--min-clock nan: not a finite number"),
    (("--rating-min", "inf"), r"--rating-min inf: not a finite number"),
    (("--rating-max=-inf",), r"--rating-max -inf: not a finite number"),
    (("--min-clock", "inf"), r"--min-clock inf: not a finite number"),
    (("--min-clock", "-1"), r"--min-clock -1: must be in 0\.\.604800 \(seconds: a week at most\)"),
    (("--min-clock", "1e9"), r"--min-clock 1e\+09: must be in 0\.\.604800"),
    (("--rating-min", "-5"), r"--rating-min -5: must be in 0\.\.4000 \(a rating\)"),
    (("--rating-max", "1e23"), r"--rating-max 1e\+23: must be in 0\.\.4000"),
    (("--rating-min", "2000", "--rating-max", "1000"), r"--rating-min 2000 is above --rating-max 1000"),
    (("--skip-plies", "-1"), r"--skip-plies -1: must be >= 0"),
    (("--max-games", "0"), r"--max-games 0: must be >= 1"),
    (("--max-games", "-1"), r"--max-games -1: must be >= 1"),
]
HUMANS_ONLY = [
    (("--bins", "nan"), r"--bins nan: not a finite number"),
    (("--bins", "1000,inf"), r"--bins inf: not a finite number"),
    (("--bins", "1000,9000"), r"--bins 9000: must be in 0\.\.4000 \(rating edges\)"),
    (("--bins", "2000,1000"), r"--bins: bin edges must be strictly increasing"),
    (("--batch", "0"), r"--batch 0: must be in 1\.\.65536"),
    (("--batch", str(10**12)), r"--batch 1000000000000: must be in 1\.\.65536"),
    (("--micro-batch", "0"), r"--micro-batch: must be an integer in \[1, 65,536\], got '0'"),
]
DATA_ONLY = [
    (("--shard-size", "0"), r"--shard-size 0: must be in 1\.\.1048576"),
    (("--shard-size", str(10**12)), r"--shard-size 1000000000000: must be in 1\.\.1048576"),
    (("--holdout-every", "-1"), r"--holdout-every -1: must be >= 0"),
]


@pytest.mark.parametrize("flags,why", BAD_FLAGS + HUMANS_ONLY)
def test_eval_humans_refuses_bad_numbers_in_one_line_before_loading_a_model(capsys, flags, why):
    # a model that does not exist: the flag is refused before any model is looked at
    try:
        rc = main(["eval", "humans", "--model", "no-such-model.pt", "--pgn", str(GAMES20), *flags])
    except SystemExit as e:  # refused by the flag's type while parsing (pdx_lightning.argtypes): one line, 2
        rc = e.code
    one_line(capsys, rc, "eval humans", why)


@pytest.mark.parametrize("flags,why", BAD_FLAGS + DATA_ONLY)
def test_data_pgn_refuses_bad_numbers_in_one_line_before_writing(tmp_path, capsys, flags, why):
    out = tmp_path / "out"
    rc = main(["data", "pgn", "--pgn", str(GAMES20), "--out", str(out), *flags])
    one_line(capsys, rc, "data pgn", why)
    assert not out.exists()


# ---------------------------------------------------------------- no usable game: one line, exit 2


def test_no_usable_game_is_one_line_in_both_commands(tmp_path, capsys):
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    bad = pgn(tmp_path, "bad.pgn", {"w": "-1"}, {"tc": "nan"})
    rc = main([*HUMANS, "--pgn", str(empty)])
    one_line(capsys, rc, "eval humans", r"no positions to score in .*empty\.pgn: 0 games read, 0 empty")
    rc = main([*HUMANS, "--pgn", str(bad), "--skip-bad"])
    one_line(capsys, rc, "eval humans", r"2 games read, 0 empty, 2 skipped as bad \(bad_header 2\), 0 used")
    rc = main([*HUMANS, "--pgn", str(GAMES20), "--rating-min", "3900"])
    one_line(capsys, rc, "eval humans", r"20 games read, .* 20 used; positions the filters skipped: rating \d+")
    out = tmp_path / "d"
    rc = main(["data", "pgn", "--pgn", str(bad), "--out", str(out), "--skip-bad"])
    one_line(capsys, rc, "data pgn", r"no training records from .*bad\.pgn: 2 games read, 0 empty, 2 skipped")
    rc = main(["data", "pgn", "--pgn", str(GAMES20), "--out", str(out), "--rating-min", "3900", "--holdout-every", "2"])
    one_line(capsys, rc, "data pgn", r"no training records .* games_heldout 10, games_no_move_kept 10$")
    assert list(out.iterdir()) == []  # no settings file or heldout.pgn left: a rerun with other flags is not refused
    assert main(["data", "pgn", "--pgn", str(GAMES20), "--out", str(out), "--max-games", "2"]) == 0


def test_header_only_games_null_moves_and_truncation_are_counted_with_skip_bad(tmp_path, capsys):
    path = tmp_path / "mixed.pgn"
    ok = GAME.format(w="1500", b="1500", tc="180+0")
    path.write_text(
        '[Event "lone"]\n[WhiteElo "2900"]\n\n'  # headers only, then the next game's headers after one blank line
        + ok
        + ok.replace("2. Nf3", "2. -- Nc6")  # a null move
        + ok.replace(" 1-0\n\n", "\n")  # the file ends before the result
    )
    rc = main([*HUMANS, "--pgn", str(path), "--skip-bad", "--json", str(tmp_path / "h.json")])
    doc = json.loads((tmp_path / "h.json").read_text())
    assert rc == 0 and doc["games"]["read"] == 4 and doc["games"]["used"] == 1
    assert {k: v for k, v in doc["games"]["skipped_bad"].items() if v} == {
        "headers_only": 1,
        "null_move": 1,
        "truncated": 1,
    }
    assert doc["models"][0]["overall"]["positions"] == 3 and not [  # game 2's own moves, rated 1500: not 2900
        b for b in doc["models"][0]["by_rating"] if b["bin"] != "1500-1600"
    ]
    capsys.readouterr()
    rc = main(["data", "pgn", "--pgn", str(path), "--out", str(tmp_path / "d"), "--skip-bad", "--skip-plies", "0"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["games_trained"] == 1 and out["records"] == 3
    assert {k: v for k, v in out["games_skipped_bad"].items() if v} == {
        "headers_only": 1,
        "null_move": 1,
        "truncated": 1,
    }


def test_gzip_and_bzip2_pgn_through_the_commands(tmp_path, capsys):
    import bz2
    import gzip

    raw = GAMES20.read_bytes()
    (tmp_path / "g.pgn.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "g.pgn.bz2").write_bytes(bz2.compress(raw)[:-30])  # truncated
    rc = main(["data", "pgn", "--pgn", str(tmp_path / "g.pgn.gz"), "--out", str(tmp_path / "d")])
    assert rc == 0 and json.loads(capsys.readouterr().out)["games_trained"] == 20
    rc = main([*HUMANS, "--pgn", str(tmp_path / "g.pgn.bz2"), "--skip-bad"])
    one_line(
        capsys, rc, "eval humans", r"g\.pgn\.bz2: truncated bzip2 stream \(the download or copy did not finish\?\)$"
    )
