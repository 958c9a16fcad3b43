"""objectives.py: each formula vs a hand-worked case and vs a slow python loop."""

import math

import pytest
import torch
import torch.nn.functional as F
from reference_math import ppo_clipped_surrogate, td_advantage
from torch.testing import assert_close

from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.chesscore.policy import (
    TAU_MIN,
    entropy,
    flip_wdl,
    forward_kl,
    masked_log_softmax,
    reverse_kl,
    score,
    tempered_log_probs,
    wdl_entropy,
)
from pdx_lightning.chesscore.rules import DRAW, LOSS, RESULT_NONE, WIN
from pdx_lightning.rl.objectives import (
    EXPLORATION_TERMS,
    ObjectiveInputError,
    UnknownExplorationTerm,
    base_wdl_kl,
    exploration_term,
    importance_weight,
    pdx_loss,
    value_loss,
    value_target,
)

INF, LN2, LN3 = math.inf, math.log(2), math.log(3)
F64 = torch.float64
T = lambda *x: torch.tensor(x, dtype=F64)  # noqa: E731


def _batch(seed):
    """5 rows with 1, 2, 20, 40, 218 legal moves at random slots; logits ~ 3·N(0,1)."""
    g = torch.Generator().manual_seed(seed)
    logits = 3 * torch.randn(5, POLICY_SIZE, generator=g, dtype=F64)
    mask = torch.zeros(5, POLICY_SIZE, dtype=torch.bool)
    for i, k in enumerate((1, 2, 20, 40, 218)):
        mask[i, torch.randperm(POLICY_SIZE, generator=g)[:k]] = True
    action = torch.multinomial(mask.double(), 1, generator=g).squeeze(1)  # (5,), legal
    return logits, mask, action, g


# ---- slow, obvious references: python floats, one row at a time -------------------------
def ref_log_softmax(x, legal):
    m = max(v for v, ok in zip(x, legal) if ok)
    lse = m + math.log(sum(math.exp(v - m) for v, ok in zip(x, legal) if ok))
    return [v - lse if ok else -INF for v, ok in zip(x, legal)]


def ref_kl(lp, lq, legal):  # Σ_legal p (log p − log q), skipping p = 0
    return sum(math.exp(a) * (a - b) for a, b, ok in zip(lp, lq, legal) if ok and a > -INF)


def ref_entropy(lp, legal):
    return -sum(math.exp(a) * a for a, ok in zip(lp, legal) if ok and a > -INF)


def _rows(fn, *tensors):
    return torch.tensor([fn(*r) for r in zip(*(t.tolist() for t in tensors))], dtype=F64)


# ---- masked log-softmax --------------------------------------------------------------------
def test_masked_log_softmax_hand():
    # legal logits 1, 2, 3 → softmax of (0, 1, 2): 1/(1+e+e²) = 0.0900, e/.. = 0.2447, e²/.. = 0.6652;
    # the illegal slot has the largest logit yet gets exactly 0.
    lp = masked_log_softmax(T(1, 2, 3, 100)[None], torch.tensor([[True, True, True, False]]))
    assert_close(lp.exp(), T(0.0900306, 0.2447285, 0.6652410, 0)[None])
    assert lp[0, 3] == -INF and lp.exp()[0, :3].sum().item() == pytest.approx(1, abs=1e-15)


def test_masked_log_softmax_matches_loop():
    logits, mask, _, _ = _batch(0)
    lp = masked_log_softmax(logits, mask)
    ref = torch.tensor([ref_log_softmax(x, m) for x, m in zip(logits.tolist(), mask.tolist())], dtype=F64)
    assert_close(lp, ref)
    assert (lp.exp()[~mask] == 0).all()
    assert_close(lp.exp().sum(1), torch.ones(5, dtype=F64))


# ---- entropy and the two KLs -------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 3, 20])
def test_entropy_uniform_is_ln_k(k):
    mask = torch.zeros(1, 30, dtype=torch.bool)
    mask[0, 5 : 5 + k] = True  # illegal slots (logit 0 too) must not count
    assert entropy(masked_log_softmax(torch.zeros(1, 30), mask), mask).item() == pytest.approx(math.log(k))


def test_entropy_hand_and_penalty_sign():
    # π = (1/2, 1/4, 1/4): H = ½ln2 + 2·¼ln4 = 1.5 ln2 = 1.0397
    lp, mask = T(0.5, 0.25, 0.25).log()[None], torch.ones(1, 3, dtype=torch.bool)
    assert entropy(lp, mask).item() == pytest.approx(1.5 * LN2)
    # entropy *bonus* as a penalty: R = −H, so the uniform policy has the lower penalty
    uni = torch.full((1, 3), -LN3, dtype=F64)
    r = lambda x: exploration_term("entropy", x, x, mask).item()  # noqa: E731
    assert r(lp) == pytest.approx(-1.5 * LN2) and r(uni) < r(lp)


def test_entropy_matches_loop():
    logits, mask, _, _ = _batch(1)
    lp = masked_log_softmax(logits, mask)
    assert_close(entropy(lp, mask), _rows(ref_entropy, lp, mask))


def test_kl_hand():
    # π_base = (½, ½, –), π_θ = (¼, ¾, –), third slot illegal.
    # forward KL(π_base‖π_θ) = ½ln(½/¼) + ½ln(½/¾) = ½ln(4/3) = 0.14384
    # reverse KL(π_θ‖π_base) = ¼ln(¼/½) + ¾ln(¾/½) = −0.17329 + 0.30410 = 0.13081
    mask = torch.tensor([[True, True, False]])
    lb, lt = T(0.5, 0.5, 0).log()[None], T(0.25, 0.75, 0).log()[None]
    assert forward_kl(lb, lt, mask).item() == pytest.approx(0.5 * math.log(4 / 3))
    assert reverse_kl(lt, lb, mask).item() == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5))


def test_kls_match_loop_and_kl_div_direction():
    logits, mask, _, g = _batch(2)
    lt = masked_log_softmax(logits, mask)
    lb = masked_log_softmax(3 * torch.randn(logits.shape, generator=g, dtype=F64), mask)
    assert_close(forward_kl(lb, lt, mask), _rows(ref_kl, lb, lt, mask))
    assert_close(reverse_kl(lt, lb, mask), _rows(ref_kl, lt, lb, mask))
    # F.kl_div(input, target) = KL(target‖input): with everything legal it is our forward KL.
    full = torch.ones_like(mask)
    lt = masked_log_softmax(logits, full)
    lb = masked_log_softmax(3 * torch.randn(logits.shape, generator=g, dtype=F64), full)
    ours = forward_kl(lb, lt, full)
    assert_close(ours, F.kl_div(lt, lb, log_target=True, reduction="none").sum(1))
    assert (ours - reverse_kl(lt, lb, full)).abs().max() > 1e-3  # the directions do differ


def test_figure2_zero_avoiding_vs_zero_forcing():
    # π_base ≈ (½, ½, e⁻⁴⁰/2). Drop a prior move, π_θ ≈ (1, e⁻⁴⁰, e⁻⁴⁰):
    #   forward ≈ ½ln½ + ½ln(½e⁴⁰) = 19.31 (blows up); reverse ≈ 1·ln(1/½) = 0.693.
    # Explore beyond the prior, π_θ = (⅓, ⅓, ⅓):
    #   forward ≈ 2·½ln(1.5) = 0.405; reverse ≈ 2·⅓ln(⅔) + ⅓ln(⅔e⁴⁰) = 12.86 (blows up).
    mask = torch.ones(1, 3, dtype=torch.bool)
    lb = masked_log_softmax(T(0, 0, -40)[None], mask)
    drop = masked_log_softmax(T(0, -40, -40)[None], mask)  # π_θ ≈ (1, e⁻⁴⁰, e⁻⁴⁰)
    spread = torch.full((1, 3), -LN3, dtype=F64)  # π_θ = (⅓, ⅓, ⅓)
    assert forward_kl(lb, drop, mask).item() == pytest.approx(-LN2 + 20, abs=1e-3)
    assert reverse_kl(drop, lb, mask).item() == pytest.approx(LN2, abs=1e-3)
    assert forward_kl(lb, spread, mask).item() == pytest.approx(math.log(1.5), abs=1e-3)
    assert reverse_kl(spread, lb, mask).item() == pytest.approx(math.log(2 / 3) + 40 / 3, abs=1e-3)


# ---- WDL: τ, score, flip -----------------------------------------------------------------
def test_wdl_entropy_hand():
    # uniform → ln3 = 1.0986 (the max); (½, ½, 0) → ln2 with 0·ln0 = 0; one-hot → exactly 0
    tau = wdl_entropy(torch.tensor([[1 / 3] * 3, [0.5, 0.5, 0], [0, 0, 1.0]], dtype=F64))
    assert_close(tau, T(LN3, LN2, 0), atol=0, rtol=1e-15)  # the one-hot row is exactly 0


def test_wdl_entropy_matches_loop_in_range():
    p = torch.distributions.Dirichlet(torch.full((3,), 0.3)).sample((200,)).double()
    tau = wdl_entropy(p)
    assert_close(tau, _rows(lambda *q: -sum(x * math.log(x) for x in q if x > 0), *p.T))
    assert (tau >= 0).all() and (tau <= LN3 + 1e-12).all()


def test_score_and_flip_hand():
    # p = (W .5, D .3, L .2): v = .5 + .15 = .65; flip → (.2, .3, .5), v = .35 = 1 − .65
    p = T(0.5, 0.3, 0.2)[None]
    assert_close(score(p), T(0.65))
    assert_close(flip_wdl(p), T(0.2, 0.3, 0.5)[None])
    assert_close(score(flip_wdl(p)), 1 - score(p))


def test_score_and_flip_match_loop():
    p = torch.rand(50, 3, dtype=F64).softmax(-1)
    assert_close(score(p), _rows(lambda w, d, _loss: w + d / 2, *p.T))
    assert_close(flip_wdl(p), torch.tensor([[loss, d, w] for w, d, loss in p.tolist()], dtype=F64))


# ---- tempered behavior policy μ ------------------------------------------------------------
def test_tempered_hand():
    # π = (.5, .3, .2), τ = ½: μ ∝ π² = (.25, .09, .04)/.38 = (.658, .237, .105); τ = 1: μ = π
    lp, mask = T(0.5, 0.3, 0.2).log().expand(2, 3), torch.ones(2, 3, dtype=torch.bool)
    mu = tempered_log_probs(lp, mask, T(0.5, 1.0)).exp()
    assert_close(mu, torch.stack([T(0.25, 0.09, 0.04) / 0.38, T(0.5, 0.3, 0.2)]))


def ref_tempered(lp, legal, tau):
    if tau <= TAU_MIN:  # limit τ → 0: the first argmax among legal moves
        best = max((v, -i) for i, (v, ok) in enumerate(zip(lp, legal)) if ok)
        return [0.0 if i == -best[1] else -INF for i in range(len(lp))]
    return ref_log_softmax([v / tau for v in lp], legal)


def test_tempered_matches_loop_mixed_tau():
    logits, mask, _, _ = _batch(3)
    lp, tau = masked_log_softmax(logits, mask), T(0.0, 1e-7, 0.05, 0.7, 1.1)
    ref = torch.tensor([ref_tempered(*r) for r in zip(lp.tolist(), mask.tolist(), tau.tolist())], dtype=F64)
    assert_close(tempered_log_probs(lp, mask, tau), ref)


def test_tempered_tau_to_zero_is_argmax_ties_first_no_nan():
    # slot 0 is illegal with the largest logit; slots 2 and 3 tie for the legal argmax → slot 2
    logits = torch.tensor([[9.0, 1, 3, 3, 0]] * 4, requires_grad=True)
    mask = torch.tensor([[False, True, True, True, True]] * 4)
    lmu = tempered_log_probs(masked_log_softmax(logits, mask), mask, torch.tensor([0.0, 1e-9, 0.5, 1.0]))
    assert not lmu.isnan().any()
    assert_close(lmu.exp()[:2], torch.tensor([[0.0, 0, 1, 0, 0]] * 2))
    assert_close(lmu.exp()[3], masked_log_softmax(logits, mask)[3].exp())  # τ = 1 row: μ = π
    (lmu.exp() * torch.randn(4, 5)).sum().backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad[:2] == 0).all()
    # continuity: just above the threshold μ is already the argmax (gaps here ≥ 1 nat)
    lp = masked_log_softmax(torch.tensor([[0.0, 1, 3, 2]]), torch.ones(1, 4, dtype=torch.bool))
    for tau in (1e-2, 1e-4, 2 * TAU_MIN, 0.0):
        assert_close(
            tempered_log_probs(lp, torch.ones(1, 4, dtype=torch.bool), tau).exp(), torch.tensor([[0.0, 0, 1, 0]])
        )


# ---- ρ, A, p̂, value loss -----------------------------------------------------------------
def test_importance_weight_hand():
    # π/μ = .2/.5 = .4 (kept); .5/.2 = 2.5 → capped at 1, or at 2 with cap = 2
    lpi, lmu = T(0.2, 0.5).log(), T(0.5, 0.2).log()
    assert_close(importance_weight(lpi, lmu), T(0.4, 1.0))
    assert_close(importance_weight(lpi, lmu, cap=2.0), T(0.4, 2.0))


def test_importance_weight_matches_loop_and_bounds():
    logits, mask, _, g = _batch(4)
    lp = masked_log_softmax(logits, mask)
    lmu = tempered_log_probs(lp, mask, T(0.0, 0.1, 0.3, 0.6, 1.1))
    a = torch.multinomial(lmu.exp(), 1, generator=g)  # a ~ μ, (5, 1)
    lpi_a, lmu_a = lp.gather(1, a).squeeze(1), lmu.gather(1, a).squeeze(1)
    rho = importance_weight(lpi_a, lmu_a)
    assert_close(rho, _rows(lambda p, m: min(1.0, math.exp(p) / math.exp(m)), lpi_a, lmu_a))
    below = rho < 1
    assert (rho <= 1).all() and below.any()
    assert_close(rho[below], (lpi_a - lmu_a).exp()[below])


def test_advantage_and_value_target_hand():
    # A = (1 − .7) − .4 = −.1;  live s': p̂ = flip(.6, .3, .1) = (.1, .3, .6), score .25 = 1 − .75
    assert td_advantage(T(0.7), T(0.4)).item() == pytest.approx(-0.1)
    ema = T(0.6, 0.3, 0.1).expand(4, 3)
    res = torch.tensor([RESULT_NONE, WIN, DRAW, LOSS])  # terminal rows ignore the EMA's WDL
    assert_close(value_target(ema, res), T(0.1, 0.3, 0.6, 1, 0, 0, 0, 1, 0, 0, 0, 1).view(4, 3))
    assert_close(score(value_target(ema, res)) - 0.4, td_advantage(T(0.75, 0, 0.5, 1), T(0.4)))
    with pytest.raises(ObjectiveInputError, match=r"rows \[1\]"):
        value_target(ema[:2], torch.tensor([0, 3]))


def test_advantage_and_value_target_match_loop():
    g = torch.Generator().manual_seed(5)
    v_next, v = torch.rand(2, 40, generator=g, dtype=F64)
    assert_close(td_advantage(v_next, v), _rows(lambda n, s: (1 - n) - s, v_next, v))
    ema = torch.rand(40, 3, generator=g, dtype=F64).softmax(-1)
    res = torch.randint(-1, 3, (40,), generator=g)
    ref = [
        p[::-1] if r == RESULT_NONE else [float(r == o) for o in range(3)] for p, r in zip(ema.tolist(), res.tolist())
    ]
    assert_close(value_target(ema, res), torch.tensor(ref, dtype=F64))


def test_value_loss_hand():
    # uniform head: −log p = ln3 per outcome, so CE = ln3 for any target; ρ = (1, ½) → .75 ln3
    tgt = T(1, 0, 0, 0.2, 0.3, 0.5).view(2, 3)
    assert value_loss(torch.zeros(2, 3), tgt, T(1, 0.5)).item() == pytest.approx(0.75 * LN3)


def test_value_loss_matches_loop():
    g = torch.Generator().manual_seed(6)
    z, tgt = torch.randn(2, 30, 3, generator=g, dtype=F64)
    tgt, rho = tgt.softmax(-1), torch.rand(30, generator=g, dtype=F64)
    ce = _rows(lambda zr, tr: -sum(t * lg for t, lg in zip(tr, ref_log_softmax(zr, [1] * 3))), z, tgt)
    assert value_loss(z, tgt, rho).item() == pytest.approx((rho * ce).mean().item())


# ---- the base-WDL value anchor (reference implementation; not in Eq. 7) -------------------------
def test_value_anchor_hand():
    # p_θ uniform (zero logits), p_base = (½, ¼, ¼):
    # forward KL(p_base‖p_θ) = ½ln(½/⅓) + 2·¼ln(¼/⅓) = ½ln1.5 + ½ln0.75 = 0.0588915
    # reverse KL(p_θ‖p_base) = ⅓[ln(⅓/½) + 2ln(⅓/¼)] = ⅓[ln(2/3) + 2ln(4/3)] = 0.0566330
    base = T(0.5, 0.25, 0.25, 1 / 3, 1 / 3, 1 / 3).view(2, 3)  # second row: p_base = p_θ, KL = 0
    fwd = base_wdl_kl(torch.zeros(2, 3, dtype=F64), base)
    rev = base_wdl_kl(torch.zeros(2, 3, dtype=F64), base, reverse=True)
    assert fwd.tolist() == pytest.approx([0.5 * math.log(1.5) + 0.5 * math.log(0.75), 0.0], abs=1e-12)
    assert rev.tolist() == pytest.approx([(math.log(2 / 3) + 2 * math.log(4 / 3)) / 3, 0.0], abs=1e-12)
    assert fwd[0].item() == pytest.approx(0.0588915, abs=1e-7) and rev[0].item() == pytest.approx(0.0566330, abs=1e-7)
    # a base outcome of probability 0 contributes 0 forward (0·log 0), no NaN
    assert base_wdl_kl(torch.zeros(1, 3), torch.tensor([[0.5, 0.5, 0.0]])).item() == pytest.approx(math.log(1.5))


def test_value_anchor_matches_loop_and_its_gradient_reaches_only_the_online_head():
    g = torch.Generator().manual_seed(12)
    z, zb = torch.randn(2, 30, 3, generator=g, dtype=F64)
    p_base = zb.softmax(-1).requires_grad_()  # as if carrying grad: must be treated as a constant
    logits = z.clone().requires_grad_()
    for reverse in (False, True):
        out = base_wdl_kl(logits, p_base, reverse=reverse)
        ref = []
        for zr, br in zip(z.tolist(), p_base.tolist()):  # one state at a time, python floats
            lp = ref_log_softmax(zr, [1] * 3)
            p = [math.exp(v) for v in lp]
            ref.append(
                sum(pi * (lpi - math.log(bi)) for pi, lpi, bi in zip(p, lp, br))
                if reverse
                else sum(bi * (math.log(bi) - lpi) for bi, lpi in zip(br, lp))
            )
        assert_close(out, torch.tensor(ref, dtype=F64))
    base_wdl_kl(logits, p_base).sum().backward()
    assert p_base.grad is None and torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0
    # d/dz KL(p_base‖softmax z) = softmax z − p_base
    assert_close(logits.grad, z.softmax(-1) - p_base.detach())


def test_pdx_loss_adds_the_anchor_weighted_by_c_v_times_w_in_the_arms_direction():
    args = _log_prob_inputs(13)
    g = torch.Generator().manual_seed(13)
    p_base = torch.randn(5, 3, generator=g, dtype=F64).softmax(-1)
    wdl = args[1]
    for kind in EXPLORATION_TERMS:
        off = pdx_loss(*args, exploration=kind, beta=0.3, c_v=0.7)
        on = pdx_loss(*args, exploration=kind, beta=0.3, c_v=0.7, wdl_base=p_base, value_anchor=0.1)
        anchor = base_wdl_kl(wdl, p_base, reverse=kind == "reverse_kl").mean()
        assert off.anchor.item() == 0 and on.anchor.item() == pytest.approx(anchor.item()) and anchor > 0
        assert on.total.item() == pytest.approx(off.total.item() + 0.7 * 0.1 * anchor.item())
        assert on[1:4] == off[1:4]  # Eq. 7's terms unchanged
    with pytest.raises(ValueError, match="needs wdl_base"):
        pdx_loss(*args, beta=0.3, c_v=0.7, value_anchor=0.1)


# ---- the total loss -------------------------------------------------------------------------
def _loss_inputs(seed):
    logits, mask, action, g = _batch(seed)
    base = masked_log_softmax(3 * torch.randn(logits.shape, generator=g, dtype=F64), mask)  # (5, P)
    wdl, tgt = torch.randn(2, 5, 3, generator=g, dtype=F64)  # head logits, p̂ logits
    rho, adv = torch.rand(5, generator=g, dtype=F64), torch.randn(5, generator=g, dtype=F64)
    return logits, wdl, mask, action, rho, adv, tgt.softmax(-1), base


def _log_prob_inputs(seed):
    """``_loss_inputs`` with the policy as ``pdx_loss`` takes it: the masked log-policy, not the logits."""
    logits, wdl, mask, *rest = _loss_inputs(seed)
    return masked_log_softmax(logits, mask), wdl, mask, *rest


def test_pdx_loss_hand():
    # π_θ uniform over 3: log π(a) = −ln3; ρ = ½, A = .2 → policy = −½·.2·(−ln3) = .1 ln3
    # π_base = (½, ½, 0): forward KL = 2·½ln(½/⅓) = ln1.5; value: uniform head, one-hot p̂ → ½·ln3
    # total, β = .1, c_v = 2: .1ln3 + .1ln1.5 + ln3 = 1.24899
    zeros = torch.zeros(1, 3, dtype=F64)  # policy logits, WDL logits
    every = torch.ones(1, 3, dtype=torch.bool)
    out = pdx_loss(
        masked_log_softmax(zeros, every),
        zeros.clone(),
        every,
        torch.tensor([2]),
        T(0.5),
        T(0.2),
        T(1, 0, 0)[None],
        T(0.5, 0.5, 0).log()[None],
        exploration="forward_kl",
        beta=0.1,
        c_v=2.0,
    )
    expect = (0.1 * LN3 + 0.1 * math.log(1.5) + LN3, 0.1 * LN3, math.log(1.5), 0.5 * LN3, 0.0)  # no anchor
    assert [x.item() for x in out] == pytest.approx(expect, rel=1e-6)


def _direct_loss(logits, wdl, mask, action, rho, adv, tgt, base, kind, beta, c_v):
    """Eq. 7 written directly in the logits, independently of ``chesscore.policy``: log_softmax over the
    legal moves (illegal logits at −inf), each sum over the legal moves (the double where keeps 0·log 0 = 0
    and its gradient finite)."""
    lp = torch.log_softmax(logits.masked_fill(~mask, -INF), -1)
    lp0, lb0 = torch.where(mask, lp, 0.0), torch.where(mask, base, 0.0)
    p, pb = lp0.exp() * mask, lb0.exp() * mask
    explore = {
        "none": torch.zeros(len(mask), dtype=logits.dtype),
        "entropy": (p * lp0).sum(-1),
        "reverse_kl": (p * (lp0 - lb0)).sum(-1),
        "forward_kl": (pb * (lb0 - lp0)).sum(-1),
    }[kind]
    policy = -(rho * adv * lp0.gather(1, action[:, None]).squeeze(1)).mean()
    value = -(rho * (tgt * torch.log_softmax(wdl, -1)).sum(-1)).mean()
    return policy + beta * explore.mean() + c_v * value


@pytest.mark.parametrize("kind", EXPLORATION_TERMS)
def test_pdx_loss_of_the_masked_log_policy_has_the_direct_formulas_value_and_gradient_in_the_logits(kind):
    """``pdx_loss`` takes log π_θ (``masked_log_softmax`` of the logits, as the step computes it once):
    its total and its gradient w.r.t. the logits and the WDL logits are those of Eq. 7 written directly
    in the logits."""
    logits, wdl, mask, action, rho, adv, tgt, base = _loss_inputs(3)
    a, wa = logits.clone().requires_grad_(True), wdl.clone().requires_grad_(True)
    b, wb = logits.clone().requires_grad_(True), wdl.clone().requires_grad_(True)
    out = pdx_loss(
        masked_log_softmax(a, mask), wa, mask, action, rho, adv, tgt, base, exploration=kind, beta=0.3, c_v=0.7
    )
    ref = _direct_loss(b, wb, mask, action, rho, adv, tgt, base, kind, 0.3, 0.7)
    assert_close(out.total, ref)
    out.total.backward()
    ref.backward()
    assert torch.isfinite(a.grad).all() and (a.grad[~mask] == 0).all()
    assert_close(a.grad, b.grad)
    assert_close(wa.grad, wb.grad)


@pytest.mark.parametrize("kind", EXPLORATION_TERMS)
def test_pdx_loss_matches_loop(kind):
    logits, wdl, mask, action, rho, adv, tgt, base = _loss_inputs(7)
    log_p = masked_log_softmax(logits, mask)
    out = pdx_loss(log_p, wdl, mask, action, rho, adv, tgt, base, exploration=kind, beta=0.3, c_v=0.7)
    pol = ex = val = 0.0
    for i, lp_ in enumerate(masked_log_softmax(logits, mask).tolist()):  # one position at a time
        legal, lb = mask[i].tolist(), base[i].tolist()
        pol -= rho[i].item() * adv[i].item() * lp_[action[i]] / 5
        ex += {
            "none": 0.0,
            "entropy": -ref_entropy(lp_, legal),
            "reverse_kl": ref_kl(lp_, lb, legal),
            "forward_kl": ref_kl(lb, lp_, legal),
        }[kind] / 5
        lv = ref_log_softmax(wdl[i].tolist(), [1] * 3)
        val -= rho[i].item() * sum(t * lg for t, lg in zip(tgt[i].tolist(), lv)) / 5
    assert [x.item() for x in out] == pytest.approx([pol + 0.3 * ex + 0.7 * val, pol, ex, val, 0.0])


@pytest.mark.parametrize("kind", EXPLORATION_TERMS)
def test_no_gradient_through_constants(kind):
    logits, wdl, mask, action, rho, adv, tgt, base = _loss_inputs(8)
    base_logits = base.masked_fill(~mask, 0).requires_grad_()
    consts = [x.clone().requires_grad_() for x in (rho, adv, tgt)]  # ρ, A, p̂ as if carrying grad
    grads = []
    for live in (True, False):  # constants carrying grad vs caller-detached ones
        lg, wl = logits.clone().requires_grad_(), wdl.clone().requires_grad_()
        c = consts if live else [x.detach() for x in consts]
        lb = masked_log_softmax(base_logits, mask) if live else base
        log_p = masked_log_softmax(lg, mask)
        pdx_loss(log_p, wl, mask, action, *c, lb, exploration=kind, beta=0.3, c_v=0.7).total.backward()
        assert torch.isfinite(lg.grad).all() and (lg.grad[~mask] == 0).all()
        grads.append((lg.grad, wl.grad))
    assert all(x.grad is None for x in [*consts, base_logits])
    assert_close(grads[0], grads[1])


def test_single_step_ppo_reduction():
    logits, wdl, mask, action, rho, adv, tgt, base = _loss_inputs(9)
    logits.requires_grad_()
    log_p = masked_log_softmax(logits, mask)
    eq14 = pdx_loss(log_p, wdl, mask, action, rho, adv, tgt, base, exploration="none", beta=0.0, c_v=0.0)
    (g14,) = torch.autograd.grad(eq14.total, logits)
    log_pi = masked_log_softmax(logits, mask).gather(1, action[:, None]).squeeze(1)  # (5,)
    for eps in (0.01, 0.2):  # r ≡ 1: clip inert, same gradient for every ε
        eq13 = ppo_clipped_surrogate(log_pi, log_pi.detach(), rho * adv, eps)
        (g13,) = torch.autograd.grad(eq13, logits, retain_graph=True)
        assert_close(g13, g14)
    stale = log_pi.detach() - 0.5  # a reused batch: r = e^.5 ≠ 1, and now ε matters
    assert ppo_clipped_surrogate(log_pi, stale, rho * adv, 0.01) != ppo_clipped_surrogate(log_pi, stale, rho * adv, 0.2)


def test_ppo_clipped_surrogate_hand():
    # r = .5/.25 = 2, ε = .2: Â = 1 → min(2, 1.2) = 1.2; Â = −1 → min(−2, −1.2) = −2; loss = .4
    out = ppo_clipped_surrogate(T(0.5, 0.5).log(), T(0.25, 0.25).log(), T(1, -1), eps=0.2)
    assert out.item() == pytest.approx(0.4)


def test_every_exploration_kind_changes_the_loss():
    args = _log_prob_inputs(10)
    base = pdx_loss(*args, exploration="none", beta=0.3, c_v=0.7)
    assert base.explore.item() == 0
    for kind in EXPLORATION_TERMS[1:]:
        out = pdx_loss(*args, exploration=kind, beta=0.3, c_v=0.7)
        assert out.total.item() != pytest.approx(base.total.item()) and out.explore.item() != 0
        assert pdx_loss(*args, exploration=kind, beta=0.6, c_v=0.7).total != out.total  # β acts too
    assert pdx_loss(*args, exploration="none", beta=0.3, c_v=0.0).total != base.total  # c_v acts


def test_bad_configuration_raises_named_errors():
    args = _log_prob_inputs(11)
    log_p, wdl, mask, _action, *rest = args
    for call in (
        lambda: exploration_term("kl", log_p, rest[-1], mask),
        lambda: pdx_loss(*args, exploration="kl", beta=0.1, c_v=1.0),
    ):
        with pytest.raises(UnknownExplorationTerm, match="'kl'; valid terms: none, entropy, reverse_kl"):
            call()
    with pytest.raises(ObjectiveInputError, match="action is illegal"):
        pdx_loss(log_p, wdl, mask, (~mask).int().argmax(1), *rest, beta=0.1, c_v=1.0)
    with pytest.raises(ObjectiveInputError, match=r"rows \[1\] have no legal move"):
        masked_log_softmax(torch.zeros(2, 3), torch.tensor([[True, False, False], [False] * 3]))
    for bad in (torch.tensor([0.5, -0.1]), torch.tensor([math.nan, 1.0])):
        with pytest.raises(ObjectiveInputError, match="τ < 0 or NaN"):
            tempered_log_probs(torch.zeros(2, 2), torch.ones(2, 2, dtype=torch.bool), bad)
