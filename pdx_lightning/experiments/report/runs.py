"""Reading a ``pdx sweep`` output directory: the stored JSON, and Table 1's rows (one model each).

Nothing here scores or trains: every number the report shows is read from these files, and an absent
file reads as ``None`` (the tables then say *not measured*).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pdx_lightning.errors import UserError
from pdx_lightning.experiments.arms import CONTROL, TEMP_LABEL, TEMPERATURES, TERM_LABEL, TERMS

NM = "not measured"
# The optional stages' JSON files a runs directory may hold (written by the sweep's stages).
STAGE_FILES = ("arena", "arena_sampled", "coverage", "diagnostics", "recovery", "humans")


class ReportError(UserError, ValueError):
    """A runs directory the report cannot read."""


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


@dataclass
class Row:
    label: str  # term label (Table 1 first column)
    tau: str  # self-play temperature label
    keys: set  # names this model may carry in arena / analysis JSON
    eval: dict | None  # its pdx_cell_eval/1 document
    cell: dict | None = None  # its sweep.json cell (None: the base)

    @property
    def term(self) -> str | None:
        """The row's exploration term, ``control`` for the control, None for the base."""
        if self.cell is None:
            return None
        return self.cell["term"] if self.cell["kind"] == "rl" else CONTROL

    def title(self) -> str:
        """``label, τ`` (the label alone where the temperature does not apply)."""
        return self.label if self.tau == TEMP_LABEL[None] else f"{self.label}, {self.tau}"


@dataclass
class Runs:
    root: Path
    sweep: dict
    base: dict | None
    evals: dict[str, dict] = field(default_factory=dict)
    results: dict[str, dict] = field(default_factory=dict)
    files: dict[str, dict | None] = field(default_factory=dict)

    def beta_cells(self) -> list[dict]:
        """The RL cells of the seed that picks β* (sweep config ``seed``): the grid of Table 6 and Figure 5.
        Without ``seeds`` that is every RL cell; the other seeds' replicates are the across-seed tables'."""
        seed = self.sweep["config"].get("seed", 0)
        return [c for c in self.sweep["cells"] if c["kind"] == "rl" and c.get("seed", seed) == seed]

    def rows(self, control: bool = True) -> list[Row]:
        """Table 1's rows: the base, each (term, temperature) at its β*, the control."""
        cells = {c["name"]: c for c in self.sweep["cells"]}
        base_name = self.sweep["base"]["name"]
        rows = [Row("Frozen base", TEMP_LABEL[None], {"base", "base raw", base_name}, self.base)]
        sel = {(s["term"], s["temperature"]): s["cell"] for s in self.sweep["selected"]}
        for term in TERMS:
            for temp in TEMPERATURES:
                if (name := sel.get((term, temp))) is not None:
                    c = cells[name]
                    rows.append(
                        Row(TERM_LABEL[term], TEMP_LABEL[temp], {name, c["checkpoint"]}, self.evals.get(name), c)
                    )
        ctrl = self.sweep.get("control")
        if control and ctrl and ctrl in self.evals:
            c = cells[ctrl]
            rows.append(Row(TERM_LABEL[CONTROL], TEMP_LABEL[None], {ctrl, c["checkpoint"]}, self.evals[ctrl], c))
        return rows


def load_runs(root: str | Path) -> Runs:
    """Everything the report reads from a ``pdx sweep`` output directory."""
    root = Path(root)
    sweep = _load(root / "sweep.json")
    if sweep is None:
        raise ReportError(
            f"{root}: no sweep.json (not a `pdx sweep` output directory); give --runs the "
            f"sweep's `out` directory, e.g. runs/sweep_cpu"
        )
    evals = {c["name"]: doc for c in sweep["cells"] if (doc := _load(root / c["dir"] / "eval.json"))}
    results = {c["name"]: doc for c in sweep["cells"] if (doc := _load(root / c["dir"] / "result.json"))}
    files = {n: _load(root / f"{n}.json") for n in STAGE_FILES}
    return Runs(root, sweep, _load(root / "base" / "eval.json"), evals, results, files)


def suite_summary(doc: dict | None, suite: str) -> dict | None:
    """The ``summary`` of ``suite`` in a ``pdx_cell_eval/1`` document (None: not scored, or empty)."""
    s = (doc or {}).get("suites", {}).get(suite)
    return s["summary"] if s and s.get("summary") and s["summary"].get("n") else None


def by_depth(row: Row) -> dict[int, dict]:
    """The row's mate-suite summaries by mate depth (empty: no mate suite scored)."""
    s = suite_summary(row.eval, "mates")
    return {d["depth"]: d for d in s["by_depth"]} if s else {}


def mate_depths(rows: list[Row]) -> list[int]:
    """Every mate depth any row was scored on."""
    return sorted({d for r in rows for d in by_depth(r)})
