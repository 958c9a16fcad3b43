"""Arena output people already read (issue 18 items 4, 5): the cutechess-style pair block equals
``match.summarize`` on the tallies, PGN streamed as games finish, PGN opening books end to end, SPRT stop."""

from __future__ import annotations

import argparse
import io
import json
import re

import chess
import chess.pgn
import pytest
import torch

from pdx_lightning.chesscore.opening_files import load_openings
from pdx_lightning.chesscore.rules import GameResult, Reason
from pdx_lightning.evaluation import arena, match
from pdx_lightning.evaluation.arena_game import ArenaError, Game
from pdx_lightning.evaluation.arena_loop import play_games, round_robin
from pdx_lightning.evaluation.arena_players import make_player
from pdx_lightning.evaluation.arena_report import SprtMonitor
from pdx_lightning.evaluation.elo import pair_record
from pdx_lightning.runtime.kernels import cpu_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _args(tmp_path, *models: str, **over) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    models = models or ("random:tiny:0", "random:tiny:1", "random:tiny:2")
    argv = [x for m in models for x in ("--model", m)]
    argv += [
        "--games",
        "4",
        "--max-plies",
        "40",
        "--quiet",
        "--threads",
        "1",
        "--sample",
        "--json",
        str(tmp_path / "r.json"),
        "--md",
        str(tmp_path / "r.md"),
        "--pgn",
        str(tmp_path / "r.pgn"),
    ]
    for k, v in over.items():
        argv += [f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)])
    return p.parse_args(argv)


def _games(pgn_text: str) -> list[chess.pgn.Game]:
    stream, out = io.StringIO(pgn_text), []
    while (g := chess.pgn.read_game(stream)) is not None:
        out.append(g)
    return out


def test_pair_blocks_equal_match_summarize_on_the_tallies(tmp_path, capsys):
    """Every pair's printed block (Score of / Elo difference / LOS / DrawRatio / Ptnml) is exactly
    ``match.summarize`` of that pair's record in ``counts`` and its opening pairs' scores."""
    assert arena.run(_args(tmp_path, games=6)) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    # the record says what made it: versions, the CPU kernels in force, the match's threads, the CPU
    env = rep["environment"]
    assert env["torch"] == torch.__version__ and env["threads"] == 1
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and env["cpu"] == cpu_model()
    assert {"lightning", "numpy", "pdx_commit", "kernels"} <= env.keys()
    labels = [p["label"] for p in rep["players"]]
    counts = rep["counts"]
    import numpy as np

    counts = np.asarray(counts)
    md = capsys.readouterr().out
    block = md.split("### Matches")[1].split("```")[1]
    assert len(rep["matches"]) == 3
    for m in rep["matches"]:
        i, j = labels.index(m["a"]), labels.index(m["b"])
        assert i < j
        w, d, lo = pair_record(counts, i, j)
        # the pentanomial from the games themselves: games 2k and 2k+1 of the schedule share an opening
        by_pair: dict[int, float] = {}
        whole: dict[int, int] = {}
        for k, g in enumerate(rep["games"]):
            if {g["white"], g["black"]} != {m["a"], m["b"]}:
                continue
            s = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[g["result"]]
            by_pair[k // 2] = by_pair.get(k // 2, 0.0) + (s if g["white"] == m["a"] else 1.0 - s)
            whole[k // 2] = whole.get(k // 2, 0) + 1
        pairs = [by_pair[k] for k in sorted(by_pair) if whole[k] == 2]
        assert len(pairs) == 3
        expect = match.summarize(m["a"], m["b"], w, lo, d, pairs)
        assert (m["wins"], m["losses"], m["draws"]) == (w, lo, d)
        assert (w, lo, d) == (expect.wins, expect.losses, expect.draws)
        assert m["lines"] == expect.lines()
        for line in expect.lines():
            assert line in block
        assert m["pentanomial"] == list(expect.pentanomial) and sum(m["pentanomial"]) == 3
        assert m["los"] == pytest.approx(expect.los) and m["draw_ratio"] == pytest.approx(d / (w + d + lo))
    assert re.search(r"Score of random:tiny:0 vs random:tiny:1: \d+ - \d+ - \d+  \[\d\.\d{3}\] 6", block)


def test_pgn_is_written_as_games_finish(tmp_path, monkeypatch):
    """When game n is formatted for the PGN file, the n - 1 games before it are already on disk."""
    seen = []
    to_pgn = arena.to_pgn

    def spy(g, labels, *a, **k):
        text = (tmp_path / "r.pgn").read_text() if (tmp_path / "r.pgn").exists() else ""
        seen.append(text.count("[Event "))
        return to_pgn(g, labels, *a, **k)

    monkeypatch.setattr(arena, "to_pgn", spy)
    assert arena.run(_args(tmp_path, "random:tiny:0", "random:tiny:1", games=6, concurrency=2)) == 0
    assert seen == list(range(6))
    games = _games((tmp_path / "r.pgn").read_text())
    assert sorted(g.headers["Round"] for g in games) == [f"{k}.{c}" for k in (1, 2, 3) for c in (1, 2)]


def test_a_pgn_opening_book_through_the_arena_cli(tmp_path):
    """`--openings book.pgn`: each game of the book is an opening (its end position, its moves as history)."""
    book = tmp_path / "book.pgn"
    book.write_text(
        '[Event "a"]\n[Opening "Italian"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 *\n\n[Event "b"]\n\n1. d4 d5 2. c4 e6 *\n'
    )
    assert arena.run(_args(tmp_path, "random:tiny:0", "random:tiny:1", openings=book)) == 0
    games = _games((tmp_path / "r.pgn").read_text())
    starts = {g.headers["Opening"]: g.board().fen() for g in games}
    italian = chess.Board()
    for m in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4"]:
        italian.push_uci(m)
    qgd = chess.Board()
    for m in ["d2d4", "d7d5", "c2c4", "e7e6"]:
        qgd.push_uci(m)
    assert starts == {"Italian": italian.fen(), "book:2": qgd.fen()}
    assert all("opening" in g.comment for g in games)  # the book line is in the game comment
    rep = json.loads((tmp_path / "r.json").read_text())
    assert sorted({g["opening"] for g in rep["games"]}) == ["Italian", "book:2"]


def _fake_game(gid: int, white: int, winner) -> Game:
    g = Game(gid, white, 1 - white, load_openings()[0], "1.1")
    g.end = GameResult(winner, Reason.CHECKMATE if winner is not None else Reason.THREEFOLD)
    return g


def test_sprt_monitor_counts_complete_pairs_and_decides_once():
    test = match.SPRT(0, 10)
    mon = SprtMonitor(test)
    for k in range(200):  # player 0 wins both games of two pairs in three, draws the third pair
        for gid, white in ((2 * k, 0), (2 * k + 1, 1)):
            winner = None if k % 3 == 2 else (chess.WHITE if white == 0 else chess.BLACK)
            mon(_fake_game(gid, white, winner))
        if mon.decision:
            break
    assert mon.decision == "H1" and len(mon.pairs) == mon.decided_after // 2
    assert set(mon.pairs) == {1.0, 2.0}
    assert mon.llr_at_decision == pytest.approx(match.sprt_status(test, 0, 0, 0, mon.pairs)[0])
    assert mon.llr_at_decision >= test.bounds[1]
    # an incomplete pair does not enter the test
    mon2 = SprtMonitor(test)
    mon2(_fake_game(0, 0, chess.WHITE))
    assert mon2.pairs == [] and mon2.llr == 0.0 and not mon2.stop()


def test_stop_schedules_no_new_pair_but_finishes_started_ones(tmp_path):
    """``play_games(stop=...)``: once stop() is true no pair starts; a started pair's second game is
    played."""
    players = [make_player(f"random:tiny:{s}") for s in range(2)]
    openings = load_openings()[:20]
    sched = round_robin(2, len(openings), 40)
    finished = []
    games = play_games(
        players,
        openings,
        sched,
        max_plies=30,
        concurrency=3,
        progress=False,
        on_finish=finished.append,
        stop=lambda: len(finished) >= 4,
    )
    ids = sorted(g.id for g in games)
    assert len(games) < len(sched) and len(finished) == len(games)
    assert len(ids) % 2 == 0 and ids == list(range(len(ids)))  # whole pairs, in schedule order


def test_sprt_flag_runs_reports_and_is_checked(tmp_path, capsys):
    assert (
        arena.run(_args(tmp_path, "random:tiny:0", "random:tiny:1", games=8, concurrency=2, sprt="0,10,0.2,0.2")) == 0
    )
    rep = json.loads((tmp_path / "r.json").read_text())
    s = rep["sprt"]
    assert (s["elo0"], s["elo1"], s["alpha"], s["beta"]) == (0, 10, 0.2, 0.2)
    assert s["games_played"] == len(rep["games"]) and s["games_scheduled"] == 8
    assert s["decision"] in ("H0", "H1", None)
    assert "SPRT: llr" in capsys.readouterr().out
    with pytest.raises(ArenaError, match="exactly two"):
        arena.run(_args(tmp_path, sprt="0,10"))
    for bad in ("10", "10,0", "0,10,0.7,0.05", "a,b"):
        with pytest.raises(ArenaError, match="--sprt"):
            arena.run(_args(tmp_path, "random:tiny:0", "random:tiny:1", sprt=bad))
