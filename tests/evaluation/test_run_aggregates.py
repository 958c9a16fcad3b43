"""rliable's aggregates over runs, checked by hand and against slow references."""

import itertools

import numpy as np
import pytest

from pdx_lightning.evaluation.run_aggregates import improvement, iqm, probability_of_improvement, run_aggregate


def test_iqm_is_the_mean_of_the_middle_half_by_hand():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx((3 + 4 + 5 + 6) / 4)  # 8 runs: middle 4
    assert iqm([10, 0, 5, 7]) == pytest.approx((5 + 7) / 2)  # order does not matter
    x = np.random.default_rng(1).normal(size=(3, 12))
    ref = [np.sort(r)[3:9].mean() for r in x]  # 12 runs: drop 3 + 3
    assert iqm(x, axis=-1) == pytest.approx(ref)


def test_probability_of_improvement_counts_pairs_with_ties_half():
    # pairs (x, y): 3>1 3>2 3=3 | 2>1 2=2 2<3 | 0<1 0<2 0<3  -> 2 + 1 + 0 wins, 2 ties -> (3 + 1) / 9
    assert probability_of_improvement([3, 2, 0], [1, 2, 3]) == pytest.approx(4 / 9)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.integers(0, 5, size=rng.integers(1, 9)), rng.integers(0, 5, size=rng.integers(1, 9))
        slow = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(x, y)])
        assert probability_of_improvement(x, y) == pytest.approx(slow)
    assert probability_of_improvement([5, 6], [1]) == 1.0 and probability_of_improvement([0, 2], [1]) == 0.5


def test_run_aggregate_against_a_fixed_reference():
    a = run_aggregate([17.0, 18.1, -2.8, 0.4, 18.4, 20.9, 16.7, -2.1], reference=0.0, seed=3)
    assert a.mean.value == pytest.approx(np.mean(a.scores))
    assert a.iqm.value == pytest.approx(np.mean(sorted(a.scores)[2:6]))
    assert a.p_above.value == pytest.approx(6 / 8)  # six of eight runs above 0
    for iv in (a.mean, a.iqm, a.p_above):
        assert iv.ci[0] <= iv.value <= iv.ci[1]
    assert a.mean.ci[0] < 5 < 15 < a.mean.ci[1]  # the seeds' spread is wide
    assert run_aggregate(a.scores, 0.0, seed=3) == a  # seeded: the same intervals
    assert run_aggregate([2.0, 2.0], reference=2.0).p_above.value == 0.5  # a tie counts half


def test_bootstrap_interval_covers_a_known_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    hits = sum(
        lo <= 0.0 <= hi
        for lo, hi in (run_aggregate(rng.normal(size=20), n_resamples=300, seed=i).mean.ci for i in range(100))
    )
    assert 85 <= hits <= 99  # percentile bootstrap at n = 20 under-covers a little; binomial slack


def test_improvement_between_two_arms_and_its_interval():
    p = improvement([3, 4, 5, 6], [1, 2, 3, 4], seed=1)
    assert p.value == pytest.approx(np.mean([a > b or 0.5 * (a == b) for a in [3, 4, 5, 6] for b in [1, 2, 3, 4]]))
    assert 0 <= p.ci[0] <= p.value <= p.ci[1] <= 1
    assert improvement([1, 1], [0, 0]).ci == (1.0, 1.0)  # degenerate: no resampling needed


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="finite"):
        run_aggregate([1.0, float("nan")])
    with pytest.raises(ValueError, match="non-empty"):
        improvement([], [1.0])
