"""Single-state diagnostics (Table 5) and the play distribution: hand-computed values, self-play, CLI."""

from __future__ import annotations

import argparse
import json
import math

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import GameHistory
from pdx_lightning.chesscore.policy import tempered_log_probs, wdl_entropy
from pdx_lightning.evaluation import diagnostics as diag_cli
from pdx_lightning.evaluation.diagnostics import _ended, clustered_mean, policy_diagnostics, self_play_diagnostics
from pdx_lightning.evaluation.play import (
    PlayModeError,
    checkpoint_play_mode,
    evaluate_play,
    play_distribution,
    resolve_play_modes,
)
from pdx_lightning.nets import load_model

NEG = float("-inf")


def dist(*probs, width=6):
    """(1, width) log-probabilities and mask: the given probabilities on the first slots, illegal after."""
    p = torch.zeros(1, width, dtype=torch.float64)
    p[0, : len(probs)] = torch.tensor(probs, dtype=torch.float64)
    mask = torch.zeros(1, width, dtype=torch.bool)
    mask[0, : len(probs)] = True
    return torch.where(p > 0, p.log(), torch.full_like(p, NEG)), mask


def test_policy_diagnostics_against_hand_computation():
    log_p, mask = dist(0.5, 0.25, 0.125, 0.125)
    log_b, _ = dist(0.125, 0.125, 0.25, 0.5)
    d = policy_diagnostics(log_p, log_b, mask, top_k=2)
    h = -(0.5 * math.log(0.5) + 0.25 * math.log(0.25) + 2 * 0.125 * math.log(0.125))  # 1.2130 nats
    fwd = (
        0.125 * math.log(0.125 / 0.5)
        + 0.125 * math.log(0.125 / 0.25)
        + 0.25 * math.log(0.25 / 0.125)
        + 0.5 * math.log(0.5 / 0.125)
    )
    rev = (
        0.5 * math.log(0.5 / 0.125)
        + 0.25 * math.log(0.25 / 0.125)
        + 0.125 * math.log(0.125 / 0.25)
        + 0.125 * math.log(0.125 / 0.5)
    )
    assert d["entropy"].item() == pytest.approx(h) and d["forward_kl"].item() == pytest.approx(fwd)
    assert d["reverse_kl"].item() == pytest.approx(rev)
    assert d["cov_k"].item() == pytest.approx(0.125 + 0.125)  # p's mass on the base's top-2 (slots 3, 2)
    assert policy_diagnostics(log_p, log_b, mask, top_k=1)["cov_k"].item() == pytest.approx(0.125)
    # fewer legal moves than k: the base's "top 5" is every legal move, cov = 1 (illegal slots never count)
    assert policy_diagnostics(log_p, log_b, mask, top_k=5)["cov_k"].item() == pytest.approx(1.0)
    same = policy_diagnostics(log_b, log_b, mask)
    assert same["forward_kl"].item() == 0.0 and same["reverse_kl"].item() == 0.0


def test_zero_mass_on_a_base_move_makes_forward_kl_infinite_and_is_counted():
    log_p, mask = dist(1.0, 0.0, 0.0)
    mask[0, :3] = True  # three legal moves, p one-hot (a tempered μ at τ → 0)
    log_b, _ = dist(0.5, 0.25, 0.25)
    d = policy_diagnostics(log_p, log_b, mask)
    assert d["entropy"].item() == 0.0 and d["forward_kl"].item() == math.inf
    assert d["reverse_kl"].item() == pytest.approx(math.log(2))
    m = clustered_mean(np.array([1.0, math.inf, 3.0]), np.array([0, 0, 1]))
    assert m["mean"] == 2.0 and m["n_inf"] == 1


def test_clustered_standard_error():
    x, g = np.array([1.0, 2.0, 3.0, 6.0]), np.array([0, 0, 1, 1])
    m = clustered_mean(x, g)
    resid = np.array([(1 - 3) + (2 - 3), (3 - 3) + (6 - 3)])
    assert m["mean"] == 3.0 and m["se"] == pytest.approx(math.sqrt(2 / 1 * (resid**2).sum()) / 4)
    assert math.isnan(clustered_mean(x, np.zeros(4, np.int64))["se"])  # one game: no spread to measure


def test_play_distribution_modes():
    model = load_model("random:tiny")
    boards = [chess.Board(), chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")]
    from pdx_lightning.chesscore.moves import legal_mask
    from pdx_lightning.nets.inference import evaluate_boards

    log_pi, wdl = evaluate_boards(model, boards)
    mask = legal_mask(boards)
    assert torch.equal(play_distribution(log_pi, wdl, mask, "raw"), log_pi)
    want = tempered_log_probs(log_pi, mask, wdl_entropy(wdl))
    assert torch.equal(play_distribution(log_pi, wdl, mask, "adaptive"), want)
    assert torch.allclose(evaluate_play(model, boards, "adaptive").log_p, want)
    with pytest.raises(PlayModeError, match="unknown play mode"):
        play_distribution(log_pi, wdl, mask, "hot")


def test_play_modes_line_up_with_models(tmp_path):
    assert resolve_play_modes(["a", "b"], None) == ["raw", "raw"]
    assert resolve_play_modes(["a", "b"], ["adaptive"]) == ["adaptive", "adaptive"]
    assert resolve_play_modes(["a", "b"], ["raw", "adaptive"]) == ["raw", "adaptive"]
    with pytest.raises(PlayModeError, match="once per model"):
        resolve_play_modes(["a", "b", "c"], ["raw", "adaptive"])
    for temp, want in (("adaptive", "adaptive"), ("fixed", "raw")):
        ckpt = tmp_path / f"{temp}.ckpt"
        torch.save({"hyper_parameters": {"selfplay": {"temperature": temp}}}, ckpt)
        assert checkpoint_play_mode(str(ckpt)) == want
        assert resolve_play_modes([str(ckpt), "base:small"], ["auto"]) == [want, "raw"]


def test_game_end_rules():
    def state(moves, fen=None):
        b = chess.Board(fen) if fen else chess.Board()
        h = GameHistory(b)
        for m in moves.split():
            b.push_uci(m)
            h.push(b)
        return b, list(b.legal_moves), h

    assert _ended(*state("f2f3 e7e5 g2g4 d8h4"), False) == "black_win"
    assert _ended(*state("", "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), False) == "draw"  # stalemate
    threefold = state("g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8")
    assert _ended(*threefold, False) is None and _ended(*threefold, True) == "draw"
    assert _ended(*state("", "8/8/4k3/8/8/4K3/8/8 w - - 0 1"), False) == "draw"  # insufficient material


def test_self_play_collects_every_position_of_every_game():
    model = load_model("random:tiny")
    r = self_play_diagnostics(model, "raw", model, games=3, max_plies=3, seed=1)
    assert r["positions"] == 9 and r["results"]["capped"] == 3 and r["plies_mean"] == 3
    assert r["forward_kl"]["mean"] == 0.0 and r["reverse_kl"]["mean"] == 0.0  # the base against itself
    assert 0 < r["cov_k"]["mean"] < 1 and r["entropy"]["mean"] > 2.5  # a random net is broad
    again = self_play_diagnostics(model, "raw", model, games=3, max_plies=3, seed=1)
    assert again["entropy"] == r["entropy"]  # seeded
    other = self_play_diagnostics(model, "raw", model, games=3, max_plies=3, seed=2)
    assert other["entropy"] != r["entropy"]
    tempered = self_play_diagnostics(model, "adaptive", model, games=3, max_plies=3, seed=1)
    assert tempered["forward_kl"]["mean"] > 0 and tempered["reverse_kl"]["mean"] > 0


def test_cli_diagnostics_json_and_flags(tmp_path, capsys):
    from pdx_lightning.cli import TOOLS

    assert TOOLS["eval diagnostics"][0] == "pdx_lightning.evaluation.diagnostics"
    parser = argparse.ArgumentParser()
    diag_cli.add_arguments(parser)
    out = tmp_path / "d.json"
    args = [
        "--model",
        "random:tiny",
        "--play",
        "raw",
        "--model",
        "random:tiny:1",
        "--play",
        "adaptive",
        "--base",
        "random:tiny",
        "--games",
        "2",
        "--max-plies",
        "2",
        "--top-k",
        "3",
        "--json",
        str(out),
    ]
    assert diag_cli.run(parser.parse_args(args)) == 0
    d = json.loads(out.read_text())
    assert (d["base"], d["games"], d["max_plies"], d["top_k"]) == ("random:tiny", 2, 2, 3)
    a, b = d["models"]
    assert (a["name"], a["play"], b["name"], b["play"]) == ("random:tiny", "raw", "random:tiny:1", "adaptive")
    assert a["positions"] == b["positions"] == 4 and a["forward_kl"]["mean"] == 0.0 and b["forward_kl"]["mean"] > 0
    assert set(b) >= {"entropy", "forward_kl", "reverse_kl", "cov_k", "results", "plies_mean", "seconds"}
    assert "KL(π_base‖p)" in capsys.readouterr().out
    # --top-k and the default base (the first --model) change the numbers
    d5 = parser.parse_args(args[:-2] + ["--top-k", "5", "--json", str(out)])
    assert diag_cli.run(d5) == 0 and json.loads(out.read_text())["models"][1]["cov_k"] != b["cov_k"]
    own = ["--model", "random:tiny:1", "--play", "raw", "--games", "2", "--max-plies", "2", "--json", str(out)]
    assert diag_cli.run(parser.parse_args(own)) == 0
    d = json.loads(out.read_text())
    assert d["base"] == "random:tiny:1" and d["models"][0]["forward_kl"]["mean"] == 0.0


def test_cli_passes_claim_draws_and_micro_batch(tmp_path, monkeypatch):
    seen = {"claim": set(), "mb": set()}
    real_ended, real_eval = diag_cli._ended, diag_cli.evaluate
    monkeypatch.setattr(diag_cli, "_ended", lambda b, lg, h, c: seen["claim"].add(c) or real_ended(b, lg, h, c))
    monkeypatch.setattr(diag_cli, "evaluate", lambda m, x, k, mb: seen["mb"].add(mb) or real_eval(m, x, k, mb))
    parser = argparse.ArgumentParser()
    diag_cli.add_arguments(parser)
    base = ["--model", "random:tiny", "--games", "2", "--max-plies", "1"]
    assert diag_cli.run(parser.parse_args(base + ["--claim-draws", "--micro-batch", "3"])) == 0
    assert seen == {"claim": {True}, "mb": {3}}
    with pytest.raises(SystemExit) as e:  # refused by the flag's type, before any work
        parser.parse_args(base + ["--games", "0"])
    assert e.value.code == 2
