"""The RL layer's named error."""

from __future__ import annotations


class SelfPlayError(RuntimeError):
    """Self-play used wrongly (a stale batch, a state of another shape, too few games for a rank)."""
