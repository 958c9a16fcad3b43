"""A quiet, informative first run (issue 30 part 4): the default config's ``pdx fit`` prints no
third-party warning (Lightning's ModelCheckpoint-with-manual-optimization warning is filtered at its
source, with the reason in ``runtime.entry``), its bar counts steps out of ``max_steps`` with ETA and
transitions/s, and the closing summary follows; the bar's numbers are checked by hand."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pdx_lightning.runtime.fit_progress import fit_postfix, transitions_per_step

ROOT = Path(__file__).resolve().parents[2]
PDX = ROOT / ".venv" / "bin" / "pdx"
TINY = [
    "--model.base",
    "random:tiny",
    "--model.warmup_steps",
    "1",
    "--model.selfplay.n_games",
    "4",
    "--model.algorithm.micro_batch",
    "4",
    "--model.selfplay.opening_max_moves",
    "1",
    "--model.selfplay.max_plies",
    "6",
]


def test_fit_postfix_by_hand():
    # 6 steps of 128 transitions in 3 s: 256 transitions/s; v_num (the log version) is dropped
    assert fit_postfix({"v_num": 0, "loss": 0.1182345}, 6, 3.0, 128) == {"transitions/s": "256", "loss": "0.1182"}
    assert fit_postfix({"loss": 2.0}, 0, 0.0, 128) == {"loss": "2"}  # no step yet: no rate
    assert fit_postfix({}, 5, 2.0, None) == {}  # no self-play: no rate


def test_transitions_per_step_is_games_times_world_size():
    class Cfg:
        n_games = 32

    class Dataset:
        cfg = Cfg()

    class Module:
        dataset = Dataset()

    assert transitions_per_step(4, Module()) == 128
    assert transitions_per_step(1, object()) is None  # pretrain: no self-play


@pytest.mark.slow
def test_default_fit_prints_no_third_party_warning_and_a_step_bar(tmp_path):
    doc = yaml.safe_load((ROOT / "conf" / "fit" / "pdx.yaml").read_text())
    for cb in doc["trainer"]["callbacks"]:
        if cb["class_path"].endswith("ModelCheckpoint"):
            cb["init_args"]["every_n_train_steps"] = 2  # save inside the run: where Lightning used to warn
    conf = tmp_path / "pdx.yaml"
    conf.write_text(yaml.safe_dump(doc))
    cmd = [str(PDX)] if PDX.exists() else [sys.executable, "-m", "pdx_lightning.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    for name in ("PYTHONWARNINGS", "PDX_PROGRESS"):
        env.pop(name, None)
    r = subprocess.run(
        [*cmd, "fit", "--config", str(conf), *TINY, "--trainer.max_steps", "4"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert (tmp_path / "runs" / "pdx" / "version_0" / "checkpoints" / "epoch=0-step=2.ckpt").is_file()
    # a warning's header: "<file>.py:<line>: [Category: ]message" (Lightning's format drops the category)
    warnings = [line for line in re.split(r"[\r\n]", out) if re.search(r"Warning|\.py:\d+: ", line)]
    assert warnings == [], out[-4000:]
    assert "Epoch 0/" not in out
    bar = [s for s in re.split(r"[\r\n]", r.stderr) if s.startswith("fit: 4/4 steps")]
    assert bar and "transitions/s=" in bar[-1] and "step/s" in bar[-1] and "<00:00" in bar[-1], r.stderr[-2000:]
    assert "fit: 0/4 steps" in r.stderr  # the total from the start
    *summary, viewer = r.stdout.rstrip().splitlines()[-3:]
    assert summary == ["logs:        runs/pdx/version_0", "checkpoints: runs/pdx/version_0/checkpoints"]
    tensorboard, *args = shlex.split(viewer.removeprefix("TensorBoard: "))
    assert args == ["--logdir", "runs/pdx"] and shutil.which(tensorboard, path=env.get("PATH")), viewer
