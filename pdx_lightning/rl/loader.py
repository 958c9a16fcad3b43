"""What the trainers' DataLoaders share: the collate of datasets whose items are already whole batches."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def collate_whole(batch: T) -> T:
    """The DataLoader's collate: each dataset item is already a whole batch (a module-level function, so
    that ``ddp_spawn`` can pickle the loader)."""
    return batch
