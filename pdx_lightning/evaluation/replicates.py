"""Aggregating an arm over its seeds: the mean with a stratified two-level bootstrap interval.

An arm trained with several seeds has one sample of unit scores per seed (per puzzle: solved 0/1; per
arena opening pair: the pair's score / 2). :func:`seed_bootstrap` reports each seed's mean, the mean
over seeds, its 95% interval and, against a reference (the base's scores on the same puzzles, or a
constant such as an even score 0.5), the difference and the probability that the arm is above it.

The interval comes from a stratified two-level bootstrap, the scheme of Agarwal et al. (2021)'s
``StratifiedBootstrap`` with task resampling: seeds are resampled with replacement, and within each
drawn seed its units are resampled (paired with the reference's units on the same puzzles, so the
puzzles' shared difficulty cancels in the difference). Both levels are ``scipy.stats.bootstrap``
(percentile intervals; BCa's jackknife is meaningless over three seeds): the inner one draws, per seed,
independent replicates of (mean, mean − reference); the outer one resamples the seeds, and its
statistic gives the j-th seed drawn in the r-th resample that seed's replicate r·S + j, so every draw
gets a fresh inner resample. With one seed the outer level is the identity (scipy resamples ≥ 2
observations) and the result is the inner bootstrap alone.

Why not ``rliable`` (the reference implementation, Apache-2.0): on PyPI it is a source distribution
only, and it pulls ``arch`` (compiled), ``statsmodels``, ``pandas``, ``patsy``, ``formulaic`` and
``seaborn`` (ten packages) for one resampling loop; its strata are tasks with runs resampled inside,
not runs with puzzles resampled inside, so it would need reshaping anyway.

The probability of beating the reference is the share of bootstrap replicates whose difference is
positive (ties count half): a bootstrap estimate of P(arm mean > reference), not rliable's
probability of improvement (P(X > Y) between two runs' scores).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import numpy as np
from scipy import stats as _st

N_RESAMPLES = 2000


@dataclass(frozen=True)
class SeedAggregate:
    per_seed: list[float]  # each seed's mean unit score
    n: list[int]  # units per seed
    mean: float  # mean over seeds of the per-seed means
    ci: tuple[float, float]  # percentile interval of that mean (two-level bootstrap)
    reference: float | None  # the reference's mean (over its units, or the constant)
    diff: float | None  # mean − reference (per seed paired, then averaged)
    diff_ci: tuple[float, float] | None
    p_better: float | None  # share of replicates with diff > 0 (ties ½)
    n_resamples: int

    def as_dict(self) -> dict:
        return asdict(self)


def _pair_stat(x, y, axis=-1):
    """(mean of x, mean of x − mean of y) along ``axis``: one inner replicate's two outputs."""
    mx = np.mean(x, axis=axis)
    return np.stack([mx, mx - np.mean(y, axis=axis)])


def seed_bootstrap(
    samples: Sequence[Sequence[float] | np.ndarray],
    reference: Sequence[float] | np.ndarray | float | None = None,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> SeedAggregate:
    """Aggregate ``samples`` (one array of unit scores per seed) with a stratified two-level bootstrap.

    ``reference``: an array paired unit by unit with every sample (the base on the same puzzles, in the
    same order), a constant, or None (no comparison). ``seed`` seeds the resampling (same inputs, same
    result)."""
    xs = [np.asarray(s, dtype=np.float64) for s in samples]
    if not xs or any(x.ndim != 1 or x.size == 0 for x in xs):
        raise ValueError("seed_bootstrap needs one non-empty 1-D sample per seed")
    const = reference is not None and np.ndim(reference) == 0
    if reference is None or const:
        refs = [np.full_like(x, 0.0 if reference is None else float(cast(float, reference))) for x in xs]
    else:
        ref = np.asarray(reference, dtype=np.float64)
        if any(x.shape != ref.shape for x in xs):
            raise ValueError(
                f"a paired reference needs every sample the same length as it ({ref.size}), got {[x.size for x in xs]}"
            )
        refs = [ref] * len(xs)
    rng = np.random.default_rng(seed)
    S = len(xs)
    inner = np.empty((S, 2, n_resamples * S))  # seed, (mean, diff), replicate
    for s, (x, y) in enumerate(zip(xs, refs)):
        if x.size < 2:  # one unit: nothing to resample
            inner[s] = _pair_stat(x, y)[:, None]
            continue
        inner[s] = _st.bootstrap(
            (x, y),
            _pair_stat,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples * S,
            batch=max(1, 2_000_000 // x.size),
            method="percentile",
            rng=rng,
        ).bootstrap_distribution
    if S == 1:
        dist = inner[0, :, :n_resamples]
    else:
        slot = np.arange(n_resamples)[:, None] * S + np.arange(S)[None, :]  # (r, j) -> inner replicate r*S + j

        def outer(idx, axis=-1):
            if idx.ndim == 1:  # the observed seeds (scipy may ask): their mean and mean difference
                return np.stack([inner[idx, k].mean(axis=-1).mean() for k in range(2)])
            # idx: (n_resamples, S) seed indices, every resample in one call (batch=None)
            return inner[idx, :, slot].mean(axis=1).T

        dist = _st.bootstrap(
            (np.arange(S),), outer, vectorized=True, n_resamples=n_resamples, batch=None, method="percentile", rng=rng
        ).bootstrap_distribution
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(dist, [alpha, 1 - alpha], axis=1)
    means = [float(x.mean()) for x in xs]
    out: dict[str, Any] = {
        "per_seed": means,
        "n": [int(x.size) for x in xs],
        "mean": float(np.mean(means)),
        "ci": (float(lo[0]), float(hi[0])),
        "n_resamples": n_resamples,
        "reference": None,
        "diff": None,
        "diff_ci": None,
        "p_better": None,
    }
    if reference is not None:
        d = dist[1]
        out.update(
            reference=float(refs[0].mean()),
            diff=float(np.mean([x.mean() - y.mean() for x, y in zip(xs, refs)])),
            diff_ci=(float(lo[1]), float(hi[1])),
            p_better=float((d > 0).mean() + 0.5 * (d == 0).mean()),
        )
    return SeedAggregate(**out)


def pair_scores(pentanomial: Sequence[int]) -> np.ndarray:
    """Per-game scores (pair score / 2) of the opening pairs a pentanomial record counts (0, ¼, ½, ¾, 1)."""
    counts = [int(c) for c in pentanomial]
    if len(counts) != 5 or min(counts) < 0:
        raise ValueError(f"a pentanomial record has five counts >= 0, got {list(pentanomial)}")
    return np.repeat(np.arange(5) / 4.0, counts)


def reversed_pentanomial(pentanomial: Sequence[int]) -> list[int]:
    """The same pairs from the other player's side (its pair score 2 − s)."""
    return [int(c) for c in reversed(list(pentanomial))]
