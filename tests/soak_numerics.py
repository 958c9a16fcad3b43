"""Numerical soak: tiny self-play runs at the numerical extremes, one per exploration arm.

    OMP_NUM_THREADS=1 python tests/soak_numerics.py                  # 2,000 steps x 4 arms
    OMP_NUM_THREADS=1 python tests/soak_numerics.py --steps 200 --arms forward_kl --json out.json

Each arm trains ``random:tiny`` with β = 1 on its exploration term, high learning
rates (the value head saturates, so the EMA's WDL goes one-hot and τ = H(WDL)
collapses on its own) and a fast EMA. Three extremes are forced every step so
they are covered whatever the run does:

* **τ → 0**: a quarter of the rows get τ from {0, 1e-30, 1e-7, TAU_MIN, 1.01·TAU_MIN, 1e-3}
  (exact zero, below and at the argmax threshold, just above it);
* **a single legal move**: finished games restart from opening lines that end in a
  position with exactly one legal move (built here from seeded random games), so
  μ is one-hot by legality, ρ = 1, and every KL runs over one move;
* **one-hot WDL targets**: every finished game (the 40-ply cap scores a draw, mates
  and stalemates their result) gives p̂ exactly one-hot.

A step fails if any loss component or gradient is non-finite (PDXModule raises a
``FloatingPointError`` naming the step and the tensor) or, checked here after every
step, any online or EMA parameter is. Prints one markdown row per arm and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import chess
import lightning as L
import torch

import pdx_lightning.rl.pdx_step as pdx_step_module
from pdx_lightning.chesscore.policy import TAU_MIN
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

ARMS = ("none", "entropy", "reverse_kl", "forward_kl")
TAU_EXTREMES = (0.0, 1e-30, 1e-7, TAU_MIN, 1.01 * TAU_MIN, 1e-3)


def forced_lines(n: int = 16, seed: int = 0) -> list[str]:
    """UCI lines from the start that end in a (non-terminal) position with exactly one legal move."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        b = chess.Board()
        for _ in range(80):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
            if b.legal_moves.count() == 1 and not b.is_game_over(claim_draw=True):
                line = " ".join(m.uci() for m in b.move_stack)
                if line not in out:
                    out.append(line)
                break
    return out


class Watch(L.Callback):
    """After every optimizer step: online and EMA parameters finite; record the gradient norm."""

    def __init__(self) -> None:
        self.grad_norm_max = 0.0
        self.param_abs_max = 0.0

    @torch.no_grad()
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        for role in ("online", "ema"):
            for name, p in getattr(pl_module, role).named_parameters():
                if not torch.isfinite(p).all():
                    raise FloatingPointError(f"step {step}: non-finite {role} parameter {name}")
                self.param_abs_max = max(self.param_abs_max, float(p.abs().max()))
        sq = [float(p.grad.pow(2).sum()) for p in pl_module.online.parameters() if p.grad is not None]
        self.grad_norm_max = max(self.grad_norm_max, math.sqrt(sum(sq)))


def run_arm(
    arm: str,
    steps: int,
    *,
    n_games: int = 8,
    seed: int = 0,
    lr: float = 3e-3,
    max_plies: int = 40,
    inject_tau: bool = True,
    workdir: str | None = None,
) -> dict:
    """Train one arm for ``steps`` steps; returns counts of the extremes met and the outcome."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="pdx_soak_") as tmp:
            return run_arm(
                arm, steps, n_games=n_games, seed=seed, lr=lr, max_plies=max_plies, inject_tau=inject_tau, workdir=tmp
            )
    torch.set_num_threads(1)
    L.seed_everything(seed, verbose=False)
    openings = Path(workdir) / "forced.txt"
    openings.write_text("\n".join(forced_lines(seed=seed)) + "\n")
    sp = SelfPlayConfig(
        n_games=n_games,
        seed=seed,
        opening_max_moves=3,
        max_plies=max_plies,
        restart="openings",
        openings_file=str(openings),
    )
    m = PDXModule(
        base=f"random:tiny:{seed}",
        algorithm=PDXSettings(
            exploration=arm, beta=1.0, c_v=1.0, ema_decay=0.9, temperature="adaptive", micro_batch=n_games
        ),
        lr_backbone=lr,
        lr_final_block=lr,
        lr_policy_head=lr,
        lr_value_head=3 * lr,
        warmup_steps=1,
        selfplay=sp,
    )
    counts = {
        "rows": 0,
        "single_legal": 0,
        "tau_natural_le_tau_min": 0,
        "tau_natural_lt_1e-3": 0,
        "tau_forced": 0,
        "terminal_one_hot_targets": 0,
    }
    tau_min = [math.log(3)]
    gen = torch.Generator().manual_seed(seed)
    begin, complete = m.dataset._begin, pdx_step_module.collect
    temperature = pdx_step_module.step_temperature

    def begin_and_count():
        batch = begin()
        counts["rows"] += batch.size
        counts["single_legal"] += int((batch.mask.sum(1) == 1).sum())
        return batch

    def temperature_and_force(batch, rows, wdl_theta, settings):
        """τ(s) as the step computes it, counted, then a quarter of its rows forced to the extremes."""
        tau = temperature(batch, rows, wdl_theta, settings)
        counts["tau_natural_le_tau_min"] += int((tau <= TAU_MIN).sum())
        counts["tau_natural_lt_1e-3"] += int((tau < 1e-3).sum())
        tau_min[0] = min(tau_min[0], float(tau.min()))
        if inject_tau:
            n = len(tau)
            forced = torch.randperm(n, generator=gen)[: max(1, n // 4)]
            choice = torch.randint(len(TAU_EXTREMES), (len(forced),), generator=gen)
            tau = tau.clone()
            tau[forced] = torch.tensor(TAU_EXTREMES, dtype=tau.dtype)[choice]
            counts["tau_forced"] += len(forced)
        return tau

    def complete_and_count(games, batch, rows, logp, v, tau, **keywords):
        completion = complete(games, batch, rows, logp, v, tau, **keywords)
        counts["terminal_one_hot_targets"] += int(completion.terminal.sum())
        return completion

    m.dataset._begin, pdx_step_module.collect = begin_and_count, complete_and_count
    pdx_step_module.step_temperature = temperature_and_force
    watch = Watch()
    trainer = L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[watch],
        default_root_dir=workdir,
    )
    t0, error = time.perf_counter(), None
    try:
        trainer.fit(m)
    except FloatingPointError as e:  # the guard: named step and tensor
        error = str(e)
    finally:
        pdx_step_module.collect = complete  # the step's own again, for the next arm
        pdx_step_module.step_temperature = temperature
    return {
        "arm": arm,
        "steps_requested": steps,
        "steps_done": trainer.global_step,
        "error": error,
        "seconds": round(time.perf_counter() - t0, 1),
        "games_finished": m.dataset.stats["games_finished"],
        "tau_min_natural": tau_min[0],
        "grad_norm_max": watch.grad_norm_max,
        "param_abs_max": watch.param_abs_max,
        **counts,
    }


def markdown(results: list[dict]) -> str:
    head = (
        "| arm (β = 1) | steps | NaN/inf | rows | single legal move | τ forced to ≤1e-3 | "
        "natural τ ≤ TAU_MIN | min natural τ | one-hot terminal p̂ | max ‖g‖ | time |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(
        f"| {r['arm']} | {r['steps_done']}/{r['steps_requested']} | {r['error'] or 'none'} | {r['rows']} | "
        f"{r['single_legal']} | {r['tau_forced']} | {r['tau_natural_le_tau_min']} | {r['tau_min_natural']:.2e} | "
        f"{r['terminal_one_hot_targets']} | {r['grad_norm_max']:.3g} | {r['seconds']:.0f} s |"
        for r in results
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    p.add_argument("--games", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    results = []
    for arm in args.arms:
        r = run_arm(arm, args.steps, n_games=args.games, seed=args.seed)
        results.append(r)
        print(json.dumps(r), flush=True)
    print(markdown(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0 if all(r["error"] is None and r["steps_done"] == r["steps_requested"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
