"""The paper authors' training loop, one step at a time on request: the other side of benchmarks/reference.py.

Runs in the reference's own virtualenv (``.venv-ref``, made by setup.sh from ../shared/reference), not in
pdx's: it imports the authors' ``train`` and ``selfplay`` modules from the folder given as ``--src`` and
nothing of pdx. It sets up exactly as their ``train.main`` does (three networks from one ONNX file, the
AdamW groups, N games, the warm-start), then reads one command per line on stdin and answers one JSON
line on stdout:

    warmstart      -> {"seconds": ..., "cpu_s": ...}   the opening warm-start (``selfplay.warmstart``)
    step           -> {"seconds": ..., "cpu_s": ..., "metrics": {...}}   one step, as ``train.main``'s loop body
    profile        -> {"seconds": ..., "profile": "..."}   one more step under cProfile (top 10, cumulative)
    quit

Its stdout carries only these lines (the authors' code prints to stdout: that goes to stderr here).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="the reference's src/ folder")
    ap.add_argument("--onnx", required=True, help="the network, converted by the reference's prepare_network.py")
    ap.add_argument("--train-args", default="", help="arguments for the reference's train.parse_args")
    opts = ap.parse_args()
    sys.path.insert(0, opts.src)
    out = sys.stdout
    sys.stdout = sys.stderr  # the reference's prints must not mix with the answers

    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415
    import train as tm  # noqa: PLC0415

    import selfplay as sp  # noqa: PLC0415  (the reference's modules, from --src)

    args = tm.parse_args(["--onnx", opts.onnx, *opts.train_args.split()])
    # train.main's set-up, line by line
    random.seed(args.seed)
    np.random.seed(args.seed)  # noqa: NPY002  (train.main's own seeding, reproduced)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    trainable = sp.build_model(args.onnx, device, args.embedding_tensor, args.emb_size)
    base = sp.build_model(args.onnx, device, args.embedding_tensor, args.emb_size)
    ema = sp.build_model(args.onnx, device, args.embedding_tensor, args.emb_size)
    base.load_state_dict(trainable.state_dict())
    ema.load_state_dict(trainable.state_dict())
    for frozen in (base, ema):
        frozen.eval()
        for p in frozen.parameters():
            p.requires_grad = False
    optimizer = sp.build_optimizer(
        trainable,
        {
            "backbone": args.lr,
            "lc0_last_block": args.lc0_last_block_lr,
            "policy_head": args.policy_head_lr,
            "wdl_head": args.wdl_head_lr,
        },
    )
    games = [sp.GameState.new() for _ in range(args.num_games)]
    step = 0

    def one_step() -> dict:
        nonlocal step
        step += 1
        for group in optimizer.param_groups:
            group["lr"] = sp.warmup_lr(step, group["base_lr"], args.warmup_steps)
        transitions = tm.sample_transitions(games, trainable, ema, args, device)
        tm.label_transitions(transitions, base, ema, args, device)
        losses = tm.optimizer_step(transitions, trainable, optimizer, args, device)
        tm.update_ema(ema, trainable, args.ema_decay)
        return {**losses, **tm.batch_metrics(transitions)}

    def answer(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    answer({"ready": True, "threads": torch.get_num_threads()})
    for line in sys.stdin:
        cmd = line.strip()
        t, c = time.perf_counter(), time.process_time()
        if cmd == "warmstart":
            sp.warmstart(
                games,
                trainable,
                device,
                random.Random(args.seed),
                args.warmstart_max_full_moves,
                args.sample_with_wdl_entropy_temperature,
                args.forward_batch_size,
            )
            answer({"seconds": time.perf_counter() - t, "cpu_s": time.process_time() - c})
        elif cmd == "step":
            metrics = one_step()
            answer({"seconds": time.perf_counter() - t, "cpu_s": time.process_time() - c, "metrics": metrics})
        elif cmd == "profile":
            prof = cProfile.Profile()
            prof.enable()
            one_step()
            prof.disable()
            seconds = time.perf_counter() - t
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(12)
            answer({"seconds": seconds, "profile": buf.getvalue()})
        elif cmd == "quit":
            return 0
        else:
            answer({"error": f"unknown command {cmd!r}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
