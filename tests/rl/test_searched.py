"""Searched self-play (SearchedModule): its settings, its loss by hand, its games, and real `pdx fit` runs
(resume bit for bit; two DDP ranks killed with SIGKILL and resumed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.boundary import MAX_MOVES
from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.nets import load_model
from pdx_lightning.rl.replay import Batch
from pdx_lightning.rl.searched_games import SearchedGames, _Game
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings, SearchedSettingsError
from pdx_lightning.rl.searched_step import searched_loss
from pdx_lightning.runtime.checkpoint_read import read_checkpoint

ROOT = Path(__file__).resolve().parents[2]
PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]
TINY = [
    "--model.base", "random:tiny", "--model.algorithm.n_games", "4", "--model.algorithm.nodes", "4",
    "--model.algorithm.batch_size", "16", "--model.algorithm.min_buffer", "32", "--model.algorithm.max_plies", "30",
    "--model.algorithm.micro_batch", "8", "--trainer.callbacks", "null", "--trainer.enable_progress_bar", "false",
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nodes", 0, "nodes: must be an integer >= 1"),
        ("reuse", 0, "reuse: must be an integer >= 1"),
        ("sampling", "greedy", "sampling: must be one of uniform, surprise"),
        ("noise_eps", 1.5, "noise_eps: must be a finite number >= 0 and <= 1"),
        ("batch_size", 10**6, "batch_size: must be at most buffer_capacity"),
        ("search", "reuse=1", "no 'reuse' here"),
        ("search", "cpuct=-1", "model.algorithm.search"),
        ("value_anchor", -1.0, "value_anchor: must be a finite number >= 0"),
        ("archive_value_gap", 2.5, "archive_value_gap: must be a finite number >= 0 and <= 2"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_key(key, value, message):
    with pytest.raises(SearchedSettingsError, match=message) as e:
        SearchedSelfPlaySettings(**{key: value})
    assert "\n" not in str(e.value) and "model.algorithm." in str(e.value)


def test_the_loss_by_hand():
    torch.manual_seed(0)
    B = 3
    mask = torch.zeros(B, POLICY_SIZE, dtype=torch.bool)
    cols = [[1, 2, 3], [10, 11, 12], [7, 8, 9]]
    target = torch.zeros(B, POLICY_SIZE)
    for r, c in enumerate(cols):
        mask[r, c] = True
        target[r, c] = torch.tensor([0.5, 0.5, 0.0])
    wdl_t = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0.2, 0.3, 0.5]])
    batch = Batch(torch.zeros(B, 112, 8, 8), mask, target, wdl_t, np.arange(B))
    logits, wdl_logits, base = torch.randn(B, POLICY_SIZE), torch.randn(B, 3), torch.randn(B, POLICY_SIZE)
    total, parts = searched_loss(logits, wdl_logits, batch, c_v=0.5, beta=0.1, base_logits=base)
    pol, val, kl = [], [], []
    for r, c in enumerate(cols):  # one row at a time, over its three legal moves
        lp = torch.log_softmax(logits[r, c], 0)
        lb = torch.log_softmax(base[r, c], 0)
        pol.append(-(target[r, c] * lp).sum())
        val.append(-(wdl_t[r] * torch.log_softmax(wdl_logits[r], 0)).sum())
        kl.append((lb.exp() * (lb - lp)).sum())
    want = torch.stack(pol).mean() + 0.5 * torch.stack(val).mean() + 0.1 * torch.stack(kl).mean()
    assert torch.allclose(total, want, atol=1e-6)
    assert torch.allclose(parts["loss/kl_base"], torch.stack(kl).mean(), atol=1e-6)
    total0, parts0 = searched_loss(logits, wdl_logits, batch, c_v=0.5, beta=0.0)
    assert "loss/kl_base" not in parts0 and torch.allclose(total0, want - 0.1 * torch.stack(kl).mean(), atol=1e-6)


def test_the_value_anchor_by_hand():
    """c_v·w·KL(p_base ‖ p_θ) over the three outcomes, on top of the loss without it."""
    torch.manual_seed(1)
    B = 4
    mask = torch.zeros(B, POLICY_SIZE, dtype=torch.bool)
    mask[:, :5] = True
    target = torch.zeros(B, POLICY_SIZE)
    target[:, 0] = 1.0
    batch = Batch(torch.zeros(B, 112, 8, 8), mask, target, torch.full((B, 3), 1 / 3), np.arange(B))
    logits, wdl_logits, base_wdl = torch.randn(B, POLICY_SIZE), torch.randn(B, 3), torch.randn(B, 3)
    plain, _ = searched_loss(logits, wdl_logits, batch, c_v=0.2, beta=0.0)
    total, parts = searched_loss(logits, wdl_logits, batch, 0.2, 0.0, None, 10.0, base_wdl)
    kl = []
    for r in range(B):
        pb, lt = torch.softmax(base_wdl[r], 0), torch.log_softmax(wdl_logits[r], 0)
        kl.append(sum(pb[o] * (pb[o].log() - lt[o]) for o in range(3)))
    assert torch.allclose(parts["loss/anchor"], torch.stack(kl).mean(), atol=1e-6)
    assert torch.allclose(total, plain + 0.2 * 10.0 * torch.stack(kl).mean(), atol=1e-6)
    # the base's own W/D/L costs nothing
    _, parts = searched_loss(logits, base_wdl, batch, 0.2, 0.0, None, 10.0, base_wdl)
    assert float(parts["loss/anchor"]) == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="value_anchor > 0 needs base_wdl_logits"):
        searched_loss(logits, wdl_logits, batch, 0.2, 0.0, None, 10.0)


@pytest.fixture(scope="module")
def net():
    return load_model("random:tiny")


def test_finished_games_carry_targets_from_each_side(net):
    g = SearchedGames(SearchedSelfPlaySettings(n_games=2, nodes=4, max_plies=3, temperature_plies=0), net, seed=1)
    done = []
    for _ in range(3):
        done.append(g.play())
    pos = [p.finished for p in done if len(p.finished)]
    assert pos and g.stats["cut"] == 2  # both games cut at 3 plies
    rows = pos[0]
    assert len(rows) == 6 and (rows.result == -1).all()
    np.testing.assert_allclose(rows.visits.sum(1), 1.0, rtol=1e-5)
    # cut: the last search's W/D/L from each row's side: rows 0 and 2 of a game as its last, row 1 flipped
    np.testing.assert_allclose(rows.search_wdl[1], rows.search_wdl[2][::-1])
    np.testing.assert_allclose(rows.search_wdl[0], rows.search_wdl[2])


def test_the_one_node_q_is_what_a_one_node_search_returns(net):
    """The value-repair rule compares the search's root Q with the network's own W − L; at one node the
    search's root Q is that evaluation, so the two must agree (sign and side to move included)."""
    from pdx_lightning.chesscore.encoding import encode_boards
    from pdx_lightning.search import BatchedSearch, SearchSettings

    boards = [chess.Board()]
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5"):
        boards.append(boards[-1].copy())
        boards[-1].push_uci(uci)
    g = SearchedGames(SearchedSelfPlaySettings(n_games=1, nodes=4), net, seed=0)
    mine = g._one_node_q(encode_boards(boards))
    roots = BatchedSearch(net, SearchSettings(nodes=1), slots=len(boards), reuse=False).search(boards)
    np.testing.assert_allclose(mine, [r.root.root_q for r in roots], atol=1e-5)
    assert np.ptp(mine) > 1e-3  # the boards are told apart


def test_value_repair_archives_the_positions_the_search_corrected(net):
    """With the top-share rule off (archive_top_share 0), a gap of 2 archives nothing and a gap of 0 every
    searched position whose Q moved at all; the counters say why each entered."""

    def play(gap):
        s = SearchedSelfPlaySettings(n_games=2, nodes=8, max_plies=6, archive_top_share=0.0,
                                     archive_value_gap=gap, archive_share=0.0)  # fmt: skip
        g = SearchedGames(s, net, seed=3)
        for _ in range(6):
            g.play()
        return g

    assert play(None).archive == [] and play(2.0).archive == []
    g = play(0.0)
    assert g.stats["archived"] == g.stats["archived_value"] == len(g.archive) and 9 <= len(g.archive) <= 12
    g = play(1e-3)  # a gap between: fewer
    assert 0 < g.stats["archived_value"] <= 12


def test_a_decided_game_scores_each_row_from_its_side(net):
    g = SearchedGames(SearchedSelfPlaySettings(n_games=1, nodes=4), net, seed=0)
    board = chess.Board()
    game = _Game(board, 0)
    for turn in (chess.WHITE, chess.BLACK, chess.WHITE):
        legal, visits = np.full(MAX_MOVES, -1, np.int16), np.zeros(MAX_MOVES, np.float32)
        game.rows.append((np.zeros(100, np.int64), legal, visits, np.array([0.1, 0.2, 0.7], np.float32), 0.0, turn))
    assert g._finish(game, "0-1").result.tolist() == [2, 0, 2]  # Black won: White's rows lost
    assert g._finish(game, "1/2-1/2").result.tolist() == [1, 1, 1]


def test_a_root_above_218_moves_is_recorded_whole(net):
    """Rows are MAX_MOVES wide (the one move cap), so a board set up with 236 legal moves is recorded."""
    g = SearchedGames(SearchedSelfPlaySettings(n_games=1, nodes=4, temperature_plies=0), net, seed=0)
    g.play()
    g.games[0] = _Game(chess.Board("kn2Q1Q1/nnQQ4/Q4Q1Q/2Q4Q/4Q3/1Q4Q1/3Q4/Q4QK1 w - - 0 1"), 0)
    done = g.play().finished
    legal = [*done.legal, *(r[1] for r in g.games[0].rows)]  # the game ended, or goes on
    assert max((row >= 0).sum() for row in legal) == 236


def test_rows_in_flight_from_a_218_column_checkpoint_resume_at_the_cap(net):
    s = SearchedSelfPlaySettings(n_games=2, nodes=4, temperature_plies=0)
    g = SearchedGames(s, net, seed=1)
    g.play()
    state = g.state_dict()
    for d in state["games"]:  # as written when rows held 218 columns
        d["rows"]["legal"], d["rows"]["visits"] = d["rows"]["legal"][:, :218], d["rows"]["visits"][:, :218]
    h = SearchedGames(s, net, seed=1)
    h.load_state_dict(state)
    for a, b in zip(g.games, h.games):
        for ra, rb in zip(a.rows, b.rows, strict=True):
            np.testing.assert_array_equal(ra[1], rb[1])
            np.testing.assert_array_equal(ra[2], rb[2])
    assert h._finish(h.games[0], "1-0").legal.shape == (1, MAX_MOVES)


def _fit(tmp: Path, steps: int, *extra: str, devices: int = 1) -> subprocess.CompletedProcess:
    argv = [*PDX, "fit", "--config", str(ROOT / "conf/fit/searched.yaml"), *TINY, "--trainer.max_steps", str(steps)]
    if devices > 1:
        argv += ["--trainer.strategy", "ddp", "--trainer.accelerator", "cpu", "--trainer.devices", str(devices)]
    cb = (
        '[{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", '
        '"init_args": {"save_last": true, "every_n_train_steps": 1, "save_top_k": -1}}]'
    )
    argv += ["--trainer.callbacks", cb, *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=900, env=env)


def _state(ckpt: Path) -> tuple:
    c = read_checkpoint(ckpt)
    sd = c["state_dict"]
    buf = c["pdx_searched"][0]["buffer"]
    return (
        c["global_step"],
        {k: v.clone() for k, v in sd.items() if k.startswith(("online.", "ema."))},
        (buf["admitted"], buf["presented"], len(buf["where"])),
        c["pdx_searched"][0]["games"]["stats"],
    )


@pytest.mark.slow
def test_pdx_fit_searched_resumes_bit_for_bit(tmp_path):
    """4 steps straight against 2 steps then `--ckpt_path last` for 2 more: the same weights, EMA, buffer
    counters and games."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    r = _fit(a, 4)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _fit(b, 2)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _fit(b, 4, "--ckpt_path", "last")
    assert r.returncode == 0, r.stderr[-3000:]
    sa = _state(next((a / "runs/searched/version_0/checkpoints").glob("last.ckpt")))
    sb = _state(next((b / "runs/searched/version_0/checkpoints").glob("last.ckpt")))
    assert sa[0] == sb[0] == 4
    assert sa[1].keys() == sb[1].keys() and all(torch.equal(sa[1][k], sb[1][k]) for k in sa[1])
    assert sa[2] == sb[2] and sa[3] == sb[3]
    assert sa[2][0] >= 32 and sa[2][1] == 4 * 16  # min_buffer positions admitted, 16 presented per step
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(a / "runs/searched/version_0"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    want = {"loss/policy", "loss/value", "selfplay/target_entropy", "selfplay/top_visit_share", "selfplay/root_q",
            "selfplay/games_per_s", "replay/fill", "replay/admitted", "time/play_share"}  # fmt: skip
    assert want <= tags, want - tags
    assert [e.step for e in events.Scalars("loss/policy")] == [0, 1, 2, 3]


@pytest.mark.slow
def test_two_ddp_ranks_killed_with_sigkill_resume_with_their_buffers(tmp_path):
    """`pdx fit` searched on 2 DDP ranks (gloo), SIGKILLed once step 2's checkpoint exists, resumed with
    `--ckpt_path last` to step 5: each rank's buffer and games come back (counters continue from the
    checkpoint), and the run ends where an uninterrupted one does."""
    argv = [*PDX, "fit", "--config", str(ROOT / "conf/fit/searched.yaml"), *TINY, "--trainer.max_steps", "5",
            "--trainer.strategy", "ddp", "--trainer.accelerator", "cpu", "--trainer.devices", "2",
            "--trainer.callbacks", '[{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", '
            '"init_args": {"save_last": true, "every_n_train_steps": 1, "save_top_k": -1}}]']  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ckdir = tmp_path / "runs/searched/version_0/checkpoints"
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.time() + 600
        while not (ckdir / "epoch=0-step=2.ckpt").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:] if proc.stderr else ""
            assert time.time() < deadline
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)  # both ranks at once
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.stderr:
            proc.stderr.close()
    killed = read_checkpoint(ckdir / "last.ckpt")
    step = killed["global_step"]
    assert 1 <= step < 5 and len(killed["pdx_searched"]) == 2  # last.ckpt may trail step 2's file by a step
    before = [s["buffer"]["admitted"] for s in killed["pdx_searched"]]
    r = subprocess.run(
        [*argv, "--ckpt_path", "last"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert r.returncode == 0, r.stderr[-3000:]
    done = read_checkpoint(ckdir / "last.ckpt")
    assert done["global_step"] == 5
    for rank in range(2):
        buf = done["pdx_searched"][rank]["buffer"]
        assert buf["presented"] == 5 * 16  # every step of both runs drew one batch: none lost, none twice
        assert buf["admitted"] >= before[rank]
    ranks = [done["pdx_searched"][r]["games"]["games"] for r in range(2)]
    assert ranks[0] != ranks[1]  # each rank plays its own games
