"""`pdx report` on a sweep with seeds and the real-puzzle roles: the real-puzzle tables and the across-seed
aggregates, on a tiny synthetic runs directory whose numbers are known by construction.

Built with the sweep's own writers (``eval_document``, ``finish``) like tests/fixtures/report: base:small,
``none`` and ``forward_kl`` (adaptive, β = 0.01) on seeds 0, 1, 2; one-move puzzles. Real suite: 40
puzzles rated 500, 560, …, 2840; the base solves the even ones (p* 0.6 where solved, 0.2 where not).
Forward KL on seed s solves 2(s+1) more (55 / 60 / 65%); none on seed s loses s+1 (47.5 / 45 / 42.5%).
"""

import argparse
import json
import math

import numpy as np
import pytest

from pdx_lightning.evaluation.match import pentanomial_elo
from pdx_lightning.evaluation.puzzle_scoring import SuiteResult
from pdx_lightning.experiments.report import report_command as report
from pdx_lightning.experiments.report.seeds import _elo_text
from pdx_lightning.experiments.sweep.config import parse_config, plan
from pdx_lightning.experiments.sweep.evaluate import eval_document
from pdx_lightning.experiments.sweep.record import finish

N = 40
RATING = 500.0 + 60 * np.arange(N)
BASE = np.arange(N) % 2 == 0
# each cell's pentanomial record against the base, from the cell's side (100 opening pairs)
PTN = {
    "forward_kl-adaptive-b0.01": [5, 10, 50, 25, 10],
    "forward_kl-adaptive-b0.01-s1": [4, 16, 52, 20, 8],
    "forward_kl-adaptive-b0.01-s2": [6, 14, 50, 22, 8],
    "none-adaptive": [10, 20, 50, 15, 5],
    "none-adaptive-s1": [12, 18, 50, 14, 6],
    "none-adaptive-s2": [9, 21, 48, 16, 6],
}


def solved_by(cell) -> np.ndarray:
    if cell.term == "forward_kl":
        return BASE | np.isin(np.arange(N), np.flatnonzero(~BASE)[: 2 * (cell.seed + 1)])
    return BASE & ~np.isin(np.arange(N), np.flatnonzero(BASE)[: cell.seed + 1])


def result(ids, solved, rating, depth=None) -> SuiteResult:
    """One solver ply per mate depth (a mate-in-2 has two), every ply right iff the puzzle is solved."""
    n = len(ids)
    depth = np.ones(n, np.int64) if depth is None else depth
    lp = np.log(np.where(solved, 0.6, 0.2))
    ply = lambda v: np.repeat(v, depth)  # noqa: E731
    k = int(depth.sum())
    return SuiteResult(
        ids=ids,
        rating=rating,
        difficulty=rating,
        depth=depth,
        solved=solved,
        first_fail=np.where(solved, -1, 0),
        log_p_star=lp,
        offsets=np.concatenate([[0], np.cumsum(depth)]),
        ply_correct=ply(solved),
        ply_mate=np.zeros(k, bool),
        ply_log_p=ply(lp / depth),
        ply_rank=ply(np.where(solved, 1, 2)),
        ply_top_log_p=np.log(np.full(k, 0.6)),
        ply_value=np.zeros(k),
        ply_move=["e2e4"] * k,
    )


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeds")
    out = root / "runs"
    cfg = parse_config(
        {
            "out": str(out),
            "base": "base:small",
            "steps": 10,
            "games": 4,
            "seeds": [0, 1, 2],
            "terms": ["none", "forward_kl"],
            "temperatures": ["adaptive"],
            "betas": [0.01],
            "eval": {
                "selection": "real.csv",
                "real": "real.csv",
                "real_hard": {"path": "real.csv", "rating_min": 2000},
                "mates": "real.csv",
            },
        }
    )
    hard = RATING >= 2000
    masks = {"selection": np.ones(N, bool), "real": np.ones(N, bool), "real_hard": hard, "mates": np.ones(N, bool)}
    depths = {"mates": np.where(np.arange(N) < N // 2, 1, 2)}  # the mates suite: depth 1, then depth 2
    ids = [f"r{i:02d}" for i in range(N)]

    def suites(solved):
        return {
            k: result([i for i, m in zip(ids, mk) if m], solved[mk], RATING[mk], depths[k][mk] if k in depths else None)
            for k, mk in masks.items()
        }

    meta = {
        k: {
            "spec": getattr(cfg.eval, k).__dict__,
            "files": ["real.csv"],
            "n": int(mk.sum()),
            "ids": [i for i, m in zip(ids, mk) if m],
            "rating": RATING[mk].tolist(),
            "difficulty": RATING[mk].tolist(),
            "depth": depths[k][mk].tolist() if k in depths else [1] * int(mk.sum()),
        }
        for k, mk in masks.items()
    }
    base = suites(BASE)
    (out / "base").mkdir(parents=True)
    (out / "base" / "eval.json").write_text(json.dumps(eval_document(cfg.base, meta, base, None)))
    for cell in plan(cfg):
        d = out / "cells" / cell.name
        d.mkdir(parents=True)
        (d / "eval.json").write_text(
            json.dumps(eval_document(str(d / "checkpoints" / "final.ckpt"), meta, suites(solved_by(cell)), base))
        )
        (d / "result.json").write_text(json.dumps({"schema": "pdx_cell_result/1", "metrics": {}, "seconds": {}}))
    doc = finish(cfg, out, plan(cfg), stages=False)
    players = [{"label": "base", "model": "base:small"}] + [
        {"label": c["name"], "model": c["checkpoint"]} for c in doc["cells"]
    ]
    matches = [{"a": "base", "b": name, "pentanomial": list(reversed(p))} for name, p in PTN.items()]
    (out / "arena.json").write_text(
        json.dumps({"players": players, "base": "base", "elo": {"error": "-"}, "matches": matches})
    )
    assert report.run(argparse.Namespace(runs=str(out), out=str(root / "report"))) == 0
    return (root / "report" / "report.md").read_text(), root / "report", out


def section(md: str, title: str) -> str:
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def row(text: str, *starts: str) -> list[str]:
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[: len(starts)] == list(starts):
            return cells
    raise AssertionError(f"no row {starts}")


def test_real_puzzles_get_table1_columns_bins_and_the_pairing(seeded):
    md, report_dir, out = seeded
    base = json.loads((out / "base" / "eval.json").read_text())["suites"]
    t1 = section(md, "Table 1 (real Lichess puzzles)")
    r = row(t1, "Frozen base")
    assert r[3] == "50.00 ± " + r[3].split(" ± ")[1] and r[4] == "0.346 (0.400)"  # sqrt(0.6·0.2); (0.6+0.2)/2
    hard = base["real_hard"]["summary"]
    assert hard["n"] == int((RATING >= 2000).sum()) == 15 and r[5].startswith(f"{100 * hard['acc']:.2f} ± ")
    fwd = row(t1, "Forward-KL prior (ours)", "adaptive")  # β* on seed 0: 22 of 40
    assert fwd[2] == "0.01" and fwd[3].startswith("55.00 ± ")
    # Figure 6 (right): every bin of the base, accuracy / p* per model, and the PNG
    bins = section(md, "Figure 6 (right)")
    b0 = base["real"]["summary"]["by_bin"][0]
    assert b0["bin"] == "<600" and f"<600 (n={b0['n']})" in bins
    assert row(bins, "Frozen base")[2] == f"{100 * b0['acc']:.1f} / {b0['p_star_geo']:.3f}"
    assert "](figure6_real_by_rating.png)" in bins and (report_dir / "figure6_real_by_rating.png").stat().st_size > 5000
    # paired with the base: forward KL seed 0 gains 2 puzzles, loses none; no regularizer seed 0 loses 1
    paired = section(md, "Real puzzles: paired with the base")
    assert "+2/−0 (p 0.5)" in row(paired, "Forward-KL prior (ours)")[2]
    assert "+0/−1 (p 1)" in row(paired, "No regularizer")[2]
    assert "seeds [0, 1, 2] (β* on seed 0)" in md.splitlines()[2]


def test_each_arm_shows_its_seeds_and_the_bootstrap_aggregate(seeded):
    md, *_ = seeded
    real = section(md, "Across seeds: accuracy and p* per arm").split("### real Lichess puzzles (40 puzzles)")[1]
    real = real.split("###")[0]
    fwd = row(real, "Forward-KL prior (ours)", "adaptive", "0.01")
    assert fwd[3:5] == ["0, 1, 2", "55.00 / 60.00 / 65.00"]
    mean, lo, hi = (float(v) for v in fwd[5].replace("[", "").replace("]", "").replace(",", "").split())
    assert mean == 60.0 and 45 < lo < 60 < hi < 75
    d, dlo, dhi = (float(v) for v in fwd[6].replace("[", "").replace("]", "").replace(",", "").split())
    # no puzzle is ever lost (per-puzzle differences are 0 or +1), so no resample falls below the base
    assert d == 10.0 and 0 <= dlo < 10 < dhi < 25 and fwd[7] == "1.000"
    # p*: each gained puzzle's ratio is 0.6 / 0.2 = 3, so the geometric ratio is 3^(mean gain share) = 3^0.1
    assert fwd[8].startswith(f"{3**0.1:.2f}× [") and fwd[9] == "1.000"
    none = row(real, "No regularizer", "adaptive", "0")
    # never above the base; a resample that misses every lost puzzle ties it (counted half): P near 0
    assert none[4:5] == ["47.50 / 45.00 / 42.50"] and none[6].startswith("-5.00 [") and float(none[7]) < 0.01
    assert math.isclose(float(none[8].split("×")[0]), round(3 ** (-2 / 40), 2))
    hard = section(md, "Across seeds: accuracy and p* per arm").split("### real Lichess puzzles, hard (15 puzzles)")[1]
    assert row(hard, "Forward-KL prior (ours)", "adaptive", "0.01")[3] == "0, 1, 2"


def test_strength_per_seed_pooled_and_bootstrapped_from_the_pentanomial_records(seeded):
    md, *_ = seeded
    arena = section(md, "Across seeds: strength against the base")
    fwd = row(arena, "Forward-KL prior (ours)", "adaptive", "0.01")
    names = ["forward_kl-adaptive-b0.01", "forward_kl-adaptive-b0.01-s1", "forward_kl-adaptive-b0.01-s2"]
    assert fwd[4] == " / ".join(_elo_text(*pentanomial_elo(tuple(PTN[n]))) for n in names)
    pooled = [sum(PTN[n][k] for n in names) for k in range(5)]
    assert fwd[5] == "600" and fwd[6] == f"[{', '.join(map(str, pooled))}]" == "[15, 40, 152, 67, 26]"
    assert fwd[7] == _elo_text(*pentanomial_elo(tuple(pooled)))
    elo, lo, hi = (float(v) for v in fwd[8].replace("[", "").replace("]", "").replace(",", "").split())
    assert elo == pytest.approx(pentanomial_elo(tuple(pooled))[0], abs=0.05) and lo < elo < hi  # equal pair counts
    assert float(fwd[9]) > 0.95  # every seed scores above ½
    none = row(arena, "No regularizer", "adaptive", "0")
    assert float(none[9]) < 0.05 and float(none[7].split(" ± ")[0]) < 0


def test_beta_selection_reads_the_first_seed_only(seeded):
    """Table 6 is the β grid of the seed that picks β* (seed 0): its cells, bold where selected; the
    replicates of the other seeds are not grid points (they appear in the across-seed tables)."""
    md, *_ = seeded
    t6 = section(md, "Table 6")
    fwd = row(t6, "Forward-KL prior (ours)", "adaptive")
    assert fwd[2].startswith("**55.00 ± ") and fwd[2].endswith("**")  # seed 0's 22/40, not seed 2's 26/40
    assert t6.count("unregularized (adaptive)") == 1 and "unregularized (adaptive) 47.50 ± " in t6


def test_mate_depth_table_splits_the_mates_suite_by_depth(seeded):
    """Forward KL's gains (odd puzzles 1, 3, ..., 11) and none's losses (even 0, 2, 4) all lie at depth 1
    (the first 20 puzzles): at depth 1 the base solves 10 of 20, forward KL 12 / 14 / 16 (Δ +20 points,
    p* ratio 3^(4/20)), none 9 / 8 / 7 (Δ −10, ratio 3^(−2/20)); at depth 2 every model equals the base."""
    md, *_ = seeded
    depth = section(md, "Across seeds: accuracy and p* per arm").split("### Tables 3–4 across seeds: by mate depth")[1]
    fwd = row(depth, "Forward-KL prior (ours)", "adaptive", "0.01")
    assert fwd[3].startswith("+20.0 [") and fwd[3].split("; ")[1].startswith(f"{3**0.2:.2f}× [")
    assert fwd[4] == "+0.0 [+0.0, +0.0]; 1.00× [1.00, 1.00]"
    none = row(depth, "No regularizer", "adaptive", "0")
    assert none[3].startswith("-10.0 [") and none[3].split("; ")[1].startswith(f"{3**-0.1:.2f}× [")
    assert none[4] == "+0.0 [+0.0, +0.0]; 1.00× [1.00, 1.00]"


def test_rliable_aggregates_mean_iqm_and_probability_of_improvement(seeded):
    """Per seed on the real suite, forward KL gains 2, 4, 6 puzzles of 40 (+5, +10, +15 points) and none
    loses 1, 2, 3 (-2.5, -5, -7.5): mean = IQM (3 seeds trim nothing) = +10 / -5; every forward seed is
    above the base and every seed of forward above every seed of none, so both probabilities are 1."""
    md, *_ = seeded
    agg = section(md, "Across seeds: mean, IQM and probability of improvement")
    fwd = row(agg, "real Lichess puzzles: Δ acc. (points)", "Forward-KL prior (ours), adaptive, β = 0.01")
    assert fwd[2] == "3" and fwd[3].startswith("+10.00 [+5.00, ") and fwd[4].startswith("+10.00 [")
    assert fwd[5] == "1.00 [1.00, 1.00]"
    none = row(agg, "real Lichess puzzles: Δ acc. (points)", "No regularizer, adaptive, β = 0")
    assert none[3].startswith("-5.00 [-7.50, ") and none[5] == "0.00 [0.00, 0.00]"
    # Elo: each seed's pentanomial Elo against the base, as the strength table's per-seed column
    elos = [
        pentanomial_elo(tuple(PTN[n]))[0]
        for n in ("forward_kl-adaptive-b0.01", "forward_kl-adaptive-b0.01-s1", "forward_kl-adaptive-b0.01-s2")
    ]
    e = row(agg, "Elo vs base", "Forward-KL prior (ours), adaptive, β = 0.01")
    assert e[3].startswith(f"{np.mean(elos):+.1f} [{min(elos):+.1f}, ")
    p = row(
        section(md, "Across seeds: mean, IQM and probability of improvement").split(
            "### Probability of improvement between arms"
        )[1],
        "real Lichess puzzles: Δ acc. (points)",
        "Forward-KL prior (ours), adaptive, β = 0.01",
        "No regularizer, adaptive, β = 0",
    )
    assert p[3:] == ["3 / 3", "1.00 [1.00, 1.00]"]
