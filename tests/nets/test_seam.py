"""The network seam (nets/seam.py) and the files that go through its registry (nets/files.py):
every preset of every family satisfies the protocol; files and checkpoints record the family and
load through the registry (files from before families load as chessformer); a config that lies
about its tensors is refused before anything is allocated; ``random:`` leaves the RNG alone."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import pytest
import torch
from torch import nn

from pdx_lightning.nets import (
    FAMILIES,
    PARAM_GROUPS,
    ModelLoadError,
    NetOutput,
    Network,
    base_reference,
    build_network,
    check_base_reference,
    chessformer,
    get_family,
    load_model,
    network_record,
    register_family,
    save_network,
    seam,
)
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig

PRESETS = [(f.name, p) for f in FAMILIES.values() for p in f.presets]


@pytest.mark.parametrize("family,preset", PRESETS, ids=[f"{f}-{p}" for f, p in PRESETS])
def test_every_preset_satisfies_the_seam(family, preset):
    fam = get_family(family)
    cfg = fam.presets[preset]
    assert cfg.family == family and "family" not in cfg.to_dict()
    assert type(cfg)(**cfg.to_dict()) == cfg  # the stored dict rebuilds the config
    with torch.device("meta"):  # shapes only: bt4 is never materialized
        model = fam.model_cls(cfg)
        out = model(torch.empty(3, 112, 8, 8))
    assert isinstance(model, Network) and isinstance(out, NetOutput)
    assert out.policy.shape == (3, 4288) and out.wdl.shape == (3, 3)
    assert out.moves_left is None or out.moves_left.shape == (3,)
    groups = model.param_groups()
    assert tuple(groups) == PARAM_GROUPS and all(groups.values())
    ids = [id(p) for ps in groups.values() for p in ps]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())  # a partition: each exactly once
    assert network_record(model) == {"family": family, "config": cfg.to_dict()}


def test_net_output_is_one_type_everywhere():
    assert chessformer.NetOutput is seam.NetOutput is NetOutput
    out = NetOutput(torch.zeros(1, 4288), torch.zeros(1, 3))
    assert out.moves_left is None and out._fields == ("policy", "wdl", "moves_left")


# ---------------------------------------------------------------- the registry


def test_unknown_family_is_named_with_the_known_ones(tmp_path):
    known = r"unknown network family 'resnet9'; known families: .*chessformer"
    with pytest.raises(ModelLoadError, match=known):
        get_family("resnet9")
    model = load_model("random:tiny")
    save_network(model, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    blob["family"] = "resnet9"
    torch.save(blob, tmp_path / "other.pt")
    with pytest.raises(ModelLoadError, match=r"other\.pt: unknown network family 'resnet9'; known families"):
        load_model(str(tmp_path / "other.pt"))


def test_register_family_refuses_a_config_of_another_family():
    with pytest.raises(ValueError, match="registered as 'resnet9'"):
        register_family("resnet9", ModelConfig, Chessformer)
    assert "resnet9" not in FAMILIES


def test_files_record_the_family_and_old_files_load_as_chessformer(tmp_path):
    model = load_model("random:tiny:5")
    save_network(model, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    assert blob["format"] == "pdx_network/1" and blob["family"] == "chessformer"
    assert blob["config"] == model.cfg.to_dict() and "family" not in blob["config"]
    del blob["family"]  # a file written before families
    torch.save(blob, tmp_path / "old.pt")
    old = load_model(str(tmp_path / "old.pt"))
    assert isinstance(old, Chessformer) and ModelConfig(**blob["config"]) == model.cfg
    x = torch.randn(2, 112, 8, 8)
    torch.testing.assert_close(old(x).policy, model(x).policy, rtol=0, atol=0)
    # a checkpoint from before families: only pdx_model_config
    ckpt = {
        "state_dict": {f"ema.{k}": v for k, v in model.state_dict().items()},
        "pdx_model_config": model.cfg.to_dict(),
    }
    torch.save(ckpt, tmp_path / "old.ckpt")
    torch.testing.assert_close(load_model(str(tmp_path / "old.ckpt"))(x).wdl, model(x).wdl, rtol=0, atol=0)


def test_a_config_naming_another_family_is_refused(tmp_path):
    model = load_model("random:tiny")
    with pytest.raises(ModelLoadError, match="names family 'other'"):
        build_network("chessformer", {**model.cfg.to_dict(), "family": "other"}, model.state_dict(), "here")
    named = {**model.cfg.to_dict(), "family": "chessformer"}
    again = build_network("chessformer", named, model.state_dict(), "x")
    assert again.cfg == model.cfg


# A second family, registered only inside the tests below: the registry, not the Chessformer, is under test.
@dataclass(frozen=True)
class ToyConfig:
    family = "toy"
    width: int = 4

    def to_dict(self) -> dict:
        return {"width": self.width}


@dataclass(frozen=True)
class Toy2Config(ToyConfig):
    family = "toy2"


class ToyNet(nn.Module):
    def __init__(self, cfg: ToyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.body = nn.Linear(112 * 64, cfg.width)
        self.final = nn.Linear(cfg.width, cfg.width)
        self.policy_head = nn.Linear(cfg.width, 4288)
        self.value_head = nn.Linear(cfg.width, 3)

    def forward(self, x: torch.Tensor) -> NetOutput:
        h = self.final(torch.relu(self.body(x.flatten(1))))
        return NetOutput(self.policy_head(h), self.value_head(h))

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {
            "backbone": list(self.body.parameters()),
            "final_block": list(self.final.parameters()),
            "policy_head": list(self.policy_head.parameters()),
            "value_head": list(self.value_head.parameters()),
        }


@pytest.fixture
def toy_family(monkeypatch):
    checked = []
    monkeypatch.setattr(seam, "FAMILIES", dict(seam.FAMILIES))  # registration undone after the test
    register_family("toy", ToyConfig, ToyNet, check=lambda c, s, w: checked.append(w), presets={"toy4": ToyConfig(4)})
    return checked


def test_a_second_family_round_trips_through_files_and_checkpoints(tmp_path, toy_family):
    model = load_model("random:toy4:1")
    assert isinstance(model, ToyNet) and isinstance(model, Network)
    save_network(model, tmp_path / "toy.pt")
    assert torch.load(tmp_path / "toy.pt", weights_only=True)["family"] == "toy"
    again = load_model(str(tmp_path / "toy.pt"))
    assert isinstance(again, ToyNet) and toy_family == [str(tmp_path / "toy.pt")]  # the family's check ran
    x = torch.randn(2, 112, 8, 8)
    torch.testing.assert_close(again(x).policy, model(x).policy, rtol=0, atol=0)
    record = network_record(model)
    ckpt = {
        "state_dict": {f"online.{k}": v for k, v in model.state_dict().items()},
        "pdx_model_family": record["family"],
        "pdx_model_config": record["config"],
    }
    torch.save(ckpt, tmp_path / "toy.ckpt")
    online = load_model(str(tmp_path / "toy.ckpt"), weights="online")
    assert isinstance(online, ToyNet)
    torch.testing.assert_close(online(x).wdl, model(x).wdl, rtol=0, atol=0)
    del ckpt["pdx_model_family"]  # absent: chessformer, whose config cannot take the toy's
    torch.save(ckpt, tmp_path / "nofamily.ckpt")
    with pytest.raises(ModelLoadError, match="nofamily.ckpt"):
        load_model(str(tmp_path / "nofamily.ckpt"), weights="online")


def test_random_presets_are_searched_in_every_family(toy_family):
    listed = r"unknown model preset 'huge'; presets: tiny \(chessformer\).*toy4 \(toy\)"
    with pytest.raises(ModelLoadError, match=listed):
        load_model("random:huge")
    register_family("toy2", Toy2Config, ToyNet, presets={"tiny": Toy2Config(2)})
    with pytest.raises(ModelLoadError, match=r"ambiguous \(chessformer, toy2\) model preset 'tiny'"):
        load_model("random:tiny")


# ---------------------------------------------------------------- refusing a lying config before allocating


@pytest.fixture
def constructions(monkeypatch):
    """The device each Chessformer is built on while loading (meta = no memory)."""
    devices = []

    class Spy(Chessformer):
        def __init__(self, cfg):
            devices.append(torch.empty(()).device.type)
            super().__init__(cfg)

    monkeypatch.setitem(FAMILIES, "chessformer", replace(FAMILIES["chessformer"], model_cls=Spy))
    return devices


def test_a_config_claiming_more_layers_is_refused_before_any_build(tmp_path, constructions):
    model = Chessformer(ModelConfig.from_name("tiny"))
    save_network(model, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    blob["config"]["n_layers"] = 10**9  # even a meta-device build would loop for hours
    torch.save(blob, tmp_path / "lie.pt")
    refused = r"lie\.pt: the stored model config does not describe .*\(2 encoder"
    with pytest.raises(ModelLoadError, match=refused):
        load_model(str(tmp_path / "lie.pt"))
    assert constructions == []


def test_a_config_claiming_wider_tensors_is_refused_after_a_meta_build_only(tmp_path, constructions):
    model = Chessformer(ModelConfig.from_name("tiny"))
    save_network(model, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    blob["config"].update(embed_dim=1 << 20, ffn_dim=1 << 22)  # ~10^13 weights if it were allocated
    torch.save(blob, tmp_path / "wide.pt")
    with pytest.raises(ModelLoadError, match=r"wide\.pt: weights do not fit the stored chessformer config"):
        load_model(str(tmp_path / "wide.pt"))
    assert constructions == ["meta"]
    load_model(str(tmp_path / "net.pt"))  # the honest file: meta check, then the model
    assert constructions == ["meta", "meta", "cpu"]


def test_non_finite_weights_are_refused(tmp_path):
    model = Chessformer(ModelConfig.from_name("tiny"))
    state = model.state_dict()
    state["gate_add"] = state["gate_add"].clone()
    state["gate_add"][0, 0] = float("nan")
    with pytest.raises(ModelLoadError, match="'gate_add' holds NaN"):
        build_network("chessformer", model.cfg.to_dict(), state, "here")


# ---------------------------------------------------------------- random: and the RNG


def test_random_models_leave_the_global_rng_alone_and_repeat_by_seed():
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    a = load_model("random:tiny:7")
    assert torch.equal(torch.get_rng_state(), before)  # the caller's RNG is untouched
    expected = torch.rand(3)
    torch.manual_seed(1234)
    b = load_model("random:tiny:7")
    assert torch.equal(torch.rand(3), expected)
    c = load_model("random:tiny:8")
    default = load_model("random:tiny")
    for (k, va), vb, _vc in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert torch.equal(va, vb), k  # the same seed: the same weights
    assert not torch.equal(a.layers[0].qkv.weight, c.layers[0].qkv.weight)
    assert torch.equal(default.embed.weight, load_model("random:tiny:0").embed.weight)


# ---------------------------------------------------------------- the frozen base by name and hash


def test_base_reference_names_and_hashes_the_base(tmp_path):
    save_network(load_model("random:tiny"), tmp_path / "base.pt")
    name = str(tmp_path / "base.pt")
    ref = base_reference(name)
    assert ref == {"name": name, "sha256": hashlib.sha256((tmp_path / "base.pt").read_bytes()).hexdigest()}
    check_base_reference(ref, name)
    check_base_reference({"name": name, "sha256": None}, name)  # nothing recorded: nothing to compare
    check_base_reference(None, name)
    assert base_reference("random:tiny") == {"name": "random:tiny", "sha256": None}
    check_base_reference(base_reference("random:tiny"), "random:tiny")
    save_network(load_model("random:tiny:1"), tmp_path / "base.pt")  # the base changed under the run
    changed = rf"trained from base '.*base\.pt' with sha256 {ref['sha256'][:12]}…, but .* now has a different"
    with pytest.raises(ValueError, match=changed):
        check_base_reference(ref, name)
