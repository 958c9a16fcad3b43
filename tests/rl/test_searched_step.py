"""The searched trainer's step as PDX's has it: guards, the precision refusal, β schedules, DDP-synced scalars."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import chess
import lightning as L
import pytest
import torch

from callbacks import BetaSchedule
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.searched_module import SearchedModule
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings, SearchedSettingsError
from pdx_lightning.rl.settings import PDXSettings, SettingsError
from pdx_lightning.rl.step_metrics import combine_columns
from pdx_lightning.runtime.checkpoint_read import read_checkpoint
from tests.rl.test_numerics import InjectAt, trainer  # the Trainer and injection of PDX's NaN tests

ROOT = Path(__file__).resolve().parents[2]
PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]


def module(**algorithm) -> SearchedModule:
    settings = {"n_games": 4, "nodes": 4, "batch_size": 16, "min_buffer": 32, "max_plies": 30, "micro_batch": 8}
    return SearchedModule(base="random:tiny", algorithm=SearchedSelfPlaySettings(**{**settings, **algorithm}), seed=1)


class Record(L.Callback):
    def __init__(self, *keys):
        self.keys, self.rows = keys, []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.rows.append({k: float(trainer.callback_metrics[k]) for k in self.keys if k in trainer.callback_metrics})


@pytest.mark.parametrize(
    ("inject", "expect"),
    [
        (
            lambda m: m.online.policy_head.wq.weight.data.fill_(float("nan")),
            r"^step 2: non-finite online policy logits",
        ),
        (lambda m: m.online.value_head.out.bias.data.fill_(float("inf")), r"^step 2: non-finite online WDL logits"),
        (lambda m: m.base.policy_head.wq.weight.data.fill_(float("nan")), r"^step 2: non-finite π_base policy logits"),
        (lambda m: m.buffer.rows.visits.fill(float("nan")), r"^step 2: non-finite visit-share target"),
        (lambda m: m.base.value_head.out.bias.data.fill_(float("inf")), r"^step 2: non-finite p_base WDL logits"),
    ],
)
def test_a_nan_in_a_searched_step_stops_training_in_one_line_before_the_optimizer_step(inject, expect):
    m = module(beta=0.1, value_anchor=1.0)
    snapshot = {}
    keep = InjectAt(2, lambda mod: snapshot.update({k: v.clone() for k, v in mod.online.state_dict().items()}))
    t = trainer(5, [keep, InjectAt(2, inject)])
    with pytest.raises(FloatingPointError, match=expect) as e:
        t.fit(m)
    assert "\n" not in str(e.value) and "training stopped before the optimizer step" in str(e.value)
    assert t.global_step == 2 and m.param_version == 2
    if "target" in expect:  # the parameters were not moved by the bad step
        assert all(torch.equal(v, snapshot[k]) for k, v in m.online.state_dict().items())


@pytest.mark.parametrize("trainer_kind", ["pdx", "searched"])
def test_gradient_clipping_under_16_bit_amp_is_refused_in_one_line_by_both_trainers(trainer_kind):
    """(A CPU Trainer turns 16-mixed into bf16-mixed: the Trainer of a GPU run is stood in for.)"""
    if trainer_kind == "pdx":
        m, error = PDXModule(base="random:tiny", algorithm=PDXSettings(grad_clip_norm=1.0)), SettingsError
    else:
        m, error = module(grad_clip_norm=1.0), SearchedSettingsError
    m._trainer = SimpleNamespace(precision="16-mixed")  # what setup() reads of the Trainer
    with pytest.raises(error, match=r"^model.algorithm.grad_clip_norm with --trainer.precision 16-mixed: .*bf16"):
        m.setup("fit")
    m._trainer = SimpleNamespace(precision="bf16-mixed")
    m.setup("fit")


def test_a_beta_schedule_changes_the_searched_steps_beta():
    rec = Record("selfplay/beta", "loss/kl_base", "loss/total")
    trainer(4, [BetaSchedule(kind="linear", start=0.4, end=0.0, steps=2), rec]).fit(module(beta=0.0))
    assert [r["selfplay/beta"] for r in rec.rows] == pytest.approx([0.4, 0.2, 0.0, 0.0])
    assert "loss/kl_base" in rec.rows[0]  # the base's KL entered the loss while β > 0


def _wdl_drift(m: SearchedModule) -> float:
    """Mean KL(p_base ‖ p_online) over a few positions of a real game."""
    board, boards = chess.Board(), []
    for uci in ("e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"):
        board.push_uci(uci)
        boards.append(board.copy())
    x = torch.as_tensor(encode_boards(boards)).float()
    with torch.no_grad():
        base, online = torch.softmax(m.base(x).wdl, -1), torch.log_softmax(m.online(x).wdl, -1)
    return float((base * (base.log() - online)).sum(-1).mean())


def test_the_value_anchor_holds_the_value_head_to_the_base(monkeypatch):
    """The online network starts as the base, so the anchor is 0 at the first step and grows as the value
    head moves; with a large w the value head ends nearer the base's W/D/L than without. The base is
    evaluated for the anchor only: with β 0 and no anchor the step never calls it."""

    def run(w):
        m = module(value_anchor=w)
        calls = []
        forward = m.base.forward
        monkeypatch.setattr(m.base, "forward", lambda x: calls.append(len(x)) or forward(x))
        rec = Record("loss/anchor", "loss/value")
        trainer(8, [rec]).fit(m)
        return m, rec.rows, calls

    held, rows, calls = run(100.0)
    assert rows[0]["loss/anchor"] == pytest.approx(0.0, abs=1e-7) and rows[-1]["loss/anchor"] > 0
    assert sum(calls) == 8 * 16  # one base call per trained position
    free, rows, calls = run(0.0)
    assert "loss/anchor" not in rows[-1] and calls == []
    assert _wdl_drift(held) < 0.5 * _wdl_drift(free)


def test_the_settings_and_seed_are_in_the_logged_hyperparameters(tmp_path):
    m = module(beta=0.25)
    t = L.Trainer(max_steps=1, accelerator="cpu", default_root_dir=tmp_path, enable_progress_bar=False,
                  enable_model_summary=False, enable_checkpointing=False,
                  logger=L.pytorch.loggers.CSVLogger(tmp_path))  # fmt: skip
    t.fit(m)
    text = next(tmp_path.rglob("hparams.yaml")).read_text()
    assert "algorithm:" in text and "beta: 0.25" in text and "seed: 1" in text


def test_combine_columns_sums_means_and_weights_by_hand():
    rows = torch.tensor([[16, 1.0, 10, 2, 30.0], [16, 3.0, 5, 6, 90.0]], dtype=torch.float64)
    names = ["loss/total", "selfplay/games_finished", "optim/grad_norm", "selfplay/game_length"]
    reduce = {"selfplay/games_finished": "sum", "optim/grad_norm": "first",
              "selfplay/game_length": "per:selfplay/games_finished"}  # fmt: skip
    got = combine_columns(rows, names, reduce)
    assert got == {"loss/total": 2.0, "selfplay/games_finished": 15.0, "optim/grad_norm": 2.0,
                   "selfplay/game_length": (30 * 10 + 90 * 5) / 15}  # fmt: skip
    one = combine_columns(rows[:1], names, reduce)
    assert one == {"loss/total": 1.0, "selfplay/games_finished": 10.0, "optim/grad_norm": 2.0,
                   "selfplay/game_length": 30.0}  # fmt: skip


@pytest.mark.slow
def test_two_ddp_ranks_log_both_ranks_games(tmp_path):
    """`pdx fit` searched on 2 DDP ranks (gloo): the logged game count and replay counters are both
    ranks' (the sums of the two ranks' own states in the final checkpoint), not rank 0's."""
    argv = [*PDX, "fit", "--config", str(ROOT / "conf/fit/searched.yaml"), "--model.base", "random:tiny",
            "--model.algorithm.n_games", "8", "--model.algorithm.nodes", "4", "--model.algorithm.batch_size", "16",
            "--model.algorithm.min_buffer", "32", "--model.algorithm.max_plies", "12",
            "--model.algorithm.micro_batch", "8",
            "--trainer.max_steps", "3", "--trainer.enable_progress_bar", "false",
            "--trainer.strategy", "ddp", "--trainer.accelerator", "cpu", "--trainer.devices", "2",
            "--trainer.logger", "lightning.pytorch.loggers.CSVLogger", "--trainer.logger.save_dir", str(tmp_path),
            "--trainer.callbacks", '[{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", '
            '"init_args": {"save_last": true, "dirpath": "ck"}}]']  # fmt: skip
    r = subprocess.run(argv, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                       text=True, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    ckpt = read_checkpoint(tmp_path / "ck" / "last.ckpt")
    states = ckpt["pdx_searched"]
    per_rank = [s["games"]["stats"]["games_finished"] for s in states]
    admitted = [s["buffer"]["admitted"] for s in states]
    with open(next(tmp_path.rglob("metrics.csv")), newline="") as f:
        last = [row for row in csv.DictReader(f) if row.get("selfplay/games_finished")][-1]
    assert len(states) == 2 and min(per_rank) > 0  # both ranks finished games (max_plies 12 cuts them)
    assert float(last["selfplay/games_finished"]) == sum(per_rank)
    assert float(last["replay/admitted"]) == sum(admitted)
