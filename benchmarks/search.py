"""pdx's batched search against the real Lc0, nodes per second on one core, and the search's own overhead.

    .venv/bin/python benchmarks/search.py [--nodes 64] [--positions 128] [--repeats 3]

Network: Maia-1900 (``base:maia-1900``; Lc0 reads the same file). Positions: the first ``--positions``
real-game positions of ``tests/fixtures/search_golden/golden.json`` (with their histories). Every search
starts afresh (an empty tree and cache) at ``--nodes`` nodes.

* **Lc0**: the real Lc0 v0.31 (``.venv/bin/lc0``, eigen backend, one thread, its default batched search
  settings), ``ucinewgame`` + ``position`` + ``go nodes N`` per position; time from ``go`` to
  ``bestmove``; nodes = the root visits it reports.
* **pdx, 1 game in flight**: ``BatchedSearch`` with one slot, the positions one after another.
* **pdx, B games in flight**: all positions at once (one network call per simulation wave).

For pdx the time splits into the network (the forward passes, timed inside ``BatchedSearch._network``:
the seam's forward, the gather of the legal logits, the WDL softmax) and the search's own work: tree,
move generation, encoding (the compiled core's gather/scatter) and the Python glue around them. The
ratio lines are what the issue's targets read (``pdx B / lc0 >= 2``, ``overhead share <= 0.15``).
Medians over ``--repeats`` runs, each engine's runs alternating on the same machine, one thread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
from pathlib import Path

import torch

from pdx_lightning.nets import load_model
from pdx_lightning.nets.bundled import resolve_bundled
from pdx_lightning.search import BatchedSearch, SearchSettings

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "search_golden" / "golden.json"


def positions(n: int) -> list:
    import chess  # noqa: PLC0415

    out = []
    for r in json.loads(GOLDEN.read_text())["records"][:n]:
        b = chess.Board()
        for m in r["moves"].split():
            b.push_uci(m)
        out.append((r["moves"], b))
    return out


def lc0_run(moves_list: list[str], nodes: int) -> tuple[float, int]:
    exe = ROOT / ".venv" / "bin" / "lc0"
    p = subprocess.Popen(
        [str(exe), f"--weights={resolve_bundled('maia-1900')}", "--backend=eigen", "--threads=1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
    )
    assert p.stdin and p.stdout

    def send(line: str) -> None:
        p.stdin.write(line + "\n")
        p.stdin.flush()

    def until(prefix: str) -> list[str]:
        lines = []
        while not (line := p.stdout.readline()).startswith(prefix):
            if not line:
                raise RuntimeError("lc0 exited")
            lines.append(line)
        return lines

    send("uci")
    until("uciok")
    send("isready")
    until("readyok")
    total_t, total_n = 0.0, 0
    for moves in moves_list:
        send("ucinewgame")
        send("position startpos" + (f" moves {moves}" if moves else ""))
        send("isready")
        until("readyok")
        t = time.perf_counter()
        send(f"go nodes {nodes}")
        lines = until("bestmove")
        total_t += time.perf_counter() - t
        infos = [ln.split() for ln in lines if ln.startswith("info depth")]
        total_n += int(infos[-1][infos[-1].index("nodes") + 1])
    send("quit")
    p.wait(timeout=30)
    return total_t, total_n


class TimedSearch(BatchedSearch):
    """BatchedSearch whose network calls are timed (everything else is the search's own work)."""

    net_s = 0.0

    def _network(self, planes, legal):
        t = time.perf_counter()
        out = super()._network(planes, legal)
        self.net_s += time.perf_counter() - t
        return out


def pdx_run(model, boards: list, nodes: int, in_flight: int) -> tuple[float, int, float]:
    s = TimedSearch(model, SearchSettings(nodes=nodes), slots=in_flight, reuse=False)
    s.search(boards[:in_flight])  # warm-up (allocations, oneDNN primitives)
    s.net_s = 0.0
    t = time.perf_counter()
    n = 0
    for i in range(0, len(boards), in_flight):
        n += sum(r.root.root_visits for r in s.search(boards[i : i + in_flight]))
    return time.perf_counter() - t, n, s.net_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--positions", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model("base:maia-1900").eval()
    pos = positions(args.positions)
    boards = [b for _, b in pos]
    rows: dict[str, list] = {"lc0": [], "pdx 1": [], f"pdx {args.positions}": []}
    for _ in range(args.repeats):
        t, n = lc0_run([m for m, _ in pos], args.nodes)
        rows["lc0"].append((n / t, t, n, None))
        for k in (1, args.positions):
            t, n, net = pdx_run(model, boards, args.nodes, k)
            rows[f"pdx {k}"].append((n / t, t, n, net / t))
    print(f"Maia-1900, {args.positions} real positions, {args.nodes} nodes each, one thread, medians of {args.repeats}")
    print("| engine (games in flight) | nodes/s | s | nodes | network share |")
    print("|---|---:|---:|---:|---:|")
    med = {}
    for name, rs in rows.items():
        nps = statistics.median(r[0] for r in rs)
        share = statistics.median(r[3] for r in rs) if rs[0][3] is not None else None
        med[name] = (nps, share)
        t = statistics.median(r[1] for r in rs)
        print(f"| {name} | {nps:,.0f} | {t:.2f} | {rs[0][2]:,} | {'' if share is None else f'{share:.3f}'} |")
    big = f"pdx {args.positions}"
    print(f"ratio pdx {args.positions} / lc0 nodes/s: {med[big][0] / med['lc0'][0]:.2f} (target >= 2)")
    print(f"ratio pdx 1 / lc0 nodes/s: {med['pdx 1'][0] / med['lc0'][0]:.2f}")
    print(f"search overhead share at {args.positions} in flight: {1 - med[big][1]:.3f} (target <= 0.15)")
    print(f"search overhead share at 1 in flight: {1 - med['pdx 1'][1]:.3f}")


if __name__ == "__main__":
    main()
