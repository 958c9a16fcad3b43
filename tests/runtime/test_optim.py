"""The fine-tuning optimizer (``runtime.optim.layerwise_adamw``) pinned: groups, rates, betas, weight decay,
warmup; and the NaN-to-null JSON writer (``runtime.jsonio``) every tool uses."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pdx_lightning.nets import PARAM_GROUPS, load_model
from pdx_lightning.runtime.jsonio import dumps, json_safe, write_json
from pdx_lightning.runtime.optim import layerwise_adamw

HP = SimpleNamespace(
    lr_backbone=1e-5,
    lr_final_block=2e-5,
    lr_policy_head=3e-5,
    lr_value_head=4e-5,
    adam_betas=(0.8, 0.95),
    weight_decay=0.03,
    warmup_steps=4,
)


def test_four_groups_with_their_own_peak_rates_betas_and_weight_decay():
    net = load_model("random:tiny")
    opt = layerwise_adamw(net, HP)["optimizer"]
    assert isinstance(opt, torch.optim.AdamW)
    groups = {g["name"]: g for g in opt.param_groups}
    assert tuple(groups) == PARAM_GROUPS
    peaks = {"backbone": 1e-5, "final_block": 2e-5, "policy_head": 3e-5, "value_head": 4e-5}
    assert {n: g["initial_lr"] for n, g in groups.items()} == peaks
    assert all(g["betas"] == (0.8, 0.95) and g["weight_decay"] == 0.03 for g in opt.param_groups)
    ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in net.parameters())  # every parameter, exactly once


@pytest.mark.parametrize("warmup", [0, 1, 4])
def test_linear_warmup_then_constant(warmup):
    net = load_model("random:tiny")
    conf = layerwise_adamw(net, SimpleNamespace(**{**vars(HP), "warmup_steps": warmup}))
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    assert conf["lr_scheduler"]["interval"] == "step"
    seen = []
    for _ in range(7):
        seen.append([g["lr"] for g in opt.param_groups])
        opt.step()
        sched.step()
    for t, lrs in enumerate(seen):
        factor = min(1.0, (t + 1) / max(1, warmup))
        assert lrs == pytest.approx([factor * p for p in (1e-5, 2e-5, 3e-5, 4e-5)], rel=1e-12), t
    assert seen[-1] == pytest.approx([1e-5, 2e-5, 3e-5, 4e-5])  # constant after the warmup


def test_a_network_with_unknown_groups_is_refused():
    class Odd(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2))

        def param_groups(self):
            return {"backbone": [self.w], "embedding": []}

    with pytest.raises(ValueError, match=r"Odd.param_groups\(\) returned unknown groups \['embedding'\]"):
        layerwise_adamw(Odd(), HP)


def test_json_writer_turns_nan_and_inf_into_null_and_numpy_into_python(tmp_path, capsys):
    doc = {
        "a": math.nan,
        "b": [1.5, math.inf, -math.inf],
        "c": np.float32(2.5),
        "d": np.int64(3),
        "e": np.array([[1, 2]]),
        "f": np.bool_(True),
        "g": (np.float64("nan"), "x"),
        4: None,
    }
    want = {"a": None, "b": [1.5, None, None], "c": 2.5, "d": 3, "e": [[1, 2]], "f": True, "g": [None, "x"], "4": None}
    assert json_safe(doc) == want
    assert json.loads(dumps(doc)) == want
    write_json(tmp_path / "x.json", doc)
    assert json.loads((tmp_path / "x.json").read_text()) == want
    assert "NaN" not in (tmp_path / "x.json").read_text() and "wrote" in capsys.readouterr().out


def test_the_optimizer_arguments_have_one_help_text_in_both_modules():
    from pdx_lightning.rl.module import PDXModule
    from pdx_lightning.runtime.optim import OPTIMIZER_ARGS_DOC
    from pdx_lightning.supervised.control import PuzzleControl

    rl_doc, control_doc = PDXModule.__init__.__doc__, PuzzleControl.__init__.__doc__
    for doc in (rl_doc, control_doc):
        assert "{optimizer_args}" not in doc
    for line in OPTIMIZER_ARGS_DOC.format(value_head_note="").splitlines():
        assert f"            {line}\n" in rl_doc, line
    assert (
        "            lr_value_head: peak learning rate of the value head (no loss reaches it: kept for "
        "symmetry).\n" in control_doc
    )
    assert "            adam_betas: AdamW (β1, β2).\n" in control_doc
