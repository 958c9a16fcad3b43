"""The progress bar of ``pdx fit``, ``pdx pretrain`` and the sweep's control: optimizer steps out of
``max_steps``, steps/s, ETA and self-play transitions/s.

Lightning's default bar counts the batches of an epoch; the self-play stream has no epochs, so it
read ``Epoch 0/-2`` (the rich bar, with ``max_epochs=-1``) and no ETA. :class:`FitProgressBar` is a
``TQDMProgressBar`` that counts ``trainer.global_step`` against ``max_steps`` (a resumed run starts
at its step; its rate and ETA count this launch's steps only)::

    fit: 12/300 steps |█▍         | [00:41<16:24, 3.42s/step, transitions/s=37, loss=0.118]

It draws on stderr (stdout keeps the closing summary); when stderr is not a terminal (a log file) it
redraws at most every ``runtime.progress.LOG_INTERVAL`` s and hides the short validation bars;
``PDX_PROGRESS=0`` switches it off, as every other pdx bar.
:class:`~pdx_lightning.runtime.lightning_cli.PDXLightningCLI` installs it unless the config names a progress
bar of its own or ``--trainer.enable_progress_bar false``.
"""

from __future__ import annotations

import os
import sys
import time

from lightning.pytorch.callbacks import TQDMProgressBar
from lightning.pytorch.callbacks.progress.tqdm_progress import Tqdm, convert_inf

from pdx_lightning.runtime.progress import _OFF, ENV_SWITCH, LOG_INTERVAL

__all__ = ["FitProgressBar", "fit_postfix", "transitions_per_step"]


def fit_postfix(metrics: dict, steps_done: int, seconds: float, per_step: int | None) -> dict[str, str]:
    """The bar's trailing fields: ``transitions/s`` (``per_step`` self-play transitions per optimizer step
    x the ``steps_done`` steps of this launch / ``seconds``), then the module's progress-bar metrics
    (``loss``) without Lightning's ``v_num`` (the log version: the closing summary names the run
    directory). ``per_step`` None (a module without self-play) or nothing done yet: no rate."""
    out: dict[str, str] = {}
    if per_step and steps_done > 0 and seconds > 0:
        out["transitions/s"] = f"{per_step * steps_done / seconds:.0f}"
    for key, value in metrics.items():
        if key != "v_num":
            out[key] = f"{value:.4g}" if isinstance(value, float) else str(value)
    return out


def transitions_per_step(world_size: int, pl_module) -> int | None:
    """Self-play transitions one optimizer step trains on: the games each rank plays in parallel
    (``selfplay.n_games``: each plays one move per step) x the world size; None without self-play."""
    cfg = getattr(getattr(pl_module, "dataset", None), "cfg", None)
    n = getattr(cfg, "n_games", None)
    return int(n) * int(world_size) if isinstance(n, int) and n > 0 else None


class FitProgressBar(TQDMProgressBar):
    """Steps out of ``max_steps`` with steps/s, ETA and ``transitions/s``, on stderr (module docstring).

    Args:
        refresh_rate: redraw every this many steps (on a terminal; a log file gets one line per
            ``LOG_INTERVAL`` s).
    """

    BAR_FORMAT = "{desc}: {n_fmt}/{total_fmt} steps |{bar}| [{elapsed}<{remaining}, {rate_fmt}{postfix}]"

    def __init__(self, refresh_rate: int = 1) -> None:
        super().__init__(refresh_rate=refresh_rate)
        self._tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
        self._t0, self._step0, self._last_draw = 0.0, 0, 0.0
        self._per_step: int | None = None
        if os.environ.get(ENV_SWITCH, "").strip().lower() in _OFF:
            self.disable()

    def _total(self) -> int | float | None:
        trainer = self.trainer
        if trainer.max_steps and trainer.max_steps > 0:
            return trainer.max_steps
        return convert_inf(trainer.estimated_stepping_batches)  # epochs (pretrain): all their steps

    def init_train_tqdm(self) -> Tqdm:
        # a resumed run starts at its step: tqdm's rate and ETA are (n - initial) / elapsed
        return Tqdm(
            desc="fit",
            total=self._total(),
            initial=self.trainer.global_step,
            disable=self.is_disabled,
            leave=True,
            dynamic_ncols=self._tty,
            file=sys.stderr,
            smoothing=0,
            unit="step",
            bar_format=self.BAR_FORMAT,
            mininterval=0.1 if self._tty else LOG_INTERVAL,
        )

    def _short_bar(self, desc: str, leave: bool, position: int) -> Tqdm:
        # sanity check and validation: a few puzzle batches; no lines of their own in a log file
        return Tqdm(
            desc=desc,
            disable=self.is_disabled or not self._tty,
            leave=leave,
            position=position,
            dynamic_ncols=True,
            file=sys.stderr,
        )

    def init_sanity_tqdm(self) -> Tqdm:
        return self._short_bar(self.sanity_check_description, leave=False, position=0)

    def init_validation_tqdm(self) -> Tqdm:
        fitting = self.trainer.state.fn == "fit"  # below the fit bar; pdx validate: the only bar, kept
        return self._short_bar(self.validation_description, leave=not fitting, position=int(fitting))

    def on_train_start(self, trainer, pl_module) -> None:
        super().on_train_start(trainer, pl_module)
        self._t0, self._step0 = time.monotonic(), trainer.global_step
        self._per_step = transitions_per_step(trainer.world_size, pl_module)

    def on_train_epoch_start(self, trainer, *_) -> None:
        pass  # one bar across epochs (pretrain), made with its total at the start of training

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        bar = self.train_progress_bar
        if bar is None or bar.disable:
            return
        step, now = trainer.global_step, time.monotonic()
        bar.n = step
        bar.set_postfix(
            fit_postfix(self.get_metrics(trainer, pl_module), step - self._step0, now - self._t0, self._per_step),
            refresh=False,
        )
        if (self._tty and step % self.refresh_rate == 0) or step == bar.total or now - self._last_draw >= LOG_INTERVAL:
            bar.refresh()
            self._last_draw = now

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        pass  # keep the last step's postfix (the parent would put the epoch's aggregated metrics)
