"""seed_bootstrap: the stratified two-level bootstrap of an arm over its seeds, on hand-checked cases."""

import math

import numpy as np
import pytest

from pdx_lightning.evaluation.match import pentanomial_elo
from pdx_lightning.evaluation.replicates import pair_scores, reversed_pentanomial, seed_bootstrap


def test_all_equal_values_give_a_zero_width_interval():
    agg = seed_bootstrap([np.ones(20), np.ones(30), np.ones(5)], 0.25)
    assert agg.per_seed == [1.0, 1.0, 1.0] and agg.mean == 1.0 and agg.ci == (1.0, 1.0)
    assert agg.diff == 0.75 and agg.diff_ci == (0.75, 0.75) and agg.p_better == 1.0
    one = seed_bootstrap([np.full(40, 0.5)], 0.5)  # one seed, no spread: tie with the reference
    assert one.ci == (0.5, 0.5) and one.diff == 0.0 and one.p_better == 0.5


def test_two_seeds_without_spread_inside_resample_only_the_seeds():
    """Means 0.2 and 0.8: a resample of 2 seeds averages to 0.2, 0.5 or 0.8 with probabilities ¼, ½, ¼,
    so the 95% percentile interval is [0.2, 0.8]; against 0.4 the difference is > 0 in ¾ of them."""
    agg = seed_bootstrap([np.full(10, 0.2), np.full(10, 0.8)], 0.4, n_resamples=4000)
    assert agg.mean == pytest.approx(0.5) and agg.ci == pytest.approx((0.2, 0.8))
    assert agg.diff == pytest.approx(0.1) and agg.diff_ci == pytest.approx((-0.2, 0.4))
    assert agg.p_better == pytest.approx(0.75, abs=0.03)


def test_one_seed_is_the_puzzle_bootstrap_of_a_known_proportion():
    """10,000 fair coin flips: the interval of the mean is ± 1.96·sqrt(¼/n) = ± 0.0098 around it."""
    x = (np.random.default_rng(3).random(10_000) < 0.5).astype(float)
    agg = seed_bootstrap([x])
    half = (agg.ci[1] - agg.ci[0]) / 2
    assert agg.ci[0] < x.mean() < agg.ci[1] and half == pytest.approx(1.96 * math.sqrt(0.25 / x.size), rel=0.1)
    assert agg.reference is None and agg.diff is None and agg.p_better is None


def test_the_pairing_with_the_base_removes_the_puzzles_difficulty():
    """An arm that solves exactly the base's puzzles plus 2% more, on three seeds (the same means): paired,
    the difference's interval is that of a 2% proportion, width 2·1.96·sqrt(.02·.98 / 3n) = 0.0045, while
    the accuracy's is that of a ~42% one, 2·1.96·sqrt(p(1−p) / 3n) = 0.0158 (each seed's puzzles
    resampled independently, the three seeds alike)."""
    rng = np.random.default_rng(0)
    base = (rng.random(5000) < 0.4).astype(float)
    arms = []
    for s in range(3):
        x = base.copy()
        x[np.flatnonzero(base == 0)[s * 100 : (s + 1) * 100]] = 1.0  # 100 other puzzles gained per seed
        arms.append(x)
    agg = seed_bootstrap(arms, base)
    assert agg.diff == pytest.approx(0.02) and agg.p_better == 1.0
    n, p = base.size, agg.mean
    assert agg.diff_ci[1] - agg.diff_ci[0] == pytest.approx(2 * 1.96 * math.sqrt(0.02 * 0.98 / (3 * n)), rel=0.15)
    assert agg.ci[1] - agg.ci[0] == pytest.approx(2 * 1.96 * math.sqrt(p * (1 - p) / (3 * n)), rel=0.15)


def test_seeds_that_disagree_widen_the_interval_beyond_the_puzzles():
    rng = np.random.default_rng(1)
    close = [(rng.random(2000) < 0.5).astype(float) for _ in range(3)]
    apart = [(rng.random(2000) < p).astype(float) for p in (0.4, 0.5, 0.6)]
    w = lambda a: a.ci[1] - a.ci[0]  # noqa: E731
    assert w(seed_bootstrap(apart)) > 3 * w(seed_bootstrap(close))


def test_same_inputs_same_result_and_bad_inputs_are_refused():
    xs = [np.arange(10) % 2, np.arange(12) % 3 == 0]
    assert seed_bootstrap(xs, 0.5) == seed_bootstrap(xs, 0.5)
    with pytest.raises(ValueError, match="same length"):
        seed_bootstrap([np.ones(3), np.ones(4)], np.ones(3))
    with pytest.raises(ValueError, match="non-empty"):
        seed_bootstrap([np.ones(3), []])


def test_pair_scores_expand_a_pentanomial_record():
    ptn = [1, 2, 3, 0, 4]
    s = pair_scores(ptn)
    assert s.tolist() == [0.0, 0.25, 0.25, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0]
    assert reversed_pentanomial(ptn) == [4, 0, 3, 2, 1]
    # the same mean score as the match block's pentanomial Elo, and the other side's is its negative
    elo, _ = pentanomial_elo(tuple(ptn))
    assert elo == pytest.approx(-400 * math.log10(1 / s.mean() - 1))
    assert pentanomial_elo(tuple(reversed_pentanomial(ptn)))[0] == pytest.approx(-elo)
    with pytest.raises(ValueError, match="five counts"):
        pair_scores([1, 2, 3])
