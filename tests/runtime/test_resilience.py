"""Crash-resume, atomic checkpoints, safe loading and output preflight (issue 9, items 1, 2, 6).

The full ``kill -9`` soak is ``tests/soak_crash_resume.py``; here: one real kill (slow), the
same guarantees through an in-process crash at the worst moment (after a step's checkpoint,
before its metrics reach the logger), and the pieces one by one.
"""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import soak_crash_resume as soak
from pdx_lightning import cli
from pdx_lightning.nets import ModelLoadError, load_model, save_network
from pdx_lightning.rl.module import PDXModule, run_cli
from pdx_lightning.runtime import preflight
from pdx_lightning.runtime.checkpoint_io import AtomicCheckpointIO, CheckpointWriteError
from pdx_lightning.runtime.checkpoint_read import CheckpointLoadError, read_checkpoint
from pdx_lightning.runtime.preflight import PreflightError

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- 1. crash and resume


def _fit(workdir: Path, monkeypatch, *extra: str) -> None:
    monkeypatch.chdir(workdir)
    run_cli(["fit", "--config", "tiny.yaml", *extra])


def test_crash_after_a_checkpoint_before_its_metrics_resumes_exactly(tmp_path, monkeypatch):
    """Reference 5 steps vs. a run that dies right after step 3's checkpoint (before step 3 is
    logged) and is resumed with --ckpt_path last: identical checkpoints at every step (weights,
    EMA, AdamW, LR schedule, games, RNG), one TensorBoard run with the same points."""
    ref, crashed = soak.setup(tmp_path / "ref", 5), soak.setup(tmp_path / "crashed", 5)
    _fit(ref, monkeypatch)

    def die_after_checkpoint(self, outputs, batch, batch_idx):  # runs after ModelCheckpoint, before logging
        if self.global_step == 3:
            raise RuntimeError("simulated crash after the step-3 checkpoint")

    monkeypatch.setattr(PDXModule, "on_train_batch_end", die_after_checkpoint, raising=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(crashed, monkeypatch)
    monkeypatch.setattr(PDXModule, "on_train_batch_end", lambda self, *a: None, raising=False)
    assert max(soak._steps_saved(crashed)) == 3
    _fit(crashed, monkeypatch, "--ckpt_path", "last")
    assert soak.compare_checkpoints(ref, crashed) == []
    assert soak.compare_logs(ref, crashed) == []  # same version dir, no gap at step 3, same values


@pytest.mark.slow
def test_kill_9_at_a_random_step_then_resume(tmp_path):
    """A real SIGKILL of `pdx fit` (subprocess) and `--ckpt_path last` (tests/soak_crash_resume.py)."""
    for seed in (1, 2, 3):  # on a loaded machine a run can finish inside the kill delay (tests nothing): next seed
        result = soak.soak(tmp_path / f"seed{seed}", steps=6, kills=1, seed=seed)
        assert result["problems"] == [], result
        if any(r["killed"] for r in result["runs"]):
            return
    pytest.fail(f"no run was killed before it finished: {result}")


def test_last_with_no_checkpoint_yet_starts_fresh_and_a_bad_path_is_named(tmp_path, monkeypatch):
    work = soak.setup(tmp_path, 1)
    _fit(work, monkeypatch, "--ckpt_path", "last")  # same command line for every (re)start
    assert soak._steps_saved(work) == {1}
    monkeypatch.chdir(work)
    assert cli.main(["fit", "--config", "tiny.yaml", "--ckpt_path", "nope.ckpt"]) == 2
    # weights_only cannot be switched off, even for a checkpoint that would load
    assert (
        cli.main(
            [
                "fit",
                "--config",
                "tiny.yaml",
                "--trainer.max_steps",
                "2",
                "--ckpt_path",
                "last",
                "--weights_only",
                "false",
            ]
        )
        == 2
    )
    assert soak._steps_saved(work) == {1}


# ---------------------------------------------------------------- atomic checkpoint files


def _blob(v: float) -> dict:
    return {"state_dict": {"w": torch.full((1000,), v)}, "global_step": int(v)}


def test_a_failed_checkpoint_write_leaves_the_previous_file_and_no_partial(tmp_path, monkeypatch):
    io_, path = AtomicCheckpointIO(), tmp_path / "last.ckpt"
    io_.save_checkpoint(_blob(1.0), path)
    real_save = torch.save

    def disk_full(obj, f, *a, **k):
        real_save(obj, f, *a, **k)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    with pytest.raises(CheckpointWriteError, match="previous file .* is intact"):
        io_.save_checkpoint(_blob(2.0), path)
    monkeypatch.setattr(torch, "save", real_save)
    assert torch.equal(read_checkpoint(path)["state_dict"]["w"], torch.full((1000,), 1.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


KILL_MID_WRITE = textwrap.dedent("""
    import os, signal, sys, torch
    from pdx_lightning.runtime.checkpoint_io import AtomicCheckpointIO
    path = sys.argv[1]
    io_ = AtomicCheckpointIO()
    io_.save_checkpoint({"w": torch.full((200_000,), 1.0)}, path)
    real = torch.save
    def save_then_die(obj, f, *a, **k):
        f.write(b"PK\\x03\\x04 half a checkpoint")
        f.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    torch.save = save_then_die
    io_.save_checkpoint({"w": torch.full((200_000,), 2.0)}, path)
""")


def test_kill_9_in_the_middle_of_a_checkpoint_write_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / "last.ckpt"
    r = subprocess.run(
        [sys.executable, "-c", KILL_MID_WRITE, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    assert read_checkpoint(path)["w"][0] == 1.0  # the old checkpoint, whole
    partial = [p.name for p in tmp_path.iterdir() if p.name != "last.ckpt"]
    assert len(partial) == 1 and partial[0].startswith(".last.ckpt.partial-")  # never taken for a checkpoint
    AtomicCheckpointIO().save_checkpoint({"w": torch.zeros(3)}, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # leftovers are cleaned


def test_truncated_checkpoint_is_named_with_the_newest_usable_one(tmp_path):
    good, bad = tmp_path / "epoch=0-step=4.ckpt", tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_blob(4.0), good)
    bad.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(CheckpointLoadError, match=r"last\.ckpt.*newest other checkpoint .*step=4\.ckpt"):
        read_checkpoint(bad)


# ---------------------------------------------------------------- 2. safe loading: pickle payloads are refused


class Payload:
    """Unpickling this runs code: it creates the marker file."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return builtins.exec, (f"open({self.marker!r}, 'w').close()",)


@pytest.fixture
def evil(tmp_path):
    """A .pt network, a PDXModule checkpoint and a Lightning checkpoint, each with a payload."""
    marker = tmp_path / "PWNED"
    net = load_model("random:tiny")
    files = {}
    blob = {
        "format": "pdx_network/1",
        "config": net.cfg.to_dict(),
        "state_dict": net.state_dict(),
        "meta": {"note": Payload(marker)},
    }
    torch.save(blob, tmp_path / "evil.pt")
    files["pt"] = tmp_path / "evil.pt"
    ck = {
        "state_dict": {f"ema.{k}": v for k, v in net.state_dict().items()},
        "pdx_model_config": net.cfg.to_dict(),
        "global_step": 1,
        "pdx_selfplay": [Payload(marker)],
    }
    torch.save(ck, tmp_path / "evil.ckpt")
    files["ckpt"] = tmp_path / "evil.ckpt"
    return marker, files


def test_load_model_refuses_pickle_payloads_in_pt_and_ckpt(evil):
    marker, files = evil
    for f in files.values():
        with pytest.raises(ModelLoadError, match="weights_only=True"):
            load_model(str(f))
    assert not marker.exists()


def test_other_checkpoint_readers_never_execute_a_payload(evil):
    from pdx_lightning.evaluation.play import checkpoint_play_mode

    marker, files = evil
    assert checkpoint_play_mode(str(files["ckpt"])) == "raw"
    with pytest.raises(Exception):  # noqa: B017  (any refusal: Lightning's own error, which the payload never reaches)
        PDXModule.load_from_checkpoint(files["ckpt"], weights_only=True)
    with pytest.raises(CheckpointLoadError, match="evil.ckpt.*weights_only=True"):
        read_checkpoint(files["ckpt"])
    assert not marker.exists()


def test_pdx_fit_ckpt_path_with_a_payload_is_refused_before_training(evil, tmp_path, monkeypatch, capsys):
    marker, files = evil
    work = soak.setup(tmp_path / "run", 2)
    monkeypatch.chdir(work)
    assert cli.main(["fit", "--config", "tiny.yaml", "--ckpt_path", str(files["ckpt"])]) == 2
    err = capsys.readouterr().err
    assert "evil.ckpt" in err and "weights_only=True" in err
    assert not marker.exists() and not soak._steps_saved(work)
    assert cli.main(["fit", "--config", "tiny.yaml", "--ckpt_path", str(files["ckpt"]), "--weights_only", "false"]) == 2
    assert "weights_only" in capsys.readouterr().err and not marker.exists()


PRETRAIN_YAML = """\
seed_everything: 0
trainer:
  max_steps: 2
  accelerator: cpu
  enable_progress_bar: false
  enable_model_summary: false
  logger: false
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args:
        dirpath: ckpt
        save_last: true
        every_n_train_steps: 1
model:
  preset: tiny
  warmup_steps: 1
  export: {export}
data:
  shards: {shards}
  val_fraction: 0.2
  batch_size: 8
"""


def _pretrain_config(tmp_path: Path, export: Path) -> Path:
    cfg = tmp_path / "pretrain.yaml"
    cfg.write_text(PRETRAIN_YAML.format(export=export, shards=ROOT / "tests" / "fixtures" / "shards_small"))
    return cfg


def test_pdx_pretrain_resume_with_a_payload_is_refused(evil, tmp_path, monkeypatch, capsys):
    marker, files = evil
    cfg = _pretrain_config(tmp_path, tmp_path / "net.pt")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["pretrain", "--config", str(cfg), "--ckpt_path", str(files["ckpt"])]) == 2
    assert "weights_only=True" in capsys.readouterr().err
    assert not marker.exists() and not (tmp_path / "net.pt").exists()
    with pytest.raises(ModelLoadError):  # pretraining from an --model.init network
        from pdx_lightning.supervised.distill import DistillModule

        DistillModule(init=str(files["pt"]))
    assert not marker.exists()


def test_non_finite_or_misshapen_networks_are_named(tmp_path):
    net = load_model("random:tiny")
    with torch.no_grad():
        net.value_head.out.bias[0] = float("nan")
    save_network(net, tmp_path / "nan.pt")
    with pytest.raises(ModelLoadError, match="value_head.out.bias.*NaN"):
        load_model(str(tmp_path / "nan.pt"))
    blob = torch.load(tmp_path / "nan.pt", weights_only=True)
    blob["state_dict"]["value_head.out.bias"].zero_()
    blob["config"]["embed_dim"] = 1 << 20  # claims a huge network: refused before allocating
    torch.save(blob, tmp_path / "huge.pt")
    with pytest.raises(ModelLoadError, match="do not fit"):
        load_model(str(tmp_path / "huge.pt"))
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(ModelLoadError, match="not a pdx network"):
        load_model(str(tmp_path / "list.pt"))
    with pytest.raises(ModelLoadError, match="random:<preset>"):
        load_model("random:nope")


# ---------------------------------------------------------------- 6. output preflight


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory this process cannot write: chmod 555, or (as root, who ignores modes) /sys."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    try:
        (d / "probe").touch()
        (d / "probe").unlink()
        writable = True
    except OSError:
        writable = False
    yield d / "out" if not writable else Path("/sys/pdx_preflight_test")
    d.chmod(0o755)


def test_preflight_unwritable_directory_and_file(readonly_dir):
    with pytest.raises(PreflightError, match=str(readonly_dir)):
        preflight.check_dir(readonly_dir)
    with pytest.raises(PreflightError, match=str(readonly_dir)):
        preflight.check_file(readonly_dir / "x.json")


def test_preflight_low_space_not_a_directory_and_env_floor(tmp_path, monkeypatch):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=10 << 20))
    with pytest.raises(PreflightError, match=r"only 10\.0 MiB free.*need at least 64\.0 MiB"):
        preflight.check_dir(tmp_path / "a")
    monkeypatch.setenv("PDX_MIN_FREE_MB", "5")
    assert preflight.check_dir(tmp_path / "a") == tmp_path / "a"
    (tmp_path / "file").write_text("x")
    with pytest.raises(PreflightError, match="not a directory|cannot be created"):
        preflight.check_dir(tmp_path / "file" / "sub")
    with pytest.raises(PreflightError, match="is a directory"):
        preflight.check_file(tmp_path)


SUITE = str(ROOT / "tests" / "fixtures" / "lichess_sample.csv")


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "puzzles", "--model", "random:tiny", "--suite", SUITE, "--json", "{ro}/r.json"],
        ["eval", "mates", "--model", "random:tiny", "--suite", SUITE, "--json", "{ro}/r.json"],
        ["data", "positions", "--out", "{ro}/shards", "--positions", "10"],
        ["arena", "--model", "random:tiny", "--model", "random:tiny:1", "--games", "2", "--pgn", "{ro}/g.pgn"],
        ["export", "lc0", "--model", "random:tiny", "--out", "{ro}/net.pb.gz"],
        ["export", "onnx", "--model", "random:tiny", "--out", "{ro}/net.onnx"],
    ],
)
def test_tools_refuse_unwritable_outputs_before_any_work(argv, readonly_dir, monkeypatch, capsys):
    import importlib

    argv = [a.format(ro=readonly_dir) for a in argv]
    try:
        args = cli.build_parser().parse_args(argv)
    except SystemExit:
        pytest.skip(f"`pdx {' '.join(argv[:2])}` is not available in this checkout")

    def no_work(*a, **k):
        raise AssertionError("work started before the output was checked")

    monkeypatch.setattr(importlib.import_module(args._module), "run", no_work)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(readonly_dir) in err and "error" in err


def test_pdx_fit_refuses_an_unwritable_log_dir_or_a_full_disk_before_training(
    tmp_path, readonly_dir, monkeypatch, capsys
):
    work = soak.setup(tmp_path / "run", 2)
    monkeypatch.chdir(work)
    called = []
    monkeypatch.setattr(PDXModule, "training_step", lambda self, it: called.append(1))
    assert cli.main(["fit", "--config", "tiny.yaml", "--trainer.logger.init_args.save_dir", str(readonly_dir)]) == 2
    assert str(readonly_dir) in capsys.readouterr().err
    usage = shutil.disk_usage(work)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1 << 20))
    assert cli.main(["fit", "--config", "tiny.yaml"]) == 2
    assert "free" in capsys.readouterr().err
    assert not called


def test_pdx_pretrain_refuses_an_unwritable_export_before_training(tmp_path, readonly_dir, monkeypatch, capsys):
    cfg = _pretrain_config(tmp_path, readonly_dir / "net.pt")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["pretrain", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "export" in err and str(readonly_dir) in err
    assert not (tmp_path / "ckpt").exists() or not any((tmp_path / "ckpt").iterdir())
