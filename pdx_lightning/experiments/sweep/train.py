"""Training one sweep cell: its complete LightningCLI config, its command, its (resumed) launches.

A cell is a ``pdx fit`` subprocess (the control: ``python -m pdx_lightning.supervised.control fit``)
on ``<out>/cells/<cell>/fit.yaml``; extra command-line flags are passed to every fit.

Loggers: every cell logs to ``csv/version_0`` (a ``CSVLogger``: the sweep reads the cell's last training
scalars from it for ``result.json``, whatever else it logs to) and, by default, to TensorBoard
(``tb/version_0``, where the cell's HParams row with its final metrics is written after scoring).
``--trainer.logger CLASS [--trainer.logger.ARG V ...]`` on ``pdx sweep`` replaces the TensorBoard
logger only (:func:`tracker_args`); MLflow and W&B runs are named after the cell. A cell with
``checkpoints/last.ckpt`` resumes from it (``--ckpt_path``: the same games and optimizer).
:func:`launch` is the one place a subprocess of the sweep starts (tests replace it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pdx_lightning.experiments.sweep.config import Cell, SweepConfig, eval_suites
from pdx_lightning.files.atomicfile import atomic_write_text
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.files.safeio import read_config_text
from pdx_lightning.rl.settings import migrate_hparams
from pdx_lightning.runtime.environment import environment


class SweepError(RuntimeError):
    """A cell or stage that failed (says which, and where its log is)."""


def launch(cmd: list[str], log_path: Path) -> int:
    """Run one subprocess, output appended to ``log_path`` (tests replace this to count launches)."""
    with open(log_path, "a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode


NO_LOGGER = ("false", "none", "null")
# logger class (last part of its name) -> its run-name argument: a sweep names each cell's run after it
RUN_NAME_ARG = {"MLFlowLogger": "run_name", "WandbLogger": "name"}


def tracker_args(fit_args: list[str], cell_name: str) -> tuple[bool, list[str]]:
    """``(replaced, args)``: whether the flags choose the cells' tracker (``--trainer.logger CLASS`` or
    ``--trainer.logger=CLASS``; ``false`` for none), and the flags as each cell's fit gets them.

    The choice replaces the TensorBoard logger, not the sweep's CSV record: it becomes
    ``--trainer.logger+=CLASS`` (appended to the config's list; the ``--trainer.logger.ARG`` flags that
    follow set that appended logger), and an MLflow or W&B run is named after the cell unless the
    flags name it. ``--trainer.logger+=CLASS`` itself adds a tracker and keeps TensorBoard."""
    out, replaced, chosen, i = [], False, None, 0
    while i < len(fit_args):
        a = fit_args[i]
        value = None
        if a == "--trainer.logger" and i + 1 < len(fit_args):
            value, i = fit_args[i + 1], i + 2
        elif a.startswith("--trainer.logger="):
            value, i = a.split("=", 1)[1], i + 1
        else:
            out.append(a)
            i += 1
            continue
        replaced = True
        if value.strip().lower() not in NO_LOGGER:
            out.append(f"--trainer.logger+={value}")
            chosen = value.rsplit(".", 1)[-1]
    arg = RUN_NAME_ARG.get(chosen or "")
    if arg and not any(a.startswith((f"--trainer.logger.{arg}", f"--trainer.logger.init_args.{arg}")) for a in out):
        out += [f"--trainer.logger.{arg}", cell_name]
    return replaced, out


def fit_config(cfg: SweepConfig, cell: Cell, cell_dir: Path, fit_args: Sequence[str] = ()) -> dict:
    """The cell's complete LightningCLI config (the fit_config file, then the sweep's settings on top);
    without TensorBoard when ``fit_args`` choose the tracker (:func:`tracker_args`)."""
    import yaml  # noqa: PLC0415

    doc: dict = {}
    if cell.kind == "rl" and cfg.fit_config:
        # a shipped conf/... where none is here; size and aliases bounded
        doc = yaml.safe_load(read_config_text(resolve_path(cfg.fit_config))) or {}
    trainer = dict(doc.get("trainer") or {})
    ckpt_dir = str(cell_dir / "checkpoints")
    keep = [c for c in trainer.get("callbacks") or [] if not str(c.get("class_path", "")).endswith("ModelCheckpoint")]
    trainer.update(
        {
            "max_steps": cfg.steps,
            "enable_progress_bar": False,
            "logger": [
                *(
                    []
                    if tracker_args(list(fit_args), cell.name)[0]
                    else [
                        {
                            "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                            "init_args": {
                                "save_dir": str(cell_dir),
                                "name": "tb",
                                "version": 0,
                                "default_hp_metric": False,
                            },
                        }
                    ]
                ),
                {
                    "class_path": "lightning.pytorch.loggers.CSVLogger",  # the sweep's record: result.json
                    "init_args": {"save_dir": str(cell_dir), "name": "csv", "version": 0},
                },
            ],
            # final.ckpt at step max_steps exactly, then last.ckpt every checkpoint_every steps (to resume
            # from). In this order, so a cell killed between the two saves never has last.ckpt at max_steps
            # without final.ckpt (a resume from there would train no step and save nothing)
            "callbacks": [
                *keep,
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {
                        "dirpath": ckpt_dir,
                        "filename": "final",
                        "save_top_k": 1,
                        "every_n_train_steps": cfg.steps,
                        "enable_version_counter": False,
                    },
                },
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {
                        "dirpath": ckpt_dir,
                        "save_last": True,
                        "save_top_k": 0,
                        "every_n_train_steps": cfg.checkpoint_every,
                    },
                },
            ],
            **cfg.trainer,
        }
    )
    if cell.kind == "control":
        model = {
            "base": cfg.base,
            "pool": cfg.control.pool,
            "exclude": eval_suites(cfg),
            "batch_size": cfg.games,
            "seed": cfg.seed,
            **cfg.control.model,
        }
    else:
        # the fit config's and the sweep's settings in today's layout (the algorithm's settings in
        # model.algorithm, the games in model.selfplay: rl.settings), the sweep's over the fit config's
        fit_model = migrate_hparams(doc.get("model") or {})
        sweep_model = migrate_hparams({**cfg.model, "selfplay": dict(cfg.selfplay)})
        model = {**fit_model, **sweep_model, "base": cfg.base}
        model["algorithm"] = {
            **(fit_model.get("algorithm") or {}),
            **(sweep_model.get("algorithm") or {}),
            "exploration": cell.term,
            "beta": cell.beta,
            "temperature": cell.temperature,
        }
        model["selfplay"] = {
            **(fit_model.get("selfplay") or {}),
            **(sweep_model.get("selfplay") or {}),
            "n_games": cfg.games,
            "seed": cell.seed,
        }
    return {**doc, "seed_everything": cell.seed, "trainer": trainer, "model": model}


def fit_command(cell: Cell, cell_dir: Path, fit_args: list[str]) -> list[str]:
    """The cell's training command line (with ``--ckpt_path`` when it has a checkpoint to resume from)."""
    entry = ["pdx_lightning.supervised.control" if cell.kind == "control" else "pdx_lightning.cli", "fit"]
    cmd = [
        sys.executable,
        "-m",
        *entry,
        "--config",
        str(cell_dir / "fit.yaml"),
        *tracker_args(list(fit_args), cell.name)[1],
    ]
    last = cell_dir / "checkpoints" / "last.ckpt"
    return cmd + (["--ckpt_path", str(last)] if last.is_file() else [])


def train_cell(cfg: SweepConfig, cell: Cell, cell_dir: Path, fit_args: list[str]) -> float:
    """Train (or resume) one cell until ``final.ckpt`` exists; returns seconds spent."""
    import yaml  # noqa: PLC0415

    t0 = time.perf_counter()
    cell_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(cell_dir / "fit.yaml", yaml.safe_dump(fit_config(cfg, cell, cell_dir, fit_args), sort_keys=False))
    cmd = fit_command(cell, cell_dir, fit_args)
    what = "resume" if "--ckpt_path" in cmd else "train"
    print(f"[sweep] {cell.name}: {what} ({cfg.steps} steps)", flush=True)
    rc = launch(cmd, cell_dir / "fit.log")
    seconds = time.perf_counter() - t0 + train_seconds(cell_dir)  # summed over the cell's (resumed) launches
    # what trained it (the cell's fit inherits this process's kernel hold and threads): runtime.environment
    atomic_write_text(cell_dir / "train.json", json.dumps({"seconds": seconds, "environment": environment()}))
    if rc != 0 or not (cell_dir / "checkpoints" / "final.ckpt").is_file():
        log = cell_dir / "fit.log"
        tail = "".join(log.read_text().splitlines(True)[-25:]) if log.is_file() else "(no log)\n"
        raise SweepError(f"cell {cell.name}: training failed (exit {rc}); log {log}:\n{tail}")
    return seconds


def train_seconds(cell_dir: Path) -> float:
    """Wall seconds spent training the cell so far, over every launch (``train.json``; 0 if never trained
    here)."""
    path = cell_dir / "train.json"
    return float(json.loads(path.read_text())["seconds"]) if path.is_file() else 0.0
