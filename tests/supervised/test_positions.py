import json
import shutil

import chess
import numpy as np
import pytest

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import index_to_move, legal_indices
from pdx_lightning.cli import build_parser, main
from pdx_lightning.datagen.positions import GenConfig, SettingsMismatch, generate, generate_shard
from pdx_lightning.supervised.shards import (
    CorruptShard,
    concat_shards,
    decode_move,
    encode_move,
    iter_shards,
    load_all,
    load_shard,
    shard_path,
    write_shard,
)
from pdx_lightning.supervised.teacher import Teacher

pytestmark = pytest.mark.stockfish

CFG = GenConfig(seed=3, nodes=150, multipv=4, shard_size=8, play_nodes=(8, 64), label_rate=0.5, max_plies=80)
FIELDS = [
    "game_moves",
    "game_offsets",
    "game_result",
    "game",
    "ply",
    "key",
    "cand_idx",
    "cand_wdl",
    "cand_cp",
    "cand_mate",
    "n_cand",
    "wdl",
]


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS) and a.meta == b.meta


@pytest.fixture(scope="module")
def shard(stockfish_path):
    with Teacher(stockfish_path, nodes=CFG.nodes, multipv=CFG.multipv) as t:
        return generate_shard(t, CFG, 0)


@pytest.fixture(scope="module")
def ref_dir(tmp_path_factory, stockfish_path):
    """Two shards made in-process with CFG (the reference for resumed and parallel runs)."""
    out = tmp_path_factory.mktemp("ref")
    summary = generate(out, 2 * CFG.shard_size, CFG, workers=1, progress_bar=False)
    assert summary["shards_made"] == 2 and summary["positions"] == 2 * CFG.shard_size
    return out


def test_move_codes_round_trip():
    for uci in ("e2e4", "e1g1", "a7a8q", "b7a8n", "h2h1r"):
        m = chess.Move.from_uci(uci)
        assert decode_move(encode_move(m)) == m and encode_move(m) < 2**16


def test_shard_round_trip_and_records(shard, tmp_path):
    path = write_shard(tmp_path / "shard_00000.npz", shard)
    back = load_shard(path)
    assert _same(shard, back) and len(back) == CFG.shard_size
    assert len(set(back.key.tolist())) == len(back)  # unique within the shard
    boards = back.boards()
    probs = back.policy(0.1)
    assert np.allclose(probs.sum(1), 1.0, atol=1e-6)
    for i, b in enumerate(boards):
        assert b.move_stack == back.board(i).move_stack and len(b.move_stack) == back.ply[i]
        assert chess.polyglot.zobrist_hash(b) == back.key[i]
        k = back.n_cand[i]
        legal = set(legal_indices(b).tolist())
        assert set(back.cand_idx[i, :k].tolist()) <= legal and np.all(back.cand_idx[i, k:] == -1)
        assert np.all(probs[i, k:] == 0) and back.wdl[i].sum() == pytest.approx(1.0)
        assert b.is_legal(index_to_move(int(back.best_index[i]), b))
    assert encode_boards(boards).shape == (len(boards), 112, 8, 8)
    both = concat_shards([back, back.subset(np.arange(3))])
    assert len(both) == len(back) + 3 and both.board(len(back) + 2).move_stack == boards[2].move_stack


def test_interrupted_generation_resumes_without_duplicates(ref_dir, tmp_path):
    out = tmp_path / "gen"
    shutil.copytree(ref_dir, out)
    before = [load_shard(shard_path(out, s)) for s in range(2)]
    # an interrupted run: one shard missing, one half-written, a stale temp file
    shard_path(out, 0).unlink()
    data = shard_path(out, 1).read_bytes()
    shard_path(out, 1).write_bytes(data[: len(data) // 2])
    (out / ".shard_00002.npz.tmp-123").write_bytes(b"partial")
    again = generate(out, 2 * CFG.shard_size, CFG, workers=1, progress_bar=False)
    assert again["shards_made"] == 2 and not list(out.glob(".*tmp*"))
    after = [load_shard(shard_path(out, s)) for s in range(2)]
    assert all(_same(a, b) for a, b in zip(before, after))  # seeded per shard: same games, same labels
    assert generate(out, 2 * CFG.shard_size, CFG, workers=1, progress_bar=False)["shards_made"] == 0
    union, reader = load_all(out)
    keys = union.key.tolist()
    assert len(keys) == len(set(keys)) and reader.n_corrupt == 0
    assert len(keys) + reader.n_duplicates == 2 * CFG.shard_size
    with pytest.raises(SettingsMismatch, match="nodes"):
        generate(out, 16, GenConfig(**{**CFG.__dict__, "nodes": 151}), workers=1, progress_bar=False)


def test_corrupt_shard_is_named_skipped_and_counted(shard, tmp_path, caplog):
    write_shard(shard_path(tmp_path, 0), shard)
    shard_path(tmp_path, 1).write_bytes(b"not a zip file")
    np.savez(shard_path(tmp_path, 2), key=np.zeros(3, dtype=np.uint64))  # readable, but missing arrays
    with pytest.raises(CorruptShard, match="shard_00001.npz"):
        load_shard(shard_path(tmp_path, 1))
    reader = iter_shards(tmp_path)
    with caplog.at_level("WARNING"):
        got = list(reader)
    assert len(got) == 1 and _same(got[0], shard)
    assert reader.n_corrupt == 2 and [p.name for p, _ in reader.corrupt] == ["shard_00001.npz", "shard_00002.npz"]
    assert "shard_00001.npz" in caplog.text and "2 corrupt" in caplog.text


def test_cli_parallel_workers_match_single_process(ref_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["data", "--help"])
    assert "positions" in capsys.readouterr().out
    out = tmp_path / "cli"
    rc = main(
        [
            "data",
            "positions",
            "--out",
            str(out),
            "--positions",
            "16",
            "--workers",
            "2",
            "--seed",
            "3",
            "--nodes",
            "150",
            "--multipv",
            "4",
            "--shard-size",
            "8",
            "--play-nodes",
            "8",
            "64",
            "--label-rate",
            "0.5",
            "--max-plies",
            "80",
            "--no-progress",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["positions"] == 16 and summary["positions_per_second"] > 0
    for s in range(2):
        assert _same(load_shard(shard_path(out, s)), load_shard(shard_path(ref_dir, s)))


BASE_ARGV = [
    "--out",
    "unused",
    "--positions",
    "6",
    "--seed",
    "1",
    "--nodes",
    "60",
    "--multipv",
    "3",
    "--shard-size",
    "6",
    "--play-nodes",
    "8",
    "32",
    "--label-rate",
    "0.2",
    "--max-plies",
    "40",
    "--opening-plies",
    "2",
]
VARIANTS = {
    "--seed": ["2"],
    "--nodes": ["90"],
    "--depth": ["3"],
    "--multipv": ["2"],
    "--shard-size": ["5"],
    "--opening-plies": ["6"],
    "--play-nodes": ["100", "200"],
    "--random-rate": ["0.5"],
    "--label-rate": ["0.9"],
    "--max-plies": ["12"],
}


def _differs(a, b) -> bool:
    return any(
        getattr(a, f).shape != getattr(b, f).shape or not np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS
    )


def test_every_content_flag_changes_the_shard(stockfish_path):
    import argparse

    from pdx_lightning.datagen.positions import add_arguments, config_from_args, make_teacher

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    base_cfg = config_from_args(parser.parse_args(BASE_ARGV))
    with make_teacher(base_cfg) as t:
        base = generate_shard(t, base_cfg, 0)
        for flag, value in VARIANTS.items():
            i = BASE_ARGV.index(flag) if flag in BASE_ARGV else len(BASE_ARGV)
            argv = BASE_ARGV[:i] + [flag, *value] + (BASE_ARGV[i + 1 + len(value) :] if flag in BASE_ARGV else [])
            if flag == "--depth":  # a depth bound that binds before the node bound
                argv[argv.index("--nodes") + 1] = "100000"
            cfg = config_from_args(parser.parse_args(argv))
            assert cfg != base_cfg, flag
            t.multipv, t.nodes, t.depth = cfg.multipv, cfg.nodes, cfg.depth
            assert _differs(generate_shard(t, cfg, 0), base), f"{flag} {value} did not change the shard"


def test_a_position_that_fails_twice_is_skipped_named_and_counted(stockfish_path, monkeypatch, caplog):
    from pdx_lightning.datagen.positions import make_teacher
    from pdx_lightning.supervised.teacher import TeacherError

    cfg = GenConfig(**{**CFG.__dict__, "shard_size": 4})
    with make_teacher(cfg) as t:
        real, calls = t.label, []

        def flaky(board):
            calls.append(board.fen())
            if len(calls) == 2:
                raise TeacherError(f"Stockfish failed twice on FEN {board.fen()!r}")
            return real(board)

        monkeypatch.setattr(t, "label", flaky)
        with caplog.at_level("ERROR"):
            shard = generate_shard(t, cfg, 0)
    assert len(shard) == 4 and shard.meta["skipped_positions"] == 1
    assert calls[1] in caplog.text and calls[1] not in [b.fen() for b in shard.boards()]
