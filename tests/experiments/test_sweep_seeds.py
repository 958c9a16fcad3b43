"""conf/sweep/maia_seeds.yaml (issue 31): three seeds of the four arms in sweep_maia's directory, the real
Lichess puzzles as score-only suites outside the lock, and an opening suite for 1,000 games per cell."""

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from pdx_lightning.chesscore.opening_files import load_openings
from pdx_lightning.evaluation.suite import SuiteSpec, load_suite
from pdx_lightning.experiments.sweep import lock
from pdx_lightning.experiments.sweep.config import SweepConfigError, load_config, plan

ROOT = Path(__file__).parents[2]
CONF = ROOT / "conf"
REAL = [str(ROOT / "data" / "lichess" / f) for f in ("puzzles_random_2k.csv", "puzzles_lila_seed.csv")]


def test_the_seeds_sweep_plans_twelve_cells_with_the_maia_sweeps_locked_settings(tmp_path):
    cfg, maia = load_config(CONF / "sweep" / "maia_seeds.yaml"), load_config(CONF / "sweep" / "maia.yaml")
    arms = ["none-adaptive", "entropy-adaptive-b0.01", "reverse_kl-adaptive-b0.01", "forward_kl-adaptive-b0.01"]
    cells = plan(cfg)
    assert [(c.name, c.seed) for c in cells] == [
        *[(a, 0) for a in arms],
        *[(f"{a}-s1", 1) for a in arms],
        *[(f"{a}-s2", 2) for a in arms],
        ("control", 0),
    ]
    assert {(c.term, c.temperature, c.beta) for c in cells if c.kind == "rl"} == {
        ("none", "adaptive", 0.0),
        *((t, "adaptive", 0.01) for t in ("entropy", "reverse_kl", "forward_kl")),
    }
    # the seed-0 cells are sweep_maia's cells of the same names, trained under the same locked settings
    assert {c.name for c in cells if c.seed == 0} <= {c.name for c in plan(maia)}
    assert lock.locked_settings(cfg) == lock.locked_settings(maia) and cfg.out == maia.out
    out = tmp_path / "runs"
    out.mkdir()
    lock.check_lock(maia, out)  # sweep_maia trained there first
    lock.check_lock(cfg, out)  # the seeds sweep is accepted in the same directory
    assert cfg.eval.real == SuiteSpec(path=["data/lichess/puzzles_random_2k.csv", "data/lichess/puzzles_lila_seed.csv"])
    assert cfg.eval.real_hard == replace(cfg.eval.real, rating_min=2000)
    a = cfg.arena
    assert (a.base_games, a.models, a.anchors, a.sampled_games) == (
        1000,
        "all",
        maia.arena.anchors,
        maia.arena.sampled_games,
    )
    assert len(load_openings(ROOT / a.openings)) >= a.base_games // 2 >= 500


def test_the_real_roles_are_outside_the_lock_and_every_other_suite_change_is_refused(tmp_path):
    maia = load_config(CONF / "sweep" / "maia.yaml")
    out = tmp_path / "runs"
    out.mkdir()
    lock.check_lock(maia, out)
    real = SuiteSpec(path=["r.csv"])
    lock.check_lock(replace(maia, eval=replace(maia.eval, real=real, real_hard=replace(real, rating_min=2400))), out)
    assert "real" not in (out / lock.LOCK_FILE).read_text()
    with pytest.raises(SweepConfigError, match=r"eval: .*rating_min.*1500"):
        lock.check_lock(replace(maia, eval=replace(maia.eval, hard=replace(maia.eval.hard, rating_min=1600))), out)


def test_real_roles_read_like_the_other_suites(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {"eval": {"selection": "a.csv", "real": "r.csv", "real_hard": {"path": "r.csv", "rating_min": 2000}}}
        )
    )
    cfg = load_config(path)
    assert list(cfg.eval.specs()) == ["selection", "real", "real_hard"]
    assert cfg.eval.real == SuiteSpec(path=["r.csv"]) and cfg.eval.real_hard.rating_min == 2000


def test_the_shipped_real_puzzles_load_whole_and_share_nothing_with_the_control_pool():
    """Every row of the two CC0 files is a valid puzzle; the Maia sweeps' control pool shares no PuzzleId or
    solver position with them (what lets the real roles stay outside the lock: lock.py)."""
    from pdx_lightning.supervised.control import overlap

    suites = [load_suite([p]) for p in REAL]
    assert [len(s) for s in suites] == [1986, 2970] and [s.n_bad for s in suites] == [0, 0]
    assert len(load_suite(REAL, rating_min=2000)) == 854
    maia = load_config(CONF / "sweep" / "maia_seeds.yaml")
    pool = load_suite([str(ROOT / p) for p in maia.control.pool]).puzzles
    assert len(pool) == 900 and overlap(pool, [p for s in suites for p in s.puzzles]) == []


def test_the_larger_opening_suite_extends_the_bundled_one():
    """data/openings_uho_600.epd: the same generator and seed as data/openings_uho.epd, 600 openings,
    of which the first 200 are that file's."""
    small = load_openings(ROOT / "data" / "openings_uho.epd")
    big = load_openings(ROOT / "data" / "openings_uho_600.epd")
    assert len(big) == 600 and len({o.board.epd() for o in big}) == 600
    assert [(o.id, o.board.epd(), o.line) for o in big[:200]] == [(o.id, o.board.epd(), o.line) for o in small]
    assert all(60 <= o.eval_cp <= 130 for o in big)
