"""The policy softmax temperature at which a fine-tuned cell's prior is as spread as the base's in Lc0
(the records of this folder and of ``reports/search_strength``; ``pdx eval temperature`` is the command
users run, on the same math from ``pdx_lightning.evaluation.temperature_match``).

Lc0 divides the policy logits by its ``--policy-softmax-temp`` (default 1.359) before the softmax that
gives its search priors. Over real-game positions (every 7th ply from ply 10 of the games of
``data/lichess/games_2021-10_999.pgn.zst``, about 6,000), this finds the temperature T at which a
cell's mean prior entropy equals the base's at Lc0's default (``scipy.optimize.brentq``), for the
pilot match of ``run.sh pilot`` (the cell played at T, the base at the default). ``--base-t`` matches
the base at another temperature instead (its best inside pdx's search, for a best-against-best match).

    python reports/beyond_paper/temperature.py [--base-t T] BASE.pb.gz OUT.json CELL.pb.gz [CELL.pb.gz ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from pdx_lightning.evaluation.temperature_match import LC0_DEFAULT_T, matching_temperature, mean_entropy, sample_boards

GAMES = "data/lichess/games_2021-10_999.pgn.zst"


def positions(path: str = GAMES, every: int = 7, skip: int = 10, limit: int = 6000) -> list:
    from pdx_lightning.chesscore.pgn_games import read_games

    return sample_boards(read_games(path), every, skip, limit)


def legal_logits(name: str, boards: list) -> torch.Tensor:
    from pdx_lightning.chesscore.encoding import encode_boards
    from pdx_lightning.chesscore.moves import legal_mask
    from pdx_lightning.nets import load_model

    model = load_model(name).eval()
    x, mask = torch.from_numpy(encode_boards(boards)), legal_mask(boards)
    with torch.inference_mode():
        out = torch.cat([model(x[i : i + 512]).policy.float() for i in range(0, len(x), 512)])
    return out.masked_fill(~mask, float("-inf"))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("out")
    ap.add_argument("cells", nargs="+")
    ap.add_argument("--base-t", type=float, default=LC0_DEFAULT_T, help="the base's temperature to match")
    args = ap.parse_args(argv)
    if not 0.1 <= args.base_t <= 10.0:
        ap.error(f"--base-t: {args.base_t} is outside Lc0's range [0.1, 10]")
    base, out, cells = args.base, args.out, args.cells
    torch.set_num_threads(1)
    boards = positions()
    ref = legal_logits(base, boards)
    target = mean_entropy(ref, args.base_t)
    rec = {
        "positions": len(boards),
        "games": GAMES,
        "lc0_default_t": LC0_DEFAULT_T,
        "base": {
            "model": base,
            "entropy_t1": mean_entropy(ref, 1.0),
            "entropy_default": mean_entropy(ref, LC0_DEFAULT_T),
        },
        "cells": [],
    }
    if args.base_t != LC0_DEFAULT_T:
        rec["base"].update(t=args.base_t, entropy_t=target)
    for cell in cells:
        lg = legal_logits(cell, boards)
        t = matching_temperature(lg, target)
        rec["cells"].append(
            {
                "model": cell,
                "label": Path(cell).name.removesuffix(".pb.gz"),
                "entropy_t1": mean_entropy(lg, 1.0),
                "entropy_default": mean_entropy(lg, LC0_DEFAULT_T),
                "matching_t": round(t, 3),
            }
        )
        print(f"{cell}: T = {t:.3f} gives the base's mean prior entropy {target:.3f}")
    Path(out).write_text(json.dumps(rec, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
