"""Crash-safe file writes: a reader sees the old file or the new one, never a torn one.

:func:`atomic_write` is the one way pdx replaces a file (checkpoints, exported networks, shards,
suites, JSON records). It writes a temporary file with a unique name *in the target's directory*
(``os.replace`` is atomic only within one file system), flushes and fsyncs it, ``os.replace``\\ s it
over the target and fsyncs the directory so the rename itself survives a power loss. If the writer
raises, the temporary file is removed and the target is untouched. A process killed mid-write leaves
its temporary file (``.NAME.TAG-PID-XXXXXXXX``, hidden and never matching a reader's glob);
:func:`remove_stale_temps` clears those of other processes. Nothing here imports the rest of pdx:
every layer may use it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_write_text", "remove_stale_temps", "temp_prefix"]


def temp_prefix(path: str | os.PathLike, tag: str = "tmp") -> str:
    """The name prefix of ``path``'s temporary files: ``.NAME.TAG-`` (the PID and a random part follow)."""
    return f".{Path(path).name}.{tag}-"


def remove_stale_temps(path: str | os.PathLike, tag: str = "tmp") -> list[Path]:
    """Remove the temporary files of ``path`` left by other (killed) processes; returns them.

    This process's own are kept: one may be open in an enclosing :func:`atomic_write`."""
    path = Path(path)
    prefix, own = temp_prefix(path, tag), f"{temp_prefix(path, tag)}{os.getpid()}-"
    removed = []
    for stale in path.parent.glob(glob_escape(prefix) + "*"):
        if not stale.name.startswith(own):
            stale.unlink(missing_ok=True)
            removed.append(stale)
    return removed


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters quoted (checkpoint names such as ``epoch=0-step=4[a].ckpt``)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make a rename in ``directory`` durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems (and all of Windows) refuse fsync on a directory: nothing to do
        pass
    finally:
        os.close(fd)


def _create_temp(path: Path, tag: str) -> tuple[int, str]:
    """A new, empty temporary file next to ``path``, unique per call (``O_EXCL``) and carrying the PID so
    that :func:`remove_stale_temps` can tell whose it is. Not ``tempfile.mkstemp``: that creates mode
    0600, and a replaced network or checkpoint would lose the permissions the umask gives every other
    file (a shared ``runs/`` directory); here the mode is 0666 less the umask, as with ``open``."""
    prefix = f"{temp_prefix(path, tag)}{os.getpid()}-"
    for _ in range(100):
        name = os.path.join(path.parent, prefix + secrets.token_hex(4))
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name {prefix}* in {str(path.parent)!r}")


@contextmanager
def atomic_write(
    path: str | os.PathLike,
    mode: str = "wb",
    *,
    tag: str = "tmp",
    encoding: str | None = None,
    newline: str | None = None,
) -> Iterator[IO]:
    """Open a temporary file next to ``path`` for writing; on a clean exit it replaces ``path``.

    ``mode`` is ``"wb"`` or ``"w"`` (text: ``encoding`` defaults to UTF-8, ``newline`` as for
    :func:`open`). The parent directory is created. On an exception inside the block the temporary
    file is closed and removed, ``path`` keeps its old content (or stays absent) and the exception
    propagates. ``tag`` names the temporary file (:func:`temp_prefix`)."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', not {mode!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path, tag)
    os.close(fd)  # reopened by name: the file object's ``name`` is then the path (tracebacks, tests)
    try:
        f = open(tmp, mode, encoding=encoding or "utf-8", newline=newline) if mode == "w" else open(tmp, "wb")  # noqa: SIM115  (closed by the with below)
    except BaseException:
        os.unlink(tmp)
        raise
    try:
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """``Path(path).write_text(text)`` through :func:`atomic_write` (records, reports, configs)."""
    with atomic_write(path, "w", encoding=encoding) as f:
        f.write(text)
