"""Crash-safe checkpoints and resumption for ``pdx fit`` / ``validate`` / ``pretrain`` and the sweep's
puzzle-tuned control (all built by :func:`pdx_lightning.runtime.entry.run_lightning`).

:class:`PDXLightningCLI` is LightningCLI plus four guarantees:

* **Atomic checkpoint files.** Lightning's own write (``_atomic_save``) goes through an
  fsspec transaction whose temporary file lives in the *system* temp directory; when
  that is another file system than the checkpoint directory (a tmpfs ``/tmp``, a
  cluster's scratch or NFS checkpoint directory) the final move is a copy *into*
  ``last.ckpt``, and a ``kill -9`` during that copy leaves a truncated ``last.ckpt``
  that breaks ``--ckpt_path last``; it also holds the whole checkpoint in memory
  twice and leaves the temp file behind on a kill. :class:`AtomicCheckpointIO` writes
  ``.NAME.partial-PID`` next to the target, fsyncs it and ``os.replace``\\ s it over
  the target (atomic on POSIX), so a reader sees the old checkpoint or the new one,
  never a torn one. Leftover partial files of killed runs are removed on the next save.
* **Safe loading.** ``--ckpt_path`` is always loaded with ``weights_only=True``
  (``--weights_only false`` is refused); the checkpoint is opened (memory-mapped)
  before the trainer starts, so a file with a pickled object, a truncated file or a
  missing path fails at once with :class:`CheckpointLoadError` naming it.
* **Continuous logs.** The loggers' versions are stored in the checkpoint (the
  :class:`LogContinuity` callback); resuming pins the same version, so TensorBoard
  curves continue in the same run directory instead of starting ``version_N+1``.
  (An explicit ``--trainer.logger.init_args.version`` wins.) Steps after the last
  checkpoint of a killed run are logged twice, with identical values for a seeded run.
* **Preflight.** Log, checkpoint and export locations are checked for writability
  and free space before any work (:mod:`pdx_lightning.runtime.preflight`).
"""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.plugins.io import CheckpointIO, TorchCheckpointIO

from pdx_lightning.runtime import preflight
from pdx_lightning.nets import ModelLoadError

__all__ = ["AtomicCheckpointIO", "CheckpointLoadError", "CheckpointWriteError", "LogContinuity",
           "PDXLightningCLI", "read_checkpoint", "resolve_last"]


class CheckpointLoadError(ModelLoadError):
    """A checkpoint that cannot be loaded safely (missing, truncated, or carrying a pickled object)."""


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written; the previous file at that path is intact."""


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Load a checkpoint with ``weights_only=True`` (memory-mapped), or raise :class:`CheckpointLoadError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointLoadError(f"checkpoint {str(path)!r} not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as e:  # noqa: BLE001  (pickle payloads, truncation, not a torch file)
        others = sorted((p for p in glob.glob(str(path.parent / "*.ckpt")) if Path(p) != path),
                        key=os.path.getmtime)
        hint = f"; the newest other checkpoint there is {others[-1]!r}" if others else ""
        raise CheckpointLoadError(
            f"checkpoint {str(path)!r} cannot be loaded safely with weights_only=True "
            f"({type(e).__name__}: {str(e).splitlines()[0][:300]}){hint}") from e


class AtomicCheckpointIO(TorchCheckpointIO):
    """``torch.save`` to a temporary file in the target's directory, fsync, then ``os.replace``."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError("AtomicCheckpointIO does not take storage_options")
        fs = get_filesystem(path)
        if "file" not in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
            return super().save_checkpoint(checkpoint, path)  # object stores: Lightning's transaction
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        prefix = f".{path.name}.partial-"
        for stale in path.parent.glob(prefix + "*"):  # left by a killed writer
            if stale.name != f"{prefix}{os.getpid()}":
                stale.unlink(missing_ok=True)
        tmp = path.with_name(f"{prefix}{os.getpid()}")
        try:
            with open(tmp, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException as e:
            tmp.unlink(missing_ok=True)
            if isinstance(e, OSError):
                raise CheckpointWriteError(f"writing checkpoint {str(path)!r} failed ({e.strerror or e}); "
                                           f"the previous file at that path, if any, is intact") from e
            raise
        try:  # make the rename itself durable (power loss); harmless where unsupported
            dfd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass


class LogContinuity(L.Callback):
    """Keeps the logs of a killed and resumed run continuous.

    * Stores each logger's version in checkpoints; :class:`PDXLightningCLI` pins it on resume,
      so the resumed run writes into the same run directory.
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
        self._trainer = trainer

    def on_fit_start(self, trainer, pl_module) -> None:
        # A run killed before its first checkpoint leaves a log directory and nothing to resume from;
        # this marker lets the restarted run (same command, --ckpt_path last) reuse that directory.
        if not trainer.is_global_zero or not trainer.loggers:
            return
        blob = json.dumps({"versions": [_plain(getattr(lg, "version", None)) for lg in trainer.loggers]})
        for cb in trainer.checkpoint_callbacks:
            if isinstance(cb, ModelCheckpoint) and cb.dirpath:
                marker = Path(cb.dirpath) / MARKER
                marker.parent.mkdir(parents=True, exist_ok=True)
                tmp = marker.with_name(marker.name + f".{os.getpid()}")
                tmp.write_text(blob)
                os.replace(tmp, marker)

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
            try:
                log = {k: float(v) for k, v in trainer._logger_connector.metrics["log"].items()}
                log.setdefault("epoch", float(trainer.current_epoch))  # as Lightning adds when it logs
                step = int(trainer.fit_loop.epoch_loop._batches_that_stepped)
                state["pending"] = {"step": step, "metrics": log}
            except Exception:  # noqa: BLE001  (private Lightning API moved: logs may miss one point)
                pass
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.restored = list(state_dict.get("versions") or [])
        self._pending = state_dict.get("pending")

    def on_train_start(self, trainer, pl_module) -> None:
        if self._pending and self._pending.get("metrics"):
            for lg in trainer.loggers:
                lg.log_metrics(self._pending["metrics"], step=self._pending["step"])
                lg.save()
        self._pending = None


MARKER = ".pdx_log_versions.json"


def _marker_versions(trainer: L.Trainer) -> list:
    for cb in trainer.checkpoint_callbacks:
        if isinstance(cb, ModelCheckpoint) and cb.dirpath and (Path(cb.dirpath) / MARKER).is_file():
            try:
                return list(json.loads((Path(cb.dirpath) / MARKER).read_text()).get("versions") or [])
            except (OSError, ValueError, AttributeError):
                return []
    return []


def _plain(v):
    return v if isinstance(v, (int, str)) or v is None else str(v)


def resolve_last(trainer: L.Trainer) -> str | None:
    """The file Lightning's ``ckpt_path="last"`` will pick: the newest ``last*.ckpt`` of the checkpoint
    callbacks whose ``dirpath`` is explicit (None when there is none yet; a fresh run starts)."""
    found = []
    for cb in trainer.checkpoint_callbacks:
        if isinstance(cb, ModelCheckpoint) and cb.dirpath:
            found += [p for p in glob.glob(os.path.join(str(cb.dirpath), "last*.ckpt"))
                      if Path(p).stem == "last" or Path(p).stem.startswith("last-")]
    return max(found, key=os.path.getmtime) if found else None


def _has_checkpoint_io(plugins) -> bool:
    items = plugins if isinstance(plugins, (list, tuple)) else [plugins]
    return any(isinstance(p, CheckpointIO) for p in items if p is not None)


def _checkpoint_bytes(model: torch.nn.Module) -> int:
    """Rough size of one checkpoint: trainable weights x 4 (weights, EMA, two Adam moments) + buffers."""
    n = sum(p.numel() * p.element_size() for p in model.parameters())
    return 4 * n + sum(b.numel() * b.element_size() for b in model.buffers())


class PDXLightningCLI(LightningCLI):
    """LightningCLI with atomic checkpoints, safe and checked ``--ckpt_path``, pinned log versions and
    preflight."""

    def instantiate_trainer(self, **kwargs: Any):
        trainer_cfg = self._get(self.config_init, "trainer", default={}) or {}
        plugins = trainer_cfg.get("plugins")
        if not _has_checkpoint_io(plugins):
            items = list(plugins) if isinstance(plugins, (list, tuple)) else ([plugins] if plugins else [])
            kwargs["plugins"] = [*items, AtomicCheckpointIO()]
        trainer = super().instantiate_trainer(**kwargs)
        if not any(isinstance(cb, LogContinuity) for cb in trainer.callbacks):
            trainer.callbacks.append(LogContinuity())
        return trainer

    def _parse_ckpt_path(self) -> None:
        # LightningCLI reads the checkpoint's hyperparameters here (weights_only=True, but a refusal
        # surfaces as a raw UnpicklingError, a missing file is silently skipped): check it first.
        sub = self.config.get("subcommand")
        ckpt = self.config[sub].get("ckpt_path") if sub else None
        if ckpt and ckpt not in ("last", "best", "hpc"):
            read_checkpoint(ckpt)
        super()._parse_ckpt_path()

    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kw = super()._prepare_subcommand_kwargs(subcommand)
        if "weights_only" in self._subcommand_method_arguments.get(subcommand, ()):
            if kw.get("weights_only") is False:
                raise CheckpointLoadError("pdx loads checkpoints with weights_only=True only; "
                                          "--weights_only false would execute pickled code from the "
                                          "checkpoint file")
            kw["weights_only"] = True
        return kw

    def _prepare(self, subcommand: str) -> None:
        trainer, model = self.trainer, self.model
        ckpt = self.config_init[subcommand].get("ckpt_path")
        path = resolve_last(trainer) if ckpt == "last" else (None if ckpt in (None, "best", "hpc") else ckpt)
        versions: list = []
        if path is not None:
            blob = read_checkpoint(path)
            state = (blob.get("callbacks") or {}).get(LogContinuity.__qualname__) or {}
            versions = state.get("versions") or []
            del blob, state
        elif ckpt == "last":  # nothing to resume yet: a run killed before its first checkpoint?
            versions = _marker_versions(trainer)
        for lg, v in zip(trainer.loggers, versions):
            if v is not None and hasattr(lg, "_version") and lg._version is None:
                lg._version = v  # same run directory: TensorBoard curves continue
        if not trainer.is_global_zero:
            return
        need = 2 * _checkpoint_bytes(model) + preflight.min_free_default()
        for lg in trainer.loggers:
            root = getattr(lg, "root_dir", None) or getattr(lg, "save_dir", None)
            if root:
                preflight.check_dir(root, what=f"log directory of {type(lg).__name__}")
        if subcommand == "fit":
            for cb in trainer.checkpoint_callbacks:
                if isinstance(cb, ModelCheckpoint) and cb.dirpath:
                    preflight.check_dir(cb.dirpath, what="checkpoint directory", min_free=need)
            if not trainer.loggers:
                preflight.check_dir(trainer.default_root_dir, what="default_root_dir", min_free=need)
            export = getattr(getattr(model, "hparams", {}), "get", lambda k: None)("export")
            if export:
                preflight.check_file(export, what="export file (--model.export)")

    def before_fit(self) -> None:
        self._prepare("fit")

    def before_validate(self) -> None:
        self._prepare("validate")
