"""Bounded readers refuse bombs, lying headers and giant lines before allocating (peak RSS measured)."""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest

from pdx_lightning.safeio import (MiB, FileLimitError, env_limit, gunzip_bounded, load_npz_bounded,
                                  text_lines_bounded)


def _gzip_of_zeros(path, n_bytes):
    """A gzip file of ``n_bytes`` zeros (about n/1000 bytes on disk), written in a streaming way."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MiB)
    with open(path, "wb") as f:
        for _ in range(n_bytes // MiB):
            f.write(c.compress(block))
        f.write(c.flush())


def _peak_rss_mb(code: str) -> tuple[int, float, str]:
    """Run ``code`` in a fresh interpreter; its exit code, peak RSS (MB) and stderr."""
    # VmHWM: this process image's peak RSS (ru_maxrss would carry the forking pytest process's peak over exec)
    wrapped = code + ("\nprint(next(int(l.split()[1]) for l in open('/proc/self/status') "
                      "if l.startswith('VmHWM')) / 1024)")
    r = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True)
    return r.returncode, float(r.stdout.strip().splitlines()[-1]), r.stderr


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
    code = (f"from pdx_lightning.safeio import gunzip_bounded, FileLimitError\n"
            f"try:\n    gunzip_bounded({str(bomb)!r}, 64 << 20, 'raise it')\nexcept FileLimitError as e:\n"
            f"    print(e)\n")
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
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("game.npy", "w", force_zip64=True) as f:
            f.write(buf.getvalue())
            for _ in range(512):
                f.write(bytes(MiB))
    assert p.stat().st_size < 4 * MiB
    code = (f"from pdx_lightning.safeio import load_npz_bounded, FileLimitError\n"
            f"try:\n    load_npz_bounded({str(p)!r}, 1 << 30)\nexcept FileLimitError as e:\n    print(e)\n"
            f"else:\n    raise SystemExit('not refused')\n")
    rc, peak, err = _peak_rss_mb(code)
    assert rc == 0, err
    assert peak < 200, f"peak RSS {peak:.0f} MB"


def test_text_lines_bounded(tmp_path):
    p = tmp_path / "a.epd"
    p.write_bytes(b"short line\n" + b"x" * 5000 + b"\nend\n")
    it = text_lines_bounded(p, max_line=1000, override="pass --max-line")
    assert next(it) == (1, "short line\n")
    with pytest.raises(FileLimitError, match=r"a.epd:2: line longer than.*--max-line"):
        next(it)
    p.write_bytes(b"a\nb\nc\n")
    with pytest.raises(FileLimitError, match="more than 2 lines"):
        list(text_lines_bounded(p, max_lines=2))
    p.write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(FileLimitError, match=r":2: not utf-8"):
        list(text_lines_bounded(p))


def test_env_limit(monkeypatch):
    monkeypatch.setenv("PDX_TEST_LIMIT", "3G")
    assert env_limit("PDX_TEST_LIMIT", 1) == 3 << 30
    monkeypatch.setenv("PDX_TEST_LIMIT", "500M")
    assert env_limit("PDX_TEST_LIMIT", 1) == 500 << 20
    monkeypatch.setenv("PDX_TEST_LIMIT", "lots")
    with pytest.raises(ValueError, match="PDX_TEST_LIMIT"):
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
