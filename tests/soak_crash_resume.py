"""Crash-resume soak: ``kill -9`` a real ``pdx fit`` at random moments, resume with ``--ckpt_path last``.

    OMP_NUM_THREADS=1 python tests/soak_crash_resume.py                      # 5 kills, 16 steps
    OMP_NUM_THREADS=1 python tests/soak_crash_resume.py --kills 10 --steps 30 --seed 3 --keep DIR

One uninterrupted reference run and one run that is SIGKILLed ``--kills`` times (each
time at a random moment after a random step's checkpoint appeared, half of the kills
aimed at the moment a checkpoint file is being written) and restarted with the same
command line plus ``--ckpt_path last``, until it reaches ``--steps``. Both use a tiny
config (``random:tiny``, 4 games, a checkpoint every step, TensorBoard logger), seeded.

Checked (any failure exits 1 and says what):

* every checkpoint file of the killed run loads with ``weights_only=True`` (no torn file);
* the step-k checkpoint of the killed run equals the reference's step-k checkpoint for
  every k — online and EMA weights, AdamW state, LR schedule, every game's moves and the
  self-play RNG states, parameter version, global step (so no state is lost and no step
  is skipped or run twice: the next batches after a resume are the uninterrupted run's);
* one TensorBoard run directory (``version_0``), whose scalars cover exactly the
  reference's (tag, step) pairs, every value equal to the reference's (re-executed steps
  after a kill are logged twice, identically; ``perf/`` timings excepted).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

CONFIG = """\
seed_everything: 0
trainer:
  max_steps: {steps}
  accelerator: cpu
  devices: 1
  enable_progress_bar: false
  enable_model_summary: false
  logger:
    class_path: lightning.pytorch.loggers.TensorBoardLogger
    init_args:
      save_dir: runs
      name: pdx
      default_hp_metric: false
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args:
        dirpath: runs/pdx/checkpoints
        save_last: true
        every_n_train_steps: 1
        save_top_k: -1
model:
  base: random:tiny
  warmup_steps: 2
  lr_backbone: 1.0e-3
  lr_final_block: 1.0e-3
  lr_policy_head: 1.0e-3
  lr_value_head: 1.0e-3
  algorithm:
    micro_batch: 4
  selfplay:
    n_games: 4
    opening_max_moves: 2
    max_plies: 12
    seed: 1
"""
COMPARED = (
    "state_dict",
    "optimizer_states",
    "lr_schedulers",
    "pdx_selfplay",
    "pdx_param_version",
    "global_step",
    "pdx_game_metrics",
)
STEP_FILE = re.compile(r"epoch=(\d+)-step=(\d+)(?:-v\d+)?\.ckpt$")


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")]))
    return env


def fit_cmd(resume: bool) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pdx_lightning.cli",
        "fit",
        "--config",
        "tiny.yaml",
        *(["--ckpt_path", "last"] if resume else []),
    ]


def setup(workdir: Path, steps: int) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "tiny.yaml").write_text(CONFIG.format(steps=steps))
    return workdir


def run_reference(workdir: Path, steps: int, timeout: float = 1800) -> None:
    setup(workdir, steps)
    r = subprocess.run(fit_cmd(False), cwd=workdir, env=_env(), capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"reference run failed:\n{r.stderr[-3000:]}")


def _ckpt_dir(workdir: Path) -> Path:
    return workdir / "runs" / "pdx" / "checkpoints"


def _steps_saved(workdir: Path) -> set[int]:
    return {int(m.group(2)) for p in _ckpt_dir(workdir).glob("*.ckpt") if (m := STEP_FILE.search(p.name))}


def run_with_kills(workdir: Path, steps: int, kills: int, rng: random.Random, timeout: float = 1800) -> list[dict]:
    """Start, SIGKILL at random moments ``kills`` times, restart with ``--ckpt_path last``; run to the end."""
    setup(workdir, steps)
    log = []
    deadline = time.monotonic() + timeout
    for k in range(kills + 1):
        err_path = workdir / f"run{k}.stderr"
        with open(err_path, "w") as err:  # a file, not a pipe: a full pipe would stall the run
            proc = subprocess.Popen(fit_cmd(True), cwd=workdir, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        try:
            entry = _drive(proc, workdir, k, kills, steps, rng, deadline, err_path)
        finally:
            if proc.poll() is None:  # interrupted (Ctrl-C, timeout): leave no training process behind
                proc.kill()
                proc.wait()
        log.append(entry)
        if not entry["killed"]:
            break
    return log


def _drive(
    proc, workdir: Path, k: int, kills: int, steps: int, rng: random.Random, deadline: float, err_path: Path
) -> dict:
    """Let run ``k`` go to the end (the last one) or SIGKILL it at a random moment after a random step."""
    if k == kills:  # the final run goes to the end
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        if proc.returncode != 0:
            raise RuntimeError(f"final resumed run failed:\n{err_path.read_text()[-3000:]}")
        return {"run": k, "killed": False}
    done = max(_steps_saved(workdir), default=0)
    target = rng.randint(done + 1, max(done + 1, steps - 2 * (kills - k)))  # leave steps for later kills
    mid_write = rng.random() < 0.5
    delay = rng.uniform(0.0, 0.4)
    hit_partial = False
    while proc.poll() is None and time.monotonic() < deadline:
        if mid_write:
            partial = glob.glob(str(_ckpt_dir(workdir) / ".*.partial-*"))
            if partial and max(_steps_saved(workdir), default=0) >= target - 1:
                hit_partial = True
                break
        if target in _steps_saved(workdir):
            time.sleep(delay)
            break
        time.sleep(0.001 if mid_write else 0.01)
    if proc.poll() is not None:
        err = err_path.read_text()
        if proc.returncode == 0:  # finished before the kill landed: nothing left to resume
            return {"run": k, "killed": False, "finished_early": True}
        raise RuntimeError(f"run {k} ended before it was killed (rc {proc.returncode}):\n{err[-3000:]}")
    hit_partial = hit_partial or bool(glob.glob(str(_ckpt_dir(workdir) / ".*.partial-*")))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return {
        "run": k,
        "killed": True,
        "after_step": max(_steps_saved(workdir), default=0),
        "target_step": target,
        "during_checkpoint_write": hit_partial,
    }


def same(a, b, where: str = "") -> str | None:
    """None if equal (tensors bitwise), else the first difference's location."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        ok = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
        return None if ok else where
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{where} keys {sorted(set(a) ^ set(b))[:5]}"
        for k in a:
            d = same(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where} length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def load(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)


def compare_checkpoints(ref: Path, got: Path) -> list[str]:
    problems = []
    ref_files = {int(m.group(2)): p for p in _ckpt_dir(ref).glob("*.ckpt") if (m := STEP_FILE.search(p.name))}
    for p in sorted(_ckpt_dir(got).glob("*.ckpt")):
        try:
            blob = load(p)
        except Exception as e:  # noqa: BLE001
            problems.append(f"{p.name}: does not load with weights_only=True ({type(e).__name__}: {e})")
            continue
        m = STEP_FILE.search(p.name)
        step = int(m.group(2)) if m else int(blob["global_step"])
        if step not in ref_files:
            problems.append(f"{p.name}: no reference checkpoint for step {step}")
            continue
        ref_blob = load(ref_files[step])
        for key in COMPARED:
            d = same(ref_blob.get(key), blob.get(key), key)
            if d:
                problems.append(f"{p.name} differs from the uninterrupted run at {d}")
                break
    missing = sorted(set(ref_files) - _steps_saved(got))
    if missing:
        problems.append(f"steps without a checkpoint in the killed run: {missing}")
    return problems


def scalars(run_dir: Path) -> dict[tuple[str, int], list[float]]:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out: dict[tuple[str, int], list[float]] = {}
    for f in sorted(run_dir.glob("events.out.tfevents.*")):
        for ev in EventFileLoader(str(f)).Load():
            for v in ev.summary.value:
                if v.HasField("simple_value"):
                    x = v.simple_value
                elif v.HasField("tensor"):
                    x = float(tensor_util.make_ndarray(v.tensor).item())
                else:
                    continue
                out.setdefault((v.tag, ev.step), []).append(x)
    return out


def compare_logs(ref: Path, got: Path) -> list[str]:
    ref_runs = sorted((ref / "runs" / "pdx").glob("version_*"))
    got_runs = sorted((got / "runs" / "pdx").glob("version_*"))
    if [p.name for p in got_runs] != ["version_0"]:
        return [f"the killed run logged into {[p.name for p in got_runs]}, expected one version_0"]
    a, b = scalars(ref_runs[0]), scalars(got_runs[0])
    a = {k: v for k, v in a.items() if not k[0].startswith("perf/")}
    b = {k: v for k, v in b.items() if not k[0].startswith("perf/")}
    problems = []
    if set(a) != set(b):
        miss, extra = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        problems.append(f"TensorBoard (tag, step) pairs differ: missing {miss[:6]}, extra {extra[:6]}")
    for key in set(a) & set(b):
        if any(x != a[key][0] for x in b[key]):
            problems.append(f"TensorBoard {key}: {b[key]} != reference {a[key][0]}")
    return problems


def soak(workdir: Path, steps: int, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    t0 = time.perf_counter()
    run_reference(workdir / "reference", steps)
    t1 = time.perf_counter()
    log = run_with_kills(workdir / "killed", steps, kills, rng)
    t2 = time.perf_counter()
    problems = compare_checkpoints(workdir / "reference", workdir / "killed")
    problems += compare_logs(workdir / "reference", workdir / "killed")
    n_files = len(list(_ckpt_dir(workdir / "killed").glob("*.ckpt")))
    dup = len(list(_ckpt_dir(workdir / "killed").glob("*-v*.ckpt")))
    return {
        "steps": steps,
        "kills": kills,
        "seed": seed,
        "runs": log,
        "checkpoint_files": n_files,
        "re_executed_step_files": dup,
        "problems": problems,
        "kills_during_checkpoint_write": sum(1 for r in log if r.get("during_checkpoint_write")),
        "seconds_reference": round(t1 - t0, 1),
        "seconds_killed": round(t2 - t1, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", default=None, help="work directory to keep (default: a temporary one, removed)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if args.steps < 2 * args.kills + 2:
        p.error("--steps must be at least 2 * --kills + 2")
    workdir = Path(args.keep or tempfile.mkdtemp(prefix="pdx_crash_soak_"))
    try:
        result = soak(workdir, args.steps, args.kills, args.seed)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
