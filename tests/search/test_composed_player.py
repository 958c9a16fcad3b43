"""The composed search player (issue 63's attribution tool): one network's policy, another's W/D/L."""

from __future__ import annotations

import copy
import subprocess
import sys

import chess.pgn
import pytest
import torch

from pdx_lightning.engines.uci import UciOptionError, check_search
from pdx_lightning.nets import load_model
from pdx_lightning.nets.composed import ComposedNetwork, compose
from pdx_lightning.search.spec import SearchSpecError, parse_search_options, parse_search_spec

PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]


def test_value_key_is_read_and_an_empty_one_refused():
    spec = parse_search_spec("search[nodes=64,value=base:maia-1900,policy_softmax_temp=1.8]:cell.ckpt")
    assert (spec.model, spec.value_model, spec.settings.nodes, spec.settings.policy_softmax_temp) == (
        "cell.ckpt",
        "base:maia-1900",
        64,
        1.8,
    )
    assert parse_search_spec("search[nodes=8]:m").value_model is None
    with pytest.raises(SearchSpecError, match="value= needs a model"):
        parse_search_spec("search[value=]:m")
    with pytest.raises(SearchSpecError, match="^--search: .*unknown key 'depth'"):
        parse_search_options("depth=3")


def test_uci_refuses_a_value_network_that_is_not_there(tmp_path):
    with pytest.raises(UciOptionError, match=r"--search value=: .*no such file"):
        check_search(f"nodes=8,value={tmp_path / 'missing.pt'}")
    assert check_search("nodes=8,value=random:tiny:1").value_model == "random:tiny:1"


def test_the_composed_network_takes_each_head_from_its_network():
    a = load_model("random:tiny")
    b = load_model("random:tiny:1")
    x = torch.randn(5, 112, 8, 8)
    with torch.no_grad():
        out, out_a, out_b = ComposedNetwork(a, b)(x), a(x), b(x)
        assert torch.equal(out.policy, out_a.policy) and torch.equal(out.wdl, out_b.wdl)
        assert not torch.equal(out_a.wdl, out_b.wdl)  # the two heads really come from two networks
        same = ComposedNetwork(a, copy.deepcopy(a))(x)
        assert torch.equal(same.policy, out_a.policy) and torch.equal(same.wdl, out_a.wdl)
    assert compose(a, None) is a


def _arena_moves(tmp_path, name: str, player: str) -> list[list[str]]:
    out = tmp_path / f"{name}.pgn"
    r = subprocess.run(
        [*PDX, "arena", "--model", player, "--model", "random:tiny:2", "--games", "4", "--max-plies", "30",
         "--pgn", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    games = []
    with open(out) as f:
        while (game := chess.pgn.read_game(f)) is not None:
            games.append([m.uci() for m in game.mainline_moves()])
    assert len(games) == 4
    return games


def test_a_network_composed_with_itself_plays_the_plain_players_moves_and_another_value_does_not(tmp_path):
    plain = _arena_moves(tmp_path, "plain", "search[nodes=16]:random:tiny")
    itself = _arena_moves(tmp_path, "itself", "search[nodes=16,value=random:tiny]:random:tiny")
    other = _arena_moves(tmp_path, "other", "search[nodes=16,value=random:tiny:1]:random:tiny")
    assert itself == plain
    assert other != plain


def test_pdx_uci_searches_with_the_value_network():
    text = "uci\nisready\nposition startpos moves e2e4\ngo nodes 16\nquit\n"
    lines = {}
    for value in ("", ",value=random:tiny", ",value=random:tiny:1"):
        r = subprocess.run(
            [*PDX, "uci", "--model", "random:tiny", "--search", f"reuse=0{value}"],
            input=text, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
        lines[value] = [ln for ln in r.stdout.splitlines() if ln.startswith(("info depth", "bestmove"))]
    assert lines[",value=random:tiny"] == lines[""] or _same_but_nps(lines[",value=random:tiny"], lines[""])
    assert not _same_but_nps(lines[",value=random:tiny:1"], lines[""])


def _same_but_nps(a: list[str], b: list[str]) -> bool:
    def drop(ln: str) -> str:
        toks = ln.split()
        return " ".join(
            t for i, t in enumerate(toks) if not (i and toks[i - 1] in ("nps", "time")) and t not in ("nps", "time")
        )

    return [drop(x) for x in a] == [drop(x) for x in b]
