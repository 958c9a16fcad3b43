"""reports/searched/: the one table of issue 58 rebuilds from the committed records."""

import importlib
import json
from pathlib import Path

import pytest


def _table():
    return importlib.import_module("reports.searched.table")


def test_a_match_is_read_from_the_cells_side_and_a_missing_record_is_pending(tmp_path, monkeypatch):
    mod = _table()
    monkeypatch.setattr(mod, "REPORTS", tmp_path)
    (tmp_path / "x").mkdir()
    m = {"a": "base", "b": "cell", "elo": 99.2, "elo_error": 19.4, "pentanomial": [1, 2, 3, 4, 5]}
    (tmp_path / "x" / "m.json").write_text(json.dumps({"matches": [m]}))
    assert mod.match_elo("x/m", "cell") == "-99.2 ± 19.4"  # the record holds the base's side
    m2 = {**m, "a": "cell", "b": "base", "elo": -5.04}
    (tmp_path / "x" / "m2.json").write_text(json.dumps({"matches": [m2]}))
    assert mod.match_elo("x/m2", "cell") == "-5.0 ± 19.4"
    assert mod.match_elo("x/none", "cell") == mod.PENDING
    assert mod.match_elo(None, "cell") == "not played"


@pytest.mark.slow
def test_the_table_rebuilds_from_the_committed_records():
    mod = _table()
    assert mod.table() == (mod.HERE / "table.md").read_text()
    rows = [ln for ln in mod.table().splitlines() if ln.startswith("| ") and "---" not in ln]
    assert len(rows) == 1 + 1 + len(mod.CELLS)  # the header, the base, each cell


def test_the_results_page_shows_the_committed_table():
    mod = _table()
    page = mod.PAGE.read_text()
    assert mod.on_page(page, (mod.HERE / "table.md").read_text()) == page


def test_the_held_value_searched_recipe_is_draw_b_with_the_anchor_only():
    """reports/search_strength/fit_config_searched_vh.yaml is draw B's config with value_anchor 10 and its
    own run name, and its settings are valid searched self-play settings."""
    import yaml

    from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings

    root = Path(__file__).resolve().parents[2] / "reports"
    b = yaml.safe_load((root / "searched" / "fit_config_b.yaml").read_text())
    vh = yaml.safe_load((root / "search_strength" / "fit_config_searched_vh.yaml").read_text())
    assert vh["model"]["algorithm"].pop("value_anchor") == 10.0
    assert vh["trainer"]["logger"]["init_args"].pop("name") == "searched_vh"
    b["trainer"]["logger"]["init_args"].pop("name")
    assert vh == b
    SearchedSelfPlaySettings(**{**vh["model"]["algorithm"], "value_anchor": 10.0})
