"""Under real DDP (2 processes, gloo, ``pdx fit``): the logged step scalars are over both ranks' games,
the puzzle validation is sharded and equals one process's scores, and EMAUpdate runs first on every rank."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STEPS = 3
_CLUSTER_ENV = re.compile(
    r"^(SLURM_|TORCHELASTIC_|GROUP_RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|RANK|WORLD_SIZE|NODE_RANK|MASTER_)"
)


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("ddp_metrics")
    cfg = {
        "trainer": {
            "max_steps": STEPS,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {"save_last": True, "every_n_train_steps": 1},
                },
                {
                    "class_path": "pdx_lightning.callbacks.PuzzleValidation",
                    "init_args": {"sample": 30, "every_n_steps": 100},
                },
                {"class_path": "ddp_probe.StepProbe", "init_args": {"out": str(work / "probe")}},
            ],
        },
        "model": {
            "base": "random:tiny",
            "warmup_steps": 1,
            "algorithm": {"micro_batch": 4},
            "selfplay": {"n_games": 8, "opening_max_moves": 2, "max_plies": 20},
        },
    }
    (work / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if not _CLUSTER_ENV.match(k)}
    env.update(OMP_NUM_THREADS="1", PDX_THREADS="1", PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "pdx_lightning.cli", "fit", "--config", str(ROOT / "conf/fit/pdx.yaml")]
    argv += ["--trainer.strategy", "ddp", "--trainer.accelerator", "cpu", "--trainer.devices", "2"]
    argv += ["--config", str(work / "tiny.yaml")]
    r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    probe = {}
    for rank in (0, 1):
        lines = (work / "probe" / f"steps{rank}.jsonl").read_text().splitlines()
        probe[rank] = [json.loads(line) for line in lines if line.strip()]
    return work, probe


@pytest.mark.slow
def test_the_logged_loss_is_the_mean_over_both_ranks_games(ddp_run):
    _, probe = ddp_run
    steps = {r: [e for e in probe[r] if e.get("event") == "step"] for r in (0, 1)}
    assert [e["step"] for e in steps[0]] == [e["step"] for e in steps[1]] == list(range(1, STEPS + 1))
    for s0, s1 in zip(steps[0], steps[1]):
        assert s0["n"] == s1["n"] == 4
        assert s0["local_loss"] != s1["local_loss"]  # each rank's own games
        whole = (s0["n"] * s0["local_loss"] + s1["n"] * s1["local_loss"]) / (s0["n"] + s1["n"])
        assert s0["logged"] == s1["logged"]  # every rank logs the same whole-batch values
        assert math.isclose(s0["logged"]["loss/total"], whole, rel_tol=1e-6), (s0, s1)  # float32 local losses


@pytest.mark.slow
def test_ema_update_runs_first_on_every_rank(ddp_run):
    _, probe = ddp_run
    for r in (0, 1):
        names = next(e["names"] for e in probe[r] if e.get("event") == "callbacks")
        assert names[0] == "EMAUpdate" and names.count("EMAUpdate") == 1, names


@pytest.mark.slow
def test_the_sharded_validation_equals_one_process_scoring_the_same_ema(ddp_run):
    work, probe = ddp_run
    final = [next(e for e in probe[r] if e.get("event") == "validation") for r in (0, 1)]
    assert final[0]["step"] == STEPS and final[0]["scores"] == final[1]["scores"]
    last = next((work / "runs").rglob("last.ckpt"))
    from pdx_lightning.callbacks import PuzzleValidation
    from pdx_lightning.nets import load_model

    torch.set_num_threads(1)
    ema = load_model(str(last)).eval()  # a checkpoint loads as its EMA weights
    one = PuzzleValidation(sample=30).score(ema)
    assert set(one) == set(final[0]["scores"])
    for key, value in one.items():
        got = final[0]["scores"][key]
        assert got == value if "/acc" in key else math.isclose(got, value, rel_tol=1e-5), (key, got, value)
