"""Numerical guards: a NaN or infinity stops training at once, naming the step and the tensor.

``PDXModule.training_step`` checks, in order, the inputs of the step (the online network's
policy and WDL logits, π_base's log-probabilities, τ from the EMA), the stop-gradient
constants that sampling produced (A, ρ, p̂), every loss component and every gradient, and
raises :class:`FloatingPointError` at the first non-finite value — before the optimizer step,
so the parameters (and the last checkpoint) stay finite. Log-probabilities are checked on
legal moves only: they are exactly −inf elsewhere by construction.
"""
from __future__ import annotations

import torch


def check_finite(step: int, tensors: dict[str, torch.Tensor | tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Raise ``FloatingPointError`` naming ``step``, the tensor and its first bad rows if a value is NaN/inf.

    ``tensors`` maps a name to a tensor, or to ``(tensor, mask)`` to check only where ``mask`` is True.
    """
    for name, t in tensors.items():
        mask = None
        if isinstance(t, tuple):
            t, mask = t
        bad = ~torch.isfinite(t)
        if mask is not None:
            bad &= mask
        if bool(bad.any()):
            rows = bad.reshape(bad.shape[0], -1).any(1).nonzero().flatten()[:8].tolist() if bad.dim() else []
            kind = "NaN" if bool(torch.isnan(t[bad]).any()) else "inf"
            raise FloatingPointError(f"step {step}: non-finite {name}: {kind} in rows {rows} of a "
                                     f"{tuple(t.shape)} tensor ({int(bad.sum())} values); training stopped "
                                     f"before the optimizer step")
