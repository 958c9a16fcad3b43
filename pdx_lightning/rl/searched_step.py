"""The loss of searched self-play, per micro-batch: the search's targets, optionally the prior's anchor.

    L = CE(visits, π_θ) + c_v · CE(z, p_θ) + β · KL(π_base ‖ π_θ)

over the legal moves of each position: the policy cross-entropy to the root's visit shares (AlphaZero's
policy target), the WDL cross-entropy to the value target z (the game's result from the side to move,
mixed with the search's root W/D/L by ``value_mix``; the search's W/D/L at the cut for a game cut at the
ply cap), and the forward KL to the frozen base that prior-directed exploration uses as its exploration
term (β = 0: pure searched self-play). Means over the batch.
"""

from __future__ import annotations

import torch

from pdx_lightning.chesscore.policy import entropy, forward_kl, masked_log_softmax
from pdx_lightning.rl.replay import Batch


def searched_loss(
    policy_logits: torch.Tensor,
    wdl_logits: torch.Tensor,
    batch: Batch,
    c_v: float,
    beta: float,
    base_logits: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss (a scalar with gradient) and its parts (detached) for one micro-batch: ``policy_logits``
    (B, POLICY_SIZE) and ``wdl_logits`` (B, 3) of the online network, ``base_logits`` the base's policy
    logits (needed when ``beta`` > 0)."""
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
        assert base_logits is not None  # the module computes them whenever beta > 0
        kl = forward_kl(masked_log_softmax(base_logits.float(), mask), logp, mask)
        total = total + beta * kl.mean()
        parts["loss/kl_base"] = kl.mean().detach()
    parts["loss/total"] = total.detach()
    return total, parts
