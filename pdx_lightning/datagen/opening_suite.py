"""Opening suites: slightly unbalanced starting positions (UHO-like), as EPD with their lines.

``pdx data openings --count 200 --out data/openings_uho.epd`` plays diverse
opening lines with Stockfish and keeps positions whose evaluation **for the
side to move** lies in a band (default +60…+130 cp), in the spirit of the
UHO ("Unbalanced Human Openings") books the paper samples (App. F): a small,
real edge lowers the draw rate and sharpens the resolution between closely
matched engines once each opening is played from both colours.

How a line is made (deterministic for a seed; Stockfish with 1 thread and a
cleared hash per line): from the initial position, each ply draws uniformly
among the moves of a MultiPV search (``--multipv`` lines at
``--select-nodes``) that score within ``--margin`` cp of the best one, so lines
stay plausible but diverse. From ply ``--min-plies`` on, a position whose
quick score is near the band gets a precise evaluation (``--eval-nodes``); the
first one inside the band, not in check, is kept. Lines that reach
``--max-plies`` without one are discarded; duplicate positions are skipped.

EPD written, one position per line, with the line that reached it so the
arena can replay the true move history (the network's input has 8 positions
of history)::

    <EPD 4 fields> hmvc 0; fmvn 6; id "pdx-uho-0001"; c0 "e2e4 c7c5 ..."; ce 87; acn 100000;

``c0`` holds the UCI line from the standard start, ``ce`` the evaluation for
the side to move (cp) and ``acn`` the nodes of that evaluation. The reader
(``load_openings``, ``Opening``, ``OpeningFormatError``) lives in
``pdx_lightning.chesscore.opening_files`` and is re-exported here.
"""

from __future__ import annotations

import argparse
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import cast

import chess
import chess.engine

from pdx_lightning import argtypes

# the reader, re-exported for the tools and tests that import it from here
from pdx_lightning.chesscore.opening_files import (
    DEFAULT_SUITE,  # noqa: F401
    Opening,
    OpeningFormatError,  # noqa: F401
    load_openings,  # noqa: F401
    parse_opening,  # noqa: F401
)
from pdx_lightning.engines.stockfish import open_engine
from pdx_lightning.files.atomicfile import atomic_write_text

MATE_CP = 100_000


def write_epd(openings: list[Opening], path: str | Path, nodes: int | None = None) -> None:
    """Write ``openings`` with ``id``, ``c0`` (UCI line), ``ce`` and ``acn`` opcodes."""
    lines = []
    for o in openings:
        ops: dict = {"hmvc": o.board.halfmove_clock, "fmvn": o.board.fullmove_number, "id": o.id}
        if o.line:
            ops["c0"] = " ".join(o.line)
        if o.eval_cp is not None:
            ops["ce"] = int(o.eval_cp)
        if nodes:
            ops["acn"] = int(nodes)
        lines.append(o.board.epd(**ops))
    atomic_write_text(path, "\n".join(lines) + "\n")


def _cp(info: chess.engine.InfoDict) -> int:
    return info["score"].relative.score(mate_score=MATE_CP)


def random_line(
    engine: chess.engine.SimpleEngine,
    rng: random.Random,
    game: object,
    *,
    band: tuple[int, int] = (60, 130),
    min_plies: int = 8,
    max_plies: int = 16,
    multipv: int = 6,
    margin: int = 60,
    select_nodes: int = 10_000,
    eval_nodes: int = 100_000,
    slack: int = 50,
) -> tuple[chess.Board, int] | None:
    """One candidate line (see module docstring): ``(board, cp)`` or None."""
    board = chess.Board()
    for ply in range(max_plies + 1):
        infos = [
            i
            for i in engine.analyse(board, chess.engine.Limit(nodes=select_nodes), multipv=multipv, game=game)
            if i.get("pv")
        ]
        if not infos:
            return None
        best = _cp(infos[0])
        if ply >= min_plies and band[0] - slack <= best <= band[1] + slack and not board.is_check():
            cp = _cp(engine.analyse(board, chess.engine.Limit(nodes=eval_nodes), game=game))
            if band[0] <= cp <= band[1]:
                return board, cp
        if ply == max_plies:
            return None
        board.push(rng.choice([i["pv"][0] for i in infos if _cp(i) >= best - margin]))
        if board.is_game_over():
            return None
    return None


def generate_openings(
    count: int,
    *,
    seed: int = 0,
    workers: int = 1,
    stockfish: str | None = None,
    max_candidates: int | None = None,
    progress: bool = False,
    **line_kw,
) -> list[Opening]:
    """``count`` openings; the same for a given seed and settings whatever ``workers`` is."""
    local = threading.local()
    engines: list[chess.engine.SimpleEngine] = []
    lock = threading.Lock()

    def candidate(cid: int):
        if not hasattr(local, "engine"):
            local.engine = open_engine(stockfish, threads=1, hash_mb=16)
            with lock:
                engines.append(local.engine)
        # game=("line", cid) makes python-chess send ucinewgame: each line starts from a cleared hash
        return random_line(local.engine, random.Random(seed * 1_000_003 + cid), ("line", cid), **line_kw)

    limit = max_candidates or 50 * count
    out: list[Opening] = []
    seen: set[str] = set()
    bar = None
    if progress:
        from tqdm import tqdm  # noqa: PLC0415

        bar = tqdm(total=count, desc="openings", unit="pos")
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            cid, chunk = 0, max(2 * workers, 4)
            while len(out) < count and cid < limit:
                ids = range(cid, min(cid + chunk, limit))
                cid = ids.stop
                for got in pool.map(candidate, ids):  # map keeps candidate order: deterministic
                    if got is None or len(out) >= count or got[0].epd() in seen:
                        continue
                    board, cp = got
                    seen.add(board.epd())
                    out.append(
                        Opening(f"pdx-uho-{len(out) + 1:04d}", board, tuple(m.uci() for m in board.move_stack), cp)
                    )
                    if bar:
                        bar.update(1)
    finally:
        for e in engines:
            e.quit()
        if bar:
            bar.close()
    if len(out) < count:
        raise RuntimeError(
            f"only {len(out)} of {count} openings in {limit} candidate lines; widen --band or raise --max-candidates"
        )
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--count", type=argtypes.positive_int, default=200, help="positions to write")
    parser.add_argument("--out", required=True, help="output EPD file")
    parser.add_argument(
        "--band",
        type=argtypes.int_in(-30_000, 30_000),
        nargs=2,
        default=(60, 130),
        metavar=("LO", "HI"),
        help="Stockfish eval for the side to move, centipawns (default 60 130)",
    )
    parser.add_argument(
        "--min-plies", type=argtypes.int_in(0, 1000), default=8, help="earliest ply a position may be taken"
    )
    parser.add_argument(
        "--max-plies", type=argtypes.int_in(1, 1000), default=16, help="lines longer than this are dropped"
    )
    parser.add_argument("--multipv", type=argtypes.int_in(1, 500), default=6, help="candidate moves searched per ply")
    parser.add_argument(
        "--margin",
        type=argtypes.int_in(0, 30_000),
        default=60,
        help="a candidate must score within this many cp of the best",
    )
    parser.add_argument(
        "--select-nodes", type=argtypes.positive_int, default=10_000, help="nodes of the per-ply MultiPV search"
    )
    parser.add_argument(
        "--eval-nodes", type=argtypes.positive_int, default=100_000, help="nodes of the band-deciding evaluation"
    )
    parser.add_argument(
        "--seed", type=argtypes.seed, default=0, help="seed of the random opening lines (same seed, same suite)"
    )
    parser.add_argument(
        "--workers", type=argtypes.workers, default=1, help="parallel Stockfish processes (1 thread each)"
    )
    parser.add_argument("--stockfish", default=None, help="Stockfish binary (default: found automatically)")


def check_args(args: argparse.Namespace) -> None:
    """The flags that must agree, checked before any work (``pdx`` calls it after parsing)."""
    argtypes.require_order(args.band[0], args.band[1], "--band LO", "HI")
    argtypes.require_order(args.min_plies, args.max_plies, "--min-plies", "--max-plies")


def run(args: argparse.Namespace) -> int:
    check_args(args)
    ops = generate_openings(
        args.count,
        seed=args.seed,
        workers=args.workers,
        stockfish=args.stockfish,
        progress=True,
        band=tuple(args.band),
        min_plies=args.min_plies,
        max_plies=args.max_plies,
        multipv=args.multipv,
        margin=args.margin,
        select_nodes=args.select_nodes,
        eval_nodes=args.eval_nodes,
    )
    write_epd(ops, args.out, nodes=args.eval_nodes)
    cps = sorted(cast(int, o.eval_cp) for o in ops)  # generate_openings sets every eval_cp
    print(
        f"wrote {len(ops)} openings to {args.out} (eval for side to move {cps[0]}..{cps[-1]} cp, "
        f"median {cps[len(cps) // 2]}; {sum(o.board.turn for o in ops)} with White to move)"
    )
    return 0
