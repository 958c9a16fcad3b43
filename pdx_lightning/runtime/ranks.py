"""This process's place in a distributed run: the one rank lookup of the package.

Self-play (which games a rank owns, its seed), the module's checkpoint hooks (every rank's games)
and the progress bars (rank 0 only) all ask here, so "which rank am I" has one answer.
"""

from __future__ import annotations

import os

import torch.distributed as dist

# the variables Lightning's rank_zero_only reads, in its order, for a process group not yet started
_RANK_VARS = ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK")


def rank_world() -> tuple[int, int]:
    """``(global rank, world size)`` of the started ``torch.distributed`` process group, else ``(0, 1)``."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def process_rank() -> int:
    """This process's global rank: the process group's if it is up, else the launcher's environment, else 0.

    The environment counts only for a process group not yet started (a launcher set ``RANK`` but
    Lightning has not called ``init_process_group``): what a progress bar before fit needs.
    """
    if dist.is_available() and dist.is_initialized():
        return rank_world()[0]
    for name in _RANK_VARS:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 0
