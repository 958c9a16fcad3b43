"""EMAUpdate: θ̄ ← αθ̄ + (1−α)θ after every optimizer step (paper Eq. 11), as a Lightning callback.

For modules that optimize automatically (the puzzle-tuned control, ``supervised.control``), whose
optimizer step Lightning runs. ``PDXModule`` does not use it: its step (:func:`pdx_lightning.rl.pdx_step.pdx_step`)
calls the same :func:`pdx_lightning.runtime.optim.ema_update` right after the optimizer step, where
Algorithm 1 puts it (line 15).
"""

from __future__ import annotations

import lightning as L

from pdx_lightning.runtime.optim import check_ema_decay, ema_update


class EMAUpdate(L.Callback):
    """Moves ``pl_module.ema`` toward ``pl_module.online`` after each training step (:func:`ema_update`)."""

    def __init__(self, decay: float = 0.995) -> None:
        self.decay = check_ema_decay(decay)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        ema_update(pl_module.ema, pl_module.online, self.decay)
