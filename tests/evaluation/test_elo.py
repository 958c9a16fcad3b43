"""Elo fit, LOS and head-to-head tables (pure math, no engines)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdx_lightning.evaluation.elo import (
    C_ELO,
    EloFitError,
    direct_los_matrix,
    fit_elo,
    head_to_head,
    ladder_markdown,
    los,
    pair_record,
    score_elo,
)

TRUE = np.array([0.0, 60.0, -110.0, 210.0, 130.0])
NAMES = [f"p{i}" for i in range(len(TRUE))]


def simulate(
    rng, games_per_colour: int, model: str = "bayeselo", adv: float = 30.0, drawelo: float = 120.0, nu: float = 0.8
) -> np.ndarray:
    """(n, n, 3) counts drawn from the named model with ratings TRUE."""
    n = len(TRUE)
    counts = np.zeros((n, n, 3), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            delta = (TRUE[i] - TRUE[j] + adv) * C_ELO
            if model == "bayeselo":
                pw = 1 / (1 + math.exp(-(delta - drawelo * C_ELO)))
                pl = 1 / (1 + math.exp(delta + drawelo * C_ELO))
            else:
                a, b = math.exp(delta / 2), math.exp(-delta / 2)
                pw, pl = a / (a + b + nu), b / (a + b + nu)
            counts[i, j] = rng.multinomial(games_per_colour, [pw, 1 - pw - pl, pl])
    return counts


def test_los_closed_form_and_paper_value():
    # the paper's forward-KL vs base record, 361-318-321, has LOS 0.94 (Sec. 3.2)
    assert los(361, 321) == pytest.approx(0.937, abs=5e-4)  # reported rounded: 0.94
    for w, lo in [(10, 3), (0, 5), (50, 50), (7, 0), (123, 98)]:
        assert los(w, lo) == pytest.approx(0.5 * (1 + math.erf((w - lo) / math.sqrt(2 * (w + lo)))), abs=1e-15)
        assert los(w, lo) + los(lo, w) == pytest.approx(1.0)
    assert los(0, 0) == 0.5
    # the normal approximation it is: P(X > L) for the binomial split of decisive games, large n
    w, lo = 560, 500
    p_sup = 0.5 * math.erfc(-(w - lo) / math.sqrt(2 * (w + lo)))
    assert los(w, lo) == pytest.approx(p_sup)


def test_score_elo():
    elo, lo, hi = score_elo(361, 318, 321)
    s = (361 + 318 / 2) / 1000
    assert elo == pytest.approx(-400 * math.log10(1 / s - 1))
    assert lo < elo < hi
    assert score_elo(10, 0, 0)[0] == math.inf and score_elo(5, 5, 5)[0] == pytest.approx(0.0)


@pytest.mark.parametrize("model", ["bayeselo", "davidson"])
def test_fit_recovers_known_ratings(model):
    rng = np.random.default_rng(7)
    counts = simulate(rng, 600, model)  # 1200 games per pair
    fit = fit_elo(NAMES, counts, model=model, prior_draws=0, weak_priors=False)
    assert fit.extra["converged"]
    assert fit.ratings[0] == 0.0 and fit.stderr[0] == 0.0  # the anchor
    err = np.abs(fit.ratings - TRUE)
    assert err.max() < 25.0, (fit.ratings, TRUE)
    assert (err[1:] <= 3.0 * fit.stderr[1:]).all()
    assert fit.advantage == pytest.approx(30.0, abs=12.0)
    if model == "bayeselo":
        assert fit.draw == pytest.approx(120.0, abs=10.0)
    else:
        assert fit.draw == pytest.approx(0.8, abs=0.08)


def test_interval_coverage_and_scaling():
    """95 % intervals cover about 95 % of the time and shrink like 1/sqrt(games)."""
    hits, widths = [], {}
    for seed in range(30):
        fit = fit_elo(NAMES, simulate(np.random.default_rng(100 + seed), 60), prior_draws=0, weak_priors=False)
        lo, hi = fit.ci95[1:].T
        hits += list((lo <= TRUE[1:]) & (TRUE[1:] <= hi))
        widths.setdefault(60, []).append(fit.stderr[1:].mean())
    widths[240] = [
        fit_elo(NAMES, simulate(np.random.default_rng(1), 240), prior_draws=0, weak_priors=False).stderr[1:].mean()
    ]
    assert 0.85 <= np.mean(hits) <= 1.0
    assert np.mean(widths[60]) / widths[240][0] == pytest.approx(2.0, rel=0.15)


def test_anchor_shifts_everything_equally():
    counts = simulate(np.random.default_rng(3), 100)
    a = fit_elo(NAMES, counts)
    b = fit_elo(NAMES, counts, anchor="p3", anchor_rating=2374.0)
    assert b.ratings[3] == 2374.0 and b.stderr[3] == 0.0
    np.testing.assert_allclose(b.ratings - b.ratings[0], a.ratings - a.ratings[0], atol=1e-3)
    with pytest.raises(EloFitError, match="anchor"):
        fit_elo(NAMES, counts, anchor="nobody")


def test_los_matrix_from_fit():
    fit = fit_elo(NAMES, simulate(np.random.default_rng(4), 100))
    m = fit.los_matrix()
    off = ~np.eye(len(NAMES), dtype=bool)
    np.testing.assert_allclose((m + m.T)[off], 1.0, atol=1e-12)
    assert np.isnan(np.diag(m)).all()
    # ordering agrees with the ratings; p3 (+210) is clearly above p2 (−110)
    assert ((m[off] > 0.5) == (fit.ratings[:, None] > fit.ratings[None, :])[off]).all()
    assert m[3, 2] > 0.999
    # two players: the ladder LOS is the Gaussian tail of the rating difference
    two = fit_elo(["a", "b"], np.array([[[0, 0, 0], [30, 40, 20]], [[25, 40, 25], [0, 0, 0]]]))
    z = (two.ratings[0] - two.ratings[1]) / two.stderr[1]
    assert two.los_matrix()[0, 1] == pytest.approx(0.5 * (1 + math.erf(z / math.sqrt(2))))


def test_priors_keep_degenerate_pools_finite():
    # one decisive game among 12, no losses: no MLE exists; the weak priors and virtual draws keep it finite
    counts = np.array([[[0, 0, 0], [1, 5, 0]], [[0, 6, 0], [0, 0, 0]]])
    fit = fit_elo(["a", "b"], counts, nuisance="fit")
    assert np.isfinite(fit.ratings).all() and np.isfinite(fit.stderr).all()
    assert fit.ratings[1] < 0 and abs(fit.advantage) < 300
    with pytest.raises(EloFitError):
        fit_elo(["a", "b"], counts, prior_draws=0, weak_priors=False, nuisance="fit")
    with pytest.raises(EloFitError, match="without games"):
        fit_elo(["a", "b", "c"], np.pad(counts, ((0, 1), (0, 1), (0, 0))))


def test_fixed_advantage_and_draw():
    counts = simulate(np.random.default_rng(5), 200)
    fit = fit_elo(NAMES, counts, advantage=0.0, draw=120.0)
    assert fit.advantage == 0.0 and fit.draw == 120.0
    free = fit_elo(NAMES, counts)
    assert free.advantage != 0.0 and not np.allclose(free.ratings, fit.ratings)


def test_head_to_head_and_markdown():
    counts = np.zeros((3, 3, 3), dtype=np.int64)
    counts[1, 0] = (200, 150, 150)  # p1 as White vs base
    counts[0, 1] = (150, 170, 180)  # base as White vs p1 (p1 wins 180 as Black)
    counts[2, 0] = (10, 0, 0)
    counts[0, 2] = (3, 4, 3)
    counts[1, 2] = (5, 5, 5)
    names = ["base", "p1", "p2"]
    assert pair_record(counts, 1, 0) == (380, 320, 300)
    rows = {r["player"]: r for r in head_to_head(names, counts, "base")}
    assert (rows["p1"]["w"], rows["p1"]["d"], rows["p1"]["l"]) == (380, 320, 300)
    assert rows["p1"]["score"] == pytest.approx(0.54)
    assert rows["p1"]["los"] == pytest.approx(los(380, 300))
    m = direct_los_matrix(counts)
    assert m[1, 0] == pytest.approx(los(380, 300)) and m[0, 1] == pytest.approx(1 - m[1, 0])
    assert m[2, 0] == pytest.approx(los(13, 3)) and np.isnan(m[0, 0])
    fit = fit_elo(names, counts)
    md = ladder_markdown(fit, counts, base="base")
    assert "| p1 | 1000 | 380–320–300 | 0.540 |" in md and "LOS matrix" in md
    d = fit.as_dict()
    assert d["los"]["base"]["base"] is None and d["ratings"][0]["elo"] == 0.0


@pytest.mark.parametrize("model", ["bayeselo", "davidson"])
def test_fit_matches_naive_likelihood(model):
    """Ours vs an obvious implementation: probabilities written out, minimized numerically."""
    import scipy.optimize

    counts = simulate(np.random.default_rng(11), 80, model)[:3, :3]
    names = NAMES[:3]

    def probs(rw, rb, adv, dpar):
        if model == "bayeselo":
            f = lambda x: 1.0 / (1.0 + 10 ** (-x / 400))  # noqa: E731
            pw, pl = f(rw - rb + adv - dpar), f(rb - rw - adv - dpar)
            return pw, 1 - pw - pl, pl
        gw, gb, a = 10 ** (rw / 400), 10 ** (rb / 400), 10 ** (adv / 400)
        z = a * gw + gb + dpar * math.sqrt(a * gw * gb)
        return a * gw / z, dpar * math.sqrt(a * gw * gb) / z, gb / z

    def nll(p):
        r = [0.0, p[0], p[1]]
        total = 0.0
        for i in range(3):
            for j in range(3):
                if i != j:
                    pr = probs(r[i], r[j], p[2], p[3])
                    total -= sum(c * math.log(q) for c, q in zip(counts[i, j], pr))
        return total

    x0 = [0.0, 0.0, 0.0, 100.0 if model == "bayeselo" else 1.0]
    naive = scipy.optimize.minimize(
        nll, x0, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-10, "maxiter": 20000}
    ).x
    fit = fit_elo(names, counts, model=model, prior_draws=0, weak_priors=False)
    np.testing.assert_allclose(fit.ratings[1:], naive[:2], atol=0.05)
    assert fit.advantage == pytest.approx(naive[2], abs=0.05)
    assert fit.draw == pytest.approx(naive[3], rel=1e-3)
    assert fit.nll == pytest.approx(nll(naive), rel=1e-9, abs=1e-6)


def test_gradient_and_hessian_against_finite_differences():
    from scipy.optimize import approx_fprime

    from pdx_lightning.evaluation.elo import _objective

    rng = np.random.default_rng(0)
    counts = rng.integers(0, 20, (4, 4, 3)).astype(float)
    counts[np.arange(4), np.arange(4)] = 0
    free = np.array([False, True, True, True])
    for model in ("bayeselo", "davidson"):
        for adv_fixed, draw_fixed in [(None, None), (0.1, None), (None, -0.5)]:
            m = 3 + (adv_fixed is None) + (draw_fixed is None)
            x = rng.normal(0, 0.5, m)
            args = (counts, free, 0.0, model, adv_fixed, draw_fixed, True)
            _f, g, H = _objective(x, *args)
            np.testing.assert_allclose(
                g, approx_fprime(x, lambda y, args=args: _objective(y, *args)[0], 1e-7), rtol=1e-4, atol=1e-3
            )
            Hn = np.array(
                [approx_fprime(x, lambda y, args=args, i=i: _objective(y, *args)[1][i], 1e-7) for i in range(m)]
            )
            np.testing.assert_allclose(H, Hn, rtol=1e-4, atol=1e-3)


def test_small_pools_hold_advantage_and_draw_at_bayeselo_defaults():
    from pdx_lightning.evaluation import elo

    counts = np.array([[[0, 0, 0], [1, 1, 0]], [[0, 2, 0], [0, 0, 0]]])  # 4 games
    auto = fit_elo(["a", "b"], counts)
    assert auto.nuisance == "fixed (defaults)"
    assert auto.advantage == pytest.approx(elo.DEFAULT_ADVANTAGE) and auto.draw == pytest.approx(97.3)
    fixed = fit_elo(["a", "b"], counts, advantage=elo.DEFAULT_ADVANTAGE, draw=97.3)
    assert fixed.nuisance == "given"
    np.testing.assert_allclose(auto.ratings, fixed.ratings)
    fitted = fit_elo(["a", "b"], counts, nuisance="fit")
    assert fitted.nuisance == "fitted" and fitted.draw != pytest.approx(97.3)
    big = simulate(np.random.default_rng(7), 100)  # 1,200 games: enough to fit them
    assert big.sum() >= elo.FIT_NUISANCE_MIN_GAMES and fit_elo(NAMES, big).nuisance == "fitted"
    md = elo.ladder_markdown(auto, counts)
    assert "(fixed (defaults))" in md and "ΔElo (score, this pair)" in md and "differ by construction" in md
    with pytest.raises(EloFitError, match="nuisance"):
        fit_elo(["a", "b"], counts, nuisance="sometimes")
