"""HParamsSummary, PolicySnapshot and SelfPlayGames (issue 18 items 3, 4) on the tiny preset."""

from __future__ import annotations

import io

import chess
import chess.pgn
import lightning as L
import pytest
import torch

from pdx_lightning.callbacks import PolicySnapshot, SelfPlayGames
from pdx_lightning.callbacks.tensorboard import flatten_hparams
from pdx_lightning.nets import load_model
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

torch.set_num_threads(1)


def test_flatten_hparams_nests_with_slashes_and_drops_private_keys():
    flat = flatten_hparams(
        {
            "algorithm": {"beta": 0.01, "grad_clip_norm": None},
            "selfplay": {"n_games": 8, "openings_file": None},
            "adam_betas": (0.9, 0.98),
            "_instantiator": "x",
            "ok": True,
        }
    )
    assert flat == {
        "algorithm/beta": 0.01,
        "algorithm/grad_clip_norm": "None",
        "selfplay/n_games": 8,
        "selfplay/openings_file": "None",
        "adam_betas": "(0.9, 0.98)",
        "ok": True,
    }


class _Nets(torch.nn.Module):
    def __init__(self, base, online):
        super().__init__()
        self.base, self.online = base, online


def test_policy_snapshot_probabilities_kl_and_image():
    snap = PolicySnapshot(positions={"start": "", "e4": "e2e4", "fen": "8/8/8/8/8/2k5/8/KQ6 w - - 0 1"}, top_k=3)
    same = snap.probabilities(_Nets(load_model("random:tiny:0"), load_model("random:tiny:0")))
    assert [r["name"] for r in same] == ["start", "e4", "fen"]
    assert all(
        r["kl"] == pytest.approx(0, abs=1e-6) and r["h_reference"] == pytest.approx(r["h_network"]) for r in same
    )
    base, online = load_model("random:tiny:0"), load_model("random:tiny:0")
    torch.manual_seed(0)
    with torch.no_grad():  # a clearly different policy (random nets are near uniform)
        for prm in online.parameters():
            prm.add_(0.5 * torch.randn_like(prm))
    rows = snap.probabilities(_Nets(base, online))
    for row, board in zip(rows, snap.positions.values()):  # legal moves of each position, as SAN
        assert all(board.parse_san(san) in board.legal_moves for san in row["moves"])
    # the KL shown is KL(π_base ‖ π_θ) over the legal moves
    board = chess.Board()
    from pdx_lightning.nets.inference import evaluate_boards

    lp, lq = evaluate_boards(base, [board])[0][0], evaluate_boards(online, [board])[0][0]
    legal = torch.isfinite(lp)
    assert rows[0]["kl"] == pytest.approx(float((lp[legal].exp() * (lp[legal] - lq[legal])).sum()), rel=1e-5)
    # and both entropies are −Σ π log π over the legal moves, on every position (the same batched
    # evaluation as the snapshot's: a near-deterministic policy's entropy is small, so compare like with like)
    boards = list(snap.positions.values())
    for net, key in ((base, "h_reference"), (online, "h_network")):
        logps = evaluate_boards(net, boards)[0]
        for row, lp_i in zip(rows, logps):
            ok = torch.isfinite(lp_i)
            assert row[key] == pytest.approx(float(-(lp_i[ok].exp() * lp_i[ok]).sum()), rel=1e-5), (key, row["name"])
    assert 3 <= len(rows[0]["moves"]) <= 6 and rows[0]["kl"] > 1e-3
    img = snap.image(rows, step=7)
    assert img.dtype.name == "uint8" and img.ndim == 3 and img.shape[2] == 3 and img.std() > 0


def test_selfplay_games_writes_the_finished_games_of_the_rank(tmp_path):
    sp = SelfPlayConfig(n_games=6, opening_max_moves=0, max_plies=6, seed=3)
    m = PDXModule(base="random:tiny", algorithm=PDXSettings(micro_batch=6), selfplay=sp, warmup_steps=1)
    cb = SelfPlayGames(every_n_steps=4, max_games=5, text_games=1, directory=str(tmp_path / "games"))
    trainer = L.Trainer(
        max_steps=20,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[cb],
    )
    trainer.fit(m)
    text = (tmp_path / "games" / "games_rank0.pgn").read_text()
    games = []
    stream = io.StringIO(text)
    while (g := chess.pgn.read_game(stream)) is not None:
        games.append(g)
    # games end at ply 6, 12, 18 (6 at a time): periods ending at steps 8, 12, 20 keep 5 of each
    assert len(games) == cb.written and 10 <= cb.written <= 20
    assert m.dataset.stats["games_finished"] > cb.written  # a sample, not every game
    for g in games:
        board = g.end().board()
        assert g.headers["Result"] == (
            "1/2-1/2" if not board.is_checkmate() else ("0-1" if board.turn == chess.WHITE else "1-0")
        )
        assert int(g.headers["PlyCount"]) == board.ply() <= 6 and g.errors == []
        assert g.end().comment  # the rule that ended it
    assert sorted(int(g.headers["Round"]) for g in games) == [int(g.headers["Round"]) for g in games]
