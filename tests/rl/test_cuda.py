"""Self-play training on a CUDA device (``-m cuda`` or the default run on a GPU machine; skipped without one):
the batch lives on the device, sampling and the step's math stay there, bf16-mixed trains, and a run resumed
from its checkpoint continues bit-identically."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

pytestmark = pytest.mark.cuda


def _module(**sp) -> PDXModule:
    cfg = SelfPlayConfig(n_games=16, opening_max_moves=3, max_plies=20, seed=1, **sp)
    return PDXModule(
        base="random:tiny",
        algorithm=PDXSettings(micro_batch=8),
        selfplay=cfg,
        lr_backbone=1e-3,
        lr_final_block=1e-3,
        lr_policy_head=1e-3,
        lr_value_head=1e-3,
        warmup_steps=1,
    )


def _trainer(steps: int, **kw) -> L.Trainer:
    kw.setdefault("enable_checkpointing", False)
    return L.Trainer(
        max_steps=steps,
        accelerator="gpu",
        devices=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        **kw,
    )


class BatchDevices(L.Callback):
    def __init__(self) -> None:
        self.devices: set[str] = set()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        b = pl_module.dataset._begin()  # a fresh batch, as the next step would see it
        self.devices |= {t.device.type for t in (b.x, b.mask, b.log_p_base, b.tau, b.wdl_base, b.legal, b.legal_count)}


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_the_step_runs_on_the_device(precision):
    m, probe = _module(workers=2), BatchDevices()
    _trainer(3, precision=precision, callbacks=[probe]).fit(m)
    assert probe.devices == {"cuda"}
    assert m.param_version == 3 and next(m.online.parameters()).device.type == "cuda"
    assert all(torch.isfinite(p).all() for p in m.online.parameters())


def test_resume_on_the_device_is_bit_identical(tmp_path):
    L.seed_everything(0)
    full = _module()
    _trainer(4).fit(full)
    L.seed_everything(0)
    first = _module()
    _trainer(
        2,
        callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)],
        enable_checkpointing=True,
    ).fit(first)
    L.seed_everything(0)
    resumed = _module()
    _trainer(
        4,
        callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)],
        enable_checkpointing=True,
    ).fit(resumed, ckpt_path=str(tmp_path / "last.ckpt"), weights_only=True)
    assert [b.move_stack for b in resumed.dataset.boards] == [b.move_stack for b in full.dataset.boards]
    for a, b in zip(full.online.parameters(), resumed.online.parameters()):
        assert torch.equal(a, b)
