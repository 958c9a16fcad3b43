"""`pdx sweep`: the matrix on the tiny preset, resumability, the YAML schema, and the puzzle-tuned control.

Fits run in-process: ``sweep.train.launch`` (the one place a subprocess of the sweep starts) is replaced by
a recorder that runs the same command line through ``pdx_lightning.cli.main`` / ``control.main``, so the
generated configs go through LightningCLI for real and every launch is counted.
"""

import json
import sys
from pathlib import Path

import pytest
import torch
import yaml

from pdx_lightning import cli
from pdx_lightning.evaluation.suite import SuiteSpec, load_suite
from pdx_lightning.experiments.sweep import lock, train
from pdx_lightning.experiments.sweep import sweep_command as command
from pdx_lightning.experiments.sweep.config import SweepConfigError, load_config, plan
from pdx_lightning.experiments.sweep.record import select
from pdx_lightning.experiments.sweep.train import SweepError
from pdx_lightning.supervised import control
from pdx_lightning.supervised.control import PoolOverlapError, PuzzleControl

FIX = Path(__file__).parents[1] / "fixtures"
SAMPLE, MATES, POOL = (
    str(FIX / "lichess_sample.csv"),
    str(FIX / "generated_altmoves.csv"),
    str(FIX / "control_pool.csv"),
)


def write_config(tmp_path: Path, **over) -> Path:
    cfg = {
        "out": str(tmp_path / "out"),
        "base": "random:tiny",
        "steps": 2,
        "games": 4,
        "checkpoint_every": 1,
        "terms": ["none", "forward_kl"],
        "temperatures": ["adaptive"],
        "betas": [0.01],
        "model": {"warmup_steps": 1, "algorithm": {"micro_batch": 4}},
        "selfplay": {"opening_max_moves": 2, "max_plies": 20},
        "trainer": {"accelerator": "cpu", "devices": 1, "enable_model_summary": False},
        "eval": {"selection": SAMPLE, "tactics": SAMPLE, "mates": {"path": MATES}},
        **over,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture
def launches(monkeypatch):
    """Every launched command, run in-process; ``stop_after`` simulates a fit killed after N steps."""
    calls: list[list[str]] = []

    def fake(cmd, log_path, stop_after=None):
        calls.append(cmd)
        argv = cmd[cmd.index("fit") :] + (
            [] if fake.stop_after is None else ["--trainer.max_steps", str(fake.stop_after)]
        )
        (control.main if "pdx_lightning.supervised.control" in cmd else cli.main)(argv)
        return 0 if fake.stop_after is None else 1

    fake.stop_after = None
    fake.calls = calls
    monkeypatch.setattr(train, "launch", fake)
    return fake


def run_sweep(*argv: str) -> int:
    args = cli.build_parser().parse_args(["sweep", *argv])
    return command.run(args)


def test_two_cell_sweep_writes_its_table_and_a_rerun_launches_no_fit(tmp_path, launches):
    cfg = write_config(tmp_path)
    assert run_sweep("--config", str(cfg)) == 0
    assert len(launches.calls) == 2
    out = tmp_path / "out"
    doc = json.loads((out / "sweep.json").read_text())
    assert [(c["name"], c["status"]) for c in doc["cells"]] == [
        ("none-adaptive", "done"),
        ("forward_kl-adaptive-b0.01", "done"),
    ]
    assert {(s["term"], s["beta"]) for s in doc["selected"]} == {("none", 0.0), ("forward_kl", 0.01)}
    table6 = (out / "table6.md").read_text()
    assert "| Forward-KL prior (ours) | adaptive | **" in table6 and "β=0.01" in table6
    for c in doc["cells"]:
        d = out / c["dir"]
        fit = yaml.safe_load((d / "fit.yaml").read_text())
        assert (fit["trainer"]["max_steps"], fit["model"]["selfplay"]["n_games"], fit["seed_everything"]) == (2, 4, 0)
        result = json.loads((d / "result.json").read_text())
        assert result["metrics"]["final/selection/acc"] == c["selection"]["acc"]
        assert "final/loss/total" in result["metrics"]  # final training scalars reached the record
        assert _hparams_plugin_written(d / "tb" / "version_0")
    launches.calls.clear()
    assert run_sweep("--config", str(cfg)) == 0
    assert launches.calls == []  # both cells have result.json: skipped, nothing trained or launched


def _hparams_plugin_written(run_dir: Path) -> bool:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    for path in run_dir.glob("events.out.tfevents*"):
        for event in EventFileLoader(str(path)).Load():
            if any(v.metadata.plugin_data.plugin_name == "hparams" for v in event.summary.value):
                return True
    return False


# Lightning's CSVLogger resumed into its version directory warns that it starts metrics.csv afresh
# (it does: the rows logged before the interruption are dropped); this test checks the resume itself
@pytest.mark.filterwarnings("ignore:Experiment logs directory .* exists and is not empty:UserWarning")
def test_an_interrupted_cell_resumes_from_its_last_checkpoint(tmp_path, launches):
    cfg = write_config(tmp_path, terms=["forward_kl"])
    launches.stop_after = 1  # the fit dies after step 1 of 2: last.ckpt exists, final.ckpt does not
    with pytest.raises(SweepError, match="training failed"):
        run_sweep("--config", str(cfg))
    ckpts = tmp_path / "out" / "cells" / "forward_kl-adaptive-b0.01" / "checkpoints"
    assert (ckpts / "last.ckpt").is_file() and not (ckpts / "final.ckpt").exists()
    first = json.loads((ckpts.parent / "train.json").read_text())["seconds"]
    launches.stop_after = None
    assert run_sweep("--config", str(cfg)) == 0
    total = json.loads((ckpts.parent / "result.json").read_text())["seconds"]["train"]
    assert total > first > 0  # both launches counted
    resumed = launches.calls[-1]
    assert resumed[resumed.index("--ckpt_path") + 1] == str(ckpts / "last.ckpt")
    assert torch.load(ckpts / "final.ckpt", weights_only=True)["global_step"] == 2


def test_train_only_trains_every_cell_once_and_a_later_run_only_evaluates(tmp_path, launches):
    cfg = write_config(tmp_path)
    assert run_sweep("--config", str(cfg), "--train-only") == 0
    out = tmp_path / "out" / "cells"
    names = ["none-adaptive", "forward_kl-adaptive-b0.01"]
    assert len(launches.calls) == 2
    assert all(
        (out / n / "checkpoints" / "final.ckpt").is_file() and not (out / n / "result.json").exists() for n in names
    )  # trained, not evaluated
    assert run_sweep("--config", str(cfg), "--train-only") == 0
    assert len(launches.calls) == 2  # trained cells are skipped
    assert run_sweep("--config", str(cfg)) == 0
    assert len(launches.calls) == 2  # evaluation needs no further fit
    for n in names:  # the training seconds measured by the --train-only process reach the record
        train = json.loads((out / n / "train.json").read_text())
        seconds = train["seconds"]
        assert seconds > 0 and json.loads((out / n / "result.json").read_text())["seconds"]["train"] == seconds
        # what trained the cell and what scored it: versions, kernels, threads, CPU (runtime.environment)
        made = json.loads((out / n / "result.json").read_text())["environment"]
        for env in (train["environment"], made):
            assert env["torch"] == torch.__version__ and env["cpu_capability"] and env["threads"] >= 1
            assert {"lightning", "numpy", "pdx_commit", "kernels", "cpu", "onednn_max_cpu_isa"} <= env.keys()


def test_rescore_scores_every_model_again_on_a_topped_up_suite_without_training(tmp_path, launches):
    """A suite file grew after the sweep: --rescore re-scores the cells and the base on it (no fit launched),
    keeps checkpoints and the stages that do not read suites, and drops recovery.json (it does)."""
    import shutil

    tactics = tmp_path / "tactics.csv"
    rows = Path(SAMPLE).read_text().splitlines()
    tactics.write_text("\n".join(rows[:4]) + "\n")  # 3 puzzles now, 6 after the top-up
    cfg = write_config(tmp_path, eval={"selection": SAMPLE, "tactics": str(tactics)})
    assert run_sweep("--config", str(cfg)) == 0 and len(launches.calls) == 2
    out = tmp_path / "out"
    cell = out / "cells" / "forward_kl-adaptive-b0.01"
    n = lambda p: json.loads(p.read_text())["suites"]["tactics"]["n"]  # noqa: E731
    assert n(cell / "eval.json") == n(out / "base" / "eval.json") == 3
    ckpt = (cell / "checkpoints" / "final.ckpt").stat().st_mtime_ns
    (out / "recovery.json").write_text("{}")
    (out / "arena.json").write_text("{}")
    shutil.copy(SAMPLE, tactics)  # the top-up
    assert run_sweep("--config", str(cfg)) == 0  # a plain rerun keeps the old scores
    assert n(cell / "eval.json") == 3
    assert run_sweep("--config", str(cfg), "--rescore") == 0
    assert len(launches.calls) == 2  # nothing trained again
    assert n(cell / "eval.json") == n(out / "base" / "eval.json") == 6
    assert json.loads((out / "sweep.json").read_text())["cells"][1]["status"] == "done"
    assert (cell / "checkpoints" / "final.ckpt").stat().st_mtime_ns == ckpt
    assert (out / "arena.json").is_file() and not (out / "recovery.json").exists()


def test_unknown_flags_go_to_every_fit_and_dry_run_launches_nothing(tmp_path, launches, capsys):
    cfg = write_config(tmp_path)
    args = cli.build_parser().parse_args(
        ["sweep", "--config", str(cfg), "--trainer.strategy", "ddp", "--trainer.devices", "2", "--dry-run"]
    )
    assert args.fit_args == ["--trainer.strategy", "ddp", "--trainer.devices", "2"] and args.dry_run
    assert command.run(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(
        line.split()[1] == "train" and line.endswith("--trainer.devices 2") for line in lines
    )
    assert launches.calls == [] and not (tmp_path / "out").exists()
    sep = cli.build_parser().parse_args(["sweep", "--config", "x", "--", "--model.algorithm.c_v", "0.5"])
    assert sep.fit_args == ["--", "--model.algorithm.c_v", "0.5"]  # run() drops the separator


def test_changing_the_budget_of_an_existing_sweep_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    lock.check_lock(load_config(write_config(tmp_path, terms=["none"])), out)  # the first run records it
    lock.check_lock(load_config(write_config(tmp_path, terms=["none", "entropy"], betas=[1.0])), out)  # grid grows
    with pytest.raises(SweepConfigError, match=r"steps: 2 -> 3"):
        lock.check_lock(load_config(write_config(tmp_path, steps=3)), out)


def test_two_sweeps_started_together_on_one_directory_lock_it_once(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    a = load_config(write_config(tmp_path))
    b = load_config(write_config(tmp_path, steps=3))
    for trial in range(20):
        out = tmp_path / f"out{trial}"
        out.mkdir()
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(lock.check_lock, cfg, out) for cfg in (a, b)]
        errors = [f.exception() for f in futures]
        assert sum(isinstance(e, SweepConfigError) for e in errors) == 1 and errors.count(None) == 1, errors
        assert [p.name for p in out.iterdir()] == ["config.lock.json"]  # no temporary file left


def test_the_lock_works_on_a_file_system_without_hard_links(tmp_path, monkeypatch):
    def no_links(*a):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(lock.os, "link", no_links)
    out = tmp_path / "out"
    out.mkdir()
    lock.check_lock(load_config(write_config(tmp_path)), out)
    with pytest.raises(SweepConfigError, match=r"steps: 2 -> 3"):
        lock.check_lock(load_config(write_config(tmp_path, steps=3)), out)
    assert [p.name for p in out.iterdir()] == ["config.lock.json"]


def test_a_directory_locked_with_an_old_config_path_accepts_the_moved_config_and_nothing_else(tmp_path):
    """conf/ grouped by kind (issue 27): runs/sweep_maia was locked with ``fit_config: conf/maia.yaml``; the
    same sweep naming ``conf/fit/maia.yaml`` continues there, another fit config is still refused."""
    from dataclasses import replace

    maia = load_config(Path(__file__).parents[2] / "conf" / "sweep" / "maia.yaml")
    assert maia.fit_config == "conf/fit/maia.yaml"
    out = tmp_path / "out"
    out.mkdir()
    lock.check_lock(replace(maia, fit_config="conf/maia.yaml"), out)  # the lock as the flat conf/ wrote it
    recorded = (out / lock.LOCK_FILE).read_text()
    lock.check_lock(maia, out)
    assert (out / lock.LOCK_FILE).read_text() == recorded and '"conf/maia.yaml"' in recorded
    for other in ("conf/fit/pdx.yaml", "conf/pdx.yaml", "mine/maia.yaml"):
        with pytest.raises(SweepConfigError, match=rf"fit_config: 'conf/maia.yaml' -> '{other}'"):
            lock.check_lock(replace(maia, fit_config=other), out)


@pytest.mark.parametrize(
    "over, message",
    [
        (
            {"betas": [0.01], "bogus": 1, "bogus2": 2},
            r"sweep.yaml: unknown key\(s\) \['bogus', 'bogus2'\]; valid keys: eval, ",
        ),
        ({"eval": {"selection": SAMPLE, "hrad": SAMPLE}}, r"eval: unknown key\(s\) \['hrad'\]; valid keys: selection"),
        ({"eval": {"selection": {"path": SAMPLE, "smaple": 3}}}, r"eval.selection: unknown key\(s\) \['smaple'\]"),
        (
            {"eval": {"selection": SAMPLE, "tactics": {"path": SAMPLE, "smaple": 3}}},
            r"eval.tactics: unknown key\(s\) \['smaple'\]; valid keys: path, sample, seed, rating_min",
        ),
        ({"arena": {"gmaes": 3}}, r"arena: unknown key\(s\) \['gmaes'\]; valid keys: games, base_games"),
        ({"betas": [0.0]}, r"beta = 0 is the 'none' term"),
        ({"terms": ["kl"]}, r"terms: expected one of none, entropy, reverse_kl, forward_kl, got kl"),
        ({"temperatures": ["hot"]}, r"temperatures: expected one of adaptive, fixed, got hot"),
        ({"steps": "many"}, r"steps: expected int, got many"),
        ({"arena": {"games": "x"}}, r"arena.games: expected int, got x"),
        (
            {"eval": {"selection": {"path": SAMPLE, "sample": "x"}}},
            r"eval.selection.sample: expected int or null, got x",
        ),
        (
            {"analyses": {"run": ["coverge"]}},
            r"analyses.run: expected one of coverage, diagnostics, recovery, got coverge",
        ),
        ({"selfplay": {"n_games": 8}}, r"selfplay: \['n_games'\] are set by the sweep"),
        ({"control": {"enabled": True}}, r"control.enabled needs control.pool"),
        (
            {"cells": ["forward_kl-fixed-*"]},
            r"cells: \['forward_kl-fixed-\*'\] match no cell of the grid "
            r"\['none-adaptive', 'forward_kl-adaptive-b0.01'\]",
        ),
    ],
)
def test_sweep_yaml_errors_name_the_key(tmp_path, over, message):
    with pytest.raises(SweepConfigError, match=message) as err:
        load_config(write_config(tmp_path, **over))
    assert "\n" not in str(err.value)  # one line, not jsonargparse's nested report


def test_sweep_yaml_reads_pyyaml_exponents_and_suite_shorthand(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"betas: [1e-4, 1.0e-2, 1]\neval: {{selection: {SAMPLE}, mates: {{path: {MATES}, sample: 2}}}}\n")
    cfg = load_config(path)  # PyYAML reads 1e-4 as a string
    assert cfg.betas == [1e-4, 1e-2, 1.0] and cfg.eval.selection.path == [SAMPLE]
    assert cfg.eval.mates == SuiteSpec(path=[MATES], sample=2) and cfg.eval.tactics is None
    assert cfg.terms == ["none", "entropy", "reverse_kl", "forward_kl"] and cfg.temperatures == ["adaptive", "fixed"]
    (tmp_path / "e.yaml").write_text("steps: 3\n")
    with pytest.raises(SweepConfigError, match=r"e.yaml: missing required key\(s\) \['eval.selection.path'\]"):
        load_config(tmp_path / "e.yaml")
    (tmp_path / "l.yaml").write_text("- 1\n")
    with pytest.raises(SweepConfigError, match=r"l.yaml: expected a mapping of sweep keys"):
        load_config(tmp_path / "l.yaml")


def test_the_cells_mappings_pass_through_as_written(tmp_path):
    """model/selfplay/trainer/control.model go to the cells' LightningCLI configs unchanged (no YAML re-read)."""
    cfg = load_config(
        write_config(
            tmp_path,
            model={"warmup_steps": 1, "note": "007", "flag": "yes"},
            control={"model": {"lr_policy_head": "1e-2"}},
        )
    )
    assert cfg.model == {"warmup_steps": 1, "note": "007", "flag": "yes"}
    assert cfg.control.model == {"lr_policy_head": "1e-2"}


def test_the_recorded_config_of_a_sweep_reads_back_as_the_same_config(tmp_path):
    """sweep.json stores asdict(config); reading it back (as the stage test and the report fixture do) is lossless."""
    from dataclasses import asdict

    from pdx_lightning.experiments.sweep.config import parse_config

    cfg = load_config(
        write_config(
            tmp_path, arena={"games": 3}, analyses={"run": ["coverage"]}, control={"enabled": True, "pool": [POOL]}
        )
    )
    assert parse_config(json.loads(json.dumps(asdict(cfg)))) == cfg


def test_beta_star_is_the_best_selection_accuracy_then_p_star_then_smaller_beta():
    def cell(beta, acc, p):
        return {
            "name": f"b{beta}",
            "kind": "rl",
            "term": "entropy",
            "temperature": "fixed",
            "beta": beta,
            "selection": {"acc": acc, "p_star_geo": p},
        }

    assert select([cell(0.1, 0.5, 0.2), cell(0.01, 0.6, 0.1), cell(1.0, 0.4, 0.9)])[0]["beta"] == 0.01
    assert select([cell(0.1, 0.6, 0.3), cell(0.01, 0.6, 0.2)])[0]["beta"] == 0.1
    assert select([cell(0.1, 0.6, 0.2), cell(0.01, 0.6, 0.2)])[0]["beta"] == 0.01


def test_control_refuses_a_pool_overlapping_the_evaluation_suites():
    by_id = PuzzleControl(base="random:tiny", pool=[SAMPLE], exclude=[SuiteSpec(path=[MATES])])
    with pytest.raises(PoolOverlapError, match=r"3 of 6 puzzles.*PuzzleId hm001"):
        by_id.setup("fit")
    fen_pool = [str(FIX / "control_pool_fen_overlap.csv")]
    by_fen = PuzzleControl(base="random:tiny", pool=fen_pool, exclude=[SuiteSpec(path=[SAMPLE])])
    with pytest.raises(PoolOverlapError, match=r"1 of 2 puzzles.*position 7k/8/8/8/8/8/1R6/R3K3 w - -"):
        by_fen.setup("fit")  # zz002 has its own id but replays hm002's solver positions
    kept = PuzzleControl(base="random:tiny", pool=fen_pool, exclude=[SuiteSpec(path=[SAMPLE])], remove_overlap=True)
    kept.setup("fit")
    assert kept.pool_size == 1 and len(kept.dataset) == 1


def test_control_cell_trains_on_solver_moves_and_is_scored_like_a_cell(tmp_path, launches):
    cfg = write_config(
        tmp_path, control={"enabled": True, "pool": [POOL], "model": {"warmup_steps": 1, "lr_policy_head": 1e-2}}
    )
    assert run_sweep("--config", str(cfg), "--control-only") == 0
    assert len(launches.calls) == 1 and "pdx_lightning.supervised.control" in launches.calls[0]
    d = tmp_path / "out" / "cells" / "control"
    fit = yaml.safe_load((d / "fit.yaml").read_text())
    assert [e["path"] for e in fit["model"]["exclude"]] == [[SAMPLE], [SAMPLE], [MATES]]
    assert fit["model"]["batch_size"] == 4
    assert fit["trainer"]["max_steps"] == 2  # the RL cells' step budget
    result = json.loads((d / "result.json").read_text())
    assert result["train"]["loss/policy_ce"] > 0 and "final/selection/acc" in result["metrics"]
    blob = torch.load(d / "checkpoints" / "final.ckpt", weights_only=True)
    online = {k[7:]: v for k, v in blob["state_dict"].items() if k.startswith("online.")}
    base = load_base_state()
    assert any(not torch.equal(online[k], base[k]) for k in base)  # it trained
    pool = load_suite(POOL).puzzles
    assert len(control.SolverPositions(pool)) == sum(p.depth for p in pool)


def load_base_state() -> dict:
    from pdx_lightning.nets import load_model

    return load_model("random:tiny").state_dict()


def test_launch_runs_the_command_and_appends_its_output_to_the_log(tmp_path):
    import sys

    log = tmp_path / "fit.log"
    assert train.launch([sys.executable, "-c", "print('step 1'); raise SystemExit(3)"], log) == 3
    assert train.launch([sys.executable, "-c", "print('step 2')"], log) == 0
    text = log.read_text()
    assert text.index("step 1") < text.index("step 2") and text.count("\n$ ") == 2


def finished_sweep(tmp_path: Path, monkeypatch, **config) -> tuple[Path, list]:
    """The report fixture's 11 finished cells (result.json + eval.json) as a sweep directory without its
    stage outputs, its config updated with ``config`` (in ``tmp_path/s.yaml``); stage launches are
    recorded (and write an empty JSON) instead of run."""
    import shutil

    out = tmp_path / "runs"
    shutil.copytree(FIX / "report" / "runs", out)
    for name in ("arena.json", "diagnostics.json", "coverage.json"):
        (out / name).unlink(missing_ok=True)
    cfg = json.loads((out / "sweep.json").read_text())["config"]
    cfg.update(out=str(out), eval={"selection": SAMPLE}, control={"enabled": True, "pool": [POOL]}, **config)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))  # mappings keep their order
    calls = []

    def fake(cmd, log_path):
        calls.append(cmd)
        Path(cmd[cmd.index("--json") + 1]).write_text("{}")
        return 0

    monkeypatch.setattr(train, "launch", fake)
    return out, calls


def test_stages_run_once_all_cells_are_done_and_no_stages_skips_them(tmp_path, monkeypatch):
    """Arena, sampled arena and analyses get the base, each arm's β* cell and the control, in that order."""
    out, calls = finished_sweep(
        tmp_path,
        monkeypatch,
        base="random:tiny",
        arena={"games": 10, "base_games": 40, "sampled_games": 6},
        analyses={"run": ["diagnostics", "coverage"], "args": {"coverage": ["--depth", "3"]}},
    )
    assert run_sweep("--config", str(tmp_path / "s.yaml"), "--no-stages") == 0 and calls == []
    assert run_sweep("--config", str(tmp_path / "s.yaml")) == 0
    assert [c[3:5] for c in calls] == [
        ["arena", "--model"],
        ["arena", "--model"],
        ["eval", "diagnostics"],
        ["eval", "coverage"],
    ]
    doc = json.loads((out / "sweep.json").read_text())
    chosen = [s["cell"] for s in doc["selected"]]
    labels = [c[i + 1] for c in calls[:1] for i, a in enumerate(c) if a == "--label"]
    assert labels == ["base", *chosen, "control"] and calls[0][calls[0].index("--model") + 1] == "random:tiny"
    arena = calls[0]
    assert arena[arena.index("--games") + 1] == "10" and arena[arena.index("--base-games") + 1] == "40"
    assert "--quiet" not in arena  # the stage's log keeps the progress lines
    sampled = calls[1]
    temps = sampled[sampled.index("--temperature") + 1 : sampled.index("--games")]
    cells = {c["name"]: c for c in doc["cells"]}
    assert temps == ["1", "adaptive", *["adaptive" if cells[n]["temperature"] == "adaptive" else "1" for n in chosen]]
    cov = calls[3]
    plays = [cov[i + 1] for i, a in enumerate(cov) if a == "--play"]
    assert plays == ["raw", "adaptive", *["auto"] * len(chosen)] and cov[cov.index("--depth") + 1] == "3"
    assert doc["files"] == {
        "arena": "arena.json",
        "arena_sampled": "arena_sampled.json",
        "coverage": "coverage.json",
        "diagnostics": "diagnostics.json",
    }
    calls.clear()
    assert run_sweep("--config", str(tmp_path / "s.yaml")) == 0 and calls == []  # their JSON exists


def test_arena_of_every_cell_with_anchors_and_the_base_file(tmp_path, monkeypatch):
    """arena.models: all puts every RL cell in the argmax arena (not only each arm's β*), then the control,
    then the anchors; {base_file} becomes the base's resolved file; the sampled arena has no anchors."""
    out, calls = finished_sweep(
        tmp_path,
        monkeypatch,
        base="base:small",
        analyses=None,
        arena={
            "games": 2,
            "base_games": 4,
            "sampled_games": 2,
            "models": "all",
            "anchors": {"sf1": "sf:nodes=1", "same": f"uci:{sys.executable} --weights={{base_file}}"},
        },
    )
    assert run_sweep("--config", str(tmp_path / "s.yaml")) == 0
    doc = json.loads((out / "sweep.json").read_text())
    rl = [c["name"] for c in doc["cells"] if c["kind"] == "rl"]
    assert len(rl) > len(doc["selected"])  # more than the β* cells
    argmax, sampled = calls
    labels = [argmax[i + 1] for i, a in enumerate(argmax) if a == "--label"]
    models = [argmax[i + 1] for i, a in enumerate(argmax) if a == "--model"]
    assert labels == ["base", *rl, "control", "sf1", "same"]
    from pdx_lightning.nets import resolve_model_path

    assert models[-2:] == ["sf:nodes=1", f"uci:{sys.executable} --weights={resolve_model_path('base:small')}"]
    assert "sf1" not in sampled and "same" not in sampled


def test_arena_anchors_that_cannot_run_fail_before_any_training(tmp_path, launches):
    cfg = write_config(
        tmp_path,
        arena={"anchors": {"gone": "uci:/nonexistent/lc0 --threads=1", "file": "uci:lc0 --weights={base_file}"}},
    )
    with pytest.raises(SweepConfigError) as err:
        run_sweep("--config", str(cfg))
    assert "arena anchor 'gone': command ['/nonexistent/lc0'] not found" in str(err.value)
    assert "arena anchor 'file'" in str(err.value) and "has no file" in str(err.value)  # base random:tiny
    assert launches.calls == []
    assert run_sweep("--config", str(cfg), "--train-only") == 0  # training does not need the arena


def test_only_selects_cells_by_name(tmp_path, capsys):
    cfg = write_config(tmp_path)
    assert run_sweep("--config", str(cfg), "--dry-run", "--only", "forward_kl-*") == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["forward_kl-adaptive-b0.01"]


def test_the_cells_key_picks_cells_of_the_grid_and_keeps_the_control(tmp_path, capsys):
    """conf/sweep/maia.yaml's shape: a grid, then name globs choosing cells of it (plan order)."""
    cfg = write_config(
        tmp_path,
        terms=["none", "entropy", "forward_kl"],
        temperatures=["adaptive", "fixed"],
        betas=[1e-3, 1e-2],
        cells=["forward_kl-adaptive-*", "*-b0.01", "none-fixed"],
        control={"enabled": True, "pool": [POOL]},
    )
    assert run_sweep("--config", str(cfg), "--dry-run") == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "none-fixed",
        "entropy-adaptive-b0.01",
        "entropy-fixed-b0.01",
        "forward_kl-adaptive-b0.001",
        "forward_kl-adaptive-b0.01",
        "forward_kl-fixed-b0.01",
        "control",
    ]


def test_the_shipped_maia_sweep_plans_the_issue_cells():
    cfg = load_config(Path(__file__).parents[2] / "conf" / "sweep" / "maia.yaml")
    assert [c.name for c in plan(cfg)] == [
        "none-adaptive",
        "entropy-adaptive-b0.01",
        "reverse_kl-adaptive-b0.01",
        "forward_kl-adaptive-b0.001",
        "forward_kl-adaptive-b0.01",
        "forward_kl-adaptive-b0.1",
        "forward_kl-fixed-b0.01",
        "control",
    ]
    assert (cfg.steps, cfg.games, cfg.base) == (2000, 128, "base:maia-1900")


def test_the_maia_search_preset_is_the_value_held_sweep_cell_it_quotes():
    """conf/fit/maia_search.yaml quotes the strength of conf/sweep/maia_value_hold.yaml's cell
    forward_kl-adaptive-b0.01-s3: it must train that cell (its seed, steps and every model setting)."""
    conf = Path(__file__).parents[2] / "conf"
    cfg = load_config(conf / "sweep" / "maia_value_hold.yaml")
    cell = next(c for c in plan(cfg) if c.name == "forward_kl-adaptive-b0.01-s3")
    made = train.fit_config(cfg, cell, Path("cell"))
    preset = yaml.safe_load((conf / "fit" / "maia_search.yaml").read_text())
    assert preset["model"] == made["model"]
    assert (preset["seed_everything"], preset["trainer"]["max_steps"]) == (made["seed_everything"], 2000)
    assert preset["model"]["algorithm"]["value_anchor"] == 10.0 and preset["model"]["algorithm"]["beta"] == 0.01


def test_the_distilled_maia_sweep_plans_the_four_arms_on_the_recipe_output():
    """conf/sweep/maia_distilled.yaml fine-tunes what conf/pretrain/maia.yaml exports, with the Maia sweep's
    fit recipe, budget and suites (the two comparisons differ only in the base)."""
    import yaml

    conf = Path(__file__).parents[2] / "conf"
    cfg, maia = load_config(conf / "sweep" / "maia_distilled.yaml"), load_config(conf / "sweep" / "maia.yaml")
    assert [c.name for c in plan(cfg)] == [
        "none-adaptive",
        "entropy-adaptive-b0.01",
        "reverse_kl-adaptive-b0.01",
        "forward_kl-adaptive-b0.01",
    ]
    assert cfg.base == yaml.safe_load((conf / "pretrain" / "maia.yaml").read_text())["model"]["export"]
    assert (cfg.steps, cfg.games, cfg.fit_config, cfg.eval) == (maia.steps, maia.games, maia.fit_config, maia.eval)


def test_missing_suites_or_base_fail_before_any_training(tmp_path, launches):
    cfg = write_config(tmp_path, base="base:nonexistent", eval={"selection": str(tmp_path / "nope.csv")})
    with pytest.raises(SweepConfigError, match=r"suite file .*nope.csv not found; bundled network 'base:nonexistent'"):
        run_sweep("--config", str(cfg))
    with pytest.raises(SweepConfigError) as err:  # --train-only needs no suite, still the base
        run_sweep("--config", str(cfg), "--train-only")
    assert "base:nonexistent" in str(err.value) and "nope.csv" not in str(err.value)
    assert launches.calls == []


def test_pdx_sweep_accepts_an_existing_output_directory(tmp_path, capsys):
    (tmp_path / "runs").mkdir()  # resuming a sweep: --out already exists
    assert (
        cli.main(["sweep", "--config", str(write_config(tmp_path)), "--out", str(tmp_path / "runs"), "--dry-run"]) == 0
    )
    assert str(tmp_path / "runs" / "cells" / "none-adaptive" / "fit.yaml") in capsys.readouterr().out


# ---------------------------------------------------------------- seeds: replicates of every RL cell


def test_seeds_replicate_every_rl_cell_the_first_seed_keeping_the_plain_names(tmp_path):
    cfg = load_config(write_config(tmp_path, seed=3, seeds=[3, 1], control={"enabled": True, "pool": [SAMPLE]}))
    cells = plan(cfg)
    assert [(c.name, c.seed) for c in cells] == [
        ("none-adaptive", 3),
        ("forward_kl-adaptive-b0.01", 3),
        ("none-adaptive-s1", 1),
        ("forward_kl-adaptive-b0.01-s1", 1),
        ("control", 3),
    ]
    by_name = {c.name: c for c in cells}
    doc = train.fit_config(cfg, by_name["forward_kl-adaptive-b0.01-s1"], tmp_path / "c")
    assert (doc["seed_everything"], doc["model"]["selfplay"]["seed"]) == (1, 1)
    assert train.fit_config(cfg, by_name["none-adaptive"], tmp_path / "c")["model"]["selfplay"]["seed"] == 3
    assert train.fit_config(cfg, by_name["control"], tmp_path / "c")["model"]["seed"] == 3
    # without seeds: one seed, the plan of before
    assert [(c.name, c.seed) for c in plan(load_config(write_config(tmp_path, seed=3)))] == [
        ("none-adaptive", 3),
        ("forward_kl-adaptive-b0.01", 3),
    ]
    # cell globs see the suffixed names
    only_s1 = load_config(write_config(tmp_path, seeds=[0, 1], cells=["*-s1"]))
    assert [c.name for c in plan(only_s1)] == ["none-adaptive-s1", "forward_kl-adaptive-b0.01-s1"]


@pytest.mark.parametrize(
    "seeds, match",
    [
        ([1, 0], r"first seed \(1\) must be `seed` \(0\)"),
        ([0, 0], r"distinct seeds >= 0, got \[0, 0\]"),
        ([], r"distinct seeds"),
    ],
)
def test_bad_seeds_are_one_line_errors_naming_the_file(tmp_path, seeds, match):
    with pytest.raises(SweepConfigError, match=rf"sweep.yaml: seeds: .*{match}"):
        load_config(write_config(tmp_path, seeds=seeds))


def test_beta_star_is_chosen_on_the_first_seed_only():
    def row(name, beta, acc, seed):
        return {
            "name": name,
            "kind": "rl",
            "term": "forward_kl",
            "temperature": "adaptive",
            "beta": beta,
            "seed": seed,
            "selection": {"acc": acc, "p_star_geo": 0.1},
        }

    rows = [row("a", 0.01, 0.5, 0), row("b", 0.1, 0.4, 0), row("b-s1", 0.1, 0.9, 1)]
    assert [s["cell"] for s in select(rows, seed=0)] == ["a"]
    assert [s["cell"] for s in select(rows)] == ["b-s1"]  # no seed given: every row votes (old sweep.json)


def test_humans_stage_scores_the_base_then_the_cells_and_the_control(tmp_path, monkeypatch):
    """analyses.humans on a finished sweep: one `pdx eval humans` with the base first (the pairings'
    baseline), each arm's β* cell and the control, labelled as the report's rows know them, plus its flags."""
    games = str(FIX / "lichess_games_20.pgn")
    out, calls = finished_sweep(
        tmp_path, monkeypatch, base="random:tiny", analyses={"humans": ["--pgn", games, "--max-games", "2"]}
    )
    assert run_sweep("--config", str(tmp_path / "s.yaml")) == 0
    (call,) = calls
    doc = json.loads((out / "sweep.json").read_text())
    chosen = [s["cell"] for s in doc["selected"]]
    cells = {c["name"]: c for c in doc["cells"]}
    assert call[3:5] == ["eval", "humans"] and call[call.index("--pgn") + 1] == games and "--max-games" in call
    labels = [call[i + 1] for i, a in enumerate(call) if a == "--label"]
    models = [call[i + 1] for i, a in enumerate(call) if a == "--model"]
    assert labels == ["base", *chosen, "control"]
    assert models == ["random:tiny", *[cells[n]["checkpoint"] for n in chosen], cells["control"]["checkpoint"]]
    assert doc["files"]["humans"] == "humans.json"


def test_humans_stage_without_its_games_fails_before_any_training(tmp_path):
    cfg = load_config(write_config(tmp_path, analyses={"humans": ["--max-games", "3"]}))
    assert any("gives no --pgn" in p for p in command.preflight(cfg))
    cfg = load_config(write_config(tmp_path, analyses={"humans": ["--pgn", "gone.pgn"]}))
    assert any("PGN file gone.pgn not found" in p for p in command.preflight(cfg))
