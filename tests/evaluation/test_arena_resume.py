"""``pdx arena --resume``: a stopped arena continues from its ``--pgn`` stream (``arena_resume``)."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import time

import chess.engine
import chess.pgn
import pytest
import torch

from pdx_lightning import argtypes
from pdx_lightning.evaluation import arena, arena_loop
from pdx_lightning.evaluation.arena_game import ArenaError
from pdx_lightning.evaluation.arena_resume import ArenaResumeError, round_slot

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PLAYERS = ("random:tiny:0", "random:tiny:1", "random:tiny:2")


def _args(d, *extra: str, models=PLAYERS) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    argv = [x for m in models for x in ("--model", m)]
    argv += ["--games", "4", "--max-plies", "60", "--quiet", "--threads", "1", "--concurrency", "1"]
    argv += ["--json", str(d / "r.json"), "--md", str(d / "r.md"), "--pgn", str(d / "r.pgn"), *extra]
    return p.parse_args(argv)


def _texts(pgn: str) -> list[str]:
    """The games of a PGN text, each as its own text (the arena writes them blank-line separated)."""
    stream, out = io.StringIO(pgn), []
    while (g := chess.pgn.read_game(stream)) is not None:
        out.append(str(g))
    return out


def _report(d) -> dict:
    return json.loads((d / "r.json").read_text())


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """An uninterrupted argmax arena: its directory (r.pgn, r.json)."""
    d = tmp_path_factory.mktemp("full")
    torch.set_num_threads(1)
    assert arena.run(_args(d)) == 0
    return d


def _stopped(tmp_path, full, keep: int, cut: bool = True):
    """A directory holding the first ``keep`` games of the full run's PGN and, with ``cut``, the next
    game cut short in its movetext (what a kill while writing leaves)."""
    d = tmp_path / f"stopped{keep}"
    d.mkdir()
    games = _texts((full / "r.pgn").read_text())
    text = "".join(t + "\n\n" for t in games[:keep])
    if cut:
        nxt = games[keep]
        text += nxt[: nxt.index("\n\n") + 12]  # its headers and a few characters of moves
    (d / "r.pgn").write_text(text)
    return d, games


def test_round_slot_is_the_schedule_index_of_the_round_tag():
    assert [round_slot(r) for r in ("1.1", "1.2", "2.1", "37.2")] == [0, 1, 2, 73]
    assert [round_slot(r) for r in ("0.1", "1.3", "1", "a.1", "", "-1.1", "1.")] == [None] * 7


def test_a_resumed_arena_equals_the_uninterrupted_one(tmp_path, full, capsys):
    """5 of 12 games and a cut-short sixth: the 5 are kept as written, the other 7 are played; games,
    counts and ladder equal the uninterrupted run's (argmax, one game in flight: the same batches)."""
    d, games = _stopped(tmp_path, full, keep=5)
    assert arena.run(_args(d, "--resume")) == 0
    want, got = _report(full), _report(d)
    assert got["resumed_games"] == 5 and want["resumed_games"] == 0
    assert got["games"] == want["games"] and got["counts"] == want["counts"]
    assert got["elo"]["ratings"] == want["elo"]["ratings"]
    assert "5 games resumed from a stopped run's PGN, timed: the other 7" in got["markdown"]
    after = _texts((d / "r.pgn").read_text())
    assert after[:5] == games[:5]  # the kept games, as they were written
    assert sorted(after) == sorted(games)  # each game once; the cut-short one replaced by its replay


def test_resume_of_a_finished_arena_plays_nothing_and_a_missing_file_starts_afresh(tmp_path, full, monkeypatch):
    d, _ = _stopped(tmp_path, full, keep=12, cut=False)
    monkeypatch.setattr(arena, "make_player", _no_engine_needed(arena.make_player))
    assert arena.run(_args(d, "--resume")) == 0
    assert _report(d)["games"] == _report(full)["games"] and _report(d)["resumed_games"] == 12
    monkeypatch.undo()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert arena.run(_args(fresh, "--resume")) == 0
    assert _report(fresh)["resumed_games"] == 0 and _report(fresh)["games"] == _report(full)["games"]


def _no_engine_needed(make):
    """make_player whose players refuse to move: a finished arena's resume must not ask them."""

    def wrapped(*a, **k):
        p = make(*a, **k)
        p.choose = lambda games: pytest.fail(f"asked to move in {len(games)} games")
        return p

    return wrapped


def test_adjudicated_games_resume_only_under_adjudicate(tmp_path):
    """Adjudication notes cannot be replayed (no value heads): they are taken as written with
    --adjudicate on, and refused without it."""
    adj = ("--adjudicate", "2", "--adjudicate-draw", "0.0")
    d = tmp_path / "adj"
    d.mkdir()
    assert arena.run(_args(d, *adj)) == 0
    first = _report(d)
    assert first["terminations"].get("adjudication: value heads agree on a draw", 0) > 0
    assert arena.run(_args(d, *adj, "--resume")) == 0
    assert _report(d)["games"] == first["games"] and _report(d)["resumed_games"] == 12
    with pytest.raises(ArenaResumeError, match=r"r\.pgn:\d+: round .*not over after .*needs --adjudicate"):
        arena.run(_args(d, "--resume"))


def _other_result(text: str) -> str:
    """The game with another result, in its header and at the end of its movetext."""
    result = chess.pgn.read_game(io.StringIO(text)).headers["Result"]
    other = "0-1" if result != "0-1" else "1-0"
    assert text.endswith(result)
    return text.replace(f'[Result "{result}"]', f'[Result "{other}"]')[: -len(result)] + other


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda g: [g[0].replace('[White "random:tiny:0"]', '[White "someone"]'), *g[1:]], r"White is 'someone'"),
        (lambda g: [g[0].replace('[Round "1.1"]', '[Round "9.1"]'), *g[1:]], r"Round '9.1' is not a game of this"),
        (lambda g: [*g, g[0]], r"round 1\.1 is in the file twice"),
        (lambda g: [_other_result(g[0]), *g[1:]], r"round 1\.1: the PGN says (1-0|0-1) \(.*\), its moves end in"),
    ],
    ids=["label", "round", "twice", "result"],
)
def test_a_pgn_that_is_not_this_arenas_is_refused_in_one_line(tmp_path, full, edit, message):
    d, games = _stopped(tmp_path, full, keep=12, cut=False)
    games.sort(key=lambda t: chess.pgn.read_headers(io.StringIO(t))["Round"] != "1.1")  # round 1.1 first
    (d / "r.pgn").write_text("".join(t + "\n\n" for t in edit(games)))
    before = (d / "r.pgn").read_text()
    with pytest.raises(ArenaResumeError, match=message) as e:
        arena.run(_args(d, "--resume"))
    assert "\n" not in str(e.value) and str(d / "r.pgn") in str(e.value)
    assert (d / "r.pgn").read_text() == before  # nothing is lost


def test_other_openings_order_and_a_cut_in_the_middle_are_refused(tmp_path, full):
    d, games = _stopped(tmp_path, full, keep=12, cut=False)
    with pytest.raises(ArenaResumeError, match=r"(Opening|starting position) is .*--seed"):
        arena.run(_args(d, "--resume", "--seed", "1"))
    cut = games[1].rsplit(" ", 1)[0]  # all its moves, no termination marker
    (d / "r.pgn").write_text(games[0] + "\n\n" + cut + "\n\n" + games[2] + "\n\n")
    with pytest.raises(ArenaResumeError, match=r"r\.pgn:\d+: a game cut short before the end of the file"):
        arena.run(_args(d, "--resume"))


def test_a_game_that_goes_on_after_its_end_is_refused(tmp_path, full):
    """A legal move after the move that ended the game (by the rules or the ply cap)."""
    d, games = _stopped(tmp_path, full, keep=0, cut=False)
    for text in games:
        g = chess.pgn.read_game(io.StringIO(text))
        last = g.end()
        if any(last.board().legal_moves):
            break
    else:
        pytest.skip("every game ended in mate or stalemate")
    extra = last.add_variation(next(iter(last.board().legal_moves)))
    extra.comment, last.comment = last.comment, ""
    (d / "r.pgn").write_text(str(g) + "\n\n")
    with pytest.raises(ArenaResumeError, match=r"round [\d.]+: the game ended at ply \d+ \(.*\) but goes on"):
        arena.run(_args(d, "--resume"))


def test_resume_needs_pgn(tmp_path):
    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    args = p.parse_args(["--model", "random:tiny:0", "--model", "random:tiny:1", "--games", "2", "--resume"])
    with pytest.raises(ArenaError, match="--resume continues a stopped arena from its --pgn file: give --pgn"):
        arena.run(args)


@pytest.mark.slow
@pytest.mark.parametrize("concurrency", [4, 1], ids=["every-move-cleared", "game-keeps-its-search"])
def test_a_killed_engine_arena_resumes_to_the_uninterrupted_result(tmp_path, stockfish_path, concurrency):
    """A real SIGKILL of `pdx arena` (two Stockfish players at fixed nodes, one thread: deterministic)
    once a few games are on disk; `--resume` with the same command gives the same games as a run that
    was never stopped: with 4 games in flight (every move searched after ucinewgame; with the game alone
    as the search token, the last games in flight reused their searches and one game of 24 differed)
    and with one (each game keeps its hash between its moves)."""
    cmd = [sys.executable, "-m", "pdx_lightning.cli", "arena", "--model", "sf:nodes=200", "--model", "sf:nodes=400"]
    cmd += ["--games", "24", "--max-plies", "80", "--concurrency", str(concurrency), "--quiet"]
    cmd += ["--stockfish", stockfish_path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def out(d):
        return ["--pgn", str(d / "r.pgn"), "--json", str(d / "r.json")]

    full, killed = tmp_path / "full", tmp_path / "killed"
    for d in (full, killed):
        d.mkdir()
    subprocess.run([*cmd, *out(full)], env=env, check=True, capture_output=True, timeout=600)
    proc = subprocess.Popen([*cmd, *out(killed)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _count(killed) < 6:
        assert proc.poll() is None and time.monotonic() < deadline, "the arena ended before it could be killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stopped = _count(killed)
    assert 6 <= stopped < 24
    r = subprocess.run([*cmd, *out(killed), "--resume"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    want, got = _report(full), _report(killed)
    assert got["engine_search"] == want["engine_search"] == ("game" if concurrency == 1 else "move")
    assert got["resumed_games"] >= stopped - 1  # the last game on disk may have been cut short
    assert got["games"] == want["games"] and got["counts"] == want["counts"]
    assert sorted(_texts((killed / "r.pgn").read_text())) == sorted(_texts((full / "r.pgn").read_text()))


def _count(d) -> int:
    return (d / "r.pgn").read_text().count("[Event ") if (d / "r.pgn").exists() else 0


def test_engine_search_tokens_clear_every_move_or_keep_a_game(tmp_path):
    """python-chess sends ucinewgame when play()'s game= token changes: every move (the default) or
    every game (keep_search, the arena's --concurrency 1)."""
    from types import SimpleNamespace

    from pdx_lightning.chesscore.opening_files import load_openings
    from pdx_lightning.evaluation.arena_game import Game
    from pdx_lightning.evaluation.arena_players import EnginePlayer

    tokens = []

    def play(board, limit, game):
        tokens.append(game)
        return SimpleNamespace(move=next(iter(board.legal_moves)))

    player = EnginePlayer("e", [SimpleNamespace(play=play)], chess.engine.Limit(nodes=1), "fake")
    o = load_openings()[0]
    g = Game(7, 0, 1, o, "4.2")
    for _ in range(2):
        player.choose([g])
        g.moves.append(None)  # the next ply of the same game
    player.keep_search = True
    for _ in range(2):
        player.choose([g])
    assert tokens == [(7, 0), (7, 1), 7, 7]


def test_shard_slots_partition_the_schedule_keeping_each_opening_pair_whole():
    shards = [arena_loop.shard_slots(12, k, 4) for k in (1, 2, 3, 4)]
    assert shards[0] == {0, 1, 8, 9} and shards[1] == {2, 3, 10, 11} and shards[3] == {6, 7}
    assert sorted(i for s in shards for i in s) == list(range(12))  # disjoint and complete
    assert arena_loop.shard_slots(12, 1, 1) == frozenset(range(12))
    with pytest.raises(ArenaError, match=r"shard 3/2: K must be in \[1, N\]"):
        arena_loop.shard_slots(12, 3, 2)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1", "1/2/3", "nan/2", "1/inf", "/", "-1/2", "1/1025"])
def test_a_shard_flag_that_is_not_k_of_n_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be K/N with 1 <= K <= N <= 1,024 .*got"):
        argtypes.shard(text)
    assert argtypes.shard(" 2/3 ") == (2, 3) and argtypes.shard("1/1") == (1, 1)


def test_two_shards_joined_and_resumed_equal_the_whole_match(tmp_path, full, monkeypatch):
    """Shards 1/2 and 2/2 play disjoint halves (each opening pair whole); their PGN files joined and
    resumed without --shard give the uninterrupted match's games and ratings, playing nothing."""
    halves = []
    for k in (1, 2):
        d = tmp_path / f"shard{k}"
        d.mkdir()
        assert arena.run(_args(d, "--shard", f"{k}/2")) == 0
        r = _report(d)
        assert r["shard"] == [k, 2] and f"Shard {k}/2: the opening pairs p with p mod 2 = {k - 1} only" in r["markdown"]
        assert {g["round"] for g in r["games"]} == {f"{p + 1}.{c}" for p in range(k - 1, 6, 2) for c in (1, 2)}
        halves.append((d / "r.pgn").read_text())
    joined = tmp_path / "joined"
    joined.mkdir()
    (joined / "r.pgn").write_text(halves[1] + halves[0])
    monkeypatch.setattr(arena, "make_player", _no_engine_needed(arena.make_player))
    assert arena.run(_args(joined, "--resume")) == 0
    want, got = _report(full), _report(joined)
    assert got["games"] == want["games"] and got["counts"] == want["counts"] and got["resumed_games"] == 12
    assert got["elo"]["ratings"] == want["elo"]["ratings"] and got["shard"] is None


def test_a_stopped_shard_resumes_its_own_games_only(tmp_path):
    d = tmp_path / "whole"
    d.mkdir()
    assert arena.run(_args(d, "--shard", "2/3")) == 0
    want = _report(d)
    games = _texts((d / "r.pgn").read_text())
    assert len(games) == 4
    (d / "r.pgn").write_text(games[0] + "\n\n" + games[1][: games[1].index("\n\n") + 12])  # one kept, one cut
    assert arena.run(_args(d, "--shard", "2/3", "--resume")) == 0
    got = _report(d)
    assert got["games"] == want["games"] and got["resumed_games"] == 1


def test_a_shard_needs_pgn_and_no_sprt(tmp_path):
    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    two = ["--model", "random:tiny:0", "--model", "random:tiny:1", "--games", "4"]
    with pytest.raises(ArenaError, match="--shard plays part of a match.*give --pgn"):
        arena.run(p.parse_args([*two, "--shard", "1/2"]))
    with pytest.raises(ArenaError, match="--sprt stops on the whole match's games: it cannot run in a --shard"):
        arena.run(p.parse_args([*two, "--shard", "1/2", "--sprt", "0,10", "--pgn", str(tmp_path / "s.pgn")]))
    assert not (tmp_path / "s.pgn").exists()
