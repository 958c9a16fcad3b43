"""The step's logged scalars over the whole batch across ranks (rl.step_metrics), and the puzzle
validation sharded across ranks (callbacks.PuzzleValidation), checked by hand and in 2 gloo processes."""

from __future__ import annotations

import math
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from pdx_lightning.rl.step_metrics import StepSummaries, combine_summaries, summary_row

NAMES = ["loss/total", "selfplay/adv_mean", "selfplay/beta"]


def _row(n, loss, adv, adv_std, finished=0, length=0, white=0, draw=0, black=0, total=0, seconds=1.0):
    means = {"loss/total": loss, "selfplay/adv_mean": adv, "selfplay/beta": 0.01}
    return summary_row(
        means, n=n, seconds=seconds, adv_std=adv_std, finished=finished, length_sum=length,
        white_win=white, draw=draw, black_win=black, games_finished=total,
    )  # fmt: skip


def test_one_rank_is_returned_unchanged():
    metrics, games = combine_summaries(_row(5, 0.123456789, -0.1, 0.3, total=7).reshape(1, -1), NAMES)
    assert metrics["loss/total"] == 0.123456789 and metrics["selfplay/adv_std"] == 0.3
    assert metrics["selfplay/games_finished"] == 7 and metrics["perf/transitions_per_s"] == 5.0
    assert games is None  # no game ended: the caller holds the last values


def test_two_ranks_by_hand_equal_the_whole_batch():
    # rank 0: A = [0, 2] (mean 1, std √2); rank 1: A = [1, 1, 4] (mean 2, std √3); whole batch [0,2,1,1,4]
    a0, a1 = torch.tensor([0.0, 2.0], dtype=torch.float64), torch.tensor([1.0, 1.0, 4.0], dtype=torch.float64)
    rows = torch.stack(
        [
            _row(2, 0.5, 1.0, float(a0.std()), finished=1, length=40, white=1, total=3, seconds=2.0),
            _row(3, 1.5, 2.0, float(a1.std()), finished=2, length=100, draw=1, black=1, total=4, seconds=4.0),
        ]
    )
    metrics, games = combine_summaries(rows, NAMES)
    whole = torch.cat([a0, a1])
    assert metrics["loss/total"] == pytest.approx((2 * 0.5 + 3 * 1.5) / 5, abs=1e-15)
    assert metrics["selfplay/adv_mean"] == pytest.approx(float(whole.mean()), abs=1e-12)
    assert metrics["selfplay/adv_std"] == pytest.approx(float(whole.std()), abs=1e-12)  # pooled, N − 1
    assert metrics["selfplay/beta"] == 0.01 and metrics["selfplay/games_finished"] == 7
    assert metrics["perf/transitions_per_s"] == 5 / 4.0  # every transition over the slowest rank
    assert games == {
        "selfplay/game_length": 140 / 3,
        "selfplay/white_win": 1 / 3,
        "selfplay/draw": 1 / 3,
        "selfplay/black_win": 1 / 3,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ranks(rank: int, world: int, port: int, queue) -> None:
    """One gloo rank: its summary row gathered, and its share of the puzzle validation summed."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        summaries = StepSummaries()
        summaries.update(_row(2 + rank, 0.25 + rank, float(rank), 0.5, total=rank))
        rows = summaries.compute()

        from pdx_lightning.callbacks import PuzzleValidation
        from pdx_lightning.nets import load_model

        torch.manual_seed(0)
        net = load_model("random:tiny").eval()  # the same weights on both ranks (seeded)
        cb = PuzzleValidation(sample=40, mates=None)
        queue.put((rank, rows.tolist(), cb.score(net)))
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_ranks_gather_the_rows_and_their_sharded_validation_equals_one_process():
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_ranks, args=(r, 2, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    got = {r: (rows, scores) for r, rows, scores in (queue.get(timeout=300) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (rows0, scores0), (rows1, scores1) = got[0], got[1]
    assert rows0 == rows1 and len(rows0) == 2  # every rank holds every rank's row
    metrics, _ = combine_summaries(torch.tensor(rows0, dtype=torch.float64), NAMES)
    assert metrics["loss/total"] == pytest.approx((2 * 0.25 + 3 * 1.25) / 5, abs=1e-15)

    from pdx_lightning.callbacks import PuzzleValidation
    from pdx_lightning.nets import load_model

    torch.manual_seed(0)
    one = PuzzleValidation(sample=40, mates=None).score(load_model("random:tiny").eval())
    assert scores0 == scores1 and set(scores0) == set(one) and "puzzles/acc" in one and "mates/acc_1" in one
    for key, value in one.items():
        if "/acc" in key:  # counts: exactly one process's
            assert scores0[key] == value, key
        else:  # float32 network outputs shift in the last bits with the batch a position is evaluated in
            assert math.isclose(scores0[key], value, rel_tol=1e-5), key
