"""Bounded reading of files that users fetch from strangers (the package's lowest layer).

Every reader of a compressed or self-describing file checks a bound *before* it allocates:
decompression streams with a cap and a compression-ratio check, zip archives are checked member by
member (declared sizes against the cap and against the file's own length, compression ratio) and
``.npy`` members by their header (shape x dtype) before a byte of data is read; torch files are
first unpickled onto the meta device (no tensor data read) and every tensor's extent checked; text
streams are read line by line with a line-length limit. A violation raises
:class:`FileLimitError`: one line naming the file, what is wrong, the limit, and how to raise it
when the file is legitimate. Nothing here imports the rest of pdx.

The limits, each overridable by an environment variable, are listed in :data:`LIMITS`.
"""

from __future__ import annotations

import bz2
import io
import lzma
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from pdx_lightning.errors import UserError

GiB = 1 << 30
MiB = 1 << 20
CHUNK = 1 << 20


class FileLimitError(UserError, ValueError):
    """A file that exceeds a reading bound or lies about its sizes (refused before allocating)."""

    def __init__(self, path: str | os.PathLike, problem: str, limit: str | None = None, override: str | None = None):
        self.path, self.problem, self.limit, self.override = str(path), problem, limit, override
        msg = f"{path}: {problem}"
        if limit:
            msg += f" (limit {limit})"
        if override:
            msg += f"; if the file is legitimate, {override}"
        Exception.__init__(self, msg)  # not super(): subclasses also derive from errors with other signatures


class LimitSettingError(UserError, ValueError):
    """An environment variable that should hold a limit but does not parse as one."""


def human(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def env_limit(name: str, default: int) -> int:
    """A limit overridable by the environment variable ``name`` (a count or bytes, K/M/G suffixes
    meaning powers of 1024); LimitSettingError for a value that is not a positive number."""
    raw = os.environ.get(name)
    if not raw:
        return default
    s = raw.strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 1024, "M": MiB, "G": GiB}.get(s[-1:], 1)
    try:
        value = int(float(s[:-1] if mult > 1 else s) * mult)
    except (ValueError, OverflowError):
        raise LimitSettingError(f"${name}={raw!r}: expected a number such as 8G, 500M or 100000") from None
    if value <= 0:
        raise LimitSettingError(f"${name}={raw!r}: must be positive")
    return value


@dataclass(frozen=True)
class Limit:
    """A reading bound: its environment variable, default and what it bounds."""

    env: str
    default: int
    what: str
    unit: str = "bytes"  # or "count" / "ratio"

    def value(self) -> int:
        return env_limit(self.env, self.default)

    def shown(self, value: int | None = None) -> str:
        v = self.value() if value is None else value
        return human(v) if self.unit == "bytes" else f"{v:,}" + ("x" if self.unit == "ratio" else "")

    def override(self) -> str:
        example = (
            human(2 * self.value()).replace(".0 ", "").replace(" ", "").replace("iB", "")
            if self.unit == "bytes"
            else str(2 * self.value())
        )
        return f"raise it with {self.env}={example}"


# Every bound pdx applies to files it reads (the README's reliability table lists them).
NET_BYTES = Limit(
    "PDX_MAX_NET_BYTES",
    2 * GiB,
    "decompressed size of an Lc0 .pb.gz (BT4, the largest supported, is 0.37 GB at 16 bits)",
)
CHECKPOINT_BYTES = Limit(
    "PDX_MAX_CHECKPOINT_BYTES",
    8 * GiB,
    "content of a .pt network file or .ckpt checkpoint (a BT4 fine-tuning checkpoint: ~3.7 GB)",
)
COMPRESSION_RATIO = Limit(
    "PDX_MAX_COMPRESSION_RATIO",
    200,
    "decompressed/compressed size of any compressed file past its first MiB "
    "(Lc0 networks ~1.4x, puzzle CSVs ~3x, shard members <30x)",
    unit="ratio",
)
SUITE_BYTES = Limit("PDX_MAX_SUITE_BYTES", 16 * GiB, "decompressed size of a .csv.zst puzzle suite")
ZSTD_WINDOW = Limit(
    "PDX_MAX_ZSTD_WINDOW", 128 * MiB, "zstd window (decoder memory) of a .zst file (zstd's default limit; --long=27)"
)
LINE_BYTES = Limit("PDX_MAX_LINE_BYTES", 64 * 1024, "one line of a CSV, EPD or PGN file (characters)")
PGN_GAME_BYTES = Limit("PDX_MAX_PGN_GAME_BYTES", 256 * 1024, "one game of a PGN opening file (characters)")
OPENINGS = Limit("PDX_MAX_OPENINGS", 100_000, "openings in one opening file (~1.8 KB of memory each)", unit="count")
OPENING_PLIES = Limit(
    "PDX_MAX_OPENING_PLIES", 500_000, "moves read from one opening file (~0.6 KB of memory each)", unit="count"
)
SHARD_BYTES = Limit(
    "PDX_MAX_SHARD_BYTES",
    GiB,
    "arrays of one .npz position shard (by their .npy headers; read by supervised/shards.py)",
)
CONFIG_BYTES = Limit("PDX_MAX_CONFIG_BYTES", MiB, "one YAML/JSON config file (the shipped ones are < 4 KiB)")
CONFIG_NODES = Limit(
    "PDX_MAX_CONFIG_NODES",
    100_000,
    "YAML nodes of one config with its aliases expanded (a 342-byte file of nested anchors expands to 10^9)",
    unit="count",
)
LIMITS = (
    NET_BYTES,
    CHECKPOINT_BYTES,
    COMPRESSION_RATIO,
    SUITE_BYTES,
    ZSTD_WINDOW,
    LINE_BYTES,
    PGN_GAME_BYTES,
    OPENINGS,
    OPENING_PLIES,
    SHARD_BYTES,
    CONFIG_BYTES,
    CONFIG_NODES,
)
MAX_CONFIG_DEPTH = 200  # nesting of one YAML config (PyYAML composes and constructs recursively)
RATIO_AFTER = MiB  # output below this is never refused for its compression ratio
MAX_ZIP_MEMBERS = 200_000
MAX_OBJECTS = 10_000_000  # objects a torch file's pickle may expand to (counting shared ones each time)


RATIO_WINDOW = 8 * MiB  # and no stretch of this much output may expand more either (a bomb appended)


class _RatioGuard:
    """Refuses a decompression whose output outgrows its input more than ``max_ratio`` times: over
    the whole stream once past :data:`RATIO_AFTER`, and over every stretch of :data:`RATIO_WINDOW`
    output (so a bomb appended to a legitimate file is caught after a few MiB, not after
    ``max_ratio`` x the legitimate part)."""

    def __init__(self, path, max_ratio: float | None, error: type[FileLimitError]) -> None:
        self.path, self.max_ratio, self.error = path, max_ratio, error
        self.out0 = self.in0 = 0

    def check(self, out: int, consumed: int) -> None:
        r = self.max_ratio
        if r is None:
            return
        if out > RATIO_AFTER and out > r * max(consumed, 1):
            self._refuse(consumed, out)
        if out - self.out0 >= RATIO_WINDOW:
            if out - self.out0 > r * max(consumed - self.in0, 1):
                self._refuse(consumed - self.in0, out - self.out0, " in one stretch")
            self.out0, self.in0 = out, consumed

    def _refuse(self, din: int, dout: int, where: str = "") -> None:
        raise self.error(
            self.path,
            f"expands more than {self.max_ratio:.0f}x{where} ({human(din)} -> {human(dout)}): a decompression bomb",
            f"{self.max_ratio:.0f}x",
            COMPRESSION_RATIO.override(),
        )


def gunzip_bounded(
    path: str | os.PathLike,
    max_bytes: int,
    override: str | None = None,
    *,
    max_ratio: float | None = None,
    error: type[FileLimitError] = FileLimitError,
) -> bytearray:
    """The decompressed content of a gzip (or zlib) file, streamed; refused past ``max_bytes`` or
    when it expands more than ``max_ratio`` times (default :data:`COMPRESSION_RATIO`; zeros compress
    ~1000x), overall past the first MiB or over any 8 MiB stretch (:class:`_RatioGuard`).
    (The gzip trailer's size field is not trusted: padded or concatenated files are legal.)"""
    guard = _RatioGuard(path, COMPRESSION_RATIO.value() if max_ratio is None else max_ratio, error)
    d = zlib.decompressobj(wbits=47)  # gzip or zlib header, auto-detected
    out = bytearray()
    consumed = 0
    with open(path, "rb") as f:
        chunk = b""
        while True:
            if not chunk:
                chunk = f.read(CHUNK)
                consumed += len(chunk)
                if not chunk:
                    if not d.eof:  # output zlib still holds (at most its 32 KiB window)
                        out += d.flush()
                    break
            if d.eof:  # another gzip member follows (concatenated files), or zero padding
                if not chunk.strip(b"\0"):
                    chunk = b""
                    continue
                d = zlib.decompressobj(wbits=47)
            try:
                out += d.decompress(chunk, min(max_bytes + 1 - len(out), 4 * CHUNK))  # ratio checked often
            except zlib.error as e:
                raise error(path, f"truncated or corrupt gzip stream ({e})") from None
            if len(out) > max_bytes:
                raise error(path, "decompresses to more than the limit", human(max_bytes), override)
            chunk = d.unconsumed_tail or d.unused_data
            guard.check(len(out), consumed - len(chunk))
    if not d.eof:
        raise error(path, "truncated or corrupt gzip stream (the download or copy did not finish?)")
    return out


def _zip_entry_count(path) -> int | None:
    zip_private: Any = zipfile  # _EndRecData and _ECD_ENTRIES_TOTAL are CPython's private helpers: not in typeshed
    try:
        with open(path, "rb") as f:
            end = zip_private._EndRecData(f)  # the end-of-central-directory record (zip64-aware)
    except Exception:  # noqa: BLE001  (a pre-check only: zipfile reports an unreadable archive itself)
        return None
    return None if not end else int(end[zip_private._ECD_ENTRIES_TOTAL])


def check_zip(
    path: str | os.PathLike,
    max_total: int,
    max_ratio: float | None = None,
    override: str | None = None,
    *,
    error: type[FileLimitError] = FileLimitError,
    what: str = "zip archive",
) -> list[zipfile.ZipInfo]:
    """Members of a zip archive whose declared sizes fit ``max_total`` and the file itself and whose
    compression ratio (each member's past 1 MiB, and all compressed members' together) stays
    within ``max_ratio`` (default :data:`COMPRESSION_RATIO`); a zip bomb or a lying directory is
    refused before anything is inflated (and a directory of absurdly many members before it is
    parsed)."""
    max_ratio = COMPRESSION_RATIO.value() if max_ratio is None else max_ratio
    n = _zip_entry_count(path)
    if n is not None and n > MAX_ZIP_MEMBERS:
        raise error(path, f"declares {n:,} zip members", f"{MAX_ZIP_MEMBERS:,}")
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        raise error(path, f"not a readable {what} ({e}; truncated or not that kind of file?)") from None
    size = os.path.getsize(path)
    total = packed_in = packed_out = 0
    for info in infos:
        total += info.file_size
        if total > max_total:
            raise error(path, f"declares {human(total)}+ of content", human(max_total), override)
        if info.header_offset + info.compress_size > size:
            raise error(
                path,
                f"member {info.filename!r} claims {human(info.compress_size)} at offset "
                f"{info.header_offset:,}, past the end of the {human(size)} file (truncated?)",
            )
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise error(
                path,
                f"stored member {info.filename!r} declares {info.file_size:,} bytes but "
                f"holds {info.compress_size:,}: a lying zip directory",
            )
        if info.compress_type != zipfile.ZIP_STORED:
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > MiB and ratio > max_ratio:
                raise error(
                    path,
                    f"member {info.filename!r} expands {ratio:.0f}x "
                    f"({human(info.compress_size)} -> {human(info.file_size)}): a zip bomb",
                    f"{max_ratio:.0f}x",
                    COMPRESSION_RATIO.override(),
                )
            packed_in, packed_out = packed_in + info.compress_size, packed_out + info.file_size
    if packed_out > RATIO_AFTER and packed_out > max_ratio * max(packed_in, 1):
        raise error(
            path,
            f"its compressed members expand {packed_out / max(packed_in, 1):.0f}x together "
            f"({human(packed_in)} -> {human(packed_out)}): a zip bomb",
            f"{max_ratio:.0f}x",
            COMPRESSION_RATIO.override(),
        )
    return infos


def _read_exact(stream, n: int, path, what: str) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(min(CHUNK, n - len(buf)))
        if not chunk:
            raise FileLimitError(path, f"{what}: data ends early ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def load_npz_bounded(
    path: str | os.PathLike, max_bytes: int, override: str | None = None, names: set[str] | None = None
) -> dict[str, np.ndarray]:
    """Arrays of an ``.npz`` (no pickles), each checked by its ``.npy`` header before allocation.

    The sum of the arrays' sizes (shape x itemsize, from the headers) must stay within ``max_bytes``;
    object dtypes are refused; each member's stream is read for exactly the declared size."""
    infos = check_zip(path, max_total=max_bytes + 64 * MiB, override=override, what=".npz (zip) archive")
    out: dict[str, np.ndarray] = {}
    budget = max_bytes
    with zipfile.ZipFile(path) as zf:
        for info in infos:
            name = info.filename.removesuffix(".npy")
            if names is not None and name not in names:
                continue
            with zf.open(info) as raw:
                stream = io.BufferedReader(cast(zipfile.ZipExtFile, raw), CHUNK)  # what ZipFile.open returns
                try:
                    version = np.lib.format.read_magic(stream)
                    shape, fortran, dtype = (
                        np.lib.format.read_array_header_1_0(stream)
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0(stream)
                    )
                except Exception as e:  # noqa: BLE001  (numpy parses header text: ValueError, TokenError...)
                    raise FileLimitError(
                        path, f"member {info.filename!r} is not a .npy array ({type(e).__name__}: {e})"
                    ) from None
                if any(d < 0 for d in shape):
                    raise FileLimitError(path, f"member {info.filename!r} declares a negative shape {shape}")
                if dtype.hasobject:
                    raise FileLimitError(path, f"member {info.filename!r} holds Python objects (refused)")
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > budget:
                    raise FileLimitError(
                        path,
                        f"member {info.filename!r} declares shape {shape} of {dtype} ({human(nbytes)})",
                        human(max_bytes),
                        override,
                    )
                budget -= nbytes
                try:
                    data = _read_exact(stream, nbytes, path, f"member {info.filename!r}")
                except (zipfile.BadZipFile, zlib.error, EOFError) as e:
                    raise FileLimitError(path, f"member {info.filename!r} is corrupt ({e})") from None
            arr = np.frombuffer(data, dtype=dtype)
            out[name] = arr.reshape(shape, order="F" if fortran else "C")
    return out


# ---------------------------------------------------------------- streams


class BoundedLines:
    """The lines of a text stream, each at most ``max_line`` characters, read on demand.

    Use it wherever a line reader would otherwise read an unbounded line into memory: as an
    iterator (``csv.reader(BoundedLines(...))``) or through :meth:`readline` (``chess.pgn``).
    ``line_no`` is the number of lines read so far; ``chars`` the characters read so far."""

    def __init__(
        self,
        stream,
        path: str | os.PathLike,
        max_line: int | None = None,
        *,
        error: type[FileLimitError] = FileLimitError,
    ) -> None:
        self.stream, self.path, self.error = stream, str(path), error
        self.max_line = LINE_BYTES.value() if max_line is None else max_line
        self.line_no = 0
        self.chars = 0

    def readline(self, size: int = -1) -> str:
        line = self.stream.readline(self.max_line + 1)
        if len(line) > self.max_line and not line.endswith(("\n", "\r")):
            raise self.error(
                f"{self.path}:{self.line_no + 1}",
                f"a line longer than {self.max_line:,} characters",
                f"{self.max_line:,}",
                LINE_BYTES.override(),
            )
        if line:
            self.line_no += 1
            self.chars += len(line)
        return line

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


class PgnGameLines(BoundedLines):
    """PGN lines with the per-game length bound (``PGN_GAME_BYTES``) on top of the line bound: call
    ``start()`` before each game; ``game_line`` is the line where the game's first non-blank line was
    read (what error messages name). ``unread(line)`` hands the last line read back to the next
    game (a reader that found it begins another game). Both PGN readers (openings, human games)
    read through it."""

    def __init__(self, stream, path: str | os.PathLike, *, error: type[FileLimitError] = FileLimitError) -> None:
        super().__init__(stream, path, error=error)
        self.max_game = PGN_GAME_BYTES.value()
        self.game_chars = self.game_line = 0
        self.returned: str | None = None

    def start(self) -> None:
        self.game_chars = self.game_line = 0

    def unread(self, line: str) -> None:
        """The next ``readline`` returns ``line`` again (``line_no`` stays that line's number)."""
        self.returned = line

    def readline(self, size: int = -1) -> str:
        if self.returned is not None:
            line, self.returned = self.returned, None
        else:
            line = super().readline(size)
        self.game_chars += len(line)
        if not self.game_line and line.strip():
            self.game_line = self.line_no
        if self.game_chars > self.max_game:
            raise self.error(
                f"{self.path}:{self.game_line or self.line_no}",
                f"a PGN game longer than {self.max_game:,} characters",
                PGN_GAME_BYTES.shown(self.max_game),
                PGN_GAME_BYTES.override(),
            )
        return line


ZSTD_INPUT = 512  # compressed bytes per zstd call: at most ~22 MB of output each (zstd expands <= ~43,000x)


class _DecodedStream(io.RawIOBase):
    """A decoder's output as a raw binary stream: ``readinto`` hands out ``pending`` and asks
    ``_more`` (the subclass's bounded decoding step) for the next block; ``close`` closes the source ``f``."""

    f: io.BufferedReader
    pending: memoryview

    def readable(self) -> bool:
        return True

    def _more(self) -> bool:
        raise NotImplementedError

    def readinto(self, b) -> int:
        while not self.pending:
            if not self._more():
                return 0
        n = min(len(b), len(self.pending))
        b[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def close(self) -> None:
        try:
            self.f.close()
        finally:
            super().close()


class _ZstdReader(_DecodedStream):
    """The decompressed content of a zstandard file as a raw binary stream, fed to the decoder a few
    hundred bytes at a time so no single call can produce a large block; counts what it yields and
    refuses past ``max_bytes`` or ``max_ratio``; a file that ends inside a frame is refused as
    truncated (zstandard's own stream reader returns the partial content silently)."""

    def __init__(self, path, dctx, max_bytes: int, max_ratio: float | None, error: type[FileLimitError]):
        self.path, self.dctx, self.error = path, dctx, error
        self.max_bytes, self.guard = max_bytes, _RatioGuard(path, max_ratio, error)
        import zstandard  # noqa: PLC0415  (only readers of .zst files need it)

        self.zstd_error = zstandard.ZstdError
        self.f = open(path, "rb")  # noqa: SIM115  (the stream's source; closed by close())
        self.d = dctx.decompressobj()
        self.pending = memoryview(b"")
        self.tail = b""
        self.consumed = self.out = 0
        self.in_frame = False

    def _more(self) -> bool:
        chunk = self.tail or self.f.read(ZSTD_INPUT)
        self.consumed += 0 if self.tail else len(chunk)
        self.tail = b""
        if not chunk:
            if self.in_frame:
                raise self.error(self.path, "truncated zstd stream (the download or copy did not finish?)")
            return False
        if self.d.eof:  # the next frame (multi-frame files: pzstd, concatenation)
            self.d = self.dctx.decompressobj()
        try:
            data = self.d.decompress(chunk)
        except self.zstd_error as e:  # a damaged frame, trailing garbage, a later frame's window past the limit
            raise self.error(self.path, f"corrupt zstd stream at compressed byte ~{self.consumed:,} ({e})") from None
        self.in_frame = not self.d.eof
        if self.d.eof:
            self.tail = self.d.unused_data
        self.out += len(data)
        if self.out > self.max_bytes:
            raise self.error(
                self.path, "decompresses to more than the limit", human(self.max_bytes), SUITE_BYTES.override()
            )
        self.guard.check(self.out, self.consumed)
        self.pending = memoryview(data)
        return True


def open_zstd_bounded(
    path: str | os.PathLike,
    max_bytes: int | None = None,
    *,
    max_window: int | None = None,
    max_ratio: float | None = None,
    error: type[FileLimitError] = FileLimitError,
) -> io.BufferedReader:
    """A binary stream of a zstandard file's content, decompressed as it is read: refused when it
    exceeds ``max_bytes`` (default :data:`SUITE_BYTES`) or ``max_ratio`` (:class:`_RatioGuard`), when a
    frame needs a window (decoder memory) above ``max_window`` (default :data:`ZSTD_WINDOW`), or
    when it ends inside a frame (truncated)."""
    import zstandard  # noqa: PLC0415  (only readers of .zst files need it)

    max_bytes = SUITE_BYTES.value() if max_bytes is None else max_bytes
    max_window = ZSTD_WINDOW.value() if max_window is None else max_window
    max_ratio = COMPRESSION_RATIO.value() if max_ratio is None else max_ratio
    with open(path, "rb") as f:
        head = f.read(18)
    try:
        params = zstandard.get_frame_parameters(head)
    except zstandard.ZstdError as e:
        raise error(path, f"not a zstandard file ({e})") from None
    if params.window_size > max_window:
        raise error(
            path,
            f"its zstd frame needs a {human(params.window_size)} decoding window",
            human(max_window),
            ZSTD_WINDOW.override(),
        )
    dctx = zstandard.ZstdDecompressor(max_window_size=max_window)  # guards the later frames too
    return io.BufferedReader(_ZstdReader(path, dctx, max_bytes, max_ratio, error), CHUNK)


# Leading bytes of the compressed formats a user may hand pdx as a text file (:func:`compression_of`).
MAGIC: tuple[tuple[str, bytes], ...] = (
    ("zstd", b"\x28\xb5\x2f\xfd"),
    ("gzip", b"\x1f\x8b"),
    ("bzip2", b"BZh"),
    ("xz", b"\xfd7zXZ\x00"),
    ("zip", b"PK\x03\x04"),
)


def compression_of(path: str | os.PathLike) -> str | None:
    """The compressed format a file's first bytes name (:data:`MAGIC`), None for anything else
    (plain text). A bzip2 file is recognised by its stream header and first block (or empty-stream)
    marker, not by ``BZh`` alone, which a text file may begin with."""
    with open(path, "rb") as f:
        head = f.read(10)
    for kind, magic in MAGIC:
        if head.startswith(magic):
            if kind == "bzip2" and not (
                head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90")  # block / end-of-stream magic
            ):
                continue
            return kind
    return None


class _Inflate:
    """One gzip member through zlib (which checks its header and CRC), output capped per call."""

    def __init__(self) -> None:
        self.d = zlib.decompressobj(wbits=31)
        self.tail, self.full = b"", False

    @property
    def eof(self) -> bool:
        return self.d.eof

    @property
    def unused(self) -> bytes:
        return self.d.unused_data

    def wants_input(self) -> bool:  # no input held back and no output pending from the last capped call
        return not self.tail and not self.full

    def step(self, data: bytes, cap: int) -> bytes:
        out = self.d.decompress(self.tail + data, cap)
        self.tail, self.full = self.d.unconsumed_tail, len(out) == cap
        return out


class _Bunzip:
    """One bzip2 stream, output capped per call (a few bytes of bzip2 can stand for ~45 MB)."""

    def __init__(self) -> None:
        self.d = bz2.BZ2Decompressor()

    @property
    def eof(self) -> bool:
        return self.d.eof

    @property
    def unused(self) -> bytes:
        return self.d.unused_data

    def wants_input(self) -> bool:
        return self.d.needs_input

    def step(self, data: bytes, cap: int) -> bytes:
        return self.d.decompress(data, cap)


class _Unxz(_Bunzip):
    """One xz stream, output capped per call (the match records' saved games, ``*.pgn.xz``)."""

    def __init__(self) -> None:
        self.d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)  # type: ignore[assignment]


_CODECS: dict[str, type[_Inflate] | type[_Bunzip]] = {"gzip": _Inflate, "bzip2": _Bunzip, "xz": _Unxz}


class _StreamReader(_DecodedStream):
    """A gzip or bzip2 file's content as a raw binary stream, with the bounds of :class:`_ZstdReader`:
    at most :data:`CHUNK` of output per decoder call, refused past ``max_bytes`` or ``max_ratio``,
    and a file that ends inside a member/stream refused as truncated. Concatenated members or
    streams (``pigz``, ``pbzip2``, ``cat``) are read in turn; zero padding after a gzip member is
    skipped (gzip allows it); anything else after the last one is refused as corrupt, where the
    standard library's bzip2 reader would drop it in silence."""

    def __init__(self, path, kind: str, max_bytes: int, max_ratio: float | None, error: type[FileLimitError]):
        self.path, self.kind, self.new, self.error = path, kind, _CODECS[kind], error
        self.max_bytes, self.guard = max_bytes, _RatioGuard(path, max_ratio, error)
        self.f = open(path, "rb")  # noqa: SIM115  (the stream's source; closed by close())
        self.codec: _Inflate | _Bunzip | None = None
        self.rest = b""  # input read past the end of the last member/stream
        self.pending = memoryview(b"")
        self.consumed = self.out = 0

    def _read(self) -> bytes:
        data = self.f.read(64 * 1024)
        self.consumed += len(data)
        return data

    def _more(self) -> bool:
        while True:
            if self.codec is None or self.codec.eof:
                if self.codec is not None:
                    self.rest, self.codec = self.codec.unused + self.rest, None
                if self.kind == "gzip":
                    self.rest = self.rest.lstrip(b"\0")
                if not self.rest:
                    self.rest = self._read()
                    if not self.rest:
                        return False  # the end, between members
                    continue
                self.codec, data, self.rest = self.new(), self.rest, b""
            elif self.codec.wants_input():
                data = self._read()
                if not data:
                    raise self.error(self.path, f"truncated {self.kind} stream (the download or copy did not finish?)")
            else:
                data = b""
            try:
                out = self.codec.step(data, CHUNK)
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as e:  # bz2: OSError("Invalid data")
                raise self.error(
                    self.path, f"corrupt {self.kind} stream at compressed byte ~{self.consumed:,} ({e})"
                ) from None
            self.out += len(out)
            if self.out > self.max_bytes:
                raise self.error(
                    self.path, "decompresses to more than the limit", human(self.max_bytes), SUITE_BYTES.override()
                )
            self.guard.check(self.out, self.consumed - len(self.rest))
            if out:
                self.pending = memoryview(out)
                return True


def open_decompressed(
    path: str | os.PathLike,
    kind: str,
    max_bytes: int | None = None,
    *,
    max_ratio: float | None = None,
    error: type[FileLimitError] = FileLimitError,
) -> io.BufferedReader:
    """A binary stream of a ``kind`` (``zstd``, ``gzip``, ``bzip2`` or ``xz``: :func:`compression_of`) file's
    content, decompressed as it is read under the bounds of :func:`open_zstd_bounded` (size
    ``max_bytes``, default :data:`SUITE_BYTES`; ratio; truncation; a corrupt stream is one
    ``error`` line)."""
    if kind == "zstd":
        return open_zstd_bounded(path, max_bytes, max_ratio=max_ratio, error=error)
    max_bytes = SUITE_BYTES.value() if max_bytes is None else max_bytes
    max_ratio = COMPRESSION_RATIO.value() if max_ratio is None else max_ratio
    return io.BufferedReader(_StreamReader(path, kind, max_bytes, max_ratio, error), CHUNK)


# ---------------------------------------------------------------- torch files


def _children(o) -> list:
    if isinstance(o, dict):
        return [*o.keys(), *o.values()]
    if isinstance(o, (list, tuple, set, frozenset)):
        return list(o)
    return []


def check_torch_structure(
    obj: Any,
    path: str | os.PathLike,
    max_bytes: int,
    override: str | None = None,
    *,
    error: type[FileLimitError] = FileLimitError,
    max_objects: int = MAX_OBJECTS,
) -> int:
    """Check what a torch file unpickles to (loaded on the meta device: shapes, no data) before it is
    loaded for real; returns the bytes its tensors hold.

    Refused: a storage claiming more than ``max_bytes``, a tensor that claims more elements than
    its storage holds (an expanded, stride-0
    view: a 1 KB file can describe a 40 GB tensor that a later ``isfinite`` or ``clone`` would
    allocate), tensors summing past ``max_bytes``, a structure that refers to itself or expands
    (counting shared objects each time they are reached) to more than ``max_objects`` objects,
    and sparse or other non-strided tensors (network weights are dense)."""
    import torch  # noqa: PLC0415

    sizes: dict[int, int] = {}
    path_ids: set[int] = set()
    total = 0
    stack: list[tuple[Any, bool]] = [(obj, False)]
    while stack:
        o, done = stack.pop()
        i = id(o)
        if done:
            path_ids.discard(i)
            s = 1 + sum(sizes[id(c)] for c in _children(o))
            if s > max_objects:
                raise error(
                    path,
                    f"its contents expand to more than {max_objects:,} objects (shared references nested on purpose?)",
                    f"{max_objects:,}",
                )
            sizes[i] = s
            continue
        if i in sizes:
            continue
        if isinstance(o, torch.Tensor):
            if o.layout != torch.strided:
                raise error(path, f"holds a {o.layout} tensor of shape {tuple(o.shape)} (pdx stores dense tensors)")
            logical = o.numel() * o.element_size()
            held = o.untyped_storage().nbytes()
            if held > max_bytes:
                raise error(path, f"holds a tensor whose storage claims {human(held)}", human(max_bytes), override)
            if logical > held:
                raise error(
                    path,
                    f"holds a tensor of shape {tuple(o.shape)} ({human(logical)}) over "
                    f"a {human(held)} storage: an expanded view, refused before anything "
                    f"allocates it (save tensors with .contiguous())",
                )
            total += logical
            if total > max_bytes:
                raise error(path, f"its tensors hold {human(total)}+", human(max_bytes), override)
            sizes[i] = 1
            continue
        children = _children(o)
        if not children:
            sizes[i] = 1
            continue
        if i in path_ids:
            raise error(path, "its contents refer to themselves (a cyclic structure; not a checkpoint)")
        path_ids.add(i)
        stack.append((o, True))
        stack.extend((c, False) for c in children)
    return total


def load_torch_bounded(
    path: str | os.PathLike,
    max_bytes: int | None = None,
    override: str | None = None,
    *,
    error: type[FileLimitError] = FileLimitError,
    mmap: bool = False,
) -> Any:
    """``torch.load(path, weights_only=True)`` after checking the file cannot make it allocate
    unbounded memory: the zip (``check_zip``: declared sizes within ``max_bytes`` (default
    :data:`CHECKPOINT_BYTES`) and the file, no bombs; the legacy non-zip format, whose reader
    allocates storages at their declared sizes, is refused), then its pickle unpickled onto the
    meta device and checked (``check_torch_structure``). Limit violations raise ``error`` (a
    FileLimitError); anything torch itself refuses (pickled code, corrupt records) propagates."""
    import torch  # noqa: PLC0415

    if max_bytes is None:
        max_bytes = CHECKPOINT_BYTES.value()
        override = override or CHECKPOINT_BYTES.override()
    check_zip(
        path,
        max_total=max_bytes,
        override=override,
        error=error,
        what="PyTorch file (torch.save writes zip archives since PyTorch 1.6)",
    )
    meta = torch.load(path, map_location="meta", weights_only=True)
    check_torch_structure(meta, path, max_bytes, override, error=error)
    del meta
    return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)


# ---------------------------------------------------------------- YAML configs


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what no text config holds (YAML refuses them too)


def check_yaml_text(text: str, source: str | os.PathLike, *, syntax: bool = True) -> None:
    """Refuse a YAML (or JSON) document before it is composed or constructed: more than
    :data:`CONFIG_BYTES` characters, NUL or other binary control characters, nesting deeper than
    :data:`MAX_CONFIG_DEPTH`, or more than :data:`CONFIG_NODES` nodes once its aliases are expanded
    (the "billion laughs": anchors nested in anchors, a few hundred bytes that expand to 10^9 nodes;
    PyYAML shares aliased objects, but every consumer that walks or copies the config pays them all).

    The document is read as a stream of parser events (PyYAML's parser keeps no tree), so this costs
    a constant amount of memory whatever the input; each anchor's expanded size is recorded when its
    node ends and an alias adds it. A syntax error raises :class:`FileLimitError` with PyYAML's
    position (``syntax=False``: a document that is not YAML passes, for a reader that takes plain text
    too)."""
    import yaml  # noqa: PLC0415  (only config readers need it)

    max_chars, max_nodes = CONFIG_BYTES.value(), CONFIG_NODES.value()
    if len(text) > max_chars:
        raise FileLimitError(
            source, f"a config of {human(len(text))}", CONFIG_BYTES.shown(max_chars), CONFIG_BYTES.override()
        )
    if _CONTROL.search(text):
        raise FileLimitError(source, "not a text YAML config (binary or control characters)")
    sizes: dict[str, int] = {}  # anchor -> expanded nodes of its (finished) node
    stack: list[list] = []  # open collections: [expanded nodes so far, anchor]
    expanded = 0
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.DocumentStartEvent):
                sizes.clear()
                continue
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in sizes:  # an alias inside its own anchor: a cycle (or undefined)
                    raise FileLimitError(
                        source, f"alias *{event.anchor} refers to a node that contains it or is undefined"
                    )
                n = sizes[event.anchor]
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                stack.append([1, event.anchor])
                expanded += 1
                if len(stack) > MAX_CONFIG_DEPTH:
                    raise FileLimitError(source, f"nested deeper than {MAX_CONFIG_DEPTH} levels")
                continue
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                n, anchor = stack.pop()
                if anchor is not None:
                    sizes[anchor] = n
                if stack:
                    stack[-1][0] += n
                continue
            elif isinstance(event, yaml.ScalarEvent):
                n = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            else:
                continue
            expanded += n
            if stack:
                stack[-1][0] += n
            if expanded > max_nodes:
                raise FileLimitError(
                    source,
                    f"its YAML expands to more than {max_nodes:,} nodes through aliases (nested anchors?)",
                    CONFIG_NODES.shown(max_nodes),
                    CONFIG_NODES.override(),
                )
    except yaml.YAMLError as e:
        if not syntax:
            return
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise FileLimitError(source, f"not valid YAML{at}: {problem}") from None


def read_config_text(path: str | os.PathLike) -> str:
    """The text of a YAML/JSON config file, checked by :func:`check_yaml_text`; a file larger than
    :data:`CONFIG_BYTES` is refused by its size before a byte is read, bytes that are not UTF-8
    (a binary file) are refused."""
    limit = CONFIG_BYTES.value()
    try:
        size = os.stat(path).st_size
        if size > limit:
            raise FileLimitError(path, f"a config of {human(size)}", CONFIG_BYTES.shown(limit), CONFIG_BYTES.override())
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise FileLimitError(path, f"cannot read the config ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise FileLimitError(path, f"not a text YAML config (byte {e.start} is not UTF-8)") from None
    check_yaml_text(text, path)
    return text
