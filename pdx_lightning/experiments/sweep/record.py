"""The sweep's record: β* per arm (Table 6), ``sweep.json`` and ``table6.md``, then the optional stages.

β* per (term, temperature) = the highest selection-suite accuracy (ties: the higher geometric-mean
p*, then the smaller β); ``none`` arms have one cell. ``sweep.json`` (schema ``pdx_sweep/1``)::

    {"schema": "pdx_sweep/1", "config": {...}, "base": {"name", "eval": "base/eval.json"},
     "cells": [{"name", "kind", "term", "temperature", "beta", "seed", "dir", "checkpoint",
                "status": "done"|"pending",
                "selection": {"n", "solved", "acc", "acc_ci", "p_star_geo"} | null}],
     "selected": [{"term", "temperature", "beta", "cell"}], "control": "control" | null,
     "files": {"arena": "arena.json", ...}}      # the optional stages' outputs present
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from pdx_lightning.experiments.report.runs import load_runs
from pdx_lightning.experiments.report.tables import table6
from pdx_lightning.experiments.sweep.config import Cell, SweepConfig
from pdx_lightning.experiments.sweep.evaluate import cell_selection
from pdx_lightning.experiments.sweep.stages import STAGE_FILES, run_stages
from pdx_lightning.files.atomicfile import atomic_write_text
from pdx_lightning.runtime.environment import environment
from pdx_lightning.runtime.jsonio import write_json


def select(cells: list[dict], seed: int | None = None) -> list[dict]:
    """β* per (term, temperature): best selection accuracy, then higher p*_geo, then smaller β; with
    ``seed``, among that seed's cells only (the other seeds replicate the arms, they do not vote)."""
    arms: dict[tuple, list[dict]] = {}
    for c in cells:
        if seed is not None and c.get("seed", seed) != seed:
            continue
        if c["kind"] == "rl" and c["selection"] and c["selection"]["acc"] is not None:
            arms.setdefault((c["term"], c["temperature"]), []).append(c)
    out = []
    for (term, temp), cs in arms.items():
        best = max(cs, key=lambda c: (c["selection"]["acc"], c["selection"]["p_star_geo"] or 0.0, -c["beta"]))
        out.append({"term": term, "temperature": temp, "beta": best["beta"], "cell": best["name"]})
    return out


def finish(cfg: SweepConfig, out: Path, cells: list[Cell], stages: bool = True) -> dict:
    """Write sweep.json and table6.md from the finished cells; run the optional stages when all are done."""
    rows = []
    for c in cells:
        d = out / "cells" / c.name
        sel = cell_selection(d)
        rows.append(
            {
                **asdict(c),
                "dir": str(Path("cells") / c.name),
                "checkpoint": str(d / "checkpoints" / "final.ckpt"),
                "status": "done" if sel is not None else "pending",
                "selection": sel,
            }
        )
    doc = {
        "schema": "pdx_sweep/1",
        "config": asdict(cfg),
        "base": {"name": cfg.base, "eval": "base/eval.json"},
        "cells": rows,
        "selected": select(rows, cfg.seed),
        "control": "control" if any(c.kind == "control" for c in cells) else None,
        "files": {},
        "environment": environment(),
    }  # the versions this record was written with (each cell's: result.json)
    write_json(out / "sweep.json", doc, indent=1, quiet=True)
    if stages and all(r["status"] == "done" for r in rows):
        run_stages(cfg, out, doc)
    doc["files"] = {n: f"{n}.json" for n in STAGE_FILES if (out / f"{n}.json").is_file()}
    write_json(out / "sweep.json", doc, indent=1, quiet=True)
    atomic_write_text(out / "table6.md", table6(load_runs(out)) + "\n")
    return doc
