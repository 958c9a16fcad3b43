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

Noise pdx causes knowingly is silenced here, by message and category (:func:`quiet_known_noise`):
LightningCLI's "args parameter" warning (``pdx`` passes its parsed arguments while ``sys.argv`` holds
them too), the ``dataloader_iter`` step-flavour warnings (``PDXModule`` drives self-play itself), the
"module(s) in eval mode" warning (the EMA and the frozen base are in eval mode by design), the empty
validation loader of a fit without validation suites, a deprecation inside Lightning (torch's
``LeafSpec``, with the torch/Lightning pair setup.sh installs) and Lightning's litlogger
advertisement. Every other warning still shows. DDP ranks run this same entry, so they get the same filters.
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Any, Sequence

import lightning as L
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.utilities.warnings import PossibleUserWarning

from pdx_lightning.runtime.resume import PDXLightningCLI

__all__ = ["KNOWN_NOISE", "quiet_known_noise", "run_lightning", "run_summary"]

# (message regex, category) of warnings pdx causes knowingly on every run; each says nothing a user can act on
KNOWN_NOISE: tuple[tuple[str, type[Warning]], ...] = (
    (r"LightningCLI's args parameter is intended to run from within Python", UserWarning),
    (r"You are using the `dataloader_iter` step flavor", PossibleUserWarning),
    (r"Found `dataloader_iter` argument in the `training_step`", UserWarning),
    (r"Found \d+ module\(s\) in eval mode at the start of training", PossibleUserWarning),
    (r"Total length of `list` across ranks is zero", UserWarning),  # fit without validation suites
    # Lightning 2.6 calling a torch 2.13 API torch deprecated: the pair setup.sh installs, not the user's code
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", Warning),
)


class _DropLitLoggerTip(logging.Filter):
    """Drops Lightning's "💡 Tip: ... litlogger ..." info line (an advertisement, on every run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not ("litlogger" in msg and "Tip" in msg)


def quiet_known_noise() -> None:
    """Install the :data:`KNOWN_NOISE` warning filters and the litlogger-tip log filter (idempotent)."""
    for message, category in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category)
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(isinstance(f, _DropLitLoggerTip) for f in log.filters):
        log.addFilter(_DropLitLoggerTip())


def run_lightning(model_class: type[L.LightningModule], args: Sequence[str] | None = None, *,
                  datamodule_class: type[L.LightningDataModule] | None = None,
                  trainer_defaults: dict[str, Any] | None = None, summary: bool = True) -> LightningCLI:
    """Parse ``args`` (``[subcommand, --flags...]``; None: ``sys.argv``) with :class:`PDXLightningCLI`
    on ``model_class`` (and ``datamodule_class``), run the subcommand, print the closing summary.

    ``trainer_defaults`` are the command's Trainer defaults (a config file or flag overrides them)."""
    quiet_known_noise()
    cli = PDXLightningCLI(model_class, datamodule_class, args=None if args is None else list(args),
                          save_config_kwargs={"overwrite": True},
                          trainer_defaults=dict(trainer_defaults or {}), run=True)
    if summary:
        text = run_summary(cli.trainer, cli.subcommand)
        if text and cli.trainer.is_global_zero:
            print(text, flush=True)
    return cli


def run_summary(trainer: L.Trainer, subcommand: str | None = "fit") -> str | None:
    """Where the run's logs (and, for ``fit``, checkpoints) are; None without a logger.

    Call it on every rank: ``trainer.log_dir`` is a collective (a broadcast from rank 0) under DDP."""
    if trainer.logger is None:
        return None
    log_dir = trainer.log_dir  # collective: every rank reads it
    if log_dir is None:
        return None
    lines = [f"logs:        {log_dir}"]
    if subcommand == "fit":
        ckpt = trainer.checkpoint_callback.dirpath if trainer.checkpoint_callback else None
        lines.append(f"checkpoints: {ckpt}")
    lines.append(f"TensorBoard: tensorboard --logdir {os.path.dirname(log_dir.rstrip('/'))}")
    return "\n" + "\n".join(lines)
