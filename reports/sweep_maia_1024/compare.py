"""The paper's batch on Maia-1900 beside the 128-game cells: writes reports/sweep_maia_1024/report.md.

Reads committed records only (no checkpoint, no runs/ directory):

* the base's scores and the 128-game seed-0 cells (``reports/sweep_maia_seeds/runs_json.tar.xz``: eval.json,
  result.json, and their 1,000 games against the base in arena.json);
* the eight-seed spread of the 128-game anchored arms (``reports/sweep_maia_seeds8/runs_json.tar.xz``);
* the 1,024-game cells (``cells_json.tar.xz`` here: ``conf/sweep/maia_batch1024.yaml``'s forward-KL and
  no-regularizer cells; ``paper_recipe/cells_json.tar.xz``: ``conf/sweep/maia_paper_recipe.yaml``'s) and
  their 1,000 games against the base on the same 500 paired openings (``arena/*.json``).

Per cell: Elo against the base from its pentanomial record (± 95%), and on each suite the accuracy
difference from the base and the geometric-mean p* ratio to it on the same puzzles, each with a paired
bootstrap 95% interval over puzzles (:func:`pdx_lightning.evaluation.replicates.seed_bootstrap`, one seed).

    .venv/bin/python reports/sweep_maia_1024/compare.py [OUT.md]    # default: report.md here
"""

from __future__ import annotations

import json
import math
import sys
import tarfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITES = (
    ("real", "real Lichess"),
    ("real_hard", "real ≥ 2000"),
    ("tactics", "tactics"),
    ("hard", "generated hard"),
    ("mates", "mates 1–5"),
)


# The Table 2 recipe cells: (folder with cells_json.tar.xz, arena/<name>.json, the table's setting column).
RECIPES = (
    ("paper_recipe", "base_paper_recipe", "1,024 × 2,000, Table 2 rates + reference switches"),
    (
        "paper_recipe_ref_lr",
        "base_paper_recipe_ref_lr",
        "1,024 × 2,000, Table 2 rates + reference switches, value head at 3e-6 (the authors' code's grouping)",
    ),
)

RECIPE_SETTINGS = tuple(setting for _, _, setting in RECIPES)


def members(archive: Path) -> dict[str, dict]:
    """Every JSON file of an archive, by its path without a leading ``./``."""
    out = {}
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            if m.isfile() and m.name.endswith(".json"):
                out[m.name.removeprefix("./")] = json.load(tar.extractfile(m))
    return out


def units(doc: dict, suite: str) -> tuple[list, np.ndarray, np.ndarray]:
    pp = doc["suites"][suite]["per_puzzle"]
    return (
        doc["suites"][suite]["ids"],
        np.asarray(pp["solved"], dtype=np.float64),
        np.asarray([-math.inf if v is None else v for v in pp["log_p_star"]], dtype=np.float64),
    )


def versus_base(cell: dict, base: dict, suite: str) -> str:
    """``Δacc [95%] / p* ratio [95%]`` of a cell against the base on one suite (paired over puzzles)."""
    from pdx_lightning.evaluation.replicates import seed_bootstrap

    ids, s, lp = units(cell, suite)
    bids, bs, blp = units(base, suite)
    if ids != bids:
        raise SystemExit(f"compare: {suite}: the cell and the base were scored on different puzzles")
    acc = seed_bootstrap([s], bs)
    text = f"{100 * acc.diff:+.2f} [{100 * acc.diff_ci[0]:+.2f}, {100 * acc.diff_ci[1]:+.2f}]"
    if np.isfinite(lp).all() and np.isfinite(blp).all():
        r = seed_bootstrap([lp], blp)
        text += f" / {math.exp(r.diff):.2f}× [{math.exp(r.diff_ci[0]):.2f}, {math.exp(r.diff_ci[1]):.2f}]"
    return text


def elo_record(arena: dict, label: str, base: str = "base") -> tuple[float, float, int, int, int] | None:
    """Elo of ``label`` against ``base`` from its pentanomial record (± 95% half-width) and its W, D, L."""
    from pdx_lightning.evaluation.match import pentanomial_elo
    from pdx_lightning.evaluation.replicates import reversed_pentanomial

    for m in arena["matches"]:
        if {m["a"], m["b"]} == {label, base}:
            ptn = m["pentanomial"] if m["a"] == label else reversed_pentanomial(m["pentanomial"])
            elo, half = pentanomial_elo(tuple(ptn))
            w, d, lost = (
                (m["wins"], m["draws"], m["losses"]) if m["a"] == label else (m["losses"], m["draws"], m["wins"])
            )
            return elo, half, w, d, lost
    return None


def elo_vs_base(arena: dict, label: str, base: str = "base") -> str:
    rec = elo_record(arena, label, base)
    if rec is None:
        return "not measured"
    elo, half, w, d, lost = rec
    return f"{elo:+.1f} ± {half:.1f} ({w}–{d}–{lost})"


def value_head_rate(rows: list) -> list[str]:
    """The two recipe cells against each other (paired over puzzles; Elo: the difference of their two
    independent matches against the base, half-widths added in quadrature): does the recipe's result depend
    on the value head's learning rate? Empty until both cells' records are committed."""
    recipes = {setting: (ev, arena, label) for setting, _, ev, _, arena, label in rows if setting in RECIPE_SETTINGS}
    if len(recipes) < 2:
        return []
    (ev_a, arena_a, label_a), (ev_b, arena_b, label_b) = (recipes[s] for s in RECIPE_SETTINGS)
    rec_a, rec_b = elo_record(arena_a, label_a), elo_record(arena_b, label_b)
    if rec_a is None or rec_b is None:
        elo_text = "not measured"
    else:
        elo_text = f"{rec_b[0] - rec_a[0]:+.1f} ± {math.hypot(rec_a[1], rec_b[1]):.1f}"
    from pdx_lightning.experiments.report.tables import markdown_table

    return [
        "## The value head's learning rate: 3e-6 (the authors' code) against 3e-5 (Table 2)",
        "",
        "The second recipe cell against the first, everything else equal (`conf/sweep/maia_paper_recipe_ref_lr.yaml`"
        " against `conf/sweep/maia_paper_recipe.yaml`): Δ accuracy in points and the geometric-mean p* ratio, "
        "paired over the same puzzles with a bootstrap 95% interval; Elo: the difference of the two cells' Elo "
        "against the base (independent matches on the same 500 paired openings), ± 95% in quadrature.",
        "",
        markdown_table(
            ["3e-6 against 3e-5", "Δ Elo vs base", *(f"{t}: Δ / p*" for _, t in SUITES)],
            [["value head at 3e-6", elo_text, *(versus_base(ev_b, ev_a, s) for s, _ in SUITES)]],
        ),
        "",
    ]


def main(out: Path = HERE / "report.md") -> int:
    from pdx_lightning.experiments.report.tables import markdown_table

    seeds = members(ROOT / "reports" / "sweep_maia_seeds" / "runs_json.tar.xz")
    base = seeds["base/eval.json"]
    rows = [
        (
            "128 × 2,000, `maia.yaml` rates, seed 0",
            "none-adaptive",
            seeds["cells/none-adaptive/eval.json"],
            seeds["cells/none-adaptive/result.json"],
            seeds["arena.json"],
            "none-adaptive",
        ),
        (
            "128 × 2,000, `maia.yaml` rates, seed 0",
            "forward_kl-adaptive-b0.01",
            seeds["cells/forward_kl-adaptive-b0.01/eval.json"],
            seeds["cells/forward_kl-adaptive-b0.01/result.json"],
            seeds["arena.json"],
            "forward_kl-adaptive-b0.01",
        ),
    ]
    batch = members(HERE / "cells_json.tar.xz")
    arenas = {p.stem: json.loads(p.read_text()) for p in sorted((HERE / "arena").glob("*.json"))}
    for cell, arena in (("none-adaptive", "base1024_none"), ("forward_kl-adaptive-b0.01", "base1024_fwd")):
        if f"cells/{cell}/eval.json" in batch:
            rows.append(
                (
                    "1,024 × 2,000, `maia.yaml` rates",
                    cell,
                    batch[f"cells/{cell}/eval.json"],
                    batch[f"cells/{cell}/result.json"],
                    arenas.get(arena, {"matches": []}),
                    next((p["label"] for p in arenas.get(arena, {}).get("players", []) if p["label"] != "base"), ""),
                )
            )
    for folder, arena_name, setting in RECIPES:
        archive = HERE / folder / "cells_json.tar.xz"
        if not archive.is_file():
            continue
        recipe = members(archive)
        cell = "forward_kl-adaptive-b0.01"
        arena = arenas.get(arena_name, {"matches": []})
        rows.append(
            (
                setting,
                cell,
                recipe[f"cells/{cell}/eval.json"],
                recipe[f"cells/{cell}/result.json"],
                arena,
                next((p["label"] for p in arena.get("players", []) if p["label"] != "base"), ""),
            )
        )
    table = []
    for setting, cell, ev, res, arena, label in rows:
        m = res["metrics"]
        table.append(
            [
                setting,
                cell,
                elo_vs_base(arena, label),
                *(versus_base(ev, base, s) for s, _ in SUITES),
                f"{m.get('final/kl/forward_to_base', float('nan')):.3f}",
                f"{m.get('final/policy/entropy', float('nan')):.2f}",
                f"{res['seconds']['train']:,.0f}",
            ]
        )
    s8 = members(ROOT / "reports" / "sweep_maia_seeds8" / "runs_json.tar.xz")["arena.json"]
    spread = []
    for term in ("forward_kl", "reverse_kl"):
        elos = [elo_vs_base(s8, f"{term}-adaptive-b0.01" + (f"-s{k}" if k else "")).split(" ±")[0] for k in range(8)]
        spread.append(f"{term}: " + " / ".join(elos))
    md = [
        "# The paper's batch on Maia-1900 (1,024 games per step)",
        "",
        "Every cell 2,000 steps on Maia-1900, adaptive τ, β = 1e-2 where regularized, seed 0, scored on the same "
        "suites as `reports/sweep_maia_seeds/` and played 1,000 argmax games against the base on the same 500 "
        "paired openings (`data/openings_uho_600.epd`). Δ: accuracy difference from the base in points, then "
        "the geometric-mean p* ratio to the base, each with a paired bootstrap 95% interval over puzzles. "
        "Elo: pentanomial (opening pairs) ± 95%, W–D–L from the cell's side. KL: the last step's "
        "KL(π_base‖π_θ) on self-play positions; H: the last step's policy entropy (nats). Train: the training "
        "seconds the cell recorded (train.json), on a 2-core machine often shared with another job: one thread, "
        "except the two resumed 1,024-game cells, whose later part ran on two threads from a checkpoint (Table 2 "
        "recipe: 4,806 s to step 800 on one thread + 3,917 s; no regularizer: steps 500–2,000 only, the seconds of "
        "its first 500 steps were not recorded). Resumed on two threads, those two cells are not bit-reproducible "
        "from their configs. The value-head-rate cell ran on two threads throughout, not resumed.",
        "",
        markdown_table(
            ["Setting", "Cell", "Elo vs base", *(f"{t}: Δ / p*" for _, t in SUITES), "KL", "H", "Train s"], table
        ),
        "",
        "The 128-game cells' seed-to-seed spread (Elo vs base, seeds 0–7, `reports/sweep_maia_seeds8/`): "
        + "; ".join(spread)
        + ".",
        "",
    ]
    md += value_head_rate(rows)
    out.write_text("\n".join(md))
    print(f"wrote {out} ({len(table)} cells)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(Path(a) for a in sys.argv[1:2])))
