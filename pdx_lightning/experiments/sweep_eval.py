"""After training: score a sweep's cells, choose β* per arm (Table 6), run the optional stages.

* :class:`Evaluator` scores a model's EMA on every suite of ``eval:`` with
  :func:`pdx_lightning.evaluation.puzzles.score_suite` (in-process, batched)
  and pairs it with the frozen base (scored once per sweep invocation, written
  to ``base/eval.json``). Document schema ``pdx_cell_eval/1``::

      {"schema": "pdx_cell_eval/1", "model": name, "weights": "ema", "multi_solution": rule,
       "suites": {"selection"|"tactics"|"hard"|"mates": {
           "spec": {path, sample, seed, rating_min, rating_max, themes}, "files": [...], "n": N,
           "ids": [...], "rating": [...], "difficulty": [...], "depth": [...],
           "summary": puzzles.summarize(...),      # acc, acc_ci, p_star_geo, p_star_arith, nll, by_bin, by_depth
           "paired": puzzles.compare(base, model) | null,   # null for the base itself
           "per_puzzle": puzzles.per_puzzle(...)}}}          # per-position arrays (Figure 8's input)

* :func:`select` picks β* per (term, temperature) by selection-suite accuracy
  (ties: higher geometric-mean p*, then smaller β); ``none`` arms have one cell.
* :func:`finish` writes ``sweep.json`` (schema ``pdx_sweep/1``, below) and
  ``table6.md``, then — once every RL cell is done — the optional stages:
  ``pdx arena`` (argmax: base + selected cells + control → ``arena.json``;
  sampled, each model through its self-play distribution → ``arena_sampled.json``)
  and ``pdx eval coverage|diagnostics|recovery`` (``<name>.json``), each skipped
  when its JSON exists or its tool is not installed::

      {"schema": "pdx_sweep/1", "config": {...}, "base": {"name", "eval": "base/eval.json"},
       "cells": [{"name", "kind", "term", "temperature", "beta", "dir", "checkpoint", "status": "done"|"pending",
                  "selection": {"n", "solved", "acc", "acc_ci", "p_star_geo"} | null}],
       "selected": [{"term", "temperature", "beta", "cell"}], "control": "control" | null,
       "files": {"arena": "arena.json", ...}}      # the optional stages' outputs present
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from pdx_lightning.experiments import sweep
from pdx_lightning.experiments.sweep import ANALYSES, Cell, SuiteSpec, SweepConfig, SweepError, train_cell, train_seconds

SUITES = ("selection", "tactics", "hard", "mates")


def jsonable(x):
    """NaN/inf → null, numpy → Python, recursively."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    return x


class Evaluator:
    """Scores models on the sweep's suites; the base's results are computed once and kept for pairing."""

    def __init__(self, cfg: SweepConfig, out: Path) -> None:
        self.cfg, self.out = cfg, out
        self._suites: dict | None = None
        self._base: dict | None = None

    def suites(self) -> dict:
        from pdx_lightning.evaluation.suite import load_suite  # noqa: PLC0415

        if self._suites is None:
            self._suites = {}
            for name in SUITES:
                spec: SuiteSpec | None = getattr(self.cfg.eval, name)
                if spec is not None:
                    self._suites[name] = (spec, load_suite(spec.path, sample=spec.sample, seed=spec.seed,
                                                           rating_min=spec.rating_min, rating_max=spec.rating_max,
                                                           themes=spec.themes))
        return self._suites

    def _score(self, name: str) -> dict:
        import torch  # noqa: PLC0415

        from pdx_lightning.evaluation.puzzles import score_suite  # noqa: PLC0415
        from pdx_lightning.nets import load_model  # noqa: PLC0415

        dev = self.cfg.eval.device
        model = load_model(name, weights="ema").to(torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if dev == "auto" else dev)).eval()
        with torch.inference_mode():
            return {k: score_suite(model, suite.puzzles, micro_batch=self.cfg.eval.micro_batch) if len(suite) else None
                    for k, (spec, suite) in self.suites().items()}

    def _doc(self, name: str, results: dict, base: dict | None) -> dict:
        meta = {k: {"spec": asdict(spec), "files": suite.paths, **suite_meta(suite.puzzles)}
                for k, (spec, suite) in self.suites().items()}
        return eval_document(name, meta, results, base)

    def base(self) -> dict:
        if self._base is None:
            self._base = self._score(self.cfg.base)
            path = self.out / "base" / "eval.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self._doc(self.cfg.base, self._base, None)))
        return self._base

    def evaluate(self, name: str) -> dict:
        base = self.base()
        return self._doc(name, self._score(name), base)


def suite_meta(puzzles: list) -> dict:
    return {"n": len(puzzles), "ids": [p.puzzle_id for p in puzzles], "rating": [p.rating for p in puzzles],
            "difficulty": [p.difficulty for p in puzzles], "depth": [p.depth for p in puzzles]}


def eval_document(name: str, meta: dict[str, dict], results: dict, base: dict | None) -> dict:
    """The ``pdx_cell_eval/1`` document: per suite ``meta`` (spec, files, n, ids, rating, difficulty, depth)
    plus the summary, the pairing with the base's results and the per-position arrays of ``results``."""
    from pdx_lightning.evaluation.puzzles import MULTI_SOLUTION_RULE, compare, per_puzzle, summarize  # noqa

    suites = {k: {**m, "summary": summarize(r) if (r := results.get(k)) else None,
                  "paired": compare(base[k], r) if r and base is not None and base.get(k) else None,
                  "per_puzzle": per_puzzle(r) if r else None} for k, m in meta.items()}
    return _round(jsonable({"schema": "pdx_cell_eval/1", "model": name, "weights": "ema",
                            "multi_solution": MULTI_SOLUTION_RULE, "suites": suites}))


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
    """Write the cell's hparams (TensorBoard HParams plugin) with its final metrics into its own run."""
    from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415
    from torch.utils.tensorboard.summary import hparams as hp_summary  # noqa: PLC0415

    metrics = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}
    writer = SummaryWriter(str(cell_dir / "tb" / "version_0"))
    try:
        for summary in hp_summary({k: v for k, v in hparams.items() if v is not None}, metrics):
            writer.file_writer.add_summary(summary)
        for k, v in metrics.items():
            writer.add_scalar(k, v, step)
    finally:
        writer.close()


def run_cell(cfg: SweepConfig, cell: Cell, out: Path, fit_args: list[str], ev: Evaluator) -> dict:
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
    (cell_dir / "eval.json").write_text(json.dumps(doc))
    train = final_train_metrics(cell_dir)
    hparams = {"kind": cell.kind, "term": cell.term or "control", "temperature": cell.temperature or "-",
               "beta": cell.beta, "steps": cfg.steps, "games": cfg.games, "seed": cfg.seed, "base": cfg.base}
    metrics = {**cell_metrics(doc), **{f"final/{k}": v for k, v in train.items() if k.split("/")[0] in
                                       ("loss", "kl", "policy", "selfplay", "control")}}
    log_hparams(cell_dir, hparams, metrics, cfg.steps)
    result = {"schema": "pdx_cell_result/1", "cell": asdict(cell), "dir": str(cell_dir), "checkpoint": str(final),
              "hparams": hparams, "train": train, "metrics": metrics, "eval": "eval.json",
              "seconds": {"train": train_s, "eval": time.perf_counter() - t0}}
    (cell_dir / "result.json").write_text(json.dumps(result, indent=1))
    print(f"[sweep] {cell.name}: selection acc {metrics.get('final/selection/acc', float('nan')):.4f}", flush=True)
    return result


def _selection(cell_dir: Path) -> dict | None:
    path = cell_dir / "eval.json"
    if not (cell_dir / "result.json").is_file() or not path.is_file():
        return None
    s = json.loads(path.read_text())["suites"]["selection"]["summary"]
    return s and {k: s[k] for k in ("n", "solved", "acc", "acc_ci", "p_star_geo")}


def select(cells: list[dict]) -> list[dict]:
    """β* per (term, temperature): best selection accuracy, then higher p*_geo, then smaller β."""
    arms: dict[tuple, list[dict]] = {}
    for c in cells:
        if c["kind"] == "rl" and c["selection"] and c["selection"]["acc"] is not None:
            arms.setdefault((c["term"], c["temperature"]), []).append(c)
    out = []
    for (term, temp), cs in arms.items():
        best = max(cs, key=lambda c: (c["selection"]["acc"], c["selection"]["p_star_geo"] or 0.0, -c["beta"]))
        out.append({"term": term, "temperature": temp, "beta": best["beta"], "cell": best["name"]})
    return out


def finish(cfg: SweepConfig, out: Path, cells: list[Cell], stages: bool = True) -> dict:
    """Write sweep.json and table6.md from the finished cells; run the optional stages when all are done."""
    from pdx_lightning.experiments.report import load_runs, table6  # noqa: PLC0415

    rows = []
    for c in cells:
        d = out / "cells" / c.name
        sel = _selection(d)
        rows.append({**asdict(c), "dir": str(Path("cells") / c.name),
                     "checkpoint": str(d / "checkpoints" / "final.ckpt"),
                     "status": "done" if sel is not None else "pending", "selection": sel})
    doc = {"schema": "pdx_sweep/1", "config": asdict(cfg), "base": {"name": cfg.base, "eval": "base/eval.json"},
           "cells": rows, "selected": select(rows),
           "control": "control" if any(c.kind == "control" for c in cells) else None, "files": {}}
    _write(out, doc)
    if stages and all(r["status"] == "done" for r in rows):
        run_stages(cfg, out, doc)
    doc["files"] = {n: f"{n}.json" for n in ("arena", "arena_sampled", *ANALYSES) if (out / f"{n}.json").is_file()}
    _write(out, doc)
    (out / "table6.md").write_text(table6(load_runs(out)) + "\n")
    return doc


def _write(out: Path, doc: dict) -> None:
    (out / "sweep.json").write_text(json.dumps(jsonable(doc), indent=1))


def _stage(out: Path, name: str, args: list[str]) -> None:
    if (out / f"{name}.json").is_file():
        print(f"[sweep] {name}: done, skipped", flush=True)
        return
    print(f"[sweep] {name} ...", flush=True)
    rc = sweep.launch([sys.executable, "-m", "pdx_lightning.cli", *args, "--json", str(out / f"{name}.json")],
                out / f"{name}.log")
    if rc != 0:
        raise SweepError(f"stage {name} failed (exit {rc}); see {out / f'{name}.log'}")


def run_stages(cfg: SweepConfig, out: Path, doc: dict) -> None:
    """Arena (argmax, then sampled) and analyses over the base, the selected cells and the control."""
    by_name = {c["name"]: c for c in doc["cells"]}
    chosen = [by_name[s["cell"]] for s in doc["selected"]]
    if cfg.arena:
        a = cfg.arena
        players = [("base", cfg.base)] + [(c["name"], c["checkpoint"]) for c in chosen]
        players += [("control", by_name["control"]["checkpoint"])] if doc["control"] else []
        flags = [f for lab, m in players for f in ("--model", m, "--label", lab)]
        common = ["--quiet", *(["--openings", a.openings] if a.openings else []), *a.args]
        _stage(out, "arena", ["arena", *flags, "--games", str(a.games), "--base-games", str(a.base_games),
                              "--pgn", str(out / "arena.pgn"), *common])
        if a.sampled_games:
            sampled = [("base raw", cfg.base, "1"), ("base mu", cfg.base, "adaptive")]
            sampled += [(c["name"], c["checkpoint"], "adaptive" if c["temperature"] == "adaptive" else "1")
                        for c in chosen]
            flags = [f for lab, m, _ in sampled for f in ("--model", m, "--label", lab)]
            _stage(out, "arena_sampled", ["arena", *flags, "--sample", "--temperature", *[t for *_, t in sampled],
                                          "--games", str(a.sampled_games), *common])
    for name in cfg.analyses.run if cfg.analyses else []:
        if importlib.util.find_spec(f"pdx_lightning.evaluation.{name}") is None:
            print(f"[sweep] {name}: `pdx eval {name}` is not installed, skipped (report: not measured)")
            continue
        if name == "recovery":  # the fine-tuned models against the base, on the tactics suite
            if not cfg.eval.tactics:
                raise SweepError("analyses.run lists recovery, but eval.tactics (its suite) is not set")
            t = cfg.eval.tactics
            flags = ["--base", cfg.base, *[f for c in chosen for f in ("--model", c["checkpoint"])],
                     *[f for p in t.path for f in ("--suite", p)], "--seed", str(t.seed),
                     *[f for k, v in (("--sample", t.sample), ("--rating-min", t.rating_min),
                                      ("--rating-max", t.rating_max)) if v is not None for f in (k, str(v))],
                     *(["--themes", *t.themes] if t.themes else [])]
        else:  # coverage, diagnostics: the base raw and through its tempered μ, each cell as it self-played
            flags = ["--model", cfg.base, "--play", "raw", "--model", cfg.base, "--play", "adaptive"]
            flags += [f for c in chosen for f in ("--model", c["checkpoint"], "--play", "auto")]
        _stage(out, name, ["eval", name, *flags, *cfg.analyses.args.get(name, [])])
