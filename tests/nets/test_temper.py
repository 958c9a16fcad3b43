"""A policy temperature baked into a network (``nets/temper.py``, ``pdx export ... --policy-temperature``)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import chess.pgn
import pytest
import torch

from pdx_lightning.nets import load_model
from pdx_lightning.nets.lc0 import export_lc0, load_lc0
from pdx_lightning.nets.resnet import PRESETS, UNMAPPED_LOGIT, ClassicResNet
from pdx_lightning.nets.temper import PolicyTemperatureError, bake_policy_temperature

PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]


def _classical_policy() -> torch.nn.Module:
    torch.manual_seed(4)
    return ClassicResNet(replace(PRESETS["classic-tiny"], policy="classical", policy_channels=8)).eval()


NETWORKS = {
    "chessformer": lambda: load_model("random:tiny"),
    "classic, convolutional policy": lambda: load_model("random:classic-tiny"),
    "classic, classical policy": _classical_policy,
}


@pytest.mark.parametrize("family", NETWORKS)
@pytest.mark.parametrize("t", [2.0, 1.913, 0.5])
def test_every_policy_logit_is_divided_by_t_and_nothing_else_moves(family, t):
    model = NETWORKS[family]()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(6, 112, 8, 8)
    baked = bake_policy_temperature(model, t)
    with torch.no_grad():
        out, out_t = model(x), baked(x)
    mapped = out.policy != UNMAPPED_LOGIT  # the classic towers' slots no Lc0 move occupies keep their fill
    assert mapped.float().mean() > 0.2
    if t in (2.0, 0.5):  # a power of two: every product and sum scales exactly
        assert torch.equal(out_t.policy[mapped], out.policy[mapped] / t)
    else:
        torch.testing.assert_close(out_t.policy[mapped], out.policy[mapped] / t, rtol=1e-5, atol=1e-6)
    assert torch.equal(out_t.wdl, out.wdl)
    assert torch.equal(out_t.policy.argmax(-1), out.policy.argmax(-1))
    changed = [k for k, v in baked.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) in (1, 2) and all(".policy_head." in f".{k}" for k in changed), changed
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # the source is untouched


def test_temperature_one_is_the_same_network_and_bad_temperatures_are_refused():
    model = load_model("random:classic-tiny")
    x = torch.randn(3, 112, 8, 8)
    with torch.no_grad():
        assert torch.equal(bake_policy_temperature(model, 1.0)(x).policy, model(x).policy)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(PolicyTemperatureError, match="positive finite"):
            bake_policy_temperature(model, bad)
    with pytest.raises(PolicyTemperatureError, match="policy_logit_layers"):
        bake_policy_temperature(torch.nn.Linear(2, 2), 2.0)


def _games(tmp_path, name: str, player: str) -> list[list[str]]:
    out = tmp_path / f"{name}.pgn"
    r = subprocess.run(
        [*PDX, "arena", "--model", player, "--model", "random:classic-tiny:2", "--games", "4",
         "--max-plies", "40", "--pgn", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    with open(out) as f:
        games = []
        while (game := chess.pgn.read_game(f)) is not None:
            games.append([m.uci() for m in game.mainline_moves()])
    return games


def test_a_baked_file_searches_at_the_default_as_its_source_at_t_times_the_default(tmp_path):
    """The user's view: ``pdx export network --policy-temperature 2`` and a search at PolicyTemperature
    1.359 play the source's games at 2.718, move for move (T a power of two: the priors are the same
    bits); the source at the default plays other games."""
    baked = tmp_path / "baked.pt"
    r = subprocess.run(
        [*PDX, "export", "network", "--model", "random:classic-tiny", "--policy-temperature", "2", "--out", str(baked)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0 and "policy logits / 2" in r.stdout, r.stderr[-2000:]
    assert torch.load(baked, weights_only=True)["meta"]["policy_temperature"] == 2.0
    at_baked = _games(tmp_path, "baked", f"search[nodes=24]:{baked}")
    at_source = _games(tmp_path, "source", "search[nodes=24,policy_softmax_temp=2.718]:random:classic-tiny")
    at_default = _games(tmp_path, "default", "search[nodes=24]:random:classic-tiny")
    assert len(at_baked) == 4 and at_baked == at_source
    assert at_default != at_baked


def test_an_lc0_file_carries_the_baked_logits(tmp_path):
    model = load_model("random:classic-tiny")
    path = export_lc0(bake_policy_temperature(model, 1.913), tmp_path / "baked.pb.gz", encoding="float32")
    x = torch.randn(4, 112, 8, 8)
    with torch.no_grad():
        out, read = model(x), load_lc0(path)(x)
    mapped = out.policy != UNMAPPED_LOGIT
    torch.testing.assert_close(read.policy[mapped], out.policy[mapped] / 1.913, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(read.wdl, out.wdl, rtol=1e-5, atol=1e-6)


def test_the_export_flag_refuses_a_bad_temperature_in_one_line(tmp_path):
    r = subprocess.run(
        [*PDX, "export", "lc0", "--model", "random:classic-tiny", "--policy-temperature", "-1", "--out",
         str(tmp_path / "x.pb.gz")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and "--policy-temperature" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.pb.gz").exists()
