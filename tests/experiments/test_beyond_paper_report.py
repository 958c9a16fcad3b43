"""reports/beyond_paper/: the dissociation figure rebuilds from the committed records; same_cell.py's verdict."""

import copy
import csv
import importlib
import json
import math
import shutil
import tarfile
from pathlib import Path

import pytest

HERE = Path(__file__).parents[2] / "reports" / "beyond_paper"


def _module(name: str):
    """A module of reports/beyond_paper, imported as the package it is (``reports.beyond_paper``)."""
    return importlib.import_module(f"reports.beyond_paper.{name}")


@pytest.mark.slow
def test_the_dissociation_report_rebuilds_from_its_records(tmp_path):
    """report.md and points.csv are exactly what assemble.py makes of the committed records; the figure is drawn."""
    mod = _module("assemble")
    assert mod.main(tmp_path) == 0
    for name in ("report.md", "points.csv"):
        assert (tmp_path / name).read_text() == (HERE / name).read_text(), name
    assert (tmp_path / "dissociation.png").stat().st_size > 10_000
    # every plotted cell of the eight-seed and 1,024-game reports, once each
    with (HERE / "points.csv").open() as f:
        rows = list(csv.DictReader(f))
    seeds8 = [r for r in rows if r["games_per_step"] == "128"]
    ref_lr = (HERE.parent / "sweep_maia_1024" / "paper_recipe_ref_lr" / "cells_json.tar.xz").is_file()
    assert len(seeds8) == 3 + 3 + 8 + 8 and len(rows) - len(seeds8) == 3 + ref_lr
    assert len({(r["cell"], r["games_per_step"], r["setting"]) for r in rows}) == len(rows)
    # one cell's y against its raw arena record: the 1,024-game forward-KL cell's pentanomial record
    doc = json.loads((HERE.parent / "sweep_maia_1024" / "arena" / "base1024_fwd.json").read_text())
    (m,) = doc["matches"]
    ptn = m["pentanomial"] if m["a"] != "base" else m["pentanomial"][::-1]
    row = next(
        r
        for r in rows
        if r["games_per_step"] == "1024" and r["cell"].startswith("forward_kl") and "Table" not in r["setting"]
    )
    assert row["pentanomial"] == " ".join(map(str, ptn))


def test_same_cell_tells_a_retrained_cell_from_the_committed_one(tmp_path):
    mod = _module("same_cell")
    archive, cell = HERE.parent / "sweep_maia_1024" / "cells_json.tar.xz", "none-adaptive"
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "runs", filter="data")
    verdict = tmp_path / "v.json"
    assert mod.main([str(archive), cell, str(tmp_path / "runs"), str(verdict)]) == 0
    same = json.loads(verdict.read_text())
    assert {k: same[k] for k in ("cell", "archive", "runs", "identical", "suites_differing", "metrics_differing")} == {
        "cell": cell,
        "archive": str(archive),
        "runs": str(tmp_path / "runs"),
        "identical": True,
        "suites_differing": [],
        "metrics_differing": [],
    }
    assert same["made_with_differing"] == {} and same["verdict"] == "SAME"
    assert same["training"] == {"identical": True, "metrics_differing": []}
    assert (same["evaluation"]["verdict"], same["evaluation"]["suites"]) == ("identical", {})
    # one puzzle solved differently and one final metric changed: both named
    old = mod.archived(archive, cell)
    new = copy.deepcopy(old)
    solved = new["eval"]["suites"]["real"]["per_puzzle"]["solved"]
    solved[0] = not solved[0]
    key = sorted(new["result"]["metrics"])[0]
    new["result"]["metrics"][key] += 1
    got = mod.compare(old, new)
    assert {k: got[k] for k in ("identical", "suites_differing", "metrics_differing", "verdict")} == {
        "identical": False,
        "suites_differing": ["real"],
        "metrics_differing": [key],
        "verdict": "DIFFERS",
    }
    assert got["evaluation"]["suites"] == {"real": "differs"}
    # what made them: a field that differs is named with both values, one the record predates as unrecorded
    new["result"]["environment"] = {**old["result"]["environment"], "torch": "9.9", "cpu_capability": "AVX2"}
    assert mod.made_with(old["result"], new["result"]) == {
        "torch": [old["result"]["environment"]["torch"], "9.9"],
        "cpu_capability": ["unrecorded", "AVX2"],
    }
    # a cell that was not retrained: exit 2, nothing written
    verdict.unlink()
    assert mod.main([str(archive), "forward_kl-adaptive-b0.01-s3", str(tmp_path / "runs"), str(verdict)]) == 2
    assert not verdict.exists()


def _cell_records(log_p: list[float], solved: list[bool], loss: float = 0.5) -> dict[str, dict]:
    """A hand-made cell: one suite of three puzzles (eval.json's per-puzzle arrays, as the sweep writes them)
    and result.json's final metrics, training's and the suite's."""
    per_puzzle = {
        "solved": solved,
        "first_fail": [-1 if s else 0 for s in solved],
        "log_p_star": log_p,
        "ply_correct": [[s] for s in solved],
        "ply_log_p": [[x] for x in log_p],
        "ply_value": [[0.25], [-1.5e-7], [0.0]],
        "ply_move": [["e2e4"], ["d7d5"], ["g1f3"]],
    }
    acc = sum(solved) / len(solved)
    p_star = math.exp(sum(log_p) / len(log_p))
    train = {"loss/total": loss, "selfplay/draw": 0.25, "step": 1999.0, "perf/transitions_per_s": 190.0}
    metrics = {"final/real/acc": acc, "final/real/p_star_geo": p_star, "final/loss/total": loss}
    return {
        "eval": {"schema": "pdx_cell_eval/1", "suites": {"real": {"ids": ["a", "b", "c"], "per_puzzle": per_puzzle}}},
        "result": {"train": train, "metrics": metrics, "environment": {"cpu": "AMD EPYC", "threads": 1}},
    }


def test_same_cell_tells_float_noise_in_the_evaluation_from_a_training_difference(tmp_path, capsys):
    """The verdicts on hand-made records: SAME (exactly equal), SAME_TRAINING_EVAL_FLOAT_NOISE (training
    bit-identical, every outcome equal, log-probabilities in their last digits: another CPU's kernels),
    DIFFERS (a training metric, a solved puzzle, an accuracy or a log-probability beyond the tolerance)."""
    mod = _module("same_cell")
    log_p, solved = [-0.7947932, -2.5e-06, -3.125], [True, True, False]
    committed = _cell_records(log_p, solved)

    def verdict(new: dict) -> dict:
        return mod.compare(committed, new)

    same = verdict(_cell_records(list(log_p), list(solved)))
    assert (same["verdict"], same["identical"], same["evaluation"]["verdict"]) == ("SAME", True, "identical")
    # the 7th digit of a log p* (and its mean's), a value's sign near zero, a timing: the same network
    noisy = _cell_records([-0.7947933, -2.6e-06, -3.125001], solved)
    noisy["eval"]["suites"]["real"]["per_puzzle"]["ply_value"][1] = [1.2e-7]
    noisy["result"]["train"]["perf/transitions_per_s"] = 150.0
    v = verdict(noisy)
    assert v["verdict"] == "SAME_TRAINING_EVAL_FLOAT_NOISE" and not v["identical"]
    assert (v["suites_differing"], v["metrics_differing"]) == (["real"], ["final/real/p_star_geo"])
    assert v["training"] == {"identical": True, "metrics_differing": []}
    assert v["evaluation"]["verdict"] == "float_noise"
    assert v["evaluation"]["suites"] == {"real": "float_noise"}
    assert v["evaluation"]["metrics"] == {"final/real/p_star_geo": "float_noise"}
    # training moved (one final training metric): DIFFERS, whatever the evaluation
    v = verdict(_cell_records(log_p, solved, loss=0.5000001))
    assert v["verdict"] == "DIFFERS" and v["training"]["metrics_differing"] == ["final/loss/total", "train/loss/total"]
    assert v["evaluation"]["verdict"] == "identical"
    # a discrete outcome moved (a puzzle solved, so the accuracy too): DIFFERS, though training is the same
    v = verdict(_cell_records(log_p, [True, True, True]))
    assert v["verdict"] == "DIFFERS" and v["training"]["identical"]
    assert (
        v["evaluation"]["suites"] == {"real": "differs"} and v["evaluation"]["metrics"]["final/real/acc"] == "differs"
    )
    # a move text, a log-probability beyond the tolerance (1e-3 relative), an id: DIFFERS
    other_move = _cell_records(log_p, solved)
    other_move["eval"]["suites"]["real"]["per_puzzle"]["ply_move"][2] = ["b1c3"]
    far = _cell_records([-0.7955880, *log_p[1:]], solved)
    other_ids = _cell_records(log_p, solved)
    other_ids["eval"]["suites"]["real"]["ids"] = ["a", "b", "d"]
    for new in (other_move, far, other_ids):
        v = verdict(new)
        assert (v["verdict"], v["evaluation"]["verdict"], v["training"]["identical"]) == ("DIFFERS", "differs", True)
    # a suite the committed cell has and the retrain lacks differs; one scored only now is not compared
    more = _cell_records(log_p, solved)
    more["eval"]["suites"]["real_hard"] = more["eval"]["suites"]["real"]
    assert mod.compare(more, committed)["evaluation"]["suites"] == {"real_hard": "differs"}
    assert mod.compare(more, committed)["verdict"] == "DIFFERS"
    assert verdict(more)["verdict"] == "SAME"

    # main(): the JSON verdict beside the fields run.sh's readers know, and the printed verdict
    archive = tmp_path / "committed.tar"
    with tarfile.open(archive, "w") as tar:
        for kind, doc in committed.items():
            path = tmp_path / "c" / f"{kind}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(doc))
            tar.add(path, arcname=f"./cells/x/{kind}.json")
    runs = tmp_path / "runs"
    (runs / "cells" / "x").mkdir(parents=True)
    for kind, doc in noisy.items():
        (runs / "cells" / "x" / f"{kind}.json").write_text(json.dumps(doc))
    out = tmp_path / "v.json"
    assert mod.main([str(archive), "x", str(runs), str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "SAME_TRAINING_EVAL_FLOAT_NOISE" and doc["identical"] is False
    assert doc["evaluation"]["float_noise"] == {"rtol": mod.RTOL, "atol": mod.ATOL}
    printed = capsys.readouterr().out
    assert "x: SAME_TRAINING_EVAL_FLOAT_NOISE: trained bit-identically to, evaluated within float noise of" in printed
    assert "training bit-identical" in printed and "evaluation float noise" in printed
    # the searched table reads the verdict: the same network, not a new draw
    assert _module("searched")._same_text(doc).startswith("yes: trained bit-identically")
    assert _module("searched")._same_text({**doc, "verdict": "DIFFERS"}).startswith("no: 1 suites")


def test_the_held_retrain_of_seed_3_is_recorded_with_what_made_it(tmp_path):
    """reports/sweep_maia_seeds8/held_avx2: the seed-3 forward-KL cell retrained under the AVX2 hold; its
    committed verdict against the committed cell is what same_cell.py says of the two archives, and names
    the kernels the committed record predates."""
    mod = _module("same_cell")
    held = HERE.parent / "sweep_maia_seeds8" / "held_avx2"
    cell = "forward_kl-adaptive-b0.01-s3"
    with tarfile.open(held / "cells_json.tar.xz") as tar:
        tar.extractall(tmp_path / "runs", filter="data")
    made = json.loads((tmp_path / "runs" / "cells" / cell / "result.json").read_text())["environment"]
    assert (made["kernels"], made["cpu_capability"], made["threads"]) == ("avx2", "AVX2", 1)
    verdict = tmp_path / "v.json"
    archive = "reports/sweep_maia_seeds8/runs_json.tar.xz"
    assert mod.main([str(HERE.parent.parent / archive), cell, str(tmp_path / "runs"), str(verdict)]) == 0
    now, committed = json.loads(verdict.read_text()), json.loads((held / "same_fwd_s3.json").read_text())
    for key in ("identical", "suites_differing", "metrics_differing", "made_with_differing"):
        assert now[key] == committed[key], key
    assert committed["made_with_differing"]["cpu_capability"] == ["unrecorded", "AVX2"]


def _relabelled(doc: dict, old: str, new: str) -> dict:
    """An arena record with one player renamed (as run.sh labels the cells)."""
    text = json.dumps(doc).replace(json.dumps(old), json.dumps(new))
    return json.loads(text)


def test_the_searched_table_reads_the_match_records(tmp_path):
    """Elo by node count from the records run.sh commits, oriented to the cell; Lc0 at 1 node against pdx
    on the same files game for game; a cell or match without records is 'not run', never filled in."""
    mod = _module("searched")
    doc = json.loads((HERE.parent / "sweep_maia_1024" / "arena" / "base1024_fwd.json").read_text())
    pdx = _relabelled(doc, "forward_kl-b1024", "fwd_s3")
    lc0 = copy.deepcopy(pdx)
    lc0["games"][7]["plies"] += 2  # one game played differently
    (tmp_path / "pdx_fwd_s3.json").write_text(json.dumps(pdx))
    (tmp_path / "lc0_n1_fwd_s3.json").write_text(json.dumps(lc0))
    (tmp_path / "same_fwd_s3.json").write_text(
        json.dumps({"identical": True, "suites_differing": [], "metrics_differing": []})
    )
    assert mod.same_games(pdx, lc0) == (999, 1000)
    assert mod.same_games(pdx, pdx) == (1000, 1000)
    header, rows = mod.searched_rows(tmp_path, {("forward_kl", 128, "maia.yaml rates", 3): "+0.3 ± 17.1"})
    assert header[-1] == "Lc0 1 node = pdx, game for game" and "Lc0, 16 nodes" not in header
    (row,) = rows
    assert row[0] == "Forward-KL prior (ours), 128 games/step, maia.yaml rates, seed 3"
    assert row[1:3] == ["yes", "+0.3 ± 17.1"]
    assert row[3] == "not run"  # no pdxckpt_fwd_s3.json
    # the cell is player b: its Elo is the base's negated (the 1,024-game report: +17.0 ± 16.9), LOS 1 - base's
    (m,) = doc["matches"]
    assert row[4] == f"+17.0 ± 16.9 (LOS {100 * (1 - m['los']):.0f}%)" == row[5]
    assert row[-1] == "999 / 1,000"
    # a record of a cell run.sh does not name is refused, not silently dropped
    (tmp_path / "lc0_n16_fwd_s9.json").write_text(json.dumps(pdx))
    with pytest.raises(SystemExit, match="fwd_s9"):
        mod.searched_rows(tmp_path, {})


def test_the_ladder_table_reads_the_fit(tmp_path):
    mod = _module("searched")

    def rating(player, elo, lo, hi, games):
        return {"player": player, "elo": elo, "stderr": (hi - lo) / 3.92, "ci95": [lo, hi], "games": games}

    fit = [
        rating("base", 1712.4, 1698.0, 1726.8, 2000),
        rating("sf:elo=1350", 1301.0, 1250.0, 1352.0, 480),
        rating("sf:elo=1650", 1650.0, 1650.0, 1650.0, 480),
    ]
    (tmp_path / "ladder_base.json").write_text(json.dumps({"elo": {"ratings": fit}}))
    header, nets, rungs = mod.ladder_rows(tmp_path)
    assert nets == [["Maia-1900 (the base)", "1712 [1698, 1727]", "2,000"]]
    assert rungs == [
        ["Maia-1900 (the base)", "sf:elo=1350", "1301", "-49"],
        ["Maia-1900 (the base)", "sf:elo=1650", "1650", "+0"],
    ]
    assert mod.ladder_rows(tmp_path / "none") == (header, [], [])


def _match_record(label: str, pair_scores: list[float]) -> dict:
    """A hand-made arena record of ``label`` against the base: one opening pair per score (0, ½, 1, 1½, 2;
    ½ and 1½ as a draw and a decisive game), with its pentanomial match entry as the arena writes it."""
    from pdx_lightning.evaluation import match

    games, wins, losses, draws = [], 0, 0, 0
    per = {
        0.0: ("0-1", "1-0"),
        0.5: ("1/2-1/2", "1-0"),
        1.0: ("1/2-1/2", "1/2-1/2"),
        1.5: ("1/2-1/2", "0-1"),
        2.0: ("1-0", "0-1"),
    }
    for k, s in enumerate(pair_scores, 1):
        for c, result in enumerate(per[s], 1):  # game 1: the cell White, game 2: the base White
            white, black = (label, "base") if c == 1 else ("base", label)
            games.append({"white": white, "black": black, "opening": f"o{k}", "round": f"{k}.{c}", "result": result})
            mine = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[result]
            mine = mine if white == label else 1.0 - mine
            wins, losses, draws = wins + (mine == 1.0), losses + (mine == 0.0), draws + (mine == 0.5)
    m = match.summarize(label, "base", wins, losses, draws, pair_scores)
    entry = {"a": label, "b": "base", "los": m.los, "pentanomial": list(m.pentanomial)}
    return {"games": games, "matches": [entry]}


def test_search_change_is_the_paired_elo_difference_with_a_bootstrap_interval(tmp_path):
    mod = _module("searched")
    single = _match_record("fwd_s3", [1.0] * 50 + [2.0] * 25 + [0.0] * 25)  # score 0.5
    searched = _match_record("fwd_s3", [1.0] * 50 + [2.0] * 50)  # score 0.75: +190.8 Elo
    d, lo, hi, n = mod.search_change(single, searched, "fwd_s3")
    assert n == 100
    assert d == pytest.approx(400 * math.log10(0.75 / 0.25))  # hand: Elo(0.75) - Elo(0.5)
    assert 0 < lo < d < hi and mod.change_word(lo, hi) == "grows"
    assert mod.search_change(single, single, "fwd_s3")[:3] == (0.0, 0.0, 0.0)
    assert mod.change_word(*mod.search_change(searched, single, "fwd_s3")[1:3]) == "shrinks"
    assert mod.change_word(-3.0, 4.0) == "unchanged"
    # only the opening pairs both matches completed are paired
    cut = copy.deepcopy(searched)
    cut["games"] = [g for g in cut["games"] if g["round"] != "1.2"]
    assert mod.search_change(single, cut, "fwd_s3")[3] == 99


def test_the_verdicts_read_the_records_and_never_fill_in(tmp_path):
    mod = _module("searched")
    one = _match_record("rev_s3", [1.0] * 100)
    (tmp_path / "lc0_n1_rev_s3.json").write_text(json.dumps(one))
    (tmp_path / "lc0_n16_rev_s3.json").write_text(json.dumps(_match_record("rev_s3", [1.0] * 90 + [0.0] * 10)))
    header, rows, data = mod.verdict_rows(tmp_path)
    assert header[1:4] == ["Single pass (Lc0, 1 node)", "16 nodes", "change from the single pass [95%], 16 nodes"]
    (row,) = rows
    assert row[0] == "Reverse-KL anchor, 128 games/step, maia.yaml rates, seed 3"
    assert row[1] == "-0.0 ± 0.0" and row[2].startswith("-34.9 ± ")  # 400 log10(0.45/0.55) = -34.86
    assert row[3].startswith("-34.9 [") and row[3].endswith("]: shrinks")
    assert row[4:] == ["not run"] * 4  # no 64-node match, no ladder
    answer = mod.search_answer(data)
    assert answer.startswith("At 16 nodes (1 of 1 cells): change from the single pass -34.9 Elo; 1 shrinks")
    assert answer.endswith(". At 64 nodes: not run.")


def _pgn(games: list[dict], unfinished: bool = True) -> str:
    """The games of a hand-made record as the arena's PGN headers (and one game still in play)."""
    text = ""
    for g in games:
        text += f'[Event "pdx arena"]\n[Round "{g["round"]}"]\n[White "{g["white"]}"]\n[Black "{g["black"]}"]\n'
        text += f'[Result "{g["result"]}"]\n\n1. e4 e5 {g["result"]}\n\n'
    if unfinished:
        text += '[Event "pdx arena"]\n[Round "99.1"]\n[White "base"]\n[Black "rev_s3"]\n[Result "*"]\n\n1. e4 *\n\n'
    return text


def test_an_unfinished_match_is_reported_as_interim_from_its_saved_games(tmp_path):
    import lzma

    mod = _module("searched")
    (tmp_path / "lc0_n1_rev_s3.json").write_text(json.dumps(_match_record("rev_s3", [1.0] * 100)))
    assert mod.partial_record(tmp_path, "lc0_n64_rev_s3") is None
    (tmp_path / "partial").mkdir()

    def save(pairs: int) -> None:  # pairs played so far, the cell scoring 0.25 a game; one game unpaired
        games = _match_record("rev_s3", [0.5] * pairs)["games"] + [
            {"round": f"{pairs + 1}.1", "white": "rev_s3", "black": "base", "result": "0-1"}
        ]
        with lzma.open(tmp_path / "partial" / "lc0_n64_rev_s3.pgn.xz", "wt") as f:
            f.write(_pgn(games))

    save(mod.MIN_INTERIM_PAIRS - 1)  # too few pairs for an interim Elo: only the count
    assert mod.verdict_rows(tmp_path)[1][0][4:6] == [
        f"running: {2 * mod.MIN_INTERIM_PAIRS - 1:,} of 1,000 games",
        "running",
    ]
    save(60)
    part = mod.partial_record(tmp_path, "lc0_n64_rev_s3")
    assert len(part["games"]) == 121  # the game in play ("*") is left out
    elo, half, pairs = mod.pairs_elo(part, "rev_s3")
    assert pairs == 60 and elo == pytest.approx(400 * math.log10(0.25 / 0.75)) and half == 0.0  # every pair ½
    _header, rows, data = mod.verdict_rows(tmp_path)
    (row,) = rows
    assert row[4] == f"interim, 121 of 1,000 games: {elo:+.1f} ± 0.0"
    assert row[5].startswith(f"interim, 60 pairs: {elo:+.1f} [")  # the single pass scored exactly 0.5
    assert 64 not in data[0]["searched"] and data[0]["interim"][64][5] == 121
    answer = mod.search_answer(data)
    assert answer.endswith(
        f"At 64 nodes: no match finished (still running, change from the single pass so far: "
        f"rev_s3 after 121 games {elo:+.1f} [{elo:+.1f}, {elo:+.1f}])."
    )
    # a finished match's record wins over its saved games
    (tmp_path / "lc0_n64_rev_s3.json").write_text(json.dumps(_match_record("rev_s3", [1.0] * 100)))
    assert mod.verdict_rows(tmp_path)[1][0][4].startswith("-0.0 ± ")


def _ladder(label: str, vs_rungs: list[list[int]]) -> dict:
    """A hand-made ladder record: ``label`` against sf:elo=1350 and sf:elo=1650, ``vs_rungs[k]`` = (W, D, L)
    of the network as White against rung k (and the mirror as Black), 10 games between the rungs."""
    players = [label, "sf:elo=1350", "sf:elo=1650"]
    c = [[[0, 0, 0] for _ in players] for _ in players]
    for k, (w, d, lo) in enumerate(vs_rungs, 1):
        c[0][k] = [w, d, lo]
        c[k][0] = [lo, d, w]
    c[2][1], c[1][2] = [3, 1, 1], [1, 1, 3]
    return {"base": label, "players": [{"label": p} for p in players], "counts": c}


def test_the_joint_ladder_pools_the_ladders_and_differences_the_base(tmp_path):
    mod = _module("searched")
    assert mod.joint_ladder(tmp_path) == {}
    (tmp_path / "ladder_base.json").write_text(json.dumps(_ladder("base", [[60, 20, 20], [30, 30, 40]])))
    (tmp_path / "ladder_rev_s3.json").write_text(json.dumps(_ladder("rev_s3", [[60, 20, 20], [30, 30, 40]])))
    (tmp_path / "ladder_fwd_s3.json").write_text(json.dumps(_ladder("fwd_s3", [[70, 20, 10], [45, 30, 25]])))
    joint = mod.joint_ladder(tmp_path)
    assert list(joint) == ["base", "fwd_s3", "rev_s3"]  # run.sh's order, the base first
    base, fwd, rev = joint["base"], joint["fwd_s3"], joint["rev_s3"]
    assert base[3] == 0.0 and rev[3] == pytest.approx(0.0, abs=1e-6) and rev[0] == pytest.approx(base[0], abs=1e-4)
    assert fwd[3] > 0 and fwd[3] == pytest.approx(fwd[0] - base[0])
    # the difference's interval is narrower than the two ratings' own intervals added (shared rungs)
    assert 0 < fwd[4] < (fwd[2] - fwd[1]) / 2 + (base[2] - base[1]) / 2
    assert (
        mod.ladder_diff_text("fwd_s3", fwd) == f"{fwd[3]:+.0f} ± {fwd[4]:.0f}"
        and mod.ladder_diff_text("base", base) == "–"
    )


def test_the_divergence_line_reads_the_replays(tmp_path):
    mod = _module("searched")
    assert mod.divergence_text(tmp_path) == ""
    tie = {"ply": 12, "top2_log_gap": 2e-4, "played_log_gap": 2e-4}
    other = {"ply": 3, "top2_log_gap": 1e-5, "played_log_gap": 0.5}  # Lc0 played pdx's third choice
    (tmp_path / "divergence_fwd_s3.json").write_text(json.dumps([tie, {"ply": None}]))
    (tmp_path / "divergence_rev_s3.json").write_text(json.dumps([other]))
    text = mod.divergence_text(tmp_path)
    assert text.startswith("Where Lc0 and pdx differ (3 games, replayed by `divergence.py`): 2 of them part again;")
    assert "Lc0's move is pdx's second choice in 1, at most 5.0e-01 below" in text


def test_the_search_mode_line_reads_engine_search(tmp_path):
    mod = _module("searched")
    (tmp_path / "lc0_n1_fwd_s3.json").write_text(json.dumps({"engine_search": "move"}))  # 1 node: not searched
    assert mod.search_mode_text(tmp_path) == ""
    (tmp_path / "lc0_n16_fwd_s3.json").write_text(json.dumps({"engine_search": "game"}))
    assert mod.search_mode_text(tmp_path).startswith("Searched matches: 1 of 1 played one game at a time")
    (tmp_path / "lc0_n64_fwd_s3.json").write_text(json.dumps({}))  # a record from before engine_search
    assert mod.search_mode_text(tmp_path).endswith("; not so: lc0_n64_fwd_s3.")


def test_the_value_table_reads_the_humans_record(tmp_path):
    mod = _module("searched")
    header, rows, doc = mod.value_rows(tmp_path)
    assert rows == [] and doc is None and header[1].startswith("value NLL")

    def overall(v, lo, hi):
        return {"value_nll": v, "value_nll_ci": [lo, hi], "top1": 0.5, "nll": 1.6, "entropy": 1.2, "positions": 10}

    rec = {
        "models": [
            {"label": "base", "overall": overall(0.81, 0.79, 0.83)},
            {"label": "fwd_s3", "overall": overall(0.86, 0.84, 0.88)},
        ],
        "paired": [{"label": "fwd_s3", "overall": {"value_nll_diff": 0.05, "value_nll_diff_ci": [0.04, 0.06]}}],
    }
    (tmp_path / "humans_value.json").write_text(json.dumps(rec))
    _, rows, _ = mod.value_rows(tmp_path)
    assert rows[0] == ["Maia-1900 (the base)", "0.8100 [0.7900, 0.8300]", "–", "50.0", "1.600", "1.200"]
    assert rows[1][0].startswith("Forward-KL prior (ours), 128 games/step")
    assert rows[1][2] == "+0.0500 [+0.0400, +0.0600]"


def test_the_matching_temperature_refuses_a_base_temperature_outside_lc0s_range(capsys):
    mod = _module("temperature")
    with pytest.raises(SystemExit) as e:
        mod.main(["--base-t", "12", "base:maia-1900", "out.json", "cell.ckpt"])
    assert e.value.code == 2
    assert "--base-t: 12.0 is outside Lc0's range [0.1, 10]" in capsys.readouterr().err


def test_the_pilot_is_compared_with_the_same_openings_at_the_default_temperature(tmp_path):
    mod = _module("searched")
    assert mod.pilot_rows(tmp_path)[1] == []
    default = _match_record("fwd_s3", [0.5] * 60 + [1.0] * 40)  # the first 60 pairs: 0.25 a game
    pilot = _match_record("fwd_s3", [1.0] * 60)  # the same 60 openings: 0.5 a game
    for d, t in ((default, ""), (pilot, " --policy-softmax-temp=1.678")):
        d["players"] = [{"label": "base", "model": "uci[nodes=16]:lc0"}, {"label": "fwd_s3", "model": f"uci:lc0{t}"}]
    (tmp_path / "lc0_n16_fwd_s3.json").write_text(json.dumps(default))
    (tmp_path / "pilot_temp_n16_fwd_s3.json").write_text(json.dumps(pilot))
    _header, (row,), (data,) = mod.pilot_rows(tmp_path)
    e0 = 400 * math.log10(0.25 / 0.75)  # the default match on the pilot's 60 pairs only
    assert row[1:4] == ["16", "1.678 (1.359)", "120"] and row[5] == f"{e0:+.1f} ± 0.0"
    assert float(row[4].split()[0]) == pytest.approx(0.0, abs=1e-9) and row[4].endswith("± 0.0")
    assert row[6].startswith(f"{-e0:+.1f} [") and row[6].endswith("(60 pairs)")
    assert data["change"][0] == pytest.approx(-e0) and data["nodes"] == 16
    pilot["games"][0]["opening"] = "elsewhere"  # a round that is another opening: refused
    (tmp_path / "pilot_temp_n16_fwd_s3.json").write_text(json.dumps(pilot))
    with pytest.raises(SystemExit, match="not the same openings"):
        mod.pilot_rows(tmp_path)


def _puzzle_json(by: str, solved: list[list[bool]], ids=("a", "b", "c")) -> dict:
    """A ``pdx eval puzzles --json`` output of three puzzles: one model per row of ``solved``."""
    from pdx_lightning.evaluation.stats import mcnemar_exact, wilson_interval

    models = [
        {
            "name": f"m{k}.pb.gz",
            "summary": {"n": len(s), "acc": sum(s) / len(s), "acc_ci": list(wilson_interval(sum(s), len(s)))},
            "per_puzzle": {"solved": s},
        }
        for k, s in enumerate(solved)
    ]
    paired = []
    for s in solved[1:]:
        gained = sum(b and not a for a, b in zip(solved[0], s))
        lost = sum(a and not b for a, b in zip(solved[0], s))
        paired.append(
            {
                "acc_diff": (sum(s) - sum(solved[0])) / len(s),
                "gained": gained,
                "lost": lost,
                "mcnemar_p": mcnemar_exact(gained, lost),
            }
        )
    doc = {"suite": {"files": ["p.csv"], "puzzles": len(ids)}, "puzzles": {"id": list(ids)}, "models": models}
    return {**doc, "paired": paired, **({"move_by": by} if by != "policy" else {})}


def test_the_value_move_record_keeps_what_the_table_needs_and_checks_its_inputs(tmp_path):
    vm = _module("value_move")
    docs = {
        "policy": _puzzle_json("policy", [[True, True, False], [True, True, True]]),
        "value": _puzzle_json("value", [[True, False, False], [False, False, False]]),
    }
    rec = vm.trim(docs, ["base", "fwd_s3"])
    assert rec["value"]["models"][0]["solved"] == "100" and rec["policy"]["models"][1]["solved"] == "111"
    assert rec["value"]["paired"] == [{"label": "fwd_s3", "acc_diff": -1 / 3, "gained": 0, "lost": 1, "mcnemar_p": 1.0}]
    header, rows = vm.rows(rec)
    assert header[1].startswith("policy argmax") and header[3].startswith("value head, one ply")
    assert rows[0][1].startswith("66.7 [") and rows[0][2] == "–" and rows[0][3].startswith("33.3 [")
    assert rows[1][2] == "+33.3 (+1/−0; p = 1)" and rows[1][4] == "-33.3 (+0/−1; p = 1)"
    with pytest.raises(ValueError, match="the value run's JSON was scored --move-by policy"):
        vm.trim({"policy": docs["policy"], "value": docs["policy"]}, ["base", "fwd_s3"])
    other = _puzzle_json("value", [[True, False, False], [False, False, False]], ids=("a", "b", "x"))
    with pytest.raises(ValueError, match="the value run scored other puzzles than the policy run"):
        vm.trim({"policy": docs["policy"], "value": other}, ["base", "fwd_s3"])
    with pytest.raises(ValueError, match="1 labels for the 2 models of the policy run"):
        vm.trim(docs, ["base"])
    out = tmp_path / "r.json"
    (tmp_path / "p.json").write_text(json.dumps(docs["policy"]))
    (tmp_path / "v.json").write_text(json.dumps(docs["value"]))
    assert vm.main([str(tmp_path / "p.json"), str(tmp_path / "v.json"), str(out), "base", "fwd_s3"]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(rec))


def test_the_value_move_answer_says_which_value_heads_choose_worse():
    assemble = _module("assemble")
    vm = _module("value_move")
    n = 40  # the base solves all 40 by both; the cell loses 12 by its value head, 0 by its policy
    docs = {
        "policy": _puzzle_json("policy", [[True] * n, [True] * n], ids=tuple(map(str, range(n)))),
        "value": _puzzle_json("value", [[True] * n, [True] * 28 + [False] * 12], ids=tuple(map(str, range(n)))),
    }
    text = assemble.value_move_answer(vm.trim(docs, ["base", "fwd_s3"]))
    assert "The base solves 100.0% of the puzzles by its policy and 100.0% by its value head" in text
    assert "fwd_s3 -30.0 points by its value head (p = 0.00049), +0.0 by its policy" in text
    assert text.endswith("So 1 of 1 cells' value heads choose worse than the base's (McNemar p < 0.05).")
    docs["value"] = _puzzle_json("value", [[True] * n, [True] * 39 + [False]], ids=tuple(map(str, range(n))))
    assert "no cell's value head chooses worse" in assemble.value_move_answer(vm.trim(docs, ["base", "fwd_s3"]))


def test_shard_games_splits_saved_games_by_opening_pair_and_the_shards_join_to_all(tmp_path):
    import io

    import chess.pgn

    sg = _module("shard_games")
    games = [
        {"round": f"{p}.{c}", "white": "base" if c == 1 else "rev_s3", "black": "rev_s3" if c == 1 else "base"}
        | {"result": "1-0"}
        for p in (1, 2, 3, 5, 8)
        for c in (1, 2)
    ]
    text = _pgn(games)  # and round 99.1 still in play ("*")

    def rounds(out: str) -> list[str]:
        stream, got = io.StringIO(out), []
        while (g := chess.pgn.read_game(stream)) is not None:
            got.append(g.headers["Round"])
        return got

    outs = []
    for k in (1, 2, 3):
        out = io.StringIO()
        assert sg.shard_games(io.StringIO(text), out, k, 3) == {1: 2, 2: 6, 3: 2}[k]
        outs.append(rounds(out.getvalue()))
    # pairs p = round − 1 = 0, 1, 2, 4, 7; shard k holds p mod 3 = k − 1: 0 | 1, 4, 7 | 2
    assert outs == [["1.1", "1.2"], ["2.1", "2.2", "5.1", "5.2", "8.1", "8.2"], ["3.1", "3.2"]]
    assert sorted(r for o in outs for r in o) == sorted(g["round"] for g in games)  # each finished game once
    with pytest.raises(ValueError, match=r"shard 4/3: K must be in \[1, N\]"):  # an ArenaError
        sg.shard_games(io.StringIO(text), io.StringIO(), 4, 3)
    with pytest.raises(ValueError, match="Round '7' is not an arena round"):
        sg.shard_games(io.StringIO(text.replace('[Round "2.1"]', '[Round "7"]')), io.StringIO(), 1, 3)
    # joining overlapping files (1 of 1): a game twice is written once, two different games of a round refused
    out = io.StringIO()
    assert sg.shard_games(io.StringIO(text + text), out, 1, 1) == 10
    assert sorted(rounds(out.getvalue())) == sorted(g["round"] for g in games)
    other = _pgn([{**games[0], "result": "0-1"}], unfinished=False)
    with pytest.raises(ValueError, match=r"round 1\.1: two different games"):
        sg.shard_games(io.StringIO(text + other), io.StringIO(), 1, 1)


@pytest.mark.parametrize(
    ("report", "played_with"),
    [
        ("beyond_paper", {"SHARED": "/work/shared", "LC0": ".venv/bin/lc0"}),
        ("searched", {"CELLS": "/work/wt_cells/runs/sweep_maia/cells"}),
    ],
)
def test_each_finished_match_was_played_as_its_report_lists_it(monkeypatch, report, played_with):
    """reports/<report>/matches.yaml is what was played: every record's arena command (players, labels,
    games, openings, concurrency, anchors, ...) equals the list's, with the paths it was played from."""
    from pdx_lightning.evaluation.match_list import load_match_list, record_differences

    for name, value in played_with.items():
        monkeypatch.setenv(name, value)
    ml = load_match_list(Path(__file__).parents[2] / "reports" / report / "matches.yaml")
    done = [m for m in ml.matches if ml.record(m, "json").is_file()]
    assert len(done) >= 3
    assert {m.name: record_differences(ml, m) for m in done} == {m.name: [] for m in done}


def test_the_eight_seed_arenas_were_played_as_their_list_says(tmp_path):
    """reports/sweep_maia_seeds8/matches.yaml is what was played: its JSON records (packed in
    arena/arena_json.tar.xz) each match one listed match, with the list's players, labels and options."""
    from pdx_lightning.evaluation.match_list import load_match_list, record_differences

    here = HERE.parent / "sweep_maia_seeds8"
    shutil.copy(here / "matches.yaml", tmp_path / "matches.yaml")
    with tarfile.open(here / "arena" / "arena_json.tar.xz") as tar:
        tar.extractall(tmp_path / "arena", filter="data")
    ml = load_match_list(tmp_path / "matches.yaml")
    assert sorted(m.name for m in ml.matches) == sorted(p.stem for p in (tmp_path / "arena").glob("*.json"))
    assert sorted(m.name for m in ml.matches) == sorted(p.stem for p in (here / "arena").glob("*.md"))
    assert {m.name: record_differences(ml, m) for m in ml.matches} == {m.name: [] for m in ml.matches}
