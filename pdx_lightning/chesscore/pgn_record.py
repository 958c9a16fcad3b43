"""Writing a finished game as PGN: the one builder of the arena's and the self-play callback's files.

:func:`game_pgn` gives every game written by the project the same tags, in the same order: the
Seven Tag Roster (``Site`` is ``pdx_lightning``, ``Date`` today's), ``FEN``/``SetUp`` when the game
did not start from the standard position, then ``Termination``, ``PlyCount`` and the caller's own
tags. The rule that ended the game is the last move's comment.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

import chess
import chess.pgn

SITE = "pdx_lightning"


def game_pgn(
    root: chess.Board,
    moves: Sequence[chess.Move],
    *,
    event: str,
    round: str,
    white: str,
    black: str,
    result: str,
    termination: str,
    tags: Mapping[str, str] | None = None,
    comment: str | None = None,
    end_comment: str | None = None,
) -> chess.pgn.Game:
    """The game played from ``root`` by ``moves`` as a python-chess PGN game.

    ``termination`` is PGN's ``Termination`` (``normal`` for the rules of chess, ``adjudication``
    otherwise); ``tags`` come after it, in their order. ``comment`` is the game comment;
    ``end_comment`` goes on the last move (on the game itself, replacing ``comment``, when there
    are no moves)."""
    game = chess.pgn.Game()
    game.setup(root.copy(stack=False))
    game.headers.update(
        {
            "Event": event,
            "Site": SITE,
            "Date": datetime.date.today().strftime("%Y.%m.%d"),
            "Round": round,
            "White": white,
            "Black": black,
            "Result": result,
            "Termination": termination,
            "PlyCount": str(len(moves)),
            **(tags or {}),
        }
    )
    if comment:
        game.comment = comment
    node: chess.pgn.GameNode = game
    for m in moves:
        node = node.add_variation(m)
    if end_comment:
        node.comment = end_comment
    return game
