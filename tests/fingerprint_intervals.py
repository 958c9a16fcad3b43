"""Bit-level fingerprint of a longer ``pdx fit``, checked at intervals: the weights every ``--every`` steps.

The three-step fingerprint (``fingerprint_steps.py``) cannot see a change that moves a run only later (a
game that ends, a restart, the warm-up's end, a β schedule). This one runs the tiny default fit (the
forward-KL arm, ``tests/tiny_fit.py``: the random tiny network, 4 games, one thread) for ``--steps``
steps and records every logged metric of every step (exact text) and a digest of the online, EMA and
frozen networks' weights at steps ``every``, ``2·every``, ...; the first step where two records part
says where a change began. Bit-identity holds for one torch build and kernel setting (``$PDX_KERNELS``,
default ``avx2``); the JSON records both.

    .venv/bin/python tests/fingerprint_intervals.py OUT.json [--steps 30] [--every 10] [--mkl-cbwr BRANCH]

``--mkl-cbwr`` is the measurement of ``fingerprint_steps.py``'s: the hold with another MKL branch.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from pdx_lightning.runtime import kernels
from pdx_lightning.runtime.checkpoint_read import read_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fingerprint_steps import _digest, pdx_command, recorded_kernels
from tiny_fit import CONF, tiny_fit_args


def fingerprint(steps: int, every: int, work: Path, mkl_cbwr: str | None = None) -> dict:
    """Run the tiny forward-KL fit for ``steps`` steps in ``work``; its metrics and weights at intervals."""
    cmd = [
        *pdx_command(mkl_cbwr),
        "fit",
        "--config",
        CONF,
        *tiny_fit_args(steps, max_plies=20),
        "--model.algorithm.exploration",
        "forward_kl",
        "--trainer.logger",
        "lightning.pytorch.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(work),
        "--trainer.logger.name",
        "fp",
        "--trainer.callbacks",
        "null",
        "--trainer.callbacks+=lightning.pytorch.callbacks.ModelCheckpoint",
        "--trainer.callbacks.dirpath",
        str(work / "ckpt"),
        "--trainer.callbacks.filename",
        "{step}",
        "--trainer.callbacks.every_n_train_steps",
        str(every),
        "--trainer.callbacks.save_top_k",
        "-1",
        "--trainer.default_root_dir",
        str(work),
    ]
    env = {**os.environ, "PDX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pdx fit failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    weights = {}
    for s in range(every, steps + 1, every):
        sd = read_checkpoint(work / "ckpt" / f"step={s}.ckpt")["state_dict"]
        weights[str(s)] = _digest("".join(_digest(t) for _, t in sorted(sd.items())))
    with open(next(work.rglob("metrics.csv")), newline="") as f:
        rows = [
            {k: v for k, v in row.items() if v != "" and not k.startswith(("time/", "perf/"))}
            for row in csv.DictReader(f)
        ]
    return {"metrics": rows, "weights": weights}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="where the fingerprint JSON goes")
    parser.add_argument("--steps", type=int, default=30, help="steps (default 30)")
    parser.add_argument("--every", type=int, default=10, help="weights every this many steps (default 10)")
    parser.add_argument("--mkl-cbwr", metavar="BRANCH", help="a measurement: the hold with MKL_CBWR=BRANCH")
    args = parser.parse_args(argv)
    if args.mkl_cbwr is not None and recorded_kernels() != "avx2":
        parser.error("--mkl-cbwr changes the hold's MKL branch: it needs the hold (PDX_KERNELS unset or avx2)")
    with tempfile.TemporaryDirectory() as tmp:
        fp = fingerprint(args.steps, args.every, Path(tmp), args.mkl_cbwr)
    result = {
        "torch": torch.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "kernels": recorded_kernels(),
        "cpu_vendor": kernels.cpu_vendor(),
        "cpu_offers": kernels.cpu_offers(),
        "steps": args.steps,
        "every": args.every,
        **({"mkl_cbwr": args.mkl_cbwr} if args.mkl_cbwr is not None else {}),
        **fp,
    }
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(f"weights at steps {', '.join(fp['weights'])}: {', '.join(fp['weights'].values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
