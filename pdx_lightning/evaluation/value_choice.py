"""A one-ply search by the value head alone: the move after which the value head rates the position best
for the side that moved (``pdx eval puzzles --move-by value``).

A search engine reads the policy to choose what to expand and the value head to compare what it
expanded. Scoring puzzles with the policy's argmax measures the first; this measures the second on
its own: at each solver position every legal move is played, each resulting position is evaluated
(with its true move history), and the move of highest expected score for the mover is chosen. The
resulting position's WDL is from its side to move's view, the opponent's, so the mover's expected
score is ``L + D/2``. A move that ends the game is scored by the rules, not the network: checkmate 1,
any other end (stalemate, insufficient material, the 75-move rule, fivefold repetition) ½. Ties go to
the first move in python-chess's legal-move order.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import torch

from pdx_lightning.nets.inference import evaluate_boards

CHILDREN_PER_CALL = 8192  # resulting positions encoded at once (~0.23 GB of input planes)


def mover_scores(wdl: torch.Tensor) -> np.ndarray:
    """(C,) expected score of the side that just moved from (C, 3) WDL of the side to move: L + D/2."""
    return (wdl[:, 2] + 0.5 * wdl[:, 1]).double().numpy()


def terminal_score(board: chess.Board) -> float | None:
    """The mover's score of a position the game ends in by the rules (1 checkmate, ½ any other end);
    None when the game goes on."""
    outcome = board.outcome(claim_draw=False)
    if outcome is None:
        return None
    return 1.0 if outcome.termination == chess.Termination.CHECKMATE else 0.5


def value_scores(
    model: torch.nn.Module, boards: Sequence[chess.Board], micro_batch: int = 512
) -> list[tuple[list[chess.Move], np.ndarray]]:
    """Per board, its legal moves and the mover's expected score after each (:func:`terminal_score` for
    a move that ends the game, else the value head's ``L + D/2`` of the resulting position)."""
    out: list[tuple[list[chess.Move], np.ndarray]] = []
    pending: list[chess.Board] = []  # resulting positions still to evaluate
    where: list[tuple[int, int]] = []  # (board, move) of each pending position

    def flush() -> None:
        if pending:
            _, wdl = evaluate_boards(model, pending, micro_batch)
            for (b, m), s in zip(where, mover_scores(wdl)):
                out[b][1][m] = s
            pending.clear()
            where.clear()

    for b, board in enumerate(boards):
        moves = list(board.legal_moves)
        scores = np.full(len(moves), np.nan)
        out.append((moves, scores))
        for m, move in enumerate(moves):
            child = board.copy()
            child.push(move)
            end = terminal_score(child)
            if end is not None:
                scores[m] = end
                continue
            pending.append(child)
            where.append((b, m))
            if len(pending) >= CHILDREN_PER_CALL:
                flush()
    flush()
    return out


def value_choices(model: torch.nn.Module, boards: Sequence[chess.Board], micro_batch: int = 512) -> list[chess.Move]:
    """Per board (each with a legal move), the move of highest :func:`value_scores` (ties: the first)."""
    chosen = []
    for board, (moves, scores) in zip(boards, value_scores(model, boards, micro_batch)):
        if not moves:
            raise ValueError(f"value_choices: no legal move in {board.fen()}")
        chosen.append(moves[int(np.argmax(scores))])
    return chosen
