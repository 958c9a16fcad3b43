"""Puzzle scoring (Section 3.1): argmax accuracy, multi-solution credit, solution NLL ℓ and p* (Eq. 9).

Scoring is teacher-forced along each puzzle's marked line, batched across the
whole suite: solver ply ``k`` of every puzzle whose line reaches it is one
network call (boards encoded with their true move history, evaluated in
micro-batches). Every solver position is scored, so p* and the per-position
results exist for failed puzzles too.

Multi-solution rule. At solver position ``s_k`` the accepted set ``W(s_k)`` is
the marked move ∪ the suite's ``AltMoves`` for that ply (generated suites:
every mate-preserving move, found by Stockfish) ∪ every move that checkmates
at once (lichess accepts any mating move). For Lichess and Ruoss rows, which
carry no ``AltMoves``, this is the paper's "optimal mate or the marked move"
with optimal mates found only for mate-in-1; the full set needs ``AltMoves``.

* ply ``k`` is correct iff ``argmax π(·|s_k) ∈ W(s_k)``;
* a puzzle is solved iff every solver ply is correct, except that an argmax
  that checkmates ends the puzzle won (later plies are not required, as in
  lichess and Ruoss et al.'s scorer); a correct non-mating alternative is
  followed by the marked line's next position (positions are scored
  independently: the policy is Markovian);
* ``ℓ = −Σ_k log Σ_{a∈W(s_k)} π(a|s_k)`` (Eq. 9), ``p* = e^{−ℓ}``, under the
  untempered policy; geometric mean = ``exp(−mean ℓ)``, arithmetic = mean p*.
* ``move_by="value"`` (``--move-by value``): the move at each solver ply is the value head's one-ply
  choice (``evaluation.value_choice``) instead of the policy's argmax; correctness and "solved" are
  then the value head's, ℓ and p* still the policy's.
* ``move_by="search"`` (``--nodes N``): the move at each solver ply is the best move of pdx's search
  (:mod:`pdx_lightning.search`, Lc0 v0.31's PUCT) at N nodes, every position searched afresh; ℓ and
  p* still the policy's.
* Paired comparisons are per-puzzle log-ratios ``log p*_B − log p*_A`` (= ℓ_A − ℓ_B),
  reported as the probability ratio ``exp(mean)`` with a t-interval.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from pdx_lightning import argtypes
from pdx_lightning.chesscore.moves import index_to_move, move_to_index
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.stats import (
    RATING_BINS,
    assign_bins,
    bin_edges_labels,
    mcnemar_exact,
    mean_interval,
    wilson_interval,
)
from pdx_lightning.evaluation.suite import Puzzle, Suite, load_suite
from pdx_lightning.evaluation.value_choice import value_choices
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.nets.inference import device_of, evaluate_boards
from pdx_lightning.runtime.jsonio import write_json
from pdx_lightning.runtime.progress import progress

MOVE_BY = {
    "policy": "the policy's argmax",
    "value": "the value head's one-ply choice: the move whose resulting position it rates best for the mover",
    "search": "pdx's PUCT search (Lc0 v0.31's semantics) at --nodes, its most visited move",
}
SEARCH_GROUP = 512  # positions searched at once (the wave's batch; bounds the planes' memory)


class PuzzleArgumentError(UserError, ValueError):
    """Options of ``pdx eval puzzles`` that cannot go together (says which)."""


MULTI_SOLUTION_RULE = (
    "accepted = marked move + AltMoves + any immediate checkmate; solved = every solver "
    "ply's argmax accepted, an argmax checkmate ends the puzzle won"
)


@dataclass
class SuiteResult:
    """Per-puzzle and per-position results of :func:`score_suite`.

    Per-position arrays are flat over all solver positions; puzzle ``i``'s
    plies are ``offsets[i]:offsets[i+1]`` (see :meth:`plies`).
    """

    ids: list[str]
    rating: np.ndarray  # (N,) float64, NaN when unrated
    difficulty: np.ndarray  # (N,) float64 binning value (Difficulty, else Rating), NaN if none
    depth: np.ndarray  # (N,) int64 solver moves
    solved: np.ndarray  # (N,) bool
    first_fail: np.ndarray  # (N,) int64 0-based solver ply of the first wrong argmax; -1 when solved
    log_p_star: np.ndarray  # (N,) float64, −ℓ of Eq. 9
    offsets: np.ndarray  # (N+1,) int64
    ply_correct: np.ndarray  # (P,) bool: argmax ∈ W(s)
    ply_mate: np.ndarray  # (P,) bool: the argmax checkmates at once
    ply_log_p: np.ndarray  # (P,) float64 log Σ_{a∈W(s)} π(a|s)
    ply_rank: np.ndarray  # (P,) int64 1 + number of moves strictly more probable than the best accepted
    ply_top_log_p: np.ndarray  # (P,) float64 log π of the argmax
    ply_value: np.ndarray  # (P,) float64 W − L of the value head, side to move's view
    ply_move: list[str]  # (P,) UCI of the argmax (of the value head's choice with move_by="value")
    seconds: float = 0.0
    move_by: str = "policy"  # what chose the moves scored as correct: "policy" (argmax) or "value" (one ply)

    @property
    def n_positions(self) -> int:
        return int(self.offsets[-1])

    def plies(self, i: int) -> slice:
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def ply_puzzle(self) -> np.ndarray:
        """(P,) puzzle index of each solver position."""
        return np.repeat(np.arange(len(self.ids)), self.depth)


def _indices(moves, turn) -> list[int]:
    return [move_to_index(m, turn) for m in moves]


def _padded(rows: list[list[int]]) -> torch.Tensor:
    out = torch.full((len(rows), max(1, *map(len, rows))), -1, dtype=torch.long)
    for r, idx in enumerate(rows):
        out[r, : len(idx)] = torch.tensor(idx, dtype=torch.long)
    return out


def score_suite(
    model: torch.nn.Module,
    puzzles: Sequence[Puzzle],
    micro_batch: int = 512,
    chunk: int = 8192,
    progress_desc: str | None = None,
    move_by: str = "policy",
    nodes: int | None = None,
) -> SuiteResult:
    """Score ``puzzles`` with ``model`` (used as given: pass it in eval mode, on its device).

    One pass per solver ply over every puzzle whose line reaches it; boards are
    encoded ``chunk`` at a time (bounding the (chunk, 112, 8, 8) input and
    (chunk, 4288) output memory on 100k-puzzle suites) and evaluated in
    ``micro_batch`` network calls. ``progress_desc`` names a progress bar over the
    solver positions (the ``pdx eval`` tools); None (validation in training) draws none.
    ``move_by``: "policy" scores the policy's argmax, "value" the value head's one-ply choice, "search"
    the best move of pdx's search at ``nodes`` nodes.
    """
    if move_by not in MOVE_BY:
        raise ValueError(f"move_by must be one of {list(MOVE_BY)}, got {move_by!r}")
    searcher = None
    if move_by == "search":
        from pdx_lightning.search import BatchedSearch, SearchSettings  # noqa: PLC0415

        searcher = BatchedSearch(model, SearchSettings(nodes=nodes or 1), slots=SEARCH_GROUP, reuse=False)
    t0 = time.perf_counter()
    N = len(puzzles)
    depth = np.array([p.depth for p in puzzles], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(depth)]).astype(np.int64)
    P = int(offsets[-1])
    correct, mate = np.zeros(P, bool), np.zeros(P, bool)
    log_w, top_lp, value = np.zeros(P), np.zeros(P), np.zeros(P)
    rank = np.zeros(P, np.int64)
    top_uci = [""] * P
    boards = [p.board.copy() for p in puzzles]  # advanced along each marked line
    with progress(total=P, desc=progress_desc or "", unit="pos", disable=progress_desc is None) as bar:
        for k in range(int(depth.max()) if N else 0):
            alive = np.flatnonzero(depth > k)
            for start in range(0, len(alive), chunk):
                ids = alive[start : start + chunk]
                bs = [boards[i] for i in ids]
                logp, wdl = evaluate_boards(model, bs, micro_batch)  # (C, 4288), (C, 3)
                acc = _padded([_indices(puzzles[i].accepted[k], b.turn) for i, b in zip(ids, bs)])  # (C, A)
                mts = _padded([_indices(puzzles[i].mates[k], b.turn) for i, b in zip(ids, bs)])  # (C, M)
                g = logp.gather(1, acc.clamp(min=0)).masked_fill(acc < 0, -math.inf)  # (C, A)
                if searcher is not None:
                    chosen = [
                        r.best
                        for j in range(0, len(bs), SEARCH_GROUP)
                        for r in searcher.search(bs[j : j + SEARCH_GROUP])
                    ]
                    top = torch.tensor([move_to_index(m, b.turn) for m, b in zip(chosen, bs)])
                elif move_by == "value":
                    top = torch.tensor(
                        [move_to_index(m, b.turn) for m, b in zip(value_choices(model, bs, micro_batch), bs)]
                    )
                else:
                    top = logp.argmax(dim=1)  # (C,)
                best = g.max(dim=1).values
                rows = offsets[ids] + k
                correct[rows] = (acc == top[:, None]).any(1).numpy()
                mate[rows] = (mts == top[:, None]).any(1).numpy()
                log_w[rows] = torch.logsumexp(g, dim=1).double().numpy()
                rank[rows] = ((logp > best[:, None]).sum(1) + 1).numpy()
                top_lp[rows] = logp.gather(1, top[:, None])[:, 0].double().numpy()
                value[rows] = (wdl[:, 0] - wdl[:, 2]).double().numpy()
                for r, b, t in zip(rows, bs, top.tolist()):
                    top_uci[r] = index_to_move(t, b).uci()
                bar.update(len(ids))
            for i in alive.tolist():  # Python ints: Sequence indices
                line = puzzles[i].line
                boards[i].push(line[2 * k])
                if 2 * k + 1 < len(line):
                    boards[i].push(line[2 * k + 1])
    solved, first_fail = np.zeros(N, bool), np.full(N, -1, np.int64)
    for i in range(N):
        for j in range(offsets[i], offsets[i + 1]):
            if not correct[j]:
                first_fail[i] = j - offsets[i]
                break
            if mate[j]:  # the argmax checkmated: the puzzle ends won
                break
        solved[i] = first_fail[i] < 0
    log_p_star = np.add.reduceat(log_w, offsets[:-1]) if P else np.zeros(N)

    def num(v):
        return math.nan if v is None else float(v)

    return SuiteResult(
        ids=[p.puzzle_id for p in puzzles],
        rating=np.array([num(p.rating) for p in puzzles]),
        difficulty=np.array([num(p.difficulty) for p in puzzles]),
        depth=depth,
        solved=solved,
        first_fail=first_fail,
        log_p_star=log_p_star,
        offsets=offsets,
        ply_correct=correct,
        ply_mate=mate,
        ply_log_p=log_w,
        ply_rank=rank,
        ply_top_log_p=top_lp,
        ply_value=value,
        ply_move=top_uci,
        seconds=time.perf_counter() - t0,
        move_by=move_by,
    )


# ---------------------------------------------------------------- summaries


def _group(r: SuiteResult, sel: np.ndarray) -> dict:
    n, k = int(sel.sum()), int(r.solved[sel].sum())
    lo, hi = wilson_interval(k, n)
    m, nlo, nhi = mean_interval(-r.log_p_star[sel])
    ply_sel = sel[r.ply_puzzle()]
    n_pos = int(ply_sel.sum())
    return {
        "n": n,
        "solved": k,
        "acc": k / n if n else math.nan,
        "acc_ci": [lo, hi],
        "nll": m,
        "nll_ci": [nlo, nhi],
        "p_star_geo": math.exp(-m) if n else math.nan,
        "p_star_geo_ci": [math.exp(-nhi), min(1.0, math.exp(-nlo))],  # ℓ >= 0, so p* <= 1
        "p_star_arith": float(np.exp(r.log_p_star[sel]).mean()) if n else math.nan,
        "positions": n_pos,
        "position_acc": float(r.ply_correct[ply_sel].mean()) if n_pos else math.nan,
    }


def _breakdowns(r: SuiteResult, bins: Sequence[float], group: Callable[[np.ndarray], dict]) -> dict:
    b = assign_bins(r.difficulty, bins)
    by_bin = [
        {"bin": label, "lo": lo, "hi": hi, **group(b == j)}
        for j, (lo, hi, label) in enumerate(bin_edges_labels(bins))
        if (b == j).any()
    ]
    by_depth = [{"depth": int(d), **group(r.depth == d)} for d in np.unique(r.depth)]
    return {"by_bin": by_bin, "by_depth": by_depth, "unbinned": int((b < 0).sum())}


def summarize(result: SuiteResult, bins: Sequence[float] = RATING_BINS) -> dict:
    """Overall, per difficulty bin and per mate depth: acc + Wilson CI, ℓ, p* (geo, arith)."""
    out = _group(result, np.ones(len(result.ids), bool))
    out.update(_breakdowns(result, bins, lambda sel: _group(result, sel)))
    out["seconds"] = result.seconds
    out["positions_per_s"] = result.n_positions / result.seconds if result.seconds > 0 else math.nan
    return out


def compare(base: SuiteResult, other: SuiteResult, bins: Sequence[float] = RATING_BINS) -> dict:
    """Paired comparison of ``other`` against ``base`` on the same puzzles (log domain)."""
    if base.ids != other.ids:
        raise ValueError("paired comparison needs both models scored on the same puzzles in the same order")

    def group(sel: np.ndarray) -> dict:
        m, lo, hi = mean_interval(other.log_p_star[sel] - base.log_p_star[sel])
        gained = int((other.solved & ~base.solved & sel).sum())
        lost = int((base.solved & ~other.solved & sel).sum())
        n = int(sel.sum())
        return {
            "n": n,
            "log_ratio": m,
            "log_ratio_ci": [lo, hi],
            "p_star_ratio": math.exp(m),
            "p_star_ratio_ci": [math.exp(lo), math.exp(hi)],
            "acc_diff": (int(other.solved[sel].sum()) - int(base.solved[sel].sum())) / n,
            "gained": gained,
            "lost": lost,
            "mcnemar_p": mcnemar_exact(gained, lost),
        }

    out = group(np.ones(len(base.ids), bool))
    out.update(_breakdowns(base, bins, group))
    return out


SUM_COLUMNS = ("n", "solved", "nll_sum", "p_star_sum")  # per group: puzzles, solved, Σ ℓ, Σ p*


def validation_sums(
    model: torch.nn.Module,
    puzzles: Sequence[Puzzle],
    mates: Sequence[Puzzle],
    depths: Sequence[int],
    micro_batch: int = 512,
) -> torch.Tensor:
    """The sums behind the validation scalars, (1 + len(depths), 4) float64: a row for ``puzzles`` and one per
    mate depth in ``depths`` (solver moves), each (n, solved, Σ ℓ, Σ p*) with ℓ = −log p* (Eq. 9).

    Sums add across shards of the suites (each DDP rank scores its share: ``PuzzleValidation``);
    :func:`validation_metrics` turns the total into the scalars. The model is put in eval mode for the
    call and its mode restored."""
    out = torch.zeros(1 + len(depths), len(SUM_COLUMNS), dtype=torch.float64)
    was_training = model.training
    model.eval()
    try:
        if puzzles:
            r = score_suite(model, puzzles, micro_batch)
            out[0] = _sums(r, np.ones(len(r.ids), bool))
        if mates:
            r = score_suite(model, mates, micro_batch)
            for j, d in enumerate(depths):
                out[1 + j] = _sums(r, r.depth == d)
        return out
    finally:
        model.train(was_training)


def _sums(r: SuiteResult, sel: np.ndarray) -> torch.Tensor:
    lp = r.log_p_star[sel].astype(np.float64)  # summed in float64, as the means of `pdx eval puzzles`
    sums = [float(sel.sum()), float(r.solved[sel].sum()), float(-lp.sum()), float(np.exp(lp).sum())]
    return torch.tensor(sums, dtype=torch.float64)


def validation_metrics(sums: torch.Tensor, depths: Sequence[int], *, puzzles: bool = True) -> dict[str, float]:
    """The ``PuzzleValidation`` scalars (TensorBoard names) from :func:`validation_sums` (added over shards):
    ``puzzles/acc``, ``puzzles/p_star_geo``, ``puzzles/p_star_arith``, ``puzzles/nll`` (when ``puzzles``),
    and ``mates/acc_N``, ``mates/p_star_geo_N`` per depth N with puzzles."""
    out: dict[str, float] = {}
    rows = sums.to(torch.float64).cpu()
    if puzzles and rows[0, 0] > 0:
        n, solved, nll_sum, p_sum = (float(v) for v in rows[0])
        out.update(
            {
                "puzzles/acc": solved / n,
                "puzzles/p_star_geo": math.exp(-nll_sum / n),
                "puzzles/p_star_arith": p_sum / n,
                "puzzles/nll": nll_sum / n,
            }
        )
    for j, d in enumerate(depths):
        n, solved, nll_sum, _ = (float(v) for v in rows[1 + j])
        if n > 0:
            out[f"mates/acc_{d}"] = solved / n
            out[f"mates/p_star_geo_{d}"] = math.exp(-nll_sum / n)
    return out


def mate_depths(mates: Sequence[Puzzle]) -> list[int]:
    """The distinct solver-move counts of ``mates``, ascending (the ``mates/acc_N`` groups)."""
    return sorted({p.depth for p in mates})


# ---------------------------------------------------------------- CLI (shared with `pdx eval mates`)


def add_suite_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """The suite-selection flags shared by ``pdx eval puzzles|mates|recovery`` (see ``load_suite``)."""
    parser.add_argument("--rating-min", type=argtypes.finite_float(), help="keep puzzles rated >= this")
    parser.add_argument("--rating-max", type=argtypes.finite_float(), help="keep puzzles rated <= this")
    parser.add_argument("--themes", nargs="+", help="keep puzzles with any of these Lichess themes")
    parser.add_argument(
        "--sample", type=argtypes.positive_int, help="seeded uniform sample of N puzzles per suite file"
    )
    parser.add_argument("--seed", type=argtypes.seed, default=0, help="seed of --sample")
    parser.add_argument("--skip-bad", action="store_true", help="skip and count malformed rows instead of failing")


def check_args(args: argparse.Namespace) -> None:
    """The flags that must agree (``pdx eval puzzles|mates|recovery``), checked before any work."""
    argtypes.require_order(args.rating_min, args.rating_max, "--rating-min", "--rating-max")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``pdx eval puzzles`` (``pdx eval mates`` uses the same)."""
    add_network_arguments(parser, "model name or file (repeat to compare; paired stats are against the first)")
    parser.add_argument(
        "--suite",
        action="append",
        required=True,
        help="puzzle CSV or .csv.zst (Lichess, Ruoss or generated format); repeatable",
    )
    add_suite_filter_arguments(parser)
    parser.add_argument(
        "--bins",
        type=argtypes.float_list(),
        default=list(RATING_BINS),
        help="inner rating/difficulty bin edges, comma-separated (default: 600,800,...,2600)",
    )
    parser.add_argument(
        "--move-by",
        choices=list(MOVE_BY),
        default="policy",
        help="what picks the move scored as correct: the policy's argmax, or the value head one ply deep "
        "(every legal move played, the resulting position the value head rates best for the mover; "
        "~35 network calls a position), or 'search' (set by --nodes). p* and ℓ stay the policy's (default: policy)",
    )
    parser.add_argument(
        "--nodes",
        type=argtypes.int_in(1, 1_000_000),
        default=None,
        metavar="N",
        help="score the best move of pdx's search at N nodes (PUCT with Lc0 v0.31's semantics and defaults, "
        "every solver position searched afresh, all positions of a ply batched); implies --move-by search",
    )
    parser.add_argument("--json", metavar="OUT", help="write summaries, paired comparisons and per-puzzle arrays")


def per_puzzle(r: SuiteResult) -> dict:
    """Per-puzzle arrays (per-ply ones nested per puzzle), enough to rebuild every table."""

    def split(a):
        return [a[r.plies(i)].tolist() for i in range(len(r.ids))]

    return {
        "solved": r.solved.tolist(),
        "first_fail": r.first_fail.tolist(),
        "log_p_star": r.log_p_star.tolist(),
        "ply_correct": split(r.ply_correct),
        "ply_mate": split(r.ply_mate),
        "ply_log_p": split(r.ply_log_p),
        "ply_rank": split(r.ply_rank),
        "ply_top_log_p": split(r.ply_top_log_p),
        "ply_value": split(r.ply_value),
        "ply_move": split(np.array(r.ply_move, dtype=object)),
    }


def load_from_args(args: argparse.Namespace) -> Suite:
    suite = load_suite(
        args.suite,
        rating_min=args.rating_min,
        rating_max=args.rating_max,
        themes=args.themes,
        sample=args.sample,
        seed=args.seed,
        skip_bad=args.skip_bad,
    )
    print(
        f"suite: {len(suite)} puzzles from {', '.join(suite.paths)} ({suite.n_selected} of {suite.n_rows} rows "
        f"matched the filters; {suite.n_bad} malformed rows skipped)"
    )
    return suite


def run_eval(args: argparse.Namespace, command: str, render: Callable[[list[str], list[dict], list[dict]], str]) -> int:
    """Load the suite, score every model, print ``render``'s markdown, write ``--json``."""
    from pdx_lightning.nets import load_model  # noqa: PLC0415

    move_by = getattr(args, "move_by", "policy")
    nodes = getattr(args, "nodes", None)
    if nodes is not None:
        if move_by == "value":
            raise PuzzleArgumentError("--nodes scores the search's move; it cannot go with --move-by value")
        from pdx_lightning.search import SearchSettings  # noqa: PLC0415

        SearchSettings(nodes=nodes)  # a node count out of range is one line here
        move_by = "search"
    elif move_by == "search":
        raise PuzzleArgumentError("--move-by search needs --nodes N")
    suite = load_from_args(args)
    if not suite.puzzles:
        print("no puzzles to score")
        return 1
    device = device_of(args.device)
    results = []
    for name in args.model:
        model = load_model(name, weights=args.weights).to(device).eval()
        evaluate_boards(model, [suite.puzzles[0].board])  # warm-up, so positions/s excludes one-off setup
        results.append(
            score_suite(
                model,
                suite.puzzles,
                micro_batch=args.micro_batch,
                progress_desc=command.removeprefix("eval "),
                move_by=move_by,
                nodes=nodes,
            )
        )
    summaries = [summarize(r, args.bins) for r in results]
    paired = [
        {"baseline": args.model[0], "model": m, **compare(results[0], r, args.bins)}
        for m, r in zip(args.model[1:], results[1:])
    ]
    flag = f"--nodes {nodes}" if move_by == "search" else f"--move-by {move_by}"
    head = f"Moves scored: {MOVE_BY[move_by]} (`{flag}`); p* and ℓ are the policy's.\n\n"
    print((head if move_by != "policy" else "") + render(args.model, summaries, paired))
    if args.json:
        ps = suite.puzzles
        doc = {
            "command": command,
            "multi_solution": MULTI_SOLUTION_RULE,
            "move_by": move_by,
            "nodes": nodes,
            "suite": {
                "files": suite.paths,
                "rows": suite.n_rows,
                "selected": suite.n_selected,
                "puzzles": len(ps),
                "skipped_bad": suite.n_bad,
                "bad_rows": suite.bad,
                "filters": {
                    "rating_min": args.rating_min,
                    "rating_max": args.rating_max,
                    "themes": args.themes,
                    "sample": args.sample,
                    "seed": args.seed,
                },
            },
            "bins": list(args.bins),
            "puzzles": {
                "id": [p.puzzle_id for p in ps],
                "rating": [p.rating for p in ps],
                "difficulty": [p.difficulty for p in ps],
                "depth": [p.depth for p in ps],
                "themes": [" ".join(p.themes) for p in ps],
                "source": [p.source for p in ps],
                "line": [" ".join(m.uci() for m in p.line) for p in ps],
            },
            "models": [
                {"name": n, "weights": args.weights, "summary": s, "per_puzzle": per_puzzle(r)}
                for n, s, r in zip(args.model, summaries, results)
            ],
            "paired": paired,
        }
        write_json(args.json, doc)
    return 0


def fmt_acc(s: dict) -> str:
    lo, hi = s["acc_ci"]
    return f"{100 * s['acc']:.2f} ({100 * lo:.2f}-{100 * hi:.2f})"


def fmt_ratio(c: dict) -> str:
    lo, hi = c["p_star_ratio_ci"]
    return f"{c['p_star_ratio']:.3f} ({lo:.3f}-{hi:.3f})" if math.isfinite(lo) else f"{c['p_star_ratio']:.3f}"


def render_puzzles(names: list[str], summaries: list[dict], paired: list[dict]) -> str:
    out = [
        "## Puzzle accuracy (multi-solution scored, 95% Wilson intervals) and solution probability p*",
        "",
        markdown_table(
            ["Model", "n", "Acc. (%)", "p* geo", "p* arith", "ℓ (nats)", "positions/s"],
            [
                [
                    n,
                    s["n"],
                    fmt_acc(s),
                    f"{s['p_star_geo']:.3f}",
                    f"{s['p_star_arith']:.3f}",
                    f"{s['nll']:.3f}",
                    f"{s['positions_per_s']:.0f}",
                ]
                for n, s in zip(names, summaries)
            ],
        ),
    ]
    bins = [b["bin"] for b in summaries[0]["by_bin"]]
    if bins:
        cell = {(i, b["bin"]): b for i, s in enumerate(summaries) for b in s["by_bin"]}
        out += [
            "",
            "## By rating/difficulty bin: Acc. (%) / p* geo",
            "",
            markdown_table(
                ["Bin", "n", *names],
                [
                    [
                        b,
                        cell[0, b]["n"],
                        *[f"{100 * cell[i, b]['acc']:.1f} / {cell[i, b]['p_star_geo']:.3f}" for i in range(len(names))],
                    ]
                    for b in bins
                ],
            ),
        ]
    if paired:
        out += [
            "",
            f"## Paired vs {names[0]} (p* ratio = exp mean per-puzzle log-ratio, 95% t-interval)",
            "",
            markdown_table(
                ["Model", "Δacc (pts)", "gained", "lost", "McNemar p", "p* ratio"],
                [
                    [
                        c["model"],
                        f"{100 * c['acc_diff']:+.2f}",
                        c["gained"],
                        c["lost"],
                        f"{c['mcnemar_p']:.3g}",
                        fmt_ratio(c),
                    ]
                    for c in paired
                ],
            ),
        ]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    return run_eval(args, "eval puzzles", render_puzzles)
