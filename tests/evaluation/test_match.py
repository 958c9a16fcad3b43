"""Match statistics (cutechess/fastchess form) against hand computations."""

from __future__ import annotations

import math

import pytest

from pdx_lightning.evaluation.match import (
    SPRT,
    elo_to_score,
    pentanomial,
    pentanomial_elo,
    score_to_elo,
    sprt_status,
    summarize,
)


def test_trinomial_line_by_hand():
    # 60 wins, 40 losses, 100 draws: score 0.55; per-game variance (60 + 100/4)/200 − 0.55² = 0.1225
    m = summarize("A", "B", 60, 40, 100)
    half = 1.959963984540054 * math.sqrt(0.1225 / 200)
    hand = lambda s: -400 * math.log10(1 / s - 1)  # noqa: E731
    assert m.score == pytest.approx(0.55)
    assert m.elo == pytest.approx(hand(0.55)) and m.elo == pytest.approx(34.86, abs=0.01)
    assert m.elo_error == pytest.approx((hand(0.55 + half) - hand(0.55 - half)) / 2)
    assert m.los == pytest.approx(0.5 * (1 + math.erf(20 / math.sqrt(200))))  # 0.9772
    assert m.draw_ratio == pytest.approx(0.5)
    lines = m.lines()
    assert lines[0] == "Score of A vs B: 60 - 40 - 100  [0.550] 200"
    assert lines[1].startswith("Elo difference: +34.86 +/- ") and "LOS: 97.7 %, DrawRatio: 50.0 %" in lines[1]


def test_pentanomial_counts_and_elo_by_hand():
    pairs = [2, 1, 1, 0.5, 1.5, 1]
    assert pentanomial(pairs) == (0, 1, 3, 1, 1)
    elo, err = pentanomial_elo((0, 1, 3, 1, 1))
    xs = [0.25, 0.5, 0.5, 0.5, 0.75, 1.0]  # per-game score of each pair
    mu = sum(xs) / 6
    var = sum((x - mu) ** 2 for x in xs) / 6
    half = 1.959963984540054 * math.sqrt(var / 6)
    assert elo == pytest.approx(score_to_elo(mu))
    assert err == pytest.approx((score_to_elo(mu + half) - score_to_elo(mu - half)) / 2)
    with pytest.raises(ValueError, match="pair score"):
        pentanomial([0.25])


def test_pairs_remove_opening_variance():
    # every opening is won by White: 1-1 in each pair; games look noisy, pairs are all exactly even
    m = summarize("A", "B", 50, 50, 0, pair_scores=[1.0] * 50)
    assert m.pentanomial == (0, 0, 50, 0, 0) and m.ptnml_elo == pytest.approx(0.0)
    assert m.ptnml_error == pytest.approx(0.0) and m.elo_error > 50
    assert "Ptnml(0-2): [0, 0, 50, 0, 0]" in m.lines()[2]


def test_sprt_llr_by_hand_and_decisions():
    test = SPRT(elo0=0, elo1=10, alpha=0.05, beta=0.05)
    # trinomial L=10, D=20, W=30: mean 2/3, variance 35/60 − 4/9
    s0, s1 = 0.5, 1 / (1 + 10 ** (-10 / 400))
    mu, var = 2 / 3, 35 / 60 - 4 / 9
    llr, decision = sprt_status(test, wins=30, losses=10, draws=20)
    assert llr == pytest.approx(60 * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var))
    assert decision is None and test.bounds == pytest.approx((math.log(0.05 / 0.95), math.log(0.95 / 0.05)))
    assert sprt_status(test, wins=600, losses=100, draws=300)[1] == "H1"
    assert sprt_status(test, wins=100, losses=600, draws=300)[1] == "H0"
    # midway between the hypotheses the evidence is balanced
    mid = (elo_to_score(0) + elo_to_score(10)) / 2
    assert test.llr([mid - 0.1, mid + 0.1] * 10) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="elo1 > elo0"):
        SPRT(elo0=5, elo1=0)
