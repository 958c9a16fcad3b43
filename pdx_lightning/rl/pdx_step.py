"""One PDX training step, paper Algorithm 1 lines 6–15, in one file, read top to bottom.

Every input is an argument: :func:`pdx_step` receives the online network with its optimizer, schedule
and backward function (:class:`~pdx_lightning.rl.update.Optimization`), the algorithm's settings
(:class:`~pdx_lightning.rl.settings.PDXSettings`), β, the sampler's generator and the games
(:class:`Games`), and returns what changed (:class:`StepResult`: the metrics, the transitions' ρ, A and
τ, and the new parameter version). ``PDXModule.training_step``
only hands them over and logs the result.

Per micro-batch of games: the online pass at s (line 6); τ(s) (:func:`temperature`, Eq. 5: from the EMA's
WDL that came with the batch, or from this pass's online WDL); then :func:`collect` (lines 7–12): μ and
a ~ μ (:func:`sample_action`, Eq. 6), ρ (Eq. 12), s' = T(s, a) and the EMA's p_θ̄(s') (the games), p̂
(App. E) and A (Eq. 4); then the loss of Eq. 7. Around it, :func:`~pdx_lightning.rl.update.optimizer_step`
(shared with searched self-play) back-propagates each micro-batch, checks the gradients, clips them
when ``grad_clip_norm`` is set and takes the optimizer step (line 14).
Line 15, the EMA update θ̄ ← αθ̄ + (1−α)θ (Eq. 11), is the ``EMAUpdate`` callback
(``pdx_lightning.callbacks.EMAUpdate``), which Lightning runs right after this step returns, before the
next batch is begun and before any checkpoint of the step is written; a user's own callback may replace it.

:func:`collect` is its own function because the tests drive it with hand-made online outputs (a
forced move, a uniform policy); the step calls it exactly once per micro-batch.

Random numbers: one uniform per game of the micro-batch on the sampler's generator (Eq. 6), then
whatever the restarts of finished games draw (``Games.end_games``), in game order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import torch

from pdx_lightning.chesscore.policy import (
    at_least_float32,
    entropy,
    forward_kl,
    gather_legal,
    legal_valid,
    masked_log_softmax,
    play_temperature,
    reverse_kl,
    sample_legal,
    score,
    tempered_log_probs,
    wdl_entropy,
)
from pdx_lightning.chesscore.rules import RESULT_NONE
from pdx_lightning.rl.errors import SelfPlayError
from pdx_lightning.rl.guards import check_finite
from pdx_lightning.rl.objectives import importance_weight, pdx_loss, value_target
from pdx_lightning.rl.settings import PDXSettings, TemperatureMode
from pdx_lightning.rl.update import Optimization


# ---- the step's inputs ----------------------------------------------------------------------------
@dataclass
class PendingBatch:
    """Positions s of this step, awaiting the online network's outputs (made by the self-play dataset);
    every tensor on the networks' device."""

    x: torch.Tensor  # (n, 112, 8, 8)
    mask: torch.Tensor  # (n, 4288) bool
    log_p_base: torch.Tensor  # (n, 4288)
    wdl_ema: torch.Tensor | None  # (n, 3) p_θ̄(s), whose entropy is τ(s) (Eq. 5); None: τ from the online pass
    version: int  # the parameter version that began the batch
    wdl_base: torch.Tensor  # (n, 3) p_base(s), for the base-WDL value anchor
    legal: torch.Tensor  # (n, L) int64 sorted legal policy indices, padded with the row's first
    legal_count: torch.Tensor  # (n,) int64 legal moves per row (the valid columns of ``legal``)

    @property
    def size(self) -> int:
        return self.x.shape[0]


class Games(Protocol):
    """What the step asks of the games in flight (``rl.selfplay.SelfPlayDataset``): play, bootstrap, restart."""

    def play(self, games: Iterable[int], actions: torch.Tensor) -> torch.Tensor:
        """s' = T(s, a) for policy slots ``actions`` (b,); the result codes (b,) on the CPU."""
        ...

    def successor_wdl(self, games: Iterable[int], results: torch.Tensor) -> torch.Tensor:
        """p_θ̄(s') (b, 3), the EMA pass at the new positions (rows of ended games carry nothing)."""
        ...

    def end_games(self, games: Iterable[int], results: torch.Tensor) -> None:
        """Record the games that ended (or reached the cap) and restart their slots (line 12)."""
        ...


# ---- Eq. 5 and Eq. 6: the sampling temperature and the behaviour policy ----------------------------
def temperature(wdl: torch.Tensor, mode: TemperatureMode) -> torch.Tensor:
    """τ(s) (b,), Eq. 5: H(p(s)) of the WDL probabilities ``wdl`` (b, 3) in the adaptive arm, 1 in the fixed one."""
    return play_temperature(wdl, "adaptive" if mode == "adaptive" else 1.0)


def sample_action(
    log_p: torch.Tensor, legal: torch.Tensor, count: torch.Tensor, tau: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. 6, a ~ μ ∝ π^{1/τ(s)} over the legal moves, from the masked log-policy ``log_p`` (b, P).

    Returns the policy slots a (b,) and log π(a|s), log μ(a|s) (b,), computed in the compact legal
    layout (``legal`` (b, L) sorted indices, ``count`` (b,) legal moves per row). One uniform per row
    from ``generator`` (a CPU generator, so checkpoints carry it across devices)."""
    valid = legal_valid(legal, count)
    log_p_c = gather_legal(log_p, legal, valid)  # (b, L)
    log_mu_c = tempered_log_probs(log_p_c, valid, tau)  # (b, L)
    u = torch.rand(log_p.shape[0], generator=generator).to(log_p.device, non_blocking=True)
    col = sample_legal(log_mu_c, u)[:, None]
    return legal.gather(1, col).squeeze(1), log_p_c.gather(1, col).squeeze(1), log_mu_c.gather(1, col).squeeze(1)


# ---- lines 7–12 -----------------------------------------------------------------------------------
@dataclass
class Completion:
    """What :func:`collect` makes of one micro-batch (all stop-gradient, on the networks' device)."""

    action: torch.Tensor  # (b,) int64 policy slot of a
    rho: torch.Tensor  # (b,) ρ = min(1, π_θ(a|s)/μ(a|s))
    advantage: torch.Tensor  # (b,) A = score(p̂) − v_θ(s) = (1 − v_ema(s')) − v_θ(s)
    target: torch.Tensor  # (b, 3) p̂ = flip(p_ema(s')) or the true result
    terminal: torch.Tensor  # (b,) bool, s' ended the game
    tau: torch.Tensor  # (b,) τ(s) that tempered μ


def check_fresh(batch: PendingBatch, version: int) -> None:
    """Zero staleness: ``batch`` must be completed at the parameter version that began it."""
    if batch.version != version:
        raise SelfPlayError(f"stale batch: begun at parameter version {batch.version}, completed at {version}")


def collect(
    games: Games,
    batch: PendingBatch,
    rows: slice,
    log_p_theta: torch.Tensor,
    v_theta: torch.Tensor,
    tau: torch.Tensor,
    *,
    generator: torch.Generator,
    version: int,
) -> Completion:
    """Algorithm 1 lines 7–12 for the micro-batch ``rows`` of ``batch``: sample, play, bootstrap.

    ``log_p_theta`` (b, P) and ``v_theta`` (b,) are the online network's masked log-policy and
    score at s (detached here); ``tau`` (b,) is τ(s) of Eq. 5 (:func:`step_temperature`).
    ``generator`` draws a ~ μ; ``version`` is the online parameters' version now. Everything stays on
    the networks' device except the sampled policy slots, which go to the games.
    Raises :class:`SelfPlayError` if the parameters moved since the batch was begun.
    """
    check_fresh(batch, version)
    logp, v_theta, tau = log_p_theta.detach(), v_theta.detach(), tau.detach()
    idx = range(batch.size)[rows]
    # Eq. 6: μ ∝ π_θ^{1/τ(s)} over the legal moves and a ~ μ (the compact legal layout, one uniform per row)
    action, log_pi_a, log_mu_a = sample_action(logp, batch.legal[rows], batch.legal_count[rows], tau, generator)
    rho = importance_weight(log_pi_a, log_mu_a)  # Eq. 12: ρ = min(1, π_θ/μ)
    results = games.play(idx, action)  # line 8: s' = T(s, a), results (CPU)
    wdl_next = games.successor_wdl(idx, results)  # line 8: p_θ̄(s'), the EMA pass
    terminal_result = results.to(wdl_next.device)
    target = value_target(wdl_next, terminal_result)  # App. E (line 10): p̂ = flip(p_θ̄(s')) or the result
    advantage = score(target) - v_theta  # Eq. 4: A = (1 − v_θ̄(s')) − v_θ(s) = score(p̂) − v_θ(s)
    games.end_games(idx, results)  # line 12: finished games restart
    return Completion(action, rho, advantage, target, terminal_result != RESULT_NONE, tau)


def step_temperature(
    batch: PendingBatch, rows: slice, wdl_theta: torch.Tensor | None, settings: PDXSettings
) -> torch.Tensor:
    """τ(s) (b,) of Eq. 5 for the micro-batch ``rows``, the one place the step's τ is computed: the entropy
    of the WDL at s of the EMA (the batch's ``wdl_ema``, the paper) or of the online pass ``wdl_theta``
    (b, 3) when ``settings.tau_from_online``; 1 in the fixed arm."""
    wdl = wdl_theta if settings.tau_from_online else batch.wdl_ema
    assert wdl is not None, "the dataset evaluates the EMA at s unless τ comes from the online pass"
    return temperature((wdl if settings.tau_from_online else wdl[rows]).detach(), settings.temperature)


# ---- lines 6–15 -----------------------------------------------------------------------------------
@dataclass
class StepResult:
    """What one :func:`pdx_step` changed and measured."""

    metrics: dict[str, float]  # loss terms and policy metrics, averaged over the micro-batches
    rho: torch.Tensor  # (n,) ρ of every transition
    advantage: torch.Tensor  # (n,) A of every transition
    tau: torch.Tensor  # (n,) τ(s) of every transition
    size: int  # n, transitions (games) this rank stepped
    version: int  # the online parameters' version after the step (one more than before)


def pdx_step(
    batch: PendingBatch,
    *,
    optimization: Optimization,
    settings: PDXSettings,
    beta: float,
    generator: torch.Generator,
    games: Games,
    version: int,
    step: int,
) -> StepResult:
    """Algorithm 1 lines 6–14 on this step's ``batch``: one ply of every game and one AdamW step (line 15,
    the EMA update, follows as the ``EMAUpdate`` callback).

    ``optimization`` holds θ's network, optimizer and learning-rate schedule and the backward function
    (Lightning's ``manual_backward``: precision and DDP hooks); β weights the exploration term (a
    BetaSchedule may change it per step); ``version`` is the online parameters' version that began
    ``batch``; ``step`` the global step, named in error messages.
    """
    device = batch.x.device
    rhos, advs, taus = [], [], []

    def micro_step(rows: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        # line 6: π_θ(·|s) and v_θ(s), with gradient (π_base(·|s) came with the batch)
        x, mask = batch.x[rows].to(device), batch.mask[rows].to(device)
        out = optimization.online(x)  # bfloat16 logits under bf16-mixed: the math below upcasts to float32
        log_p_base = batch.log_p_base[rows].to(device)
        legal = batch.legal[rows].to(device)
        valid = legal_valid(legal, batch.legal_count[rows])
        # the inputs on the legal moves (the compact layout: ≤ 218 columns, not 4,288)
        check_finite(
            step,
            {
                "online policy logits (π_θ)": (out.policy.gather(1, legal), valid),
                "online WDL logits (p_θ)": out.wdl,
                "π_base log-probabilities": (log_p_base.gather(1, legal), valid),
                **({} if batch.wdl_ema is None else {"EMA WDL p_θ̄(s)": batch.wdl_ema[rows]}),
            },
        )
        log_p = masked_log_softmax(out.policy, mask)  # log π_θ once: it samples a, enters the loss and metrics
        wdl_theta = torch.softmax(at_least_float32(out.wdl), dim=-1)  # (b, 3)
        tau = step_temperature(batch, rows, wdl_theta, settings)  # Eq. 5: τ(s), EMA's or online WDL
        # lines 7–12 (collect, above): Eq. 6 μ and a, Eq. 12 ρ, s' and p_θ̄(s'), App. E p̂, Eq. 4 A
        completion = collect(games, batch, rows, log_p, score(wdl_theta), tau, generator=generator, version=version)
        check_finite(
            step,
            {
                "advantage A": completion.advantage,
                "importance weight ρ": completion.rho,
                "value target p̂": completion.target,
            },
        )
        # Eq. 7: −E[ρ·A·log π_θ(a|s)] + β·E[R(π_θ, π_base)] + c_v·L_V (+ the optional base-WDL anchor)
        loss = pdx_loss(
            log_p,
            out.wdl,
            mask,
            action=completion.action.to(device),
            rho=completion.rho.to(device),
            advantage=completion.advantage.to(device),
            wdl_target=completion.target.to(device),
            log_p_base=log_p_base,
            exploration=settings.exploration,
            beta=beta,
            c_v=settings.c_v,
            wdl_base=batch.wdl_base[rows].to(device),
            value_anchor=settings.value_anchor,
        )
        check_finite(step, {f"loss/{name}": value for name, value in loss._asdict().items()})
        terms = loss._asdict()
        if not settings.value_anchor:  # off: Eq. 7's terms only, as the runs before the option logged
            del terms["anchor"]
        if settings.log_value_kl:  # E[ρ·KL(p̂‖p_θ)] = L_V − E[ρ·H(p̂)], the authors' code's logged value loss
            rho_entropy = (completion.rho.to(device) * wdl_entropy(completion.target.to(device))).mean()
            terms["value_kl"] = loss.value.detach() - rho_entropy
        rhos.append(completion.rho)
        advs.append(completion.advantage)
        taus.append(completion.tau)
        return loss.total, {
            **{"loss/" + k: v.detach() for k, v in terms.items()},
            **policy_metrics(gather_legal(log_p, legal, valid), gather_legal(log_p_base, legal, valid), valid),
        }

    # the micro-batches, the gradient guards and clipping, and line 14: one optimizer step on θ (rl.update)
    metrics = optimization.step(
        batch.size, settings.micro_batch, micro_step, grad_clip_norm=settings.grad_clip_norm, step=step
    )
    # line 15, Eq. 11: θ̄ ← αθ̄ + (1−α)θ is the EMAUpdate callback (callbacks/ema.py), which Lightning runs
    # as soon as this step returns: before the next batch is begun and before the step's checkpoint
    return StepResult(metrics, torch.cat(rhos), torch.cat(advs), torch.cat(taus), batch.size, version + 1)


@torch.no_grad()
def policy_metrics(log_p_theta: torch.Tensor, log_p_base: torch.Tensor, mask: torch.Tensor) -> dict:
    """The logged KLs to the base and the policy entropy, mean over the micro-batch (no gradient); any
    layout with its mask (the step passes the compact legal one, ``gather_legal``)."""
    lp = log_p_theta.detach()
    return {
        "kl/forward_to_base": forward_kl(log_p_base, lp, mask).mean(),
        "kl/reverse_to_base": reverse_kl(lp, log_p_base, mask).mean(),
        "policy/entropy": entropy(lp, mask).mean(),
    }
