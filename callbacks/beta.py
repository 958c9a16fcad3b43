"""BetaSchedule: β per step — constant (the paper), or linear/cosine annealing."""

from __future__ import annotations

import math
from typing import Literal

import lightning as L

from pdx_lightning.errors import CallbackSettingError


class BetaSchedule(L.Callback):
    """Sets ``pl_module.beta`` before every training step.

    ``constant`` keeps the module's β; ``linear`` and ``cosine`` anneal from
    ``start`` to ``end`` over ``steps`` optimizer steps (then hold ``end``), the
    annealing the paper's Limitations propose.
    """

    def __init__(
        self,
        kind: Literal["constant", "linear", "cosine"] = "constant",
        start: float | None = None,
        end: float = 0.0,
        steps: int = 1000,
    ) -> None:
        if kind not in ("constant", "linear", "cosine"):
            raise CallbackSettingError(f"BetaSchedule kind must be constant|linear|cosine, got {kind!r}")
        if steps < 1 or end < 0 or (start is not None and start < 0):
            raise CallbackSettingError(
                f"BetaSchedule needs steps >= 1 and non-negative start/end, got steps={steps}, start={start}, end={end}"
            )
        self.kind, self.start, self.end, self.steps = kind, start, end, steps

    def value(self, step: int, start: float) -> float:
        t = min(1.0, step / self.steps)
        if self.kind == "constant":
            return start
        if self.kind == "linear":
            return start + (self.end - start) * t
        return self.end + (start - self.end) * 0.5 * (1.0 + math.cos(math.pi * t))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        start = self.start if self.start is not None else pl_module.algorithm.beta
        pl_module.beta = self.value(trainer.global_step, start)
