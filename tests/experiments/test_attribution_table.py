"""reports/search_strength/attribution.py: issue 63's attribution table from match games."""

import importlib
import io
import json
import lzma
import math

import numpy as np
import pytest


def _mod():
    return importlib.import_module("reports.search_strength.attribution")


ROW = ("cell", "m", ("x_policy", "x_value", "x"), "base", "1.8 / 1.8")


def _games(player, pairs):
    """One opening per entry, played with both colours: ``pairs`` holds the player's two results as
    white and as black ("w", "d", "l"); the openings are o0, o1, ... in order."""
    res = {"w": ("1-0", "0-1"), "d": ("1/2-1/2", "1/2-1/2"), "l": ("0-1", "1-0")}
    out = []
    for i, (as_white, as_black) in enumerate(pairs):
        out.append({"white": player, "black": "base", "opening": f"o{i}", "result": res[as_white][0]})
        out.append({"white": "base", "black": player, "opening": f"o{i}", "result": res[as_black][1]})
    return out


def _record(folder, name, player, pairs):
    (folder / f"{name}.json").write_text(json.dumps({"games": _games(player, pairs)}))


def _cols(mod, folder, row=ROW):
    return mod.row(folder, mod.Row(*row)).cells


def _elo(score):
    return -400 * math.log10(1 / score - 1)


def test_each_head_the_sum_and_the_interaction_by_hand(tmp_path):
    mod = _mod()
    # policy: 3 of 4 pairs won both games, one lost both: score 6/8; value: all drawn but one pair won
    # both, score 5/8; whole: score 3/8 (a pair lost both, the rest drawn); 25 openings of each kind
    _record(tmp_path, "m_policy", "x_policy", [("w", "w"), ("w", "w"), ("w", "w"), ("l", "l")] * 25)
    _record(tmp_path, "m_value", "x_value", [("d", "d"), ("d", "d"), ("w", "w"), ("d", "d")] * 25)
    _record(tmp_path, "m_whole", "x", [("d", "d"), ("l", "l"), ("d", "d"), ("d", "d")] * 25)
    played, policy, value, both, whole, beyond, pairs = _cols(mod, tmp_path)
    assert (played, pairs) == ("200 / 200 / 200", "100")
    ep, ev, ew = _elo(6 / 8), _elo(5 / 8), _elo(3 / 8)  # +190.8, +88.7, -88.7
    assert policy.startswith(f"{ep:+.1f} ± ") and value.startswith(f"{ev:+.1f} ± ")
    assert whole.startswith(f"{ew:+.1f} ± ")
    assert both.startswith(f"{ep + ev:+.1f} ± ") and beyond.startswith(f"{ew - ep - ev:+.1f} ± ")


def test_the_match_elo_is_the_trinomial_one_pdx_arena_prints(tmp_path):
    from pdx_lightning.evaluation.elo import score_elo

    mod = _mod()
    _record(tmp_path, "m_policy", "x_policy", [("w", "d"), ("l", "d"), ("w", "w"), ("d", "l"), ("w", "d")])
    policy = _cols(mod, tmp_path)[1]
    elo, lo, hi = score_elo(wins=4, draws=4, losses=2)
    assert policy == f"{elo:+.1f} ± {(hi - lo) / 2:.1f}"


def test_the_bootstrap_pairs_the_openings_across_the_three_matches():
    """Whole = policy pair by pair and the value arm even on every pair: whatever openings a resample
    draws, the whole loses exactly what the policy loses, so the interaction is 0 with no spread (an
    unpaired interval would add the two matches' spreads)."""
    mod = _mod()
    rng = np.random.default_rng(1)
    p = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0], size=300)
    arrays = (p, np.full(300, 1.0), p.copy())
    got = mod.paired(mod.beyond, arrays)
    assert got.value == pytest.approx(0.0, abs=1e-9) and got.half == pytest.approx(0.0, abs=1e-9)
    assert mod.paired(mod.added, arrays).half > 5.0  # the policy arm's own spread is still there


def test_only_openings_all_three_played_enter_the_derived_columns(tmp_path):
    mod = _mod()
    _record(tmp_path, "m_policy", "x_policy", [("w", "w"), ("l", "l")])
    _record(tmp_path, "m_value", "x_value", [("d", "d"), ("d", "d"), ("w", "w")])
    _record(tmp_path, "m_whole", "x", [("d", "d"), ("l", "d"), ("w", "w")])
    played, *_, pairs = _cols(mod, tmp_path)
    assert (played, pairs) == ("4 / 6 / 6", "2")


def test_a_match_not_yet_played_is_pending(tmp_path):
    mod = _mod()
    _record(tmp_path, "m_policy", "x_policy", [("w", "d"), ("l", "d")])
    cols = _cols(mod, tmp_path)
    assert cols[0] == "4 / pending / pending" and cols[2:] == ["pending"] * 5


def test_a_match_being_played_is_read_from_its_saved_partial_pgn(tmp_path):
    import chess.pgn

    mod = _mod()
    (tmp_path / "partial").mkdir()
    out = io.StringIO()
    for g in _games("x_value", [("w", "l"), ("d", "w")]):
        game = chess.pgn.Game()
        game.headers.update(White=g["white"], Black=g["black"], Result=g["result"], Opening=g["opening"])
        print(game, file=out, end="\n\n")
    (tmp_path / "partial" / "m_value.pgn.xz").write_bytes(lzma.compress(out.getvalue().encode()))
    cols = _cols(mod, tmp_path)
    assert cols[0] == "pending / 4 / pending" and cols[2].startswith(f"{_elo(5 / 8):+.1f} ± ")
    assert "partial/m_value.pgn.xz" in mod.table(tmp_path, (mod.Row(*ROW),))


def test_a_game_of_other_players_is_an_error_naming_the_record(tmp_path):
    mod = _mod()
    _record(tmp_path, "m_policy", "other", [("w", "d")])
    with pytest.raises(ValueError, match=r"m_policy.json: a game of 'other' against 'base', not 'x_policy'"):
        _cols(mod, tmp_path)


def test_the_committed_table_rebuilds_from_the_committed_games():
    mod = _mod()
    assert mod.table() == (mod.HERE / "attribution.md").read_text()
