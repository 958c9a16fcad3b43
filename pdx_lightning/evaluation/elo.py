"""Elo ratings with draws: likelihood fit, 95% intervals, LOS, head-to-head tables.

Results are counts ``C[i, j] = (wins, draws, losses)`` of player ``i`` playing
**White** against player ``j`` (from White's view), so colour is kept and a
white advantage can be fitted. Two draw models, both fitted by maximum
likelihood — a posterior mode once the priors below are on — with
``scipy.optimize.minimize`` (Newton trust region on the analytic gradient
and Hessian):

* ``"bayeselo"`` (Coulom's BayesElo, the paper's App. F): with
  ``f(x) = 1 / (1 + 10^(-x/400))`` and ``Δ = r_white − r_black``,
  ``P(W) = f(Δ + adv − drawelo)``, ``P(L) = f(−Δ − adv − drawelo)``,
  ``P(D) = 1 − P(W) − P(L)``.  Its Elo is *not* the score-based Elo of a
  plain logistic: with many draws, BayesElo ratings spread wider.
* ``"davidson"`` (Bradley–Terry with Davidson's draw parameter ν): with
  ``γ = 10^(r/400)`` and ``A = 10^(adv/400)``,
  ``P(W) ∝ A γ_w``, ``P(L) ∝ γ_b``, ``P(D) ∝ ν sqrt(A γ_w γ_b)``.

One player is the anchor, fixed at ``anchor_rating`` (the paper fixes the
base at 0). Intervals are ±1.96 standard errors from the inverse observed
information (the Hessian of −log L at the optimum) over all free parameters,
so the uncertainty of ``adv`` and the draw parameter is included; the anchor
has zero variance by construction. ``prior_draws`` adds that many virtual
draws to every pair that met, half with each colour (BayesElo's default prior
is 2); it keeps a 100 % score finite and shrinks ratings slightly toward each
other. When the white advantage and the draw parameter are fitted, weak
Gaussian priors keep them finite where the games cannot identify them (a
pool with no decisive games, or no losses, has no maximum-likelihood
estimate): ``adv ~ N(0, 100 Elo)`` and ``log draw ~ N(log d₀, 1)``
with d₀ BayesElo's default drawelo 97.3 (27 % draws between equals; ν₀ = 0.75
gives Davidson the same). With hundreds of games they move the fit by far
less than its interval. ``prior_draws=0, weak_priors=False`` is the pure
maximum-likelihood fit.

Small pools: a white advantage and a draw parameter fitted from a handful of games are noise
(a 4-game pool fitted drawelo 380). As BayesElo does by default, ``nuisance="auto"`` holds them at
fixed priors — BayesElo's defaults advantage 32.8 Elo and drawelo 97.3 (Davidson: ν = 0.75) —
unless the pool has at least ``FIT_NUISANCE_MIN_GAMES`` games; the fit records which was used
(``EloFit.nuisance``) and the ladder's header says it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from pdx_lightning.evaluation.markdown import markdown_table

C_ELO = math.log(10.0) / 400.0  # natural-logit units per Elo point
Z95 = 1.959963984540054
MODELS = ("bayeselo", "davidson")
ADV_PRIOR_SD = 100.0 * C_ELO  # logit units
FIT_NUISANCE_MIN_GAMES = 400  # fewer games: advantage and draw parameter held at the defaults below
DEFAULT_ADVANTAGE = 32.8  # Elo, BayesElo's default eloAdvantage
DEFAULT_DRAW = {"bayeselo": 97.3, "davidson": 0.75}  # BayesElo's default eloDraw; Davidson's matching ν
NUISANCE_MODES = ("auto", "fit", "fixed")
DRAW_PRIOR = {"bayeselo": math.log(97.3 * C_ELO), "davidson": math.log(0.75)}  # centre of the log-draw prior


class EloFitError(ValueError):
    """A pool that cannot be rated (no games, unknown anchor, singular information)."""


def los(wins: float, losses: float) -> float:
    """Likelihood of superiority from a direct record: ½·(1 + erf((W − L)/√(2(W + L)))).

    Draws carry no information about who is stronger; 0.5 when W + L = 0.
    """
    n = wins + losses
    return 0.5 if n <= 0 else 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * n)))


def score_elo(wins: float, draws: float, losses: float) -> tuple[float, float, float]:
    """Score-based Elo difference and its 95 % interval, ``(elo, lo, hi)``.

    ``elo = −400·log10(1/s − 1)`` with ``s`` the score; the interval maps
    ``s ± 1.96·σ_s`` (trinomial per-game variance) through the same curve.
    ±inf at a 0 % or 100 % score.
    """
    n = wins + draws + losses
    if n <= 0:
        return 0.0, -math.inf, math.inf
    s = (wins + 0.5 * draws) / n
    var = max((wins + 0.25 * draws) / n - s * s, 0.0)
    half = Z95 * math.sqrt(var / n)
    return score_to_elo(s), score_to_elo(s - half), score_to_elo(s + half)


def score_to_elo(score: float) -> float:
    """Logistic Elo difference of an expected score: ``−400·log10(1/s − 1)``; ±inf at 0 and 1."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def _log1mexp_neg(z: np.ndarray | float) -> np.ndarray:
    """log(1 − e^{−z}) for z > 0, stable at both ends."""
    return np.where(z > 0.693, np.log1p(-np.exp(-z)), np.log(-np.expm1(-z)))


def _sig(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _logsig(z: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -z)


def _cell_terms(model: str, u: np.ndarray, th: float, counts: np.ndarray):
    """Σ_k c_k log p_k per cell and its derivatives in (u, θ), u = Δ + adv, θ = log draw param.

    Returns ``(ll, g_u, g_t, h_uu, h_ut, h_tt)``, arrays shaped like ``u``.
    """
    c_w, c_d, c_l = counts[..., 0], counts[..., 1], counts[..., 2]
    if model == "bayeselo":
        d = math.exp(th)
        # log P(W) = logσ(u − d), log P(L) = logσ(−u − d),
        # log P(D) = log(σ(u + d) − σ(u − d)) = logσ(u + d) + logσ(d − u) + log(1 − e^{−2d})
        ll = (
            c_w * _logsig(u - d)
            + c_l * _logsig(-u - d)
            + c_d * (_logsig(u + d) + _logsig(d - u) + _log1mexp_neg(2.0 * d))
        )
        # d/dz logσ(z) = σ(−z), d²/dz² = −σ(z)σ(−z); z = ±u ± d
        terms = [(c_w, u - d, 1.0, -1.0), (c_l, -u - d, -1.0, -1.0), (c_d, u + d, 1.0, 1.0), (c_d, d - u, -1.0, 1.0)]
        g_u = np.zeros_like(u)
        g_d = np.zeros_like(u)
        h_uu = np.zeros_like(u)
        h_ud = np.zeros_like(u)
        h_dd = np.zeros_like(u)
        for c, z, au, ad in terms:
            s1, s2 = _sig(-z), -_sig(z) * _sig(-z)
            g_u += c * au * s1
            g_d += c * ad * s1
            h_uu += c * s2
            h_ud += c * au * ad * s2
            h_dd += c * s2
        e = math.exp(-2.0 * d)
        g_d += c_d * 2.0 * e / -math.expm1(-2.0 * d)
        h_dd += c_d * -4.0 * e / math.expm1(-2.0 * d) ** 2
        # θ = log d: ∂/∂θ = d ∂/∂d, ∂²/∂θ² = d² ∂²/∂d² + d ∂/∂d
        return ll, g_u, d * g_d, h_uu, d * h_ud, d * d * h_dd + d * g_d
    # davidson: logits (u/2, θ, −u/2); ∇ log p_k = e_k − p, ∇² log p_k = −(diag p − p pᵀ)
    logits = np.stack([u / 2.0, np.full_like(u, th), -u / 2.0], axis=-1)
    lp = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    p = np.exp(lp)
    n_tot = counts.sum(-1)
    ll = (counts * lp).sum(-1)
    g_logit = counts - n_tot[..., None] * p  # (…, 3)
    a_u = np.array([0.5, 0.0, -0.5])
    a_t = np.array([0.0, 1.0, 0.0])
    g_u, g_t = g_logit @ a_u, g_logit @ a_t
    pu, pt = p @ a_u, p @ a_t
    h_uu = -n_tot * ((p * a_u * a_u).sum(-1) - pu * pu)
    h_ut = -n_tot * ((p * a_u * a_t).sum(-1) - pu * pt)
    h_tt = -n_tot * ((p * a_t * a_t).sum(-1) - pt * pt)
    return ll, g_u, g_t, h_uu, h_ut, h_tt


def _objective(
    x: np.ndarray,
    counts: np.ndarray,
    free: np.ndarray,
    anchor_x: float,
    model: str,
    adv_fixed: float | None,
    draw_fixed: float | None,
    weak_priors: bool,
):
    """−log posterior, its gradient and Hessian in ``x`` = [free ratings, (adv), (θ)], logit units."""
    n, k = counts.shape[0], int(free.sum())
    r = np.full(n, anchor_x)
    r[free] = x[:k]
    pos = k
    fit_adv, fit_draw = adv_fixed is None, draw_fixed is None
    adv = x[pos] if adv_fixed is None else adv_fixed  # adv_fixed is None exactly when fit_adv
    pos += fit_adv
    th = x[pos] if draw_fixed is None else draw_fixed  # draw_fixed is None exactly when fit_draw
    u = r[:, None] - r[None, :] + adv  # (n, n) white minus black, plus the white advantage
    ll, g_u, g_t, h_uu, h_ut, h_tt = _cell_terms(model, u, th, counts)
    # chain rule: ∂u_ij/∂r_a = δ_ia − δ_ja, ∂u/∂adv = 1; columns of J: free ratings, (adv), (θ)
    m = len(x)
    g = np.zeros(m)
    H = np.zeros((m, m))
    g[:k] = (g_u.sum(1) - g_u.sum(0))[free]
    H[:k, :k] = (np.diag(h_uu.sum(1) + h_uu.sum(0)) - (h_uu + h_uu.T))[np.ix_(free, free)]
    if fit_adv:
        g[k] = g_u.sum()
        H[:k, k] = H[k, :k] = (h_uu.sum(1) - h_uu.sum(0))[free]
        H[k, k] = h_uu.sum()
    if fit_draw:
        g[-1] = g_t.sum()
        H[:k, -1] = H[-1, :k] = (h_ut.sum(1) - h_ut.sum(0))[free]
        H[-1, -1] = h_tt.sum()
        if fit_adv:
            H[k, -1] = H[-1, k] = h_ut.sum()
    f, g, H = -ll.sum(), -g, -H
    if weak_priors:  # on the nuisance parameters that are fitted
        if fit_adv:
            f += 0.5 * (adv / ADV_PRIOR_SD) ** 2
            g[k] += adv / ADV_PRIOR_SD**2
            H[k, k] += 1.0 / ADV_PRIOR_SD**2
        if fit_draw:
            f += 0.5 * (th - DRAW_PRIOR[model]) ** 2
            g[-1] += th - DRAW_PRIOR[model]
            H[-1, -1] += 1.0
    return f, g, H


@dataclass
class EloFit:
    """A fitted pool: ratings (Elo), their 95 % intervals and covariance."""

    players: list[str]
    ratings: np.ndarray  # (n,)
    stderr: np.ndarray  # (n,), 0 for the anchor
    cov: np.ndarray  # (n, n)
    model: str
    anchor: str
    anchor_rating: float
    advantage: float  # white advantage, Elo
    draw: float  # drawelo (Elo, bayeselo) or ν (davidson)
    games: np.ndarray  # (n,) games per player (virtual draws excluded)
    prior_draws: float
    weak_priors: bool
    nll: float
    extra: dict = field(default_factory=dict)
    nuisance: str = "fitted"  # how advantage/draw were set: "fitted", "fixed (defaults)", "given"

    @property
    def ci95(self) -> np.ndarray:
        """(n, 2) lower/upper 95 % bounds."""
        return np.stack([self.ratings - Z95 * self.stderr, self.ratings + Z95 * self.stderr], axis=1)

    def los_matrix(self) -> np.ndarray:
        """``L[i, j]`` = P(r_i > r_j) under the fit's Gaussian posterior; NaN on the diagonal."""
        diff = self.ratings[:, None] - self.ratings[None, :]
        var = np.diag(self.cov)[:, None] + np.diag(self.cov)[None, :] - 2.0 * self.cov
        with np.errstate(divide="ignore", invalid="ignore"):
            z = diff / np.sqrt(np.maximum(var, 1e-12))
        out = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
        np.fill_diagonal(out, np.nan)
        return out

    def as_dict(self) -> dict:
        lo, hi = self.ci95.T
        los_m = self.los_matrix()
        return {
            "model": self.model,
            "anchor": self.anchor,
            "anchor_rating": self.anchor_rating,
            "advantage": self.advantage,
            "draw": self.draw,
            "nuisance": self.nuisance,
            "prior_draws": self.prior_draws,
            "nll": self.nll,
            "ratings": [
                {"player": p, "elo": float(r), "stderr": float(s), "ci95": [float(a), float(b)], "games": int(g)}
                for p, r, s, a, b, g in zip(self.players, self.ratings, self.stderr, lo, hi, self.games)
            ],
            "los": matrix_dict(self.players, los_m),
        }


def fit_elo(
    players: list[str],
    counts: np.ndarray,
    *,
    model: str = "bayeselo",
    anchor: str | None = None,
    anchor_rating: float = 0.0,
    advantage: float | None = None,
    draw: float | None = None,
    prior_draws: float = 2.0,
    weak_priors: bool = True,
    nuisance: str = "auto",
) -> EloFit:
    """Fit ratings to ``counts`` (n, n, 3) = (W, D, L) of i as White vs j as Black.

    ``anchor`` (default the first player) is fixed at ``anchor_rating``;
    ``advantage`` (Elo) / ``draw`` (drawelo in Elo, or ν) are held at the given
    values (``advantage=0`` for colour-blind ratings); those left None are fitted
    (``nuisance="fit"``), held at BayesElo's defaults (``"fixed"``), or, with
    ``"auto"``, fitted only when the pool has ``FIT_NUISANCE_MIN_GAMES`` games or
    more; ``weak_priors`` puts the module docstring's priors on the fitted ones.
    """
    if model not in MODELS:
        raise EloFitError(f"unknown Elo model {model!r}; models: {', '.join(MODELS)}")
    if nuisance not in NUISANCE_MODES:
        raise EloFitError(f"unknown nuisance mode {nuisance!r}; modes: {', '.join(NUISANCE_MODES)}")
    counts = np.asarray(counts, dtype=np.float64)
    how = "given" if advantage is not None and draw is not None else "fitted"
    if how == "fitted" and (nuisance == "fixed" or (nuisance == "auto" and counts.sum() < FIT_NUISANCE_MIN_GAMES)):
        how = "fixed (defaults)" if advantage is None and draw is None else "fixed (defaults) + given"
        advantage = DEFAULT_ADVANTAGE if advantage is None else advantage
        draw = DEFAULT_DRAW[model] if draw is None else draw
    n = len(players)
    if counts.shape != (n, n, 3):
        raise EloFitError(f"counts must have shape {(n, n, 3)}, got {counts.shape}")
    if (counts < 0).any():
        raise EloFitError("counts must be non-negative")
    anchor = players[0] if anchor is None else anchor
    if anchor not in players:
        raise EloFitError(f"anchor {anchor!r} is not in the pool {players}")
    games = counts.sum(axis=(1, 2)) + counts.sum(axis=(0, 2))
    if (games == 0).any():
        raise EloFitError(f"players without games cannot be rated: {[p for p, g in zip(players, games) if g == 0]}")
    met = (counts.sum(-1) + counts.sum(-1).T) > 0
    np.fill_diagonal(met, False)
    total = counts.copy()
    total[..., 1] += met * (prior_draws / 2.0)  # virtual draws, half with each colour
    if model == "davidson" and draw is not None and draw <= 0:
        raise EloFitError(f"Davidson ν must be > 0, got {draw}")
    draw_fixed = None
    if draw is not None:
        draw_fixed = math.log(draw * C_ELO) if model == "bayeselo" else math.log(draw)
        if model == "bayeselo" and draw <= 0:
            raise EloFitError(f"drawelo must be > 0, got {draw}")
    adv_fixed = None if advantage is None else advantage * C_ELO

    free = np.ones(n, dtype=bool)
    free[players.index(anchor)] = False
    args = (total, free, anchor_rating * C_ELO, model, adv_fixed, draw_fixed, weak_priors)
    x0 = np.zeros(n - 1 + (adv_fixed is None) + (draw_fixed is None))
    x0[: n - 1] = anchor_rating * C_ELO
    if draw_fixed is None:
        x0[-1] = DRAW_PRIOR[model]
    scale = 1.0 / max(float(total.sum()), 1.0)  # per-game objective: tolerances independent of the game count

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g, _ = _objective(x, *args)
        return f * scale, g * scale

    # Newton with a trust region on the exact Hessian: a handful of iterations to machine precision
    res = scipy.optimize.minimize(
        fun,
        x0,
        jac=True,
        hess=lambda x: _objective(x, *args)[2] * scale,
        method="trust-exact",
        options={"gtol": 1e-9, "maxiter": 200},
    )
    hess = _objective(res.x, *args)[2]
    try:
        cov_x = np.linalg.inv(hess)
        ok = bool(np.all(np.linalg.eigvalsh(hess) > 0) and np.isfinite(cov_x).all())
    except np.linalg.LinAlgError:
        ok = False
    converged = bool(res.success or float(np.abs(res.jac).max()) < 1e-8)  # "precision loss" at the optimum is fine
    if not converged:
        raise EloFitError(
            f"the Elo fit did not converge ({res.message}); with prior_draws=0 or "
            f"weak_priors=False an unbeaten or winless player has no finite rating"
        )
    if not ok:
        raise EloFitError(
            "the information matrix is singular: the pool is disconnected or a player is "
            "unbeaten/winless; use prior_draws > 0 or more games"
        )
    ratings = np.full(n, anchor_rating, dtype=np.float64)
    ratings[free] = res.x[: n - 1] / C_ELO
    cov = np.zeros((n, n))
    idx = np.flatnonzero(free)
    cov[np.ix_(idx, idx)] = cov_x[: n - 1, : n - 1] / C_ELO**2
    pos = n - 1
    adv = res.x[pos] / C_ELO if advantage is None else float(advantage)  # adv_fixed is None exactly when advantage is
    pos += adv_fixed is None
    if draw_fixed is None:
        d = math.exp(res.x[pos]) / C_ELO if model == "bayeselo" else math.exp(res.x[pos])
    else:
        assert draw is not None  # draw_fixed is set exactly when draw is
        d = float(draw)
    return EloFit(
        list(players),
        ratings,
        np.sqrt(np.diag(cov)),
        cov,
        model,
        anchor,
        anchor_rating,
        float(adv),
        float(d),
        games.astype(np.int64),
        prior_draws,
        weak_priors,
        float(res.fun) / scale,
        extra={"converged": converged, "message": str(res.message), "iterations": int(res.nit)},
        nuisance=how,
    )


def pair_record(counts: np.ndarray, i: int, j: int) -> tuple[int, int, int]:
    """(W, D, L) of player ``i`` against ``j`` over both colours."""
    w = counts[i, j, 0] + counts[j, i, 2]
    d = counts[i, j, 1] + counts[j, i, 1]
    lo = counts[i, j, 2] + counts[j, i, 0]
    return int(w), int(d), int(lo)


def matrix_dict(players: list[str], m: np.ndarray) -> dict:
    """``{row player: {column player: value}}`` with None for NaN (JSON-ready)."""
    return {
        p: {q: (None if math.isnan(m[i, j]) else float(m[i, j])) for j, q in enumerate(players)}
        for i, p in enumerate(players)
    }


def direct_los_matrix(counts: np.ndarray) -> np.ndarray:
    """``L[i, j]`` = ``los(W, L)`` of i's direct record against j (closed form); NaN on the diagonal."""
    n = counts.shape[0]
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            if i != j:
                w, _, lo = pair_record(counts, i, j)
                out[i, j] = los(w, lo)
    return out


def head_to_head(players: list[str], counts: np.ndarray, base: str) -> list[dict]:
    """Table 1's direct-record columns: each player vs ``base``: W–D–L, score, LOS, score Elo (JSON-ready)."""
    b = players.index(base)
    rows = []
    for i, p in enumerate(players):
        if i == b:
            continue
        w, d, lo = pair_record(counts, i, b)
        n = w + d + lo
        if n == 0:
            continue
        e, e_lo, e_hi = (v if math.isfinite(v) else None for v in score_elo(w, d, lo))  # None: 0 % / 100 %
        rows.append(
            {
                "player": p,
                "opponent": base,
                "games": n,
                "w": w,
                "d": d,
                "l": lo,
                "score": (w + 0.5 * d) / n,
                "los": los(w, lo),
                "elo": e,
                "elo_ci95": [e_lo, e_hi],
            }
        )
    return rows


def _f(x: float, fmt: str = "{:+.1f}") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def ladder_markdown(fit: EloFit, counts: np.ndarray, base: str | None = None) -> str:
    """Markdown: rating table, pairwise records, head-to-head vs ``base``, LOS matrix."""
    players = fit.players
    order = np.argsort(-fit.ratings)
    drawname = "drawelo" if fit.model == "bayeselo" else "ν"
    out = [
        f"### Ladder ({fit.model}; {fit.anchor} fixed at {fit.anchor_rating:g}; white adv "
        f"{fit.advantage:+.1f}, {drawname} {fit.draw:.3g} ({fit.nuisance}); prior {fit.prior_draws:g} "
        f"virtual draws/pair)",
        "",
        f"Ladder Elo: the {fit.model} model fitted to every game of the pool (its Elo scale spreads wider "
        f"than a plain score Elo when there are many draws). The pairs table's ΔElo is the logistic score "
        f"Elo of that pair's direct record alone, so the two differ by construction.",
        "",
    ]
    lo, hi = fit.ci95.T
    ladder = [
        [
            rank,
            players[i],
            f"{fit.ratings[i]:+.1f}",
            "anchor" if players[i] == fit.anchor else f"[{lo[i]:+.1f}, {hi[i]:+.1f}]",
            fit.games[i],
        ]
        for rank, i in enumerate(order, 1)
    ]
    out.append(markdown_table(["#", "player", "Elo", "95% CI", "games"], ladder, right={2, 4}))
    pairs = []
    for i in range(len(players)):
        for j in range(i + 1, len(players)):
            w, d, l_ = pair_record(counts, i, j)
            n = w + d + l_
            if n:
                e, e_lo, e_hi = score_elo(w, d, l_)
                pairs.append(
                    [
                        players[i],
                        players[j],
                        n,
                        f"{w}–{d}–{l_}",
                        f"{(w + d / 2) / n:.3f}",
                        f"{los(w, l_):.3f}",
                        f"{_f(e)} [{_f(e_lo)}, {_f(e_hi)}]",
                    ]
                )
    out += [
        "",
        "### Pairs",
        "",
        markdown_table(
            ["A", "B", "games", "W–D–L (A)", "score", "LOS", "ΔElo (score, this pair)"], pairs, right={2, 4, 5}
        ),
    ]
    if base is not None:
        out += [
            "",
            f"### Head-to-head vs {base}",
            "",
            markdown_table(
                ["player", "games", "W–D–L", "score", "LOS"],
                [
                    [r["player"], r["games"], f"{r['w']}–{r['d']}–{r['l']}", f"{r['score']:.3f}", f"{r['los']:.3f}"]
                    for r in head_to_head(players, counts, base)
                ],
                right={1, 3, 4},
            ),
        ]
    m = fit.los_matrix()
    out += [
        "",
        "### LOS matrix (row better than column, from the fit)",
        "",
        markdown_table(
            ["", *(players[j] for j in order)],
            [[players[i], *(_f(m[i, j], "{:.3f}") for j in order)] for i in order],
            right=range(1, len(players) + 1),
        ),
    ]
    return "\n".join(out) + "\n"
