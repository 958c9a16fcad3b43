"""The fine-tuning optimizer shared by the self-play module and the puzzle-tuned control.

AdamW over the network's four layerwise learning-rate groups (paper Appendix G: backbone, final
block, policy head, value head; ``nets.PARAM_GROUPS``, from the network's ``param_groups()``), with a
linear warmup from 0 to the peak rates, then constant; and the EMA target's update (Eq. 11).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import torch
from torch.optim.swa_utils import get_ema_multi_avg_fn

from pdx_lightning import argtypes
from pdx_lightning.nets import PARAM_GROUPS, Network


class LayerwiseHyperparameters(Protocol):
    """What :func:`layerwise_adamw` reads (``PDXModule``'s and ``PuzzleControl``'s hyperparameters)."""

    lr_backbone: float
    lr_final_block: float
    lr_policy_head: float
    lr_value_head: float
    adam_betas: tuple[float, float]
    weight_decay: float
    warmup_steps: int


# The help of the optimizer arguments, one text for every module that takes them (PDXModule,
# PuzzleControl): LightningCLI reads each ``__init__``'s docstring for ``--model.<name>``'s help, so
# the block is filled into those docstrings (:func:`document_optimizer_args`). The defaults stay in
# each signature: they differ (the control's rates are tenfold).
OPTIMIZER_ARGS_DOC = """\
lr_backbone: peak learning rate of the embedding and all but the last encoder block.
lr_final_block: peak learning rate of the last encoder block.
lr_policy_head: peak learning rate of the policy head.
lr_value_head: peak learning rate of the value head{value_head_note}.
warmup_steps: linear warmup from 0 to the peak rates, then constant.
adam_betas: AdamW (β1, β2).
weight_decay: AdamW weight decay."""


def document_optimizer_args(init, indent: int = 12, value_head_note: str = ""):
    """``init`` with the ``{optimizer_args}`` line of its docstring replaced by :data:`OPTIMIZER_ARGS_DOC`
    (indented by ``indent`` spaces; ``value_head_note`` is appended to the value head's line)."""
    block = OPTIMIZER_ARGS_DOC.format(value_head_note=value_head_note).replace("\n", "\n" + " " * indent)
    if "{optimizer_args}" not in (init.__doc__ or ""):
        raise ValueError(f"{init.__qualname__}'s docstring has no {{optimizer_args}} line")
    init.__doc__ = init.__doc__.replace("{optimizer_args}", block)
    return init


def layerwise_adamw(net: torch.nn.Module, hp: LayerwiseHyperparameters | Any) -> dict:
    """AdamW over the four layerwise-LR groups (Appendix G) with a linear warmup, then constant.

    Returns Lightning's ``configure_optimizers`` dict (the scheduler steps every optimizer step):
    at step ``t`` every group's rate is ``peak · min(1, (t + 1) / max(1, warmup_steps))``.
    """
    lrs = {
        "backbone": hp.lr_backbone,
        "final_block": hp.lr_final_block,
        "policy_head": hp.lr_policy_head,
        "value_head": hp.lr_value_head,
    }
    groups = cast(Network, net).param_groups()
    if unknown := sorted(set(groups) - set(PARAM_GROUPS)):
        raise ValueError(
            f"layerwise_adamw: {type(net).__name__}.param_groups() returned unknown groups "
            f"{unknown}; expected {list(PARAM_GROUPS)}"
        )
    opt = torch.optim.AdamW(
        [{"params": ps, "lr": lrs[name], "name": name} for name, ps in groups.items()],
        betas=tuple(hp.adam_betas),
        weight_decay=hp.weight_decay,
    )
    warm = max(1, hp.warmup_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
    return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


# α of Eq. 11. Four inputs set it, each checked once where it enters, against this one range:
# ``model.algorithm.ema_decay`` (PDXSettings; SearchedSelfPlaySettings for ``module: searched``), ``pdx
# pretrain``'s ``--model.ema_decay`` (PuzzleControl) and ``EMAUpdate(decay=...)``, a callback a user
# adds; the messages name the input. The settings modules stay free of torch: a test holds them equal.
EMA_DECAY_RANGE = (0.0, 1.0)


def check_ema_decay(decay: object, name: str = "ema_decay") -> float:
    """``decay`` (α of Eq. 11) as a float if it is a finite number in :data:`EMA_DECAY_RANGE`, else
    :class:`~pdx_lightning.argtypes.SettingError` (a ``ValueError``) naming ``name``."""
    argtypes.check_number(name, decay, *EMA_DECAY_RANGE)
    assert isinstance(decay, (int, float))  # checked above: a finite int or float
    return float(decay)


@torch.no_grad()
def ema_update(ema: torch.nn.Module, online: torch.nn.Module, decay: float) -> None:
    """θ̄ ← αθ̄ + (1−α)θ in place (Eq. 11), α = ``decay``: torch.optim.swa_utils' EMA math (fused ``lerp``).

    The EMA is a bootstrap target, not an evaluation-time swap, so it lives as its own network
    (Lightning's WeightAveraging, which swaps weights, does not fit). Every DDP rank applies the
    same update to identical online weights, so the EMA stays identical across ranks.
    """
    online_params = [p.detach() for p in online.parameters()]
    # num_averaged > 0 so swa_utils applies the decay (at 0 it would copy)
    get_ema_multi_avg_fn(decay)(list(ema.parameters()), online_params, torch.tensor(1, device=online_params[0].device))
