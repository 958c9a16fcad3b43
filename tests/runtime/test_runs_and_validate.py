"""What a researcher meets in the first hour (issue 18 items 1, 2, 3, 8, 9): ``pdx validate`` takes the
command line's values (old checkpoints too) and writes no logs; every fresh ``pdx fit`` keeps its
checkpoints in its own version and ``--ckpt_path last`` finds the latest; the default config's
TensorBoard run has HParams, learning rates, an image and text; no known noise; the pretrain export
never overwrites a bundled network unless asked."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

import lightning as L
import pytest
import torch
import yaml
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import TensorBoardLogger

from pdx_lightning import cli
from pdx_lightning.runtime import export_target, last_checkpoint
from pdx_lightning.runtime.export_target import BundledOverwriteError, check_export_target
from pdx_lightning.runtime.log_continuity import MARKER

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
PDX = ROOT / ".venv" / "bin" / "pdx"
CONF = str(ROOT / "conf" / "fit" / "pdx.yaml")
SUITE = str(ROOT / "tests" / "fixtures" / "lichess_sample.csv")
MATES = str(ROOT / "tests" / "fixtures" / "generated_altmoves.csv")
# the default config at toy size (no callbacks or logger changed)
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
    "--trainer.enable_progress_bar",
    "false",
    "--trainer.enable_model_summary",
    "false",
]
NOISE = (
    "args parameter is intended",
    "Here be dragons",
    "module(s) in eval mode",
    "litlogger",
    "Total length of `list`",
    "Found `dataloader_iter`",
    "LeafSpec",
    "exists and is not empty",
)


def _fit(*extra: str) -> int:
    return cli.main(["fit", "--config", CONF, *TINY, *extra])


# ---- item 2: one version per run, `--ckpt_path last` finds the latest ---------------------------------


def test_each_fresh_fit_keeps_its_checkpoints_in_its_version_and_last_resumes_the_latest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _fit("--trainer.max_steps", "1") == 0
    assert _fit("--trainer.max_steps", "1") == 0
    runs = tmp_path / "runs" / "pdx"
    v0, v1 = (runs / f"version_{v}" / "checkpoints" / "last.ckpt" for v in (0, 1))
    assert v0.is_file() and v1.is_file() and not (runs / "checkpoints").exists()
    assert "checkpoints: runs/pdx/version_1/checkpoints" in capsys.readouterr().out
    before = v0.read_bytes()
    assert _fit("--trainer.max_steps", "2", "--ckpt_path", "last") == 0
    assert torch.load(v1, weights_only=True)["global_step"] == 2  # version_1 continued
    assert v0.read_bytes() == before  # version_0 untouched
    assert sorted(p.name for p in runs.iterdir()) == ["version_0", "version_1"]
    assert torch.load(v1, weights_only=True)["callbacks"]["LogContinuity"]["versions"][0] == 1


def _trainer(root: Path, dirpath: str | None = None) -> L.Trainer:
    return L.Trainer(
        logger=TensorBoardLogger(str(root), name="pdx"),
        enable_progress_bar=False,
        callbacks=[ModelCheckpoint(dirpath=dirpath, save_last=True)],
    )


def _touch(path: Path, stamp: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"versions": [7]}' if path.name == MARKER else "x")
    os.utime(path, (stamp, stamp))


def test_last_resolution_across_version_directories(tmp_path):
    t = time.time()
    trainer = _trainer(tmp_path)
    assert last_checkpoint.latest(trainer) == (None, [])  # nothing yet: fresh
    _touch(tmp_path / "pdx" / "version_0" / "checkpoints" / "last.ckpt", t - 30)
    _touch(tmp_path / "pdx" / "version_1" / "checkpoints" / "last.ckpt", t - 20)
    _touch(tmp_path / "pdx" / "version_1" / "checkpoints" / "last-v1.ckpt", t - 10)
    latest = str(tmp_path / "pdx" / "version_1" / "checkpoints" / "last-v1.ckpt")
    assert last_checkpoint.latest(trainer)[0] == latest
    # a run killed before its first checkpoint (only its marker): the same command restarts it, fresh
    _touch(tmp_path / "pdx" / "version_2" / "checkpoints" / MARKER, t)
    assert last_checkpoint.latest(trainer) == (None, [7])
    # a resumed run rewrites its marker at start: its checkpoint still wins within its directory
    _touch(tmp_path / "pdx" / "version_1" / "checkpoints" / MARKER, t + 10)
    assert last_checkpoint.latest(trainer)[0] == latest
    # an explicit dirpath is one shared directory, as before
    shared = tmp_path / "shared"
    _touch(shared / "last.ckpt", t)
    assert last_checkpoint.latest(_trainer(tmp_path, str(shared)))[0] == str(shared / "last.ckpt")


# ---- item 1: validate ------------------------------------------------------------------------------


def _record_validate(monkeypatch) -> list:
    calls, validate = [], L.Trainer.validate

    @functools.wraps(validate)  # LightningCLI reads the signature (ckpt_path, ...)
    def recording(self, *a, **k):
        out = validate(self, *a, **k)
        calls.append((k.get("model"), out, self))
        return out

    monkeypatch.setattr(L.Trainer, "validate", recording)
    return calls


def test_validate_takes_the_command_line_over_an_old_checkpoint_and_writes_no_logs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert (
        _fit("--trainer.max_steps", "1", "--model.algorithm.exploration", "entropy", "--model.selfplay.seed", "5") == 0
    )
    ckpt = tmp_path / "runs" / "pdx" / "version_0" / "checkpoints" / "last.ckpt"
    blob = torch.load(ckpt, weights_only=True)
    assert "_instantiator" not in blob["hyper_parameters"]
    # as written before val_* left the hyperparameters (and with LightningCLI's key)
    blob["hyper_parameters"].update(
        val_suite=None, val_mates=None, val_sample=None, _instantiator="lightning.pytorch.cli.instantiate_module"
    )
    old = tmp_path / "old.ckpt"
    torch.save(blob, old)
    listing = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    calls = _record_validate(monkeypatch)
    assert (
        cli.main(
            [
                "validate",
                "--config",
                CONF,
                *TINY,
                "--ckpt_path",
                str(old),
                "--model.val_suite",
                SUITE,
                "--model.val_mates+=" + MATES,
                "--model.algorithm.beta",
                "0.5",
                "--model.algorithm.temperature",
                "fixed",
            ]
        )
        == 0
    )
    model, out, trainer = calls[0]
    assert {"puzzles/acc", "mates/acc_1"} <= set(out[0])  # the suites were scored
    algorithm = model.hparams["algorithm"]
    assert algorithm["beta"] == 0.5 and algorithm["temperature"] == "fixed"  # command line wins
    assert model.algorithm.beta == 0.5 and model.algorithm.temperature == "fixed"  # and the settings the run uses
    assert algorithm["exploration"] == "entropy"  # over conf/fit/pdx.yaml's forward_kl: the checkpoint's
    assert model.algorithm.exploration == "entropy"  # beside the flags' nested keys
    assert model.hparams.selfplay["seed"] == 5  # the checkpoint's, beside the flag's nested key
    assert trainer.logger is None
    stdout = capsys.readouterr().out
    assert "checkpoints:" not in stdout and "logs:" not in stdout
    # no new TensorBoard version, no config.yaml, nothing else written
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == listing
    # nothing to score: one line, not Lightning's "Total length of `list` across ranks is zero"
    assert cli.main(["validate", "--config", CONF, *TINY, "--ckpt_path", str(old)]) == 2
    assert "nothing to validate" in capsys.readouterr().err
    # `--ckpt_path last` finds the run's checkpoint for validate too
    calls.clear()
    assert cli.main(["validate", "--config", CONF, *TINY, "--ckpt_path", "last", "--model.val_suite", SUITE]) == 0
    assert calls and calls[0][0].param_version == 1


# ---- items 3 and 8: the default config's TensorBoard run, without the known noise -------------------------


def test_default_fit_event_file_has_hparams_learning_rates_image_and_text_and_no_noise(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    cmd = [str(PDX)] if PDX.exists() else [sys.executable, "-m", "pdx_lightning.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    env.pop("PYTHONWARNINGS", None)
    r = subprocess.run(
        [*cmd, "fit", "--config", CONF, *TINY, "--trainer.max_steps", "8"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert [n for n in NOISE if n in out] == [], out[-4000:]
    run = tmp_path / "runs" / "pdx" / "version_0"
    ea = EventAccumulator(str(run), size_guidance={"images": 0, "tensors": 0, "scalars": 0})
    ea.Reload()
    tags = ea.Tags()
    content = ea.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = dict(start.session_start_info.hparams)
    assert hparams["algorithm/temperature"].string_value == "adaptive"
    assert hparams["selfplay/n_games"].number_value == 4 and hparams["algorithm/beta"].number_value == 0.01
    assert not any(k.startswith("_") for k in hparams)
    exp = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert {"puzzles/acc", "policy/entropy", "kl/forward_to_base"} <= {m.name.tag for m in exp.metric_infos}
    groups = ("backbone", "final_block", "policy_head", "value_head")
    assert {f"lr-AdamW/{g}" for g in groups} <= set(tags["scalars"])
    assert len(ea.Scalars("puzzles/acc")) >= 2  # PuzzleValidation: start and end
    assert len(ea.Images("policy/snapshot")) >= 1
    texts = [t for t in tags["tensors"] if "text_summary" in t]
    assert "selfplay/games/text_summary" in texts
    assert '[Event "pdx self-play"]' in ea.Tensors("selfplay/games/text_summary")[0].tensor_proto.string_val[0].decode()
    saved = yaml.safe_load((run / "hparams.yaml").read_text())
    assert saved["algorithm"]["temperature"] == "adaptive" and "_instantiator" not in saved
    pgn = (run / "selfplay" / "games_rank0.pgn").read_text()
    assert pgn.count('[Event "pdx self-play"]') >= 1


# ---- item 9: the pretrain export never overwrites a bundled network unless asked -------------------------


def test_check_export_target_refuses_the_bundled_directory(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(export_target, "DATA_DIR", data)
    for inside in (data / "base_small.pt", data / "sub" / "x.pt"):
        with pytest.raises(BundledOverwriteError, match="overwrite_bundled"):
            check_export_target(inside)
        assert check_export_target(inside, allow_bundled=True) == inside.resolve()
    assert check_export_target(tmp_path / "runs" / "base.pt") == (tmp_path / "runs" / "base.pt").resolve()
    shipped = yaml.safe_load((ROOT / "conf" / "pretrain" / "small.yaml").read_text())["model"]["export"]
    assert Path(shipped).parts[0] != "data"  # the default writes elsewhere


PRETRAIN_YAML = """\
seed_everything: 0
trainer:
  max_steps: 2
  accelerator: cpu
  enable_progress_bar: false
  enable_model_summary: false
  logger: false
  enable_checkpointing: false
model:
  preset: tiny
  warmup_steps: 1
  export: {export}
data:
  shards: {shards}
  val_fraction: 0.2
  batch_size: 8
"""


def test_pdx_pretrain_refuses_to_overwrite_a_bundled_network_before_training(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    data.mkdir()
    bundled = data / "base_small.pt"
    bundled.write_bytes(b"the bundled base")
    monkeypatch.setattr(export_target, "DATA_DIR", data)
    cfg = tmp_path / "pretrain.yaml"
    cfg.write_text(PRETRAIN_YAML.format(export=bundled, shards=ROOT / "tests" / "fixtures" / "shards_small"))
    monkeypatch.chdir(tmp_path)
    from pdx_lightning.supervised.distill import DistillModule

    steps = []
    step = DistillModule.training_step
    monkeypatch.setattr(DistillModule, "training_step", lambda self, *a: steps.append(1) or step(self, *a))
    assert cli.main(["pretrain", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "bundled" in err and "--model.overwrite_bundled true" in err and len(err.strip().splitlines()) == 1
    assert bundled.read_bytes() == b"the bundled base" and not steps  # refused before any work
    assert cli.main(["pretrain", "--config", str(cfg), "--model.overwrite_bundled", "true"]) == 0
    assert steps and bundled.read_bytes() != b"the bundled base"  # asked explicitly: replaced
