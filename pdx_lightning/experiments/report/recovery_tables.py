"""Figure 8's numbers: what fine-tuning recovers of the base's wrong solver positions.

From ``recovery.json`` (``pdx eval recovery --json``) when the runs directory holds it; else computed
by :func:`pdx_lightning.evaluation.recovery.recovery_analysis` from the per-position arrays of the
tactics suite stored in the eval JSONs (the same scoring, nothing rerun).
"""

from __future__ import annotations

import math
from typing import cast

from pdx_lightning.experiments.arms import PRIOR_ANCHORED
from pdx_lightning.experiments.report.runs import Runs


def suite_result(doc: dict):
    """Rebuild a ``SuiteResult`` from one suite of a ``pdx_cell_eval/1`` document (null log-prob = −inf)."""
    import numpy as np  # noqa: PLC0415

    from pdx_lightning.evaluation.puzzle_scoring import SuiteResult  # noqa: PLC0415

    pp = doc["per_puzzle"]

    def flat(key, dtype, null):
        return np.array([null if v is None else v for ply in pp[key] for v in ply], dtype=dtype)

    def num(key):
        values = doc.get(key) or [None] * doc["n"]
        return np.array([math.nan if v is None else v for v in values], dtype=float)

    depth = np.array(doc["depth"], dtype=np.int64)
    return SuiteResult(
        ids=list(doc["ids"]),
        rating=num("rating"),
        difficulty=num("difficulty"),
        depth=depth,
        solved=np.array(pp["solved"], bool),
        first_fail=np.array(pp["first_fail"], np.int64),
        log_p_star=np.array([-math.inf if v is None else v for v in pp["log_p_star"]], float),
        offsets=np.concatenate([[0], np.cumsum(depth)]).astype(np.int64),
        ply_correct=flat("ply_correct", bool, False),
        ply_mate=flat("ply_mate", bool, False),
        ply_log_p=flat("ply_log_p", float, -math.inf),
        ply_rank=flat("ply_rank", np.int64, 0),
        ply_top_log_p=flat("ply_top_log_p", float, -math.inf),
        ply_value=flat("ply_value", float, math.nan),
        ply_move=[m for ply in pp["ply_move"] for m in ply],
    )


def recovery(runs: Runs) -> tuple[list[tuple[str, dict]], str]:
    """(row title, ``recovery.json`` model entry) per prior-anchored row, and where the numbers come from."""
    rows = [r for r in runs.rows(control=False) if r.cell and r.cell["term"] in PRIOR_ANCHORED]
    rec = runs.files["recovery"]
    if rec:
        return [(r.title(), m) for r in rows for m in rec["models"] if m["name"] in r.keys], "recovery.json"
    base = (runs.base or {}).get("suites", {}).get("tactics")
    if not base or not base.get("per_puzzle"):
        return [], ""
    from pdx_lightning.evaluation.recovery import recovery_analysis  # noqa: PLC0415

    b = suite_result(base)
    # rows holds only rows with a cell (filtered above): cast(dict, r.cell) drops the None
    return [
        (r.title(), {"name": cast(dict, r.cell)["name"], **recovery_analysis(b, suite_result(t))})
        for r in rows
        if r.eval and (t := r.eval["suites"].get("tactics")) and t.get("per_puzzle")
    ], "the per-position arrays of the tactics suite in the eval JSONs (`recovery_analysis`)"
