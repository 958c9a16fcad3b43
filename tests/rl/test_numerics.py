"""Numerical extremes: τ → 0, a single legal move, β = 1 on every term, one-hot WDL, extreme logits.

No NaN/inf in any loss or gradient (property-tested over extreme inputs), a short version of
``tests/soak_numerics.py`` per arm, and a NaN that appears mid-training stops it with the
step and the tensor named (injected into a gradient, the online weights and the base).
"""

from __future__ import annotations

import math

import lightning as L
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx_lightning.chesscore.policy import (
    TAU_MIN,
    entropy,
    forward_kl,
    masked_log_softmax,
    reverse_kl,
    tempered_log_probs,
    wdl_entropy,
)
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.objectives import (
    EXPLORATION_TERMS,
    ObjectiveInputError,
    importance_weight,
    pdx_loss,
    value_loss,
    value_target,
)
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

torch.set_num_threads(1)
P = 7  # policy slots in the pure-math tests (the objectives work for any P)


# ---------------------------------------------------------------- τ → 0


@pytest.mark.parametrize("tau", [0.0, 1e-45, 1e-30, 1e-7, TAU_MIN])
def test_tau_at_or_below_the_threshold_is_exactly_greedy(tau):
    logits = torch.tensor([[0.3, 2.0, -1.0, 2.0 - 1e-6, 0.0, 5.0, 1.0]])
    mask = torch.tensor([[True, True, True, True, True, False, True]])  # the global max is illegal
    log_mu = tempered_log_probs(masked_log_softmax(logits, mask), mask, torch.tensor([tau]))
    assert log_mu[0, 1] == 0.0 and torch.isinf(log_mu[0, [0, 2, 3, 4, 5, 6]]).all()


@pytest.mark.parametrize("tau", [1.0000001 * TAU_MIN, 1e-5, 1e-3, 0.1, 1.0, math.log(3), 1e6, 1e30, float("inf")])
def test_small_and_huge_tau_stay_finite_on_legal_moves_and_normalized(tau):
    torch.manual_seed(0)
    logits = torch.randn(4, P) * 30
    mask = torch.rand(4, P) < 0.7
    mask[:, 0] = True
    log_mu = tempered_log_probs(masked_log_softmax(logits, mask), mask, torch.full((4,), tau))
    assert torch.isfinite(log_mu[mask]).all() and (log_mu[~mask] == float("-inf")).all()
    torch.testing.assert_close(log_mu.exp().sum(1), torch.ones(4))


def test_nan_or_negative_tau_is_a_named_error():
    lp = masked_log_softmax(torch.zeros(2, P), torch.ones(2, P, dtype=torch.bool))
    for bad in (float("nan"), -1e-9):
        with pytest.raises(ObjectiveInputError, match="τ"):
            tempered_log_probs(lp, torch.ones(2, P, dtype=torch.bool), torch.tensor([0.5, bad]))


def test_one_hot_wdl_gives_tau_exactly_zero_and_a_one_hot_target():
    wdl = torch.eye(3)
    assert (wdl_entropy(wdl) == 0).all()
    t = value_target(wdl, torch.tensor([-1, 0, 2]))
    assert torch.equal(t, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))


# ---------------------------------------------------------------- a single legal move, β = 1 on every term


@pytest.mark.parametrize("kind", EXPLORATION_TERMS)
def test_single_legal_move_beta_one_every_term_is_finite_with_zero_kl(kind):
    mask = torch.zeros(3, P, dtype=torch.bool)
    mask[:, 4] = True
    logits = torch.tensor([[9.0, -9.0, 0.0, 1e4, -1e4, 3.0, 0.0]] * 3, requires_grad=True)
    wdl_logits = torch.tensor([[50.0, -50.0, 0.0], [0.0, 0.0, 0.0], [-1e4, 1e4, 0.0]], requires_grad=True)
    log_p = masked_log_softmax(logits, mask)
    assert (log_p[:, 4] == 0).all()
    for tau in (0.0, 1e-30, 1.0):
        log_mu = tempered_log_probs(log_p.detach(), mask, torch.full((3,), tau))
        assert (log_mu[:, 4] == 0).all()
        assert (importance_weight(log_p[:, 4].detach(), log_mu[:, 4]) == 1).all()
    base = masked_log_softmax(torch.randn(3, P), mask)
    assert (forward_kl(base, log_p, mask) == 0).all() and (reverse_kl(log_p, base, mask) == 0).all()
    assert (entropy(log_p, mask) == 0).all()
    loss = pdx_loss(
        log_p,
        wdl_logits,
        mask,
        torch.full((3,), 4),
        torch.ones(3),
        torch.tensor([1.0, -1.0, 0.5]),
        torch.eye(3),
        base,
        exploration=kind,
        beta=1.0,
        c_v=1.0,
    )
    loss.total.backward()
    assert all(torch.isfinite(v) for v in loss)
    assert torch.isfinite(logits.grad).all() and torch.isfinite(wdl_logits.grad).all()
    assert (logits.grad == 0).all()  # one legal move: the policy has nothing to learn


# ---------------------------------------------------------------- property: extreme inputs, every term, β up to 1

LOGIT = st.one_of(st.floats(-1e4, 1e4, allow_nan=False, width=32), st.sampled_from([0.0, -1e4, 1e4, -88.0, 88.0]))


@st.composite
def loss_inputs(draw):
    b = draw(st.integers(1, 4))
    logits = torch.tensor(draw(st.lists(st.lists(LOGIT, min_size=P, max_size=P), min_size=b, max_size=b)))
    base_logits = torch.tensor(draw(st.lists(st.lists(LOGIT, min_size=P, max_size=P), min_size=b, max_size=b)))
    mask = torch.tensor(draw(st.lists(st.lists(st.booleans(), min_size=P, max_size=P), min_size=b, max_size=b)))
    first = torch.tensor(draw(st.lists(st.integers(0, P - 1), min_size=b, max_size=b)))
    mask[torch.arange(b), first] = True  # at least one legal move
    wdl_logits = torch.tensor(draw(st.lists(st.lists(LOGIT, min_size=3, max_size=3), min_size=b, max_size=b)))
    tau = torch.tensor(
        draw(
            st.lists(
                st.one_of(st.sampled_from([0.0, 1e-30, TAU_MIN, 1e-5, 1.0, math.log(3)]), st.floats(0, 2, width=32)),
                min_size=b,
                max_size=b,
            )
        )
    )
    one_hot = draw(st.booleans())
    results = torch.tensor(draw(st.lists(st.integers(-1, 2), min_size=b, max_size=b)))
    ema_next = (
        torch.eye(3)[torch.tensor(draw(st.lists(st.integers(0, 2), min_size=b, max_size=b)))]
        if one_hot
        else torch.softmax(
            torch.tensor(draw(st.lists(st.lists(LOGIT, min_size=3, max_size=3), min_size=b, max_size=b))), -1
        )
    )
    beta = draw(st.sampled_from([0.0, 1e-3, 0.1, 1.0]))
    kind = draw(st.sampled_from(EXPLORATION_TERMS))
    return logits, base_logits, mask, wdl_logits, tau, results, ema_next, beta, kind


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loss_inputs())
def test_loss_and_gradients_are_finite_for_extreme_inputs(inputs):
    """Algorithm 1's step in pure math: sample from μ, weight by ρ, bootstrap p̂, loss, backward."""
    logits, base_logits, mask, wdl_logits, tau, results, ema_next, beta, kind = inputs
    logits.requires_grad_(True)
    wdl_logits.requires_grad_(True)
    log_p = masked_log_softmax(logits, mask)
    log_mu = tempered_log_probs(log_p.detach(), mask, tau)
    assert torch.isfinite(log_mu.exp()).all() and torch.allclose(log_mu.exp().sum(1), torch.ones(len(tau)))
    action = torch.multinomial(log_mu.exp(), 1, generator=torch.Generator().manual_seed(0)).squeeze(1)
    assert mask[torch.arange(len(action)), action].all()
    rho = importance_weight(
        log_p.detach().gather(1, action[:, None]).squeeze(1), log_mu.gather(1, action[:, None]).squeeze(1)
    )
    target = value_target(ema_next, results)
    v = torch.softmax(wdl_logits.detach(), -1)
    advantage = (target[:, 0] + 0.5 * target[:, 1]) - (v[:, 0] + 0.5 * v[:, 1])
    loss = pdx_loss(
        log_p,
        wdl_logits,
        mask,
        action,
        rho,
        advantage,
        target,
        masked_log_softmax(base_logits, mask),
        exploration=kind,
        beta=beta,
        c_v=1.0,
    )
    assert all(torch.isfinite(x) for x in loss), loss
    loss.total.backward()
    assert torch.isfinite(logits.grad).all() and torch.isfinite(wdl_logits.grad).all()
    assert torch.isfinite(value_loss(wdl_logits, target, rho))


# ---------------------------------------------------------------- short soak (the full one: tests/soak_numerics.py)


@pytest.mark.parametrize("arm", EXPLORATION_TERMS)
def test_short_soak_at_the_extremes(arm, tmp_path):
    from soak_numerics import run_arm

    r = run_arm(arm, 20, n_games=8, max_plies=8, workdir=str(tmp_path))  # short games: many restarts
    assert r["error"] is None and r["steps_done"] == 20, r
    assert r["tau_forced"] > 0 and r["single_legal"] > 0, r  # the extremes were actually met


# ---------------------------------------------------------------- an injected NaN stops training, named


def module(**algorithm):
    sp = SelfPlayConfig(n_games=6, opening_max_moves=0, max_plies=30, seed=1)
    return PDXModule(
        base="random:tiny",
        algorithm=PDXSettings(micro_batch=6, **algorithm),
        selfplay=sp,
        warmup_steps=1,
        lr_backbone=1e-3,
        lr_final_block=1e-3,
        lr_policy_head=1e-3,
        lr_value_head=1e-3,
    )


def trainer(steps, callbacks=()):
    return L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=list(callbacks),
    )


class InjectAt(L.Callback):
    def __init__(self, step, fn):
        self.step, self.fn = step, fn

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.global_step == self.step:
            self.fn(pl_module)


def _nan_grad_hook(m):
    p = m.online.value_head.out.weight
    p.register_hook(lambda g: torch.full_like(g, float("nan")))


@pytest.mark.parametrize(
    "inject,expect",
    [
        (_nan_grad_hook, r"step 2: non-finite gradient in value_head\.out\.weight"),
        (lambda m: m.online.policy_head.wq.weight.data.fill_(float("nan")), r"step 2: non-finite online policy logits"),
        (lambda m: m.base.policy_head.wq.weight.data.fill_(float("inf")), r"step 2: non-finite π_base log-prob"),
        (lambda m: m.ema.value_head.out.bias.data.fill_(float("nan")), r"step 2: non-finite EMA WDL p_θ̄\(s\)"),
    ],
)
def test_a_nan_stops_training_naming_the_step_and_tensor(inject, expect):
    m = module(exploration="forward_kl", beta=1.0)
    t = trainer(5, [InjectAt(2, inject)])
    before = {k: v.clone() for k, v in m.online.state_dict().items()}
    snapshot = {}
    t.callbacks.insert(
        0, InjectAt(2, lambda mod: snapshot.update({k: v.clone() for k, v in mod.online.state_dict().items()}))
    )
    with pytest.raises(FloatingPointError, match=expect):
        t.fit(m)
    assert t.global_step == 2  # stopped at that step: no optimizer step with the NaN
    assert before.keys() == snapshot.keys()
    if "gradient" in expect:  # the parameters were not touched by the bad step
        for k, v in m.online.state_dict().items():
            assert torch.equal(v, snapshot[k]), k


# ---------------------------------------------------------------- the guard itself


def test_check_finite_names_the_step_tensor_and_rows_and_skips_masked_out_values():
    from pdx_lightning.rl.guards import check_finite, check_finite_gradients

    t = torch.zeros(4, 3)
    t[2, 1] = float("nan")
    with pytest.raises(FloatingPointError, match=r"step 7: non-finite x: NaN in rows \[2\] of a \(4, 3\) tensor"):
        check_finite(7, {"ok": torch.ones(2), "x": t})
    log_p = torch.tensor([[0.0, float("-inf")]])
    check_finite(7, {"log π": (log_p, torch.tensor([[True, False]]))})  # −inf off the legal moves
    with pytest.raises(FloatingPointError, match=r"step 7: non-finite log π: inf in rows \[0\]"):
        check_finite(7, {"log π": (log_p, torch.tensor([[True, True]]))})
    with pytest.raises(FloatingPointError, match=r"step 3: non-finite loss/total: inf \(scalar inf\)"):
        check_finite(3, {"loss/total": torch.tensor(float("inf"))})
    net = torch.nn.Linear(2, 2)
    net.weight.grad, net.bias.grad = torch.zeros(2, 2), torch.tensor([0.0, float("nan")])
    with pytest.raises(FloatingPointError, match=r"step 5: non-finite gradient in bias: NaN in rows \[1\]"):
        check_finite_gradients(5, net)
