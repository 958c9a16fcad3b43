"""Pure math of prior-directed exploration (paper Sections 2.1-2.3, Appendices A, E).

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

Stop-gradient constants (ρ, A, p̂, π_base) are detached inside ``pdx_loss``.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F

WIN, DRAW, LOSS = 0, 1, 2
RESULT_NONE = -1
EXPLORATION_TERMS: tuple[str, ...] = ("none", "entropy", "reverse_kl", "forward_kl")

# τ below this is treated as exactly 0 (μ = one-hot argmax). Dividing log π by
# a tiny τ overflows (1/τ is inf in float32 below ~3e-39, and 0/0 at the argmax
# gives NaN), so a threshold is needed; 1e-6 is far from overflow (|log π|/τ is
# at most ~8.4e6 for the argmax, since max π ≥ 1/4288) and changes nothing that
# matters: at τ = 1e-6, μ already gives a move e^-100 of the argmax's mass unless
# π's differ by < 0.01 %, and τ = 1e-6 means 1 − p^W ≈ 6e-8, float32's resolution
# at 1. (Half-precision inputs are upcast to float32 before dividing.)
TAU_MIN = 1e-6


class UnknownExplorationTerm(ValueError):
    """An exploration-term name outside ``EXPLORATION_TERMS``."""


class ObjectiveInputError(ValueError):
    """A tensor that violates an objective's contract (says which rows)."""


def _rows(bad: torch.Tensor) -> list[int]:
    return bad.nonzero().flatten()[:8].tolist()


def _check_policy(x: torch.Tensor, mask: torch.Tensor) -> None:
    if mask.dtype != torch.bool or x.shape != mask.shape or x.dim() != 2:
        raise ObjectiveInputError(
            f"expected (B, P) tensor and bool mask of the same shape, got {tuple(x.shape)} "
            f"and {tuple(mask.shape)} {mask.dtype}")
    empty = ~mask.any(dim=1)
    if empty.any():
        raise ObjectiveInputError(f"rows {_rows(empty)} have no legal move")


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log π(·|s) over legal moves: the policy softmax of Sec. 2.1 restricted to 𝒜(s).

    Illegal slots get exactly -inf (probability 0); legal ones normalize to 1.
    """
    _check_policy(logits, mask)
    return torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)  # (B, P)


def _sum_p_log_ratio(log_p: torch.Tensor, log_q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ_{a∈𝒜(s), p(a)>0} p(a)·(log p(a) − log q(a)), with 0·log 0 = 0 by double where."""
    support = mask & (log_p > float("-inf"))
    log_p_s = torch.where(support, log_p, torch.zeros_like(log_p))
    log_q_s = torch.where(support, log_q, torch.zeros_like(log_q))
    terms = torch.where(support, log_p_s.exp() * (log_p_s - log_q_s), torch.zeros_like(log_p))
    return terms.sum(dim=-1)  # (B,)


def entropy(log_p: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """H(π(·|s)) = −Σ_{a∈𝒜(s)} π(a|s) log π(a|s) in nats, Eq. 1's Ent. Returns (B,)."""
    return -_sum_p_log_ratio(log_p, torch.zeros_like(log_p), mask)


def forward_kl(log_p_base: torch.Tensor, log_p_theta: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """D_KL(π_base ‖ π_θ) = Σ_a π_base(a|s) log(π_base(a|s)/π_θ(a|s)), Eq. 2. Returns (B,).

    Forward (mass-covering, zero-avoiding): infinite when π_θ drops a move the
    prior keeps. (``F.kl_div(input, target)`` would be KL(target‖input).)
    """
    return _sum_p_log_ratio(log_p_base, log_p_theta, mask)


def reverse_kl(log_p_theta: torch.Tensor, log_p_base: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """D_KL(π_θ ‖ π_base), the mode-seeking anchor of Sec. 2.2 (Figure 2). Returns (B,)."""
    return _sum_p_log_ratio(log_p_theta, log_p_base, mask)


def _check_wdl(wdl: torch.Tensor) -> None:
    if wdl.shape[-1] != 3:
        raise ObjectiveInputError(f"WDL tensors end in a dim of 3 (W, D, L), got {tuple(wdl.shape)}")


def wdl_entropy(wdl_probs: torch.Tensor) -> torch.Tensor:
    """τ(s) = H(p(s)) = −Σ_{o∈{W,D,L}} p^o ln p^o ∈ [0, ln 3] nats, Eq. 5. Returns (B,)."""
    _check_wdl(wdl_probs)
    pos = ~(wdl_probs <= 0)  # True for NaN too: a NaN WDL gives a NaN τ (caught), never a silent τ = 0
    p_s = torch.where(pos, wdl_probs, torch.ones_like(wdl_probs))
    return -torch.where(pos, p_s * p_s.log(), torch.zeros_like(wdl_probs)).sum(dim=-1)


def score(wdl_probs: torch.Tensor) -> torch.Tensor:
    """v(s) = p^W(s) + p^D(s)/2 ∈ [0, 1], Eq. 10 (the scalar of Sec. 2.3). Returns (B,)."""
    _check_wdl(wdl_probs)
    return wdl_probs[..., WIN] + 0.5 * wdl_probs[..., DRAW]


def flip_wdl(wdl: torch.Tensor) -> torch.Tensor:
    """flip(p) = (p^L, p^D, p^W): the opponent's WDL seen by the mover (Appendix A)."""
    _check_wdl(wdl)
    return wdl.flip(-1)


def tempered_log_probs(log_p_theta: torch.Tensor, mask: torch.Tensor,
                       tau: torch.Tensor | float) -> torch.Tensor:
    """log μ(·|s) with μ(a|s) ∝ π_θ(a|s)^{1/τ(s)} over a ∈ 𝒜(s), Eq. 6. Returns (B, P).

    ``tau`` is (B,) (or a scalar); rows with τ ≤ ``TAU_MIN`` get the limit
    τ → 0: one-hot on argmax_a π_θ (first index on ties), log μ = 0 there and
    -inf elsewhere. Computed in at least float32; gradients stay finite.
    """
    _check_policy(log_p_theta, mask)
    work = torch.promote_types(log_p_theta.dtype, torch.float32)
    log_p = log_p_theta.to(work)
    tau = torch.as_tensor(tau, dtype=work, device=log_p.device).expand(log_p.shape[0])  # (B,)
    if not bool((tau >= 0).all()):  # also catches NaN
        raise ObjectiveInputError(f"rows {_rows(~(tau >= 0))} have τ < 0 or NaN")
    zero = tau <= TAU_MIN  # (B,)
    tau_safe = torch.where(zero, torch.ones_like(tau), tau)  # no 1/0 even in the unused branch
    tempered = masked_log_softmax(log_p / tau_safe[:, None], mask)  # (B, P)
    best = torch.where(mask, log_p, float("-inf")).argmax(dim=-1, keepdim=True)  # (B, 1)
    one_hot = torch.zeros_like(mask).scatter_(1, best, True)  # (B, P)
    greedy = torch.where(one_hot, 0.0, float("-inf")).to(work)
    return torch.where(zero[:, None], greedy, tempered)


def importance_weight(log_pi_a: torch.Tensor, log_mu_a: torch.Tensor, cap: float = 1.0) -> torch.Tensor:
    """ρ(s,a) = min(cap, π_θ(a|s)/μ(a|s)), Eq. 12 (V-trace truncation, cap 1), in log domain."""
    if not cap > 0:
        raise ValueError(f"importance-weight cap must be > 0, got {cap}")
    return (log_pi_a - log_mu_a).clamp(max=math.log(cap)).exp()


def td_advantage(v_ema_next: torch.Tensor, v_theta: torch.Tensor) -> torch.Tensor:
    """A(s,a) = (1 − v_θ̄(s')) − v_θ(s), Eq. 4 (one-step TD residual). Returns (B,).

    ``v_ema_next`` is the EMA score of s' from its own side to move. For a
    terminal s' pass ``1 − score(result)``; equivalently A = score(p̂) − v_θ(s)
    with p̂ from ``value_target``, since score(flip(p)) = 1 − score(p).
    """
    return (1.0 - v_ema_next) - v_theta


def value_target(wdl_ema_next: torch.Tensor, terminal_result: torch.Tensor) -> torch.Tensor:
    """p̂(s) = flip(p_θ̄(s')), or the one-hot true result when s' is terminal (App. E, Alg. 1 l.10).

    ``terminal_result`` is int (B,): ``RESULT_NONE`` (-1) for a live s', else
    ``WIN``/``DRAW``/``LOSS`` from the view of the player who moved at s. Rows
    of ``wdl_ema_next`` for terminal s' are ignored. Returns (B, 3).
    """
    _check_wdl(wdl_ema_next)
    bad = (terminal_result < RESULT_NONE) | (terminal_result > LOSS)
    if bad.any():
        raise ObjectiveInputError(f"terminal_result rows {_rows(bad)} not in {{-1, 0, 1, 2}}")
    terminal = terminal_result != RESULT_NONE  # (B,)
    one_hot = F.one_hot(terminal_result.clamp(min=0).long(), 3).to(wdl_ema_next.dtype)  # (B, 3)
    return torch.where(terminal[:, None], one_hot, flip_wdl(wdl_ema_next))


def value_loss(wdl_logits: torch.Tensor, target: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """L_V = −E[ρ(s,a) Σ_o p̂^o(s) log p_θ^o(s)], Eq. 15 (ρ-weighted CE), mean over batch."""
    _check_wdl(wdl_logits)
    ce = -(target * torch.log_softmax(wdl_logits, dim=-1)).sum(dim=-1)  # (B,)
    return (rho * ce).mean()


def _check_kind(kind: str) -> None:
    if kind not in EXPLORATION_TERMS:
        raise UnknownExplorationTerm(
            f"unknown exploration term {kind!r}; valid terms: {', '.join(EXPLORATION_TERMS)}")


def exploration_term(kind: str, log_p_theta: torch.Tensor, log_p_base: torch.Tensor,
                     mask: torch.Tensor) -> torch.Tensor:
    """R(π_θ, π_base) per state, (B,): the penalty β weights in Eq. 7.

    ``forward_kl`` = D_KL(π_base‖π_θ) (Eq. 2, ours); ``reverse_kl`` =
    D_KL(π_θ‖π_base) (the RLHF anchor); ``entropy`` = −H(π_θ) (Eq. 1's bonus as a
    penalty); ``none`` = 0.
    """
    _check_kind(kind)
    if kind == "none":
        return log_p_theta.new_zeros(log_p_theta.shape[0])
    if kind == "entropy":
        return -entropy(log_p_theta, mask)
    if kind == "reverse_kl":
        return reverse_kl(log_p_theta, log_p_base, mask)
    return forward_kl(log_p_base, log_p_theta, mask)


class PDXLoss(NamedTuple):
    """Scalar components; total = policy + β·explore + c_v·value (explore, value unweighted)."""

    total: torch.Tensor
    policy: torch.Tensor
    explore: torch.Tensor
    value: torch.Tensor


def pdx_loss(policy_logits: torch.Tensor, wdl_logits: torch.Tensor, mask: torch.Tensor,
             action: torch.Tensor, rho: torch.Tensor, advantage: torch.Tensor,
             wdl_target: torch.Tensor, log_p_base: torch.Tensor, *,
             kind: str = "forward_kl", beta: float, c_v: float) -> PDXLoss:
    """L(θ) = −E[ρ·A·log π_θ(a|s)] + β·E_s[R(π_θ, π_base)] + c_v·L_V(θ), Eqs. 7 and 14.

    ``policy_logits`` (B, P) and ``wdl_logits`` (B, 3) are the online network's
    outputs at s (with grad); ``action`` (B,) int policy slots of a;
    ``rho``, ``advantage`` (B,), ``wdl_target`` p̂ (B, 3) and ``log_p_base``
    (B, P) are stop-gradient constants and are detached here.
    """
    _check_kind(kind)
    if not beta >= 0:
        raise ValueError(f"beta (β, weight of the exploration penalty in Eq. 7) must be >= 0, got {beta}")
    if not c_v >= 0:
        raise ValueError(f"c_v (value-loss weight in Eq. 7) must be >= 0, got {c_v}")
    rho, advantage = rho.detach(), advantage.detach()
    wdl_target, log_p_base = wdl_target.detach(), log_p_base.detach()
    log_p_theta = masked_log_softmax(policy_logits, mask)  # (B, P)
    log_pi_a = log_p_theta.gather(1, action.long()[:, None]).squeeze(1)  # (B,)
    if not bool(torch.isfinite(log_pi_a).all()):
        raise ObjectiveInputError(f"rows {_rows(~torch.isfinite(log_pi_a))}: action is illegal")
    policy = -(rho * advantage * log_pi_a).mean()
    explore = exploration_term(kind, log_p_theta, log_p_base, mask).mean()
    value = value_loss(wdl_logits, wdl_target, rho)
    return PDXLoss(policy + beta * explore + c_v * value, policy, explore, value)


def ppo_clipped_surrogate(log_pi: torch.Tensor, log_pi_old: torch.Tensor, adv: torch.Tensor,
                          eps: float = 0.2) -> torch.Tensor:
    """−L^PPO = −E[min(r·Â, clip(r, 1−ε, 1+ε)·Â)], r = π_θ/π_θold, Eq. 13, as a loss.

    With Â = ρ·A and one update per batch (log_pi_old = log_pi.detach()), r ≡ 1
    and its gradient equals that of Eq. 14's −E[ρ·A·log π_θ] (Appendix E).
    """
    ratio = (log_pi - log_pi_old).exp()  # r(θ), (B,)
    return -torch.minimum(ratio * adv, ratio.clamp(1.0 - eps, 1.0 + eps) * adv).mean()
