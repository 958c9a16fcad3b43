"""The speed cost of holding the CPU kernels to AVX2 (``pdx --kernels avx2``, the default) against ``native``.

Fine-tunes Maia-1900 (``conf/fit/maia.yaml``: 128 games, one thread) for ``--steps`` steps under each
setting, the two interleaved, ``--repeats`` times each, and reads each optimizer step's seconds from the
run's ``metrics.csv`` (128 games / ``perf/transitions_per_s``: self-play, the three networks' passes and the
update, without start-up, the opening warm-up and callbacks); the first ``--skip`` steps of a run are left
out (caches, allocator). The table gives each setting's median seconds per step over all its kept steps,
the fastest tenth of them (the 10th percentile: the steps a shared machine's other jobs disturbed least),
the medians of its runs (min–max), the ratio of the pooled medians avx2 / native and the median of the
per-pair ratios (run r of avx2 over run r of native, the two started back to back: the load of a shared
machine drifts less within a pair); above 1: the hold costs time. On a CPU without AVX-512 the two
settings run the same kernels (ratio ~1). A second table times the network alone: Maia-1900's forward and
backward pass on 128 positions, the fastest of 15 after 3 warm-ups, in a fresh interpreter per setting
and repeat (the minimum is what the kernels cost, whatever the machine's load).

    .venv/bin/python benchmarks/kernels.py [--steps 30] [--repeats 2] [--md out.md]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ("native", "avx2")


def step_seconds(kernels: str, steps: int, skip: int, work: Path) -> list[float]:
    """One fit under ``kernels``; the seconds of its steps after the first ``skip``."""
    cmd = [
        sys.executable,
        "-m",
        "pdx_lightning.cli",
        "--threads",
        "1",
        "--kernels",
        kernels,
        "fit",
        "--config",
        str(ROOT / "conf" / "fit" / "maia.yaml"),
        "--trainer.max_steps",
        str(steps),
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--trainer.enable_checkpointing",
        "false",
        "--trainer.callbacks",
        "null",
        "--trainer.logger",
        "lightning.pytorch.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(work),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PDX_KERNELS"}
    proc = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"kernels.py: the {kernels} fit failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    (metrics,) = work.rglob("metrics.csv")
    with open(metrics, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("perf/transitions_per_s")]
    rows.sort(key=lambda r: int(r["step"]))
    return [128 / float(r["perf/transitions_per_s"]) for r in rows[skip:]]


NETWORK = """
import time, torch
from pdx_lightning.runtime.kernels import apply_kernels
apply_kernels({kernels!r})
torch.set_num_threads(1)
from pdx_lightning import load_model
net = load_model("base:maia-1900")
x = (torch.rand(128, 112, 8, 8, generator=torch.Generator().manual_seed(0)) < 0.1).float()
def once():
    out = net(x)
    (out.policy.square().mean() + out.wdl.square().mean()).backward()
for _ in range(3):
    once()
times = []
for _ in range(15):
    t = time.perf_counter()
    once()
    times.append(time.perf_counter() - t)
print(min(times))
"""


def network_seconds(kernels: str) -> float:
    """The fastest forward+backward pass of Maia-1900 on 128 positions under ``kernels``."""
    proc = subprocess.run(
        [sys.executable, "-c", NETWORK.format(kernels=kernels)],
        check=False,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PDX_KERNELS"},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"kernels.py: the {kernels} network timing failed:\n{proc.stderr[-2000:]}")
    return float(proc.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="steps per run (default 30)")
    parser.add_argument("--skip", type=int, default=5, help="first steps of each run left out (default 5)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting, interleaved (default 2)")
    parser.add_argument("--md", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if not 0 <= args.skip < args.steps:
        parser.error(f"--skip must be from 0 to --steps - 1 ({args.steps - 1}), got {args.skip}")
    per_step: dict[str, list[float]] = {s: [] for s in SETTINGS}
    runs: dict[str, list[float]] = {s: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory(prefix="pdx-kernels-") as tmp:
        for r in range(args.repeats):
            for s in SETTINGS:
                secs = step_seconds(s, args.steps, args.skip, Path(tmp) / f"{s}{r}")
                per_step[s] += secs
                runs[s].append(statistics.median(secs))
                print(f"{s} run {r + 1}: median {runs[s][-1]:.3f} s/step over {len(secs)} steps", flush=True)
    net: dict[str, list[float]] = {s: [] for s in SETTINGS}
    for _ in range(args.repeats):
        for s in SETTINGS:
            net[s].append(network_seconds(s))
    med = {s: statistics.median(per_step[s]) for s in SETTINGS}
    p10 = {s: statistics.quantiles(per_step[s], n=10)[0] for s in SETTINGS}
    pairs = [a / n for a, n in zip(runs["avx2"], runs["native"])]
    from pdx_lightning.runtime.kernels import cpu_model, cpu_offers  # noqa: PLC0415

    lines = [
        f"Maia-1900, 128 games, 1 thread, {args.steps} steps per run (first {args.skip} left out), "
        f"{args.repeats} runs per setting; CPU {cpu_model()} (offers {cpu_offers()}), load {os.getloadavg()[0]:.1f}",
        "",
        "| kernels | s/step (median) | s/step (fastest tenth) | run medians (min–max) |",
        "|---|---|---|---|",
        *(f"| {s} | {med[s]:.3f} | {p10[s]:.3f} | {min(runs[s]):.3f}–{max(runs[s]):.3f} |" for s in SETTINGS),
        "",
        f"avx2 / native: {p10['avx2'] / p10['native']:.3f} (fastest tenth of the steps, the least disturbed)",
        f"avx2 / native: {med['avx2'] / med['native']:.3f} (pooled medians); per pair: "
        + ", ".join(f"{r:.3f}" for r in pairs)
        + f" (median {statistics.median(pairs):.3f})",
        "",
        "| kernels | network forward+backward, 128 positions (fastest of each run, ms) |",
        "|---|---|",
        *(f"| {s} | {', '.join(f'{1e3 * t:.1f}' for t in net[s])} |" for s in SETTINGS),
        "",
        f"avx2 / native (network, fastest): {min(net['avx2']) / min(net['native']):.3f}",
    ]
    text = "\n".join(lines)
    print(text)
    if args.md:
        args.md.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
