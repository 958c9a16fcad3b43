"""The paper's tables as Markdown, from a loaded :class:`~pdx_lightning.experiments.report.runs.Runs`.

Table 1 (accuracy and searchless strength at β*), Table 3 (mate-in-N accuracy), Table 4 (solution
probability p*), Table 5 (sampled play and policy diagnostics), Table 6 (β selection), every cell,
Figure 7's coverage numbers, Figure 8's recovery numbers and the human move-matching column
(``humans.json``). An absent input makes its cells say *not measured*.
"""

from __future__ import annotations

from collections.abc import Callable

from pdx_lightning.evaluation.coverage import draws_cell
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.experiments.arms import REGULARIZED, TEMP_LABEL, TEMPERATURES, TERM_LABEL, UNREGULARIZED
from pdx_lightning.experiments.report.runs import NM, Row, Runs, by_depth, mate_depths, suite_summary

# ---------------------------------------------------------------- formatting


def fmt_acc(s: dict | None) -> str:
    """``acc ± half the 95% Wilson interval`` in percent."""
    if not s or s.get("acc") is None:
        return NM
    lo, hi = s["acc_ci"]
    return f"{100 * s['acc']:.2f} ± {50 * (hi - lo):.2f}"


def _beta(c: dict | None) -> str:
    return "–" if not c or c.get("beta") is None else f"{c['beta']:g}"


def arena_label(doc: dict | None, keys: set) -> str | None:
    """The arena label of the player whose label or model string is one of ``keys``."""
    for p in (doc or {}).get("players", []):
        if p["label"] in keys or p["model"] in keys:
            return p["label"]
    return None


def _elo(doc: dict | None, keys: set) -> tuple[str, dict | None]:
    label = arena_label(doc, keys)
    if label is None or "ratings" not in (doc or {}).get("elo", {}):
        return NM, None
    assert doc is not None  # arena_label found the label in it
    r = next((r for r in doc["elo"]["ratings"] if r["player"] == label), None)
    h2h = next((h for h in doc.get("head_to_head", []) if h["player"] == label), None)
    if r is None:  # a player of the match block only (games added after the ladder was fitted)
        return NM, h2h
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
        out.append(
            [
                r.label,
                r.tau,
                _beta(r.cell),
                fmt_acc(suite_summary(r.eval, "tactics")),
                fmt_acc(suite_summary(r.eval, "hard")),
                elo,
                wdl,
                los,
            ]
        )
    return markdown_table(
        ["Exploration term", "Self-play τ", "β*", "Acc. (%)", "Acc. hard (%)", "Elo", "W–D–L vs base", "LOS"], out
    )


def table3(runs: Runs) -> str:
    rows = runs.rows()
    depths = mate_depths(rows)
    if not depths:
        return f"*{NM}* (no mate suite in the eval JSONs)."
    return markdown_table(
        ["Exploration term", "Self-play τ", *[f"mate-in-{d}" for d in depths]],
        [[r.label, r.tau, *[fmt_acc(by_depth(r).get(d)) for d in depths]] for r in rows],
    )


def _pstar(s: dict | None) -> tuple[float | None, str]:
    if not s or s.get("p_star_geo") is None:
        return None, NM
    return s["p_star_geo"], f"{s['p_star_geo']:.3f} ({s['p_star_arith']:.3f})"


def table4(runs: Runs) -> str:
    rows = runs.rows()
    depths = mate_depths(rows)
    cols: list[Callable[[Row], dict | None]] = [
        lambda r: suite_summary(r.eval, "tactics"),
        lambda r: suite_summary(r.eval, "hard"),
    ]

    def depth_col(d: int) -> Callable[[Row], dict | None]:  # one closure per depth
        return lambda r: by_depth(r).get(d)

    cols += [depth_col(d) for d in depths]
    cells = [[_pstar(f(r)) for f in cols] for r in rows]
    for j in range(len(cols)):  # bold the best geometric mean per column
        vals = [v for c in cells if (v := c[j][0]) is not None]
        for c in cells:
            if vals and c[j][0] == max(vals):
                c[j] = (c[j][0], f"**{c[j][1]}**")
    return markdown_table(
        ["Model", "Self-play τ", "Tactics all", "Tactics hard", *[f"mate-in-{d}" for d in depths]],
        [[r.label, r.tau, *[s for _, s in c]] for r, c in zip(rows, cells)],
    )


def _paired(row, suite: str, depth: int | None = None) -> dict | None:
    """The row's pairing with the base on ``suite`` (a mate depth's, given ``depth``)."""
    p = ((row.eval or {}).get("suites", {}).get(suite) or {}).get("paired")
    if p and depth is not None:
        p = next((d for d in p.get("by_depth", []) if d["depth"] == depth), None)
    return p if p and p.get("n") else None


def table_paired(runs: Runs) -> str:
    """Each model against the base on the same puzzles: p* ratio (geometric) with its 95% interval, and
    the argmax puzzles gained/lost with the exact McNemar p."""
    rows = runs.rows()[1:]
    depths = mate_depths(runs.rows())
    cols: list[tuple[str, int | None, str]] = [("tactics", None, "Tactics all"), ("hard", None, "Tactics hard")]
    cols += [("mates", d, f"mate-in-{d}") for d in depths]

    def cell(p):
        if not p or p.get("p_star_ratio") is None:
            return NM
        lo, hi = p["p_star_ratio_ci"]
        return f"{p['p_star_ratio']:.2f}× [{lo:.2f}, {hi:.2f}]; +{p['gained']}/−{p['lost']} (p {p['mcnemar_p']:.2g})"

    out = [[r.label, r.tau, *[cell(_paired(r, s, d)) for s, d, _ in cols]] for r in rows]
    return markdown_table(["Model", "Self-play τ", *[t for *_, t in cols]], out)


def table5(runs: Runs) -> str:
    arena, diag = runs.files["arena_sampled"], runs.files["diagnostics"]
    base_name = runs.sweep["base"]["name"]
    cfgs = [("Frozen base", "raw", {"base raw", base_name}, "raw"), ("", "μ", {"base mu"}, "adaptive")]
    for r in runs.rows(control=False)[1:]:
        assert r.cell is not None  # every row past the base has its sweep cell
        play = "adaptive" if r.cell["temperature"] == "adaptive" else "raw"
        cfgs.append((r.label, "μ" if play == "adaptive" else "raw", r.keys, play))
    out = []
    for label, samp, keys, play in cfgs:
        d = next(
            (
                m
                for m in (diag or {}).get("models", [])
                if m["play"] == play and (m["name"] in keys or (label == "" and m["name"] == base_name))
            ),
            None,
        )
        vals = [
            f"{d[k]['mean']:.2f}" if d and d[k].get("mean") is not None else NM
            for k in ("entropy", "forward_kl", "reverse_kl", "cov_k")
        ]
        out.append([label, samp, _elo(arena, keys)[0], *vals])
    k = (diag or {}).get("top_k", 5)
    return markdown_table(
        ["Configuration", "Samp.", "Elo (sampled)", "H(p)", "KL(π_base‖p)", "KL(p‖π_base)", f"cov{k}"], out
    )


def table6(runs: Runs) -> str:
    """Coefficient selection on the selection suite (Wilson ± half-widths); bold = β* of the row."""
    cells = runs.beta_cells()  # the β-selecting seed's (other seeds: the across-seed tables)
    betas = sorted({c["beta"] for c in cells if c["term"] != UNREGULARIZED})
    sel = {(s["term"], s["temperature"]): s["cell"] for s in runs.sweep["selected"]}
    rows = []
    for term in REGULARIZED:
        for temp in TEMPERATURES:
            arm = {c["beta"]: c for c in cells if c["term"] == term and c["temperature"] == temp}
            if arm:
                vals = [
                    (
                        f"**{fmt_acc(c['selection'])}**"
                        if sel.get((term, temp)) == c["name"]
                        else fmt_acc(c["selection"])
                    )
                    if (c := arm.get(b))
                    else "–"
                    for b in betas
                ]
                rows.append([TERM_LABEL[term], TEMP_LABEL[temp], *vals])
    refs = [f"frozen base {fmt_acc(suite_summary(runs.base, 'selection'))}"]
    refs += [
        f"unregularized ({TEMP_LABEL[c['temperature']]}) {fmt_acc(c['selection'])}"
        for c in cells
        if c["term"] == UNREGULARIZED
    ]
    n = (suite_summary(runs.base, "selection") or {}).get("n", "?")
    table = (
        markdown_table(["Exploration term", "Self-play τ", *[f"β={b:g}" for b in betas]], rows) if rows else f"*{NM}*"
    )
    return (
        table
        + f"\n\nSelection suite: {n} puzzles, accuracy (%) ± half the 95% Wilson interval. "
        + "Reference: "
        + "; ".join(refs)
        + "."
    )


def table_cells(runs: Runs) -> str:
    """Every cell: its accuracies and, from its training log, the online policy's last self-play
    diagnostics."""

    def num(v, fmt):
        return NM if v is None else fmt.format(v)

    out = []
    for c in runs.sweep["cells"]:
        m = runs.results.get(c["name"], {}).get("metrics", {})
        secs = runs.results.get(c["name"], {}).get("seconds", {})
        out.append(
            [
                c["name"],
                _beta(c),
                fmt_acc(c["selection"]),
                fmt_acc(suite_summary(runs.evals.get(c["name"]), "tactics")),
                num(m.get("final/tactics/p_star_geo"), "{:.3f}"),
                num(m.get("final/policy/entropy"), "{:.2f}"),
                num(m.get("final/kl/forward_to_base"), "{:.3f}"),
                num(m.get("final/kl/reverse_to_base"), "{:.3f}"),
                num(secs.get("train"), "{:.0f}"),
            ]
        )
    return markdown_table(
        [
            "Cell",
            "β",
            "Selection acc. (%)",
            "Tactics acc. (%)",
            "p* geo",
            "H(π_θ)",
            "KL(π_base‖π_θ)",
            "KL(π_θ‖π_base)",
            "train s",
        ],
        out,
    )


def table_arena(runs: Runs) -> str:
    """Every player of the argmax arena, in its order: the base, the cells, the control and any anchors
    (``arena.anchors``: Stockfish, the real Lc0 on the base's file), with the ladder Elo and the direct
    record against the base."""
    arena = runs.files["arena"]
    if not arena or "ratings" not in arena.get("elo", {}):
        return f"*{NM}* (no arena.json)."
    cells = {c["name"] for c in runs.sweep["cells"]}
    base = runs.sweep["base"]["name"]
    out = []
    on_ladder = {r["player"] for r in arena["elo"]["ratings"]}
    for p in arena["players"]:
        label = p["label"]
        if label not in on_ladder:  # match-block-only players: the across-seed tables show them
            continue
        kind = (
            "base"
            if p["model"] == base or label == "base"
            else "control"
            if label == "control"
            else "cell"
            if label in cells
            else "anchor"
        )
        elo, h = _elo(arena, {label})
        games = next(r["games"] for r in arena["elo"]["ratings"] if r["player"] == label)
        rec = (
            (f"{h['w']}–{h['d']}–{h['l']}", f"{h['score']:.3f}", f"{h['los']:.2f}" if h.get("los") is not None else "–")
            if h
            else ("–", "–", "–")
        )
        out.append([label, kind, elo, games, *rec])
    return markdown_table(["Player", "Kind", "Elo (ladder)", "Games", "W–D–L vs base", "Score vs base", "LOS"], out)


def table_recovery(entries: list[tuple[str, dict]]) -> str:
    """Recovered / base-wrong solver positions per bin (the position unit, as the paper's Figure 8)."""

    def share(b):
        return f"{b['recovered']}/{b['n']}"

    pos = [m["position"] for _, m in entries]
    bins = [f"p {b['bin']}" for b in pos[0]["by_prob"]] + [f"rank {b['bin']}" for b in pos[0]["by_rank"]]
    return markdown_table(
        ["Model", "base-wrong", "recovered", "given back", *bins],
        [
            [lab, p["base_wrong"], p["recovered"], p["given_back"], *[share(b) for b in p["by_prob"] + p["by_rank"]]]
            for (lab, _), p in zip(entries, pos)
        ],
    )


def table_coverage(runs: Runs) -> str:
    """Figure 7's numbers: draws to the target and Ω_K at powers of ten, per depth, position and model."""
    cov = runs.files["coverage"]
    titles = {k: r.title() for r in runs.rows() for k in r.keys}
    out = []
    for res in (cov or {}).get("results", []):
        assert cov is not None  # it has results
        om = res["omega_at"]
        out.append(
            [
                res.get("depth", cov.get("depth")),
                res["position"],
                titles.get(res["model"], res["model"]),
                "μ" if res["play"] == "adaptive" else "raw",
                draws_cell(res),
                *[f"{om[k]:.3f}" if k in om else "–" for k in ("10", "100", "1000")],
            ]
        )
    target = (cov or {}).get("target", 0.95)
    return (
        markdown_table(
            ["N", "Position", "Model", "Samp.", f"Draws to Ω = {target:g} (mean ± sd)", "Ω_10", "Ω_100", "Ω_1000"], out
        )
        if out
        else f"*{NM}*"
    )


def _humans_entry(doc: dict, key: str, keys: set) -> dict | None:
    """The ``models`` or ``paired`` entry of ``humans.json`` whose model string or label is one of ``keys``."""
    return next((m for m in doc.get(key, []) if m.get("model", m.get("name")) in keys or m.get("label") in keys), None)


def table_humans(runs: Runs) -> str:
    """Each row's move matching on human games (``pdx eval humans`` → ``humans.json``): top-1 and top-5
    with Wilson half-widths, NLL, and the pairing with the JSON's first model (the sweep stage puts the
    base first): top-1 points gained/lost with the exact McNemar p, and the NLL difference; then top-1 by
    the mover's rating."""
    doc = runs.files["humans"]
    if not doc:
        return f"*{NM}* (no humans.json)."
    rows = [(r, _humans_entry(doc, "models", r.keys), _humans_entry(doc, "paired", r.keys)) for r in runs.rows()]
    baseline = doc["models"][0].get("label") or doc["models"][0]["name"] if doc.get("models") else "?"

    def rate(o, k):
        lo, hi = o[f"top{k}_ci"]
        return f"{100 * o[f'top{k}']:.2f} ± {50 * (hi - lo):.2f}"

    def pair(p):
        if not p:
            return "–", "–"
        o = p["overall"]
        lo, hi = o["nll_diff_ci"]
        return (
            f"{100 * o['top1_diff']:+.2f} (+{o['gained']}/−{o['lost']}, p {o['mcnemar_p']:.2g})",
            f"{o['nll_diff']:+.3f} [{lo:+.3f}, {hi:+.3f}]",
        )

    out = []
    for r, m, p in rows:
        if m is None:
            out.append([r.label, r.tau, _beta(r.cell), NM, NM, NM, NM, NM, NM])
            continue
        o = m["overall"]
        out.append([r.label, r.tau, _beta(r.cell), o["positions"], rate(o, 1), rate(o, 5), f"{o['nll']:.3f}", *pair(p)])
    overall = markdown_table(
        [
            "Model",
            "Self-play τ",
            "β*",
            "positions",
            "top-1 (%)",
            "top-5 (%)",
            "NLL (nats)",
            f"Δtop-1 vs {baseline} (pts)",
            f"ΔNLL vs {baseline}",
        ],
        out,
    )
    scored = [(r, m) for r, m, _ in rows if m]
    bins = [b["bin"] for b in scored[0][1]["by_rating"]] if scored else []
    cell = {(id(m), b["bin"]): b for _, m in scored for b in m["by_rating"]}
    by_rating = (
        markdown_table(
            ["Mover's rating", *[r.title() for r, _ in scored]],
            [
                [b, *[f"{100 * cell[id(m), b]['top1']:.1f}" if (id(m), b) in cell else "–" for _, m in scored]]
                for b in bins
            ],
        )
        if bins
        else ""
    )
    f = doc.get("filters", {})
    note = (
        f"Games: {', '.join(doc.get('pgn', []))} ({doc.get('games', {}).get('used', '?')} used); the first "
        f"{f.get('skip_plies')} plies skipped, moves with under {f.get('min_clock')} s on the clock dropped."
    )
    return "\n\n".join(x for x in (overall, "### Top-1 (%) by the mover's rating", by_rating, note) if x)
