"""The network as a UCI engine: in-process transcripts, a real subprocess, python-chess as the client."""

from __future__ import annotations

import io
import subprocess
import sys

import chess
import chess.engine
import chess.pgn
import pytest

from pdx_lightning.engines.uci import UciEngine, score_to_cp

UCI_CMD = [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", "random:tiny"]


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
    out = t.send("position startpos moves e2e4 e7e5", "go wtime 1000 btime 1000 depth 20 nodes 5")
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
    out = t.send("position startpos moves e2e4 e7e5 e1e3 g1f3")
    assert out[0].startswith("info string error:") and "illegal move 'e1e3' (move 3" in out[0]
    assert t.fen() == chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").fen()
    before = t.fen()
    for bad in [
        "position fen not/a/fen w - - 0 1",
        "position fen 8/8/8/8/8/8/8/8 w - - 0 1",
        "position",
        "position sideways",
    ]:
        assert t.send(bad)[0].startswith("info string error:")
        assert t.fen() == before  # unchanged
    assert t.send("position startpos moves e2e4 zz")[0].startswith("info string error:")
    for bad in [
        "setoption name Temperature value hot",
        "setoption name NoSuch value 1",
        "setoption Temperature",
        "setoption name Seed value -3",
        "setoption name UCI_ShowWDL value maybe",
    ]:
        assert t.send(bad)[0].startswith("info string error:"), bad
    out = t.send("go depth x searchmoves e9e4 d7d5")  # after 1. e4 (the legal prefix above)
    assert sum(ln.startswith("info string error:") for ln in out) == 3  # 'depth', 'x', 'e9e4'
    assert bestmove(out) == "d7d5"  # searchmoves restricts the choice to the legal one left
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
    assert t.send("go") == ["info depth 0 score mate 0", "bestmove (none)"]
    t.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert t.send("go") == ["info depth 0 score cp 0", "bestmove (none)"]


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
    with pytest.raises(ValueError):
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
    assert sum(ln.startswith("info string error:") for ln in lines) == 2
    assert sum(ln.startswith("bestmove") for ln in lines) == 2  # nothing after quit


def test_bad_model_reports_and_exits():
    import argparse

    from pdx_lightning.engines import uci

    out = io.StringIO()
    args = argparse.Namespace(model="no_such.pt", temperature="0", seed=0, threads=1)
    assert uci.run(args, stdin=io.StringIO("uci\nisready\ngo\n"), stdout=out) == 1
    lines = out.getvalue().splitlines()
    assert "uciok" in lines and lines[-1].startswith("info string error: cannot load model 'no_such.pt'")
    args.temperature = "warm"
    assert uci.run(args, stdin=io.StringIO("uci\n"), stdout=io.StringIO()) == 2


@pytest.fixture(scope="module")
def engine():
    eng = chess.engine.SimpleEngine.popen_uci(UCI_CMD, timeout=120)
    yield eng
    eng.quit()


def test_python_chess_client(engine):
    assert engine.id["name"].startswith("pdx_lightning")
    board = chess.Board()
    for uci in ["d2d4", "d7d5", "c2c4"]:
        board.push_uci(uci)
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
    game.headers.update({"White": "pdx random:tiny", "Black": "sf:nodes=50", "Result": board.result(claim_draw=True)})
    parsed = chess.pgn.read_game(io.StringIO(str(game)))
    assert not parsed.errors and parsed.end().board().fen() == board.fen()
    assert board.is_game_over(claim_draw=True) or board.ply() >= 400
