"""Batched in-process arena vs. the same match through two ``pdx uci`` processes.

Both sides play the same match: the same network on both sides (two copies,
as two players), the same paired openings from the bundled suite, argmax
moves, the same rules (``arena_game.game_outcome``, claimed draws, the ply cap).
The UCI path is what a GUI or cutechess-cli would do: python-chess's
``SimpleEngine`` sends ``position startpos moves …`` + ``go nodes 1`` per move
to one engine process per colour, games one after another. Process start-up
is timed separately and left out of the ratio. Torch runs one thread in
every process (an intra-op thread pool on a shared 2-core box only stalls).

    .venv/bin/python benchmarks/arena.py [--model random:small] [--pairs 100] [--uci-pairs 8]

Prints games/s and plies/s of both paths, their ratio, and how many games
came out move-for-move identical (batch-1 and batch-N float rounding can
flip near-ties of a random network's nearly flat policy, so divergence would
be harmless; so far every game matched). The batched arena gains with the
number of games in flight (its batch); the UCI path plays one move at a time,
so its rate does not depend on the match size: ``--uci-pairs`` plays only the
first N paired openings through UCI (the same games) and the match time at
UCI speed is extrapolated from its plies/s — the ratio is reported both ways.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import chess
import chess.engine
import torch

from pdx_lightning.datagen.opening_suite import load_openings
from pdx_lightning.evaluation.arena_game import game_outcome
from pdx_lightning.evaluation.arena_loop import play_games, round_robin
from pdx_lightning.evaluation.arena_players import NetPlayer
from pdx_lightning.nets import load_model


def batched(model: str, openings, sched, max_plies: int):
    players = [NetPlayer("a", load_model(model)), NetPlayer("b", load_model(model))]
    t0 = time.perf_counter()
    games = play_games(players, openings, sched, max_plies=max_plies, progress=False)
    return time.perf_counter() - t0, [[m.uci() for m in g.moves] for g in games]


def via_uci(model: str, openings, sched, max_plies: int):
    cmd = [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", model, "--threads", "1"]
    t0 = time.perf_counter()
    engines = [chess.engine.SimpleEngine.popen_uci(cmd, timeout=300) for _ in range(2)]
    for e in engines:
        e.ping()  # waits for the model to load
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    games = []
    try:
        for gid, (w, b, o) in enumerate(sched):
            board = openings[o].start()
            moves = []
            while True:
                eng = engines[w] if board.turn == chess.WHITE else engines[b]
                move = eng.play(board, chess.engine.Limit(nodes=1), game=(gid, eng is engines[w])).move
                board.push(move)
                moves.append(move.uci())
                if game_outcome(board, list(board.legal_moves), True) or board.ply() >= max_plies:
                    break
            games.append(moves)
    finally:
        for e in engines:
            e.quit()
    return time.perf_counter() - t0, startup, games


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="random:small")
    p.add_argument("--pairs", type=int, default=100, help="paired openings (2 games each); App. F plays 100 per pair")
    p.add_argument("--max-plies", type=int, default=512)
    p.add_argument("--uci-pairs", type=int, default=8, help="paired openings played through UCI (0: all)")
    args = p.parse_args()
    torch.set_num_threads(1)
    openings = load_openings()[: args.pairs]
    sched = round_robin(2, len(openings), 2 * len(openings))
    t_b, g_b = batched(args.model, openings, sched, args.max_plies)
    n_uci = 2 * min(args.uci_pairs or args.pairs, args.pairs)
    t_u, startup, g_u = via_uci(args.model, openings, sched[:n_uci], args.max_plies)
    p_b, p_u = sum(map(len, g_b)), sum(map(len, g_u))
    same = sum(a == b for a, b in zip(g_b, g_u))
    t_match = t_u if n_uci == len(sched) else p_b / (p_u / t_u)  # the whole match at UCI speed
    print(
        f"model {args.model}, {len(sched)} games ({args.pairs} paired openings), max {args.max_plies} plies, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(f"batched arena : {t_b:7.2f} s  {len(sched) / t_b:7.3f} games/s  {p_b / t_b:8.1f} plies/s  ({p_b} plies)")
    print(
        f"2x pdx uci    : {t_u:7.2f} s  {n_uci / t_u:7.3f} games/s  {p_u / t_u:8.1f} plies/s  ({n_uci} games, "
        f"{p_u} plies; +{startup:.1f} s start-up not counted)"
    )
    extra = "" if n_uci == len(sched) else f" (UCI time of the whole match extrapolated: {t_match:.1f} s)"
    print(
        f"ratio (games/s, same match): {t_match / t_b:.1f}x   ratio (plies/s): {(p_b / t_b) / (p_u / t_u):.1f}x"
        f"{extra}   identical games: {same}/{n_uci}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
