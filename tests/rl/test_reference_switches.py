"""The switches that reproduce what the authors' code computed (off by default): the value head at the
backbone's learning rate, and the value loss logged as KL(p̂‖p_θ) beside the cross-entropy."""

from __future__ import annotations

import math

import lightning as L
import torch
import torch.nn.functional as F

from pdx_lightning.chesscore.policy import wdl_entropy
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.objectives import value_loss
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

torch.set_num_threads(1)


def module(**kw) -> PDXModule:
    sp = SelfPlayConfig(n_games=4, opening_max_moves=1, max_plies=12, seed=4)
    return PDXModule(
        base="random:tiny", selfplay=sp, warmup_steps=1, lr_backbone=1e-5, lr_value_head=3e-4,
        algorithm=PDXSettings(micro_batch=4, **kw),
    )  # fmt: skip


def _group_lrs(m: PDXModule) -> dict[str, float]:
    opt = m.configure_optimizers()["optimizer"]
    return {g["name"]: g["lr"] for g in opt.param_groups}


def test_value_head_lr_backbone_trains_the_value_head_at_the_backbones_rate():
    assert _group_lrs(module())["value_head"] == 3e-4  # Table 2's own group, the default
    lrs = _group_lrs(module(value_head_lr="backbone"))
    assert lrs["value_head"] == lrs["backbone"] == 1e-5
    assert module(value_head_lr="backbone").hparams["lr_value_head"] == 3e-4  # the recorded setting stays


def test_the_value_kl_is_the_cross_entropy_less_the_rho_weighted_target_entropy():
    g = torch.Generator().manual_seed(0)
    logits, target = torch.randn(16, 3, generator=g), torch.softmax(torch.randn(16, 3, generator=g), -1)
    target[:3] = F.one_hot(torch.tensor([0, 1, 2]), 3).float()  # terminal rows: H = 0
    rho = torch.rand(16, generator=g)
    kl = (F.kl_div(torch.log_softmax(logits, -1), target, reduction="none").sum(-1) * rho).mean()  # the authors'
    ours = value_loss(logits, target, rho) - (rho * wdl_entropy(target)).mean()
    assert math.isclose(float(kl), float(ours), rel_tol=1e-6, abs_tol=1e-7)


class Metrics(L.Callback):
    def __init__(self) -> None:
        self.seen: list[dict[str, float]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.seen.append({k: float(v) for k, v in trainer.callback_metrics.items()})


def _fit(m: PDXModule) -> list[dict[str, float]]:
    rec = Metrics()
    L.Trainer(
        max_steps=2, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, log_every_n_steps=1, callbacks=[rec],
    ).fit(m)  # fmt: skip
    return rec.seen


def test_log_value_kl_adds_its_key_and_changes_nothing_else():
    off, on = _fit(module()), _fit(module(log_value_kl=True))
    assert all("loss/value_kl" not in s for s in off)
    for a, b in zip(off, on):
        assert {k: v for k, v in b.items() if k not in ("loss/value_kl", "perf/transitions_per_s")} == {
            k: v for k, v in a.items() if k != "perf/transitions_per_s"
        }  # the same run, one more key
        assert 0.0 <= b["loss/value"] - b["loss/value_kl"] <= math.log(3) + 1e-6  # E[ρ·H(p̂)], ρ ≤ 1
