"""Reader fuzzer: the human-game PGN reader (``read_games``: what ``pdx eval humans`` and ``pdx data pgn`` read)
on hostile files, each read twice (failing on the first bad game, and with ``skip_bad``).

    OMP_NUM_THREADS=1 python tests/chesscore/fuzz_pgn.py --inputs 300 --seed 1
    OMP_NUM_THREADS=1 python tests/chesscore/fuzz_pgn.py --inputs 5000 --seed 7 --json counts.json

Inputs start from the real Lichess games in ``tests/fixtures`` (a few games at a time) and are mutated:
random byte flips, hostile tokens inserted (``)``, ``(``, NAGs, ``{``, ``}``, null moves, ``;``, ``%``,
header lines, byte-order marks, results, NULs, long numbers, clock comments), spans deleted or duplicated,
lines shuffled, truncation anywhere; or are random bytes or random PGN tokens; any of them may then be
compressed (zstd, gzip, bzip2) and the compressed bytes damaged (flipped, truncated, garbage appended, a
corrupt second frame or member appended), or saved under a name that promises another compression; and
decompression bombs (a newline flood, one endless line) in each format.

Every read must end in one of two ways: games (with ``skip_bad``, every game counted once: yielded, empty
or skipped by reason; every yielded game legal from the standard start, no null move, ratings and clocks in
range) or one :class:`~pdx_lightning.errors.UserError` line naming the file. Anything else is a violation:
another exception (a traceback), a message over several lines or without the file's name, a broken count,
a read that grows the process's peak memory (VmHWM, reset before each input through
``/proc/self/clear_refs``; tracemalloc's peak where that is not writable) by more than ``max_mb``.
"""

from __future__ import annotations

import argparse
import bz2
import json
import math
import os
import random
import sys
import tempfile
import time
import traceback
import tracemalloc
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import chess
import zstandard

from pdx_lightning.chesscore.pgn_games import PgnFileError, ReadStats, read_games
from pdx_lightning.chesscore.pgn_values import MAX_RATING, MAX_SECONDS
from pdx_lightning.errors import UserError
from pdx_lightning.files.safeio import FileLimitError

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SEEDS = ("lichess_games_20.pgn", "lichess_games_edge.pgn", "pgn_unclosed_comment.pgn")
TOKENS = (
    ")",
    "(",
    " ) $1 ",
    " ) { c } ",
    "$3",
    "{",
    "}",
    " -- ",
    " -- -- ",
    " Z0 0000 ",
    " Z0 ",
    " 0000 ",
    " @@@@ ",
    ";",
    "\n%",
    "\n;x\n",
    "\n\n",
    '\n[Event "x"]\n',
    '[Event "y"]\n[Site "z"]\n\n',
    "\ufeff",
    " 1-0 ",
    " * ",
    "!!",
    "?",
    " O-O-O ",
    " e8=Q ",
    " Ke5 ",
    "\x00",
    "\r",
    "9" * 400,
    "{ [%clk 99:99:99] }",
    "{ [%clk 0:00:01] }",
    '[WhiteElo "1e23"]\n',
    '[Variant "Chess960"]\n',
    '[FEN "8/8/8/8/8/8/8/K6k w - - 0 1"]\n',
    "\u00e9\u4e2d",
)
MUTATORS = ("flip", "token", "delete", "duplicate", "shuffle", "truncate", "random_bytes", "random_tokens", "seed")
MiB = 1 << 20


def _games(text: str) -> list[str]:
    out, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("[Event ") and cur and any(not ln.startswith("[") and ln.strip() for ln in cur):
            out.append("".join(cur))
            cur = []
        cur.append(line)
    out.append("".join(cur))
    return out


SEED_GAMES = [g for name in SEEDS for g in _games((FIX / name).read_text(encoding="utf-8"))]


def _sample(rng: random.Random) -> bytes:
    k = rng.choice((1, 1, 2, 3, 4))
    start = rng.randrange(len(SEED_GAMES))
    return "".join(SEED_GAMES[(start + i) % len(SEED_GAMES)] for i in range(k)).encode()


def mutate(rng: random.Random, kind: str) -> bytes:
    """One input of mutator ``kind`` (plain bytes, before any compression)."""
    if kind == "random_bytes":
        return rng.randbytes(rng.randrange(0, 4096))
    if kind == "random_tokens":
        return "".join(
            rng.choice((*TOKENS, "1.", "e4", "Nf3", " ", "\n")) for _ in range(rng.randrange(1, 300))
        ).encode()
    data = bytearray(_sample(rng))
    if kind == "seed":
        return bytes(data)
    for _ in range(rng.randint(1, 6)):
        if not data:
            break
        i = rng.randrange(len(data) + 1)
        if kind == "flip":
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == "token":
            data[i:i] = rng.choice(TOKENS).encode()
        elif kind == "delete":
            del data[i : i + rng.randrange(1, 200)]
        elif kind == "duplicate":
            data[i:i] = data[i : i + rng.randrange(1, 400)]
        elif kind == "shuffle":
            lines = bytes(data).splitlines(keepends=True)
            a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[a], lines[b] = lines[b], lines[a]
            data = bytearray(b"".join(lines))
        elif kind == "truncate":
            del data[i:]
            break
    return bytes(data)


def compress(rng: random.Random, data: bytes) -> tuple[bytes, str, str]:
    """``(bytes, suffix, how)``: the input as saved, maybe compressed and damaged."""
    fmt = rng.choice(("plain", "plain", "plain", "zst", "gz", "bz2"))
    if fmt == "plain":
        return data, rng.choice((".pgn", ".pgn", ".txt")), "plain"
    pack = {
        "zst": lambda b: zstandard.ZstdCompressor().compress(b),
        "gz": lambda b: zlib.compress(b, wbits=31),
        "bz2": bz2.compress,
    }[fmt]
    out = bytearray(pack(data))
    damage = rng.choice(("none", "none", "flip", "truncate", "garbage", "second", "suffix"))
    suffix = f".pgn.{fmt}"
    if damage == "flip":
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif damage == "truncate":
        del out[rng.randrange(len(out)) :]
    elif damage == "garbage":
        out += rng.randbytes(rng.randint(1, 64))
    elif damage == "second":  # a second frame/member/stream, damaged inside
        second = bytearray(pack(_sample(rng)))
        second[rng.randrange(4, len(second))] ^= 0xFF
        out += second
    elif damage == "suffix":  # named as another format (or plain): the content decides, or one line
        suffix = rng.choice((".pgn", ".pgn.zst", ".pgn.gz", ".pgn.bz2"))
    return bytes(out), suffix, f"{fmt}:{damage}"


def bombs(d: Path, n_bytes: int) -> list[tuple[Path, str]]:
    """Decompression bombs in each format: a flood of newlines (the ratio bound) and one endless line
    (the line bound), ``n_bytes`` each once decompressed."""
    out = []
    for fill, what in ((b"\n", "newlines"), (b"x", "one line")):
        block = fill * MiB
        z = zstandard.ZstdCompressor(level=1)
        packers = {
            "zst": z.compressobj(),
            "gz": zlib.compressobj(1, wbits=31),
            "bz2": bz2.BZ2Compressor(1),
        }
        for fmt, c in packers.items():
            path = d / f"bomb_{what.replace(' ', '_')}.pgn.{fmt}"
            with open(path, "wb") as f:
                f.write(c.compress(b'[Event "bomb"]\n\n1. e4 '))
                for _ in range(n_bytes // MiB):
                    f.write(c.compress(block))
                f.write(c.flush())
            out.append((path, f"bomb:{fmt}:{what}"))
    return out


# ---------------------------------------------------------------- checking one input


class Violation(AssertionError):
    pass


def _peak_reset() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        return True
    except OSError:
        return False


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def check_game(g) -> None:
    """A yielded game: legal from the standard start, no null move, ratings and clocks in range."""
    board = chess.Board()
    for m in g.moves:
        if not m or not board.is_legal(m):
            raise Violation(f"game {g.number}: {m} yielded (null or illegal)")
        board.push(m)
    for r in (g.white_elo, g.black_elo):
        if r is not None and not 0 <= r <= MAX_RATING:
            raise Violation(f"game {g.number}: rating {r}")
    for c in g.clocks:
        if c is not None and not (math.isfinite(c) and 0 <= c <= MAX_SECONDS):
            raise Violation(f"game {g.number}: clock {c}")
    if len(g.clocks) != len(g.moves):
        raise Violation(f"game {g.number}: {len(g.clocks)} clocks for {len(g.moves)} moves")


def read_once(path: Path, skip_bad: bool) -> tuple[str, ReadStats, int, str]:
    """``(outcome, stats, games yielded, message)``: outcome ``read``, or ``refused:file`` (the file or
    its compressed stream) / ``refused:game`` (one line; with ``skip_bad`` only the file may be
    refused); raises :class:`Violation` for anything else."""
    stats = ReadStats()
    n = 0
    try:
        for g in read_games(path, skip_bad=skip_bad, stats=stats):
            check_game(g)
            n += 1
    except UserError as e:
        msg = str(e)
        if "\n" in msg or "\r" in msg or path.name not in msg:
            raise Violation(f"not one line naming the file: {msg[:300]!r}") from e
        outcome = "refused:file" if isinstance(e, (FileLimitError, PgnFileError)) else "refused:game"
        if skip_bad and outcome == "refused:game":
            raise Violation(f"a game refused with skip_bad: {msg[:300]!r}") from e
        return outcome, stats, n, msg
    except Violation:
        raise
    except Exception as e:  # the finding: a traceback where a user would get one line
        raise Violation(f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    if skip_bad and stats.games != n + stats.empty + sum(stats.skipped.values()):
        raise Violation(f"counts do not add up: {stats.to_dict()} with {n} yielded")
    if not skip_bad and any(stats.skipped.values()):
        raise Violation(f"games skipped without skip_bad: {stats.skipped}")
    return "read", stats, n, ""


@dataclass
class Counts:
    inputs: int = 0
    by_source: Counter = field(default_factory=Counter)
    plain: Counter = field(default_factory=Counter)  # read / refused:file / refused:game (failing on the first)
    skip_bad: Counter = field(default_factory=Counter)  # read / refused:file (with skip_bad)
    games_yielded: int = 0
    games_skipped: Counter = field(default_factory=Counter)
    games_empty: int = 0
    max_peak_mb: float = 0.0
    max_seconds: float = 0.0
    memory_probe: str = "VmHWM"
    examples: dict = field(default_factory=dict)  # the first message per outcome and source
    violations: Counter = field(default_factory=Counter)  # only with keep_going

    def to_dict(self) -> dict:
        return {
            "inputs": self.inputs,
            "by_source": dict(self.by_source),
            "failing_on_first_bad_game": dict(self.plain),
            "with_skip_bad": dict(self.skip_bad),
            "games_yielded": self.games_yielded,
            "games_empty": self.games_empty,
            "games_skipped_by_reason": dict(self.games_skipped),
            "max_peak_growth_mb": round(self.max_peak_mb, 1),
            "max_seconds_per_input": round(self.max_seconds, 2),
            "memory_probe": self.memory_probe,
            "violations": dict(self.violations),
        }


def check_input(path: Path, source: str, counts: Counts, max_mb: float) -> None:
    hwm = _peak_reset()
    if hwm:
        base = _status_kb("VmRSS")
    else:
        tracemalloc.start()
        counts.memory_probe = "tracemalloc"
    t0 = time.perf_counter()
    try:
        plain, _, _, msg = read_once(path, skip_bad=False)
        outcome, stats, n, msg_skip = read_once(path, skip_bad=True)
    except Violation as e:
        raise Violation(f"{source} input {path}: {e}") from None
    finally:
        if hwm:
            peak_mb = (_status_kb("VmHWM") - base) / 1024
        else:
            peak_mb = tracemalloc.get_traced_memory()[1] / MiB
            tracemalloc.stop()
    seconds = time.perf_counter() - t0
    if peak_mb > max_mb:
        raise Violation(f"{source} input {path}: peak memory grew {peak_mb:.0f} MB (bound {max_mb:.0f})")
    if plain == "read" and outcome != "read":
        raise Violation(f"{source} input {path}: read whole, then refused with skip_bad")
    counts.inputs += 1
    counts.by_source[source.split(":")[0]] += 1
    counts.plain[plain] += 1
    counts.skip_bad[outcome] += 1
    counts.games_yielded += n
    counts.games_empty += stats.empty
    counts.games_skipped.update({k: v for k, v in stats.skipped.items() if v})
    counts.max_peak_mb = max(counts.max_peak_mb, peak_mb)
    counts.max_seconds = max(counts.max_seconds, seconds)
    for key, m in ((f"{plain} ({source})", msg), (f"skip_bad {outcome} ({source})", msg_skip)):
        if m and key not in counts.examples:
            counts.examples[key] = m


def run(
    inputs: int,
    seed: int,
    max_mb: float = 64.0,
    bomb_bytes: int = 16 * MiB,
    keep: Path | None = None,
    keep_going: bool = False,
) -> Counts:
    """Fuzz ``inputs`` mutated files (and the bombs); raises :class:`Violation` at the first finding
    (the input is kept under ``keep`` when given), or with ``keep_going`` counts the findings by their
    first line's kind (``counts.violations``) and goes on."""
    rng = random.Random(seed)
    counts = Counts()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cases = [(p, src) for p, src in bombs(d, bomb_bytes)]
        for i in range(inputs):
            kind = MUTATORS[i % len(MUTATORS)] if i < len(MUTATORS) else rng.choice(MUTATORS)
            data, suffix, how = compress(rng, mutate(rng, kind))
            path = d / f"in{i}{suffix}"
            path.write_bytes(data)
            cases.append((path, f"{kind}:{how}"))
        for path, source in cases:
            try:
                check_input(path, source, counts, max_mb)
            except Violation as e:
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    (keep / path.name).write_bytes(path.read_bytes())
                if not keep_going:
                    raise
                counts.inputs += 1
                counts.violations[str(e).split(": ", 1)[1].split(":")[0][:60]] += 1
            if path.stat().st_size < MiB:
                path.unlink()
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-mb", type=float, default=64.0, help="peak memory growth allowed per input")
    ap.add_argument("--bomb-mb", type=int, default=64, help="decompressed size of each bomb")
    ap.add_argument("--keep", type=Path, default=Path("fuzz_pgn_findings"), help="where a failing input is kept")
    ap.add_argument("--json", type=Path, help="write the counts here")
    ap.add_argument("--keep-going", action="store_true", help="count violations by kind instead of stopping")
    ap.add_argument("--examples", action="store_true", help="print the first message of each outcome and source")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        counts = run(a.inputs, a.seed, a.max_mb, a.bomb_mb * MiB, a.keep, a.keep_going)
    except Violation as e:
        print(f"VIOLATION: {e}", file=sys.stderr)
        return 1
    doc = {**counts.to_dict(), "seed": a.seed, "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(doc, indent=1))
    if counts.violations:
        print(f"VIOLATIONS: {sum(counts.violations.values())}", file=sys.stderr)
    if a.examples:
        for k, m in sorted(counts.examples.items()):
            print(f"{k}: {m[:400]}")
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
