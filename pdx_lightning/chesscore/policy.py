"""Policy and value math over the legal moves (paper Sections 2.1-2.3, Eqs. 1, 2, 5, 6, 10).

The functions every layer needs to read a network's outputs: self-play and the
loss (``rl``), the arena, evaluation tools and the UCI engine. The RL-only math
(advantage, value target, importance weight, the PDX loss) stays in
``pdx_lightning.rl.objectives``, which re-exports everything here.

Conventions:

* Policies are ``(B, P)`` tensors over the ``P = moves.POLICY_SIZE`` slots with a
  bool ``mask`` ``(B, P)`` that is True on legal moves. Log-probabilities are
  ``-inf`` on illegal moves, and every sum runs over legal moves only.
* ``0·log 0 = 0`` is handled with ``torch.where`` on both the value and its
  argument (the "double where"), so no epsilon changes a value and no NaN leaks
  into a gradient from a masked-out branch.
* WDL vectors are ``(..., 3)`` ordered (W, D, L) from the view of the side to
  move in the position they evaluate (indices ``rules.WIN``, ``DRAW``, ``LOSS``).
* Mixed precision: every function here computes and returns at least float32
  (:func:`at_least_float32`). Under ``--trainer.precision bf16-mixed`` the networks'
  logits arrive in bfloat16 (8 significant bits: a logit near 8 is rounded by up to 0.03);
  the log-softmax over the legal moves, the KLs, the entropies, τ and the score
  are then still float32 sums (float64 inputs stay float64).
"""

from __future__ import annotations

import torch

from pdx_lightning.chesscore.rules import DRAW, WIN

# τ below this is treated as exactly 0 (μ = one-hot argmax). Dividing log π by
# a tiny τ overflows (1/τ is inf in float32 below ~3e-39, and 0/0 at the argmax
# gives NaN), so a threshold is needed; 1e-6 is far from overflow (|log π|/τ is
# at most ~8.4e6 for the argmax, since max π ≥ 1/4288) and changes nothing that
# matters: at τ = 1e-6, μ already gives a move e^-100 of the argmax's mass unless
# π's differ by < 0.01 %, and τ = 1e-6 means 1 − p^W ≈ 6e-8, float32's resolution
# at 1. (Half-precision inputs are upcast to float32 before dividing.)
TAU_MIN = 1e-6


class PolicyInputError(ValueError):
    """A tensor that violates a policy function's contract (says which rows).

    ``pdx_lightning.rl.objectives.ObjectiveInputError`` is this class.
    """


def at_least_float32(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 if it is a lower-precision float (bfloat16, float16, or an integer/bool), else as is
    (float32 and float64 unchanged; no copy). The objectives' math runs in this dtype."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def bad_rows(bad: torch.Tensor) -> list[int]:
    """The first (up to 8) row indices where the bool ``bad`` is True, for error messages."""
    return bad.nonzero().flatten()[:8].tolist()


def check_policy(x: torch.Tensor, mask: torch.Tensor) -> None:
    """Raise :class:`PolicyInputError` unless ``x`` is ``(B, P)`` with a matching bool mask and
    every row has a legal move."""
    if mask.dtype != torch.bool or x.shape != mask.shape or x.dim() != 2:
        raise PolicyInputError(
            f"expected (B, P) tensor and bool mask of the same shape, got {tuple(x.shape)} "
            f"and {tuple(mask.shape)} {mask.dtype}"
        )
    empty = ~mask.any(dim=1)
    if empty.any():
        raise PolicyInputError(f"rows {bad_rows(empty)} have no legal move")


def check_wdl(wdl: torch.Tensor) -> None:
    """Raise :class:`PolicyInputError` unless the last dim is 3 (W, D, L)."""
    if wdl.shape[-1] != 3:
        raise PolicyInputError(f"WDL tensors end in a dim of 3 (W, D, L), got {tuple(wdl.shape)}")


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log π(·|s) over legal moves: the policy softmax of Sec. 2.1 restricted to 𝒜(s).

    Illegal slots get exactly -inf (probability 0); legal ones normalize to 1. Computed in at least
    float32 (bfloat16 logits of a bf16-mixed step are upcast first).
    """
    check_policy(logits, mask)
    return torch.log_softmax(at_least_float32(logits).masked_fill(~mask, float("-inf")), dim=-1)  # (B, P)


def _sum_p_log_ratio(log_p: torch.Tensor, log_q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ_{a∈𝒜(s), p(a)>0} p(a)·(log p(a) − log q(a)), 0·log 0 = 0 by double where; in ≥ float32."""
    work = torch.promote_types(torch.promote_types(log_p.dtype, log_q.dtype), torch.float32)
    log_p, log_q = log_p.to(work), log_q.to(work)
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


def wdl_entropy(wdl_probs: torch.Tensor) -> torch.Tensor:
    """τ(s) = H(p(s)) = −Σ_{o∈{W,D,L}} p^o ln p^o ∈ [0, ln 3] nats, Eq. 5. Returns (B,)."""
    check_wdl(wdl_probs)
    wdl_probs = at_least_float32(wdl_probs)
    pos = ~(wdl_probs <= 0)  # True for NaN too: a NaN WDL gives a NaN τ (caught), never a silent τ = 0
    p_s = torch.where(pos, wdl_probs, torch.ones_like(wdl_probs))
    return -torch.where(pos, p_s * p_s.log(), torch.zeros_like(wdl_probs)).sum(dim=-1)


def play_temperature(wdl_probs: torch.Tensor, temperature: str | float) -> torch.Tensor:
    """τ(s) (B,) of the play distribution μ ∝ π^{1/τ}: H(p(s)) of the WDL probabilities ``wdl_probs`` (B, 3)
    for ``"adaptive"`` (Eq. 5), else the fixed ``temperature`` on every row. The one place a player, an
    engine or the step chooses τ."""
    if temperature == "adaptive":
        return wdl_entropy(wdl_probs)
    return torch.full((wdl_probs.shape[0],), float(temperature), device=wdl_probs.device)


def score(wdl_probs: torch.Tensor) -> torch.Tensor:
    """v(s) = p^W(s) + p^D(s)/2 ∈ [0, 1], Eq. 10 (the scalar of Sec. 2.3). Returns (B,), ≥ float32."""
    check_wdl(wdl_probs)
    wdl_probs = at_least_float32(wdl_probs)
    return wdl_probs[..., WIN] + 0.5 * wdl_probs[..., DRAW]


def flip_wdl(wdl: torch.Tensor) -> torch.Tensor:
    """flip(p) = (p^L, p^D, p^W): the opponent's WDL seen by the mover (Appendix A)."""
    check_wdl(wdl)
    return wdl.flip(-1)


def tempered_log_probs(log_p_theta: torch.Tensor, mask: torch.Tensor, tau: torch.Tensor | float) -> torch.Tensor:
    """log μ(·|s) with μ(a|s) ∝ π_θ(a|s)^{1/τ(s)} over a ∈ 𝒜(s), Eq. 6. Returns (B, P).

    ``tau`` is (B,) (or a scalar); rows with τ ≤ ``TAU_MIN`` get the limit
    τ → 0: one-hot on argmax_a π_θ (first index on ties), log μ = 0 there and
    -inf elsewhere. Computed in at least float32; gradients stay finite.
    """
    check_policy(log_p_theta, mask)
    log_p = at_least_float32(log_p_theta)
    work = log_p.dtype
    tau = torch.as_tensor(tau, dtype=work, device=log_p.device).expand(log_p.shape[0])  # (B,)
    if not bool((tau >= 0).all()):  # also catches NaN
        raise PolicyInputError(f"rows {bad_rows(~(tau >= 0))} have τ < 0 or NaN")
    zero = tau <= TAU_MIN  # (B,)
    tau_safe = torch.where(zero, torch.ones_like(tau), tau)  # no 1/0 even in the unused branch
    tempered = masked_log_softmax(log_p / tau_safe[:, None], mask)  # (B, P)
    best = torch.where(mask, log_p, float("-inf")).argmax(dim=-1, keepdim=True)  # (B, 1)
    one_hot = torch.zeros_like(mask).scatter_(1, best, True)  # (B, P)
    greedy = torch.where(one_hot, 0.0, float("-inf")).to(work)
    return torch.where(zero[:, None], greedy, tempered)


# ---------------------------------------------------------------- the compact legal layout


def legal_valid(legal: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """``(B, L)`` bool: True on the first ``count[b]`` columns of the legal-index tensor ``legal``."""
    return torch.arange(legal.shape[1], device=legal.device)[None, :] < count.to(legal.device)[:, None]


def gather_legal(values: torch.Tensor, legal: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``values`` (B, P) at each row's legal policy indices ``legal`` (B, L): ``(B, L)``, ``-inf`` where
    ``valid`` is False (the padding). The compact layout of sampling, ρ and the logged KLs: every sum
    over the legal moves is a sum over these ``L`` (≤ 218) columns instead of 4,288."""
    return values.gather(1, legal).masked_fill(~valid, float("-inf"))


def sample_legal(log_mu: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Column drawn from μ = exp(``log_mu``) (B, L) by inversion of its CDF with one uniform ``u`` (B,) in
    [0, 1) per row: the first column whose cumulative mass exceeds ``u`` × total (Eq. 6's a ~ μ). Zero-mass
    columns (the padding, −inf) are never drawn; one uniform per row, so the draws do not depend on L."""
    p = at_least_float32(log_mu).exp()
    cdf = p.cumsum(dim=1)
    col = torch.searchsorted(cdf, (u.to(cdf) * cdf[:, -1])[:, None], right=True).squeeze(1)
    # float rounding can put u·total at or above the last step: take the last column with mass then
    last = torch.where(p > 0, torch.arange(p.shape[1], device=p.device), -1).amax(dim=1)
    return torch.minimum(col, last)
