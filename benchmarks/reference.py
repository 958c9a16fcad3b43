"""pdx against the paper authors' own code (../shared/reference), step for step on one network, one thread each.

    PDX_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reference.py [--games 128 1024] [--steps 3]

Both train the same 15-encoder attention-body network (pdx's ``small`` widths made Lc0-expressible,
~2.0M parameters, written here as an Lc0 ``.pb.gz`` and converted for the reference by its own
``scripts/prepare_network.py`` with the v0.33 ``lc0``), with Table 2's settings and the reference's
switches on both sides: τ from the online network's WDL, the base-WDL anchor w = 0.1, draws claimed,
capped games bootstrapped, gradient micro-batch 32 (the reference's no-gradient passes take 512
positions, its default), the warm-start at up to 60 full moves, seed 0.

pdx runs in this process under a real Lightning Trainer (``PDXModule.training_step``); the reference runs
in its own virtualenv (``.venv-ref``, setup.sh) as benchmarks/reference_worker.py, one step per request.
They alternate: pdx step k, then reference step k, so both see the same machine; only one computes at a
time. The first step of each (the warm-start, then allocator and oneDNN warm-up) is excluded; s/step is
the median of the ``--steps`` measured steps (min–max beside it), the ratio is reference / pdx of the
medians, with the range of the step-by-step ratios. The warm-start (the games' random openings before
step 1) is timed on its own on both sides. Wall and CPU time (this process: user + system) are both
recorded: the warm-starts run one after the other, not interleaved, so on a shared machine their
CPU-time ratio is the one to trust. One more step of each then runs under cProfile: its top
functions by cumulative time are printed (that step is not timed).

Needs ../shared/reference (the authors' code), ``.venv-ref`` and ``.venv-lc0-033`` (setup.sh makes both
from ../shared); says which is missing otherwise.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import lightning as L
import torch

from lc0common import BenchmarkError, machine_note

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "prior-directed-exploration"
REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"
LC0_033 = ROOT / ".venv-lc0-033" / "bin" / "lc0"
TARGET = 2.0


def check_tools() -> None:
    for path, what in (
        (REFERENCE / "src" / "train.py", "the authors' code (../shared/reference)"),
        (REF_PYTHON, "the reference's virtualenv .venv-ref (setup.sh makes it when ../shared/reference exists)"),
        (LC0_033, "the v0.33 lc0 in .venv-lc0-033 (setup.sh makes it from ../shared/lc0)"),
    ):
        if not path.exists():
            raise BenchmarkError(f"{path} is missing: {what}")


def build_network(folder: Path, seed: int = 3, noise: float = 0.05) -> tuple[Path, Path]:
    """A random 15-encoder network on pdx's ``small`` widths as an Lc0 file, and the reference's ONNX of it."""
    from pdx_lightning.nets import lc0  # noqa: PLC0415
    from pdx_lightning.nets.chessformer import Chessformer, ModelConfig  # noqa: PLC0415

    torch.manual_seed(seed)
    model = Chessformer(lc0.lc0_style(ModelConfig.from_name("small", n_layers=15, moves_left_dim=8)))
    with torch.no_grad():
        for p in model.parameters():  # away from the initialisation: a policy and WDL far from uniform
            p.add_(torch.randn_like(p) * noise)
    pb = lc0.export_lc0(model.eval(), folder / "bt15.pb.gz", encoding="float32")
    subprocess.run(
        [
            str(REF_PYTHON),
            str(REFERENCE / "scripts" / "prepare_network.py"),
            "--input",
            str(pb),
            "--lc0-bin",
            str(LC0_033),
            "--output-dir",
            str(folder),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(pb), folder / "bt15_with_embedding.onnx"


class Reference:
    """The authors' training loop in its own process (benchmarks/reference_worker.py), one request at a time."""

    def __init__(self, onnx: Path, games: int, micro_batch: int, seed: int) -> None:
        train_args = (
            f"--num-games {games} --minibatch-size {micro_batch} --seed {seed} --device cpu "
            "--regularizer forward_kl --beta 0.01 --sample-with-wdl-entropy-temperature "
            "--sampling-temperature-wdl-source online --base-wdl-kl-weight 0.1 --warmstart-max-full-moves 60"
        )
        self.proc = subprocess.Popen(
            [
                str(REF_PYTHON),
                str(Path(__file__).with_name("reference_worker.py")),
                "--src",
                str(REFERENCE / "src"),
                "--onnx",
                str(onnx),
                "--train-args",
                train_args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.ready = self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise BenchmarkError(f"the reference worker exited (code {self.proc.wait()})")
        return json.loads(line)

    def ask(self, cmd: str) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.ask_quit()

    def ask_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


def top_cumulative(prof: cProfile.Profile, n: int = 12) -> str:
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(n)
    return buf.getvalue()


def run(pb: Path, onnx: Path, games: int, steps: int, micro_batch: int, seed: int) -> dict:
    """One size: the warm-starts, then ``1 + steps`` alternating steps, then one profiled step each."""
    from pdx_lightning.rl.module import PDXModule  # noqa: PLC0415
    from pdx_lightning.rl.selfplay import SelfPlayConfig  # noqa: PLC0415
    from pdx_lightning.rl.settings import PDXSettings  # noqa: PLC0415

    ref = Reference(onnx, games, micro_batch, seed)
    rows: list[dict] = []
    out: dict = {"games": games, "reference_threads": ref.ready["threads"], "pdx_threads": torch.get_num_threads()}
    total = 1 + steps + 1  # warm-up step, measured steps, profiled step
    warm = {"s": 0.0, "cpu": 0.0}

    class Alternating(PDXModule):
        def training_step(self, dataloader_iter):  # Lightning reads this signature (dataloader_iter mode)
            k = self.global_step
            prof = cProfile.Profile() if k == total - 1 else None
            t, c = time.perf_counter(), time.process_time()
            if prof is not None:
                prof.enable()
            result = super().training_step(dataloader_iter)
            if prof is not None:
                prof.disable()
                out["pdx_profile"] = top_cumulative(prof)
                out["reference_profile"] = ref.ask("profile")["profile"]
                return result
            pdx_s, pdx_cpu = time.perf_counter() - t, time.process_time() - c
            if k == 0:  # pdx's first step began with its warm-start: the reference's now, then its step 1
                w = ref.ask("warmstart")
                out.update(
                    pdx_warmstart_s=warm["s"],
                    pdx_warmstart_cpu_s=warm["cpu"],
                    reference_warmstart_s=w["seconds"],
                    reference_warmstart_cpu_s=w["cpu_s"],
                )
                print(
                    f"  N={games} warm-start: pdx {warm['s']:.1f} s ({warm['cpu']:.1f} CPU s), "
                    f"reference {w['seconds']:.1f} s ({w['cpu_s']:.1f} CPU s)",
                    flush=True,
                )
                pdx_s, pdx_cpu = pdx_s - warm["s"], pdx_cpu - warm["cpu"]
            r = ref.ask("step")
            rows.append(
                {
                    "pdx_s": pdx_s,
                    "pdx_cpu_s": pdx_cpu,
                    "reference_s": r["seconds"],
                    "reference_cpu_s": r["cpu_s"],
                    "reference_metrics": r["metrics"],
                }
            )
            print(
                f"  N={games} step {k + 1}: pdx {pdx_s:.2f} s ({pdx_cpu:.2f} CPU s), "
                f"reference {r['seconds']:.2f} s ({r['cpu_s']:.2f} CPU s)",
                flush=True,
            )
            return result

    m = Alternating(
        base=str(pb),
        algorithm=PDXSettings(
            value_anchor=0.1,
            temperature="adaptive",
            temperature_wdl_source="online",
            cap_result="bootstrap",
            micro_batch=micro_batch,
        ),
        selfplay=SelfPlayConfig(n_games=games, seed=seed, claim_draws=True, opening_max_moves=60),
    )
    openings = m.dataset._randomize  # the warm-start before step 1 (it passes a progress-bar title)

    def timed_openings(games_, full_moves, desc=None):
        t, c = time.perf_counter(), time.process_time()
        try:
            return openings(games_, full_moves, desc)
        finally:
            if desc is not None:
                warm["s"] += time.perf_counter() - t
                warm["cpu"] += time.process_time() - c

    m.dataset._randomize = timed_openings
    trainer = L.Trainer(
        max_steps=total,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    try:
        trainer.fit(m)
    finally:
        ref.close()
    measured = rows[1:]
    pdx = [r["pdx_s"] for r in measured]
    refs = [r["reference_s"] for r in measured]
    ratios = [r["reference_s"] / r["pdx_s"] for r in measured]
    med = statistics.median
    out.update(
        rows=rows,
        pdx_s=statistics.median(pdx),
        pdx_range=(min(pdx), max(pdx)),
        reference_s=statistics.median(refs),
        reference_range=(min(refs), max(refs)),
        ratio=statistics.median(refs) / statistics.median(pdx),
        ratio_range=(min(ratios), max(ratios)),
        warmstart_ratio=out["reference_warmstart_s"] / out["pdx_warmstart_s"],
        ratio_cpu=med(r["reference_cpu_s"] for r in measured) / med(r["pdx_cpu_s"] for r in measured),
        warmstart_ratio_cpu=out["reference_warmstart_cpu_s"] / out["pdx_warmstart_cpu_s"],
    )
    return out


def table_row(r: dict) -> str:
    ok = "met" if r["ratio"] >= TARGET and r["warmstart_ratio_cpu"] >= TARGET else "NOT met"
    return (
        f"| {r['games']:,} | {r['pdx_s']:.2f} ({r['pdx_range'][0]:.2f}–{r['pdx_range'][1]:.2f}) | "
        f"{r['reference_s']:.2f} ({r['reference_range'][0]:.2f}–{r['reference_range'][1]:.2f}) | "
        f"{r['ratio']:.2f}× ({r['ratio_range'][0]:.2f}–{r['ratio_range'][1]:.2f}) | "
        f"{r['pdx_warmstart_s']:.1f} | {r['reference_warmstart_s']:.1f} | {r['warmstart_ratio']:.2f}× | "
        f"{r['ratio_cpu']:.2f}×, {r['warmstart_ratio_cpu']:.2f}× | {ok} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, nargs="+", default=[128, 1024], help="N, games in flight")
    ap.add_argument("--steps", type=int, default=3, help="measured steps per side (after one warm-up step)")
    ap.add_argument("--micro-batch", type=int, default=32, help="gradient micro-batch, both sides")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the results (steps, metrics, profiles) here")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    check_tools()
    before = machine_note()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        pb, onnx = build_network(Path(tmp))
        for g in args.games:
            results.append(run(pb, onnx, g, args.steps, args.micro_batch, args.seed))
            print(table_row(results[-1]), flush=True)  # each size as it finishes: 1,024 games take long
            if args.json:
                Path(args.json).write_text(json.dumps({"results": results, "before": before}, indent=1))
    after = machine_note()
    lines = [
        f"## pdx against the authors' code: s/step and warm-start, one thread each (target ≥ {TARGET:g}×)",
        "",
        f"bt15-small (15 encoders, ~2.0M parameters); micro-batch {args.micro_batch}; 1 warm-up step excluded, "
        f"{args.steps} measured steps per side, alternating; s/step median (min–max); ratio = reference / pdx.",
        "",
        "| N | pdx s/step | reference s/step | ratio (step-by-step range) | pdx warm-start s "
        "| reference warm-start s | ratio | ratios by CPU time (step, warm-start) | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    lines += [table_row(r) for r in results]
    lines += ["", f"Machine before: {before}.", f"Machine after: {after}."]
    for r in results:
        lines += [
            "",
            f"### cProfile, one step at N = {r['games']:,}, top by cumulative time",
            "",
            "pdx:",
            "```",
            r["pdx_profile"].strip(),
            "```",
            "reference:",
            "```",
            r["reference_profile"].strip(),
            "```",
        ]
    print("\n".join(lines), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "before": before, "after": after}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
