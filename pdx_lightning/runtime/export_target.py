"""Where an exported network may go: never over a network bundled with pdx_lightning (``data/``)."""

from __future__ import annotations

import os
from pathlib import Path

from pdx_lightning.errors import UserError
from pdx_lightning.nets import DATA_DIR


class BundledOverwriteError(UserError, ValueError):
    """An export that would overwrite a network bundled with pdx_lightning (``data/``)."""


def check_export_target(
    path: str | os.PathLike, allow_bundled: bool = False, *, flag: str = "--model.overwrite_bundled true"
) -> Path:
    """Refuse an export path inside the bundled ``data/`` directory unless ``allow_bundled``.

    Overwriting ``data/base_small.pt`` changes its SHA-256, and every checkpoint fine-tuned from
    ``base:small`` is then refused by the base-hash check."""
    target = Path(path).expanduser().resolve()
    bundled = DATA_DIR.resolve()
    if not allow_bundled and (target == bundled or bundled in target.parents):
        raise BundledOverwriteError(
            f"export {str(path)!r} is inside the bundled networks' directory {str(bundled)!r}: overwriting "
            f"a bundled network breaks every checkpoint made from it (base hash check); export elsewhere "
            f"(--model.export runs/pretrain/base_small.pt) or pass {flag} to replace it knowingly"
        )
    return target
