"""The one LightningCLI entry (``runtime.entry.run_lightning``): ``pdx fit`` under DDP from the command
line (issue 19 item 1), and the puzzle-tuned control getting what ``pdx fit`` has (issue 13 item 5):
atomic checkpoints, ``weights_only`` resume, log-version continuity and the base-hash check on resume."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pdx_lightning.nets import file_sha256, load_model, save_network
from pdx_lightning.runtime.checkpoint_meta import BaseMismatchError
from pdx_lightning.runtime.checkpoint_read import CheckpointLoadError, read_checkpoint
from pdx_lightning.supervised import control

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
PDX = ROOT / ".venv" / "bin" / "pdx"
POOL = ROOT / "tests" / "fixtures" / "control_pool.csv"


@pytest.mark.slow
def test_pdx_fit_under_ddp_on_two_cpu_processes_exits_cleanly_with_one_summary(tmp_path):
    """The README's DDP line, tiny: both ranks finish, rank 0 prints the closing summary, exit 0, no traceback
    (the summary reads ``trainer.log_dir``, a broadcast under DDP: on rank 0 alone it outlived rank 1)."""
    cmd = [
        str(PDX) if PDX.exists() else sys.executable,
        *([] if PDX.exists() else ["-m", "pdx_lightning.cli"]),
        "fit",
        "--config",
        str(ROOT / "conf" / "fit" / "pdx.yaml"),
        "--trainer.strategy",
        "ddp",
        "--trainer.accelerator",
        "cpu",
        "--trainer.devices",
        "2",
        "--trainer.max_steps",
        "2",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--model.base",
        "random:tiny",
        "--model.warmup_steps",
        "1",
        "--model.selfplay.n_games",
        "8",
        "--model.algorithm.micro_batch",
        "4",
        "--model.selfplay.opening_max_moves",
        "2",
        "--model.selfplay.max_plies",
        "20",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Traceback" not in out and "Connection closed" not in out, out[-4000:]
    assert r.stdout.count("logs:        ") == 1  # printed on rank 0 only
    log_dir = next(line.split(None, 1)[1] for line in r.stdout.splitlines() if line.startswith("logs:"))
    assert (Path(tmp_path, log_dir) / "checkpoints" / "last.ckpt").is_file()  # its own version's
    assert list((tmp_path / "runs" / "pdx").glob("version_*")) == [Path(tmp_path, log_dir)]


def _control(work: Path, steps: int, *extra: str) -> None:
    """``python -m pdx_lightning.supervised.control fit`` in-process, from ``work``."""
    import yaml

    ckpt = {
        "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
        "init_args": {"dirpath": "ckpt", "save_last": True, "save_top_k": 0, "every_n_train_steps": 1},
    }
    cfg = {
        "seed_everything": 0,
        "trainer": {
            "max_steps": steps,
            "accelerator": "cpu",
            "devices": 1,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [ckpt],
            "logger": {
                "class_path": "lightning.pytorch.loggers.CSVLogger",
                "init_args": {"save_dir": "logs", "name": "control"},
            },
        },
        "model": {"base": str(work / "base.pt"), "pool": [str(POOL)], "batch_size": 4, "warmup_steps": 1},
    }
    (work / "control.yaml").write_text(yaml.safe_dump(cfg))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        control.main(["fit", "--config", str(work / "control.yaml"), *extra])
    finally:
        os.chdir(cwd)


# Lightning's CSVLogger resumed into its version directory warns that it starts metrics.csv afresh
# (it does: the rows logged before the interruption are dropped); this test checks the resume itself
@pytest.mark.filterwarnings("ignore:Experiment logs directory .* exists and is not empty:UserWarning")
def test_control_resume_refuses_a_changed_base_and_resumes_the_same_one(tmp_path, capsys):
    save_network(load_model("random:tiny"), tmp_path / "base.pt")
    _control(tmp_path, 1)
    last = tmp_path / "ckpt" / "last.ckpt"
    blob = read_checkpoint(last)
    assert blob["pdx_base"] == {"name": str(tmp_path / "base.pt"), "sha256": file_sha256(tmp_path / "base.pt")}
    assert blob["pdx_model_config"] == load_model("random:tiny").cfg.to_dict()
    assert blob["pdx_model_family"] == "chessformer"
    assert "LogContinuity" in blob["callbacks"]  # the project's CLI, not a plain LightningCLI
    assert "logs:        " in capsys.readouterr().out  # and its closing summary
    assert not list((tmp_path / "ckpt").glob(".*partial*"))  # atomic writes leave no partial file

    original = (tmp_path / "base.pt").read_bytes()
    save_network(load_model("random:tiny:1"), tmp_path / "base.pt")  # same name, other weights
    with pytest.raises(BaseMismatchError, match=r"trained from base .*base\.pt.* now has a different hash"):
        _control(tmp_path, 2, "--ckpt_path", str(last))
    with pytest.raises(CheckpointLoadError, match="weights_only"):
        _control(tmp_path, 2, "--ckpt_path", str(last), "--weights_only", "false")

    (tmp_path / "base.pt").write_bytes(original)
    _control(tmp_path, 2, "--ckpt_path", "last")  # the original base: resumes
    resumed = read_checkpoint(last)
    assert resumed["global_step"] == 2 and resumed["pdx_base"]["sha256"] == blob["pdx_base"]["sha256"]
    assert [p.name for p in (tmp_path / "logs" / "control").iterdir()] == ["version_0"]  # one log version
