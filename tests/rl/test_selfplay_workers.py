"""Chess worker threads in training (issue 28): a worker that fails or hangs mid-step stops the run with a
named error before the step's optimizer update, and ``--ckpt_path last`` then continues exactly as an
uninterrupted run."""

from __future__ import annotations

import threading
import time

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.chesscore import native_core
from pdx_lightning.chesscore.native_core import NativeCore
from pdx_lightning.chesscore.pool_interface import ChessWorkerError
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")


def _module(timeout: float = 600.0) -> PDXModule:
    cfg = SelfPlayConfig(n_games=12, opening_max_moves=3, max_plies=16, seed=3, workers=2, worker_timeout_s=timeout)
    return PDXModule(
        base="random:tiny",
        algorithm=PDXSettings(micro_batch=6),
        selfplay=cfg,
        lr_backbone=1e-3,
        lr_final_block=1e-3,
        lr_policy_head=1e-3,
        lr_value_head=1e-3,
        warmup_steps=1,
    )


def _fit(m, steps, ckpt_dir=None, ckpt_path=None, callbacks=()):
    cbs = list(callbacks) + (
        [ModelCheckpoint(dirpath=ckpt_dir, save_last=True, every_n_train_steps=1)] if ckpt_dir else []
    )
    L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=bool(ckpt_dir),
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=cbs,
    ).fit(m, ckpt_path=ckpt_path, **({"weights_only": True} if ckpt_path else {}))


class Arm(L.Callback):
    """Arms the fault once ``after`` optimizer steps are done."""

    def __init__(self, after: int, armed: threading.Event) -> None:
        self.after, self.armed = after, armed

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.after:
            self.armed.set()


# the resumed run checkpoints into the directory it resumes from, as `--ckpt_path last` does (the CLI
# silences this note on a resume too)
@pytest.mark.filterwarnings("ignore:Checkpoint directory .* exists and is not empty:UserWarning")
@pytest.mark.parametrize("fault", ["raises", "hangs"])
def test_a_failing_or_hung_worker_stops_the_step_and_last_resumes_exactly(tmp_path, monkeypatch, fault):
    L.seed_everything(0)
    full = _module()
    _fit(full, 5)

    armed = threading.Event()
    real_play = NativeCore.play

    def faulty(self, games, actions, *args):
        if armed.is_set() and threading.current_thread().name.startswith("pdx-chess") and games[0] >= 3:
            if fault == "raises":
                raise RuntimeError("injected fault")
            time.sleep(1.5)  # past the 0.3 s timeout below
        return real_play(self, games, actions, *args)

    monkeypatch.setattr(NativeCore, "play", faulty)
    L.seed_everything(0)
    broken = _module(timeout=0.3)
    why = "failed: injected fault" if fault == "raises" else "did not finish within 0.3 s"
    with pytest.raises(ChessWorkerError, match=rf"chess worker 1 \(games 3\.\.5\) {why}"):
        _fit(broken, 5, ckpt_dir=tmp_path, callbacks=[Arm(3, armed)])
    assert broken.param_version == 3  # no optimizer step for the failed one
    monkeypatch.setattr(NativeCore, "play", real_play)
    time.sleep(1.6 if fault == "hangs" else 0)  # the hung shard's thread finishes its sleep

    L.seed_everything(0)
    resumed = _module()
    _fit(resumed, 5, ckpt_dir=tmp_path, ckpt_path=str(tmp_path / "last.ckpt"))
    assert resumed.param_version == 5
    assert [b.move_stack for b in resumed.dataset.boards] == [b.move_stack for b in full.dataset.boards]
    for a, b in zip(
        [*full.online.parameters(), *full.ema.parameters()], [*resumed.online.parameters(), *resumed.ema.parameters()]
    ):
        assert torch.equal(a, b)
