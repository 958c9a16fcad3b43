"""``pdx eval value``: the metrics by hand, the positions (history, what is left out, the seeded sample), the
Stockfish reference, a real run's records, and bad input in one line."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore.pgn_games import read_games
from pdx_lightning.cli import main
from pdx_lightning.evaluation import value_calibration as vc
from pdx_lightning.evaluation.arena_game import opening_line
from pdx_lightning.evaluation.stats import mean_interval

ROOT = Path(__file__).resolve().parents[2]
MATCH = ROOT / "reports" / "searched" / "n64_fwd_s3.pgn.xz"  # 1,000 games pdx's 64-node search played


def _fen_after(*ucis: str) -> str:
    board = chess.Board()
    for u in ucis:
        board.push_uci(u)
    return board.fen()


ITALIAN = ("e2e4", "e7e5", "g1f3", "b8c6")
GAMES = f"""[Event "pdx arena"]
[Result "*"]
[FEN "{_fen_after(*ITALIAN)}"]
[SetUp "1"]

{{ opening x-1: {" ".join(ITALIAN)} }} 3. Bb5 a6 *

[Event "pdx arena"]
[Result "*"]
[FEN "{_fen_after(*ITALIAN)}"]
[SetUp "1"]

{{ opening x-2: d2d4 }} 3. Bb5 a6 *

[Event "human"]
[Result "1-0"]

1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0

"""


@pytest.fixture
def games_pgn(tmp_path: Path) -> Path:
    path = tmp_path / "games.pgn"
    path.write_text(GAMES)
    return path


# ---------------------------------------------------------------- the metrics by hand


def test_cross_entropy_kl_brier_and_expected_score_by_hand():
    ref = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    net = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]])
    ln2 = math.log(2)
    # H((1,0,0), net) = -log 0.5; H((.5,.5,0), net) = -(.5 log .25 + .5 log .5) = 1.5 ln 2
    np.testing.assert_allclose(vc.cross_entropy(ref, net), [ln2, 1.5 * ln2])
    np.testing.assert_allclose(vc.entropy(ref), [0.0, ln2])
    np.testing.assert_allclose(vc.kl_divergence(ref, net), [ln2, 0.5 * ln2])
    # (.5-1)² + .25² + .25² = .375; (.25-.5)² + 0 + .25² = .125
    np.testing.assert_allclose(vc.brier(ref, net), [0.375, 0.125])
    np.testing.assert_allclose(vc.expected_score(net), [0.625, 0.5])
    np.testing.assert_allclose(vc.expected_score(ref), [1.0, 0.75])
    assert vc.kl_divergence(ref, ref).tolist() == [0.0, 0.0] and vc.brier(ref, ref).tolist() == [0.0, 0.0]
    # a network probability of 0 where the reference has mass: floored, finite
    assert vc.cross_entropy([[0.0, 1.0, 0.0]], [[0.5, 0.0, 0.5]])[0] == pytest.approx(-math.log(vc.EPS))


def test_sign_agreement_counts_positions_off_one_half():
    net_e = np.array([0.625, 0.05, 0.7, 0.5, 0.4])
    ref_e = np.array([1.0, 0.2, 0.5, 0.9, 0.6])
    # counted: all but the third (ref exactly ½); agreeing: the first two (0.5 agrees with neither side)
    assert vc.sign_agreement(net_e, ref_e) == (2, 4)


def test_calibration_table_of_two_positions_by_hand():
    rows = vc.calibration_table(np.array([0.625, 0.05]), np.array([1.0, 0.2]))
    assert [r["bin"] for r in rows] == [f"{b / 10:.1f}-{(b + 1) / 10:.1f}" for b in range(10)]
    assert [r["positions"] for r in rows] == [1, 0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert (rows[0]["net_e"], rows[0]["ref_e"]) == (0.05, 0.2)
    assert (rows[6]["net_e"], rows[6]["ref_e"]) == (0.625, 1.0)
    assert math.isnan(rows[3]["net_e"]) and math.isnan(rows[3]["ref_e"])
    # the ends: E = 1 falls in the last bin, E = 0 in the first, 0.1 starts the second
    assert [r["positions"] for r in vc.calibration_table(np.array([1.0, 0.0, 0.1]), np.zeros(3))][:2] == [1, 1]
    assert vc.calibration_table(np.array([1.0]), np.zeros(1))[-1]["positions"] == 1


def test_metrics_of_two_positions_and_the_pairing_by_hand():
    ref = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    net = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]])
    m = vc.value_metrics(ref, net, np.array([0, 1]))
    ln2 = math.log(2)
    assert m["positions"] == 2
    assert m["cross_entropy"] == pytest.approx(1.25 * ln2) and m["kl"] == pytest.approx(0.75 * ln2)
    assert m["brier"] == pytest.approx(0.25)
    assert m["e_mae"] == pytest.approx(0.3125) and m["e_bias"] == pytest.approx(-0.3125)  # (-0.375 - 0.25) / 2
    assert (m["sign_agreement"], m["sign_positions"]) == (0.5, 2)  # E_net = 0.5 at the second: no side
    assert m["mean_e"] == pytest.approx(0.5625) and m["mean_draw"] == pytest.approx(0.375)
    assert sum(r["positions"] for r in m["calibration"]) == 2
    # one position per game: the interval is the plain t interval
    assert m["kl_ci"] == pytest.approx(list(mean_interval([ln2, 0.5 * ln2])[1:]))
    p = vc.paired_metrics(ref, ref, net, np.array([0, 1]))
    assert p["kl_diff"] == pytest.approx(-0.75 * ln2) and p["brier_diff"] == pytest.approx(-0.25)
    assert p["e_mae_diff"] == pytest.approx(-0.3125)


def test_clustered_mean_treats_a_game_as_one_cluster():
    x = np.array([1.0, 1.0, 3.0, 3.0])
    m, lo, hi = vc.clustered_mean(x, np.array([[0, 1], [0, 1], [0, 2], [0, 2]]))
    assert m == 2.0 and (lo, hi) == pytest.approx(mean_interval([1.0, 3.0])[1:])  # two clusters, not four values
    assert vc.clustered_mean(x)[1:] == pytest.approx(mean_interval(x)[1:])


# ---------------------------------------------------------------- positions


def test_opening_line_reads_the_arenas_comment():
    assert opening_line("opening pdx-uho-0465: c2c4 a7a6 b2b3") == ("c2c4", "a7a6", "b2b3")
    assert opening_line(" opening an:id: e7e8q ") == ("e7e8q",)  # an id may hold a colon
    for other in ("", "checkmate", "opening x:", "opening x: e4 e5", "a comment: e2e4"):
        assert opening_line(other) == ()


def test_positions_carry_their_history_and_leave_out_the_opening_and_game_over(games_pgn):
    g1, g2, g3 = read_games(games_pgn, setup=True)
    b1, known1 = vc.start_board(g1)
    assert known1 and [m.uci() for m in b1.move_stack] == list(ITALIAN)  # replayed: the arena's history
    b2, known2 = vc.start_board(g2)
    assert not known2 and b2.move_stack == [] and b2.fen() == g2.fen  # the line does not reach the FEN
    b3, known3 = vc.start_board(g3)
    assert known3 and b3.fen() == chess.STARTING_FEN

    skipped = {"opening": 0, "game_over": 0}
    kept1 = [(b.ply(), len(b.move_stack)) for b in vc.game_positions(g1, b1, 0, skipped)]
    assert kept1 == [(5, 5), (6, 6)] and skipped == {"opening": 1, "game_over": 0}  # the FEN's position: given
    kept2 = [(b.ply(), len(b.move_stack)) for b in vc.game_positions(g2, b2, 0, skipped)]
    assert kept2 == [(5, 1), (6, 2)]  # plies from the FEN's move number, history from the FEN
    kept3 = [b.ply() for b in vc.game_positions(g3, b3, 4, skipped)]
    assert kept3 == [4, 5, 6] and skipped == {"opening": 2 + 4, "game_over": 1}  # 4. Qxf7# ends it

    sample = vc.sample_positions(((0, g) for g in read_games(games_pgn, setup=True)), 100, 0, 4)
    assert sample.candidates == len(sample.positions) == 7 and sample.games_used == 3 and sample.from_start == 2
    assert [(s.game, s.ply) for s in sample.positions] == [(1, 5), (1, 6), (2, 5), (2, 6), (3, 4), (3, 5), (3, 6)]
    assert [len(s.board.move_stack) for s in sample.positions] == [5, 6, 1, 2, 4, 5, 6]  # copies, not the live board


def test_reservoir_sample_is_seeded_and_uniform():
    def draw(n, size, seed):
        r = vc.Reservoir(size, seed)
        for i in range(n):
            r.offer(lambda i=i: i)
        return r.items

    assert draw(5, 10, 0) == [0, 1, 2, 3, 4]  # fewer than asked: every item, in order
    assert draw(1000, 20, 7) == draw(1000, 20, 7) and draw(1000, 20, 7) != draw(1000, 20, 8)
    assert len(set(draw(1000, 20, 7))) == 20
    counts = Counter(i for seed in range(4000) for i in draw(5, 2, seed))
    assert all(abs(counts[i] / 4000 - 0.4) < 0.04 for i in range(5))  # each kept with probability 2/5


def test_reference_key_is_the_position_and_its_reversible_moves():
    board = chess.Board()
    for u in ITALIAN:
        board.push_uci(u)
    assert vc.reference_key(board) == (board.fen(), ("g1f3", "b8c6"))  # since 1...e5
    assert vc.reference_key(chess.Board(board.fen())) == (board.fen(), ())


@pytest.mark.stockfish
def test_stockfish_reference_is_the_side_to_moves_wdl_searched_once(stockfish_path):
    ref = vc.StockfishReference("sf:nodes=200", stockfish_path)
    try:
        mate_in_1 = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8#: White wins
        lost = chess.Board("r5k1/5ppp/8/8/8/8/5PPP/6K1 w - - 0 1")  # White to move, a rook down
        w = ref.wdl(mate_in_1)
        assert w.tolist() == [1.0, 0.0, 0.0]
        l1 = ref.wdl(lost)
        assert l1[2] > 0.9 and l1.sum() == pytest.approx(1.0)
        assert ref.wdl(lost.copy()) is l1 and len(ref.cache) == 2  # searched once
        ref.cache.clear()
        assert ref.wdl(lost).tolist() == l1.tolist()  # from a cleared engine: the same W/D/L again
        assert ref.name.startswith("Stockfish") and ref.model.endswith("UCI_ShowWDL win-rate model at 200 nodes")
    finally:
        ref.close()


# ---------------------------------------------------------------- the command


@pytest.mark.stockfish
def test_a_real_run_records_what_it_measured(games_pgn, tmp_path, capsys):
    out, md = tmp_path / "v.json", tmp_path / "v.md"
    argv = ["eval", "value", "--model", "random:tiny", "--label", "a", "--model", "random:tiny:1", "--label", "b"]
    argv += ["--pgn", str(games_pgn), "--pgn", str(MATCH), "--max-games", "3", "--positions", "30"]
    argv += ["--reference", "sf:nodes=200", "--json", str(out), "--md", str(md)]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert doc["command"] == "eval value" and doc["pgn"] == [str(games_pgn), str(MATCH)]
    assert doc["games"]["read"] == doc["games"]["used"] == 6
    assert (doc["games"]["history_from_start"], doc["games"]["history_from_fen"]) == (5, 1)
    pos = doc["positions"]
    assert pos["sampled"] == 30 and pos["candidates"] > 30 and 1 <= pos["unique"] <= 30
    assert (pos["seed"], pos["skip_plies"]) == (0, 8) and pos["skipped"]["opening"] > 0
    ref = doc["reference"]
    assert ref["engine"].startswith("Stockfish") and ref["limit"]["nodes"] == 200 and ref["threads"] == 1
    assert "UCI_ShowWDL win-rate model at 200 nodes" in ref["model"] and ref["positions_per_s"] > 0
    assert len(doc["samples"]) == 30 and all(len(s["models"]) == 2 for s in doc["samples"])
    assert all(sum(s["reference"]) == pytest.approx(1.0, abs=1e-3) for s in doc["samples"])
    assert [(s["pgn"], s["game"], s["ply"]) for s in doc["samples"]] == sorted(
        (s["pgn"], s["game"], s["ply"]) for s in doc["samples"]
    )
    keys = ("cross_entropy", "kl", "brier", "e_mae", "e_bias", "sign_agreement", "mean_e", "mean_draw")
    metrics = [m["metrics"] for m in doc["models"]]
    for m in metrics:
        assert m["positions"] == 30 and all(math.isfinite(m[k]) for k in keys)
        assert m["cross_entropy"] == pytest.approx(m["kl"] + ref["entropy"])
        assert sum(c["positions"] for c in m["calibration"]) == 30 and len(m["calibration"]) == 10
    assert metrics[0]["kl"] != metrics[1]["kl"] and metrics[0]["brier"] != metrics[1]["brier"]
    assert [m["label"] for m in doc["models"]] == ["a", "b"] and doc["models"][0]["sha256"] is None
    assert doc["models"][0]["network"]["family"] and doc["paired"][0]["baseline"] == "a"
    assert doc["paired"][0]["kl_diff"] == pytest.approx(metrics[1]["kl"] - metrics[0]["kl"])
    assert {"pdx_commit", "torch", "chess"} <= set(doc["environment"])
    text = md.read_text()
    assert text.startswith("## Value calibration: W/D/L against Stockfish")
    assert "| a | 30 |" in text and "### Paired with a" in text and "### Calibration: b" in text
    assert text in capsys.readouterr().out


def _one_line(capsys, rc: int, *phrases: str) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("pdx eval value: error: "), err
    for phrase in phrases:
        assert re.search(phrase, err), err
    return err


def test_bad_input_is_one_line(games_pgn, tmp_path, capsys):
    base = ["eval", "value", "--model", "random:tiny", "--pgn", str(games_pgn)]
    missing = tmp_path / "missing.pgn"
    _one_line(capsys, main([*base, "--pgn", str(missing)]), rf"--pgn {re.escape(str(missing))}: no such file")
    _one_line(capsys, main([*base, "--reference", "sf:nodes=abc"]), r"--reference: 'sf:nodes=abc': nodes must be")
    _one_line(capsys, main([*base, "--reference", "sf:elo=1500"]), r"--reference 'sf:elo=1500': .*full strength")
    _one_line(capsys, main([*base, "--reference", "base:maia-1900"]), r"--reference: 'base:maia-1900' is not a")
    _one_line(capsys, main([*base, "--model", "no-such-net.pt"]), r"--model no-such-net\.pt: .*no such file")
    _one_line(capsys, main([*base, "--label", "a", "--label", "b"]), r"--label given 2 times for 1 --model")
    for flag, value in (("--positions", "0"), ("--positions", "1000001"), ("--skip-plies", "-1"), ("--seed", "x")):
        with pytest.raises(SystemExit) as e:
            main([*base, flag, value])
        _one_line(capsys, int(e.value.code), rf"argument {flag}: .*{re.escape(value)}")


@pytest.mark.stockfish
def test_no_stockfish_or_no_position_is_one_line(games_pgn, tmp_path, capsys):
    base = ["eval", "value", "--model", "random:tiny", "--reference", "sf:nodes=50"]
    rc = main([*base, "--pgn", str(games_pgn), "--stockfish", str(tmp_path / "nostockfish")])
    _one_line(capsys, rc, r"--stockfish: Stockfish not found at .*nostockfish")
    rc = main([*base, "--pgn", str(games_pgn), "--skip-plies", "200"])
    _one_line(capsys, rc, r"no position to score in .*games\.pgn: 3 games read.*3 used; left out: opening 1[0-9]")
