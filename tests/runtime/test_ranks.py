"""runtime.ranks: the one rank lookup (self-play's games and seeds, checkpoint hooks, progress bars)."""

import torch.distributed as dist

from pdx_lightning.runtime.ranks import process_rank, rank_world


def test_outside_a_process_group_rank_world_is_0_of_1_and_the_launchers_rank_counts(monkeypatch):
    assert rank_world() == (0, 1)
    monkeypatch.setenv("RANK", "3")
    assert rank_world() == (0, 1)  # self-play's share: no group, one process owns all the games
    assert process_rank() == 3  # a progress bar before the group starts: the launcher's rank


def test_a_started_process_group_wins_over_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "5")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        assert rank_world() == (0, 1)
        assert process_rank() == 0
    finally:
        dist.destroy_process_group()
