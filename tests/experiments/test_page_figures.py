"""The results pages' own figures rebuild from the committed records (issue 56): the eight-seed page's
(reports/sweep_maia_seeds8/figures.py), the searched-strength figure (reports/beyond_paper/search_figure.py),
the default fit's learning curves (reports/fit_default/figure.py), and (issue 64) the Maia page's
(reports/maia/figure.py) and the paper's-batch page's (reports/sweep_maia_1024/figure.py)."""

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


def test_the_maia_figure_is_drawn_from_the_lc0_and_arena_records(tmp_path):
    fig = _script(REPORTS / "maia" / "figure.py")
    acc = fig.puzzles()
    assert [len(acc[m]) for m in fig.MAIAS] == [6, 6, 6]
    # the identity the page states: pdx and the real Lc0 solve the same puzzles of every suite
    assert all(r["pdx"] == r["lc0"] for suites in acc.values() for r in suites.values())
    page = (ROOT / "docs" / "results" / "maia.md").read_text()
    tactics = 100 * acc["maia-1900"]["tactics"]["pdx"] / acc["maia-1900"]["tactics"]["n"]
    assert f"Maia-1900 solves {tactics:.1f}% of the tactics suite" in page
    elo = {r["player"]: r["elo"] for r in fig.ladder()}
    assert len(elo) == 10 and elo["base:small"] == 0
    assert f"{elo['maia-1900']:+.0f}" == "+497" and f"{elo['lc0-maia-1900']:+.0f}" == "+490"
    path = fig.figure(tmp_path)
    assert path.name == "maia_vs_lc0.png" and path.stat().st_size > 20_000
    assert (REPORTS / "maia" / path.name).is_file() and f"(../../reports/maia/{path.name})" in page


@pytest.mark.slow  # three cell archives and six paired bootstraps: ~8 s CPU
def test_the_paper_batch_figure_shows_the_pages_cells(tmp_path):
    fig = _script(REPORTS / "sweep_maia_1024" / "figure.py")
    pts = {p["label"]: p for p in fig.points()}
    assert len(pts) == 6
    page = (ROOT / "docs" / "results" / "maia-1024.md").read_text()
    # each 1,024-game cell's Elo and p* ratio on real puzzles rated >= 2000, as the page's first table
    for label, row in (
        ("forward KL, 1,024 games, maia.yaml rates", "| forward KL, `maia.yaml` rates |"),
        ("forward KL, 1,024 games, the paper's recipe", "| forward KL, the paper's recipe |"),
        ("forward KL, 1,024 games, recipe, value head 3e-6", "| forward KL, the paper's recipe, value head at 3e-6"),
        ("no regularizer, 1,024 games", "| no regularizer |"),
    ):
        line = next(x for x in page.splitlines() if x.startswith(row))
        p = pts[label]
        assert f"{p['elo']:+.1f} ± {p['half']:.1f}".replace("-", "−") in line
        assert f"/ {p['ratio']:.2f}×" in line
    path = fig.figure(tmp_path)
    assert path.name == "paper_batch.png" and path.stat().st_size > 20_000
    assert (REPORTS / "sweep_maia_1024" / path.name).is_file()
    assert f"(../../reports/sweep_maia_1024/{path.name})" in page
