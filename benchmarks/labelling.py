"""Where the time of ``pdx data positions`` goes, per core (one worker = one Stockfish process).

Generates one shard of ``--positions`` labelled positions with one worker, exactly as ``pdx data
positions`` does (``generate_shard`` with the settings of the command, same seed), and splits its wall time
into the teacher's MultiPV label searches, the play searches between labelled plies, and everything else
(python-chess move generation, Zobrist keys, sampling, packing: the Python side). Positions/s of one worker
is the per-core rate; ``--workers N`` runs N such processes (one engine each), so the command's rate on N
free cores is about N times it. The table also gives the rate the label searches alone would allow.

    .venv/bin/python benchmarks/labelling.py [--positions 300] [--nodes 5000] [--multipv 8] [--md out.md]

Run it on a quiet machine for absolute numbers; the split (fractions) is what it is for.
"""

from __future__ import annotations

import argparse
import os
import time

from pdx_lightning.datagen.positions import GenConfig, generate_shard, make_teacher


class TimedTeacher:
    """Wraps a Teacher: wall seconds and calls of ``label`` and ``best_move``."""

    def __init__(self, teacher) -> None:
        self._t = teacher
        self.secs = {"label": 0.0, "play": 0.0}
        self.calls = {"label": 0, "play": 0}

    def __getattr__(self, name):
        return getattr(self._t, name)

    def _timed(self, kind: str, fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.secs[kind] += time.perf_counter() - t0
            self.calls[kind] += 1

    def label(self, board):
        return self._timed("label", self._t.label, board)

    def best_move(self, board, nodes):
        return self._timed("play", self._t.best_move, board, nodes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", type=int, default=300, help="labelled positions to generate (one shard)")
    ap.add_argument("--nodes", type=int, default=5000, help="label search nodes (the base set: 5000)")
    ap.add_argument("--multipv", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--md", help="also write the table here")
    args = ap.parse_args()
    cfg = GenConfig(seed=args.seed, nodes=args.nodes, multipv=args.multipv, shard_size=args.positions)
    teacher = TimedTeacher(make_teacher(cfg))
    try:
        t0 = time.perf_counter()
        shard = generate_shard(teacher, cfg, 0)
        wall = time.perf_counter() - t0
    finally:
        teacher.close()
    n = len(shard)
    other = wall - teacher.secs["label"] - teacher.secs["play"]
    load = os.getloadavg()[0]
    rows = [
        ("label searches (MultiPV)", teacher.calls["label"], teacher.secs["label"]),
        ("play searches", teacher.calls["play"], teacher.secs["play"]),
        ("Python (rules, keys, sampling, packing)", None, other),
    ]
    lines = [
        f"One worker, {n} positions, nodes {args.nodes}, MultiPV {args.multipv}, seed {args.seed}; "
        f"load average at the end {load:.2f} on {os.cpu_count()} cores",
        "",
        "| part | calls | seconds | share of wall | ms per call |",
        "|---|---|---|---|---|",
    ]
    for name, calls, secs in rows:
        per = f"{1000 * secs / calls:.1f}" if calls else "—"
        lines.append(f"| {name} | {calls if calls is not None else '—'} | {secs:.1f} | {secs / wall:.0%} | {per} |")
    lines += [
        "",
        f"positions/s per worker (core): {n / wall:.1f}; label searches alone would allow "
        f"{n / teacher.secs['label']:.1f}/s",
    ]
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
