"""Reading a checkpoint safely: ``weights_only=True``, memory-mapped, bounded first; one-line errors."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from pdx_lightning.nets import ModelLoadError
from pdx_lightning.safeio import FileLimitError, load_torch_bounded


class CheckpointLoadError(ModelLoadError):
    """A checkpoint that cannot be loaded safely (missing, truncated, or carrying a pickled object)."""


class CheckpointLimitError(FileLimitError, CheckpointLoadError):
    """A checkpoint refused by a reading bound (``safeio.load_torch_bounded``) before it is loaded."""


def read_checkpoint(path: str | os.PathLike) -> dict:
    """Load a checkpoint with ``weights_only=True`` (memory-mapped), or raise :class:`CheckpointLoadError`.

    The file is bounded first (``safeio.load_torch_bounded``: the zip's declared sizes within
    ``$PDX_MAX_CHECKPOINT_BYTES`` and the file, no zip bombs, tensor extents checked on the meta
    device); a refusal is a :class:`CheckpointLimitError`."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointLoadError(f"checkpoint {str(path)!r} not found")
    try:
        return load_torch_bounded(path, error=CheckpointLimitError, mmap=True)
    except Exception as e:  # (pickle payloads, truncation, not a torch file)
        others = sorted((p for p in glob.glob(str(path.parent / "*.ckpt")) if Path(p) != path), key=os.path.getmtime)
        hint = f"; the newest other checkpoint there is {others[-1]!r}" if others else ""
        if isinstance(e, FileLimitError):
            err = CheckpointLimitError(e.path, e.problem, e.limit, e.override)
            err.args = (f"{err}{hint}",)
            raise err from None
        raise CheckpointLoadError(
            f"checkpoint {str(path)!r} cannot be loaded safely with weights_only=True "
            f"({type(e).__name__}: {str(e).splitlines()[0][:300]}){hint}"
        ) from e
