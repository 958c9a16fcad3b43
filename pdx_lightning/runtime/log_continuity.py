"""Continuous logs across a kill and ``--ckpt_path last``: the :class:`LogContinuity` callback.

The loggers' versions are stored in the checkpoint (and, before the first checkpoint, in a marker
file in the checkpoint directory); resuming pins the same version, so TensorBoard curves continue in
the same run directory instead of starting ``version_N+1``, and ``metrics.csv`` keeps the earlier
rows (:mod:`~pdx_lightning.runtime.csv_continuity`). (An explicit
``--trainer.logger.init_args.version`` wins.) Steps after the last checkpoint of a killed run are
logged twice, with identical values for a seeded run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.runtime import lightning_internals as internals
from pdx_lightning.runtime.csv_continuity import csv_loggers, drop_rows_after

MARKER = ".pdx_log_versions.json"


def _plain(v):
    return v if isinstance(v, (int, str)) or v is None else str(v)


def read_marker(directory) -> list | None:
    """The logger versions recorded in ``directory``'s marker; None without one, [] for a damaged one."""
    path = Path(directory) / MARKER
    if not path.is_file():
        return None
    try:
        return list(json.loads(path.read_text()).get("versions") or [])
    except (OSError, ValueError, AttributeError):
        return []


class LogContinuity(L.Callback):
    """Keeps the logs of a killed and resumed run continuous.

    * Stores each logger's version in checkpoints; :class:`~pdx_lightning.runtime.lightning_cli.PDXLightningCLI`
      pins it on resume, so the resumed run writes into the same run directory.
    * Lightning saves a step's checkpoint (``on_train_batch_end``) *before* it hands that step's
      metrics to the loggers, so a kill between the two would lose the step from the curves for
      good (the resumed run starts after it). The step's pending metrics are therefore stored in
      the checkpoint and logged again when training resumes (a duplicate, identical point if the
      killed run had logged them; TensorBoard keeps one).
    """

    def __init__(self) -> None:
        self.restored: list | None = None
        self._pending: dict | None = None
        self._trainer = None
        self._in_batch_end = False

    def setup(self, trainer, pl_module, stage: str) -> None:
        internals.check_lightning()  # state_dict reads private trainer state: refuse a Lightning without it
        self._trainer = trainer

    def on_fit_start(self, trainer, pl_module) -> None:
        # A run killed before its first checkpoint leaves a log directory and nothing to resume from;
        # this marker lets the restarted run (same command, --ckpt_path last) reuse that directory.
        if not trainer.is_global_zero or not trainer.loggers:
            return
        blob = json.dumps({"versions": [_plain(getattr(lg, "version", None)) for lg in trainer.loggers]})
        for cb in trainer.checkpoint_callbacks:
            if isinstance(cb, ModelCheckpoint) and cb.dirpath:
                with atomic_write(Path(cb.dirpath) / MARKER, "w") as f:
                    f.write(blob)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._in_batch_end = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._in_batch_end = True  # runs before ModelCheckpoint (Lightning orders checkpoint callbacks last)

    def on_validation_start(self, trainer, pl_module) -> None:
        self._in_batch_end = False

    def state_dict(self) -> dict[str, Any]:
        trainer = self._trainer
        if trainer is None:
            return {"versions": []}
        state: dict[str, Any] = {"versions": [_plain(getattr(lg, "version", None)) for lg in trainer.loggers]}
        if self._in_batch_end and trainer.loggers:
            # no try/except: setup() checked that this Lightning has both private pieces
            log = internals.pending_log_metrics(trainer)
            log.setdefault("epoch", float(trainer.current_epoch))  # as Lightning adds when it logs
            state["pending"] = {"step": internals.logger_step(trainer), "metrics": log}
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.restored = list(state_dict.get("versions") or [])
        self._pending = state_dict.get("pending")

    def on_train_start(self, trainer, pl_module) -> None:
        if self.restored is not None and trainer.is_global_zero:
            # metrics.csv (its rows carried over by csv_continuity): drop what the resumed run logged from
            # the step this run logs first, which it logs again from here (the pending step's metrics too)
            for lg in csv_loggers(trainer.loggers):
                drop_rows_after(lg, internals.logger_step(trainer) - 1)
        if self._pending and self._pending.get("metrics"):
            for lg in trainer.loggers:
                lg.log_metrics(self._pending["metrics"], step=self._pending["step"])
                lg.save()
        self._pending = None
