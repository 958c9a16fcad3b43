"""Warnings and log lines pdx causes knowingly on every run, each saying nothing a user can act on.

Silenced by message and category (:func:`quiet_known_noise`): LightningCLI's "args parameter" warning
(``pdx`` passes its parsed arguments while ``sys.argv`` holds them too), the ``dataloader_iter``
step-flavour warnings (the modules drive self-play themselves), the "module(s) in eval mode" warning
(the EMA and the frozen base are in eval mode by design), the empty validation loader of a fit without
validation suites, the ModelCheckpoint warning about manual optimization (:data:`KNOWN_MODULE_NOISE`:
pdx checkpoints the state after the step on purpose), a deprecation inside Lightning (torch's
``LeafSpec``, with the torch/Lightning pair setup.sh installs) and Lightning's "💡 Tip" advertisements
(litlogger, litmodels). Every other warning still shows.

The entry installs them in its process; :class:`QuietKnownNoise`, a callback the CLI adds to every
Trainer, installs them again in each process a strategy starts: ``ddp_spawn``'s workers are fresh
interpreters that run no entry of ours, so the filters of the launching process never reach them.
(``ddp`` relaunches the command itself, so its ranks run the entry.)
"""

from __future__ import annotations

import logging
import warnings

import lightning as L
from lightning.pytorch.utilities.warnings import PossibleUserWarning

__all__ = ["KNOWN_MODULE_NOISE", "KNOWN_NOISE", "QuietKnownNoise", "quiet_known_noise"]

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
# (message regex, category, module regex): noise raised by one third-party module, filtered there only
KNOWN_MODULE_NOISE: tuple[tuple[str, type[Warning], str], ...] = (
    # Lightning 2.6 warns at every ModelCheckpoint save of a manually optimized module ("no
    # pre-optimization state was saved", 12 lines with example code) unless the module keeps
    # `saved_models` and a `layer` attribute (a shape of its own test model). PDXModule optimizes
    # manually by design and its checkpoint *should* hold the state after the step's update: that
    # is what `--ckpt_path last` resumes from (the next step's self-play uses those weights), and
    # the resume tests compare against it. Nothing to act on, so it is dropped at its source.
    (
        r"Using ModelCheckpoint with manual optimization and every_n_train_steps",
        UserWarning,
        r"lightning\.pytorch\.callbacks\.model_checkpoint",
    ),
)


class _DropLightningTips(logging.Filter):
    """Drops Lightning's "💡 Tip: ... try installing litlogger / litmodels ..." info lines (advertisements)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("💡 Tip") or ("Tip" in msg and ("litlogger" in msg or "litmodels" in msg)))


def quiet_known_noise() -> None:
    """Install the :data:`KNOWN_NOISE` warning filters and the tip log filter (idempotent)."""
    for message, category in KNOWN_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category)
    for message, category, module in KNOWN_MODULE_NOISE:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
    log = logging.getLogger("lightning.pytorch.utilities.rank_zero")
    if not any(isinstance(f, _DropLightningTips) for f in log.filters):
        log.addFilter(_DropLightningTips())


class QuietKnownNoise(L.Callback):
    """Installs :func:`quiet_known_noise` in every process the Trainer reaches: ``ddp_spawn`` pickles the
    Trainer with its callbacks into each worker, and unpickling this one installs the filters there
    before the worker's Trainer runs anything; ``setup`` installs them again wherever it runs. The CLI
    adds it to every Trainer; a user need not."""

    def __reduce__(self) -> tuple:
        return (_quiet_and_make, ())

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        quiet_known_noise()


def _quiet_and_make() -> QuietKnownNoise:
    """How a pickled :class:`QuietKnownNoise` comes back: the filters first (it has no state to restore,
    so a ``__setstate__`` would never be called)."""
    quiet_known_noise()
    return QuietKnownNoise()
