"""Scale-out as users launch it (issue 19 items 2-3): the README's launch lines, run through the real ``pdx``.

The CPU lines run for real as subprocesses (2 processes, gloo) with a tiny-size config appended
(``--config <tmp>/tiny.yaml``: ``random:tiny``, a few steps, 8 games); the multi-node lines (torchrun,
SLURM) are shape-tested: their arguments are parsed by torchrun's own parser and by ``pdx``'s LightningCLI
(``--print_config``), and a Trainer built from the parsed settings in one simulated worker's environment
must see the right world size, rank and cluster environment. ``README_LINES`` are the README's lines
verbatim (``test_the_readme_shows_the_lines_these_tests_run``).

The ranks of the ``pdx fit`` runs carry ``tests/runtime/ddp_probe.py``'s RankProbe callback, which writes
each rank's EMA/online hashes and games hash per step, so "EMA identical across ranks" and "each rank's
games differ" are measured on every rank, not read from rank 0's checkpoint alone.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
PDX = ROOT / ".venv" / "bin" / "pdx"
HERE = Path(__file__).resolve().parent
STEPS = 6  # optimizer steps of the fit runs
KILL_AFTER = 2  # the killed run is SIGKILLed once this step's checkpoint exists

# The README's scale-out lines, verbatim (continuation lines joined). CPU lines run below; GPU/multi-node
# lines are shape-tested.
README_LINES = {
    "single": "pdx fit --config conf/fit/pdx.yaml",
    "ddp_cpu": "pdx fit --config conf/fit/pdx.yaml --trainer.strategy ddp --trainer.accelerator cpu "
    "--trainer.devices 2",
    "ddp_cpu_resume": "pdx fit --config conf/fit/pdx.yaml --trainer.strategy ddp --trainer.accelerator cpu "
    "--trainer.devices 2 --ckpt_path last",
    "pretrain_ddp": "pdx pretrain --config conf/pretrain/small.yaml --trainer.strategy ddp "
    "--trainer.accelerator cpu --trainer.devices 2",
    "sweep_ddp": "pdx sweep --config conf/sweep/cpu.yaml --trainer.strategy ddp --trainer.accelerator cpu "
    "--trainer.devices 2",
    "gpu_node": "pdx fit --config conf/fit/paper.yaml --config conf/fit/gpu_bf16.yaml --trainer.strategy ddp "
    "--trainer.devices 8",
    "torchrun": "torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint $HEAD:29500 "
    "-m pdx_lightning.cli fit --config conf/fit/paper.yaml --config conf/fit/gpu_bf16.yaml "
    "--trainer.strategy ddp --trainer.devices 8 --trainer.num_nodes 4",
    "sbatch": "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8",
    "srun": "srun pdx fit --config conf/fit/paper.yaml --config conf/fit/gpu_bf16.yaml --trainer.strategy ddp "
    "--trainer.devices 8 --trainer.num_nodes 4",
}

# launcher/cluster variables of an outer job must not leak into the runs (they pick Lightning's environment)
_CLUSTER_ENV = re.compile(
    r"^(SLURM_|TORCHELASTIC_|GROUP_RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|RANK|WORLD_SIZE|"
    r"NODE_RANK|MASTER_ADDR|MASTER_PORT|ROLE_)"
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _CLUSTER_ENV.match(k)}
    path = [str(HERE), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return {**env, "OMP_NUM_THREADS": "1", "PDX_THREADS": "1", "PYTHONPATH": os.pathsep.join(path)}


def _argv(line: str, *extra: str) -> list[str]:
    """A README ``pdx`` line as argv: the venv's ``pdx``, repo-relative ``conf/`` paths made absolute."""
    words = shlex.split(line)
    assert words[0] == "pdx", line
    words = [str(ROOT / w) if w.startswith("conf/") else w for w in words[1:]]
    return [str(PDX), *words, *extra]


def _run(line: str, cwd: Path, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        _argv(line, *extra),
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


def _tiny_fit(work: Path, probe: str, sleep: float = 0.0) -> Path:
    """The tiny-size overlay of ``conf/fit/pdx.yaml`` (appended as a second ``--config``); no launch settings.

    Its callbacks replace the config's: a checkpoint every step (no ``dirpath``, as shipped: wherever the
    run puts them, ``--ckpt_path last`` must find them) and the probe."""
    cfg = {
        "trainer": {
            "max_steps": STEPS,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {"save_last": True, "every_n_train_steps": 1, "save_top_k": -1},
                },
                {"class_path": "ddp_probe.RankProbe", "init_args": {"out": str(work / probe), "sleep": sleep}},
            ],
        },
        "model": {
            "base": "random:tiny",
            "warmup_steps": 1,
            "lr_value_head": 3e-3,
            "algorithm": {"micro_batch": 4},
            "selfplay": {"n_games": 8, "opening_max_moves": 2, "max_plies": 20, "workers": 2},
        },
    }  # each rank with its chess worker threads
    path = work / f"tiny_{probe}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _probe(path: Path) -> dict[int, dict[tuple[str, int], dict]]:
    """rank -> (event, step) -> record (the last one written for that key)."""
    out: dict[int, dict[tuple[str, int], dict]] = {}
    for f in sorted(path.glob("rank*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            out.setdefault(r["rank"], {})[(r["event"], r["step"])] = r
    return out


def _reached(probe_file: Path, step: int) -> bool:
    """Whether a rank's probe file records the games of ``step`` (the end of its training step)."""
    try:
        lines = probe_file.read_text().splitlines()
    except OSError:
        return False
    return any(f'"event": "games", "step": {step},' in line for line in lines)


def _live_members(pgid: int, wait: float = 10.0) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (a killed rank's zombie waits for a reaper), after
    waiting up to ``wait`` seconds for them to go."""
    deadline = time.monotonic() + wait
    while True:
        live = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                live.append(int(stat.parent.name))
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)


def _summary(stdout: str) -> list[str]:
    """The closing summary's line heads, as printed (once per run: rank 0 only)."""
    return [line.split()[0] for line in stdout.splitlines() if re.match(r"^(logs|checkpoints|TensorBoard):", line)]


def _ckpt_dir(work: Path) -> Path:
    """The one directory under ``work`` holding checkpoints (one set of checkpoints per run)."""
    dirs = sorted({p.parent for p in work.rglob("*.ckpt")})
    assert len(dirs) == 1, f"checkpoints in {len(dirs)} places: {dirs}"
    return dirs[0]


def _load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def _same(a, b, where: str = "") -> list[str]:
    """Paths at which two checkpoint trees differ (tensors compared exactly)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        ok = (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and torch.equal(a, b)
        )
        return [] if ok else [where]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where} keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in _same(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where} length"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _same(x, y, f"{where}[{i}]")]
    return [] if a == b else [where]


def _games_hash(state: dict) -> str:
    """ddp_probe.games_hash of a checkpoint's self-play state (one rank's)."""
    import chess
    from ddp_probe import games_hash

    boards = []
    for fen, moves in zip(state["roots"], state["moves"]):
        b = chess.Board(fen)
        for m in moves:
            b.push_uci(m)
        boards.append(b)
    return games_hash(boards)


# ---------------------------------------------------------------- the fresh DDP run (also the reference)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The README's DDP CPU line, uninterrupted, STEPS steps."""
    work = tmp_path_factory.mktemp("ddp_fresh")
    t0 = time.perf_counter()
    r = _run(README_LINES["ddp_cpu"], work, "--config", str(_tiny_fit(work, "probe")))
    return work, r, time.perf_counter() - t0


@pytest.mark.slow
def test_a_fresh_ddp_fit_exits_0_with_one_set_of_checkpoints_one_ema_and_per_rank_games(fresh):
    work, r, _ = fresh
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Traceback" not in out and "Connection closed" not in out, out[-4000:]
    assert "All distributed processes registered. Starting with 2 processes" in out
    assert _summary(r.stdout) == ["logs:", "checkpoints:", "TensorBoard:"]  # once, on rank 0

    # one set of checkpoints, written once (rank 0), atomically; one log version
    ckdir = _ckpt_dir(work)
    assert ckdir.is_relative_to(work / "runs" / "pdx"), ckdir
    assert sorted(p.name for p in ckdir.glob("*.ckpt")) == sorted(
        [f"epoch=0-step={s}.ckpt" for s in range(1, STEPS + 1)] + ["last.ckpt"]
    )
    assert not list(work.rglob(".*partial*"))
    assert [p.name for p in (work / "runs" / "pdx").glob("version_*")] == ["version_0"]
    assert len(list((work / "runs" / "pdx" / "version_0").glob("events.out.tfevents.*"))) == 1

    # every rank, every step: the same EMA and online weights, different games (N / world_size each)
    probe = _probe(work / "probe")
    assert sorted(probe) == [0, 1] and probe[0][("ema", 0)]["pid"] != probe[1][("ema", 0)]["pid"]
    assert all(rec["world"] == 2 for rank in probe.values() for rec in rank.values())
    for step in range(STEPS + 1):
        e0, e1 = probe[0][("ema", step)], probe[1][("ema", step)]
        assert e0["ema"] == e1["ema"] and e0["online"] == e1["online"], f"ranks differ at step {step}"
    assert probe[0][("ema", STEPS)]["ema"] != probe[0][("ema", 0)]["ema"]  # the EMA did move
    for step in range(1, STEPS + 1):
        g0, g1 = probe[0][("games", step)], probe[1][("games", step)]
        assert g0["n"] == g1["n"] == 4 and g0["games"] != g1["games"], f"ranks play the same games ({step})"

    # the checkpoint holds every rank's games, each equal to what that rank played; rank 0's EMA
    last = _load(ckdir / "last.ckpt")
    assert last["global_step"] == STEPS and last["pdx_param_version"] == STEPS
    states = last["pdx_selfplay"]
    assert len(states) == 2 and states[0]["n_games"] == states[1]["n_games"] == 4
    assert [_games_hash(s) for s in states] == [probe[r][("games", STEPS)]["games"] for r in (0, 1)]
    from ddp_probe import state_hash

    ema = {k[len("ema.") :]: v for k, v in last["state_dict"].items() if k.startswith("ema.")}
    assert state_hash(ema) == probe[1][("ema", STEPS)]["ema"]  # rank 0's saved EMA is rank 1's too


@pytest.mark.slow
def test_a_ddp_run_killed_mid_training_resumes_each_ranks_games_and_ends_as_the_uninterrupted_run(fresh, tmp_path):
    """SIGKILL the whole process group (launcher + both ranks) during step KILL_AFTER + 1, after step
    KILL_AFTER's checkpoint (the probe holds each step 1 s before its checkpoint is saved), then rerun the
    README's resume line: each rank continues its own games from the checkpoint, and weights, EMA, AdamW
    state and every rank's games at the end equal the uninterrupted run's (exactly)."""
    ref_work, ref, _ = fresh
    assert ref.returncode == 0, (ref.stdout + ref.stderr)[-3000:]
    log = tmp_path / "killed.log"
    with open(log, "w") as f:  # a file, not a pipe: an unread pipe could fill and stall the ranks
        argv = _argv(README_LINES["ddp_cpu"], "--config", str(_tiny_fit(tmp_path, "killed", 1.0)))
        proc = subprocess.Popen(
            argv, cwd=tmp_path, env=_env(), stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 480
    try:  # rank 0 is in step KILL_AFTER + 1: step KILL_AFTER's checkpoints (step file, then last) are written
        while not _reached(tmp_path / "killed" / "rank0.jsonl", KILL_AFTER + 1):
            assert proc.poll() is None, f"run ended before the kill: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher's group: rank 0 and rank 1
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert _live_members(proc.pid) == []  # no rank survived the kill (zombies aside)
    ckdir = _ckpt_dir(tmp_path)
    killed_at = _load(ckdir / "last.ckpt")["global_step"]
    assert KILL_AFTER <= killed_at < STEPS, f"killed at step {killed_at}: not mid-training"

    r = _run(README_LINES["ddp_cpu_resume"], tmp_path, "--config", str(_tiny_fit(tmp_path, "resumed")))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Traceback" not in out, out[-4000:]
    assert _summary(r.stdout) == ["logs:", "checkpoints:", "TensorBoard:"]
    assert [p.name for p in (tmp_path / "runs" / "pdx").glob("version_*")] == ["version_0"]  # same logs
    resumed, ref_probe = _probe(tmp_path / "resumed"), _probe(ref_work / "probe")
    for rank in (0, 1):
        steps = sorted(s for e, s in resumed[rank] if e == "games")
        assert steps == list(range(killed_at + 1, STEPS + 1)), (rank, steps)  # resumed after the checkpoint
        assert resumed[rank][("ema", killed_at)]["ema"] == ref_probe[rank][("ema", killed_at)]["ema"]
        for s in steps:  # this rank's own games, continued
            assert resumed[rank][("games", s)]["games"] == ref_probe[rank][("games", s)]["games"], (rank, s)
        assert resumed[rank][("ema", STEPS)] | {"pid": 0} == ref_probe[rank][("ema", STEPS)] | {"pid": 0}

    assert _ckpt_dir(tmp_path) == ckdir  # the resumed run continued the same set
    a, b = _load(ckdir / "last.ckpt"), _load(_ckpt_dir(ref_work) / "last.ckpt")
    assert a["global_step"] == b["global_step"] == STEPS
    keys = ("state_dict", "optimizer_states", "lr_schedulers", "pdx_selfplay", "pdx_param_version", "pdx_game_metrics")
    assert _same({k: a[k] for k in keys}, {k: b[k] for k in keys}) == []
    assert len(a["pdx_selfplay"]) == 2 and _same(a["pdx_selfplay"][0], a["pdx_selfplay"][1]) != []


# ---------------------------------------------------------------- ddp_spawn (issue 55): the module is pickled

SPAWN_LINE = (
    "pdx fit --config conf/fit/pdx.yaml --trainer.strategy ddp_spawn --trainer.accelerator cpu --trainer.devices 2"
)


@pytest.mark.slow
def test_a_ddp_spawn_fit_on_two_cpu_processes_trains_both_ranks_and_names_its_run_directory(tmp_path):
    """``--trainer.strategy ddp_spawn``: Lightning pickles the trainer and PDXModule into two fresh processes
    (no lambda, the sampler's generator as bytes); both ranks train with one EMA and their own games, rank 0
    checkpoints, and the closing summary (printed by the launching process, whose trainer did not fit)
    names the directory the ranks wrote."""
    r = _run(SPAWN_LINE, tmp_path, "--config", str(_tiny_fit(tmp_path, "spawn")), "--trainer.max_steps", "3")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Traceback" not in out and "Can't pickle" not in out, out[-4000:]
    assert "All distributed processes registered. Starting with 2 processes" in out
    # the workers are fresh interpreters: the known noise is silenced there too (runtime.noise)
    for noise in ("💡 Tip", "in eval mode", "`dataloader_iter` step flavor", "Warning"):
        assert noise not in r.stderr, r.stderr[-4000:]
    assert _summary(r.stdout) == ["logs:", "checkpoints:", "TensorBoard:"]
    assert "logs:        runs/pdx/version_0" in r.stdout
    assert "checkpoints: runs/pdx/version_0/checkpoints" in r.stdout
    assert _ckpt_dir(tmp_path) == tmp_path / "runs" / "pdx" / "version_0" / "checkpoints"
    assert [p.name for p in (tmp_path / "runs" / "pdx").glob("version_*")] == ["version_0"]
    probe = _probe(tmp_path / "spawn")
    assert sorted(probe) == [0, 1] and probe[0][("ema", 0)]["pid"] != probe[1][("ema", 0)]["pid"]
    for step in range(4):
        assert probe[0][("ema", step)]["ema"] == probe[1][("ema", step)]["ema"], f"ranks differ at step {step}"
    assert probe[0][("ema", 3)]["ema"] != probe[0][("ema", 0)]["ema"]
    assert probe[0][("games", 3)]["games"] != probe[1][("games", 3)]["games"]
    assert _load(_ckpt_dir(tmp_path) / "last.ckpt")["global_step"] == 3


# ---------------------------------------------------------------- one device: the same summary and logs


# in-process and 2 steps (~1 s of CPU): in the default run, unlike the DDP subprocess runs around it
def test_one_device_fit_prints_the_same_summary_and_logs_one_version(tmp_path, monkeypatch, capsys):
    """The README's single-device line (in-process, the same entry), with ``--trainer.precision bf16-mixed``
    on CPU: the closing summary's lines and the log layout are the DDP run's; the Trainer ran bf16-mixed
    and the losses are finite."""
    from pdx_lightning import cli

    cfg = _tiny_fit(tmp_path, "single")
    monkeypatch.chdir(tmp_path)
    argv = _argv(
        README_LINES["single"], "--config", str(cfg), "--trainer.max_steps", "2", "--trainer.precision", "bf16-mixed"
    )[1:]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert _summary(out) == ["logs:", "checkpoints:", "TensorBoard:"]
    assert "logs:        runs/pdx/version_0" in out
    assert [p.name for p in (tmp_path / "runs" / "pdx").glob("version_*")] == ["version_0"]
    probe = _probe(tmp_path / "single")
    assert sorted(probe) == [0] and probe[0][("games", 2)]["n"] == 8 and probe[0][("games", 2)]["world"] == 1
    assert {r["precision"] for r in probe[0].values()} == {"bf16-mixed"}
    assert all(math.isfinite(probe[0][("games", s)]["loss"]) for s in (1, 2))


# ---------------------------------------------------------------- pretrain and the sweep under DDP


@pytest.mark.slow
def test_pdx_pretrain_under_ddp_trains_on_both_ranks_and_exports_once(tmp_path):
    export = tmp_path / "out" / "base_tiny.pt"
    cfg = {
        "trainer": {
            "max_steps": 3,
            "val_check_interval": 2,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [
                {
                    "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                    "init_args": {"save_last": True, "every_n_train_steps": 1},
                }
            ],
        },
        "model": {"preset": "tiny", "warmup_steps": 1, "export": str(export)},
        "data": {"shards": str(ROOT / "tests" / "fixtures" / "shards_small"), "batch_size": 8},
    }
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    r = _run(README_LINES["pretrain_ddp"], tmp_path, "--config", str(tmp_path / "tiny.yaml"))
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Traceback" not in out, out[-4000:]
    assert "All distributed processes registered. Starting with 2 processes" in out
    assert r.stdout.count("[pretrain] {") == 2  # each rank read the shards
    assert r.stdout.count("[pretrain] exported") == 1  # rank 0 exported
    assert _summary(r.stdout) == ["logs:", "checkpoints:", "TensorBoard:"]
    last = _load(_ckpt_dir(tmp_path) / "last.ckpt")
    assert last["global_step"] == 3
    from pdx_lightning.nets import load_model

    net = load_model(str(export))
    for k, v in net.state_dict().items():  # the export is the trained (synced) model
        assert torch.equal(v, last["state_dict"][f"model.{k}"]), k


def _tiny_sweep(tmp_path: Path, **trainer) -> Path:
    cfg = {
        "out": str(tmp_path / "sweep"),
        "base": "random:tiny",
        "fit_config": str(ROOT / "conf" / "fit" / "pdx.yaml"),
        "steps": 2,
        "games": 4,
        "checkpoint_every": 1,
        "terms": ["none"],
        "temperatures": ["adaptive"],
        "model": {"warmup_steps": 1, "algorithm": {"micro_batch": 4}},
        "selfplay": {"opening_max_moves": 2, "max_plies": 20},
        "trainer": {"enable_model_summary": False, **trainer},
        "eval": {"selection": str(ROOT / "tests" / "fixtures" / "lichess_sample.csv")},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _sweep_line(config: Path) -> str:
    return README_LINES["sweep_ddp"].replace("--config conf/sweep/cpu.yaml", f"--config {config}")


@pytest.mark.slow
def test_the_sweep_passes_ddp_flags_to_a_real_cell(tmp_path):
    """The README's sweep line on a one-cell tiny sweep (``--train-only``): the cell's ``pdx fit`` runs as two
    gloo ranks, and its final checkpoint holds both ranks' games."""
    r = _run(_sweep_line(_tiny_sweep(tmp_path)), tmp_path, "--train-only")
    cell = tmp_path / "sweep" / "cells" / "none-adaptive"
    log = (cell / "fit.log").read_text() if (cell / "fit.log").is_file() else ""
    assert r.returncode == 0, (r.stdout + r.stderr + log)[-4000:]
    cmd = next(line for line in log.splitlines() if line.startswith("$ "))
    assert cmd.endswith("--trainer.strategy ddp --trainer.accelerator cpu --trainer.devices 2"), cmd
    assert "All distributed processes registered. Starting with 2 processes" in log and "Traceback" not in log
    final = _load(cell / "checkpoints" / "final.ckpt")
    assert final["global_step"] == 2 and len(final["pdx_selfplay"]) == 2
    assert [s["n_games"] for s in final["pdx_selfplay"]] == [2, 2]
    assert _same(final["pdx_selfplay"][0]["moves"], final["pdx_selfplay"][1]["moves"]) != []


def test_the_sweeps_trainer_settings_reach_every_cells_fit_config(tmp_path):
    """``trainer: {strategy: ddp, devices: 2}`` in the sweep YAML lands in each cell's fit.yaml, next to the
    sweep's own loggers and checkpoints (the route for settings kept with the sweep instead of flags)."""
    from pdx_lightning.experiments.sweep.config import load_config, plan
    from pdx_lightning.experiments.sweep.train import fit_command, fit_config

    cfg = load_config(_tiny_sweep(tmp_path, strategy="ddp", devices=2, accelerator="cpu", num_nodes=1))
    cell = plan(cfg)[0]
    doc = fit_config(cfg, cell, tmp_path / "cell")
    assert {k: doc["trainer"][k] for k in ("strategy", "devices", "accelerator", "num_nodes")} == {
        "strategy": "ddp",
        "devices": 2,
        "accelerator": "cpu",
        "num_nodes": 1,
    }
    assert doc["trainer"]["max_steps"] == 2 and len(doc["trainer"]["logger"]) == 2
    cmd = fit_command(cell, tmp_path / "cell", ["--trainer.devices", "4"])
    assert cmd[-2:] == ["--trainer.devices", "4"]  # a flag still overrides the YAML


# ---------------------------------------------------------------- the GPU and multi-node lines, shape-tested


def _print_config(argv: list[str], capsys) -> dict:
    """``pdx <argv> --print_config`` in-process: the config LightningCLI parsed (nothing is instantiated)."""
    from pdx_lightning import cli

    words = [str(ROOT / w) if w.startswith("conf/") else w for w in argv]
    with pytest.raises(SystemExit) as e:
        cli.main([*words, "--print_config"])
    assert e.value.code in (0, None)
    return yaml.safe_load(capsys.readouterr().out)


def _worker_trainer(trainer_cfg: dict, env: dict[str, str], monkeypatch):
    """The Trainer one worker would build from ``trainer_cfg`` in ``env`` (no GPU here: accelerator cpu)."""
    import lightning as L

    for k in [k for k in os.environ if _CLUSTER_ENV.match(k)]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    t = L.Trainer(
        accelerator="cpu",
        strategy=trainer_cfg["strategy"],
        devices=int(trainer_cfg["devices"]),
        num_nodes=int(trainer_cfg.get("num_nodes") or 1),
        precision=trainer_cfg["precision"],
        logger=False,
        enable_checkpointing=False,
    )
    t.strategy.cluster_environment.validate_settings(num_devices=t.num_devices, num_nodes=t.num_nodes)
    return t


def test_the_gpu_line_parses_to_ddp_on_8_gpus_with_bf16(capsys):
    cfg = _print_config(shlex.split(README_LINES["gpu_node"])[1:], capsys)["trainer"]
    assert (cfg["accelerator"], cfg["strategy"], int(cfg["devices"]), cfg["precision"]) == (
        "gpu",
        "ddp",
        8,
        "bf16-mixed",
    )
    assert cfg["max_steps"] == 2000  # conf/fit/paper.yaml underneath


def test_the_torchrun_line_parses_and_a_worker_sees_32_ranks_without_relaunching(capsys, monkeypatch):
    from lightning.fabric.plugins.environments import TorchElasticEnvironment
    from torch.distributed.run import get_args_parser

    words = shlex.split(README_LINES["torchrun"])
    assert words[0] == "torchrun"
    a = get_args_parser().parse_args(words[1:])
    assert a.module and a.training_script == "pdx_lightning.cli" and a.rdzv_backend == "c10d"
    nnodes, nproc = int(a.nnodes), int(a.nproc_per_node)
    cfg = _print_config(a.training_script_args, capsys)["trainer"]
    assert (cfg["strategy"], int(cfg["devices"]), cfg["num_nodes"]) == ("ddp", nproc, nnodes)
    # what torchrun exports to local rank 3 of node 1
    t = _worker_trainer(
        cfg,
        {
            "TORCHELASTIC_RUN_ID": "pdx",
            "GROUP_RANK": "1",
            "LOCAL_RANK": "3",
            "RANK": str(1 * nproc + 3),
            "WORLD_SIZE": str(nnodes * nproc),
            "LOCAL_WORLD_SIZE": str(nproc),
            "ROLE_RANK": str(nproc + 3),
            "ROLE_WORLD_SIZE": str(nnodes * nproc),
            "MASTER_ADDR": "head",
            "MASTER_PORT": "29500",
        },
        monkeypatch,
    )
    env = t.strategy.cluster_environment
    assert isinstance(env, TorchElasticEnvironment) and env.creates_processes_externally  # no relaunch
    assert (t.world_size, t.global_rank, t.local_rank, t.node_rank) == (32, 11, 3, 1)


def test_the_slurm_lines_parse_and_a_task_sees_32_ranks(capsys, monkeypatch):
    from lightning.fabric.plugins.environments import SLURMEnvironment

    opts = {}
    for line in README_LINES["sbatch"].splitlines():
        head, option = line.split()
        assert head == "#SBATCH"
        key, value = option.split("=")
        opts[key] = value
    nodes, per_node = int(opts["--nodes"]), int(opts["--ntasks-per-node"])
    assert int(opts["--gpus-per-node"]) == per_node  # one task per GPU
    words = shlex.split(README_LINES["srun"])
    assert words[:2] == ["srun", "pdx"]
    cfg = _print_config(words[2:], capsys)["trainer"]
    assert (cfg["strategy"], int(cfg["devices"]), cfg["num_nodes"], cfg["accelerator"]) == (
        "ddp",
        per_node,
        nodes,
        "gpu",
    )
    slurm = {
        "SLURM_NTASKS": str(nodes * per_node),
        "SLURM_NTASKS_PER_NODE": str(per_node),
        "SLURM_NNODES": str(nodes),
        "SLURM_NODEID": "1",
        "SLURM_PROCID": str(per_node + 3),
        "SLURM_LOCALID": "3",
        "SLURM_NODELIST": "gpu[07-10]",
        "SLURM_JOB_NAME": "pdx",
        "SLURM_JOB_ID": "7",
    }
    t = _worker_trainer(cfg, slurm, monkeypatch)
    env = t.strategy.cluster_environment
    assert isinstance(env, SLURMEnvironment) and env.creates_processes_externally
    assert (t.world_size, t.global_rank, t.local_rank, t.node_rank) == (32, 11, 3, 1)
    assert env.main_address == "gpu07"
    with pytest.raises(ValueError, match="ntasks-per-node"):  # the check can fail: devices ≠ tasks per node
        _worker_trainer({**cfg, "devices": per_node // 2}, slurm, monkeypatch)


def test_the_readme_shows_the_lines_these_tests_run():
    """The lines are the documentation's (README.md and docs/, where the scale-out page holds them)."""
    text = "\n".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])
    flat = re.sub(r"[ \t]+", " ", re.sub(r"\\\n\s*", " ", text))
    missing = [k for k, line in README_LINES.items() if line not in flat]
    assert not missing, f"the docs lack the scale-out line(s) {missing}"
