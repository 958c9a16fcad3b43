"""What a fine-tuning checkpoint records about its networks, written and checked in one place.

``PDXModule`` (``pdx fit``) and ``PuzzleControl`` (the sweep's supervised control) both store:

* ``pdx_model_family`` and ``pdx_model_config``: the trained network's family and config
  (``nets.network_record``), so ``nets.load_model`` rebuilds it from the checkpoint alone;
* ``pdx_base``: the frozen base / starting network by name and file sha256 (``nets.base_reference``;
  None for ``random:``), so a resume refuses a base file that changed since the checkpoint was written.
"""

from __future__ import annotations

import torch

from pdx_lightning.nets import (
    CHECKPOINT_CONFIG_KEY,
    CHECKPOINT_FAMILY_KEY,
    ModelLoadError,
    base_reference,
    check_base_reference,
    network_record,
)
from pdx_lightning.runtime.checkpoint_read import CheckpointLoadError

__all__ = ["BASE_KEY", "BaseMismatchError", "check_base", "write_network_meta"]

BASE_KEY = "pdx_base"


class BaseMismatchError(CheckpointLoadError):
    """A checkpoint resumed against a base network whose file is not the one it was trained from."""


def write_network_meta(checkpoint: dict, online: torch.nn.Module, base_name: str) -> None:
    """Record the trained network (family, config) and the base's reference in ``checkpoint``
    (Lightning's ``on_save_checkpoint``)."""
    record = network_record(online)
    checkpoint[BASE_KEY] = base_reference(base_name)
    checkpoint[CHECKPOINT_FAMILY_KEY] = record["family"]
    checkpoint[CHECKPOINT_CONFIG_KEY] = record["config"]


def check_base(checkpoint: dict, base_name: str) -> None:
    """Raise :class:`BaseMismatchError` when ``checkpoint`` was trained from a base whose file hash
    differs from ``base_name``'s now (Lightning's ``on_load_checkpoint``). Checkpoints without a
    recorded hash (``random:`` bases, older files) pass."""
    try:
        check_base_reference(checkpoint.get(BASE_KEY), base_name)
    except ModelLoadError:
        raise
    except ValueError as e:
        raise BaseMismatchError(f"{e}: resume with the original base file, or start a new run") from None
