"""PDXModule with a real Lightning Trainer on the tiny preset (CPU)."""

import functools
import subprocess
import sys
import textwrap
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import SETTING_NAMES, PDXSettings, SettingsError

torch.set_num_threads(1)
FAST = dict(lr_backbone=1e-3, lr_final_block=1e-3, lr_policy_head=1e-3, lr_value_head=1e-3, warmup_steps=1)


def module(n_games=8, selfplay_kw=None, **kw):
    """A tiny PDXModule; ``kw`` naming a ``PDXSettings`` field go to ``algorithm``, the rest to the module."""
    sp = SelfPlayConfig(n_games=n_games, opening_max_moves=4, max_plies=30, seed=1, **(selfplay_kw or {}))
    algorithm = PDXSettings(**{"micro_batch": 4, **{k: kw.pop(k) for k in list(kw) if k in SETTING_NAMES}})
    return PDXModule(base="random:tiny", algorithm=algorithm, selfplay=sp, **{**FAST, **kw})


def trainer(steps, **kw):
    kw.setdefault("logger", False)
    kw.setdefault("enable_checkpointing", False)
    return L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        enable_progress_bar=False,
        log_every_n_steps=1,
        enable_model_summary=False,
        **kw,
    )


def test_zero_staleness_each_batch_is_generated_by_the_parameters_it_updates():
    m = module()
    begun = []
    orig = m.dataset._begin
    m.dataset._begin = lambda: (lambda b: (begun.append((b.version, m.param_version)), b)[1])(orig())
    trainer(5).fit(m)
    # no prefetch: exactly one batch per step, each begun at the version its step updates
    assert begun == [(v, v) for v in range(5)]
    assert m.param_version == 5


def test_self_play_reads_the_ema_and_the_base_and_the_parameter_version():
    m = module()
    nets = m.dataset.networks
    assert nets.ema is m.ema and nets.base is m.base
    assert not any(net is m.online for net in (nets.ema, nets.base))
    assert nets.version() == 0
    m.param_version = 7
    assert nets.version() == 7


def test_the_online_masked_log_softmax_is_computed_once_per_micro_batch(monkeypatch):
    """log π_θ(·|s) with gradient: one masked log-softmax per micro-batch, shared by sampling
    (collect), the loss and the KL metrics (the EMA/base passes and μ run without gradient)."""
    import pdx_lightning.rl.pdx_step as M

    calls = []

    def counting(orig):
        def f(logits, mask):
            calls.append(logits.requires_grad)
            return orig(logits, mask)

        return f

    monkeypatch.setattr(M, "masked_log_softmax", counting(M.masked_log_softmax))  # pdx_loss takes log π_θ itself
    m = module()  # 8 games in micro-batches of 4
    trainer(2).fit(m)
    assert calls.count(True) == 2 * 2


class ModeProbe(L.Callback):
    def __init__(self):
        self.modes = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.modes.append((pl_module.online.training, pl_module.ema.training, pl_module.base.training))


def test_roles_eval_mode_frozen_and_out_of_the_optimizer():
    m = module()
    probe = ModeProbe()
    t = trainer(2, callbacks=[probe])
    t.fit(m)
    assert probe.modes == [(True, False, False)] * 2
    assert not any(p.requires_grad for p in m.ema.parameters())
    assert not any(p.requires_grad for p in m.base.parameters())
    in_opt = {id(p) for g in t.optimizers[0].param_groups for p in g["params"]}
    assert in_opt == {id(p) for p in m.online.parameters()}
    assert [g["name"] for g in t.optimizers[0].param_groups] == ["backbone", "final_block", "policy_head", "value_head"]


def test_online_moves_ema_follows_by_alpha_and_base_stays():
    """θ̄ ← αθ̄ + (1−α)θ (Eq. 11) with α = 0.9, so swapping α and 1−α would show."""
    m = module(ema_decay=0.9)
    base0 = [p.clone() for p in m.base.parameters()]
    ema0 = [p.clone() for p in m.ema.parameters()]
    trainer(1).fit(m)
    for b0, b in zip(base0, m.base.parameters()):
        assert torch.equal(b0, b)
    moved = 0
    for e0, e, o in zip(ema0, m.ema.parameters(), m.online.parameters()):
        torch.testing.assert_close(e, 0.9 * e0 + 0.1 * o)  # after one step, from θ̄₀ = θ₀ = base
        moved += int((o - e0).abs().max() > 1e-4)
    assert moved > len(ema0) // 2  # the online weights did move


def test_optimizer_defaults_are_adamw_with_the_papers_betas_and_no_weight_decay():
    m = PDXModule(base="random:tiny", selfplay=SelfPlayConfig(n_games=2))
    opt = m.configure_optimizers()["optimizer"]
    assert type(opt) is torch.optim.AdamW
    for g in opt.param_groups:
        assert g["betas"] == (0.9, 0.98) and g["weight_decay"] == 0.0 and g["eps"] == 1e-8
    peak = {"backbone": 3e-6, "final_block": 1e-5, "policy_head": 1e-5, "value_head": 3e-5}
    assert {g["name"]: g["initial_lr"] for g in opt.param_groups} == peak
    assert m.hparams.warmup_steps == 200


PEAK = {"backbone": 1e-4, "final_block": 2e-4, "policy_head": 3e-4, "value_head": 5e-4}


def _lrs(opt) -> dict[str, float]:
    return {g["name"]: g["lr"] for g in opt.param_groups}


def test_optimizer_groups_betas_weight_decay_and_warmup_schedule():
    """The four layerwise groups (App. G) at their own peak rates, AdamW's (β1, β2) and weight decay
    as given, and the rate at optimizer step t = peak · min(1, (t + 1) / warmup_steps)."""
    m = module(
        lr_backbone=PEAK["backbone"],
        lr_final_block=PEAK["final_block"],
        lr_policy_head=PEAK["policy_head"],
        lr_value_head=PEAK["value_head"],
        warmup_steps=4,
        adam_betas=(0.8, 0.95),
        weight_decay=0.05,
    )  # not AdamW's defaults
    conf = m.configure_optimizers()
    opt, sched = conf["optimizer"], conf["lr_scheduler"]["scheduler"]
    assert type(opt) is torch.optim.AdamW and conf["lr_scheduler"]["interval"] == "step"
    groups = m.online.param_groups()
    assert [g["name"] for g in opt.param_groups] == ["backbone", "final_block", "policy_head", "value_head"]
    for g in opt.param_groups:
        assert [id(p) for p in g["params"]] == [id(p) for p in groups[g["name"]]]
        assert g["betas"] == (0.8, 0.95) and g["weight_decay"] == 0.05
    seen = []
    for _ in range(7):
        seen.append(_lrs(opt))
        opt.step()
        sched.step()
    for t, lrs in enumerate(seen):
        factor = min(1.0, (t + 1) / 4)  # 1/4, 2/4, 3/4, 1, 1, 1, 1
        assert lrs == pytest.approx({k: v * factor for k, v in PEAK.items()}, rel=1e-12), t


class LRProbe(L.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.seen.append(_lrs(trainer.optimizers[0]))


def test_training_steps_the_warmup_once_per_optimizer_step():
    m = module(
        lr_backbone=PEAK["backbone"],
        lr_final_block=PEAK["final_block"],
        lr_policy_head=PEAK["policy_head"],
        lr_value_head=PEAK["value_head"],
        warmup_steps=3,
    )
    probe = LRProbe()
    trainer(4, callbacks=[probe]).fit(m)
    factors = [1 / 3, 2 / 3, 1.0, 1.0]
    assert probe.seen == [pytest.approx({k: v * f for k, v in PEAK.items()}, rel=1e-12) for f in factors]


@pytest.mark.parametrize("kind", ["none", "entropy", "reverse_kl", "forward_kl"])
def test_every_arm_trains_and_logs(kind, tmp_path):
    from lightning.pytorch.loggers import CSVLogger

    m = module(exploration=kind, beta=0.1)
    trainer(3, logger=CSVLogger(tmp_path)).fit(m)
    import csv

    with open(next(tmp_path.rglob("metrics.csv"))) as f:
        rows = list(csv.DictReader(f))
    keys = set(rows[0])
    for k in [
        "loss/policy",
        "loss/explore",
        "loss/value",
        "kl/forward_to_base",
        "kl/reverse_to_base",
        "policy/entropy",
        "selfplay/tau_mean",
        "selfplay/rho_mean",
        "selfplay/rho_below_1",
        "selfplay/adv_mean",
        "selfplay/adv_std",
        "selfplay/games_finished",
        "perf/transitions_per_s",
    ]:
        assert k in keys, k


def test_bad_hyperparameters_are_named_errors():
    with pytest.raises(SettingsError, match=r"model\.algorithm\.exploration: .*forward_kl"):
        module(exploration="forward")
    with pytest.raises(ValueError, match=r"model\.algorithm\.beta"):
        module(beta=-1.0)


def _moves(m):
    return [[mv.uci() for mv in b.move_stack] for b in m.dataset.boards]


class TauProbe(L.Callback):
    """τ(s) of every step's batch, read from the step's logged mean (exact to float32)."""

    def __init__(self):
        self.tau = {}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.tau[trainer.global_step] = float(trainer.callback_metrics["selfplay/tau_mean"])


# the resumed run checkpoints into the directory it resumes from, as `--ckpt_path last` does (the CLI
# silences this note on a resume too)
@pytest.mark.filterwarnings("ignore:Checkpoint directory .* exists and is not empty:UserWarning")
@pytest.mark.parametrize("reuse", [False, True], ids=["fresh_ema_eval", "reuse_successor_eval"])
def test_resume_continues_the_same_games_and_weights(tmp_path, reuse):
    """A run interrupted after step 3 and resumed from its checkpoint equals an uninterrupted one
    exactly: games, τ at every step, online and EMA weights. With ``reuse_successor_eval`` the
    EMA evaluations cached for step 4 (made before step 3's EMA update) travel in the checkpoint."""
    kw = dict(reuse_successor_eval=reuse, lr_value_head=3e-2)
    L.seed_everything(0)
    full, full_tau = module(**kw), TauProbe()
    trainer(5, callbacks=[full_tau]).fit(full)

    L.seed_everything(0)
    first = module(**kw)
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer(3, callbacks=[ckpt], enable_checkpointing=True).fit(first)
    L.seed_everything(0)
    resumed, resumed_tau = module(**kw), TauProbe()
    again = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer(5, callbacks=[again, resumed_tau], enable_checkpointing=True).fit(
        resumed, ckpt_path=str(tmp_path / "last.ckpt"), weights_only=True
    )
    assert resumed.param_version == 5
    assert _moves(resumed) == _moves(full)
    assert resumed_tau.tau == {s: full_tau.tau[s] for s in (4, 5)}
    for a, b in zip(
        [*full.ema.parameters(), *full.online.parameters()], [*resumed.ema.parameters(), *resumed.online.parameters()]
    ):
        assert torch.equal(a, b)
    blob = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert not any(k.startswith("base.") for k in blob["state_dict"])  # base referenced, not copied
    assert blob["pdx_base"]["name"] == "random:tiny"


DDP_SCRIPT = textwrap.dedent("""
    import hashlib, sys, torch, lightning as L
    torch.set_num_threads(1)
    from pdx_lightning.rl.module import PDXModule
    from pdx_lightning.rl.selfplay import SelfPlayConfig
    from pdx_lightning.rl.settings import PDXSettings
    out = sys.argv[1]
    # each rank owns its games and its two chess worker threads
    sp = SelfPlayConfig(n_games=8, opening_max_moves=4, max_plies=30, seed=1, workers=2)
    m = PDXModule(base="random:tiny", algorithm=PDXSettings(micro_batch=4), selfplay=sp, lr_backbone=1e-3,
                  lr_final_block=1e-3, lr_policy_head=1e-3, lr_value_head=1e-3, warmup_steps=1)
    t = L.Trainer(max_steps=3, accelerator="cpu", devices=2, strategy="ddp", logger=False,
                  enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    t.fit(m)
    h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.ema.parameters())).hexdigest()
    games = ";".join(" ".join(mv.uci() for mv in b.move_stack) for b in m.dataset.boards)
    with open(f"{out}/rank{t.global_rank}.txt", "w") as f:
        f.write(f"{h}\\n{len(m.dataset.boards)}\\n{games}\\n{m.param_version}\\n")
""")


@pytest.mark.slow
def test_ddp_two_cpu_processes_identical_ema_different_games(tmp_path):
    script = tmp_path / "ddp_run.py"
    script.write_text(DDP_SCRIPT)
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    r0 = (tmp_path / "rank0.txt").read_text().splitlines()
    r1 = (tmp_path / "rank1.txt").read_text().splitlines()
    assert r0[0] == r1[0], "EMA differs across ranks"
    assert r0[1] == r1[1] == "4", "each rank owns N / world_size games"
    assert r0[2] != r1[2], "ranks play the same games"
    assert r0[3] == r1[3] == "3"


SUITE, MATES = "tests/fixtures/lichess_sample.csv", "tests/fixtures/generated_altmoves.csv"


def _ema_metrics(net, suite=SUITE, mates=(MATES,)):
    from pdx_lightning.evaluation.suite import load_suite
    from tests.helpers import evaluate_for_validation

    puzzles = load_suite(suite).puzzles if suite else []
    return evaluate_for_validation(net, puzzles, load_suite(list(mates)).puzzles if mates else [])


def test_validate_scores_the_ema_on_the_validation_suite(tmp_path):
    m = module(val_suite=SUITE, val_mates=[MATES])
    with torch.no_grad():  # make the EMA differ from the online network
        for p in m.ema.parameters():
            p.add_(0.05 * torch.randn_like(p))
    out = trainer(1).validate(m, verbose=False)[0]
    assert {"puzzles/acc", "puzzles/p_star_geo", "puzzles/nll", "mates/acc_1"} <= set(out)
    expect, online = _ema_metrics(m.ema), _ema_metrics(m.online)
    assert out == pytest.approx(expect, rel=1e-5)  # the EMA's scores, not the online's
    assert online["puzzles/nll"] != pytest.approx(expect["puzzles/nll"], rel=1e-5)
    only_mates = trainer(1).validate(module(val_mates=[MATES]), verbose=False)[0]
    assert "mates/acc_1" in only_mates and not any(k.startswith("puzzles/") for k in only_mates)
    assert trainer(1).validate(module(), verbose=False) == []  # no files: no validation loop
    # a checkpoint's hyperparameters (plain dicts) rebuild the module
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer(1, callbacks=[ckpt], enable_checkpointing=True).fit(m)
    again = PDXModule.load_from_checkpoint(tmp_path / "last.ckpt", weights_only=True)
    assert again.dataset.cfg.n_games == 8
    assert "val_suite" not in again.hparams and again.puzzle_validation is None  # a validation setting


def test_pdx_validate_cli_accepts_model_val_suite_and_scores_the_checkpoints_ema(tmp_path, monkeypatch):
    """`pdx validate --config conf/fit/pdx.yaml --ckpt_path CKPT --model.val_suite FILE` (as the README says)."""
    from pdx_lightning.rl.module import run_cli

    root = Path(__file__).resolve().parents[2]
    m = module()
    trainer(
        1,
        callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)],
        enable_checkpointing=True,
    ).fit(m)
    monkeypatch.chdir(tmp_path)
    results, validate = [], L.Trainer.validate

    @functools.wraps(validate)  # LightningCLI reads the signature (ckpt_path, ...)
    def recording(self, *a, **k):
        results.append(validate(self, *a, **k))
        return results[-1]

    monkeypatch.setattr(L.Trainer, "validate", recording)
    run_cli(
        [
            "validate",
            "--config",
            str(root / "conf" / "fit" / "pdx.yaml"),
            "--model.base",
            "random:tiny",
            "--trainer.logger",
            "false",
            "--trainer.enable_progress_bar",
            "false",
            "--ckpt_path",
            str(tmp_path / "last.ckpt"),
            "--model.val_suite",
            str(root / SUITE),
            "--model.val_mates",
            f"[{root / MATES}]",
        ]
    )
    expect = _ema_metrics(m.ema, str(root / SUITE), [str(root / MATES)])
    assert {"puzzles/acc", "puzzles/nll", "mates/acc_1"} <= set(results[0][0])
    assert results[0][0] == pytest.approx(expect, rel=1e-5)  # the checkpoint's EMA, scored


def test_the_rl_layer_reaches_evaluation_only_through_the_callbacks():
    """No module of pdx_lightning.rl imports the evaluation layer, not even lazily (PuzzleValidation
    does it for PDXModule's validation loop)."""
    import ast

    rl = Path(__file__).resolve().parents[2] / "pdx_lightning" / "rl"
    files = sorted(rl.glob("*.py"))
    assert any(f.name == "module.py" for f in files)
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.startswith("pdx_lightning.evaluation") for n in names), f"{path.name}: {names}"
