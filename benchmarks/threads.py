"""Every command that runs a network, with ``pdx --threads 1`` (the default) against ``--threads 2``.

Each command runs as a user runs it (a ``pdx`` subprocess in a scratch directory, start-up included) on a
small workload, the two settings interleaved, ``--repeats`` times each; the table gives the median wall
seconds, their spread (min–max) and the ratio 2 threads / 1 thread (above 1: the second thread costs
time). What matters is the machine's state, printed with the table: on a shared 2-core machine busy with
other jobs, torch's intra-op threads spin and wait for each other (the default of one thread exists for
that case); on a quiet machine a second thread can help the big batched passes.

    .venv/bin/python benchmarks/threads.py [--repeats 3] [--only fit arena ...] [--md out.md]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import chess
import chess.engine

ROOT = Path(__file__).resolve().parents[1]
PDX = [sys.executable, "-m", "pdx_lightning.cli"]
FIX_SHARDS = ROOT / "tests" / "fixtures" / "shards_small"
DATA = ROOT / "data"

FIT = [
    "fit",
    "--config",
    str(ROOT / "conf" / "fit" / "small.yaml"),
    "--trainer.max_steps",
    "4",
    "--trainer.enable_progress_bar",
    "false",
    "--trainer.enable_model_summary",
    "false",
    "--model.selfplay.n_games",
    "64",
    "--model.algorithm.micro_batch",
    "64",
    "--model.warmup_steps",
    "1",
    "--model.selfplay.opening_max_moves",
    "4",
]
COMMANDS: dict[str, list[str]] = {
    "fit": FIT,
    "pretrain": [
        "pretrain",
        "--config",
        str(ROOT / "conf" / "pretrain" / "small.yaml"),
        "--data.shards",
        str(FIX_SHARDS),
        "--data.batch_size",
        "64",
        "--trainer.max_steps",
        "6",
        "--trainer.val_check_interval",
        "6",
        "--model.warmup_steps",
        "1",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
    ],
    "validate": [
        "validate",
        "--config",
        str(ROOT / "conf" / "fit" / "small.yaml"),
        "--ckpt_path",
        "{ckpt}",
        "--model.val_suite",
        str(DATA / "tactics.csv"),
        "--model.val_mates+=" + str(DATA / "mates_in_1.csv"),
        "--trainer.enable_progress_bar",
        "false",
    ],
    "eval puzzles": [
        "eval",
        "puzzles",
        "--model",
        "base:small",
        "--suite",
        str(DATA / "tactics.csv"),
        "--suite",
        str(DATA / "mates_in_1.csv"),
        "--suite",
        str(DATA / "mates_in_2.csv"),
    ],
    "eval mates": [
        "eval",
        "mates",
        "--model",
        "base:small",
        "--suite",
        str(DATA / "mates_in_1.csv"),
        "--suite",
        str(DATA / "mates_in_2.csv"),
        "--suite",
        str(DATA / "mates_in_3.csv"),
    ],
    "eval diagnostics": ["eval", "diagnostics", "--model", "base:small", "--games", "16", "--max-plies", "120"],
    "eval coverage": ["eval", "coverage", "--model", "base:small", "--depth", "3", "--seeds", "2", "--draws", "5000"],
    "eval recovery": [
        "eval",
        "recovery",
        "--base",
        "base:small",
        "--model",
        "random:small",
        "--suite",
        str(DATA / "tactics.csv"),
        "--suite",
        str(DATA / "mates_in_1.csv"),
    ],
    "arena": ["arena", "--model", "base:small", "--model", "random:small", "--games", "40", "--quiet"],
    "sweep": ["sweep", "--config", "{sweep}", "--train-only"],
    "uci": [],  # driven below: 60 positions through python-chess, engine start-up included
}


def sweep_config(work: Path) -> Path:
    """A one-cell sweep (the fit above, through `pdx sweep`), in ``work``."""
    import yaml  # noqa: PLC0415

    path = work / "sweep.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "out": str(work / "sweep_out"),
                "base": "base:small",
                "fit_config": str(ROOT / "conf" / "fit" / "small.yaml"),
                "steps": 3,
                "games": 32,
                "terms": ["forward_kl"],
                "temperatures": ["adaptive"],
                "betas": [0.01],
                "model": {"warmup_steps": 1, "algorithm": {"micro_batch": 32}},
                "selfplay": {"opening_max_moves": 4},
                "eval": {"selection": str(DATA / "mates_in_1.csv")},
            }
        )
    )
    return path


def run_uci(threads: int, work: Path) -> float:
    t0 = time.perf_counter()
    engine = chess.engine.SimpleEngine.popen_uci(
        [*PDX, "--threads", str(threads), "uci", "--model", "base:small"], cwd=work
    )
    try:
        board = chess.Board()
        for _ in range(60):
            move = engine.play(board, chess.engine.Limit(nodes=1)).move
            board.push(move)
            if board.is_game_over():
                board = chess.Board()
    finally:
        engine.quit()
    return time.perf_counter() - t0


def run_once(name: str, threads: int, work: Path, subs: dict[str, str]) -> float:
    if name == "uci":
        return run_uci(threads, work)
    if name == "sweep":
        shutil.rmtree(work / "sweep_out", ignore_errors=True)
    args = [a.format(**subs) for a in COMMANDS[name]]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PDX_THREADS", "MKL_NUM_THREADS")}
    t0 = time.perf_counter()
    r = subprocess.run(
        [*PDX, "--threads", str(threads), *args], cwd=work, env=env, check=False, capture_output=True, text=True
    )
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{name} (--threads {threads}) failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=list(COMMANDS), help="commands to measure (default all)")
    ap.add_argument("--md", help="also write the table here")
    a = ap.parse_args()
    names = a.only or list(COMMANDS)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="pdx-threads-") as tmp:
        work = Path(tmp)
        subprocess.run([*PDX, "--threads", "1", *FIT], cwd=work, check=True, capture_output=True)  # a checkpoint
        subs = {"ckpt": str(next(work.rglob("last.ckpt"))), "sweep": str(sweep_config(work))}
        times: dict[str, dict[int, list[float]]] = {n: {1: [], 2: []} for n in names}
        for rep in range(a.repeats):
            for n in names:
                for t in (1, 2) if rep % 2 == 0 else (2, 1):  # interleaved, order alternating
                    times[n][t].append(run_once(n, t, work, subs))
                    print(f"  {n:18s} threads {t}: {times[n][t][-1]:6.1f} s", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    lines = [
        f"`python benchmarks/threads.py --repeats {a.repeats}`: {os.cpu_count()} CPUs, load average "
        f"{load0[0]:.1f} before / {load1[0]:.1f} after; wall seconds per command, median (min–max) of "
        f"{a.repeats}, start-up included.",
        "",
        "| command | `--threads 1` (default) | `--threads 2` | 2 / 1 |",
        "|---|---:|---:|---:|",
    ]
    for n in names:
        one, two = times[n][1], times[n][2]
        m1, m2 = statistics.median(one), statistics.median(two)
        lines.append(
            f"| {n} | {m1:.1f} ({min(one):.1f}–{max(one):.1f}) | {m2:.1f} ({min(two):.1f}–{max(two):.1f}) "
            f"| {m2 / m1:.2f}× |"
        )
    table = "\n".join(lines)
    print(table)
    if a.md:
        Path(a.md).write_text(table + "\n")


if __name__ == "__main__":
    main()
