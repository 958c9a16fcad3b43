"""Every use pdx makes of Lightning's private API, named in one place and checked at start-up.

Lightning has no public hook for these; each is listed in :data:`PRIVATE_USES` with what pdx needs it
for, and touched only through the functions below. :func:`check_lightning` (run when
:class:`~pdx_lightning.runtime.lightning_cli.PDXLightningCLI` is built, and by the callbacks that read
trainer state) looks each one up in the installed Lightning.

On a Lightning outside :data:`WRITTEN_FOR` pdx still runs when every private piece is there (one
warning), and refuses to start with a one-line :class:`LightningInternalsError` naming what is missing
otherwise. Why not refuse every other version: the dangerous failure is a *silent* one (Lightning no
longer calling ``_parse_ckpt_path``, so checkpoint hyperparameters would beat command-line flags with
no sign of it), and looking the pieces up catches exactly that, before any work; a version pin alone
would also refuse the patch and minor releases that changed none of them.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import lightning
from packaging.version import InvalidVersion, Version

from pdx_lightning.errors import UserError

# minor versions pdx was written and tested for: the pyproject floor (2.4) to the one tested (2.6.6)
WRITTEN_FOR = ((2, 4), (2, 6))

PRIVATE_USES = {
    "LightningCLI._parse_ckpt_path": "overridden: checkpoint hyperparameters under command-line flags, "
    "the file read by the bounded reader (LightningCLI.__init__ must call it)",
    "_LoggerConnector.metrics['log']": "a step's metrics not yet logged when its checkpoint is saved "
    "(LogContinuity stores them in the checkpoint)",
    "_TrainingEpochLoop._batches_that_stepped": "the step those metrics are logged at (Lightning's "
    "logger step; global_step counts optimizer steps)",
    "TensorBoardLogger._version / CSVLogger._version": "pinned on resume so the logs continue in the "
    "same version_N (the loggers exist by then)",
    "_ExperimentWriter.metrics_keys": "the CSV writer's header, seeded with the resumed run's columns so its "
    "rows carried over in metrics.csv keep theirs (csv_continuity)",
    "HyperparametersMixin._hparams_initial": "LightningCLI's _instantiator dropped from the hyperparameters "
    "that are logged (hparams_initial returns a copy)",
}


class LightningInternalsError(UserError, RuntimeError):
    """The installed Lightning lacks a private piece pdx relies on (:data:`PRIVATE_USES`)."""


def version_tuple(version: str) -> tuple[int, int]:
    """``"2.6.6"`` -> ``(2, 6)``; a version that does not parse -> ``(0, 0)`` (outside every range)."""
    try:
        release = Version(version).release
    except InvalidVersion:
        return 0, 0
    major, minor = (*release, 0)[:2]
    return major, minor


def _source_has(obj: Any, text: str) -> bool:
    try:
        return text in inspect.getsource(obj)
    except (OSError, TypeError):  # no source (a zipped or compiled install): cannot tell, assume present
        return True


def missing_private_uses() -> list[str]:
    """The names of :data:`PRIVATE_USES` the installed Lightning does not have (empty when all are there)."""
    from lightning.fabric.loggers.csv_logs import CSVLogger, _ExperimentWriter  # noqa: PLC0415  (only when checked)
    from lightning.fabric.loggers.tensorboard import TensorBoardLogger  # noqa: PLC0415
    from lightning.pytorch.cli import LightningCLI  # noqa: PLC0415
    from lightning.pytorch.core.mixins.hparams_mixin import HyperparametersMixin  # noqa: PLC0415
    from lightning.pytorch.loops.training_epoch_loop import _TrainingEpochLoop  # noqa: PLC0415
    from lightning.pytorch.trainer.connectors.logger_connector.logger_connector import _LoggerConnector  # noqa: PLC0415

    found = {
        "LightningCLI._parse_ckpt_path": callable(getattr(LightningCLI, "_parse_ckpt_path", None))
        and _source_has(LightningCLI.__init__, "self._parse_ckpt_path()"),
        "_LoggerConnector.metrics['log']": isinstance(getattr(_LoggerConnector, "metrics", None), property)
        and _source_has(_LoggerConnector, '"log"'),
        "_TrainingEpochLoop._batches_that_stepped": _source_has(_TrainingEpochLoop, "self._batches_that_stepped"),
        "TensorBoardLogger._version / CSVLogger._version": _source_has(TensorBoardLogger, "self._version")
        and _source_has(CSVLogger, "self._version"),
        "_ExperimentWriter.metrics_keys": _source_has(_ExperimentWriter, "self.metrics_keys"),
        "HyperparametersMixin._hparams_initial": _source_has(HyperparametersMixin, "self._hparams_initial"),
    }
    return [name for name, ok in found.items() if not ok]


@functools.cache
def check_lightning(version: str | None = None) -> None:
    """Refuse (:class:`LightningInternalsError`, one line) a Lightning missing a private piece; warn once
    for a version outside :data:`WRITTEN_FOR` that has them all."""
    version = version or lightning.__version__
    missing = missing_private_uses()
    lo, hi = WRITTEN_FOR
    span = f"{lo[0]}.{lo[1]}-{hi[0]}.{hi[1]}"
    if missing:
        raise LightningInternalsError(
            f"lightning {version} lacks what pdx relies on ({'; '.join(missing)}; see "
            f"pdx_lightning/runtime/lightning_internals.py): install a lightning {span}, e.g. "
            f"pip install 'lightning>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}'"
        )
    if not lo <= version_tuple(version) <= hi:
        warnings.warn(
            f"lightning {version}: pdx was written for {span}; every private piece it uses is "
            f"present, so it runs, but resuming and logging are untested on this version",
            UserWarning,
            stacklevel=2,
        )


def pending_log_metrics(trainer) -> dict[str, float]:
    """The metrics of the current step that Lightning will hand to the loggers after the step's
    checkpoint is saved (``trainer._logger_connector.metrics["log"]``)."""
    return {k: float(v) for k, v in trainer._logger_connector.metrics["log"].items()}


def logger_step(trainer) -> int:
    """The step Lightning logs the current metrics at (``fit_loop.epoch_loop._batches_that_stepped``)."""
    return int(trainer.fit_loop.epoch_loop._batches_that_stepped)


def pin_logger_version(logger, version) -> bool:
    """Make ``logger`` write into run ``version`` (before it has created its directory); False for a
    logger without a version to pin (``_version`` missing, or already chosen)."""
    if version is None or getattr(logger, "_version", "absent") is not None:
        return False
    logger._version = version
    return True


def drop_hparam(model, key: str) -> None:
    """Remove ``key`` from ``model``'s hyperparameters, the logged initial ones (``_hparams_initial``) too."""
    for attr in ("_hparams", "_hparams_initial"):
        hp = getattr(model, attr, None)
        if hp is not None and hasattr(hp, "pop"):
            hp.pop(key, None)
