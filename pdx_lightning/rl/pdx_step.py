"""One PDX training step, paper Algorithm 1 lines 6–15, read top to bottom.

:func:`pdx_step` is ``PDXModule.training_step``'s body: per micro-batch of games, the online pass
at s (line 6), then :func:`collect` (lines 7–12: τ, μ, a, ρ, s', p̂, A, in the order of the
algorithm; the dataset only plays the moves and evaluates the EMA at s'), then the loss of Eq. 7 and
its backward; after the last micro-batch the optimizer step (line 14). The EMA update (line 15,
Eq. 11, ``runtime.optim.ema_update``) runs in the ``EMAUpdate`` callback the module registers, as
soon as this function returns: there it keeps its place among Lightning's per-step hooks (after the
user's callbacks, before the step's checkpoint), and registering a callback keeps Lightning's
checkpoint-callbacks-last ordering, which the CLI's log-continuity callback relies on.

:func:`collect` is its own function because the tests drive it with hand-made online outputs (a
forced move, a uniform policy); the step calls it exactly once per micro-batch.

Random numbers: one uniform per game of the micro-batch on the dataset's generator (Eq. 6,
``SelfPlayDataset.sample``), then whatever the restarts of finished games draw
(``SelfPlayDataset.end_games``), in game order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from pdx_lightning.chesscore.policy import gather_legal, legal_valid
from pdx_lightning.rl.guards import check_finite, check_finite_gradients
from pdx_lightning.rl.objectives import (RESULT_NONE, at_least_float32, entropy, forward_kl, importance_weight,
                                         masked_log_softmax, pdx_loss_from_log_probs, reverse_kl, score,
                                         value_target, wdl_entropy)
from pdx_lightning.rl.selfplay import PendingBatch, SelfPlayDataset, SelfPlayError

if TYPE_CHECKING:
    from pdx_lightning.rl.module import PDXModule


@dataclass
class Completion:
    """What :func:`collect` makes of one micro-batch (all stop-gradient, on the networks' device)."""

    action: torch.Tensor      # (b,) int64 policy slot of a
    rho: torch.Tensor         # (b,) ρ = min(1, π_θ(a|s)/μ(a|s))
    advantage: torch.Tensor   # (b,) A = score(p̂) − v_θ(s) = (1 − v_ema(s')) − v_θ(s)
    target: torch.Tensor      # (b, 3) p̂ = flip(p_ema(s')) or the true result
    terminal: torch.Tensor    # (b,) bool, s' ended the game
    tau: torch.Tensor         # (b,) τ(s) that tempered μ


@dataclass
class StepResult:
    """What one :func:`pdx_step` hands to the module's logging."""

    sums: dict[str, float]    # loss terms and policy metrics, averaged over the micro-batches
    rho: torch.Tensor         # (n,) ρ of every transition
    advantage: torch.Tensor   # (n,) A of every transition
    tau: torch.Tensor         # (n,) τ(s) of every transition
    size: int                 # n, transitions (games) this rank stepped


def check_fresh(batch: PendingBatch, version: int) -> None:
    """Zero staleness: ``batch`` must be completed at the parameter version that began it."""
    if batch.version != version:
        raise SelfPlayError(f"stale batch: begun at parameter version {batch.version}, completed at {version}")


def collect(dataset: SelfPlayDataset, batch: PendingBatch, games: slice, log_p_theta: torch.Tensor,
            v_theta: torch.Tensor, wdl_theta: torch.Tensor | None = None) -> Completion:
    """Algorithm 1 lines 7–12 for the micro-batch ``games`` of ``batch``: sample, play, bootstrap.

    ``log_p_theta`` (b, P) and ``v_theta`` (b,) are the online network's masked log-policy and
    score at s (detached here); ``wdl_theta`` (b, 3) its WDL probabilities, needed only when
    τ(s) = H(p_θ(s)) (``temperature_wdl_source="online"``). Everything stays on their device except
    the sampled policy slots, which go to the games.
    Raises :class:`SelfPlayError` if the parameters moved since the batch was begun.
    """
    check_fresh(batch, dataset.networks.version())
    logp, v_theta = log_p_theta.detach(), v_theta.detach()
    idx = range(batch.size)[games]
    # Eq. 5, τ(s) = H(p_θ̄(s)): from the EMA's WDL when the batch was begun (τ ≡ 1 in the fixed arm),
    # or here from the online WDL (temperature_wdl_source="online")
    if batch.tau is not None:
        tau = batch.tau[games]
    elif wdl_theta is None:
        raise SelfPlayError("temperature_wdl_source='online' needs the online WDL at s: "
                            "pass wdl_theta to collect()")
    else:
        tau = wdl_entropy(wdl_theta.detach())                                           # (b,)
    # Eq. 6: μ ∝ π_θ^{1/τ(s)} over the legal moves and a ~ μ (the compact legal layout, one uniform per row)
    action, log_pi_a, log_mu_a = dataset.sample(logp, batch.legal[games], batch.legal_count[games], tau)
    rho = importance_weight(log_pi_a, log_mu_a)                     # Eq. 12: ρ = min(1, π_θ/μ)
    results = dataset.play(idx, action)                             # line 8: s' = T(s, a), results (CPU)
    wdl_next = dataset.successor_wdl(idx, results)                  # line 8: p_θ̄(s'), the EMA pass
    terminal_result = results.to(wdl_next.device)
    target = value_target(wdl_next, terminal_result)  # App. E (line 10): p̂ = flip(p_θ̄(s')) or the result
    advantage = score(target) - v_theta            # Eq. 4: A = (1 − v_θ̄(s')) − v_θ(s) = score(p̂) − v_θ(s)
    dataset.end_games(idx, results)                                 # line 12: finished games restart
    return Completion(action, rho, advantage, target, terminal_result != RESULT_NONE, tau)


def pdx_step(module: PDXModule, batch: PendingBatch) -> StepResult:
    """Algorithm 1 lines 6–15 on this step's ``batch``: one ply of every game and one AdamW step."""
    online, hp, step, device = module.online, module.hparams, module.global_step, module.device
    beta = module.beta  # β of Eq. 7: hparams.beta, or what a BetaSchedule callback set for this step
    opt, sched = module.optimizers(), module.lr_schedulers()
    opt.zero_grad()
    n, mb = batch.size, module.dataset.cfg.micro_batch
    sums: dict[str, float] = {}
    rhos, advs, taus = [], [], []
    for start in range(0, n, mb):
        games = slice(start, min(n, start + mb))
        # line 6: π_θ(·|s) and v_θ(s), with gradient (π_base(·|s) came with the batch)
        x, mask = batch.x[games].to(device), batch.mask[games].to(device)
        out = online(x)  # bfloat16 logits under bf16-mixed: the math below upcasts to float32
        log_p_base = batch.log_p_base[games].to(device)
        legal = batch.legal[games].to(device)
        valid = legal_valid(legal, batch.legal_count[games])
        # the inputs on the legal moves (the compact layout: ≤ 218 columns, not 4,288)
        check_finite(step, {"online policy logits (π_θ)": (out.policy.gather(1, legal), valid),
                            "online WDL logits (p_θ)": out.wdl,
                            "π_base log-probabilities": (log_p_base.gather(1, legal), valid),
                            **({} if batch.tau is None else {"τ(s) from the EMA's WDL": batch.tau[games]})})
        log_p = masked_log_softmax(out.policy, mask)  # log π_θ once: it samples a, enters the loss and metrics
        wdl_theta = torch.softmax(at_least_float32(out.wdl), dim=-1)                        # (b, 3)
        # p_θ(s) goes along only when τ(s) comes from it (temperature_wdl_source="online")
        online_tau = () if batch.tau is not None else (wdl_theta,)
        # lines 7–12 (collect, above): Eq. 5 τ, Eq. 6 μ and a, Eq. 12 ρ, s' and p_θ̄(s'), App. E p̂, Eq. 4 A
        done = collect(module.dataset, batch, games, log_p, score(wdl_theta), *online_tau)
        check_finite(step, {"advantage A": done.advantage, "importance weight ρ": done.rho,
                            "value target p̂": done.target})
        # Eq. 7: −E[ρ·A·log π_θ(a|s)] + β·E[R(π_θ, π_base)] + c_v·L_V (+ the optional base-WDL anchor)
        loss = pdx_loss_from_log_probs(log_p, out.wdl, mask, action=done.action.to(device),
                                       rho=done.rho.to(device), advantage=done.advantage.to(device),
                                       wdl_target=done.target.to(device), log_p_base=log_p_base,
                                       kind=hp.exploration, beta=beta, c_v=hp.c_v,
                                       wdl_base=batch.wdl_base[games].to(device),
                                       value_anchor_weight=hp.value_anchor)
        check_finite(step, {f"loss/{name}": value for name, value in loss._asdict().items()})
        frac = (games.stop - games.start) / n
        module.manual_backward(loss.total * frac)  # gradients accumulate over the micro-batches
        terms = loss._asdict()
        if not hp.value_anchor:  # off: Eq. 7's terms only, as the runs before the option logged
            del terms["anchor"]
        metrics = {**{"loss/" + k: v for k, v in terms.items()},
                   **policy_metrics(gather_legal(log_p, legal, valid), gather_legal(log_p_base, legal, valid), valid)}
        for name, value in metrics.items():
            sums[name] = sums.get(name, 0.0) + float(value.detach()) * frac
        rhos.append(done.rho)
        advs.append(done.advantage)
        taus.append(done.tau)
    # line 14: one optimizer step on θ (clips first when grad_clip_norm is set: on_before_optimizer_step)
    check_finite_gradients(step, online)
    opt.step()
    sched.step()
    module.param_version += 1
    # line 15, Eq. 11: θ̄ ← αθ̄ + (1−α)θ (α = hparams.ema_decay) is runtime.optim.ema_update, run by the
    # EMAUpdate callback PDXModule registers (configure_callbacks) as soon as this step returns, before
    # any checkpoint of the step is written and before the next batch is begun.
    return StepResult(sums, torch.cat(rhos), torch.cat(advs), torch.cat(taus), n)


@torch.no_grad()
def policy_metrics(log_p_theta: torch.Tensor, log_p_base: torch.Tensor, mask: torch.Tensor) -> dict:
    """The logged KLs to the base and the policy entropy, mean over the micro-batch (no gradient); any
    layout with its mask (the step passes the compact legal one, ``gather_legal``)."""
    lp = log_p_theta.detach()
    return {"kl/forward_to_base": forward_kl(log_p_base, lp, mask).mean(),
            "kl/reverse_to_base": reverse_kl(lp, log_p_base, mask).mean(),
            "policy/entropy": entropy(lp, mask).mean()}
