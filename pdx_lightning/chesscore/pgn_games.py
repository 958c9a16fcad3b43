"""Reading human games from PGN (plain, or compressed with zstd, gzip or bzip2), streamed one game
at a time, and the move filters of move-matching evaluations (``pdx eval humans``) and human-game
shards (``pdx data pgn``). ``pdx eval value`` reads the same way, games from a set-up position too
(``setup=True``: pdx's own match records, whose games start from their opening's FEN).

:func:`read_games` yields :class:`HumanGame` records: the mainline moves from the standard start,
each move's ``[%clk]`` comment (the mover's clock after the move, in seconds), the players' ratings,
the ``TimeControl`` header and the result (with ``setup=True``, a ``FEN`` game's moves from its FEN,
and the comment before its first move). Memory is bounded: one game is held at a time, a line
longer than ``$PDX_MAX_LINE_BYTES`` or a game longer than ``$PDX_MAX_PGN_GAME_BYTES`` is refused
(``safeio``), and compressed files are decompressed as they are read (:func:`open_pgn`: zstd, gzip, bzip2 or xz, the
compression known by the file's first bytes; size, ratio and truncation bounds; a corrupt stream
is one line). A UTF-8 byte-order mark is skipped.

Refused (one :class:`PgnGameError` line naming ``file:line``, the game's number in the file and,
for a bad move or clock, its ply), or with ``skip_bad=True`` skipped and counted by reason
(:data:`BAD_REASONS`) in :class:`ReadStats`:

* ``malformed``: a malformed game or an illegal move (python-chess records it in ``game.errors``;
  the line ends there, so the game is refused whole rather than scored up to the bad move), or
  a game python-chess's reader raised on (text no exporter writes);
* ``variant``: a ``Variant`` header other than ``Standard`` (Chess960, Crazyhouse, ...: another
  game's rules);
* ``setup``: a ``SetUp``/``FEN`` header (a game not from the standard start: its history planes
  and the players' opening choices are not the game's), unless ``setup=True``; then a FEN
  python-chess cannot set up is ``malformed``;
* ``bad_header``: a ``TimeControl``, ``WhiteElo`` or ``BlackElo`` value that cannot be right
  (infinite, negative, huge, not a number: the rules are in :mod:`pgn_values`; an impossible
  rating is never binned);
* ``bad_clock``: a ``[%clk]`` comment that does not parse or is out of range;
* ``merged``: a game that read later games' headers as its moves (a ``{`` comment left open, or
  no blank line between games: :class:`_HeaderWatch`); it and the games it swallowed are all
  counted, and the game after them is read on its own;
* ``headers_only``: headers and no movetext, not even the result; where the next game's headers
  follow (python-chess would merge them into this game's), the next game is read on its own;
* ``truncated``: a game whose movetext does not end with its termination marker (``1-0``,
  ``0-1``, ``1/2-1/2``, ``*``), a ``{`` comment still open at the end of the file, or a file that
  ends in a game's headers: what a download cut short leaves;
* ``null_move``: a null move on the mainline (``--``, ``Z0``, ``0000``): no player can pass.

Games with no moves but a result are skipped and counted (``empty``), not refused: Lichess dumps
hold aborted games.

Clocks. The clock *before* a move (what :class:`MoveFilter` and the clock bins read) is the mover's
``[%clk]`` after their previous move, or, for their first move, the ``TimeControl`` base time; a
game without clock comments has no clock (``None``) at every move.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO, cast

import chess
import chess.pgn

from pdx_lightning.chesscore.pgn_values import (
    MAX_RATING,
    MAX_SECONDS,
    SPEEDS,  # noqa: F401
    TIME_CONTROLS,
    PgnValueError,
    parse_clock,
    parse_rating,
    parse_time_control,
    speed_category,
)
from pdx_lightning.errors import UserError
from pdx_lightning.files.safeio import FileLimitError, PgnGameLines, compression_of, open_decompressed

RESULTS = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}
BAD_REASONS = (
    "malformed",
    "variant",
    "setup",
    "bad_header",
    "bad_clock",
    "merged",
    "headers_only",
    "truncated",
    "null_move",
)
SKIP_HINT = "(--skip-bad skips and counts such games)"


class PgnGameError(UserError, ValueError):
    """A PGN game that cannot be used (says file:line, game number and, for a bad move, its ply)."""


class PgnFileError(PgnGameError):
    """A PGN file that cannot be read at all (missing, unreadable, or not the compression its name says)."""


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
    """The lines of one game as python-chess reads them, watching where the game really ends.

    Later games' headers read as movetext: python-chess ends a game's movetext at the first blank
    line outside a ``{...}`` comment, so once the movetext has begun (a non-blank line that is not
    a ``[...]`` header line nor a ``%``/``;`` escape line), a tag-pair line (``[Name "value"]``
    alone on its line) read within the same game cannot be this game's: it is a later game's
    header, read as movetext because a ``{`` comment was left open across the blank line and the
    headers (the comment then closes somewhere in that game's moves, which are appended to this
    game) or because the blank line between the games is missing. A comment that legitimately
    holds a line that is exactly a tag pair would be flagged too; exported PGN never has one. Each
    run of tag-pair lines after a non-tag line is one swallowed game (``swallowed``). Where the
    game ends on such headers (no blank line before them: the blank line after them ends it), the
    last swallowed game's moves are read next as a game of their own without headers;
    :func:`read_games` skips them with it.

    A game with headers and no movetext: python-chess reads on through one blank line between
    header lines, so the next game's headers would overwrite this game's (and the tags the next
    game lacks would be this game's). A tag this game already has, before any movetext, is the
    next game's first header: the watch ends this game there (python-chess is told the file ended;
    ``next_headers`` says where) and hands the line back to the next game (``PgnGameLines.unread``).

    Also: ``eof`` is set once the file's end is read within this game (a ``{`` comment still open
    there: :class:`_Builder`), and a byte-order mark at the start of a line is dropped (python-chess
    drops only the file's first; several files joined keep theirs)."""

    def __init__(self, lines: PgnGameLines) -> None:
        self.lines, self.in_movetext, self.previous_tag = lines, False, False
        self.swallowed: Swallowed | None = None
        self.tags: set[str] = set()
        self.next_headers: tuple[int, str] | None = None  # (line, text) of the next game's first header
        self.eof = False

    def readline(self, size: int = -1) -> str:
        if self.next_headers is not None:
            return ""
        line = self.lines.readline(size)
        if not line:
            self.eof = True
            return line
        line = line.removeprefix("\ufeff")
        tag = TAG_LINE.match(line)
        if tag and not self.in_movetext:
            if tag.group(1) in self.tags:
                self.lines.unread(line)
                self.next_headers = (self.lines.line_no, line)
                return ""
            self.tags.add(tag.group(1))
        if self.in_movetext and tag and not self.previous_tag:
            if self.swallowed is None:
                self.swallowed = Swallowed(self.lines.line_no, line, 0)
            self.swallowed.games += 1
        elif line.strip() and not line.startswith(("[", "%", ";")):
            self.in_movetext = True
        if line.strip():
            self.previous_tag = bool(tag)
        return line


class _PgnGame(chess.pgn.Game):
    """A game as python-chess read it, with how its movetext ended (set by :class:`_Builder`)."""

    terminated = False  # its last token is a termination marker (1-0, 0-1, 1/2-1/2, *)
    open_comment = False  # a { comment was still open at the end of the file
    error_ply: int | None = None  # the ply (1-based) of the move of its first error


class _Builder(chess.pgn.GameBuilder[_PgnGame]):
    """python-chess's game builder, recording how the game ended and never failing on its own stack."""

    def __init__(self) -> None:
        super().__init__(Game=_PgnGame)
        self.watch: _HeaderWatch | None = None  # set by read_pgn_game_checked
        self.board: chess.Board | None = None  # where the move being parsed is played

    def begin_parse_san(self, board: chess.Board, san: str) -> None:
        self.board = board

    def handle_error(self, error: Exception) -> None:
        if not self.game.errors and self.board is not None:  # a bad move: its ply (python-chess reads on after it)
            self.game.error_ply = len(self.board.move_stack) + 1
        self.game.errors.append(error)  # reported by read_games as one line; not logged as well

    def visit_result(self, result: str) -> None:
        self.game.terminated = True
        super().visit_result(result)

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        self.game.terminated = False  # a termination marker ends the movetext: moves after one are not the game's
        super().visit_move(board, move)

    def visit_comment(self, comment: str) -> None:
        # python-chess reads a comment up to its "}"; the file's end read before the comment is
        # visited means there was none
        if self.watch is not None and self.watch.eof:
            self.game.open_comment = True
        super().visit_comment(comment)

    def end_variation(self) -> None:
        # python-chess also ends a variation at a ")" that closes the text it skipped after an
        # illegal move on the mainline, where none was begun: popping would remove the game itself
        # and its next NAG, comment or move would raise IndexError (the game is refused anyway: the
        # illegal move is in game.errors)
        if len(self.variation_stack) > 1:
            super().end_variation()


def _finish_game(watch: _HeaderWatch) -> None:
    """Read the rest of a game python-chess gave up on, to its end (a blank line or the file's end),
    so the next read starts at the next game."""
    while (line := watch.readline()) and not line.isspace():
        pass


def read_pgn_game_checked(lines: PgnGameLines, visitor, error: type[Exception], what: str):
    """``(game, watch)``: the next game of ``lines`` built by ``visitor`` (``game`` None at the end)
    and its :class:`_HeaderWatch` (``watch.swallowed``: later games' headers it read as movetext;
    ``watch.next_headers``: it had headers only, the next game's begin there; ``watch.eof``).
    Whatever python-chess raises on a game it cannot read becomes
    ``error("PATH:LINE: <what> (<its error>)")``, once the rest of the game is read past; a file
    bound or a damaged compressed stream (a ``UserError`` of its own) passes. The one reading step
    of both PGN readers (these human games, ``opening_files``' PGN books, through
    :func:`read_pgn_game`)."""
    lines.start()
    watch = _HeaderWatch(lines)

    def make_visitor():
        v = visitor()
        if isinstance(v, _Builder):
            v.watch = watch
        return v

    try:
        game = chess.pgn.read_game(cast(TextIO, watch), Visitor=make_visitor)  # python-chess only calls readline()
    except (UserError, MemoryError):
        raise
    except Exception as e:  # python-chess's reader is not built for hostile text: any error of its is this game's
        where = f"{lines.path}:{lines.game_line or lines.line_no}"
        _finish_game(watch)
        raise error(f"{where}: {what} ({type(e).__name__}: {e})") from e
    if watch.swallowed is not None:
        watch.swallowed.moves_follow = watch.previous_tag
    return game, watch


def read_pgn_game(lines: PgnGameLines, visitor, error: type[Exception], what: str):
    """The next game of ``lines`` built by ``visitor`` (None at the end), as
    :func:`read_pgn_game_checked`; a game that swallowed later games' headers, or that has headers
    only (the next game's follow), also raises ``error("PATH:LINE: <what>: <which line>")``
    (opening books have no skip-and-count)."""
    game, watch = read_pgn_game_checked(lines, visitor, error, what)
    if watch.swallowed is not None:
        raise error(f"{lines.path}:{lines.game_line}: {what}: {watch.swallowed.message()}")
    if watch.next_headers is not None:
        raise error(f"{lines.path}:{lines.game_line}: {what}: {_headers_only_message(watch.next_headers)}")
    return game


def _headers_only_message(next_headers: tuple[int, str]) -> str:
    line, text = next_headers
    return (
        f"headers and no moves: line {line} ({text.strip()[:60]}) repeats one of its tags, so the next "
        f"game's headers begin there (a game with no movetext, not even its result)"
    )


@dataclass(frozen=True)
class HumanGame:
    """One game's mainline as played from the standard start (or from ``fen``), with what the filters read."""

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
    fen: str | None = None  # the FEN the moves start from (read with setup=True); None: the standard start
    comment: str = field(default="", repr=False, compare=False)  # the comment before the first move

    @property
    def speed(self) -> str:
        """The Lichess speed category of the time control (:data:`TIME_CONTROLS`)."""
        return speed_category(self.time_control)

    @property
    def has_clocks(self) -> bool:
        return any(c is not None for c in self.clocks)

    def rating(self, ply: int) -> int | None:
        """The rating of the player who makes move ``ply`` (0-based: even plies are the first mover's,
        White's from the standard start)."""
        black_first = self.fen is not None and self.fen.split()[1:2] == ["b"]
        return self.white_elo if (ply % 2 == 0) != black_first else self.black_elo

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

    def summary(self) -> str:
        """``20 games read, 1 empty, 3 skipped as bad (truncated 1, null_move 2)``."""
        bad = sum(self.skipped.values())
        reasons = ", ".join(f"{k} {v}" for k, v in self.skipped.items() if v)
        return f"{self.games} games read, {self.empty} empty, {bad} skipped as bad" + (
            f" ({reasons})" if reasons else ""
        )


class _Refused(Exception):
    """A game that cannot be used: ``reason`` (one of :data:`BAD_REASONS`) and its one-line message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def _ply_text(ply: int) -> str:
    """``ply 5 (move 3.)`` for a 1-based ply."""
    return f"ply {ply} (move {(ply + 1) // 2}{'.' if ply % 2 else '...'})"


def _check(game: chess.pgn.Game, where: str, number: int, setup: bool = False) -> None:
    """Raise :class:`_Refused` if the game is not standard chess, not from the start (unless
    ``setup``), or python-chess found an error in it."""
    h = game.headers
    variant = h.get("Variant", "Standard")
    if variant.strip().lower() not in ("standard", "chess", "", "from position"):  # Lichess: "From Position" + FEN
        raise _Refused("variant", f"{where}: game {number}: Variant {variant!r} (only standard chess is read)")
    if not setup and ("FEN" in h or h.get("SetUp", "0").strip() == "1"):
        raise _Refused(
            "setup",
            f"{where}: game {number}: a SetUp/FEN header (only games from the standard "
            f"start are read: their history and openings are the players')",
        )
    if setup and "FEN" in h and not game.board().is_valid():  # no king, pawns on the back rank, ...
        raise _Refused("malformed", f"{where}: game {number}: FEN {h['FEN']!r} is not a legal position")
    if game.errors:
        ply = getattr(game, "error_ply", None)
        at = f", {_ply_text(ply)}" if ply is not None else ""
        raise _Refused("malformed", f"{where}: game {number}{at}: {game.errors[0]}")


def _check_headers_only(game: _PgnGame, watch: _HeaderWatch, where: str, number: int) -> None:
    """Raise :class:`_Refused` for a game with headers and no movetext at all (``headers_only``; at
    the end of the file ``truncated``)."""
    if not watch.in_movetext and not game.terminated:
        if watch.next_headers is not None:
            raise _Refused("headers_only", f"{where}: game {number}: {_headers_only_message(watch.next_headers)}")
        if watch.eof:
            raise _Refused(
                "truncated", f"{where}: game {number}: the file ends after this game's headers (a truncated file?)"
            )
        raise _Refused("headers_only", f"{where}: game {number}: headers and no moves, not even the result")


def _check_ending(game: _PgnGame, watch: _HeaderWatch, where: str, number: int) -> None:
    """Raise :class:`_Refused` (``truncated``) for a game whose movetext does not end with its
    termination marker: what a download cut short, or a ``{`` left open at the end, leaves. (Run
    after the check for errors: python-chess skips the rest of the movetext after an illegal move.)"""
    if game.open_comment:
        raise _Refused(
            "truncated",
            f"{where}: game {number}: a {{ comment is still open at the end of the file (a truncated file, or a }} "
            f"missing)",
        )
    if not game.terminated:
        moves = sum(1 for _ in game.mainline_moves())
        if watch.eof:
            why = f"the file ends inside this game, after {moves} plies and before its result (a truncated file?)"
        else:
            why = f"its movetext ends after {moves} plies without a result (cut short?)"
        raise _Refused("truncated", f"{where}: game {number}: {why}; a game ends with 1-0, 0-1, 1/2-1/2 or *")


def _check_moves(game: chess.pgn.Game, where: str, number: int) -> None:
    """Raise :class:`_Refused` (``null_move``) at a null move on the mainline: PGN's ``--`` (also
    read as ``Z0``, ``0000``, ``@@@@``) passes the turn, which no player can do; python-chess
    accepts it as a move."""
    for ply, move in enumerate(game.mainline_moves(), 1):
        if not move:
            raise _Refused(
                "null_move",
                f"{where}: game {number}, {_ply_text(ply)}: a null move (--, Z0, 0000): not a move a player can make",
            )


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


def _human_game(
    game: _PgnGame, watch: _HeaderWatch, line: int, where: str, number: int, setup: bool = False
) -> HumanGame | None:
    """The game as a :class:`HumanGame` (None if it has no moves), or :class:`_Refused`."""
    _check_headers_only(game, watch, where, number)
    _check(game, where, number, setup)
    _check_ending(game, watch, where, number)
    _check_moves(game, where, number)
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
        fen=game.board().fen() if "FEN" in h else None,
        comment=game.comment,
        **values,
    )


# what a name promises; the content decides (.xz: pdx's own match records, ``pdx matches``' NAME.pgn.xz)
SUFFIXES = {".zst": "zstd", ".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}


def open_pgn(path: str | os.PathLike) -> io.TextIOWrapper:
    """A text stream of a PGN file, plain or compressed with zstd, gzip, bzip2 or xz (known by its first
    bytes; decompressed as read under ``safeio``'s bounds: size, ratio, truncation, a corrupt
    stream is one line). A name that promises another compression, or a zip file, is refused."""
    path = Path(path)
    if not path.is_file():
        raise PgnFileError(f"PGN file {path} not found")
    try:
        kind = compression_of(path)
        named = SUFFIXES.get(path.suffix.lower())
        if named is not None and kind != named:
            content = "plain text" if kind is None else f"{kind}-compressed"
            raise PgnFileError(f"{path}: named {path.suffix} but its content is {content}, not {named}")
        if kind is not None and kind not in SUFFIXES.values():
            raise PgnFileError(
                f"{path}: a {kind} file; PGN is read as plain text or compressed with zstd, gzip, bzip2 or xz "
                f"(.pgn, .pgn.zst, .pgn.gz, .pgn.bz2, .pgn.xz)"
            )
        binary = open(path, "rb") if kind is None else open_decompressed(path, kind, error=PgnLimitError)  # noqa: SIM115
    except OSError as e:
        raise PgnFileError(f"{path}: cannot read the PGN file ({e.strerror or e})") from None
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace")


class _UnreadableGame(PgnGameError):
    """A game python-chess raised on (``read_pgn_game_checked``): refused, or skipped as ``malformed``."""


def read_games(
    path: str | os.PathLike,
    skip_bad: bool = False,
    stats: ReadStats | None = None,
    max_games: int | None = None,
    *,
    setup: bool = False,
) -> Iterator[HumanGame]:
    """Every usable game of a PGN file, in file order (see the module docstring for what is refused;
    ``setup``: games from a ``FEN`` header are read too, their ``fen`` set).

    ``stats`` (optional) is filled as the games are read; ``max_games`` stops after that many games
    of the file (counting skipped ones). Games swallowed by another (:class:`_HeaderWatch`) count
    as games of the file and as skipped, so later games keep their numbers. Every game read is
    counted once: ``stats.games`` = games yielded + ``empty`` + skipped."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats()
    with open_pgn(path) as f:
        lines = PgnGameLines(f, path, error=PgnLimitError)
        number = 0
        while max_games is None or number < max_games:
            try:
                game, watch = read_pgn_game_checked(
                    lines, _Builder, _UnreadableGame, f"game {number + 1}: unreadable PGN"
                )
            except _UnreadableGame as e:
                number += 1
                stats.games += 1
                if not skip_bad:
                    raise PgnGameError(f"{e} {SKIP_HINT}") from None
                stats.skip("malformed", str(e))
                continue
            if game is None:
                return
            number += 1
            swallowed = watch.swallowed
            extra = swallowed.games if swallowed else 0
            stats.games += 1 + extra
            where = f"{path}:{lines.game_line}"
            try:
                if swallowed is not None:
                    raise _Refused("merged", f"{where}: game {number}: {swallowed.message()}")
                human = _human_game(game, watch, lines.game_line, where, number, setup)
            except _Refused as r:
                if not skip_bad:
                    raise PgnGameError(f"{r.message} {SKIP_HINT}") from None
                stats.skip(r.reason, r.message, 1 + extra)
                number += extra
                if swallowed is not None and swallowed.moves_follow:  # the swallowed game's moves, headerless
                    try:
                        read_pgn_game_checked(lines, _Builder, _UnreadableGame, f"game {number}: unreadable PGN")
                    except _UnreadableGame:
                        pass  # that game is counted as merged already
                continue
            if human is None:
                stats.empty += 1
                continue
            yield human


# ---------------------------------------------------------------- filters


def skip_bad_help(counted_in: str) -> str:
    """The ``--skip-bad`` help of both commands (``counted_in``: where the counts are shown)."""
    return (
        "skip and count unusable games instead of failing on the first: malformed or illegal moves, "
        "null moves, variants, SetUp/FEN games, impossible TimeControl/WhiteElo/BlackElo values, bad "
        "[%%clk] comments, a { comment left open into the next game, games with headers only or "
        f"cut short (no result at the end of the moves) (counts by reason in {counted_in})"
    )


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


class PgnFlagError(UserError, ValueError):
    """A flag of ``pdx eval humans`` or ``pdx data pgn`` that cannot be used (the message names it)."""


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"  # an int may be too large for a float


def check_flag(flag: str, value: float | None, lo: float, hi: float | None = None, why: str = "") -> None:
    """Refuse ``value`` (:class:`PgnFlagError` naming ``flag``) if it is NaN, infinite or outside
    ``lo..hi``; None (the flag not given) passes."""
    if value is None:
        return
    if not isinstance(value, int) and not math.isfinite(value):
        raise PgnFlagError(f"{flag} {value}: not a finite number")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {_number(lo)}" if hi is None else f"in {_number(lo)}..{_number(hi)}"
        raise PgnFlagError(f"{flag} {_number(value)}: must be {bound}{f' ({why})' if why else ''}")


def filter_from_args(args) -> MoveFilter:
    """The :class:`MoveFilter` of the flags :func:`add_filter_arguments` defines, every number
    checked first (and ``--max-games``): one :class:`PgnFlagError` line naming the flag for a NaN,
    an infinity, a value out of range or ``--rating-min`` above ``--rating-max``."""
    check_flag("--skip-plies", args.skip_plies, 0)
    check_flag("--min-clock", args.min_clock, 0, MAX_SECONDS, "seconds: a week at most")
    for flag in ("--rating-min", "--rating-max"):
        check_flag(flag, getattr(args, flag[2:].replace("-", "_")), 0, MAX_RATING, "a rating")
    if args.rating_min is not None and args.rating_max is not None and args.rating_min > args.rating_max:
        raise PgnFlagError(
            f"--rating-min {_number(args.rating_min)} is above --rating-max {_number(args.rating_max)}: "
            f"no move would be kept"
        )
    check_flag("--max-games", getattr(args, "max_games", None), 1)
    return MoveFilter(
        skip_plies=args.skip_plies,
        min_clock=args.min_clock or None,
        rating_min=args.rating_min,
        rating_max=args.rating_max,
        time_controls=tuple(args.time_control) if args.time_control else None,
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
        for name in ("min_clock", "rating_min", "rating_max"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):  # NaN would compare False and filter nothing
                raise ValueError(f"{name} must be a finite number, got {value}")
        if self.min_clock is not None and self.min_clock < 0:
            raise ValueError(f"min_clock must be >= 0 seconds, got {self.min_clock}")
        if self.rating_min is not None and self.rating_max is not None and self.rating_min > self.rating_max:
            raise ValueError(f"rating_min {self.rating_min} is above rating_max {self.rating_max}")
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
