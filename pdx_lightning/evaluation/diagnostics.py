"""``pdx eval diagnostics``: single-state policy diagnostics over self-play positions (paper Table 5).

Each model plays ``--games`` games against itself from the initial position,
all in parallel (one batched network call per ply for every game still going),
sampling each move from its play distribution p (``--play``: μ ∝ π^{1/τ},
τ = H(own WDL), or raw π). A game ends by the rules (checkmate, stalemate,
insufficient material, 75-move, fivefold; threefold/50-move only with
``--claim-draws``) or at ``--max-plies``. At every position reached (before its
move) the played policy p is compared with the raw base π_base (``--base``,
default the first ``--model``) over the legal moves:

* entropy H(p) (nats);
* forward KL(π_base ‖ p) and reverse KL(p ‖ π_base) (exact sums, ``chesscore.policy``);
* cov_k (k = ``--top-k``, 5): p's mass on the base's k most probable moves (all legal moves if fewer).

Each is averaged over all positions of all games (pooled, as the paper's
"average over the positions each model reaches"); ``se`` is the standard error
of that mean clustered by game (positions of one game are not independent).
A forward KL is +inf where p is exactly 0 on a move the base plays (τ ≤
``chesscore.policy.TAU_MIN`` gives a one-hot μ); such positions are counted in
``n_inf`` and left out of that mean.

JSON (``--json OUT``)::

    {"command": "eval diagnostics", "base": name, "games": N, "max_plies": cap, "seed": s,
     "top_k": 5, "claim_draws": bool,
     "models": [{"name", "play": "raw" | "adaptive", "positions": n, "games": N,
                 "plies_mean": mean game length, "results": {"white_win", "draw", "black_win", "capped"},
                 "entropy": {"mean", "se"}, "forward_kl": {"mean", "se", "n_inf"},
                 "reverse_kl": {"mean", "se", "n_inf"}, "cov_k": {"mean", "se"}, "seconds"}]}
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import chess
import numpy as np
import torch

from pdx_lightning import argtypes
from pdx_lightning.chesscore.encoding import GameHistory, encode_rows
from pdx_lightning.chesscore.moves import index_to_move, legal_mask
from pdx_lightning.chesscore.policy import entropy, forward_kl, reverse_kl
from pdx_lightning.chesscore.rules import game_end, ply_cap_reached
from pdx_lightning.evaluation.markdown import markdown_table
from pdx_lightning.evaluation.play import (
    ModelCache,
    PlayModeError,
    add_model_arguments,
    play_distribution,
    resolve_play_modes,
    write_json,
)
from pdx_lightning.nets.inference import device_of, evaluate
from pdx_lightning.runtime.progress import progress


def policy_diagnostics(
    log_p: torch.Tensor, log_p_base: torch.Tensor, mask: torch.Tensor, top_k: int = 5
) -> dict[str, torch.Tensor]:
    """Per position (B,): H(p), KL(π_base‖p), KL(p‖π_base), and p's mass on the base's top-k legal moves."""
    k = min(top_k, log_p_base.shape[1])
    top = torch.where(mask, log_p_base, float("-inf")).topk(k, dim=1).indices  # (B, k)
    legal_top = mask.gather(1, top)  # fewer than k legal moves
    cov = torch.where(legal_top, log_p.gather(1, top).exp(), torch.zeros_like(legal_top, dtype=log_p.dtype))
    return {
        "entropy": entropy(log_p, mask),
        "forward_kl": forward_kl(log_p_base, log_p, mask),
        "reverse_kl": reverse_kl(log_p, log_p_base, mask),
        "cov_k": cov.sum(1),
    }


def clustered_mean(x: np.ndarray, groups: np.ndarray) -> dict:
    """Pooled mean of the finite values of ``x`` and its standard error clustered by ``groups``."""
    finite = np.isfinite(x)
    x, g = x[finite], groups[finite]
    out = {"mean": float(x.mean()) if x.size else math.nan, "se": math.nan, "n_inf": int((~finite).sum())}
    n_groups = len(np.unique(g))
    if n_groups > 1:
        resid = np.bincount(g, weights=x - out["mean"])  # per-game residual sums
        out["se"] = float(math.sqrt(n_groups / (n_groups - 1) * (resid**2).sum()) / x.size)
    return out


_RESULT_KEY = {chess.WHITE: "white_win", chess.BLACK: "black_win", None: "draw"}


def _ended(board: chess.Board, legal: list, hist: GameHistory, claim_draws: bool) -> str | None:
    """``"white_win"``/``"black_win"``/``"draw"`` if the game is over by the rules (``rules.game_end``,
    repetitions counted by the game's ring buffer), else None."""
    end = game_end(board, legal=legal, repetitions=hist.repetitions(), claim_draws=claim_draws)
    return None if end is None else _RESULT_KEY[end.winner]


@torch.inference_mode()
def self_play_diagnostics(
    model: torch.nn.Module,
    mode: str,
    base: torch.nn.Module,
    games: int = 64,
    max_plies: int = 200,
    seed: int = 0,
    micro_batch: int = 512,
    top_k: int = 5,
    claim_draws: bool = False,
    progress_desc: str | None = None,
) -> dict:
    """Play ``games`` self-play games of ``model`` (sampling its ``mode`` play distribution) and
    average :func:`policy_diagnostics` against ``base`` over every position reached.

    ``progress_desc`` names a progress bar counting finished games (None: no bar)."""
    t0 = time.perf_counter()
    gen = torch.Generator().manual_seed(seed)
    boards = [chess.Board() for _ in range(games)]
    hist = [GameHistory(b) for b in boards]
    legal = [list(b.legal_moves) for b in boards]
    results = {"white_win": 0, "draw": 0, "black_win": 0, "capped": 0}
    stats: dict[str, list[np.ndarray]] = {"entropy": [], "forward_kl": [], "reverse_kl": [], "cov_k": []}
    game_of: list[np.ndarray] = []
    live = list(range(games))
    with progress(total=games, desc=progress_desc or "", unit="game", disable=progress_desc is None) as bar:
        while live:
            x = torch.from_numpy(encode_rows([hist[i].row(boards[i]) for i in live]))  # (L, 112, 8, 8)
            mask = legal_mask([boards[i] for i in live], [legal[i] for i in live])  # (L, 4288)
            log_pi, wdl = evaluate(model, x, mask, micro_batch)
            log_p = play_distribution(log_pi, wdl, mask, mode)
            log_base = log_pi if base is model else evaluate(base, x, mask, micro_batch)[0]
            for k, v in policy_diagnostics(log_p, log_base, mask, top_k).items():
                stats[k].append(v.double().numpy())
            game_of.append(np.asarray(live))
            moves = torch.multinomial(log_p.exp(), 1, generator=gen).squeeze(1).tolist()
            still = []
            for i, a in zip(live, moves):
                b = boards[i]
                b.push(index_to_move(a, b))
                hist[i].push(b)
                legal[i] = list(b.legal_moves)
                res = _ended(b, legal[i], hist[i], claim_draws)
                if res is not None:
                    results[res] += 1
                elif ply_cap_reached(b, max_plies):
                    results["capped"] += 1
                else:
                    still.append(i)
            bar.update(len(live) - len(still))
            live = still
    groups = np.concatenate(game_of)
    out: dict[str, Any] = {k: clustered_mean(np.concatenate(v), groups) for k, v in stats.items()}
    for k in ("entropy", "cov_k"):
        out[k].pop("n_inf")
    out.update(
        {
            "positions": int(groups.size),
            "games": games,
            "results": results,
            "plies_mean": float(np.mean([len(b.move_stack) for b in boards])),
            "seconds": time.perf_counter() - t0,
        }
    )
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--base", help="the raw reference π_base of the KLs and cov_k (default: the first --model)")
    parser.add_argument(
        "--games",
        type=argtypes.positive_int,
        default=64,
        help="self-play games per model, played in parallel (default 64)",
    )
    parser.add_argument("--max-plies", type=argtypes.positive_int, default=200, help="ply cap of a game (default 200)")
    parser.add_argument("--seed", type=argtypes.seed, default=0, help="sampling seed (the same for every model)")
    parser.add_argument(
        "--top-k",
        type=argtypes.int_in(1, 256),
        default=5,
        help="k of cov_k, the mass on the base's top-k moves (default 5)",
    )
    parser.add_argument("--claim-draws", action="store_true", help="end games at threefold repetition / 50 moves")


def render(base: str, rows: list[dict], top_k: int) -> str:
    def cell(d: dict) -> str:
        s = f"{d['mean']:.3g}" if math.isfinite(d["mean"]) else "–"
        return s + (f" ({d['n_inf']} inf)" if d.get("n_inf") else "")

    return "\n".join(
        [
            f"## Single-state diagnostics over self-play positions (Table 5 style; base = {base}, raw)",
            "",
            markdown_table(
                [
                    "Configuration",
                    "Samp.",
                    "Games",
                    "Positions",
                    "Ent(p)",
                    "KL(π_base‖p)",
                    "KL(p‖π_base)",
                    f"cov{top_k}",
                ],
                [
                    [
                        r["name"],
                        r["play"],
                        r["games"],
                        r["positions"],
                        cell(r["entropy"]),
                        cell(r["forward_kl"]),
                        cell(r["reverse_kl"]),
                        cell(r["cov_k"]),
                    ]
                    for r in rows
                ],
            ),
        ]
    )


def run(args: argparse.Namespace) -> int:
    try:
        plays = resolve_play_modes(args.model, args.play)
    except PlayModeError as e:
        print(f"error: {e}")
        return 2
    if args.games < 1 or args.max_plies < 1 or args.top_k < 1:
        print("error: --games, --max-plies and --top-k must be >= 1")
        return 2
    base_name = args.base or args.model[0]
    models = ModelCache(args.weights, device_of(args.device))
    rows = []
    for name, mode in zip(args.model, plays):
        r = self_play_diagnostics(
            models(name),
            mode,
            models(base_name),
            args.games,
            args.max_plies,
            args.seed,
            args.micro_batch,
            args.top_k,
            args.claim_draws,
            progress_desc="diagnostics",
        )
        rows.append({"name": name, "play": mode, **r})
        print(f"{name} ({mode}): {r['positions']} positions in {r['seconds']:.1f}s", flush=True)
    print(render(base_name, rows, args.top_k))
    if args.json:
        write_json(
            args.json,
            {
                "command": "eval diagnostics",
                "base": base_name,
                "games": args.games,
                "max_plies": args.max_plies,
                "seed": args.seed,
                "top_k": args.top_k,
                "claim_draws": args.claim_draws,
                "models": rows,
            },
        )
    return 0
