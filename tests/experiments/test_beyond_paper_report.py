"""reports/beyond_paper/: the dissociation figure rebuilds from the committed records; same_cell.py's verdict."""

import copy
import csv
import importlib.util
import json
import sys
import tarfile
from pathlib import Path

import pytest

HERE = Path(__file__).parents[2] / "reports" / "beyond_paper"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"beyond_paper_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_dissociation_report_rebuilds_from_its_records(tmp_path):
    """report.md and points.csv are exactly what assemble.py makes of the committed records; the figure is drawn."""
    mod = _module("assemble")
    assert mod.main(tmp_path) == 0
    for name in ("report.md", "points.csv"):
        assert (tmp_path / name).read_text() == (HERE / name).read_text(), name
    assert (tmp_path / "dissociation.png").stat().st_size > 10_000
    # every plotted cell of the eight-seed and 1,024-game reports, once each
    with (HERE / "points.csv").open() as f:
        rows = list(csv.DictReader(f))
    seeds8 = [r for r in rows if r["games_per_step"] == "128"]
    assert len(seeds8) == 3 + 3 + 8 + 8 and len(rows) - len(seeds8) == 3
    assert len({(r["cell"], r["games_per_step"], r["setting"]) for r in rows}) == len(rows)
    # one cell's y against its raw arena record: the 1,024-game forward-KL cell's pentanomial record
    doc = json.loads((HERE.parent / "sweep_maia_1024" / "arena" / "base1024_fwd.json").read_text())
    (m,) = doc["matches"]
    ptn = m["pentanomial"] if m["a"] != "base" else m["pentanomial"][::-1]
    row = next(
        r
        for r in rows
        if r["games_per_step"] == "1024" and r["cell"].startswith("forward_kl") and "Table" not in r["setting"]
    )
    assert row["pentanomial"] == " ".join(map(str, ptn))


def test_same_cell_tells_a_retrained_cell_from_the_committed_one(tmp_path):
    mod = _module("same_cell")
    archive, cell = HERE.parent / "sweep_maia_1024" / "cells_json.tar.xz", "none-adaptive"
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "runs", filter="data")
    verdict = tmp_path / "v.json"
    assert mod.main([str(archive), cell, str(tmp_path / "runs"), str(verdict)]) == 0
    assert json.loads(verdict.read_text()) == {
        "cell": cell,
        "archive": str(archive),
        "runs": str(tmp_path / "runs"),
        "identical": True,
        "suites_differing": [],
        "metrics_differing": [],
    }
    # one puzzle solved differently and one final metric changed: both named
    old = mod.archived(archive, cell)
    new = copy.deepcopy(old)
    solved = new["eval"]["suites"]["real"]["per_puzzle"]["solved"]
    solved[0] = 1 - solved[0]
    key = sorted(new["result"]["metrics"])[0]
    new["result"]["metrics"][key] += 1
    assert mod.compare(old, new) == {"identical": False, "suites_differing": ["real"], "metrics_differing": [key]}
    # a cell that was not retrained: exit 2, nothing written
    verdict.unlink()
    assert mod.main([str(archive), "forward_kl-adaptive-b0.01-s3", str(tmp_path / "runs"), str(verdict)]) == 2
    assert not verdict.exists()
