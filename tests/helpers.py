"""Helpers only the tests use (issue 64: test-only code kept out of the package).

* :func:`fast_exp`, :func:`fast_log`, :func:`prior_round`: Lc0's arithmetic as the compiled core computes
  it (its ``pdx_fast_exp``, ``pdx_fast_log`` and ``pdx_prior_round`` exports), to check it bit for bit;
* :class:`FunctionPolicy`: a pure policy for the coverage tree (``evaluation.coverage.PolicySource``);
* :func:`evaluate_for_validation`: ``PuzzleValidation``'s scalars of a model on whole suites in one
  process, the oracle the callback and the modules' validation are held to;
* :func:`result_of_pgn`, :func:`result_of_outcome`: a ``GameResult`` from a PGN ``Result`` string or
  from python-chess's ``Board.outcome()``, the oracles of the rules' tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.native_core import library
from pdx_lightning.chesscore.rules import GameResult, GameResultError, Reason
from pdx_lightning.evaluation.puzzle_scoring import mate_depths, validation_metrics, validation_sums
from pdx_lightning.evaluation.suite import Puzzle

# ---------------------------------------------------------------- the core's Lc0 arithmetic


def fast_exp(x: float) -> float:
    """Lc0's FastExp as the core computes it."""
    return float(library().pdx_fast_exp(float(x)))


def fast_log(x: float) -> float:
    """Lc0's FastLog as the core computes it."""
    return float(library().pdx_fast_log(float(x)))


def prior_round(p: float) -> float:
    """A prior after Lc0's 16-bit storage (Edge::SetP then GetP)."""
    return float(library().pdx_prior_round(float(p)))


# ---------------------------------------------------------------- coverage


class FunctionPolicy:
    """A pure policy: ``fn(path) -> probabilities`` of the children, path = tuple of child ordinals."""

    def __init__(self, fn: Callable[[tuple[int, ...]], Sequence[float]]) -> None:
        self.fn = fn
        self.calls: list[int] = []

    def root(self) -> tuple[int, ...]:
        return ()

    def child(self, state: tuple[int, ...], label: int) -> tuple[int, ...]:
        return (*state, int(label))

    def expand(self, states):
        self.calls.append(len(states))
        probs = [np.asarray(self.fn(s), dtype=np.float64) for s in states]
        return [(np.arange(len(p), dtype=np.int64), p / p.sum() if len(p) else p) for p in probs]


# ---------------------------------------------------------------- validation


def evaluate_for_validation(
    model: torch.nn.Module, puzzles: Sequence[Puzzle], mates: Sequence[Puzzle] | None = None, micro_batch: int = 512
) -> dict[str, float]:
    """The ``PuzzleValidation`` scalars of ``model`` on whole suites, in one process
    (``validation_sums`` then ``validation_metrics``)."""
    depths = mate_depths(mates or [])
    return validation_metrics(validation_sums(model, puzzles, mates or [], depths, micro_batch), depths)


# ---------------------------------------------------------------- game results

_WINNER_OF_PGN = {"1-0": chess.WHITE, "0-1": chess.BLACK, "1/2-1/2": None}

_OF_TERMINATION = {
    chess.Termination.CHECKMATE: Reason.CHECKMATE,
    chess.Termination.STALEMATE: Reason.STALEMATE,
    chess.Termination.INSUFFICIENT_MATERIAL: Reason.INSUFFICIENT_MATERIAL,
    chess.Termination.SEVENTYFIVE_MOVES: Reason.SEVENTY_FIVE_MOVES,
    chess.Termination.FIVEFOLD_REPETITION: Reason.FIVEFOLD,
    chess.Termination.FIFTY_MOVES: Reason.FIFTY_MOVES,
    chess.Termination.THREEFOLD_REPETITION: Reason.THREEFOLD,
}


def result_of_pgn(result: str, reason: Reason, note: str = "") -> GameResult:
    """The result a PGN ``Result`` string (``"1-0"``, ``"0-1"``, ``"1/2-1/2"``) records, for ``reason``."""
    if result not in _WINNER_OF_PGN:
        raise GameResultError(f"PGN result {result!r} is not a finished game (1-0, 0-1 or 1/2-1/2)")
    return GameResult(_WINNER_OF_PGN[result], reason, note)


def result_of_outcome(outcome: chess.Outcome) -> GameResult:
    """python-chess's ``Board.outcome()`` as a result (standard chess only)."""
    if outcome.termination not in _OF_TERMINATION:
        raise GameResultError(f"python-chess termination {outcome.termination} is not standard chess")
    return GameResult(outcome.winner, _OF_TERMINATION[outcome.termination])
