"""Where users meet the search: the arena's search[...] player, pdx uci's go nodes N, eval puzzles --nodes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from tests.search.golden import needs_maia

ROOT = Path(__file__).resolve().parents[2]
PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]


def test_arena_search_player_plays_and_records(tmp_path):
    out = tmp_path / "m.json"
    r = subprocess.run(
        [*PDX, "arena", "--model", "search[nodes=8]:random:tiny", "--model", "random:tiny", "--games", "4",
         "--max-plies", "40", "--json", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert len(doc["games"]) == 4 and doc["players"][0]["model"] == "search[nodes=8]:random:tiny"


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("search[nodes=0]:random:tiny", "must be an integer >= 1 and <= 1,000,000"),
        ("search[depth=2]:random:tiny", "unknown key"),
    ],
)
def test_arena_bad_search_spec_is_one_line(spec, why):
    r = subprocess.run(
        [*PDX, "arena", "--model", spec, "--model", "random:tiny", "--games", "2"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@needs_maia
def test_pdx_uci_go_nodes_64_driven_by_python_chess():
    engine = chess.engine.SimpleEngine.popen_uci([*PDX, "uci", "--model", "base:maia-1900"])
    try:
        board = chess.Board()
        for _ in range(4):
            info = engine.analyse(board, chess.engine.Limit(nodes=64))
            assert info["nodes"] >= 64 and info["depth"] >= 1 and info["seldepth"] >= info["depth"]
            assert info["pv"] and board.is_legal(info["pv"][0]) and "score" in info
            played = engine.play(board, chess.engine.Limit(nodes=64))
            assert played.move in board.legal_moves
            board.push(played.move)
    finally:
        engine.quit()


def test_pdx_uci_bad_node_counts_are_clamped_and_every_go_gets_a_legal_move():
    text = (
        "uci\nposition startpos\ngo nodes 0\ngo nodes 2000000\ngo nodes -1\n"
        "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1\ngo nodes 16\nquit\n"
    )
    r = subprocess.run([*PDX, "uci", "--model", "random:tiny"], input=text, capture_output=True, text=True, timeout=120)
    lines = r.stdout.splitlines()
    best = [ln.split()[1] for ln in lines if ln.startswith("bestmove")]
    assert len(best) == 4, lines
    assert all(chess.Move.from_uci(m) in chess.Board().legal_moves for m in best[:3]), best
    assert best[3] == "0000" and any("stalemate" in ln for ln in lines)  # no legal move: says why
    errors = [ln for ln in lines if "go nodes must be in [1, 1,000,000]" in ln]
    assert [e.split("; ")[-1] for e in errors] == ["searching 1", "searching 1,000,000", "searching 1"], errors


def test_pdx_uci_stop_ends_a_long_search_and_isready_answers_during_it():
    """go nodes 1,000,000 (minutes of search here) is stopped by stop within seconds; isready is answered while
    it runs; quit ends a second one; every go gets exactly one bestmove, a legal one."""
    with subprocess.Popen(
        [*PDX, "uci", "--model", "random:tiny"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    ) as proc:
        _stop_and_quit(proc)


def _stop_and_quit(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None and proc.stdout is not None

    def until(prefix: str) -> list[str]:
        got = []
        while not got or not got[-1].startswith(prefix):
            got.append(proc.stdout.readline().strip())
            assert got[-1] or proc.poll() is None, got
        return got

    try:
        proc.stdin.write("uci\nisready\n")
        until("readyok")
        proc.stdin.write("position startpos moves e2e4\ngo nodes 1000000\n")
        time.sleep(1.0)
        t0 = time.perf_counter()
        proc.stdin.write("isready\n")
        assert until("readyok")[-1] == "readyok"  # not a bestmove first: the search is still running
        proc.stdin.write("stop\n")
        got = until("bestmove")
        stopped_in = time.perf_counter() - t0
        board = chess.Board()
        board.push_uci("e2e4")
        assert chess.Move.from_uci(got[-1].split()[1]) in board.legal_moves
        nodes = int(next(ln for ln in reversed(got) if ln.startswith("info depth")).split(" nodes ")[1].split()[0])
        assert 1 <= nodes < 1_000_000 and stopped_in < 30, (nodes, stopped_in)
        proc.stdin.write("go nodes 1000000\nquit\n")
        assert until("bestmove")[-1].split()[1] in {m.uci() for m in board.legal_moves}
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.stdin.close()


def test_eval_puzzles_nodes(tmp_path):
    out = tmp_path / "p.json"
    suite = ROOT / "data" / "lichess" / "puzzles_random_2k.csv"
    r = subprocess.run(
        [*PDX, "eval", "puzzles", "--model", "random:tiny", "--suite", str(suite), "--sample", "12", "--nodes", "8",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["move_by"] == "search" and doc["nodes"] == 8
    bad = subprocess.run(
        [*PDX, "eval", "puzzles", "--model", "random:tiny", "--suite", str(suite), "--nodes", "4",
         "--move-by", "value"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "cannot go with --move-by value" in bad.stderr
