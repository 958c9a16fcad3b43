"""One searched self-play step, in one file: the loss of a replay batch and one optimizer step.

    L = CE(visits, π_θ) + c_v · CE(z, p_θ) + β · KL(π_base ‖ π_θ) [+ c_v · w · KL(p_base ‖ p_θ)]

over the legal moves of each position: the policy cross-entropy to the root's visit shares (AlphaZero's
policy target), the WDL cross-entropy to the value target z (the game's result from the side to move,
mixed with the search's root W/D/L by ``value_mix``; the search's W/D/L at the cut for a game cut at the
ply cap), and the forward KL to the frozen base that prior-directed exploration uses as its exploration
term (β = 0: pure searched self-play; a ``BetaSchedule`` may change β per step). The bracketed term is
PDX's base-WDL value anchor (``value_anchor`` w, 0 = off: not computed), the same
:func:`~pdx_lightning.rl.objectives.base_wdl_kl` that holds a PDX cell's value head to the base's W/D/L
at the replayed positions. Means over the batch.

:func:`searched_step` receives every input explicitly, as ``rl.pdx_step.pdx_step`` does: the batch drawn
from the replay buffer, the online network with its optimizer, schedule and backward function
(:class:`~pdx_lightning.rl.update.Optimization`), the base network, the settings, β, the parameter
version and the global step. Per micro-batch it checks the
inputs and targets for NaN/inf (``rl.guards``), and :func:`~pdx_lightning.rl.update.optimizer_step`
(shared with PDX) accumulates the gradients, checks every loss term and gradient, clips and steps.
``SearchedModule.training_step`` plays the plies, draws the batch, calls this and logs the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pdx_lightning.chesscore.policy import entropy, forward_kl, masked_log_softmax
from pdx_lightning.rl.guards import check_finite
from pdx_lightning.rl.objectives import base_wdl_kl
from pdx_lightning.rl.replay import Batch
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings
from pdx_lightning.rl.update import Optimization


def searched_loss(
    policy_logits: torch.Tensor,
    wdl_logits: torch.Tensor,
    batch: Batch,
    c_v: float,
    beta: float,
    base_logits: torch.Tensor | None = None,
    value_anchor: float = 0.0,
    base_wdl_logits: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss (a scalar with gradient) and its parts (detached) for one micro-batch: ``policy_logits``
    (B, POLICY_SIZE) and ``wdl_logits`` (B, 3) of the online network, ``base_logits`` the base's policy
    logits (needed when ``beta`` > 0), ``base_wdl_logits`` the base's WDL logits (needed when
    ``value_anchor`` > 0)."""
    if value_anchor > 0 and base_wdl_logits is None:
        raise ValueError("value_anchor > 0 needs base_wdl_logits, the base's WDL logits at s")
    mask = batch.mask
    logp = masked_log_softmax(policy_logits.float(), mask)
    target = batch.target
    policy_ce = -(target * logp.masked_fill(~mask, 0.0)).sum(-1)
    log_wdl = torch.log_softmax(wdl_logits.float(), dim=-1)
    value_ce = -(batch.wdl_target * log_wdl).sum(-1)
    total = policy_ce.mean() + c_v * value_ce.mean()
    parts = {
        "loss/policy": policy_ce.mean().detach(),
        "loss/value": value_ce.mean().detach(),
        "policy/entropy": entropy(logp.detach(), mask).mean(),
    }
    if beta > 0:
        assert base_logits is not None  # the step computes them whenever beta > 0
        kl = forward_kl(masked_log_softmax(base_logits.float(), mask), logp, mask)
        total = total + beta * kl.mean()
        parts["loss/kl_base"] = kl.mean().detach()
    if value_anchor > 0 and base_wdl_logits is not None:  # (None with value_anchor > 0 was refused above)
        anchor = base_wdl_kl(wdl_logits, torch.softmax(base_wdl_logits.detach().float(), dim=-1)).mean()
        total = total + c_v * value_anchor * anchor
        parts["loss/anchor"] = anchor.detach()
    parts["loss/total"] = total.detach()
    return total, parts


@dataclass
class SearchedStepResult:
    """What one :func:`searched_step` changed and measured."""

    metrics: dict[str, float]  # loss terms and the policy's entropy, averaged over the batch
    size: int  # positions trained on (this rank)
    version: int  # the online parameters' version after the step (one more than before)


def searched_step(
    batch: Batch,
    *,
    optimization: Optimization,
    base: torch.nn.Module,
    settings: SearchedSelfPlaySettings,
    beta: float,
    version: int,
    step: int,
) -> SearchedStepResult:
    """One AdamW step on the loss of ``batch`` (the module docstring); the base is evaluated only when
    ``beta`` > 0 or ``settings.value_anchor`` > 0."""
    anchor = settings.value_anchor

    def micro_step(rows: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        part = batch_rows(batch, rows)
        out = optimization.online(part.planes)
        base_logits = base_wdl = None
        if beta > 0 or anchor > 0:
            with torch.no_grad():
                base_out = base(part.planes)
            base_logits = base_out.policy if beta > 0 else None
            base_wdl = base_out.wdl if anchor > 0 else None
        check_finite(
            step,
            {
                "online policy logits (π_θ)": (out.policy, part.mask),
                "online WDL logits (p_θ)": out.wdl,
                **({} if base_logits is None else {"π_base policy logits": (base_logits, part.mask)}),
                **({} if base_wdl is None else {"p_base WDL logits": base_wdl}),
                "visit-share target": part.target,
                "WDL target z": part.wdl_target,
            },
        )
        return searched_loss(out.policy, out.wdl, part, settings.c_v, beta, base_logits, anchor, base_wdl)

    metrics = optimization.step(
        batch.size, settings.micro_batch, micro_step, grad_clip_norm=settings.grad_clip_norm, step=step
    )
    target = batch.target
    metrics["replay/batch_target_entropy"] = float(-(target * torch.log(target.clamp_min(1e-12))).sum(-1).mean())
    return SearchedStepResult(metrics, batch.size, version + 1)


def batch_rows(batch: Batch, rows: slice) -> Batch:
    """The micro-batch ``rows`` of ``batch``."""
    return Batch(batch.planes[rows], batch.mask[rows], batch.target[rows], batch.wdl_target[rows], batch.rows[rows])
