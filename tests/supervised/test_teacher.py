import chess
import numpy as np
import pytest

from pdx_lightning.chesscore.moves import legal_indices, move_to_index
from pdx_lightning.engines.stockfish import StockfishNotFound
from pdx_lightning.supervised.teacher import Teacher, TeacherError, candidate_policy, expected_score

pytestmark = pytest.mark.stockfish

POSITIONS = [
    chess.Board(),
    chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"),
    chess.Board("8/8/4k3/8/2K5/8/3P4/8 w - - 0 1"),  # few legal moves
    chess.Board("8/P7/8/8/8/8/k7/2K5 w - - 0 1"),  # promotions
    chess.Board("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"),  # White is mated
]
MATE_IN_1 = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"  # Ra8#; many other moves are also winning


@pytest.fixture(scope="module")
def teacher(stockfish_path):
    with Teacher(stockfish_path, nodes=300, multipv=6) as t:
        yield t


def _played() -> chess.Board:
    """A position reached by moves (the teacher sends the history)."""
    b = chess.Board()
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"):
        b.push_uci(uci)
    return b


@pytest.mark.parametrize("board", [b for b in POSITIONS if not b.is_game_over()] + [_played()], ids=lambda b: b.fen())
def test_targets_sum_to_one_over_legal_moves(teacher, board):
    lab = teacher.label(board)
    legal = set(legal_indices(board).tolist())
    assert lab.indices.dtype == np.int16 and lab.probs.dtype == np.float32
    assert set(lab.indices.tolist()) <= legal
    assert len(set(lab.indices.tolist())) == len(lab.indices) == min(6, len(legal))
    assert lab.probs.sum() == pytest.approx(1.0, abs=1e-6) and np.all(lab.probs >= 0)
    assert lab.wdl.shape == (3,) and lab.wdl.sum() == pytest.approx(1.0, abs=1e-6)
    assert lab.best_move == lab.moves[0] and board.is_legal(lab.best_move)
    assert lab.indices[0] == move_to_index(lab.best_move, board.turn)
    assert lab.cand_wdl.shape == (len(lab.indices), 3) and np.all(lab.cand_wdl.sum(1) == 1000)


def test_mate_in_one_gets_the_mass_at_low_temperature(teacher):
    board = chess.Board(MATE_IN_1)
    lab = teacher.label(board)
    mate = board.parse_uci("a1a8")
    assert lab.best_move == mate and lab.cand_mate[0] == 1
    q = lab.q()
    sharp = candidate_policy(q, len(q), temperature=0.02)
    assert sharp[0] > 0.99
    assert lab.wdl[0] == pytest.approx(1.0)


def test_temperature_sets_sharpness():
    q = np.array([[0.6, 0.55, 0.4, 0.0]], dtype=np.float32)
    entropy = lambda p: float(-(p[p > 0] * np.log(p[p > 0])).sum())  # noqa: E731
    h = [entropy(candidate_policy(q, 3, t)) for t in (0.01, 0.05, 0.2, 1.0)]
    assert h == sorted(h) and h[-1] <= np.log(3) + 1e-6
    p = candidate_policy(q, 3, 0.05)
    assert p[0, 3] == 0 and p[0, 0] / p[0, 1] == pytest.approx(np.exp(0.05 / 0.05), rel=1e-5)
    with pytest.raises(ValueError):
        candidate_policy(q, 3, 0.0)


def test_expected_score_orders_mates():
    wdl = np.array([[1000, 0, 0], [1000, 0, 0], [1000, 0, 0], [0, 1000, 0], [0, 0, 1000], [0, 0, 1000]])
    cp = np.array([0, 0, 900, 0, -900, 0])
    mate = np.array([1, 3, 0, 0, 0, -2])
    for w in (0.0, 0.5, 1.0):
        q = expected_score(wdl, cp, mate, cp_weight=w)
        assert list(np.argsort(-q, kind="stable")) == [0, 1, 2, 3, 4, 5]
        assert q[3] == pytest.approx(0.5)


def test_cp_weight_breaks_saturated_wdl_ties():
    wdl = np.array([[1000, 0, 0], [1000, 0, 0]])  # Stockfish's WDL saturates: both moves "win"
    cp, mate = np.array([900, 350]), np.zeros(2, dtype=int)
    q_wdl = expected_score(wdl, cp, mate, cp_weight=0.0)
    q_cp = expected_score(wdl, cp, mate, cp_weight=1.0)
    assert q_wdl[0] == q_wdl[1] == 1.0
    assert q_cp[0] - q_cp[1] == pytest.approx(1 / (1 + np.exp(-0.00368208 * 900)) - 1 / (1 + np.exp(-0.00368208 * 350)))
    assert candidate_policy(q_cp, 2, 0.05)[0] > 0.9 and candidate_policy(q_wdl, 2, 0.05)[0] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        expected_score(wdl, cp, mate, cp_weight=1.5)


def test_game_over_and_unbounded_search_are_refused(teacher, stockfish_path):
    with pytest.raises(ValueError, match="finished game"):
        teacher.label(POSITIONS[-1])
    with pytest.raises(ValueError, match="nodes or depth"):
        Teacher(stockfish_path, nodes=None, depth=None)


def test_depth_bound(stockfish_path):
    with Teacher(stockfish_path, nodes=None, depth=3, multipv=2) as t:
        lab = t.label(POSITIONS[1])
    assert lab.depth <= 3 and len(lab.indices) == 2


def test_missing_binary_names_the_install_command(tmp_path):
    with pytest.raises(StockfishNotFound, match="sudo apt-get install stockfish"):
        Teacher(tmp_path / "no-such-stockfish")


def test_crashed_engine_is_restarted_and_position_retried(teacher, caplog):
    import os
    import signal

    board = _played()
    os.kill(teacher.pid, signal.SIGKILL)
    before = teacher.restarts
    with caplog.at_level("WARNING"):
        lab = teacher.label(board)
    assert teacher.restarts == before + 1
    assert board.fen() in caplog.text  # the position that hit the dead engine is named
    assert lab.probs.sum() == pytest.approx(1.0, abs=1e-6)


def test_twice_failing_position_raises_naming_it(stockfish_path, monkeypatch):
    with Teacher(stockfish_path, nodes=100) as t:

        def boom(*a, **k):
            raise chess.engine.EngineTerminatedError("simulated crash")

        monkeypatch.setattr(t, "_search", boom)
        board = chess.Board(MATE_IN_1)
        with pytest.raises(TeacherError, match="6k1/5ppp"):
            t.label(board)
