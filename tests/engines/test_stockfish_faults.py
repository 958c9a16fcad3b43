"""Stockfish faults: a process killed mid-search is restarted and the work retried; a hung search
is bounded by a timeout and the hung process killed (fake UCI engines that never answer ``go``)."""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time

import chess
import chess.engine
import pytest

from pdx_lightning.engines import stockfish as sf
from pdx_lightning.supervised import teacher as teacher_mod
from pdx_lightning.supervised.teacher import Teacher, TeacherError

FAKE_ENGINE = r'''#!{python}
"""A UCI engine that handshakes and then {behaviour} on `go`."""
import os, sys, time
behaviour = {behaviour!r}
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "uci":
        print("id name FakeFish", "option name Threads type spin default 1 min 1 max 8",
              "option name Hash type spin default 16 min 1 max 64",
              "option name MultiPV type spin default 1 min 1 max 64",
              "option name UCI_ShowWDL type check default false", "uciok", sep="\n", flush=True)
    elif cmd[0] == "isready":
        print("readyok", flush=True)
    elif cmd[0] == "go":
        if behaviour == "dies":
            os._exit(3)
        if behaviour == "hangs_hard":  # wedged: reads nothing more (ignores stop and quit)
            while True:
                time.sleep(3600)
        # "hangs": the search never ends (no bestmove, even after stop), the process still reads
    elif cmd[0] == "quit" and behaviour != "hangs_hard":
        sys.exit(0)
'''
MATE_IN_1 = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")


def fake_engine(tmp_path, behaviour: str) -> str:
    path = tmp_path / f"fakefish_{behaviour}"
    path.write_text(FAKE_ENGINE.format(python=sys.executable, behaviour=behaviour))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_later(pid: int, seconds: float) -> threading.Timer:
    t = threading.Timer(seconds, lambda: alive(pid) and os.kill(pid, signal.SIGKILL))
    t.start()
    return t


# ---------------------------------------------------------------- hung searches (no Stockfish needed)


@pytest.mark.parametrize("behaviour", ["hangs", "hangs_hard"])
def test_teacher_hung_search_is_bounded_and_the_hung_process_killed(tmp_path, monkeypatch, behaviour):
    monkeypatch.setattr(teacher_mod, "_SEARCH_TIMEOUT", 1.0)
    t = Teacher(fake_engine(tmp_path, behaviour), nodes=100)
    pids = [t.pid]
    t0 = time.monotonic()
    with pytest.raises(TeacherError, match="6k1/5ppp"):  # the position is named
        t.label(MATE_IN_1)
    elapsed = time.monotonic() - t0
    assert t.restarts == 1  # restarted, retried once, then gave up
    assert elapsed < 2 * (1.0 + sf.QUIT_GRACE) + 15, elapsed
    pids.append(t.pid)
    t.close()
    time.sleep(0.5)
    assert not any(alive(p) for p in pids)  # no hung engine left behind


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(sf, "QUIT_GRACE", 0.5)


@pytest.mark.parametrize(
    "behaviour,method", [("hangs_hard", "play"), ("hangs", "analyse"), ("dies", "play"), ("dies", "analyse")]
)
def test_engine_play_and_analyse_are_bounded_and_failures_named(tmp_path, behaviour, method):
    eng = sf.open_engine(fake_engine(tmp_path, behaviour), search_timeout=1.0)
    pid = eng.transport.get_pid()
    t0 = time.monotonic()
    with pytest.raises(sf.EngineFailure, match="6k1/5ppp"):
        if method == "play":
            eng.play(MATE_IN_1, chess.engine.Limit(nodes=1000))
        else:
            eng.analyse(MATE_IN_1, chess.engine.Limit(depth=5), multipv=2)
    assert eng.restarts == 2
    assert time.monotonic() - t0 < 2 * (1.0 + 2 * sf.QUIT_GRACE) + 20
    last = eng.transport.get_pid()
    eng.quit()
    time.sleep(0.5)
    assert not alive(pid) and not alive(last)


# ---------------------------------------------------------------- killed mid-search (real Stockfish)


@pytest.mark.stockfish
def test_engine_killed_mid_search_is_restarted_and_the_move_retried(stockfish_path, caplog):
    eng = sf.open_engine(stockfish_path)
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    pid = eng.transport.get_pid()
    timer = kill_later(pid, 0.3)
    with caplog.at_level("WARNING"):
        result = eng.play(board, chess.engine.Limit(nodes=300_000), game="g1")
    timer.join()
    assert board.is_legal(result.move)
    if eng.restarts:  # the kill landed during the search (the usual case)
        assert eng.restarts == 1 and not alive(pid)
        assert board.fen() in caplog.text
    infos = eng.analyse(board, chess.engine.Limit(nodes=2000), multipv=3)
    assert len(infos) == 3
    eng.quit()


@pytest.mark.stockfish
def test_engine_dead_before_the_call_is_restarted(stockfish_path):
    eng = sf.open_engine(stockfish_path)
    os.kill(eng.transport.get_pid(), signal.SIGKILL)
    time.sleep(0.2)
    move = eng.play(chess.Board(), chess.engine.Limit(nodes=500)).move
    assert chess.Board().is_legal(move) and eng.restarts == 1
    eng.quit()


@pytest.mark.stockfish
def test_teacher_killed_mid_search_restarts_and_relabels(stockfish_path):
    with Teacher(stockfish_path, nodes=200_000, multipv=4) as t:
        board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
        pid = t.pid
        timer = kill_later(pid, 0.3)
        lab = t.label(board)
        timer.join()
        assert abs(float(lab.probs.sum()) - 1.0) < 1e-5
        assert t.restarts <= 1
        if t.restarts:  # the kill landed during the search (the usual case)
            assert not alive(pid)


@pytest.mark.stockfish
def test_arena_stockfish_player_survives_a_killed_engine(stockfish_path):
    from pdx_lightning.evaluation.arena_players import StockfishPlayer

    player = StockfishPlayer("sf", "sf:nodes=500", stockfish_path)

    class G:  # the attributes choose() reads
        def __init__(self, i):
            self.board, self.id, self.moves = chess.Board(), i, []

    os.kill(player.engine.transport.get_pid(), signal.SIGKILL)
    time.sleep(0.2)
    moves = player.choose([G(0), G(1)])
    assert all(chess.Board().is_legal(m) for m, _ in moves)
    player.close()


@pytest.mark.stockfish
def test_opening_generator_survives_a_killed_engine(stockfish_path):
    import random

    from pdx_lightning.datagen.opening_suite import random_line

    eng = sf.open_engine(stockfish_path)
    os.kill(eng.transport.get_pid(), signal.SIGKILL)
    time.sleep(0.2)
    random_line(
        eng,
        random.Random(0),
        "line-0",
        band=(-10_000, 10_000),
        min_plies=2,
        max_plies=3,
        select_nodes=500,
        eval_nodes=500,
    )
    assert eng.restarts == 1
    eng.quit()


@pytest.mark.stockfish
def test_suite_generator_game_survives_an_engine_killed_mid_game(stockfish_path):
    """pdx data mates|puzzles play their games through open_engine: a kill mid-game costs one retried search."""
    import random

    from pdx_lightning.datagen.common import fresh_analyse, play_game

    eng = sf.open_engine(stockfish_path)
    boards = []
    for k, board in enumerate(play_game(eng, random.Random(3), max_plies=24, style="blunders")):
        boards.append(board.copy())
        if k == 10:
            os.kill(eng.transport.get_pid(), signal.SIGKILL)
    assert len(boards) == 24 or boards[-1].is_game_over()
    assert eng.restarts == 1
    info = fresh_analyse(eng, boards[-1], chess.engine.Limit(nodes=500))
    assert "score" in info
    eng.quit()
