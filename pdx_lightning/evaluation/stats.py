"""Intervals and paired tests for evaluation tables (library routines, not hand formulas).

* :func:`wilson_interval` — the 95% Wilson score interval of a solve rate,
  ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``, as the
  paper's tables report (e.g. 95/100 → [0.8882, 0.9785]).
* :func:`mean_interval` — Student-t interval of a mean (per-puzzle NLL, or a
  per-puzzle log-ratio for paired model comparisons).
* :func:`cluster_mean_interval` — the interval of a mean over positions that come in clusters (the
  positions of one game share its result), from running per-cluster sums: the cluster-robust
  (sandwich) variance, t with clusters − 1 degrees of freedom.
* :func:`mcnemar_exact` — exact McNemar test on the discordant pairs of two
  models scored on the same puzzles.
* :func:`bin_edges_labels` / :func:`assign_bins` — rating/difficulty bins
  with open ends (the paper pools ratings below 600 and above 2600).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as _st

# Figure 6 (right): 200-Elo bins, ratings below 600 and from 2600 up pooled
RATING_BINS: tuple[float, ...] = tuple(range(600, 2601, 200))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of ``k`` successes in ``n`` trials (``(nan, nan)`` if ``n == 0``)."""
    if n == 0:
        return math.nan, math.nan
    ci = _st.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def mean_interval(x: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: Student-t interval of the mean of ``x`` (nan bounds below 2 values)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    sem = float(x.std(ddof=1) / math.sqrt(x.size))
    if sem == 0.0:
        return m, m, m
    lo, hi = _st.t.interval(confidence, x.size - 1, loc=m, scale=sem)
    return m, float(lo), float(hi)


def cluster_mean_interval(
    n: int, total: float, s2: float, ns: float, n2: float, clusters: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, lo, hi)`` of the mean of ``n`` values that fall in ``clusters`` clusters, from running sums
    over the clusters c (S_c = the sum of the cluster's values, n_c = its size): ``total`` = Σ S_c,
    ``s2`` = Σ S_c², ``ns`` = Σ n_c S_c, ``n2`` = Σ n_c². The mean's variance is the cluster-robust one,
    C/(C−1) · Σ_c (S_c − n_c m)² / n² (Liang–Zeger with the small-sample factor); the interval is Student t
    with C − 1 degrees of freedom. One value per cluster gives :func:`mean_interval`'s interval."""
    if n <= 0:
        return math.nan, math.nan, math.nan
    m = total / n
    if clusters < 2:
        return m, math.nan, math.nan
    resid = max(0.0, s2 - 2.0 * m * ns + m * m * n2)  # Σ (S_c − n_c m)²; rounding can leave a tiny negative
    sem = math.sqrt(clusters / (clusters - 1) * resid) / n
    if sem == 0.0:
        return m, m, m
    lo, hi = _st.t.interval(confidence, clusters - 1, loc=m, scale=sem)
    return m, float(lo), float(hi)


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: discordant pairs ``gained`` vs ``lost`` under p = 1/2."""
    n = gained + lost
    return 1.0 if n == 0 else float(_st.binomtest(int(gained), n, 0.5).pvalue)


def bin_edges_labels(edges: Sequence[float]) -> list[tuple[float, float, str]]:
    """Half-open bins ``[lo, hi)`` from sorted inner ``edges``, open at both ends: ``(lo, hi, label)``."""
    e = [float(v) for v in edges]
    if sorted(e) != e or len(set(e)) != len(e):
        raise ValueError(f"bin edges must be strictly increasing, got {list(edges)}")
    bounds = [-math.inf, *e, math.inf]
    out = []
    for lo, hi in itertools.pairwise(bounds):
        if lo == -math.inf and hi == math.inf:
            label = "all"
        elif lo == -math.inf:
            label = f"<{hi:g}"
        elif hi == math.inf:
            label = f">={lo:g}"
        else:
            label = f"{lo:g}-{hi:g}"
        out.append((lo, hi, label))
    return out


def assign_bins(values: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    """Bin index of each value for :func:`bin_edges_labels` (``-1`` for NaN, i.e. no rating)."""
    values = np.asarray(values, dtype=np.float64)
    idx = np.searchsorted(np.asarray(edges, dtype=np.float64), values, side="right")
    return np.where(np.isnan(values), -1, idx)
