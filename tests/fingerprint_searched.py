"""Bit-level fingerprint of a few real searched self-play steps (``pdx fit --module searched``).

The searched trainer's counterpart of ``tests/fingerprint_steps.py``: three steps of a tiny searched fit
(the random tiny network, 4 games at 4 nodes, batches of 16 in two micro-batches of 8, the forward KL to
the base at β 0.1 and gradient clipping on, so every part of the step runs), on one thread under the
kernel setting of the environment; every logged metric (exact text; timings and rates per second left
out), every tensor of the checkpoint and AdamW's state. A refactor that claims to change no behaviour
compares the two JSON files (``tests/test_step_fingerprint.py`` compares with the record of this CPU's
vendor).

    .venv/bin/python tests/fingerprint_searched.py OUT.json [--steps 3]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from pdx_lightning.runtime import kernels
from pdx_lightning.runtime.checkpoint_read import read_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fingerprint_steps import _digest, _metric, _optimizer_digest, recorded_kernels

CONF = str(Path(__file__).resolve().parents[1] / "conf" / "fit" / "searched.yaml")
FLAGS = [
    "--model.base", "random:tiny", "--model.algorithm.n_games", "4", "--model.algorithm.nodes", "4",
    "--model.algorithm.batch_size", "16", "--model.algorithm.min_buffer", "32", "--model.algorithm.max_plies", "30",
    "--model.algorithm.micro_batch", "8", "--model.algorithm.beta", "0.1", "--model.algorithm.grad_clip_norm", "0.5",
    "--model.warmup_steps", "1", "--seed_everything", "3",
    "--trainer.callbacks", "null", "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
]  # fmt: skip


def fingerprint(steps: int, work: Path) -> dict:
    cmd = [
        sys.executable, "-m", "pdx_lightning.cli", "fit", "--config", CONF, *FLAGS, "--trainer.max_steps", str(steps),
        "--trainer.logger", "lightning.pytorch.loggers.CSVLogger", "--trainer.logger.save_dir", str(work),
        "--trainer.logger.name", "fp", "--trainer.default_root_dir", str(work),
    ]  # fmt: skip
    env = {**os.environ, "PDX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pdx fit failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    ckpt = read_checkpoint(next(work.rglob("*.ckpt")))
    weights = {name: _digest(t) for name, t in sorted(ckpt["state_dict"].items())}
    with open(next(work.rglob("metrics.csv")), newline="") as f:
        rows = [
            {
                k: _metric(k, v)
                for k, v in row.items()
                if v != "" and not k.startswith(("time/", "perf/")) and not k.endswith("_per_s")
            }
            for row in csv.DictReader(f)
        ]
    return {
        "global_step": ckpt["global_step"],
        "metrics": rows,
        "weights": weights,
        "weights_all": _digest("".join(weights.values())),
        "optimizer": _optimizer_digest(ckpt["optimizer_states"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="where the fingerprint JSON goes")
    parser.add_argument("--steps", type=int, default=3, help="steps (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fp = fingerprint(args.steps, Path(tmp))
    result = {
        "torch": torch.__version__,
        "kernels": recorded_kernels(),
        "cpu_vendor": kernels.cpu_vendor(),
        "cpu_offers": kernels.cpu_offers(),
        "steps": args.steps,
        "searched": fp,
    }
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"searched: weights {fp['weights_all']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
