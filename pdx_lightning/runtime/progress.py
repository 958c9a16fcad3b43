"""Progress bars for every wait longer than a few seconds, one helper for the whole package.

:func:`progress` returns a tqdm bar on stderr (stdout stays the commands' markdown and JSON) that

* appears only once the job has run for :data:`DELAY` seconds, so a fast command prints nothing;
* is disabled on every rank but 0 under DDP (the ranks would draw over each other);
* refreshes at most every :data:`LOG_INTERVAL` seconds when stderr is not a terminal (a log file
  gets a line now and then, not ten carriage-return updates a second);
* is switched off entirely by ``PDX_PROGRESS=0`` (also ``false``/``no``/``off``) in the environment.

Used by the self-play opening warm-up (``rl.selfplay``) and the ``pdx eval`` tools (puzzles, mates,
diagnostics, coverage, recovery, arena). Drawing a bar reads no random numbers and changes no result.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

from pdx_lightning.runtime.ranks import process_rank  # (re-exported: tests, callers)

DELAY = 2.0  # seconds before a bar first appears
LOG_INTERVAL = 10.0  # seconds between refreshes when stderr is not a terminal
ENV_SWITCH = "PDX_PROGRESS"
_OFF = {"0", "false", "no", "off"}


def enabled() -> bool:
    """Whether bars may be drawn here: rank 0 and not switched off by ``PDX_PROGRESS``."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() in _OFF:
        return False
    return process_rank() == 0


def progress(
    total: int | float | None = None, desc: str = "", unit: str = "it", *, leave: bool = False, **kwargs
) -> tqdm:
    """A tqdm bar on stderr that shows itself after :data:`DELAY` s, on rank 0, unless ``PDX_PROGRESS=0``.

    ``leave=False`` (the default) erases the bar when it closes, so the command's own output follows
    cleanly; pass ``leave=True`` to keep the final count. ``disable=True`` turns this one bar off (a
    caller's own switch, e.g. ``--quiet``); other keyword arguments go to tqdm. Use it as a context
    manager or close it, so an erased bar does not linger after an exception.
    """
    stream = sys.stderr
    tty = getattr(stream, "isatty", lambda: False)()
    kwargs.setdefault("mininterval", 0.1 if tty else LOG_INTERVAL)
    kwargs.setdefault("dynamic_ncols", tty)
    disable = bool(kwargs.pop("disable", False)) or not enabled()
    return tqdm(total=total, desc=desc, unit=unit, leave=leave, file=stream, delay=DELAY, disable=disable, **kwargs)


def note(bar: tqdm, text: str) -> None:
    """Show ``text`` after ``bar``'s count: what a long job is doing between two counts (an arena whose
    games all end near its close, say). Drawn at most every ``bar.mininterval`` seconds (so a log file
    gets a line every :data:`LOG_INTERVAL` s), never before the bar's delay is over; nothing when the
    bar is disabled."""
    if bar.disable:
        return
    bar.set_postfix_str(text, refresh=False)
    now = bar._time()
    if now - bar.start_t >= bar.delay and now - bar.last_print_t >= bar.mininterval:
        bar.refresh()
        bar.last_print_t = now
