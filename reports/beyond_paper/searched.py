"""The searched and absolute-scale sections of reports/beyond_paper/report.md, from the match records that
``run.sh`` commits under ``records/`` (one JSON per match, as ``pdx arena --json`` writes it).

Per cell (``run.sh``'s labels; ``CELLS`` below): whether the retrained network is the committed one
(``same_<label>.json``, from ``same_cell.py``), its single-pass Elo against the base in pdx's arena on the
checkpoint (``pdxckpt_<label>``) and on the exported ``.pb.gz`` files (``pdx_<label>``), and the real Lc0's
matches at each node count (``lc0_n<N>_<label>``), each Elo from the pentanomial record (opening pairs, ±
95%) with LOS. At 1 node Lc0 plays the policy argmax: its games must be pdx's on the same two files, game
for game (the agreement column). The ladder (``ladder_<label>``): the BayesElo fit of each network and
the Stockfish ``UCI_Elo`` rungs, anchored at one rung.

A match or cell without records is reported as not run; nothing here is filled in by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

# run.sh's labels: (exploration term, games per step, setting, seed) — the committed cell each one retrains.
CELLS = {
    "fwd_s3": ("forward_kl", 128, "maia.yaml rates", 3),
    "rev_s3": ("reverse_kl", 128, "maia.yaml rates", 3),
    "none_s0": ("none", 128, "maia.yaml rates", 0),
    "fwd_b1024": ("forward_kl", 1024, "maia.yaml rates", 0),
    "none_b1024": ("none", 1024, "maia.yaml rates", 0),
    "recipe": ("forward_kl", 1024, "Table 2 recipe", 0),
}
NODES = (1, 16, 64, 256)
NOT_RUN = "not run"


def _load(records: Path, name: str) -> dict | None:
    path = records / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def match_elo(doc: dict, label: str, base: str = "base") -> tuple[float, float, float]:
    """Elo of ``label`` against ``base`` from the pentanomial record (± 95% half-width) and its LOS."""
    from pdx_lightning.evaluation.match import pentanomial_elo
    from pdx_lightning.experiments.report.seeds import _match

    m = _match(doc, label, base)
    if m is None:
        raise SystemExit(f"searched: no paired games of {label!r} against {base!r}")
    elo, half = pentanomial_elo(tuple(m["ptn"]))
    raw = next(x for x in doc["matches"] if {x["a"], x["b"]} == {label, base})
    los = raw["los"] if raw["a"] == label else 1.0 - raw["los"]
    return elo, half, los


def _elo_text(doc: dict | None, label: str) -> str:
    if doc is None:
        return NOT_RUN
    elo, half, los = match_elo(doc, label)
    return f"{elo:+.1f} ± {half:.1f} (LOS {100 * los:.0f}%)"


def same_games(a: dict, b: dict) -> tuple[int, int]:
    """How many of ``a``'s games ``b`` played identically (same round, colours, opening, result, reason and
    length), and how many games ``a`` has."""
    key = ("round", "white", "black", "opening", "result", "reason", "plies")
    theirs = {g["round"]: tuple(g.get(k) for k in key) for g in b.get("games", [])}
    ours = a.get("games", [])
    return sum(theirs.get(g["round"]) == tuple(g.get(k) for k in key) for g in ours), len(ours)


def labels(records: Path) -> list[str]:
    """The cells with any record, in ``CELLS`` order."""
    seen = {
        m.group(1) for p in records.glob("*.json") if (m := re.match(r"(?:same|pdxckpt|pdx|lc0_n\d+)_(.+)", p.stem))
    }
    unknown = seen - set(CELLS)
    if unknown:
        raise SystemExit(f"searched: {records}: records of unknown cells {sorted(unknown)} (CELLS names run.sh's)")
    return [k for k in CELLS if k in seen]


def _same_text(same: dict | None) -> str:
    if same is None:
        return NOT_RUN
    if same["identical"]:
        return "yes"
    return (
        f"no: {len(same['suites_differing'])} suites and {len(same['metrics_differing'])} final metrics "
        "differ (a new draw; its single pass is measured again in the next two columns)"
    )


def searched_rows(records: Path, committed: dict[tuple, str]) -> tuple[list[str], list[list[str]]]:
    """The table of Elo against the base by node count: its header and one row per cell with records.
    ``committed`` maps ``CELLS``' keys to the committed single-pass Elo text (the reports' own records)."""
    from pdx_lightning.experiments.arms import TERM_LABEL

    nodes = [n for n in NODES if any(records.glob(f"lc0_n{n}_*.json"))] or [1, 16, 64]
    header = [
        "Cell",
        "Retrained = committed",
        "Single pass, committed record",
        "Single pass, pdx on the checkpoint",
        "Single pass, pdx on the .pb.gz files",
        *(f"Lc0, {n} node{'s' if n > 1 else ''}" for n in nodes),
        "Lc0 1 node = pdx, game for game",
    ]
    rows = []
    for label in labels(records):
        term, games, setting, seed = CELLS[label]
        same = _load(records, f"same_{label}")
        pdx = _load(records, f"pdx_{label}")
        lc0_1 = _load(records, f"lc0_n1_{label}")
        agree = NOT_RUN
        if pdx is not None and lc0_1 is not None:
            k, n = same_games(pdx, lc0_1)
            agree = f"{k:,} / {n:,}"
        rows.append(
            [
                f"{TERM_LABEL[term]}, {games:,} games/step, {setting}, seed {seed}",
                _same_text(same),
                committed.get(CELLS[label], "–"),
                _elo_text(_load(records, f"pdxckpt_{label}"), label),
                _elo_text(pdx, label),
                *(_elo_text(_load(records, f"lc0_n{n}_{label}"), label) for n in nodes),
                agree,
            ]
        )
    return header, rows


def ladder_rows(records: Path) -> tuple[list[str], list[list[str]], list[list[str]]]:
    """Each network's rating on the Stockfish ladder (± 95%), and the rungs' fitted ratings per ladder
    (how far each lands from its nominal ``UCI_Elo``: the ladder's own check)."""
    from pdx_lightning.experiments.arms import TERM_LABEL

    nets, rungs = [], []
    for label in ["base", *CELLS]:
        doc = _load(records, f"ladder_{label}")
        if doc is None:
            continue
        fit = {r["player"]: r for r in doc["elo"]["ratings"]}
        me = fit[label]
        name = (
            "Maia-1900 (the base)"
            if label == "base"
            else "{}, {:,} games/step, {}, seed {}".format(TERM_LABEL[CELLS[label][0]], *CELLS[label][1:])
        )
        nets.append([name, f"{me['elo']:.0f} [{me['ci95'][0]:.0f}, {me['ci95'][1]:.0f}]", f"{me['games']:,}"])
        for player, r in fit.items():
            if player.startswith("sf:elo="):
                nominal = float(player.removeprefix("sf:elo="))
                rungs.append([name, player, f"{r['elo']:.0f}", f"{r['elo'] - nominal:+.0f}"])
    header = ["Network", "Elo (CCRL 40/4-anchored ladder) [95%]", "Games"]
    return header, nets, rungs
