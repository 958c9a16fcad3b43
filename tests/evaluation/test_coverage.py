"""Trajectory coverage Ω^N_K (Eq. 8): exact values on tiny policies, sampling law, batching, tabiyas, CLI."""

from __future__ import annotations

import argparse
import itertools
import json
import math

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.moves import legal_indices
from pdx_lightning.evaluation import coverage as coverage_cli
from pdx_lightning.evaluation.coverage import CoverageTree, NetworkPolicy, coverage, summarize_seeds
from pdx_lightning.evaluation.play import TABIYAS, evaluate_play, root_board
from pdx_lightning.nets import load_model
from tests.helpers import FunctionPolicy


def uniform(b):
    return FunctionPolicy(lambda path: [1.0] * b)


def skewed(path):
    """A non-uniform policy whose distribution depends on the path (3 children)."""
    w = np.array([1.0, 2.0, 4.0 + 3 * len(path) + sum(path)])
    return np.roll(w, len(path))


def leaf_masses(fn, depth, path=()):
    """Brute force: {path: mass} of every complete line."""
    p = np.asarray(fn(path), dtype=np.float64)
    if len(path) == depth or not len(p):
        return {path: 1.0}
    p = p / p.sum()
    out = {}
    for i, pi in enumerate(p):
        for leaf, m in leaf_masses(fn, depth, (*path, i)).items():
            out[leaf] = pi * m
    return out


def exact_expected_omega(masses, K):
    """E[Ω_K] of sequential sampling without replacement ∝ mass, by enumerating ordered K-tuples."""
    total = 0.0
    for seq in itertools.permutations(range(len(masses)), K):
        prob, left = 1.0, 1.0
        for i in seq:
            prob *= masses[i] / left
            left -= masses[i]
        total += prob * sum(masses[i] for i in seq)
    return total


# ---------------------------------------------------------------- exact values


def test_deterministic_policy_is_covered_by_one_draw():
    tree = CoverageTree(FunctionPolicy(lambda path: [1.0, 0.0, 0.0]), depth=4)
    masses, exhausted = tree.run_seed(0, max_draws=10)
    assert masses.tolist() == [1.0] and exhausted  # no line of positive mass is left
    r = coverage(FunctionPolicy(lambda path: [1.0, 0.0]), 3, range(3), 10)
    assert r["draws_to_target"]["per_seed"] == [1, 1, 1] and r["curve"]["mean"][0] == 1.0


@pytest.mark.parametrize("b,depth", [(2, 1), (3, 3), (4, 2), (2, 5)])
@pytest.mark.parametrize("expand_batch", [0, 1, 3, 1024])
def test_uniform_policy_covers_exactly_k_over_b_to_the_n(b, depth, expand_batch):
    n_lines = b**depth
    tree = CoverageTree(uniform(b), depth, expand_batch)
    for seed in range(3):
        masses, exhausted = tree.run_seed(seed, max_draws=n_lines + 5)
        assert len(masses) == n_lines and exhausted
        np.testing.assert_allclose(np.cumsum(masses), np.arange(1, n_lines + 1) / n_lines, rtol=0, atol=1e-12)
    assert tree.draw(lambda: 0.5) == 0.0  # everything drawn: further draws add nothing


def test_every_line_is_drawn_exactly_once():
    exact = leaf_masses(skewed, 3)
    masses, exhausted = CoverageTree(FunctionPolicy(skewed), 3).run_seed(7, max_draws=100)
    assert exhausted and len(masses) == len(exact) == 27
    np.testing.assert_allclose(sorted(masses), sorted(exact.values()), rtol=1e-12)


def test_draws_follow_sampling_without_replacement_in_law():
    """Mean Ω_K over seeds agrees with the exact expectation of successive sampling ∝ mass."""
    fn = lambda path: skewed(path)[:2] if len(path) else skewed(path)  # noqa: E731  (3 × 2 = 6 lines)
    masses = list(leaf_masses(fn, 2).values())
    tree = CoverageTree(FunctionPolicy(fn), 2)
    runs = np.array([np.cumsum(tree.run_seed(s, 3)[0]) for s in range(3000)])  # (seeds, 3)
    for K in (1, 2, 3):
        mean, se = runs[:, K - 1].mean(), runs[:, K - 1].std() / math.sqrt(len(runs))
        assert abs(mean - exact_expected_omega(masses, K)) < 4.5 * se


def test_finished_games_end_their_line_early():
    # line (0,) ends the game at ply 1 (mass 0.5); the other lines run to depth 3
    fn = lambda path: [] if path == (0,) else [1.0, 1.0]  # noqa: E731
    masses, exhausted = CoverageTree(FunctionPolicy(fn), 3).run_seed(0, 100)
    assert exhausted and len(masses) == 1 + 4 and sorted(masses)[-1] == 0.5
    assert math.isclose(masses.sum(), 1.0)
    only_root = CoverageTree(FunctionPolicy(lambda path: []), 2)
    assert only_root.run_seed(0, 5)[0].tolist() == [1.0]


def test_expansion_is_batched_lazily_and_cached_across_seeds():
    src = uniform(3)
    tree = CoverageTree(src, 3, expand_batch=0)  # whole frontier: one call per depth
    tree.run_seed(0, 100)
    assert src.calls == [1, 3, 9]
    tree.run_seed(1, 100)
    assert src.calls == [1, 3, 9] and tree.nodes_expanded == 13  # seeds reuse the cached nodes
    one = uniform(3)
    CoverageTree(one, 3, expand_batch=1).run_seed(0, 100)
    assert one.calls == [1] * 13
    lazy = FunctionPolicy(lambda path: [0.98, 0.01, 0.01])  # 95% of the mass in the first line
    t = CoverageTree(lazy, 4, expand_batch=2)
    _masses, _ = t.run_seed(0, 1000, target=0.95)
    assert t.nodes_expanded < 1 + 3 + 9 + 27  # only what the draws (and the heaviest prefetches) reach
    # the batch size changes only speed: the same seed draws the same lines
    ref = CoverageTree(FunctionPolicy(skewed), 3, 1).run_seed(5, 20)[0]
    for eb in (0, 2, 4):
        np.testing.assert_array_equal(CoverageTree(FunctionPolicy(skewed), 3, eb).run_seed(5, 20)[0], ref)


def test_summaries_of_seeds():
    runs = [np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.3, 0.5, 0.2]), np.array([0.5, 0.5])]
    s = summarize_seeds(runs, [False, False, True], target=0.95)
    assert s["draws_to_target"]["per_seed"] == [3, 3, 2]
    assert s["draws_to_target"]["mean"] == pytest.approx(8 / 3)
    assert s["draws_to_target"]["std"] == pytest.approx(np.std([3, 3, 2], ddof=1))
    # the curve ends at the fewest draws among non-exhausted seeds; an exhausted seed stays at its total
    assert s["curve"]["k"] == [1, 2, 3]
    np.testing.assert_allclose(s["curve"]["mean"], [(0.5 + 0.3 + 0.5) / 3, (0.8 + 0.8 + 1.0) / 3, (0.95 + 1 + 1) / 3])
    assert s["omega_at"] == {"1": pytest.approx(1.3 / 3)}
    none = summarize_seeds([np.array([0.2, 0.2])], [False], target=0.95)["draws_to_target"]
    assert none == {"per_seed": [None], "reached": 0, "seeds": 1, "mean": None, "std": None}
    with pytest.raises(ValueError, match="until"):
        coverage(uniform(2), 1, [0], 5, until="forever")


# ---------------------------------------------------------------- positions and the network source


def test_tabiyas_are_the_appendix_h_positions():
    want = {"start": (0, 20), "ruy_lopez": (8, 27), "najdorf_english": (16, 47), "qgd_tartakower": (14, 38)}
    for name in TABIYAS:
        _, b = root_board(name)
        assert (len(b.move_stack), b.legal_moves.count()) == want[name] and b.turn == chess.WHITE
    two = root_board("e2e4 e7e5")[1]
    assert [m.uci() for m in two.move_stack] == ["e2e4", "e7e5"] and two.root() == chess.Board()
    fen = "8/8/8/4k3/8/8/4K3/4R3 w - - 0 1"
    assert root_board(fen)[1].fen() == fen
    with pytest.raises(ValueError, match="not a legal move"):
        root_board("e2e5")


def test_network_source_uses_the_play_distribution_with_history():
    model = load_model("random:tiny")
    _, board = root_board("ruy_lopez")
    for mode in ("raw", "adaptive"):
        src = NetworkPolicy(model, board, mode)
        ((labels, probs),) = src.expand([src.root()])
        ref = evaluate_play(model, [board], mode).log_p[0].double()
        np.testing.assert_array_equal(labels, legal_indices(board))
        np.testing.assert_allclose(probs, torch.exp(ref[labels]).numpy(), rtol=1e-5)
        assert probs.sum() == pytest.approx(1.0, abs=1e-12) and len(src.root().move_stack) == 8
    raw = NetworkPolicy(model, board, "raw").expand([board])[0][1]
    assert not np.allclose(raw, NetworkPolicy(model, board, "adaptive").expand([board])[0][1])
    mate = chess.Board()
    for m in ["f2f3", "e7e5", "g2g4", "d8h4"]:
        mate.push_uci(m)
    assert len(NetworkPolicy(model, mate, "raw").expand([mate])[0][0]) == 0  # finished game: a leaf


def test_cli_coverage_json_png_and_flags(tmp_path, capsys):
    from pdx_lightning.cli import TOOLS

    assert TOOLS["eval coverage"][0] == "pdx_lightning.evaluation.coverage"
    parser = argparse.ArgumentParser()
    coverage_cli.add_arguments(parser)
    out, png = tmp_path / "cov.json", tmp_path / "cov.png"
    args = [
        "--model",
        "random:tiny",
        "--play",
        "raw",
        "--model",
        "random:tiny",
        "--play",
        "adaptive",
        "--position",
        "start",
        "--position",
        "e2e4 e7e5 g1f3",
        "--depth",
        "2",
        "--seeds",
        "2",
        "--draws",
        "50",
        "--until",
        "draws",
        "--json",
        str(out),
        "--png",
        str(png),
    ]
    assert coverage_cli.run(parser.parse_args(args)) == 0
    d = json.loads(out.read_text())
    assert png.stat().st_size > 0 and d["depths"] == [2] and d["seeds"] == [0, 1] and d["until"] == "draws"
    assert [p["ply"] for p in d["positions"]] == [0, 3] and d["positions"][1]["moves"] == ["e2e4", "e7e5", "g1f3"]
    assert [(r["model"], r["play"], r["position"]) for r in d["results"]] == [
        ("random:tiny", "raw", "start"),
        ("random:tiny", "raw", "e2e4 e7e5 g1f3"),
        ("random:tiny", "adaptive", "start"),
        ("random:tiny", "adaptive", "e2e4 e7e5 g1f3"),
    ]
    r = d["results"][0]
    assert r["draws"] == [50, 50] and r["curve"]["k"][-1] == 50 and r["tree"]["positions_evaluated"] == 21
    assert 0 < r["curve"]["mean"][0] < r["curve"]["mean"][-1] < 1 and set(r["seconds"]) == {"expand", "draw", "cpu"}
    assert d["results"][0]["curve"]["mean"] != d["results"][2]["curve"]["mean"]  # --play changes the policy
    assert "Draws to target" in capsys.readouterr().out
    bad = parser.parse_args(
        ["--model", "random:tiny", "--play", "raw", "--play", "raw", "--model", "x", "--play", "raw"]
    )
    assert coverage_cli.run(bad) == 2


def test_cli_several_depths_measure_each_as_a_single_depth_run_does(tmp_path):
    parser = argparse.ArgumentParser()
    coverage_cli.add_arguments(parser)
    common = [
        "--model",
        "random:tiny",
        "--play",
        "raw",
        "--position",
        "start",
        "--seeds",
        "2",
        "--draws",
        "30",
        "--until",
        "draws",
    ]
    both, one = tmp_path / "both.json", tmp_path / "one.json"
    assert (
        coverage_cli.run(
            parser.parse_args([*common, "--depth", "1", "2", "--json", str(both), "--png", str(tmp_path / "c.png")])
        )
        == 0
    )
    assert coverage_cli.run(parser.parse_args([*common, "--depth", "2", "--json", str(one)])) == 0
    d, s = json.loads(both.read_text()), json.loads(one.read_text())
    assert d["depths"] == [1, 2] and [r["depth"] for r in d["results"]] == [1, 2]
    # depth 1 from the start: 20 one-move lines, all drawn within 30 draws, so Ω reaches 1 and stops there
    r1 = d["results"][0]
    assert r1["exhausted"] == [True, True] and r1["draws"] == [20, 20]
    assert abs(r1["final_omega"][0] - 1) < 1e-9
    assert d["results"][1]["curve"] == s["results"][0]["curve"]  # the depth-2 result as run alone
    assert "| 2 | start |" in coverage_cli.render(d["results"], 0.95).replace("  ", " ")
