"""One-position latency: ``pdx uci`` against the real ``lc0`` at ``go nodes 1``, same Maia file.

    .venv/bin/python benchmarks/lc0_latency.py [--rating 1900] [--openings 10] [--plies 24] [--rounds 3]

Both engines are driven by python-chess exactly as a GUI or a match driver drives them: ``position
startpos moves ...`` (the opening and the game so far: the history planes matter) and ``go nodes 1``,
waiting for ``bestmove``; the time is that whole UCI round trip. The positions are the games Lc0 plays
against itself from the first ``--openings`` openings of the bundled suite, ``--plies`` plies each;
every engine answers every position, in an order that rotates from position to position (no engine is
always first after a pause), and the whole pass is repeated ``--rounds`` times. Each engine is warmed up
before timing (a first ``go`` loads and prepares the network). ``pdx uci`` runs with one torch thread
(the default) and, for comparison, two (``--pdx-threads 1 2``); Lc0 with ``--threads=1``.

Reported: median ms/move with the min-max of the per-round medians, the ratio pdx/Lc0 of the medians
(target ≤ 1.2x), the engine process's CPU time per move (user + system, /proc: what the move costs
the machine, less sensitive to the other load than wall time), the ``isready`` round trip (the protocol
floor of each engine), and the share of positions where both engines chose the same move (same network:
it must be all of them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import chess
import chess.engine

from lc0common import (
    BenchmarkError,
    cpu_seconds,
    lc0_command,
    machine_note,
    maia,
    pdx_uci_command,
    verdict,
    write_report,
)

TARGET = 1.2
LIMIT = chess.engine.Limit(nodes=1)


def game_positions(lc0: chess.engine.SimpleEngine, openings, plies: int) -> list[chess.Board]:
    """Lc0's own games from each opening: every position reached (with its move history)."""
    out = []
    for k, op in enumerate(openings):
        board = op.start()
        for _ in range(plies):
            if board.is_game_over(claim_draw=True):
                break
            out.append(board.copy())
            board.push(lc0.play(board, LIMIT, game=("gen", k)).move)
    return out


def time_move(engine: chess.engine.SimpleEngine, board: chess.Board, key) -> tuple[float, chess.Move]:
    t = time.perf_counter()
    move = engine.play(board, LIMIT, game=key).move
    return time.perf_counter() - t, move


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rating", type=int, default=1900, help="Maia file (maia-<rating>.pb.gz)")
    ap.add_argument("--openings", type=int, default=10, help="games (one per opening of the bundled suite)")
    ap.add_argument("--plies", type=int, default=24, help="plies per game")
    ap.add_argument("--rounds", type=int, default=3, help="passes over all positions")
    ap.add_argument("--pdx-threads", type=int, nargs="+", default=[1, 2], help="torch threads of pdx uci")
    ap.add_argument("--no-report", action="store_true", help="do not write reports/maia/lc0_latency.*")
    args = ap.parse_args()

    from pdx_lightning.chesscore.opening_files import load_openings  # noqa: PLC0415

    weights = maia(args.rating)
    before = machine_note()
    engines: dict[str, chess.engine.SimpleEngine] = {}
    try:
        engines["lc0 (eigen, 1 thread)"] = chess.engine.SimpleEngine.popen_uci(lc0_command(weights), timeout=300)
        for n in args.pdx_threads:
            engines[f"pdx uci ({n} thread{'s' * (n > 1)})"] = chess.engine.SimpleEngine.popen_uci(
                pdx_uci_command(str(weights), n), timeout=300
            )
        names = list(engines)
        boards = game_positions(engines[names[0]], load_openings()[: args.openings], args.plies)
        for name, eng in engines.items():  # warm-up: load, first forwards, allocator
            for b in boards[:10]:
                time_move(eng, b, ("warm", name))
        times = {n: [] for n in names}  # every timed move
        round_medians = {n: [] for n in names}
        pings = {n: [] for n in names}
        pids = {n: engines[n].transport.get_pid() for n in names}
        cpu = dict.fromkeys(names, 0.0)  # engine-process CPU seconds over the timed rounds
        moves: dict[str, list[chess.Move]] = {n: [None] * len(boards) for n in names}
        for r in range(args.rounds):
            this_round = {n: [] for n in names}
            cpu0 = {n: cpu_seconds(pids[n]) for n in names}
            for i, b in enumerate(boards):
                order = names[(i + r) % len(names) :] + names[: (i + r) % len(names)]
                for n in order:
                    dt, mv = time_move(engines[n], b, (r, i // args.plies))
                    this_round[n].append(dt)
                    moves[n][i] = mv
                if i % 8 == 0:
                    for n in order:
                        t = time.perf_counter()
                        engines[n].ping()
                        pings[n].append(time.perf_counter() - t)
            for n in names:
                cpu[n] += cpu_seconds(pids[n]) - cpu0[n]
                times[n] += this_round[n]
                round_medians[n].append(statistics.median(this_round[n]))
    finally:
        for eng in engines.values():
            eng.quit()
    after = machine_note()
    lc0_name = names[0]
    same = {n: sum(a == b for a, b in zip(moves[n], moves[lc0_name])) for n in names}
    med = {n: statistics.median(times[n]) for n in names}
    lines = [
        f"## One-position latency: pdx uci vs lc0, `go nodes 1`, Maia-{args.rating}",
        "",
        f"{len(boards)} positions (Lc0's games from {args.openings} bundled openings, {args.plies} "
        f"plies each, with history) × {args.rounds} rounds, engines interleaved per position; "
        f"python-chess UCI round trip (`position ... moves ...` + `go nodes 1` → `bestmove`).",
        "",
        "| engine | ms/move, median (min–max of round medians) | ratio vs lc0 | engine CPU ms/move "
        "| isready round trip, ms | same move as lc0 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    n_moves = len(boards) * args.rounds
    cpu_ms = {n: cpu[n] / n_moves * 1e3 for n in names}
    for n in names:
        rm = list(round_medians[n])
        lines.append(
            f"| {n} | {med[n] * 1e3:.3f} ({min(rm) * 1e3:.3f}–{max(rm) * 1e3:.3f}) | "
            f"{med[n] / med[lc0_name]:.2f}x | {cpu_ms[n]:.3f} | "
            f"{statistics.median(pings[n]) * 1e3:.3f} | "
            f"{same[n]}/{len(boards)} |"
        )
    pdx1 = names[1]
    ratio = med[pdx1] / med[lc0_name]
    lines += [
        "",
        f"**{pdx1} / lc0: {ratio:.2f}x — {verdict(ratio, TARGET, higher_is_better=False)}.**",
        "",
        f"Machine before: {before}.",
        f"Machine after: {after}.",
    ]
    md = "\n".join(lines)
    print(md)
    if not args.no_report:
        write_report(
            "lc0_latency",
            md,
            {
                "rating": args.rating,
                "positions": len(boards),
                "rounds": args.rounds,
                "ms_median": {n: med[n] * 1e3 for n in names},
                "ms_round_medians": {n: [x * 1e3 for x in round_medians[n]] for n in names},
                "isready_ms": {n: statistics.median(pings[n]) * 1e3 for n in names},
                "engine_cpu_ms_per_move": cpu_ms,
                "same_move_as_lc0": same,
                "ratio": ratio,
                "target": TARGET,
                "met": ratio <= TARGET,
                "machine_before": before,
                "machine_after": after,
            },
        )
    if any(same[n] != len(boards) for n in names):
        raise BenchmarkError(f"moves differ from Lc0's: {same} of {len(boards)} positions agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
