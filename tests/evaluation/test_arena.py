"""Batched arena, opening suites, Stockfish anchors (tiny random networks)."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections import Counter

import chess
import chess.pgn
import pytest
import torch

from pdx_lightning.datagen.opening_suite import (
    DEFAULT_SUITE,
    OpeningFormatError,
    generate_openings,
    load_openings,
    parse_opening,
    write_epd,
)
from pdx_lightning.engines.stockfish import StockfishSpecError, parse_stockfish_spec
from pdx_lightning.evaluation import arena
from pdx_lightning.evaluation.arena_game import ArenaError, game_outcome, to_pgn
from pdx_lightning.evaluation.arena_loop import play_games, round_robin
from pdx_lightning.evaluation.arena_players import NetPlayer, UciPlayer, make_player
from pdx_lightning.nets import NetOutput, load_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def openings():
    return load_openings()[:3]


@pytest.fixture(scope="module")
def tiny():
    return [load_model(f"random:tiny:{s}") for s in range(3)]


def replay_pgn(text: str) -> list[chess.pgn.Game]:
    games, stream = [], io.StringIO(text)
    while (g := chess.pgn.read_game(stream)) is not None:
        assert not g.errors, g.errors
        games.append(g)
    return games


# -- openings ---------------------------------------------------------------------------------


def test_bundled_suite_replays_its_lines():
    suite = load_openings(DEFAULT_SUITE)
    assert len(suite) == 200 and len({o.board.epd() for o in suite}) == 200
    assert len({o.id for o in suite}) == 200
    for o in suite:
        assert o.line and len(o.board.move_stack) == len(o.line)  # the true history, from the start
        assert 60 <= o.eval_cp <= 130
        assert o.board.root() == chess.Board()


def test_opening_parse_errors_and_plain_positions(tmp_path):
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    o = parse_opening(fen)
    assert o.board.fen() == fen and not o.line
    o = parse_opening('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "x"; c0 "e2e4";')
    assert o.id == "x" and o.line == ("e2e4",) and len(o.board.move_stack) == 1
    bad = tmp_path / "bad.epd"
    bad.write_text(f"{fen}\n" + 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - c0 "e2e5";\n')
    with pytest.raises(OpeningFormatError, match=r"bad.epd:2: c0 move 1 'e2e5' is illegal"):
        load_openings(bad)
    bad.write_text('rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq - c0 "e2e4";\n')
    with pytest.raises(OpeningFormatError, match="bad.epd:1: c0 line reaches"):
        load_openings(bad)
    bad.write_text("8/8/8/8/8/8/8/8 w - -\n")
    with pytest.raises(OpeningFormatError, match="bad.epd:1: invalid position"):
        load_openings(bad)
    out = tmp_path / "rt.epd"
    write_epd(load_openings()[:5], out, nodes=7)
    assert [o.board.epd() for o in load_openings(out)] == [o.board.epd() for o in load_openings()[:5]]


@pytest.mark.stockfish
def test_generate_openings_band_and_determinism():
    kw = dict(band=(20, 200), min_plies=2, max_plies=6, multipv=3, select_nodes=1000, eval_nodes=3000)
    a = generate_openings(2, seed=3, workers=1, **kw)
    b = generate_openings(2, seed=3, workers=2, **kw)
    assert [o.line for o in a] == [o.line for o in b]
    for o in a:
        assert 20 <= o.eval_cp <= 200 and 2 <= len(o.line) <= 6


# -- rules --------------------------------------------------------------------------------------


def _push(board: chess.Board, ucis: str) -> chess.Board:
    for u in ucis.split():
        board.push_uci(u)
    return board


def test_game_outcome_rules_and_claims():
    shuffle = "g1f3 g8f6 f3g1 f6g8 "
    b = _push(chess.Board(), shuffle * 2)  # start position now seen three times
    legal = list(b.legal_moves)
    assert game_outcome(b, legal, claim_draws=True) == ("1/2-1/2", "threefold repetition")
    assert game_outcome(b, legal, claim_draws=False) is None
    _push(b, shuffle * 2)
    assert game_outcome(b, list(b.legal_moves), claim_draws=False) == ("1/2-1/2", "fivefold repetition")
    b = _push(chess.Board("8/8/4k3/8/8/3K4/4R3/8 w - - 99 80"), "e2e1")
    assert game_outcome(b, list(b.legal_moves), True) == ("1/2-1/2", "50-move rule")
    assert game_outcome(b, list(b.legal_moves), False) is None
    b = _push(chess.Board("8/8/4k3/8/8/3K4/4R3/8 w - - 149 80"), "e2e1")
    assert game_outcome(b, list(b.legal_moves), False) == ("1/2-1/2", "75-move rule")
    mate = _push(chess.Board(), "f2f3 e7e5 g2g4 d8h4")
    assert game_outcome(mate, [], True) == ("0-1", "checkmate")
    assert game_outcome(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), [], True) == ("1/2-1/2", "stalemate")
    kk = chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")
    assert game_outcome(kk, list(kk.legal_moves), True)[1] == "insufficient material"


def test_game_outcome_agrees_with_python_chess():
    import random

    rng = random.Random(0)
    for _ in range(8):
        b = chess.Board()
        while True:
            legal = list(b.legal_moves)
            ours = game_outcome(b, legal, claim_draws=False)
            theirs = b.outcome(claim_draw=False)
            assert (ours is None) == (theirs is None)
            if ours:
                assert ours[0] == theirs.result()
                if ours[1] == "threefold repetition":
                    assert b.outcome(claim_draw=True) is not None
                break
            if game_outcome(b, legal, claim_draws=True):
                assert b.outcome(claim_draw=True) is not None
            b.push(rng.choice(legal))


# -- batched play -------------------------------------------------------------------------------


def test_round_robin_every_opening_both_colours_one_forward_per_ply(openings, tiny):
    players = [NetPlayer(f"m{k}", m) for k, m in enumerate(tiny)]
    calls = Counter()
    for k, p in enumerate(players):
        p.model.register_forward_hook(lambda mod, inp, out, k=k: calls.update([k]))
    sched = round_robin(3, len(openings), games=6)
    games = play_games(players, openings, sched, max_plies=44, progress=False)
    assert len(games) == 18
    per = Counter((frozenset((g.white, g.black)), g.opening.id, g.white) for g in games)
    for i in range(3):
        for j in range(i + 1, 3):
            for o in openings:
                assert per[(frozenset((i, j)), o.id, i)] == 1 and per[(frozenset((i, j)), o.id, j)] == 1
    iterations = max(len(g.moves) for g in games)  # every game starts at once: one loop pass per ply
    for k, p in enumerate(players):
        moves = sum(
            len(g.moves[(0 if (g.white == k) == g.opening.board.turn else 1) :: 2])
            for g in games
            if k in (g.white, g.black)
        )
        assert calls[k] == p.forwards <= iterations < moves  # batched: far fewer forwards than moves
    for g in games:
        assert g.board.ply() <= 44 and g.result in ("1-0", "0-1", "1/2-1/2")


def test_pgn_round_trip(openings, tiny):
    players = [NetPlayer("a", tiny[0]), NetPlayer("b", tiny[1])]
    games = play_games(players, openings, round_robin(2, 3, 2), max_plies=40, progress=False)
    text = "\n\n".join(str(to_pgn(g, ["a", "b"])) for g in games)
    parsed = replay_pgn(text)
    assert len(parsed) == len(games)
    for pg, g in zip(parsed, games):
        h = pg.headers
        assert (h["White"], h["Black"], h["Result"]) == (["a", "b"][g.white], ["a", "b"][g.black], g.result)
        assert h["SetUp"] == "1" and h["FEN"] == g.opening.board.fen() and h["Event"] and h["Termination"]
        board = pg.end().board()
        assert board.fen() == g.board.fen() and int(h["PlyCount"]) == len(g.moves)
        assert g.opening.id in pg.comment and " ".join(g.opening.line) in pg.comment


def test_argmax_is_deterministic_sampling_and_temperature_change_play(openings, tiny):
    sched = round_robin(2, 3, 2)

    def moves(**kw):
        ps = [NetPlayer("a", tiny[0], **kw), NetPlayer("b", tiny[1], **kw)]
        return [[m.uci() for m in g.moves] for g in play_games(ps, openings, sched, max_plies=32, progress=False)]

    assert moves() == moves()
    sampled = moves(sample=True, temperature=1.0, seed=1)
    assert sampled != moves() and sampled == moves(sample=True, temperature=1.0, seed=1)
    assert moves(sample=True, temperature=0.0, seed=1) == moves()  # τ = 0 is the argmax


class CertainValue(torch.nn.Module):
    """A network whose value head is sure of a win: H(WDL) ≈ 0, so the adaptive μ is the argmax."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        out = self.net(x)
        return NetOutput(out.policy, torch.tensor([40.0, 0.0, 0.0]).expand_as(out.wdl))


def test_adaptive_temperature_follows_the_value_head(openings, tiny):
    sched = round_robin(2, 3, 2)

    def moves(models, **kw):
        ps = [NetPlayer("a", models[0], **kw), NetPlayer("b", models[1], **kw)]
        return [[m.uci() for m in g.moves] for g in play_games(ps, openings, sched, max_plies=32, progress=False)]

    sure = [CertainValue(tiny[0]), CertainValue(tiny[1])]
    greedy = moves(tiny[:2])
    assert moves(sure, sample=True, temperature="adaptive", seed=1) == greedy  # τ = H(WDL) = 0: argmax
    assert moves(sure, sample=True, temperature=1.0, seed=1) != greedy
    # uncertain value heads (random nets: H ≈ ln 3) sample
    assert moves(tiny[:2], sample=True, temperature="adaptive", seed=1) != greedy


def test_adjudication_and_ply_cap(openings, tiny):
    ps = [NetPlayer("a", tiny[0]), NetPlayer("b", tiny[1])]
    sched = round_robin(2, 3, 2)
    draws = play_games(ps, openings, sched, adjudicate=2, adjudicate_draw=0.0, progress=False)
    assert all(g.result == "1/2-1/2" and len(g.moves) == 2 and "draw" in g.reason for g in draws)
    wins = play_games(ps, openings, sched, adjudicate=3, adjudicate_draw=1.1, adjudicate_win=0.0, progress=False)
    assert all(g.result == "1-0" and len(g.moves) == 3 for g in wins)
    assert all(to_pgn(g, ["a", "b"]).headers["Termination"] == "adjudication" for g in wins)
    capped = play_games(ps, openings, sched, max_plies=30, claim_draws=False, progress=False)
    for g in capped:
        assert g.board.ply() <= 30
        if g.reason == "30-ply cap":
            assert g.board.ply() == 30 and g.result == "1/2-1/2"
    assert any(g.reason == "30-ply cap" for g in capped)


def test_schedule_and_config_errors():
    assert round_robin(2, 5, 4) == [(0, 1, 0), (1, 0, 0), (0, 1, 1), (1, 0, 1)]
    s = round_robin(3, 10, 2, base=0, base_games=6)
    assert Counter(frozenset(p[:2]) for p in s) == {frozenset((0, 1)): 6, frozenset((0, 2)): 6, frozenset((1, 2)): 2}
    with pytest.raises(ArenaError, match="even"):
        round_robin(2, 5, 3)


# -- CLI ------------------------------------------------------------------------------------------


def _args(tmp_path, **over) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    argv = [
        "--model",
        "random:tiny:0",
        "--model",
        "random:tiny:1",
        "--model",
        "random:tiny:2",
        "--games",
        "2",
        "--max-plies",
        "36",
        "--quiet",
        "--threads",
        "1",
        "--json",
        str(tmp_path / "r.json"),
        "--md",
        str(tmp_path / "r.md"),
        "--pgn",
        str(tmp_path / "r.pgn"),
    ]
    for k, v in over.items():
        argv += [f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)])
    return p.parse_args(argv)


def test_cli_round_robin_writes_json_markdown_pgn(tmp_path, capsys):
    assert arena.run(_args(tmp_path, base="random:tiny:1", anchor_elo=2374)) == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert len(rep["games"]) == 6 and rep["base"] == "random:tiny:1"
    assert {r["player"] for r in rep["elo"]["ratings"]} == {"random:tiny:0", "random:tiny:1", "random:tiny:2"}
    anchor = next(r for r in rep["elo"]["ratings"] if r["player"] == "random:tiny:1")
    assert anchor["elo"] == 2374 and anchor["stderr"] == 0
    assert [r["opponent"] for r in rep["head_to_head"]] == ["random:tiny:1"] * 2
    assert rep["los_direct"]["random:tiny:0"]["random:tiny:0"] is None
    assert 0 <= rep["los_direct"]["random:tiny:0"]["random:tiny:2"] <= 1
    md = (tmp_path / "r.md").read_text()
    assert "### Ladder" in md and "### Head-to-head vs random:tiny:1" in md and md in capsys.readouterr().out
    assert len(replay_pgn((tmp_path / "r.pgn").read_text())) == 6


def test_cli_flags_change_the_run(tmp_path):
    import random

    torch.set_num_threads(2)
    args = _args(tmp_path, seed=1, elo_model="davidson", prior_draws=0.5, base_games=4, concurrency=2, device="cpu")
    args.label = ["a", "b", "c"]
    assert arena.run(args) == 0
    assert torch.get_num_threads() == 1  # --threads
    rep = json.loads((tmp_path / "r.json").read_text())
    assert [p["label"] for p in rep["players"]] == ["a", "b", "c"]
    pairs = Counter(frozenset((g["white"], g["black"])) for g in rep["games"])
    assert pairs == {frozenset("ab"): 4, frozenset("ac"): 4, frozenset("bc"): 2}  # --base-games (base = a)
    assert rep["elo"]["model"] == "davidson" and rep["elo"]["prior_draws"] == 0.5
    suite = load_openings()
    random.Random(1).shuffle(suite)  # --seed orders the openings
    assert {g["opening"] for g in rep["games"]} == {suite[0].id, suite[1].id}
    # --concurrency changes the batching, never the games
    one = _args(tmp_path, concurrency=1, json=tmp_path / "one.json")
    many = _args(tmp_path, json=tmp_path / "many.json")
    arena.run(one), arena.run(many)
    strip = [
        {k: g[k] for k in ("white", "black", "opening", "result", "plies")}
        for g in json.loads((tmp_path / "one.json").read_text())["games"]
    ]
    assert strip == [
        {k: g[k] for k in ("white", "black", "opening", "result", "plies")}
        for g in json.loads((tmp_path / "many.json").read_text())["games"]
    ]


def test_cli_flag_errors(tmp_path):
    with pytest.raises(ArenaError, match="needs --sample"):
        arena.run(_args(tmp_path, temperature="adaptive"))
    with pytest.raises(ArenaError, match="duplicates"):
        arena.run(_args(tmp_path, games=402))
    with pytest.raises(ArenaError, match="not one of the players"):
        arena.run(_args(tmp_path, base="random:small"))


# -- Stockfish anchors -------------------------------------------------------------------------


def test_stockfish_specs():
    assert parse_stockfish_spec("sf:nodes=1000")[0].nodes == 1000
    limit, opts = parse_stockfish_spec("sf:elo=1500")
    assert opts == {"UCI_LimitStrength": True, "UCI_Elo": 1500} and limit.depth == 2
    assert parse_stockfish_spec("sf:elo=1500,movetime=200")[0].time == 0.2
    for bad in ["sf:", "sf:nodes=0", "sf:elo=900", "sf:bogus=1", "sf:elo=1500,skill=3"]:
        with pytest.raises(StockfishSpecError):
            parse_stockfish_spec(bad)


@pytest.mark.stockfish
def test_game_against_stockfish_low_nodes_gives_legal_pgn(openings, tiny):
    players = [NetPlayer("tiny", tiny[0]), make_player("sf:nodes=50"), make_player("sf:elo=1350")]
    try:
        games = play_games(players, openings[:1], [(0, 1, 0), (1, 0, 0), (2, 0, 0)], progress=False)
    finally:
        for p in players:
            p.close()
    labels = ["tiny", "sf:nodes=50", "sf:elo=1350"]
    for pg, g in zip(replay_pgn("\n\n".join(str(to_pgn(g, labels)) for g in games)), games):
        board = pg.end().board()
        assert board.fen() == g.board.fen() and pg.headers["Result"] == g.result
        assert g.reason in (
            "checkmate",
            "threefold repetition",
            "50-move rule",
            "insufficient material",
            "stalemate",
            "512-ply cap",
        )
        if g.reason == "checkmate":
            assert board.is_checkmate() and board.outcome().result() == g.result


# -- external UCI engines (uci: players) --------------------------------------------------------
def test_uci_spec_parsing(tmp_path):
    from pdx_lightning.engines.external import UciSpecError, parse_uci_spec

    argv, limit, opts = parse_uci_spec(f"uci:{sys.executable} -m pdx_lightning.engines.uci --model 'random:tiny:1'")
    assert argv == [sys.executable, "-m", "pdx_lightning.engines.uci", "--model", "random:tiny:1"]
    assert limit.nodes == 1 and opts == {}
    argv, limit, opts = parse_uci_spec(f"uci[movetime=250,Threads=2,Style=fast]:{sys.executable}")
    assert limit.time == 0.25 and limit.nodes is None and opts == {"Threads": 2, "Style": "fast"}
    for bad, msg in [
        ("uci:", "no command"),
        ("uci[nodes=0]:" + sys.executable, "positive"),
        ("uci[nodes]:" + sys.executable, "bad field"),
        ("uci:/no/such/engine", "not found"),
        ("uci[nodes=1" + sys.executable, "expected uci"),
        ("uci:'unclosed", "cannot split"),
    ]:
        with pytest.raises(UciSpecError, match=msg):
            parse_uci_spec(bad)


def test_uci_player_plays_the_same_games_as_the_network_it_runs(openings, tiny):
    """A network behind a real UCI process (``pdx uci``) at nodes=1 plays exactly the moves of the same
    network played in-process by argmax: the external-engine path loses nothing (history included). Two
    processes of it (``--engine-procs 2``; one process: the Stockfish players' tests) split the games by
    id and search them in parallel, with the same result."""
    sched = round_robin(2, 2, 4)
    inproc = play_games(
        [NetPlayer("a", tiny[1]), NetPlayer("b", tiny[2])], openings, sched, max_plies=24, progress=False
    )
    ext = make_player(f"uci:{sys.executable} -m pdx_lightning.engines.uci --model random:tiny:1", "a", engine_procs=2)
    assert isinstance(ext, UciPlayer) and len(ext.engines) == 2
    pids = {e.transport.get_pid() for e in ext.engines}
    try:
        games = play_games([ext, NetPlayer("b", tiny[2])], openings, sched, max_plies=24, progress=False)
    finally:
        ext.close()
    assert len(pids) == 2
    assert [[m.uci() for m in g.moves] for g in games] == [[m.uci() for m in g.moves] for g in inproc]
    assert all(len(g.moves) > 4 for g in games)
