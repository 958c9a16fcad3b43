"""The searched self-play report's table (issue 58): which fine-tuning to use for play with and without
search. Each cell of Maia-1900 against the base at one forward pass and inside pdx's search (16 and 64
nodes), on the 4,956 real Lichess puzzles and on the 999 real human games, read from the committed
records; a record not yet played is "pending".

    python -m reports.searched.table        # rewrites reports/searched/table.md and docs/searched.md's copy

``tests/experiments/test_searched_report.py`` (slow) rebuilds it and compares it with the committed file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from pdx_lightning.experiments.report.seeds import oriented_match

REPORTS = Path(__file__).resolve().parents[1]
HERE = REPORTS / "searched"
PENDING = "pending"
BASE = "base"


@dataclass(frozen=True)
class Cell:
    label: str  # the table's row name
    what: str  # how it was trained
    # "pass" / "n16" / "n64" / "best" (64 nodes, each side at its best PolicyTemperature; absent: not
    # played) -> record path under reports/ (no .json)
    matches: dict[str, str | None]
    player: str  # the cell's player label in those records
    model: str | None  # its name in real_puzzles.json and humans.json (None: not scored)
    scores: str = "searched"  # the folder under reports/ holding those two records for this cell
    best_player: str | None = None  # its label in the "best" record (the cell at its matched temperature)


CELLS = (
    Cell("searched, draw A", "searched self-play, 16 nodes, β 0, 750 steps (AMD EPYC)",
         {"pass": "searched/pass_searched", "n16": "searched/n16_searched", "n64": None}, "searched", None),
    Cell("searched, draw B", "the same config and seed, retrained (Intel Xeon)",
         {"pass": "searched/pass_searched_b", "n16": "searched/n16_searched_b", "n64": "searched/n64_searched_b"},
         "searched_b", "runs/exp58/searched_b.ckpt"),
    Cell("forward KL, β 0.01 (fwd_s3)", "PDX, one forward pass per move, 2,000 steps (matches: the committed "
         "AMD cell; puzzles and human games: its retrain on the Intel Xeon, other weights)",
         {"pass": "beyond_paper/records/pdx_fwd_s3", "n16": "search/pdxsearch_n16_fwd_s3",
          "n64": "searched/n64_fwd_s3"}, "fwd_s3", "runs/exp58/fwd_s3.ckpt"),
    Cell("forward KL, β 0.1", "fwd_s3 with a 10× heavier anchor",
         {"pass": "searched/pass_fwd_b01", "n16": "searched/n16_fwd_b01", "n64": "searched/n64_fwd_b01"},
         "fwd_b01", "runs/exp58/fwd_b01.ckpt"),
    Cell("forward KL, β 1", "fwd_s3 with a 100× heavier anchor",
         {"pass": "searched/pass_fwd_b1", "n16": "searched/n16_fwd_b1", "n64": "searched/n64_fwd_b1"},
         "fwd_b1", "runs/exp58/fwd_b1.ckpt"),
    Cell("β 0.01, value held", "fwd_s3 with its value head held to the base's W/D/L (issue 63's recipe: "
         "value_anchor 10, conf/sweep/maia_value_hold.yaml; AMD EPYC)",
         {"pass": "search_strength/pass_vh_b001", "n16": "search_strength/n16_vh_b001",
          "n64": "search_strength/n64_vh_b001", "best": "search_strength/n64best_vh_b001"}, "vh_b001",
         "runs/exp63/vh_b001.ckpt", "search_strength", "vh_b001_t3.138"),
    Cell("β 0.1, value held", "the β 0.1 cell with its value head held the same way",
         {"pass": "search_strength/pass_vh_b01", "n16": "search_strength/n16_vh_b01",
          "n64": "search_strength/n64_vh_b01", "best": "search_strength/n64best_vh_b01"}, "vh_b01",
         "runs/exp63/vh_b01.ckpt", "search_strength", "vh_b01_t2.725"),
    Cell("β 0.01, value held, second draw", "the same at seed 4",
         {"pass": "search_strength/pass_vh_b001_s4", "n16": None, "n64": None,
          "best": "search_strength/n64best_vh_b001_s4"}, "vh_b001_s4", "runs/exp63/vh_b001_s4.ckpt",
         "search_strength", "vh_b001_s4_t3.157"),
    Cell("β 0.1, value held, second draw", "the same at seed 4",
         {"pass": None, "n16": None, "n64": "search_strength/n64_vh_b01_s4"}, "vh_b01_s4", "runs/exp63/vh_b01_s4.ckpt",
         "search_strength"),
)  # fmt: skip
BASE_MODEL = "base:maia-1900"
BEST_BASE = "base_t2.6"  # the base's label in the best-against-best records


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def match_elo(record: str | None, player: str, base: str = BASE) -> str:
    """``player``'s score Elo against ``base`` (± its 95 % half-width) in one match record."""
    doc = _load(REPORTS / f"{record}.json") if record else None
    m = oriented_match(doc, player, base) if doc else None
    if m is None:
        return PENDING if record else "not played"
    sign = 1.0 if m["a"] == player else -1.0
    return f"{sign * m['elo'] + 0.0:+.1f} ± {m['elo_error']:.1f}"  # + 0.0: an even score reads +0.0, not -0.0


def _by_name(doc: dict | None, name: str | None) -> dict | None:
    if doc is None or name is None:
        return None
    return next((m for m in doc["models"] if m["name"] == name), None)


def puzzles(doc: dict | None, cell: Cell) -> str:
    """Accuracy on the real puzzles and its paired difference with the base (McNemar p)."""
    m = _by_name(doc, cell.model)
    if m is None:
        return PENDING if cell.model else "not scored"
    paired = next(p for p in doc["paired"] if p["model"] == cell.model)  # type: ignore[index]
    acc = 100 * m["summary"]["acc"]
    return f"{acc:.1f} ({100 * paired['acc_diff']:+.1f}, p {paired['mcnemar_p']:.2g})"


def humans(doc: dict | None, cell: Cell | None) -> str:
    """Top-1 move matching, the policy's NLL and the value head's NLL of the game results."""
    m = _by_name(doc, BASE_MODEL if cell is None else cell.model)
    if m is None:
        return PENDING if cell is None or cell.model else "not scored"
    o = m["overall"]
    return f"{100 * o['top1']:.1f} / {o['nll']:.3f} / {o['value_nll']:.3f}"


def _scores(folder: str) -> tuple[dict | None, dict | None]:
    """A folder's ``real_puzzles.json`` and ``humans.json`` (None where absent)."""
    return _load(REPORTS / folder / "real_puzzles.json"), _load(REPORTS / folder / "humans.json")


def table() -> str:
    real, games = _scores("searched")
    base = _by_name(real, BASE_MODEL)
    head = (
        "| cell | one forward pass | pdx's search, 16 nodes | pdx's search, 64 nodes "
        "| 64 nodes, best against best | real puzzles: acc. % (Δ, p) | human games: top-1 % / NLL / value NLL |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    base_acc = f"{100 * base['summary']['acc']:.1f}" if base else PENDING
    lines.append(f"| Maia-1900 (the base) | 0 | 0 | 0 | 0 | {base_acc} | {humans(games, None)} |")
    for c in CELLS:
        elo = [match_elo(c.matches[k], c.player) for k in ("pass", "n16", "n64")]
        elo.append(match_elo(c.matches.get("best"), c.best_player or c.player, BEST_BASE))
        c_real, c_games = _scores(c.scores)
        lines.append(f"| {c.label} | {' | '.join(elo)} | {puzzles(c_real, c)} | {humans(c_games, c)} |")
    cells = "\n".join(f"- {c.label}: {c.what}." for c in CELLS)
    return (
        "Elo against Maia-1900 (1,000 games each, the 500 paired openings of `data/openings_uho_600.epd`, "
        "both sides at the same setting; ± the 95 % half-width; best against best: the base at its best "
        "PolicyTemperature 2.6, the cell at the one that spreads its priors as the base's there, "
        "`reports/search_strength`). Real puzzles: the 4,956 of "
        "`data/lichess/` (the paired difference with the base and McNemar's p). Human games: the 999 real "
        "games of `data/lichess/games_2021-10_999.pgn.zst` (45,963 positions).\n\n"
        + "\n".join(lines)
        + "\n\n"
        + cells
        + "\n"
    )


PAGE = REPORTS.parent / "docs" / "searched.md"
PAGE_START = "<!-- table: python -m reports.searched.table writes what follows, to the end marker -->\n"
PAGE_END = "<!-- end of table -->\n"


def on_page(page: str, text: str) -> str:
    """``page`` with the text between its table markers replaced by ``text``."""
    head, rest = page.split(PAGE_START, 1)
    return head + PAGE_START + text + PAGE_END + rest.split(PAGE_END, 1)[1]


def main() -> int:
    text = table()
    (HERE / "table.md").write_text(text)
    PAGE.write_text(on_page(PAGE.read_text(), text))
    print(f"wrote {HERE / 'table.md'} and its copy in {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
