"""Batched single-pass evaluation: boards → masked policy log-probs and WDL probabilities."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask
from pdx_lightning.chesscore.policy import masked_log_softmax


def device_of(spec: str) -> torch.device:
    """The torch device a ``--device`` value names: ``auto`` is CUDA where available, else the CPU."""
    return torch.device(("cuda" if torch.cuda.is_available() else "cpu") if spec == "auto" else spec)


@torch.inference_mode()
def evaluate(
    model: torch.nn.Module,
    x: torch.Tensor | np.ndarray,
    mask: torch.Tensor,
    micro_batch: int = 512,
    to_cpu: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log π (B, 4288) with -inf off the legal moves, WDL probs (B, 3))`` in micro-batches, on the CPU
    (``to_cpu=False``: left on the model's device, as self-play keeps them)."""
    x = torch.as_tensor(x)
    device = next(model.parameters()).device
    logp, wdl = [], []
    for i in range(0, x.shape[0], micro_batch):
        out = model(x[i : i + micro_batch].to(device))
        lp = masked_log_softmax(out.policy.float(), mask[i : i + micro_batch].to(device))
        w = torch.softmax(out.wdl.float(), dim=-1)
        logp.append(lp.cpu() if to_cpu else lp)
        wdl.append(w.cpu() if to_cpu else w)
    if not logp:
        where = "cpu" if to_cpu else device
        return torch.empty(0, mask.shape[1], device=where), torch.empty(0, 3, device=where)
    if len(logp) == 1:
        return logp[0], wdl[0]
    return torch.cat(logp), torch.cat(wdl)


def evaluate_boards(
    model: torch.nn.Module, boards: Sequence[chess.Board], micro_batch: int = 512
) -> tuple[torch.Tensor, torch.Tensor]:
    """``evaluate`` on python-chess boards (their move stacks give the history planes)."""
    return evaluate(model, torch.from_numpy(encode_boards(boards)), legal_mask(boards), micro_batch)
