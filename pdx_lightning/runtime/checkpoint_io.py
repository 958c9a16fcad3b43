"""Lightning's checkpoint writer, made atomic on local disks (:func:`pdx_lightning.files.atomicfile.atomic_write`).

Lightning's own write (``_atomic_save``) goes through an fsspec transaction whose temporary file lives
in the *system* temp directory; when that is another file system than the checkpoint directory (a
tmpfs ``/tmp``, a cluster's scratch or NFS checkpoint directory) the final move is a copy *into*
``last.ckpt``, and a ``kill -9`` during that copy leaves a truncated ``last.ckpt`` that breaks
``--ckpt_path last``; it also holds the whole checkpoint in memory twice and leaves the temp file
behind on a kill. :class:`AtomicCheckpointIO` writes ``.NAME.partial-PID-XXXXXXXX`` next to the
target, fsyncs it, ``os.replace``\\ s it over the target (atomic on POSIX) and fsyncs the directory,
so a reader sees the old checkpoint or the new one, never a torn one. Leftover partial files of
killed runs are removed on the next save.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.cloud_io import get_filesystem
from lightning.pytorch.plugins.io import TorchCheckpointIO

from pdx_lightning.files.atomicfile import atomic_write, remove_stale_temps

PARTIAL = "partial"  # the temporary files' tag: .last.ckpt.partial-PID-XXXXXXXX (the crash soak looks for it)


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written; the previous file at that path is intact."""


class AtomicCheckpointIO(TorchCheckpointIO):
    """``torch.save`` through :func:`~pdx_lightning.files.atomicfile.atomic_write` on local file systems."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        if storage_options is not None:
            raise TypeError("AtomicCheckpointIO does not take storage_options")
        fs = get_filesystem(path)
        if "file" not in (fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)):
            return super().save_checkpoint(checkpoint, path)  # object stores: Lightning's transaction
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path, PARTIAL)  # left by a killed writer
        try:
            with atomic_write(path, tag=PARTIAL) as f:
                torch.save(checkpoint, f)
        except OSError as e:
            raise CheckpointWriteError(
                f"writing checkpoint {str(path)!r} failed ({e.strerror or e}); "
                f"the previous file at that path, if any, is intact"
            ) from e
