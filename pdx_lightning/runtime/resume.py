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

Where checkpoints go: a ``ModelCheckpoint`` without ``dirpath`` (the shipped configs) keeps every
run's checkpoints in its own log version, ``<save_dir>/<name>/version_N/checkpoints``;
``--ckpt_path last`` then resumes the run written most recently under ``<save_dir>/<name>``
(:func:`resolve_last`). An explicit ``dirpath`` is one shared directory, as before.

Command-line values win over a checkpoint's hyperparameters: LightningCLI lays the hyperparameters
stored in ``--ckpt_path`` over the config (right for ``--config`` files: the checkpoint knows which
base and term it was trained with), and pdx puts every ``--model.*`` flag of the command line back on
top; validation settings (``val_*``, stored as None by older checkpoints) are never taken from a
checkpoint. ``pdx validate`` writes no logs (no new TensorBoard version, no ``config.yaml``) unless
``--trainer.logger`` is given on its command line.
"""
from __future__ import annotations

import glob
import json
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.callbacks import ModelCheckpoint, ProgressBar
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.plugins.io import CheckpointIO, TorchCheckpointIO

from pdx_lightning.errors import UserError
from pdx_lightning.runtime import preflight
from pdx_lightning.runtime.fit_progress import FitProgressBar
from pdx_lightning.nets import DATA_DIR, ModelLoadError
from pdx_lightning.safeio import FileLimitError, load_torch_bounded

__all__ = ["AtomicCheckpointIO", "BundledOverwriteError", "CheckpointLimitError", "CheckpointLoadError",
           "CheckpointWriteError",
           "LogContinuity", "ManualClippingError", "NothingToValidateError", "PDXLightningCLI", "check_export_target",
           "read_checkpoint", "resolve_last"]

# Settings of a validation run, not of training: never taken from a checkpoint's hyperparameters
# (checkpoints written before they left the hyperparameters store them as None).
RUN_ONLY_HPARAMS = ("val_suite", "val_mates", "val_sample")


class NothingToValidateError(UserError, ValueError):
    """``pdx validate`` without anything to score."""


class ManualClippingError(UserError, ValueError):
    """``--trainer.gradient_clip_val`` on a module that optimizes manually (Lightning cannot clip there)."""


class BundledOverwriteError(UserError, ValueError):
    """An export that would overwrite a network bundled with pdx_lightning (``data/``)."""


def check_export_target(path: str | os.PathLike, allow_bundled: bool = False, *,
                        flag: str = "--model.overwrite_bundled true") -> Path:
    """Refuse an export path inside the bundled ``data/`` directory unless ``allow_bundled``.

    Overwriting ``data/base_small.pt`` changes its SHA-256, and every checkpoint fine-tuned from
    ``base:small`` is then refused by the base-hash check."""
    target = Path(path).expanduser().resolve()
    bundled = DATA_DIR.resolve()
    if not allow_bundled and (target == bundled or bundled in target.parents):
        raise BundledOverwriteError(
            f"export {str(path)!r} is inside the bundled networks' directory {str(bundled)!r}: overwriting "
            f"a bundled network breaks every checkpoint made from it (base hash check); export elsewhere "
            f"(--model.export runs/pretrain/base_small.pt) or pass {flag} to replace it knowingly")
    return target


class CheckpointLoadError(ModelLoadError):
    """A checkpoint that cannot be loaded safely (missing, truncated, or carrying a pickled object)."""


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written; the previous file at that path is intact."""


class CheckpointLimitError(FileLimitError, CheckpointLoadError):
    """A checkpoint refused by a reading bound (``safeio.load_torch_bounded``) before it is loaded."""


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Load a checkpoint with ``weights_only=True`` (memory-mapped), or raise :class:`CheckpointLoadError`.

    The file is bounded first (``safeio.load_torch_bounded``: the zip's declared sizes within
    ``$PDX_MAX_CHECKPOINT_BYTES`` and the file, no zip bombs, tensor extents checked on the meta
    device); a refusal is a :class:`CheckpointLimitError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointLoadError(f"checkpoint {str(path)!r} not found")
    try:
        return load_torch_bounded(path, error=CheckpointLimitError, mmap=True)
    except Exception as e:  # noqa: BLE001  (pickle payloads, truncation, not a torch file)
        others = sorted((p for p in glob.glob(str(path.parent / "*.ckpt")) if Path(p) != path),
                        key=os.path.getmtime)
        hint = f"; the newest other checkpoint there is {others[-1]!r}" if others else ""
        if isinstance(e, FileLimitError):
            err = CheckpointLimitError(e.path, e.problem, e.limit, e.override)
            err.args = (f"{err}{hint}",)
            raise err from None
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


def _plain(v):
    return v if isinstance(v, (int, str)) or v is None else str(v)


def _last_files(directory: str | os.PathLike) -> list[str]:
    return [p for p in glob.glob(os.path.join(str(directory), "last*.ckpt"))
            if Path(p).stem == "last" or Path(p).stem.startswith("last-")]


def _read_marker(directory: str | os.PathLike) -> list | None:
    path = Path(directory) / MARKER
    if not path.is_file():
        return None
    try:
        return list(json.loads(path.read_text()).get("versions") or [])
    except (OSError, ValueError, AttributeError):
        return []


def _run_root(trainer: L.Trainer) -> Path | None:
    """``<save_dir>/<name>`` of the first logger: where a ``dirpath``-less ModelCheckpoint puts each
    run's ``version_N/checkpoints`` (Lightning's rule)."""
    if not trainer.loggers:
        return None
    lg = trainer.loggers[0]
    save_dir = lg.save_dir if lg.save_dir is not None else trainer.default_root_dir
    return Path(save_dir) / str(lg.name or "")


def _version_of(dirname: str) -> int | str:
    m = re.fullmatch(r"version_(\d+)", dirname)
    return int(m.group(1)) if m else dirname


def _latest(trainer: L.Trainer) -> tuple[str | None, list]:
    """What ``--ckpt_path last`` continues: ``(checkpoint, [])`` or, for a run killed before its first
    checkpoint, ``(None, its logger versions)``; ``(None, [])`` when there is nothing (a fresh run).

    Explicit ``dirpath``\\ s: the newest ``last*.ckpt`` there, else their version marker. Callbacks
    without one: the run directory under ``<save_dir>/<name>`` written most recently (its newest
    ``last*.ckpt`` or version marker); in that directory a checkpoint beats the marker (a resumed run
    rewrites the marker at its start)."""
    explicit, versioned = [], False
    for cb in trainer.checkpoint_callbacks:
        if isinstance(cb, ModelCheckpoint):
            if cb.dirpath:
                explicit.append(cb.dirpath)
            else:
                versioned = True
    found = [p for d in explicit for p in _last_files(d)]
    if found:
        return max(found, key=os.path.getmtime), []
    for d in explicit:
        if (versions := _read_marker(d)) is not None:
            return None, versions
    root = _run_root(trainer) if versioned else None
    if root is None or not root.is_dir():
        return None, []
    runs = []  # (newest activity, version dir)
    for ckpt_dir in root.glob("*/checkpoints"):
        stamps = [os.path.getmtime(p) for p in _last_files(ckpt_dir)]
        if (ckpt_dir / MARKER).is_file():
            stamps.append(os.path.getmtime(ckpt_dir / MARKER))
        if stamps:
            runs.append((max(stamps), ckpt_dir))
    if not runs:
        return None, []
    ckpt_dir = max(runs, key=lambda r: r[0])[1]
    files = _last_files(ckpt_dir)
    if files:
        return max(files, key=os.path.getmtime), []
    versions = _read_marker(ckpt_dir) or []
    return None, versions or [_version_of(ckpt_dir.parent.name)]


def resolve_last(trainer: L.Trainer) -> str | None:
    """The checkpoint ``--ckpt_path last`` resumes (None when there is none yet: a fresh run starts).

    With explicit ``dirpath``\\ s, the newest ``last*.ckpt`` there (Lightning's own rule); with the
    shipped configs' ``dirpath``-less ModelCheckpoint, the ``last*.ckpt`` of the run written most
    recently under ``<save_dir>/<name>/version_*/checkpoints``."""
    return _latest(trainer)[0]


def _has_checkpoint_io(plugins) -> bool:
    items = plugins if isinstance(plugins, (list, tuple)) else [plugins]
    return any(isinstance(p, CheckpointIO) for p in items if p is not None)


def _checkpoint_bytes(model: torch.nn.Module) -> int:
    """Rough size of one checkpoint: trainable weights x 4 (weights, EMA, two Adam moments) + buffers."""
    n = sum(p.numel() * p.element_size() for p in model.parameters())
    return 4 * n + sum(b.numel() * b.element_size() for b in model.buffers())


class PDXLightningCLI(LightningCLI):
    """LightningCLI with atomic checkpoints, safe and checked ``--ckpt_path``, pinned log versions,
    versioned checkpoint directories, command-line values over checkpoint hyperparameters, log-free
    ``validate`` and preflight."""

    _resolved_ckpt: str | None = None

    # ---- parsing ----------------------------------------------------------------------------
    def parse_arguments(self, parser, args) -> None:
        self._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        super().parse_arguments(parser, args)

    def _flag_given(self, prefix: str) -> bool:
        """Whether the command line itself (not a config file) sets ``prefix`` or a key below it."""
        return any(a == prefix or a.startswith((prefix + ".", prefix + "=", prefix + "+"))
                   for a in getattr(self, "_argv", ()))

    def _model_flags(self) -> list[str]:
        """Dotted ``--model.*`` keys given on the command line (``selfplay.temperature``, ...)."""
        keys = []
        for a in getattr(self, "_argv", ()):
            if a.startswith("--model."):
                key = re.split(r"[=+]", a[len("--model."):], maxsplit=1)[0]
                if key and not key.endswith(".help"):
                    keys.append(key)
        return keys

    def _parse_ckpt_path(self) -> None:
        """Lay the checkpoint's hyperparameters over the config (as LightningCLI does), then the command
        line's ``--model.*`` values over those; ``val_*`` never come from a checkpoint.

        The file is opened with :func:`read_checkpoint` first: LightningCLI would surface a refused
        payload as a raw UnpicklingError and skip a missing file silently."""
        sub = self.config.get("subcommand")
        ckpt = self.config[sub].get("ckpt_path") if sub else None
        if not ckpt or ckpt in ("last", "best", "hpc"):
            return
        hparams = dict(read_checkpoint(ckpt).get("hyper_parameters") or {})
        hparams.pop("_instantiator", None)
        for key in RUN_ONLY_HPARAMS:
            hparams.pop(key, None)
        if not hparams:
            return
        if self._flag_given("--model") and not self._model_flags():  # a whole --model given: it wins
            return
        for key in self._model_flags():  # the command line's value, where the checkpoint has the key
            parts, node = key.split("."), hparams
            for depth, part in enumerate(parts):
                if part not in node:
                    break
                # the flag's own key, or a non-dict value above it: take the command line's value there
                if depth == len(parts) - 1 or not isinstance(node[part], dict):
                    value = self.config[sub].get("model." + ".".join(parts[:depth + 1]))
                    node[part] = value.as_dict() if hasattr(value, "as_dict") else value
                    break
                node = node[part]
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        try:
            self.config = self.parser.parse_object({sub: {"model": hparams}}, self.config)
        except SystemExit:
            sys.stderr.write("Parsing of ckpt_path hyperparameters failed!\n")
            raise

    def after_instantiate_classes(self) -> None:
        """Drop LightningCLI's internal ``_instantiator`` from the module's hyperparameters: it would be
        logged (hparams.yaml) and saved like a setting; pdx's modules load from a checkpoint without it."""
        for attr in ("_hparams", "_hparams_initial"):
            hp = getattr(self.model, attr, None)
            if hasattr(hp, "pop"):
                hp.pop("_instantiator", None)
        super().after_instantiate_classes()

    # ---- trainer ----------------------------------------------------------------------------
    def _logs_off(self) -> bool:
        """``validate`` writes no logs unless ``--trainer.logger`` is on its command line."""
        return self.subcommand == "validate" and not self._flag_given("--trainer.logger")

    def instantiate_trainer(self, **kwargs: Any):
        trainer_cfg = self._get(self.config_init, "trainer", default={}) or {}
        plugins = trainer_cfg.get("plugins")
        if not _has_checkpoint_io(plugins):
            items = list(plugins) if isinstance(plugins, (list, tuple)) else ([plugins] if plugins else [])
            kwargs["plugins"] = [*items, AtomicCheckpointIO()]
        if self._logs_off():
            self.save_config_callback = None  # it would write config.yaml into the cwd (no log dir)
        callbacks = trainer_cfg.get("callbacks")
        callbacks = (list(callbacks) if isinstance(callbacks, (list, tuple))
                     else [callbacks] if callbacks else [])
        if trainer_cfg.get("enable_progress_bar", True) is not False and \
                not any(isinstance(cb, ProgressBar) for cb in callbacks):
            # steps out of max_steps, ETA, transitions/s (Lightning's default counts an epoch's batches)
            kwargs["callbacks"] = [*callbacks, FitProgressBar()]
        trainer = super().instantiate_trainer(**kwargs)
        if not any(isinstance(cb, LogContinuity) for cb in trainer.callbacks):
            trainer.callbacks.append(LogContinuity())
        return trainer

    def _prepare_subcommand_kwargs(self, subcommand: str) -> dict[str, Any]:
        kw = super()._prepare_subcommand_kwargs(subcommand)
        if "weights_only" in self._subcommand_method_arguments.get(subcommand, ()):
            if kw.get("weights_only") is False:
                raise CheckpointLoadError("pdx loads checkpoints with weights_only=True only; "
                                          "--weights_only false would execute pickled code from the "
                                          "checkpoint file")
            kw["weights_only"] = True
        if kw.get("ckpt_path") == "last":  # resolved in _prepare, across the runs' version directories
            kw["ckpt_path"] = self._resolved_ckpt
        return kw

    def _prepare(self, subcommand: str) -> None:
        trainer, model = self.trainer, self.model
        ckpt = self.config_init[subcommand].get("ckpt_path")
        if ckpt == "last":
            path, versions = _latest(trainer)
            self._resolved_ckpt = path
            if path is None and trainer.is_global_zero:
                print("--ckpt_path last: no last checkpoint yet, starting a fresh run", flush=True)
        else:
            path, versions = (None if ckpt in (None, "best", "hpc") else ckpt), []
        if path is not None:
            blob = read_checkpoint(path)
            states = blob.get("callbacks") or {}
            versions = (states.get(LogContinuity.__qualname__) or {}).get("versions") or []
            if subcommand == "validate" and self._logs_off():
                # validate saves nothing: point dirpath-less ModelCheckpoints at the directory they had, so
                # restoring their state neither warns "dirpath has changed" nor needs a log directory
                for cb in trainer.checkpoint_callbacks:
                    saved = states.get(getattr(cb, "state_key", None)) or {}
                    if isinstance(cb, ModelCheckpoint) and cb.dirpath is None and saved.get("dirpath"):
                        cb.dirpath = saved["dirpath"]
            del blob, states
        for lg, v in zip(trainer.loggers, versions):
            if v is not None and hasattr(lg, "_version") and lg._version is None:
                lg._version = v  # same run directory: TensorBoard curves and checkpoints continue
        if subcommand == "fit" and path is not None:  # resuming: its checkpoint dir has files
            warnings.filterwarnings("ignore", message=r"Checkpoint directory .* exists and is not empty",
                                    category=UserWarning)
        if subcommand == "validate":
            self._check_something_to_validate()
            if self._logs_off():
                trainer.logger = None
        if not trainer.is_global_zero:
            return
        need = 2 * _checkpoint_bytes(model) + preflight.min_free_default()
        for lg in trainer.loggers:
            root = getattr(lg, "root_dir", None) or getattr(lg, "save_dir", None)
            if root:
                preflight.check_dir(root, what=f"log directory of {type(lg).__name__}",
                                    min_free=need if subcommand == "fit" else None)
        if subcommand == "fit":
            for cb in trainer.checkpoint_callbacks:
                if isinstance(cb, ModelCheckpoint) and cb.dirpath:
                    preflight.check_dir(cb.dirpath, what="checkpoint directory", min_free=need)
            if not trainer.loggers:
                preflight.check_dir(trainer.default_root_dir, what="default_root_dir", min_free=need)
            hp = getattr(model, "hparams", {})
            export = hp.get("export") if hasattr(hp, "get") else None
            if export:
                check_export_target(export, bool(hp.get("overwrite_bundled", False)))
                preflight.check_file(export, what="export file (--model.export)")

    def _check_clipping(self) -> None:
        """Lightning refuses ``gradient_clip_val`` under manual optimization with a traceback that does
        not say what to use instead; say it in one line (a module clipping itself names its option)."""
        clip = self.trainer.gradient_clip_val
        if clip and not self.model.automatic_optimization:
            hp = getattr(self.model, "hparams", {})
            own = (f"; clip with --model.grad_clip_norm {clip} instead"
                   if hasattr(hp, "get") and "grad_clip_norm" in hp else "")
            raise ManualClippingError(f"--trainer.gradient_clip_val {clip}: Lightning cannot clip gradients of "
                                      f"{type(self.model).__name__}, which optimizes manually{own}")

    def _check_something_to_validate(self) -> None:
        """A model whose own validation data is empty (``pdx validate`` without a suite) is a user
        mistake: say so instead of Lightning's "Total length of `list` across ranks is zero"."""
        if self.datamodule is not None or not hasattr(self.model, "val_dataloader"):
            return
        try:
            loaders = self.model.val_dataloader()
        except Exception:  # noqa: BLE001  (needs a trainer or data: Lightning will say what is wrong)
            return
        if isinstance(loaders, (list, tuple)) and not loaders:
            raise NothingToValidateError(
                "nothing to validate: give the puzzle suites to score, e.g. --model.val_suite "
                "data/tactics.csv and/or --model.val_mates+=data/mates_in_1.csv")

    def before_fit(self) -> None:
        self._check_clipping()
        self._prepare("fit")

    def before_validate(self) -> None:
        self._prepare("validate")
