"""Output-path preflight: fail before the work starts, not when the first file is written hours later.

Every ``pdx`` command checks its outputs first (``pdx fit``/``pretrain``: the log and
checkpoint directories and the export file; the tools: ``--out``, ``--json``, ``--pgn``,
``--md``, ``--png``): the directory exists or can be created, a file can be created in it, an
existing output file is writable, and the file system has at least ``min_free`` bytes
free. A failure raises :class:`PreflightError` naming the path, the option and what to do.

The free-space floor defaults to ``DEFAULT_MIN_FREE`` (64 MiB), or ``$PDX_MIN_FREE_MB``
megabytes; ``pdx fit`` asks for room for two checkpoints (the atomic write keeps the
previous one until the new one is complete). A check at the start cannot promise the
disk stays free: a write that fails later still fails with the OS error, and checkpoint
writes never leave a truncated file behind (:mod:`pdx_lightning.runtime.checkpoint_io`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

MIB = 1 << 20
DEFAULT_MIN_FREE = 64 * MIB


class PreflightError(OSError):
    """An output path that cannot be written (unwritable, not a directory, too little free space)."""


def min_free_default() -> int:
    env = os.environ.get("PDX_MIN_FREE_MB")
    if env:
        try:
            return int(float(env) * MIB)
        except ValueError:
            raise PreflightError(f"$PDX_MIN_FREE_MB={env!r} is not a number of megabytes") from None
    return DEFAULT_MIN_FREE


def _fmt(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def check_dir(
    path: str | os.PathLike,
    *,
    what: str = "output directory",
    min_free: int | None = None,
    create: bool = True,
    keep: bool = True,
) -> Path:
    """``path`` is (or is made) a writable directory on a file system with ``min_free`` bytes free.

    ``keep=False``: directories created for the check are removed again (the command makes its output
    directory itself, once its inputs are read: a failed command leaves no empty folder behind)."""
    path = Path(path).expanduser()
    label = f"{what} {str(path)!r}"
    if path.exists() and not path.is_dir():
        raise PreflightError(f"{label} exists and is not a directory")
    if not path.exists():
        if not create:
            raise PreflightError(f"{label} does not exist")
        created = [d for d in (path, *path.parents) if not d.exists()]
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise PreflightError(f"{label} cannot be created ({e.strerror or e}); choose a writable location") from e
        if not keep:
            try:
                return _check_writable(path, label, min_free)
            finally:
                for d in created:  # deepest first; only if still empty
                    try:
                        d.rmdir()
                    except OSError:
                        break
    return _check_writable(path, label, min_free)


def _check_writable(path: Path, label: str, min_free: int | None) -> Path:
    try:  # the only reliable writability test (ACLs, read-only mounts, root squash): create a file
        fd, probe = tempfile.mkstemp(prefix=".pdx-preflight-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise PreflightError(f"{label} is not writable ({e.strerror or e}); choose a writable location") from e
    need = min_free_default() if min_free is None else min_free
    free = shutil.disk_usage(path).free
    if free < need:
        raise PreflightError(
            f"{label}: only {_fmt(free)} free on its file system, need at least "
            f"{_fmt(need)}; free some space or write elsewhere "
            f"($PDX_MIN_FREE_MB sets the floor)"
        )
    return path


def check_file(path: str | os.PathLike, *, what: str = "output file", min_free: int | None = None) -> Path:
    """``path`` can be written: its directory passes :func:`check_dir` and an existing file is writable."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise PreflightError(f"{what} {str(path)!r} is a directory, expected a file name")
    check_dir(
        path.parent if str(path.parent) else Path("."), what=f"directory of the {what} {str(path)!r}", min_free=min_free
    )
    if path.exists() and not os.access(path, os.W_OK):
        raise PreflightError(f"{what} {str(path)!r} exists and is not writable")
    return path


# Tool options that name an output, per ``pdx`` tool module: "dir" or "file". Options not
# listed default to "file" for --json/--pgn/--md/--out.
FILE_OPTIONS = ("json", "pgn", "md", "png", "out")
DIR_OPTIONS = {
    "pdx_lightning.datagen.positions": ("out",),
    "pdx_lightning.datagen.pgn": ("out",),
    "pdx_lightning.experiments.report.report_command": ("out",),
    "pdx_lightning.experiments.sweep.sweep_command": ("out_dir",),
}


def check_tool_outputs(module: str, args: object, min_free: int | None = None) -> list[Path]:
    """Preflight every output option of a parsed ``pdx`` tool command line (see ``DIR_OPTIONS``)."""
    checked = []
    dirs = DIR_OPTIONS.get(module, ())
    for opt in dict.fromkeys(FILE_OPTIONS + dirs):
        value = getattr(args, opt, None)
        if not value or not isinstance(value, (str, os.PathLike)) or value == "-":
            continue
        if opt in dirs:  # the tool creates it itself: a failed run leaves no empty directory
            what = f"--{opt.removesuffix('_dir')} directory"
            checked.append(check_dir(value, what=what, min_free=min_free, keep=False))
        else:
            checked.append(check_file(value, what=f"--{opt} file", min_free=min_free))
    return checked
