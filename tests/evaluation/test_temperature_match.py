"""``pdx eval temperature``: the policy softmax temperature that spreads one network's priors as another's."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from types import SimpleNamespace

import chess
import pytest
import torch

from pdx_lightning.evaluation.temperature_match import (
    TemperatureMatchError,
    matching_temperature,
    mean_entropy,
    sample_boards,
)

PDX = [sys.executable, "-m", "pdx_lightning.cli", "--threads", "1"]
INF = float("-inf")


def test_entropy_and_the_matching_temperature_by_hand():
    uniform = torch.tensor([[0.0, 0.0, 0.0, 0.0, INF]])  # 4 legal moves: ln 4 at every temperature
    assert mean_entropy(uniform, 1.0) == pytest.approx(math.log(4))
    assert mean_entropy(uniform, 3.0) == pytest.approx(math.log(4))
    # (0, ln 3): p = (1/4, 3/4) at t = 1; (0, 2 ln 3) reaches the same spread at t = 2
    h = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    assert mean_entropy(torch.tensor([[0.0, math.log(3), INF]]), 1.0) == pytest.approx(h)
    assert matching_temperature(torch.tensor([[0.0, 2 * math.log(3), INF]]), h) == pytest.approx(2.0, abs=1e-5)
    # log-probabilities give what their logits give: a row's shift does not reach the softmax
    logits = torch.tensor([[1.0, 3.0, -2.0, INF], [0.5, 0.0, INF, INF]])
    assert mean_entropy(torch.log_softmax(logits, 1), 1.7) == pytest.approx(mean_entropy(logits, 1.7), abs=1e-6)


def test_a_spread_no_temperature_in_lc0s_range_reaches_is_a_named_error():
    two = torch.tensor([[0.0, 1.0, INF]])  # at most ln 2 nats, whatever the temperature
    with pytest.raises(TemperatureMatchError, match=r"no temperature in \[0.1, 10.0\] gives a mean prior entropy"):
        matching_temperature(two, math.log(3))


def test_positions_every_nth_ply_from_the_skip_with_their_history():
    board, moves = chess.Board(), []
    for _ in range(30):  # a 30-ply game: the first legal move each time
        m = next(iter(board.legal_moves))
        moves.append(m)
        board.push(m)
    game = SimpleNamespace(moves=tuple(moves))  # what sample_boards reads of a HumanGame
    boards = sample_boards([game, game], every=7, skip=10, limit=100)
    assert [len(b.move_stack) for b in boards] == [14, 21, 28] * 2
    assert boards[0].move_stack == moves[:14]
    assert len(sample_boards([game, game], every=7, skip=10, limit=4)) == 4


def _eval(tmp_path, *args):
    return subprocess.run([*PDX, "eval", "temperature", *args], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)  # fmt: skip


def test_a_network_baked_at_t_2_matches_its_source_at_half_the_temperature(tmp_path):
    """The real command on the shipped games (run from an empty folder: the default PGN is package data):
    a network matched to itself needs the base's temperature, its copy with the logits halved (``pdx
    export network --policy-temperature 2``) half of it."""
    baked = tmp_path / "baked.pt"
    r = subprocess.run(
        [*PDX, "export", "network", "--model", "random:classic-tiny", "--policy-temperature", "2", "--out", str(baked)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "t.json"
    r = _eval(tmp_path, "--model", "random:classic-tiny", "--model", "random:classic-tiny", "--model", str(baked),
              "--label", "src", "--label", "same", "--label", "baked", "--base-t", "1.8", "--positions", "300",
              "--json", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["positions"] == 300 and doc["base_t"] == 1.8 and doc["pgn"][0].endswith("games_2021-10_999.pgn.zst")
    same, half = doc["models"]
    assert same["matching_t"] == pytest.approx(1.8, abs=1e-3)
    assert half["matching_t"] == pytest.approx(0.9, abs=1e-3)
    assert half["bake_factor"] == pytest.approx(0.9 / 1.359, abs=1e-3)
    assert doc["environment"]["pdx_lightning"]
    assert "baked: PolicyTemperature 0.900 spreads its priors as src's at 1.8" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "random:tiny"], "--model: give the base and at least one network to match to it"),
        (
            ["--model", "random:tiny", "--model", "random:tiny", "--base-t", "0"],
            "argument --base-t: must be a finite number >= 0.1 and <= 10, got '0'",
        ),
        (["--model", "random:tiny", "--model", "random:tiny", "--pgn", "no.pgn"], "--pgn no.pgn: no such file"),
        (["--model", "random:tiny", "--model", "random:tiny", "--label", "a"], "--label given 1 times for 2 --model"),
        (["--model", "random:tiny", "--model", "nothing.pt"], "--model nothing.pt:"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    r = _eval(tmp_path, *args, "--positions", "20", "--json", str(tmp_path / "t.json"))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "t.json").exists()
