"""Network arithmetic: the interpolation θ_α = (1 − α)·θ_A + α·θ_B of two networks of one shape.

As Lc0's weights tools offer: α = 0 is A, α = 1 is B, α in (0, 1) lies between (a base and its
fine-tuned network: a ladder of blends for ``pdx arena``), α outside [0, 1] extrapolates
(α = 2 is B + (B − A), α = −1 is A − (B − A)). Every floating tensor of the state dict is blended
with ``torch.lerp`` (exact at α = 0 and 1, and wherever A and B agree); integer tensors (index
buffers) must be equal and are kept. ``pdx export lc0|network --blend B --alpha α`` write the result.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, cast

import torch

from pdx_lightning.errors import UserError

if TYPE_CHECKING:
    from pdx_lightning.nets.seam import NetConfig

__all__ = ["NetworkBlendError", "blend_state_dicts", "blend_networks", "check_same_shape"]


class NetworkBlendError(UserError, ValueError):
    """Two networks that cannot be blended (another family, configuration, tensor or shape), or a bad α."""


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def check_same_shape(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    """Raise :class:`NetworkBlendError` naming the first tensor (in A's order) that B lacks, has in
    another shape or dtype, or that only B has."""
    for key, ta in a.items():
        if key not in b:
            raise NetworkBlendError(f"tensor {key!r} of A {_shape(ta)} is missing in B")
        tb = b[key]
        if ta.shape != tb.shape:
            raise NetworkBlendError(f"tensor {key!r} differs in shape: A {_shape(ta)}, B {_shape(tb)}")
        if ta.dtype != tb.dtype:
            raise NetworkBlendError(f"tensor {key!r} differs in dtype: A {ta.dtype}, B {tb.dtype}")
    extra = [k for k in b if k not in a]
    if extra:
        raise NetworkBlendError(f"tensor {extra[0]!r} of B {_shape(b[extra[0]])} is missing in A")


def blend_state_dicts(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], alpha: float) -> dict[str, torch.Tensor]:
    """θ_α = (1 − α)·θ_A + α·θ_B for every floating tensor (``torch.lerp(θ_A, θ_B, α)``); integer and
    bool tensors must agree and are copied. Any finite α (extrapolation too)."""
    if not math.isfinite(alpha):
        raise NetworkBlendError(f"alpha must be a finite number, got {alpha}")
    check_same_shape(a, b)
    out = {}
    for key, ta in a.items():
        tb = b[key]
        if ta.is_floating_point():
            out[key] = torch.lerp(ta.detach(), tb.detach().to(ta.device), float(alpha))
        elif torch.equal(ta, tb.to(ta.device)):
            out[key] = ta.detach().clone()
        else:  # an index table, a counter: no meaningful blend
            raise NetworkBlendError(f"non-floating tensor {key!r} ({ta.dtype}) differs between A and B")
    return out


def _config(model: torch.nn.Module) -> tuple[str | None, dict]:
    cfg = cast("NetConfig", model.cfg)
    fields = dict(cfg.to_dict())
    fields.pop("name", None)  # a label (preset or file name), not the architecture
    return getattr(cfg, "family", None), fields


def blend_networks(a: torch.nn.Module, b: torch.nn.Module, alpha: float) -> torch.nn.Module:
    """A copy of ``a`` holding ``blend_state_dicts(a, b, alpha)``, in eval mode; ``a`` and ``b`` are
    left as they are. Refuses networks of another family or configuration (naming the first field
    that differs) and of another tensor layout (naming the first tensor)."""
    fam_a, cfg_a = _config(a)
    fam_b, cfg_b = _config(b)
    if fam_a != fam_b:
        raise NetworkBlendError(f"networks of different families: A is {fam_a}, B is {fam_b}")
    sd = blend_state_dicts(a.state_dict(), b.state_dict(), alpha)  # names the first differing tensor
    for key, value in cfg_a.items():
        if cfg_b.get(key) != value:  # same tensors, another computation (activation, head kind, ...)
            raise NetworkBlendError(f"configurations differ in {key!r}: A {value!r}, B {cfg_b.get(key)!r}")
    out = copy.deepcopy(a)
    out.load_state_dict(sd)
    return out.eval()
