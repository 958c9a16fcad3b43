"""Issue 63's attribution table: how much of a fine-tuned cell's loss inside pdx's 64-node search its
policy costs, how much its value head, and how much the two cost together beyond their sum, read from
the games of ``attribution.yaml``'s matches.

    python -m reports.search_strength.attribution      # writes reports/search_strength/attribution.md

Each row is a cell played against the base three ways: its policy with the base's value
(``PREFIX_policy``), the base's policy with its value (``PREFIX_value``) and the whole cell
(``PREFIX_whole``). A match's games come from its record ``PREFIX_PART.json`` or, while it is still
being played, from ``partial/PREFIX_PART.pgn.xz`` (``pdx matches save``); neither is "pending".

Each match's Elo is its own record's: the score Elo with the trinomial 95 % half-width
(:func:`pdx_lightning.evaluation.match.summarize`, what ``pdx arena`` prints). The two derived columns,
the heads' costs added (``E_policy + E_value``) and what the whole cell loses beyond them
(``E_whole - E_policy - E_value``), come from the opening pairs that all three matches played, with a
paired bootstrap over those pairs (``scipy.stats.bootstrap``, ``paired=True``): the three matches share
their openings, so an opening that is hard for the cell is hard in all three, and resampling the pairs
jointly keeps that correlation instead of assuming the matches independent.
"""

from __future__ import annotations

import io
import json
import lzma
import math
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import chess.pgn
import numpy as np
from scipy import stats

from pdx_lightning.evaluation.match import summarize

HERE = Path(__file__).resolve().parent
PENDING = "pending"
PARTS = ("policy", "value", "whole")
RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True)
class Row:
    label: str  # the table's row name
    prefix: str  # the matches PREFIX_policy / PREFIX_value / PREFIX_whole
    players: tuple[str, str, str]  # the cell's player in each: policy, value, whole (labels in the list)
    base: str  # the base's player label
    temperature: str  # the policy softmax temperatures, as the table prints them


ROWS = (
    Row(
        "fwd_s3 (forward KL, β 0.01), both at 1.8",
        "n64t18_fwd_s3",
        ("fwd_s3_policy", "fwd_s3_value", "fwd_s3"),
        "base",
        "1.8 / 1.8",
    ),
    Row(
        "fwd_s3, best against best",
        "nbest_fwd_s3",
        ("fwd_s3_policy_t3169", "fwd_s3_value_t26", "fwd_s3_t3169"),
        "base_t26",
        "cell's policy 3.169, base's 2.6 / 2.6",
    ),
)


@dataclass(frozen=True)
class Elo:
    value: float
    half: float  # 95 % half-width (or the bootstrap interval's half-width)

    def __str__(self) -> str:
        return f"{self.value + 0.0:+.1f} ± {self.half:.1f}"  # + 0.0: an even score reads +0.0


@dataclass(frozen=True)
class Game:
    white: str
    black: str
    opening: str
    result: str  # "1-0", "0-1", "1/2-1/2"


def load_games(folder: Path, name: str) -> tuple[list[Game], str] | None:
    """The games of match ``name``: its record ``NAME.json`` if written, else ``partial/NAME.pgn.xz``;
    with where they came from. None if neither exists."""
    record = folder / f"{name}.json"
    if record.is_file():
        doc = json.loads(record.read_text())
        games = [Game(g["white"], g["black"], g["opening"], g["result"]) for g in doc["games"]]
        return games, record.name
    partial = folder / "partial" / f"{name}.pgn.xz"
    if partial.is_file():
        text = lzma.decompress(partial.read_bytes()).decode()
        stream, games = io.StringIO(text), []
        while (h := chess.pgn.read_headers(stream)) is not None:
            games.append(Game(h["White"], h["Black"], h.get("Opening", ""), h["Result"]))
        return games, f"partial/{partial.name}"
    return None


def _points(game: Game, player: str) -> float:
    """``player``'s points in ``game`` (1, ½ or 0)."""
    if game.result == "1/2-1/2":
        return 0.5
    white_won = game.result == "1-0"
    return 1.0 if white_won == (game.white == player) else 0.0


def pair_scores(games: list[Game], player: str, base: str, where: str) -> dict[str, float]:
    """``player``'s score (0..2) in each opening it played with both colours against ``base``."""
    by_opening: dict[str, list[float]] = defaultdict(list)
    for g in games:
        if {g.white, g.black} != {player, base}:
            raise ValueError(f"{where}: a game of {g.white!r} against {g.black!r}, not {player!r} against {base!r}")
        if g.result not in ("1-0", "0-1", "1/2-1/2"):
            raise ValueError(f"{where}: an unfinished game ({g.result!r}) on opening {g.opening!r}")
        by_opening[g.opening].append(_points(g, player))
    return {o: sum(s) for o, s in by_opening.items() if len(s) == 2}


def match_elo(scores: dict[str, float], games: list[Game], player: str) -> Elo:
    """The match's score Elo and trinomial half-width, as ``pdx arena`` prints them."""
    pts = [_points(g, player) for g in games]
    m = summarize(player, "base", pts.count(1.0), pts.count(0.0), pts.count(0.5), list(scores.values()))
    return Elo(m.elo, m.elo_error)


def _elo_of_means(*pair_score_arrays: np.ndarray, axis: int = -1) -> tuple[np.ndarray, ...]:
    out = []
    with np.errstate(divide="ignore"):  # a resample scoring 0 % or 100 %: ±inf Elo, as score_to_elo
        for a in pair_score_arrays:
            s = np.mean(a, axis=axis) / 2.0
            out.append(-400.0 * np.log10(1.0 / s - 1.0))
    return tuple(out)


def added(p: np.ndarray, v: np.ndarray, w: np.ndarray, axis: int = -1) -> np.ndarray:
    ep, ev, _ = _elo_of_means(p, v, w, axis=axis)
    return ep + ev


def beyond(p: np.ndarray, v: np.ndarray, w: np.ndarray, axis: int = -1) -> np.ndarray:
    ep, ev, ew = _elo_of_means(p, v, w, axis=axis)
    return ew - ep - ev


def paired(statistic, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Elo:
    """``statistic`` on the pairs and its 95 % paired-bootstrap interval, as a value ± the interval's
    half-width (the interval itself need not be symmetric; its half-width is what the table prints)."""
    value = float(statistic(*arrays))
    if not math.isfinite(value):
        return Elo(value, math.inf)
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore")  # a few pairs only: resamples at 0 % or 100 % (an infinite interval)
        res = stats.bootstrap(
            arrays, statistic, paired=True, vectorized=True, n_resamples=RESAMPLES, confidence_level=0.95,
            method="percentile", random_state=np.random.default_rng(SEED),
        )  # fmt: skip
    lo, hi = (float(x) for x in res.confidence_interval)
    half = (hi - lo) / 2.0 if math.isfinite(lo) and math.isfinite(hi) else math.inf
    return Elo(value, half)


@dataclass(frozen=True)
class Result:
    cells: list[str]  # the table row's cells after the label and temperature
    sources: list[str]  # where each part's games came from


def row(folder: Path, r: Row) -> Result:
    scores, elos, games_n, sources = {}, {}, {}, []
    for part, player in zip(PARTS, r.players):
        name = f"{r.prefix}_{part}"
        got = load_games(folder, name)
        if got is None:
            continue
        games, where = got
        scores[part] = pair_scores(games, player, r.base, where)
        elos[part] = match_elo(scores[part], games, player)
        games_n[part] = len(games)
        sources.append(where)
    played = " / ".join(f"{games_n[p]:,}" if p in games_n else PENDING for p in PARTS)
    derived = [PENDING, PENDING, PENDING]
    if len(scores) == 3:
        common = sorted(set.intersection(*(set(s) for s in scores.values())))
        if common:
            arrays = tuple(np.array([scores[p][o] for o in common]) for p in PARTS)
            derived = [f"{len(common):,}", str(paired(added, arrays)), str(paired(beyond, arrays))]
    cols = [str(elos[p]) if p in elos else PENDING for p in PARTS]
    return Result([played, *cols[:2], derived[1], cols[2], derived[2], derived[0]], sources)


def table(folder: Path = HERE, rows: tuple[Row, ...] = ROWS) -> str:
    head = (
        "| cell | PolicyTemperature (policy arm / base) | games (policy / value / whole) "
        "| its policy, the base's value | the base's policy, its value | the two costs added | whole cell "
        "| beyond the sum (whole − added) "
        "| opening pairs in all three |"
    )
    results = [(r, row(folder, r)) for r in rows]
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.label} | {r.temperature} | " + " | ".join(res.cells) + " |" for r, res in results]
    sources = sorted({s for _, res in results for s in res.sources if s.startswith("partial/")})
    note = (
        "\n\nNot finished (the games so far, saved by `pdx matches save`): "
        + ", ".join(f"`{s}`" for s in sources)
        + "."
        if sources
        else ""
    )
    return (
        "Elo of each player against Maia-1900 inside pdx's search at 64 nodes (the paired openings of "
        "`data/openings_uho_600.epd`). Each match: its score Elo ± the trinomial 95 % half-width. The added "
        "and beyond-the-sum columns: on the opening pairs all three matches played, ± the half-width of a "
        f"95 % paired bootstrap over those pairs ({RESAMPLES:,} resamples, percentile, seed {SEED}). "
        "The best-against-best row's base plays at 2.6 (its best: +107.2 ± 19.7 over itself at 1.359); "
        "its composed players take the temperature of the network whose policy they search with "
        "(the cell's entropy-matched 3.169, or the base's 2.6)." + note + "\n\n" + "\n".join(lines) + "\n"
    )


def main() -> int:
    out = HERE / "attribution.md"
    out.write_text(table())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
