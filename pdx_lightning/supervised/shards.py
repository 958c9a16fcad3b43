"""Labelled-position shards: one compressed ``.npz`` per shard, written atomically.

A shard holds games (move lists from the standard start) and records
(positions of those games with their Stockfish labels). ``n`` records, ``G``
games, ``K`` = MultiPV; every array is a plain numpy array (no pickles):

==================  ========  ===========  ==============================================
field               dtype     shape        meaning
==================  ========  ===========  ==============================================
``game_moves``      uint16    (M,)         all games' moves, concatenated (:func:`encode_move`)
``game_offsets``    int64     (G+1,)       game g = ``game_moves[game_offsets[g]:game_offsets[g+1]]``
``game_result``     int8      (G,)         +1 White won, -1 Black won, 0 draw / ply cap
``game``            int32     (n,)         the record's game
``ply``             int16     (n,)         moves played before the position (its history)
``key``             uint64    (n,)         Polyglot Zobrist key of the position (dedup key)
``cand_idx``        int16     (n, K)       candidate policy indices (mover's frame), best first, -1 pad
``cand_wdl``        uint16    (n, K, 3)    per-mille W/D/L of each candidate, mover's view
``cand_cp``         int16     (n, K)       centipawns (0 for mate scores)
``cand_mate``       int16     (n, K)       +n mover mates in n, -n mover is mated in n, 0 none
``n_cand``          uint8     (n,)         valid candidates per record (<= K; fewer legal moves)
``wdl``             float32   (n, 3)       WDL target (best line), sums to 1
``meta``            str       ()           JSON: generation settings, shard index, Stockfish id
==================  ========  ===========  ==============================================

Records are sorted by (game, ply). The board of record ``i`` (with the move
stack the 112-plane input needs) is the standard start plus the first
``ply[i]`` moves of game ``game[i]``: :meth:`Shard.board`, or :meth:`Shard.boards`
(replays each game once). Policy targets come from the stored scores at any
temperature: ``probs = shard.policy(T)`` (float32 (n, K), 0 on padding), see
:mod:`pdx_lightning.supervised.teacher`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

import chess
import numpy as np

from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.errors import UserError
from pdx_lightning.files.atomicfile import atomic_write
from pdx_lightning.files.safeio import GiB, env_limit, load_npz_bounded
from pdx_lightning.supervised.teacher import (
    CP_WEIGHT,
    DEFAULT_TEMPERATURE,
    MATE_BONUS,
    candidate_policy,
    expected_score,
)

log = logging.getLogger(__name__)

SHARD_GLOB = "shard_*.npz"
MAX_SHARD_BYTES = GiB  # a shard holds ~2,000 positions (~0.1 MB); a bigger one is refused unread
MAX_BYTES_ENV = "PDX_MAX_SHARD_BYTES"
_SHARD_RE = re.compile(r"shard_(\d+)\.npz$")
FORMAT_VERSION = 1


class CorruptShard(UserError, ValueError):
    """A shard file that cannot be read or whose arrays are inconsistent (message names the file)."""


class NoReadableShards(UserError, FileNotFoundError):
    """A shard directory that is missing or holds no readable shard (says why the first was refused)."""


def shard_path(directory: str | os.PathLike, index: int) -> Path:
    return Path(directory) / f"shard_{index:05d}.npz"


def shard_index(path: str | os.PathLike) -> int | None:
    m = _SHARD_RE.search(Path(path).name)
    return int(m.group(1)) if m else None


def encode_move(move: chess.Move) -> int:
    """Policy-agnostic uint16 code: from | to << 6 | promotion piece type << 12."""
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def decode_move(code: int) -> chess.Move:
    code = int(code)
    return chess.Move(code & 63, (code >> 6) & 63, (code >> 12) or None)


@dataclass
class Shard:
    """Arrays of one shard (see module docstring); ``path`` is where it was read from."""

    game_moves: np.ndarray
    game_offsets: np.ndarray
    game_result: np.ndarray
    game: np.ndarray
    ply: np.ndarray
    key: np.ndarray
    cand_idx: np.ndarray
    cand_wdl: np.ndarray
    cand_cp: np.ndarray
    cand_mate: np.ndarray
    n_cand: np.ndarray
    wdl: np.ndarray
    meta: dict
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.key)

    @property
    def best_index(self) -> np.ndarray:
        """Policy index of Stockfish's best move per record."""
        return self.cand_idx[:, 0]

    def q(self, cp_weight: float = CP_WEIGHT, mate_bonus: float = MATE_BONUS) -> np.ndarray:
        """Expected score per candidate, float32 (n, K) (:func:`pdx_lightning.supervised.teacher.expected_score`)."""
        return expected_score(self.cand_wdl, self.cand_cp, self.cand_mate, cp_weight=cp_weight, mate_bonus=mate_bonus)

    def policy(
        self, temperature: float = DEFAULT_TEMPERATURE, cp_weight: float = CP_WEIGHT, mate_bonus: float = MATE_BONUS
    ) -> np.ndarray:
        """Policy target over ``cand_idx`` at temperature T: float32 (n, K), rows sum to 1, 0 on padding."""
        return candidate_policy(self.q(cp_weight, mate_bonus), self.n_cand, temperature)

    def moves(self, i: int) -> list[chess.Move]:
        """The moves from the standard start that reach record ``i``."""
        g = int(self.game[i])
        start = int(self.game_offsets[g])
        return [decode_move(c) for c in self.game_moves[start : start + int(self.ply[i])]]

    def board(self, i: int) -> chess.Board:
        """Record ``i`` as a ``chess.Board`` with its full move stack."""
        b = chess.Board()
        for m in self.moves(i):
            b.push(m)
        return b

    def boards(self) -> list[chess.Board]:
        """All records' boards (with move stacks), replaying each game once."""
        out: list[chess.Board] = []
        b: chess.Board | None = None
        g_cur, done = -1, 0
        for g, p in zip(self.game.tolist(), self.ply.tolist()):
            if g != g_cur or p < done:
                b, g_cur, done = chess.Board(), g, 0
            assert b is not None  # game ids are >= 0: the first record starts a game
            start = int(self.game_offsets[g])
            for c in self.game_moves[start + done : start + p].tolist():
                b.push(decode_move(c))
            done = p
            out.append(b.copy())
        return out

    def subset(self, sel: np.ndarray) -> Shard:
        """The records selected by ``sel`` (bool mask or indices); games are kept whole."""
        per_record = ("game", "ply", "key", "cand_idx", "cand_wdl", "cand_cp", "cand_mate", "n_cand", "wdl")
        return replace(self, **{f: getattr(self, f)[sel] for f in per_record})


_ARRAYS = [f.name for f in fields(Shard) if f.name not in ("meta", "path")]
_DTYPES = dict(
    game_moves=np.uint16,
    game_offsets=np.int64,
    game_result=np.int8,
    game=np.int32,
    ply=np.int16,
    key=np.uint64,
    cand_idx=np.int16,
    cand_wdl=np.uint16,
    cand_cp=np.int16,
    cand_mate=np.int16,
    n_cand=np.uint8,
    wdl=np.float32,
)


def _validate(s: Shard) -> None:
    """Raise ValueError if the arrays are inconsistent."""
    n, G = len(s.key), len(s.game_result)
    for name in _ARRAYS:
        a = getattr(s, name)
        if a.dtype != _DTYPES[name]:
            raise ValueError(f"{name} has dtype {a.dtype}, expected {np.dtype(_DTYPES[name])}")
    if s.cand_idx.ndim != 2 or s.cand_wdl.shape != s.cand_idx.shape + (3,) or s.wdl.shape != (n, 3):
        raise ValueError("candidate arrays have inconsistent shapes")
    if any(len(getattr(s, f)) != n for f in ("game", "ply", "cand_idx", "cand_cp", "cand_mate", "n_cand")):
        raise ValueError("per-record arrays differ in length")
    off = s.game_offsets
    if len(off) != G + 1 or off[0] != 0 or off[-1] != len(s.game_moves) or np.any(np.diff(off) < 0):
        raise ValueError("game_offsets do not partition game_moves")
    if n:
        if s.game.min() < 0 or s.game.max() >= G or s.ply.min() < 0 or np.any(s.ply > np.diff(off)[s.game]):
            raise ValueError("a record points outside its game")
        k = np.arange(s.cand_idx.shape[1])
        valid = k < s.n_cand[:, None]
        if np.any(s.n_cand < 1) or np.any(s.n_cand > s.cand_idx.shape[1]):
            raise ValueError("n_cand outside [1, K]")
        if np.any(valid & ((s.cand_idx < 0) | (s.cand_idx >= POLICY_SIZE))):
            raise ValueError("candidate policy index outside the 4288 layout")
        if not np.allclose(s.wdl.sum(axis=1), 1.0, atol=1e-4):
            raise ValueError("wdl rows do not sum to 1")


def write_shard(path: str | os.PathLike, shard: Shard) -> Path:
    """Write ``shard`` atomically (:func:`~pdx_lightning.files.atomicfile.atomic_write`; its temporary file
    ``.shard_N.npz.tmp-*`` is what the generators clear on a restart)."""
    path = Path(path)
    _validate(shard)
    arrays: dict[str, Any] = {name: np.ascontiguousarray(getattr(shard, name), dtype=_DTYPES[name]) for name in _ARRAYS}
    arrays["meta"] = np.array(json.dumps({"format": FORMAT_VERSION, **shard.meta}, sort_keys=True))
    with atomic_write(path) as f:
        np.savez_compressed(f, **arrays)
    return path


def load_shard(path: str | os.PathLike) -> Shard:
    """Read and check one shard; any damage raises :class:`CorruptShard` naming the file."""
    path = Path(path)
    try:
        if not zipfile.is_zipfile(path):
            raise ValueError("not an .npz (zip) archive (truncated or overwritten?)")
        z = load_npz_bounded(
            path,
            env_limit(MAX_BYTES_ENV, MAX_SHARD_BYTES),
            override=f"set {MAX_BYTES_ENV} (e.g. {MAX_BYTES_ENV}=4G)",
            names={*_ARRAYS, "meta"},
        )
        missing = [k for k in [*_ARRAYS, "meta"] if k not in z]
        if missing:
            raise ValueError(f"missing arrays {missing}")
        data = {k: z[k] for k in _ARRAYS}
        meta = json.loads(str(z["meta"]))
        if meta.pop("format", None) != FORMAT_VERSION:
            raise ValueError(f"shard format is not version {FORMAT_VERSION}")
        shard = Shard(**data, meta=meta, path=path)
        _validate(shard)
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise CorruptShard(f"corrupt shard {path}: {type(exc).__name__}: {exc}") from exc
    return shard


def list_shards(directory: str | os.PathLike) -> list[Path]:
    """Shard files of ``directory`` in shard-index order (temp files excluded)."""
    paths = [p for p in Path(directory).glob(SHARD_GLOB) if shard_index(p) is not None]
    return sorted(paths, key=lambda p: cast(int, shard_index(p)))  # None filtered out above


class ShardReader:
    """Iterate the shards of a directory in index order, skipping corrupt ones.

    ``dedupe=True`` drops a record whose position key already occurred in a
    lower-index shard (shards are deduplicated internally when generated; this
    makes the union duplicate-free, and the rule depends only on the set of
    files, so a resumed run reads the same records). After iteration:
    ``corrupt`` lists ``(path, reason)``, ``n_corrupt`` counts them,
    ``n_duplicates`` counts dropped records.
    """

    def __init__(self, directory: str | os.PathLike, dedupe: bool = True) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise NoReadableShards(f"no shard directory {self.directory}")
        self.dedupe = dedupe
        self.corrupt: list[tuple[Path, str]] = []
        self.n_duplicates = 0

    @property
    def n_corrupt(self) -> int:
        return len(self.corrupt)

    def __iter__(self) -> Iterator[Shard]:
        self.corrupt, self.n_duplicates = [], 0
        seen: set[int] = set()
        for path in list_shards(self.directory):
            try:
                shard = load_shard(path)
            except CorruptShard as exc:
                log.warning("skipping %s", exc)
                self.corrupt.append((path, str(exc)))
                continue
            if self.dedupe:
                keys = shard.key.tolist()
                keep = np.fromiter((k not in seen for k in keys), dtype=bool, count=len(keys))
                seen.update(keys)
                if not keep.all():
                    self.n_duplicates += int((~keep).sum())
                    shard = shard.subset(keep)
            yield shard
        if self.corrupt:
            log.warning("%d corrupt shard(s) skipped in %s", self.n_corrupt, self.directory)


def iter_shards(directory: str | os.PathLike, dedupe: bool = True) -> ShardReader:
    """``for shard in iter_shards(d)``; afterwards ``.n_corrupt`` / ``.corrupt`` / ``.n_duplicates``."""
    return ShardReader(directory, dedupe=dedupe)


def concat_shards(shards: Sequence[Shard]) -> Shard:
    """One :class:`Shard` holding every record of ``shards`` (game ids and offsets renumbered)."""
    if not shards:
        raise ValueError("no shards to concatenate")
    K = max(s.cand_idx.shape[1] for s in shards)

    def pad(a: np.ndarray, fill) -> np.ndarray:
        width = [(0, 0), (0, K - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
        return np.pad(a, width, constant_values=fill)

    g_base = np.cumsum([0] + [len(s.game_result) for s in shards])
    m_base = np.cumsum([0] + [len(s.game_moves) for s in shards])
    offsets = [shards[0].game_offsets[:1]] + [s.game_offsets[1:] + m_base[i] for i, s in enumerate(shards)]
    cat = lambda name: np.concatenate([getattr(s, name) for s in shards])  # noqa: E731
    return Shard(
        game_moves=cat("game_moves"),
        game_offsets=np.concatenate(offsets),
        game_result=cat("game_result"),
        game=np.concatenate([s.game + np.int32(g_base[i]) for i, s in enumerate(shards)]).astype(np.int32),
        ply=cat("ply"),
        key=cat("key"),
        cand_idx=np.concatenate([pad(s.cand_idx, -1) for s in shards]),
        cand_wdl=np.concatenate([pad(s.cand_wdl, 0) for s in shards]),
        cand_cp=np.concatenate([pad(s.cand_cp, 0) for s in shards]),
        cand_mate=np.concatenate([pad(s.cand_mate, 0) for s in shards]),
        n_cand=cat("n_cand"),
        wdl=cat("wdl"),
        meta=dict(shards[0].meta, shards=len(shards)),
        path=None,
    )


def load_all(directory: str | os.PathLike, dedupe: bool = True) -> tuple[Shard, ShardReader]:
    """Every readable shard of ``directory`` as one :class:`Shard`, plus the reader (corrupt/duplicate counts)."""
    reader = iter_shards(directory, dedupe=dedupe)
    shards = list(reader)
    if not shards:
        first = f"; {reader.corrupt[0][1]}" if reader.corrupt else ""
        raise NoReadableShards(f"no readable shards in {directory} ({reader.n_corrupt} corrupt){first}")
    return concat_shards(shards), reader
