"""Where users meet the search: the arena's search[...] player, pdx uci's go nodes N, eval puzzles --nodes."""

from __future__ import annotations

import json
import subprocess
import sys
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
    [("search[nodes=0]:random:tiny", "must be an integer in"), ("search[depth=2]:random:tiny", "unknown key")],
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


def test_pdx_uci_bad_node_counts_answer_every_go():
    text = (
        "uci\nposition startpos\ngo nodes 0\ngo nodes 2000000\ngo nodes -1\n"
        "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1\ngo nodes 16\nquit\n"
    )
    r = subprocess.run([*PDX, "uci", "--model", "random:tiny"], input=text, capture_output=True, text=True, timeout=120)
    lines = r.stdout.splitlines()
    assert sum(ln.startswith("bestmove") for ln in lines) == 4
    assert sum("go nodes must be in [1, 1,000,000]" in ln for ln in lines) == 3
    assert any("stalemate" in ln for ln in lines)


def test_eval_puzzles_nodes(tmp_path):
    out = tmp_path / "p.json"
    suite = ROOT / "pdx_lightning" / "data" / "lichess" / "puzzles_random_2k.csv"
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
