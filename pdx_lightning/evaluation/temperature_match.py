"""``pdx eval temperature``: the policy softmax temperature at which a network's search priors are as
spread as another's.

A search (Lc0's, pdx's) divides the policy logits by its PolicyTemperature (Lc0's default 1.359) before
the softmax that gives each node's priors. Fine-tuning sharpens a policy, so at the same temperature a
fine-tuned network searches fewer moves than its base; inside pdx's 64-node search that sharpening cost
Maia-1900's value-held β 0.01 fine-tuning −68.6 Elo, and playing it at the matched temperature took the
loss back (``reports/search_strength``). Over positions of real games (every ``--every``-th ply from ply
``--skip-plies``, at most ``--positions``), this finds for every ``--model`` after the first the
temperature T at which its mean prior entropy equals the first model's at ``--base-t``
(``scipy.optimize.brentq`` over Lc0's range [0.1, 10]), and the factor T / 1.359 that ``pdx export
lc0|network|onnx --policy-temperature`` bakes into a file so that Lc0 at its default searches it at T.

Entropy matching is a rule, not a tuned optimum: it makes the fine-tuned priors as spread as the
base's on average. JSON (``--json``): ``{"command", "pgn", "positions", "every", "skip_plies", "base_t",
"base": {"model", "label", "entropy_t1", "entropy_at_base_t"}, "models": [{"model", "label",
"entropy_t1", "entropy_at_base_t", "matching_t", "bake_factor"}], "environment"}`` (entropies in nats).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import chess
import torch

from pdx_lightning import argtypes
from pdx_lightning.chesscore.pgn_games import HumanGame, read_games
from pdx_lightning.errors import UserError
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.runtime.environment import environment
from pdx_lightning.runtime.jsonio import write_json
from pdx_lightning.search.settings import SearchSettings

LC0_DEFAULT_T = SearchSettings.policy_softmax_temp  # 1.359, Lc0 v0.31's PolicyTemperature
T_RANGE = (0.1, 10.0)  # Lc0's range for PolicyTemperature
GAMES = "data/lichess/games_2021-10_999.pgn.zst"  # the 999 real Lichess games shipped with pdx
EVERY, SKIP_PLIES, POSITIONS = 7, 10, 6000


class TemperatureMatchError(UserError, ValueError):
    """A temperature no search accepts, or a network whose spread no temperature in Lc0's range matches."""


def mean_entropy(logp: torch.Tensor, t: float) -> float:
    """Mean entropy (nats) of softmax(logp / t) per row; -inf entries (illegal moves) carry no mass.
    ``logp`` may be logits or log-probabilities: the softmax does not see a per-row shift."""
    lp = torch.log_softmax(logp.double() / t, dim=1)
    return float(-torch.where(torch.isfinite(lp), lp.exp() * lp, 0.0).sum(1).mean())


def matching_temperature(logp: torch.Tensor, target: float, lo: float = T_RANGE[0], hi: float = T_RANGE[1]) -> float:
    """The temperature in [lo, hi] at which ``mean_entropy(logp, t)`` equals ``target`` (it rises with t)."""
    from scipy.optimize import brentq  # noqa: PLC0415  (scipy loads here)

    f_lo, f_hi = mean_entropy(logp, lo) - target, mean_entropy(logp, hi) - target
    if f_lo > 0 or f_hi < 0:
        raise TemperatureMatchError(
            f"no temperature in [{lo}, {hi}] gives a mean prior entropy of {target:.3f} nats "
            f"(from {f_lo + target:.3f} to {f_hi + target:.3f})"
        )
    return float(brentq(lambda t: mean_entropy(logp, t) - target, lo, hi, xtol=1e-6))


def sample_boards(
    games: Iterable[HumanGame], every: int = EVERY, skip: int = SKIP_PLIES, limit: int = POSITIONS
) -> list[chess.Board]:
    """The position before every ``every``-th ply from ply ``skip`` of ``games`` (their move stacks kept,
    for the history planes), in file order, until at least ``limit`` (whole games: the last game's
    positions past ``limit`` are cut)."""
    boards: list[chess.Board] = []
    for g in games:
        b = chess.Board()
        for ply, move in enumerate(g.moves):
            if ply >= skip and ply % every == 0:
                boards.append(b.copy())
            b.push(move)
        if len(boards) >= limit:
            break
    return boards[:limit]


def legal_logp(model: torch.nn.Module, boards: Sequence[chess.Board], micro_batch: int = 512) -> torch.Tensor:
    """``model``'s log π over its moves of ``boards`` (-inf off the legal moves)."""
    from pdx_lightning.nets.inference import evaluate_boards  # noqa: PLC0415

    with torch.inference_mode():
        return evaluate_boards(model, boards, micro_batch)[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(
        parser,
        "model name or file (base:maia-1900, .ckpt, .pt, .pb.gz); the first is the base whose spread the "
        "others are matched to; repeat (at least twice)",
    )
    parser.add_argument("--label", action="append", help="a name per --model, same order (default: the model)")
    parser.add_argument(
        "--base-t",
        type=argtypes.finite_float(*T_RANGE, name="temperature"),
        default=LC0_DEFAULT_T,
        help="the base's policy softmax temperature to match (its best inside your search; default: Lc0's "
        f"{LC0_DEFAULT_T})",
    )
    parser.add_argument(
        "--pgn",
        action="append",
        help=f"PGN games to take positions from, repeatable (default: {GAMES}, 999 real Lichess games shipped "
        "with pdx)",
    )
    parser.add_argument(
        "--positions",
        type=argtypes.int_in(1, 1_000_000),
        default=POSITIONS,
        help="at most this many positions (from whole games, in file order)",
    )
    parser.add_argument("--every", type=argtypes.int_in(1, 1000), default=EVERY, help="a position every N plies")
    parser.add_argument(
        "--skip-plies", type=argtypes.int_in(0, 10_000), default=SKIP_PLIES, help="no position before this ply"
    )
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON (schema in the module docstring)")


def check_args(args: argparse.Namespace) -> list[str]:
    """Every flag checked before a model loads or a game is read (one line naming it); the labels."""
    if len(args.model) < 2:
        raise TemperatureMatchError("--model: give the base and at least one network to match to it")
    labels = args.label or list(args.model)
    if len(labels) != len(args.model):
        raise TemperatureMatchError(f"--label given {len(labels)} times for {len(args.model)} --model")
    for p in args.pgn or [GAMES]:
        if not Path(resolve_path(p)).is_file():
            raise TemperatureMatchError(f"--pgn {p}: no such file")
    return labels


def run(args: argparse.Namespace) -> int:
    from pdx_lightning.nets import ModelLoadError, load_model  # noqa: PLC0415  (torch loads here)
    from pdx_lightning.nets.inference import device_of  # noqa: PLC0415

    labels = check_args(args)
    pgns = [str(resolve_path(p)) for p in args.pgn or [GAMES]]
    boards = sample_boards((g for p in pgns for g in read_games(p)), args.every, args.skip_plies, args.positions)
    if not boards:
        raise TemperatureMatchError(f"no position at ply {args.skip_plies} or later in {', '.join(pgns)}")
    device = device_of(args.device)
    rows: list[dict[str, Any]] = []
    for name, label in zip(args.model, labels):
        try:
            model = load_model(name, weights=args.weights).to(device).eval()
        except ModelLoadError as e:
            raise TemperatureMatchError(f"--model {name}: {e}") from None
        lp = legal_logp(model, boards, args.micro_batch)
        row = {"model": name, "label": label, "entropy_t1": mean_entropy(lp, 1.0)}
        row["entropy_at_base_t"] = mean_entropy(lp, args.base_t)
        if rows:
            t = matching_temperature(lp, rows[0]["entropy_at_base_t"])
            row.update(matching_t=round(t, 3), bake_factor=round(t / LC0_DEFAULT_T, 3))
            print(
                f"{label}: PolicyTemperature {t:.3f} spreads its priors as {labels[0]}'s at {args.base_t} "
                f"({row['entropy_at_base_t']:.3f} → {rows[0]['entropy_at_base_t']:.3f} nats); "
                f"baked for Lc0's default {LC0_DEFAULT_T}: pdx export lc0 --policy-temperature {t / LC0_DEFAULT_T:.3f}"
            )
        rows.append(row)
    if args.json:
        doc = {
            "command": "eval temperature",
            "pgn": pgns,
            "positions": len(boards),
            "every": args.every,
            "skip_plies": args.skip_plies,
            "base_t": args.base_t,
            "base": rows[0],
            "models": rows[1:],
            "environment": environment(),
        }
        write_json(args.json, doc, indent=1)
    return 0
