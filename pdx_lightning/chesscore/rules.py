"""How a game ends: one rule set, one result type, one repetition rule.

Every player of games in the package (self-play, the arena, the diagnostics'
self-play, the coverage tree) decides the end of a game with :func:`game_end`
and reports it as a :class:`GameResult`.

**Rules** (FIDE Laws Art. 5 and 9.2-9.6), checked after every move in the order
of python-chess's ``Board.outcome``:

1. checkmate (the side that just moved wins), insufficient material, stalemate;
2. the automatic draws: 75-move rule (half-move clock ≥ 150), fivefold repetition;
3. with ``claim_draws``, the claimable draws, claimed at once by the side to move:
   50-move rule (half-move clock ≥ 100) and threefold repetition *of the position
   on the board*. A claim announcing a move (python-chess's ``can_claim_*`` also
   accept a 50-move count or a repetition the next move would reach) is not made;
4. with ``max_plies``, a draw at that ply (``board.ply()``, counted from the
   standard start through the position's fullmove number, opening line included).

Adjudication (the arena's value-head agreement) is decided by its caller and
reported with :attr:`Reason.ADJUDICATION`.

**Repetition** (FIDE 9.2.2, python-chess's ``Board._transposition_key``):
positions are the same when piece placement, side to move and castling rights
agree and, for en passant, when the *legal* en-passant captures agree: an
en-passant square counts only when an en-passant capture is legal there (a
pawn pinned against its king, or the rank pin that capturing both pawns would
open, makes it no capture). :func:`repetition_key` computes that key,
:func:`repetition_count` counts the occurrences of the current position since the
last irreversible move; hot paths (self-play's ring buffer,
``encoding.GameHistory``) keep their own counts of these keys and pass them in.

**Result codes**: ``WIN``, ``DRAW``, ``LOSS`` (0, 1, 2) index a (W, D, L) vector
from one player's view (:meth:`GameResult.wdl_for`); ``RESULT_NONE`` (-1) marks a
game that goes on.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import chess

WIN, DRAW, LOSS = 0, 1, 2
RESULT_NONE = -1

RepetitionKey = tuple  # python-chess's transposition key: 8 bitboards, turn, castling, legal e.p. square


class Reason(enum.Enum):
    """Why a game ended."""

    CHECKMATE = "checkmate"
    STALEMATE = "stalemate"
    INSUFFICIENT_MATERIAL = "insufficient_material"
    SEVENTY_FIVE_MOVES = "seventy_five_moves"
    FIVEFOLD = "fivefold"
    THREEFOLD = "threefold"  # claimed
    FIFTY_MOVES = "fifty_moves"  # claimed
    PLY_CAP = "ply_cap"
    ADJUDICATION = "adjudication"


# human-readable text, as the arena's reports and PGN comments have always written them
_TEXT = {
    Reason.CHECKMATE: "checkmate",
    Reason.STALEMATE: "stalemate",
    Reason.INSUFFICIENT_MATERIAL: "insufficient material",
    Reason.SEVENTY_FIVE_MOVES: "75-move rule",
    Reason.FIVEFOLD: "fivefold repetition",
    Reason.THREEFOLD: "threefold repetition",
    Reason.FIFTY_MOVES: "50-move rule",
    Reason.PLY_CAP: "ply cap",
    Reason.ADJUDICATION: "adjudication",
}

_PGN = {chess.WHITE: "1-0", chess.BLACK: "0-1", None: "1/2-1/2"}


class GameResultError(ValueError):
    """A result that cannot be (a draw by checkmate, an unfinished PGN result, ...)."""


@dataclass(frozen=True)
class GameResult:
    """A finished game: ``winner`` (``chess.WHITE``/``chess.BLACK``, None for a draw) and ``reason``.

    ``note`` replaces the standard text of the reason in reports (e.g. "512-ply cap",
    "adjudication: value heads agree White wins").
    """

    winner: chess.Color | None
    reason: Reason
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.reason, Reason):
            raise GameResultError(f"reason must be a rules.Reason, got {self.reason!r}")
        if self.winner not in (chess.WHITE, chess.BLACK, None):
            raise GameResultError(f"winner must be chess.WHITE, chess.BLACK or None, got {self.winner!r}")
        if self.reason == Reason.CHECKMATE and self.winner is None:
            raise GameResultError("a checkmate has a winner")
        if self.winner is not None and self.reason not in (Reason.CHECKMATE, Reason.ADJUDICATION):
            raise GameResultError(f"{self.reason.value} is a draw, got winner {chess.COLOR_NAMES[self.winner]}")

    @property
    def is_draw(self) -> bool:
        return self.winner is None

    @property
    def pgn_result(self) -> str:
        """The PGN ``Result``: ``"1-0"``, ``"0-1"`` or ``"1/2-1/2"``."""
        return _PGN[self.winner]

    @property
    def termination(self) -> str:
        """The PGN ``Termination`` tag: ``"adjudication"`` for the ply cap and adjudication, else
        ``"normal"``."""
        return "adjudication" if self.reason in (Reason.PLY_CAP, Reason.ADJUDICATION) else "normal"

    @property
    def text(self) -> str:
        """Human-readable reason ("checkmate", "threefold repetition", "512-ply cap", ...)."""
        return self.note or _TEXT[self.reason]

    def score_for(self, color: chess.Color) -> float:
        """1, 0.5 or 0: the game's score for ``color``."""
        return 0.5 if self.winner is None else float(self.winner == color)

    def wdl_for(self, color: chess.Color) -> int:
        """``WIN``, ``DRAW`` or ``LOSS``: the result's index in a (W, D, L) vector from ``color``'s view."""
        return DRAW if self.winner is None else (WIN if self.winner == color else LOSS)

    def __str__(self) -> str:
        return f"{self.pgn_result} ({self.text})"


# ---------------------------------------------------------------- repetition


def _ep_capturer(ep: int, pawns: int, own: int, turn: chess.Color) -> int:
    """Own pawns that attack the en-passant square (a necessary condition for a legal e.p. capture)."""
    return chess.BB_PAWN_ATTACKS[not turn][ep] & pawns & own


def legal_ep_square(board: chess.Board) -> int | None:
    """``board.ep_square`` if an en-passant capture is legal there, else None (python-chess stores the
    square after every double push, capturable or not)."""
    ep = board.ep_square
    if ep is None or not _ep_capturer(ep, board.pawns, board.occupied_co[board.turn], board.turn):
        return None
    return ep if board.has_legal_en_passant() else None


def repetition_key(board: chess.Board) -> RepetitionKey:
    """The position's identity for repetitions: equal to python-chess's ``board._transposition_key()``
    (pieces, side to move, clean castling rights, the e.p. square only when an e.p. capture is legal)."""
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied_co[chess.BLACK],
        board.turn,
        board.clean_castling_rights(),
        legal_ep_square(board),
    )


def stack_repetition_key(board: chess.Board, ply: int) -> RepetitionKey:
    """:func:`repetition_key` of the position before move ``ply`` of ``board.move_stack`` (0 = the
    game's root), read from python-chess's saved state without popping moves.

    Equals the key python-chess computes at that position when it pops back to it: the root's
    castling rights are cleaned, later positions keep the rights the moves left.
    """
    st = board._stack[ply]
    if ply == 0:
        past = board.copy(stack=False)
        st.restore(past)
        return repetition_key(past)
    ep = st.ep_square
    if ep is not None and _ep_capturer(ep, st.pawns, st.occupied_w if st.turn else st.occupied_b, st.turn):
        past = board.copy(stack=False)
        st.restore(past)
        ep = ep if past.has_legal_en_passant() else None
    else:
        ep = None
    return (
        st.pawns,
        st.knights,
        st.bishops,
        st.rooks,
        st.queens,
        st.kings,
        st.occupied_w,
        st.occupied_b,
        st.turn,
        st.castling_rights,
        ep,
    )


def repetition_count(board: chess.Board) -> int:
    """How often the position on the board occurred since the last irreversible move, counting it.

    Only positions since the last capture or pawn move can repeat it (the positions
    before a castling-rights loss or with a legal e.p. capture differ in their key),
    so this is python-chess's count: ``board.is_repetition(n) == (repetition_count(board) >= n)``.
    """
    stack = board._stack
    n = len(stack)
    count, key = 1, None
    for p in range(n - 2, max(0, n - board.halfmove_clock) - 1, -2):  # same side to move
        if stack[p].occupied != board.occupied:
            continue  # cheap filter first, as python-chess
        key = key or repetition_key(board)
        count += stack_repetition_key(board, p) == key
    return count


# ---------------------------------------------------------------- game end


def ply_cap_reached(board: chess.Board, max_plies: int) -> bool:
    """The game has reached ``max_plies`` plies, counted from the standard start (``board.ply()``)."""
    return board.ply() >= max_plies


def game_end(
    board: chess.Board,
    *,
    legal: Sequence[chess.Move] | None = None,
    repetitions: int | None = None,
    claim_draws: bool = False,
    max_plies: int | None = None,
) -> GameResult | None:
    """The result if the game is over at ``board`` (rules in the module docstring), else None.

    ``legal``: the position's legal moves when the caller generated them already (only
    whether there is one is read). ``repetitions``: the position's occurrence count
    since the last irreversible move when the caller keeps one (a ring buffer of
    :func:`repetition_key` counts); else :func:`repetition_count` computes it.
    ``claim_draws``: end at a claimable threefold repetition / 50-move count.
    ``max_plies``: draw once the game reaches this ply (None: no cap).
    """
    can_move = bool(legal) if legal is not None else any(board.generate_legal_moves())
    if not can_move and board.is_check():
        return GameResult(not board.turn, Reason.CHECKMATE)
    if board.is_insufficient_material():
        return GameResult(None, Reason.INSUFFICIENT_MATERIAL)
    if not can_move:
        return GameResult(None, Reason.STALEMATE)
    if board.halfmove_clock >= 150:
        return GameResult(None, Reason.SEVENTY_FIVE_MOVES)
    if repetitions is None:  # a third occurrence needs >= 8 reversible plies
        repetitions = repetition_count(board) if board.halfmove_clock >= 8 else 1
    if repetitions >= 5:
        return GameResult(None, Reason.FIVEFOLD)
    if claim_draws:
        if board.halfmove_clock >= 100:
            return GameResult(None, Reason.FIFTY_MOVES)
        if repetitions >= 3:
            return GameResult(None, Reason.THREEFOLD)
    if max_plies is not None and ply_cap_reached(board, max_plies):
        return GameResult(None, Reason.PLY_CAP, f"{max_plies}-ply cap")
    return None
