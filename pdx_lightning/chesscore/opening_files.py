"""Reading opening files: where games start, with the move history that reached them.

One reader for every player of games: the arena (:func:`load_openings`, any
starting position) and self-play restarts (:func:`read_opening_lines`, lines
replayed from the standard start). Accepted files:

* **text** (any name but ``.pgn``), one opening per line, blank lines and ``#``
  comments skipped. A line is

  - UCI moves from the standard start (``e2e4 e7e5 g1f3``);
  - an EPD record, optionally with the UCI line that reaches it from the
    standard start in its ``c0`` opcode (as ``pdx data openings`` writes them:
    ``<EPD> id "pdx-uho-0001"; c0 "e2e4 c7c5 ..."; ce 87;``); the line must reach
    the EPD's position. ``id`` names the opening, ``ce`` is its evaluation (cp);
  - a FEN.

  A position without its line has no history: the encoder then repeats the
  earliest known position, as Lc0 does.
* **PGN** (``.pgn``): every game's mainline; the opening is its *end* position,
  with the game's moves as its history (from the standard start, or from the
  game's ``FEN`` header). ``id`` is the game's ``Opening`` header, else
  ``<file stem>:<game number>``.

Anything that cannot be read raises :class:`OpeningFormatError` naming
``file:line`` (for PGN, the line where the offending game starts).

Files are streamed, with bounds (``safeio``; each raises :class:`OpeningLimitError` saying how to
raise it): a line longer than ``$PDX_MAX_LINE_BYTES`` (64 KiB), a PGN game longer than
``$PDX_MAX_PGN_GAME_BYTES`` (256 KiB), more than ``$PDX_MAX_OPENINGS`` openings (100,000) or more
than ``$PDX_MAX_OPENING_PLIES`` moves read (500,000: the boards keep their move stacks, ~0.6 KB
a move).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn

from pdx_lightning.chesscore.pgn_games import read_pgn_game
from pdx_lightning.chesscore.rules import game_end
from pdx_lightning.errors import UserError
from pdx_lightning.files.resources import package_dir, resolve_path
from pdx_lightning.files.safeio import OPENING_PLIES, OPENINGS, BoundedLines, FileLimitError, PgnGameLines

# the shipped default suite (package data: pdx_lightning.files.resources)
DEFAULT_SUITE = package_dir("data") / "openings_uho.epd"

_UCI_TOKEN = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")


class OpeningFormatError(UserError, ValueError):
    """An opening file or line that cannot be read (says file:line)."""


class OpeningLimitError(FileLimitError, OpeningFormatError):
    """An opening file refused by a reading bound (line or game length, openings, moves)."""


@dataclass(frozen=True)
class Opening:
    """A starting position; ``board`` carries the move stack that reached it (if known).

    ``line`` is the UCI line from the standard start (empty when the position's
    history does not begin there, or is unknown).
    """

    id: str
    board: chess.Board
    line: tuple[str, ...] = ()
    eval_cp: int | None = None

    def start(self) -> chess.Board:
        """A fresh copy of the position, with its move history."""
        return self.board.copy()

    @property
    def root_fen(self) -> str:
        """FEN of the position the known history starts from."""
        return self.board.root().fen()


def _replay(ucis: list[str] | tuple[str, ...], where: str, what: str = "move") -> chess.Board:
    board = chess.Board()
    for k, uci in enumerate(ucis):
        try:
            board.push(board.parse_uci(uci))  # parse_uci normalizes king-takes-rook castling
        except chess.IllegalMoveError:
            raise OpeningFormatError(f"{where}: {what} {k + 1} {uci!r} is illegal in {board.fen()}") from None
        except ValueError:
            raise OpeningFormatError(f"{where}: {what} {k + 1} {uci!r} is not UCI") from None
    return board


def _from_start(board: chess.Board) -> tuple[str, ...]:
    root = board.root()
    if root.fen() != chess.STARTING_FEN:
        return ()
    return tuple(m.uci() for m in board.move_stack)


def parse_opening(text: str, where: str = "<string>", default_id: str = "") -> Opening:
    """One EPD (optionally with a ``c0`` UCI line) or FEN line → ``Opening``."""
    fields = text.split()
    ops: dict[str, str | int | float | chess.Move | list[chess.Move] | None]
    try:
        if len(fields) >= 6 and fields[4].isdigit() and fields[5].isdigit():
            board, ops = chess.Board(" ".join(fields[:6])), {}
        else:
            board, ops = chess.Board.from_epd(text)
    except ValueError as e:
        raise OpeningFormatError(f"{where}: not a FEN/EPD position: {e}") from e
    if not board.is_valid():  # e.g. no king: games from it would break move generation and scoring
        raise OpeningFormatError(f"{where}: invalid position {board.fen()!r} ({board.status()!r})")
    oid = str(ops.get("id", default_id))
    line: tuple[str, ...] = ()
    raw = ops.get("c0")
    if isinstance(raw, str) and raw.strip():
        replay = _replay(raw.split(), where, "c0 move")
        if replay.epd() != board.epd():
            raise OpeningFormatError(f"{where}: c0 line reaches {replay.epd()!r}, not the EPD {board.epd()!r}")
        board, line = replay, tuple(m.uci() for m in replay.move_stack)
    ce = ops.get("ce")
    return Opening(oid, board, line, int(ce) if isinstance(ce, (int, float)) else None)


def parse_line(text: str, where: str = "<string>", default_id: str = "") -> Opening:
    """One line of a text opening file: UCI moves from the start, or an EPD/FEN (:func:`parse_opening`)."""
    tokens = text.split()
    if tokens and all(_UCI_TOKEN.fullmatch(t) for t in tokens):
        board = _replay(tokens, where)
        return Opening(default_id, board, tuple(m.uci() for m in board.move_stack))
    return parse_opening(text, where, default_id)


class _Budget:
    """What is left of a file's move budget (``$PDX_MAX_OPENING_PLIES``)."""

    def __init__(self, path: Path) -> None:
        self.path, self.limit = path, OPENING_PLIES.value()
        self.used = 0

    def spend(self, n: int, where: str) -> None:
        self.used += n
        if self.used > self.limit:
            raise OpeningLimitError(
                where,
                f"the file holds more than {self.limit:,} moves",
                OPENING_PLIES.shown(self.limit),
                OPENING_PLIES.override(),
            )


def _builder(budget: _Budget, lines: PgnGameLines) -> type:
    class Builder(chess.pgn.GameBuilder):
        """GameBuilder spending the move budget as it reads (variations included), so a game of
        millions of moves stops at the budget instead of building them all."""

        def visit_move(self, board: chess.Board, move: chess.Move) -> None:
            budget.spend(1, f"{lines.path}:{lines.game_line}")
            super().visit_move(board, move)

        def handle_error(self, error: Exception) -> None:
            self.game.errors.append(error)  # raised as OpeningFormatError by the reader; not logged too

    return Builder


def _read_pgn(path: Path, lines: PgnGameLines, budget: _Budget) -> Iterator[tuple[Opening, str]]:
    visitor = _builder(budget, lines)
    n = 0
    while True:
        game = read_pgn_game(lines, visitor, OpeningFormatError, "unreadable PGN game")
        if game is None:
            return
        where = f"{path}:{lines.game_line}"
        n += 1
        if game.errors:
            raise OpeningFormatError(f"{where}: PGN game {n}: {game.errors[0]}")
        try:
            board = game.board()
        except ValueError as e:
            raise OpeningFormatError(f"{where}: PGN game {n}: bad FEN header: {e}") from e
        if not board.is_valid():
            raise OpeningFormatError(f"{where}: PGN game {n}: invalid position {board.fen()!r} ({board.status()!r})")
        for move in game.mainline_moves():
            board.push(move)  # the reader checked legality (an illegal move lands in game.errors)
        oid = game.headers.get("Opening", "") or f"{path.stem}:{n}"
        yield Opening(oid, board, _from_start(board)), where


def _read_text(path: Path, lines: BoundedLines, budget: _Budget) -> Iterator[tuple[Opening, str]]:
    for raw in lines:
        line = raw.strip()
        if line and not line.startswith("#"):
            where = f"{path}:{lines.line_no}"
            opening = parse_line(line, where, default_id=f"{path.stem}:{lines.line_no}")
            budget.spend(len(opening.board.move_stack), where)
            yield opening, where


def _read(path: str | Path) -> list[tuple[Opening, str]]:
    """``(opening, "file:line")`` for every opening of the file, in file order (streamed, bounded)."""
    path = Path(resolve_path(path))  # a shipped data/... file where none is here (pdx_lightning.files.resources)
    if not path.is_file():
        raise OpeningFormatError(f"opening file {path} not found")
    max_openings, budget = OPENINGS.value(), _Budget(path)
    out: list[tuple[Opening, str]] = []
    try:
        with open(path, encoding="utf-8") as f:
            if path.suffix.lower() == ".pgn":
                items = _read_pgn(path, PgnGameLines(f, path, error=OpeningLimitError), budget)
            else:
                items = _read_text(path, BoundedLines(f, path, error=OpeningLimitError), budget)
            for item in items:
                out.append(item)
                if len(out) > max_openings:
                    raise OpeningLimitError(
                        item[1],
                        f"the file holds more than {max_openings:,} openings",
                        OPENINGS.shown(max_openings),
                        OPENINGS.override(),
                    )
    except (OSError, UnicodeDecodeError) as e:
        raise OpeningFormatError(f"{path}: cannot read the opening file ({type(e).__name__}: {e})") from e
    if not out:
        raise OpeningFormatError(f"{path}: no openings")
    return out


def load_openings(path: str | Path = DEFAULT_SUITE) -> list[Opening]:
    """Every opening of a text (UCI / EPD / FEN lines) or PGN file, in file order (the arena's suite;
    default: the bundled UHO-like suite)."""
    return [o for o, _ in _read(path)]


def read_opening_lines(path: str | Path) -> list[list[str]]:
    """UCI lines from the standard start, one per opening, for self-play restarts.

    Every opening must carry its line from the start (UCI moves, an EPD with ``c0``,
    a PGN game without a ``FEN`` header) and must not end in a finished game (by the
    rules that need no claim, ``rules.game_end``). Moves come back normalized
    (king-takes-rook castling as the king's move).
    """
    lines = []
    for o, where in _read(path):
        if not o.line:
            raise OpeningFormatError(
                f"{where}: no line from the standard start: neither UCI moves nor an "
                f"EPD with a c0 UCI line nor a PGN game from the start (restarts "
                f"replay lines from the start position)"
            )
        if game_end(o.board) is not None:
            raise OpeningFormatError(f"{where}: the line ends in a finished game ({o.board.fen()})")
        lines.append(list(o.line))
    return lines
