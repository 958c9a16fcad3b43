"""The value head's one-ply choice (``evaluation.value_choice``, ``pdx eval puzzles --move-by value``):
hand-computed scores, the rules' ends, a slow one-position-at-a-time reference, and the puzzle scorer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.cli import main
from pdx_lightning.evaluation import value_choice
from pdx_lightning.evaluation.puzzle_scoring import score_suite
from pdx_lightning.evaluation.suite import load_suite
from pdx_lightning.evaluation.value_choice import mover_scores, terminal_score, value_choices, value_scores
from pdx_lightning.nets import NetOutput

LICHESS = Path(__file__).parents[1] / "fixtures" / "lichess_sample.csv"
PIECE = (1.0, 3.0, 3.0, 5.0, 9.0, 0.0)  # P N B R Q K
SCALE = 0.3


def material(board: chess.Board) -> float:
    """The side to move's material minus the opponent's, counted by python-chess."""
    return sum(
        PIECE[p - 1] * (len(board.pieces(p, board.turn)) - len(board.pieces(p, not board.turn))) for p in range(1, 7)
    )


class Material(torch.nn.Module):
    """A value head that counts material from the input planes (0-5 the side to move's pieces, 6-11 the
    opponent's): WDL logits (a m, 0, -a m). The policy is uniform."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor(PIECE))
        self.calls: list[int] = []

    def forward(self, x):
        self.calls.append(x.shape[0])
        counts = x[:, :12].sum(dim=(2, 3))
        m = SCALE * (counts[:, :6] @ self.w - counts[:, 6:12] @ self.w)
        return NetOutput(torch.zeros(x.shape[0], POLICY_SIZE), torch.stack([m, torch.zeros_like(m), -m], dim=1))


def reference(board: chess.Board) -> list[float]:
    """Slow and obvious: each legal move played, each end by the rules, else the material WDL's L + D/2."""
    out = []
    for move in board.legal_moves:
        child = board.copy()
        child.push(move)
        if child.is_checkmate():
            out.append(1.0)
        elif child.is_game_over(claim_draw=False):
            out.append(0.5)
        else:
            p = torch.softmax(torch.tensor([SCALE * material(child), 0.0, -SCALE * material(child)]), 0)
            out.append(float(p[2] + 0.5 * p[1]))
    return out


def test_the_movers_score_is_the_opponents_loss_plus_half_the_draw():
    wdl = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(mover_scores(wdl), [0.65, 0.0, 0.5], atol=1e-7)


def test_the_rules_score_the_moves_that_end_the_game():
    mate = chess.Board("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3")  # fool's mate
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    bare = chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")
    assert (terminal_score(mate), terminal_score(stalemate), terminal_score(bare)) == (1.0, 0.5, 0.5)
    assert terminal_score(chess.Board()) is None


def test_value_scores_equal_the_slow_reference_on_random_positions(monkeypatch):
    rng = random.Random(7)
    boards = []
    while len(boards) < 40:
        b = chess.Board()
        for _ in range(rng.randrange(1, 60)):
            if b.is_game_over():
                break
            b.push(rng.choice(list(b.legal_moves)))
        if not b.is_game_over():
            boards.append(b)
    model = Material()
    got = value_scores(model, boards)
    for b, (moves, scores) in zip(boards, got):
        assert moves == list(b.legal_moves)
        np.testing.assert_allclose(scores, reference(b), atol=1e-6)
    monkeypatch.setattr(value_choice, "CHILDREN_PER_CALL", 7)  # many calls, flushed mid-board
    small = value_scores(model, boards, micro_batch=3)
    for (_, a), (_, b) in zip(got, small):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert max(model.calls[-5:]) <= 3


def test_the_value_head_takes_the_queen_and_prefers_a_mate_to_it():
    takes = chess.Board("4k3/8/8/3q4/4p3/2N5/8/4K3 w - - 0 1")  # Nxd5 (a queen) or Nxe4 (a pawn)
    assert value_choices(Material(), [takes]) == [chess.Move.from_uci("c3d5")]
    queen_or_mate = chess.Board("6k1/3p1ppp/8/8/3q4/8/4N3/R6K w - - 0 1")  # Nxd4 wins the queen, Ra8# mates
    ((moves, scores),) = value_scores(Material(), [queen_or_mate])
    assert scores[moves.index(chess.Move.from_uci("a1a8"))] == 1.0
    # after Nxd4 Black has 4 pawns against R + N: m = -4, logits (-1.2, 0, 1.2), e^1.2 = 3.3201
    # L + D/2 = (3.3201 + 0.5) / (0.3012 + 1 + 3.3201) = 0.82663
    assert scores[moves.index(chess.Move.from_uci("e2d4"))] == pytest.approx(0.82663, abs=1e-5)
    assert value_choices(Material(), [queen_or_mate]) == [chess.Move.from_uci("a1a8")]


def test_score_suite_by_value_scores_the_value_heads_choices():
    puzzles = load_suite(LICHESS).puzzles
    model = Material()
    by_value = score_suite(model, puzzles, move_by="value")
    by_policy = score_suite(model, puzzles)
    np.testing.assert_allclose(by_value.log_p_star, by_policy.log_p_star)  # p* is the policy's either way
    solver = [b for p in puzzles for b in p.positions()]  # puzzle by puzzle, ply by ply: the flat order
    accepted = [a for p in puzzles for a in p.accepted]
    assert len(solver) == len(accepted) == by_value.n_positions
    want = value_choices(model, solver)
    assert by_value.ply_move == [m.uci() for m in want] and by_value.move_by == "value"
    assert by_value.ply_correct.tolist() == [m in acc for m, acc in zip(want, accepted)]
    assert by_value.ply_move != by_policy.ply_move  # the uniform policy's argmax is another move
    with pytest.raises(ValueError, match=r"move_by must be one of \['policy', 'value', 'search'\], got 'bogus'"):
        score_suite(model, puzzles, move_by="bogus")


def test_eval_puzzles_move_by_value_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "v.json"
    argv = ["eval", "puzzles", "--model", "random:tiny", "--suite", str(LICHESS), "--device", "cpu"]
    assert main([*argv, "--move-by", "value", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Moves scored: the value head's one-ply choice" in text and "`--move-by value`" in text
    doc = json.loads(out.read_text())
    assert doc["move_by"] == "value"
    with pytest.raises(SystemExit) as e:
        main([*argv, "--move-by", "bogus"])
    assert e.value.code == 2 and "invalid choice: 'bogus'" in capsys.readouterr().err


def test_encoding_puts_the_side_to_moves_pieces_first():
    """What :class:`Material` relies on: planes 0-5 are the side to move's pieces (Black's here)."""
    b = chess.Board()
    for san in ("e4", "d5", "exd5"):
        b.push_san(san)
    counts = encode_boards([b])[0, :12].sum(axis=(1, 2))
    assert counts[0] == 7 and counts[6] == 8 and material(b) == -1
