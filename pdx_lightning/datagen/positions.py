"""``pdx data positions``: diverse Stockfish-labelled positions in resumable shards.

Games: the first ``U{1..opening_plies}`` plies are uniformly random legal
moves; then each side plays Stockfish at its own node budget, drawn per game
log-uniformly from ``play_nodes`` (weak-vs-strong pairings reach lopsided
middlegames and endgames), and each game has its own rate, drawn from
``[0, random_rate]``, of uniformly random moves. Each position is labelled with
probability ``label_rate`` (positions with a single legal move and positions
already in the shard are skipped); at a labelled position the move played is
*sampled from the teacher's policy target*, which plays second-best moves as
often as a sharpened (T = 0.02) target says. Games end by the rules (checkmate, stalemate,
insufficient material, 75-move, fivefold), at a threefold repetition, or at
``max_plies``.

Shard ``s`` is generated from seed ``(seed, s)`` by an engine process started
afresh for it (single thread, node/depth bounds: deterministic), so a
rerun regenerates identical shards: finished shards are kept, corrupt or
missing ones are (re)made, and temp files of an interrupted write are
removed. Positions are unique within a shard; the reader
(:func:`pdx_lightning.supervised.shards.iter_shards`) drops a position already present
in a lower-index shard, so the union is duplicate-free whatever order shards
finish in. Every shard holds exactly ``shard_size`` records.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import multiprocessing as mp
import queue as queue_mod
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
from tqdm import tqdm

from pdx_lightning import argtypes
from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.supervised.shards import (
    CorruptShard,
    Shard,
    encode_move,
    iter_shards,
    load_shard,
    shard_path,
    write_shard,
)
from pdx_lightning.supervised.teacher import CP_WEIGHT, Teacher, TeacherError

log = logging.getLogger(__name__)
SETTINGS_FILE = "generation.json"


class SettingsMismatch(ValueError):
    """The output directory holds shards made with different generation settings."""


@dataclass(frozen=True)
class GenConfig:
    """Everything that determines a shard's content (not ``positions`` or ``workers``)."""

    seed: int = 0
    nodes: int | None = 2000
    depth: int | None = None
    multipv: int = 8
    shard_size: int = 2000
    opening_plies: int = 8
    play_nodes: tuple[int, int] = (100, 1000)
    random_rate: float = 0.05
    label_rate: float = 0.25
    max_plies: int = 300
    temperature: float = 0.02  # T and λ of the teacher policy the move at a labelled ply is sampled from
    cp_weight: float = CP_WEIGHT
    hash_mb: int = 16
    stockfish: str | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        d["play_nodes"] = list(self.play_nodes)
        d.pop("stockfish")  # where the binary lives does not change the data
        return d


def _result_code(board: chess.Board) -> int:
    outcome = board.outcome(claim_draw=False)
    if outcome is None or outcome.winner is None:
        return 0
    return 1 if outcome.winner == chess.WHITE else -1


def generate_shard(teacher: Teacher, cfg: GenConfig, index: int, progress=None) -> Shard:
    """Play games until ``cfg.shard_size`` unique positions of shard ``index`` are labelled.

    ``teacher`` must search as ``cfg`` says (:func:`make_teacher`); its engine is reset first.
    """
    if (teacher.nodes, teacher.depth, teacher.multipv) != (cfg.nodes, cfg.depth, cfg.multipv):
        raise ValueError(
            f"teacher searches nodes={teacher.nodes} depth={teacher.depth} multipv={teacher.multipv}, "
            f"but the config says nodes={cfg.nodes} depth={cfg.depth} multipv={cfg.multipv}"
        )
    rng = np.random.default_rng([cfg.seed, index])
    teacher.reset()  # a fresh engine: the shard depends only on its seed, not on what the worker did before
    lo, hi = math.log(cfg.play_nodes[0]), math.log(cfg.play_nodes[1])
    seen: set[int] = set()
    recs: list[tuple] = []
    games: list[list[int]] = []
    results: list[int] = []
    pending = skipped = 0
    while len(recs) < cfg.shard_size:
        g = len(games)
        board = chess.Board()
        nodes = [round(math.exp(rng.uniform(lo, hi))) for _ in range(2)]
        eps = rng.uniform(0.0, cfg.random_rate)
        n_open = int(rng.integers(1, cfg.opening_plies + 1)) if cfg.opening_plies > 0 else 0
        while board.ply() < cfg.max_plies and len(recs) < cfg.shard_size:
            if board.is_game_over(claim_draw=False) or board.is_repetition(3):
                break
            legal = list(board.legal_moves)
            move, lab = None, None
            if len(legal) > 1 and rng.random() < cfg.label_rate:
                key = chess.polyglot.zobrist_hash(board)
                if key not in seen:
                    seen.add(key)
                    try:
                        lab = teacher.label(board)
                    except TeacherError as exc:  # failed twice: named in the log, counted in the shard's meta
                        log.error("shard %d: skipping a position: %s", index, exc)
                        skipped += 1
                if lab is not None:
                    recs.append((g, board.ply(), key, lab))
                    pending += 1
                    if progress is not None and pending >= 16:
                        progress(pending)
                        pending = 0
                    cdf = np.cumsum(lab.probs, dtype=np.float64)
                    j = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
                    move = lab.moves[min(j, len(lab.moves) - 1)]
            if move is None:
                if board.ply() < n_open or rng.random() < eps:
                    move = legal[int(rng.integers(len(legal)))]
                else:
                    move = teacher.best_move(board, nodes[0 if board.turn == chess.WHITE else 1])
            board.push(move)
        games.append([encode_move(m) for m in board.move_stack])
        results.append(_result_code(board))
    if progress is not None and pending:
        progress(pending)
    shard = _pack(recs, games, results, cfg, index, teacher.engine_id)
    if skipped:
        shard.meta["skipped_positions"] = skipped
    return shard


def _pack(recs, games, results, cfg: GenConfig, index: int, engine_id: str) -> Shard:
    n, K = len(recs), cfg.multipv
    cand_idx = np.full((n, K), -1, dtype=np.int16)
    cand_wdl = np.zeros((n, K, 3), dtype=np.uint16)
    cand_cp = np.zeros((n, K), dtype=np.int16)
    cand_mate = np.zeros((n, K), dtype=np.int16)
    n_cand = np.zeros(n, dtype=np.uint8)
    wdl = np.zeros((n, 3), dtype=np.float32)
    for i, (_, _, _, lab) in enumerate(recs):
        k = len(lab.indices)
        cand_idx[i, :k], cand_wdl[i, :k], cand_cp[i, :k], cand_mate[i, :k] = (
            lab.indices,
            lab.cand_wdl,
            lab.cand_cp,
            lab.cand_mate,
        )
        n_cand[i], wdl[i] = k, lab.wdl
    lengths = [len(m) for m in games]
    return Shard(
        game_moves=np.array([c for m in games for c in m], dtype=np.uint16),
        game_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        game_result=np.array(results, dtype=np.int8),
        game=np.array([r[0] for r in recs], dtype=np.int32),
        ply=np.array([r[1] for r in recs], dtype=np.int16),
        key=np.array([r[2] for r in recs], dtype=np.uint64),
        cand_idx=cand_idx,
        cand_wdl=cand_wdl,
        cand_cp=cand_cp,
        cand_mate=cand_mate,
        n_cand=n_cand,
        wdl=wdl,
        meta={"shard": index, "settings": cfg.to_json(), "engine": engine_id},
    )


def make_teacher(cfg: GenConfig) -> Teacher:
    return Teacher(
        cfg.stockfish,
        nodes=cfg.nodes,
        depth=cfg.depth,
        multipv=cfg.multipv,
        temperature=cfg.temperature,
        cp_weight=cfg.cp_weight,
        threads=1,
        hash_mb=cfg.hash_mb,
    )


# -- worker processes ----------------------------------------------------------
_W: dict = {}


def _init_worker(cfg: GenConfig, out: str, q) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C (and so does not Stockfish)
    _W.update(cfg=cfg, out=out, q=q, teacher=make_teacher(cfg))
    mp.util.Finalize(None, _W["teacher"].close, exitpriority=10)


def _make_shard(index: int) -> tuple[int, int, int, float]:
    t0 = time.perf_counter()
    teacher = _W["teacher"]
    shard = generate_shard(teacher, _W["cfg"], index, progress=_W["q"].put if _W["q"] is not None else None)
    write_shard(shard_path(_W["out"], index), shard)
    return index, len(shard), len(shard.game_result), time.perf_counter() - t0


def _check_settings(out: Path, cfg: GenConfig) -> None:
    settings = out / SETTINGS_FILE
    want = cfg.to_json()
    if settings.exists():
        have = json.loads(settings.read_text())
        diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
        if diff:
            raise SettingsMismatch(
                f"{out} was generated with other settings (key: (on disk, now)): {diff}; use a new --out directory"
            )
    else:
        with atomic_write(settings, "w") as f:  # a kill while writing must not leave a torn settings file
            f.write(json.dumps(want, indent=1, sort_keys=True) + "\n")


def _scan(out: Path, n_shards: int) -> tuple[list[int], list[int], int]:
    """(done shard indices, todo indices, positions already labelled); removes stale temp files."""
    for tmp in out.glob(".shard_*.npz.tmp-*"):
        tmp.unlink()
    done, todo, have, corrupt = [], [], 0, 0
    for s in range(n_shards):
        p = shard_path(out, s)
        if not p.exists():
            todo.append(s)
            continue
        try:
            have += len(load_shard(p))
            done.append(s)
        except CorruptShard as exc:
            log.warning("%s: regenerating it", exc)
            corrupt += 1
            todo.append(s)
    if corrupt:
        log.warning("%d corrupt shard(s) will be regenerated", corrupt)
    return done, todo, have


def generate(out: str | Path, positions: int, cfg: GenConfig, workers: int = 1, progress_bar: bool = True) -> dict:
    """Make shards ``0 .. ceil(positions / shard_size) - 1`` in ``out`` (resuming); returns a summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_settings(out, cfg)
    n_shards = math.ceil(positions / cfg.shard_size)
    done, todo, have = _scan(out, n_shards)
    total = n_shards * cfg.shard_size
    log.info(
        "%s: %d/%d shards present (%d positions), %d to make with %d worker(s)",
        out,
        len(done),
        n_shards,
        have,
        len(todo),
        workers,
    )
    bar = _Progress(total, have, progress_bar)
    t0, made, games = time.perf_counter(), 0, 0

    def finished(res) -> None:
        nonlocal made, games
        index, n, g, secs = res
        made += n
        games += g
        bar.shard_done(index, secs)

    if todo and workers <= 1:
        teacher = make_teacher(cfg)
        try:
            for s in todo:
                t1 = time.perf_counter()
                shard = generate_shard(teacher, cfg, s, progress=bar.update)
                write_shard(shard_path(out, s), shard)
                finished((s, len(shard), len(shard.game_result), time.perf_counter() - t1))
        finally:
            teacher.close()
    elif todo:
        ctx = mp.get_context("fork" if sys.platform == "linux" else "spawn")
        q = ctx.Queue()
        with ctx.Pool(min(workers, len(todo)), initializer=_init_worker, initargs=(cfg, str(out), q)) as pool:
            results = pool.imap_unordered(_make_shard, todo)
            remaining = len(todo)
            while remaining:
                try:
                    finished(results.next(timeout=0.5))
                    remaining -= 1
                except mp.TimeoutError:
                    pass
                while True:  # drain per-position progress from the workers
                    try:
                        bar.update(q.get_nowait())
                    except queue_mod.Empty:
                        break
            pool.close()
            pool.join()
    bar.close()
    secs = time.perf_counter() - t0
    reader = iter_shards(out)
    unique = sum(len(sh.key) for sh in reader)  # what a reader gets: cross-shard duplicates dropped
    summary = {
        "out": str(out),
        "shards": n_shards,
        "shards_made": len(todo),
        "positions": have + made,
        "unique_positions": unique,
        "cross_shard_duplicates": reader.n_duplicates,
        "corrupt_shards": reader.n_corrupt,
        "positions_made": made,
        "games_made": games,
        "seconds": round(secs, 1),
        "positions_per_second": round(made / secs, 2) if made else 0.0,
    }
    log.info("done: %s", summary)
    return summary


class _Progress:
    """tqdm bar (positions, positions/s) on a terminal; a log line every ``log_every`` s otherwise."""

    def __init__(self, total: int, initial: int, enabled: bool, log_every: float = 30.0) -> None:
        self.tty = enabled and sys.stderr.isatty()
        self.enabled, self.total, self.initial, self.n = enabled, total, initial, initial
        self.t0 = self.t_log = time.perf_counter()
        self.log_every = log_every
        self.bar = tqdm(
            total=total,
            initial=initial,
            unit="pos",
            smoothing=0.05,
            disable=not self.tty,
            file=sys.stderr,
            dynamic_ncols=True,
        )

    def update(self, n: int) -> None:
        self.n += n
        self.bar.update(n)
        now = time.perf_counter()
        if self.enabled and not self.tty and now - self.t_log >= self.log_every:
            self.t_log = now
            rate = (self.n - self.initial) / (now - self.t0)
            eta = (self.total - self.n) / rate if rate > 0 else float("inf")
            log.info(
                "%d/%d positions (%.1f%%), %.1f pos/s, ETA %s",
                self.n,
                self.total,
                100 * self.n / self.total,
                rate,
                "?" if eta == float("inf") else time.strftime("%H:%M:%S", time.gmtime(eta)),
            )

    def shard_done(self, index: int, secs: float) -> None:
        rate = (self.n - self.initial) / max(time.perf_counter() - self.t0, 1e-9)
        self.bar.set_postfix_str(f"shard {index} took {secs:.0f}s, {rate:.1f} pos/s")
        if self.enabled and not self.tty:
            log.info("shard %d written (%.0f s)", index, secs)

    def close(self) -> None:
        self.bar.close()


# -- CLI -------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = GenConfig()
    parser.add_argument("--out", required=True, help="output directory (rerun with the same flags to resume)")
    parser.add_argument(
        "--positions", type=argtypes.positive_int, required=True, help="positions to label (rounded up to whole shards)"
    )
    parser.add_argument(
        "--workers", type=argtypes.workers, default=1, help="worker processes, each with a 1-thread Stockfish"
    )
    parser.add_argument("--seed", type=argtypes.seed, default=d.seed, help="shard s is generated from seed (SEED, s)")
    parser.add_argument(
        "--nodes",
        type=argtypes.positive_int,
        default=None,
        help=f"node budget per labelling search (default {d.nodes} unless --depth is given)",
    )
    parser.add_argument(
        "--depth",
        type=argtypes.int_in(1, 245),
        default=None,
        help="depth bound per labelling search (with --nodes too, whichever comes first)",
    )
    parser.add_argument(
        "--multipv", type=argtypes.int_in(1, 500), default=d.multipv, help="K: candidate moves per position"
    )
    parser.add_argument("--shard-size", type=argtypes.positive_int, default=d.shard_size, help="positions per shard")
    parser.add_argument(
        "--opening-plies",
        type=argtypes.int_in(1, 1000),
        default=d.opening_plies,
        help="each game starts with U{1..N} uniformly random plies",
    )
    parser.add_argument(
        "--play-nodes",
        type=argtypes.positive_int,
        nargs=2,
        default=list(d.play_nodes),
        metavar=("LO", "HI"),
        help="per-side Stockfish node budget when playing, log-uniform in [LO, HI] per game",
    )
    parser.add_argument(
        "--random-rate",
        type=argtypes.probability,
        default=d.random_rate,
        help="per game, a random-move rate drawn from [0, R]",
    )
    parser.add_argument(
        "--label-rate",
        type=argtypes.finite_float(0, 1, lo_open=True),
        default=d.label_rate,
        help="probability a position is labelled",
    )
    parser.add_argument("--max-plies", type=argtypes.positive_int, default=d.max_plies, help="game length cap")
    parser.add_argument("--stockfish", default=None, help="Stockfish binary (default: $STOCKFISH, PATH, /usr/games)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def check_args(args: argparse.Namespace) -> None:
    """The flags that must agree, checked before any work (``pdx`` calls it after parsing)."""
    argtypes.require_order(args.play_nodes[0], args.play_nodes[1], "--play-nodes LO", "HI")


def config_from_args(args: argparse.Namespace) -> GenConfig:
    nodes = GenConfig.nodes if args.nodes is None and args.depth is None else args.nodes
    return GenConfig(
        seed=args.seed,
        nodes=nodes,
        depth=args.depth,
        multipv=args.multipv,
        shard_size=args.shard_size,
        opening_plies=args.opening_plies,
        play_nodes=tuple(args.play_nodes),
        random_rate=args.random_rate,
        label_rate=args.label_rate,
        max_plies=args.max_plies,
        stockfish=args.stockfish,
    )


def _sigterm(signum, frame):
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = config_from_args(args)
    make_teacher(cfg).close()  # fail fast: missing binary, bad bounds
    previous = signal.signal(signal.SIGTERM, _sigterm)
    try:
        summary = generate(args.out, args.positions, cfg, workers=args.workers, progress_bar=not args.no_progress)
    except KeyboardInterrupt:
        log.warning("interrupted: finished shards are kept; rerun the same command to resume")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(json.dumps(summary, indent=1))
    return 0
