"""The identity check of an arena between two players that are the same network: every game a mirror.

    .venv/bin/python benchmarks/arena_mirror.py reports/maia/arena.pgn maia-1900 lc0-maia-1900

``pdx arena`` plays every opening from both colours. When players A and B compute the same argmax
(pdx's Maia-1900 and the real Lc0 on the same file), the game "A White, B Black" and the game "B White,
A Black" from the same opening are the same moves with the colours exchanged, so the two games score
1–1 between them and the pair is exactly even. This reads the PGN, pairs the games of A and B by
opening, and reports every opening whose two games differ (the first differing ply). Also compared:
A's and B's games against every third player, opening by opening (same opponent, same colour, same
opening: the same game when the opponent is deterministic, e.g. Stockfish at a node limit).
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import chess.pgn


def read(path: str) -> list[chess.pgn.Game]:
    games = []
    with open(path) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            games.append(g)
    return games


def moves(g: chess.pgn.Game) -> list[str]:
    return [m.uci() for m in g.mainline_moves()]


def first_diff(a: list[str], b: list[str]) -> int | None:
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k + 1
    return None if len(a) == len(b) else min(len(a), len(b)) + 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pgn")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    games = read(args.pgn)
    by = defaultdict(dict)              # opening -> (white, black) -> game
    for g in games:
        h = g.headers
        by[h["Opening"]][(h["White"], h["Black"])] = g
    mirrors = broken = 0
    out = []
    for opening, gs in sorted(by.items()):
        ab, ba = gs.get((args.a, args.b)), gs.get((args.b, args.a))
        if ab is None or ba is None:
            continue
        k = first_diff(moves(ab), moves(ba))
        if k is None and ab.headers["Result"] == ba.headers["Result"]:    # same moves, same result
            mirrors += 1
        else:
            broken += 1
            out.append(f"- {opening}: games differ from ply {k} ({ab.headers['Result']} / "
                       f"{ba.headers['Result']})")
    same, differ = defaultdict(int), defaultdict(int)
    others = {p for gs in by.values() for w, b in gs for p in (w, b)} - {args.a, args.b}
    for opening, gs in sorted(by.items()):
        for o in sorted(others):
            for x, y in (((args.a, o), (args.b, o)), ((o, args.a), (o, args.b))):
                if x in gs and y in gs:
                    if moves(gs[x]) == moves(gs[y]):
                        same[o] += 1
                    else:
                        differ[o] += 1
    print(f"{args.a} vs {args.b}: {mirrors} of {mirrors + broken} opening pairs are mirror games "
          f"(same moves and result, colours exchanged: 1-1 per pair)")
    print("\n".join(out))
    print(f"{args.a} and {args.b} against each other player, same opening and colour: identical games / all")
    for o in sorted(others):
        print(f"- {o}: {same[o]}/{same[o] + differ[o]}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
