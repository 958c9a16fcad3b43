"""The PGN values the human-game readers use, parsed defensively: ``TimeControl``, ``WhiteElo`` /
``BlackElo`` and ``[%clk]`` comments.

Each parser returns the value, ``None`` where the PGN says "not known", or raises
:class:`PgnValueError` with a short reason (the reader adds file, line and game). Nothing infinite,
NaN, negative or absurdly large gets through, so no later step (speed categories, rating bins,
clock filters) sees a value it cannot place.

* ``TimeControl`` (PGN standard, section 9.6.1): ``BASE`` or ``BASE+INCREMENT`` in seconds (plain
  decimals: no sign, exponent, ``inf`` or ``nan``), each at most :data:`MAX_SECONDS`; ``-`` (no
  clock: correspondence); ``?`` or empty (unknown). The standard's other forms (``40/9000``
  moves per period, ``*180`` sandclock, periods joined by ``:``, and the common
  ``40/5400+30:1800+30``) are valid but have no single base + increment: their speed is
  ``unknown``. Anything else is refused.
* Ratings: an integer ``0..MAX_RATING`` (4000: above every rating any federation or site has
  given a human, ~2900 FIDE / ~3400 Lichess bullet, and the engine lists' ~3600); ``?``, ``-``
  or empty: unrated. ``-500``, ``1e23``, ``1500.5``, ``abc`` are refused, never binned.
* ``[%clk H:MM:SS]`` (seconds may have decimals): minutes and seconds below 60, the total at
  most :data:`MAX_SECONDS`. A comment without ``[%clk`` has no clock; a ``[%clk`` that does not
  parse is refused (python-chess would silently read it as no clock).
"""

from __future__ import annotations

import math
import re

from pdx_lightning.errors import UserError

MAX_SECONDS = 7 * 24 * 3600  # a week: far above any game clock (Lichess: base <= 3 h, increment <= 3 min)
MAX_RATING = 4000  # see the module docstring

# Lichess's speed categories by estimated duration base + 40 x increment (seconds): lila's
# `Speed.scala` (UltraBullet < 30 s, Bullet < 180 s, Blitz < 480 s, Rapid < 1500 s, else Classical)
SPEEDS: tuple[tuple[str, float], ...] = (
    ("ultrabullet", 30),
    ("bullet", 180),
    ("blitz", 480),
    ("rapid", 1500),
    ("classical", math.inf),
)
CORRESPONDENCE = "correspondence"  # TimeControl "-": no clock
TIME_CONTROLS = tuple(s for s, _ in SPEEDS) + (CORRESPONDENCE, "unknown")

# re.ASCII: \d is 0-9 only (int() would also read other scripts' digits, "١٥٠٠" as 1500)
_DECIMAL = re.compile(r"\d+(?:\.\d+)?", re.ASCII)
_PERIOD = r"(?:\d+/\d+(?:\+\d+)?|\*\d+|\d+(?:\+\d+)?)"  # moves/seconds[+increment], *sandclock, base[+increment]
_MULTI_PERIOD = re.compile(rf"{_PERIOD}(?::{_PERIOD})*", re.ASCII)
_RATING = re.compile(r"\d+", re.ASCII)
_CLK_TAG = re.compile(r"\[%clk\b([^\]]*)(\]?)", re.ASCII)
_CLK_VALUE = re.compile(r"(\d+):(\d{1,2}):(\d{1,2}(?:\.\d*)?)", re.ASCII)
SHOWN = 40  # characters of a bad value quoted in a message


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut to :data:`SHOWN` characters."""
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "...")


class PgnValueError(UserError, ValueError):
    """A PGN value (header or ``[%clk]``) that cannot be right; the message says which and why."""


def _seconds(text: str, what: str, tc: str) -> float:
    """A plain decimal number of seconds in ``0..MAX_SECONDS`` (``what``: base or increment)."""
    if not _DECIMAL.fullmatch(text):
        raise PgnValueError(
            f"TimeControl {_shown(tc)}: {what} {_shown(text)} is not a number of seconds "
            f"(BASE+INCREMENT in seconds, '-' or '?')"
        )
    value = float(text)  # digits only: finite or, past ~300 digits, inf (refused next)
    if value > MAX_SECONDS:
        raise PgnValueError(f"TimeControl {_shown(tc)}: {what} {value:g} s is above {MAX_SECONDS:,} s (a week)")
    return value


def parse_time_control(tc: str) -> tuple[float | None, float | None]:
    """``"180+2"`` → ``(180.0, 2.0)``; ``"60"`` → ``(60.0, 0.0)``; ``-``, ``?``, empty and the
    standard's other forms → ``(None, None)``; anything else (``1e400+1e400``, ``-5+0``, ``inf``,
    ``nan``, ``x+y``, a base above :data:`MAX_SECONDS`) raises :class:`PgnValueError`."""
    text = tc.strip()
    if text in ("", "?", "-"):
        return None, None
    if any(c in text for c in "/*:"):  # moves/seconds, sandclock or several periods: no single base + increment
        if not _MULTI_PERIOD.fullmatch(text):
            raise PgnValueError(f"TimeControl {_shown(tc)} is not a PGN time control")
        return None, None
    base, plus, inc = text.partition("+")
    return _seconds(base, "base", tc), (_seconds(inc, "increment", tc) if plus else 0.0)


def speed_category(tc: str) -> str:
    """Lichess's speed category (:data:`TIME_CONTROLS`) of a ``TimeControl`` header from
    base + 40 x increment; raises :class:`PgnValueError` as :func:`parse_time_control`."""
    if tc.strip() == "-":
        return CORRESPONDENCE
    base, inc = parse_time_control(tc)
    if base is None:
        return "unknown"
    assert inc is not None  # parse_time_control returns both or neither
    duration = base + 40 * inc  # finite: both are at most MAX_SECONDS
    return next(name for name, below in SPEEDS if duration < below)


def parse_rating(text: str | None, tag: str = "rating") -> int | None:
    """A ``WhiteElo``/``BlackElo`` value as an integer in ``0..MAX_RATING``; None if absent, empty,
    ``?`` or ``-`` (unrated); anything else raises :class:`PgnValueError` naming ``tag``."""
    value = (text or "").strip()
    if value in ("", "?", "-"):
        return None
    if not _RATING.fullmatch(value) or len(value) > 5 or int(value) > MAX_RATING:
        assert text is not None  # None is returned above (value "")
        raise PgnValueError(f"{tag} {_shown(text)} is not a rating (an integer 0..{MAX_RATING})")
    return int(value)


def parse_clock(comment: str) -> float | None:
    """The first ``[%clk H:MM:SS]`` of a move comment in seconds; None if the comment has none;
    a malformed or out-of-range one raises :class:`PgnValueError`."""
    tag = _CLK_TAG.search(comment)
    if tag is None:
        return None
    m = _CLK_VALUE.fullmatch(tag.group(1).strip()) if tag.group(2) else None
    if m is None:
        raise PgnValueError(f"clock comment {_shown(tag.group(0))} is not [%clk H:MM:SS]")
    hours, minutes, seconds = m.groups()
    whole = int(hours) * 3600 + int(minutes) * 60 if len(hours) <= 6 else MAX_SECONDS + 1  # ints: no overflow
    if int(minutes) >= 60 or float(seconds) >= 60 or whole + float(seconds) > MAX_SECONDS:
        raise PgnValueError(
            f"clock comment {_shown(tag.group(0))} is out of range (minutes and seconds "
            f"below 60, at most {MAX_SECONDS:,} s)"
        )
    return whole + float(seconds)
