"""Aggregates over training runs (seeds) as the RL literature reports them: mean, interquartile mean and
probability of improvement, each with a bootstrap 95% interval over the runs.

The definitions are rliable's (Agarwal et al., 2021, "Deep Reinforcement Learning at the Edge of the
Statistical Precipice"), computed with scipy:

* **IQM**: the mean of the middle 50% of the runs' scores, ``scipy.stats.trim_mean(x, 0.25)`` (rliable's
  ``aggregate_iqm`` is that call). With 8 runs it is the mean of the middle 4.
* **Probability of improvement** P(X > Y): the probability that a run of X scores above a run of Y, the
  Mann–Whitney U statistic over every pair of runs divided by the number of pairs (ties count ½;
  rliable's ``probability_of_improvement`` for one task). Against a single fixed reference y (the frozen
  base, or 0 for a difference from it), it is the share of X's runs above y.
* **Intervals**: rliable's stratified bootstrap, whose strata are tasks with runs resampled within each.
  Every metric here is one task, so it is the plain percentile bootstrap over runs
  (``scipy.stats.bootstrap``; for P(X > Y), X's and Y's runs resampled independently, as rliable's
  ``StratifiedIndependentBootstrap``). Only the runs are resampled, not the puzzles or games inside a
  run: that within-run noise is :mod:`pdx_lightning.evaluation.replicates`'s two-level bootstrap.

Why not rliable itself: see :mod:`pdx_lightning.evaluation.replicates` (a source-only distribution that
pulls ten packages, ``arch`` compiled among them, for these three formulas).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as _st

N_RESAMPLES = 2000


def iqm(scores: Sequence[float] | np.ndarray, axis: int = -1) -> np.ndarray | float:
    """Interquartile mean of ``scores`` along ``axis`` (rliable's ``aggregate_iqm``)."""
    return _st.trim_mean(np.asarray(scores, dtype=np.float64), 0.25, axis=axis)


def probability_of_improvement(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, axis: int = -1
) -> np.ndarray | float:
    """P(X > Y): the share of (x_i, y_j) pairs with x_i > y_j, ties counting ½ (Mann–Whitney U / (n·m))."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    u = _st.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic
    return u / (x.shape[axis] * y.shape[axis])


@dataclass(frozen=True)
class Interval:
    value: float
    ci: tuple[float, float]

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RunAggregate:
    """One arm's runs on one metric: mean, IQM and P(> reference), each with its 95% interval."""

    scores: list[float]
    mean: Interval
    iqm: Interval
    p_above: Interval | None  # P(run > reference); None without one
    reference: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def _interval(stat, samples: tuple, *, n_resamples: int, confidence: float, seed: int) -> Interval:
    value = float(stat(*samples, axis=-1))
    if all(len(s) < 2 for s in samples) or all(np.ptp(s) == 0 for s in samples):
        return Interval(value, (value, value))  # nothing to resample: the interval is the point
    res = _st.bootstrap(
        samples,
        stat,
        vectorized=True,
        paired=False,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return Interval(value, (float(res.confidence_interval.low), float(res.confidence_interval.high)))


def run_aggregate(
    scores: Sequence[float],
    reference: float | None = None,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> RunAggregate:
    """Mean, IQM and (against a fixed ``reference``) P(run > reference) of one arm's per-run ``scores``."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"run_aggregate needs a non-empty 1-D array of finite scores, got {list(scores)}")
    kw: dict[str, Any] = {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}
    above = None
    if reference is not None:
        ref = float(reference)
        above = _interval(
            lambda a, axis=-1: np.mean(a > ref, axis=axis) + 0.5 * np.mean(a == ref, axis=axis), (x,), **kw
        )
    return RunAggregate(
        scores=[float(v) for v in x],
        mean=_interval(np.mean, (x,), **kw),
        iqm=_interval(iqm, (x,), **kw),
        p_above=above,
        reference=reference,
    )


def improvement(
    x: Sequence[float], y: Sequence[float], *, n_resamples: int = N_RESAMPLES, confidence: float = 0.95, seed: int = 0
) -> Interval:
    """P(X > Y) between two arms' runs with its interval (X's and Y's runs resampled independently)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or b.ndim != 1 or a.size == 0 or b.size == 0:
        raise ValueError("improvement needs two non-empty 1-D arrays of per-run scores")
    return _interval(probability_of_improvement, (a, b), n_resamples=n_resamples, confidence=confidence, seed=seed)
