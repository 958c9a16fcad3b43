"""reports/search_strength/attribution.py: issue 63's attribution table from match records."""

import importlib
import json

import pytest


def _mod():
    return importlib.import_module("reports.search_strength.attribution")


def _record(path, a, b, elo, half, games=1000):
    m = {"a": a, "b": b, "elo": elo, "elo_error": half, "games": games, "pentanomial": [1, 2, 3, 2, 1]}
    path.write_text(json.dumps({"matches": [m]}))


def test_the_heads_costs_their_sum_and_the_interaction_by_hand(tmp_path):
    mod = _mod()
    r = mod.Row("cell", "n64_x", "x", "1.8")
    _record(tmp_path / "n64_x_policy.json", "x_policy", "base", -60.0, 30.0)
    _record(tmp_path / "n64_x_value.json", "x_value", "base", -80.0, 40.0)
    _record(tmp_path / "n64_x_whole.json", "base", "x", 130.0, 20.0)  # the base first: oriented to the cell
    cols = [c.strip() for c in mod.row(tmp_path, r).strip("|").split("|")]
    # -60 - 80 = -140, half-width sqrt(30^2 + 40^2) = 50; -130 - (-140) = +10, sqrt(50^2 + 20^2) = 53.85
    assert cols == ["cell", "1.8", "1,000", "-60.0 ± 30.0", "-80.0 ± 40.0", "-140.0 ± 50.0", "-130.0 ± 20.0",
                    "+10.0 ± 53.9"]  # fmt: skip


def test_a_match_not_yet_played_is_pending(tmp_path):
    mod = _mod()
    r = mod.Row("cell", "n64_x", "x", "1.8")
    _record(tmp_path / "n64_x_policy.json", "x_policy", "base", -60.0, 30.0, games=400)
    cols = [c.strip() for c in mod.row(tmp_path, r).strip("|").split("|")]
    assert cols == ["cell", "1.8", "400", "-60.0 ± 30.0", "pending", "pending", "pending", "pending"]


def test_a_record_without_the_cells_match_is_an_error(tmp_path):
    mod = _mod()
    _record(tmp_path / "n64_x_policy.json", "other", "base", -60.0, 30.0)
    with pytest.raises(ValueError, match="no match of 'x_policy' against 'base'"):
        mod.row(tmp_path, mod.Row("cell", "n64_x", "x", "1.8"))


def test_the_committed_table_rebuilds_from_the_committed_records():
    mod = _mod()
    assert mod.table() == (mod.HERE / "attribution.md").read_text()
