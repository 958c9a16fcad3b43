"""Assemble the eight-seed Maia-1900 runs directory from its committed records, then write the report.

The cells were trained and scored in two sessions, on two machines, so no single `pdx sweep` output
directory holds them all. This script rebuilds one from the committed JSON records only:

* ``reports/sweep_maia_seeds/runs_json.tar.xz``: seeds 0-2 of every arm, the control, the sweep's arena
  (``arena.json``: the 20-game round robin, 1,000 games of each cell against the base, the anchors);
* ``reports/sweep_maia_seeds8/cells_json.tar.xz``: forward and reverse KL, seeds 3-7 (eval/result/train);
* ``reports/sweep_maia_seeds8/arena/arena_json.tar.xz``: 1,000 games of each of those cells against the
  base and forward KL against reverse KL of the same seed (``matches.yaml``), on the same 500 paired openings.

``sweep.json`` is written by the sweep's own ``finish`` from ``conf/sweep/maia_seeds8.yaml`` (no stage
runs); the arena files' matches are appended to ``arena.json``'s match block under the cells' names (the
BayesElo ladder of Table 1 stays the 3-seed round robin's). Then ``pdx report`` writes report.md and the
figures here and packs the assembled directory into ``runs_json.tar.xz``, from which
tests/experiments/test_report.py rebuilds the same report.

    .venv/bin/python reports/sweep_maia_seeds8/assemble.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import tarfile
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = "runs/sweep_maia"  # the sweep's own `out`: the cells' checkpoint strings in arena.json use it


def extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")


def cell_name(label: str) -> str:
    """``forward_kl-s3`` (matches.yaml's arena label) -> ``forward_kl-adaptive-b0.01-s3`` (the sweep's cell)."""
    m = re.fullmatch(r"(forward_kl|reverse_kl)-s(\d)", label)
    if not m:
        raise SystemExit(f"assemble: unexpected arena label {label!r}")
    return f"{m[1]}-adaptive-b0.01-s{m[2]}"


def merge_arena(runs: Path, files: list[Path]) -> int:
    """Append each per-match file's match (base vs cell, cell vs cell) to arena.json; returns how many."""
    arena = json.loads((runs / "arena.json").read_text())
    players = {p["label"] for p in arena["players"]}
    have = {frozenset((m["a"], m["b"])) for m in arena["matches"]}
    added = 0
    for f in files:
        doc = json.loads(f.read_text())
        (m,) = doc["matches"]
        rename = {p["label"]: ("base" if p["label"] == "base" else cell_name(p["label"])) for p in doc["players"]}
        for p in doc["players"]:
            name = rename[p["label"]]
            if name not in players:
                arena["players"].append({"label": name, "model": f"{OUT}/cells/{name}/checkpoints/final.ckpt"})
                players.add(name)
        key = frozenset((rename[m["a"]], rename[m["b"]]))
        if key in have:
            raise SystemExit(f"assemble: {f.name} repeats the match {sorted(key)}")
        arena["matches"].append({**m, "a": rename[m["a"]], "b": rename[m["b"]], "source": f"arena/{f.name}"})
        have.add(key)
        added += 1
    (runs / "arena.json").write_text(json.dumps(arena, indent=1))
    return added


def main() -> int:
    from pdx_lightning import cli
    from pdx_lightning.experiments.sweep.config import parse_config, plan
    from pdx_lightning.experiments.sweep.record import finish

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs = work / OUT
        extract(ROOT / "reports" / "sweep_maia_seeds" / "runs_json.tar.xz", runs)
        extract(HERE / "cells_json.tar.xz", runs)
        extract(HERE / "arena" / "arena_json.tar.xz", work / "arena")
        (runs / "archive_environment.json").unlink(missing_ok=True)  # the new archive writes its own
        n = merge_arena(runs, sorted(p for p in (work / "arena").glob("*.json") if p.stem != "base1024_fwd"))
        cfg_doc = yaml.safe_load((ROOT / "conf" / "sweep" / "maia_seeds8.yaml").read_text())
        cwd = os.getcwd()
        os.chdir(work)  # the config's relative `out` and the cells' checkpoint strings
        try:
            cfg = parse_config(cfg_doc)
            finish(cfg, Path(OUT), plan(cfg), stages=False)
        finally:
            os.chdir(cwd)
        print(f"assembled {runs}: {n} matches added to arena.json")
        os.chdir(work)  # report.md names the runs directory as given: runs/sweep_maia, not the temporary one
        try:
            return cli.main(["report", "--runs", OUT, "--out", str(HERE), "--archive", str(HERE / "runs_json.tar.xz")])
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    sys.exit(main())
