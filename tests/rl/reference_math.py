"""Reference forms of two identities the tests check the package's math against (not package API).

* :func:`td_advantage`: Eq. 4 written as the one-step TD residual A = (1 − v_θ̄(s')) − v_θ(s); the step
  computes it as score(p̂) − v_θ(s) (``rl.pdx_step.collect``), equal since score(flip(p)) = 1 − score(p).
* :func:`ppo_clipped_surrogate`: Eq. 13's clipped surrogate; with one update per batch its gradient is
  that of Eq. 14's −E[ρ·A·log π_θ] (Appendix E), which ``rl.objectives.pdx_loss`` implements.
"""

from __future__ import annotations

import torch

from pdx_lightning.chesscore.policy import at_least_float32


def td_advantage(v_ema_next: torch.Tensor, v_theta: torch.Tensor) -> torch.Tensor:
    """A(s,a) = (1 − v_θ̄(s')) − v_θ(s), Eq. 4. Returns (B,); for a terminal s' pass 1 − score(result)."""
    return (1.0 - at_least_float32(v_ema_next)) - at_least_float32(v_theta)


def ppo_clipped_surrogate(
    log_pi: torch.Tensor, log_pi_old: torch.Tensor, adv: torch.Tensor, eps: float = 0.2
) -> torch.Tensor:
    """−L^PPO = −E[min(r·Â, clip(r, 1−ε, 1+ε)·Â)], r = π_θ/π_θold, Eq. 13, as a loss."""
    ratio = (at_least_float32(log_pi) - at_least_float32(log_pi_old)).exp()  # r(θ), (B,)
    return -torch.minimum(ratio * adv, ratio.clamp(1.0 - eps, 1.0 + eps) * adv).mean()
