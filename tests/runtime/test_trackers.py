"""Experiment trackers (issue 30 part 2): ``pdx fit`` with any Lightning logger chosen by
``--trainer.logger``. Real tiny fits with ``CSVLogger`` (numbers only: the image and text callbacks
skip with one line) and ``MLFlowLogger`` on a local file store (numbers, the policy image and the
games' text); the closing summary names each logger's viewer; the sweep keeps its CSV record when the
tracker is replaced."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.experiments.sweep.train import tracker_args
from pdx_lightning.runtime.entry import tool_command, tracker_line
from tiny_fit import CONF, tiny_fit_args

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
# the default config at toy size; 8 steps: games of 6 plies finish, so the games' text has something
TINY = tiny_fit_args(steps=8)


def test_tracker_line_names_each_loggers_viewer():
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    assert (
        tracker_line(TensorBoardLogger("runs", name="pdx"), "runs/pdx/version_3")
        == f"TensorBoard: {tool_command('tensorboard')} --logdir runs/pdx"  # runs as typed: tests/test_quickstart.py
    )
    assert (
        tracker_line(CSVLogger("runs", name="csv"), "runs/csv/version_0")
        == "metrics:     runs/csv/version_0/metrics.csv"
    )
    assert tracker_line(object(), "x") is None  # unknown logger: no line, no crash


def test_csv_logged_fit_has_the_loss_columns_and_skips_image_and_text_once(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.chdir(tmp_path)
    assert (
        cli.main(
            [
                "fit",
                "--config",
                CONF,
                *TINY,
                "--trainer.logger",
                "CSVLogger",
                "--trainer.logger.save_dir",
                "runs",
                "--trainer.logger.name",
                "csv",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out + caplog.text
    run = tmp_path / "runs" / "csv" / "version_0"
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    losses = [float(r["loss/total"]) for r in rows if r.get("loss/total")]
    assert len(losses) == 8 and all(x == x for x in losses)  # one per step, finite
    assert {"loss/policy", "loss/value", "kl/forward_to_base", "lr-AdamW/backbone"} <= set(rows[0])
    assert (run / "checkpoints" / "last.ckpt").is_file()
    assert out.count("PolicySnapshot: CSVLogger cannot show images") == 1  # once, not per drawing
    assert out.count("SelfPlayGames: CSVLogger cannot show text") == 1
    assert '[Event "pdx self-play"]' in (run / "selfplay" / "games_rank0.pgn").read_text()
    assert "metrics:     runs/csv/version_0/metrics.csv" in out and "TensorBoard:" not in out


def test_mlflow_logged_fit_has_metrics_params_the_policy_image_and_the_games_text(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow", reason="mlflow-skinny (the test extras) is not installed")
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    # MLflow 3 refuses the plain-file store unless asked (its maintained store, sqlite, needs the
    # full `mlflow` package with SQLAlchemy; the file store is what `mlflow-skinny` reads and writes)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    assert (
        cli.main(
            [
                "fit",
                "--config",
                CONF,
                *TINY,
                "--trainer.logger",
                "MLFlowLogger",
                "--trainer.logger.tracking_uri",
                uri,
                "--trainer.logger.experiment_name",
                "pdx",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("pdx")
    (run,) = client.search_runs([exp.experiment_id])
    history = client.get_metric_history(run.info.run_id, "loss/total")
    assert sorted(m.step for m in history) == list(range(8))  # steps 0..7
    params = run.data.params  # the hyperparameters, flattened with "/"
    assert params["algorithm/exploration"] == "forward_kl" and params["algorithm/beta"] == "0.01"
    root = Path(client.download_artifacts(run.info.run_id, ""))
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    assert any(f.startswith("images/policy~snapshot") and f.endswith(".png") for f in files), files
    texts = [root / f for f in files if f.startswith("selfplay/games/step_")]
    assert texts and '[Event "pdx self-play"]' in texts[-1].read_text()
    run_dir = tmp_path / "mlruns" / exp.experiment_id / run.info.run_id
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()  # the run's own directory
    assert (run_dir / "selfplay" / "games_rank0.pgn").is_file()
    assert f"MLflow:      {tool_command('mlflow')} ui --backend-store-uri {uri}" in out


def test_sweep_tracker_flags_replace_tensorboard_keep_the_csv_record_and_name_the_run():
    assert tracker_args(["--trainer.devices", "1"], "c") == (False, ["--trainer.devices", "1"])
    assert tracker_args(["--trainer.logger", "MLFlowLogger", "--trainer.logger.tracking_uri", "file:m"], "c") == (
        True,
        ["--trainer.logger+=MLFlowLogger", "--trainer.logger.tracking_uri", "file:m", "--trainer.logger.run_name", "c"],
    )
    assert tracker_args(["--trainer.logger=WandbLogger", "--trainer.logger.name", "mine"], "c") == (
        True,
        ["--trainer.logger+=WandbLogger", "--trainer.logger.name", "mine"],
    )  # its own name wins
    assert tracker_args(["--trainer.logger", "false"], "c") == (True, [])  # CSV record only
    assert tracker_args(["--trainer.logger+=CSVLogger"], "c") == (False, ["--trainer.logger+=CSVLogger"])


def test_sweep_with_mlflow_keeps_its_record_and_names_each_cells_run(tmp_path, monkeypatch):
    """One cell of ``pdx sweep ... --trainer.logger MLFlowLogger``, its fit run in-process (as in
    tests/experiments/test_sweep.py): result.json has the final training scalars (read from the CSV
    record), no TensorBoard run is made, and the MLflow run carries the cell's name."""
    pytest.importorskip("mlflow", reason="mlflow-skinny (the test extras) is not installed")
    import yaml
    from mlflow.tracking import MlflowClient

    from pdx_lightning.experiments.sweep import sweep_command as command
    from pdx_lightning.experiments.sweep import train

    fix = ROOT / "tests" / "fixtures"
    sample, mates = str(fix / "lichess_sample.csv"), str(fix / "generated_altmoves.csv")
    cfg = {
        "out": str(tmp_path / "out"),
        "base": "random:tiny",
        "steps": 2,
        "games": 4,
        "checkpoint_every": 1,
        "terms": ["none"],
        "temperatures": ["adaptive"],
        "betas": [0.01],
        "model": {"warmup_steps": 1, "algorithm": {"micro_batch": 4}},
        "selfplay": {"opening_max_moves": 2, "max_plies": 20},
        "trainer": {"accelerator": "cpu", "devices": 1, "enable_model_summary": False},
        "eval": {"selection": sample, "tactics": sample, "mates": {"path": mates}},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    monkeypatch.setattr(train, "launch", lambda cmd, log: cli.main(cmd[cmd.index("fit") :]))
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = f"file:{tmp_path / 'mlruns'}"
    args = cli.build_parser().parse_args(
        [
            "sweep",
            "--config",
            str(path),
            "--no-stages",
            "--trainer.logger",
            "MLFlowLogger",
            "--trainer.logger.tracking_uri",
            uri,
        ]
    )
    assert command.run(args) == 0
    cell = tmp_path / "out" / "cells" / "none-adaptive"
    result = yaml.safe_load((cell / "result.json").read_text())
    assert "final/loss/total" in result["metrics"]
    import platform

    import lightning

    for doc in (result, yaml.safe_load((tmp_path / "out" / "sweep.json").read_text())):  # the versions
        env = doc["environment"]
        assert (env["torch"], env["lightning"], env["python"]) == (
            torch.__version__,
            lightning.__version__,
            platform.python_version(),
        )
    assert not (cell / "tb").exists() and (cell / "csv" / "version_0" / "metrics.csv").is_file()
    client = MlflowClient(tracking_uri=uri)
    (run,) = client.search_runs([client.get_experiment_by_name("lightning_logs").experiment_id])
    assert run.info.run_name == "none-adaptive"
    assert len(client.get_metric_history(run.info.run_id, "loss/total")) == 2
