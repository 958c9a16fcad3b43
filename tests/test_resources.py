"""The shipped files (pdx_lightning.files.resources): read through importlib.resources, found from any
directory, a local file of the same name first."""

from __future__ import annotations

from pathlib import Path

from pdx_lightning.chesscore.opening_files import DEFAULT_SUITE, load_openings
from pdx_lightning.evaluation.suite import load_suite
from pdx_lightning.files.resources import package_dir, preset_names, resolve_path, shipped
from pdx_lightning.nets.bundled import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_dirs_hold_the_top_level_conf_and_data():
    assert package_dir("data") == DATA_DIR and DEFAULT_SUITE.parent == DATA_DIR
    assert sorted(p.name for p in package_dir("data").iterdir()) == sorted(p.name for p in (ROOT / "data").iterdir())
    names = preset_names()
    assert len(names) == len(list((ROOT / "conf").rglob("*.yaml"))) and "fit/maia" in names and "sweep/cpu" in names


def test_a_relative_data_path_missing_here_is_the_shipped_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_path("data/tactics.csv") == str(package_dir("data") / "tactics.csv")
    assert resolve_path("./data/tactics.csv") == str(package_dir("data") / "tactics.csv")
    assert len(load_suite("data/tactics.csv")) == len(load_suite(ROOT / "data" / "tactics.csv")) > 0
    assert len(load_openings("data/openings_uho.epd")) == len(load_openings()) == 200
    # not shipped, outside data/ or conf/, climbing out, or absolute: as given
    for p in ("data/nope.csv", "tactics.csv", "data/../pyproject.toml", "/nonexistent/data/tactics.csv"):
        assert resolve_path(p) == p
    assert shipped("data/heldout") is None  # a directory is not a file
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tactics.csv").write_text("x\n")
    assert resolve_path("data/tactics.csv") == "data/tactics.csv"  # a local file of that name wins
