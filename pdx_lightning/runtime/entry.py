"""The one LightningCLI entry of every training command.

``pdx fit|validate`` (``PDXModule``), ``pdx pretrain`` (``DistillModule`` + ``ShardDataModule``) and the
sweep's puzzle-tuned control (``python -m pdx_lightning.supervised.control fit``) all run through
:func:`run_lightning`, so all get what :class:`~pdx_lightning.runtime.resume.PDXLightningCLI` adds:
atomic checkpoint writes, ``weights_only`` checkpoint loading, logger-version continuity on resume,
output preflight, and the same closing summary.

Under DDP every rank runs this function (Lightning relaunches the command once per rank), so the
closing summary reads the trainer's collective properties (``trainer.log_dir`` is a broadcast) on
every rank and prints on rank 0 only: a property read on one rank alone waits for peers that have
already left (a hang, or gloo's "Connection closed by peer").
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import lightning as L
from lightning.pytorch.cli import LightningCLI

from pdx_lightning.runtime.resume import PDXLightningCLI

__all__ = ["run_lightning", "run_summary"]


def run_lightning(model_class: type[L.LightningModule], args: Sequence[str] | None = None, *,
                  datamodule_class: type[L.LightningDataModule] | None = None,
                  trainer_defaults: dict[str, Any] | None = None, summary: bool = True) -> LightningCLI:
    """Parse ``args`` (``[subcommand, --flags...]``; None: ``sys.argv``) with :class:`PDXLightningCLI`
    on ``model_class`` (and ``datamodule_class``), run the subcommand, print the closing summary.

    ``trainer_defaults`` are the command's Trainer defaults (a config file or flag overrides them)."""
    os.environ.setdefault("PYTHONWARNINGS", "ignore::UserWarning")  # DDP ranks are child processes
    cli = PDXLightningCLI(model_class, datamodule_class, args=None if args is None else list(args),
                          save_config_kwargs={"overwrite": True},
                          trainer_defaults=dict(trainer_defaults or {}), run=True)
    if summary:
        text = run_summary(cli.trainer)
        if text and cli.trainer.is_global_zero:
            print(text, flush=True)
    return cli


def run_summary(trainer: L.Trainer) -> str | None:
    """Where the run's logs and checkpoints are (None without a logger).

    Call it on every rank: ``trainer.log_dir`` is a collective (a broadcast from rank 0) under DDP."""
    if trainer.logger is None:
        return None
    log_dir = trainer.log_dir  # collective: every rank reads it
    ckpt = trainer.checkpoint_callback.dirpath if trainer.checkpoint_callback else None
    if log_dir is None:
        return None
    return (f"\nlogs:        {log_dir}\ncheckpoints: {ckpt}\n"
            f"TensorBoard: tensorboard --logdir {os.path.dirname(log_dir.rstrip('/'))}")
