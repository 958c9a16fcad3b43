"""``pdx eval humans``: match/NLL against a one-position-at-a-time reference, a hand-computed case,
filters, paired statistics, error lines, JSON and the CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import POLICY_SIZE, move_to_index
from pdx_lightning.chesscore.pgn_games import MoveFilter, ReadStats, read_games
from pdx_lightning.cli import main
from pdx_lightning.evaluation.humans import evaluate_games
from pdx_lightning.evaluation.stats import cluster_mean_interval, mean_interval
from pdx_lightning.nets import NetOutput, load_model

FIX = Path(__file__).parents[1] / "fixtures"
GAMES20, EDGE = FIX / "lichess_games_20.pgn", FIX / "lichess_games_edge.pgn"


class Uniform(torch.nn.Module):
    """Equal logits everywhere: π is uniform over the legal moves, every move has rank 1."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))

    def forward(self, x):
        B = x.shape[0]
        return NetOutput(torch.zeros(B, POLICY_SIZE) + self.w, torch.zeros(B, 3))


class FixedWdl(Uniform):
    """The uniform policy, and the same WDL (0.6, 0.3, 0.1) for the side to move everywhere."""

    def forward(self, x):
        out = super().forward(x)
        return NetOutput(out.policy, torch.log(torch.tensor([0.6, 0.3, 0.1])).expand(x.shape[0], 3))


class FixedLogits(Uniform):
    """The same random logits (scale 2) in every position."""

    def __init__(self):
        super().__init__()
        self.register_buffer("z", 2.0 * torch.randn(POLICY_SIZE, generator=torch.Generator().manual_seed(5)))

    def forward(self, x):
        out = super().forward(x)
        return NetOutput(out.policy + self.z, out.wdl)


def reference(model, games, filt):
    """Slow and obvious: one position at a time, softmax over python-chess's legal moves."""
    top1, top5, nll, ent, game = [], [], [], [], []
    for k, g in enumerate(games):
        board = chess.Board()
        for ply, move in enumerate(g.moves):
            if filt.keeps(g, ply) is None:
                with torch.no_grad():
                    logits = model(torch.from_numpy(encode_boards([board]))).policy[0].double()
                legal = list(board.legal_moves)
                z = torch.stack([logits[move_to_index(m, board.turn)] for m in legal])
                logp = torch.log_softmax(z, 0)
                h = legal.index(move)
                order = sorted(range(len(legal)), key=lambda i: -float(logp[i]))
                top1.append(order[0] == h)
                top5.append(sum(float(logp[i]) > float(logp[h]) for i in range(len(legal))) < 5)
                nll.append(-float(logp[h]))
                ent.append(-float((logp.exp() * logp).sum()))
                game.append(k)
            board.push(move)
    return np.array(top1), np.array(top5), np.array(nll), np.array(ent), np.array(game)


def sandwich(x: np.ndarray, c: np.ndarray) -> tuple[float, float, float]:
    """The mean of ``x`` and its 95% t interval clustered by ``c``, the sandwich variance written out."""
    from scipy import stats

    m, ks = x.mean(), sorted(set(c.tolist()))
    resid = sum((x[c == k].sum() - (c == k).sum() * m) ** 2 for k in ks)
    sem = math.sqrt(len(ks) / (len(ks) - 1) * resid) / len(x)
    lo, hi = stats.t.interval(0.95, len(ks) - 1, loc=m, scale=sem)
    return m, lo, hi


MAIA_FILTER = MoveFilter(skip_plies=10, min_clock=30)


def run_eval(models, path=GAMES20, filt=MAIA_FILTER, **kw):
    read = ReadStats()
    return evaluate_games(models, read_games(path, stats=read, max_games=kw.pop("max_games", None)), filt, read, **kw)


def test_hand_computed_uniform_policy(tmp_path):
    # 1. e4 e5: 20 legal moves at both positions, so NLL = ln 20 and every move ties at rank 1
    path = tmp_path / "two_plies.pgn"
    path.write_text('[Event "t"]\n[WhiteElo "1500"]\n[BlackElo "1600"]\n[TimeControl "300+0"]\n\n1. e4 e5 *\n')
    res = run_eval([Uniform()], path, MoveFilter())
    s = res.tally.summary(0)
    assert s["overall"]["positions"] == 2 and s["overall"]["nll"] == pytest.approx(math.log(20))
    assert s["overall"]["entropy"] == pytest.approx(math.log(20))  # uniform over 20 legal moves
    assert s["overall"]["top5"] == 1.0
    assert [b["bin"] for b in s["by_rating"]] == ["1500-1600", "1600-1700"]
    assert [b["bin"] for b in s["by_time_control"]] == ["blitz"] and s["by_clock"][0]["bin"] == "none"


def test_value_nll_is_hand_computed_from_the_result_seen_by_the_mover(tmp_path):
    # 1. e4 e5 1-0: White to move (wins) reads P(win) = 0.6, Black to move (loses) P(loss) = 0.1
    path = tmp_path / "won.pgn"
    head = '[Event "t"]\n[WhiteElo "1500"]\n[BlackElo "1600"]\n[TimeControl "300+0"]\n'
    path.write_text(f'{head}[Result "1-0"]\n\n1. e4 e5 1-0\n\n{head}[Result "*"]\n\n1. d4 *\n')
    s = run_eval([FixedWdl(), Uniform()], path, MoveFilter())
    o = s.tally.summary(0)
    assert o["overall"]["positions"] == 3 and o["overall"]["value_positions"] == 2  # "*": no result
    assert o["overall"]["value_games"] == 1 and math.isnan(o["overall"]["value_nll_ci"][0])  # one game: no interval
    assert o["overall"]["value_nll"] == pytest.approx(-(math.log(0.6) + math.log(0.1)) / 2)
    by = {b["bin"]: b["value_nll"] for b in o["by_rating"]}
    assert by["1500-1600"] == pytest.approx(-math.log(0.6)) and by["1600-1700"] == pytest.approx(-math.log(0.1))
    assert s.tally.summary(1)["overall"]["value_nll"] == pytest.approx(math.log(3))  # uniform WDL
    d = s.tally.compare(1)["overall"]["value_nll_diff"]
    assert d == pytest.approx(math.log(3) + (math.log(0.6) + math.log(0.1)) / 2)
    # a draw: both sides read P(draw)
    path.write_text(f'{head}[Result "1/2-1/2"]\n\n1. e4 e5 1/2-1/2\n')
    assert run_eval([FixedWdl()], path, MoveFilter()).tally.summary(0)["overall"]["value_nll"] == pytest.approx(
        -math.log(0.3)
    )


def test_value_nll_and_its_game_clustered_interval_match_a_slow_reference():
    torch.manual_seed(0)
    model = load_model("random:tiny").eval()
    games = list(read_games(GAMES20, max_games=6))
    vnll, cluster = [], []
    for k, g in enumerate(games):
        board = chess.Board()
        for ply, move in enumerate(g.moves):
            if MAIA_FILTER.keeps(g, ply) is None and g.result is not None:
                with torch.no_grad():
                    wdl = torch.softmax(model(torch.from_numpy(encode_boards([board]))).wdl[0].double(), 0)
                mover = g.result if board.turn == chess.WHITE else -g.result
                vnll.append(-math.log(float(wdl[{1: 0, 0: 1, -1: 2}[mover]])))
                cluster.append(k)
            board.push(move)
    x, c = np.array(vnll), np.array(cluster)
    assert len(set(cluster)) >= 4
    # the sandwich variance written out over the clusters
    m = x.mean()
    resid = sum((x[c == k].sum() - (c == k).sum() * m) ** 2 for k in set(cluster))
    n_c = len(set(cluster))
    sem = math.sqrt(n_c / (n_c - 1) * resid) / len(x)
    from scipy import stats

    lo, hi = stats.t.interval(0.95, n_c - 1, loc=m, scale=sem)
    o = run_eval([model], max_games=6, batch=37, micro_batch=16).tally.summary(0)["overall"]
    assert (o["value_positions"], o["value_games"]) == (len(x), n_c)
    assert o["value_nll"] == pytest.approx(m, rel=1e-5)
    assert o["value_nll_ci"] == pytest.approx([lo, hi], rel=1e-5)


def test_cluster_mean_interval_by_hand_and_with_one_value_per_cluster():
    # clusters {1, 1} and {3}: m = 5/3, Σ (S_c − n_c m)² = (2 − 10/3)² + (3 − 5/3)² = 32/9,
    # var = 2/1 · 32/9 / 3² = 64/81, sem = 8/9, t with 1 degree of freedom
    m, lo, hi = cluster_mean_interval(3, 5.0, 2.0**2 + 3.0**2, 2 * 2.0 + 1 * 3.0, 2**2 + 1**2, 2)
    from scipy import stats

    assert m == pytest.approx(5 / 3) and hi - m == pytest.approx(stats.t.ppf(0.975, 1) * 8 / 9) and m - lo == hi - m
    x = np.random.default_rng(1).normal(size=50)  # singleton clusters: the plain t interval
    got = cluster_mean_interval(50, x.sum(), (x**2).sum(), x.sum(), 50.0, 50)
    assert got == pytest.approx(mean_interval(x))
    assert math.isnan(cluster_mean_interval(2, 1.0, 1.0, 1.0, 4.0, 1)[1])


def test_matches_one_position_at_a_time_reference():
    torch.manual_seed(0)
    model = load_model("random:tiny").eval()
    filt = MoveFilter(skip_plies=10, min_clock=30)
    games = list(read_games(GAMES20, max_games=3))
    t1, t5, nll, ent, game = reference(model, games, filt)
    other = FixedLogits()  # a sharp policy, far from random:tiny's near-uniform one
    nll1 = reference(other, games, filt)[2]
    res = run_eval([model, other], filt=filt, max_games=3, batch=37, micro_batch=16)  # batches straddle games
    o = res.tally.summary(0)["overall"]
    assert o["positions"] == len(nll) > 100 and o["games"] == 3
    assert o["top1"] == pytest.approx(t1.mean()) and o["top5"] == pytest.approx(t5.mean())
    # the means, and their intervals clustered by game (the positions of a game are not independent)
    m, lo, hi = sandwich(nll, game)
    assert o["nll"] == pytest.approx(m, rel=1e-5) and o["nll_ci"] == pytest.approx([lo, hi], rel=1e-5)
    m, lo, hi = sandwich(ent, game)
    assert o["entropy"] == pytest.approx(m, rel=1e-5) and o["entropy_ci"] == pytest.approx([lo, hi], rel=1e-5)
    m, lo, hi = sandwich(nll1 - nll, game)
    c = res.tally.compare(1)["overall"]
    assert c["nll_diff"] == pytest.approx(m, rel=1e-5) and c["nll_diff_ci"] == pytest.approx([lo, hi], rel=1e-5)
    assert hi - lo > 1.2 * (mean_interval(nll1 - nll)[2] - mean_interval(nll1 - nll)[1])  # wider than per position


def test_filters_change_the_positions():
    games = list(read_games(GAMES20))
    plies = sum(len(g.moves) for g in games)
    m = [load_model("random:tiny").eval()]
    everything = run_eval(m, filt=MoveFilter())
    assert everything.positions == plies
    skip = run_eval(m, filt=MoveFilter(skip_plies=10))
    assert skip.positions == plies - sum(min(10, len(g.moves)) for g in games) and skip.skipped["opening"] > 0
    clock = run_eval(m, filt=MoveFilter(min_clock=30))
    assert clock.skipped["clock"] > 0 and clock.positions == plies - clock.skipped["clock"]
    rated = run_eval(m, filt=MoveFilter(rating_min=2000)).tally.summary(0)
    assert all(b["bin"] >= "2000" for b in rated["by_rating"])


def test_paired_with_itself_is_null_and_batching_does_not_matter():
    m = load_model("random:tiny").eval()
    res = run_eval([m, m], max_games=4)
    c = res.tally.compare(1)["overall"]
    assert (c["gained"], c["lost"], c["mcnemar_p"], c["nll_diff"], c["value_nll_diff"]) == (0, 0, 1.0, 0.0, 0.0)
    a, b = run_eval([m], max_games=4, batch=5).tally.summary(0), res.tally.summary(0)
    assert a["overall"]["nll"] == pytest.approx(b["overall"]["nll"])
    assert [(x["bin"], x["positions"], x["top1"]) for x in a["by_phase"]] == [
        (x["bin"], x["positions"], x["top1"]) for x in b["by_phase"]
    ]
    assert [x["nll"] for x in a["by_phase"]] == pytest.approx([x["nll"] for x in b["by_phase"]])


def test_cli_json_and_tables(tmp_path, capsys):
    out = tmp_path / "h.json"
    rc = main(
        [
            "eval",
            "humans",
            "--model",
            "random:tiny",
            "--label",
            "a",
            "--model",
            "random:tiny",
            "--label",
            "b",
            "--pgn",
            str(GAMES20),
            "--max-games",
            "3",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "## Human move matching" in text and "### By mover's rating" in text and "Paired with a" in text
    doc = json.loads(out.read_text())
    o = doc["models"][0]["overall"]
    assert {"top1", "top5", "nll", "positions"} <= set(o) and o["positions"] > 0
    assert doc["filters"]["skip_plies"] == 10 and doc["filters"]["min_clock"] == 30
    assert doc["games"]["read"] == 3 and doc["paired"][0]["overall"]["gained"] >= 0


def test_cli_errors_are_one_line(tmp_path, capsys):
    rc = main(["eval", "humans", "--model", "random:tiny", "--pgn", str(EDGE)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert re.search(r"pdx eval humans: error: .*lichess_games_edge\.pgn:\d+: game 2: Variant 'Crazyhouse'", err)
    assert "--skip-bad" in err
    rc = main(
        [
            "eval",
            "humans",
            "--model",
            "random:tiny",
            "--pgn",
            str(EDGE),
            "--skip-bad",
            "--json",
            str(tmp_path / "e.json"),
        ]
    )
    doc = json.loads((tmp_path / "e.json").read_text())
    assert rc == 0 and doc["games"]["skipped_bad"] == {
        "malformed": 1,
        "variant": 1,
        "setup": 1,
        "bad_header": 0,
        "bad_clock": 0,
        "merged": 0,
        "headers_only": 0,
        "truncated": 0,
        "null_move": 0,
    }
    assert doc["games"]["used"] == 2
    rc = main(["eval", "humans", "--model", "random:tiny", "--pgn", str(tmp_path / "missing.pgn")])
    assert rc == 2 and "not found" in capsys.readouterr().err


def test_cli_bins_and_time_control_flags_change_the_tables(tmp_path):
    def doc(*flags):
        out = tmp_path / "x.json"
        assert (
            main(["eval", "humans", "--model", "random:tiny", "--pgn", str(GAMES20), "--json", str(out), *flags]) == 0
        )
        return json.loads(out.read_text())

    default, coarse = doc(), doc("--bins", "1500,2000")
    assert [b["bin"] for b in coarse["models"][0]["by_rating"]] == ["<1500", "1500-2000", ">=2000"]
    assert len(default["models"][0]["by_rating"]) > 3
    assert coarse["models"][0]["overall"]["positions"] == default["models"][0]["overall"]["positions"]
    blitz = doc("--time-control", "blitz")
    assert [b["bin"] for b in blitz["models"][0]["by_time_control"]] == ["blitz"]
    assert blitz["positions_skipped"]["time_control"] > 0
