"""A resumed ``pdx fit`` keeps ``metrics.csv``: the resumed run's rows stay, each step is one row, and a
resume from an older checkpoint (a kill after it) replaces the rows logged after it with the same rows."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import torch
from lightning.pytorch.loggers import CSVLogger

from pdx_lightning.runtime import csv_continuity
from tests.runtime.test_runs_and_validate import _fit

CSV_LOGGER = json.dumps(
    {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": "runs", "name": "pdx"}}
)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _key(row: dict[str, str]) -> tuple:
    """A row's values, less the wall-clock ones (perf/*), which differ between runs."""
    return tuple(sorted((k, v) for k, v in row.items() if v != "" and not k.startswith("perf/")))


def test_resumed_fit_keeps_the_rows_and_a_resume_from_an_older_checkpoint_logs_each_step_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "pdx" / "version_0"
    metrics, last = run / "metrics.csv", run / "checkpoints" / "last.ckpt"
    assert _fit("--trainer.max_steps", "2", "--trainer.logger", CSV_LOGGER) == 0
    first = _rows(metrics)
    shutil.copy(last, tmp_path / "step2.ckpt")
    assert _fit("--trainer.max_steps", "4", "--trainer.logger", CSV_LOGGER, "--ckpt_path", "last") == 0
    assert torch.load(last, weights_only=True)["global_step"] == 4
    both = _rows(metrics)
    steps = {int(r["step"]) for r in both if r.get("loss/total")}
    assert steps == {0, 1, 2, 3}  # the first run's training rows are still there, then the second's
    before = [_key(r) for r in first if int(r["step"]) < 2]
    assert [_key(r) for r in both[: len(before)]] == before  # unchanged, in order
    assert not (tmp_path / "runs" / "pdx" / "version_1").exists()
    # as if killed at step 4 after the step-2 checkpoint: resume from it; steps 2-3 logged once, identically
    assert (
        _fit("--trainer.max_steps", "4", "--trainer.logger", CSV_LOGGER, "--ckpt_path", str(tmp_path / "step2.ckpt"))
        == 0
    )
    again = _rows(metrics)
    assert set(map(_key, again)) == set(map(_key, both))  # the same rows (no step lost) ...
    assert len(again) == len(set(map(_key, again)))  # ... each once
    assert [_key(r) for r in again[: len(before)]] == before


def test_carry_rows_keeps_the_file_and_a_new_column_keeps_the_old_rows(tmp_path):
    logger = CSVLogger(str(tmp_path), name="pdx", version=0)
    path = Path(logger.log_dir) / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("a,step\n1.0,0\n2.0,1\n")
    assert csv_continuity.carry_rows(logger) == 2
    assert _rows(path) == [{"a": "1.0", "step": "0"}, {"a": "2.0", "step": "1"}]
    logger.log_metrics({"a": 3.0, "b": 4.0}, step=2)
    logger.save()
    assert _rows(path) == [
        {"a": "1.0", "b": "", "step": "0"},
        {"a": "2.0", "b": "", "step": "1"},
        {"a": "3.0", "b": "4.0", "step": "2"},
    ]
    # no file: nothing to carry
    assert csv_continuity.carry_rows(CSVLogger(str(tmp_path), name="other", version=0)) == 0


def test_drop_rows_after_removes_the_later_steps_only(tmp_path):
    logger = CSVLogger(str(tmp_path), name="pdx", version=0)
    path = Path(logger.log_dir) / "metrics.csv"
    path.parent.mkdir(parents=True)
    path.write_text("epoch,loss,lr,step\n0,1.0,,4\n,,0.1,4\n0,0.9,,5\n,,0.1,5\n0,0.8,,6\n")
    assert csv_continuity.drop_rows_after(logger, 4) == 3
    assert [(r["loss"], r["lr"], r["step"]) for r in _rows(path)] == [("1.0", "", "4"), ("", "0.1", "4")]
    assert csv_continuity.drop_rows_after(logger, 4) == 0
    assert csv_continuity.drop_rows_after(logger, 3) == 2
    assert _rows(path) == []
