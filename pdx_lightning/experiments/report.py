"""``pdx report --runs DIR --out DIR``: the paper's tables and figures, rebuilt from stored JSON only.

``--runs`` is a ``pdx sweep`` output directory (layout in :mod:`pdx_lightning.experiments.sweep`):
``sweep.json``, ``base/eval.json`` and ``cells/<cell>/{result,eval}.json``
(schema ``pdx_cell_eval/1``, :mod:`pdx_lightning.experiments.sweep_eval`), and whichever of
these exist (a missing file makes its table say *not measured*; nothing is estimated):

* ``arena.json`` / ``arena_sampled.json`` — ``pdx arena --json`` (argmax / ``--sample``):
  ``players[{label, model}]``, ``elo.ratings[{player, elo, ci95}]`` (base anchored at 0),
  ``head_to_head[{player, opponent, w, d, l, los}]`` → Table 1 Elo, W–D–L, LOS; Table 5 Elo.
* ``diagnostics.json`` — ``pdx eval diagnostics --json`` → Table 5::

      {"models": [{"name", "play": "raw"|"adaptive", "entropy": {"mean"}, "forward_kl": {"mean"},
                   "reverse_kl": {"mean"}, "cov_k": {"mean"}}], "top_k": 5}

* ``coverage.json`` — ``pdx eval coverage --json`` → Figure 7::

      {"depth": N, "target": 0.95, "positions": [{"name"}],
       "results": [{"model", "play", "position", "curve": {"k": [...], "mean": [...]},
                    "draws_to_target": {"mean", "std"}}]}

* ``recovery.json`` — ``pdx eval recovery --json`` (schema in :mod:`pdx_lightning.evaluation.recovery`;
  read: ``models[{name, position: {base_wrong, recovered, given_back, by_prob[{bin, n, recovered}],
  by_rank[...]}}]``) → Figure 8. Without it the report computes the same entries with
  ``recovery_analysis`` from the per-position arrays of the ``tactics`` suite in the eval JSONs, and says so.

Models are matched to rows by arena label, model string or checkpoint path (the sweep passes
checkpoint paths and cell names).
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

NM = "not measured"
TERM_LABEL = {"none": "No regularizer", "entropy": "Entropy bonus", "reverse_kl": "Reverse-KL anchor",
              "forward_kl": "Forward-KL prior (ours)", "control": "Puzzle-tuned control (supervised)"}
TEMP_LABEL = {"adaptive": "adaptive", "fixed": "τ≡1", None: "–"}


class ReportError(ValueError):
    """A runs directory the report cannot read."""


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


@dataclass
class Row:
    label: str                      # term label (Table 1 first column)
    tau: str                        # self-play temperature label
    keys: set                       # names this model may carry in arena / analysis JSON
    eval: dict | None               # its pdx_cell_eval/1 document
    cell: dict | None = None        # its sweep.json cell (None: the base)


@dataclass
class Runs:
    root: Path
    sweep: dict
    base: dict | None
    evals: dict[str, dict] = field(default_factory=dict)
    results: dict[str, dict] = field(default_factory=dict)
    files: dict[str, dict | None] = field(default_factory=dict)

    def rows(self, control: bool = True) -> list[Row]:
        """Table 1's rows: the base, each (term, temperature) at its β*, the control."""
        cells = {c["name"]: c for c in self.sweep["cells"]}
        base_name = self.sweep["base"]["name"]
        rows = [Row("Frozen base", "–", {"base", "base raw", base_name}, self.base)]
        sel = {(s["term"], s["temperature"]): s["cell"] for s in self.sweep["selected"]}
        for term in TERM_LABEL:
            for temp in ("adaptive", "fixed"):
                if (name := sel.get((term, temp))) is not None:
                    c = cells[name]
                    rows.append(Row(TERM_LABEL[term], TEMP_LABEL[temp], {name, c["checkpoint"]}, self.evals.get(name), c))
        ctrl = self.sweep.get("control")
        if control and ctrl and ctrl in self.evals:
            c = cells[ctrl]
            rows.append(Row(TERM_LABEL["control"], "–", {ctrl, c["checkpoint"]}, self.evals[ctrl], c))
        return rows


def load_runs(root: str | Path) -> Runs:
    root = Path(root)
    sweep = _load(root / "sweep.json")
    if sweep is None:
        raise ReportError(f"{root}: no sweep.json (not a `pdx sweep` output directory)")
    evals = {c["name"]: doc for c in sweep["cells"] if (doc := _load(root / c["dir"] / "eval.json"))}
    results = {c["name"]: doc for c in sweep["cells"] if (doc := _load(root / c["dir"] / "result.json"))}
    files = {n: _load(root / f"{n}.json") for n in ("arena", "arena_sampled", "coverage", "diagnostics", "recovery")}
    return Runs(root, sweep, _load(root / "base" / "eval.json"), evals, results, files)


# ---------------------------------------------------------------- formatting

def _summary(doc: dict | None, suite: str) -> dict | None:
    s = (doc or {}).get("suites", {}).get(suite)
    return s["summary"] if s and s.get("summary") and s["summary"].get("n") else None


def _acc(s: dict | None) -> str:
    if not s or s.get("acc") is None:
        return NM
    lo, hi = s["acc_ci"]
    return f"{100 * s['acc']:.2f} ± {50 * (hi - lo):.2f}"


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _beta(c: dict | None) -> str:
    return "–" if not c or c.get("beta") is None else f"{c['beta']:g}"


def _player(doc: dict | None, keys: set) -> str | None:
    """The arena label of the player whose label or model string is one of ``keys``."""
    for p in (doc or {}).get("players", []):
        if p["label"] in keys or p["model"] in keys:
            return p["label"]
    return None


def _elo(doc: dict | None, keys: set) -> tuple[str, dict | None]:
    label = _player(doc, keys)
    if label is None or "ratings" not in (doc or {}).get("elo", {}):
        return NM, None
    r = next(r for r in doc["elo"]["ratings"] if r["player"] == label)
    h2h = next((h for h in doc.get("head_to_head", []) if h["player"] == label), None)
    if label == doc["elo"].get("anchor"):
        return f"{r['elo']:+.1f} (anchor)", h2h
    lo, hi = r["ci95"]
    return f"Δ {r['elo']:+.1f} ± {(hi - lo) / 2:.1f}", h2h


# ---------------------------------------------------------------- tables

def table1(runs: Runs) -> str:
    arena = runs.files["arena"]
    out = []
    for r in runs.rows():
        elo, h = _elo(arena, r.keys)
        wdl = f"{h['w']}–{h['d']}–{h['l']}" if h else ("–" if r.cell is None else NM)
        los = f"{h['los']:.2f}" if h and h.get("los") is not None else ("–" if r.cell is None else NM)
        out.append([r.label, r.tau, _beta(r.cell), _acc(_summary(r.eval, "tactics")), _acc(_summary(r.eval, "hard")),
                    elo, wdl, los])
    return _table(["Exploration term", "Self-play τ", "β*", "Acc. (%)", "Acc. hard (%)", "Elo", "W–D–L vs base",
                   "LOS"], out)


def _depths(rows: list[Row]) -> list[int]:
    return sorted({d["depth"] for r in rows if (s := _summary(r.eval, "mates")) for d in s["by_depth"]})


def _by_depth(r: Row) -> dict:
    s = _summary(r.eval, "mates")
    return {d["depth"]: d for d in s["by_depth"]} if s else {}


def table3(runs: Runs) -> str:
    rows = runs.rows()
    depths = _depths(rows)
    if not depths:
        return f"*{NM}* (no mate suite in the eval JSONs)."
    return _table(["Exploration term", "Self-play τ", *[f"mate-in-{d}" for d in depths]],
                  [[r.label, r.tau, *[_acc(_by_depth(r).get(d)) for d in depths]] for r in rows])


def _pstar(s: dict | None) -> tuple[float | None, str]:
    if not s or s.get("p_star_geo") is None:
        return None, NM
    return s["p_star_geo"], f"{s['p_star_geo']:.3f} ({s['p_star_arith']:.3f})"


def table4(runs: Runs) -> str:
    rows = runs.rows()
    depths = _depths(rows)
    cols = [lambda r: _summary(r.eval, "tactics"), lambda r: _summary(r.eval, "hard")]
    cols += [lambda r, d=d: _by_depth(r).get(d) for d in depths]
    cells = [[_pstar(f(r)) for f in cols] for r in rows]
    for j in range(len(cols)):  # bold the best geometric mean per column
        vals = [c[j][0] for c in cells if c[j][0] is not None]
        for c in cells:
            if vals and c[j][0] == max(vals):
                c[j] = (c[j][0], f"**{c[j][1]}**")
    return _table(["Model", "Self-play τ", "Tactics all", "Tactics hard", *[f"mate-in-{d}" for d in depths]],
                  [[r.label, r.tau, *[s for _, s in c]] for r, c in zip(rows, cells)])


def table5(runs: Runs) -> str:
    arena, diag = runs.files["arena_sampled"], runs.files["diagnostics"]
    base_name = runs.sweep["base"]["name"]
    cfgs = [("Frozen base", "raw", {"base raw", base_name}, "raw"), ("", "μ", {"base mu"}, "adaptive")]
    for r in runs.rows(control=False)[1:]:
        play = "adaptive" if r.cell["temperature"] == "adaptive" else "raw"
        cfgs.append((r.label, "μ" if play == "adaptive" else "raw", r.keys, play))
    out = []
    for label, samp, keys, play in cfgs:
        d = next((m for m in (diag or {}).get("models", []) if m["play"] == play and
                  (m["name"] in keys or (label == "" and m["name"] == base_name))), None)
        vals = [f"{d[k]['mean']:.2f}" if d and d[k].get("mean") is not None else NM
                for k in ("entropy", "forward_kl", "reverse_kl", "cov_k")]
        out.append([label, samp, _elo(arena, keys)[0], *vals])
    k = (diag or {}).get("top_k", 5)
    return _table(["Configuration", "Samp.", "Elo (sampled)", "H(p)", "KL(π_base‖p)", "KL(p‖π_base)", f"cov{k}"], out)


def table6(runs: Runs) -> str:
    """Coefficient selection on the selection suite (Wilson ± half-widths); bold = β* of the row."""
    cells = [c for c in runs.sweep["cells"] if c["kind"] == "rl"]
    betas = sorted({c["beta"] for c in cells if c["term"] != "none"})
    sel = {(s["term"], s["temperature"]): s["cell"] for s in runs.sweep["selected"]}
    rows = []
    for term in ("entropy", "reverse_kl", "forward_kl"):
        for temp in ("adaptive", "fixed"):
            arm = {c["beta"]: c for c in cells if c["term"] == term and c["temperature"] == temp}
            if arm:
                vals = [(f"**{_acc(c['selection'])}**" if sel.get((term, temp)) == c["name"] else _acc(c["selection"]))
                        if (c := arm.get(b)) else "–" for b in betas]
                rows.append([TERM_LABEL[term], TEMP_LABEL[temp], *vals])
    refs = [f"frozen base {_acc(_summary(runs.base, 'selection'))}"]
    refs += [f"unregularized ({TEMP_LABEL[c['temperature']]}) {_acc(c['selection'])}" for c in cells if c["term"] == "none"]
    n = (_summary(runs.base, "selection") or {}).get("n", "?")
    return (_table(["Exploration term", "Self-play τ", *[f"β={b:g}" for b in betas]], rows) if rows else f"*{NM}*") + \
        f"\n\nSelection suite: {n} puzzles, accuracy (%) ± half the 95% Wilson interval. Reference: " + "; ".join(refs) + "."


def table_cells(runs: Runs) -> str:
    """Every cell: its accuracies and, from its training log, the online policy's last self-play diagnostics."""
    def num(v, fmt):
        return NM if v is None else fmt.format(v)

    out = []
    for c in runs.sweep["cells"]:
        m = runs.results.get(c["name"], {}).get("metrics", {})
        secs = runs.results.get(c["name"], {}).get("seconds", {})
        out.append([c["name"], _beta(c), _acc(c["selection"]), _acc(_summary(runs.evals.get(c["name"]), "tactics")),
                    num(m.get("final/tactics/p_star_geo"), "{:.3f}"), num(m.get("final/policy/entropy"), "{:.2f}"),
                    num(m.get("final/kl/forward_to_base"), "{:.3f}"), num(m.get("final/kl/reverse_to_base"), "{:.3f}"),
                    num(secs.get("train"), "{:.0f}")])
    return _table(["Cell", "β", "Selection acc. (%)", "Tactics acc. (%)", "p* geo", "H(π_θ)", "KL(π_base‖π_θ)",
                   "KL(π_θ‖π_base)", "train s"], out)


# ---------------------------------------------------------------- recovery (Figure 8's numbers)

def suite_result(doc: dict) -> "SuiteResult":
    """Rebuild a :class:`SuiteResult` from one suite of a ``pdx_cell_eval/1`` document (null log-prob = −inf)."""
    import numpy as np  # noqa: PLC0415

    from pdx_lightning.evaluation.puzzles import SuiteResult  # noqa: PLC0415

    pp = doc["per_puzzle"]

    def flat(key, dtype, null):
        return np.array([null if v is None else v for ply in pp[key] for v in ply], dtype=dtype)

    def num(key):
        return np.array([math.nan if v is None else v for v in doc.get(key) or [None] * doc["n"]], dtype=float)

    depth = np.array(doc["depth"], dtype=np.int64)
    return SuiteResult(ids=list(doc["ids"]), rating=num("rating"), difficulty=num("difficulty"), depth=depth,
                       solved=np.array(pp["solved"], bool), first_fail=np.array(pp["first_fail"], np.int64),
                       log_p_star=np.array([-math.inf if v is None else v for v in pp["log_p_star"]], float),
                       offsets=np.concatenate([[0], np.cumsum(depth)]).astype(np.int64),
                       ply_correct=flat("ply_correct", bool, False), ply_mate=flat("ply_mate", bool, False),
                       ply_log_p=flat("ply_log_p", float, -math.inf), ply_rank=flat("ply_rank", np.int64, 0),
                       ply_top_log_p=flat("ply_top_log_p", float, -math.inf),
                       ply_value=flat("ply_value", float, math.nan), ply_move=[m for ply in pp["ply_move"] for m in ply])


def recovery(runs: Runs) -> tuple[list[tuple[str, dict]], str]:
    """(row label, ``recovery.json`` model entry) for the prior-anchored rows, and where the numbers come from.

    From ``recovery.json`` when present; else computed by ``evaluation.recovery.recovery_analysis`` from the
    per-position arrays of the tactics suite stored in the eval JSONs (the same scoring, nothing rerun).
    """
    rows = [r for r in runs.rows(control=False) if r.cell and r.cell["term"] in ("reverse_kl", "forward_kl")]
    rec = runs.files["recovery"]
    if rec:
        return [(f"{r.label}, {r.tau}", m) for r in rows for m in rec["models"] if m["name"] in r.keys], "recovery.json"
    base = (runs.base or {}).get("suites", {}).get("tactics")
    if not base or not base.get("per_puzzle"):
        return [], ""
    from pdx_lightning.evaluation.recovery import recovery_analysis  # noqa: PLC0415

    b = suite_result(base)
    return [(f"{r.label}, {r.tau}", {"name": r.cell["name"], **recovery_analysis(b, suite_result(t))})
            for r in rows if r.eval and (t := r.eval["suites"].get("tactics")) and t.get("per_puzzle")], \
        "the per-position arrays of the tactics suite in the eval JSONs (`recovery_analysis`)"


def table_recovery(entries: list[tuple[str, dict]]) -> str:
    """Recovered / base-wrong solver positions per bin (the position unit, as the paper's Figure 8)."""
    def share(b):
        return f"{b['recovered']}/{b['n']}"

    pos = [m["position"] for _, m in entries]
    bins = [f"p {b['bin']}" for b in pos[0]["by_prob"]] + [f"rank {b['bin']}" for b in pos[0]["by_rank"]]
    return _table(["Model", "base-wrong", "recovered", "given back", *bins],
                  [[lab, p["base_wrong"], p["recovered"], p["given_back"], *[share(b) for b in p["by_prob"] + p["by_rank"]]]
                   for (lab, _), p in zip(entries, pos)])


# ---------------------------------------------------------------- the report

def render(runs: Runs, out: Path) -> str:
    from pdx_lightning.experiments import report_figures as fig  # noqa: PLC0415

    cfg = runs.sweep["config"]
    done = sum(c["status"] == "done" for c in runs.sweep["cells"])
    suites = {k: f"{s['n']} puzzles" for k, s in (runs.base or {}).get("suites", {}).items()}
    md = [f"# pdx report: {runs.root}", "",
          f"Base `{cfg['base']}`; every cell {cfg['steps']} steps × {cfg['games']} games, seed {cfg['seed']} (matched "
          f"compute); terms {cfg['terms']}, temperatures {cfg['temperatures']}, β grid {cfg['betas']}; "
          f"{done}/{len(runs.sweep['cells'])} cells finished. Suites: "
          + (", ".join(f"{k} {v}" for k, v in suites.items()) or NM) + ". All numbers are read from the JSON files "
          "in the runs directory; *not measured* marks inputs that are absent. Accuracies are argmax, multi-solution "
          "scored, EMA weights, ± half the 95% Wilson interval; rows are each arm's β* (Table 6).", ""]
    md += ["## Table 1: accuracy and searchless strength at β*", "", table1(runs), "",
           "Elo: argmax round robin (`arena.json`), base anchored at 0, ± half the 95% interval; W–D–L and LOS: "
           "direct record against the base." + ("" if runs.files["arena"] else f" Elo, W–D–L, LOS: *{NM}* (no arena.json)."),
           "", "## Table 3: mate-in-N accuracy (%)", "", table3(runs), "",
           "## Table 4: solution probability p*, geometric mean (arithmetic)", "", table4(runs), "",
           "## Table 5: sampled play and policy diagnostics", "", table5(runs), "",
           "Elo: sampled round robin (`arena_sampled.json`); H, KLs, cov: `diagnostics.json`.", "",
           "## Table 6: β selection on the selection suite", "", table6(runs), ""]
    for title, (png, caption) in fig.draw_all(runs, out).items():
        md += [f"## {title}", "", f"![{title}]({png})" if png else f"*{NM}*", "", caption, ""]
    entries, source = recovery(runs)
    md += ["## Figure 8 (numbers): recovery of base-wrong positions", "",
           (table_recovery(entries) + f"\n\nSource: {source}.") if entries else f"*{NM}*", "",
           "## All cells", "", table_cells(runs), "",
           "H and the KLs are the online policy's means over the self-play positions of the last training step "
           "(TensorBoard `policy/entropy`, `kl/*`), not Table 5's played-policy diagnostics.", ""]
    return "\n".join(md)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", required=True, help="a `pdx sweep` output directory (sweep.json, cells/, ...)")
    parser.add_argument("--out", required=True, help="directory for report.md and the PNG figures")


def run(args: argparse.Namespace) -> int:
    runs = load_runs(args.runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render(runs, out))
    print(f"wrote {out / 'report.md'}")
    return 0
