"""Reading a checkpoint safely: ``weights_only=True``, memory-mapped, bounded first; one-line errors."""

from __future__ import annotations

import glob
import os
import zipfile
import zlib
from pathlib import Path

from pdx_lightning.files.safeio import FileLimitError, load_torch_bounded
from pdx_lightning.nets import ModelLoadError


class CheckpointLoadError(ModelLoadError):
    """A checkpoint that cannot be loaded safely (missing, truncated, or carrying a pickled object)."""


class CheckpointLimitError(FileLimitError, CheckpointLoadError):
    """A checkpoint refused by a reading bound (``safeio.load_torch_bounded``) before it is loaded."""


class CheckpointCorruptError(CheckpointLoadError):
    """A checkpoint whose zip is intact but one of its records does not match its checksum (damaged
    after it was written: a disk, a copy, a partial overwrite)."""


_VERIFIED: set[tuple[str, int, int]] = set()  # (file, size, mtime_ns) whose records all matched


def verify_records(path: str | os.PathLike) -> None:
    """Read every record of the checkpoint's zip and compare it with its CRC-32 (``ZipFile.testzip``),
    or raise :class:`CheckpointCorruptError` naming the first bad one.

    ``read_checkpoint`` memory-maps the tensors, so a damaged tensor record would otherwise pass it
    and fail later, inside Lightning's own load, with a traceback. Reading costs one pass over the
    file (about a second per GB); a file verified unchanged (size, mtime) is not read again."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key in _VERIFIED:
        return
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
        raise CheckpointCorruptError(f"checkpoint {str(path)!r} cannot be read as a zip archive ({e})") from None
    if bad is not None:
        raise CheckpointCorruptError(
            f"checkpoint {str(path)!r} is damaged: its record {bad!r} does not match its CRC-32 checksum"
        )
    _VERIFIED.add(key)


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Load a checkpoint with ``weights_only=True`` (memory-mapped), or raise :class:`CheckpointLoadError`.

    The file is bounded first (``safeio.load_torch_bounded``: the zip's declared sizes within
    ``$PDX_MAX_CHECKPOINT_BYTES`` and the file, no zip bombs, tensor extents checked on the meta
    device); a refusal is a :class:`CheckpointLimitError`. Then every record is checked against its
    checksum (:func:`verify_records`); a damaged one is a :class:`CheckpointCorruptError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointLoadError(f"checkpoint {str(path)!r} not found")
    try:
        blob = load_torch_bounded(path, error=CheckpointLimitError, mmap=True)
        verify_records(path)
        return blob
    except Exception as e:  # (pickle payloads, truncation, not a torch file, a damaged record)
        others = sorted((p for p in glob.glob(str(path.parent / "*.ckpt")) if Path(p) != path), key=os.path.getmtime)
        hint = f"; the newest other checkpoint there is {others[-1]!r}" if others else ""
        if not isinstance(e, (FileLimitError, CheckpointCorruptError)):
            try:  # torch's own error on a damaged record says little; the checksum names the record
                verify_records(path)
            except CheckpointCorruptError as damaged:
                e = damaged
        if isinstance(e, CheckpointCorruptError):
            raise CheckpointCorruptError(f"{e}{hint}") from None
        if isinstance(e, FileLimitError):
            err = CheckpointLimitError(e.path, e.problem, e.limit, e.override)
            err.args = (f"{err}{hint}",)
            raise err from None
        raise CheckpointLoadError(
            f"checkpoint {str(path)!r} cannot be loaded safely with weights_only=True "
            f"({type(e).__name__}: {str(e).splitlines()[0][:300]}){hint}"
        ) from e
