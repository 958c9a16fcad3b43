"""Bounded reading of files that users fetch from strangers (the package's lowest layer).

Every reader of a compressed or self-describing file checks a bound *before* it allocates:
decompression streams with a cap, zip archives are checked member by member (declared sizes,
compression ratio) and ``.npy`` members by their header (shape x dtype) before a byte of data is
read. A violation raises :class:`FileLimitError`: one line naming the file, what is wrong, the
limit, and how to raise it when the file is legitimate. Nothing here imports the rest of pdx.
"""
from __future__ import annotations

import io
import math
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from pdx_lightning.errors import UserError

GiB = 1 << 30
MiB = 1 << 20
CHUNK = 1 << 20


class FileLimitError(UserError, ValueError):
    """A file that exceeds a reading bound or lies about its sizes (refused before allocating)."""

    def __init__(self, path: str | os.PathLike, problem: str, limit: str | None = None,
                 override: str | None = None):
        self.path, self.problem, self.limit, self.override = str(path), problem, limit, override
        msg = f"{path}: {problem}"
        if limit:
            msg += f" (limit {limit})"
        if override:
            msg += f"; if the file is legitimate, {override}"
        super().__init__(msg)


def human(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def env_limit(name: str, default: int) -> int:
    """A byte limit overridable by the environment variable ``name`` (bytes, or with K/M/G suffix)."""
    raw = os.environ.get(name)
    if not raw:
        return default
    s = raw.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1024, "M": MiB, "G": GiB}.get(s[-1:], 1)
    try:
        value = int(float(s[:-1] if mult > 1 else s) * mult)
    except ValueError:
        raise ValueError(f"${name}={raw!r}: expected a byte count such as 8G or 500M") from None
    if value <= 0:
        raise ValueError(f"${name}={raw!r}: must be positive")
    return value


def gunzip_bounded(path: str | os.PathLike, max_bytes: int, override: str | None = None) -> bytes:
    """The decompressed content of a gzip (or zlib) file, streamed; refused past ``max_bytes``."""
    d = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
    out = bytearray()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            while chunk:
                out += d.decompress(chunk, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise FileLimitError(path, "decompresses to more than the limit", human(max_bytes), override)
                chunk = d.unconsumed_tail
            if d.eof:
                break
    if not d.eof:
        raise FileLimitError(path, "truncated gzip stream (the download or copy did not finish?)")
    return bytes(out)


def check_zip(path: str | os.PathLike, max_total: int, max_ratio: float = 200.0,
              override: str | None = None) -> list[zipfile.ZipInfo]:
    """Members of a zip archive whose declared sizes fit ``max_total`` and whose compression ratio
    is plausible; a zip bomb or a lying central directory is refused before anything is inflated."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except zipfile.BadZipFile as e:
        raise FileLimitError(path, f"not a readable zip archive ({e})") from None
    total = 0
    for info in infos:
        total += info.file_size
        if total > max_total:
            raise FileLimitError(path, f"declares {human(total)}+ of content", human(max_total), override)
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > MiB:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > max_ratio:
                raise FileLimitError(path, f"member {info.filename!r} expands {ratio:.0f}x "
                                           f"({human(info.compress_size)} -> {human(info.file_size)}): a zip bomb",
                                     f"{max_ratio:.0f}x", override)
    return infos


def _read_exact(stream, n: int, path, what: str) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(min(CHUNK, n - len(buf)))
        if not chunk:
            raise FileLimitError(path, f"{what}: data ends early ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def load_npz_bounded(path: str | os.PathLike, max_bytes: int, override: str | None = None,
                     names: set[str] | None = None) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` (no pickles), each checked by its ``.npy`` header before allocation.

    The sum of the arrays' sizes (shape x itemsize, from the headers) must stay within ``max_bytes``;
    object dtypes are refused; each member's stream is read for exactly the declared size."""
    infos = check_zip(path, max_total=max_bytes + 64 * MiB, override=override)
    out: dict[str, np.ndarray] = {}
    budget = max_bytes
    with zipfile.ZipFile(path) as zf:
        for info in infos:
            name = info.filename.removesuffix(".npy")
            if names is not None and name not in names:
                continue
            with zf.open(info) as raw:
                stream = io.BufferedReader(raw, CHUNK)
                try:
                    version = np.lib.format.read_magic(stream)
                    shape, fortran, dtype = (np.lib.format.read_array_header_1_0(stream) if version == (1, 0)
                                             else np.lib.format.read_array_header_2_0(stream))
                except ValueError as e:
                    raise FileLimitError(path, f"member {info.filename!r} is not a .npy array ({e})") from None
                if dtype.hasobject:
                    raise FileLimitError(path, f"member {info.filename!r} holds Python objects (refused)")
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > budget:
                    raise FileLimitError(path, f"member {info.filename!r} declares shape {shape} of {dtype} "
                                               f"({human(nbytes)})", human(max_bytes), override)
                budget -= nbytes
                data = _read_exact(stream, nbytes, path, f"member {info.filename!r}")
            arr = np.frombuffer(data, dtype=dtype)
            out[name] = arr.reshape(shape, order="F" if fortran else "C")
    return out


def text_lines_bounded(path: str | os.PathLike, max_line: int = 64 * 1024, max_lines: int | None = None,
                       override: str | None = None, encoding: str = "utf-8"):
    """Yield ``(line_no, line)`` of a text file, streaming; a line longer than ``max_line`` bytes or
    more than ``max_lines`` lines is refused instead of read into memory."""
    path = Path(path)
    with open(path, "rb") as f:
        for no, raw in enumerate(iter(lambda: f.readline(max_line + 1), b""), 1):
            if len(raw) > max_line and not raw.endswith(b"\n"):
                raise FileLimitError(f"{path}:{no}", f"line longer than {human(max_line)}", human(max_line),
                                     override)
            if max_lines is not None and no > max_lines:
                raise FileLimitError(path, f"more than {max_lines:,} lines", f"{max_lines:,} lines", override)
            try:
                yield no, raw.decode(encoding)
            except UnicodeDecodeError as e:
                raise FileLimitError(f"{path}:{no}", f"not {encoding} text ({e.reason})") from None
