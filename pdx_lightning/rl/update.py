"""What both trainers do around their loss, written once: micro-batches, guards, clipping, one step.

:func:`optimizer_step` takes a batch of ``n`` rows and a ``micro_step(rows)`` that returns the loss of
those rows (with gradient) and its logged parts (detached); it zeroes the gradients, back-propagates
each micro-batch's loss weighted by its share of the batch (the gradients accumulate), checks every loss
part and every gradient for NaN/inf (:mod:`pdx_lightning.rl.guards`: a non-finite value stops training
before the parameters move), clips the gradients' total norm when asked, and steps the optimizer and its
learning-rate schedule. The logged parts are averaged over the micro-batches with the same weights.
``rl.pdx_step.pdx_step`` (prior-directed exploration) and ``rl.searched_step.searched_step`` (searched
self-play) are each their own loss around this one loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from pdx_lightning.rl.errors import SelfPlayError
from pdx_lightning.rl.guards import check_finite, check_finite_gradients

__all__ = [
    "Optimization",
    "Optimizer",
    "Scheduler",
    "clip_gradients",
    "optimizer_step",
    "refuse_scaled_clipping",
    "run_seed",
]

# a micro-batch's loss (a scalar with gradient) and its logged parts (detached scalars)
MicroStep = Callable[[slice], tuple[torch.Tensor, dict[str, torch.Tensor]]]


class Optimizer(Protocol):
    """What the step calls on the optimizer (a torch optimizer, or Lightning's wrapper of one)."""

    def zero_grad(self) -> None: ...

    def step(self) -> object: ...


class Scheduler(Protocol):
    """The learning-rate schedule, stepped once per optimizer step."""

    def step(self) -> object: ...


@dataclass(frozen=True)
class Optimization:
    """What a step's optimizer step acts on: the trained network, its optimizer and learning-rate schedule,
    and the backward function (Lightning's ``manual_backward``: precision and DDP hooks)."""

    online: torch.nn.Module
    optimizer: Optimizer
    scheduler: Scheduler
    backward: Callable[[torch.Tensor], None]

    def step(
        self, n: int, micro_batch: int, micro_step: MicroStep, *, grad_clip_norm: float | None, step: int
    ) -> dict[str, float]:
        """:func:`optimizer_step` with these."""
        return optimizer_step(
            n,
            micro_batch,
            micro_step,
            online=self.online,
            optimizer=self.optimizer,
            scheduler=self.scheduler,
            backward=self.backward,
            grad_clip_norm=grad_clip_norm,
            step=step,
        )


def optimizer_step(
    n: int,
    micro_batch: int,
    micro_step: MicroStep,
    *,
    online: torch.nn.Module,
    optimizer: Optimizer,
    scheduler: Scheduler,
    backward: Callable[[torch.Tensor], None],
    grad_clip_norm: float | None,
    step: int,
) -> dict[str, float]:
    """One optimizer step over ``n`` rows in micro-batches of ``micro_batch``; the logged parts averaged
    over the rows (and ``optim/grad_norm``, the norm before clipping, when ``grad_clip_norm`` is set).

    ``backward`` back-propagates a loss (Lightning's ``manual_backward``: precision and DDP hooks); ``step``
    (the global step) is named in a guard's message."""
    optimizer.zero_grad()
    metrics: dict[str, float] = {}
    for start in range(0, n, micro_batch):
        rows = slice(start, min(n, start + micro_batch))
        loss, parts = micro_step(rows)
        check_finite(step, parts)  # every loss term, before it reaches the gradients
        frac = (rows.stop - rows.start) / n
        backward(loss * frac)  # gradients accumulate over the micro-batches
        for name, value in parts.items():
            metrics[name] = metrics.get(name, 0.0) + float(value.detach()) * frac
    # one optimizer step on θ, after clipping the gradients' total norm (the gradients are the true ones:
    # 16-bit AMP, whose scaler would still scale them, is refused with clipping: refuse_scaled_clipping)
    check_finite_gradients(step, online)
    grad_norm = clip_gradients(online, grad_clip_norm)
    if grad_norm is not None:
        metrics["optim/grad_norm"] = grad_norm
    optimizer.step()
    scheduler.step()
    return metrics


def clip_gradients(online: torch.nn.Module, max_norm: float | None) -> float | None:
    """Clip the online gradients' total L2 norm to ``max_norm`` (None: no clipping); their norm before
    clipping, or None. Under DDP the gradients are all-reduced by then, so every rank clips alike."""
    if max_norm is None:
        return None
    return float(torch.nn.utils.clip_grad_norm_(online.parameters(), max_norm))


def refuse_scaled_clipping(grad_clip_norm: float | None, precision: str, key: str, error: type[Exception]) -> None:
    """Gradient clipping needs true gradients: refused under 16-bit AMP, whose loss scaler still scales
    them where the step clips them (``error`` names ``key``)."""
    if grad_clip_norm is not None and precision in ("16-mixed", "16", "16-true"):
        raise error(
            f"{key} with --trainer.precision {precision}: the loss scaler still scales the gradients where "
            "the step clips them; use bf16-mixed or 32"
        )


def run_seed(setting: str) -> int:
    """The run's seed as ``seed_everything`` set it (``PL_GLOBAL_SEED``), else 0; a seed that is not an
    integer is a one-line error naming ``setting``, the key that sets it explicitly."""
    seed = os.environ.get("PL_GLOBAL_SEED")
    try:
        return int(seed) if seed is not None else 0
    except ValueError:
        raise SelfPlayError(f"PL_GLOBAL_SEED={seed!r} is not an integer seed (set {setting})") from None
