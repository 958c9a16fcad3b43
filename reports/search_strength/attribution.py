"""Issue 63's attribution table: how much of a fine-tuned cell's loss inside pdx's 64-node search its
policy costs, how much its value head, and how much the two cost together beyond their sum, read from
the committed match records of ``attribution.yaml`` (a record not yet played is "pending").

    python -m reports.search_strength.attribution      # writes reports/search_strength/attribution.md

Each match is the cell's player against the base: its policy with the base's value (``NAME_policy``),
the base's policy with its value (``NAME_value``) and the whole cell (``NAME_whole``). The interval of a
sum or of the interaction adds the matches' half-widths in quadrature, as if the matches were
independent; they share their openings, so this is an approximation (stated under the table).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from pdx_lightning.experiments.report.seeds import oriented_match

HERE = Path(__file__).resolve().parent
BASE = "base"
PENDING = "pending"


@dataclass(frozen=True)
class Row:
    label: str  # the table's row name
    prefix: str  # the records NAME_policy / NAME_value / NAME_whole (no .json)
    player: str  # the cell's label in the list: PLAYER_policy, PLAYER_value and PLAYER itself
    temperature: str  # both sides' policy softmax temperature in these matches


ROWS = (Row("fwd_s3 (forward KL, β 0.01)", "n64t18_fwd_s3", "fwd_s3", "1.8"),)


@dataclass(frozen=True)
class Elo:
    value: float
    half: float  # 95 % half-width

    def __add__(self, other: Elo) -> Elo:
        return Elo(self.value + other.value, math.hypot(self.half, other.half))

    def __sub__(self, other: Elo) -> Elo:
        return Elo(self.value - other.value, math.hypot(self.half, other.half))

    def __str__(self) -> str:
        return f"{self.value + 0.0:+.1f} ± {self.half:.1f}"  # + 0.0: an even score reads +0.0


def match_elo(folder: Path, record: str, player: str) -> tuple[Elo, int] | None:
    """``player``'s score Elo against the base in ``folder/record.json`` and the games it rests on."""
    path = folder / f"{record}.json"
    if not path.is_file():
        return None
    m = oriented_match(json.loads(path.read_text()), player, BASE)
    if m is None:
        raise ValueError(f"{path}: no match of {player!r} against {BASE!r}")
    sign = 1.0 if m["a"] == player else -1.0
    return Elo(sign * m["elo"], m["elo_error"]), m["games"]


def row(folder: Path, r: Row) -> str:
    got = {
        part: match_elo(folder, f"{r.prefix}_{part}", r.player if part == "whole" else f"{r.player}_{part}")
        for part in ("policy", "value", "whole")
    }
    policy, value, whole = (g[0] if g else None for g in got.values())
    both = policy + value if policy is not None and value is not None else None
    beyond = whole - both if whole is not None and both is not None else None
    cols = [str(e) if e is not None else PENDING for e in (policy, value, both, whole, beyond)]
    games = sorted({g[1] for g in got.values() if g})
    played = "/".join(f"{n:,}" for n in games) if games else PENDING
    return f"| {r.label} | {r.temperature} | {played} | " + " | ".join(cols) + " |"


def table(folder: Path = HERE, rows: tuple[Row, ...] = ROWS) -> str:
    head = (
        "| cell | PolicyTemperature (both sides) | games per match | its policy, the base's value "
        "| the base's policy, its value | the two costs added | whole cell | beyond the sum (whole − added) |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|"] + [row(folder, r) for r in rows]
    return (
        "Elo of each player against Maia-1900 inside pdx's search at 64 nodes (the 500 paired openings of "
        "`data/openings_uho_600.epd`; ± the 95 % half-width). The added and beyond-the-sum columns add "
        "the matches' half-widths in quadrature as if the matches were independent (they share their "
        "openings: an approximation).\n\n" + "\n".join(lines) + "\n"
    )


def main() -> int:
    out = HERE / "attribution.md"
    out.write_text(table())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
