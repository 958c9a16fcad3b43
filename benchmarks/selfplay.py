"""Self-play step throughput and where a step's time goes.

    python benchmarks/selfplay.py [--model random:small] [--games 256 1024] [--steps 5] [--threads 2]

Runs PDXModule.training_step under a real Lightning Trainer and splits each
step into network passes (base(s), ema(s), ema(s'), online fwd+bwd),
optimizer and the rest (chess logic: move generation, push, encoding,
sampling). It then times the minimal passes *alone* on tensors of the same
shapes and reports ratio = step time / (minimal passes + optimizer) — the
overhead of everything that is not the network (target ≤ 1.10 at N = 1,024).
"""
from __future__ import annotations

import argparse
import time

import lightning as L
import torch

from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.objectives import masked_log_softmax
from pdx_lightning.rl.selfplay import SelfPlayConfig


class Timer(L.Callback):
    """Wall time and network-call count of each step."""

    def __init__(self, passes: dict):
        self.passes, self.steps, self.calls = passes, [], []

    def on_train_batch_start(self, *a):
        self.t, self.c = time.perf_counter(), self.passes["eval_positions"]

    def on_train_batch_end(self, *a):
        self.steps.append(time.perf_counter() - self.t)
        self.calls.append(self.passes["eval_positions"] - self.c)


def run(model: str, games: int, steps: int, micro_batch: int, reuse: bool) -> dict:
    sp = SelfPlayConfig(n_games=games, micro_batch=micro_batch, opening_max_moves=20, reuse_successor_eval=reuse)
    m = PDXModule(base=model, selfplay=sp)
    passes = {"eval": 0.0, "eval_positions": 0, "online": 0.0, "opt": 0.0}
    ev = m.dataset._eval

    def timed_eval(name, x, mask):
        t = time.perf_counter()
        r = ev(name, x, mask)
        passes["eval"] += time.perf_counter() - t
        passes["eval_positions"] += x.shape[0]  # positions: a pass over the whole batch counts once
        return r
    m.dataset._eval = timed_eval
    fwd = m.online.forward

    def timed_forward(x):
        t = time.perf_counter()
        r = fwd(x)
        passes["online"] += time.perf_counter() - t
        return r
    m.online.forward = timed_forward
    mb = m.manual_backward

    def timed_backward(loss):
        t = time.perf_counter()
        mb(loss)
        passes["online"] += time.perf_counter() - t
    m.manual_backward = timed_backward
    timer = Timer(passes)
    trainer = L.Trainer(max_steps=steps + 1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[timer])
    trainer.fit(m)  # the first step (and the opening randomization) is warm-up: excluded below
    step = sum(timer.steps[1:]) / steps
    # minimal passes measured alone on tensors of the same shape
    x = torch.randn(games, 112, 8, 8)
    mask = torch.rand(games, 4288) < 0.01
    mask[:, 0] = True
    with torch.inference_mode():
        t = time.perf_counter()
        for net in (m.base, m.ema, m.ema):
            for i in range(0, games, micro_batch):
                o = net(x[i:i + micro_batch])
                masked_log_softmax(o.policy, mask[i:i + micro_batch])
        inf = time.perf_counter() - t
    opt = trainer.optimizers[0]
    t = time.perf_counter()
    for i in range(0, games, micro_batch):
        o = m.online(x[i:i + micro_batch])
        (masked_log_softmax(o.policy, mask[i:i + micro_batch]).logsumexp(1).mean() + o.wdl.sum()).backward()
    train = time.perf_counter() - t
    t = time.perf_counter()
    opt.step()
    opt.zero_grad()
    opt_t = time.perf_counter() - t
    minimal = inf + train + opt_t
    return {"games": games, "step_s": step, "transitions_per_s": games / step,
            # no-grad positions evaluated per step, in units of the N games, + the online fwd+bwd pass
            "passes_per_step": sum(timer.calls[1:]) / steps / games + 1,
            "minimal_s": minimal, "ratio": step / minimal}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="random:small")
    ap.add_argument("--games", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--micro-batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reuse-successor-eval", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"model {args.model}, {args.threads} threads, micro-batch {args.micro_batch}\n")
    print("| N | s/step | transitions/s | network passes/step | minimal passes + opt (s) | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for g in args.games:
        r = run(args.model, g, args.steps, args.micro_batch, args.reuse_successor_eval)
        print(f"| {g} | {r['step_s']:.3f} | {r['transitions_per_s']:.0f} | {r['passes_per_step']:.2f} | "
              f"{r['minimal_s']:.3f} | {r['ratio']:.2f} |")


if __name__ == "__main__":
    main()
