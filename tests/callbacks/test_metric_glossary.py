"""The metric glossary (docs/metrics.md) names every tag a real ``pdx fit`` logs, and TensorBoard reads
at a glance: no ``epoch`` card, the Custom Scalars layout, true text with one PGN block per game, a
validation table (issue 56 items 6 and 8)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tiny_fit import CONF, tiny_fit_args

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "metrics.md"
PDX = Path(sys.executable).with_name("pdx")


def glossary_names() -> set[str]:
    """Every tag the glossary names in code (``mates/acc_N`` stands for each depth N)."""
    return set(re.findall(r"`([A-Za-z_][\w-]*/[\w/-]+|epoch|step|custom_scalars__config__)`", GLOSSARY.read_text()))


def named(tag: str, names: set[str]) -> bool:
    return tag in names or re.sub(r"_\d+$", "_N", tag) in names


@pytest.fixture(scope="module")
def fit_run(tmp_path_factory) -> Path:
    """A 4-step fit of the default config at toy size, with every optional scalar switched on
    (gradient clipping, the value anchor, the value KL) and a CSV logger beside TensorBoard."""
    tmp = tmp_path_factory.mktemp("glossary")
    extra = [
        "--model.algorithm.grad_clip_norm",
        "1.0",
        "--model.algorithm.value_anchor",
        "0.1",
        "--model.algorithm.log_value_kl",
        "true",
        "--trainer.logger",
        json.dumps(
            [
                {
                    "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                    "init_args": {"save_dir": "runs", "name": "pdx", "default_hp_metric": False},
                },
                {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": "runs", "name": "csv"}},
            ]
        ),
    ]
    _pdx_fit(tmp, ["--config", CONF, *tiny_fit_args(4), *extra])
    return tmp / "runs" / "pdx" / "version_0"


def _pdx_fit(cwd: Path, args: list[str]) -> None:
    """``pdx fit ARGS`` for real in ``cwd``, one thread; it must succeed."""
    cmd = [str(PDX)] if PDX.exists() else [sys.executable, "-m", "pdx_lightning.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1"}
    r = subprocess.run([*cmd, "fit", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]


def _events(run: Path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(run), size_guidance={"images": 0, "tensors": 0, "scalars": 0})
    ea.Reload()
    return ea


def test_every_logged_tag_is_in_the_glossary(fit_run):
    tags = _events(fit_run).Tags()
    logged = {
        "scalar": set(tags["scalars"]),
        "image": set(tags["images"]),
        "text": {t.removesuffix("/text_summary") for t in tags["tensors"] if t.endswith("/text_summary")},
    }
    layout = {t for t in tags["tensors"] if not t.endswith("/text_summary")}
    names = glossary_names()
    missing = {kind: sorted(t for t in ts if not named(t, names)) for kind, ts in logged.items()}
    assert missing == {"scalar": [], "image": [], "text": []}, f"docs/metrics.md does not name {missing}"
    assert layout == {"custom_scalars__config__"} and "custom_scalars__config__" in names
    # the optional scalars were switched on, so the run logged them too: the glossary is tested on them
    assert {"optim/grad_norm", "loss/anchor", "loss/value_kl"} <= logged["scalar"]
    assert {"policy/snapshot"} == logged["image"] and {"selfplay/games", "validation/table"} <= logged["text"]
    assert len(logged["scalar"]) >= 34


def test_tensorboard_has_no_epoch_card_and_groups_the_scalars(fit_run):
    from tensorboard.plugins.custom_scalar import layout_pb2

    ea = _events(fit_run)
    scalars = set(ea.Tags()["scalars"])
    assert "epoch" not in scalars
    layout = layout_pb2.Layout.FromString(ea.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    charts = {c.title: [re.compile(p) for p in c.multiline.tag] for cat in layout.category for c in cat.chart}
    assert len(layout.category) == 5 and all(c.title.startswith("PDX · ") for c in layout.category)
    # every scalar the run logged sits on some chart of the layout
    unplaced = sorted(t for t in scalars if not any(p.fullmatch(t) for ps in charts.values() for p in ps))
    assert unplaced == []


def test_text_tab_counts_and_one_pgn_block_per_game(fit_run):
    ea = _events(fit_run)
    games = ea.Tensors("selfplay/games/text_summary")[-1].tensor_proto.string_val[0].decode()
    head = games.split("\n\n", 1)[0]
    m = re.match(r"Steps (\d+)–(\d+): (\d+) self-play games finished on rank 0 \(the first 16 kept, (\d+) in `", head)
    assert m, head
    assert int(m[2]) == 4 and int(m[3]) >= int(m[4]) >= 1
    pgn = (fit_run / "selfplay" / "games_rank0.pgn").read_text()
    assert pgn.count("[Event ") == int(m[4])  # the count in the text is what the PGN file holds
    blocks = re.findall(r"\*\*Game (\d+)\*\*[^\n]*\n\n```\n(.*?)\n```", games, re.S)
    assert [int(k) for k, _ in blocks] == list(range(1, len(blocks) + 1)) and len(blocks) == 2
    for _, block in blocks:
        assert block.startswith('[Event "pdx self-play"]') and all(len(line) <= 80 for line in block.splitlines())
    table = ea.Tensors("validation/table/text_summary")[-1].tensor_proto.string_val[0].decode()
    # one narrow table per group, each a row per scoring (at the start and at the end), short headers
    tables = [t for t in table.split("\n\n") if t.startswith("| step |")]
    assert [t.splitlines()[0] for t in tables] == [
        "| step | acc | p\\* geo | p\\* arith | NLL |",
        "| step | N=1 | N=2 |",
        "| step | N=1 | N=2 |",
    ]
    assert all([r.split(" | ")[0] for r in t.splitlines()[2:]] == ["| 0", "| 4"] for t in tables)
    assert "(`puzzles/acc`, `puzzles/p_star_geo`" in table and "(`mates/acc_N`)" in table


def test_every_csv_column_is_in_the_glossary(fit_run):
    """A CSV logger beside TensorBoard: its columns are the same scalars plus Lightning's epoch and step."""
    path = fit_run.parents[1] / "csv" / "version_0" / "metrics.csv"
    with open(path, newline="") as f:
        columns = set(next(csv.reader(f)))
    names = glossary_names()
    assert sorted(c for c in columns if not named(c, names)) == []
    tb = set(_events(fit_run).Tags()["scalars"])
    assert columns - tb == {"epoch", "step"}  # TensorBoard has every scalar but Lightning's epoch


@pytest.mark.slow  # a 3-step searched fit (~20 s of CPU)
def test_a_searched_fit_has_its_own_layout_and_every_tag_in_the_glossary(tmp_path):
    """``module: searched`` logs other tags (visit targets, the replay buffer): each is in the glossary and
    on a chart of SearchedModule's layout; no epoch card; the HParams columns are its own."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2

    from pdx_lightning.callbacks.tensorboard import SEARCHED_HPARAM_METRICS

    tiny = ["--model.base", "random:tiny", "--model.algorithm.n_games", "4", "--model.algorithm.nodes", "4",
            "--model.algorithm.batch_size", "16", "--model.algorithm.min_buffer", "32",
            "--model.algorithm.max_plies", "30", "--model.algorithm.micro_batch", "8",
            "--model.algorithm.beta", "0.1", "--model.algorithm.grad_clip_norm", "1.0",
            "--model.algorithm.value_anchor", "1.0",
            "--trainer.enable_progress_bar", "false", "--trainer.max_steps", "3"]  # fmt: skip
    cbs = [
        {"class_path": "lightning.pytorch.callbacks.LearningRateMonitor"},
        {"class_path": "pdx_lightning.callbacks.HParamsSummary"},
        {"class_path": "pdx_lightning.callbacks.PuzzleValidation",
         "init_args": {"suite": "data/tactics.csv", "mates": ["data/mates_in_1.csv"], "sample": 4, "every_n_steps": 2}},
    ]  # fmt: skip
    searched = str(ROOT / "conf/fit/searched.yaml")
    _pdx_fit(tmp_path, ["--config", searched, *tiny, "--trainer.callbacks", json.dumps(cbs)])
    ea = _events(tmp_path / "runs" / "searched" / "version_0")
    scalars = set(ea.Tags()["scalars"])
    names = glossary_names()
    assert sorted(t for t in scalars if not named(t, names)) == []
    assert {
        "loss/kl_base",
        "loss/anchor",
        "optim/grad_norm",
        "replay/fill",
        "selfplay/target_entropy",
        "puzzles/acc",
    } <= scalars
    assert "epoch" not in scalars
    layout = layout_pb2.Layout.FromString(ea.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    patterns = [re.compile(p) for cat in layout.category for c in cat.chart for p in c.multiline.tag]
    assert len(layout.category) == 6 and [c.title for c in layout.category][1] == "searched · 2 search targets"
    assert sorted(t for t in scalars if not any(p.fullmatch(t) for p in patterns)) == []
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    (events,) = (tmp_path / "runs" / "searched" / "version_0").glob("events.out.tfevents.*")
    experiments = [
        plugin_data_pb2.HParamsPluginData.FromString(v.metadata.plugin_data.content).experiment
        for e in EventFileLoader(str(events)).Load()
        for v in e.summary.value
        if v.tag == "_hparams_/experiment"
    ]
    assert [[m.name.tag for m in x.metric_infos] for x in experiments] == [list(SEARCHED_HPARAM_METRICS)]
