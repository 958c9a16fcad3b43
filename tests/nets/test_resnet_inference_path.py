"""The classic family's inference path (nets/resnet.py, "Inference path"): channels-last, functional,
73 policy planes — the same outputs as the module path to float32 rounding, for every head, activation
and SE variant; taken only without autograd on float32 CPU tensors; its weight cache follows the weights."""

from __future__ import annotations

import copy
import random

import chess
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask
from pdx_lightning.nets import resnet
from pdx_lightning.nets.resnet import ClassicConfig, ClassicResNet

CONFIGS = {
    "se-conv-wdl-relu": ClassicConfig(
        channels=16,
        blocks=3,
        se_channels=4,
        moves_left_channels=4,
        value_channels=8,
        value_hidden=32,
        moves_left_hidden=16,
    ),
    "plain-fc-classical-mish": ClassicConfig(
        channels=16,
        blocks=2,
        se_channels=0,
        activation="mish",
        policy="classical",
        policy_channels=8,
        value="classical",
        value_channels=8,
        value_hidden=32,
    ),
    "se-fc-wdl-mish": ClassicConfig(
        channels=8,
        blocks=1,
        se_channels=2,
        activation="mish",
        policy="classical",
        policy_channels=4,
        value_channels=4,
        value_hidden=16,
    ),
    "maia-shape": ClassicConfig(),
}


def random_net(cfg: ClassicConfig, seed: int = 0) -> ClassicResNet:
    """He-like random weights: logits of Maia's order of magnitude."""
    torch.manual_seed(seed)
    model = ClassicResNet(cfg)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 1
            p.copy_(torch.randn_like(p) * (1.5 / fan_in**0.5 if p.dim() > 1 else 0.1))
    return model.eval()


def boards(n: int, seed: int = 0) -> list[chess.Board]:
    """Random games with history, castling positions among them."""
    rng = random.Random(seed)
    out = [
        chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9"),
        chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 4 9"),
    ]
    while len(out) < n:
        b = chess.Board()
        for _ in range(rng.randrange(100)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        out.append(b)
    return out


def both_paths(model: ClassicResNet, x: torch.Tensor, monkeypatch) -> tuple:
    """(inference path, module path, float64 module path) outputs."""
    with torch.no_grad():
        fast = model(x)
        monkeypatch.setattr(resnet, "INFERENCE_FAST_PATH", False)
        slow = model(x)
        monkeypatch.setattr(resnet, "INFERENCE_FAST_PATH", True)
        exact = copy.deepcopy(model).double()(x.double())  # float64: the module path
    return fast, slow, exact


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("batch", [1, 7, 64])
def test_inference_path_computes_what_the_module_path_computes(name, batch, monkeypatch):
    """Float32 rounding only: the inference path is as close to a float64 evaluation as the module path
    (both reorder float32 sums; the module path itself moves by as much between batch sizes)."""
    model = random_net(CONFIGS[name])
    bs = boards(batch, seed=batch)
    x = torch.from_numpy(encode_boards(bs))
    fast, slow, exact = both_paths(model, x, monkeypatch)
    err_fast = (fast.policy.double() - exact.policy).abs().max().item()
    err_slow = (slow.policy.double() - exact.policy).abs().max().item()
    scale = exact.policy[legal_mask(bs)].abs().max().item()
    assert scale > 0.1  # not a vacuous comparison
    assert err_fast <= 2 * err_slow + 2e-7 * scale, (err_fast, err_slow, scale)
    assert (fast.policy - slow.policy).abs().max().item() <= 4e-6 * max(scale, 1.0), (err_fast, err_slow)
    p_fast, p_slow, p_exact = (o.wdl.double().softmax(-1) for o in (fast, slow, exact))
    assert (p_fast - p_exact).abs().max() <= 2 * (p_slow - p_exact).abs().max() + 1e-7
    fill = slow.policy == resnet.UNMAPPED_LOGIT
    assert fill.any() and bool((fast.policy[fill] == resnet.UNMAPPED_LOGIT).all())  # the fills, exactly


def test_the_inference_path_is_taken_only_without_autograd_on_float32_cpu(monkeypatch):
    model = random_net(CONFIGS["se-conv-wdl-relu"])
    x = torch.from_numpy(encode_boards(boards(4)))
    calls = []
    real = ClassicResNet._inference_forward
    monkeypatch.setattr(ClassicResNet, "_inference_forward", lambda self, t: calls.append(1) or real(self, t))
    model(x)  # autograd on: the module path (training)
    assert calls == []
    with torch.no_grad():
        model(x)
    with torch.inference_mode():
        model(x)
    assert len(calls) == 2
    with torch.no_grad():
        model.double()(x.double())  # float64: the module path
    assert len(calls) == 2


def test_the_weight_cache_follows_in_place_updates_and_new_weights():
    model = random_net(CONFIGS["se-conv-wdl-relu"])
    x = torch.from_numpy(encode_boards(boards(8)))
    with torch.no_grad():
        before = model(x).policy.clone()
        model.blocks[0].conv1.weight.mul_(1.5)  # an optimizer step / EMA update: versioned
        after = model(x).policy
        assert not torch.allclose(before, after)
        with torch.enable_grad():
            want = model(x).policy  # the module path sees the new weights
        torch.testing.assert_close(after, want)
        model.load_state_dict(random_net(CONFIGS["se-conv-wdl-relu"], seed=5).state_dict())
        torch.testing.assert_close(model(x).policy, random_net(CONFIGS["se-conv-wdl-relu"], seed=5)(x).policy)
        model.blocks[0].conv1.weight.data.mul_(2.0)  # not versioned by PyTorch: clear by hand
        model.clear_inference_cache()
        with torch.enable_grad():
            want = model(x).policy
        torch.testing.assert_close(model(x).policy, want)
    assert "_inference_cache" not in model.state_dict()
