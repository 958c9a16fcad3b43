"""Mixed precision (issue 19 item 4): ``--trainer.precision bf16-mixed`` keeps the objectives' math in
float32.

The networks' matmuls run in bfloat16 under autocast; the log-softmax over the legal moves, the KLs, τ, the
WDL entropy, ρ, the advantage and the loss are computed on logits upcast to float32 first.
"""

from __future__ import annotations

import lightning as L
import pytest
import reference_math
import torch

from pdx_lightning.chesscore import policy
from pdx_lightning.chesscore.rules import RESULT_NONE
from pdx_lightning.rl import objectives as O
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

torch.set_num_threads(1)
P = 4288


def _inputs(b: int = 6, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(b, P, generator=g) < 0.01
    mask[:, 0] = True
    logits = 3.0 * torch.randn(b, P, generator=g)
    base_logits = 3.0 * torch.randn(b, P, generator=g)
    action = torch.multinomial(torch.where(mask, 1.0, 0.0), 1, generator=g).squeeze(1)
    return {
        "logits": logits,
        "mask": mask,
        "log_p_base": policy.masked_log_softmax(base_logits, mask),
        "wdl": torch.randn(b, 3, generator=g),
        "action": action,
        "rho": torch.rand(b, generator=g),
        "advantage": torch.randn(b, generator=g) * 0.3,
        "target": torch.softmax(torch.randn(b, 3, generator=g), -1),
    }


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_every_objective_returns_float32_for_half_precision_inputs(half):
    """bf16/fp16 logits in, float32 out: each function upcasts before its log-softmax, sum or exp."""
    t = _inputs()
    lo, mask = t["logits"].to(half), t["mask"]
    lp = policy.masked_log_softmax(lo, mask)
    assert lp.dtype == torch.float32
    lp_half, base_half = lp.to(half), t["log_p_base"].to(half)
    wdl_half = torch.softmax(t["wdl"], -1).to(half)
    outs = {
        "entropy": policy.entropy(lp_half, mask),
        "forward_kl": policy.forward_kl(base_half, lp_half, mask),
        "reverse_kl": policy.reverse_kl(lp_half, base_half, mask),
        "wdl_entropy (τ)": policy.wdl_entropy(wdl_half),
        "score": policy.score(wdl_half),
        "tempered": policy.tempered_log_probs(lp_half, mask, policy.wdl_entropy(wdl_half)),
        "importance_weight": O.importance_weight(lp_half[:, 0], lp_half[:, 0] - 0.5),
        "td_advantage": reference_math.td_advantage(policy.score(wdl_half).to(half), policy.score(wdl_half).to(half)),
        "value_target": O.value_target(wdl_half, torch.full((6,), RESULT_NONE)),
        "value_loss": O.value_loss(t["wdl"].to(half), t["target"].to(half), t["rho"].to(half)),
        "ppo": reference_math.ppo_clipped_surrogate(lp_half[:, 0], lp_half[:, 0], t["advantage"].to(half)),
    }
    for kind in O.EXPLORATION_TERMS:
        outs[f"exploration_term[{kind}]"] = O.exploration_term(kind, lp_half, base_half, mask)
        loss = O.pdx_loss(
            lp_half,  # the masked log-policy, in half precision
            t["wdl"].to(half),
            mask,
            t["action"],
            t["rho"].to(half),
            t["advantage"].to(half),
            t["target"].to(half),
            base_half,
            exploration=kind,
            beta=0.1,
            c_v=0.2,
        )
        outs.update({f"pdx_loss[{kind}].{k}": v for k, v in loss._asdict().items()})
    assert {k: v.dtype for k, v in outs.items()} == dict.fromkeys(outs, torch.float32)
    assert policy.masked_log_softmax(t["logits"].double(), mask).dtype == torch.float64  # wider stays wider


def test_the_loss_on_bf16_logits_is_the_float32_loss_of_the_rounded_logits():
    """The only bf16 rounding left is the logits' own: the loss of bf16 logits equals (to float32 rounding)
    the float32 loss of the same rounded values, and stays within 1e-2 of the unrounded float32 loss; the
    gradient reaches the bf16 logits in float32 precision (finite, same sign pattern)."""
    t = _inputs(b=16, seed=3)
    for kind in O.EXPLORATION_TERMS:
        kw = dict(exploration=kind, beta=0.1, c_v=0.2)
        args = (t["mask"], t["action"], t["rho"], t["advantage"], t["target"], t["log_p_base"])
        lo16 = t["logits"].bfloat16().requires_grad_(True)
        wdl16 = t["wdl"].bfloat16()
        # pdx_loss takes the masked log-policy: log-softmax of the bf16 logits (upcast to float32 first)
        half = O.pdx_loss(policy.masked_log_softmax(lo16, t["mask"]), wdl16, *args, **kw)
        rounded = O.pdx_loss(policy.masked_log_softmax(lo16.detach().float(), t["mask"]), wdl16.float(), *args, **kw)
        exact = O.pdx_loss(policy.masked_log_softmax(t["logits"], t["mask"]), t["wdl"], *args, **kw)
        for name in O.PDXLoss._fields:
            h, r, e = getattr(half, name), getattr(rounded, name), getattr(exact, name)
            assert h.dtype == torch.float32
            assert torch.allclose(h, r, rtol=1e-6, atol=1e-7), (kind, name, h, r)
            assert torch.allclose(h, e, rtol=1e-2, atol=1e-2), (kind, name, h, e)
        half.total.backward()
        assert lo16.grad.dtype == torch.bfloat16 and bool(torch.isfinite(lo16.grad).all())


class _Losses(L.Callback):
    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        m = trainer.callback_metrics
        self.steps.append(
            {
                k: float(m[k])
                for k in sorted(m)
                if k.startswith(("loss/", "kl/", "policy/"))
                or k in ("selfplay/tau_mean", "selfplay/adv_mean", "selfplay/rho_mean")
            }
        )


def _steps(precision: str, tmp_path) -> list[dict[str, float]]:
    """Step 1 in ``precision``, then step 2 in ``precision`` resumed from a float32 step 1 (so both runs'
    step 2 start from the same online ≠ base weights: AdamW's first update moves every weight by ±lr by the
    sign of its gradient, so noise-level gradients would otherwise make two different networks)."""

    def fit(prec: str, steps: int, ckpt: str | None, save: bool) -> list[dict[str, float]]:
        L.seed_everything(0)
        sp = SelfPlayConfig(n_games=8, opening_max_moves=0, max_plies=30, seed=1)
        m = PDXModule(
            base="random:tiny",
            algorithm=PDXSettings(beta=0.1, micro_batch=4),
            selfplay=sp,
            lr_backbone=1e-2,
            lr_final_block=1e-2,
            lr_policy_head=1e-2,
            lr_value_head=1e-2,
            warmup_steps=1,
        )
        probe = _Losses()
        trainer = L.Trainer(
            max_steps=steps,
            accelerator="cpu",
            precision=prec,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            callbacks=[probe],
            default_root_dir=tmp_path,
        )
        trainer.fit(m, ckpt_path=ckpt)
        if save:
            trainer.save_checkpoint(tmp_path / "step1.ckpt")
        return probe.steps

    first = fit(precision, 1, None, False)
    if not (tmp_path / "step1.ckpt").exists():
        fit("32-true", 1, None, True)
    return first + fit(precision, 2, str(tmp_path / "step1.ckpt"), False)


KL_LIKE = ("kl/forward_to_base", "kl/reverse_to_base", "loss/explore", "policy/entropy")


def test_a_bf16_mixed_step_matches_the_float32_step(tmp_path):
    """Two real steps of PDXModule with ``precision="bf16-mixed"`` vs ``"32-true"`` from the same seed and
    games (all from the initial position); step 2 runs after one (float32) AdamW update, so online ≠ base there.

    Stated tolerances (bf16 logits carry ~3 significant digits; the math on them is float32):
    losses and the advantage mean within rtol 2e-2 (atol 3e-3); the KLs, the exploration term and the
    policy entropy within atol 5e-4, and the KLs non-negative; ρ's mean within 1e-3; τ's within rtol 1e-4.
    Measured: KL differences ≤ 1.7e-4, loss differences ≤ 1.8e-3. With the objectives' math left in
    bfloat16 the KLs came out negative (−2e-3, −4e-3), ρ's mean 1.3e-2 off and the entropy 1e-2 off."""
    full, mixed = _steps("32-true", tmp_path), _steps("bf16-mixed", tmp_path)
    assert len(full) == len(mixed) == 2 and full[0].keys() == mixed[0].keys()
    assert {"loss/total", "loss/policy", "loss/explore", "loss/value", "selfplay/tau_mean"} <= full[0].keys()
    assert full[1]["kl/forward_to_base"] > 1e-3  # step 2: the KL is live
    for f, m in zip(full, mixed):
        for k in f:
            if k in KL_LIKE:
                assert m[k] == pytest.approx(f[k], abs=5e-4), (k, f[k], m[k])
            elif k == "selfplay/rho_mean":
                assert m[k] == pytest.approx(f[k], abs=1e-3), (k, f[k], m[k])
            elif k == "selfplay/tau_mean":
                assert m[k] == pytest.approx(f[k], rel=1e-4), (k, f[k], m[k])
            else:
                assert m[k] == pytest.approx(f[k], rel=2e-2, abs=3e-3), (k, f[k], m[k])
        assert m["kl/forward_to_base"] >= -1e-6 and m["kl/reverse_to_base"] >= -1e-6
    assert any(f[k] != m[k] for f, m in zip(full, mixed) for k in f)  # bf16 autocast really was on
