"""Puzzle suites and scoring: loader formats, malformed rows, multi-solution credit, p*, intervals, CLI."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import POLICY_SIZE, move_to_index
from pdx_lightning.evaluation import mate_depths as mates_cli
from pdx_lightning.evaluation import puzzle_scoring as puzzles_cli
from pdx_lightning.evaluation.puzzle_scoring import compare, score_suite, summarize
from pdx_lightning.evaluation.stats import mcnemar_exact, mean_interval, wilson_interval
from pdx_lightning.evaluation.suite import PuzzleFormatError, immediate_mates, load_suite
from pdx_lightning.nets import NetOutput, load_model
from tests.helpers import evaluate_for_validation

FIX = Path(__file__).parents[1] / "fixtures"
LICHESS, RUOSS = FIX / "lichess_sample.csv", FIX / "ruoss_10k_format_sample.csv"
OLD9, GENERATED, MALFORMED = (
    FIX / "lichess_old9_noheader.csv",
    FIX / "generated_altmoves.csv",
    FIX / "lichess_malformed.csv",
)
HEADER = "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags"


def by_id(suite):
    return {p.puzzle_id: p for p in suite.puzzles}


def ucis(moves):
    return sorted(m.uci() for m in moves)


class TablePolicy(torch.nn.Module):
    """Fixed logits per position (keyed by the encoded planes, so history counts); zeros elsewhere."""

    def __init__(self):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(()))  # evaluate() reads the device from a parameter
        self.table: dict[bytes, dict[int, float]] = {}
        self.batch_sizes: list[int] = []

    def prefer(self, puzzle, ply: int, logits: dict[str, float]) -> TablePolicy:
        board = list(puzzle.positions())[ply]
        key = encode_boards([board])[0].tobytes()
        self.table[key] = {move_to_index(board.parse_uci(u), board.turn): v for u, v in logits.items()}
        return self

    def forward(self, x):
        self.batch_sizes.append(x.shape[0])
        out = torch.zeros(x.shape[0], POLICY_SIZE)
        for i in range(x.shape[0]):
            for idx, v in self.table.get(x[i].cpu().numpy().tobytes(), {}).items():
                out[i, idx] = v
        return NetOutput(out, torch.zeros(x.shape[0], 3))


def n_legal(puzzle, ply):
    return list(puzzle.positions())[ply].legal_moves.count()


# ---------------------------------------------------------------- loader


def test_lichess_rows_setup_move_and_solver_plies():
    s = load_suite(LICHESS)
    assert [p.puzzle_id for p in s.puzzles] == ["hm001", "hm002", "hm003", "hm004", "00Pbs", "06low"]
    p = by_id(s)["hm002"]
    assert [m.uci() for m in p.board.move_stack] == ["g8h8"]  # FEN + the opponent's setup move
    assert p.board.turn == chess.WHITE and p.depth == 2
    assert [m.uci() for m in p.solver_moves] == ["b2b7", "a1a8"]
    assert p.rating == 1210 and p.difficulty == 1210.0 and "mateIn2" in p.themes
    assert p.source.endswith("lichess_sample.csv:3")
    assert ucis(by_id(s)["hm001"].accepted[0]) == ["d1d8", "e1e8"]  # both back-rank mates credited
    assert ucis(by_id(s)["hm003"].accepted[0]) == ["b1b6", "b1b8"]  # marked quiet move + the mate in one
    assert by_id(s)["hm004"].solver_moves[0].promotion == chess.QUEEN


def test_ruoss_rows_replay_the_pgn_history():
    s = load_suite(RUOSS)
    assert [p.puzzle_id for p in s.puzzles] == ["01F7L", "06low", "00Pbs", "07ZwS"]
    p = by_id(s)["01F7L"]
    # PGN 1. e4 … 8. f3 Qh4+ is 16 plies; the setup move Ke2 makes 17; Black (the solver) mates
    assert len(p.board.move_stack) == 17 and p.board.turn == chess.BLACK
    assert p.board.move_stack[-1].uci() == "e1e2" and [m.uci() for m in p.line] == ["h4f2"]
    assert p.accepted[0] == p.mates[0] == {chess.Move.from_uci("h4f2")}
    root = p.board.copy()
    while root.move_stack:
        root.pop()
    assert root.fen() == chess.STARTING_FEN
    # the Lichess-format row of the same puzzle (FEN only) reaches the same position, with less history
    lich = by_id(load_suite(LICHESS))["00Pbs"]
    ruoss = by_id(s)["00Pbs"]
    assert lich.board.board_fen() == ruoss.board.board_fen() and lich.line == ruoss.line
    assert len(lich.board.move_stack) == 1 and len(ruoss.board.move_stack) == 41
    assert not np.array_equal(encode_boards([lich.board]), encode_boards([ruoss.board]))


def test_old_nine_column_headerless_dump():
    s = load_suite(OLD9)
    assert [p.puzzle_id for p in s.puzzles] == ["hm002", "hm001"]
    assert s.puzzles[0].source.endswith(":1") and s.puzzles[0].rating == 1210


def test_generated_suite_altmoves_and_difficulty():
    s = by_id(load_suite(GENERATED))
    assert ucis(s["hm002"].accepted[0]) == ["a1a7", "b2b7"] and ucis(s["hm002"].accepted[1]) == ["a1a8"]
    assert s["hm002"].difficulty == 2.5 and s["hm002"].rating == 1210
    assert ucis(s["hm003"].accepted[0]) == ["b1b6", "b1b8"]  # empty AltMoves: only the marked move + mates


@pytest.mark.parametrize(
    "row, line_id, fragment",
    [
        ("badfen,7k/p5pp/8/8/9/8/5PPP/3RR1K1 b - - 0 1,a7a6 d1d8,600,80,95,1200,mate,u,", "badfen", "fen"),
        ("illegal,7k/p5pp/8/8/8/8/5PPP/3RR1K1 b - - 0 1,a7a6 d1d9,600,80,95,1200,mate,u,", "illegal", "d1d9"),
        ("shortrow,7k/p5pp/8/8/8/8/5PPP/3RR1K1 b - - 0 1,a7a6 d1d8,600", "shortrow", "4 columns, expected 10"),
        ("evenline,7k/p5pp/8/8/8/8/5PPP/3RR1K1 b - - 0 1,a7a6,600,80,95,1200,mate,u,", "evenline", "odd-length"),
        ("badrating,7k/p5pp/8/8/8/8/5PPP/3RR1K1 b - - 0 1,a7a6 d1d8,x,80,95,1200,mate,u,", "badrating", "rating"),
        ("nullmove,7k/p5pp/8/8/8/8/5PPP/3RR1K1 b - - 0 1,a7a6 0000,600,80,95,1200,mate,u,", "nullmove", "0000"),
    ],
)
def test_malformed_row_names_file_line_and_id(tmp_path, row, line_id, fragment):
    f = tmp_path / "bad.csv"
    f.write_text(f"{HEADER}\n{row}\n")
    with pytest.raises(PuzzleFormatError) as e:
        load_suite(f)
    assert f"bad.csv:2: puzzle {line_id}:" in str(e.value) and fragment in str(e.value)
    assert (e.value.line, e.value.puzzle_id) == (2, line_id)


def test_malformed_altmoves_and_ruoss_fen_mismatch(tmp_path):
    g = tmp_path / "gen.csv"
    g.write_text(f"{HEADER},AltMoves\nhm002,6k1/8/8/8/8/8/1R6/R3K3 b - - 0 1,g8h8 b2b7 h8g8 a1a8,1,1,1,1,,,,b2b7\n")
    with pytest.raises(PuzzleFormatError, match=r"gen.csv:2: puzzle hm002: AltMoves has 1 groups for 2"):
        load_suite(g)
    r = tmp_path / "ruoss.csv"
    rows = RUOSS.read_text().splitlines()
    r.write_text(rows[0] + "\n" + rows[1].replace("w KQkq - 1 9", "b KQkq - 1 9") + "\n")
    with pytest.raises(PuzzleFormatError, match=r"ruoss.csv:2: puzzle 01F7L: PGN reaches"):
        load_suite(r)


def test_skip_bad_counts_and_stream_order():
    with pytest.raises(PuzzleFormatError) as e:  # the first bad row in file order
        load_suite(MALFORMED)
    assert e.value.line == 3 and e.value.puzzle_id == "badfen"
    s = load_suite(MALFORMED, skip_bad=True)
    assert [p.puzzle_id for p in s.puzzles] == ["hm001", "hm002"] and s.n_bad == 3 and s.n_rows == 5
    assert [m.split(": puzzle ")[0].rsplit(":", 1)[1] for m in s.bad] == ["3", "4", "5"]


def test_zst_round_trip(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    z = tmp_path / "puzzles.csv.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(LICHESS.read_bytes()))
    a, b = load_suite(LICHESS).puzzles, load_suite(z).puzzles
    assert [(p.puzzle_id, p.line, p.accepted, p.rating, p.board.fen()) for p in a] == [
        (p.puzzle_id, p.line, p.accepted, p.rating, p.board.fen()) for p in b
    ]
    assert b[1].source == f"{z}:3"


def test_filters_and_seeded_sample():
    ids = lambda **kw: [p.puzzle_id for p in load_suite(LICHESS, **kw).puzzles]  # noqa: E731
    assert ids(rating_min=1200) == ["hm002", "hm003", "00Pbs"]
    assert ids(rating_max=1000) == ["hm001", "hm004"]
    assert ids(rating_min=1200, rating_max=2000) == ["hm002", "hm003"]
    assert ids(themes=["fork", "promotion"]) == ["hm004", "06low"]  # any of the themes
    assert ids(sample=3, seed=0) == ids(sample=3, seed=0) and len(ids(sample=3, seed=0)) == 3
    assert any(ids(sample=3, seed=s) != ids(sample=3, seed=0) for s in range(1, 10))
    assert ids(sample=100) == ids()


def brute_mates(b):
    out = set()
    for m in list(b.legal_moves):
        b.push(m)
        if b.is_checkmate():
            out.add(m)
        b.pop()
    return out


def test_immediate_mates_matches_brute_force():
    import random

    rng = random.Random(1)
    for _ in range(40):
        b = chess.Board()
        for _ in range(rng.randrange(1, 80)):
            moves = list(b.legal_moves)
            if not moves:
                break
            assert immediate_mates(b) == brute_mates(b)
            b.push(rng.choice(moves))
    # discovered mate, en passant mate, promotion mate, castling mate
    for fen in (
        "7k/6pp/8/8/8/8/1B6/R3K3 w - - 0 1",
        "8/8/8/2k5/2pP4/8/1B6/2R3K1 b - d3 0 1",
        "5k2/1P6/5K2/8/8/8/8/8 w - - 0 1",
        "8/8/8/8/8/8/7R/5k1K w - - 0 1",
        "3k4/3P4/3K4/8/8/8/8/R3K2R w KQ - 0 1",
    ):
        b = chess.Board(fen) if fen.count("K") < 3 else chess.Board("8/8/8/8/8/8/8/4K2R w K - 0 1")
        assert immediate_mates(b) == brute_mates(b)
    assert immediate_mates(chess.Board("7k/p5pp/8/8/8/8/5PPP/3RR1K1 w - - 0 1")) == {
        chess.Move.from_uci("d1d8"),
        chess.Move.from_uci("e1e8"),
    }


# ---------------------------------------------------------------- scoring


def test_two_mating_moves_both_credited():
    p = by_id(load_suite(LICHESS))["hm001"]
    for top in ("d1d8", "e1e8"):
        r = score_suite(TablePolicy().prefer(p, 0, {top: 2.0}), [p])
        assert r.solved[0] and r.first_fail[0] == -1 and r.ply_move == [top] and r.ply_mate[0]
    r = score_suite(TablePolicy().prefer(p, 0, {"g2g3": 2.0}), [p])
    assert not r.solved[0] and r.first_fail[0] == 0
    # p* counts the mass of both mates: 2e / (2e + n - 2)
    n = n_legal(p, 0)
    r = score_suite(TablePolicy().prefer(p, 0, {"d1d8": 1.0, "e1e8": 1.0}), [p])
    assert r.log_p_star[0] == pytest.approx(math.log(2 * math.e / (2 * math.e + n - 2)), abs=1e-5)


def test_failed_at_second_solver_move_and_p_star_by_hand():
    p = by_id(load_suite(LICHESS))["hm002"]
    m = TablePolicy().prefer(p, 0, {"b2b7": 2.0}).prefer(p, 1, {"a1a2": 3.0})
    r = score_suite(m, [p])
    assert not r.solved[0] and r.first_fail[0] == 1
    assert r.ply_correct.tolist() == [True, False] and r.ply_move == ["b2b7", "a1a2"]
    assert r.ply_rank.tolist() == [1, 2]
    n0, n1 = n_legal(p, 0), n_legal(p, 1)
    pi0 = math.exp(2) / (math.exp(2) + n0 - 1)
    pi1 = 1 / (math.exp(3) + n1 - 1)
    assert r.ply_log_p.tolist() == pytest.approx([math.log(pi0), math.log(pi1)], abs=1e-5)
    assert r.log_p_star[0] == pytest.approx(math.log(pi0 * pi1), abs=1e-5)  # ℓ = −Σ log π(a*|s*)


def test_altmoves_credit_only_in_generated_suite():
    gen, lich = by_id(load_suite(GENERATED))["hm002"], by_id(load_suite(LICHESS))["hm002"]
    m = TablePolicy().prefer(gen, 0, {"a1a7": 2.0}).prefer(gen, 1, {"a1a8": 2.0})
    r_gen, r_lich = score_suite(m, [gen]), score_suite(m, [lich])
    assert r_gen.solved[0] and not r_lich.solved[0] and r_lich.first_fail[0] == 0
    n0 = n_legal(gen, 0)
    assert r_gen.ply_log_p[0] == pytest.approx(math.log((math.e**2 + 1) / (math.e**2 + n0 - 1)), abs=1e-5)


def test_argmax_mate_ends_the_puzzle_won():
    p = by_id(load_suite(LICHESS))["hm003"]  # marked 1. Rb6 Kg8 2. Rb8#, but 1. Rb8# mates at once
    r = score_suite(TablePolicy().prefer(p, 0, {"b1b8": 2.0}).prefer(p, 1, {"a7a1": 2.0}), [p])
    assert r.solved[0] and r.ply_correct.tolist() == [True, False] and r.ply_mate.tolist() == [True, False]
    r = score_suite(TablePolicy().prefer(p, 0, {"b1b6": 2.0}).prefer(p, 1, {"a7a1": 2.0}), [p])
    assert not r.solved[0] and r.first_fail[0] == 1


def test_batched_equals_one_at_a_time_on_random_tiny():
    puzzles = load_suite([LICHESS, RUOSS, GENERATED]).puzzles
    model = load_model("random:tiny")
    full = score_suite(model, puzzles)
    small = score_suite(model, puzzles, micro_batch=2, chunk=3)
    single = [score_suite(model, [p]) for p in puzzles]
    for other in (small,):
        np.testing.assert_allclose(other.log_p_star, full.log_p_star, atol=1e-5)
        assert other.ply_move == full.ply_move and (other.solved == full.solved).all()
    np.testing.assert_allclose([r.log_p_star[0] for r in single], full.log_p_star, atol=1e-5)
    assert [m for r in single for m in r.ply_move] == full.ply_move
    assert [r.first_fail[0] for r in single] == full.first_fail.tolist()


def test_one_network_pass_per_solver_ply():
    puzzles = load_suite(LICHESS).puzzles  # depths 1,2,2,1,2,2 → 6 then 4 positions
    m = TablePolicy()
    score_suite(m, puzzles)
    assert m.batch_sizes == [6, 4]


# ---------------------------------------------------------------- statistics and summaries


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(95, 100)
    assert (lo, hi) == pytest.approx((0.88825, 0.97846), abs=1e-5)
    lo, hi = wilson_interval(9352, 10000)  # the paper's base on the 10k suite: 93.52 ± 0.48
    assert (hi - lo) / 2 == pytest.approx(0.0048, abs=2e-4)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_mean_interval_and_mcnemar():
    m, lo, hi = mean_interval([1.0, 2.0, 3.0])
    assert m == 2.0 and (lo, hi) == pytest.approx((2 - 4.302653 / math.sqrt(3), 2 + 4.302653 / math.sqrt(3)), abs=1e-5)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(10, 0) == pytest.approx(2 / 2**10)


def test_summarize_and_compare_by_hand():
    puzzles = load_suite(LICHESS).puzzles[:3]  # hm001 (612, depth 1), hm002 (1210, 2), hm003 (1650, 2)
    hm001, hm002, _hm003 = puzzles
    a = TablePolicy().prefer(hm001, 0, {"d1d8": 5.0})
    b = TablePolicy().prefer(hm001, 0, {"d1d8": 5.0}).prefer(hm002, 0, {"b2b7": 5.0}).prefer(hm002, 1, {"a1a8": 5.0})
    ra, rb = score_suite(a, puzzles), score_suite(b, puzzles)
    s = summarize(ra, bins=[1000])
    assert (s["n"], s["solved"], s["acc"]) == (3, 1, pytest.approx(1 / 3))
    assert s["acc_ci"] == pytest.approx(list(wilson_interval(1, 3)))
    assert s["p_star_geo"] == pytest.approx(math.exp(ra.log_p_star.mean()))
    assert s["p_star_arith"] == pytest.approx(np.exp(ra.log_p_star).mean())
    assert [(x["bin"], x["n"], x["solved"]) for x in s["by_bin"]] == [("<1000", 1, 1), (">=1000", 2, 0)]
    assert [(x["depth"], x["n"]) for x in s["by_depth"]] == [(1, 1), (2, 2)]
    assert s["positions"] == 5 and s["position_acc"] == pytest.approx(1 / 5)
    c = compare(ra, rb, bins=[1000])
    d = rb.log_p_star - ra.log_p_star
    assert d[0] == 0 and d[2] == 0 and d[1] > 0
    assert c["log_ratio"] == pytest.approx(d.mean()) and c["p_star_ratio"] == pytest.approx(math.exp(d.mean()))
    assert (c["gained"], c["lost"], c["acc_diff"]) == (1, 0, pytest.approx(1 / 3))
    with pytest.raises(ValueError, match="same puzzles"):
        compare(ra, score_suite(a, puzzles[:2]))


def test_evaluate_for_validation_keys():
    suite = load_suite([LICHESS, RUOSS]).puzzles
    model = load_model("random:tiny").train()
    out = evaluate_for_validation(model, suite, mates=[p for p in suite if "mate" in p.themes])
    assert model.training  # mode restored
    assert {
        "puzzles/acc",
        "puzzles/p_star_geo",
        "puzzles/p_star_arith",
        "puzzles/nll",
        "mates/acc_1",
        "mates/acc_2",
        "mates/p_star_geo_1",
        "mates/p_star_geo_2",
    } <= set(out)
    ref = summarize(score_suite(model.eval(), suite))
    assert out["puzzles/p_star_geo"] == pytest.approx(ref["p_star_geo"], rel=1e-5)
    assert all(isinstance(v, float) for v in out.values())


# ---------------------------------------------------------------- CLI


def cli(module, argv, tmp_path):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    out = tmp_path / "out.json"
    assert module.run(parser.parse_args([*argv, "--json", str(out)])) == 0
    return json.loads(out.read_text())


def test_cli_registry_names_these_modules():
    from pdx_lightning.cli import TOOLS

    assert TOOLS["eval puzzles"][0] == "pdx_lightning.evaluation.puzzle_scoring"
    assert TOOLS["eval mates"][0] == "pdx_lightning.evaluation.mate_depths"


def test_eval_puzzles_json_and_table(tmp_path, capsys):
    d = cli(
        puzzles_cli,
        ["--model", "random:tiny", "--model", "random:tiny:1", "--suite", str(LICHESS), "--suite", str(RUOSS)],
        tmp_path,
    )
    assert set(d) == {"command", "multi_solution", "move_by", "suite", "bins", "puzzles", "models", "paired", "nodes"}
    assert d["move_by"] == "policy"
    assert d["suite"]["puzzles"] == 10 and len(d["puzzles"]["id"]) == 10 and len(d["models"]) == 2
    pp = d["models"][0]["per_puzzle"]
    assert len(pp["ply_correct"]) == 10 and [len(x) for x in pp["ply_log_p"]] == d["puzzles"]["depth"]
    assert d["paired"][0]["baseline"] == "random:tiny" and d["paired"][0]["model"] == "random:tiny:1"
    assert sum(pp["ply_log_p"][3]) == pytest.approx(pp["log_p_star"][3])
    text = capsys.readouterr().out
    assert "| Model | n | Acc. (%)" in text and "Paired vs random:tiny" in text


def test_eval_puzzles_flags_change_the_result(tmp_path, capsys, monkeypatch):
    base = ["--model", "random:tiny", "--suite", str(LICHESS)]
    n = lambda extra: cli(puzzles_cli, base + extra, tmp_path)["suite"]["puzzles"]  # noqa: E731
    assert n([]) == 6 and n(["--rating-min", "1200"]) == 3 and n(["--rating-max", "1000"]) == 2
    assert n(["--themes", "fork", "promotion"]) == 2 and n(["--sample", "4"]) == 4
    ids = lambda seed: cli(puzzles_cli, base + ["--sample", "3", "--seed", seed], tmp_path)["puzzles"]["id"]  # noqa: E731
    assert any(ids(str(s)) != ids("0") for s in range(1, 6))
    d = cli(puzzles_cli, base + ["--bins", "1000"], tmp_path)
    assert [b["bin"] for b in d["models"][0]["summary"]["by_bin"]] == ["<1000", ">=1000"]
    with pytest.raises(PuzzleFormatError):
        cli(puzzles_cli, ["--model", "random:tiny", "--suite", str(MALFORMED)], tmp_path)
    d = cli(puzzles_cli, ["--model", "random:tiny", "--suite", str(MALFORMED), "--skip-bad"], tmp_path)
    assert d["suite"]["skipped_bad"] == 3 and len(d["suite"]["bad_rows"]) == 3
    assert "3 malformed rows skipped" in capsys.readouterr().out
    seen = []
    real = puzzles_cli.evaluate_boards
    monkeypatch.setattr(puzzles_cli, "evaluate_boards", lambda m, b, mb=512: seen.append(mb) or real(m, b, mb))
    cli(puzzles_cli, base + ["--micro-batch", "7", "--device", "cpu"], tmp_path)
    assert set(seen[1:]) == {7}


def test_eval_weights_flag_picks_checkpoint_weights(tmp_path):
    ema, online = load_model("random:tiny:0"), load_model("random:tiny:1")
    ckpt = tmp_path / "run.ckpt"
    torch.save(
        {
            "pdx_model_config": ema.cfg.to_dict(),
            "state_dict": {
                **{f"ema.{k}": v for k, v in ema.state_dict().items()},
                **{f"online.{k}": v for k, v in online.state_dict().items()},
            },
        },
        ckpt,
    )
    lp = {
        w: cli(puzzles_cli, ["--model", str(ckpt), "--suite", str(LICHESS), "--weights", w], tmp_path)["models"][0][
            "per_puzzle"
        ]["log_p_star"]
        for w in ("ema", "online")
    }
    ref = cli(puzzles_cli, ["--model", "random:tiny:1", "--suite", str(LICHESS)], tmp_path)
    assert lp["ema"] != lp["online"] and lp["online"] == ref["models"][0]["per_puzzle"]["log_p_star"]


def test_eval_mates_by_depth(tmp_path, capsys):
    d = cli(
        mates_cli,
        [
            "--model",
            "random:tiny",
            "--model",
            "random:tiny:1",
            "--suite",
            str(LICHESS),
            "--suite",
            str(GENERATED),
            "--themes",
            "mate",
        ],
        tmp_path,
    )
    assert d["command"] == "eval mates" and d["suite"]["files"] == [str(LICHESS), str(GENERATED)]
    s = d["models"][0]["summary"]
    assert [(x["depth"], x["n"]) for x in s["by_depth"]] == [(1, 2), (2, 5)]
    assert [x["depth"] for x in d["paired"][0]["by_depth"]] == [1, 2]
    text = capsys.readouterr().out
    assert "Mate-in-N accuracy" in text and "| Model | 1 | 2 |" in text
