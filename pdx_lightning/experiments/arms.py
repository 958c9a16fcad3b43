"""The sweep's arms, one source for the sweep and the report.

An arm is (exploration term, self-play temperature); the sweep crosses them with the β grid, the
report shows each arm at its selected β*. The names come from where they are defined: the terms
from ``rl.objectives.EXPLORATION_TERMS`` (paper Section 3.1), the temperatures from
``rl.settings.TEMPERATURE_MODES`` (Eqs. 5-6 vs τ ≡ 1).
"""

from __future__ import annotations

from pdx_lightning.rl.objectives import EXPLORATION_TERMS
from pdx_lightning.rl.settings import TEMPERATURE_MODES

TERMS: tuple[str, ...] = tuple(EXPLORATION_TERMS)  # none, entropy, reverse_kl, forward_kl
TEMPERATURES: tuple[str, ...] = tuple(TEMPERATURE_MODES)  # adaptive, fixed
UNREGULARIZED = "none"  # β = 0: one cell per temperature
REGULARIZED: tuple[str, ...] = tuple(t for t in TERMS if t != UNREGULARIZED)
PRIOR_ANCHORED: tuple[str, ...] = ("reverse_kl", "forward_kl")  # the terms that reference π_base
CONTROL = "control"  # the supervised puzzle-tuned control's row

TERM_LABEL: dict[str, str] = {
    "none": "No regularizer",
    "entropy": "Entropy bonus",
    "reverse_kl": "Reverse-KL anchor",
    "forward_kl": "Forward-KL prior (ours)",
    CONTROL: "Puzzle-tuned control (supervised)",
}
TEMP_LABEL: dict[str | None, str] = {"adaptive": "adaptive", "fixed": "τ≡1", None: "–"}
