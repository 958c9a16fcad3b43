"""Head-to-head match statistics in the form cutechess-cli and fastchess print.

* the trinomial line: ``Score of A vs B: W - L - D  [score] N``, the Elo difference from the score
  with its 95 % error, LOS and draw ratio (cutechess-cli's "Elo difference: x +/- y, LOS: z %,
  DrawRatio: w %"), via :func:`pdx_lightning.evaluation.elo.score_elo` and ``elo.los``;
* the pentanomial record of paired openings (each opening played with both colours): counts of
  pair scores 0, ½, 1, 1½, 2 for A, and the Elo difference with an error from the variance of
  pair scores (fastchess's "Ptnml(0-2)"), which removes the opening's share of the variance;
* a sequential probability ratio test (SPRT) on the logistic-Elo hypotheses H0: elo = elo0 vs
  H1: elo = elo1, with the normal (GSPRT) approximation of the log-likelihood ratio used by
  fishtest/fastchess: ``LLR = n·(s1 − s0)·(2·x̄ − s0 − s1) / (2·σ²)`` over n i.i.d. units (games
  for the trinomial form, pairs for the pentanomial form; x̄, σ² their mean and variance in score
  units, s0 and s1 the expected unit scores under H0 and H1), stopped at the Wald bounds
  ``log(β/(1−α))`` and ``log((1−β)/α)``. An approximation (Van den Bergh's), stated as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdx_lightning.evaluation.elo import Z95, los, score_elo, score_to_elo

PENTANOMIAL_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)


def elo_to_score(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger (logistic Elo)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


@dataclass(frozen=True)
class MatchSummary:
    """A's record against B and the numbers derived from it."""

    a: str
    b: str
    wins: int
    losses: int
    draws: int
    elo: float
    elo_error: float  # half-width of the 95 % interval, as cutechess prints "+/-"
    los: float
    draw_ratio: float
    pentanomial: tuple[int, int, int, int, int] | None = None
    ptnml_elo: float | None = None
    ptnml_error: float | None = None

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    def lines(self) -> list[str]:
        """The lines cutechess-cli / fastchess users read."""
        out = [
            f"Score of {self.a} vs {self.b}: {self.wins} - {self.losses} - {self.draws}  "
            f"[{self.score:.3f}] {self.games}",
            f"Elo difference: {_fmt(self.elo)} +/- {_fmt(self.elo_error, sign=False)}, "
            f"LOS: {100 * self.los:.1f} %, DrawRatio: {100 * self.draw_ratio:.1f} %",
        ]
        if self.pentanomial is not None:
            out.append(
                f"Ptnml(0-2): [{', '.join(map(str, self.pentanomial))}], "
                f"Elo (pairs): {_fmt(self.ptnml_elo)} +/- {_fmt(self.ptnml_error, sign=False)}"
            )
        return out


def _fmt(x: float | None, sign: bool = True) -> str:
    if x is None or math.isnan(x):
        return "nan"
    if math.isinf(x):
        return ("+" if x > 0 else "-") + "inf" if sign else "inf"
    return f"{x:+.2f}" if sign else f"{x:.2f}"


def pentanomial(pair_scores: list[float]) -> tuple[int, int, int, int, int]:
    """Counts of A's pair scores 0, ½, 1, 1½, 2 (one pair = one opening with both colours)."""
    counts = [0] * 5
    for s in pair_scores:
        k = round(2 * s)
        if not (0 <= k <= 4 and math.isclose(2 * s, k)):
            raise ValueError(f"a pair score must be one of 0, 0.5, 1, 1.5, 2, got {s}")
        counts[k] += 1
    return tuple(counts)  # type: ignore[return-value]


def pentanomial_elo(counts: tuple[int, ...]) -> tuple[float, float]:
    """Elo difference and 95 % half-width from pentanomial counts (per-game score = pair score / 2)."""
    n = sum(counts)
    if n == 0:
        return 0.0, math.inf
    xs = [s / 2 for s in PENTANOMIAL_SCORES]
    mu = sum(c * x for c, x in zip(counts, xs)) / n
    var = sum(c * (x - mu) ** 2 for c, x in zip(counts, xs)) / n
    half = Z95 * math.sqrt(var / n)
    lo, hi = score_to_elo(mu - half), score_to_elo(mu + half)
    return score_to_elo(mu), (hi - lo) / 2


def summarize(
    a: str, b: str, wins: int, losses: int, draws: int, pair_scores: list[float] | None = None
) -> MatchSummary:
    """Everything :meth:`MatchSummary.lines` prints, from A's record (and its paired-opening scores)."""
    elo, lo, hi = score_elo(wins, draws, losses)
    n = wins + losses + draws
    ptn = pentanomial(pair_scores) if pair_scores else None
    p_elo, p_err = pentanomial_elo(ptn) if ptn else (None, None)
    return MatchSummary(
        a, b, wins, losses, draws, elo, (hi - lo) / 2, los(wins, losses), draws / n if n else 0.0, ptn, p_elo, p_err
    )


@dataclass(frozen=True)
class SPRT:
    """H0: elo = elo0 vs H1: elo = elo1 (logistic Elo), error rates alpha (false H1) and beta (false H0)."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not (0 < self.alpha < 0.5 and 0 < self.beta < 0.5):
            raise ValueError(f"SPRT alpha and beta must lie in (0, 0.5), got {self.alpha}, {self.beta}")
        if not self.elo1 > self.elo0:
            raise ValueError(f"SPRT needs elo1 > elo0, got elo0={self.elo0}, elo1={self.elo1}")

    @property
    def bounds(self) -> tuple[float, float]:
        return math.log(self.beta / (1 - self.alpha)), math.log((1 - self.beta) / self.alpha)

    def llr(
        self,
        unit_scores: list[float] | None = None,
        *,
        counts: tuple[int, ...] | None = None,
        values: tuple[float, ...] | None = None,
    ) -> float:
        """GSPRT log-likelihood ratio over i.i.d. units scored in [0, 1] (games, or pairs / 2).

        Pass the unit scores, or ``counts`` of each value in ``values``."""
        if unit_scores is not None:
            vals = list(unit_scores)
            n = len(vals)
            mu = sum(vals) / n if n else 0.0
            var = sum((v - mu) ** 2 for v in vals) / n if n else 0.0
        else:
            if counts is None or values is None:  # sum()/zip() over None would raise the same TypeError
                raise TypeError("llr needs unit_scores, or counts and values")
            n = sum(counts)
            mu = sum(c * v for c, v in zip(counts, values)) / n if n else 0.0
            var = sum(c * (v - mu) ** 2 for c, v in zip(counts, values)) / n if n else 0.0
        if n == 0 or var <= 0.0:
            return 0.0
        s0, s1 = elo_to_score(self.elo0), elo_to_score(self.elo1)
        return n * (s1 - s0) * (2 * mu - s0 - s1) / (2 * var)

    def decide(self, llr: float) -> str | None:
        """``"H1"`` (A is at least elo1 stronger), ``"H0"``, or None (keep playing)."""
        lo, hi = self.bounds
        return "H1" if llr >= hi else "H0" if llr <= lo else None


def sprt_status(
    test: SPRT, wins: int, losses: int, draws: int, pair_scores: list[float] | None = None
) -> tuple[float, str | None]:
    """LLR and decision: pentanomial (pairs) when pair scores are given, else trinomial (games)."""
    if pair_scores:
        ptn = pentanomial(pair_scores)
        llr = test.llr(counts=ptn, values=tuple(s / 2 for s in PENTANOMIAL_SCORES))
    else:
        llr = test.llr(counts=(losses, draws, wins), values=(0.0, 0.5, 1.0))
    return llr, test.decide(llr)
