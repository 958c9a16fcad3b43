"""The value head's move choice on real puzzles: the record of ``run.sh valuemove`` and its table.

A search compares the positions it expanded by their value-head evaluations. ``pdx eval puzzles
--move-by value`` isolates that ranking: at every solver position each legal move is played and the
move whose resulting position the value head rates best for the mover is scored, against the policy's
argmax on the same puzzles (``--move-by policy``). Both runs score the base and every cell on the
1,986 real Lichess puzzles of ``data/lichess/puzzles_random_2k.csv``; this script keeps what the
report needs from the two ``--json`` outputs (summaries, paired comparisons with the base, and each
puzzle's solved bit, so the McNemar tests can be recomputed) in one small record.

    python reports/beyond_paper/value_move.py POLICY.json VALUE.json OUT.json LABEL [LABEL ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

BY = ("policy", "value")


def trim(docs: dict[str, dict], labels: list[str]) -> dict:
    """The record: per scoring mode, each model's accuracy [95% Wilson], the paired comparisons with the
    first model and the per-puzzle solved bits ("0"/"1", puzzle order)."""
    first = docs[BY[0]]
    for by, doc in docs.items():
        if doc.get("move_by", "policy") != by:
            raise ValueError(f"the {by} run's JSON was scored --move-by {doc.get('move_by', 'policy')}")
        if doc["puzzles"]["id"] != first["puzzles"]["id"]:
            raise ValueError(f"the {by} run scored other puzzles than the {BY[0]} run")
        if len(doc["models"]) != len(labels):
            raise ValueError(f"{len(labels)} labels for the {len(doc['models'])} models of the {by} run")
    out: dict = {"suite": first["suite"]["files"], "puzzles": first["suite"]["puzzles"], "labels": labels}
    for by, doc in docs.items():
        out[by] = {
            "models": [
                {
                    "label": lab,
                    "model": m["name"],
                    "n": m["summary"]["n"],
                    "acc": m["summary"]["acc"],
                    "acc_ci": m["summary"]["acc_ci"],
                    "solved": "".join("1" if s else "0" for s in m["per_puzzle"]["solved"]),
                }
                for lab, m in zip(labels, doc["models"])
            ],
            "paired": [
                {
                    "label": lab,
                    "acc_diff": p["acc_diff"],
                    "gained": p["gained"],
                    "lost": p["lost"],
                    "mcnemar_p": p["mcnemar_p"],
                }
                for lab, p in zip(labels[1:], doc["paired"])
            ],
        }
    return out


def rows(record: dict, name=str) -> tuple[list[str], list[list[str]]]:
    """The report's table: per network, the policy's and the value head's accuracy [95%], and each's
    difference from the base (gained/lost puzzles, McNemar p)."""
    header = [
        "Network",
        "policy argmax: solved (%) [95%]",
        "− the base's (pts; +/−; p)",
        "value head, one ply: solved (%) [95%]",
        "− the base's (pts; +/−; p)",
    ]
    paired = {by: {p["label"]: p for p in record[by]["paired"]} for by in BY}
    out = []
    for k, lab in enumerate(record["labels"]):
        row = [name(lab)]
        for by in BY:
            m = record[by]["models"][k]
            lo, hi = m["acc_ci"]
            row.append(f"{100 * m['acc']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]")
            p = paired[by].get(lab)
            row.append(
                "–"
                if p is None
                else f"{100 * p['acc_diff']:+.1f} (+{p['gained']}/−{p['lost']}; p = {p['mcnemar_p']:.2g})"
            )
        out.append(row)
    return header, out


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    docs = {by: json.loads(Path(p).read_text()) for by, p in zip(BY, argv[:2])}
    Path(argv[2]).write_text(json.dumps(trim(docs, argv[3:]), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
