"""Suite generation (`pdx data mates|puzzles`) with the real Stockfish at low node counts.

Generated mates are re-verified here independently of the generator: every
solver ply is checked move by move with Stockfish (a move is in ``AltMoves``
iff it keeps a mate within the moves left) and, for N <= 2, against a
brute-force python-chess solver.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

import chess
import chess.engine
import pytest

from pdx_lightning.datagen import common
from pdx_lightning.datagen import mate_suite as mates
from pdx_lightning.datagen import puzzle_suite as puzzles
from pdx_lightning.engines.stockfish import StockfishNotFound, find_stockfish, open_engine

try:
    find_stockfish()
    HAVE_STOCKFISH = True
except StockfishNotFound:
    HAVE_STOCKFISH = False

pytestmark = [pytest.mark.stockfish, pytest.mark.skipif(not HAVE_STOCKFISH, reason="Stockfish not installed")]


def _args(out, **kw) -> argparse.Namespace:
    base = dict(
        out=str(out),
        count=2,
        workers=1,
        seed=0,
        nodes=20_000,
        scan_nodes=2_000,
        max_minutes=None,
        stockfish=None,
        quiet=True,
        rerate=False,
    )
    base.update(kw)
    return argparse.Namespace(**base)


def _rows(path) -> list[dict]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == common.FIELDS
        return list(reader)


@pytest.fixture(scope="module")
def engine():
    e = open_engine()
    yield e
    e.quit()


@pytest.fixture(scope="module")
def mate_suites(tmp_path_factory):
    d = tmp_path_factory.mktemp("mates")
    out = {}
    for n in (1, 2):
        out[n] = d / f"m{n}.csv"
        assert mates.run(_args(out[n], depth=n, seed=n)) == 0
    return out


# ---- independent checkers -------------------------------------------------


def _brute_mates_within(board: chess.Board, k: int) -> bool:
    """Solver to move mates within k moves (python-chess only; k <= 2)."""
    return any(_brute_move_mates_within(board, m, k) for m in list(board.legal_moves))


def _brute_move_mates_within(board: chess.Board, move: chess.Move, k: int) -> bool:
    board.push(move)
    try:
        if board.is_checkmate():
            return True
        replies = list(board.legal_moves)
        if k == 1 or not replies:
            return False
        for r in replies:
            board.push(r)
            ok = _brute_mates_within(board, k - 1)
            board.pop()
            if not ok:
                return False
        return True
    finally:
        board.pop()


def _sf_move_mates_within(engine, board: chess.Board, move: chess.Move, k: int) -> bool:
    board.push(move)
    try:
        if board.is_checkmate():
            return True
        if k == 1 or board.is_game_over():
            return False
        info = engine.analyse(board, chess.engine.Limit(depth=4 * k + 2, nodes=300_000), game=object())
        score = info["score"].relative  # the defender's view
        return score.is_mate() and -k < score.mate() < 0
    finally:
        board.pop()


# ---- mates ----------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2])
def test_generated_mates_are_exact_and_alternatives_complete(mate_suites, engine, n):
    rows = _rows(mate_suites[n])
    assert len(rows) == 2
    for row in rows:
        moves = row["Moves"].split()
        alts = [g.split() for g in row["AltMoves"].split(common.ALT_SEP)]
        assert len(moves) == 2 * n and len(alts) == n, row
        assert row["Themes"].split()[:2] == ["mate", f"mateIn{n}"]
        assert 600 <= int(row["Rating"]) <= 2300
        board = chess.Board(row["FEN"])
        board.push_uci(moves[0])  # the opponent's setup move
        # exact depth: no mate in n - 1
        assert not any(_sf_move_mates_within(engine, board, m, n - 1) for m in board.legal_moves) if n > 1 else True
        assert not (n > 1 and _brute_mates_within(board, n - 1))
        for i, uci in enumerate(moves[1:]):
            if i % 2 == 0:  # solver ply with k moves left
                k = n - i // 2
                accepted = set(alts[i // 2])
                assert uci in accepted
                for m in board.legal_moves:
                    keeps = _sf_move_mates_within(engine, board, m, k)
                    assert keeps == (m.uci() in accepted), (row["PuzzleId"], m.uci(), k)
                    assert _brute_move_mates_within(board, m, k) == keeps, (row["PuzzleId"], m.uci(), k)
            else:  # defender ply: every reply still loses within k - 1 moves (so all resist equally here)
                k = n - i // 2 - 1
                for r in list(board.legal_moves):
                    board.push(r)
                    assert _brute_mates_within(board, k), (row["PuzzleId"], r.uci())
                    board.pop()
            board.push_uci(uci)
        assert board.is_checkmate()


SHARDS = Path(__file__).parents[1] / "fixtures" / "shards_small"


@pytest.mark.parametrize("n,workers", [(1, 1), (2, 2)])
def test_mates_from_labelled_shards_are_exact_and_stop_when_the_candidates_end(tmp_path, engine, n, workers):
    """--from-shards: candidates are the labelled positions whose stored best line mates in n..n+2; the
    run ends after the last candidate (count not reached), every row is a candidate with its game's
    history, exactly mate in n; the candidate list is frozen in <out>.candidates at the first run."""
    out = tmp_path / f"m{n}.csv"
    cands = mates.shard_candidates(SHARDS, n)
    assert cands and all(len(c) >= 1 for c in cands)
    assert mates.run(_args(out, depth=n, count=1000, from_shards=str(SHARDS), workers=workers)) == 0
    rows = _rows(out)
    assert 0 < len(rows) <= len(cands)
    finals = {tuple(c) for c in cands}
    for row in rows:
        moves = row["Moves"].split()
        board = chess.Board(row["FEN"])
        board.push_uci(moves[0])
        # the solver's position is a candidate's (its FEN is the candidate's position before the setup move)
        assert any(chess.Board().epd() != board.epd() and _replay(c).epd() == board.epd() for c in finals)
        assert len(moves) == 2 * n and row["Themes"].split()[:2] == ["mate", f"mateIn{n}"]
        assert not (n > 1 and _brute_mates_within(board, n - 1))
        for uci in moves[1:]:
            board.push_uci(uci)
        assert board.is_checkmate()
    assert common.candidates_file(out).read_text().splitlines() == [" ".join(c) for c in cands]
    # frozen: a later run reads the file, not the shards (here cut to its first candidate: nothing new)
    common.candidates_file(out).write_text(" ".join(cands[0]) + "\n")
    assert mates.run(_args(out, depth=n, count=1000, from_shards=str(SHARDS))) == 0
    assert _rows(out) == rows


def test_tactics_from_a_frozen_candidate_list_follow_the_game_rules(tmp_path):
    """--from-shards for tactics: a candidate is taken with its last move as the setup move, prev from the
    position before it; a frozen list is read, not rebuilt (here written by hand: the shards are not read).
    3...Nf6?? allows Qxf7#: one mate-in-1 puzzle; 1.e4 (no tactic) none; the run ends with the list."""
    out = tmp_path / "t.csv"
    common.candidates_file(out).write_text("e2e4 e7e5 d1h5 b8c6 f1c4 g8f6\ne2e4\n")
    args = _args(out, count=10, from_shards=str(tmp_path / "no-shards-read"), branches=2)
    assert puzzles.run(args) == 0
    rows = _rows(out)
    assert [(r["FEN"], r["Moves"], r["Themes"]) for r in rows] == [
        ("r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 3 3", "g8f6 h5f7", "mate mateIn1 oneMove")
    ]


def test_tactic_candidates_of_labelled_shards_have_a_setup_move_and_no_material_edge():
    cands = puzzles.shard_candidates(SHARDS)
    assert cands
    for c in cands:
        board = _replay(c)
        assert len(c) >= 1 and not board.is_game_over() and puzzles.material_diff(board, board.turn) <= 0


def _replay(ucis) -> chess.Board:
    b = chess.Board()
    for u in ucis:
        b.push_uci(u)
    return b


def test_solve_on_a_known_mate_in_one(engine):
    board = chess.Board("k7/8/1K6/8/8/8/8/7R w - - 0 1")  # Rh8# is the only mate (Ra1+ lets Kb8 out)
    assert set(mates.solver_distances(engine, board, 1, nodes=10_000)) == {chess.Move.from_uci("h1h8")}
    found = mates.solve(engine, board, 1, 10_000, random.Random(0))
    assert found is not None and found[1] == [["h1h8"]]
    assert mates.solve(engine, board, 2, 10_000, random.Random(0)) is None  # a mate in 1 is not a mate in 2


# ---- tactics --------------------------------------------------------------


def test_puzzles_csv_columns_and_legal_lines(tmp_path):
    out = tmp_path / "tactics.csv"
    assert puzzles.run(_args(out, branches=2, seed=6)) == 0  # seed 6: two tactics in the first game
    rows = _rows(out)
    assert len(rows) == 2
    for row in rows:
        moves = row["Moves"].split()
        alts = [g.split() for g in row["AltMoves"].split(common.ALT_SEP)]
        assert len(moves) % 2 == 0 and len(alts) == len(moves) // 2  # setup + odd-length line
        assert row["RatingDeviation"] == row["Popularity"] == row["NbPlays"] == "0"
        assert row["GameUrl"] == row["OpeningTags"] == ""
        themes = row["Themes"].split()
        assert themes[0] in ("mate", "advantage", "crushing")
        board = chess.Board(row["FEN"])
        for i, uci in enumerate(moves):
            move = chess.Move.from_uci(uci)
            assert move in board.legal_moves, (row["PuzzleId"], i, uci)
            if i % 2 == 1:
                group = alts[i // 2]
                assert uci in group and all(chess.Move.from_uci(a) in board.legal_moves for a in group)
            board.push(move)
        if themes[0] == "mate":
            assert board.is_checkmate()
        else:
            assert len(moves) >= 4  # one-move advantage lines are dropped


def test_win_chances_and_only_move_rule():
    from chess.engine import Cp, Mate

    assert puzzles.win_chances(Cp(0)) == 0 and puzzles.win_chances(Mate(3)) == 1
    assert puzzles.win_chances(Cp(-300)) == pytest.approx(-puzzles.win_chances(Cp(300)))
    board = chess.Board()
    only = puzzles.Pair(chess.Move.from_uci("e2e4"), Cp(500), Cp(0))
    two = puzzles.Pair(chess.Move.from_uci("e2e4"), Cp(500), Cp(400))
    assert puzzles.valid_attack(None, board, only, 1) and not puzzles.valid_attack(None, board, two, 1)


# ---- resumability, pool, flags ---------------------------------------------


def test_resume_after_interruption_no_duplicates(tmp_path):
    out = tmp_path / "m1.csv"
    assert mates.run(_args(out, depth=1, count=2)) == 0  # "interrupted" after 2
    with open(out, "a") as f:
        f.write("m1-s0-g9999999-p001,8/8/8")  # a torn row, as a kill mid-write leaves
    assert mates.run(_args(out, depth=1, count=4)) == 0
    rows = _rows(out)
    assert len(rows) == 4
    assert len({r["PuzzleId"] for r in rows}) == 4
    assert len({common.position_key(r) for r in rows}) == 4
    assert all(not r["PuzzleId"].startswith("m1-s0-g9999999") for r in rows)
    first_two = rows[:2]
    assert mates.run(_args(out, depth=1, count=4)) == 0  # complete: nothing added
    assert _rows(out) == rows and rows[:2] == first_two


def test_writer_rejects_foreign_file(tmp_path):
    out = tmp_path / "x.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(common.SuiteFileError):
        common.SuiteWriter(out)


def test_parallel_workers_and_flags(tmp_path):
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    assert mates.run(_args(a, depth=1, count=3, workers=2)) == 0
    assert len(_rows(a)) == 3
    assert mates.run(_args(b, depth=1, count=2, seed=7)) == 0
    assert [r["PuzzleId"].split("-")[1] for r in _rows(b)] == ["s7", "s7"]
    assert {common.position_key(r) for r in _rows(b)} != {common.position_key(r) for r in _rows(a)[:2]}
    assert mates.run(_args(c, depth=1, count=2, max_minutes=0)) == 0
    assert _rows(c) == []  # --max-minutes 0 stops before the first game


def test_stockfish_flag_is_used(tmp_path):
    with pytest.raises(StockfishNotFound):
        mates.run(_args(tmp_path / "m.csv", depth=1, stockfish=str(tmp_path / "no-such-stockfish")))


class _RecordingEngine:
    """Stands in for Stockfish: every position scores 0 cp; records each search's node budget."""

    def __init__(self):
        self.nodes: list[int] = []

    def analyse(self, board, limit, **kwargs):
        self.nodes.append(limit.nodes)
        return {"score": chess.engine.PovScore(chess.engine.Cp(0), board.turn), "pv": [next(iter(board.legal_moves))]}


def test_tactics_flags_reach_the_search(monkeypatch):
    def short_game(engine, rng, max_plies=200, style="mixed"):
        board = chess.Board()
        for uci in ("e2e4", "e7e5", "g1f3"):
            board.push_uci(uci)
            yield board

    monkeypatch.setattr(common, "play_game", short_game)
    seen = []
    monkeypatch.setattr(puzzles, "analyze_position", lambda e, b, prev, s, nodes: seen.append(nodes))
    counts = {}
    for branches in (0, 2):
        seen.clear()
        eng = _RecordingEngine()
        puzzles.task(eng, _args("-", branches=branches, scan_nodes=1234, nodes=4321), 0)
        counts[branches] = len(seen)
        assert set(eng.nodes) == {1234} and set(seen) == {4321}
    assert counts == {0: 3, 2: 9}  # each position, plus two random setup moves at each


def test_rerate_recomputes_the_same_deterministic_difficulty(mate_suites, tmp_path):
    rows = _rows(mate_suites[2])
    out = tmp_path / "m2.csv"
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, common.FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows({**r, "Rating": 0} for r in rows)
    assert mates.run(_args(out, depth=2, rerate=True)) == 0
    assert [r["Rating"] for r in _rows(out)] == [r["Rating"] for r in rows]
    assert all(600 <= int(r["Rating"]) <= 2300 for r in rows)
