"""``pdx sweep``: the exploration-term × temperature × β matrix (paper Section 3.1, Appendix G, Table 6).

Every cell fine-tunes the same base with the same compute (steps, games,
seeds); only the exploration term, its weight β and the self-play temperature
vary. β = 0 is the ``none`` arm (one cell per temperature); the supervised
puzzle-tuned control (Section 3.6, :mod:`pdx_lightning.supervised.control`) is one more
cell with the same step budget. A cell is a ``pdx fit`` subprocess (the
control: ``python -m pdx_lightning.supervised.control fit``) on a generated, complete
LightningCLI config ``<out>/cells/<cell>/fit.yaml``; extra command-line flags
(``--trainer.strategy ddp --trainer.devices 2``) are passed to every fit.

Layout of ``<out>`` (what :mod:`pdx_lightning.experiments.report` reads)::

    sweep.json                  config, cells, β* per (term, temperature), file map
    table6.md                   β selection on the selection suite (Wilson intervals)
    base/eval.json              the frozen base on every suite (schema ``pdx_cell_eval/1``)
    cells/<cell>/fit.yaml       the cell's full config; fit.log its output
    cells/<cell>/tb/version_0   its TensorBoard run: training scalars + hparams with final metrics
    cells/<cell>/csv/…          the same scalars as CSV (final training metrics are read here)
    cells/<cell>/checkpoints/   last.ckpt (periodic, resume) and final.ckpt (end of training)
    cells/<cell>/eval.json      its EMA on every suite, paired with the base
    cells/<cell>/result.json    the cell is finished: a rerun skips it
    arena.json, arena_sampled.json, coverage.json, diagnostics.json, recovery.json   (optional stages)

Training is :mod:`pdx_lightning.experiments.sweep`; evaluation, β selection and the optional stages are
:mod:`pdx_lightning.experiments.sweep_eval`.

Resuming: a cell with ``result.json`` is skipped; one with ``final.ckpt`` is
only evaluated; one with ``checkpoints/last.ckpt`` resumes training from it
(``--ckpt_path``, the same games and optimizer). Optional stages are skipped
when their JSON exists. β* per (term, temperature) = the highest selection-suite
accuracy (ties: the higher geometric-mean p*, then the smaller β).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

TERMS = ("none", "entropy", "reverse_kl", "forward_kl")
TEMPERATURES = ("adaptive", "fixed")
PAPER_BETAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
ANALYSES = ("coverage", "diagnostics", "recovery")


class SweepConfigError(ValueError):
    """A sweep YAML that does not fit :class:`SweepConfig` (says which key and why)."""


class SweepError(RuntimeError):
    """A cell or stage that failed (says which, and where its log is)."""


# ---------------------------------------------------------------- the sweep.yaml schema

@dataclass
class SuiteSpec:
    """An evaluation suite: puzzle CSV file(s) and the selection applied (``evaluation.suite.load_suite``)."""

    path: list[str]
    sample: int | None = None
    seed: int = 0
    rating_min: float | None = None
    rating_max: float | None = None
    themes: list[str] | None = None


@dataclass
class EvalConfig:
    """Suites every cell's EMA (and the base) is scored on; ``selection`` picks β* (Table 6)."""

    selection: SuiteSpec
    tactics: SuiteSpec | None = None   # Table 1 Acc., Table 4, Figure 5
    hard: SuiteSpec | None = None      # Table 1 Acc_>=2400
    mates: SuiteSpec | None = None     # Tables 3-4, Figure 1 (depth = solver moves)
    micro_batch: int = 512
    device: str = "auto"               # torch device of the evaluation (auto: cuda if available)


@dataclass
class ControlConfig:
    """The supervised puzzle-tuned control (:class:`pdx_lightning.supervised.control.PuzzleControl`)."""

    enabled: bool = False
    pool: list[str] = field(default_factory=list)
    model: dict[str, Any] = field(default_factory=dict)  # further PuzzleControl arguments


@dataclass
class ArenaConfig:
    """``pdx arena`` among the base, the selected cells and the control (Tables 1 and 5)."""

    games: int = 20          # games per pair, argmax round robin (Table 1 Elo)
    base_games: int = 0      # games of each model against the base (Table 1 W-D-L, LOS); 0 = pair games only
    sampled_games: int = 0   # games per pair of the sampled round robin (Table 5 Elo); 0 = skip it
    openings: str | None = None
    args: list[str] = field(default_factory=list)  # further `pdx arena` flags


@dataclass
class AnalysesConfig:
    """``pdx eval coverage|diagnostics|recovery`` on the base and the selected cells (when installed)."""

    run: list[str] = field(default_factory=list)
    args: dict[str, list[str]] = field(default_factory=dict)  # further flags per analysis


@dataclass
class SweepConfig:
    """``conf/sweep.yaml``. Unknown keys are errors."""

    eval: EvalConfig
    out: str = "runs/sweep"
    base: str = "base:small"
    fit_config: str | None = None   # LightningCLI YAML each RL cell starts from (cells override it)
    steps: int = 150
    games: int = 64
    seed: int = 0
    checkpoint_every: int = 50
    terms: list[str] = field(default_factory=lambda: list(TERMS))
    temperatures: list[str] = field(default_factory=lambda: list(TEMPERATURES))
    betas: list[float] = field(default_factory=lambda: list(PAPER_BETAS))
    model: dict[str, Any] = field(default_factory=dict)     # further PDXModule arguments (e.g. learning rates)
    selfplay: dict[str, Any] = field(default_factory=dict)  # further SelfPlayConfig fields
    trainer: dict[str, Any] = field(default_factory=dict)   # further Trainer arguments, every cell
    control: ControlConfig = field(default_factory=ControlConfig)
    arena: ArenaConfig | None = None
    analyses: AnalysesConfig | None = None

    def __post_init__(self) -> None:
        bad = [t for t in self.terms if t not in TERMS] + [t for t in self.temperatures if t not in TEMPERATURES]
        if bad:
            raise ValueError(f"unknown term/temperature {bad}; terms: {TERMS}, temperatures: {TEMPERATURES}")
        if any(b <= 0 for b in self.betas):
            raise ValueError("betas must be > 0 (beta = 0 is the 'none' term: list it in terms)")
        if min(self.steps, self.games, self.checkpoint_every) < 1:
            raise ValueError("steps, games and checkpoint_every must be >= 1")
        for key, owned in (("model", ("base", "exploration", "beta", "selfplay")),
                           ("selfplay", ("n_games", "temperature", "seed")),
                           ("trainer", ("max_steps", "logger", "callbacks"))):
            if clash := sorted(set(getattr(self, key)) & set(owned)):
                raise ValueError(f"{key}: {clash} are set by the sweep itself (from base, terms, betas, games, "
                                 f"temperatures, seed, steps, out)")
        if self.control.enabled and not self.control.pool:
            raise ValueError("control.enabled needs control.pool (puzzle CSVs disjoint from every eval suite)")
        if self.analyses and (bad := [a for a in self.analyses.run if a not in ANALYSES]):
            raise ValueError(f"analyses.run: unknown {bad}; choose from {ANALYSES}")


def _coerce(tp: Any, v: Any, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        return _coerce(next(a for a in args if a is not type(None)), v, where)
    if tp is Any:
        return v
    if is_dataclass(tp):
        return _build(tp, {"path": v} if tp is SuiteSpec and isinstance(v, (str, list)) else v, where)
    if origin is list:
        v = [v] if isinstance(v, (str, int, float)) and args[0] in (str, float) else v
        if not isinstance(v, list):
            raise SweepConfigError(f"{where}: expected a list, got {v!r}")
        return [_coerce(args[0], x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin is dict:
        if not isinstance(v, dict):
            raise SweepConfigError(f"{where}: expected a mapping, got {v!r}")
        return {str(k): _coerce(args[1], x, f"{where}.{k}") for k, x in v.items()}
    if tp is float and not isinstance(v, bool):
        try:
            return float(v)  # PyYAML reads 1e-3 (no dot) as a string
        except (TypeError, ValueError):
            pass
    if tp is int and isinstance(v, int) and not isinstance(v, bool) or tp in (str, bool) and isinstance(v, tp):
        return v
    raise SweepConfigError(f"{where}: expected {getattr(tp, '__name__', tp)}, got {v!r}")


def _build(cls: type, data: Any, where: str) -> Any:
    data = {} if data is None else data
    at = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise SweepConfigError(f"{at}expected a mapping, got {data!r}")
    hints, names = typing.get_type_hints(cls), [f.name for f in fields(cls)]
    if unknown := sorted(set(data) - set(names)):
        raise SweepConfigError(f"{at}unknown key(s) {unknown}; valid keys: {', '.join(names)}")
    required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
    if missing := [k for k in required if k not in data]:
        raise SweepConfigError(f"{at}missing required key(s) {missing}")
    kwargs = {k: _coerce(hints[k], v, f"{where}.{k}" if where else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except ValueError as e:  # a __post_init__ check
        raise SweepConfigError(f"{at}{e}") from None


def load_config(path: str | Path) -> SweepConfig:
    """Read and check a sweep YAML; errors name the file and the key."""
    import yaml  # noqa: PLC0415

    with open(path) as f:
        data = yaml.safe_load(f)
    try:
        return _build(SweepConfig, data, "")
    except SweepConfigError as e:
        raise SweepConfigError(f"{path}: {e}") from None


# ---------------------------------------------------------------- cells

@dataclass(frozen=True)
class Cell:
    name: str
    kind: Literal["rl", "control"]
    term: str | None = None
    temperature: str | None = None
    beta: float | None = None


def plan(cfg: SweepConfig) -> list[Cell]:
    """Every cell of the matrix: ``none`` once per temperature (β = 0), other terms × β; then the control."""
    cells = []
    for term in cfg.terms:
        for temp in cfg.temperatures:
            for beta in ([0.0] if term == "none" else cfg.betas):
                name = f"{term}-{temp}" if term == "none" else f"{term}-{temp}-b{beta:g}"
                cells.append(Cell(name, "rl", term, temp, beta))
    if cfg.control.enabled:
        cells.append(Cell("control", "control"))
    return cells


def eval_suites(cfg: SweepConfig) -> list[dict]:
    """Every evaluation suite as selected (the control's pool must be disjoint from each)."""
    ev = cfg.eval
    return [asdict(s) for s in (ev.selection, ev.tactics, ev.hard, ev.mates) if s]


def fit_config(cfg: SweepConfig, cell: Cell, cell_dir: Path) -> dict:
    """The cell's complete LightningCLI config (the fit_config file, then the sweep's settings on top)."""
    import yaml  # noqa: PLC0415

    doc: dict = {}
    if cell.kind == "rl" and cfg.fit_config:
        with open(cfg.fit_config) as f:
            doc = yaml.safe_load(f) or {}
    trainer = dict(doc.get("trainer") or {})
    ckpt_dir = str(cell_dir / "checkpoints")
    keep = [c for c in trainer.get("callbacks") or [] if not str(c.get("class_path", "")).endswith("ModelCheckpoint")]
    trainer.update({
        "max_steps": cfg.steps, "enable_progress_bar": False,
        "logger": [{"class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                    "init_args": {"save_dir": str(cell_dir), "name": "tb", "version": 0, "default_hp_metric": False}},
                   {"class_path": "lightning.pytorch.loggers.CSVLogger",
                    "init_args": {"save_dir": str(cell_dir), "name": "csv", "version": 0}}],
        # final.ckpt at step max_steps exactly, then last.ckpt every checkpoint_every steps (to resume
        # from). In this order, so a cell killed between the two saves never has last.ckpt at max_steps
        # without final.ckpt (a resume from there would train no step and save nothing)
        "callbacks": [*keep, {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                              "init_args": {"dirpath": ckpt_dir, "filename": "final", "save_top_k": 1,
                                            "every_n_train_steps": cfg.steps, "enable_version_counter": False}},
                      {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                       "init_args": {"dirpath": ckpt_dir, "save_last": True, "save_top_k": 0,
                                     "every_n_train_steps": cfg.checkpoint_every}}],
        **cfg.trainer})
    if cell.kind == "control":
        model = {"base": cfg.base, "pool": cfg.control.pool, "exclude": eval_suites(cfg), "batch_size": cfg.games,
                 "seed": cfg.seed, **cfg.control.model}
    else:
        model = {**(doc.get("model") or {}), **cfg.model, "base": cfg.base, "exploration": cell.term,
                 "beta": cell.beta}
        model["selfplay"] = {**(model.get("selfplay") or {}), **cfg.selfplay, "n_games": cfg.games,
                             "temperature": cell.temperature, "seed": cfg.seed}
    return {**doc, "seed_everything": cfg.seed, "trainer": trainer, "model": model}


def launch(cmd: list[str], log_path: Path) -> int:
    """Run one training subprocess, output appended to ``log_path`` (tests replace this to count launches)."""
    with open(log_path, "a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode


def fit_command(cell: Cell, cell_dir: Path, fit_args: list[str]) -> list[str]:
    entry = ["-m", "pdx_lightning.supervised.control", "fit"] if cell.kind == "control" else ["-m", "pdx_lightning.cli", "fit"]
    cmd = [sys.executable, *entry, "--config", str(cell_dir / "fit.yaml"), *fit_args]
    last = cell_dir / "checkpoints" / "last.ckpt"
    return cmd + (["--ckpt_path", str(last)] if last.is_file() else [])


def train_cell(cfg: SweepConfig, cell: Cell, cell_dir: Path, fit_args: list[str]) -> float:
    """Train (or resume) one cell until ``final.ckpt`` exists; returns seconds spent."""
    import yaml  # noqa: PLC0415

    t0 = time.perf_counter()
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "fit.yaml").write_text(yaml.safe_dump(fit_config(cfg, cell, cell_dir), sort_keys=False))
    cmd = fit_command(cell, cell_dir, fit_args)
    print(f"[sweep] {cell.name}: {'resume' if '--ckpt_path' in cmd else 'train'} ({cfg.steps} steps)", flush=True)
    rc = launch(cmd, cell_dir / "fit.log")
    seconds = time.perf_counter() - t0 + train_seconds(cell_dir)  # summed over the cell's (resumed) launches
    (cell_dir / "train.json").write_text(json.dumps({"seconds": seconds}))
    if rc != 0 or not (cell_dir / "checkpoints" / "final.ckpt").is_file():
        log = cell_dir / "fit.log"
        tail = "".join(log.read_text().splitlines(True)[-25:]) if log.is_file() else "(no log)\n"
        raise SweepError(f"cell {cell.name}: training failed (exit {rc}); log {cell_dir / 'fit.log'}:\n{tail}")
    return seconds


def train_seconds(cell_dir: Path) -> float:
    """Wall seconds spent training the cell so far, over every launch (``train.json``; 0 if never trained here)."""
    path = cell_dir / "train.json"
    return float(json.loads(path.read_text())["seconds"]) if path.is_file() else 0.0


# ---------------------------------------------------------------- the whole sweep

def preflight(cfg: SweepConfig, cells: list[Cell] | None = None, evaluate: bool = True) -> list[str]:
    """What would make a cell fail late: missing suite or pool files, an unknown base (checked before training).

    ``cells``: the cells about to run (default all); ``evaluate=False`` (``--train-only``) skips the suites.
    """
    from pdx_lightning.nets import ModelLoadError, resolve_model_path  # noqa: PLC0415

    paths = dict.fromkeys(p for s in eval_suites(cfg) for p in s["path"]) if evaluate else {}
    problems = [f"suite file {p} not found" for p in paths if not Path(p).is_file()]
    control = any(c.kind == "control" for c in (plan(cfg) if cells is None else cells))
    problems += [f"control pool {p} not found" for p in cfg.control.pool if control and not Path(p).is_file()]
    try:
        resolve_model_path(cfg.base)
    except ModelLoadError as e:
        problems.append(str(e))
    return problems


LOCKED = ("base", "fit_config", "steps", "games", "seed", "model", "selfplay", "trainer", "eval", "control")


def check_lock(cfg: SweepConfig, out: Path) -> None:
    """Matched compute: refuse to mix cells made under different settings in one output directory.

    The grid (terms, temperatures, betas) may grow and the stages may change; anything else a
    finished cell depends on is recorded in ``<out>/config.lock.json`` at the first run.
    """
    now = json.loads(json.dumps({k: asdict(cfg)[k] for k in LOCKED}))
    path = out / "config.lock.json"
    fd, name = tempfile.mkstemp(prefix=".config.lock.", dir=out)
    tmp = Path(name)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(now, indent=1))
    try:  # link = create-if-absent with the whole content: of two sweeps started together, exactly one locks
        os.link(tmp, path)
        return
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: exclusive create (a reader may briefly see it empty)
        try:
            with open(path, "x") as f:
                f.write(json.dumps(now, indent=1))
            return
        except FileExistsError:
            pass
    finally:
        tmp.unlink()
    old = json.loads(path.read_text())
    if changed := [k for k in LOCKED if old.get(k) != now[k]]:
        diff = "; ".join(f"{k}: {old.get(k)!r} -> {now[k]!r}" for k in changed)
        raise SweepConfigError(f"{out} holds cells made with other settings ({diff}); use another --out, "
                               f"or delete {path} knowingly")


def run(args: argparse.Namespace) -> int:
    from pdx_lightning.experiments.sweep_eval import Evaluator, finish, run_cell  # noqa: PLC0415

    cfg = load_config(args.config)
    out = Path(args.out_dir or cfg.out)
    cells = plan(cfg)
    if args.control_only:
        cells = [c for c in cells if c.kind == "control"]
        if not cells:
            raise SweepConfigError(f"{args.config}: --control-only, but control.enabled is false")
    if args.only:
        cells = [c for c in cells if any(fnmatch.fnmatch(c.name, p) for p in args.only)]
    fit_args = list(args.fit_args or [])
    fit_args = fit_args[1:] if fit_args[:1] == ["--"] else fit_args
    problems = preflight(cfg, cells, evaluate=not args.train_only)
    if problems and not args.dry_run:
        raise SweepConfigError(f"{args.config}: " + "; ".join(problems))
    if args.dry_run:
        for problem in problems:
            print(f"warning: {problem}")
        for c in cells:
            d = out / "cells" / c.name
            state = "done" if (d / "result.json").is_file() else "evaluate" if (d / "checkpoints/final.ckpt").is_file() \
                else "resume" if (d / "checkpoints/last.ckpt").is_file() else "train"
            print(f"{c.name:34s} {state:8s} {' '.join(fit_command(c, d, fit_args))}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    check_lock(cfg, out)
    t0 = time.perf_counter()
    if args.train_only:  # train/resume to final.ckpt; a later run without the flag evaluates (state "evaluate")
        for cell in cells:
            cell_dir = out / "cells" / cell.name
            if (cell_dir / "checkpoints" / "final.ckpt").is_file():
                print(f"[sweep] {cell.name}: trained, skipped", flush=True)
            else:
                train_cell(cfg, cell, cell_dir, fit_args)
        print(f"[sweep] trained {len(cells)} cells in {time.perf_counter() - t0:.0f} s (not evaluated: rerun "
              f"without --train-only)", flush=True)
        return 0
    ev = Evaluator(cfg, out)
    for cell in cells:
        run_cell(cfg, cell, out, fit_args, ev)
    finish(cfg, out, plan(cfg), stages=not (args.control_only or args.only or args.no_stages))
    print(f"[sweep] {len(cells)} cells in {time.perf_counter() - t0:.0f} s; wrote {out / 'sweep.json'} and "
          f"{out / 'table6.md'}; report: pdx report --runs {out} --out {out / 'report'}", flush=True)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.allow_abbrev = False  # so no passed-through fit flag is mistaken for one of ours
    parser.add_argument("--config", required=True, help="sweep YAML (schema: pdx_lightning.experiments.sweep.SweepConfig)")
    # dest out_dir: `pdx`'s output preflight treats an `out` attribute as a file unless the tool is listed as
    # writing a directory; the sweep's --out is an existing directory whenever it resumes
    parser.add_argument("--out", dest="out_dir", help="output directory (default: the config's `out`)")
    parser.add_argument("--only", action="append", metavar="GLOB", help="run only cells whose name matches")
    parser.add_argument("--control-only", action="store_true", help="train and evaluate only the control cell")
    parser.add_argument("--no-stages", action="store_true", help="skip the arena and analysis stages")
    parser.add_argument("--train-only", action="store_true",
                        help="only train (or resume) cells to their final checkpoint; evaluate later by rerunning "
                             "without it (e.g. several --only processes or machines train, one evaluates)")
    parser.add_argument("--dry-run", action="store_true", help="print every cell, its state and its command")
    parser.epilog = ("Any other flag (e.g. --trainer.strategy ddp --trainer.devices 2) is passed to every "
                     "cell's fit; `--` may separate them.")
    parse_known = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):  # unknown flags are the fits' flags, not errors
        ns, extra = parse_known(args, namespace)
        ns.fit_args = extra
        return ns, []

    parser.parse_known_args = parse_known_args
