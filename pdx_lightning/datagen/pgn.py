"""``pdx data pgn``: training shards from human games, in the format ``pdx pretrain`` reads.

Every move of every game (``chesscore.pgn_games``: streamed, plain or compressed; malformed games,
null moves, variants, SetUp/FEN games, impossible header or clock values, games that ran into the
next one's headers, header-only and truncated games refused in one line, or skipped and counted
with ``--skip-bad``) that the move filter keeps
(``--skip-plies``, ``--min-clock``, ``--rating-min/--rating-max``, ``--time-control``: the same
filters as ``pdx eval humans``) becomes one record of a ``supervised.shards`` shard:

* policy target: one candidate, the move played (``cand_idx[:, 0]``, ``n_cand = 1``): the
  distillation's cross-entropy is then the NLL of the human move;
* value target: the game's result from the mover's view as a one-hot WDL (``wdl`` and
  ``cand_wdl`` in per-mille); games without a result (``*``) are skipped and counted;
* ``key``: the position's Polyglot Zobrist key, as every shard has. ``pdx pretrain`` reads shards
  with ``dedupe`` on, so a position already seen in an earlier shard is dropped there (it counts it
  as ``duplicates``): common opening positions count once per shard, not once per game.

A shard holds whole games, closed once it has ``--shard-size`` records (the last one fewer). With
``--holdout-every K`` every K-th game of the file (game numbers K, 2K, ...) goes to
``<out>/heldout.pgn`` instead (headers, moves and clocks), for ``pdx eval humans`` on games the
network never trained on.

Resumable: the settings are written to ``<out>/pgn.json`` (with the first shard) and a rerun with
other settings is refused; shards already written (and readable) are kept, the rest are made, so
rerunning the same command continues an interrupted run or does nothing. Every flag is checked
before any game is read (one line naming the flag), and a run that yields no training record is
one line (exit 2) that leaves no file in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import numpy as np

from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.chesscore.pgn_games import (
    HumanGame,
    MoveFilter,
    ReadStats,
    add_filter_arguments,
    check_flag,
    filter_from_args,
    read_games,
    skip_bad_help,
)
from pdx_lightning.errors import UserError
from pdx_lightning.files.atomicfile import atomic_write, remove_stale_temps
from pdx_lightning.supervised.shards import CorruptShard, Shard, encode_move, load_shard, shard_path, write_shard

SETTINGS_FILE = "pgn.json"
HELDOUT_FILE = "heldout.pgn"
MAX_SHARD_SIZE = 1 << 20  # records a shard holds in memory before it is written (~0.2 KB each as Python objects)


class PgnDataError(UserError, ValueError):
    """Settings of ``pdx data pgn`` that cannot be used, or an output directory made with others."""


@dataclass(frozen=True)
class PgnDataConfig:
    pgn: tuple[str, ...]
    filters: MoveFilter
    shard_size: int = 4096
    holdout_every: int = 0
    max_games: int | None = None

    def to_json(self) -> dict:
        files = [{"path": str(Path(p).resolve()), "bytes": Path(p).stat().st_size} for p in self.pgn]
        return {
            "pgn": files,
            "filters": self.filters.to_dict(),
            "shard_size": self.shard_size,
            "holdout_every": self.holdout_every,
            "max_games": self.max_games,
        }


def mover_wdl(result: int, white_to_move: bool) -> tuple[int, int, int]:
    """The game's result (+1 White won, -1 Black won, 0 draw) as a one-hot W/D/L of the mover."""
    if result == 0:
        return 0, 1, 0
    return (1, 0, 0) if (result > 0) == white_to_move else (0, 0, 1)


def game_records(game: HumanGame, filt: MoveFilter) -> list[tuple[int, int, int]]:
    """``(ply, Zobrist key, policy index of the move played)`` of every kept move of ``game``."""
    board = chess.Board()
    out = []
    for ply, move in enumerate(game.moves):
        if filt.keeps(game, ply) is None:
            out.append((ply, chess.polyglot.zobrist_hash(board), move_to_index(move, board.turn)))
        board.push(move)
    return out


def pack_games(games: list[tuple[HumanGame, list[tuple[int, int, int]]]], index: int, settings: dict) -> Shard:
    """One shard of whole games and their records (see the module docstring)."""
    moves: list[int] = []
    offsets, results, recs = [0], [], []
    for g_local, (game, records) in enumerate(games):
        assert game.result is not None  # generate() skips the games without a result before packing
        moves.extend(encode_move(m) for m in game.moves)
        offsets.append(len(moves))
        results.append(game.result)
        for ply, key, idx in records:
            recs.append((g_local, ply, key, idx, mover_wdl(game.result, ply % 2 == 0)))
    n = len(recs)
    wdl = np.array([r[4] for r in recs], dtype=np.float32).reshape(n, 3)
    return Shard(
        game_moves=np.array(moves, dtype=np.uint16),
        game_offsets=np.array(offsets, dtype=np.int64),
        game_result=np.array(results, dtype=np.int8),
        game=np.array([r[0] for r in recs], dtype=np.int32),
        ply=np.array([r[1] for r in recs], dtype=np.int16),
        key=np.array([r[2] for r in recs], dtype=np.uint64),
        cand_idx=np.array([[r[3]] for r in recs], dtype=np.int16).reshape(n, 1),
        cand_wdl=(1000 * wdl).astype(np.uint16).reshape(n, 1, 3),
        cand_cp=np.zeros((n, 1), np.int16),
        cand_mate=np.zeros((n, 1), np.int16),
        n_cand=np.ones(n, np.uint8),
        wdl=wdl,
        meta={"shard": index, "source": "pgn", "settings": settings},
    )


def pgn_text(game: HumanGame) -> str:
    """The game as PGN: its headers, moves and ``[%clk]`` comments."""
    g = chess.pgn.Game()
    g.headers.clear()
    g.headers.update(game.headers)
    node: chess.pgn.GameNode = g
    for move, clock in zip(game.moves, game.clocks):
        node = node.add_variation(move)
        if clock is not None:
            node.set_clock(clock)
    return str(g)


def _check_settings(out: Path, settings: dict) -> bool:
    """Refuse an output directory made with other settings; True if its settings file exists."""
    path = out / SETTINGS_FILE
    if not path.exists():
        return False
    have = json.loads(path.read_text())
    diff = {k: (have.get(k), v) for k, v in settings.items() if have.get(k) != v}
    if diff:
        raise PgnDataError(
            f"{out} was made with other settings (key: (on disk, now)): {diff}; use a new --out directory"
        )
    return True


def _write_settings(out: Path, settings: dict) -> None:
    with atomic_write(out / SETTINGS_FILE, "w") as f:  # a kill while writing must not leave a torn settings file
        f.write(json.dumps(settings, indent=1, sort_keys=True) + "\n")


def _present(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        load_shard(path)
        return True
    except CorruptShard:
        return False


def generate(out: str | os.PathLike, cfg: PgnDataConfig, skip_bad: bool = False) -> dict:
    """Write the shards (and ``heldout.pgn``) of ``cfg`` into ``out``, keeping shards already there."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    settings = cfg.to_json()
    settings_written = _check_settings(out, settings)  # written with the first shard: a run that makes
    # nothing leaves nothing behind (a rerun with other filters is not refused for a directory left empty)
    for tmp in out.glob(".shard_*.npz.tmp-*"):  # left by a killed run (atomic_write's temporary files)
        tmp.unlink()
    remove_stale_temps(out / HELDOUT_FILE)
    read = ReadStats()
    counts = {
        "games_trained": 0,
        "games_heldout": 0,
        "games_no_result": 0,
        "games_other_time_control": 0,
        "games_no_move_kept": 0,
        "records": 0,
        "shards_made": 0,
        "shards_kept": 0,
    }
    pending: list = []
    n_pending = index = 0

    def close_shard() -> None:
        nonlocal pending, n_pending, index, settings_written
        if not settings_written:
            _write_settings(out, settings)
            settings_written = True
        path = shard_path(out, index)
        if _present(path):
            counts["shards_kept"] += 1
        else:
            write_shard(path, pack_games(pending, index, settings))
            counts["shards_made"] += 1
        pending, n_pending, index = [], 0, index + 1

    with ExitStack() as stack:  # heldout.pgn appears whole once every game is read (atomic_write)
        held = stack.enter_context(atomic_write(out / HELDOUT_FILE, "w")) if cfg.holdout_every else None
        for path in cfg.pgn:
            for game in read_games(path, skip_bad=skip_bad, stats=read, max_games=cfg.max_games):
                if cfg.holdout_every and game.number % cfg.holdout_every == 0:
                    assert held is not None  # opened above whenever cfg.holdout_every is set
                    held.write(pgn_text(game) + "\n\n")
                    counts["games_heldout"] += 1
                    continue
                if not cfg.filters.keeps_game(game):
                    counts["games_other_time_control"] += 1
                    continue
                if game.result is None:
                    counts["games_no_result"] += 1
                    continue
                records = game_records(game, cfg.filters)
                if not records:  # every move filtered out (a short game, a time scramble)
                    counts["games_no_move_kept"] += 1
                    continue
                pending.append((game, records))
                n_pending += len(records)
                counts["games_trained"] += 1
                counts["records"] += len(records)
                if n_pending >= cfg.shard_size:
                    close_shard()
        if pending:
            close_shard()
        summary = {
            "out": str(out),
            "shards": index,
            **counts,
            "games_read": read.games,
            "games_empty": read.empty,
            "games_skipped_bad": read.skipped,
            "games_bad_first": read.bad,
            "heldout_pgn": str(out / HELDOUT_FILE) if cfg.holdout_every else None,
        }
        if not counts["records"]:  # raised inside: heldout.pgn (atomic_write) is not left behind either
            others = "".join(f", {k} {v}" for k, v in counts.items() if k.startswith("games_") and v)
            raise PgnDataError(f"no training records from {', '.join(cfg.pgn)}: {read.summary()}{others}")
    return summary


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # dest pgn_files: `pdx`'s output preflight would take a one-string --pgn for an output file
    parser.add_argument(
        "--pgn",
        dest="pgn_files",
        action="append",
        required=True,
        help="PGN file of human games (.pgn, or compressed: .pgn.zst, .pgn.gz, .pgn.bz2, .pgn.xz); repeatable",
    )
    parser.add_argument(
        "--out", required=True, help="output directory of shards (rerun the same command to resume or do nothing)"
    )
    add_filter_arguments(
        parser,
        skip_plies=10,
        min_clock=0.0,
        skip_why="as `pdx eval humans`",
        clock_why="0: every move is a training example",
    )
    parser.add_argument(
        "--holdout-every",
        type=int,
        default=0,
        metavar="K",
        help="hold out every K-th game of the file (games K, 2K, ...) into OUT/heldout.pgn "
        "instead of the shards (0: none)",
    )
    parser.add_argument("--shard-size", type=int, default=4096, help="records per shard (whole games)")
    parser.add_argument("--max-games", type=int, help="read at most this many games of each file")
    parser.add_argument(
        "--skip-bad",
        action="store_true",
        help=skip_bad_help("games_skipped_bad"),
    )


def run(args: argparse.Namespace) -> int:
    check_flag("--shard-size", args.shard_size, 1, MAX_SHARD_SIZE, "records held in memory until a shard is written")
    check_flag("--holdout-every", args.holdout_every, 0)
    filt = filter_from_args(args)
    missing = [p for p in args.pgn_files if not Path(p).is_file()]
    if missing:
        raise PgnDataError(f"PGN file {missing[0]} not found")
    cfg = PgnDataConfig(tuple(args.pgn_files), filt, args.shard_size, args.holdout_every, args.max_games)
    print(json.dumps(generate(args.out, cfg, skip_bad=args.skip_bad), indent=1))
    return 0
