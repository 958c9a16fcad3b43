"""The games of one shard of a match, from a PGN of any of its games (``run.sh`` with ``SHARD=K/N``).

``pdx arena --shard K/N`` plays the opening pairs p with p mod N = K - 1; a match's saved games
(``records/partial/``, any shards joined) are split so that each shard resumes from its own games
only, and the shards' files, joined again, hold every game once. Games without a result (``*``) are
left out (the arena plays them again); a game in the input twice (files that overlap) is written once,
and two different games of one round are an error. ``1 1`` joins files: every finished game once.

    xz -dc records/partial/MATCH.pgn.xz | python reports/beyond_paper/shard_games.py K N > MATCH.shardKofN.pgn
    cat MATCH.pgn MATCH.shard*.pgn | python reports/beyond_paper/shard_games.py 1 1 > joined.pgn
"""

from __future__ import annotations

import sys
from typing import TextIO

from pdx_lightning.evaluation.arena_loop import in_shard
from pdx_lightning.evaluation.match_list import join_games


def shard_games(src: TextIO, dst: TextIO, k: int, n: int) -> int:
    """Write the finished games of ``src`` whose ``Round`` slot lies in shard ``k`` of ``n``, each once
    (``pdx matches``' :func:`~pdx_lightning.evaluation.match_list.join_games`); their count."""
    in_shard(0, k, n)  # checks k and n
    games = join_games([src.read()], (k, n))
    for slot in sorted(games):
        print(games[slot], file=dst, end="\n\n")
    return len(games)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    kept = shard_games(sys.stdin, sys.stdout, int(argv[0]), int(argv[1]))
    print(f"shard {argv[0]}/{argv[1]}: {kept} games", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
