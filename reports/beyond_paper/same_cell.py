"""Is a retrained cell the committed one? Compares its eval.json and result.json with a committed archive's.

``run.sh`` retrains the cells it plays (their checkpoints were not kept) from their sweep configs; the
searched and ladder matches speak for the committed cells only when the retrained network is the same.
The records are judged in two parts:

* training: result.json's final training metrics (``train`` without timings, and the ``final/`` metrics
  that are not a suite's), exactly. No record holds a hash of the weights; these are what the network's
  training left, so equal ones are taken as the same network.
* evaluation: every suite scored on the same puzzles (``ids``) with the same per-puzzle outcome
  (``per_puzzle``), plus the suites' ``final/<suite>/`` metrics. ``identical`` when equal exactly;
  ``float_noise`` when every discrete outcome is equal (solved, first failing ply, every ply's move,
  correctness, mate and rank; the accuracies) and every continuous value (log p*, each ply's log-probabilities
  and value, p*'s geometric mean) is within :data:`RTOL` relative plus :data:`ATOL` absolute of the
  committed one; else ``differs``.

The verdict (``verdict``) is ``SAME`` (everything exactly equal: ``identical`` true), ``SAME_TRAINING_EVAL_FLOAT_NOISE``
(training bit-identical, evaluation float noise only: the same network, scored by kernels that round the
last digits otherwise, as another CPU of one vendor can) or ``DIFFERS`` (training differs, or evaluation
beyond float noise). The float-noise bound is wider than what a kernel change does to one network's
scores (a lone position scored by other kernels moved log-probabilities by at most 1.4e-5 and values by
2.4e-6, docs/reliability.md) and far below what a new draw of a cell moves (its accuracies). When they
differ, the verdict also names what made the two differently (``made_with_differing``: the fields of
result.json's ``environment`` that differ, among them the commit, the torch/Lightning/NumPy versions, the
CPU kernels in force, the threads and the CPU; a field the committed record predates reads "unrecorded").
The fields of the verdicts made before the split (``identical``, ``suites_differing``, ``metrics_differing``:
exact comparisons) keep their meaning. Writes a JSON verdict and prints one line; exit 0 either way (a
differing cell is still played, and its single-pass strength is measured afresh by run.sh's 1-node
matches), 2 when an input is missing.

    .venv/bin/python reports/beyond_paper/same_cell.py ARCHIVE CELL RUNS_OUT VERDICT.json
"""

from __future__ import annotations

import json
import sys
import tarfile
from collections.abc import Iterable
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


# float noise: |a - b| <= RTOL * max(|a|, |b|) + ATOL for every continuous value of the evaluation
RTOL = 1e-4
ATOL = 1e-4
VERDICTS = ("SAME", "SAME_TRAINING_EVAL_FLOAT_NOISE", "DIFFERS")
# result.json's train keys that are timings, not what training left
TIMINGS = ("perf/", "time/")


def _close(a: object, b: object) -> str:
    """``identical``, ``float_noise`` or ``differs`` for two JSON values: lists and dicts element by
    element, floats within the tolerance, everything else (bools, ints, strings, None) exactly."""
    if a == b and type(a) is type(b):
        return "identical"
    if isinstance(a, float) or isinstance(b, float):
        if not (_number(a) and _number(b)):
            return "differs"
        assert isinstance(a, int | float) and isinstance(b, int | float)  # for mypy
        close = abs(a - b) <= RTOL * max(abs(a), abs(b)) + ATOL  # inf/nan: False unless equal (above)
        return "float_noise" if close else "differs"
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return _worst(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return _worst(_close(a[k], b[k]) for k in a)
    return "differs"


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _worst(states: Iterable[str]) -> str:
    out = "identical"
    for s in states:
        if s == "differs":
            return s
        if s == "float_noise":
            out = s
    return out


def _trained(result: dict) -> dict:
    """result.json's final training metrics (``train``) without the timings."""
    return {k: v for k, v in result.get("train", {}).items() if not k.startswith(TIMINGS)}


def _is_eval_metric(key: str, suites: set[str]) -> bool:
    """``final/<suite>/...``: a metric of the evaluation (the rest are training's)."""
    parts = key.split("/")
    return len(parts) >= 3 and parts[0] == "final" and parts[1] in suites


def compare(old: dict[str, dict], new: dict[str, dict]) -> dict:
    """The suites and metrics on which two cells' records differ (empty lists: the same cell), the training
    and the evaluation judged apart, and the verdict (:data:`VERDICTS`)."""
    suites, eval_suites = [], {}
    for name, s in old["eval"]["suites"].items():
        t = new["eval"].get("suites", {}).get(name)
        if t is None or t.get("ids") != s.get("ids") or t.get("per_puzzle") != s.get("per_puzzle"):
            suites.append(name)
        if t is None or t.get("ids") != s.get("ids"):
            eval_suites[name] = "differs"
        else:
            eval_suites[name] = _close(s.get("per_puzzle"), t.get("per_puzzle"))
    a, b = old["result"].get("metrics", {}), new["result"].get("metrics", {})
    metrics = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    names = set(old["eval"]["suites"]) | set(new["eval"].get("suites", {}))  # a suite scored only now: not compared
    eval_metrics = {k: _metric_state(k, a, b) for k in metrics if _is_eval_metric(k, names)}
    ta, tb = _trained(old["result"]), _trained(new["result"])
    training = sorted(
        {k for k in metrics if not _is_eval_metric(k, names)}
        | {f"train/{k}" for k in set(ta) | set(tb) if ta.get(k) != tb.get(k) or type(ta.get(k)) is not type(tb.get(k))}
    )
    evaluation = _worst([*eval_suites.values(), *eval_metrics.values()])
    identical = not suites and not metrics
    if identical and not training and evaluation == "identical":
        verdict = "SAME"
    elif not training and evaluation != "differs":
        verdict = "SAME_TRAINING_EVAL_FLOAT_NOISE"
    else:
        verdict = "DIFFERS"
    return {
        "identical": identical,
        "suites_differing": suites,
        "metrics_differing": metrics,
        "verdict": verdict,
        "training": {"identical": not training, "metrics_differing": training},
        "evaluation": {
            "verdict": evaluation,
            "suites": {k: v for k, v in eval_suites.items() if v != "identical"},
            "metrics": {k: v for k, v in eval_metrics.items() if v != "identical"},
            "float_noise": {"rtol": RTOL, "atol": ATOL},
        },
    }


def _metric_state(key: str, a: dict, b: dict) -> str:
    """A suite's final metric: an accuracy (a count over the suite) exactly, the rest within the tolerance."""
    if key not in a or key not in b:
        return "differs"
    if key.rsplit("/", 1)[-1].startswith("acc"):
        return "identical" if a[key] == b[key] else "differs"
    return _close(a[key], b[key])


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


DESCRIBE = {
    "SAME": "identical to",
    "SAME_TRAINING_EVAL_FLOAT_NOISE": "trained bit-identically to, evaluated within float noise of",
    "DIFFERS": "DIFFERS from",
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
    print(f"{cell}: {out['verdict']}: {DESCRIBE[out['verdict']]} {archive}", out["suites_differing"] or "")
    if not out["identical"]:
        ev = out["evaluation"]
        print(
            f"{cell}: training {'bit-identical' if out['training']['identical'] else 'differs'} "
            f"({len(out['training']['metrics_differing'])} final training metrics differ); evaluation "
            f"{ev['verdict'].replace('_', ' ')} (suites {', '.join(ev['suites']) or 'none'}; "
            f"{len(ev['metrics'])} suite metrics differ; float noise: rtol {RTOL:g} + atol {ATOL:g})"
        )
        print(
            f"{cell}: {len(out['metrics_differing'])} final metrics differ; made with other",
            "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in out["made_with_differing"].items()) or "nothing recorded",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
