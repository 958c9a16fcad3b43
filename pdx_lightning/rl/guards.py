"""Numerical guards: a NaN or infinity stops training at once, naming the step and the tensor.

The one finiteness check of the ``rl`` layer. The step (``rl.pdx_step.pdx_step``) checks, in order,
the inputs of the step (the online network's policy and WDL logits, π_base's log-probabilities,
τ from the EMA), the stop-gradient constants that sampling produced (A, ρ, p̂), every loss
component (:func:`check_finite`) and every gradient (:func:`check_finite_gradients`), and
raises :class:`FloatingPointError` at the first non-finite value — before the optimizer step,
so the parameters (and the last checkpoint) stay finite. Log-probabilities are checked on
legal moves only: they are exactly −inf elsewhere by construction.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

Checked = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


def check_finite(step: int, tensors: Mapping[str, Checked]) -> None:
    """Raise ``FloatingPointError`` naming ``step``, the tensor and its first bad rows if a value is NaN/inf.

    ``tensors`` maps a name to a tensor (a scalar too), or to ``(tensor, mask)`` to check only
    where ``mask`` is True. Checked in the mapping's order; the first bad tensor is reported.
    """
    for name, checked in tensors.items():
        tensor, mask = checked if isinstance(checked, tuple) else (checked, None)
        t = tensor.detach()
        bad = ~torch.isfinite(t)
        if mask is not None:
            bad &= mask
        if not bool(bad.any()):
            continue
        kind = "NaN" if bool(torch.isnan(t[bad]).any()) else "inf"
        if t.dim() == 0:
            where = f"{kind} (scalar {t.item()})"
        else:
            rows = bad.reshape(bad.shape[0], -1).any(1).nonzero().flatten()[:8].tolist()
            where = f"{kind} in rows {rows} of a {tuple(t.shape)} tensor ({int(bad.sum())} values)"
        raise FloatingPointError(f"step {step}: non-finite {name}: {where}; training stopped before the optimizer step")


def check_finite_gradients(step: int, model: torch.nn.Module) -> None:
    """:func:`check_finite` on every parameter gradient of ``model``, named ``gradient in <parameter>``."""
    check_finite(step, {f"gradient in {name}": p.grad for name, p in model.named_parameters() if p.grad is not None})
