"""``pdx sweep``: the command line, the checks before any training, and the run over the cells."""

from __future__ import annotations

import argparse
import fnmatch
import json
import time
from pathlib import Path

from pdx_lightning.experiments.sweep.config import Cell, SweepConfig, SweepConfigError, load_config, plan
from pdx_lightning.experiments.sweep.evaluate import Evaluator, run_cell
from pdx_lightning.experiments.sweep.lock import check_lock
from pdx_lightning.experiments.sweep.record import finish
from pdx_lightning.experiments.sweep.stages import anchor_problems
from pdx_lightning.experiments.sweep.train import fit_command, train_cell
from pdx_lightning.files.resources import resolve_path


def preflight(cfg: SweepConfig, cells: list[Cell] | None = None, evaluate: bool = True) -> list[str]:
    """What would make a cell fail late: missing suite or pool files, an unknown base (checked before
    training). ``cells``: the cells about to run (default all); ``evaluate=False`` (``--train-only``)
    skips the suites."""
    from pdx_lightning.nets import ModelLoadError, resolve_model_path  # noqa: PLC0415

    paths = dict.fromkeys(p for s in cfg.eval.specs().values() for p in s.path) if evaluate else {}
    problems = [f"suite file {p} not found" for p in paths if not Path(resolve_path(p)).is_file()]
    control = any(c.kind == "control" for c in (plan(cfg) if cells is None else cells))
    problems += [
        f"control pool {p} not found" for p in cfg.control.pool if control and not Path(resolve_path(p)).is_file()
    ]
    try:
        resolve_model_path(cfg.base)
    except ModelLoadError as e:
        problems.append(str(e))
    return problems + (anchor_problems(cfg) + humans_problems(cfg) if evaluate else [])


def humans_problems(cfg: SweepConfig) -> list[str]:
    """The human move-matching stage (``analyses.humans``) without its games (``--pgn FILE``) or with a
    PGN file that is not there."""
    args = cfg.analyses.humans if cfg.analyses else []
    if not args:
        return []
    pgns = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--pgn"]
    if not pgns:
        return ["analyses.humans gives no --pgn FILE (the human games)"]
    return [f"analyses.humans: PGN file {p} not found" for p in pgns if not Path(p).is_file()]


RESCORED_STAGES = ("recovery",)  # the stages that read the suites' files


def rescore(out: Path, cells: list[Cell]) -> list[Path]:
    """Forget the scores (not the checkpoints) of ``cells`` and of the base, and the stages that read the
    suites, so the next run scores every model on the suites' files as they are now (e.g. topped up)."""
    paths = [out / "cells" / c.name / f for c in cells for f in ("eval.json", "result.json")]
    paths += [out / "base" / "eval.json", *(out / f"{n}.json" for n in RESCORED_STAGES)]
    removed = [p for p in paths if p.is_file()]
    for p in removed:
        p.unlink()
    return removed


def selected_cells(out: Path) -> set[str]:
    """The β* cells of the sweep.json in ``out`` (empty: none yet)."""
    path = out / "sweep.json"
    return {s["cell"] for s in json.loads(path.read_text())["selected"]} if path.is_file() else set()


def cell_state(cell_dir: Path) -> str:
    """``done`` (result.json), ``evaluate`` (final.ckpt), ``resume`` (last.ckpt) or ``train``."""
    if (cell_dir / "result.json").is_file():
        return "done"
    if (cell_dir / "checkpoints" / "final.ckpt").is_file():
        return "evaluate"
    return "resume" if (cell_dir / "checkpoints" / "last.ckpt").is_file() else "train"


def run(args: argparse.Namespace) -> int:
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
            print(f"{c.name:34s} {cell_state(d):8s} {' '.join(fit_command(c, d, fit_args))}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    check_lock(cfg, out)
    t0 = time.perf_counter()
    before = selected_cells(out)
    if args.rescore:
        removed = rescore(out, cells)
        print(
            f"[sweep] --rescore: removed {len(removed)} score files; checkpoints and the other stages kept", flush=True
        )
    if args.train_only:  # train/resume to final.ckpt; a later run without the flag evaluates ("evaluate")
        for cell in cells:
            cell_dir = out / "cells" / cell.name
            if (cell_dir / "checkpoints" / "final.ckpt").is_file():
                print(f"[sweep] {cell.name}: trained, skipped", flush=True)
            else:
                train_cell(cfg, cell, cell_dir, fit_args)
        print(
            f"[sweep] trained {len(cells)} cells in {time.perf_counter() - t0:.0f} s (not evaluated: rerun "
            f"without --train-only)",
            flush=True,
        )
        return 0
    ev = Evaluator(cfg, out)
    for cell in cells:
        run_cell(cfg, cell, out, fit_args, ev)
    doc = finish(cfg, out, plan(cfg), stages=not (args.control_only or args.only or args.no_stages))
    if args.rescore and before and before != (after := {s["cell"] for s in doc["selected"]}):
        print(
            f"[sweep] warning: rescoring changed the selected cells ({sorted(before)} -> {sorted(after)}); "
            f"arena_sampled.json, diagnostics.json and coverage.json were made with the old ones: delete "
            f"them and rerun to remake them",
            flush=True,
        )
    print(
        f"[sweep] {len(cells)} cells in {time.perf_counter() - t0:.0f} s; wrote {out / 'sweep.json'} and "
        f"{out / 'table6.md'}; report: pdx report --runs {out} --out {out / 'report'}",
        flush=True,
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.allow_abbrev = False  # so no passed-through fit flag is mistaken for one of ours
    parser.add_argument(
        "--config",
        required=True,
        help="sweep YAML, e.g. conf/sweep/cpu.yaml (schema: pdx_lightning.experiments.sweep.config.SweepConfig)",
    )
    # dest out_dir: `pdx`'s output preflight treats an `out` attribute as a file unless the tool is listed as
    # writing a directory; the sweep's --out is an existing directory whenever it resumes
    parser.add_argument("--out", dest="out_dir", help="output directory (default: the config's `out`)")
    parser.add_argument("--only", action="append", metavar="GLOB", help="run only cells whose name matches")
    parser.add_argument("--control-only", action="store_true", help="train and evaluate only the control cell")
    parser.add_argument("--no-stages", action="store_true", help="skip the arena and analysis stages")
    parser.add_argument(
        "--train-only",
        action="store_true",
        help="only train (or resume) cells to their final checkpoint; evaluate later by "
        "rerunning without it (e.g. several --only processes or machines train, one "
        "evaluates)",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="score every trained model again on the suites' files as they are now (after a "
        "suite was topped up): drops the cells' and the base's eval.json/result.json and "
        "recovery.json; checkpoints and the other stages' JSON are kept",
    )
    parser.add_argument("--dry-run", action="store_true", help="print every cell, its state and its command")
    parser.epilog = (
        "Any other flag (e.g. --trainer.strategy ddp --trainer.devices 2) is passed to every "
        "cell's fit; `--` may separate them."
    )
    parse_known = parser.parse_known_args

    def parse_known_args(args=None, namespace=None):  # unknown flags are the fits' flags, not errors
        ns, extra = parse_known(args, namespace)
        ns.fit_args = extra
        return ns, []

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]  # deliberate per-instance override
