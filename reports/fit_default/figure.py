"""Learning curves of the default fine-tune, drawn from its committed scalars (``scalars.csv``).

``scalars.csv`` holds every scalar TensorBoard recorded for one run of the default command,
``pdx --threads 1 fit --config conf/fit/pdx.yaml`` (Maia-1900, forward-KL prior, β = 1e-2, 128 games ×
300 steps; ``config.yaml`` is the configuration Lightning saved), one row per step. The figure shows it
over its steps: the loss terms, the KL to the base and the policy entropy, τ and ρ, and the EMA
network's validation accuracy (scored every 50 steps, drawn as points, unsmoothed). Per-step curves are
drawn thin, with a 20-step moving average on top.

    .venv/bin/python reports/fit_default/figure.py     # writes learning_curves.png here
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

HERE = Path(__file__).resolve().parent
WINDOW = 20


def load(path: Path = HERE / "scalars.csv") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{tag: (steps, values)}`` of the steps at which each tag was logged."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    out = {}
    for tag in rows[0]:
        if tag == "step":
            continue
        pts = [(int(r["step"]), float(r[tag])) for r in rows if r[tag] != ""]
        out[tag] = (np.array([s for s, _ in pts]), np.array([v for _, v in pts]))
    return out


def _moving(v: np.ndarray, k: int = WINDOW) -> np.ndarray:
    c = np.cumsum(np.insert(v, 0, 0.0))
    head = c[1:k] / np.arange(1, k)  # the first k − 1 steps: the mean so far
    return np.concatenate([head, (c[k:] - c[:-k]) / k]) if len(v) >= k else c[1:] / np.arange(1, len(v) + 1)


def _curve(ax, data, tag: str, label: str, color: str) -> None:
    steps, v = data[tag]
    ax.plot(steps, v, color=color, lw=0.5, alpha=0.35)
    ax.plot(steps, _moving(v), color=color, lw=1.6, label=label)


def figure(data: dict[str, tuple[np.ndarray, np.ndarray]], out: Path = HERE) -> Path:
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    (loss, kl), (tau, val) = axes
    _curve(loss, data, "loss/policy", "policy term", "tab:blue")
    _curve(loss, data, "loss/explore", "exploration term (forward KL, unweighted)", "tab:green")
    twin = loss.twinx()
    _curve(twin, data, "loss/value", "value loss (right axis)", "tab:purple")
    loss.set(title="Loss terms", xlabel="step", ylabel="policy, exploration")
    twin.set_ylabel("value (nats)")
    handles = loss.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    loss.legend(handles, [h.get_label() for h in handles], fontsize=7, loc="upper left")

    _curve(kl, data, "kl/forward_to_base", "KL(π_base‖π_θ)", "tab:green")
    _curve(kl, data, "kl/reverse_to_base", "KL(π_θ‖π_base)", "tab:blue")
    ent = kl.twinx()
    _curve(ent, data, "policy/entropy", "policy entropy H(π_θ) (right axis)", "tab:gray")
    kl.set(title="The policy against the base", xlabel="step", ylabel="KL (nats)")
    ent.set_ylabel("entropy (nats)")
    handles = kl.get_legend_handles_labels()[0] + ent.get_legend_handles_labels()[0]
    kl.legend(handles, [h.get_label() for h in handles], fontsize=7, loc="lower right", framealpha=0.95)

    _curve(tau, data, "selfplay/tau_mean", "τ, mean (Eq. 5)", "tab:orange")
    _curve(tau, data, "selfplay/rho_mean", "ρ, mean (Eq. 12)", "tab:red")
    _curve(tau, data, "selfplay/rho_below_1", "share with ρ < 1", "tab:brown")
    tau.set(title="Self-play temperature and importance ratio", xlabel="step")
    tau.legend(fontsize=7, loc="lower right")

    for tag, label, color in (
        ("puzzles/acc", "tactics (sample of 78)", "tab:blue"),
        ("mates/acc_1", "mate in 1 (100)", "tab:green"),
        ("mates/acc_2", "mate in 2 (100)", "tab:red"),
    ):
        steps, v = data[tag]
        val.plot(steps, 100 * v, marker="o", color=color, label=label)
    val.set(title="Validation: EMA network's accuracy, every 50 steps", xlabel="step", ylabel="accuracy (%)")
    val.legend(fontsize=7, loc="center right")
    last = int(max(s.max() for s, _ in data.values()))
    fig.suptitle(
        f"pdx fit --config conf/fit/pdx.yaml: Maia-1900, forward-KL prior, 128 games × {last} steps "
        f"(thin: each step; thick: {WINDOW}-step mean)",
        fontsize=10,
    )
    fig.tight_layout()
    path = out / "learning_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    curves = load()
    assert all(math.isfinite(float(v.sum())) for _, v in curves.values())
    print(f"wrote {figure(curves)}")
    sys.exit(0)
