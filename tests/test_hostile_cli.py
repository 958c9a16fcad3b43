"""Hostile files through the real ``pdx`` console script: one line on stderr, exit 2, bounded memory.

The issue's case first: ``pdx eval mates --model bomb.pb.gz`` (a 4 MB gzip of 4 GiB of zeros) held
8.7 GB for 30 s and ended in a traceback. Peaks are the child's ru_maxrss (``run_pdx``); a normal
``pdx eval mates`` on ``random:tiny`` peaks at ~400 MB here, so the bounds leave room for imports
only, far below what any of these files would make pdx allocate unchecked.
"""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import pytest
import torch

from hostile_files import GiB, MiB, gzip_of_zeros, run_pdx, zip_bomb_member, zstd_of_zeros

DATA = Path(__file__).resolve().parents[1] / "data"
PEAK_MB = 800

pytestmark = pytest.mark.slow


def _one_line(rc: int, err: str, command: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.startswith(f"pdx {command}: ")]  # export lc0 prints its own
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err[-3000:]
    assert all(n in lines[0] for n in needles), lines[0]


def test_eval_mates_refuses_the_issue_bomb_quickly_in_bounded_memory(tmp_path):
    bomb = gzip_of_zeros(tmp_path / "bomb.pb.gz", 4 * GiB)
    start = time.monotonic()
    rc, peak, err = run_pdx(["eval", "mates", "--model", str(bomb), "--suite", str(DATA / "mates_in_1.csv")])
    _one_line(rc, err, "eval mates", "bomb.pb.gz", "a decompression bomb", "PDX_MAX_COMPRESSION_RATIO=")
    assert peak < PEAK_MB and time.monotonic() - start < 120, (peak, time.monotonic() - start)


def test_export_lc0_refuses_a_zip_bomb_network_file(tmp_path):
    ok = tmp_path / "ok.pt"
    torch.save({"format": "pdx_network/1", "state_dict": {"w": torch.zeros(4)}}, ok)
    with zipfile.ZipFile(ok) as zf:
        others = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("data/0")}
        name = next(i.filename for i in zf.infolist() if i.filename.endswith("data/0"))
    bomb = zip_bomb_member(tmp_path / "net.pt", name, GiB, others=others)
    rc, peak, err = run_pdx(["export", "lc0", "--model", str(bomb), "--out", str(tmp_path / "x.pb.gz")])
    _one_line(rc, err, "export lc0", "net.pt", "a zip bomb", "PDX_MAX_COMPRESSION_RATIO=")
    assert peak < PEAK_MB and not (tmp_path / "x.pb.gz").exists()


def test_arena_refuses_an_opening_file_with_a_giant_line(tmp_path):
    p = tmp_path / "book.epd"
    with open(p, "wb") as f:
        f.write(b"e2e4 e7e5\n")
        f.truncate(GiB)  # sparse: 1 GiB of NULs, no line end
    rc, peak, err = run_pdx(["arena", "--model", "random:tiny", "--model", "random:tiny", "--openings", str(p)])
    _one_line(rc, err, "arena", "book.epd:2", "a line longer than", "PDX_MAX_LINE_BYTES=")
    assert peak < PEAK_MB


def test_eval_puzzles_refuses_a_zstd_bomb_suite(tmp_path):
    header = b"PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n"
    bomb = zstd_of_zeros(tmp_path / "s.csv.zst", GiB, b"\n", prefix=header)
    rc, peak, err = run_pdx(["eval", "puzzles", "--model", "random:tiny", "--suite", str(bomb)])
    _one_line(rc, err, "eval puzzles", "s.csv.zst", "a decompression bomb")
    assert peak < PEAK_MB


def test_fit_refuses_a_bomb_base_and_a_bomb_checkpoint(tmp_path):
    base = gzip_of_zeros(tmp_path / "base.pb.gz", GiB)
    rc, peak, err = run_pdx(["fit", "--model.base", str(base), "--trainer.max_steps", "1"])
    _one_line(rc, err, "fit", "base.pb.gz", "a decompression bomb")
    assert peak < PEAK_MB
    ok = tmp_path / "ok.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(4)}}, ok)
    with zipfile.ZipFile(ok) as zf:
        others = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("data/0")}
        name = next(i.filename for i in zf.infolist() if i.filename.endswith("data/0"))
    bomb = zip_bomb_member(tmp_path / "last.ckpt", name, GiB, others=others)
    rc, peak, err = run_pdx(["fit", "--ckpt_path", str(bomb), "--trainer.max_steps", "1"])
    _one_line(rc, err, "fit", "last.ckpt", "a zip bomb", "ok.ckpt")  # and names the other checkpoint
    assert peak < PEAK_MB


def test_pretrain_refuses_a_shard_directory_of_bombs(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    zip_bomb_member(shards / "shard_00000.npz", "key.npy", GiB)
    rc, peak, err = run_pdx(["pretrain", "--data.shards", str(shards), "--trainer.max_steps", "1"])
    _one_line(rc, err, "pretrain", "no readable shards", "shard_00000.npz", "a zip bomb")
    assert peak < PEAK_MB
    assert (shards / "shard_00000.npz").stat().st_size < 2 * MiB
