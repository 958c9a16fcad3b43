"""The paper authors' code on one batch, for tests/rl/test_reference_oracle.py.

Runs in the reference's own virtualenv (``.venv-ref``, made by setup.sh from ../shared/reference) and
imports nothing of pdx: the authors' ``train`` and ``selfplay`` modules from the folder the job names.
Reads a JSON job on stdin (their src folder, the converted online and base networks, positions as a root
FEN and moves, one forced move per position, the output path) and writes an ``.npz`` there plus one JSON
line on stdout.

What runs is their code: ``train.forward`` (the networks' outputs), ``train.sample_transitions`` (τ from
the online WDL, μ, ρ, the move played, s'), ``train.label_transitions`` (p̂, A, π_base, the base WDL) and
``train.optimizer_step`` (the loss and its backward) with one micro-batch per call and an optimizer that
records the gradients instead of stepping. Two things are forced: ``selfplay.sample_move``'s draw
(``torch.multinomial``) returns the job's move, so both implementations play the same actions; and the EMA
is a copy of the online network (as ``train.main`` makes it: loaded from the same weights), built once.
"""

from __future__ import annotations

import copy
import json
import sys


def main() -> int:
    job = json.load(sys.stdin)
    sys.path.insert(0, job["src"])
    out = sys.stdout
    sys.stdout = sys.stderr  # the reference's prints must not mix with the answer

    import chess
    import numpy as np
    import torch
    import train as tm  # the reference's modules, from job["src"]

    import selfplay as sp  # (the reference's, not pdx's rl.selfplay)

    torch.manual_seed(0)
    args = tm.parse_args(["--onnx", job["online"], "--device", "cpu", *job["train_args"]])
    device = torch.device("cpu")
    trainable = sp.build_model(job["online"], device, args.embedding_tensor, args.emb_size)
    base = sp.build_model(job["base"], device, args.embedding_tensor, args.emb_size)
    ema = copy.deepcopy(trainable)
    for frozen in (base, ema):
        frozen.eval()
        for p in frozen.parameters():
            p.requires_grad = False

    boards = []
    for fen, moves in job["positions"]:
        b = chess.Board(fen)
        for uci in moves:
            b.push_uci(uci)
        boards.append(b)
    actions = [chess.Move.from_uci(u) for u in job["actions"]]

    # the networks' outputs at s: per legal move (sampling's scores) and in the loss's 4,096 slots
    rows = []
    with torch.no_grad():
        trainable.eval()
        per_net = {}
        for name, net in (("online", trainable), ("base", base)):
            masked, _, wdl, logits, aux, legal_moves, legal_indices = tm.forward(net, boards, device)
            slot_log_p = torch.log_softmax(masked, dim=-1)
            per_net[name] = (wdl, logits, aux, legal_moves, legal_indices, slot_log_p)
        for r in range(len(boards)):
            row = {}
            for name, (wdl, logits, aux, legal_moves, legal_indices, slot_log_p) in per_net.items():
                scores = sp.legal_move_scores(
                    logits[r], legal_moves[r], legal_indices[r], sp.promotion_offsets_for_row(aux, r)
                )
                row[name] = {
                    "moves": [m.uci() for m in legal_moves[r]],
                    "slots": [int(i) for i in legal_indices[r]],
                    "move_log_p": torch.log_softmax(scores, dim=0).tolist(),  # per legal move, as sampled
                    "slot_log_p": slot_log_p[r, legal_indices[r]].tolist(),  # the loss's 4,096-slot view
                    "wdl": wdl[r].tolist(),
                    "promotion_legal": any(m.promotion for m in legal_moves[r]),
                }
            rows.append(row)

    # sampling with the forced moves: their sample_transitions, their sample_move, the draw replaced
    real_sample_move, real_multinomial = sp.sample_move, torch.multinomial
    taus: list[float] = []

    def forced_sample_move(logits_row, legal_moves, legal_indices, promotion_offsets_row=None, temperature=None):
        want = actions[len(taus)]
        taus.append(float(temperature))
        pick = legal_moves.index(want)
        torch.multinomial = lambda probs, num_samples=1, **kw: torch.tensor([pick])
        try:
            return real_sample_move(logits_row, legal_moves, legal_indices, promotion_offsets_row, temperature)
        finally:
            torch.multinomial = real_multinomial

    sp.sample_move = forced_sample_move
    games = [sp.GameState(board=b.copy(stack=True), plies=0) for b in boards]
    transitions = tm.sample_transitions(games, trainable, ema, args, device)
    sp.sample_move = real_sample_move
    assert len(transitions) == len(boards), "every position must have a legal move"
    tm.label_transitions(transitions, base, ema, args, device)

    # the loss and its gradients, one micro-batch per subset: rows without and with a legal promotion
    class Recorder:
        """Stands in for the AdamW of ``optimizer_step``: keeps the accumulated gradients, steps nothing."""

        def __init__(self):
            self.grads: dict = {}

        def zero_grad(self, set_to_none=True):
            trainable.zero_grad(set_to_none=set_to_none)

        def step(self):
            self.grads = {n: p.grad.detach().clone() for n, p in trainable.named_parameters() if p.grad is not None}

    arrays = {}
    losses = {}
    promo = [row["online"]["promotion_legal"] for row in rows]
    for subset, keep in (("plain", False), ("promo", True)):
        chosen = [t for t, p in zip(transitions, promo) if p == keep]
        rec = Recorder()
        args.minibatch_size = len(chosen)  # one micro-batch: the loss is the subset's mean
        losses[subset] = tm.optimizer_step(chosen, trainable, rec, args, device)
        for n, g in rec.grads.items():
            arrays[f"grad_{subset}/{n}"] = g.numpy()
    names = [n for n, _ in trainable.named_parameters()]
    for n, p in trainable.named_parameters():
        arrays[f"param/{n}"] = p.detach().numpy()
    np.savez(job["out"], **arrays)

    def slot_of(t):
        return int(t.action)

    result = {
        "rows": rows,
        "tau": taus,
        "transitions": [
            {
                "action_slot": slot_of(t),
                "rho": t.rho,
                "advantage": t.advantage,
                "wdl_target": t.wdl_target.tolist(),
                "wdl_online_pre": t.wdl_online_pre.tolist(),
                "base_wdl": t.base_wdl.tolist(),
                "result": t.result,
            }
            for t in transitions
        ],
        "losses": losses,
        "parameters": names,
        "trainable_constants": sum(1 for p in trainable.parameters() if p.numel() == 1),
    }
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
