"""A policy softmax temperature baked into a network: its policy logits divided by T.

Inside a search the policy's prior is ``softmax(logits / PolicyTemperature)`` (Lc0's
``--policy-softmax-temp``, default 1.359; pdx's ``search[policy_softmax_temp=...]``). A network whose
logits are already divided by T gives, at the default setting, the prior of the undivided network at
``1.359 · T``: a user of Lc0 (or of any tool reading the file) gets the temperature without touching
an option. Maia-1900 plays far better inside pdx's 64-node search at a softer prior than Lc0's default
(``reports/search_strength``): to carry a searched temperature S into a file that Lc0 reads at its
default, bake ``T = S / 1.359``.

Every logit is linear in the weight and bias of one layer of the policy head (``policy_logit_layers``
of each family: the classic tower's last policy convolution or its fully connected layer, the
Chessformer's key projection, which feeds the q·k logits and the promotion offsets alike), so dividing
that layer's weight and bias by T divides every logit by T exactly (up to float rounding), and nothing
else in the network changes: the W/D/L, moves-left and the argmax move stay the same.
``pdx export lc0|network|onnx --policy-temperature T`` write the result.
"""

from __future__ import annotations

import copy
import math
from typing import Protocol, cast, runtime_checkable

import torch
from torch import nn

from pdx_lightning.errors import UserError

__all__ = ["PolicyTemperatureError", "bake_policy_temperature"]


@runtime_checkable
class PolicyLogitLayers(Protocol):
    """A network that names the layer(s) whose weight and bias, scaled by c, scale every policy logit by c."""

    def policy_logit_layers(self) -> list[nn.Linear | nn.Conv2d]: ...


class PolicyTemperatureError(UserError, ValueError):
    """A temperature that cannot be baked (not a positive finite number), or a network without the hook."""


def bake_policy_temperature(model: nn.Module, temperature: float) -> nn.Module:
    """A copy of ``model`` whose policy logits are ``model``'s divided by ``temperature`` (> 0), in eval
    mode; ``model`` is left as it is. ``temperature`` 1 returns an identical copy."""
    t = float(temperature)
    if not (math.isfinite(t) and t > 0):
        raise PolicyTemperatureError(f"--policy-temperature must be a positive finite number, got {temperature!r}")
    if not isinstance(model, PolicyLogitLayers):
        family = getattr(getattr(model, "cfg", None), "family", type(model).__name__)
        raise PolicyTemperatureError(
            f"a network of family {family!r} does not say which layer scales its policy logits "
            f"(no policy_logit_layers()): its temperature cannot be baked"
        )
    out = copy.deepcopy(model)
    with torch.no_grad():
        for layer in cast(PolicyLogitLayers, out).policy_logit_layers():
            layer.weight.div_(t)
            if layer.bias is not None:
                layer.bias.div_(t)
    clear_cache = getattr(out, "clear_inference_cache", None)  # the classic tower's channels-last copies
    if callable(clear_cache):
        clear_cache()
    return out.eval()
