"""The searched and absolute-scale sections of reports/beyond_paper/report.md, from the match records that
``pdx matches run reports/beyond_paper/matches.yaml`` writes under ``records/`` (one JSON per match, as
``pdx arena --json`` writes it).

Per cell (``run.sh``'s labels; ``CELLS`` below): whether the retrained network is the committed one
(``same_<label>.json``, from ``same_cell.py``), its single-pass Elo against the base in pdx's arena on the
checkpoint (``pdxckpt_<label>``) and on the exported ``.pb.gz`` files (``pdx_<label>``), and the real Lc0's
matches at each node count (``lc0_n<N>_<label>``), each Elo from the pentanomial record (opening pairs, ±
95%) with LOS. At 1 node Lc0 plays the policy argmax: its games must be pdx's on the same two files, game
for game (the agreement column). The ladder (``ladder_<label>``): the BayesElo fit of each network and
the Stockfish ``UCI_Elo`` rungs, anchored at one rung.

The verdicts (``verdict_rows``): per cell, the single pass (Lc0 at 1 node), each searched Elo and its
change from the single pass, paired by opening (the same 500 openings at every node count: the cell's
pair scores at N nodes minus at 1 node, a 95% percentile bootstrap over the opening pairs), and the
ladder rating. A change whose interval holds 0 is "unchanged"; one above 0 "grows", below "shrinks".

The value heads (``value_rows``): ``pdx eval humans`` on the exported files and the base, over the 999
real Lichess games (``humans_value.json``): each value head's NLL of the game's result and its paired
difference from the base's (clustered by game), beside the policy's move matching and entropy.

A match still being played (its games so far saved by ``pdx matches save`` as ``records/partial/<name>.pgn.xz``)
is reported as interim: its Elo and change from the complete opening pairs played so far, marked with
the number of games, never as a verdict (below ``MIN_INTERIM_PAIRS`` pairs, only the number of games).

A match or cell without records is reported as not run; nothing here is filled in by hand.
"""

from __future__ import annotations

import io
import json
import lzma
import re
from pathlib import Path

import numpy as np

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
LC0_POLICY_T = 1.359  # Lc0 v0.31's --policy-softmax-temp default
MIN_INTERIM_PAIRS = 50  # fewer complete opening pairs of an unfinished match: only its count is shown


def _load(records: Path, name: str) -> dict | None:
    path = records / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def partial_record(records: Path, name: str) -> dict | None:
    """The games of an unfinished match saved under ``records/partial/<name>.pgn.xz`` as a record with
    ``games`` only (round, colours, result), or None when there is none. Games without a result are
    left out."""
    import chess.pgn

    path = records / "partial" / f"{name}.pgn.xz"
    if not path.is_file():
        return None
    games = []
    with lzma.open(path, "rt", encoding="utf-8") as f:
        text = io.StringIO(f.read())
    while (h := chess.pgn.read_headers(text)) is not None:
        if h.get("Result") in RESULT_SCORE:
            games.append({"round": h["Round"], "white": h["White"], "black": h["Black"], "result": h["Result"]})
    return {"games": games}


def pairs_elo(doc: dict, label: str, base: str = "base") -> tuple[float, float, int]:
    """Elo of ``label`` against ``base`` from the complete opening pairs of ``doc``'s games (pentanomial, ±
    95% half-width) and the number of pairs."""
    from pdx_lightning.evaluation.match import pentanomial_elo

    scores = pair_scores(doc, label, base).values()
    counts = tuple(sum(round(2 * s) == k for s in scores) for k in range(5))
    elo, half = pentanomial_elo(counts)
    return elo, half, len(scores)


def match_elo(doc: dict, label: str, base: str = "base") -> tuple[float, float, float]:
    """Elo of ``label`` against ``base`` from the pentanomial record (± 95% half-width) and its LOS."""
    from pdx_lightning.evaluation.match import pentanomial_elo
    from pdx_lightning.experiments.report.seeds import oriented_match

    m = oriented_match(doc, label, base)
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
    if same.get("verdict") == "SAME_TRAINING_EVAL_FLOAT_NOISE":  # same_cell.py's verdicts since issue 64
        return (
            f"yes: trained bit-identically; {len(same['suites_differing'])} suites scored within float noise "
            "(every puzzle's outcome equal)"
        )
    return (
        f"no: {len(same['suites_differing'])} suites and {len(same['metrics_differing'])} final metrics "
        "differ (a new draw; its single pass is measured again in the next two columns)"
    )


def searched_rows(records: Path, committed: dict[tuple, str]) -> tuple[list[str], list[list[str]]]:
    """The table of Elo against the base by node count: its header and one row per cell with records.
    ``committed`` maps ``CELLS``' keys to the committed single-pass Elo text (the reports' own records)."""
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
        same = _load(records, f"same_{label}")
        pdx = _load(records, f"pdx_{label}")
        lc0_1 = _load(records, f"lc0_n1_{label}")
        agree = NOT_RUN
        if pdx is not None and lc0_1 is not None:
            k, n = same_games(pdx, lc0_1)
            agree = f"{k:,} / {n:,}"
        rows.append(
            [
                cell_name(label),
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

    nets, rungs = [], []
    for label in ["base", *CELLS]:
        doc = _load(records, f"ladder_{label}")
        if doc is None:
            continue
        fit = {r["player"]: r for r in doc["elo"]["ratings"]}
        me = fit[label]
        name = cell_name(label)
        nets.append([name, f"{me['elo']:.0f} [{me['ci95'][0]:.0f}, {me['ci95'][1]:.0f}]", f"{me['games']:,}"])
        for player, r in fit.items():
            if player.startswith("sf:elo="):
                nominal = float(player.removeprefix("sf:elo="))
                rungs.append([name, player, f"{r['elo']:.0f}", f"{r['elo'] - nominal:+.0f}"])
    header = ["Network", "Elo (CCRL 40/4-anchored ladder) [95%]", "Games"]
    return header, nets, rungs


RESULT_SCORE = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


def pair_scores(doc: dict, label: str, base: str = "base") -> dict[str, float]:
    """``label``'s score against ``base`` (0, ½, 1, 1½, 2) on each complete opening pair: the games of
    rounds ``k.1`` and ``k.2``, keyed by ``k``."""
    by: dict[str, list[float]] = {}
    for g in doc["games"]:
        if {g["white"], g["black"]} != {label, base}:
            continue
        s = RESULT_SCORE[g["result"]]
        by.setdefault(g["round"].split(".")[0], []).append(s if g["white"] == label else 1.0 - s)
    return {k: sum(v) for k, v in by.items() if len(v) == 2}


def score_to_elo(score: np.ndarray | float) -> np.ndarray:
    """Logistic Elo of a mean game score (clipped away from 0 and 1)."""
    s = np.clip(np.asarray(score, dtype=float), 1e-6, 1 - 1e-6)
    return 400.0 * np.log10(s / (1.0 - s))


def search_change(
    single: dict, searched: dict, label: str, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float, int]:
    """Elo of ``label`` against the base in ``searched`` minus in ``single``, paired by opening pair: the
    point estimate, the 95% percentile bootstrap interval (opening pairs resampled, the same pairs in
    both matches) and the number of pairs both matches completed."""
    a, b = pair_scores(single, label), pair_scores(searched, label)
    keys = sorted(a.keys() & b.keys())
    if not keys:
        raise SystemExit(f"searched: no opening pair of {label!r} in both matches")
    x = np.array([a[k] for k in keys]) / 2.0
    y = np.array([b[k] for k in keys]) / 2.0
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(resamples, len(keys)))
    boot = score_to_elo(y[idx].mean(axis=1)) - score_to_elo(x[idx].mean(axis=1))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return float(score_to_elo(y.mean()) - score_to_elo(x.mean())), float(lo), float(hi), len(keys)


def change_word(lo: float, hi: float) -> str:
    """ "grows" (interval above 0), "shrinks" (below) or "unchanged" (holds 0)."""
    return "grows" if lo > 0 else "shrinks" if hi < 0 else "unchanged"


def cell_name(label: str) -> str:
    from pdx_lightning.experiments.arms import TERM_LABEL

    if label == "base":
        return "Maia-1900 (the base)"
    return "{}, {:,} games/step, {}, seed {}".format(TERM_LABEL[CELLS[label][0]], *CELLS[label][1:])


def ladder_diff_text(label: str, lad: tuple[float, float, float, float, float]) -> str:
    """A network's joint-ladder difference from the base (± 95%), "–" for the base itself."""
    return "–" if label == "base" else f"{lad[3]:+.0f} ± {lad[4]:.0f}"


def verdict_rows(records: Path, nodes: tuple[int, ...] = (16, 64)) -> tuple[list[str], list[list[str]], list[dict]]:
    """Per cell with a 1-node Lc0 match: its single-pass Elo, each searched Elo with its change from the
    single pass (paired, ``search_change``) and the verdict word, and its rating in the joint ladder fit
    with its difference from the base's (``joint_ladder``). The table's header and rows, and the same
    numbers as dicts (the answer's text)."""
    header = ["Cell", "Single pass (Lc0, 1 node)"]
    for n in nodes:
        header += [f"{n} nodes", f"change from the single pass [95%], {n} nodes"]
    header += ["Ladder Elo [95%], joint fit", "Ladder Elo − base's [95%]"]
    rows, data = [], []
    joint = joint_ladder(records)
    for label in labels(records):
        one = _load(records, f"lc0_n1_{label}")
        if one is None:
            continue
        elo1, half1, _ = match_elo(one, label)
        row = [cell_name(label), f"{elo1:+.1f} ± {half1:.1f}"]
        entry: dict = {"label": label, "single": (elo1, half1), "searched": {}}
        for n in nodes:
            doc = _load(records, f"lc0_n{n}_{label}")
            part = partial_record(records, f"lc0_n{n}_{label}") if doc is None else None
            if part is not None and len(pair_scores(part, label)) < MIN_INTERIM_PAIRS:
                row += [f"running: {len(part['games']):,} of 1,000 games", "running"]
                continue
            if part is not None:
                elo, half, pairs = pairs_elo(part, label)
                d, lo, hi, _pairs = search_change(one, part, label)
                entry.setdefault("interim", {})[n] = (elo, half, d, lo, hi, len(part["games"]))
                row += [
                    f"interim, {len(part['games']):,} of 1,000 games: {elo:+.1f} ± {half:.1f}",
                    f"interim, {pairs} pairs: {d:+.1f} [{lo:+.1f}, {hi:+.1f}]",
                ]
                continue
            if doc is None:
                row += [NOT_RUN, NOT_RUN]
                continue
            elo, half, _ = match_elo(doc, label)
            d, lo, hi, _pairs = search_change(one, doc, label)
            word = change_word(lo, hi)
            entry["searched"][n] = (elo, half, d, lo, hi, word)
            row += [f"{elo:+.1f} ± {half:.1f}", f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]: {word}"]
        lad = joint.get(label)
        entry["ladder"] = lad
        if lad is None:
            row += [NOT_RUN, NOT_RUN]
        else:
            row += [f"{lad[0]:.0f} [{lad[1]:.0f}, {lad[2]:.0f}]", ladder_diff_text(label, lad)]
        rows.append(row)
        data.append(entry)
    return header, rows, data


def search_answer(data: list[dict], nodes: tuple[int, ...] = (16, 64)) -> str:
    """The section's answer from the verdicts: per node count, how the cells' Elo moved from their single
    pass (how many grew, shrank, stayed within noise); the cells whose matches are missing are named."""
    parts = []
    for n in nodes:
        got = [e for e in data if n in e["searched"]]
        running = [e for e in data if n in e.get("interim", {})]
        interim = "; ".join(
            f"{e['label']} after {e['interim'][n][5]:,} games {e['interim'][n][2]:+.1f} "
            f"[{e['interim'][n][3]:+.1f}, {e['interim'][n][4]:+.1f}]"
            for e in running
        )
        if running:
            interim = f" (still running, change from the single pass so far: {interim})"
        if not got:
            parts.append(f"At {n} nodes: {'no match finished' + interim if running else 'not run'}")
            continue
        words = [e["searched"][n][5] for e in got]
        changes = [e["searched"][n][2] for e in got]
        counts = ", ".join(f"{words.count(w)} {w}" for w in ("grows", "unchanged", "shrinks") if w in words)
        span = f"{changes[0]:+.1f}" if len(changes) == 1 else f"{min(changes):+.1f} to {max(changes):+.1f}"
        parts.append(
            f"At {n} nodes ({len(got)} of {len(data)} cells): change from the single pass {span} Elo; {counts}{interim}"
        )
    return ". ".join(parts) + "."


ANCHOR, ANCHOR_ELO = "sf:elo=1650", 1650.0  # matches.yaml's ladder anchor


def joint_ladder(records: Path) -> dict[str, tuple[float, float, float, float, float]]:
    """Every network's ladder games in one pool (the rungs are the same players in each ladder), fitted as
    each ladder is (BayesElo, 2 virtual draws per pair, anchored at ``ANCHOR``): per network, its rating,
    the 95% bounds, and its difference from the base with that difference's 95% half-width (from the fit's
    covariance). Empty without the base's ladder."""
    from pdx_lightning.evaluation.elo import Z95, fit_elo

    docs = [d for label in ["base", *CELLS] if (d := _load(records, f"ladder_{label}")) is not None]
    if not docs or docs[0]["base"] != "base":
        return {}
    players: list[str] = []
    for d in docs:
        players += [p["label"] for p in d["players"] if p["label"] not in players]
    nets = [p for p in players if not p.startswith("sf:")]
    players = nets + sorted(p for p in players if p.startswith("sf:"))
    counts = np.zeros((len(players), len(players), 3))
    for d in docs:
        idx = [players.index(p["label"]) for p in d["players"]]
        counts[np.ix_(idx, idx)] += np.asarray(d["counts"], dtype=float)
    fit = fit_elo(players, counts, model="bayeselo", anchor=ANCHOR, anchor_rating=ANCHOR_ELO, prior_draws=2.0)
    b = players.index("base")
    out = {}
    for i, p in enumerate(nets):
        lo, hi = fit.ci95[i]
        var = fit.cov[i, i] + fit.cov[b, b] - 2.0 * fit.cov[i, b]
        diff, half = float(fit.ratings[i] - fit.ratings[b]), Z95 * float(np.sqrt(max(var, 0.0)))
        out[p] = (float(fit.ratings[i]), float(lo), float(hi), diff, half)
    return out


def divergence_text(records: Path) -> str:
    """Where Lc0 at 1 node and pdx parted (``divergence.py``'s records): how many differing games were
    replayed, how many parted at the same ply again, and the largest log-probability gap, under pdx's
    forward pass, between pdx's move and Lc0's there. Empty without records."""
    entries = [e for p in sorted(records.glob("divergence_*.json")) for e in json.loads(p.read_text())]
    if not entries:
        return ""
    parted = [e for e in entries if e["ply"] is not None]
    runner_up = sum(abs(e["played_log_gap"] - e["top2_log_gap"]) < 1e-9 for e in parted)
    worst = max((e["played_log_gap"] for e in parted), default=float("nan"))
    return (
        f"Where Lc0 and pdx differ ({len(entries)} games, replayed by `divergence.py`): {len(parted)} of them "
        f"part again; at the first move they play differently, Lc0's move is pdx's second choice in "
        f"{runner_up}, at most {worst:.1e} below the first in pdx's log-probability: near ties that the two "
        "implementations' floating-point arithmetic (Lc0's Eigen backend, pdx's torch) breaks differently."
    )


def search_mode_text(records: Path) -> str:
    """How the engines of the searched (> 1 node) matches kept their search, from the records' ``engine_search``
    (``pdx arena``: "game", one game at a time keeping its tree; "move", cleared every move). Empty
    without such records."""
    modes = {}
    for p in sorted(records.glob("lc0_n*_*.json")):
        m = re.match(r"lc0_n(\d+)_", p.stem)
        if m and int(m.group(1)) > 1:
            modes[p.stem] = json.loads(p.read_text()).get("engine_search")
    if not modes:
        return ""
    game = [k for k, v in modes.items() if v == "game"]
    text = (
        f"Searched matches: {len(game)} of {len(modes)} played one game at a time, each from `ucinewgame`, "
        "Lc0 keeping its search tree between the game's moves as in a GUI (`engine_search`: game)"
    )
    other = sorted(set(modes) - set(game))
    return text + (f"; not so: {', '.join(other)}." if other else ".")


def value_rows(records: Path) -> tuple[list[str], list[list[str]], dict | None]:
    """The value heads on real games (``humans_value.json``, ``pdx eval humans --json``): per network, the
    value NLL of the game's result [95%, clustered by game], its difference from the base's (the first
    model) [95%], the policy's top-1 match, NLL and entropy; and the record itself (None without one)."""
    doc = _load(records, "humans_value")
    header = [
        "Network",
        "value NLL of the result (nats) [95%]",
        "− the base's [95%, paired]",
        "policy top-1 match (%)",
        "policy NLL (nats)",
        "policy entropy (nats)",
    ]
    if doc is None:
        return header, [], None
    paired = {p["label"]: p["overall"] for p in doc["paired"]}
    rows = []
    for m in doc["models"]:
        o, p = m["overall"], paired.get(m["label"])
        ci = o["value_nll_ci"]
        diff = "–"
        if p is not None:
            d, (lo, hi) = p["value_nll_diff"], p["value_nll_diff_ci"]
            diff = f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
        rows.append(
            [
                cell_name(m["label"]),
                f"{o['value_nll']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]",
                diff,
                f"{100 * o['top1']:.1f}",
                f"{o['nll']:.3f}",
                f"{o['entropy']:.3f}",
            ]
        )
    return header, rows, doc


def _spec_temperature(doc: dict, label: str) -> float | None:
    """The ``--policy-softmax-temp`` a player of an arena record was started with (None: Lc0's default)."""
    spec = next(p["model"] for p in doc["players"] if p["label"] == label)
    m = re.search(r"--policy-softmax-temp=([0-9.]+)", spec)
    return float(m.group(1)) if m else None


def pilot_rows(records: Path) -> tuple[list[str], list[list[str]], list[dict]]:
    """The temperature pilots (``pilot_temp_n<N>_<label>.json``): the cell at N nodes with its policy softmax
    temperature raised (the base at Lc0's default), its Elo against the base, the same opening pairs' Elo
    at the default temperature (``lc0_n<N>_<label>``), and the paired change [95%]. The two matches' rounds
    must be the same openings. The header, the rows, and per pilot its numbers (the answer's text)."""
    header = [
        "Cell",
        "nodes",
        "Lc0 policy temperature, cell (base)",
        "games",
        "Elo vs base, raised temperature",
        "Elo vs base, default temperature, same openings",
        "change [95%]",
    ]
    rows, data = [], []
    for path in sorted(records.glob("pilot_temp_n*_*.json")):
        m = re.match(r"pilot_temp_n(\d+)_(.+)", path.stem)
        if m is None:
            continue
        n, label = int(m.group(1)), m.group(2)
        pilot, default = json.loads(path.read_text()), _load(records, f"lc0_n{n}_{label}")
        if default is None:
            raise SystemExit(f"searched: {path.name}: no lc0_n{n}_{label}.json to compare it with")
        openings: list[dict[str, set[str]]] = [{}, {}]
        for seen, d in zip(openings, (pilot, default)):
            for g in d["games"]:
                seen.setdefault(g["round"].split(".")[0], set()).add(g["opening"])
        common = openings[0].keys() & openings[1].keys()
        if any(openings[0][k] != openings[1][k] for k in common):
            raise SystemExit(f"searched: {path.name}: its rounds are not the same openings as lc0_n{n}_{label}'s")
        rounds = set(pair_scores(pilot, label))
        same = {"games": [g for g in default["games"] if g["round"].split(".")[0] in rounds]}
        e1, h1, _ = pairs_elo(pilot, label)
        e0, h0, _ = pairs_elo(same, label)
        d, lo, hi, pairs = search_change(default, pilot, label)
        t_cell, t_base = _spec_temperature(pilot, label), _spec_temperature(pilot, "base")
        rows.append(
            [
                cell_name(label),
                str(n),
                f"{t_cell or LC0_POLICY_T:.3f} ({t_base or LC0_POLICY_T:.3f})",
                f"{len(pilot['games']):,}",
                f"{e1:+.1f} ± {h1:.1f}",
                f"{e0:+.1f} ± {h0:.1f}",
                f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}] ({pairs} pairs)",
            ]
        )
        data.append({"label": label, "nodes": n, "elo": (e1, h1), "default": (e0, h0), "change": (d, lo, hi)})
    return header, rows, data
