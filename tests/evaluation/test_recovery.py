"""Recovery analysis (Section 3.5, Figure 8): counts and bins on synthetic results, CLI smoke test."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pdx_lightning.evaluation import recovery as recovery_cli
from pdx_lightning.evaluation.puzzle_scoring import SuiteResult
from pdx_lightning.evaluation.recovery import rank_bins, recovery_analysis

LICHESS = Path(__file__).parents[1] / "fixtures" / "lichess_sample.csv"


def result(correct, p, rank, top, rating=None) -> SuiteResult:
    """A SuiteResult from per-puzzle lists of per-solver-ply values (no mates: solved = every ply correct)."""
    depth = np.array([len(c) for c in correct])
    flat = lambda xs: np.array([v for x in xs for v in x])  # noqa: E731
    ok = flat(correct).astype(bool)
    first_fail = np.array([next((k for k, c in enumerate(cs) if not c), -1) for cs in correct])
    log_p = np.log(flat(p))
    offsets = np.concatenate([[0], np.cumsum(depth)])
    return SuiteResult(
        ids=[f"p{i}" for i in range(len(correct))],
        rating=np.array(rating or [np.nan] * len(correct), float),
        difficulty=np.full(len(correct), np.nan),
        depth=depth,
        solved=first_fail < 0,
        first_fail=first_fail,
        log_p_star=np.add.reduceat(log_p, offsets[:-1]),
        offsets=offsets,
        ply_correct=ok,
        ply_mate=np.zeros(len(ok), bool),
        ply_log_p=log_p,
        ply_rank=flat(rank).astype(np.int64),
        ply_top_log_p=np.log(flat(top)),
        ply_value=np.zeros(len(ok)),
        ply_move=[""] * len(ok),
    )


# five puzzles: A recovered (base wrong at ply 0), B unrecovered (base wrong at its 2nd solver ply),
# C given back (the fine-tuned model fails at ply 0), D unrecovered, E solved by both.
BASE = result(
    correct=[[0], [1, 0], [1], [0, 1], [1, 1]],
    p=[[0.2], [0.9, 0.02], [0.6], [0.4, 0.7], [0.8, 0.9]],
    rank=[[2], [1, 7], [1], [3, 1], [1, 1]],
    top=[[0.3], [0.9, 0.5], [0.6], [0.45, 0.7], [0.8, 0.9]],
    rating=[2000, 2400, 1500, 1800, 1000],
)
FT = result(
    correct=[[1], [1, 0], [0], [0, 1], [1, 1]],
    p=[[0.7], [0.95, 0.03], [0.3], [0.35, 0.8], [0.9, 0.9]],
    rank=[[1], [1, 6], [2], [2, 1], [1, 1]],
    top=[[0.7], [0.95, 0.5], [0.5], [0.4, 0.8], [0.9, 0.9]],
)


def by_bin(rows, key):
    return {r["bin"]: r[key] for r in rows}


def test_puzzle_unit_counts_and_bins():
    a = recovery_analysis(BASE, FT)["puzzle"]
    assert (a["base_wrong"], a["recovered"], a["base_right"], a["given_back"], a["net"]) == (3, 1, 2, 1, 0)
    assert a["recovered_share"] == pytest.approx(1 / 3) and a["recovered_ci"][0] < 1 / 3 < a["recovered_ci"][1]
    # binned at the base's first failed ply: A (0.2, rank 2), B (0.02 at ply 2, rank 7), D (0.4, rank 3)
    assert by_bin(a["by_prob"], "n") == {"<0.05": 1, "0.05-0.15": 0, "0.15-0.3": 1, ">=0.3": 1}
    assert by_bin(a["by_prob"], "recovered") == {"<0.05": 0, "0.05-0.15": 0, "0.15-0.3": 1, ">=0.3": 0}
    assert by_bin(a["by_rank"], "n") == {"1": 0, "2": 1, "3": 1, "4-5": 0, "6+": 1}
    assert by_bin(a["by_rank"], "recovered")["2"] == 1 and by_bin(a["by_rank"], "share")["2"] == 1.0
    assert math.isnan(by_bin(a["by_rank"], "share")["1"])
    # C given back: the base's probability 0.6 and the fine-tuned rank 2 at the fine-tuned model's failed ply
    assert by_bin(a["given_back_by_prob"], "given_back") == {"<0.05": 0, "0.05-0.15": 0, "0.15-0.3": 0, ">=0.3": 1}
    assert by_bin(a["given_back_by_ft_rank"], "given_back")["2"] == 1
    assert a["base_p_geo"]["recovered"] == pytest.approx(0.2)
    assert a["base_p_geo"]["unrecovered"] == pytest.approx(math.sqrt(0.02 * 0.4))
    assert a["gap_median"]["recovered"] == pytest.approx(0.1)
    assert a["gap_median"]["unrecovered"] == pytest.approx(np.median([0.5 - 0.02, 0.45 - 0.4]))
    assert a["ft_gain_mean"] == pytest.approx(0.5)
    assert a["rating_mean"] == {"recovered": 2000.0, "base_solved": 1250.0, "base_failed": pytest.approx(6200 / 3)}


def test_position_unit_counts_and_bins():
    a = recovery_analysis(BASE, FT)["position"]
    # base-wrong positions: A0 (recovered), B1, D0; given back: C0
    assert (a["base_wrong"], a["recovered"], a["base_right"], a["given_back"]) == (3, 1, 5, 1)
    assert by_bin(a["by_prob"], "n") == {"<0.05": 1, "0.05-0.15": 0, "0.15-0.3": 1, ">=0.3": 1}
    assert by_bin(a["by_rank"], "n") == {"1": 0, "2": 1, "3": 1, "4-5": 0, "6+": 1}
    assert "rating_mean" not in a


def test_recovery_needs_the_same_puzzles():
    other = result(correct=[[1]], p=[[0.5]], rank=[[1]], top=[[0.5]])
    with pytest.raises(ValueError, match="same puzzles"):
        recovery_analysis(BASE, other)


def test_rank_bin_labels():
    assert [lab for *_, lab in rank_bins([2, 3, 4, 6])] == ["1", "2", "3", "4-5", "6+"]
    assert [lab for *_, lab in rank_bins([3, 10])] == ["1-2", "3-9", "10+"]


def test_custom_bins_change_the_breakdown():
    a = recovery_analysis(BASE, FT, prob_bins=[0.1], rbins=[3])["puzzle"]
    assert by_bin(a["by_prob"], "n") == {"<0.1": 1, ">=0.1": 2}
    assert by_bin(a["by_rank"], "n") == {"1-2": 1, "3+": 2}


def test_cli_recovery_json_png(tmp_path, capsys):
    from pdx_lightning.cli import TOOLS

    assert TOOLS["eval recovery"][0] == "pdx_lightning.evaluation.recovery"
    parser = argparse.ArgumentParser()
    recovery_cli.add_arguments(parser)
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    args = [
        "--base",
        "random:tiny",
        "--model",
        "random:tiny:1",
        "--model",
        "random:tiny",
        "--suite",
        str(LICHESS),
        "--prob-bins",
        "0.1,0.5",
        "--rank-bins",
        "2,4",
        "--json",
        str(out),
        "--png",
        str(png),
    ]
    assert recovery_cli.run(parser.parse_args(args)) == 0
    d = json.loads(out.read_text())
    assert png.stat().st_size > 0 and d["base"] == "random:tiny" and d["suite"]["puzzles"] == 6
    assert d["prob_bins"] == [0.1, 0.5] and d["rank_bins"] == [2, 4]
    s = d["base_summary"]
    for m in d["models"]:
        assert m["puzzle"]["base_wrong"] == s["puzzles"] - s["solved"]
        assert m["position"]["base_wrong"] == s["positions"] - s["positions_correct"]
        assert [b["bin"] for b in m["puzzle"]["by_rank"]] == ["1", "2-3", "4+"]
        assert sum(b["n"] for b in m["puzzle"]["by_prob"]) == m["puzzle"]["base_wrong"]
    same = d["models"][1]  # the base against itself recovers and gives back nothing
    assert same["puzzle"]["recovered"] == same["puzzle"]["given_back"] == 0
    assert "Recovery vs random:tiny" in capsys.readouterr().out
