"""Shared machinery of the suite generators (`pdx data mates`, `pdx data puzzles`).

Both generators work the same way: play a game between two randomly
configured Stockfish players (low node budgets plus random moves), look at
every position for a puzzle, and stop the game after the first mate (mates)
or the third tactic (tactics), since one game's puzzles are alike. A puzzle is
written in the Lichess puzzle CSV format, its FEN being the position *before*
the game's last move (the opponent's setup move, the first of ``Moves``), plus
an ``AltMoves`` column: one ``|``-separated entry per solver ply, each the
space-separated UCI moves accepted at that ply.

Game ``g`` of a run is seeded by ``(seed, g)``; a task is one game. Output is
appended one complete row at a time (flushed and fsynced), so an interrupted
run leaves a valid file; rerunning with the same arguments drops a torn last
line, skips puzzles whose position is already in the file, and continues after
the highest game index written (the game index is part of ``PuzzleId``).

Difficulty (the ``Rating`` column, *not* a human rating): at each solver ply
one Stockfish search of 65,536 nodes (fresh hash, 1 thread: deterministic);
``n`` = the node count of the info line from which its principal variation's
first move stays in that ply's ``AltMoves`` to the end (the search must end on
such a move, else ``n = 2**17``); ``e*`` = the maximum of ``log2 n`` over the
solver plies and ``Rating = round(600 + 100 * e*)``. Depth 1 alone costs some
20–60 nodes, so the easiest puzzles land near 1,000-1,200 and 2,300 means not
solved within 65,536 nodes.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import multiprocessing as mp
import os
import queue
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeAlias

import chess
import chess.engine

from pdx_lightning import argtypes
from pdx_lightning.engines.stockfish import RestartingEngine, open_engine
from pdx_lightning.files.atomicfile import atomic_write, atomic_write_text

FIELDS = (
    "PuzzleId",
    "FEN",
    "Moves",
    "Rating",
    "RatingDeviation",
    "Popularity",
    "NbPlays",
    "Themes",
    "GameUrl",
    "OpeningTags",
    "AltMoves",
)
ALT_SEP = " | "
DIFFICULTY_NODES = 2**16  # node budget of each difficulty search
RATING_BASE, RATING_STEP = 600, 100

# an engine as open_engine returns it (a RestartingEngine: SimpleEngine's interface) or a bare SimpleEngine
Engine: TypeAlias = chess.engine.SimpleEngine | RestartingEngine

# (engine, args, game index) -> rows; must be a module-level function (pickled to workers)
Task = Callable[[Engine, argparse.Namespace, int], list]


class SuiteFileError(ValueError):
    """An existing output file that is not a suite written by these tools."""


# ---------------------------------------------------------------- games ----


def play_game(engine: Engine, rng: random.Random, max_plies: int = 200, style: str = "mixed") -> Iterator[chess.Board]:
    """Yield the live board after every ply of one game between random players.

    ``mixed`` (mates): each colour draws a Stockfish node budget ``2**U(0, 12)``
    (1 … 4,096 nodes) and a probability of a uniformly random legal move
    (0, 5, 15 or 40%); uneven pairings give decisive games, hence mating
    attacks. ``blunders`` (tactics): budgets ``2**U(2, 10)`` and 0–5% random
    moves, so games stay playable and a blunder lands in a sensible position.
    The first ``U{0..8}`` plies are random, for variety. Do not push or pop
    on the yielded board; copy it to keep it.
    """
    # ucinewgame (fresh hash and history tables) so that a game depends only on its seed,
    # not on which games this process played before: resumed and parallel runs agree
    engine.analyse(chess.Board(), chess.engine.Limit(nodes=1), game=object())
    board = chess.Board()
    if style == "mixed":
        nodes = {c: int(2 ** rng.uniform(0, 12)) for c in chess.COLORS}
        p_random = {c: rng.choice((0.0, 0.05, 0.15, 0.4)) for c in chess.COLORS}
    elif style == "blunders":
        nodes = {c: int(2 ** rng.uniform(2, 10)) for c in chess.COLORS}
        p_random = {c: rng.uniform(0.0, 0.05) for c in chess.COLORS}
    else:
        raise ValueError(f"unknown game style {style!r} (mixed, blunders)")
    opening = rng.randint(0, 8)
    while not board.is_game_over() and board.ply() < max_plies:
        if board.ply() < opening or rng.random() < p_random[board.turn]:
            move = rng.choice(sorted(board.legal_moves, key=chess.Move.uci))
        else:
            played = engine.play(board, chess.engine.Limit(nodes=nodes[board.turn])).move
            assert played is not None  # the game is not over: Stockfish has a best move
            move = played
        board.push(move)
        yield board


def fresh_analyse(engine: Engine, board: chess.Board, limit: chess.engine.Limit, **kwargs):
    """``engine.analyse`` after ``ucinewgame``: mate scores left in the hash by
    sibling searches make Stockfish report longer mates than exist."""
    return engine.analyse(board, limit, game=object(), **kwargs)


def mating_moves(board: chess.Board) -> list[chess.Move]:
    """Every legal move that checkmates at once (exact)."""
    out = []
    for move in board.legal_moves:
        if board.gives_check(move):
            board.push(move)
            if board.is_checkmate():
                out.append(move)
            board.pop()
    return out


def _settle_log2(engine: Engine, board: chess.Board, accepted: set[str]) -> float:
    """log2 of the nodes after which Stockfish's PV move stays in ``accepted`` (cap + 1 if never)."""
    trail: list[tuple[int, bool]] = []
    with engine.analysis(board, chess.engine.Limit(nodes=DIFFICULTY_NODES), game=object()) as search:
        for info in search:
            if info.get("pv") and "nodes" in info:
                trail.append((info["nodes"], info["pv"][0].uci() in accepted))
        best = search.wait().move
    if best is None or best.uci() not in accepted or not trail:
        return math.log2(DIFFICULTY_NODES) + 1
    nodes = trail[-1][0]
    for n, ok in reversed(trail):
        if not ok:
            break
        nodes = n
    return math.log2(max(nodes, 1))


def difficulty(engine: Engine, fen: str, moves: list[str], alts: list[list[str]]) -> int:
    """``Rating`` value: ``600 + 100 * e*`` (see the module docstring)."""
    board = chess.Board(fen)
    worst = 0.0
    for i, uci in enumerate(moves):
        if i % 2 == 1:
            worst = max(worst, _settle_log2(engine, board, set(alts[i // 2])))
        board.push_uci(uci)
    return round(RATING_BASE + RATING_STEP * worst)


def rerate(engine: Engine, path: str | os.PathLike) -> int:
    """Recompute the ``Rating`` column of a suite file in place (atomic replace); rows rated."""
    path = Path(path)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise SuiteFileError(f"{path}: header {reader.fieldnames} is not {list(FIELDS)}")
        rows = list(reader)
    for row in rows:
        alts = [g.split() for g in row["AltMoves"].split(ALT_SEP.strip())]
        row["Rating"] = difficulty(engine, row["FEN"], row["Moves"].split(), alts)
    with atomic_write(path, "w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def make_row(
    puzzle_id: str,
    board: chess.Board,
    line: list[chess.Move],
    alts: list[list[str]],
    themes: list[str],
    engine: Engine | None = None,
) -> dict:
    """A CSV row for the puzzle whose solver is to move in ``board`` (the last
    move of its stack is the setup move) and whose solution is ``line``."""
    before = board.copy()
    setup = before.pop()
    moves = [setup.uci()] + [m.uci() for m in line]
    alts = [sorted(a) for a in alts]
    rating = difficulty(engine, before.fen(), moves, alts) if engine is not None else 0
    return {
        "PuzzleId": puzzle_id,
        "FEN": before.fen(),
        "Moves": " ".join(moves),
        "Rating": rating,
        "RatingDeviation": 0,
        "Popularity": 0,
        "NbPlays": 0,
        "Themes": " ".join(themes),
        "GameUrl": "",
        "OpeningTags": "",
        "AltMoves": ALT_SEP.join(" ".join(a) for a in alts),
    }


def position_key(row: dict) -> str:
    """Dedupe key: the solver's position (EPD, no move counters)."""
    board = chess.Board(row["FEN"])
    board.push_uci(row["Moves"].split()[0])
    return board.epd()


def puzzle_id(prefix: str, seed: int, game: int, ply: int) -> str:
    """``<prefix>-s<seed>-g<game>-p<ply>``; the game index is what a resumed run continues after."""
    return f"{prefix}-s{seed}-g{game:07d}-p{ply:03d}"


_GAME_RE = re.compile(r"-g(\d+)(?:-|$)")


# --------------------------------------------------------------- output ----


class SuiteWriter:
    """Append-only, resumable CSV writer (one fsynced row per write)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.keys: set[str] = set()
        self.rows = 0
        self.next_game = 0
        self.duplicates = 0
        if self.path.exists() and self.path.stat().st_size > 0:
            self._load()
        else:
            atomic_write_text(self.path, ",".join(FIELDS) + "\n")  # a crash leaves no header-less file
        self._file = open(self.path, "a", newline="")  # noqa: SIM115  (held for appends; closed by close())

    def _load(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):  # torn last row of an interrupted run
            data = data[: data.rfind(b"\n") + 1]
            with open(self.path, "r+b") as f:
                f.truncate(len(data))
        reader = csv.DictReader(io.StringIO(data.decode()))
        if tuple(reader.fieldnames or ()) != FIELDS:
            raise SuiteFileError(f"{self.path}: header {reader.fieldnames} is not {list(FIELDS)}")
        for row in reader:
            self.keys.add(position_key(row))
            self.rows += 1
            m = _GAME_RE.search(row["PuzzleId"])
            if m:
                self.next_game = max(self.next_game, int(m.group(1)) + 1)

    def add(self, row: dict) -> bool:
        """Write ``row`` unless its position is already in the file."""
        key = position_key(row)
        if key in self.keys:
            self.duplicates += 1
            return False
        buf = io.StringIO()
        csv.DictWriter(buf, FIELDS, lineterminator="\n").writerow(row)
        self._file.write(buf.getvalue())
        self._file.flush()
        os.fsync(self._file.fileno())
        self.keys.add(key)
        self.rows += 1
        return True

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------- candidates from a labelled set ----
# ``--from-shards``: task g is candidate g (a move list from the start) of a list built once from the
# shards and frozen in ``<out>.candidates``, so a resumed run sees the same list whatever was labelled since.

_CANDIDATES: dict[str, list[list[str]]] = {}


def candidates_file(out: str | os.PathLike) -> Path:
    return Path(f"{out}.candidates")


def frozen_candidates(args: argparse.Namespace, build: Callable[[], list[list[str]]]) -> list[list[str]]:
    """The candidate move lists of ``args.out``: read from ``<out>.candidates``, or ``build()`` and frozen."""
    path = candidates_file(args.out)
    if not path.is_file():
        with atomic_write(path, "w") as f:
            f.write("".join(" ".join(c) + "\n" for c in build()))
    return [line.split() for line in path.read_text().splitlines()]


def count_candidates(args: argparse.Namespace, build: Callable[[], list[list[str]]]) -> int:
    """Freeze (or read) the list at the start of a run; its length is the run's end."""
    _CANDIDATES.pop(str(args.out), None)  # this run reads the frozen list afresh
    return len(frozen_candidates(args, build))


def candidate_board(args: argparse.Namespace, game: int, build: Callable[[], list[list[str]]]) -> chess.Board:
    """Candidate ``game`` as a board with its moves from the start (the list read once per process)."""
    if str(args.out) not in _CANDIDATES:
        _CANDIDATES[str(args.out)] = frozen_candidates(args, build)
    board = chess.Board()
    for uci in _CANDIDATES[str(args.out)][game]:
        board.push_uci(uci)
    return board


# ---------------------------------------------------------------- pool -----

_WORKER: dict = {}


def _init_worker(task: Task, args: argparse.Namespace) -> None:
    _WORKER["engine"] = open_engine(args.stockfish, threads=1, hash_mb=16)
    _WORKER["task"], _WORKER["args"] = task, args


def _run_worker(game: int) -> tuple[int, list]:
    return game, _WORKER["task"](_WORKER["engine"], _WORKER["args"], game)


def _results(task: Task, args: argparse.Namespace, start: int, end: int | None = None) -> Iterator[tuple[int, list]]:
    """(game, rows) for games ``start, start+1, …`` (up to ``end``, exclusive, if given): in-process for
    one worker, else a pool with one engine per worker and a bounded window of games."""
    stop = float("inf") if end is None else end
    if args.workers <= 1:
        engine = open_engine(args.stockfish, threads=1, hash_mb=16)
        try:
            game = start
            while game < stop:
                yield game, task(engine, args, game)
                game += 1
        finally:
            engine.quit()
        return
    ctx = mp.get_context("spawn")
    done: queue.Queue = queue.Queue()
    pool = ctx.Pool(args.workers, initializer=_init_worker, initargs=(task, args))
    try:
        game, pending = start, 0
        for _ in range(2 * args.workers):
            if game < stop:
                pool.apply_async(_run_worker, (game,), callback=done.put, error_callback=done.put)
                game, pending = game + 1, pending + 1
        while pending:
            item = done.get()
            pending -= 1
            if isinstance(item, BaseException):
                raise item
            yield item
            if game < stop:
                pool.apply_async(_run_worker, (game,), callback=done.put, error_callback=done.put)
                game, pending = game + 1, pending + 1
    finally:
        pool.terminate()  # workers' Stockfish children exit on stdin EOF
        pool.join()


def generate(task: Task, args: argparse.Namespace, label: str, end: int | None = None) -> int:
    """Run ``task`` over games until ``args.count`` rows are in ``args.out`` (or game ``end`` is reached:
    a finite candidate list)."""
    from tqdm import tqdm  # noqa: PLC0415  (only when generating)

    if args.rerate:
        engine = open_engine(args.stockfish, threads=1, hash_mb=16)
        try:
            n = rerate(engine, args.out)
        finally:
            engine.quit()
        print(f"{label}: re-rated {n} puzzles in {args.out}")
        return 0
    writer = SuiteWriter(args.out)
    start_rows, games = writer.rows, 0
    deadline = time.monotonic() + 60 * args.max_minutes if args.max_minutes is not None else None
    bar = tqdm(
        total=args.count,
        initial=min(writer.rows, args.count),
        desc=label,
        unit="puzzle",
        dynamic_ncols=True,
        disable=args.quiet,
    )
    t0 = time.monotonic()
    try:
        if writer.rows < args.count and (deadline is None or time.monotonic() < deadline):
            for _game, rows in _results(task, args, writer.next_game, end):
                games += 1
                for row in rows:
                    if writer.rows < args.count and writer.add(row):
                        bar.update(1)
                bar.set_postfix(games=games, dup=writer.duplicates)
                if writer.rows >= args.count or (deadline is not None and time.monotonic() >= deadline):
                    break
    finally:
        bar.close()
        writer.close()
    new, minutes = writer.rows - start_rows, (time.monotonic() - t0) / 60
    rate = f"{new / minutes:.1f}/min" if minutes > 0 and new else "-"
    print(
        f"{label}: {writer.rows} puzzles in {args.out} ({new} new from {games} games, "
        f"{writer.duplicates} duplicate positions skipped, {minutes:.1f} min, {rate})",
        file=sys.stderr if args.quiet else sys.stdout,
    )
    return 0


def add_common_arguments(parser: argparse.ArgumentParser, count: int, nodes: int) -> None:
    parser.add_argument(
        "--count", type=argtypes.positive_int, default=count, help="puzzles wanted in --out (default %(default)s)"
    )
    parser.add_argument("--out", required=True, help="output CSV; an existing file is resumed")
    parser.add_argument(
        "--workers",
        type=argtypes.workers,
        default=max(1, (os.cpu_count() or 1) - 1),
        help="processes, one single-threaded Stockfish each (default %(default)s)",
    )
    parser.add_argument(
        "--seed", type=argtypes.seed, default=0, help="game g is seeded by (seed, g) (default %(default)s)"
    )
    parser.add_argument(
        "--nodes",
        type=argtypes.positive_int,
        default=nodes,
        help="node budget of each verification search (default %(default)s)",
    )
    parser.add_argument(
        "--scan-nodes",
        type=argtypes.positive_int,
        default=15_000,
        help="node budget of the per-position scan during games (default %(default)s)",
    )
    parser.add_argument(
        "--max-minutes",
        type=argtypes.positive_float,
        default=None,
        help="stop after this many minutes, keeping what was found (rerun to continue)",
    )
    parser.add_argument("--stockfish", default=None, help="Stockfish binary (default: $STOCKFISH, PATH, /usr/games)")
    parser.add_argument(
        "--rerate", action="store_true", help="only recompute the Rating (difficulty) column of --out, in place"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar; summary on stderr")


def main(add_arguments, run, argv: list[str] | None = None) -> int:
    """Entry point of ``python -m pdx_lightning.datagen.<tool>`` (same flags as ``pdx data <tool>``)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return int(run(parser.parse_args(argv)) or 0)
