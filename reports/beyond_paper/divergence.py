"""Where the real Lc0 at 1 node and pdx part ways on the same two .pb.gz files: the games of a cell's
``lc0_n1_<cell>`` and ``pdx_<cell>`` records that differ, replayed with their moves, and the policy gap at
the first move the two played differently.

At 1 node Lc0 plays its policy's argmax, as pdx does, so the games can differ only where the two
implementations' floating-point arithmetic (Lc0's Eigen backend, pdx's torch) ranks two moves apart
differently: the mover's top two moves must then be (near) tied. For each differing game this replays
its opening (both colours, as the match played it) in pdx's arena and with Lc0 at 1 node, finds the
first ply where the moves differ, and evaluates the mover's network there with pdx (the opening line as
history, as the match): the log-probability gap between its top two moves and between the two moves
played. Written to ``records/divergence_<cell>.json`` (read by ``searched.py``).

    python reports/beyond_paper/divergence.py CELL BASE.pb.gz CELL.pb.gz LC0   (run.sh's paths)

Needs the real Lc0 and the exported files (not in a clone): the committed JSON is what the report reads.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path

import chess
import chess.pgn
import torch

HERE = Path(__file__).resolve().parent
OPENINGS = HERE.parents[1] / "data" / "openings_uho_600.epd"


def _differing(records: Path, cell: str) -> list[dict]:
    """The games of the pdx record that the Lc0 record did not play identically (``searched.same_games``)."""
    key = ("round", "white", "black", "opening", "result", "reason", "plies")
    pdx = json.loads((records / f"pdx_{cell}.json").read_text())
    lc0 = {g["round"]: g for g in json.loads((records / f"lc0_n1_{cell}.json").read_text())["games"]}
    return [g for g in pdx["games"] if tuple(g[k] for k in key) != tuple(lc0[g["round"]][k] for k in key)]


def _play(players: list[str], epd: Path, pgn: Path) -> dict[tuple[str, str], chess.pgn.Game]:
    from pdx_lightning.evaluation import arena

    p = argparse.ArgumentParser()
    arena.add_arguments(p)
    argv = [x for m, lab in zip(players, ("base", "cell")) for x in ("--model", m, "--label", lab)]
    n = 2 * sum(1 for line in epd.read_text().splitlines() if line.strip())
    argv += ["--games", str(n), "--openings", str(epd), "--threads", "1", "--quiet", "--pgn", str(pgn)]
    arena.run(p.parse_args(argv))
    out, stream = {}, io.StringIO(pgn.read_text())
    while (g := chess.pgn.read_game(stream)) is not None:
        out[(g.headers["Opening"], g.headers["White"])] = g
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cell")
    ap.add_argument("base_pb")
    ap.add_argument("cell_pb")
    ap.add_argument("lc0")
    ap.add_argument("--records", type=Path, default=HERE / "records")
    a = ap.parse_args(argv)
    from pdx_lightning.chesscore.moves import move_to_index
    from pdx_lightning.chesscore.opening_files import load_openings
    from pdx_lightning.evaluation.play import evaluate_play
    from pdx_lightning.nets.files import load_model

    torch.set_num_threads(1)
    differ = _differing(a.records, a.cell)
    ids = sorted({g["opening"] for g in differ})
    lines = [line for line in OPENINGS.read_text().splitlines() if any(f'id "{i}"' in line for i in ids)]
    nets = {"base": load_model(a.base_pb), "cell": load_model(a.cell_pb)}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        epd = Path(tmp) / "o.epd"
        epd.write_text("\n".join(lines) + "\n")
        openings = {o.id: o for o in load_openings(epd)}
        pdx = _play([a.base_pb, a.cell_pb], epd, Path(tmp) / "pdx.pgn")
        engines = [f"uci:{a.lc0} --weights={f} --backend=eigen --threads=1" for f in (a.base_pb, a.cell_pb)]
        lc0 = _play(engines, epd, Path(tmp) / "lc0.pgn")
        for g in differ:
            white = "base" if g["white"] == "base" else "cell"
            gp, gl = pdx[(g["opening"], white)], lc0[(g["opening"], white)]
            mp, ml = list(gp.mainline_moves()), list(gl.mainline_moves())
            ply = next((i for i, (x, y) in enumerate(zip(mp, ml)) if x != y), None)
            entry = {"round": g["round"], "opening": g["opening"], "white": g["white"], "ply": ply}
            if ply is not None:
                board = openings[g["opening"]].start()  # with the opening line as history (the networks' input)
                for m in mp[:ply]:
                    board.push(m)
                mover = white if board.turn == chess.WHITE else ("cell" if white == "base" else "base")
                log_pi = evaluate_play(nets[mover], [board], "raw").log_pi[0]
                top = torch.topk(log_pi, 2)
                entry |= {
                    "mover": a.cell if mover == "cell" else "base",
                    "fen": board.fen(),
                    "pdx_move": mp[ply].uci(),
                    "lc0_move": ml[ply].uci(),
                    "top2_log_gap": float(top.values[0] - top.values[1]),
                    # log π(pdx's move) − log π(Lc0's move) under pdx's forward pass
                    "played_log_gap": float(
                        log_pi[move_to_index(mp[ply], board.turn)] - log_pi[move_to_index(ml[ply], board.turn)]
                    ),
                    "top2_probs": [float(v.exp()) for v in top.values],
                }
            out.append(entry)
            print(json.dumps(entry))
    (a.records / f"divergence_{a.cell}.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
