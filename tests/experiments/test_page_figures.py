"""The results pages' own figures rebuild from the committed records (issue 56): the eight-seed page's
(reports/sweep_maia_seeds8/figures.py), the searched-strength figure (reports/beyond_paper/search_figure.py)
and the default fit's learning curves (reports/fit_default/figure.py)."""

from __future__ import annotations

import csv
import importlib
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "reports"


def _script(path: Path):
    """A report's script, imported as the module it is (``reports.<report>.<name>``)."""
    return importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))


@pytest.mark.slow  # 23 cells' evaluations and the arena's bootstrap: ~10 s CPU
def test_the_eight_seed_figures_are_drawn_from_the_eight_seed_records(tmp_path):
    from pdx_lightning.experiments.report.runs import load_runs
    from pdx_lightning.experiments.report.seeds import arena_aggregates

    figures = _script(REPORTS / "sweep_maia_seeds8" / "figures.py")
    with tarfile.open(REPORTS / "sweep_maia_seeds8" / "runs_json.tar.xz") as tar:
        tar.extractall(tmp_path / "runs", filter="data")
    runs = load_runs(tmp_path / "runs")
    aggs = {a["term"]: a for a in arena_aggregates(runs)}
    # the page's numbers are these records': eight seeds each, forward's per-seed Elo as the page lists it
    assert [len(aggs[t]["per_seed"]) for t in figures.ANCHORED] == [8, 8]
    per_seed = [f"{p['elo']:+.1f}" for p in aggs["forward_kl"]["per_seed"]]
    page = (ROOT / "docs" / "results" / "maia-seeds8.md").read_text()
    assert " / ".join(per_seed).replace("-", "−") in page
    out = tmp_path / "out"
    out.mkdir()
    paths = [figures.figure_elo(runs, out), figures.figure_rating(runs, out)]
    assert [p.name for p in paths] == ["seeds8_elo_by_seed.png", "seeds8_real_by_rating.png"]
    for p in paths:
        assert p.stat().st_size > 20_000 and (REPORTS / "sweep_maia_seeds8" / p.name).is_file()
        assert f"(../../reports/sweep_maia_seeds8/{p.name})" in page
    # not a copy of any figure of the three-seed report
    seeds3 = {q.read_bytes() for q in (REPORTS / "sweep_maia_seeds").glob("*.png")}
    assert not {(REPORTS / "sweep_maia_seeds8" / p.name).read_bytes() for p in paths} & seeds3


def test_the_search_figure_reads_every_finished_match_record(tmp_path):
    search = _script(REPORTS / "beyond_paper" / "search_figure.py")
    pts = search.points()
    records = {
        m.group(1, 2)
        for p in (REPORTS / "beyond_paper" / "records").glob("lc0_n*_*.json")
        if (m := re.fullmatch(r"lc0_n(\d+)_(\w+)", p.stem))
    }
    drawn = {(str(n), label) for label, ps in pts.items() for n, *_ in ps}
    assert drawn == records  # every committed match is a point, and no point lacks its record
    one = {label: ps[0] for label, ps in pts.items()}
    assert f"{one['fwd_s3'][1]:+.1f}" == "-1.0" and all(n == 1 and not interim for n, _, _, interim in one.values())
    path = search.figure(tmp_path)
    assert path.name == "search_elo_by_nodes.png" and path.stat().st_size > 20_000
    page = (ROOT / "docs" / "results" / "beyond-paper.md").read_text()
    assert "(../../reports/beyond_paper/search_elo_by_nodes.png)" in page
    answer = page.split("## Searched strength", 1)[1].split("\n\n", 2)[1]
    assert answer.startswith("**Answer.")  # the section opens with its answer


def test_the_learning_curves_come_from_the_committed_scalars(tmp_path):
    fig = _script(REPORTS / "fit_default" / "figure.py")
    data = fig.load()
    with open(REPORTS / "fit_default" / "scalars.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 301 and rows[-1]["step"] == "300"
    steps, acc = data["puzzles/acc"]
    assert list(steps) == [0, 50, 100, 150, 200, 250, 300]  # validation at its own cadence
    assert acc[0] == pytest.approx(0.679487) and acc[-1] == pytest.approx(0.692308)
    assert fig._moving(np.array([1.0, 3.0, 5.0]), 2).tolist() == [1.0, 2.0, 4.0]
    path = fig.figure(data, tmp_path)
    assert path.stat().st_size > 50_000
    assert "(../reports/fit_default/learning_curves.png)" in (ROOT / "docs" / "fine-tuning.md").read_text()
