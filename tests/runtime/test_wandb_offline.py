"""W&B as a tracker, for real and offline (issue 39 part 4): ``pdx fit --trainer.logger WandbLogger`` with
``WANDB_MODE=offline`` logs the same scalars, with the same values at the same steps, as the TensorBoard
run of the same seed, plus the policy image and the games' text.

W&B 0.31 has no Python reader of its offline run file (``run-<id>.wandb``; the old
``wandb.sdk.internal.datastore`` is gone and ``wandb.Api`` needs a server), so ``wandb_records`` reads it
here: LevelDB's log format (32 KiB blocks of records, each a 7-byte header: CRC32C, length, type
FULL/FIRST/MIDDLE/LAST) after W&B's 7-byte file header, every record one ``wandb_internal_pb2.Record``
decoded with W&B's own protobuf classes."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.runtime.entry import tool_command
from tiny_fit import CONF, tiny_fit_args

wandb = pytest.importorskip("wandb", reason="wandb (the test extras) is not installed")
torch.set_num_threads(1)
TINY = tiny_fit_args(steps=6)
BLOCK, HEADER = 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def wandb_records(path: Path) -> list:
    """Every ``Record`` of a W&B run file, in order (the format is described in the module docstring)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B" and struct.unpack("<H", data[4:6])[0] == 0xBEE1, "not a W&B run file"
    records, pending, pos = [], b"", HEADER
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # a block's tail too short for a header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if kind == 0 and length == 0:  # zero fill at the end of a block
            pos += left
            continue
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind == FULL:
            pending = chunk
        elif kind == FIRST:
            pending = chunk
            continue
        elif kind == MIDDLE:
            pending += chunk
            continue
        elif kind == LAST:
            pending += chunk
        else:
            raise AssertionError(f"record type {kind} at byte {pos}")
        rec = pb.Record()
        rec.ParseFromString(pending)
        records.append(rec)
    return records


def history_rows(run_file: Path) -> list[dict[tuple, object]]:
    """Each history record as ``{key path: value}`` (a media item's fields have paths of two or more)."""
    import json

    return [
        {(it.key,) if it.key else tuple(it.nested_key): json.loads(it.value_json) for it in rec.history.item}
        for rec in wandb_records(run_file)
        if rec.WhichOneof("record_type") == "history"
    ]


def wandb_history(run_file: Path) -> dict[str, dict[int, float]]:
    """``{metric: {trainer/global_step: value}}`` of the scalars in a run's history records."""
    out: dict[str, dict[int, float]] = {}
    for row in history_rows(run_file):
        step = row[("trainer/global_step",)]
        for path, value in row.items():
            key = path[0]
            if (
                len(path) == 1
                and isinstance(value, (int, float))
                and not key.startswith("_")
                and key not in ("trainer/global_step", "epoch")
            ):
                out.setdefault(key, {})[int(step)] = float(value)
    return out


def media_keys(run_file: Path) -> set[str]:
    """The keys logged as media (an image, a table): their fields are nested under the key."""
    return {path[0] for row in history_rows(run_file) for path in row if len(path) > 1}


def tensorboard_scalars(run: Path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run), size_guidance={"scalars": 0})
    ea.Reload()
    return {
        tag: {e.step: e.value for e in ea.Scalars(tag)}
        for tag in ea.Tags()["scalars"]
        if tag != "epoch" and not tag.startswith("hp_metric")
    }


def test_offline_wandb_fit_logs_the_tensorboard_runs_scalars_image_and_text(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    for var in ("WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert (
        cli.main(
            [
                "fit",
                "--config",
                CONF,
                *TINY,
                "--trainer.logger",
                "TensorBoardLogger",
                "--trainer.logger.save_dir",
                "tb",
                "--trainer.logger.name",
                "pdx",
            ]
        )
        == 0
    )
    assert (
        cli.main(
            [
                "fit",
                "--config",
                CONF,
                *TINY,
                "--trainer.logger",
                "WandbLogger",
                "--trainer.logger.save_dir",
                "wb",
                "--trainer.logger.project",
                "pdx",
            ]
        )
        == 0
    )
    wandb.finish()  # in-process the run stays open until then (a `pdx fit` process finishes it at exit)
    out = capsys.readouterr().out
    tb = tensorboard_scalars(tmp_path / "tb" / "pdx" / "version_0")
    (run_file,) = (tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb")
    wb = wandb_history(run_file)
    assert len(tb) >= 15 and {"loss/total", "kl/forward_to_base", "lr-AdamW/backbone"} <= set(tb)
    assert set(wb) == set(tb), sorted(set(wb) ^ set(tb))
    for tag, series in tb.items():  # same seed: the same numbers per step
        assert sorted(wb[tag]) == sorted(series), tag
        if not tag.startswith("perf/"):  # throughput is the clock's
            assert wb[tag] == pytest.approx(series, rel=1e-6, abs=1e-7), tag
    assert len(tb["loss/total"]) == 6
    media = media_keys(run_file)
    assert {"policy/snapshot", "selfplay/games"} <= media, media  # PolicySnapshot's image, the games' table
    assert f"W&B:         {tool_command('wandb')} sync wb/wandb/offline-run-*" in out  # offline by WANDB_MODE too
