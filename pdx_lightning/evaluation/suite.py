"""Puzzle suites: one streaming loader for the Lichess, Ruoss and generated CSV formats.

Formats (detected from the header row; ``.csv`` or zstandard ``.csv.zst``, streamed):

* **Lichess puzzle database** — ``PuzzleId,FEN,Moves,Rating,RatingDeviation,
  Popularity,NbPlays,Themes,GameUrl,OpeningTags``. The dumps may carry this
  header or none; headerless rows of 10 columns, or 9 (older dumps without
  ``OpeningTags``), are read positionally. ``FEN`` is the position *before*
  the opponent's setup move, the first of ``Moves`` (UCI); the solver plays
  the 2nd, 4th, … moves, so ``Moves`` has even length.
* **Ruoss et al. (2024) 10k suite** — ``PuzzleId,Rating,PGN,Solution,FEN,Moves``.
  ``PGN`` is the game so far (SAN, move numbers allowed); the board is rebuilt
  by playing it from the standard start, so the network sees the true history,
  and checked against ``FEN`` (pieces, side to move, castling). ``Moves`` has
  the Lichess semantics: its first move is the opponent's setup move, played
  from the PGN's final position (verified on the real rows: in ``01F7L`` the
  PGN ends 8… Qh4+, ``Moves`` = ``e1e2 h4f2`` = Ke2 Qf2#, solver Black), and
  ``Solution`` is the same line in SAN (not needed).
* **Generated suites** (``pdx data mates|puzzles``) — the Lichess header plus
  optional extra columns:

  - ``AltMoves``: the moves also accepted at each solver ply (e.g. every
    mate-preserving move). Solver plies separated by ``|`` (spaces around it
    allowed), each a space-separated list of UCI moves legal at that ply's
    position *on the marked line*. Exactly one group per solver move; a group
    may be empty; the marked move may be repeated. Example for a mate in 2
    (``Moves`` = setup, s1, reply, s2): ``b2b7 a1a7 | a1a8``. An empty field
    means "no alternatives recorded".
  - ``Difficulty``: a number used for binning instead of ``Rating``.

  Other extra columns are ignored.

Each row becomes a :class:`Puzzle` (see its docstring). Accepted moves per
solver ply = the marked move ∪ that ply's ``AltMoves`` ∪ every legal move that
checkmates at once (lichess accepts any mating move: a mate ends the puzzle won).

Reading is bounded (``safeio``): lines longer than ``$PDX_MAX_LINE_BYTES`` (64 KiB), a CSV
record spanning more than :data:`MAX_RECORD_LINES` lines (an unclosed quote), and for ``.zst``
a decompressed size past ``$PDX_MAX_SUITE_BYTES`` (16 GiB), a compression ratio past
``$PDX_MAX_COMPRESSION_RATIO`` (200x, after the first MiB), a decoding window past
``$PDX_MAX_ZSTD_WINDOW`` (128 MiB) or a stream cut mid-frame raise :class:`SuiteLimitError`
(never skipped by ``skip_bad``), before anything unbounded is held in memory.

Malformed rows (wrong column count, bad FEN/PGN, an illegal or unparsable
move, an odd-length ``Moves``, a non-numeric rating, a bad ``AltMoves``)
raise :class:`PuzzleFormatError` naming ``file:line`` and the puzzle id; with
``skip_bad=True`` they are skipped and counted in :class:`Suite`. Column
counts are checked on every row; the board and moves are parsed only for rows
that pass the rating/theme filters and the sample (parsing a 5M-row dump
would take minutes), so bad rows outside the selection are not counted.
"""

from __future__ import annotations

import csv
import io
import math
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess

from pdx_lightning.errors import UserError
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.files.safeio import BoundedLines, FileLimitError, open_zstd_bounded

LICHESS_COLUMNS = (
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
)
RUOSS_COLUMNS = ("PuzzleId", "Rating", "PGN", "Solution", "FEN", "Moves")
ALT_SEPARATOR = "|"
_MOVE_NUMBER = re.compile(r"\d+\.(?:\.\.)?")
_RESULTS = {"1-0", "0-1", "1/2-1/2", "*"}


MAX_RECORD_LINES = 64  # physical lines one CSV record may span (quoted newlines); more: an unclosed quote


class PuzzleFormatError(UserError, ValueError):
    """A malformed puzzle row; the message reads ``file:line: puzzle ID: what``."""

    def __init__(self, path: str, line: int, puzzle_id: str, reason: str) -> None:
        super().__init__(f"{path}:{line}: puzzle {puzzle_id or '?'}: {reason}")
        self.path, self.line, self.puzzle_id, self.reason = path, line, puzzle_id, reason


class SuiteLimitError(FileLimitError, PuzzleFormatError):
    """A suite file refused by a reading bound (line length, record span, decompressed size or ratio,
    zstd window) or cut short; never skipped by ``skip_bad``: the rest of the file cannot be read."""

    def __init__(self, path, problem: str, limit: str | None = None, override: str | None = None) -> None:
        FileLimitError.__init__(self, path, problem, limit, override)
        file, _, line = str(path).rpartition(":")
        self.line = int(line) if line.isdigit() else 0
        self.path = file if line.isdigit() else str(path)
        self.puzzle_id, self.reason = "", problem


@dataclass(frozen=True, eq=False)
class Puzzle:
    """One puzzle, ready to score.

    ``board`` is the first solver position: its move stack is all the history
    known (the Ruoss PGN, or just the Lichess FEN) plus the setup move, so
    ``encode_boards`` sees the true history. Do not mutate it; use
    :meth:`positions`. ``line`` is the solution from ``board``: solver,
    reply, solver, … (odd length). ``accepted[k]`` / ``mates[k]`` are the
    accepted / immediately mating moves at solver ply ``k`` (``mates[k] ⊆
    accepted[k]``, ``line[2k] ∈ accepted[k]``).
    """

    puzzle_id: str
    board: chess.Board
    line: tuple[chess.Move, ...]
    accepted: tuple[frozenset, ...]
    mates: tuple[frozenset, ...]
    rating: int | None = None
    difficulty: float | None = None
    themes: tuple[str, ...] = ()
    source: str = ""

    @property
    def solver_moves(self) -> tuple[chess.Move, ...]:
        return self.line[0::2]

    @property
    def depth(self) -> int:
        """Number of solver moves (the N of a mate-in-N suite)."""
        return (len(self.line) + 1) // 2

    def positions(self) -> Iterator[chess.Board]:
        """A fresh board (with history) at each solver ply, along the marked line."""
        b = self.board.copy()
        for k in range(self.depth):
            yield b.copy()
            b.push(self.line[2 * k])
            if 2 * k + 1 < len(self.line):
                b.push(self.line[2 * k + 1])


@dataclass
class Suite:
    """Puzzles selected from one or more files, with the bookkeeping to report."""

    puzzles: list[Puzzle] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    n_rows: int = 0  # data rows read
    n_selected: int = 0  # rows passing the filters (before sampling)
    n_bad: int = 0  # malformed rows skipped (skip_bad=True)
    bad: list[str] = field(default_factory=list)  # their messages (first 100)

    def __len__(self) -> int:
        return len(self.puzzles)

    def extend(self, other: Suite) -> None:
        self.puzzles += other.puzzles
        self.paths += other.paths
        self.n_rows += other.n_rows
        self.n_selected += other.n_selected
        self.n_bad += other.n_bad
        self.bad += other.bad[: max(0, 100 - len(self.bad))]


def immediate_mates(board: chess.Board) -> frozenset:
    """The legal moves of ``board`` that checkmate at once.

    Only moves that can give check are tried (a superset: the moved/promoted
    piece attacks the king square from its destination, or the from-square
    lies on a line through the king, or castling/en passant), so most moves
    skip the push/pop.
    """
    king = board.king(not board.turn)
    if king is None:
        return frozenset()
    king_bb = chess.BB_SQUARES[king]
    lines_r = chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0]
    lines_b = chess.BB_DIAG_ATTACKS[king][0]
    out = []
    for m in list(board.legal_moves):
        pt = m.promotion or board.piece_type_at(m.from_square)
        to_bb = chess.BB_SQUARES[m.to_square]
        candidate = (
            chess.BB_SQUARES[m.from_square] & (lines_r | lines_b)
            or (pt == chess.KNIGHT and chess.BB_KNIGHT_ATTACKS[m.to_square] & king_bb)
            or (pt == chess.PAWN and chess.BB_PAWN_ATTACKS[board.turn][m.to_square] & king_bb)
            or (pt in (chess.BISHOP, chess.QUEEN) and to_bb & lines_b)
            or (pt in (chess.ROOK, chess.QUEEN) and to_bb & lines_r)
            or board.is_castling(m)
            or board.is_en_passant(m)
        )
        if candidate:
            board.push(m)
            if board.is_checkmate():
                out.append(m)
            board.pop()
    return frozenset(out)


def make_puzzle(
    puzzle_id: str,
    board: chess.Board,
    line: Sequence[chess.Move],
    alternatives: Sequence[Sequence[chess.Move]] | None = None,
    *,
    rating: int | None = None,
    difficulty: float | None = None,
    themes: Sequence[str] = (),
    source: str = "",
) -> Puzzle:
    """Build a :class:`Puzzle` from the first solver position and its line (moves must be legal).

    ``alternatives[k]``: extra accepted moves at solver ply ``k``. Raises
    ``ValueError`` on an even-length line, an illegal move or a wrong number
    of alternative groups.
    """
    line = tuple(line)
    if len(line) % 2 == 0:
        raise ValueError(f"the solution line must have odd length (solver moves first and last), got {len(line)}")
    n = (len(line) + 1) // 2
    if alternatives is not None and len(alternatives) != n:
        raise ValueError(f"AltMoves has {len(alternatives)} groups for {n} solver moves")
    b = board.copy()
    accepted, mates = [], []
    for i, m in enumerate(line):
        if not b.is_legal(m):
            raise ValueError(f"illegal move {m.uci()} at ply {i + 1} of the line in {b.fen()}")
        if i % 2 == 0:
            alts = tuple(alternatives[i // 2]) if alternatives is not None else ()
            for a in alts:
                if not b.is_legal(a):
                    raise ValueError(f"AltMoves: illegal move {a.uci()} at solver ply {i // 2 + 1} in {b.fen()}")
            mate = immediate_mates(b)
            mates.append(mate)
            accepted.append(frozenset((m, *alts)) | mate)
        b.push(m)
    if difficulty is None and rating is not None:
        difficulty = float(rating)
    return Puzzle(
        puzzle_id, board.copy(), line, tuple(accepted), tuple(mates), rating, difficulty, tuple(themes), source
    )


# ---------------------------------------------------------------- reading rows


def open_text(path: str | Path) -> io.TextIOBase:
    """A text stream over ``path``; ``.zst`` files are decompressed as they are read, bounded
    (``safeio.open_zstd_bounded``: size, ratio, window, truncation)."""
    path = Path(resolve_path(path))  # a shipped data/... file where none is here (pdx_lightning.files.resources)
    if path.suffix == ".zst":
        raw = open_zstd_bounded(path, error=SuiteLimitError)
        return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


class _RecordLines(BoundedLines):
    """Lines of at most ``$PDX_MAX_LINE_BYTES`` characters for ``csv.reader``, refusing a record that
    spans more than :data:`MAX_RECORD_LINES` lines (``mark()`` after each record)."""

    def __init__(self, stream, path) -> None:
        super().__init__(stream, path, error=SuiteLimitError)
        self.since_mark = 0

    def mark(self) -> None:
        self.since_mark = 0

    def readline(self, size: int = -1) -> str:
        line = super().readline(size)
        self.since_mark += 1
        if self.since_mark > MAX_RECORD_LINES:
            raise SuiteLimitError(
                f"{self.path}:{self.line_no}",
                f"one CSV record spans more than {MAX_RECORD_LINES} lines (an unclosed quote?)",
                f"{MAX_RECORD_LINES} lines",
            )
        return line


def _read_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (UnicodeDecodeError, csv.Error, OSError, EOFError)
    try:
        import zstandard  # noqa: PLC0415

        errors += (zstandard.ZstdError,)
    except ImportError:
        pass
    return errors


def iter_rows(path: str | Path) -> Iterator[tuple[int, dict[str, str] | PuzzleFormatError]]:
    """``(line, row dict)`` per data row, or ``(line, PuzzleFormatError)`` for a wrong column count.

    Adds ``"_format"``: ``"ruoss"`` or ``"lichess"`` (generated suites are Lichess-format). A file
    that cannot be decoded (invalid UTF-8, a corrupt ``.zst``, a CSV syntax error) raises
    :class:`PuzzleFormatError` at the line where reading failed: the rest of such a file cannot be
    trusted, so this is not skipped by ``skip_bad``.
    """
    reader = None
    try:
        with open_text(path) as f:
            lines = _RecordLines(f, path)
            reader = csv.reader(lines)
            yield from _rows(reader, path, lines)
    except FileLimitError:
        raise
    except _read_errors() as e:
        line = reader.line_num + 1 if reader is not None else 1
        raise PuzzleFormatError(str(path), line, "", f"unreadable ({type(e).__name__}: {e})") from e


def _rows(reader, path: str | Path, lines: _RecordLines) -> Iterator[tuple[int, dict[str, str] | PuzzleFormatError]]:
    first = next(reader, None)
    lines.mark()
    if first is None:
        return
    if first and first[0] == "PuzzleId":
        columns, fmt, pending = tuple(first), ("ruoss" if "PGN" in first else "lichess"), None
        need = ("PuzzleId", "PGN", "Moves") if fmt == "ruoss" else ("PuzzleId", "FEN", "Moves")
        missing = [c for c in need if c not in columns]
        if missing:
            raise PuzzleFormatError(str(path), 1, "", f"header lacks column(s) {missing}")
    elif len(first) in (9, 10):
        columns, fmt, pending = LICHESS_COLUMNS[: len(first)], "lichess", first
    else:
        raise PuzzleFormatError(
            str(path),
            1,
            first[0] if first else "",
            f"no header and {len(first)} columns (headerless Lichess dumps have 9 or 10)",
        )
    rows = reader if pending is None else _chain([pending], reader)
    for row in rows:
        lines.mark()
        line = reader.line_num
        if not row:
            continue  # blank line
        if len(row) != len(columns):
            yield (
                line,
                PuzzleFormatError(
                    str(path), line, row[0], f"{len(row)} columns, expected {len(columns)} ({','.join(columns)})"
                ),
            )
            continue
        d = dict(zip(columns, row))
        d["_format"] = fmt
        yield line, d


def _chain(first, rest):
    yield from first
    yield from rest


def _parse_rating(d: dict, path: str, line: int) -> int | None:
    r = d.get("Rating", "").strip()
    if not r:
        return None
    try:
        return int(float(r))
    except (ValueError, OverflowError):  # OverflowError: "inf"
        raise PuzzleFormatError(path, line, d["PuzzleId"], f"rating {r!r} is not a finite number") from None


def _parse_uci(board: chess.Board, uci: str, what: str) -> chess.Move:
    try:
        move = board.parse_uci(uci)  # also normalizes king-takes-rook castling
    except ValueError:
        move = None
    if not move:  # unparsable, illegal, or the null move 0000
        raise ValueError(f"{what}: illegal or malformed move {uci!r} in {board.fen()}")
    return move


def parse_row(d: dict[str, str], path: str, line: int) -> Puzzle:
    """One row dict (from :func:`iter_rows`) → :class:`Puzzle`, or :class:`PuzzleFormatError`."""
    pid = d["PuzzleId"]
    rating = _parse_rating(d, path, line)
    try:
        if d["_format"] == "ruoss":
            board = chess.Board()
            for san in _MOVE_NUMBER.sub(" ", d["PGN"]).split():
                if san not in _RESULTS:
                    try:
                        board.push_san(san)
                    except ValueError:
                        raise ValueError(f"PGN: illegal or malformed move {san!r} in {board.fen()}") from None
            fen = d.get("FEN", "").strip()
            if fen:
                want = chess.Board(fen)
                if (board.board_fen(), board.turn, board.clean_castling_rights()) != (
                    want.board_fen(),
                    want.turn,
                    want.clean_castling_rights(),
                ):
                    raise ValueError(f"PGN reaches {board.fen()}, not the FEN {fen}")
        else:
            board = chess.Board(d["FEN"])
            if not board.is_valid():
                raise ValueError(f"invalid position {d['FEN']!r}: {board.status()!r}")
        ucis = d["Moves"].split()
        if len(ucis) < 2 or len(ucis) % 2:
            raise ValueError(f"Moves needs the setup move plus an odd-length solution, got {len(ucis)} moves")
        board.push(_parse_uci(board, ucis[0], "setup move"))
        b = board.copy(stack=False)
        moves = []
        for i, u in enumerate(ucis[1:]):
            moves.append(_parse_uci(b, u, f"solution ply {i + 1}"))
            b.push(moves[-1])
        alternatives = None
        alt_field = d.get("AltMoves", "").strip()
        if alt_field:
            groups = [g.split() for g in alt_field.split(ALT_SEPARATOR)]
            if len(groups) != len(moves[0::2]):
                raise ValueError(f"AltMoves has {len(groups)} groups for {len(moves[0::2])} solver moves")
            alternatives, b = [], board.copy(stack=False)
            for k, g in enumerate(groups):
                alternatives.append([_parse_uci(b, u, f"AltMoves group {k + 1}") for u in g])
                b.push(moves[2 * k])
                if 2 * k + 1 < len(moves):
                    b.push(moves[2 * k + 1])
        diff = d.get("Difficulty", "").strip()
        try:
            difficulty = float(diff) if diff else None
        except ValueError:
            difficulty = math.nan
        if difficulty is not None and not math.isfinite(difficulty):
            raise ValueError(f"Difficulty {diff!r} is not a finite number")
        return make_puzzle(
            pid,
            board,
            moves,
            alternatives,
            rating=rating,
            difficulty=difficulty,
            themes=tuple(d.get("Themes", "").split()),
            source=f"{path}:{line}",
        )
    except PuzzleFormatError:
        raise
    except ValueError as e:
        raise PuzzleFormatError(path, line, pid, str(e)) from None


# ---------------------------------------------------------------- selecting puzzles


def _keep(
    d: dict, rating: int | None, rating_min: float | None, rating_max: float | None, themes: frozenset | None
) -> bool:
    if rating_min is not None or rating_max is not None:
        if rating is None:
            return False
        if (rating_min is not None and rating < rating_min) or (rating_max is not None and rating > rating_max):
            return False
    return not themes or not themes.isdisjoint(d.get("Themes", "").split())


def load_suite(
    paths: str | Path | Sequence[str | Path],
    *,
    rating_min: float | None = None,
    rating_max: float | None = None,
    themes: Sequence[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    skip_bad: bool = False,
) -> Suite:
    """Read puzzle file(s) into a :class:`Suite`.

    Filters, applied per file: ``rating_min <= Rating <= rating_max``
    (inclusive; rows without a rating fail a rating filter), ``themes``: keep
    a puzzle that has *any* of them. ``sample``: a seeded uniform sample of N
    of the filtered rows of each file (reservoir sampling, so the file is read
    once in constant memory), kept in file order. ``skip_bad``: skip and count
    malformed rows instead of raising :class:`PuzzleFormatError` (a malformed
    row drawn into the sample is dropped, so the sample comes out smaller).
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    suite = Suite()
    theme_set = frozenset(themes) if themes else None
    for path in paths:
        suite.extend(_load_one(str(path), rating_min, rating_max, theme_set, sample, seed, skip_bad))
    return suite


def _load_one(path: str, rating_min, rating_max, themes, sample, seed, skip_bad) -> Suite:
    suite = Suite(paths=[path])
    rng = random.Random(seed)
    chosen: list[tuple[int, dict]] = []

    def bad(err: PuzzleFormatError) -> None:
        if not skip_bad:
            raise err
        suite.n_bad += 1
        if len(suite.bad) < 100:
            suite.bad.append(str(err))

    for line, d in iter_rows(path):
        suite.n_rows += 1
        if isinstance(d, PuzzleFormatError):
            bad(d)
            continue
        try:
            rating = _parse_rating(d, path, line)
        except PuzzleFormatError as e:
            bad(e)
            continue
        if not _keep(d, rating, rating_min, rating_max, themes):
            continue
        suite.n_selected += 1
        if sample is None:  # stream: parse now, so errors come in file order
            try:
                suite.puzzles.append(parse_row(d, path, line))
            except PuzzleFormatError as e:
                bad(e)
        elif len(chosen) < sample:
            chosen.append((line, d))
        else:  # Algorithm R: row i (1-based) replaces a random slot with probability sample / i
            j = rng.randrange(suite.n_selected)
            if j < sample:
                chosen[j] = (line, d)
    for line, d in sorted(chosen, key=lambda t: t[0]):
        try:
            suite.puzzles.append(parse_row(d, path, line))
        except PuzzleFormatError as e:
            bad(e)
    return suite


@dataclass
class SuiteSpec:
    """A suite as evaluated: puzzle file(s) plus the selection applied to them (:func:`load_suite`).

    The sweep's ``eval:`` suites and the puzzle-tuned control's ``exclude`` list (its pool must be
    disjoint from every suite *as selected*) are written in this shape."""

    path: list[str]
    sample: int | None = None
    seed: int = 0
    rating_min: float | None = None
    rating_max: float | None = None
    themes: list[str] | None = None

    def load(self) -> Suite:
        """The selected puzzles (:func:`load_suite` with this selection)."""
        return load_suite(
            self.path,
            sample=self.sample,
            seed=self.seed,
            rating_min=self.rating_min,
            rating_max=self.rating_max,
            themes=self.themes,
        )
