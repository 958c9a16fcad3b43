"""Bit-level fingerprint of a few real ``pdx fit`` steps per arm: metrics, games, weights, RNG.

A refactor that claims to change no behaviour runs this before and after and compares the two JSON
files: every logged metric (exact float text), every game's moves, every tensor of the online, EMA
and frozen networks and of AdamW's state, and the self-play generators' states must be identical.

    .venv/bin/python tests/fingerprint_steps.py OUT.json [--steps 3] [--against RECORD.json ...]

Each arm is the tiny default fit (``tests/tiny_fit.py``: the random tiny network, 4 games) run for
``--steps`` steps in a fresh directory on one thread, under the kernel setting of the environment
(``$PDX_KERNELS``, default ``avx2``: ``runtime/kernels.py``). Bit-identity holds for one torch build,
thread count, kernel setting and CPU vendor (held to AVX2: any x86-64 CPU with AVX2 of one vendor;
``native``: one kind of CPU); the JSON records the torch version, the platform, the kernel setting, the
CPU's vendor and the widest ISA it offers.

``--mkl-cbwr BRANCH`` (a measurement, never a vendor's record) runs the arms under the hold with MKL's
conditional-numerical-reproducibility branch set to ``BRANCH`` instead of the hold's ``AVX2`` (e.g.
``COMPATIBLE``, to see whether that branch gives one CPU vendor the other's numbers); ``pdx`` itself has no
such switch (the hold always sets ``MKL_CBWR=AVX2``), so the fit runs through a small wrapper that
changes the hold's table before ``pdx`` applies it. The JSON then names the branch (``mkl_cbwr``).
``--against`` prints, per arm, how many of the networks' tensors equal those of each record named (and
whether the games, generators and AdamW state do), the count docs/reliability.md gives.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
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
from tiny_fit import CONF, tiny_fit_args

ARMS: dict[str, list[str]] = {
    "none": ["--model.algorithm.exploration", "none"],
    "entropy": ["--model.algorithm.exploration", "entropy"],
    "forward_kl": ["--model.algorithm.exploration", "forward_kl"],
    "reverse_kl": ["--model.algorithm.exploration", "reverse_kl"],
    "forward_kl-fixed": ["--model.algorithm.exploration", "forward_kl", "--model.algorithm.temperature", "fixed"],
    "forward_kl-reference": [
        "--model.algorithm.exploration",
        "forward_kl",
        "--model.algorithm.value_anchor",
        "0.5",
        "--model.algorithm.temperature_wdl_source",
        "online",
    ],
}


def _digest(obj: object) -> str:
    """sha256 of a tensor's bytes, or of a canonical rendering of anything else."""
    h = hashlib.sha256()
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous().reshape(-1)
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    else:
        h.update(repr(obj).encode())
    return h.hexdigest()[:16]


def _metric(name: str, value: str) -> str:
    """A logged value as compared: exact text, except the puzzle callback's scores, which vary in their
    ~10th significant digit between two runs of the same code (float summation order in the scorer), so
    they are compared to 8 significant digits. Timings (``perf/``, ``time/``) are left out."""
    if name.startswith(("puzzles/", "mates/")):
        return f"{float(value):.8g}"
    return value


def _optimizer_digest(states: list[dict]) -> str:
    h = hashlib.sha256()
    for opt in states:
        for key in sorted(opt["state"]):
            for name, value in sorted(opt["state"][key].items()):
                h.update(f"{key}{name}{_digest(value)}".encode())
        h.update(repr([{k: v for k, v in g.items() if k != "params"} for g in opt["param_groups"]]).encode())
    return h.hexdigest()[:16]


# ``pdx`` with the hold's MKL branch replaced (argv[1]) before it is applied: for --mkl-cbwr only
_CBWR_WRAPPER = (
    "import sys; from pdx_lightning.runtime import kernels; kernels.HOLD['MKL_CBWR'] = sys.argv[1]; "
    "from pdx_lightning.cli import main; sys.exit(main(sys.argv[2:]))"
)


def pdx_command(mkl_cbwr: str | None = None) -> list[str]:
    """The command that runs ``pdx`` in a fresh interpreter: as is, or (``mkl_cbwr``) under the hold with
    ``MKL_CBWR`` set to that branch instead of ``AVX2`` (a measurement: ``pdx`` has no such flag)."""
    if mkl_cbwr is None:
        return [sys.executable, "-m", "pdx_lightning.cli"]
    return [sys.executable, "-c", _CBWR_WRAPPER, mkl_cbwr]


def fingerprint_arm(flags: list[str], steps: int, work: Path, mkl_cbwr: str | None = None) -> dict:
    """Run the tiny fit with ``flags`` for ``steps`` steps in ``work``; fingerprint what it left."""
    cmd = [
        *pdx_command(mkl_cbwr),
        "fit",
        "--config",
        CONF,
        *tiny_fit_args(steps),
        *flags,
        "--trainer.logger",
        "lightning.pytorch.loggers.CSVLogger",
        "--trainer.logger.save_dir",
        str(work),
        "--trainer.logger.name",
        "fp",
        "--trainer.default_root_dir",
        str(work),
    ]
    env = {**os.environ, "PDX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pdx fit failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    ckpt_path = next(work.rglob("last.ckpt"))
    ckpt = read_checkpoint(ckpt_path)  # weights_only=True, as pdx reads every checkpoint
    weights = {name: _digest(t) for name, t in sorted(ckpt["state_dict"].items())}
    selfplay = ckpt["pdx_selfplay"]
    games = [{"roots": s["roots"], "moves": s["moves"], "stats": s["stats"]} for s in selfplay]
    rng = [{"torch": _digest(s["torch_rng"]), "python": _digest(s["py_rng"])} for s in selfplay]
    with open(next(work.rglob("metrics.csv")), newline="") as f:
        rows = [
            {k: _metric(k, v) for k, v in row.items() if v != "" and not k.startswith(("time/", "perf/"))}
            for row in csv.DictReader(f)
        ]
    return {
        "global_step": ckpt["global_step"],
        "metrics": rows,
        "games": games,
        "rng": rng,
        "weights": weights,
        "weights_all": _digest("".join(weights.values())),
        "optimizer": _optimizer_digest(ckpt["optimizer_states"]),
    }


def recorded_kernels() -> str:
    """The kernel setting the arms' ``pdx fit`` run under (``$PDX_KERNELS``; ``native`` where the hold
    cannot apply)."""
    setting = kernels.kernels_setting(os.environ.get(kernels.ENV))
    return setting if kernels.can_hold() else "native"


def equal_counts(new: dict, record: dict) -> list[str]:
    """Per arm of ``record``: how many of its tensors ``new`` has equal, and whether its games, generators and
    optimizer state are equal; then the total."""
    lines, equal, total = [], 0, 0
    for arm, fp in record["arms"].items():
        mine = new["arms"].get(arm)
        if mine is None:
            continue
        n = sum(mine["weights"].get(k) == v for k, v in fp["weights"].items())
        equal, total = equal + n, total + len(fp["weights"])
        same = [part for part in ("games", "rng", "optimizer") if mine[part] == fp[part]]
        lines.append(f"{arm}: {n} of {len(fp['weights'])} tensors equal; equal: {', '.join(same) or 'nothing else'}")
    return [*lines, f"{equal} of {total} tensors equal"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="where the fingerprint JSON goes")
    parser.add_argument("--steps", type=int, default=3, help="steps per arm (default 3)")
    parser.add_argument("--arms", nargs="*", default=list(ARMS), choices=list(ARMS), help="arms (default all)")
    parser.add_argument(
        "--mkl-cbwr",
        metavar="BRANCH",
        help="a measurement: the hold with MKL_CBWR=BRANCH instead of AVX2 (e.g. COMPATIBLE); not a record",
    )
    parser.add_argument("--against", nargs="*", type=Path, default=[], help="records to count equal tensors with")
    args = parser.parse_args(argv)
    if args.mkl_cbwr is not None and recorded_kernels() != "avx2":
        parser.error("--mkl-cbwr changes the hold's MKL branch: it needs the hold (PDX_KERNELS unset or avx2)")
    result = {
        "torch": torch.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "kernels": recorded_kernels(),
        "cpu_vendor": kernels.cpu_vendor(),
        "cpu_offers": kernels.cpu_offers(),
        "steps": args.steps,
        "arms": {},
    }
    if args.mkl_cbwr is not None:
        result["mkl_cbwr"] = args.mkl_cbwr
    for arm in args.arms:
        with tempfile.TemporaryDirectory() as tmp:
            result["arms"][arm] = fingerprint_arm(ARMS[arm], args.steps, Path(tmp), args.mkl_cbwr)
        print(f"{arm}: weights {result['arms'][arm]['weights_all']}", flush=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    for path in args.against:
        print(f"against {path}:", *equal_counts(result, json.loads(path.read_text())), sep="\n  ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
