"""The one marker for errors a user can fix (bad input, bad file, bad flag), at the lowest layer.

Named errors throughout the package inherit from :class:`UserError` (beside ``ValueError`` or
``OSError`` as fits). The ``pdx`` command prints such an error as one line —
``pdx <command>: error: <what, where, how to fix>`` — and exits 2; anything else is a bug and
keeps its traceback. ``pdx --traceback ...`` shows the traceback of user errors too.
"""

from __future__ import annotations


class UserError(Exception):
    """Mixin base of every error whose message tells the user what to change."""


class CallbackSettingError(UserError, ValueError):
    """A callback's constructor argument out of its range (``every_n_steps: 0``): named with the callback."""


def user_error_in(exc: BaseException) -> UserError | None:
    """The :class:`UserError` that caused ``exc`` (``exc`` itself, or one in its ``__cause__`` /
    ``__context__`` chain), or None: a library that wraps what it instantiates (jsonargparse wraps a
    callback's constructor error in its own) must not turn a one-line refusal into a traceback."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, UserError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None
