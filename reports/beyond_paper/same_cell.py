"""Is a retrained cell the committed one? Compares its eval.json and result.json with a committed archive's.

``run.sh`` retrains the cells it plays (their checkpoints were not kept) from their sweep configs; the
searched and ladder matches speak for the committed cells only when the retrained network is the same.
Same here means: every suite scored on the same puzzles with the same per-puzzle outcome (solved and
log p*, exactly) and the same final training metrics (result.json's ``metrics``, exactly). When they
differ, the verdict also names what made the two differently (``made_with_differing``: the fields of
result.json's ``environment`` that differ, among them the commit, the torch/Lightning/NumPy versions, the
CPU kernels in force, the threads and the CPU; a field the committed record predates reads "unrecorded").
Writes a JSON verdict and prints one line; exit 0 either way (a differing cell is still played, and its single-pass
strength is measured afresh by run.sh's 1-node matches), 2 when an input is missing.

    .venv/bin/python reports/beyond_paper/same_cell.py ARCHIVE CELL RUNS_OUT VERDICT.json
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path


def archived(archive: Path, cell: str) -> dict[str, dict]:
    """``eval`` and ``result`` of ``cells/<cell>/`` in a committed archive (``./`` prefix or not)."""
    out = {}
    with tarfile.open(archive) as tar:
        for m in tar.getmembers():
            name = m.name.removeprefix("./")
            for kind in ("eval", "result"):
                if name == f"cells/{cell}/{kind}.json":
                    f = tar.extractfile(m)
                    assert f is not None  # a regular member
                    out[kind] = json.load(f)
    return out


def compare(old: dict[str, dict], new: dict[str, dict]) -> dict:
    """The suites and metrics on which two cells' records differ (empty lists: the same cell)."""
    suites = []
    for name, s in old["eval"]["suites"].items():
        t = new["eval"].get("suites", {}).get(name)
        if t is None or t.get("ids") != s.get("ids") or t.get("per_puzzle") != s.get("per_puzzle"):
            suites.append(name)
    a, b = old["result"].get("metrics", {}), new["result"].get("metrics", {})
    metrics = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return {"identical": not suites and not metrics, "suites_differing": suites, "metrics_differing": metrics}


# result.json's environment fields that can move a cell's numbers (runtime.environment, runtime.kernels)
MADE_WITH = (
    "pdx_commit",
    "torch",
    "lightning",
    "numpy",
    "python",
    "kernels",
    "cpu_capability",
    "onednn_max_cpu_isa",
    "mkl_enable_instructions",
    "mkl_cbwr",
    "threads",
    "cpu",
    "cpu_vendor",
    "cpu_offers",
    "platform",
)


def made_with(old: dict, new: dict) -> dict[str, list]:
    """``{field: [committed, retrained]}`` for each :data:`MADE_WITH` field whose values differ (a field
    missing from a record, as in those made before it was recorded: "unrecorded")."""
    a, b = old.get("environment") or {}, new.get("environment") or {}
    return {
        k: [a.get(k, "unrecorded"), b.get(k, "unrecorded")]
        for k in MADE_WITH
        if a.get(k, "unrecorded") != b.get(k, "unrecorded")
    }


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: same_cell.py ARCHIVE CELL RUNS_OUT VERDICT.json", file=sys.stderr)
        return 2
    archive, cell, runs, verdict = Path(argv[0]), argv[1], Path(argv[2]), Path(argv[3])
    new = {
        k: json.loads(p.read_text()) for k in ("eval", "result") if (p := runs / "cells" / cell / f"{k}.json").is_file()
    }
    if set(new) != {"eval", "result"}:
        print(f"same_cell: {runs / 'cells' / cell}: no retrained eval.json and result.json", file=sys.stderr)
        return 2
    old = archived(archive, cell) if archive.is_file() else {}
    if set(old) != {"eval", "result"}:
        print(f"same_cell: {archive}: no committed eval.json and result.json of {cell}", file=sys.stderr)
        return 2
    out = {
        "cell": cell,
        "archive": str(archive),
        "runs": str(runs),
        **compare(old, new),
        "made_with_differing": made_with(old["result"], new["result"]),
    }
    verdict.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{cell}: {'identical to' if out['identical'] else 'DIFFERS from'} {archive}", out["suites_differing"] or "")
    if not out["identical"]:
        print(
            f"{cell}: {len(out['metrics_differing'])} final metrics differ; made with other",
            "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in out["made_with_differing"].items()) or "nothing recorded",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
