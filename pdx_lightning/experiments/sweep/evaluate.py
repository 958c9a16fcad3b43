"""Scoring a sweep's cells: each cell's EMA on every suite of ``eval:``, paired with the frozen base.

:class:`Evaluator` scores with :func:`pdx_lightning.evaluation.puzzle_scoring.score_suite` (in-process,
batched); the base is scored once per sweep invocation and written to ``base/eval.json``. Document
schema ``pdx_cell_eval/1``::

    {"schema": "pdx_cell_eval/1", "model": name, "weights": "ema", "multi_solution": rule,
     "suites": {"selection"|"tactics"|"hard"|"mates"|"real"|"real_hard": {
         "spec": {path, sample, seed, rating_min, rating_max, themes}, "files": [...], "n": N,
         "ids": [...], "rating": [...], "difficulty": [...], "depth": [...],
         "summary": puzzles.summarize(...),  # acc, acc_ci, p_star_geo, p_star_arith, nll, by_bin, by_depth
         "paired": puzzles.compare(base, model) | null,   # null for the base itself
         "per_puzzle": puzzles.per_puzzle(...)}}}          # per-position arrays (Figure 8's input)

:func:`run_cell` trains (or resumes) a cell, scores it and writes its ``eval.json`` and ``result.json``
(the cell is finished: a rerun skips it), and logs its hparams with the final metrics to TensorBoard.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pdx_lightning.experiments.sweep.config import Cell, SweepConfig
from pdx_lightning.experiments.sweep.train import train_cell, train_seconds
from pdx_lightning.files.atomicfile import atomic_write_text
from pdx_lightning.runtime.environment import environment
from pdx_lightning.runtime.jsonio import json_safe

if TYPE_CHECKING:
    from torch.utils.tensorboard.writer import FileWriter


class Evaluator:
    """Scores models on the sweep's suites; the base's results are computed once and kept for pairing."""

    def __init__(self, cfg: SweepConfig, out: Path) -> None:
        self.cfg, self.out = cfg, out
        self._suites: dict | None = None
        self._base: dict | None = None

    def suites(self) -> dict:
        """``{role: (SuiteSpec, Suite)}`` for every suite of ``eval:`` (loaded once)."""
        if self._suites is None:
            self._suites = {name: (spec, spec.load()) for name, spec in self.cfg.eval.specs().items()}
        return self._suites

    def _score(self, name: str) -> dict:
        import torch  # noqa: PLC0415

        from pdx_lightning.evaluation.puzzle_scoring import score_suite  # noqa: PLC0415
        from pdx_lightning.nets import load_model  # noqa: PLC0415
        from pdx_lightning.nets.inference import device_of  # noqa: PLC0415

        dev = self.cfg.eval.device
        model = load_model(name, weights="ema").to(device_of(dev)).eval()
        with torch.inference_mode():
            mb = self.cfg.eval.micro_batch
            return {
                k: score_suite(model, suite.puzzles, micro_batch=mb) if len(suite) else None
                for k, (spec, suite) in self.suites().items()
            }

    def _doc(self, name: str, results: dict, base: dict | None) -> dict:
        meta = {
            k: {"spec": asdict(spec), "files": suite.paths, **suite_meta(suite.puzzles)}
            for k, (spec, suite) in self.suites().items()
        }
        return eval_document(name, meta, results, base)

    def base(self) -> dict:
        """The base's results (scored and written to ``base/eval.json`` on first use)."""
        if self._base is None:
            self._base = self._score(self.cfg.base)
            path = self.out / "base" / "eval.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps(self._doc(self.cfg.base, self._base, None)))
        return self._base

    def evaluate(self, name: str) -> dict:
        """The ``pdx_cell_eval/1`` document of model ``name``, paired with the base."""
        base = self.base()
        return self._doc(name, self._score(name), base)


def suite_meta(puzzles: list) -> dict:
    return {
        "n": len(puzzles),
        "ids": [p.puzzle_id for p in puzzles],
        "rating": [p.rating for p in puzzles],
        "difficulty": [p.difficulty for p in puzzles],
        "depth": [p.depth for p in puzzles],
    }


def eval_document(name: str, meta: dict[str, dict], results: dict, base: dict | None) -> dict:
    """The ``pdx_cell_eval/1`` document: per suite ``meta`` (spec, files, n, ids, rating, difficulty, depth)
    plus the summary, the pairing with the base's results and the per-position arrays of ``results``."""
    from pdx_lightning.evaluation.puzzle_scoring import MULTI_SOLUTION_RULE, compare, per_puzzle, summarize  # noqa: PLC0415

    suites = {
        k: {
            **m,
            "summary": summarize(r) if (r := results.get(k)) else None,
            "paired": compare(base[k], r) if r and base is not None and base.get(k) else None,
            "per_puzzle": per_puzzle(r) if r else None,
        }
        for k, m in meta.items()
    }
    return _round(
        json_safe(
            {
                "schema": "pdx_cell_eval/1",
                "model": name,
                "weights": "ema",
                "multi_solution": MULTI_SOLUTION_RULE,
                "suites": suites,
            }
        )
    )


def _round(x):
    """Floats to 7 significant digits (float32's precision, the network's): half the bytes."""
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return float(f"{x:.7g}") if isinstance(x, float) and math.isfinite(x) else x


def cell_metrics(doc: dict) -> dict[str, float]:
    """The scalars of an eval document for TensorBoard and result.json (``final/<suite>/acc`` …)."""
    out = {}
    for k, s in doc["suites"].items():
        if not s["summary"]:
            continue
        out.update({f"final/{k}/acc": s["summary"]["acc"], f"final/{k}/p_star_geo": s["summary"]["p_star_geo"]})
        if k == "mates":
            out.update({f"final/mates/acc_{d['depth']}": d["acc"] for d in s["summary"]["by_depth"]})
    return {k: v for k, v in out.items() if v is not None}


def final_train_metrics(cell_dir: Path) -> dict[str, float]:
    """The last logged value of every training scalar (from the cell's CSV log)."""
    import csv  # noqa: PLC0415

    path = cell_dir / "csv" / "version_0" / "metrics.csv"
    last: dict[str, float] = {}
    if path.is_file():
        with open(path) as f:
            for row in csv.DictReader(f):
                last.update({k: float(v) for k, v in row.items() if v not in ("", None) and k != "epoch"})
    return last


def log_hparams(cell_dir: Path, hparams: dict, metrics: dict[str, float], step: int) -> None:
    """Write the cell's hparams (TensorBoard HParams plugin) with its final metrics into its own run
    (``tb/version_0``; nothing when the cell logged to another tracker: ``result.json`` has them)."""
    if not (cell_dir / "tb").is_dir():
        return
    from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415
    from torch.utils.tensorboard.summary import hparams as hp_summary  # noqa: PLC0415

    metrics = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}
    writer = SummaryWriter(str(cell_dir / "tb" / "version_0"))
    try:
        for summary in hp_summary({k: v for k, v in hparams.items() if v is not None}, metrics):
            # torch types file_writer from its None initialiser; SummaryWriter() has opened it
            cast("FileWriter", writer.file_writer).add_summary(summary)
        for k, v in metrics.items():
            writer.add_scalar(k, v, step)
    finally:
        writer.close()


def run_cell(cfg: SweepConfig, cell: Cell, out: Path, fit_args: list[str], ev: Evaluator) -> dict:
    """Train (unless ``final.ckpt`` exists), score and record one cell; a finished cell is skipped."""
    cell_dir = out / "cells" / cell.name
    if (cell_dir / "result.json").is_file():
        print(f"[sweep] {cell.name}: done, skipped", flush=True)
        return json.loads((cell_dir / "result.json").read_text())
    final = cell_dir / "checkpoints" / "final.ckpt"
    if not final.is_file():
        train_cell(cfg, cell, cell_dir, fit_args)
    train_s = train_seconds(cell_dir)  # also when another process (--train-only) trained it
    t0 = time.perf_counter()
    doc = ev.evaluate(str(final))
    atomic_write_text(cell_dir / "eval.json", json.dumps(doc))
    train = final_train_metrics(cell_dir)
    hparams = {
        "kind": cell.kind,
        "term": cell.term or "control",
        "temperature": cell.temperature or "-",
        "beta": cell.beta,
        "steps": cfg.steps,
        "games": cfg.games,
        "seed": cell.seed,
        "base": cfg.base,
    }
    metrics = {
        **cell_metrics(doc),
        **{
            f"final/{k}": v
            for k, v in train.items()
            if k.split("/")[0] in ("loss", "kl", "policy", "selfplay", "control")
        },
    }
    log_hparams(cell_dir, hparams, metrics, cfg.steps)
    result = {
        "schema": "pdx_cell_result/1",
        "cell": asdict(cell),
        "dir": str(cell_dir),
        "checkpoint": str(final),
        "hparams": hparams,
        "train": train,
        "metrics": metrics,
        "eval": "eval.json",
        "seconds": {"train": train_s, "eval": time.perf_counter() - t0},
        "environment": environment(),
    }  # the versions it was scored with (python, torch, lightning, ...)
    atomic_write_text(cell_dir / "result.json", json.dumps(result, indent=1))
    acc = metrics.get("final/selection/acc", float("nan"))
    print(f"[sweep] {cell.name}: selection acc {acc:.4f}", flush=True)
    return result


def cell_selection(cell_dir: Path) -> dict | None:
    """A finished cell's selection-suite summary (``n, solved, acc, acc_ci, p_star_geo``), else None."""
    path = cell_dir / "eval.json"
    if not (cell_dir / "result.json").is_file() or not path.is_file():
        return None
    s = json.loads(path.read_text())["suites"]["selection"]["summary"]
    return s and {k: s[k] for k in ("n", "solved", "acc", "acc_ci", "p_star_geo")}
