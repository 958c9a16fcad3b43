"""Self-play step throughput, and the step's overhead over its network work alone.

    .venv/bin/python benchmarks/selfplay.py [--model base:small --model base:maia-1900] [--games 256 1024]
                                            [--steps 5] [--warmup 2] [--threads 1 [2]]

Runs ``PDXModule.training_step`` under a real Lightning Trainer (one step = one ply of N games: base(s),
ema(s), online(s) forward + backward, sampling and playing the moves, ema(s'), the loss, the optimizer
step) and, right after every step, the **reference**: the same network work alone, on the step's own
positions — every no-grad evaluation the step made, replayed with the same sizes and the same
micro-batching (``nets.inference.evaluate``: the forward, the masked log-softmax, the WDL softmax), and the
online network's forward + the real loss (``pdx_loss_from_log_probs``) + backward per micro-batch + an AdamW
step (on copies of the online network and its optimizer, so the run itself is untouched). What the step
does beyond that is chess (move generation, pushing moves, encoding, game ends), sampling and bookkeeping.

    ratio = step time / reference time          (target ≤ 1.10 at N = 1,024)

Trustworthy by construction: the first ``--warmup`` steps (the opening randomization, allocator and
oneDNN warm-up) and their references are excluded on both sides; step and reference alternate, so both
see the same machine; each step is paired with its own reference, and the table gives the median ratio
and its spread (min–max over the paired steps), by wall time and by CPU time (this process: user +
system). The EMA update (a callback after the step) is outside both.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
import warnings

import lightning as L
import torch

from lc0common import machine_note, write_report

TARGET = 1.10


class StepProbe:
    """Wraps the module's step and its dataset's evaluations and batches; the reference after each step."""

    def __init__(self, m, warmup: int) -> None:
        from pdx_lightning.rl.objectives import masked_log_softmax, pdx_loss_from_log_probs  # noqa: PLC0415
        from pdx_lightning.runtime.optim import layerwise_adamw  # noqa: PLC0415

        self.m, self.warmup = m, warmup
        self.masked_log_softmax, self.loss_fn = masked_log_softmax, pdx_loss_from_log_probs
        self.layerwise_adamw = layerwise_adamw
        self.rows: list[dict] = []
        self.calls: list[tuple[str, int]] = []
        self.batch = None
        self.ref_online = self.ref_opt = None
        ds = m.dataset
        real_eval, real_begin = ds._eval, ds._begin

        def counted_eval(name, x, mask):
            self.calls.append((name, x.shape[0]))
            return real_eval(name, x, mask)

        def kept_begin():
            self.batch = real_begin()
            return self.batch

        ds._eval, ds._begin = counted_eval, kept_begin

    def step(self, real_step, dataloader_iter):
        """The module's step, timed, then its reference."""
        self.calls, self.batch = [], None
        c, t = time.process_time(), time.perf_counter()
        out = real_step(dataloader_iter)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        calls, batch = self.calls, self.batch
        rwall, rcpu = self.reference(calls, batch)
        self.rows.append({"step_s": wall, "step_cpu_s": cpu, "ref_s": rwall, "ref_cpu_s": rcpu,
                          "n": batch.size, "no_grad_positions": sum(k for _, k in calls)})
        return out

    def reference(self, calls: list[tuple[str, int]], batch) -> tuple[float, float]:
        """The step's network work alone (module docstring); ``(wall s, CPU s)``."""
        from pdx_lightning.nets.inference import evaluate  # noqa: PLC0415

        m, mb = self.m, self.m.dataset.cfg.micro_batch
        if self.ref_online is None:
            self.ref_online = copy.deepcopy(m.online).train()
            self.ref_opt = self.layerwise_adamw(self.ref_online, m.hparams)["optimizer"]
        n = batch.size
        action = batch.mask.float().argmax(dim=1)                 # a legal move per row
        rho, adv = torch.ones(n), torch.full((n,), 0.1)
        target = torch.full((n, 3), 1 / 3)
        c, t = time.process_time(), time.perf_counter()
        for name, k in calls:                           # base(s), ema(s), ema(s'), as the step did
            evaluate(getattr(m.dataset.networks, name), batch.x[:k], batch.mask[:k], mb)
        self.ref_opt.zero_grad()
        for start in range(0, n, mb):
            sl = slice(start, min(n, start + mb))
            out = self.ref_online(batch.x[sl])
            log_p = self.masked_log_softmax(out.policy, batch.mask[sl])
            loss = self.loss_fn(log_p, out.wdl, batch.mask[sl], action[sl], rho[sl], adv[sl], target[sl],
                                batch.log_p_base[sl], kind=m.hparams.exploration, beta=m.beta,
                                c_v=m.hparams.c_v)
            (loss.total * ((sl.stop - sl.start) / n)).backward()
        self.ref_opt.step()
        return time.perf_counter() - t, time.process_time() - c


def run(model: str, games: int, steps: int, warmup: int, micro_batch: int, reuse: bool,
        opening_max_moves: int) -> dict:
    from pdx_lightning.rl.module import PDXModule  # noqa: PLC0415
    from pdx_lightning.rl.selfplay import SelfPlayConfig  # noqa: PLC0415

    sp = SelfPlayConfig(n_games=games, micro_batch=micro_batch, opening_max_moves=opening_max_moves,
                        reuse_successor_eval=reuse)
    class Probed(PDXModule):
        def training_step(self, dataloader_iter):     # Lightning reads this signature (dataloader_iter mode)
            return probe.step(super().training_step, dataloader_iter)

    m = Probed(base=model, selfplay=sp)
    probe = StepProbe(m, warmup)
    trainer = L.Trainer(max_steps=warmup + steps, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
    t = time.perf_counter()
    trainer.fit(m)
    rows = probe.rows[warmup:]
    ratio = [r["step_s"] / r["ref_s"] for r in rows]
    ratio_cpu = [r["step_cpu_s"] / r["ref_cpu_s"] for r in rows]
    med = statistics.median
    return {"model": model, "games": games, "threads": torch.get_num_threads(), "steps": len(rows),
            "warmup": warmup, "micro_batch": micro_batch, "rows": probe.rows,
            "total_s": time.perf_counter() - t,
            "step_s": med(r["step_s"] for r in rows), "ref_s": med(r["ref_s"] for r in rows),
            "transitions_per_s": games / med(r["step_s"] for r in rows),
            "passes_per_step": med(r["no_grad_positions"] / r["n"] for r in rows) + 1,
            "ratio": med(ratio), "ratio_min": min(ratio), "ratio_max": max(ratio),
            "ratio_cpu": med(ratio_cpu), "ratio_cpu_min": min(ratio_cpu), "ratio_cpu_max": max(ratio_cpu)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append",
                    help="base network(s) (default: base:small and base:maia-1900)")
    ap.add_argument("--games", type=int, nargs="+", default=[256, 1024], help="N, games in flight")
    ap.add_argument("--steps", type=int, default=5, help="measured steps (each paired with a reference)")
    ap.add_argument("--warmup", type=int, default=2, help="steps (and references) excluded first")
    ap.add_argument("--micro-batch", type=int, default=256)
    ap.add_argument("--threads", type=int, nargs="+", default=[1], help="torch threads (e.g. 1 2)")
    ap.add_argument("--opening-max-moves", type=int, default=20,
                    help="opening randomization before step 1 (warm-up only; 60, the default, takes longer)")
    ap.add_argument("--reuse-successor-eval", action="store_true")
    ap.add_argument("--report", default="selfplay", help="reports/maia/<name>.md|json ('' for none)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    models = args.model or ["base:small", "base:maia-1900"]
    before = machine_note()
    results = []
    lines = ["## Self-play step vs its network work alone (ratio target ≤ 1.10 at N = 1,024)", "",
             f"micro-batch {args.micro_batch}, {args.warmup} warm-up steps excluded, {args.steps} measured "
             f"steps each paired with its reference (interleaved); ratio = step / reference, median "
             f"(min–max).", "",
             "| model | N | threads | s/step | transitions/s | network passes/step | reference s "
             "| ratio (wall) | ratio (CPU) | target |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    print("\n".join(lines), flush=True)
    for model in models:
        for g in args.games:
            for th in args.threads:
                torch.set_num_threads(th)
                r = run(model, g, args.steps, args.warmup, args.micro_batch, args.reuse_successor_eval,
                        args.opening_max_moves)
                results.append(r)
                ok = "met" if r["ratio"] <= TARGET else "NOT met"
                line = (f"| {model} | {g} | {th} | {r['step_s']:.3f} | {r['transitions_per_s']:.0f} | "
                        f"{r['passes_per_step']:.2f} | {r['ref_s']:.3f} | {r['ratio']:.3f} "
                        f"({r['ratio_min']:.3f}–{r['ratio_max']:.3f}) | {r['ratio_cpu']:.3f} "
                        f"({r['ratio_cpu_min']:.3f}–{r['ratio_cpu_max']:.3f}) | {ok if g >= 1024 else '—'} |")
                lines.append(line)
                print(line, flush=True)
    after = machine_note()
    lines += ["", f"Machine before: {before}.", f"Machine after: {after}."]
    print("\n".join(lines[-3:]))
    if args.report:
        write_report(args.report, "\n".join(lines), {"results": results, "target": TARGET,
                                                     "machine_before": before, "machine_after": after,
                                                     "torch": torch.__version__})
    return 0


if __name__ == "__main__":
    sys.exit(main())
