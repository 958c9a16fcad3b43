"""A network whose policy comes from one network and whose W/D/L from another.

Inside a search the policy is the prior over a node's moves and the W/D/L evaluates the leaves, so a
fine-tuned network's loss of strength inside search can be split between its two heads: play the
fine-tuned policy with the base's value, and the base's policy with the fine-tuned value (the arena's
``search[value=MODEL,...]:MODEL`` players, ``pdx uci --search value=MODEL``). Both networks see the same
input planes; a network composed with itself (or with an identical copy) gives its own outputs exactly.
"""

from __future__ import annotations

import torch
from torch import nn

from pdx_lightning.nets.seam import NetOutput

__all__ = ["ComposedNetwork", "compose"]


class ComposedNetwork(nn.Module):
    """``forward(x)``: the policy logits of ``policy``, the W/D/L logits (and moves left) of ``value``."""

    def __init__(self, policy: nn.Module, value: nn.Module) -> None:
        super().__init__()
        self.policy_net = policy
        self.value_net = value

    def forward(self, x: torch.Tensor) -> NetOutput:
        p = self.policy_net(x)
        if self.value_net is self.policy_net:
            return p
        v = self.value_net(x)
        return NetOutput(policy=p.policy, wdl=v.wdl, moves_left=v.moves_left)


def compose(policy: nn.Module, value: nn.Module | None) -> nn.Module:
    """``policy`` itself when there is no separate ``value`` network, else the two composed."""
    return policy if value is None else ComposedNetwork(policy, value).eval()
