"""Progress bars (``runtime.progress``): on stderr after a delay, rank 0 only, ``PDX_PROGRESS=0`` silences
them; and the places that draw one (self-play opening warm-up, the ``pdx eval`` tools) show it under
their name without changing a result."""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
from pathlib import Path

import pytest
import torch

from pdx_lightning.chesscore.opening_files import load_openings
from pdx_lightning.evaluation import coverage as coverage_cli
from pdx_lightning.evaluation import diagnostics as diag_cli
from pdx_lightning.evaluation import mate_depths as mates_cli
from pdx_lightning.evaluation import puzzle_scoring as puzzles_cli
from pdx_lightning.evaluation import recovery as recovery_cli
from pdx_lightning.evaluation.arena_loop import play_games, round_robin
from pdx_lightning.evaluation.arena_players import NetPlayer
from pdx_lightning.evaluation.coverage import CoverageTree, coverage
from pdx_lightning.nets import load_model
from pdx_lightning.rl.selfplay import SelfPlayConfig, SelfPlayDataset, SelfPlayNetworks
from pdx_lightning.rl.settings import PDXSettings
from pdx_lightning.runtime import progress as progress_mod
from pdx_lightning.runtime.progress import process_rank, progress
from tests.helpers import FunctionPolicy

FIX = Path(__file__).parents[1] / "fixtures"
LICHESS = FIX / "lichess_sample.csv"
RANK_VARS = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch):
    """No rank or switch inherited from the shell running the tests; one torch thread."""
    for name in (*RANK_VARS, "PDX_PROGRESS"):
        monkeypatch.delenv(name, raising=False)
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def no_delay(monkeypatch):
    """Bars show at once (the default waits DELAY seconds, longer than these tiny jobs take)."""
    monkeypatch.setattr(progress_mod, "DELAY", 0.0)


def count_to(n: int, **kw) -> None:
    with progress(total=n, desc="widgets", unit="widget", **kw) as bar:
        for _ in range(n):
            bar.update(1)


# ---------------------------------------------------------------- the helper


def test_a_bar_goes_to_stderr_once_the_delay_is_over(no_delay, capsys):
    count_to(3)
    out, err = capsys.readouterr()
    assert out == "" and "widgets" in err and "/3" in err and "widget" in err


def test_a_fast_job_prints_nothing_with_the_default_delay(capsys):
    assert progress_mod.DELAY >= 1.0
    count_to(3)
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("var", RANK_VARS)
def test_non_zero_ranks_print_nothing(no_delay, capsys, monkeypatch, var):
    monkeypatch.setenv(var, "1")
    assert process_rank() == 1
    count_to(3)
    assert capsys.readouterr() == ("", "")
    monkeypatch.setenv(var, "0")  # rank 0 by the same variable draws it
    count_to(3)
    assert "widgets" in capsys.readouterr().err


def test_rank_variables_are_read_in_lightnings_order(monkeypatch):
    assert process_rank() == 0
    monkeypatch.setenv("LOCAL_RANK", "2")
    monkeypatch.setenv("RANK", "5")
    assert process_rank() == 5  # the global rank wins over the node-local one


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_pdx_progress_off_prints_nothing(no_delay, capsys, monkeypatch, value):
    monkeypatch.setenv("PDX_PROGRESS", value)
    count_to(3)
    assert capsys.readouterr() == ("", "")


def test_pdx_progress_on_and_the_callers_own_switch(no_delay, capsys, monkeypatch):
    monkeypatch.setenv("PDX_PROGRESS", "1")
    count_to(3)
    assert "widgets" in capsys.readouterr().err
    count_to(3, disable=True)  # e.g. arena --quiet
    assert capsys.readouterr() == ("", "")


# ---------------------------------------------------------------- self-play warm-up


def selfplay(n: int = 4, opening_max_moves: int = 3, seed: int = 5, **kw) -> SelfPlayDataset:
    nets = [load_model(f"random:tiny:{s}").eval() for s in (1, 2)]
    cfg = SelfPlayConfig(n_games=n, opening_max_moves=opening_max_moves, seed=seed, **kw)
    return SelfPlayDataset(
        cfg, SelfPlayNetworks(ema=nets[0], base=nets[1], version=lambda: 0), PDXSettings(micro_batch=n)
    )


def test_selfplay_opening_warm_up_shows_its_plies_and_plays_the_same_games(no_delay, capsys, monkeypatch):
    ds = selfplay()
    next(iter(ds))
    err = capsys.readouterr().err
    rng = random.Random(5)  # the warm-up's full moves per game, as __iter__ draws them (rank 0)
    longest = 2 * max(rng.randint(0, 3) for _ in range(4))
    assert "self-play openings" in err and f"/{longest}" in err and "ply" in err
    monkeypatch.setenv("PDX_PROGRESS", "0")
    quiet = selfplay()
    next(iter(quiet))
    assert capsys.readouterr().err == ""
    assert [b.move_stack for b in quiet.boards] == [b.move_stack for b in ds.boards]  # RNG untouched
    assert torch.equal(quiet.gen.get_state(), ds.gen.get_state()) and quiet.rng.getstate() == ds.rng.getstate()


def test_selfplay_restarts_draw_no_bar(no_delay, capsys):
    ds = selfplay(opening_max_moves=0, restart="random_plies", restart_max_moves=2)
    next(iter(ds))
    capsys.readouterr()
    ds._randomize([0, 1], [2, 2])  # what a finished game's random_plies restart runs
    assert capsys.readouterr().err == "" and len(ds.boards[0].move_stack) > 0


# ---------------------------------------------------------------- pdx eval tools


def run_cli(module, argv: list[str], tmp_path) -> dict:
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    out = tmp_path / "out.json"
    assert module.run(parser.parse_args([*argv, "--json", str(out)])) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("module, desc", [(puzzles_cli, "puzzles"), (mates_cli, "mates")])
def test_eval_puzzles_and_mates_show_a_bar_over_positions_and_score_the_same(
    no_delay, capsys, monkeypatch, tmp_path, module, desc
):
    argv = ["--model", "random:tiny", "--suite", str(LICHESS)]
    d = run_cli(module, argv, tmp_path)
    out, err = capsys.readouterr()
    positions = sum(d["puzzles"]["depth"])
    assert f"{desc}:" in err and f"/{positions}" in err and "pos/s" in err and "pos/s" not in out
    monkeypatch.setenv("PDX_PROGRESS", "0")
    quiet = run_cli(module, argv, tmp_path)
    assert capsys.readouterr().err == ""
    assert quiet["models"][0]["per_puzzle"] == d["models"][0]["per_puzzle"]


def test_score_suite_draws_no_bar_unless_named(no_delay, capsys):
    """Validation during training scores without a bar; the tools name theirs."""
    suite = puzzles_cli.load_suite([str(LICHESS)])
    model = load_model("random:tiny").eval()
    plain = puzzles_cli.score_suite(model, suite.puzzles)
    assert capsys.readouterr().err == ""
    named = puzzles_cli.score_suite(model, suite.puzzles, progress_desc="puzzles")
    assert "puzzles:" in capsys.readouterr().err
    assert plain.log_p_star.tolist() == named.log_p_star.tolist() and plain.ply_move == named.ply_move


def test_eval_recovery_shows_a_bar(no_delay, capsys, tmp_path):
    run_cli(recovery_cli, ["--base", "random:tiny", "--model", "random:tiny:1", "--suite", str(LICHESS)], tmp_path)
    assert capsys.readouterr().err.count("recovery:") >= 2  # the base and the model are scored


def test_eval_diagnostics_shows_a_bar_over_games(no_delay, capsys, monkeypatch, tmp_path):
    argv = ["--model", "random:tiny", "--games", "3", "--max-plies", "4"]
    d = run_cli(diag_cli, argv, tmp_path)
    err = capsys.readouterr().err
    assert "diagnostics:" in err and "/3" in err and "game" in err
    monkeypatch.setenv("PDX_PROGRESS", "0")
    quiet = run_cli(diag_cli, argv, tmp_path)
    assert capsys.readouterr().err == ""
    for k in ("entropy", "forward_kl", "reverse_kl", "cov_k", "positions", "results"):
        assert quiet["models"][0][k] == d["models"][0][k]


def test_eval_coverage_shows_a_bar_over_draws(no_delay, capsys, tmp_path):
    run_cli(
        coverage_cli,
        [
            "--model",
            "random:tiny",
            "--play",
            "raw",
            "--position",
            "start",
            "--depth",
            "2",
            "--seeds",
            "2",
            "--draws",
            "30",
            "--until",
            "draws",
        ],
        tmp_path,
    )
    err = capsys.readouterr().err
    assert "coverage depth 2:" in err and "/60" in err and "draw" in err


def uniform_tree(path):
    return [1.0] * (3 if len(path) < 2 else 0)


def test_coverage_reports_every_draw_and_the_same_masses():
    """run_seed's callback sums to the draws made (TICK-sized chunks and a remainder); the bar's total
    for until="draws" is reached even by a seed that exhausts the tree early."""
    seen: list[int] = []

    def policy():
        return FunctionPolicy(lambda path: range(1, 11))  # 10^4 lines of depth 4: no exhaustion

    tree = CoverageTree(policy(), depth=4, expand_batch=0)
    masses, _ = tree.run_seed(0, 2 * coverage_cli.TICK + 7, on_draws=seen.append)
    assert seen == [coverage_cli.TICK, coverage_cli.TICK, 7] and len(masses) == sum(seen)
    again, _ = CoverageTree(policy(), depth=4, expand_batch=0).run_seed(0, 2 * coverage_cli.TICK + 7)
    assert again.tolist() == masses.tolist()
    exhausted = CoverageTree(FunctionPolicy(uniform_tree), depth=2, expand_batch=0)
    small, done = exhausted.run_seed(0, 50, on_draws=seen.append)
    assert done and len(small) == 9 and seen[-1] == 9


def test_coverage_bar_total_is_reached_when_seeds_exhaust_the_tree(no_delay, capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "LOG_INTERVAL", 0.0)  # captured stderr is no terminal: redraw every update
    coverage(FunctionPolicy(uniform_tree), 2, range(2), 50, until="draws", progress_desc="coverage")
    err = capsys.readouterr().err
    assert "100/100" in err and "seed 2/2" in err


def test_arena_bar_keeps_working_and_quiet_silences_it(no_delay, capsys):
    players = [NetPlayer(f"m{k}", load_model(f"random:tiny:{k}")) for k in range(2)]
    openings = load_openings()[:1]
    sched = round_robin(2, 1, games=2)
    games = play_games(players, openings, sched, max_plies=6)
    err = capsys.readouterr().err
    assert "arena:" in err and "2/2" in err  # left on screen (leave=True) with its final count
    quiet = play_games(players, openings, sched, max_plies=6, progress=False)
    assert capsys.readouterr().err == ""
    assert [g.moves for g in quiet] == [g.moves for g in games]


def test_an_arena_says_what_it_plays_before_any_game_ends(no_delay, capsys, monkeypatch):
    """All the games of a match are in flight at once and end near its close: the bar's note shows the
    ply rounds meanwhile (at most every LOG_INTERVAL s in a log file), and the games are the same."""
    players = [NetPlayer(f"m{k}", load_model(f"random:tiny:{k}")) for k in range(2)]
    sched = round_robin(2, 1, games=2)
    quiet = play_games(players, load_openings()[:1], sched, max_plies=40, progress=False)
    monkeypatch.setattr(progress_mod, "LOG_INTERVAL", 0.0)
    games = play_games(players, load_openings()[:1], sched, max_plies=40)
    err = capsys.readouterr().err
    assert "0/2 [" in err and "ply round 1, 2 in flight" in err and "ply round 5, 2 in flight" in err
    assert err.rstrip().endswith("game/s]")  # the final count without the note
    assert [g.moves for g in games] == [g.moves for g in quiet]


def test_a_note_waits_for_the_delay_and_the_interval(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    with progress(total=2, desc="slow") as bar:  # the default DELAY: nothing drawn yet
        progress_mod.note(bar, "working")
        assert "working" not in stream.getvalue()
        bar.delay = 0.0
        bar.last_print_t = bar._time()  # just drawn: the next draw waits LOG_INTERVAL
        progress_mod.note(bar, "still")
        assert "still" not in stream.getvalue()
        bar.last_print_t -= progress_mod.LOG_INTERVAL
        progress_mod.note(bar, "still working")
        assert "still working" in stream.getvalue()
    with progress(total=2, desc="off", disable=True) as bar:
        progress_mod.note(bar, "hidden")
    assert "hidden" not in stream.getvalue()


def test_a_log_file_gets_a_refresh_every_log_interval_a_terminal_ten_a_second(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress(total=1, desc="log") as bar:
        assert bar.mininterval == progress_mod.LOG_INTERVAL and not bar.dynamic_ncols
    monkeypatch.setattr(sys, "stderr", Terminal())
    with progress(total=1, desc="tty") as bar:
        assert bar.mininterval == 0.1 and bar.dynamic_ncols
