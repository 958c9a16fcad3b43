"""Network and encoder throughput on this machine, printed as a markdown table.

    python benchmarks/network.py [--threads 2] [--batch 256]

Forward: positions/s under inference_mode in micro-batches. Train:
forward + backward + AdamW step, positions/s. Encoder: µs/position of the
vectorized encoder against a naive per-square loop (checked equal).
bt4 is shape-tested only (tests/nets/test_chessformer.py), never run on a CPU.
"""

from __future__ import annotations

import argparse
import random
import time

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.nets.chessformer import PRESETS, Chessformer, count_params


def naive_encode(board: chess.Board) -> np.ndarray:
    """Per-square reference encoder (slow, obvious): what encoding.py vectorizes."""
    x = np.zeros((112, 8, 8), np.float32)
    us = board.turn
    b = board.copy()
    history = [b.copy(stack=False)]
    while len(history) < 8 and b.move_stack:
        b.pop()
        history.append(b.copy(stack=False))
    for h, pos in enumerate(history):
        for sq in chess.SQUARES:
            piece = pos.piece_at(sq)
            if piece is None:
                continue
            c = sq if us == chess.WHITE else chess.square_mirror(sq)
            plane = 13 * h + (piece.piece_type - 1) + (0 if piece.color == us else 6)
            x[plane, c // 8, c % 8] = 1
    # repetition planes, castling, side to move, rule 50, edges
    for h in range(len(history)):
        tmp = board.copy()
        for _ in range(h):
            tmp.pop()
        if tmp.is_repetition(2):
            x[13 * h + 12] = 1
    if len(history) < 8 and board.root() != chess.Board():
        for h in range(len(history), 8):
            x[13 * h : 13 * h + 13] = x[13 * (len(history) - 1) : 13 * len(history)]
    them = not us
    x[104] = board.has_queenside_castling_rights(us)
    x[105] = board.has_kingside_castling_rights(us)
    x[106] = board.has_queenside_castling_rights(them)
    x[107] = board.has_kingside_castling_rights(them)
    x[108] = us == chess.BLACK
    x[109] = board.halfmove_clock
    x[111] = 1
    return x


def positions(n: int, seed: int = 0) -> list[chess.Board]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        b = chess.Board()
        for _ in range(rng.randint(1, 120)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        if not b.is_game_over():
            out.append(b)
    return out


def bench_net(name: str, batch: int, reps: int) -> tuple[float, float]:
    model = Chessformer(PRESETS[name])
    x = torch.randn(batch, 112, 8, 8)
    model.eval()
    with torch.inference_mode():
        model(x)
        t = time.perf_counter()
        for _ in range(reps):
            model(x)
        fwd = batch * reps / (time.perf_counter() - t)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    t = time.perf_counter()
    for _ in range(reps):
        out = model(x)
        (out.policy.logsumexp(1).mean() + out.wdl.logsumexp(1).mean()).backward()
        opt.step()
        opt.zero_grad()
    train = batch * reps / (time.perf_counter() - t)
    return fwd, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, batch {args.batch}\n")
    print("| preset | params | forward pos/s | fwd+bwd+AdamW pos/s |\n|---|---:|---:|---:|")
    for name in ("tiny", "small"):
        fwd, train = bench_net(name, args.batch, args.reps)
        print(f"| {name} | {count_params(PRESETS[name]):,} | {fwd:,.0f} | {train:,.0f} |")
    boards = positions(512)
    encode_boards(boards[:8])
    t = time.perf_counter()
    fast = encode_boards(boards)
    t_fast = (time.perf_counter() - t) / len(boards) * 1e6
    t = time.perf_counter()
    slow = np.stack([naive_encode(b) for b in boards])
    t_slow = (time.perf_counter() - t) / len(boards) * 1e6
    same = np.array_equal(fast, slow)
    print(
        f"\n| encoder | µs/position |\n|---|---:|\n| vectorized (encode_boards) | {t_fast:.1f} |\n"
        f"| naive per-square loop | {t_slow:.1f} |\n\nspeed-up {t_slow / t_fast:.1f}x; outputs equal: {same}"
    )


if __name__ == "__main__":
    main()
