"""Batched suite scoring vs one puzzle at a time (positions/s and their ratio, one run).

    python benchmarks/puzzles.py [--model random:small] [--puzzles 256] [--suite FILE]

Without ``--suite`` the puzzles are synthetic: positions reached by seeded
random play from the start (true history kept), each with a random 3- or
5-ply line, so the cost is the scorer's and the network's, not the answers'.
Both paths call :func:`score_suite`; the sequential one with one puzzle per
call (batch size 1 at every ply), which is how a per-puzzle loop scores.
"""

from __future__ import annotations

import argparse
import random
import time

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.evaluation.puzzle_scoring import score_suite
from pdx_lightning.evaluation.suite import load_suite, make_puzzle
from pdx_lightning.nets import load_model


def synthetic_puzzles(n: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        b = chess.Board()
        for _ in range(rng.randrange(10, 60)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        line, c = [], b.copy()
        for _ in range(rng.choice((3, 5))):
            moves = list(c.legal_moves)
            if not moves:
                break
            line.append(rng.choice(moves))
            c.push(line[-1])
        if len(line) % 2 == 0:
            line = line[:-1]
        if line:
            out.append(make_puzzle(f"syn{len(out)}", b, line, rating=rng.randrange(600, 2800)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random:small")
    ap.add_argument("--puzzles", type=int, default=256)
    ap.add_argument("--suite", help="score this suite file instead of synthetic puzzles")
    ap.add_argument("--micro-batch", type=int, default=512)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave the default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    puzzles = load_suite(args.suite, sample=args.puzzles).puzzles if args.suite else synthetic_puzzles(args.puzzles)
    model = load_model(args.model)
    score_suite(model, puzzles[:8], args.micro_batch)  # warm-up
    t = time.perf_counter()
    batched = score_suite(model, puzzles, args.micro_batch)
    t_batched = time.perf_counter() - t
    t = time.perf_counter()
    single = [score_suite(model, [p], args.micro_batch) for p in puzzles]
    t_single = time.perf_counter() - t
    n_pos = batched.n_positions
    # the network alone on the first solver positions, batch 1 vs micro-batches: the ceiling batching can reach
    x = torch.from_numpy(encode_boards([p.board for p in puzzles]))
    net = {}
    with torch.inference_mode():
        for bs in (1, args.micro_batch):
            t = time.perf_counter()
            for i in range(0, len(x), bs):
                model(x[i : i + bs])
            net[bs] = len(x) / (time.perf_counter() - t)
    agree = np.allclose(batched.log_p_star, [r.log_p_star[0] for r in single], atol=1e-4)
    print(
        f"model {args.model}, {len(puzzles)} puzzles, {n_pos} solver positions, "
        f"torch threads {torch.get_num_threads()}, batched and sequential p* agree: {agree}\n"
    )
    print("| path | seconds | positions/s |\n|---|---|---|")
    print(f"| one puzzle at a time | {t_single:.2f} | {n_pos / t_single:.0f} |")
    print(f"| batched over the suite | {t_batched:.2f} | {n_pos / t_batched:.0f} |")
    print(f"| network forward only, batch 1 | | {net[1]:.0f} |")
    print(f"| network forward only, batch {args.micro_batch} | | {net[args.micro_batch]:.0f} |")
    print(
        f"\nspeed-up (positions/s ratio): {t_single / t_batched:.1f}x "
        f"(network forward alone: {net[args.micro_batch] / net[1]:.1f}x)"
    )


if __name__ == "__main__":
    main()
