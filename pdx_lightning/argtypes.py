"""Checked numeric types for the command-line tools' flags (argparse ``type=``), written once.

Every numeric flag of a ``pdx`` tool is parsed by one of these, so a value that is not finite, out
of its range or out of order is refused while the command line is parsed, before any work: argparse
names the flag (``argument --games: must be an integer >= 1, got '0'``) and ``pdx`` prints it as one
line, exit 2. Each factory returns a plain function; its ``__name__`` is what argparse reports for a
value that does not parse at all.

Upper bounds are where a larger value is a typo rather than a wish: counts a tool allocates for
(:data:`MAX_COUNT`), worker processes (:data:`MAX_WORKERS`), seeds (:data:`MAX_SEED`, the range
``lightning.seed_everything`` and NumPy's legacy seeding accept). Flags whose values must be ordered
(a range, a pair, bin edges) are checked by :func:`require_order` and the list types here.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable

from pdx_lightning.errors import UserError

__all__ = [
    "MAX_COUNT",
    "MAX_SEED",
    "MAX_WORKERS",
    "FlagError",
    "SettingError",
    "check_number",
    "count",
    "finite_float",
    "float_list",
    "int_in",
    "int_list",
    "nonnegative_int",
    "positive_float",
    "positive_int",
    "probability",
    "require_order",
    "seed",
    "workers",
]

MAX_COUNT = 2**31 - 1  # games, positions, nodes, batches: past a C int is a typo, not a plan
MAX_WORKERS = 1024  # worker processes (each starts a Stockfish or an interpreter)
MAX_SEED = 2**32 - 1  # lightning.seed_everything's and NumPy's legacy seed range


class FlagError(UserError, ValueError):
    """Flags that are each valid but not together (a range whose low end is above its high end)."""


class SettingError(UserError, ValueError):
    """A config key (a LightningCLI ``--model.*`` / ``--data.*`` setting) whose value is out of its range."""


def _range_text(lo, hi, lo_open: bool, hi_open: bool, integer: bool) -> str:
    fmt = "{:,}" if integer else "{:g}"
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} " + fmt.format(lo))
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} " + fmt.format(hi))
    return ("an integer" if integer else "a finite number") + (" " + " and ".join(parts) if parts else "")


def check_number(
    key: str,
    value: object,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    integer: bool = False,
    optional: bool = False,
    error: type[Exception] = SettingError,
) -> None:
    """Raise ``error`` (:class:`SettingError` by default; ``key: must be <range>, got <value>``) unless
    ``value`` is a finite number (an int if ``integer``; None too if ``optional``) in the range
    ``lo``..``hi``. Every settings class checks its ranges with this (one wording for every key)."""
    if value is None and optional:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and isinstance(value, (int, float)):  # (narrowed again for the type checker)
        v = float(value)
        in_range = (lo is None or (v > lo if lo_open else v >= lo)) and (hi is None or (v < hi if hi_open else v <= hi))
        ok = (not integer or isinstance(value, int)) and in_range
    if not ok:
        want = _range_text(lo, hi, lo_open, hi_open, integer) + (" or null" if optional else "")
        raise error(f"{key}: must be {want}, got {value!r}")


def _shown(text: str) -> str:
    """The value as given, cut short (a flag's value can be megabytes long)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def int_in(lo: int | None = None, hi: int | None = None, *, name: str | None = None) -> Callable[[str], int]:
    """An integer in ``[lo, hi]`` (either end None: open)."""
    if lo is not None and hi is not None:
        want = f"an integer in [{lo:,}, {hi:,}]"
    elif lo is not None:
        want = f"an integer >= {lo:,}"
    elif hi is not None:
        want = f"an integer <= {hi:,}"
    else:
        want = "an integer"

    def parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""), 10) if len(text) <= 40 else None
        except ValueError:
            value = None
        if value is None or (lo is not None and value < lo) or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(f"must be {want}, got {_shown(text)}")
        return value

    parse.__name__ = name or "int"
    parse.bounds = (lo, hi, False, False, True)  # type: ignore[attr-defined]  # what the tests read
    return parse


positive_int = int_in(1, MAX_COUNT, name="positive_int")
nonnegative_int = int_in(0, MAX_COUNT, name="nonnegative_int")
count = positive_int
workers = int_in(1, MAX_WORKERS, name="workers")
seed = int_in(0, MAX_SEED, name="seed")


def shard(text: str) -> tuple[int, int]:
    """``K/N`` with ``1 <= K <= N <= MAX_WORKERS``: the K-th of N shards (``pdx arena --shard``)."""
    k, sep, n = text.strip().partition("/")
    try:
        kk, nn = workers(k), workers(n)  # each an integer in [1, MAX_WORKERS]
    except argparse.ArgumentTypeError:
        kk = nn = 0
    if not (sep and 1 <= kk <= nn):
        raise argparse.ArgumentTypeError(
            f"must be K/N with 1 <= K <= N <= {MAX_WORKERS:,} (the K-th of N shards, e.g. 1/2), got {_shown(text)}"
        )
    return kk, nn


def _float(text: str) -> float | None:
    try:
        value = float(text) if len(text) <= 40 else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def finite_float(
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    hi_open: bool = False,
    words: tuple[str, ...] = (),
    name: str | None = None,
) -> Callable[[str], float]:
    """A finite float in the range ``lo``..``hi`` (closed ends unless ``lo_open``/``hi_open``; None:
    unbounded), or one of ``words`` (returned as given: ``adaptive`` for a temperature)."""
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {lo:g}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {hi:g}")
    want = "a finite number" + (" " + " and ".join(parts) if parts else "")
    if words:
        want += " or " + " or ".join(repr(w) for w in words)

    def parse(text: str) -> float:
        if text in words:
            return text  # type: ignore[return-value]  # a keyword the flag also takes
        value = _float(text)
        if (
            value is None
            or (lo is not None and (value <= lo if lo_open else value < lo))
            or (hi is not None and (value >= hi if hi_open else value > hi))
        ):
            raise argparse.ArgumentTypeError(f"must be {want}, got {_shown(text)}")
        return value

    parse.__name__ = name or "float"
    parse.bounds = (lo, hi, lo_open, hi_open, False)  # type: ignore[attr-defined]  # what the tests read
    parse.words = words  # type: ignore[attr-defined]
    return parse


positive_float = finite_float(0.0, lo_open=True, name="positive_float")
probability = finite_float(0.0, 1.0, name="probability")


def _list(
    item: Callable[[str], float], kind: str, *, increasing: bool, min_len: int, name: str
) -> Callable[[str], list]:
    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",") if p.strip()] if len(text) <= 4096 else []
        try:
            values = [item(p) for p in parts]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"{kind}: each {e}") from None
        if len(values) < min_len:
            raise argparse.ArgumentTypeError(
                f"{kind}: needs at least {min_len} comma-separated value(s), got {_shown(text)}"
            )
        if increasing and any(b <= a for a, b in itertools.pairwise(values)):
            raise argparse.ArgumentTypeError(f"{kind}: values must increase, got {_shown(text)}")
        return values

    parse.__name__ = name
    parse.item = item  # type: ignore[attr-defined]  # what the tests read
    return parse


def float_list(
    lo: float | None = None, hi: float | None = None, *, increasing: bool = True, min_len: int = 1
) -> Callable[[str], list[float]]:
    """Comma-separated finite floats (each in ``[lo, hi]``), strictly increasing unless told otherwise."""
    return _list(finite_float(lo, hi), "comma-separated numbers", increasing=increasing, min_len=min_len, name="floats")


def int_list(
    lo: int | None = None, hi: int | None = None, *, increasing: bool = True, min_len: int = 1
) -> Callable[[str], list[int]]:
    """Comma-separated integers (each in ``[lo, hi]``), strictly increasing unless told otherwise."""
    return _list(int_in(lo, hi), "comma-separated integers", increasing=increasing, min_len=min_len, name="ints")


def require_order(low: float | None, high: float | None, low_flag: str, high_flag: str, *, strict: bool = False):
    """Raise :class:`FlagError` unless ``low <= high`` (``low < high`` if ``strict``); None on either side
    passes (an open end). ``low_flag``/``high_flag`` name the flags in the message."""
    if low is None or high is None:
        return
    if low > high or (strict and low == high):
        rel = "below" if strict else "at most"
        raise FlagError(f"{low_flag} {low:g} must be {rel} {high_flag} {high:g}")
