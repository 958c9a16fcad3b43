"""A model's *play distribution*, root positions, and the flags shared by ``pdx eval coverage|diagnostics|recovery``.

The paper evaluates each model through the distribution it samples in self-play
(Sections 3.1, 3.4; Eq. 6): the tempered μ ∝ π_θ^{1/τ(s)} with τ(s) = H(its own
WDL at s) for adaptive-temperature models, the raw π_θ for τ ≡ 1 models. Here a
model's own value head gives τ (for a fine-tuned checkpoint that is its EMA, the
weights ``load_model`` returns).

``--play`` takes one mode per ``--model`` (or one for all): ``adaptive``,
``raw``, or ``auto`` (the default): a Lightning checkpoint of ``pdx fit`` plays
the temperature it was trained with (its ``selfplay.temperature`` hyperparameter:
``adaptive`` → adaptive, ``fixed`` → raw); any other model plays raw.

Root positions (:data:`TABIYAS`, :func:`root_board`): the initial position and
the three Appendix H tabiyas, built by playing their moves from the standard
start so the encoder sees the full move history.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import chess
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask
from pdx_lightning.chesscore.policy import play_temperature, tempered_log_probs
from pdx_lightning.chesscore.rules import game_end
from pdx_lightning.files.safeio import load_torch_bounded
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.nets.inference import evaluate
from pdx_lightning.runtime.jsonio import json_safe, write_json  # noqa: F401  (the tools' JSON writer)

PLAY_MODES = ("adaptive", "raw")


class PlayModeError(ValueError):
    """``--play`` values that do not line up with ``--model`` or name no mode."""


class PlayEval(NamedTuple):
    log_p: torch.Tensor  # (B, 4288) log of the play distribution, -inf off its support
    log_pi: torch.Tensor  # (B, 4288) raw masked log π
    wdl: torch.Tensor  # (B, 3) the model's WDL probabilities
    mask: torch.Tensor  # (B, 4288) bool legal moves


def play_distribution(log_pi: torch.Tensor, wdl: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """log of the play distribution: μ with τ = H(WDL) (Eqs. 5–6) for ``adaptive``, π for ``raw``."""
    if mode == "raw":
        return log_pi
    if mode == "adaptive":
        return tempered_log_probs(log_pi, mask, play_temperature(wdl, "adaptive"))
    raise PlayModeError(f"unknown play mode {mode!r}; choose from {', '.join(PLAY_MODES)}")


def evaluate_play(model: torch.nn.Module, boards: Sequence[chess.Board], mode: str, micro_batch: int = 512) -> PlayEval:
    """Evaluate ``boards`` (their move stacks give the history) and return the play distribution."""
    mask = legal_mask(boards)
    log_pi, wdl = evaluate(model, torch.from_numpy(encode_boards(boards)), mask, micro_batch)
    return PlayEval(play_distribution(log_pi, wdl, mask, mode), log_pi, wdl, mask)


def checkpoint_play_mode(name: str) -> str:
    """``auto`` resolved: the self-play temperature stored in a ``pdx fit`` checkpoint, else ``raw``."""
    if not name.endswith(".ckpt") or not Path(name).is_file():
        return "raw"
    try:
        blob = load_torch_bounded(name, mmap=True)  # bounded: a hostile file is refused, not inflated
    except Exception:  # noqa: BLE001  (an unreadable file fails later, in load_model, with its own error)
        return "raw"
    hparams = blob.get("hyper_parameters") or {}
    # model.algorithm.temperature; model.selfplay.temperature in checkpoints written before it moved
    temp = (hparams.get("algorithm") or {}).get("temperature", (hparams.get("selfplay") or {}).get("temperature"))
    return "adaptive" if temp == "adaptive" else "raw"


def resolve_play_modes(models: Sequence[str], plays: Sequence[str] | None) -> list[str]:
    """One play mode per model: ``--play`` given once (applies to all) or once per ``--model``."""
    plays = list(plays or ["auto"])
    if len(plays) == 1:
        plays = plays * len(models)
    if len(plays) != len(models):
        raise PlayModeError(
            f"--play given {len(plays)} times for {len(models)} --model; give it once "
            f"(for all models) or once per model, in the same order"
        )
    out = []
    for name, mode in zip(models, plays):
        if mode not in (*PLAY_MODES, "auto"):
            raise PlayModeError(f"--play {mode!r} for {name}: choose adaptive, raw or auto")
        out.append(checkpoint_play_mode(name) if mode == "auto" else mode)
    return out


# ---------------------------------------------------------------- root positions

# Appendix H tabiyas (all White to move), UCI from the standard start; legal-move counts and depth-4
# line counts (perft 4) as the paper states: 27 / 698,736; 47 / 2,618,476; 38 / 1,488,253.
TABIYAS: dict[str, str] = {
    "start": "",
    # 1.e4 e5 2.Nf3 Nc6 3.Bb5 a6 4.Ba4 Nf6 (Ruy Lopez main line; ply 8)
    "ruy_lopez": "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6",
    # 1.e4 c5 2.Nf3 d6 3.d4 cxd4 4.Nxd4 Nf6 5.Nc3 a6 6.Be3 e5 7.Nb3 Be6 8.f3 Be7 (English Attack; ply 16)
    "najdorf_english": "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6 b1c3 a7a6 c1e3 e7e5 d4b3 c8e6 f2f3 f8e7",
    # 1.d4 d5 2.c4 e6 3.Nc3 Nf6 4.Bg5 Be7 5.e3 O-O 6.Nf3 h6 7.Bh4 b6 (QGD Tartakower; ply 14)
    "qgd_tartakower": "d2d4 d7d5 c2c4 e7e6 b1c3 g8f6 c1g5 f8e7 e2e3 e8g8 g1f3 h7h6 g5h4 b7b6",
}


def game_over(board: chess.Board, legal: list) -> bool:
    """The game is over by the rules that need no claim (``rules.game_end``: mate, stalemate, insufficient
    material, 75-move rule, fivefold repetition)."""
    return game_end(board, legal=legal) is not None


def root_board(spec: str) -> tuple[str, chess.Board]:
    """``(name, board)`` for a tabiya name, a UCI move list from the start, or a FEN (no history)."""
    if spec in TABIYAS:
        name, moves = spec, TABIYAS[spec]
    elif "/" in spec:
        return spec, chess.Board(spec)
    else:
        name, moves = spec, spec
    board = chess.Board()
    for uci in moves.split():
        try:
            board.push_uci(uci)
        except ValueError:
            raise ValueError(
                f"position {spec!r}: {uci!r} is not a legal move in {board.fen()} (give a tabiya "
                f"name {', '.join(TABIYAS)}, a UCI move list from the start, or a FEN)"
            ) from None
    return name, board


# ---------------------------------------------------------------- CLI plumbing shared by the three tools


def add_model_arguments(parser: argparse.ArgumentParser, play: bool = True) -> None:
    add_network_arguments(
        parser,
        "model name or file (base:small, random:<preset>, .ckpt, .pt, .pb.gz); repeatable",
        weights_help="which weights of a Lightning checkpoint to use",
    )
    if play:
        parser.add_argument(
            "--play",
            action="append",
            choices=(*PLAY_MODES, "auto"),
            help="play distribution per --model, same order (once = all models): adaptive "
            "(μ ∝ π^(1/τ), τ = H(own WDL)), raw (π), auto (default: a pdx fit "
            "checkpoint's self-play temperature, else raw)",
        )
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON (schema in the module docstring)")


class ModelCache:
    """Load each model name once (a name may appear with several play modes)."""

    def __init__(self, weights: str, device: torch.device) -> None:
        self.weights, self.device = weights, device
        self._models: dict[str, torch.nn.Module] = {}

    def __call__(self, name: str) -> torch.nn.Module:
        if name not in self._models:
            from pdx_lightning.nets import load_model  # noqa: PLC0415

            self._models[name] = load_model(name, weights=self.weights).to(self.device).eval()
        return self._models[name]
