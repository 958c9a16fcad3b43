"""Reading human games from PGN (``.pgn`` or ``.pgn.zst``), streamed one game at a time, and the
move filters of move-matching evaluations (``pdx eval humans``) and human-game shards (``pdx data pgn``).

:func:`read_games` yields :class:`HumanGame` records: the mainline moves from the standard start,
each move's ``[%clk]`` comment (the mover's clock after the move, in seconds), the players' ratings,
the ``TimeControl`` header and the result. Memory is bounded: one game is held at a time, a line
longer than ``$PDX_MAX_LINE_BYTES`` or a game longer than ``$PDX_MAX_PGN_GAME_BYTES`` is refused
(``safeio``), and ``.zst`` files are decompressed as they are read.

Refused (one :class:`PgnGameError` line naming ``file:line``, the game's number in the file and,
for a bad move, its ply), or with ``skip_bad=True`` skipped and counted by reason in
:class:`ReadStats`:

* a malformed game or an illegal move (python-chess records it in ``game.errors``; the line
  ends there, so the game is refused whole rather than scored up to the bad move);
* a ``Variant`` header other than ``Standard`` (Chess960, Crazyhouse, ...: another game's rules);
* a ``SetUp``/``FEN`` header (a game not from the standard start: its history planes and the
  players' opening choices are not the game's).

Games without moves are skipped and counted (``empty``), not refused: Lichess dumps hold aborted
games.

Clocks. The clock *before* a move (what :class:`MoveFilter` and the clock bins read) is the mover's
``[%clk]`` after their previous move, or, for their first move, the ``TimeControl`` base time; a
game without clock comments has no clock (``None``) at every move.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import chess
import chess.pgn

from pdx_lightning.errors import UserError
from pdx_lightning.safeio import FileLimitError, PgnGameLines, open_zstd_bounded

# Lichess's speed categories by estimated duration base + 40 x increment (seconds): lila's
# `Speed.scala` (UltraBullet < 30 s, Bullet < 180 s, Blitz < 480 s, Rapid < 1500 s, else Classical)
SPEEDS: tuple[tuple[str, float], ...] = (("ultrabullet", 30), ("bullet", 180), ("blitz", 480),
                                          ("rapid", 1500), ("classical", math.inf))
CORRESPONDENCE = "correspondence"  # TimeControl "-": no clock
TIME_CONTROLS = tuple(s for s, _ in SPEEDS) + (CORRESPONDENCE, "unknown")
RESULTS = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}
BAD_REASONS = ("malformed", "variant", "setup")


class PgnGameError(UserError, ValueError):
    """A PGN game that cannot be used (says file:line, game number and, for a bad move, its ply)."""


class PgnLimitError(FileLimitError, PgnGameError):
    """A PGN file refused by a reading bound (line or game length)."""



def read_pgn_game(lines: PgnGameLines, visitor, error: type[Exception], what: str):
    """The next game of ``lines`` built by ``visitor`` (None at the end); a game python-chess cannot
    read raises ``error("PATH:LINE: <what> (<its error>)")``, a file bound (``FileLimitError``) passes.
    The one reading step of both PGN readers (these human games, ``opening_files``' PGN books)."""
    lines.start()
    try:
        return chess.pgn.read_game(lines, Visitor=visitor)
    except (ValueError, RecursionError) as e:
        if isinstance(e, FileLimitError):
            raise
        raise error(f"{lines.path}:{lines.game_line or lines.line_no}: {what} ({type(e).__name__}: {e})") from e

@dataclass(frozen=True)
class HumanGame:
    """One game's mainline as played from the standard start, with what the filters read."""

    number: int                       # 1-based position of the game in the file
    line: int                         # file line where the game starts
    moves: tuple[chess.Move, ...]
    clocks: tuple[float | None, ...]  # per move: the mover's [%clk] after it (seconds), None if absent
    white_elo: int | None
    black_elo: int | None
    time_control: str                 # the TimeControl header as written ("180+2", "-", "")
    base: float | None                # its base time (s), None if none or unparsable
    increment: float | None
    result: int | None                # +1 White won, -1 Black won, 0 draw, None ("*")
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


def parse_time_control(tc: str) -> tuple[float | None, float | None]:
    """``"180+2"`` → ``(180.0, 2.0)``; ``"60"`` → ``(60.0, 0.0)``; anything else → ``(None, None)``."""
    base, _, inc = tc.strip().partition("+")
    try:
        b, i = float(base), float(inc or 0)
    except ValueError:
        return None, None
    return (b, i) if b >= 0 and i >= 0 else (None, None)


def speed_category(tc: str) -> str:
    """Lichess's speed category of a ``TimeControl`` header from base + 40 x increment."""
    if tc.strip() == "-":
        return CORRESPONDENCE
    base, inc = parse_time_control(tc)
    if base is None:
        return "unknown"
    duration = base + 40 * inc
    return next(name for name, below in SPEEDS if duration < below)


def _elo(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "", "?", "-") else None
    except ValueError:
        return None


@dataclass
class ReadStats:
    """What :func:`read_games` read: games, and games skipped by reason (with their first lines)."""

    games: int = 0
    empty: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BAD_REASONS, 0))
    bad: list[str] = field(default_factory=list)  # the first few skipped games' error lines

    def to_dict(self) -> dict:
        return {"games": self.games, "empty": self.empty, "skipped_bad": dict(self.skipped), "bad": self.bad}


class _Builder(chess.pgn.GameBuilder):
    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)  # reported by read_games as one line; not logged as well


def _check(game: chess.pgn.Game, where: str, number: int) -> tuple[str, str] | None:
    """``(reason, message)`` if the game cannot be used, else None."""
    h = game.headers
    variant = h.get("Variant", "Standard")
    if variant.strip().lower() not in ("standard", "chess", "", "from position"):  # Lichess: "From Position" + FEN
        return "variant", f"{where}: game {number}: Variant {variant!r} (only standard chess is read)"
    if "FEN" in h or h.get("SetUp", "0").strip() == "1":
        return "setup", (f"{where}: game {number}: a SetUp/FEN header (only games from the standard start "
                         f"are read: their history and openings are the players')")
    if game.errors:
        ply = sum(1 for _ in game.mainline_moves()) + 1  # python-chess stops the mainline at the bad move
        move = f"move {(ply + 1) // 2}{'.' if ply % 2 else '...'}"
        return "malformed", f"{where}: game {number}, ply {ply} ({move}): {game.errors[0]}"
    return None


def open_pgn(path: str | os.PathLike):
    """A text stream of a ``.pgn`` or ``.pgn.zst`` file (zstd decompressed as read, bounded)."""
    import io  # noqa: PLC0415

    path = Path(path)
    if not path.is_file():
        raise PgnGameError(f"PGN file {path} not found")
    if path.suffix.lower() == ".zst":
        return io.TextIOWrapper(open_zstd_bounded(path, error=PgnLimitError), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_games(path: str | os.PathLike, skip_bad: bool = False, stats: ReadStats | None = None,
               max_games: int | None = None) -> Iterator[HumanGame]:
    """Every usable game of a PGN file, in file order (see the module docstring for what is refused).

    ``stats`` (optional) is filled as the games are read; ``max_games`` stops after that many games
    of the file (counting skipped ones)."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    with open_pgn(path) as f:
        lines = PgnGameLines(f, path, error=PgnLimitError)
        number = 0
        while max_games is None or number < max_games:
            game = read_pgn_game(lines, _Builder, PgnGameError, f"game {number + 1}: unreadable PGN")
            if game is None:
                return
            number += 1
            stats.games += 1
            where = f"{path}:{lines.game_line}"
            problem = _check(game, where, number)
            if problem is not None:
                reason, message = problem
                if not skip_bad:
                    raise PgnGameError(message + " (--skip-bad skips and counts such games)")
                stats.skipped[reason] += 1
                if len(stats.bad) < 20:
                    stats.bad.append(message)
                continue
            nodes = list(game.mainline())
            if not nodes:
                stats.empty += 1
                continue
            h = game.headers
            tc = h.get("TimeControl", "")
            base, inc = parse_time_control(tc)
            yield HumanGame(number=number, line=lines.game_line, moves=tuple(n.move for n in nodes),
                            clocks=tuple(n.clock() for n in nodes), white_elo=_elo(h.get("WhiteElo")),
                            black_elo=_elo(h.get("BlackElo")), time_control=tc, base=base, increment=inc,
                            result=RESULTS.get(h.get("Result", "*")), headers=dict(h))


# ---------------------------------------------------------------- filters

def add_filter_arguments(parser, *, skip_plies: int, min_clock: float, skip_why: str, clock_why: str) -> None:
    """The move filters' flags (:class:`MoveFilter`), shared by ``pdx eval humans`` and ``pdx data pgn``,
    with each command's defaults and the reason for them (``*_why``, shown in ``--help``)."""
    parser.add_argument("--skip-plies", type=int, default=skip_plies,
                        help=f"skip the first N plies of every game ({skip_why})")
    parser.add_argument("--min-clock", type=float, default=min_clock,
                        help=f"skip moves made with less than this many seconds on the mover's clock ({clock_why}); "
                             f"games without clocks keep every move; 0 keeps all")
    parser.add_argument("--rating-min", type=float, help="keep moves whose mover is rated >= this")
    parser.add_argument("--rating-max", type=float, help="keep moves whose mover is rated <= this")
    parser.add_argument("--time-control", nargs="+", choices=TIME_CONTROLS, metavar="SPEED",
                        help="keep only games of these Lichess speed categories, from base + 40 x increment: "
                             + ", ".join(TIME_CONTROLS))


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
            if r is None or (self.rating_min is not None and r < self.rating_min) or \
                    (self.rating_max is not None and r > self.rating_max):
                return "rating"
        return None

    def to_dict(self) -> dict:
        return {"skip_plies": self.skip_plies, "min_clock": self.min_clock, "rating_min": self.rating_min,
                "rating_max": self.rating_max,
                "time_controls": list(self.time_controls) if self.time_controls is not None else None}
