"""``pdx eval coverage``: trajectory coverage Ω^N_K (paper Section 3.1, Eq. 8; Figures 7 and 10).

From a root position, complete depth-``N`` lines ξ are drawn from the model's
play distribution p (``--play``: μ for adaptive-temperature models, π for τ ≡ 1)
*without replacement*: a draw walks down the tree choosing each move with
probability proportional to the mass of the lines not yet drawn below it; the
drawn line's mass p(ξ|s) = Π_t p(a_t|s_{t−1}) (original policy) is then
subtracted along its path, so the next draw samples the remaining lines,
renormalized. Ω^N_K = Σ_{i≤K} p(ξ_i|s), averaged over seeds, and the number of
draws needed to reach ``--target`` (0.95) is reported as mean ± std over seeds.
A line that ends in a finished game (mate, stalemate, insufficient material,
75-move or fivefold rule) before depth N is a complete line of its own.

The tree is arrays of nodes and edges, expanded lazily and shared by all seeds
(each seed only resets the remaining masses): a draw that reaches an
unexpanded node expands it together with the ``--expand-batch`` − 1 heaviest
not-yet-expanded frontier nodes in one batched network call (``0``: every
frontier node at once, i.e. breadth-first, one call per depth). Each node's
distribution is computed once. Remaining masses are exact sums: after a draw
the remaining mass of each edge on its path is recomputed as the sum over its
child's edges, so an exhausted subtree holds exactly 0. The tree logic takes
any :class:`PolicySource` — a network (:class:`NetworkPolicy`) or, in tests, a
pure function of the path.

JSON (``--json OUT``; ``null`` for unavailable numbers)::

    {"command": "eval coverage", "depths": [N, ...], "max_draws": Kmax, "seeds": [0, ..., S-1],
     "target": 0.95, "until": "target" | "draws", "expand_batch": B,
     "positions": [{"name", "moves": [uci, ...] (from the standard start), "fen", "ply", "legal_moves"}],
     "models": [{"name", "play": "raw" | "adaptive"}],
     "results": [                              # one per (model, depth, position), in that order
       {"model", "play", "position", "depth",
        "draws_to_target": {"per_seed": [int | null], "mean", "std" (ddof=1), "reached": n, "seeds": S},
        "curve": {"k": [K, ...], "mean": [Ω, ...], "std": [...]},   # Figure 7: ~200 log-spaced K (and
                                                # every power of ten) from 1 to the last K all seeds reach
        "omega_at": {"1": Ω, "10": Ω, ...},    # mean Ω at powers of ten the curve reaches
        "draws": [per-seed draws made], "final_omega": [per-seed Ω at its last draw],
        "exhausted": [per-seed bool: every line of positive mass drawn],
        "tree": {"nodes_expanded", "positions_evaluated", "edges", "batches"},
        "seconds": {"expand", "draw" (wall), "cpu" (process CPU time, all threads)}}],
     "png": path | null}
"""

from __future__ import annotations

import argparse
import math
import random
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import chess
import numpy as np
import torch

from pdx_lightning import argtypes
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import index_to_move, indices_mask, legal_indices
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.play import (
    TABIYAS,
    ModelCache,
    PlayModeError,
    add_model_arguments,
    game_over,
    play_distribution,
    resolve_play_modes,
    root_board,
    write_json,
)
from pdx_lightning.nets.inference import device_of, evaluate
from pdx_lightning.runtime.progress import progress

TICK = 1000  # draws between progress reports of run_seed


class PolicySource(Protocol):
    """What the coverage tree needs from a policy. States are opaque handles."""

    def root(self) -> Any: ...

    def child(self, state: Any, label: int) -> Any: ...

    def expand(self, states: Sequence[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per state: ``(labels int64 (c,), probs float64 (c,))``; ``c = 0`` marks a finished game."""


class NetworkPolicy:
    """A network's play distribution at python-chess boards (move stacks carry the full history)."""

    def __init__(self, model: torch.nn.Module, root: chess.Board, mode: str, micro_batch: int = 512) -> None:
        self.model, self._root, self.mode, self.micro_batch = model, root, mode, micro_batch
        self.positions = 0

    def root(self) -> chess.Board:
        return self._root.copy()

    def child(self, board: chess.Board, label: int) -> chess.Board:
        b = board.copy()
        b.push(index_to_move(int(label), b))
        return b

    def expand(self, boards):
        out = [(np.zeros(0, np.int64), np.zeros(0))] * len(boards)
        live, idx = [], []
        for i, b in enumerate(boards):
            legal = list(b.legal_moves)
            if not game_over(b, legal):
                live.append(i)
                idx.append(legal_indices(b, legal))
        if live:
            mask = indices_mask(idx)  # (L, 4288)
            x = torch.from_numpy(encode_boards([boards[i] for i in live]))  # (L, 112, 8, 8)
            log_pi, wdl = evaluate(self.model, x, mask, self.micro_batch)
            log_p = play_distribution(log_pi, wdl, mask, self.mode).double().numpy()
            for r, i in enumerate(live):
                p = np.exp(log_p[r, idx[r]])
                out[i] = (idx[r], p / p.sum())  # float64 renormalization: total line mass is 1
            self.positions += len(live)
        return out


class CoverageTree:
    """Depth-``depth`` line tree of one policy from one root, expanded lazily, shared across seeds."""

    def __init__(self, source: PolicySource, depth: int, expand_batch: int = 1024) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        if expand_batch < 0:
            raise ValueError(f"expand_batch must be >= 0 (0 = whole frontier), got {expand_batch}")
        self.source, self.depth, self.expand_batch = source, depth, expand_batch
        # nodes (Python lists: the draw loop indexes them one element at a time)
        self.node_depth, self.node_start, self.node_count = [0], [-1], [0]
        self.node_edge, self.node_state = [-1], [source.root()]
        # edges: absolute original mass p(line down to and including this move), label, child node, remaining mass
        self.edge_mass, self.edge_label, self.edge_child = array("d"), array("q"), array("q")
        self.edge_parent = array("q")
        self.rem = array("d")
        self.root_rem = 1.0
        self._cand_edge: list[int] = []  # edges into not-yet-expanded internal nodes (prefetch pool)
        self._cand_mass: list[float] = []
        self.batches = 0
        self.expand_seconds = 0.0

    @property
    def nodes_expanded(self) -> int:
        return sum(1 for s in self.node_start if s >= 0)

    def reset(self) -> None:
        """Forget every draw (a new seed): remaining mass = original mass everywhere."""
        self.rem = array("d", self.edge_mass)
        self.root_rem = 1.0 if self.node_start[0] < 0 else math.fsum(self.rem[: self.node_count[0]])

    def _new_node(self, edge: int) -> int:
        parent = self.edge_parent[edge]
        v = len(self.node_depth)
        self.node_depth.append(self.node_depth[parent] + 1)
        self.node_start.append(-1)
        self.node_count.append(0)
        self.node_edge.append(edge)
        self.node_state.append(self.source.child(self.node_state[parent], self.edge_label[edge]))
        self.edge_child[edge] = v
        return v

    def _expand(self, required: int) -> None:
        t0 = time.perf_counter()
        todo = [required]
        if self._cand_edge and self.expand_batch != 1:
            # the pool holds exactly the unexpanded internal nodes reachable by a draw (mass > 0)
            e = np.asarray(self._cand_edge, dtype=np.int64)
            m = np.asarray(self._cand_mass)
            keep = e != self.node_edge[required]
            e, m = e[keep], m[keep]
            n = len(e) if self.expand_batch == 0 else min(len(e), self.expand_batch - 1)
            chosen = np.zeros(len(e), bool)
            chosen[np.argpartition(-m, n - 1)[:n] if 0 < n < len(e) else slice(0, n)] = True
            self._cand_edge, self._cand_mass = e[~chosen].tolist(), m[~chosen].tolist()
            for edge in e[chosen].tolist():
                v = self.edge_child[edge]
                todo.append(self._new_node(edge) if v < 0 else v)
        results = self.source.expand([self.node_state[v] for v in todo])
        for v, (labels, probs) in zip(todo, results):
            mass = 1.0 if v == 0 else self.edge_mass[self.node_edge[v]]
            start = len(self.edge_mass)
            self.node_start[v], self.node_count[v] = start, len(labels)
            masses = (mass * np.asarray(probs, dtype=np.float64)).tolist()
            self.edge_mass.extend(masses)
            self.rem.extend(masses)
            self.edge_label.extend(np.asarray(labels, dtype=np.int64).tolist())
            self.edge_child.extend([-1] * len(labels))
            self.edge_parent.extend([v] * len(labels))
            if self.node_depth[v] + 1 == self.depth:
                self.node_state[v] = None  # its children are leaves: its board is no longer needed
            elif self.expand_batch != 1:  # its children are internal nodes: the prefetch pool
                self._cand_edge.extend(i for i, w in enumerate(masses, start) if w > 0)
                self._cand_mass.extend(w for w in masses if w > 0)
        self.batches += 1
        self.expand_seconds += time.perf_counter() - t0

    def draw(self, rand: Callable[[], float]) -> float:
        """One draw without replacement; returns the drawn line's original mass (0 once all is drawn)."""
        if self.root_rem <= 0.0:
            return 0.0
        rem, start, count, child, N = self.rem, self.node_start, self.node_count, self.edge_child, self.depth
        v, d, tot, path = 0, 0, self.root_rem, []
        while True:
            s = start[v]
            if s < 0:
                self._expand(v)
                s = start[v]
            c = count[v]
            if c == 0:
                break  # a finished game: the line ends at v
            x, acc, e = rand() * tot, 0.0, -1
            for i in range(s, s + c):
                r = rem[i]
                if r > 0.0:
                    acc += r
                    e = i
                    if acc > x:
                        break
            if e < 0:  # only when masses underflowed to 0 below a positive edge: a line of mass 0
                e = s + c - 1
            path.append(e)
            d += 1
            if d == N:
                break
            tot = rem[e]
            v = child[e]
            if v < 0:
                v = self._new_node(e)
        if not path:  # the root itself is a finished game: one empty line of mass 1
            self.root_rem = 0.0
            return 1.0
        mass = self.edge_mass[path[-1]]
        rem[path[-1]] = 0.0
        for e in reversed(path[:-1]):  # exact remaining mass = sum over the child's edges
            w = child[e]
            s = start[w]
            rem[e] = sum(rem[s : s + count[w]])
        self.root_rem = sum(rem[0 : count[0]])
        return mass

    def run_seed(
        self, seed: int, max_draws: int, target: float | None = None, on_draws: Callable[[int], None] | None = None
    ) -> tuple[np.ndarray, bool]:
        """Masses of successive draws for one seed, stopping at ``max_draws``, at ``target`` (if given)
        or when every line of positive mass is drawn; returns ``(masses, exhausted)``.

        ``on_draws(n)`` is told of the draws made, every :data:`TICK` draws and at the end (a progress bar)."""
        self.reset()
        rand = random.Random(seed).random
        masses: list[float] = []
        total = 0.0
        while len(masses) < max_draws and self.root_rem > 0.0:
            m = self.draw(rand)
            masses.append(m)
            total += m
            if on_draws is not None and len(masses) % TICK == 0:
                on_draws(TICK)
            if target is not None and total >= target:
                break
        if on_draws is not None and len(masses) % TICK:
            on_draws(len(masses) % TICK)
        return np.asarray(masses, dtype=np.float64), self.root_rem <= 0.0


# ---------------------------------------------------------------- seeds → curve and draws-to-target


def summarize_seeds(runs: Sequence[np.ndarray], exhausted: Sequence[bool], target: float, n_points: int = 200) -> dict:
    """Curve (mean/std of Ω_K over seeds) and draws-to-target statistics from per-seed draw masses.

    An exhausted seed's Ω stays at its final value (every further draw adds 0), so its curve is
    extended exactly; otherwise the curve ends at the fewest draws any seed made, where all seeds
    have a value.
    """
    cums = [np.cumsum(m) for m in runs]
    per_seed = [int(np.argmax(c >= target)) + 1 if c.size and c[-1] >= target else None for c in cums]
    reached = [k for k in per_seed if k is not None]
    lengths = [len(c) for c, ex in zip(cums, exhausted) if not ex]
    k_end = min(lengths) if lengths else max(len(c) for c in cums)
    decades = [10**j for j in range(13) if 10**j <= k_end]
    ks = np.round(np.logspace(0, math.log10(max(k_end, 1)), n_points)).astype(np.int64)
    ks = np.unique(np.concatenate([ks, decades, [k_end]]))
    ks = ks[(ks >= 1) & (ks <= k_end)]
    at = np.stack([c[np.minimum(ks, len(c)) - 1] for c in cums])  # (S, points)
    mean, std = at.mean(0), (at.std(0, ddof=1) if len(cums) > 1 else np.zeros(len(ks)))
    omega_at = {str(k): float(mean[ks == k][0]) for k in decades}
    return {
        "draws_to_target": {
            "per_seed": per_seed,
            "reached": len(reached),
            "seeds": len(runs),
            "mean": float(np.mean(reached)) if reached else None,
            "std": float(np.std(reached, ddof=1)) if len(reached) > 1 else None,
        },
        "curve": {"k": ks.tolist(), "mean": mean.tolist(), "std": std.tolist()},
        "omega_at": omega_at,
        "draws": [len(c) for c in cums],
        "final_omega": [float(c[-1]) if c.size else 0.0 for c in cums],
        "exhausted": list(map(bool, exhausted)),
    }


def coverage(
    source: PolicySource,
    depth: int,
    seeds: Sequence[int],
    max_draws: int,
    target: float = 0.95,
    until: str = "target",
    expand_batch: int = 1024,
    progress_desc: str | None = None,
) -> dict:
    """Ω^N_K for one policy and root over ``seeds`` (one shared, lazily expanded tree); see module docstring.

    ``progress_desc`` names a progress bar counting draws (None: no bar); its total is known only for
    ``until="draws"`` (a seed stopping at the target stops early), the postfix tells the seed."""
    if until not in ("target", "draws"):
        raise ValueError(f"until must be 'target' or 'draws', got {until!r}")
    tree = CoverageTree(source, depth, expand_batch)
    runs, exhausted = [], []
    t0, c0 = time.perf_counter(), time.process_time()
    budget = len(seeds) * max_draws if until == "draws" else None
    with progress(total=budget, desc=progress_desc or "", unit="draw", disable=progress_desc is None) as bar:
        for j, seed in enumerate(seeds):
            bar.set_postfix_str(f"seed {j + 1}/{len(seeds)}", refresh=False)
            m, ex = tree.run_seed(seed, max_draws, target if until == "target" else None, on_draws=bar.update)
            if budget is not None:
                bar.update(max_draws - len(m))  # an exhausted seed makes no more draws
            runs.append(m)
            exhausted.append(ex)
    total = time.perf_counter() - t0
    out = summarize_seeds(runs, exhausted, target)
    out["tree"] = {"nodes_expanded": tree.nodes_expanded, "edges": len(tree.edge_mass), "batches": tree.batches}
    out["seconds"] = {
        "expand": tree.expand_seconds,
        "draw": total - tree.expand_seconds,
        "cpu": time.process_time() - c0,
    }
    return out


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--position",
        action="append",
        help=f"root: {', '.join(TABIYAS)}, a UCI move list from the start or a FEN; "
        f"repeatable (default: all four tabiyas)",
    )
    parser.add_argument(
        "--depth",
        type=argtypes.int_in(1, 20),
        nargs="+",
        default=[4],
        help="line depth N in plies; several (e.g. --depth 3 4) measure each (default 4)",
    )
    parser.add_argument(
        "--draws", type=argtypes.positive_int, default=200_000, help="maximum draws K per seed (default 200000)"
    )
    parser.add_argument(
        "--seeds", type=argtypes.positive_int, default=10, help="sampling seeds 0..S-1 (default 10; the paper: 100)"
    )
    parser.add_argument(
        "--target",
        type=argtypes.finite_float(0, 1, lo_open=True),
        default=0.95,
        help="coverage whose draws-to-reach are reported (default 0.95)",
    )
    parser.add_argument(
        "--until",
        choices=("target", "draws"),
        default="target",
        help="a seed stops at the target (the paper's curves end there) or after --draws",
    )
    parser.add_argument(
        "--expand-batch",
        type=argtypes.nonnegative_int,
        default=1024,
        help="nodes per batched expansion: the needed one + the heaviest unexpanded frontier "
        "nodes (default 1024); 0 = the whole frontier (breadth-first). Speed and memory only",
    )
    parser.add_argument("--png", metavar="OUT", help="write the coverage curves (one panel per position)")


def render(results: list[dict], target: float) -> str:
    """Markdown: draws to ``target`` and Ω at powers of ten, one row per (depth, position, model, play)."""
    out = [f"## Trajectory coverage Ω^N_K (Eq. 8): draws to {100 * target:g}% (mean ± std over seeds)", ""]
    rows = []
    for r in results:
        om, sec = r["omega_at"], r["seconds"]
        rows.append(
            [
                r.get("depth", ""),
                r["position"],
                r["model"],
                r["play"],
                draws_cell(r),
                *[f"{om[k]:.3g}" if k in om else "" for k in ("1", "10", "100", "1000")],
                r["tree"]["nodes_expanded"],
                f"{sec['expand']:.1f} + {sec['draw']:.1f}",
            ]
        )
    out.append(
        markdown_table(
            [
                "N",
                "Position",
                "Model",
                "Samp.",
                "Draws to target",
                "Ω_1",
                "Ω_10",
                "Ω_100",
                "Ω_1000",
                "Nodes",
                "Seconds (expand + draw)",
            ],
            rows,
        )
    )
    return "\n".join(out)


def draws_cell(r: dict) -> str:
    """``mean ± std`` draws to the target over seeds, ``> K`` when no seed reached it, and how many did."""
    d = r["draws_to_target"]
    cell = f"> {max(r['draws'])}" if d["mean"] is None else f"{d['mean']:.0f} ± {d['std'] or 0:.0f}"
    if d["mean"] is not None and d["reached"] < d["seeds"]:
        cell += f" ({d['reached']}/{d['seeds']} seeds)"
    return cell


def plot(results: list[dict], positions: list[str], target: float, path: str) -> None:
    """One panel per (depth, position): rows are depths, columns positions."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    depths = sorted({r["depth"] for r in results})
    fig, axes = plt.subplots(
        len(depths), len(positions), figsize=(4.5 * len(positions), 3.6 * len(depths)), squeeze=False
    )
    colors: dict[str, str] = {}
    for row, depth in zip(axes, depths):
        for ax, pos in zip(row, positions):
            for r in (r for r in results if r["position"] == pos and r["depth"] == depth):
                c = colors.setdefault(r["model"], f"C{len(colors) % 10}")
                ax.plot(
                    r["curve"]["k"],
                    r["curve"]["mean"],
                    color=c,
                    ls="--" if r["play"] == "adaptive" else "-",
                    label=f"{r['model']} ({r['play']})",
                )
            ax.axhline(target, color="gray", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_ylim(0, 1.02)
            ax.set_title(pos, fontsize=9)
            ax.set_xlabel("draws K")
        row[0].set_ylabel(rf"$\Omega^{{{depth}}}_K$")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    try:
        plays = resolve_play_modes(args.model, args.play)
        roots = [root_board(p) for p in (args.position or list(TABIYAS))]
    except (PlayModeError, ValueError) as e:
        print(f"error: {e}")
        return 2
    if min(args.depth) < 1 or args.draws < 1 or args.seeds < 1 or not 0 < args.target <= 1:
        print("error: need --depth >= 1, --draws >= 1, --seeds >= 1 and 0 < --target <= 1")
        return 2
    models = ModelCache(args.weights, device_of(args.device))
    results = []
    for name, mode in zip(args.model, plays):
        for depth in args.depth:
            for pos, board in roots:
                src = NetworkPolicy(models(name), board, mode, args.micro_batch)
                r = coverage(
                    src,
                    depth,
                    range(args.seeds),
                    args.draws,
                    args.target,
                    args.until,
                    args.expand_batch,
                    progress_desc=f"coverage depth {depth}",
                )
                r["tree"]["positions_evaluated"] = src.positions
                results.append({"model": name, "play": mode, "position": pos, "depth": depth, **r})
                print(
                    f"{name} ({mode}) @ {pos}, depth {depth}: draws to target {r['draws_to_target']['per_seed']} "
                    f"[{r['seconds']['expand']:.1f}s expand, {r['seconds']['draw']:.1f}s draw]",
                    flush=True,
                )
    print(render(results, args.target))
    names = [p for p, _ in roots]
    if args.png:
        plot(results, names, args.target, args.png)
    if args.json:
        write_json(
            args.json,
            {
                "command": "eval coverage",
                "depths": args.depth,
                "max_draws": args.draws,
                "seeds": list(range(args.seeds)),
                "target": args.target,
                "until": args.until,
                "expand_batch": args.expand_batch,
                "positions": [
                    {
                        "name": p,
                        "moves": [m.uci() for m in b.move_stack],
                        "fen": b.fen(),
                        "ply": len(b.move_stack),
                        "legal_moves": b.legal_moves.count(),
                    }
                    for p, b in roots
                ],
                "models": [{"name": n, "play": m} for n, m in zip(args.model, plays)],
                "results": results,
                "png": args.png,
            },
        )
    return 0
