"""Seeds that seed: without ``selfplay.seed`` the games follow ``seed_everything``; an explicit
``selfplay.seed`` wins; the same seed twice is bit-identical (games, weights, RNG)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.rl.selfplay import SelfPlayConfig, SelfPlayError, with_run_seed
from tiny_fit import CONF, tiny_fit_args

torch.set_num_threads(1)
TINY = tiny_fit_args(steps=2, opening_max_moves=3, max_plies=12)


def test_explicit_seed_wins_else_the_run_seed_else_zero(monkeypatch):
    monkeypatch.delenv("PL_GLOBAL_SEED", raising=False)
    assert with_run_seed(SelfPlayConfig()).seed == 0
    monkeypatch.setenv("PL_GLOBAL_SEED", "7")
    assert with_run_seed(SelfPlayConfig()).seed == 7
    assert with_run_seed(SelfPlayConfig(seed=3)).seed == 3
    assert with_run_seed(SelfPlayConfig(seed=0)).seed == 0  # 0 is a seed, not "unset"
    monkeypatch.setenv("PL_GLOBAL_SEED", "x")
    with pytest.raises(SelfPlayError, match="PL_GLOBAL_SEED='x'"):
        with_run_seed(SelfPlayConfig())


def _run(tmp_path: Path, monkeypatch, name: str, *extra: str) -> dict:
    (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path / name)  # the preset writes runs/pdx/version_0/ here
    assert cli.main(["fit", "--config", CONF, *TINY, *extra]) == 0
    ck = torch.load(tmp_path / name / "runs/pdx/version_0/checkpoints/last.ckpt", weights_only=True)
    assert ck["global_step"] == 2
    return ck


def _games(ck: dict) -> list:
    (state,) = ck["pdx_selfplay"]
    return [state["roots"], state["moves"]]


def test_seed_everything_seeds_the_games_and_the_same_seed_repeats(tmp_path, monkeypatch):
    monkeypatch.delenv("PL_GLOBAL_SEED", raising=False)
    s1 = _run(tmp_path, monkeypatch, "s1", "--seed_everything", "1")
    s2 = _run(tmp_path, monkeypatch, "s2", "--seed_everything", "2")
    again = _run(tmp_path, monkeypatch, "s1b", "--seed_everything", "1")
    assert s1["hyper_parameters"]["selfplay"]["seed"] == 1  # the checkpoint records the seed used
    assert s2["hyper_parameters"]["selfplay"]["seed"] == 2
    assert _games(s1) != _games(s2)  # other seed, other games
    assert _games(s1) == _games(again)  # same seed: same games, weights, RNG
    assert all(torch.equal(v, again["state_dict"][k]) for k, v in s1["state_dict"].items())
    (a,), (b,) = s1["pdx_selfplay"], again["pdx_selfplay"]
    assert torch.equal(a["torch_rng"], b["torch_rng"]) and a["py_rng"] == b["py_rng"]
    # an explicit selfplay.seed wins over seed_everything
    pinned = _run(tmp_path, monkeypatch, "s2p", "--seed_everything", "2", "--model.selfplay.seed", "1")
    assert pinned["hyper_parameters"]["selfplay"]["seed"] == 1 and _games(pinned) == _games(s1)
