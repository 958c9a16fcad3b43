"""`pdx report` rebuilds the paper's tables and figures from stored JSON only (fixtures: tests/fixtures/report/).

The fixture directory is a synthetic `pdx sweep` output written by tests/fixtures/report/make_fixtures.py
with the sweep's and the arena's own functions: 11 cells (none, reverse_kl, forward_kl × adaptive/fixed ×
β ∈ {0.01, 0.1}, the control), arena.json, diagnostics.json, coverage.json; no arena_sampled.json and
no recovery.json.
"""

import argparse
import json
import re
import shutil
from pathlib import Path

import pytest

from pdx_lightning.experiments.report import report_command as report
from pdx_lightning.experiments.report.recovery_tables import suite_result
from pdx_lightning.experiments.report.runs import ReportError, load_runs

RUNS = Path(__file__).parents[1] / "fixtures" / "report" / "runs"


def render(runs: Path, out: Path) -> str:
    assert report.run(argparse.Namespace(runs=str(runs), out=str(out))) == 0
    return (out / "report.md").read_text()


def section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def row(md: str, title: str, *starts: str) -> list[str]:
    for line in section(md, title).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[: len(starts)] == list(starts):
            return cells
    raise AssertionError(f"no row {starts} in {title}")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return render(RUNS, out), out


def test_every_table_and_figure_is_rebuilt_from_the_stored_json(full):
    md, out = full
    sweep = json.loads((RUNS / "sweep.json").read_text())
    arena = json.loads((RUNS / "arena.json").read_text())
    base_eval = json.loads((RUNS / "base" / "eval.json").read_text())
    # Table 1: the forward-KL adaptive row at its beta*, accuracy from its eval JSON, Elo/W-D-L/LOS from arena.json
    cell = next(s["cell"] for s in sweep["selected"] if (s["term"], s["temperature"]) == ("forward_kl", "adaptive"))
    ev = json.loads((RUNS / "cells" / cell / "eval.json").read_text())["suites"]["tactics"]["summary"]
    r = row(md, "Table 1", "Forward-KL prior (ours)", "adaptive")
    lo, hi = ev["acc_ci"]
    assert r[3] == f"{100 * ev['acc']:.2f} ± {50 * (hi - lo):.2f}"
    elo = next(e for e in arena["elo"]["ratings"] if e["player"] == cell)
    h2h = next(h for h in arena["head_to_head"] if h["player"] == cell)
    assert r[5] == f"Δ {elo['elo']:+.1f} ± {(elo['ci95'][1] - elo['ci95'][0]) / 2:.1f}"
    assert r[6] == f"{h2h['w']}–{h2h['d']}–{h2h['l']}" and r[7] == f"{h2h['los']:.2f}"
    assert row(md, "Table 1", "Frozen base")[5] == "+0.0 (anchor)"
    assert row(md, "Table 1", "Puzzle-tuned control (supervised)")[2] == "–"
    # Table 3 and 4 by mate depth, from the mate suite's by_depth summaries
    d3 = next(d for d in base_eval["suites"]["mates"]["summary"]["by_depth"] if d["depth"] == 3)
    assert (
        row(md, "Table 3", "Frozen base")[4]
        == f"{100 * d3['acc']:.2f} ± {50 * (d3['acc_ci'][1] - d3['acc_ci'][0]):.2f}"
    )
    assert row(md, "Table 4", "Frozen base")[6].strip("*") == f"{d3['p_star_geo']:.3f} ({d3['p_star_arith']:.3f})"
    # Table 5: diagnostics present, sampled arena absent -> its Elo column says so, nothing invented
    t5 = row(md, "Table 5", "Frozen base", "raw")
    assert t5[2] == "not measured" and t5[3:] == ["1.69", "0.00", "0.00", "0.81"]
    # Table 6: one bold (selected) cell per arm, equal to the selected beta
    arms = [line for line in section(md, "Table 6").splitlines() if line.startswith(("| Reverse", "| Forward"))]
    assert len(arms) == 4 and all(line.count("**") == 2 for line in arms)
    assert "β=0.01" in section(md, "Table 6") and "β=0.1" in section(md, "Table 6")
    # Figures 1, 5, 7, 8 are PNGs; Figure 8 is derived from the per-position arrays (no recovery.json)
    for png in (
        "figure1_pstar_ratio.png",
        "figure5_accuracy_vs_beta.png",
        "figure7_coverage.png",
        "figure8_recovery.png",
    ):
        assert f"]({png})" in md and (out / png).stat().st_size > 5000
    assert "per-position arrays of the tactics suite" in section(md, "Figure 8 (numbers)")
    # All cells: training-log scalars from result.json; the control logs no self-play entropy
    res = json.loads((RUNS / "cells" / "forward_kl-fixed-b0.1" / "result.json").read_text())["metrics"]
    assert row(md, "All cells", "forward_kl-fixed-b0.1")[5:8] == [
        f"{res['final/policy/entropy']:.2f}",
        f"{res['final/kl/forward_to_base']:.3f}",
        f"{res['final/kl/reverse_to_base']:.3f}",
    ]
    assert row(md, "All cells", "control")[5] == "not measured"


def test_the_arena_section_lists_every_player_with_its_record_against_the_base(full):
    md, _ = full
    arena = json.loads((RUNS / "arena.json").read_text())
    text = section(md, "Arena: every player")
    for p in arena["players"]:
        r = row(md, "Arena: every player", p["label"])
        rating = next(e for e in arena["elo"]["ratings"] if e["player"] == p["label"])
        assert r[3] == str(rating["games"])
        h2h = next((h for h in arena["head_to_head"] if h["player"] == p["label"]), None)
        if h2h:
            assert r[1] in ("cell", "control") and r[4:6] == [
                f"{h2h['w']}–{h2h['d']}–{h2h['l']}",
                f"{h2h['score']:.3f}",
            ]
        else:
            assert r[1] == "base" and r[2] == "+0.0 (anchor)" and r[4] == "–"
    assert text.count("\n| ") - 1 == len(arena["players"])  # header + one row per player


def test_recovery_numbers_equal_the_recovery_module_on_the_same_arrays(full):
    md, _ = full
    from pdx_lightning.evaluation.recovery import recovery_analysis

    runs = load_runs(RUNS)
    base = suite_result(runs.base["suites"]["tactics"])
    r = next(
        r for r in runs.rows() if r.cell and r.cell["term"] == "reverse_kl" and r.cell["temperature"] == "adaptive"
    )
    pos = recovery_analysis(base, suite_result(r.eval["suites"]["tactics"]))["position"]
    cells = row(md, "Figure 8 (numbers)", "Reverse-KL anchor, adaptive")
    assert cells[1:4] == [str(pos["base_wrong"]), str(pos["recovered"]), str(pos["given_back"])]
    assert cells[4:] == [f"{b['recovered']}/{b['n']}" for b in pos["by_prob"] + pos["by_rank"]]
    # the rebuilt SuiteResult reproduces the stored summary exactly
    from pdx_lightning.evaluation.puzzle_scoring import summarize

    assert summarize(base)["acc"] == runs.base["suites"]["tactics"]["summary"]["acc"]


def test_missing_inputs_say_not_measured_and_invent_nothing(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    for name in ("arena.json", "diagnostics.json", "coverage.json"):
        (runs / name).unlink()
    for sub in ("hard",):  # a suite that was never scored
        for path in runs.rglob("eval.json"):
            doc = json.loads(path.read_text())
            del doc["suites"][sub]
            path.write_text(json.dumps(doc))
    md = render(runs, tmp_path / "out")
    r = row(md, "Table 1", "Forward-KL prior (ours)", "adaptive")
    assert r[4:] == ["not measured"] * 4
    assert all(c == "not measured" for c in row(md, "Table 5", "Reverse-KL anchor", "μ")[2:])
    assert "![Figure 7" not in md and not (tmp_path / "out" / "figure7_coverage.png").exists()
    assert re.search(r"## Figure 7: trajectory coverage\n\n\*not measured\*", md)


def test_a_stored_recovery_json_is_used_as_is(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    sweep = json.loads((runs / "sweep.json").read_text())
    cell = next(c for c in sweep["cells"] if c["name"] == "forward_kl-adaptive-b0.01")
    bins = [{"bin": "<0.05", "lo": None, "hi": 0.05, "n": 7, "recovered": 0}]
    (runs / "recovery.json").write_text(
        json.dumps(
            {
                "command": "eval recovery",
                "models": [
                    {
                        "name": cell["checkpoint"],
                        "position": {
                            "base_wrong": 7,
                            "recovered": 0,
                            "given_back": 3,
                            "by_prob": bins,
                            "by_rank": bins,
                        },
                    }
                ],
            }
        )
    )
    md = render(runs, tmp_path / "out")
    assert row(md, "Figure 8 (numbers)", "Forward-KL prior (ours), adaptive")[1:5] == ["7", "0", "3", "0/7"]
    assert "Source: recovery.json" in md


def test_a_directory_without_sweep_json_is_refused(tmp_path):
    with pytest.raises(ReportError, match="no sweep.json"):
        load_runs(tmp_path)


@pytest.mark.parametrize(
    "name",
    [
        "sweep_cpu",
        "sweep_maia",
        "sweep_maia_distilled",
        pytest.param("sweep_maia_seeds", marks=pytest.mark.slow),  # 12 cells × bootstraps: ~20 s CPU
        pytest.param("sweep_maia_seeds8", marks=pytest.mark.slow),
    ],
)  # 22 cells: ~30 s
def test_the_committed_reports_rebuild_from_their_json_archives(tmp_path, name):
    """reports/<name>/report.md is exactly what `pdx report` makes of reports/<name>/runs_json.tar.xz."""
    import tarfile

    from pdx_lightning import cli

    shipped = Path(__file__).parents[2] / "reports" / name
    with tarfile.open(shipped / "runs_json.tar.xz") as tar:
        tar.extractall(tmp_path / "runs", filter="data")
    assert cli.main(["report", "--runs", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    body = lambda p: p.read_text().splitlines()[1:]  # noqa: E731 (line 1 names the runs directory)
    assert body(tmp_path / "out" / "report.md") == body(shipped / "report.md")
    # the figures report.md shows, each shipped (a results page's own figures may sit beside them)
    linked = sorted(set(re.findall(r"\]\(([^)/]+\.png)\)", (shipped / "report.md").read_text())))
    assert sorted(p.name for p in (tmp_path / "out").glob("*.png")) == linked
    assert all((shipped / name).is_file() for name in linked)


def test_the_report_labels_every_arm_the_sweep_can_run():
    """One source of arms: the sweep's terms/temperatures are rl's, and the report has a label for each."""
    import typing

    from pdx_lightning.experiments import arms
    from pdx_lightning.rl.objectives import EXPLORATION_TERMS
    from pdx_lightning.rl.settings import PDXSettings

    assert tuple(EXPLORATION_TERMS) == arms.TERMS and arms.UNREGULARIZED in arms.TERMS
    assert typing.get_args(typing.get_type_hints(PDXSettings)["temperature"]) == arms.TEMPERATURES
    assert set(arms.PRIOR_ANCHORED) <= set(arms.REGULARIZED) and arms.UNREGULARIZED not in arms.REGULARIZED
    assert all(t in arms.TERM_LABEL for t in (*arms.TERMS, arms.CONTROL))
    assert all(t in arms.TEMP_LABEL for t in arms.TEMPERATURES)


def test_figure7_numbers_come_from_coverage_json_per_depth(full):
    md, _ = full
    cov = json.loads((RUNS / "coverage.json").read_text())
    base4 = next(r for r in cov["results"] if r["model"] == "base:small" and r["play"] == "raw" and r["depth"] == 4)
    r = row(md, "Figure 7 (numbers)", "4", "start", "Frozen base", "raw")
    d = base4["draws_to_target"]
    assert r[4] == f"{d['mean']:.0f} ± {d['std']:.0f}" and r[5] == f"{base4['omega_at']['10']:.3f}"
    # both depths of every model are listed, and deeper lines need more draws to the same coverage
    assert (
        len([ln for ln in section(md, "Figure 7 (numbers)").splitlines() if ln.startswith("| 3 |")])
        == len([ln for ln in section(md, "Figure 7 (numbers)").splitlines() if ln.startswith("| 4 |")])
        == len(cov["results"]) // 2
    )
    base3 = row(md, "Figure 7 (numbers)", "3", "start", "Frozen base", "raw")
    assert float(base3[4].split(" ± ")[0]) < d["mean"]


def test_archive_holds_the_json_the_report_rebuilds_from(tmp_path):
    """`pdx report --archive`: the runs' JSON (no checkpoints), from which the same report is rebuilt."""
    import tarfile

    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    (runs / "cells" / "control" / "checkpoints").mkdir(parents=True, exist_ok=True)
    (runs / "cells" / "control" / "checkpoints" / "x.json").write_text("{}")
    arch = tmp_path / "a" / "runs_json.tar.xz"
    assert report.run(argparse.Namespace(runs=str(runs), out=str(tmp_path / "one"), archive=str(arch))) == 0
    with tarfile.open(arch) as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
        tar.extractall(tmp_path / "unpacked", filter="data")
    assert "./sweep.json" in names and not any("checkpoints" in n for n in names)
    assert names == sorted(names) and len(names) == len(list(RUNS.rglob("*.json"))) + 1
    import platform

    import chess
    import lightning
    import numpy as np
    import torch

    import pdx_lightning

    env = json.loads((tmp_path / "unpacked" / "archive_environment.json").read_text())  # the versions
    assert env["torch"] == torch.__version__ and env["lightning"] == lightning.__version__
    assert env["python"] == platform.python_version() and env["numpy"] == np.__version__
    assert env["chess"] == chess.__version__ and env["pdx_lightning"] == pdx_lightning.__version__
    rebuilt = render(tmp_path / "unpacked", tmp_path / "two")
    assert rebuilt.splitlines()[1:] == (tmp_path / "one" / "report.md").read_text().splitlines()[1:]


def test_paired_table_reads_each_models_pairing_with_the_base(full):
    md, _ = full
    sweep = json.loads((RUNS / "sweep.json").read_text())
    cell = next(s["cell"] for s in sweep["selected"] if (s["term"], s["temperature"]) == ("reverse_kl", "fixed"))
    ev = json.loads((RUNS / "cells" / cell / "eval.json").read_text())["suites"]
    t, m2 = ev["tactics"]["paired"], next(d for d in ev["mates"]["paired"]["by_depth"] if d["depth"] == 2)
    r = row(md, "Paired with the base", "Reverse-KL anchor", "τ≡1")
    lo, hi = t["p_star_ratio_ci"]
    assert (
        r[2] == f"{t['p_star_ratio']:.2f}× [{lo:.2f}, {hi:.2f}]; +{t['gained']}/−{t['lost']} (p {t['mcnemar_p']:.2g})"
    )
    assert r[5].startswith(f"{m2['p_star_ratio']:.2f}× [") and lo <= t["p_star_ratio"] <= hi
    assert not any(line.startswith("| Frozen base") for line in section(md, "Paired with the base").splitlines())


def test_human_move_matching_section_reads_humans_json(tmp_path):
    """A real `pdx eval humans --json` (tiny networks, 3 real games) labelled as the sweep stage labels its
    models; the section shows each row's numbers and its pairing with the base, and is absent without it."""
    from pdx_lightning import cli

    runs = tmp_path / "runs"
    shutil.copytree(RUNS, runs)
    sweep = json.loads((runs / "sweep.json").read_text())
    cell = next(s["cell"] for s in sweep["selected"] if (s["term"], s["temperature"]) == ("forward_kl", "adaptive"))
    games = Path(__file__).parents[1] / "fixtures" / "lichess_games_20.pgn"
    assert (
        cli.main(
            [
                "eval",
                "humans",
                "--model",
                "random:tiny",
                "--label",
                "base",
                "--model",
                "random:small",
                "--label",
                cell,
                "--pgn",
                str(games),
                "--max-games",
                "3",
                "--json",
                str(runs / "humans.json"),
            ]
        )
        == 0
    )
    doc = json.loads((runs / "humans.json").read_text())
    md = render(runs, tmp_path / "out")
    base, arm = (
        row(md, "Human move-matching", "Frozen base"),
        row(md, "Human move-matching", "Forward-KL prior (ours)", "adaptive"),
    )
    o, p = doc["models"][1]["overall"], doc["paired"][0]["overall"]
    assert (
        arm[3] == str(o["positions"])
        and arm[4] == f"{100 * o['top1']:.2f} ± {50 * (o['top1_ci'][1] - o['top1_ci'][0]):.2f}"
    )
    assert arm[6] == f"{o['nll']:.3f}" and arm[7].startswith(
        f"{100 * p['top1_diff']:+.2f} (+{p['gained']}/−{p['lost']}"
    )
    assert base[7] == "–" and base[6] == f"{doc['models'][0]['overall']['nll']:.3f}"
    assert row(md, "Human move-matching", "Reverse-KL anchor", "adaptive")[3] == "not measured"
    assert "### Top-1 (%) by the mover's rating" in md
    assert "## Human move-matching" not in render(RUNS, tmp_path / "out2")


@pytest.mark.slow
def test_the_paper_batch_comparison_rebuilds_from_its_records(tmp_path):
    """reports/sweep_maia_1024/report.md is exactly what its compare.py makes of the committed records."""
    from reports.sweep_maia_1024 import compare as mod

    here = Path(__file__).parents[2] / "reports" / "sweep_maia_1024"
    assert mod.main(tmp_path / "report.md") == 0
    assert (tmp_path / "report.md").read_text() == (here / "report.md").read_text()


@pytest.mark.slow  # five paired bootstraps over ~5,000 puzzles: ~15 s CPU
def test_the_value_head_rate_section_pairs_the_two_recipe_cells():
    """compare.py's recipe-against-recipe section: paired over the same puzzles (a cell against itself is
    0 points and 1.00x, every interval degenerate), Elo the difference of the two matches with the
    half-widths in quadrature; nothing until both cells are there."""
    import json
    import math

    from reports.sweep_maia_1024 import compare as mod

    here = Path(__file__).parents[2] / "reports" / "sweep_maia_1024"
    recipe = mod.members(here / "paper_recipe" / "cells_json.tar.xz")
    ev = recipe["cells/forward_kl-adaptive-b0.01/eval.json"]
    arena = json.loads((here / "arena" / "base_paper_recipe.json").read_text())
    label = next(p["label"] for p in arena["players"] if p["label"] != "base")
    first, second = mod.RECIPE_SETTINGS
    assert mod.value_head_rate([(first, "c", ev, {}, arena, label)]) == []
    md = mod.value_head_rate([(first, "c", ev, {}, arena, label), (second, "c", ev, {}, arena, label)])
    row = next(line for line in "\n".join(md).splitlines() if line.startswith("| value head at 3e-6"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    half = mod.elo_record(arena, label)[1]
    assert cells[1] == f"+0.0 ± {math.hypot(half, half):.1f}"
    assert cells[2:] == ["+0.00 [+0.00, +0.00] / 1.00× [1.00, 1.00]"] * 5
