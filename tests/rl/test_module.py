"""PDXModule with a real Lightning Trainer on the tiny preset (CPU)."""
import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.objectives import UnknownExplorationTerm
from pdx_lightning.rl.selfplay import SelfPlayConfig

torch.set_num_threads(1)
FAST = dict(lr_backbone=1e-3, lr_final_block=1e-3, lr_policy_head=1e-3, lr_value_head=1e-3, warmup_steps=1)


def module(n_games=8, **kw):
    sp = SelfPlayConfig(n_games=n_games, opening_max_moves=4, max_plies=30, micro_batch=4, seed=1)
    return PDXModule(base="random:tiny", selfplay=sp, **{**FAST, **kw})


def trainer(steps, **kw):
    kw.setdefault("logger", False)
    kw.setdefault("enable_checkpointing", False)
    return L.Trainer(max_steps=steps, accelerator="cpu", enable_progress_bar=False, log_every_n_steps=1,
                     enable_model_summary=False, **kw)


def test_zero_staleness_each_batch_is_generated_by_the_parameters_it_updates():
    m = module()
    begun = []
    orig = m.dataset._begin
    m.dataset._begin = lambda: (lambda b: (begun.append((b.version, m.param_version)), b)[1])(orig())
    trainer(5).fit(m)
    # no prefetch: exactly one batch per step, each begun at the version its step updates
    assert begun == [(v, v) for v in range(5)]
    assert m.param_version == 5


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
    m = module(ema_decay=0.5)
    base0 = [p.clone() for p in m.base.parameters()]
    trainer(1).fit(m)
    for b0, b in zip(base0, m.base.parameters()):
        assert torch.equal(b0, b)
    # after one step: ema = 0.5·base + 0.5·online
    for b0, e, o in zip(base0, m.ema.parameters(), m.online.parameters()):
        torch.testing.assert_close(e, 0.5 * b0 + 0.5 * o)
    assert any(not torch.equal(b0, o) for b0, o in zip(base0, m.online.parameters()))


@pytest.mark.parametrize("kind", ["none", "entropy", "reverse_kl", "forward_kl"])
def test_every_arm_trains_and_logs(kind, tmp_path):
    from lightning.pytorch.loggers import CSVLogger
    m = module(exploration=kind, beta=0.1)
    trainer(3, logger=CSVLogger(tmp_path)).fit(m)
    import csv
    rows = list(csv.DictReader(open(next(tmp_path.rglob("metrics.csv")))))
    keys = set(rows[0])
    for k in ["loss/policy", "loss/explore", "loss/value", "kl/forward_to_base", "kl/reverse_to_base",
              "policy/entropy", "selfplay/tau_mean", "selfplay/rho_mean", "selfplay/rho_below_1",
              "selfplay/adv_mean", "selfplay/adv_std", "selfplay/games_finished", "perf/transitions_per_s"]:
        assert k in keys, k


def test_bad_hyperparameters_are_named_errors():
    with pytest.raises(UnknownExplorationTerm, match="forward_kl"):
        module(exploration="forward")
    with pytest.raises(ValueError, match="beta"):
        module(beta=-1.0)


def _moves(m):
    return [[mv.uci() for mv in b.move_stack] for b in m.dataset.boards]


def test_resume_continues_the_same_games_and_weights(tmp_path):
    L.seed_everything(0)
    full = module()
    trainer(5).fit(full)

    L.seed_everything(0)
    first = module()
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer(3, callbacks=[ckpt], enable_checkpointing=True).fit(first)
    L.seed_everything(0)
    resumed = module()
    trainer(5, callbacks=[ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)],
            enable_checkpointing=True).fit(resumed, ckpt_path=str(tmp_path / "last.ckpt"), weights_only=True)
    assert resumed.param_version == 5
    assert _moves(resumed) == _moves(full)
    for a, b in zip(full.ema.parameters(), resumed.ema.parameters()):
        torch.testing.assert_close(a, b)
    blob = torch.load(tmp_path / "last.ckpt", weights_only=True)
    assert not any(k.startswith("base.") for k in blob["state_dict"])   # base referenced, not copied
    assert blob["pdx_base"]["name"] == "random:tiny"


DDP_SCRIPT = textwrap.dedent('''
    import hashlib, sys, torch, lightning as L
    torch.set_num_threads(1)
    from pdx_lightning.rl.module import PDXModule
    from pdx_lightning.rl.selfplay import SelfPlayConfig
    out = sys.argv[1]
    sp = SelfPlayConfig(n_games=8, opening_max_moves=4, max_plies=30, micro_batch=4, seed=1)
    m = PDXModule(base="random:tiny", selfplay=sp, lr_backbone=1e-3, lr_final_block=1e-3,
                  lr_policy_head=1e-3, lr_value_head=1e-3, warmup_steps=1)
    t = L.Trainer(max_steps=3, accelerator="cpu", devices=2, strategy="ddp", logger=False,
                  enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    t.fit(m)
    h = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.ema.parameters())).hexdigest()
    games = ";".join(" ".join(mv.uci() for mv in b.move_stack) for b in m.dataset.boards)
    with open(f"{out}/rank{t.global_rank}.txt", "w") as f:
        f.write(f"{h}\\n{len(m.dataset.boards)}\\n{games}\\n{m.param_version}\\n")
''')


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


def test_validate_scores_the_ema_on_the_validation_suite(tmp_path):
    m = module(val_suite="tests/fixtures/lichess_sample.csv", val_mates=["tests/fixtures/generated_altmoves.csv"])
    out = trainer(1).validate(m, verbose=False)[0]
    assert {"puzzles/acc", "puzzles/p_star_geo", "mates/acc_1"} <= set(out)
    # a checkpoint's hyperparameters (plain dicts) rebuild the module
    ckpt = ModelCheckpoint(dirpath=tmp_path, save_last=True, every_n_train_steps=1)
    trainer(1, callbacks=[ckpt], enable_checkpointing=True).fit(m)
    again = PDXModule.load_from_checkpoint(tmp_path / "last.ckpt", weights_only=True)
    assert again.dataset.cfg.n_games == 8
