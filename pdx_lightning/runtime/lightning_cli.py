"""The LightningCLI of ``pdx fit`` / ``validate`` / ``pretrain`` and the sweep's puzzle-tuned control (all
built by :func:`pdx_lightning.runtime.entry.run_lightning`).

:class:`PDXLightningCLI` is LightningCLI plus five guarantees, each in its own module:

* **Atomic checkpoint files** (:mod:`~pdx_lightning.runtime.checkpoint_io`): a kill during a write
  leaves the previous checkpoint whole.
* **Safe loading** (:mod:`~pdx_lightning.runtime.checkpoint_read`): ``--ckpt_path`` is always loaded
  with ``weights_only=True`` (``--weights_only false`` is refused); the checkpoint is opened
  (memory-mapped) before the trainer starts, so a file with a pickled object, a truncated file or a
  missing path fails at once with :class:`CheckpointLoadError` naming it.
* **Continuous logs** (:mod:`~pdx_lightning.runtime.log_continuity`): resuming pins the loggers' versions.
* **``--ckpt_path last`` across versioned runs** (:mod:`~pdx_lightning.runtime.last_checkpoint`).
* **Preflight**: log, checkpoint and export locations are checked for writability and free space
  before any work (:mod:`pdx_lightning.runtime.preflight`, :mod:`~pdx_lightning.runtime.export_target`).

Command-line values win over a checkpoint's hyperparameters: LightningCLI lays the hyperparameters
stored in ``--ckpt_path`` over the config (right for ``--config`` files: the checkpoint knows which
base and term it was trained with), and pdx puts every ``--model.*`` flag of the command line back on
top; validation settings (``val_*``, stored as None by older checkpoints) are never taken from a
checkpoint. ``pdx validate`` writes no logs (no new TensorBoard version, no ``config.yaml``) unless
``--trainer.logger`` is given on its command line.

Lightning hooks used: the public ones (``parse_arguments``, ``after_instantiate_classes``,
``instantiate_trainer``, ``before_<subcommand>``) and one private one, ``_parse_ckpt_path``; that and
the private trainer state pdx reads are named and checked in :mod:`~pdx_lightning.runtime.lightning_internals`.
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import Any, cast

import torch
from lightning.fabric.utilities.exceptions import MisconfigurationException
from lightning.pytorch.callbacks import Callback, Checkpoint, ModelCheckpoint, ProgressBar
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.plugins.io import CheckpointIO

from pdx_lightning.errors import UserError, user_error_in
from pdx_lightning.runtime import csv_continuity, preflight
from pdx_lightning.runtime import lightning_internals as internals
from pdx_lightning.runtime.checkpoint_io import AtomicCheckpointIO
from pdx_lightning.runtime.checkpoint_read import CheckpointLoadError, read_checkpoint
from pdx_lightning.runtime.config_parsing import (
    ConfigParseError,
    OneLineErrorParser,
    check_argv_values,
    install_bounded_yaml,
)
from pdx_lightning.runtime.export_target import check_export_target
from pdx_lightning.runtime.fit_progress import FitProgressBar
from pdx_lightning.runtime.last_checkpoint import latest
from pdx_lightning.runtime.log_continuity import LogContinuity
from pdx_lightning.runtime.noise import QuietKnownNoise

# Settings of a validation run, not of training: never taken from a checkpoint's hyperparameters
# (checkpoints written before they left the hyperparameters store them as None).
RUN_ONLY_HPARAMS = ("val_suite", "val_mates", "val_sample")
# Settings a checkpoint's state is made of (its games, its arm, its networks): a resume that sets them
# otherwise would fail deep in the load or silently train another run, so it is refused up front.
# Dotted keys of the module's hyperparameters; a key either side lacks is not compared.
RESUME_FIXED_HPARAMS = (
    "base",
    "init",
    "preset",
    "algorithm.exploration",
    "algorithm.temperature",
    "selfplay.n_games",
    "selfplay.max_plies",
)


class ResumeMismatchError(UserError, ValueError):
    """``--ckpt_path`` resumed with a setting that differs from the checkpoint's (its games, arm, base)."""


def _lookup(hparams: Any, dotted: str) -> tuple[bool, Any]:
    node = hparams
    for part in dotted.split("."):
        if not hasattr(node, "get") or part not in node:
            return False, None
        node = node[part]
    return True, node


def _same(a: Any, b: Any) -> bool:
    """Equal settings, a number written as a string included (temperature ``"1"`` and ``1.0``)."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def check_resume_settings(stored: Any, current: Any, ckpt: str) -> None:
    """Raise :class:`ResumeMismatchError` naming the first :data:`RESUME_FIXED_HPARAMS` key whose value
    in the run's hyperparameters (``current``) differs from the checkpoint's (``stored``)."""
    for key in RESUME_FIXED_HPARAMS:
        (had, old), (has, new) = _lookup(stored, key), _lookup(current, key)
        if had and has and not _same(old, new):
            raise ResumeMismatchError(
                f"--ckpt_path {ckpt} was trained with model.{key}={old!r}, this run sets {new!r}: resume "
                f"with the checkpoint's setting (drop the flag or config line) or start a new run"
            )


class NothingToValidateError(UserError, ValueError):
    """``pdx validate`` without anything to score."""


class ManualClippingError(UserError, ValueError):
    """``--trainer.gradient_clip_val`` on a module that optimizes manually (Lightning cannot clip there)."""


class ManualAccumulationError(UserError, ValueError):
    """``--trainer.accumulate_grad_batches`` on a module that optimizes manually (it micro-batches itself)."""


class TrainerSettingError(UserError, ValueError):
    """A ``--trainer.*`` setting Lightning's Trainer refuses: a strategy, accelerator, precision or device
    count this machine or installation cannot run (``fsdp`` on a CPU, ``gpu`` without one, ``deepspeed``
    without the package, ``devices 0``). Lightning raises these as MisconfigurationException, ValueError,
    TypeError or ModuleNotFoundError from ``Trainer.__init__``; pdx says them in one line."""


DEFAULT_ROOT_DIR_HELP = (
    "(pdx: a config that sets a logger, as every shipped one does, writes its logs and checkpoints under the "
    "logger's directory instead: --trainer.logger.init_args.save_dir DIR moves both (checkpoints go to "
    "<save_dir>/<name>/version_N/checkpoints unless a ModelCheckpoint names a dirpath); default_root_dir "
    "applies to a run with --trainer.logger false.)"
)
# What Trainer.__init__ raises for settings it cannot honour (its accelerator connector and precision plugins)
TRAINER_SETTING_ERRORS = (MisconfigurationException, ValueError, TypeError, ImportError)


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

    def __init__(
        self, *args: Any, module_argument: tuple[str, tuple[str, ...], str] | None = None, **kwargs: Any
    ) -> None:
        # module_argument: (default, choices, help) of a ``--module`` argument (``pdx fit``'s trainer choice,
        # made before parsing by the caller; declared here so configs and --help know the key)
        self._module_argument = module_argument
        internals.check_lightning()  # before anything runs: the private pieces used below are all there
        # no --seed_everything: seed 0 (reproducible), not Lightning's random seed; the self-play games
        # follow it unless --model.selfplay.seed is given (rl.selfplay.with_run_seed)
        kwargs.setdefault("seed_everything_default", 0)
        kwargs.setdefault("parser_class", OneLineErrorParser)  # a bad value is one line, not the usage text
        install_bounded_yaml()  # every YAML document the parser loads: size, nesting, alias expansion
        super().__init__(*args, **kwargs)

    # ---- parsing ----------------------------------------------------------------------------
    def add_arguments_to_parser(self, parser) -> None:
        """Say in ``--help`` what ``--trainer.default_root_dir`` moves: nothing a shipped config logs or
        checkpoints (each names its logger's directory), only what runs without a logger. Declare
        ``--module`` when the caller chose the trainer from it."""
        for action in parser._actions:  # argparse's list of the parser's arguments
            if action.dest == "trainer.default_root_dir":
                action.help = f"{action.help} {DEFAULT_ROOT_DIR_HELP}"
        if self._module_argument is not None:
            default, choices, text = self._module_argument
            parser.add_argument("--module", choices=choices, default=default, help=text)
        super().add_arguments_to_parser(parser)

    def parse_arguments(self, parser, args) -> None:
        self._argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        check_argv_values(self._argv)  # inline YAML values: the alias-expansion bound
        super().parse_arguments(parser, args)

    def _flag_given(self, prefix: str) -> bool:
        """Whether the command line itself (not a config file) sets ``prefix`` or a key below it."""
        return any(
            a == prefix or a.startswith((prefix + ".", prefix + "=", prefix + "+")) for a in getattr(self, "_argv", ())
        )

    def _model_flags(self) -> list[str]:
        """Dotted ``--model.*`` keys given on the command line (``selfplay.temperature``, ...)."""
        keys = []
        for a in getattr(self, "_argv", ()):
            if a.startswith("--model."):
                key = re.split(r"[=+]", a[len("--model.") :], maxsplit=1)[0]
                if key and not key.endswith(".help"):
                    keys.append(key)
        return keys

    def _parse_ckpt_path(self) -> None:  # private hook: lightning_internals.PRIVATE_USES
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
        migrate = getattr(self.model_class, "migrate_hparams", None)
        if migrate is not None:  # a checkpoint written before the module's settings moved resumes
            hparams = migrate(hparams)
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
                    value = self.config[sub].get("model." + ".".join(parts[: depth + 1]))
                    node[part] = value.as_dict() if hasattr(value, "as_dict") else value
                    break
                node = node[part]
        if "_class_path" in hparams:
            hparams = {"class_path": hparams.pop("_class_path"), "dict_kwargs": hparams}
        try:
            self.config = self.parser.parse_object({sub: {"model": hparams}}, self.config)
        except ConfigParseError as e:
            raise ConfigParseError(f"--ckpt_path {ckpt}: its stored hyperparameters do not parse: {e}") from None

    def instantiate_classes(self) -> None:
        """LightningCLI's, with a user error raised while instantiating (a callback's argument out of its
        range) re-raised as itself: jsonargparse wraps it in its own error, which would print a traceback."""
        try:
            super().instantiate_classes()
        except Exception as e:
            cause = user_error_in(e)
            if cause is None or cause is e:
                raise
            raise cause from None

    def after_instantiate_classes(self) -> None:
        """Drop LightningCLI's internal ``_instantiator`` from the module's hyperparameters: it would be
        logged (hparams.yaml) and saved like a setting; pdx's modules load from a checkpoint without it."""
        internals.drop_hparam(self.model, "_instantiator")
        super().after_instantiate_classes()

    # ---- trainer ----------------------------------------------------------------------------
    def _logs_off(self) -> bool:
        """``validate`` writes no logs unless ``--trainer.logger`` is on its command line."""
        return self.subcommand == "validate" and not self._flag_given("--trainer.logger")

    def instantiate_trainer(self, **kwargs: Any):
        config = self.config_init[self.subcommand] if self.subcommand else self.config_init
        trainer_cfg = config.get("trainer") or {}
        plugins = trainer_cfg.get("plugins")
        if not _has_checkpoint_io(plugins):
            items = list(plugins) if isinstance(plugins, (list, tuple)) else ([plugins] if plugins else [])
            kwargs["plugins"] = [*items, AtomicCheckpointIO()]
        if self._logs_off():
            self.save_config_callback = None  # it would write config.yaml into the cwd (no log dir)
        callbacks = trainer_cfg.get("callbacks")
        callbacks = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks] if callbacks else []
        if trainer_cfg.get("enable_progress_bar", True) is not False and not any(
            isinstance(cb, ProgressBar) for cb in callbacks
        ):
            # steps out of max_steps, ETA, transitions/s (Lightning's default counts an epoch's batches)
            kwargs["callbacks"] = [*callbacks, FitProgressBar()]
        try:
            trainer = super().instantiate_trainer(**kwargs)
        except TRAINER_SETTING_ERRORS as e:
            if user_error_in(e) is not None:
                raise
            raise TrainerSettingError(f"Lightning's Trainer refused the --trainer settings: {e}") from e
        # set by Lightning's callback connector in Trainer.__init__, undeclared on the class
        cbs: list[Callback] = cast(Any, trainer).callbacks
        if not any(isinstance(cb, QuietKnownNoise) for cb in cbs):
            cbs.insert(0, QuietKnownNoise())  # the known-noise filters in every process a strategy starts
        if not any(isinstance(cb, LogContinuity) for cb in cbs):
            # Before the first checkpoint callback, explicitly: its on_train_batch_end must run before
            # ModelCheckpoint writes the step's checkpoint (the order Lightning gives checkpoint callbacks,
            # last, is not re-applied to a callback added after the Trainer was built)
            first_checkpoint = next((i for i, cb in enumerate(cbs) if isinstance(cb, Checkpoint)), len(cbs))
            cbs.insert(first_checkpoint, LogContinuity())
        return trainer

    def _load_safely(self, subcommand: str) -> None:
        """``weights_only=True`` for the subcommand's checkpoint load; ``--weights_only false`` refused.

        Set in ``config_init``, which LightningCLI turns into the subcommand's arguments after the
        ``before_<subcommand>`` hook (the public route; no override of how it builds them)."""
        args = self.config_init[subcommand]
        if "weights_only" in args:
            if args["weights_only"] is False:
                raise CheckpointLoadError(
                    "pdx loads checkpoints with weights_only=True only; "
                    "--weights_only false would execute pickled code from the "
                    "checkpoint file"
                )
            args["weights_only"] = True

    def _prepare(self, subcommand: str) -> None:
        self._load_safely(subcommand)
        trainer, model = self.trainer, self.model
        ckpt = self.config_init[subcommand].get("ckpt_path")
        if ckpt == "last":  # resolved here, across the runs' version directories (None: a fresh run)
            path, versions = latest(trainer)
            self.config_init[subcommand]["ckpt_path"] = path
            if path is None and trainer.is_global_zero:
                print("--ckpt_path last: no last checkpoint yet, starting a fresh run", flush=True)
        else:
            path, versions = (None if ckpt in (None, "best", "hpc") else ckpt), []
        if path is not None:
            blob = read_checkpoint(path)
            if subcommand == "fit":
                stored = dict(blob.get("hyper_parameters") or {})
                migrate = getattr(self.model_class, "migrate_hparams", None)
                if migrate is not None:  # a checkpoint written before the module's settings moved
                    stored = migrate(stored)
                check_resume_settings(stored, getattr(model, "hparams", {}), str(path))
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
            internals.pin_logger_version(lg, v)  # same run directory: TensorBoard curves and checkpoints continue
        if trainer.is_global_zero:
            # a fresh run's version chosen now, in the process the command runs in: under ddp_spawn the ranks
            # get a copy of this trainer (the version with it) and its closing summary names their directory
            for lg in trainer.loggers:
                if isinstance(lg, (TensorBoardLogger, CSVLogger)):
                    _ = lg.version
        if subcommand == "fit" and path is not None and trainer.is_global_zero:
            for csv_logger in csv_continuity.csv_loggers(trainer.loggers):
                csv_continuity.carry_rows(csv_logger)  # metrics.csv keeps the resumed run's rows
        if subcommand == "fit" and path is not None:  # resuming: its checkpoint dir has files
            warnings.filterwarnings(
                "ignore", message=r"Checkpoint directory .* exists and is not empty", category=UserWarning
            )
        if subcommand == "validate":
            # validate restores the weights only: the fit's callbacks (a ModelCheckpoint saving at another
            # interval, a sweep cell's) need not match the ones this command builds
            warnings.filterwarnings(
                "ignore", message=r"Be aware that when using `ckpt_path`, callbacks used", category=UserWarning
            )
            self._check_something_to_validate()
            if self._logs_off():
                trainer.logger = None
        if not trainer.is_global_zero:
            return
        need = 2 * _checkpoint_bytes(model) + preflight.min_free_default()
        for lg in trainer.loggers:
            root = getattr(lg, "root_dir", None) or getattr(lg, "save_dir", None)
            if root:
                preflight.check_dir(
                    root, what=f"log directory of {type(lg).__name__}", min_free=need if subcommand == "fit" else None
                )
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
            own = (
                f"; clip with --model.algorithm.grad_clip_norm {clip} instead"
                if hasattr(hp, "get") and "grad_clip_norm" in (hp.get("algorithm") or {})
                else ""
            )
            raise ManualClippingError(
                f"--trainer.gradient_clip_val {clip}: Lightning cannot clip gradients of "
                f"{type(self.model).__name__}, which optimizes manually{own}"
            )

    def _check_accumulation(self) -> None:
        """Lightning refuses ``accumulate_grad_batches`` under manual optimization with a 20-line traceback;
        say it in one line, naming the module's own micro-batching setting where it has one."""
        accumulate = self.trainer.accumulate_grad_batches
        if accumulate != 1 and not self.model.automatic_optimization:
            hp = getattr(self.model, "hparams", {})
            own = (
                " and micro-batches each step itself: --model.algorithm.micro_batch sets the gradient "
                "micro-batch (gradients accumulate over the step's whole batch)"
                if hasattr(hp, "get") and "micro_batch" in (hp.get("algorithm") or {})
                else ""
            )
            raise ManualAccumulationError(
                f"--trainer.accumulate_grad_batches {accumulate}: {type(self.model).__name__} optimizes manually "
                f"(one optimizer step per training step){own}"
            )

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
                "data/tactics.csv and/or --model.val_mates+=data/mates_in_1.csv"
            )

    def before_fit(self) -> None:
        self._check_clipping()
        self._check_accumulation()
        self._prepare("fit")

    def before_validate(self) -> None:
        self._prepare("validate")

    def before_test(self) -> None:
        self._load_safely("test")

    def before_predict(self) -> None:
        self._load_safely("predict")
