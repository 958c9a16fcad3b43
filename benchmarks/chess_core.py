"""The chess side alone: the game pools' per-ply cost and its scaling over worker threads (no networks).

    python benchmarks/chess_core.py [--games 1024] [--plies 200] [--workers 1 2]

Plays N games with uniformly random legal policy slots (``Positions.legal``), one batch call per ply as
self-play makes them: ``positions`` (planes, masks, sorted legal indices) then ``play`` (moves, next legal
moves, game ends), restarting ended games; then the same with the planes packed (``positions(packed=True)``:
800 bytes per position, what a GPU run copies and expands on the device). Reports core-µs (this process's
CPU time) and wall-µs per game-ply for the python-chess pool and the compiled core on each worker count,
and the core's speed-up over python-chess. Writes ``reports/maia/chess_core.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from lc0common import machine_note, write_report
from pdx_lightning.chesscore.game_pool import open_pool


def measure(backend: str, n: int, plies: int, workers: int, seed: int = 0, packed: bool = False) -> dict:
    pool = open_pool(backend, n, claim_draws=False, max_plies=512, workers=workers)
    rng = np.random.default_rng(seed)
    games = np.arange(n)
    cpu = wall = 0.0
    ended = 0
    for _ in range(plies):
        c, t = time.process_time(), time.perf_counter()
        pos = pool.positions(games, packed=packed)
        cols = (rng.random(n) * pos.count).astype(np.int64)
        reason, _ = pool.play(games, pos.legal[games, cols])
        for i in np.flatnonzero(reason):
            pool.reset(int(i))
        cpu += time.process_time() - c
        wall += time.perf_counter() - t
        ended += int(np.count_nonzero(reason))
    pool.close()
    return {
        "backend": backend + (", packed planes" if packed else ""),
        "games": n,
        "plies": plies,
        "workers": workers,
        "ended": ended,
        "core_us_per_ply": 1e6 * cpu / (n * plies),
        "wall_us_per_ply": 1e6 * wall / (n * plies),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=1024)
    ap.add_argument("--plies", type=int, default=200, help="batched plies (the python-chess pool plays a tenth)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--report", default="chess_core", help="reports/maia/<name>.md|json ('' for none)")
    args = ap.parse_args()
    before = machine_note()
    ref = measure("python-chess", args.games, max(1, args.plies // 10), 1)
    rows = [ref] + [measure("native", args.games, args.plies, w) for w in args.workers]
    rows += [measure("native", args.games, args.plies, w, packed=True) for w in args.workers]
    lines = [
        f"## The chess side alone: N = {args.games}, random legal moves, restarts included",
        "",
        "| engine | worker threads | plies | core-µs / game-ply | wall-µs / game-ply | core-µs vs python-chess |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['workers']} | {r['plies']} | {r['core_us_per_ply']:.2f} | "
            f"{r['wall_us_per_ply']:.2f} | {ref['core_us_per_ply'] / r['core_us_per_ply']:.0f}× |"
        )
    lines += ["", f"Machine before: {before}.", f"Machine after: {machine_note()}."]
    print("\n".join(lines))
    if args.report:
        write_report(args.report, "\n".join(lines), {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
