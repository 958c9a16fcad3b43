"""Reading human games from PGN (``.pgn`` or ``.pgn.zst``), streamed one game at a time, and the
move filters of move-matching evaluations (``pdx eval humans``) and human-game shards (``pdx data pgn``).

:func:`read_games` yields :class:`HumanGame` records: the mainline moves from the standard start,
each move's ``[%clk]`` comment (the mover's clock after the move, in seconds), the players' ratings,
the ``TimeControl`` header and the result. Memory is bounded: one game is held at a time, a line
longer than ``$PDX_MAX_LINE_BYTES`` or a game longer than ``$PDX_MAX_PGN_GAME_BYTES`` is refused
(``safeio``), and ``.zst`` files are decompressed as they are read.

Refused (one :class:`PgnGameError` line naming ``file:line``, the game's number in the file and,
for a bad move or clock, its ply), or with ``skip_bad=True`` skipped and counted by reason
(:data:`BAD_REASONS`) in :class:`ReadStats`:

* ``malformed``: a malformed game or an illegal move (python-chess records it in ``game.errors``;
  the line ends there, so the game is refused whole rather than scored up to the bad move);
* ``variant``: a ``Variant`` header other than ``Standard`` (Chess960, Crazyhouse, ...: another
  game's rules);
* ``setup``: a ``SetUp``/``FEN`` header (a game not from the standard start: its history planes
  and the players' opening choices are not the game's);
* ``bad_header``: a ``TimeControl``, ``WhiteElo`` or ``BlackElo`` value that cannot be right
  (infinite, negative, huge, not a number: the rules are in :mod:`pgn_values`; an impossible
  rating is never binned);
* ``bad_clock``: a ``[%clk]`` comment that does not parse or is out of range;
* ``merged``: a game that read later games' headers as its moves (a ``{`` comment left open, or
  no blank line between games: :class:`_HeaderWatch`); it and the games it swallowed are all
  counted, and the game after them is read on its own.

Games without moves are skipped and counted (``empty``), not refused: Lichess dumps hold aborted
games.

Clocks. The clock *before* a move (what :class:`MoveFilter` and the clock bins read) is the mover's
``[%clk]`` after their previous move, or, for their first move, the ``TimeControl`` base time; a
game without clock comments has no clock (``None``) at every move.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, cast

import chess
import chess.pgn

from pdx_lightning.chesscore.pgn_values import (
    SPEEDS,  # noqa: F401
    TIME_CONTROLS,
    PgnValueError,
    parse_clock,
    parse_rating,
    parse_time_control,
    speed_category,
)
from pdx_lightning.errors import UserError
from pdx_lightning.safeio import FileLimitError, PgnGameLines, open_zstd_bounded

RESULTS = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}
BAD_REASONS = ("malformed", "variant", "setup", "bad_header", "bad_clock", "merged")


class PgnGameError(UserError, ValueError):
    """A PGN game that cannot be used (says file:line, game number and, for a bad move, its ply)."""


class PgnLimitError(FileLimitError, PgnGameError):
    """A PGN file refused by a reading bound (line or game length)."""


TAG_LINE = chess.pgn.TAG_REGEX  # a tag pair alone on its line ([Name "value"]), as python-chess reads headers


@dataclass
class Swallowed:
    """Headers of later games that one python-chess game read as its own movetext."""

    line: int  # file line of the first such header
    text: str  # that line
    games: int  # header blocks read (games swallowed)
    moves_follow: bool = False  # the game ended on those headers: the last one's moves come next, headerless

    def message(self) -> str:
        shown = self.text.strip()[:60]
        games = "the next game" if self.games == 1 else f"the next {self.games} games"
        return (
            f"line {self.line} ({shown}) starts another game's headers inside this game's moves: a {{ comment "
            f"left open, or no blank line before it ({games} would be merged into this one)"
        )


class _HeaderWatch:
    """The lines of one game as python-chess reads them, watching for the next game's headers.

    The rule: python-chess ends a game's movetext at the first blank line outside a ``{...}``
    comment, so once the movetext has begun (a non-blank line that is not a ``[...]`` header line
    nor a ``%``/``;`` escape line), a tag-pair line (``[Name "value"]`` alone on its line) read
    within the same game cannot be this game's: it is a later game's header, read as movetext
    because a ``{`` comment was left open across the blank line and the headers (the comment then
    closes somewhere in that game's moves, which are appended to this game) or because the blank
    line between the games is missing. A comment that legitimately holds a line that is exactly a
    tag pair would be flagged too; exported PGN never has one. Each run of tag-pair lines after a
    non-tag line is one swallowed game. Where the game ends on such headers (no blank line before
    them: the blank line after them ends it), the last swallowed game's moves are read next as a
    game of their own without headers; :func:`read_games` skips them with it."""

    def __init__(self, lines: PgnGameLines) -> None:
        self.lines, self.in_movetext, self.previous_tag = lines, False, False
        self.swallowed: Swallowed | None = None

    def readline(self, size: int = -1) -> str:
        line = self.lines.readline(size)
        tag = bool(TAG_LINE.match(line))
        if self.in_movetext and tag and not self.previous_tag:
            if self.swallowed is None:
                self.swallowed = Swallowed(self.lines.line_no, line, 0)
            self.swallowed.games += 1
        elif line.strip() and not line.startswith(("[", "%", ";")):
            self.in_movetext = True
        if line.strip():
            self.previous_tag = tag
        return line


def read_pgn_game_checked(lines: PgnGameLines, visitor, error: type[Exception], what: str):
    """``(game, swallowed)``: the next game of ``lines`` built by ``visitor`` (``(None, None)`` at the
    end) and the later games' headers it read as movetext (:class:`_HeaderWatch`; None if none).
    A game python-chess cannot read raises ``error("PATH:LINE: <what> (<its error>)")``, a file
    bound (``FileLimitError``) passes. The one reading step of both PGN readers (these human games,
    ``opening_files``' PGN books, through :func:`read_pgn_game`)."""
    lines.start()
    watch = _HeaderWatch(lines)
    try:
        game = chess.pgn.read_game(cast(TextIO, watch), Visitor=visitor)  # python-chess only calls readline()
    except (ValueError, RecursionError) as e:
        if isinstance(e, FileLimitError):
            raise
        raise error(f"{lines.path}:{lines.game_line or lines.line_no}: {what} ({type(e).__name__}: {e})") from e
    if watch.swallowed is not None:
        watch.swallowed.moves_follow = watch.previous_tag
    return game, watch.swallowed


def read_pgn_game(lines: PgnGameLines, visitor, error: type[Exception], what: str):
    """The next game of ``lines`` built by ``visitor`` (None at the end), as
    :func:`read_pgn_game_checked`; a game that swallowed later games' headers also raises
    ``error("PATH:LINE: <what>: <which line>")`` (opening books have no skip-and-count)."""
    game, swallowed = read_pgn_game_checked(lines, visitor, error, what)
    if swallowed is not None:
        raise error(f"{lines.path}:{lines.game_line}: {what}: {swallowed.message()}")
    return game


@dataclass(frozen=True)
class HumanGame:
    """One game's mainline as played from the standard start, with what the filters read."""

    number: int  # 1-based position of the game in the file
    line: int  # file line where the game starts
    moves: tuple[chess.Move, ...]
    clocks: tuple[float | None, ...]  # per move: the mover's [%clk] after it (seconds), None if absent
    white_elo: int | None
    black_elo: int | None
    time_control: str  # the TimeControl header as written ("180+2", "-", "")
    base: float | None  # its base time (s), None if none or unparsable
    increment: float | None
    result: int | None  # +1 White won, -1 Black won, 0 draw, None ("*")
    headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def speed(self) -> str:
        """The Lichess speed category of the time control (:data:`TIME_CONTROLS`)."""
        return speed_category(self.time_control)

    @property
    def has_clocks(self) -> bool:
        return any(c is not None for c in self.clocks)

    def rating(self, ply: int) -> int | None:
        """The rating of the player who makes move ``ply`` (0-based: even plies are White's)."""
        return self.white_elo if ply % 2 == 0 else self.black_elo

    def clock_before(self, ply: int) -> float | None:
        """The mover's clock before move ``ply`` (seconds): their clock after their previous move,
        the base time for their first move; None when the game has no clocks."""
        if not self.has_clocks:
            return None
        if ply >= 2:
            return self.clocks[ply - 2]
        return self.base


@dataclass
class ReadStats:
    """What :func:`read_games` read: games, and games skipped by reason (with their first lines)."""

    games: int = 0
    empty: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BAD_REASONS, 0))
    bad: list[str] = field(default_factory=list)  # the first few skipped games' error lines

    def skip(self, reason: str, message: str, games: int = 1) -> None:
        """Count ``games`` skipped for ``reason``; keep the first 20 messages."""
        self.skipped[reason] += games
        if len(self.bad) < 20:
            self.bad.append(message)

    def to_dict(self) -> dict:
        return {"games": self.games, "empty": self.empty, "skipped_bad": dict(self.skipped), "bad": self.bad}


class _Builder(chess.pgn.GameBuilder):
    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)  # reported by read_games as one line; not logged as well


class _Refused(Exception):
    """A game that cannot be used: ``reason`` (one of :data:`BAD_REASONS`) and its one-line message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _ply_text(ply: int) -> str:
    """``ply 5 (move 3.)`` for a 1-based ply."""
    return f"ply {ply} (move {(ply + 1) // 2}{'.' if ply % 2 else '...'})"


def _check(game: chess.pgn.Game, where: str, number: int) -> None:
    """Raise :class:`_Refused` if the game is not standard chess from the start or python-chess
    found an error in it."""
    h = game.headers
    variant = h.get("Variant", "Standard")
    if variant.strip().lower() not in ("standard", "chess", "", "from position"):  # Lichess: "From Position" + FEN
        raise _Refused("variant", f"{where}: game {number}: Variant {variant!r} (only standard chess is read)")
    if "FEN" in h or h.get("SetUp", "0").strip() == "1":
        raise _Refused(
            "setup",
            f"{where}: game {number}: a SetUp/FEN header (only games from the standard "
            f"start are read: their history and openings are the players')",
        )
    if game.errors:
        ply = sum(1 for _ in game.mainline_moves()) + 1  # python-chess stops the mainline at the bad move
        raise _Refused("malformed", f"{where}: game {number}, {_ply_text(ply)}: {game.errors[0]}")


def _header_values(h: chess.pgn.Headers, where: str, number: int) -> dict:
    """The parsed ``WhiteElo``, ``BlackElo`` and ``TimeControl`` (:mod:`pgn_values`) as
    :class:`HumanGame` fields; a bad one raises :class:`_Refused` (``bad_header``)."""
    tc = h.get("TimeControl", "")
    try:
        base, inc = parse_time_control(tc)
        return {
            "white_elo": parse_rating(h.get("WhiteElo"), "WhiteElo"),
            "black_elo": parse_rating(h.get("BlackElo"), "BlackElo"),
            "time_control": tc,
            "base": base,
            "increment": inc,
        }
    except PgnValueError as e:
        raise _Refused("bad_header", f"{where}: game {number}: {e}") from None


def _clocks(nodes: list, where: str, number: int) -> tuple[float | None, ...]:
    """Each move's ``[%clk]`` (:func:`pgn_values.parse_clock`); a bad one raises :class:`_Refused`
    (``bad_clock``) naming its ply."""
    clocks = []
    for ply, node in enumerate(nodes, 1):
        try:
            clocks.append(parse_clock(node.comment))
        except PgnValueError as e:
            raise _Refused("bad_clock", f"{where}: game {number}, {_ply_text(ply)}: {e}") from None
    return tuple(clocks)


def _human_game(game: chess.pgn.Game, line: int, where: str, number: int) -> HumanGame | None:
    """The game as a :class:`HumanGame` (None if it has no moves), or :class:`_Refused`."""
    _check(game, where, number)
    values = _header_values(game.headers, where, number)
    nodes = list(game.mainline())
    if not nodes:
        return None
    h = game.headers
    return HumanGame(
        number=number,
        line=line,
        moves=tuple(n.move for n in nodes),
        clocks=_clocks(nodes, where, number),
        result=RESULTS.get(h.get("Result", "*")),
        headers=dict(h),
        **values,
    )


def open_pgn(path: str | os.PathLike):
    """A text stream of a ``.pgn`` or ``.pgn.zst`` file (zstd decompressed as read, bounded)."""
    import io  # noqa: PLC0415

    path = Path(path)
    if not path.is_file():
        raise PgnGameError(f"PGN file {path} not found")
    if path.suffix.lower() == ".zst":
        return io.TextIOWrapper(open_zstd_bounded(path, error=PgnLimitError), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_games(
    path: str | os.PathLike, skip_bad: bool = False, stats: ReadStats | None = None, max_games: int | None = None
) -> Iterator[HumanGame]:
    """Every usable game of a PGN file, in file order (see the module docstring for what is refused).

    ``stats`` (optional) is filled as the games are read; ``max_games`` stops after that many games
    of the file (counting skipped ones). Games swallowed by another (:class:`_HeaderWatch`) count
    as games of the file and as skipped, so later games keep their numbers."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    with open_pgn(path) as f:
        lines = PgnGameLines(f, path, error=PgnLimitError)
        number = 0
        while max_games is None or number < max_games:
            game, swallowed = read_pgn_game_checked(lines, _Builder, PgnGameError, f"game {number + 1}: unreadable PGN")
            if game is None:
                return
            number += 1
            extra = swallowed.games if swallowed else 0
            stats.games += 1 + extra
            where = f"{path}:{lines.game_line}"
            try:
                if swallowed is not None:
                    raise _Refused("merged", f"{where}: game {number}: {swallowed.message()}")
                human = _human_game(game, lines.game_line, where, number)
            except _Refused as r:
                if not skip_bad:
                    raise PgnGameError(r.message + " (--skip-bad skips and counts such games)") from None
                stats.skip(r.reason, r.message, 1 + extra)
                number += extra
                if swallowed is not None and swallowed.moves_follow:  # the swallowed game's moves, headerless
                    read_pgn_game_checked(lines, _Builder, PgnGameError, f"game {number}: unreadable PGN")
                continue
            if human is None:
                stats.empty += 1
                continue
            yield human


# ---------------------------------------------------------------- filters


def add_filter_arguments(parser, *, skip_plies: int, min_clock: float, skip_why: str, clock_why: str) -> None:
    """The move filters' flags (:class:`MoveFilter`), shared by ``pdx eval humans`` and ``pdx data pgn``,
    with each command's defaults and the reason for them (``*_why``, shown in ``--help``)."""
    parser.add_argument(
        "--skip-plies", type=int, default=skip_plies, help=f"skip the first N plies of every game ({skip_why})"
    )
    parser.add_argument(
        "--min-clock",
        type=float,
        default=min_clock,
        help=f"skip moves made with less than this many seconds on the mover's clock ({clock_why}); "
        f"games without clocks keep every move; 0 keeps all",
    )
    parser.add_argument("--rating-min", type=float, help="keep moves whose mover is rated >= this")
    parser.add_argument("--rating-max", type=float, help="keep moves whose mover is rated <= this")
    parser.add_argument(
        "--time-control",
        nargs="+",
        choices=TIME_CONTROLS,
        metavar="SPEED",
        help="keep only games of these Lichess speed categories, from base + 40 x increment: "
        + ", ".join(TIME_CONTROLS),
    )


@dataclass(frozen=True)
class MoveFilter:
    """Which moves of a game are used (the human move-matching protocol's filters).

    * ``skip_plies``: moves before this ply are skipped (opening theory, not the player's choice);
    * ``min_clock``: a move made with less than this on the mover's clock (before the move) is
      skipped (time-scramble moves); games without clocks keep every move;
    * ``rating_min``/``rating_max``: the mover's rating bounds (inclusive); a move whose mover has
      no rating is skipped when either bound is set;
    * ``time_controls``: keep only games of these Lichess speed categories (:data:`TIME_CONTROLS`).
    """

    skip_plies: int = 0
    min_clock: float | None = None
    rating_min: float | None = None
    rating_max: float | None = None
    time_controls: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.skip_plies < 0:
            raise ValueError(f"skip_plies must be >= 0, got {self.skip_plies}")
        if self.min_clock is not None and self.min_clock < 0:
            raise ValueError(f"min_clock must be >= 0 seconds, got {self.min_clock}")
        if self.time_controls is not None:
            unknown = sorted(set(self.time_controls) - set(TIME_CONTROLS))
            if unknown:
                raise ValueError(f"unknown time control categories {unknown} (choose from {list(TIME_CONTROLS)})")

    def keeps_game(self, game: HumanGame) -> bool:
        return self.time_controls is None or game.speed in self.time_controls

    def keeps(self, game: HumanGame, ply: int) -> str | None:
        """None if move ``ply`` (0-based) is used, else why not: ``opening``, ``clock`` or ``rating``."""
        if ply < self.skip_plies:
            return "opening"
        if self.min_clock is not None:
            clock = game.clock_before(ply)
            if clock is not None and clock < self.min_clock:
                return "clock"
        if self.rating_min is not None or self.rating_max is not None:
            r = game.rating(ply)
            if (
                r is None
                or (self.rating_min is not None and r < self.rating_min)
                or (self.rating_max is not None and r > self.rating_max)
            ):
                return "rating"
        return None

    def to_dict(self) -> dict:
        return {
            "skip_plies": self.skip_plies,
            "min_clock": self.min_clock,
            "rating_min": self.rating_min,
            "rating_max": self.rating_max,
            "time_controls": list(self.time_controls) if self.time_controls is not None else None,
        }
