"""The real training step on a GPU at the paper's scale: one command, under 10 minutes.

    python benchmarks/gpu.py [--games 1024] [--steps 3] [--workers 8] [--models base:maia-1900 random:bt4]

For Maia-1900 and a BT4-shaped random network (``random:bt4``, ``conf/fit/paper.yaml``'s preset,
185 M parameters) at N = 1,024 games, in float32 and bf16-mixed, runs ``PDXModule.training_step`` under a
real Lightning Trainer on CUDA (``benchmarks/selfplay.py``'s probe: every measured step is paired with its
network work alone, replayed on the step's own positions) and prints, per cell:

* transitions/s (N / median step time);
* step time / network-bound time (the replay of the step's network passes, forward + backward + AdamW);
* the share of the step the GPU is busy: CUDA kernel time of one measured step (``torch.profiler``) / its
  wall time;
* peak GPU memory (``torch.cuda.max_memory_allocated``).

The chess side runs on ``--workers`` threads of the compiled core (``--model.selfplay.workers``). Without a
GPU it stops with one line (``--device cpu`` runs the same cells on the CPU, for a dry run of the script:
``--models random:tiny --games 16``). Writes ``reports/gpu/gpu_step.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from selfplay import run

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["base:maia-1900", "random:bt4"])
    ap.add_argument("--games", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=3, help="measured steps per cell (after --warmup)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--micro-batch", type=int, default=256)
    ap.add_argument("--precisions", nargs="+", default=["32-true", "bf16-mixed"])
    ap.add_argument("--workers", type=int, default=8, help="chess worker threads")
    ap.add_argument("--opening-max-moves", type=int, default=8, help="warm-up opening plies (not timed)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--out", default=str(ROOT / "reports" / "gpu" / "gpu_step"), help="report path stem ('' for none)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "benchmarks/gpu.py: no CUDA device here (torch.cuda.is_available() is False); "
            "--device cpu runs a dry run on the CPU",
            file=sys.stderr,
        )
        return 2
    accel = "gpu" if args.device == "cuda" else "cpu"
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    header = [
        "| model | precision | N | workers | s/step | transitions/s | step / network-bound | GPU busy "
        "| peak GPU memory GiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    print(f"device: {name}; torch {torch.__version__}\n" + "\n".join(header), flush=True)
    rows, cells = list(header), []
    t0 = time.perf_counter()
    for model in args.models:
        for precision in args.precisions:
            if args.device == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            r = run(
                model,
                args.games,
                args.steps,
                args.warmup,
                args.micro_batch,
                False,
                args.opening_max_moves,
                workers=args.workers,
                accelerator=accel,
                precision=precision,
                busy=True,
            )
            peak = torch.cuda.max_memory_allocated() / 2**30 if args.device == "cuda" else float("nan")
            busy = r["gpu_busy_share"]
            line = (
                f"| {model} | {precision} | {args.games} | {args.workers} | {r['step_s']:.3f} | "
                f"{r['transitions_per_s']:.0f} | {r['ratio']:.3f} | "
                f"{'—' if busy is None else f'{100 * busy:.0f}%'} | {peak:.1f} |"
            )
            rows.append(line)
            print(line, flush=True)
            cells.append(
                {k: v for k, v in r.items() if k not in ("rows", "profile")}
                | {"precision": precision, "peak_gib": peak}
            )
    rows += ["", f"device: {name}; torch {torch.__version__}; {time.perf_counter() - t0:.0f} s in all"]
    print(rows[-1])
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".md").write_text("# benchmarks/gpu.py\n\n" + "\n".join(rows) + "\n")
        out.with_suffix(".json").write_text(json.dumps({"device": name, "cells": cells}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
