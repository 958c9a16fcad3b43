"""The RL-only math of prior-directed exploration (paper Sections 2.1-2.3, Appendices A, E).

The policy math every layer needs (masked log-softmax, entropy, the KLs, the tempered μ, WDL
entropy, score, flip, ``TAU_MIN``) lives in :mod:`pdx_lightning.chesscore.policy` and the result codes
in :mod:`pdx_lightning.chesscore.rules`; import them from there. This module keeps the RL-only math:
ρ (Eq. 12), p̂ (App. E), the value loss (Eq. 15), the exploration term R and the PDX loss (Eq. 7).

Conventions used by every function here:

* Policies are ``(B, P)`` tensors over the ``P = moves.POLICY_SIZE`` slots with a
  bool ``mask`` ``(B, P)`` that is True on legal moves. Log-probabilities are
  ``-inf`` on illegal moves, and every sum runs over legal moves only.
* ``0·log 0 = 0`` is handled with ``torch.where`` on both the value and its
  argument (the "double where"), so no epsilon changes a value and no NaN leaks
  into a gradient from a masked-out branch.
* WDL vectors are ``(..., 3)`` ordered (W, D, L) from the view of the side to
  move in the position they evaluate.
* Terminal results are int64 codes ``(B,)``: ``RESULT_NONE`` (-1) when s' is not
  terminal, else the WDL index (``WIN``/``DRAW``/``LOSS``) of the game's result
  from the view of the player who moved at s (so a mating move is ``WIN``).

Stop-gradient constants (ρ, A, p̂, π_base) are detached inside :func:`pdx_loss`, the one loss function.

Mixed precision (``--trainer.precision bf16-mixed``): every function here computes in, and
returns, at least float32 (``at_least_float32``): bfloat16 logits are upcast before the
log-softmax over the legal moves, the KLs, τ, the WDL entropy, ρ and the advantage.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

from pdx_lightning.chesscore.policy import (
    PolicyInputError,
    at_least_float32,
    bad_rows,
    check_wdl,
    entropy,
    flip_wdl,
    forward_kl,
    reverse_kl,
)
from pdx_lightning.chesscore.rules import LOSS, RESULT_NONE

__all__ = [
    "EXPLORATION_TERMS",
    "ObjectiveInputError",
    "PDXLoss",
    "UnknownExplorationTerm",
    "base_wdl_kl",
    "exploration_term",
    "importance_weight",
    "pdx_loss",
    "value_loss",
    "value_target",
]

EXPLORATION_TERMS: tuple[str, ...] = ("none", "entropy", "reverse_kl", "forward_kl")

ObjectiveInputError = PolicyInputError  # a tensor that violates an objective's contract (says which rows)


class UnknownExplorationTerm(ValueError):
    """An exploration-term name outside ``EXPLORATION_TERMS``."""


def importance_weight(log_pi_a: torch.Tensor, log_mu_a: torch.Tensor, cap: float = 1.0) -> torch.Tensor:
    """ρ(s,a) = min(cap, π_θ(a|s)/μ(a|s)), Eq. 12 (V-trace truncation, cap 1), in log domain."""
    if not cap > 0:
        raise ValueError(f"importance-weight cap must be > 0, got {cap}")
    return (at_least_float32(log_pi_a) - at_least_float32(log_mu_a)).clamp(max=math.log(cap)).exp()


def value_target(wdl_ema_next: torch.Tensor, terminal_result: torch.Tensor) -> torch.Tensor:
    """p̂(s) = flip(p_θ̄(s')), or the one-hot true result when s' is terminal (App. E, Alg. 1 l.10).

    ``terminal_result`` is int (B,): ``RESULT_NONE`` (-1) for a live s', else
    ``WIN``/``DRAW``/``LOSS`` from the view of the player who moved at s. Rows
    of ``wdl_ema_next`` for terminal s' are ignored. Returns (B, 3).
    """
    check_wdl(wdl_ema_next)
    wdl_ema_next = at_least_float32(wdl_ema_next)
    bad = (terminal_result < RESULT_NONE) | (terminal_result > LOSS)
    if bad.any():
        raise ObjectiveInputError(f"terminal_result rows {bad_rows(bad)} not in {{-1, 0, 1, 2}}")
    terminal = terminal_result != RESULT_NONE  # (B,)
    one_hot = F.one_hot(terminal_result.clamp(min=0).long(), 3).to(wdl_ema_next.dtype)  # (B, 3)
    return torch.where(terminal[:, None], one_hot, flip_wdl(wdl_ema_next))


def value_loss(wdl_logits: torch.Tensor, target: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """L_V = −E[ρ(s,a) Σ_o p̂^o(s) log p_θ^o(s)], Eq. 15 (ρ-weighted CE), mean over batch."""
    check_wdl(wdl_logits)
    log_p = torch.log_softmax(at_least_float32(wdl_logits), dim=-1)
    ce = -(at_least_float32(target) * log_p).sum(dim=-1)  # (B,)
    return (at_least_float32(rho) * ce).mean()


def exploration_term(
    exploration: str, log_p_theta: torch.Tensor, log_p_base: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """R(π_θ, π_base) per state, (B,): the penalty β weights in Eq. 7.

    ``forward_kl`` = D_KL(π_base‖π_θ) (Eq. 2, ours); ``reverse_kl`` =
    D_KL(π_θ‖π_base) (the RLHF anchor); ``entropy`` = −H(π_θ) (Eq. 1's bonus as a
    penalty); ``none`` = 0. Another name is an :class:`UnknownExplorationTerm`.
    """
    log_p_theta = at_least_float32(log_p_theta)
    if exploration == "none":
        return log_p_theta.new_zeros(log_p_theta.shape[0])
    if exploration == "entropy":
        return -entropy(log_p_theta, mask)
    if exploration == "reverse_kl":
        return reverse_kl(log_p_theta, log_p_base, mask)
    if exploration == "forward_kl":
        return forward_kl(log_p_base, log_p_theta, mask)
    raise UnknownExplorationTerm(
        f"unknown exploration term {exploration!r}; valid terms: {', '.join(EXPLORATION_TERMS)}"
    )


def base_wdl_kl(wdl_logits: torch.Tensor, wdl_base: torch.Tensor, *, reverse: bool = False) -> torch.Tensor:
    """R_V(s) = D_KL(p_base(s) ‖ p_θ(s)) = Σ_o p_base^o(s) log(p_base^o(s)/p_θ^o(s)) per state, (B,).

    The base-WDL anchor of the paper's public reference implementation, **not in Eq. 7**: that
    code adds c_v·w·E_s[R_V] to the loss (its w = ``value_anchor`` = 0.1 by default, i.e. 0.02·KL at
    c_v = 0.2). p_θ = softmax(``wdl_logits``) (B, 3) is the online value head at s (with grad);
    ``wdl_base`` (B, 3) holds the frozen base's WDL probabilities p_base at s, a constant (detached
    here). ``reverse=True`` gives D_KL(p_θ ‖ p_base), the direction the reference code takes with its
    reverse-KL exploration arm. Unweighted by ρ, as there.
    """
    check_wdl(wdl_logits)
    check_wdl(wdl_base)
    log_p_theta = torch.log_softmax(at_least_float32(wdl_logits), dim=-1)  # (B, 3)
    log_p_base = at_least_float32(wdl_base.detach()).log()  # (B, 3), -inf where p = 0
    every = torch.ones_like(log_p_theta, dtype=torch.bool)  # all three outcomes count
    if reverse:
        return reverse_kl(log_p_theta, log_p_base, every)
    return forward_kl(log_p_base, log_p_theta, every)


class PDXLoss(NamedTuple):
    """Scalar components; total = policy + β·explore + c_v·value + c_v·w·anchor (the last three unweighted).

    ``anchor`` is E_s[R_V] of :func:`base_wdl_kl` (0 unless its weight w > 0: Eq. 7 has none).
    """

    total: torch.Tensor
    policy: torch.Tensor
    explore: torch.Tensor
    value: torch.Tensor
    anchor: torch.Tensor


def pdx_loss(
    log_p_theta: torch.Tensor,
    wdl_logits: torch.Tensor,
    mask: torch.Tensor,
    action: torch.Tensor,
    rho: torch.Tensor,
    advantage: torch.Tensor,
    wdl_target: torch.Tensor,
    log_p_base: torch.Tensor,
    *,
    exploration: str = "forward_kl",
    beta: float,
    c_v: float,
    wdl_base: torch.Tensor | None = None,
    value_anchor: float = 0.0,
) -> PDXLoss:
    """L(θ) = −E[ρ·A·log π_θ(a|s)] + β·E_s[R(π_θ, π_base)] + c_v·L_V(θ) [+ c_v·w·E_s[R_V]], Eqs. 7, 14.

    ``log_p_theta`` (B, P) is the online network's masked log-policy at s, with gradient
    (``chesscore.policy.masked_log_softmax(policy_logits, mask)``: the step computes it once and also
    samples from it); ``wdl_logits`` (B, 3) its WDL logits at s; ``action`` (B,) int policy slots of a;
    ``rho``, ``advantage`` (B,), ``wdl_target`` p̂ (B, 3) and ``log_p_base`` (B, P) are stop-gradient
    constants and are detached here. The bracketed term is the reference code's base-WDL anchor
    (:func:`base_wdl_kl`, weight w = ``value_anchor``, 0 = off = Eq. 7); it needs ``wdl_base`` (B, 3),
    p_base at s. Its direction follows the exploration term as in that code: reverse KL with
    ``reverse_kl``, forward KL otherwise. The settings are taken as given: their owner,
    :class:`~pdx_lightning.rl.settings.PDXSettings`, checks them once, when it is made.
    """
    if value_anchor > 0 and wdl_base is None:
        raise ValueError("value_anchor > 0 needs wdl_base, the base's WDL probabilities at s")
    log_p_theta = at_least_float32(log_p_theta)
    rho, advantage = at_least_float32(rho.detach()), at_least_float32(advantage.detach())
    wdl_target, log_p_base = wdl_target.detach(), at_least_float32(log_p_base.detach())
    log_pi_a = log_p_theta.gather(1, action.long()[:, None]).squeeze(1)  # (B,)
    if not bool(torch.isfinite(log_pi_a).all()):
        raise ObjectiveInputError(f"rows {bad_rows(~torch.isfinite(log_pi_a))}: action is illegal")
    policy = -(rho * advantage * log_pi_a).mean()
    explore = exploration_term(exploration, log_p_theta, log_p_base, mask).mean()
    value = value_loss(wdl_logits, wdl_target, rho)
    total = policy + beta * explore + c_v * value
    if value_anchor > 0 and wdl_base is not None:  # (None with value_anchor > 0 was refused above)
        anchor = base_wdl_kl(wdl_logits, wdl_base, reverse=exploration == "reverse_kl").mean()
        total = total + c_v * value_anchor * anchor
    else:  # off (Eq. 7): not computed, so the default loss is exactly the paper's
        anchor = policy.new_zeros(())
    return PDXLoss(total, policy, explore, value, anchor)
