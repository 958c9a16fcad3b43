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
    ref_lr = (HERE.parent / "sweep_maia_1024" / "paper_recipe_ref_lr" / "cells_json.tar.xz").is_file()
    assert len(seeds8) == 3 + 3 + 8 + 8 and len(rows) - len(seeds8) == 3 + ref_lr
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


def _relabelled(doc: dict, old: str, new: str) -> dict:
    """An arena record with one player renamed (as run.sh labels the cells)."""
    text = json.dumps(doc).replace(json.dumps(old), json.dumps(new))
    return json.loads(text)


def test_the_searched_table_reads_the_match_records(tmp_path):
    """Elo by node count from the records run.sh commits, oriented to the cell; Lc0 at 1 node against pdx
    on the same files game for game; a cell or match without records is 'not run', never filled in."""
    mod = _module("searched")
    doc = json.loads((HERE.parent / "sweep_maia_1024" / "arena" / "base1024_fwd.json").read_text())
    pdx = _relabelled(doc, "forward_kl-b1024", "fwd_s3")
    lc0 = copy.deepcopy(pdx)
    lc0["games"][7]["plies"] += 2  # one game played differently
    (tmp_path / "pdx_fwd_s3.json").write_text(json.dumps(pdx))
    (tmp_path / "lc0_n1_fwd_s3.json").write_text(json.dumps(lc0))
    (tmp_path / "same_fwd_s3.json").write_text(
        json.dumps({"identical": True, "suites_differing": [], "metrics_differing": []})
    )
    assert mod.same_games(pdx, lc0) == (999, 1000)
    assert mod.same_games(pdx, pdx) == (1000, 1000)
    header, rows = mod.searched_rows(tmp_path, {("forward_kl", 128, "maia.yaml rates", 3): "+0.3 ± 17.1"})
    assert header[-1] == "Lc0 1 node = pdx, game for game" and "Lc0, 16 nodes" not in header
    (row,) = rows
    assert row[0] == "Forward-KL prior (ours), 128 games/step, maia.yaml rates, seed 3"
    assert row[1:3] == ["yes", "+0.3 ± 17.1"]
    assert row[3] == "not run"  # no pdxckpt_fwd_s3.json
    # the cell is player b: its Elo is the base's negated (the 1,024-game report: +17.0 ± 16.9), LOS 1 - base's
    (m,) = doc["matches"]
    assert row[4] == f"+17.0 ± 16.9 (LOS {100 * (1 - m['los']):.0f}%)" == row[5]
    assert row[-1] == "999 / 1,000"
    # a record of a cell run.sh does not name is refused, not silently dropped
    (tmp_path / "lc0_n16_fwd_s9.json").write_text(json.dumps(pdx))
    with pytest.raises(SystemExit, match="fwd_s9"):
        mod.searched_rows(tmp_path, {})


def test_the_ladder_table_reads_the_fit(tmp_path):
    mod = _module("searched")

    def rating(player, elo, lo, hi, games):
        return {"player": player, "elo": elo, "stderr": (hi - lo) / 3.92, "ci95": [lo, hi], "games": games}

    fit = [
        rating("base", 1712.4, 1698.0, 1726.8, 2000),
        rating("sf:elo=1350", 1301.0, 1250.0, 1352.0, 480),
        rating("sf:elo=1650", 1650.0, 1650.0, 1650.0, 480),
    ]
    (tmp_path / "ladder_base.json").write_text(json.dumps({"elo": {"ratings": fit}}))
    header, nets, rungs = mod.ladder_rows(tmp_path)
    assert nets == [["Maia-1900 (the base)", "1712 [1698, 1727]", "2,000"]]
    assert rungs == [
        ["Maia-1900 (the base)", "sf:elo=1350", "1301", "-49"],
        ["Maia-1900 (the base)", "sf:elo=1650", "1650", "+0"],
    ]
    assert mod.ladder_rows(tmp_path / "none") == (header, [], [])
