"""Bounded readers refuse bombs, lying headers and giant lines before allocating (peak RSS measured)."""

from __future__ import annotations

import gzip
import io
import json
import zipfile

import numpy as np
import pytest

from hostile_files import gzip_of_zeros, peak_rss_mb, zstd_of_zeros
from pdx_lightning.errors import UserError
from pdx_lightning.files.safeio import (
    LIMITS,
    BoundedLines,
    FileLimitError,
    LimitSettingError,
    MiB,
    check_zip,
    env_limit,
    gunzip_bounded,
    load_npz_bounded,
    load_torch_bounded,
    open_zstd_bounded,
)


def _gzip_of_zeros(path, n_bytes):
    """A gzip file of ``n_bytes`` zeros (about n/1000 bytes on disk), written in milliseconds."""
    return gzip_of_zeros(path, n_bytes)


def _peak_rss_mb(code: str) -> tuple[int, float, str]:
    """Run ``code`` in a fresh interpreter; its exit code, peak RSS (MB, VmHWM) and stderr."""
    rc, peak, _, err = peak_rss_mb(code)
    return rc, peak, err


def test_gunzip_roundtrip_and_truncation(tmp_path):
    p = tmp_path / "a.gz"
    p.write_bytes(gzip.compress(b"hello" * 100))
    assert gunzip_bounded(p, 1000) == b"hello" * 100
    p.write_bytes(gzip.compress(b"hello" * 100)[:-12])
    with pytest.raises(FileLimitError, match="truncated"):
        gunzip_bounded(p, 1000)


def test_gzip_bomb_refused_with_bounded_memory(tmp_path):
    bomb = tmp_path / "bomb.pb.gz"
    _gzip_of_zeros(bomb, 1024 * MiB)  # 1 GiB of zeros, ~1 MB on disk
    assert bomb.stat().st_size < 2 * MiB
    code = (
        f"from pdx_lightning.files.safeio import gunzip_bounded, FileLimitError\n"
        f"try:\n    gunzip_bounded({str(bomb)!r}, 64 << 20, 'raise it')\nexcept FileLimitError as e:\n"
        f"    print(e)\n"
    )
    rc, peak, err = _peak_rss_mb(code)
    assert rc == 0, err
    assert peak < 64 + 200, f"peak RSS {peak:.0f} MB"


def _npz_with_member(path, name, payload: bytes, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compress) as zf:
        zf.writestr(name, payload)


def test_npz_roundtrip(tmp_path):
    p = tmp_path / "ok.npz"
    np.savez_compressed(p, a=np.arange(10, dtype=np.int16), meta=np.array(json.dumps({"x": 1})))
    z = load_npz_bounded(p, MiB)
    assert z["a"].tolist() == list(range(10)) and json.loads(str(z["meta"])) == {"x": 1}


def test_npz_lying_header_refused_before_allocation(tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
    p = tmp_path / "liar.npz"
    _npz_with_member(p, "wdl.npy", buf.getvalue() + b"\0" * 64)
    with pytest.raises(FileLimitError, match=r"declares shape \(1000000000000,\).*limit 1.0 MiB.*legitimate, X"):
        load_npz_bounded(p, MiB, override="X")


def test_npz_truncated_member_and_objects_refused(tmp_path):
    p = tmp_path / "short.npz"
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<i4", "fortran_order": False, "shape": (100,)})
    _npz_with_member(p, "a.npy", buf.getvalue() + b"\0" * 10)
    with pytest.raises(FileLimitError, match="ends early"):
        load_npz_bounded(p, MiB)
    p2 = tmp_path / "obj.npz"
    np.savez(p2, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(FileLimitError, match="Python objects"):
        load_npz_bounded(p2, MiB)


def test_npz_zip_bomb_refused_with_bounded_memory(tmp_path):
    p = tmp_path / "bomb.npz"
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "|u1", "fortran_order": False, "shape": (512 * MiB,)})
    with (
        zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf,
        zf.open("game.npy", "w", force_zip64=True) as f,
    ):
        f.write(buf.getvalue())
        for _ in range(512):
            f.write(bytes(MiB))
    assert p.stat().st_size < 4 * MiB
    code = (
        f"from pdx_lightning.files.safeio import load_npz_bounded, FileLimitError\n"
        f"try:\n    load_npz_bounded({str(p)!r}, 1 << 30)\nexcept FileLimitError as e:\n    print(e)\n"
        f"else:\n    raise SystemExit('not refused')\n"
    )
    rc, peak, err = _peak_rss_mb(code)
    assert rc == 0, err
    assert peak < 200, f"peak RSS {peak:.0f} MB"


def test_env_limit(monkeypatch):
    monkeypatch.setenv("PDX_TEST_LIMIT", "3G")
    assert env_limit("PDX_TEST_LIMIT", 1) == 3 << 30
    monkeypatch.setenv("PDX_TEST_LIMIT", "500M")
    assert env_limit("PDX_TEST_LIMIT", 1) == 500 << 20
    monkeypatch.setenv("PDX_TEST_LIMIT", "lots")
    with pytest.raises(LimitSettingError, match="PDX_TEST_LIMIT"):  # a UserError: one line from pdx
        env_limit("PDX_TEST_LIMIT", 1)
    monkeypatch.setenv("PDX_TEST_LIMIT", "1e400")
    with pytest.raises(LimitSettingError):
        env_limit("PDX_TEST_LIMIT", 1)
    monkeypatch.delenv("PDX_TEST_LIMIT")
    assert env_limit("PDX_TEST_LIMIT", 7) == 7


def test_shard_reader_refuses_a_lying_shard_by_name(tmp_path):
    from pdx_lightning.supervised.shards import CorruptShard, load_shard

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<u8", "fortran_order": False, "shape": (1 << 40,)})
    p = tmp_path / "shard_00000.npz"
    _npz_with_member(p, "key.npy", buf.getvalue())
    with pytest.raises(CorruptShard, match=r"shard_00000.npz.*declares shape.*PDX_MAX_SHARD_BYTES"):
        load_shard(p)


# ---------------------------------------------------------------- wave 2: ratio, zstd, lines, torch files


def test_every_limit_is_a_user_error_with_an_env_override(monkeypatch):
    assert issubclass(FileLimitError, UserError) and issubclass(LimitSettingError, UserError)
    names = [lim.env for lim in LIMITS]
    assert len(set(names)) == len(names) and all(n.startswith("PDX_MAX_") for n in names)
    for lim in LIMITS:
        assert lim.value() == lim.default and lim.env in lim.override()
        monkeypatch.setenv(lim.env, lim.override().split("=")[1])  # the advice given parses and doubles
        assert lim.value() == 2 * lim.default
        monkeypatch.delenv(lim.env)


def test_gzip_concatenated_members_and_padding_read_garbage_refused(tmp_path):
    p = tmp_path / "m.gz"
    p.write_bytes(gzip.compress(b"abc" * 100) + gzip.compress(b"xyz") + bytes(64))
    assert gunzip_bounded(p, MiB) == b"abc" * 100 + b"xyz"
    p.write_bytes(gzip.compress(b"abc") + b"junk")
    with pytest.raises(FileLimitError, match="corrupt gzip"):
        gunzip_bounded(p, MiB)


def test_gzip_ratio_refuses_a_bomb_after_a_mib_and_passes_incompressible_data(tmp_path):
    bomb = _gzip_of_zeros(tmp_path / "z.gz", 64 * MiB)
    with pytest.raises(FileLimitError, match=r"expands more than 200x.*PDX_MAX_COMPRESSION_RATIO=400"):
        gunzip_bounded(bomb, 1 << 30)
    assert len(gunzip_bounded(bomb, 1 << 30, max_ratio=10_000)) == 64 * MiB  # the override works
    p = tmp_path / "r.gz"
    p.write_bytes(gzip.compress(np.random.default_rng(0).bytes(20 * MiB), 1))
    assert len(gunzip_bounded(p, 1 << 30)) == 20 * MiB
    cat = tmp_path / "cat.gz"  # a bomb appended to 20 MiB of legitimate data:
    cat.write_bytes(p.read_bytes() + _gzip_of_zeros(tmp_path / "z2.gz", 1 << 30).read_bytes())
    with pytest.raises(FileLimitError, match=r"expands more than 200x in one stretch .* -> 8.0 MiB"):
        gunzip_bounded(cat, 1 << 32)  # caught within 8 MiB, not after 200 x 20 MiB


def test_zip_members_small_enough_to_pass_alone_are_refused_together(tmp_path):
    p = tmp_path / "many.zip"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i in range(40):
            zf.writestr(f"data/{i}", bytes(MiB))  # 1 MiB each: under the per-member threshold
    with pytest.raises(FileLimitError, match=r"compressed members expand \d+x together .* a zip bomb"):
        check_zip(p, max_total=1 << 40)


def test_zstd_bounded_reader(tmp_path):
    import zstandard

    text = b"".join(b"row %d,some,text\n" % i for i in range(100_000))
    p = tmp_path / "a.zst"
    frame = zstandard.ZstdCompressor(level=3).compress(text)
    p.write_bytes(frame + zstandard.ZstdCompressor().compress(b"tail\n"))  # two frames: both read
    assert open_zstd_bounded(p).read() == text + b"tail\n"
    with pytest.raises(FileLimitError, match="decompresses to more than the limit"):
        open_zstd_bounded(p, max_bytes=1000).read()
    p.write_bytes(frame[: len(frame) // 2])
    with pytest.raises(FileLimitError, match="truncated zstd"):
        open_zstd_bounded(p).read()
    p.write_bytes(b"PK\3\4 not zstd at all")
    with pytest.raises(FileLimitError, match="not a zstandard file"):
        open_zstd_bounded(p)
    p.write_bytes(zstandard.ZstdCompressor(level=3).compress(text))
    with pytest.raises(FileLimitError, match=r"decoding window.*PDX_MAX_ZSTD_WINDOW"):
        open_zstd_bounded(p, max_window=64 * 1024)
    zstd_of_zeros(p, 256 * MiB)
    with pytest.raises(FileLimitError, match="a decompression bomb"):
        open_zstd_bounded(p).read()


def test_bounded_lines(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("ab\ncd\n" + "x" * 100 + "\n")
    with open(p) as f:
        lines = BoundedLines(f, p, max_line=50)
        assert [next(lines), lines.readline()] == ["ab\n", "cd\n"] and lines.line_no == 2
        with pytest.raises(FileLimitError, match=r"t.txt:3: a line longer than 50.*PDX_MAX_LINE_BYTES"):
            next(lines)
    p.write_text("x" * 50)  # exactly the limit, no newline: fine
    with open(p) as f:
        assert list(BoundedLines(f, p, max_line=50)) == ["x" * 50]


def test_check_zip_refuses_lying_directories_and_member_floods(tmp_path):
    p = tmp_path / "a.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("data/0", b"\1" * 1000)
    raw = bytearray(p.read_bytes())
    cd = raw.rindex(b"PK\1\2")
    raw[cd + 20 : cd + 28] = (10**9).to_bytes(4, "little") * 2  # central directory: 1 GB member
    p.write_bytes(bytes(raw))
    with pytest.raises(FileLimitError, match="past the end of the"):
        check_zip(p, max_total=1 << 40)
    raw[cd + 20 : cd + 24] = (1000).to_bytes(4, "little")  # stored, sizes disagree
    p.write_bytes(bytes(raw))
    with pytest.raises(FileLimitError, match="lying zip directory"):
        check_zip(p, max_total=1 << 40)
    raw = bytearray(p.read_bytes())
    eocd = raw.rindex(b"PK\5\6")
    raw[eocd + 8 : eocd + 12] = (60_000).to_bytes(2, "little") * 2  # claims 60,000 members
    p.write_bytes(bytes(raw))
    import pdx_lightning.files.safeio as S

    old, S.MAX_ZIP_MEMBERS = S.MAX_ZIP_MEMBERS, 50_000
    try:
        with pytest.raises(FileLimitError, match="declares 60,000 zip members"):
            check_zip(p, max_total=1 << 40)
    finally:
        S.MAX_ZIP_MEMBERS = old


def test_torch_files_expanded_views_cycles_and_legacy_format_refused(tmp_path):
    import torch

    p = tmp_path / "ok.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3).t(), "n": [1, "x"]}, p)
    blob = load_torch_bounded(p)
    assert blob["w"].shape == (3, 2) and blob["n"] == [1, "x"]
    torch.save({"w": torch.zeros(1).expand(100_000, 100_000)}, p)  # 1.5 KB file, 40 GB tensor
    with pytest.raises(FileLimitError, match=r"shape \(100000, 100000\).*expanded view"):
        load_torch_bounded(p)
    nested: list = []
    for _ in range(40):  # 2**40 objects when expanded
        nested = [nested, nested]
    torch.save(nested, p)
    with pytest.raises(FileLimitError, match="expand to more than"):
        load_torch_bounded(p)
    torch.save({"w": torch.ones(300, 300)}, p)
    with pytest.raises(FileLimitError, match="declares 351.*KiB.*limit 100.0 KiB.*X"):
        load_torch_bounded(p, max_bytes=100 * 1024, override="X")
    torch.save({"w": torch.ones(3)}, p, _use_new_zipfile_serialization=False)
    with pytest.raises(FileLimitError, match="not a readable PyTorch file"):
        load_torch_bounded(p)
