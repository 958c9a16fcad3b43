"""The options that reproduce the paper's public reference implementation (issue 30 item 1), each
off by default where the paper's text says otherwise (Eq. 7, Table 2, App. E):

* ``--model.algorithm.value_anchor`` w: c_v·w·KL(p_base ‖ p_θ), the base-WDL value anchor (off: Eq. 7);
* ``--model.algorithm.temperature_wdl_source online``: τ from the online WDL (default: the EMA's);
* ``--model.selfplay.claim_draws``: threefold / fifty moves claimed at once (off: the laws of chess);
* ``--model.algorithm.grad_clip_norm``: gradient-norm clipping (none: Table 2).

The last test computes the loss of a fixed batch as the reference code's per-minibatch step loss
does, in a slow loop written from reading that code, and matches pdx's loss with the options on.
"""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

import chess
import lightning as L
import pytest
import torch
from torch.testing import assert_close

from pdx_lightning.chesscore.moves import POLICY_SIZE, move_to_index
from pdx_lightning.chesscore.policy import masked_log_softmax, wdl_entropy
from pdx_lightning.chesscore.rules import RESULT_NONE
from pdx_lightning.nets import load_model
from pdx_lightning.nets.inference import evaluate_boards
from pdx_lightning.rl import pdx_step, update
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.objectives import EXPLORATION_TERMS, pdx_loss
from pdx_lightning.rl.selfplay import SelfPlayConfig, SelfPlayDataset, SelfPlayNetworks
from pdx_lightning.rl.settings import SETTING_NAMES, PDXSettings, SettingsError

torch.set_num_threads(1)


def collect(ds, batch, rows, log_p_theta, v_theta, wdl_theta):
    """``pdx_step.collect`` on the dataset's games, τ(s) as the step takes it (``step_temperature``: the batch's,
    from the EMA, or H of the online WDL ``wdl_theta``, as the dataset's settings say), sampler generator and
    parameter version, as the step passes them."""
    tau = pdx_step.step_temperature(batch, rows, wdl_theta, ds.settings)
    return pdx_step.collect(ds, batch, rows, log_p_theta, v_theta, tau, generator=ds.gen, version=ds.networks.version())


ROOT = Path(__file__).resolve().parents[2]
FAST = dict(lr_backbone=1e-3, lr_final_block=1e-3, lr_policy_head=1e-3, lr_value_head=1e-3, warmup_steps=1)
F64 = torch.float64


def module(n_games=8, selfplay_kw=None, **kw):
    """A tiny PDXModule; ``kw`` naming a ``PDXSettings`` field go to ``algorithm``, the rest to the module."""
    sp = SelfPlayConfig(n_games=n_games, opening_max_moves=4, max_plies=30, seed=1, **(selfplay_kw or {}))
    algorithm = PDXSettings(**{"micro_batch": 4, **{k: kw.pop(k) for k in list(kw) if k in SETTING_NAMES}})
    return PDXModule(base="random:tiny", algorithm=algorithm, selfplay=sp, **{**FAST, **kw})


def trainer(steps, **kw):
    kw.setdefault("logger", False)
    return L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        enable_progress_bar=False,
        log_every_n_steps=1,
        enable_model_summary=False,
        enable_checkpointing=False,
        **kw,
    )


class MetricsProbe(L.Callback):
    """Every step's logged metrics (``callback_metrics`` after the step)."""

    def __init__(self):
        self.steps: list[dict[str, float]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.steps.append({k: float(v) for k, v in trainer.callback_metrics.items()})


# ---- a. the base-WDL value anchor -------------------------------------------------------------
def test_value_anchor_is_logged_changes_training_and_is_absent_by_default():
    runs = {}
    for w in (0.0, 5.0):
        L.seed_everything(0)
        m, probe = module(value_anchor=w, lr_value_head=3e-2), MetricsProbe()
        trainer(4, callbacks=[probe]).fit(m)
        runs[w] = (m, probe.steps)
    off, on = runs[0.0][1], runs[5.0][1]
    assert all("loss/anchor" not in s for s in off)  # the paper's loss: no anchor term at all
    anchor = [s["loss/anchor"] for s in on]
    assert abs(anchor[0]) < 1e-6  # online = base at step 1: KL 0 (to float32 rounding)
    assert all(a > 1e-5 for a in anchor[1:])  # then the value head moves off the base's
    for s in on:  # total = policy + β·explore + c_v(value + w·anchor)
        expect = s["loss/policy"] + 1e-2 * s["loss/explore"] + 0.2 * (s["loss/value"] + 5.0 * s["loss/anchor"])
        assert s["loss/total"] == pytest.approx(expect, rel=1e-5, abs=1e-7)
    value_off = runs[0.0][0].online.value_head.out.weight
    value_on = runs[5.0][0].online.value_head.out.weight
    assert (value_off - value_on).abs().max() > 1e-6  # the anchor's gradient acted
    with pytest.raises(SettingsError, match=r"model\.algorithm\.value_anchor .* must be a finite number >= 0"):
        module(value_anchor=-0.1)


# ---- b. τ from the online or the EMA WDL -------------------------------------------------------
def _net(seed, bias):
    net = load_model(f"random:tiny:{seed}").eval()
    with torch.no_grad():
        net.value_head.out.bias.copy_(torch.tensor(bias))
    return net


def _outputs(net, boards):
    logp, wdl = evaluate_boards(net, boards)
    return logp, wdl[:, 0] + wdl[:, 1] / 2, wdl


def test_temperature_wdl_source_online_takes_tau_from_the_online_wdl_and_skips_the_ema_pass():
    online, ema, base = _net(1, (0.3, 1.0, -0.2)), _net(2, (1.5, 0.0, -1.0)), _net(3, (-1.0, 0.5, 1.5))
    taus = {}
    for source in ("ema", "online"):
        ds = SelfPlayDataset(
            SelfPlayConfig(n_games=6, opening_max_moves=3, seed=5),
            SelfPlayNetworks(ema=ema, base=base, version=lambda: 0),
            PDXSettings(micro_batch=6, temperature_wdl_source=source),
        )
        it = iter(ds)
        first = next(it)  # opening moves (base passes) done
        collect(ds, first, slice(0, 6), *_outputs(online, [b.copy() for b in ds.boards]))
        calls = []
        ds._eval = lambda name, x, mask, calls=calls, orig=ds._eval: (calls.append(name), orig(name, x, mask))[1]
        batch = next(it)
        boards = [b.copy() for b in ds.boards]
        logp, wdl = evaluate_boards(online, boards)
        assert_close(batch.wdl_base, evaluate_boards(base, boards)[1])  # p_base(s) rides along
        completion = collect(ds, batch, slice(0, 6), logp, wdl[:, 0] + wdl[:, 1] / 2, wdl)
        ema_tau = None if batch.wdl_ema is None else wdl_entropy(batch.wdl_ema)  # what the batch carries for τ
        taus[source] = (ema_tau, completion.tau, wdl_entropy(wdl), wdl_entropy(evaluate_boards(ema, boards)[1]))
        if source == "ema":
            assert calls == ["base", "ema", "ema"]  # base(s), ema(s), ema(s')
        else:
            assert calls == ["base", "ema"]  # base(s), ema(s'): no ema(s) pass
    b_ema, d_ema, h_online, h_ema = taus["ema"]
    assert_close(b_ema, h_ema) and assert_close(d_ema, h_ema)  # the paper: τ = H(p_θ̄(s))
    b_on, d_on, h_online, _ = taus["online"]
    assert b_on is None and torch.equal(d_on, h_online)  # the reference default: τ = H(p_θ(s))
    assert (d_on - d_ema).abs().min() > 1e-2  # the two sources really differ here


def test_temperature_wdl_source_needs_the_online_wdl_and_is_validated():
    ds = SelfPlayDataset(
        SelfPlayConfig(n_games=2, opening_max_moves=0),
        SelfPlayNetworks(ema=_net(2, (0, 0, 0)), base=_net(3, (0, 0, 0)), version=lambda: 0),
        PDXSettings(micro_batch=2, temperature_wdl_source="online"),
    )
    batch = next(iter(ds))
    assert batch.wdl_ema is None  # τ(s) is left to the online WDL: the EMA is not evaluated at s
    wdl = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    assert torch.equal(pdx_step.step_temperature(batch, slice(0, 2), wdl, ds.settings), wdl_entropy(wdl))
    with pytest.raises(AssertionError, match="the dataset evaluates the EMA at s unless τ comes from the online"):
        pdx_step.step_temperature(batch, slice(0, 2), wdl, PDXSettings(micro_batch=2))  # dataset and step disagree
    with pytest.raises(SettingsError, match="model.algorithm.temperature_wdl_source: must be one of ema, online"):
        PDXSettings(temperature_wdl_source="base")
    # the fixed arm ignores the source: τ ≡ 1 either way
    fixed = SelfPlayDataset(
        SelfPlayConfig(n_games=2, opening_max_moves=0),
        SelfPlayNetworks(ema=_net(2, (0, 0, 0)), base=_net(3, (0, 0, 0)), version=lambda: 0),
        PDXSettings(micro_batch=2, temperature="fixed", temperature_wdl_source="online"),
    )
    assert torch.equal(pdx_step.step_temperature(next(iter(fixed)), slice(0, 2), None, fixed.settings), torch.ones(2))


def test_temperature_wdl_source_changes_the_logged_tau_of_a_fit():
    logged = {}
    for source in ("ema", "online"):
        L.seed_everything(0)
        m, probe = module(temperature_wdl_source=source, lr_value_head=3e-2), MetricsProbe()
        trainer(4, callbacks=[probe]).fit(m)
        logged[source] = [s["selfplay/tau_mean"] for s in probe.steps]
    # step 1: online = EMA = base, the same τ; then the online value head runs ahead of the EMA
    assert logged["online"][0] == pytest.approx(logged["ema"][0], abs=1e-6)
    assert all(abs(a - b) > 1e-4 for a, b in zip(logged["online"][2:], logged["ema"][2:]))


# ---- c. draw claiming: the reference's rule ----------------------------------------------------
def reference_result(board: chess.Board) -> str:
    """The reference code's end-of-game rule, from reading it: a threefold repetition already on
    the board or a fifty-move count is a draw claimed at once; otherwise the game is over only by
    python-chess's automatic rules (claim_draw=False)."""
    if board.is_repetition(3) or board.is_fifty_moves():
        return "1/2-1/2"
    return board.result(claim_draw=False) if board.is_game_over(claim_draw=False) else "*"


ENDGAMES = [
    "8/8/4k3/8/8/4K3/8/R7 w - - 88 80",
    "8/2k5/8/8/3q4/8/2K5/7Q b - - 60 70",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
    "r3k3/8/8/8/8/8/8/4K2R w Kq - 94 60",
    "8/8/8/3k4/8/8/3K4/2N2B2 w - - 97 90",
    chess.STARTING_FEN,
]


def _one_game_dataset(backend: str, claim_draws: bool) -> SelfPlayDataset:
    ds = SelfPlayDataset(
        SelfPlayConfig(n_games=1, opening_max_moves=0, claim_draws=claim_draws, max_plies=10_000, backend=backend),
        SelfPlayNetworks(ema=_net(2, (0, 0, 0)), base=_net(3, (0, 0, 0)), version=lambda: 0),
        PDXSettings(micro_batch=1),
    )
    next(iter(ds))
    return ds


def _play_one(ds: SelfPlayDataset, board: chess.Board, move: chess.Move) -> int | None:
    """Self-play's own play of ``move`` in game 0 (and python-chess's on ``board``); the result code."""
    res = int(ds.play([0], torch.tensor([move_to_index(move, board.turn)]))[0])
    board.push(move)
    return None if res == RESULT_NONE else res


@pytest.mark.parametrize("backend", ["native", "python-chess"])
def test_claim_draws_ends_games_exactly_where_the_reference_claims_them(backend):
    """Self-play's own end-of-game rule (the pool's: ``rules.game_end`` on the ring buffer's repetition
    counts, or the compiled core's), with ``claim_draws``, against the reference rule at every ply of
    seeded random games from positions near the fifty-move mark and shuffling endgames (repetitions):
    same end, same result."""
    ds = _one_game_dataset(backend, claim_draws=True)
    rng = random.Random(0)
    seen = {"1/2-1/2": 0, "1-0": 0, "0-1": 0, "*": 0}
    reasons = set()
    for game in range(100):
        board = chess.Board(ENDGAMES[game % len(ENDGAMES)])
        ds.pool.set_board(0, board)
        for _ in range(300):
            legal = list(board.legal_moves)
            move = rng.choice(legal)
            if len(board.move_stack) >= 2 and rng.random() < 0.6:  # often take a piece back: repetitions
                prev = board.move_stack[-2]
                back = chess.Move(prev.to_square, prev.from_square)
                if back in legal:
                    move = back
            ours = _play_one(ds, board, move)
            theirs = reference_result(board)
            seen[theirs] += 1
            mover_white = board.turn == chess.BLACK
            expect = {"*": None, "1/2-1/2": 1, "1-0": 0 if mover_white else 2, "0-1": 2 if mover_white else 0}
            assert ours == expect[theirs], (board.fen(), [m.uci() for m in board.move_stack])
            if theirs != "*":
                reasons.add("fifty" if board.is_fifty_moves() else "threefold" if board.is_repetition(3) else "other")
                break
    assert {"fifty", "threefold"} <= reasons and seen["*"] > 1000  # both claims were exercised
    # off (the default): neither claim ends a game; fivefold / 75 moves still do
    ds = _one_game_dataset(backend, claim_draws=False)
    board = chess.Board("8/8/4k3/8/8/4K3/8/R7 w - - 100 80")
    ds.pool.set_board(0, board)
    assert _play_one(ds, board, chess.Move.from_uci("a1a2")) is None and reference_result(board) == "1/2-1/2"


# ---- d. gradient-norm clipping -----------------------------------------------------------------
class GradProbe(L.Callback):
    """The online gradients right before the step clips them (``rl.update.clip_gradients``, which the step
    calls before line 14's optimizer step, wrapped here to record them) and in ``on_before_optimizer_step``:
    what AdamW steps on (its closure, which runs that hook, is evaluated inside ``step`` before any
    parameter moves)."""

    def __init__(self, monkeypatch):
        self.before, self.stepped = [], []
        clip = update.clip_gradients

        def recording(online, max_norm):
            self.before.append([p.grad.clone() for p in online.parameters()])
            return clip(online, max_norm)

        monkeypatch.setattr(update, "clip_gradients", recording)  # the step looks it up in its module

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        self.stepped.append([p.grad.clone() for p in pl_module.online.parameters()])


def _norm(grads):
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()


def test_grad_clip_norm_clips_logs_the_norm_before_and_off_leaves_gradients_unchanged(monkeypatch):
    L.seed_everything(0)
    m, grads, probe = module(), GradProbe(monkeypatch), MetricsProbe()
    trainer(3, callbacks=[grads, probe]).fit(m)
    assert len(grads.before) == len(grads.stepped) == 3
    for before, stepped in zip(grads.before, grads.stepped):  # off (the paper): untouched
        assert all(torch.equal(a, b) for a, b in zip(before, stepped))
    assert all("optim/grad_norm" not in s for s in probe.steps)

    clip = 1e-3
    L.seed_everything(0)
    m, grads, probe = module(grad_clip_norm=clip), GradProbe(monkeypatch), MetricsProbe()
    trainer(3, callbacks=[grads, probe]).fit(m)
    for before, stepped, logged in zip(grads.before, grads.stepped, probe.steps):
        pre = _norm(before)
        assert pre > 10 * clip  # so the clip had to act
        assert logged["optim/grad_norm"] == pytest.approx(pre, rel=1e-5)  # the norm before clipping
        assert _norm(stepped) <= clip * (1 + 1e-5)  # what AdamW stepped on
        assert _norm(stepped) == pytest.approx(clip, rel=1e-4)
        for a, b in zip(before, stepped):  # a rescaling, same direction
            assert_close(b, a * (clip / pre), rtol=1e-4, atol=1e-12)
    with pytest.raises(SettingsError, match=r"model\.algorithm\.grad_clip_norm .* must be a finite number > 0"):
        module(grad_clip_norm=0.0)


def test_trainer_gradient_clip_val_is_refused_with_a_pointer_to_grad_clip_norm(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pdx_lightning.cli",
            "fit",
            "--model.base",
            "random:tiny",
            "--model.selfplay.n_games",
            "2",
            "--trainer.max_steps",
            "1",
            "--trainer.logger",
            "false",
            "--trainer.enable_checkpointing",
            "false",
            "--trainer.gradient_clip_val",
            "1.0",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    err = r.stderr.strip()
    assert r.returncode == 2 and "Traceback" not in err, err[-3000:]
    last = err.splitlines()[-1]  # after Lightning's own start-up lines (seed, devices)
    assert (
        last.startswith("pdx fit: error: --trainer.gradient_clip_val 1.0:")
        and "--model.algorithm.grad_clip_norm" in last
    ), err


def test_fit_help_documents_every_reference_option(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    r = subprocess.run(
        [sys.executable, "-m", "pdx_lightning.cli", "fit", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    text = " ".join(r.stdout.split())
    for option, phrase in [
        ("--model.algorithm.value_anchor", "base-WDL value anchor"),
        ("--model.algorithm.grad_clip_norm", "None = no clipping"),
        ("--model.algorithm.temperature_wdl_source", "whose WDL at s sets the adaptive τ"),
        ("--model.selfplay.claim_draws", "threefold repetition"),
    ]:
        assert option in text and phrase in text, option


# ---- e. the reference code's step loss, slowly -------------------------------------------------
def reference_step_loss(
    logits,
    mask,
    wdl_logits,
    action,
    rho,
    adv,
    target,
    base_policy,
    base_wdl,
    *,
    regularizer,
    beta,
    c_v,
    w_base,
    minibatch,
):
    """The loss the reference code minimizes for one batch, written from reading its ``step_loss``
    and ``optimizer_step`` (not copied): per minibatch of ``minibatch`` rows, in a loop over rows,

        policy  = mean(CE(masked logits, a)·ρ·A)
        wdl     = mean(ρ·KL(p̂ ‖ p_θ))                 (KL, not CE: the two differ by H(p̂))
        reg     = mean KL(π_base ‖ π_θ) | mean KL(π_θ ‖ π_base) | mean KL(π_θ ‖ uniform over legal)
        anchor  = mean KL(p_base ‖ p_θ)  (mean KL(p_θ ‖ p_base) with the reverse-KL regularizer)
        loss    = policy + β·reg + c_v·wdl + w_base·c_v·anchor

    with illegal slots at a logit of −1e9 and probabilities clamped at 1e-8 inside logs; the batch's
    loss is the plain mean of its minibatches' losses."""
    eps = 1e-8
    n = logits.shape[0]
    chunk_losses = []
    for start in range(0, n, minibatch):
        rows = range(start, min(n, start + minibatch))
        pol = wdl_term = reg = anchor = 0.0
        for i in rows:
            z = torch.where(mask[i], logits[i], torch.full_like(logits[i], -1e9))
            log_pi = z - torch.logsumexp(z, 0)  # over all 4,288 slots
            pi = log_pi.exp()
            pol = pol + (-log_pi[action[i]]) * rho[i] * adv[i]
            p_wdl = torch.softmax(wdl_logits[i], 0)  # the net's WDL probabilities
            log_wdl = torch.log(p_wdl.clamp_min(eps))
            kl_target = 0.0
            for o in range(3):
                if target[i, o] > 0:
                    kl_target = kl_target + target[i, o] * (torch.log(target[i, o]) - log_wdl[o])
            wdl_term = wdl_term + kl_target * rho[i]
            legal = mask[i].nonzero().flatten().tolist()
            if regularizer == "forward_kl":
                r = 0.0
                for a in range(POLICY_SIZE):
                    if base_policy[i, a] > 0:
                        r = r + base_policy[i, a] * (torch.log(base_policy[i, a]) - log_pi[a])
            elif regularizer == "reverse_kl":
                p, q = pi.clamp_min(eps), base_policy[i].clamp_min(eps)
                r = (p * (torch.log(p) - torch.log(q))).sum()
            elif regularizer == "entropy":
                pl = pi[legal] / pi[legal].sum().clamp_min(eps)
                r = (pl * (torch.log(pl.clamp_min(eps)) + math.log(len(legal)))).sum()
            else:
                r = 0.0
            reg = reg + r
            a_term = 0.0
            for o in range(3):
                if regularizer == "reverse_kl":
                    a_term = a_term + p_wdl[o] * (log_wdl[o] - torch.log(base_wdl[i, o].clamp_min(eps)))
                elif base_wdl[i, o] > 0:
                    a_term = a_term + base_wdl[i, o] * (torch.log(base_wdl[i, o]) - log_wdl[o])
            anchor = anchor + a_term
        m = len(rows)
        chunk_losses.append(pol / m + beta * reg / m + c_v * wdl_term / m + w_base * c_v * anchor / m)
    return sum(chunk_losses) / len(chunk_losses)


def _fixed_batch():
    """8 rows of 1, 2, 5, 20, 30, 40, 100 and 218 legal moves at seeded slots, seeded logits; soft and
    one-hot value targets (a terminal row), ρ ∈ (0, 1], A of both signs."""
    g = torch.Generator().manual_seed(30)
    n = 8
    mask = torch.zeros(n, POLICY_SIZE, dtype=torch.bool)
    for i, k in enumerate((1, 2, 5, 20, 30, 40, 100, 218)):
        mask[i, torch.randperm(POLICY_SIZE, generator=g)[:k]] = True
    logits = 3 * torch.randn(n, POLICY_SIZE, generator=g, dtype=F64)
    wdl = torch.randn(n, 3, generator=g, dtype=F64)
    action = torch.multinomial(mask.double(), 1, generator=g).squeeze(1)
    rho = torch.rand(n, generator=g, dtype=F64).clamp_min(0.05)
    rho[::3] = 1.0
    adv = 0.4 * torch.randn(n, generator=g, dtype=F64)
    target = torch.randn(n, 3, generator=g, dtype=F64).softmax(-1)
    target[2] = torch.tensor([0.0, 1.0, 0.0], dtype=F64)  # a claimed draw
    target[5] = torch.tensor([1.0, 0.0, 0.0], dtype=F64)  # a mate
    base_policy = masked_log_softmax(3 * torch.randn(n, POLICY_SIZE, generator=g, dtype=F64), mask).exp()
    base_wdl = torch.randn(n, 3, generator=g, dtype=F64).softmax(-1)
    return logits, mask, wdl, action, rho, adv, target, base_policy, base_wdl


@pytest.mark.parametrize("kind", EXPLORATION_TERMS)
def test_pdx_loss_with_the_reference_options_matches_the_reference_step_loss(kind):
    """Same gradient, and the same value up to constants: pdx's value term is Eq. 15's cross-entropy,
    the reference's KL(p̂‖p_θ) = CE − H(p̂), so pdx's loss is c_v·mean(ρ·H(p̂)) higher; for the entropy
    arm the reference's KL to uniform is −H + log |𝒜(s)|, so pdx's is β·mean(log |𝒜(s)|) lower."""
    logits, mask, wdl, action, rho, adv, target, base_policy, base_wdl = _fixed_batch()
    beta, c_v, w_base = 0.01, 0.2, 0.1  # the reference code's defaults
    z_ref, w_ref = logits.clone().requires_grad_(), wdl.clone().requires_grad_()
    ref = reference_step_loss(
        z_ref,
        mask,
        w_ref,
        action,
        rho,
        adv,
        target,
        base_policy,
        base_wdl,
        regularizer=kind,
        beta=beta,
        c_v=c_v,
        w_base=w_base,
        minibatch=4,
    )
    ref.backward()
    z, w = logits.clone().requires_grad_(), wdl.clone().requires_grad_()
    # pdx over the batch in micro-batches of 4 weighted by their share, as PDXModule.training_step does
    total = 0.0
    for sl in (slice(0, 4), slice(4, 8)):
        out = pdx_loss(
            masked_log_softmax(z[sl], mask[sl]),  # log π_θ, as the step computes it from the logits
            w[sl],
            mask[sl],
            action[sl],
            rho[sl],
            adv[sl],
            target[sl],
            base_policy[sl].log(),
            exploration=kind,
            beta=beta,
            c_v=c_v,
            wdl_base=base_wdl[sl],
            value_anchor=w_base,
        )
        total = total + out.total * 0.5
    total.backward()
    h_target = -(target * torch.where(target > 0, target.log(), torch.zeros_like(target))).sum(-1)
    offset = c_v * (rho * h_target).mean()
    if kind == "entropy":
        offset = offset - beta * mask.sum(1).double().log().mean()
    # the reference's reverse KL clamps π_θ at 1e-8 inside its log: legal moves rarer than that (a few
    # of the 218-move row) move its value by ~1e-7; every other arm agrees to float64 rounding
    tol = 1e-6 if kind == "reverse_kl" else 1e-9
    assert total.item() == pytest.approx(ref.item() + offset.item(), rel=tol, abs=tol)
    assert total.item() != pytest.approx(ref.item(), rel=1e-6)  # the offset is real
    assert_close(z.grad, z_ref.grad, rtol=1e-6, atol=tol)
    assert_close(w.grad, w_ref.grad, rtol=1e-6, atol=tol)
    # and the anchor is what closes the gap: without it pdx's gradient differs
    w_off = wdl.clone().requires_grad_()
    log_p = masked_log_softmax(logits, mask)
    pdx_loss(
        log_p, w_off, mask, action, rho, adv, target, base_policy.log(), exploration=kind, beta=beta, c_v=c_v
    ).total.backward()
    assert (w_off.grad - w.grad).abs().max() > 1e-4
