"""Self-play step throughput, and the step's overhead over its network work alone.

    .venv/bin/python benchmarks/selfplay.py [--model base:small --model base:maia-1900] [--games 256 1024]
                                            [--steps 5] [--warmup 2] [--threads 1 [2]]

Runs ``PDXModule.training_step`` under a real Lightning Trainer (one step = one ply of N games: base(s),
ema(s), online(s) forward + backward, sampling and playing the moves, ema(s'), the loss, the optimizer
step) and, right after every step, the **reference**: the same network work alone, on the step's own
positions — every no-grad evaluation the step made, replayed with the same sizes and the same
micro-batching (``nets.inference.evaluate``: the forward, the masked log-softmax, the WDL softmax), and the
online network's forward + the real loss (``pdx_loss``) + backward per micro-batch + an AdamW
step (on copies of the online network and its optimizer, so the run itself is untouched). What the step
does beyond that is chess (move generation, pushing moves, encoding, game ends), sampling and bookkeeping.

    ratio = step time / reference time          (target ≤ 1.10 at N = 1,024)

``--chess-side`` (issue 28's measurement; defaults: Maia-1900, N = 256, 1,024, 4,096, one thread) adds the
chess side's cost per game-ply: the step's CPU time minus the CPU time of the step's own network work
(the base/EMA passes, the online forward, the log-softmax, the loss, backward, the AdamW step, each timed
inside the step), divided by N (core-µs: this
process's user + system time, one thread), and where it goes: each part is timed exclusively (a nested
timed call is charged to itself, not to its caller) by wrapping the dataset's own methods on the
instance — the positions of a batch (``_positions``: planes, legal masks and sorted legal indices, and
their copy to the device), playing the chosen moves (``play``: pushing, the next legal moves, game ends),
the successor pass's bookkeeping (``successor_wdl`` less its EMA pass), restarts (``_finish``) and
sampling (``sample``: μ over the legal moves, a, log π(a), log μ(a)); "other" is the rest (the micro-batch
glue, the step's finiteness checks and logged KLs, Lightning's loop). The older estimate, step CPU minus
the replayed reference's CPU, is printed beside it: at a few µs per game-ply it is inside the replay's
step-to-step noise. ``--backend`` and ``--workers`` pick
the chess engine and its threads (``--model.selfplay.*``). ``--profile`` prints cProfile's top functions
of one measured step.
It ends with the line ``chess side N=1024: <X> core-us/game-ply; step/network <R>``.

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
CHESS_PARTS = (
    "positions (_positions: planes, masks, legal indices → device)",
    "play (play: moves, next legal moves, game ends)",
    "successor bookkeeping (successor_wdl)",
    "restarts (_finish)",
    "sampling (sample: μ, a, ρ)",
)
NETWORK = "network (in the step)"  # timed too, to be subtracted: the chess side is the step's CPU less it


class ExclusiveTimers:
    """CPU seconds per part, exclusive: time spent in a nested timed call is charged to that call only."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys((*CHESS_PARTS, NETWORK), 0.0)
        self._stack: list[list] = []  # [part, start, nested seconds]
        self.on = False

    def wrap(self, part: str, fn):
        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            self._stack.append([part, time.process_time(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                name, start, nested = self._stack.pop()
                spent = time.process_time() - start
                self.seconds[name] += spent - nested
                if self._stack:
                    self._stack[-1][2] += spent

        return timed

    def take(self) -> dict:
        out, self.seconds = self.seconds, dict.fromkeys((*CHESS_PARTS, NETWORK), 0.0)
        return out


def instrument_chess_side(m, timers: ExclusiveTimers):
    """Time the dataset's chess work and its sampling, and the step's network work (module docstring);
    returns the function that puts the step module's own functions back (the instance wrappers die with
    the module)."""
    import pdx_lightning.rl.pdx_step as step_module  # noqa: PLC0415

    ds = m.dataset
    for attr, part in zip(("_positions", "play", "successor_wdl", "_finish"), CHESS_PARTS):
        setattr(ds, attr, timers.wrap(part, getattr(ds, attr)))
    # the network work inside the step: the base/EMA passes, the online forward, the log-softmax, the
    # loss, backward and the AdamW step
    ds._eval = timers.wrap(NETWORK, ds._eval)
    m.online.forward = timers.wrap(NETWORK, m.online.forward)
    m.manual_backward = timers.wrap(NETWORK, m.manual_backward)
    parts = {"masked_log_softmax": NETWORK, "pdx_loss": NETWORK, "sample_action": CHESS_PARTS[4]}
    saved = {a: getattr(step_module, a) for a in parts}
    for attr, fn in saved.items():
        setattr(step_module, attr, timers.wrap(parts[attr], fn))
    configure = m.configure_optimizers

    def configured():
        out = configure()
        opt = out["optimizer"] if isinstance(out, dict) else out
        opt.step = timers.wrap(NETWORK, opt.step)
        return out

    m.configure_optimizers = configured
    return lambda: [setattr(step_module, a, fn) for a, fn in saved.items()]


def _sync() -> None:
    """Wait for queued CUDA work, so wall times cover it (no-op without a GPU)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


class StepProbe:
    """Wraps the module's step and its dataset's evaluations and batches; the reference after each step."""

    def __init__(self, m, warmup: int, chess_side: bool = False, profile: bool = False, busy: bool = False) -> None:
        from pdx_lightning.chesscore.policy import masked_log_softmax  # noqa: PLC0415
        from pdx_lightning.rl.objectives import pdx_loss  # noqa: PLC0415
        from pdx_lightning.runtime.optim import layerwise_adamw  # noqa: PLC0415

        self.m, self.warmup = m, warmup
        self.masked_log_softmax, self.loss_fn = masked_log_softmax, pdx_loss
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
        self.timers = ExclusiveTimers() if chess_side else None
        self.restore = instrument_chess_side(m, self.timers) if self.timers is not None else (lambda: None)
        self.profile = profile
        self.profile_text = ""
        self.busy = busy  # CUDA: the device's kernel time in one measured step (torch.profiler)
        self.busy_s: float | None = None

    def step(self, real_step, dataloader_iter):
        """The module's step, timed, then its reference."""
        self.calls, self.batch = [], None
        profiler = None
        if self.profile and len(self.rows) == self.warmup:  # the first measured step
            import cProfile  # noqa: PLC0415

            profiler = cProfile.Profile()
            profiler.enable()
        kernels = None
        if self.busy and len(self.rows) == self.warmup and torch.cuda.is_available():
            kernels = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            kernels.__enter__()
        if self.timers is not None:
            self.timers.on = True
        _sync()
        c, t = time.process_time(), time.perf_counter()
        out = real_step(dataloader_iter)
        _sync()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if kernels is not None:
            kernels.__exit__(None, None, None)
            self.busy_s = sum(e.device_time_total for e in kernels.key_averages()) / 1e6
            self.busy_wall_s = wall
        parts = {}
        if self.timers is not None:
            self.timers.on = False
            parts = self.timers.take()
        if profiler is not None:
            import io  # noqa: PLC0415
            import pstats  # noqa: PLC0415

            profiler.disable()
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(20)
            self.profile_text = buf.getvalue()
        calls, batch = self.calls, self.batch
        rwall, rcpu = self.reference(calls, batch)
        self.rows.append(
            {
                "step_s": wall,
                "step_cpu_s": cpu,
                "ref_s": rwall,
                "ref_cpu_s": rcpu,
                "n": batch.size,
                "no_grad_positions": sum(k for _, k in calls),
                "parts": parts,
            }
        )
        return out

    def reference(self, calls: list[tuple[str, int]], batch) -> tuple[float, float]:
        """The step's network work alone (module docstring); ``(wall s, CPU s)``."""
        from pdx_lightning.nets.inference import evaluate  # noqa: PLC0415

        m, mb = self.m, self.m.algorithm.micro_batch
        if self.ref_online is None:
            self.ref_online = copy.deepcopy(m.online).train()
            self.ref_online.__dict__.pop("forward", None)  # not --chess-side's timing wrapper of m.online
            self.ref_opt = self.layerwise_adamw(self.ref_online, m.hparams)["optimizer"]
        n = batch.size
        action = batch.mask.float().argmax(dim=1)  # a legal move per row
        dev = batch.x.device
        rho, adv = torch.ones(n, device=dev), torch.full((n,), 0.1, device=dev)
        target = torch.full((n, 3), 1 / 3, device=dev)
        _sync()
        c, t = time.process_time(), time.perf_counter()
        for name, k in calls:  # base(s), ema(s), ema(s'), as the step did
            evaluate(getattr(m.dataset.networks, name), batch.x[:k], batch.mask[:k], mb)
        self.ref_opt.zero_grad()
        for start in range(0, n, mb):
            sl = slice(start, min(n, start + mb))
            out = self.ref_online(batch.x[sl])
            log_p = self.masked_log_softmax(out.policy, batch.mask[sl])
            loss = self.loss_fn(
                log_p,
                out.wdl,
                batch.mask[sl],
                action[sl],
                rho[sl],
                adv[sl],
                target[sl],
                batch.log_p_base[sl],
                exploration=m.algorithm.exploration,
                beta=m.beta,
                c_v=m.algorithm.c_v,
            )
            (loss.total * ((sl.stop - sl.start) / n)).backward()
        self.ref_opt.step()
        _sync()
        return time.perf_counter() - t, time.process_time() - c


def run(
    model: str,
    games: int,
    steps: int,
    warmup: int,
    micro_batch: int,
    reuse: bool,
    opening_max_moves: int,
    chess_side: bool = False,
    profile: bool = False,
    backend: str = "native",
    workers: int = 1,
    accelerator: str = "cpu",
    precision: str = "32-true",
    busy: bool = False,
) -> dict:
    from pdx_lightning.rl.module import PDXModule  # noqa: PLC0415
    from pdx_lightning.rl.selfplay import SelfPlayConfig  # noqa: PLC0415
    from pdx_lightning.rl.settings import PDXSettings  # noqa: PLC0415

    sp = SelfPlayConfig(n_games=games, opening_max_moves=opening_max_moves, backend=backend, workers=workers)
    algorithm = PDXSettings(micro_batch=micro_batch, reuse_successor_eval=reuse)

    class Probed(PDXModule):
        def training_step(self, dataloader_iter):  # Lightning reads this signature (dataloader_iter mode)
            return probe.step(super().training_step, dataloader_iter)

    m = Probed(base=model, algorithm=algorithm, selfplay=sp)
    probe = StepProbe(m, warmup, chess_side, profile, busy=busy)
    trainer = L.Trainer(
        max_steps=warmup + steps,
        accelerator=accelerator,
        devices=1,
        precision=precision,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    t = time.perf_counter()
    try:
        trainer.fit(m)
    finally:
        probe.restore()  # the next run (another N) instruments afresh, not on top of these wrappers
    rows = probe.rows[warmup:]
    ratio = [r["step_s"] / r["ref_s"] for r in rows]
    ratio_cpu = [r["step_cpu_s"] / r["ref_cpu_s"] for r in rows]
    med = statistics.median
    return {
        "model": model,
        "games": games,
        "threads": torch.get_num_threads(),
        "steps": len(rows),
        "backend": backend,
        "workers": workers,
        "warmup": warmup,
        "micro_batch": micro_batch,
        "rows": probe.rows,
        "total_s": time.perf_counter() - t,
        "step_s": med(r["step_s"] for r in rows),
        "ref_s": med(r["ref_s"] for r in rows),
        "transitions_per_s": games / med(r["step_s"] for r in rows),
        "passes_per_step": med(r["no_grad_positions"] / r["n"] for r in rows) + 1,
        "ratio": med(ratio),
        "ratio_min": min(ratio),
        "ratio_max": max(ratio),
        "ratio_cpu": med(ratio_cpu),
        "ratio_cpu_min": min(ratio_cpu),
        "ratio_cpu_max": max(ratio_cpu),
        # chess side: core-µs per game-ply = (step CPU − network CPU) / N, median over the steps
        # chess side: core-µs per game-ply = (step CPU − the step's own network CPU) / N, median over
        # the steps; and the same estimated against the replayed reference (step CPU − reference CPU)
        "chess_us_per_ply": (
            med(1e6 * (r["step_cpu_s"] - r["parts"][NETWORK]) / r["n"] for r in rows) if chess_side else None
        ),
        "chess_us_per_ply_replay": med(1e6 * (r["step_cpu_s"] - r["ref_cpu_s"]) / r["n"] for r in rows),
        "network_s": med(r["parts"][NETWORK] for r in rows) if chess_side else None,
        "parts_us_per_ply": (
            {p: med(1e6 * r["parts"][p] / r["n"] for r in rows) for p in CHESS_PARTS} if chess_side else {}
        ),
        "profile": probe.profile_text,
        "gpu_busy_share": (probe.busy_s / probe.busy_wall_s if probe.busy_s is not None else None),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", help="base network(s) (default: base:small and base:maia-1900)")
    ap.add_argument("--games", type=int, nargs="+", default=[256, 1024], help="N, games in flight")
    ap.add_argument("--steps", type=int, default=5, help="measured steps (each paired with a reference)")
    ap.add_argument("--warmup", type=int, default=2, help="steps (and references) excluded first")
    ap.add_argument("--micro-batch", type=int, default=256)
    ap.add_argument("--threads", type=int, nargs="+", default=[1], help="torch threads (e.g. 1 2)")
    ap.add_argument(
        "--opening-max-moves",
        type=int,
        default=20,
        help="opening randomization before step 1 (warm-up only; 60, the default, takes longer)",
    )
    ap.add_argument("--reuse-successor-eval", action="store_true")
    ap.add_argument(
        "--chess-side",
        action="store_true",
        help="also the chess side per game-ply and its parts (defaults then: base:maia-1900, "
        "N = 256 1024 4096, 3 steps after 1 warm-up; report selfplay_chess_side)",
    )
    ap.add_argument(
        "--backend",
        default="native",
        choices=["native", "python-chess"],
        help="the chess engine (--model.selfplay.backend)",
    )
    ap.add_argument("--workers", type=int, default=1, help="chess worker threads (--model.selfplay.workers)")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top 20 (tottime) of one step")
    ap.add_argument(
        "--report",
        default=None,
        help="reports/maia/<name>.md|json ('' for none; default selfplay, or selfplay_chess_side with --chess-side)",
    )
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.chess_side:
        given = set(sys.argv[1:])
        args.games = args.games if "--games" in given else [256, 1024, 4096]
        args.steps = args.steps if "--steps" in given else 3
        args.warmup = args.warmup if "--warmup" in given else 1
    if args.report is None:
        args.report = "selfplay_chess_side" if args.chess_side else "selfplay"
    models = args.model or (["base:maia-1900"] if args.chess_side else ["base:small", "base:maia-1900"])
    before = machine_note()
    results = []
    lines = [
        "## Self-play step vs its network work alone (ratio target ≤ 1.10 at N = 1,024)",
        "",
        f"micro-batch {args.micro_batch}, {args.warmup} warm-up steps excluded, {args.steps} measured "
        f"steps each paired with its reference (interleaved); ratio = step / reference, median "
        f"(min–max).",
        "",
        "| model | N | threads | s/step | transitions/s | network passes/step | reference s "
        "| ratio (wall) | ratio (CPU) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    print("\n".join(lines), flush=True)
    for model in models:
        for g in args.games:
            for th in args.threads:
                torch.set_num_threads(th)
                r = run(
                    model,
                    g,
                    args.steps,
                    args.warmup,
                    args.micro_batch,
                    args.reuse_successor_eval,
                    args.opening_max_moves,
                    args.chess_side,
                    args.profile,
                    args.backend,
                    args.workers,
                )
                results.append(r)
                ok = "met" if r["ratio"] <= TARGET else "NOT met"
                line = (
                    f"| {model} | {g} | {th} | {r['step_s']:.3f} | {r['transitions_per_s']:.0f} | "
                    f"{r['passes_per_step']:.2f} | {r['ref_s']:.3f} | {r['ratio']:.3f} "
                    f"({r['ratio_min']:.3f}–{r['ratio_max']:.3f}) | {r['ratio_cpu']:.3f} "
                    f"({r['ratio_cpu_min']:.3f}–{r['ratio_cpu_max']:.3f}) | {ok if g >= 1024 else '—'} |"
                )
                lines.append(line)
                print(line, flush=True)
    if args.chess_side:
        lines += [
            "",
            f"### The chess side per game-ply (core-µs, median over the measured steps; backend "
            f"{args.backend}, {args.workers} worker thread(s))",
            "",
            "| model | N | chess side (step − its network CPU) | "
            + " | ".join(CHESS_PARTS)
            + " | other | step − reference (replay) | step / network |",
            "|---|---:|---:|" + "---:|" * (len(CHESS_PARTS) + 3),
        ]
        for r in results:
            parts = r["parts_us_per_ply"]
            lines.append(
                f"| {r['model']} | {r['games']} | {r['chess_us_per_ply']:.1f} | "
                + " | ".join(f"{parts[p]:.1f}" for p in CHESS_PARTS)
                + f" | {r['chess_us_per_ply'] - sum(parts.values()):.1f} | "
                f"{r['chess_us_per_ply_replay']:.0f} | {r['ratio_cpu']:.3f} |"
            )
        print("\n".join(lines[-len(results) - 4 :]), flush=True)
        for r in results:
            if r["profile"]:
                print(f"\ncProfile, one step, {r['model']} N={r['games']}:\n{r['profile']}")
    after = machine_note()
    lines += ["", f"Machine before: {before}.", f"Machine after: {after}."]
    print("\n".join(lines[-3:]))
    if args.report:
        write_report(
            args.report,
            "\n".join(lines),
            {
                "results": results,
                "target": TARGET,
                "machine_before": before,
                "machine_after": after,
                "torch": torch.__version__,
            },
        )
    if args.chess_side:
        at = [r for r in results if r["games"] == 1024] or results[-1:]
        r = at[0]
        print(
            f"chess side N={r['games']}: {r['chess_us_per_ply']:.1f} core-us/game-ply; "
            f"step/network {r['ratio_cpu']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
