"""``pdx data pgn``: human-game shards in the pretraining format (played move, result), resumable, with a
held-out PGN; ``pdx pretrain --model.freeze`` trains only the unfrozen parameter groups."""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.chesscore.pgn_games import MoveFilter, read_games
from pdx_lightning.datagen.pgn import PgnDataConfig, PgnDataError, generate, mover_wdl
from pdx_lightning.nets import load_model
from pdx_lightning.supervised.distill import DistillModule, FreezeError, ShardDataModule
from pdx_lightning.supervised.shards import list_shards, load_all, load_shard

torch.set_num_threads(1)
GAMES20 = Path(__file__).parents[1] / "fixtures" / "lichess_games_20.pgn"


def cfg(**kw) -> PgnDataConfig:
    return PgnDataConfig((str(GAMES20),), kw.pop("filters", MoveFilter(skip_plies=10)), **kw)


def test_mover_wdl():
    assert mover_wdl(1, True) == (1, 0, 0) and mover_wdl(1, False) == (0, 0, 1)
    assert mover_wdl(-1, False) == (1, 0, 0) and mover_wdl(0, True) == (0, 1, 0)


def test_records_are_the_played_moves_with_the_result(tmp_path):
    summary = generate(tmp_path, cfg(shard_size=10_000))
    games = list(read_games(GAMES20))
    assert summary["records"] == sum(len(g.moves) - 10 for g in games) and summary["shards"] == 1
    shard = load_shard(list_shards(tmp_path)[0])
    assert (shard.n_cand == 1).all() and len(shard) == summary["records"]
    for i in range(0, len(shard), 37):
        g = games[int(shard.game[i])]
        ply = int(shard.ply[i])
        board = shard.board(i)
        assert ply >= 10 and shard.cand_idx[i, 0] == move_to_index(g.moves[ply], board.turn)
        assert tuple(shard.wdl[i]) == mover_wdl(g.result, board.turn)
    assert shard.game_result.tolist() == [g.result for g in games]


def test_resumable_and_settings_checked(tmp_path):
    first = generate(tmp_path, cfg(shard_size=200))
    assert first["shards_made"] == first["shards"] > 2
    again = generate(tmp_path, cfg(shard_size=200))
    assert again["shards_made"] == 0 and again["shards_kept"] == first["shards"]
    victim = list_shards(tmp_path)[1]
    before = load_shard(victim)
    victim.write_bytes(b"torn")
    assert generate(tmp_path, cfg(shard_size=200))["shards_made"] == 1
    np.testing.assert_array_equal(load_shard(victim).cand_idx, before.cand_idx)
    with pytest.raises(PgnDataError, match="other settings.*shard_size"):
        generate(tmp_path, cfg(shard_size=300))


def test_heldout_games_leave_the_shards_and_read_back_whole(tmp_path):
    summary = generate(tmp_path, cfg(holdout_every=5))
    held = list(read_games(tmp_path / "heldout.pgn"))
    orig = list(read_games(GAMES20))
    assert summary["games_heldout"] == len(held) == 4 and summary["games_trained"] == 16
    for h, o in zip(held, orig[4::5]):
        assert (h.moves, h.clocks, h.white_elo, h.time_control) == (o.moves, o.clocks, o.white_elo, o.time_control)
    shard, _ = load_all(tmp_path, dedupe=False)
    trained = {
        tuple(shard.game_moves[shard.game_offsets[g] : shard.game_offsets[g + 1]].tolist())
        for g in range(len(shard.game_result))
    }
    from pdx_lightning.supervised.shards import encode_move

    assert not trained & {tuple(encode_move(m) for m in h.moves) for h in held}


def test_pretrain_reads_the_shards_and_freeze_keeps_the_backbone(tmp_path):
    generate(tmp_path / "d", cfg())
    dm = ShardDataModule(shards=str(tmp_path / "d"), val_fraction=0.2, batch_size=16)
    dm.setup()
    assert dm.stats["positions"] > 500 and np.allclose(dm.data.cand_p[:, 0], 1.0)
    L.seed_everything(0)
    m = DistillModule(init="random:tiny", lr=1e-2, warmup_steps=1, freeze=["backbone", "value_head"])
    groups = m.model.param_groups()
    before = {k: [p.detach().clone() for p in v] for k, v in groups.items()}
    L.Trainer(
        max_steps=3,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
    ).fit(m, datamodule=dm)
    moved = {k: any(not torch.equal(a, b) for a, b in zip(before[k], groups[k])) for k in groups}
    assert moved == {"backbone": False, "final_block": True, "policy_head": True, "value_head": False}
    with pytest.raises(FreezeError, match="unknown parameter groups \\['trunk'\\]"):
        DistillModule(init="random:tiny", freeze=["trunk"])


def test_cli_data_pgn_then_pretrain_with_freeze(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # LightningCLI writes config.yaml into the working directory
    out = tmp_path / "shards"
    assert (
        cli.main(["data", "pgn", "--pgn", str(GAMES20), "--out", str(out), "--holdout-every", "5", "--max-games", "10"])
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["games_read"] == 10 and summary["games_heldout"] == 2 and (out / "heldout.pgn").is_file()
    net = tmp_path / "net.pt"
    cli.main(
        [
            "pretrain",
            "--model.init",
            "random:tiny",
            "--model.freeze",
            "[backbone]",
            "--data.shards",
            str(out),
            "--data.batch_size",
            "16",
            "--trainer.max_steps",
            "2",
            "--trainer.logger",
            "false",
            "--trainer.enable_checkpointing",
            "false",
            "--trainer.limit_val_batches",
            "0",
            "--trainer.accelerator",
            "cpu",
            "--model.export",
            str(net),
        ]
    )
    a, b = load_model("random:tiny"), load_model(str(net))
    pa, pb = a.param_groups(), b.param_groups()
    assert all(torch.equal(x, y) for x, y in zip(pa["backbone"], pb["backbone"]))
    assert not all(torch.equal(x, y) for x, y in zip(pa["final_block"], pb["final_block"]))
    assert cli.main(["data", "pgn", "--pgn", str(tmp_path / "none.pgn"), "--out", str(tmp_path / "o")]) == 2


def test_filters_change_the_records(tmp_path):
    every = generate(tmp_path / "a", cfg(filters=MoveFilter(skip_plies=0)))
    blitz = generate(tmp_path / "b", cfg(filters=MoveFilter(skip_plies=0, time_controls=("blitz",))))
    clock = generate(tmp_path / "c", cfg(filters=MoveFilter(skip_plies=0, min_clock=30)))
    rated = generate(tmp_path / "d", cfg(filters=MoveFilter(skip_plies=0, rating_min=2000)))
    games = list(read_games(GAMES20))
    assert every["records"] == sum(len(g.moves) for g in games)
    assert blitz["games_other_time_control"] == sum(g.speed != "blitz" for g in games) > 0
    assert 0 < blitz["records"] < every["records"] and 0 < clock["records"] < every["records"]
    from pdx_lightning.supervised.shards import encode_move

    by_moves = {tuple(encode_move(m) for m in g.moves): g for g in games}
    shard, _ = load_all(tmp_path / "d", dedupe=False)
    assert 0 < rated["records"] < every["records"] == len(load_all(tmp_path / "a", dedupe=False)[0])
    for i in range(len(shard)):  # every record's mover is rated >= 2000
        g = int(shard.game[i])
        game = by_moves[tuple(shard.game_moves[shard.game_offsets[g] : shard.game_offsets[g + 1]].tolist())]
        assert game.rating(int(shard.ply[i])) >= 2000
