"""EMAUpdate: line 15 of Algorithm 1, θ̄ ← αθ̄ + (1−α)θ after every optimizer step (paper Eq. 11).

Registered by default in every PDX fit (``PDXModule.configure_callbacks`` puts it first among the
callbacks when the Trainer has none) and used by the puzzle-tuned control (``supervised.control``).
Replace it by passing your own subclass in ``--trainer.callbacks`` or a config: a subclass overrides
:meth:`EMAUpdate.update` (another decay schedule, an update every k steps, SWA); the default is then
not added. The invariants the PDX module checks hold for any subclass: the callback runs once per
optimizer step (in ``on_train_batch_end``, before the next batch is begun and before the step's
checkpoint, which Lightning's checkpoint callbacks write last), and it stamps the step it handled
(``ema_version``), so a missing or doubled EMA callback stops the run with one line.
"""

from __future__ import annotations

import lightning as L
import torch

from pdx_lightning.runtime.optim import check_ema_decay, ema_update


class EMATargetError(RuntimeError):
    """The EMA target missed an optimizer step or moved twice for one (a missing or doubled EMA callback)."""


class EMAUpdate(L.Callback):
    """Moves ``pl_module.ema`` toward ``pl_module.online`` after each training step (:func:`ema_update`).

    Args:
        decay: α of Eq. 11; None (the default) takes the module's ``algorithm.ema_decay`` (PDX) or
            ``ema_decay`` hyperparameter.
    """

    def __init__(self, decay: float | None = None) -> None:
        self.decay = None if decay is None else check_ema_decay(decay, "EMAUpdate(decay=)")

    def decay_for(self, pl_module: L.LightningModule) -> float:
        """α: this callback's ``decay``, else the module's setting."""
        if self.decay is not None:
            return self.decay
        settings = getattr(pl_module, "algorithm", None)
        decay = getattr(settings, "ema_decay", None)
        if decay is None:
            decay = pl_module.hparams.get("ema_decay")
        if decay is None:
            raise EMATargetError("EMAUpdate(decay=None) needs the module's ema_decay setting; pass decay=")
        return float(decay)

    def update(self, ema: torch.nn.Module, online: torch.nn.Module, step: int, pl_module: L.LightningModule) -> None:
        """Move ``ema`` toward ``online`` after optimizer step ``step`` (1-based). Override for another rule."""
        ema_update(ema, online, self.decay_for(pl_module))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        version = getattr(pl_module, "param_version", None)
        if version is not None and getattr(pl_module, "ema_version", None) == version:
            raise EMATargetError(
                f"the EMA target already moved for optimizer step {version}: more than one EMA callback "
                "(keep one EMAUpdate, or your own subclass of it)"
            )
        step = trainer.global_step if trainer is not None else (version or 0)
        self.update(pl_module.ema, pl_module.online, step, pl_module)
        if version is not None:
            pl_module.ema_version = version
