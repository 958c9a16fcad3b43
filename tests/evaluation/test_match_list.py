"""``pdx matches``: a report's matches from one YAML list, resumable and shardable, on real tiny arenas."""

from __future__ import annotations

import json
import lzma
import textwrap
from pathlib import Path

import pytest

from pdx_lightning.cli import main
from pdx_lightning.evaluation.match_list import MatchListError, join_games, load_match_list, record_differences

LIST = """\
work: {work}
arena: {{games: 8, concurrency: 8, openings: data/openings_uho.epd}}
players:
  a: random:tiny
  b: random:tiny:1
matches:
  pass_ab: {{players: [a, b]}}
  n2_ab: {{players: [a, b], nodes: 2}}
"""


def write_list(folder: Path, text: str = LIST) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "list.yaml"
    path.write_text(text.format(work=folder / "work"))
    return path


def games_text(path: Path) -> str:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return f.read()


def test_a_list_plays_each_match_into_its_records_once(tmp_path, capsys):
    path = write_list(tmp_path / "r")
    ml = load_match_list(path)
    assert [m.name for m in ml.matches] == ["pass_ab", "n2_ab"]
    assert ml.matches[1].models == ("search[nodes=2]:random:tiny", "search[nodes=2]:random:tiny:1")
    assert main(["matches", "run", str(path), "--quiet"]) == 0
    for name in ("pass_ab", "n2_ab"):
        record = json.loads((path.parent / f"{name}.json").read_text())
        assert len(record["games"]) == 8
        assert games_text(path.parent / f"{name}.pgn.xz").count("[Round ") == 8
    assert [pl["label"] for pl in record["players"]] == ["a", "b"]
    stamp = (path.parent / "pass_ab.json").stat().st_mtime_ns
    capsys.readouterr()
    assert main(["matches", "run", str(path), "--quiet"]) == 0  # nothing left: no match is played again
    assert "[1/2] pass_ab: done" in capsys.readouterr().err
    assert (path.parent / "pass_ab.json").stat().st_mtime_ns == stamp
    assert main(["matches", "status", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("pass_ab: done")


def test_shards_joined_and_a_saved_partial_give_the_unsplit_match(tmp_path, capsys):
    whole = write_list(tmp_path / "whole")
    assert main(["matches", "run", str(whole), "--only", "pass_*", "--quiet"]) == 0
    split = write_list(tmp_path / "split")
    assert main(["matches", "run", str(split), "--only", "pass_ab", "--shard", "1/2", "--quiet"]) == 0
    assert not (split.parent / "pass_ab.json").exists()
    capsys.readouterr()
    assert main(["matches", "status", str(split), "--only", "pass_ab"]) == 0
    assert capsys.readouterr().out.startswith("pass_ab: 4 games played")
    # the half played is saved beside the records, the streams lost (another machine): the run resumes
    assert main(["matches", "save", str(split), "--only", "pass_ab"]) == 0
    assert games_text(split.parent / "partial" / "pass_ab.pgn.xz").count("[Round ") == 4
    for stream in (split.parent / "work").glob("pass_ab*.pgn"):
        stream.unlink()
    assert main(["matches", "run", str(split), "--only", "pass_ab", "--shard", "2/2", "--quiet"]) == 0
    assert main(["matches", "run", str(split), "--only", "pass_ab", "--quiet"]) == 0
    assert not (split.parent / "partial" / "pass_ab.pgn.xz").exists()
    assert games_text(split.parent / "pass_ab.pgn.xz") == games_text(whole.parent / "pass_ab.pgn.xz")
    one, two = (json.loads((p.parent / "pass_ab.json").read_text()) for p in (whole, split))
    assert one["games"] == two["games"] and one["elo"] == two["elo"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("matches:\n  x: {players: [a, c]}", "match 'x': player 'c' is not in the list's players (a, b)"),
        ("matches:\n  x: {players: [a, b], nodes: 0}", "match 'x': nodes must be a positive integer, got 0"),
        ("matches:\n  x: {players: [a, b], arena: {pgn: f.pgn}}", "match 'x': arena option 'pgn' is set by the list"),
        ("matches:\n  x: {players: [a, b], arena: {games: -2}}", "match 'x': argument --games"),
        ("matches:\n  x: {players: [a, b], arena: {gmaes: 2}}", "match 'x': unrecognized arguments: --gmaes 2"),
        ("matches:\n  x: {players: [a, a]}", "match 'x': a player plays itself"),
        ("matches:\n  x/y: {players: [a, b]}", "a match's name is its records' file stem"),
        ("matches: {}\nextra: 1", "unknown key 'extra'"),
        ("matches: {}", "the list has no matches"),
    ],
)
def test_a_bad_list_is_one_line_naming_the_file_and_match(tmp_path, capsys, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text("players: {a: random:tiny, b: random:tiny:1}\n" + textwrap.dedent(change) + "\n")
    with pytest.raises(MatchListError, match=str(path)):
        load_match_list(path)
    assert main(["matches", "run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pdx matches: error: ") and message in err


def test_two_different_games_of_one_round_are_refused():
    game = '[Round "1.1"]\n[Result "{r}"]\n\n1. e4 e5 {r}\n\n'
    assert list(join_games([game.format(r="1-0"), game.format(r="1-0")])) == [0]  # the same game twice: once
    assert join_games([game.format(r="*")]) == {}  # cut short: played again
    with pytest.raises(MatchListError, match="round 1.1: two different games"):
        join_games([game.format(r="1-0"), game.format(r="0-1")])


def test_status_says_when_a_record_was_played_otherwise_than_listed(tmp_path, capsys):
    path = write_list(tmp_path / "r")
    assert main(["matches", "run", str(path), "--only", "pass_ab", "--quiet"]) == 0
    path.write_text(path.read_text().replace("games: 8", "games: 6"))
    ml = load_match_list(path)
    assert record_differences(ml, ml.matches[0]) == ["games: 8 != 6"]
    capsys.readouterr()
    assert main(["matches", "status", str(path), "--only", "pass_ab"]) == 0
    assert capsys.readouterr().out.startswith("pass_ab: done, but played otherwise (games: 8 != 6)")


def test_vars_fill_model_strings_and_the_environment_wins(tmp_path, monkeypatch):
    path = tmp_path / "v.yaml"
    path.write_text(
        "vars: {NET: random:tiny, ENGINE: lc0}\n"
        "players: {a: '${NET}', b: 'uci:${ENGINE} --threads=1', c: 'sf:nodes=1'}\n"
        "matches:\n  m: {players: [a, b, c], nodes: 4}\n  bad: {players: {a: '${NOPE}', b: x}}\n"
    )
    with pytest.raises(MatchListError, match=r"match 'bad': player 'a': \$\{NOPE\} is not one of the list's vars"):
        load_match_list(path)
    path.write_text(path.read_text().split("  bad:")[0])
    monkeypatch.setenv("ENGINE", "/opt/lc0")
    (m,) = load_match_list(path).matches
    assert m.models == ("search[nodes=4]:random:tiny", "uci[nodes=4]:/opt/lc0 --threads=1", "sf:nodes=1")


def test_a_damaged_saved_partial_is_one_line_naming_it(tmp_path, capsys):
    path = write_list(tmp_path / "r")
    saved = path.parent / "partial" / "pass_ab.pgn.xz"
    saved.parent.mkdir()
    good = lzma.compress(b'[Round "1.1"]\n[Result "1-0"]\n\n1. e4 e5 1-0\n\n')
    for damaged in (good[: len(good) // 2], good[:20] + b"\x00" * 40 + good[60:]):
        saved.write_bytes(damaged)
        assert main(["matches", "status", str(path), "--only", "pass_ab"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(saved) in err and ("truncated xz" in err or "corrupt xz" in err)
