"""The one LightningCLI entry of every training command.

``pdx fit|validate`` (``PDXModule``), ``pdx pretrain`` (``DistillModule`` + ``ShardDataModule``) and the
sweep's puzzle-tuned control (``python -m pdx_lightning.supervised.control fit``) all run through
:func:`run_lightning`, so all get what :class:`~pdx_lightning.runtime.lightning_cli.PDXLightningCLI` adds:
atomic checkpoint writes, ``weights_only`` checkpoint loading, logger-version continuity on resume,
output preflight, and the same closing summary.

Under DDP every rank runs this function (Lightning relaunches the command once per rank), so the
closing summary reads the trainer's collective properties (``trainer.log_dir`` is a broadcast) on
every rank and prints on rank 0 only: a property read on one rank alone waits for peers that have
already left (a hang, or gloo's "Connection closed by peer").

Noise pdx causes knowingly is silenced (:mod:`.noise`), in this process and, through a callback the
CLI adds, in every process a strategy starts (``ddp_spawn``'s workers run no entry of ours).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import lightning as L
from lightning.pytorch.cli import LightningCLI

from pdx_lightning.runtime.lightning_cli import PDXLightningCLI
from pdx_lightning.runtime.moved_configs import resolve_config_args
from pdx_lightning.runtime.noise import KNOWN_MODULE_NOISE, KNOWN_NOISE, quiet_known_noise

__all__ = [
    "KNOWN_MODULE_NOISE",
    "KNOWN_NOISE",
    "module_choice",
    "quiet_known_noise",
    "run_lightning",
    "run_summary",
    "tracker_line",
]


def run_lightning(
    model_class: type[L.LightningModule],
    args: Sequence[str] | None = None,
    *,
    datamodule_class: type[L.LightningDataModule] | None = None,
    trainer_defaults: dict[str, Any] | None = None,
    summary: bool = True,
    module_argument: tuple[str, tuple[str, ...], str] | None = None,
) -> LightningCLI:
    """Parse ``args`` (``[subcommand, --flags...]``; None: ``sys.argv``) with :class:`PDXLightningCLI`
    on ``model_class`` (and ``datamodule_class``), run the subcommand, print the closing summary.

    ``trainer_defaults`` are the command's Trainer defaults (a config file or flag overrides them).
    A ``--config`` naming a moved shipped config fails first, with its new path (:mod:`.moved_configs`);
    ``--config pdx:<preset>`` reads the preset shipped with the package (:mod:`pdx_lightning.files.resources`).
    ``module_argument`` (default, choices, help) declares ``--module``, the trainer the caller chose
    (:func:`module_choice`)."""
    args = resolve_config_args(sys.argv[1:] if args is None else list(args))
    check_settings_args = getattr(model_class, "check_fit_args", None)
    if check_settings_args is not None:  # a moved setting's key, in one line with its new key
        check_settings_args(args)
    quiet_known_noise()
    cli = PDXLightningCLI(
        model_class,
        datamodule_class,
        args=args,
        save_config_kwargs={"overwrite": True},
        trainer_defaults=dict(trainer_defaults or {}),
        run=True,
        module_argument=module_argument,
    )
    if summary:
        text = run_summary(cli.trainer, cli.subcommand)
        if text and cli.trainer.is_global_zero:
            print(text, flush=True)
    _close_process_group()
    return cli


def module_choice(args: Sequence[str], default: str) -> str:
    """The ``module`` a command line chooses: ``--module X`` / ``--module=X``, else the last ``--config`` file
    whose top level has ``module:``, else ``default`` (read before LightningCLI parses: the module's class
    decides the parser). ``args`` as :func:`resolve_config_args` returns them."""
    import yaml  # noqa: PLC0415

    chosen = None
    for i, arg in enumerate(args):
        path = None
        if arg in ("--config", "-c") and i + 1 < len(args):
            path = args[i + 1]
        elif arg.startswith("--config="):
            path = arg.partition("=")[2]
        if path is not None and os.path.isfile(path) and os.path.getsize(path) < (1 << 20):
            try:
                with open(path, encoding="utf-8") as f:
                    doc = yaml.safe_load(f)
            except (OSError, yaml.YAMLError, UnicodeDecodeError):
                doc = None  # LightningCLI reports the file's problem in its own words
            if isinstance(doc, dict) and isinstance(doc.get("module"), str):
                chosen = doc["module"]
    for i, arg in enumerate(args):
        if arg == "--module" and i + 1 < len(args):
            chosen = args[i + 1]
        elif arg.startswith("--module="):
            chosen = arg.partition("=")[2]
    return default if chosen is None else chosen


def _close_process_group() -> None:
    """End a DDP run's process group once the command is done (its closing summary read the last
    collective). Left open, gloo's threads meet the interpreter's exit and one rank sometimes aborts
    ("terminate called without an active exception", SIGABRT) after a run that succeeded."""
    import torch.distributed as dist  # noqa: PLC0415

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def tool_command(name: str) -> str:
    """How to start the console script ``name`` as typed in the shell ``pdx`` runs in.

    The tools (``tensorboard``, ``mlflow``, ``wandb``) are installed next to this interpreter, in
    ``.venv/bin`` after setup.sh, which is not on ``PATH`` unless the venv is activated: the bare
    name where ``PATH`` finds that very script, else its path (relative below the working directory,
    as ``.venv/bin/tensorboard``), else the bare name (a tool installed elsewhere on ``PATH``)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    if not os.access(here, os.X_OK):
        return name
    found = shutil.which(name)
    if found and os.path.realpath(found) == os.path.realpath(here):
        return name
    rel = os.path.relpath(here)
    path = rel if not rel.startswith(os.pardir) else os.path.abspath(here)
    return shlex.quote(path)


def tracker_line(logger: Any, log_dir: str | None) -> str | None:
    """How to look at a run logged by ``logger`` (one line of the closing summary), by logger class;
    the viewer's command works as typed from the working directory (:func:`tool_command`)."""
    name = type(logger).__name__
    if name == "TensorBoardLogger" and log_dir:
        logdir = shlex.quote(os.path.dirname(log_dir.rstrip("/")))
        return f"TensorBoard: {tool_command('tensorboard')} --logdir {logdir}"
    if name == "CSVLogger" and log_dir:
        return f"metrics:     {os.path.join(log_dir, 'metrics.csv')}"
    if name == "MLFlowLogger":
        uri = getattr(logger, "_tracking_uri", None) or "./mlruns"
        run = getattr(logger, "run_id", None)
        return f"MLflow:      {tool_command('mlflow')} ui --backend-store-uri {shlex.quote(uri)}  (run {run})"
    if name == "WandbLogger":
        offline = bool(getattr(logger, "_offline", False)) or os.environ.get("WANDB_MODE") in ("offline", "dryrun")
        where = getattr(logger, "save_dir", None) or "."
        return (
            f"W&B:         {tool_command('wandb')} sync {os.path.join(where, 'wandb', 'offline-run-*')}"
            if offline
            else f"W&B:         run {getattr(logger, 'version', None)}"
        )
    return None


def run_summary(trainer: L.Trainer, subcommand: str | None = "fit") -> str | None:
    """Where the run's logs (and, for ``fit``, checkpoints) are, and how to view them; None without a
    logger.

    Call it on every rank: ``trainer.log_dir`` is a collective (a broadcast from rank 0) under DDP."""
    if trainer.logger is None:
        return None
    log_dir = trainer.log_dir  # collective: every rank reads it
    # the first logger's directory is trainer.log_dir; the others' are read on rank 0 only (it prints)
    dirs = [log_dir] + [getattr(lg, "log_dir", None) if trainer.is_global_zero else None for lg in trainer.loggers[1:]]
    views = [line for lg, d in zip(trainer.loggers, dirs) if (line := tracker_line(lg, d))]
    if log_dir is None and not views:
        return None
    lines = [f"logs:        {log_dir}"] if log_dir is not None else []
    if subcommand == "fit":
        cb = trainer.checkpoint_callback
        ckpt = getattr(cb, "dirpath", None)  # a ModelCheckpoint's; None without one
        if cb is not None and ckpt is None and log_dir is not None:
            # ddp_spawn: the ranks fitted copies of this trainer; theirs put the checkpoints where Lightning
            # puts them for a run with a logger, the log directory's checkpoints/
            ckpt = os.path.join(log_dir, "checkpoints")
        lines.append(f"checkpoints: {ckpt}")
    return "\n" + "\n".join(lines + views)
