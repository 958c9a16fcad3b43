"""The arena's results: tallies, the per-pair match blocks, the SPRT as games finish, the report.

The report has, per pair, the lines cutechess-cli and fastchess print (``evaluation.match``):
"Score of A vs B: W - L - D [score] N", the score Elo with its 95 % error, LOS and draw ratio, and
the pentanomial record of the paired openings; then the ladder (``evaluation.elo``). An SPRT of the
first player's Elo over the second's (:class:`SprtMonitor`) is updated after every finished game
and can stop the scheduling of new ones. :func:`arena_report` builds the JSON document (its markdown
under ``"markdown"``) from plain data, :class:`ArenaRun`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import numpy as np

from pdx_lightning.evaluation import elo, match
from pdx_lightning.evaluation.arena_game import Game
from pdx_lightning.runtime.environment import environment


def tally(games: list[Game], n: int) -> np.ndarray:
    """``(n, n, 3)`` counts: [white, black] = (White wins, draws, Black wins)."""
    counts = np.zeros((n, n, 3), dtype=np.int64)
    col = {chess.WHITE: 0, None: 1, chess.BLACK: 2}
    for g in games:
        assert g.end is not None  # tallied once finished
        counts[g.white, g.black, col[g.end.winner]] += 1
    return counts


def pair_scores(games: list[Game], a: int, b: int) -> list[float]:
    """A's scores (0, ½, 1, 1½, 2) over the complete opening pairs of A and B (games 2k and 2k+1 of the
    schedule: one opening, both colours)."""
    by_pair: dict[int, list[Game]] = {}
    for g in games:
        if {g.white, g.black} == {a, b} and g.end is not None:
            by_pair.setdefault(g.id // 2, []).append(g)
    return [sum(g.score_for(a) for g in gs) for _, gs in sorted(by_pair.items()) if len(gs) == 2]


def match_summaries(games: list[Game], counts: np.ndarray, labels: list[str]) -> list[match.MatchSummary]:
    """One cutechess-style summary per pair that met (A = the earlier player), from the tallies."""
    out = []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            w, d, lo = elo.pair_record(counts, i, j)
            if w + d + lo:
                out.append(match.summarize(labels[i], labels[j], w, lo, d, pair_scores(games, i, j)))
    return out


class SprtMonitor:
    """Tracks the SPRT of player 0 against player 1 as games finish (pentanomial, complete pairs)."""

    def __init__(self, test: match.SPRT) -> None:
        self.test = test
        self.halves: dict[int, float] = {}
        self.pairs: list[float] = []
        self.finished = 0
        self.decision: str | None = None
        self.llr = 0.0
        self.decided_after: int | None = None  # games finished when the bound was crossed
        self.llr_at_decision: float | None = None

    def __call__(self, g: Game) -> None:
        self.finished += 1
        k = g.id // 2
        if k in self.halves:
            self.pairs.append(self.halves.pop(k) + g.score_for(0))
            self.llr, decision = match.sprt_status(self.test, 0, 0, 0, self.pairs)
            if decision and self.decision is None:
                self.decision, self.decided_after, self.llr_at_decision = decision, self.finished, self.llr
        else:
            self.halves[k] = g.score_for(0)

    def stop(self) -> bool:
        return self.decision is not None

    def lines(self, played: int, scheduled: int) -> list[str]:
        """The SPRT's result as text (cutechess-cli's "SPRT: llr ..." line, then how the stop went)."""
        t = self.test
        lo, hi = t.bounds
        llr, final = match.sprt_status(t, 0, 0, 0, self.pairs)
        verdicts = {"H1": "H1 was accepted", "H0": "H0 was accepted", None: "no decision"}
        verdict = verdicts[self.decision or final]
        lines = [
            f"SPRT: llr {llr:.3g} ({100 * llr / hi if llr >= 0 else 100 * llr / -lo:.1f}%), "
            f"lbound {lo:.3g}, ubound {hi:.3g} - {verdict} (elo0 {t.elo0:g}, elo1 {t.elo1:g}, alpha "
            f"{t.alpha:g}, beta {t.beta:g}; pentanomial, {len(self.pairs)} complete pairs)"
        ]
        if self.decided_after is not None:
            lines.append(
                f"SPRT stop: the bound was crossed after {self.decided_after} finished games (llr "
                f"{self.llr_at_decision:.3g}); no game "
                f"was started after that, the {played - self.decided_after} games in flight were "
                f"played out and are counted ({played} of {scheduled} scheduled games played; games "
                f"run in batches of up to --concurrency)"
            )
        else:
            lines.append(f"SPRT: no bound crossed in {played} games (the --games maximum)")
        return lines

    def as_dict(self, played: int, scheduled: int) -> dict[str, Any]:
        """The report's ``"sprt"`` entry (``text``: :meth:`lines`)."""
        t = self.test
        llr, final = match.sprt_status(t, 0, 0, 0, self.pairs)
        return {
            "elo0": t.elo0,
            "elo1": t.elo1,
            "alpha": t.alpha,
            "beta": t.beta,
            "bounds": list(t.bounds),
            "llr": llr,
            "decision": self.decision or final,
            "llr_at_decision": self.llr_at_decision,
            "pairs": len(self.pairs),
            "decided_after_games": self.decided_after,
            "games_played": played,
            "games_scheduled": scheduled,
            "text": self.lines(played, scheduled),
        }


@dataclass
class ArenaRun:
    """One arena run as plain data: what was played and the settings the report states."""

    games: list[Game]
    labels: list[str]
    specs: list[str]  # the --model strings, one per label
    base: str
    anchor: str  # the ladder's fixed player
    seconds: float  # of this run's play (a resumed run's games from the --pgn file took none)
    scheduled: int  # games in the schedule (more than played after an SPRT stop, or in a shard)
    sampled: bool
    openings: str  # the opening suite's path
    config: dict[str, Any]  # the command's options, recorded in the report as given
    elo_model: str = "bayeselo"
    anchor_elo: float = 0.0
    prior_draws: float = 2.0
    sprt: SprtMonitor | None = None
    shard: tuple[int, int] | None = None  # (K, N): the K-th of N shards of the schedule (--shard)
    # the UCI_Elo scale moved between Stockfish versions: the versions go with the ratings
    stockfish: dict[str, str] = field(default_factory=dict)
    uci_engines: dict[str, str] = field(default_factory=dict)
    resumed: frozenset[int] = frozenset()  # ids of the games read back from a stopped run's --pgn (--resume)
    engine_search: str | None = None  # engines' search kept within a "game" or cleared every "move"; None: no engine


ENGINE_SEARCH = {
    "game": "Engines: each game from `ucinewgame`, its hash and search tree kept between its moves (one game "
    "in flight, `--concurrency 1`).",
    "move": "Engines: every move searched from `ucinewgame` (nothing kept between moves; `--concurrency 1` "
    "keeps a game's search between its moves).",
}


def arena_report(run: ArenaRun) -> dict[str, Any]:
    """The JSON report (with its markdown rendering under ``"markdown"``)."""
    games, labels = run.games, run.labels
    counts = tally(games, len(labels))
    plies = sum(len(g.moves) for g in games)
    new = [g for g in games if g.id not in run.resumed]  # played by this run
    rate = len(new) / max(run.seconds, 1e-9)
    reasons = Counter(g.reason for g in games)
    resumed = f"; {len(run.resumed)} games resumed from a stopped run's PGN, timed: the other {len(new)}"
    head = (
        f"## Arena: {len(games)} games, {len(labels)} players, {'sampled' if run.sampled else 'argmax'}; "
        f"openings {Path(run.openings).name}; {run.seconds:.1f} s ({rate:.2f} games/s, "
        f"{sum(len(g.moves) for g in new) / max(run.seconds, 1e-9):.0f} plies/s)"
        + (resumed if run.resumed else "")
        + "\n\n"
    )
    if run.shard is not None:
        k, n = run.shard
        head += (
            f"Shard {k}/{n}: the opening pairs p with p mod {n} = {k - 1} only ({len(games)} of the schedule's "
            f"{run.scheduled} games). For the whole match, join the shards' PGN files and rerun without "
            "`--shard`, with `--resume` on the joined file.\n\n"
        )
    head += "Terminations: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    if run.engine_search is not None:
        head += "\n\n" + ENGINE_SEARCH[run.engine_search]
    report = {
        "config": run.config,
        "players": [{"label": lab, "model": s} for lab, s in zip(labels, run.specs)],
        "base": run.base,
        "seconds": run.seconds,
        "resumed_games": len(run.resumed),
        "shard": list(run.shard) if run.shard is not None else None,
        "engine_search": run.engine_search,
        "games_per_s": rate,
        "plies": plies,
        "terminations": dict(reasons),
        "counts": counts.tolist(),
        "games": [
            {
                "white": labels[g.white],
                "black": labels[g.black],
                "opening": g.opening.id,
                "round": g.round,
                "result": g.result,
                "reason": g.reason,
                "plies": len(g.moves),
            }
            for g in games
        ],
        "head_to_head": elo.head_to_head(labels, counts, run.base),
        "los_direct": elo.matrix_dict(labels, elo.direct_los_matrix(counts)),
    }
    matches = match_summaries(games, counts, labels)
    report["matches"] = [_match_dict(m) for m in matches]
    block = [line for m in matches for line in (*m.lines(), "")]
    if run.sprt is not None:
        report["sprt"] = run.sprt.as_dict(len(games), run.scheduled)
        block += report["sprt"]["text"] + [""]
    head += (
        "\n\n### Matches (cutechess-cli / fastchess style)\n\nPer pair, A's record: the score Elo of "
        "this pair's games alone (± 95 %), LOS from wins and losses, and the pentanomial record of "
        "its opening pairs (A's pair score 0, ½, 1, 1½, 2).\n\n```\n" + "\n".join(block).rstrip() + "\n```"
    )
    try:
        fit = elo.fit_elo(
            labels,
            counts,
            model=run.elo_model,
            anchor=run.anchor,
            anchor_rating=run.anchor_elo,
            prior_draws=run.prior_draws,
        )
        report["elo"] = fit.as_dict()
        md = head + "\n\n" + elo.ladder_markdown(fit, counts, run.base)
    except elo.EloFitError as e:
        report["elo"] = {"error": str(e)}
        md = head + f"\n\nElo fit failed: {e}\n"
    report["markdown"] = md
    report["stockfish"] = run.stockfish
    report["uci_engines"] = run.uci_engines
    # what made the games: versions, commit, the CPU kernels in force, threads, the CPU (runtime.environment)
    report["environment"] = environment()
    return report


def _match_dict(m: match.MatchSummary) -> dict[str, Any]:
    """A pair's summary as JSON (infinite Elo at a 0 % / 100 % score becomes null when written)."""
    return {
        "a": m.a,
        "b": m.b,
        "wins": m.wins,
        "losses": m.losses,
        "draws": m.draws,
        "games": m.games,
        "score": m.score,
        "elo": m.elo,
        "elo_error": m.elo_error,
        "los": m.los,
        "draw_ratio": m.draw_ratio,
        "pentanomial": list(m.pentanomial) if m.pentanomial else None,
        "ptnml_elo": m.ptnml_elo,
        "ptnml_error": m.ptnml_error,
        "lines": m.lines(),
    }
