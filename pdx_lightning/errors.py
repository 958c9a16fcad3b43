"""The one marker for errors a user can fix (bad input, bad file, bad flag), at the lowest layer.

Named errors throughout the package inherit from :class:`UserError` (beside ``ValueError`` or
``OSError`` as fits). The ``pdx`` command prints such an error as one line —
``pdx <command>: error: <what, where, how to fix>`` — and exits 2; anything else is a bug and
keeps its traceback. ``pdx --traceback ...`` shows the traceback of user errors too.
"""

from __future__ import annotations


class UserError(Exception):
    """Mixin base of every error whose message tells the user what to change."""
