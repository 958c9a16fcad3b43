"""The network as a UCI engine: in-process transcripts, a real subprocess, python-chess as the client."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest
import torch

from pdx_lightning.engines import uci
from pdx_lightning.engines.uci import MAX_HALFMOVE_CLOCK, MAX_LINE_CHARS, UciEngine, UciOptionError, score_to_cp

UCI_CMD = [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", "random:tiny"]
BASE_CMD = [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", "base:small"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}


@pytest.fixture(autouse=True)
def restore_torch_threads():
    # in-process engines set torch's thread count (UCI option Threads, default 1): restore it
    import torch

    old = torch.get_num_threads()
    yield
    torch.set_num_threads(old)


class Transcript:
    """An in-process engine; ``send`` returns the lines it answered."""

    def __init__(self, **kw):
        self.out = io.StringIO()
        self.engine = UciEngine("random:tiny", self.out, **kw)

    def send(self, *lines: str) -> list[str]:
        start = self.out.tell()
        for line in lines:
            assert self.engine.handle(line + "\n")
        self.out.seek(start)
        got = self.out.read().splitlines()
        self.out.seek(0, io.SEEK_END)
        return got

    def fen(self) -> str:
        (line,) = self.send("d")
        return line.split("fen ", 1)[1].rsplit(" moves", 1)[0]


def bestmove(lines: list[str]) -> str:
    return next(ln.split()[1] for ln in lines if ln.startswith("bestmove"))


def test_score_to_cp_logistic():
    assert score_to_cp(0.5) == 0
    assert score_to_cp(0.59) == pytest.approx(99, abs=2)  # +100 cp ≈ 59 % (Lichess's model)
    assert score_to_cp(0.25) == -score_to_cp(0.75)
    assert score_to_cp(1.0) == 3752 and score_to_cp(0.0) == -3752


def test_handshake_position_and_go():
    t = Transcript()
    out = t.send("uci")
    assert out[0].startswith("id name") and out[-1] == "uciok"
    assert "option name Temperature type string default 0" in out
    assert t.send("isready") == ["readyok"]
    out = t.send("position startpos moves e2e4 e7e5", "go wtime 1000 btime 1000 depth 20 nodes 1")  # nodes 1: one pass
    info, best = out
    f = info.split()
    assert f[:3] == ["info", "depth", "1"] and "score" in f and f[f.index("wdl") + 1 : f.index("wdl") + 4]
    w, d, l_ = (int(x) for x in f[f.index("wdl") + 1 : f.index("wdl") + 4])
    assert w + d + l_ == 1000
    assert int(f[f.index("cp") + 1]) == pytest.approx(score_to_cp((w + d / 2) / 1000), abs=3)  # per-mille rounding
    move = chess.Move.from_uci(best.split()[1])
    board = chess.Board()
    board.push_uci("e2e4"), board.push_uci("e7e5")
    assert move in board.legal_moves and f[-1] == move.uci()


def test_garbage_and_illegal_input_keep_the_engine_running():
    t = Transcript()
    t.send("isready")
    assert t.send("xyzzy 42")[0].startswith("info string error: unknown command")
    assert t.send("") == [] and t.send("   ") == []
    t.send("position startpos moves e2e4")
    before = t.fen()
    out = t.send("position startpos moves e2e4 e7e5 e1e3 g1f3")
    assert out[0].startswith("info string error:") and "illegal move 'e1e3' (move 3" in out[0]
    assert "position refused, the last good one kept" in out[0]
    assert t.fen() == before  # refused as a whole: not the moves before the illegal one
    for bad in [
        "position fen not/a/fen w - - 0 1",
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        "position",
        "position sideways",
    ]:
        assert t.send(bad)[0].startswith("info string error:")
        assert t.fen() == before  # unchanged
    assert t.send("position startpos moves e2e4 zz")[0].startswith("info string error:")
    assert t.send("go") == [
        "info string error: no position to search: the last position command was refused (illegal move 'zz' "
        "(move 2 of the position command) in rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1)",
        "bestmove 0000",
    ]
    t.send("position startpos moves e2e4")  # accepted: go answers again
    for bad in [
        "setoption name Temperature value hot",
        "setoption name NoSuch value 1",
        "setoption Temperature",
        "setoption name Seed value -3",
        "setoption name UCI_ShowWDL value maybe",
    ]:
        assert t.send(bad)[0].startswith("info string error:"), bad
    out = t.send("go depth x searchmoves e9e4 d7d5")  # after 1. e4
    assert out[:2] == [  # one line per kind of bad token
        "info string error: go: ignoring malformed tokens 'depth', 'x'",
        "info string error: searchmoves: ignoring, not legal here, token 'e9e4'",
    ]
    assert bestmove(out) == "d7d5"  # searchmoves restricts the choice to the legal one left
    out = t.send("go " + "nodes x " * 1000)
    assert out[0] == "info string error: go: ignoring malformed tokens 'nodes', 'x', 'nodes' and 1997 more"
    after_e4 = chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    assert bestmove(t.send("go")) in {m.uci() for m in after_e4.legal_moves}


def test_incremental_positions_and_fen_start():
    t = Transcript()
    t.send("position startpos moves g1f3")
    board = t.engine.board
    t.send("position startpos moves g1f3 g8f6 f3g1")
    assert t.engine.board is board and len(board.move_stack) == 3  # extended in place, not replayed
    t.send("position startpos moves d2d4")
    assert t.engine.board is not board and len(t.engine.board.move_stack) == 1
    fen = "7k/8/8/8/8/8/6Q1/6K1 w - - 0 1"
    t.send(f"position fen {fen} moves g2g7")
    assert t.fen() == "7k/6Q1/8/8/8/8/8/6K1 b - - 1 1"
    out = t.send("go")  # stalemate? no: Kxg7 is legal
    assert bestmove(out) == "h8g7"
    t.send("position startpos moves f2f3 e7e5 g2g4 d8h4")
    assert t.send("go") == ["info string no legal move: checkmate", "info depth 0 score mate 0", "bestmove 0000"]
    t.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert t.send("go") == ["info string no legal move: stalemate", "info depth 0 score cp 0", "bestmove 0000"]


def test_infinite_and_ponder_wait_for_stop():
    t = Transcript()
    out = t.send("position startpos", "go infinite")
    assert len(out) == 1 and out[0].startswith("info depth 1")
    out = t.send("stop")
    assert out[0].startswith("bestmove") and t.send("stop") == []
    t.send("go ponder")
    assert t.send("ponderhit")[0].startswith("bestmove")


def test_temperature_seed_and_wdl_options():
    def play(t: Transcript, n: int = 12) -> list[str]:
        moves = []
        for _ in range(n):
            moves.append(bestmove(t.send("position startpos" + (" moves " + " ".join(moves) if moves else ""), "go")))
        return moves

    greedy = play(Transcript())
    assert play(Transcript()) == greedy
    hot = play(Transcript(temperature="1", seed=1))
    assert hot != greedy and play(Transcript(temperature="1", seed=1)) == hot
    assert play(Transcript(temperature="1", seed=2)) != hot
    t = Transcript()
    t.send("setoption name temperature value 1", "setoption name Seed value 1")
    assert play(t) == hot  # case-insensitive names; Seed reseeds
    t.send("setoption name Temperature value 0")
    t.send("ucinewgame")
    assert play(t) == greedy
    t.send("setoption name UCI_ShowWDL value false")
    assert " wdl " not in t.send("go")[0]
    import torch

    t.send("setoption name Threads value 2")
    assert torch.get_num_threads() == 2
    with pytest.raises(UciOptionError):
        UciEngine("random:tiny", io.StringIO(), temperature="warm")


def test_seeded_sampling_survives_a_fast_model_load():
    # regression: a model that loaded before __init__ finished had its generator reset to None,
    # and sampling silently fell back to torch's global RNG
    firsts = {bestmove(Transcript(temperature="1", seed=1).send("position startpos", "go")) for _ in range(30)}
    assert len(firsts) == 1


def test_subprocess_transcript_with_garbage():
    script = (
        "\n".join(
            [
                "uci",
                "isready",
                "garbage line here",
                "position startpos moves e2e4 e7e5 nonsense",
                "go movetime 100",
                "setoption name Temperature value adaptive",
                "go infinite",
                "stop",
                "quit",
                "go",
            ]
        )
        + "\n"
    )
    res = subprocess.run(UCI_CMD, input=script, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "uciok" in lines and "readyok" in lines
    # the garbage, the refused position, and each go after it
    assert sum(ln.startswith("info string error:") for ln in lines) == 4
    assert [ln for ln in lines if ln.startswith("bestmove")] == ["bestmove 0000"] * 2  # nothing after quit


def test_invalid_positions_are_refused_and_go_answers_0000():
    t = Transcript()
    t.send("position startpos moves d2d4")
    good = t.fen()
    checked = chess.Board("4k3/8/8/8/8/8/4R3/4K3 b - - 0 1")
    for bad, why in [
        ("position fen 4k3/8/8/8/8/8/4R3/4K3 w - - 0 1", "OPPOSITE_CHECK"),  # the side not to move in check
        (f"position fen 4k3/8/8/8/8/8/4R3/4K3 b - - {'9' * 400} 1", "halfmove clock"),
        (f"position fen 4k3/8/8/8/8/8/4R3/4K3 b - - {MAX_HALFMOVE_CLOCK + 1} 1", "halfmove clock"),
        ("position fen 4k3/8/8/8/8/8/8/4KK2 w - - 0 1", "TOO_MANY_KINGS"),
        ("position fen P3k3/8/8/8/8/8/8/4K3 w - - 0 1", "PAWNS_ON_BACKRANK"),
        ("position fen 4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1", "BAD_CASTLING_RIGHTS"),
        ("position startpos moves e2e4 e7e5 e1e8", "illegal move 'e1e8'"),
        ("position fen not/a/fen w - - 0 1", "expected 8 rows"),
    ]:
        (line,) = t.send(bad)
        assert line.startswith("info string error: position:") and why in line and good in line, (bad, line)
        assert t.fen() == good  # the last good position is kept
        out = t.send("go")
        assert len(out) == 2 and out[0].startswith("info string error: no position to search") and why in out[0]
        assert out[1] == "bestmove 0000"
        assert "refused" in t.send("d")[0]
    assert checked.is_valid()  # the same board with the right side to move is accepted
    assert t.send(f"position fen {checked.fen()}") == []
    assert bestmove(t.send("go")) in {m.uci() for m in checked.legal_moves}
    t.send("position fen 4k3/8/8/8/8/8/4R3/4K3 w - - 0 1", "ucinewgame")  # a new game clears the refusal
    assert bestmove(t.send("go")) in {m.uci() for m in chess.Board().legal_moves}


class _Broken(torch.nn.Module):
    def __init__(self, mode: str):
        super().__init__()
        self.mode = mode

    def forward(self, x):
        from pdx_lightning.nets import NetOutput

        if self.mode == "raise":
            raise RuntimeError("boom")
        return NetOutput(torch.full((x.shape[0], 4288), float("nan")), torch.zeros(x.shape[0], 3))


@pytest.mark.parametrize("mode, why", [("raise", "RuntimeError: boom"), ("nan", "not finite")])
def test_an_internal_error_in_go_still_answers_bestmove(mode, why):
    t = Transcript()
    t.send("isready")
    t.engine.model = _Broken(mode)
    out = t.send("go")
    assert len(out) == 2 and out[0].startswith("info string error: go: internal error") and why in out[0]
    assert out[1] == "bestmove 0000"
    assert t.send("go infinite")[0].startswith("info string error")  # held until stop, as any infinite search
    assert t.send("stop") == ["bestmove 0000"]


def test_held_bestmoves_are_answered_at_ucinewgame_go_and_quit():
    t = Transcript()
    t.send("go infinite")
    assert [ln for ln in t.send("ucinewgame") if ln.startswith("bestmove")]  # not dropped
    t.send("go ponder")
    out = t.send("go")
    assert sum(ln.startswith("bestmove") for ln in out) == 2
    t.send("go infinite")
    start = t.out.tell()
    assert t.engine.handle("quit\n") is False
    assert t.out.getvalue()[start:].startswith("bestmove ")


def test_bad_values_of_options_are_refused():
    t = Transcript()
    for value in ["0", "-3", "257", "20000", "100000", "1e23", "9" * 5000, "٣"]:
        (line,) = t.send(f"setoption name Threads value {value}")
        assert line.startswith("info string error: setoption: UciOptionError: Threads must be an integer in [1, 256]")
    for value in ["-1", "2147483648", "1e23"]:
        assert "Seed must be an integer" in t.send(f"setoption name Seed value {value}")[0]
    for value in ["nan", "inf", "-1", "1e309", "hot"]:
        assert "Temperature must be" in t.send(f"setoption name Temperature value {value}")[0]
    assert t.engine.options == {"Temperature": "0", "Seed": "0", "Threads": "1", "Nodes": "1", "UCI_ShowWDL": "true"}


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--threads", "0"], "--threads must be an integer in [1, 256], got '0'"),
        (["--threads", "-3"], "--threads must be an integer in [1, 256], got '-3'"),
        (["--threads", "20000"], "--threads must be an integer in [1, 256], got '20000'"),
        (["--seed", "1e23"], "--seed must be an integer in [0, 2147483647], got '1e23'"),
        (["--temperature", "nan"], "--temperature must be 'adaptive' or a finite number >= 0, got 'nan'"),
        (["--model", "no_such.pt"], "--model 'no_such.pt': no such file"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2_before_anything_is_answered(flags, message):
    cmd = [*UCI_CMD, *flags]
    res = subprocess.run(cmd, input="uci\nisready\n", capture_output=True, text=True, timeout=60, env=ENV)
    assert res.returncode == 2 and res.stdout == ""
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"pdx uci: error: {message}"), line


def test_a_model_that_fails_to_load_is_reported_and_exits_2(tmp_path):
    import argparse

    bad = tmp_path / "cut.pt"
    bad.write_bytes(b"PK\x03\x04 not a whole network")
    for script, last in [("uci\nisready\ngo\n", "info string error: cannot load"), ("uci\ngo\n", "bestmove 0000")]:
        out = io.StringIO()
        args = argparse.Namespace(model=str(bad), temperature="0", seed="0", threads="1")
        assert uci.run(args, stdin=io.StringIO(script), stdout=out) == 2
        lines = out.getvalue().splitlines()
        assert "uciok" in lines and lines[-1].startswith(last) and "readyok" not in lines
        assert any(ln.startswith(f"info string error: cannot load model '{bad}'") for ln in lines)


def test_an_overlong_go_answers_a_held_search_first_then_says_why_it_has_no_move():
    """Every bestmove 0000 follows an info string since the previous bestmove (the fuzzer's invariant):
    a held ``go infinite`` is answered before the overlong ``go``'s reason, not after it."""
    t = Transcript()
    t.send("position startpos", "go infinite")
    out = t.out.tell()
    t.engine.handle_overlong("go searchmoves e2e4", MAX_LINE_CHARS + 10)
    lines = t.out.getvalue()[out:].splitlines()
    assert [ln.split()[0] for ln in lines] == ["bestmove", "info", "bestmove"], lines
    assert lines[1].startswith("info string error: line of") and lines[2] == "bestmove 0000"


def test_an_overlong_line_is_skipped_in_bounded_memory():
    """50 MB `go searchmoves` through a real pipe: one info string and bestmove 0000, the line never held."""
    import argparse

    r, w = os.pipe()
    size = 50 << 20
    data = [  # built before memory is traced: only the engine's reading counts
        b"uci\nposition startpos\n",
        b"go searchmoves " + b"e2e4 " * (size // 5) + b"\n",
        b"position startpos moves " + b"g1f3 " * (MAX_LINE_CHARS // 5 + 1) + b"\ngo\n",
        b"position startpos moves e2e4\ngo\nquit\n",
    ]

    def feed():
        with os.fdopen(w, "wb") as f:
            for chunk in data:
                f.write(chunk)

    feeder = threading.Thread(target=feed)
    feeder.start()
    out = io.StringIO()
    args = argparse.Namespace(model="random:tiny", temperature="0", seed=0, threads=1)
    stdin = io.TextIOWrapper(os.fdopen(r, "rb"), encoding="utf-8", errors="replace")
    tracemalloc.start()
    try:
        assert uci.run(args, stdin=stdin, stdout=out) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        feeder.join()
        stdin.close()
    assert peak < 12 * MAX_LINE_CHARS, peak  # a few copies of one capped line, not 50 MB
    lines = out.getvalue().splitlines()
    too_long = [ln for ln in lines if "more than 1048576" in ln]
    assert len(too_long) == 2 and f"line of {size // 5 * 5 + 16} characters" in too_long[0]
    best = [ln for ln in lines if ln.startswith("bestmove")]
    assert best[:2] == ["bestmove 0000", "bestmove 0000"]  # the long go; the go after the long position
    after_e4 = chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    assert len(best) == 3 and chess.Move.from_uci(best[2].split()[1]) in after_e4.legal_moves


def _wait_for(stream, text: str, timeout: float = 120) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen.append(line.strip())
        if line.strip() == text:
            return seen
    raise AssertionError(f"no {text!r}: {seen}")


@pytest.mark.parametrize("when", ["loading", pytest.param("ready", marks=pytest.mark.slow)])  # slow: a model load
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGHUP, 0), (signal.SIGINT, 130)])
def test_ending_signals_end_the_engine(when, sig, code):
    p = subprocess.Popen(
        BASE_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    p.stdin.write("uci\n" + ("isready\n" if when == "ready" else ""))
    p.stdin.flush()
    _wait_for(p.stdout, "readyok" if when == "ready" else "uciok")
    p.send_signal(sig)  # "loading": the loader thread is importing torch now
    assert p.wait(60) == code
    assert p.stderr.read() == ""  # no traceback for Ctrl-C either
    p.stdin.close(), p.stdout.close(), p.stderr.close()


def _threads_taking(pid: int, signals: set[int]) -> list[tuple[int, str]]:
    """The threads of ``pid`` that do not block any of ``signals`` (``/proc``), with their wait channels."""
    taking = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        blocked = int(next(ln for ln in status.splitlines() if ln.startswith("SigBlk:")).split()[1], 16)
        if any(not blocked >> (s - 1) & 1 for s in signals):
            taking.append((int(tid), Path(f"/proc/{pid}/task/{tid}/wchan").read_text()))
    return taking


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads each thread's signal mask from /proc (Linux)")
def test_only_the_signal_thread_takes_the_ending_signals():
    # a SIGTERM the kernel delivered to the loader (or a search, or a torch worker) never woke the main
    # thread asleep on stdin: the engine hung (the protocol fuzzer's session 179 of seed 1). Every thread
    # but the sigwait one blocks the ending signals: while the model loads, and after a forward and a
    # search on 2 torch threads (OpenMP's workers are started then)
    ending = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}
    p = subprocess.Popen(
        BASE_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    p.stdin.write("uci\n")
    p.stdin.flush()
    _wait_for(p.stdout, "uciok")
    loading = len(os.listdir(f"/proc/{p.pid}/task"))
    taking_while_loading = _threads_taking(p.pid, ending)
    p.stdin.write("setoption name Threads value 2\nisready\ngo\ngo nodes 8\nisready\n")
    p.stdin.flush()
    _wait_for(p.stdout, "readyok")
    _wait_for(p.stdout, "readyok")
    after = len(os.listdir(f"/proc/{p.pid}/task"))
    taking_after = _threads_taking(p.pid, ending)
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0 and p.stderr.read() == ""
    p.stdin.close(), p.stdout.close(), p.stderr.close()
    for taking in (taking_while_loading, taking_after):
        assert len(taking) == 1 and "sigtimedwait" in taking[0][1], taking
    assert loading >= 3 and after >= 3  # main, the signal thread, the loader / torch's workers


@pytest.mark.parametrize("script", ["", "uci\n", "uci\nquit\n"])
def test_quit_or_end_of_input_during_the_load_exit_0(script):
    for _ in range(2):
        res = subprocess.run(BASE_CMD, input=script, capture_output=True, text=True, timeout=120, env=ENV)
        assert (res.returncode, res.stderr) == (0, "")
        assert res.stdout.endswith("uciok\n") == bool(script)


@pytest.fixture(scope="module")
def engine():
    eng = chess.engine.SimpleEngine.popen_uci(BASE_CMD, timeout=120, env=ENV)
    yield eng
    eng.quit()


def test_python_chess_client(engine):
    assert engine.id["name"].startswith("pdx_lightning")
    board = chess.Board()
    for move in ["d2d4", "d7d5", "c2c4"]:
        board.push_uci(move)
    res = engine.play(board, chess.engine.Limit(time=0.5))
    assert res.move in board.legal_moves
    info = engine.analyse(board, chess.engine.Limit(depth=1))
    assert info["depth"] == 1 and info["score"].relative.score() is not None
    wdl = info["wdl"].relative
    assert wdl.wins + wdl.draws + wdl.losses == 1000
    only = chess.Move.from_uci("g8f6")
    assert engine.play(board, chess.engine.Limit(nodes=1), root_moves=[only]).move == only
    with engine.analysis(board) as analysis:  # go infinite ... stop
        for i in analysis:
            if "pv" in i:
                break
    assert analysis.wait().move in board.legal_moves
    engine.configure({"Temperature": "adaptive", "Seed": 3})
    assert engine.play(board, chess.engine.Limit(nodes=1)).move in board.legal_moves
    engine.configure({"Temperature": "0"})


def test_python_chess_on_a_finished_game(engine):
    mated = chess.Board()
    for m in ["f2f3", "e7e5", "g2g4", "d8h4"]:
        mated.push_uci(m)
    res = engine.play(mated, chess.engine.Limit(nodes=1))
    assert not res.move  # bestmove 0000: python-chess's null move
    info = engine.analyse(mated, chess.engine.Limit(depth=1))
    assert info["score"].relative.is_mate()
    board = chess.Board()
    assert engine.play(board, chess.engine.Limit(time=0.1)).move in board.legal_moves  # and on it goes


PARENT = """
import os, sys, chess, chess.engine
eng = chess.engine.SimpleEngine.popen_uci(["sh", "-c", sys.argv[1]], timeout=120)
if sys.argv[2] == "played":
    board = chess.Board()
    board.push(eng.play(board, chess.engine.Limit(nodes=1)).move)
    eng.analyse(board, chess.engine.Limit(depth=1))
print("ready", flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.parametrize("when", ["loading", pytest.param("played", marks=pytest.mark.slow)])  # slow: a model load
def test_the_engine_exits_when_its_parent_is_killed(tmp_path, when):
    """lichess-bot dies (kill -9): the engine's stdin closes, and it must exit (0), not linger."""
    rc_file = tmp_path / "rc"
    engine_cmd = " ".join(f"'{a}'" for a in BASE_CMD) + f"; echo $? > '{rc_file}'"
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, engine_cmd, when],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert parent.stdout.readline().strip() == "ready"
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 60
    while not (rc_file.exists() and rc_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rc_file.read_text().strip() == "0"
    parent.stdin.close(), parent.stdout.close()


@pytest.mark.stockfish
def test_full_game_against_stockfish(engine):
    from pdx_lightning.engines.stockfish import open_engine

    sf = open_engine()
    try:
        board, game = chess.Board(), chess.pgn.Game()
        node = game
        while not board.is_game_over(claim_draw=True) and board.ply() < 400:
            player = engine if board.turn == chess.WHITE else sf
            move = player.play(board, chess.engine.Limit(nodes=50), game=game).move
            assert move in board.legal_moves
            board.push(move)
            node = node.add_variation(move)
    finally:
        sf.quit()
    game.headers.update({"White": "pdx base:small", "Black": "sf:nodes=50", "Result": board.result(claim_draw=True)})
    parsed = chess.pgn.read_game(io.StringIO(str(game)))
    assert not parsed.errors and parsed.end().board().fen() == board.fen()
    assert board.is_game_over(claim_draw=True) or board.ply() >= 400
