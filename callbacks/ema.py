"""EMAUpdate: θ̄ ← αθ̄ + (1−α)θ after every optimizer step (paper Eq. 11)."""
from __future__ import annotations

import lightning as L
import torch
from torch.optim.swa_utils import get_ema_multi_avg_fn


class EMAUpdate(L.Callback):
    """Moves ``pl_module.ema`` toward ``pl_module.online`` after each training step.

    Uses torch.optim.swa_utils' EMA math (a fused ``lerp``). The EMA is a
    bootstrap target, not an evaluation-time swap, so it lives as its own
    network; Lightning's WeightAveraging (which swaps weights) does not fit.
    Every rank applies the same update to identical online weights, so the EMA
    stays identical across DDP ranks.
    """

    def __init__(self, decay: float = 0.995) -> None:
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"EMA decay must lie in [0, 1], got {decay}")
        self.decay = decay
        self._avg = get_ema_multi_avg_fn(decay)

    @torch.no_grad()
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        ema = [p for p in pl_module.ema.parameters()]
        online = [p.detach() for p in pl_module.online.parameters()]
        # num_averaged > 0 so swa_utils applies the decay (at 0 it would copy)
        self._avg(ema, online, torch.tensor(1, device=online[0].device))
