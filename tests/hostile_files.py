"""Crafted hostile files and a peak-memory probe, shared by the ``test_hostile_*`` tests, test_safeio.py
and ``soak_fuzz_readers.py`` (importable because pytest puts ``tests/`` on ``sys.path`` for its
conftest; the soak script adds it itself).

Bombs are written in a few milliseconds however large they decompress: one deflate (or zstd)
block of zeros is compressed once and repeated.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

MiB = 1 << 20
GiB = 1 << 30
VENV_BIN = Path(sys.executable).parent

_ZEROS = bytes(MiB)


def _deflate_zero_blocks(n_mib: int) -> tuple[bytes, int]:
    """Raw deflate of ``n_mib`` MiB of zeros (one full-flushed block repeated) and its CRC-32."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(_ZEROS) + c.flush(zlib.Z_FULL_FLUSH)
    tail = c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(n_mib):
        crc = zlib.crc32(_ZEROS, crc)
    return block * n_mib + tail, crc


def gzip_of_zeros(path: str | os.PathLike, n_bytes: int) -> Path:
    """A valid gzip file of ``n_bytes`` zeros (whole MiB), about n/1000 bytes on disk."""
    n_mib = n_bytes // MiB
    body, crc = _deflate_zero_blocks(n_mib)
    path = Path(path)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        f.write(body)
        f.write(struct.pack("<II", crc, (n_mib * MiB) & 0xFFFFFFFF))
    return path


def zip_with_member(path: str | os.PathLike, members: dict[str, bytes], deflate: bool = False) -> Path:
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return Path(path)


def zip_bomb_member(path: str | os.PathLike, name: str, n_bytes: int, others: dict[str, bytes] | None = None) -> Path:
    """A zip whose member ``name`` is ``n_bytes`` zeros (whole MiB, < 4 GiB) deflated ~1000x, after
    ``others`` (stored), with honest sizes and CRCs: only its compression ratio gives it away.
    Written by hand (zipfile would have to compress the zeros: seconds per GiB)."""
    entries: list[tuple[bytes, bytes, int, int, int]] = []  # name, data, method, crc, size
    for k, v in (others or {}).items():
        entries.append((k.encode(), v, 0, zlib.crc32(v), len(v)))
    body, crc = _deflate_zero_blocks(n_bytes // MiB)
    entries.append((name.encode(), body, 8, crc, n_bytes // MiB * MiB))
    out, central = bytearray(), bytearray()
    for fname, data, method, crc, size in entries:
        offset = len(out)
        out += (
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(data), size, len(fname), 0)
            + fname
            + data
        )
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(fname),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + fname
        )
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(out), 0)
    Path(path).write_bytes(bytes(out))
    return Path(path)


def zstd_of_zeros(path: str | os.PathLike, n_bytes: int, byte: bytes = b"\0", prefix: bytes = b"") -> Path:
    """A zstd file of ``prefix`` and ``n_bytes`` copies of ``byte`` (a few KB on disk per GiB)."""
    import zstandard

    c = zstandard.ZstdCompressor(level=1)
    with open(path, "wb") as f, c.stream_writer(f, closefd=False) as w:
        w.write(prefix)
        block = byte * MiB
        for _ in range(n_bytes // MiB):
            w.write(block)
    return Path(path)


_PEAK = (
    "\nimport atexit as _a\n_a.register(lambda: print('VMHWM', next(int(l.split()[1]) for l in "
    "open('/proc/self/status') if l.startswith('VmHWM')) / 1024, flush=True))\n"
)


def peak_rss_mb(code: str, env: dict | None = None, timeout: float = 300) -> tuple[int, float, str, str]:
    """Run ``code`` in a fresh interpreter: exit code, peak RSS in MB (VmHWM: this process image's
    peak; ru_maxrss would carry the forking pytest process's peak over exec), stdout, stderr."""
    r = subprocess.run(
        [sys.executable, "-c", _PEAK + code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("VMHWM ")]
    peak = float(lines[-1].split()[1]) if lines else float("nan")
    out = "\n".join(ln for ln in r.stdout.splitlines() if not ln.startswith("VMHWM "))
    return r.returncode, peak, out, r.stderr


def refusal_peak_mb(call: str, error: str, env: dict | None = None, imports: str = "") -> tuple[float, str]:
    """Run ``call`` (Python source) in a fresh interpreter, require that it raises ``error`` (a name
    bound by ``imports``), and return the peak RSS in MB and the error message."""
    code = (
        f"{imports}\ntry:\n    {call}\nexcept {error} as e:\n    print('REFUSED', e)\n"
        f"else:\n    raise SystemExit('not refused')\n"
    )
    rc, peak, out, err = peak_rss_mb(code, env)
    assert rc == 0 and "REFUSED" in out, f"rc={rc}\nstdout={out}\nstderr={err[-3000:]}"
    return peak, out.split("REFUSED ", 1)[1].strip()


def baseline_peak_mb(imports: str) -> float:
    """Peak RSS of a fresh interpreter that only runs ``imports`` (what a refusal adds is above it)."""
    rc, peak, _, err = peak_rss_mb(imports)
    assert rc == 0, err
    return peak


def run_pdx(args: list[str], env: dict | None = None, timeout: float = 600) -> tuple[int, float, str]:
    """The real ``pdx`` console script as a subprocess: exit code, its peak RSS in MB (ru_maxrss of
    the child, measured by a small wrapper process) and stderr."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
        "sys.exit(r.returncode)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", wrapper, str(VENV_BIN / "pdx"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )
    peak = float(next(ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("MAXRSS")))
    return r.returncode, peak, r.stderr
