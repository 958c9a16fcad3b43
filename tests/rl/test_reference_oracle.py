"""pdx against the paper authors' own code (../shared/reference/prior-directed-exploration, MIT), one batch.

The same network file loaded both ways (pdx: ``load_model`` on the Lc0 ``.pb.gz``; the authors: their
``network.py`` on the ONNX that their ``scripts/prepare_network.py`` makes of it with the v0.33 ``lc0``),
a second file as the frozen base, the same positions (games from the start and FEN set-ups, promotions
legal in some), the same forced moves and the same τ, then every quantity of one training step compared,
with the settings of the paper's recipe as the authors' code runs it (forward KL, β = 0.01, c_v = 0.2,
base-WDL anchor w = 0.1, τ from the online WDL):

* equal to float tolerance where both compute the same thing: the networks' legal-move log-probabilities
  and W/D/L (online and base), τ, ρ, p̂, A, the policy loss, the forward KL, the base-WDL anchor, and the
  gradients of every parameter the two share;
* equal to the documented difference where they do not:
  - the value loss: the authors log KL(p̂‖p_θ), pdx the cross-entropy; the two differ by exactly
    E[ρ·H(p̂)] (the same gradient);
  - the promotion rows: the authors' loss gives a pawn's four promotions one 4,096-slot entry, whose
    logit is the from-to logit plus the queen, rook and bishop offsets (``apply_promotion_offsets``
    accumulates them), and drops the three others from the softmax. On a position where a promotion is
    legal every log π, the forward KL and the gradients differ; pdx's own loss function, given pdx's
    logits merged that way, reproduces the authors' terms and gradients there, so the merge is the whole
    difference. Sampling and ρ use the correct per-move scores on both sides and agree on every row.

Not compared: positions set up from a FEN with an en-passant square (the authors' history fill does
not undo the double push there; pdx and Lc0 do), and the parameters only one side has (listed by
:func:`parameter_map`).

Runs the reference in its own virtualenv (``.venv-ref``, setup.sh makes it when ../shared/reference
exists) through tests/rl/reference_oracle_worker.py; skips, with the reason, without ../shared/reference,
``.venv-ref`` or the v0.33 ``lc0`` (``.venv-lc0-033``).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask, move_to_index
from pdx_lightning.chesscore.policy import masked_log_softmax, score, tempered_log_probs, wdl_entropy
from pdx_lightning.chesscore.rules import RESULT_NONE, game_end
from pdx_lightning.nets import lc0, load_model
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig
from pdx_lightning.rl.objectives import importance_weight, pdx_loss, value_target

pytestmark = pytest.mark.slow  # two network conversions and the reference's ONNX graphs: ~1 minute

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "reference" / "prior-directed-exploration"
REF_PYTHON = ROOT / ".venv-ref" / "bin" / "python"
LC0_033 = ROOT / ".venv-lc0-033" / "bin" / "lc0"
WORKER = Path(__file__).with_name("reference_oracle_worker.py")

BETA, C_V, ANCHOR = 0.01, 0.2, 0.1
TRAIN_ARGS = [
    "--regularizer",
    "forward_kl",
    "--beta",
    str(BETA),
    "--wdl-kl-weight",
    str(C_V),
    "--base-wdl-kl-weight",
    str(ANCHOR),
    "--sample-with-wdl-entropy-temperature",
    "--sampling-temperature-wdl-source",
    "online",
]
OUT_TOL = 5e-6  # log-probabilities, W/D/L, τ, ρ, p̂, A (float32, two graphs; measured ≤ 7.2e-7)
LOSS_TOL = 5e-6  # loss terms, means over the rows (measured ≤ 6.6e-7)
GRAD_TOL = 5e-5  # gradients, relative to the parameter's largest (measured ≤ 4.6e-6)

# set-ups from a FEN (no en-passant square: see the module docstring), with moves played after some, and
# the move forced there: every promotion piece, captures that promote, castling, a mate, a stalemate
FEN_CASES = [
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R w KQkq - 0 1", [], "b7b8n"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R w KQkq - 0 1", [], "b7a8r"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R w KQkq - 0 1", [], "b7b8b"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R w KQkq - 0 1", [], "e1c1"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R b KQkq - 0 1", [], "g2h1q"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R b KQkq - 0 1", [], "g2g1r"),
    ("r3k2r/1P6/8/8/8/8/6p1/R3K2R b KQkq - 0 1", [], "e8g8"),
    ("8/P4k2/8/8/8/8/6K1/8 w - - 0 1", ["g2g3", "f7g7"], "a7a8q"),
    ("8/P4k2/8/8/8/8/6K1/8 w - - 0 1", ["g2g3", "f7g7"], "g3f4"),
    ("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", [], "a1a8"),  # mate: s' ends the game, p̂ is the result
    ("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1", [], "f1f7"),  # stalemate: a draw
    ("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3", ["f1c4", "g8f6"], "e1g1"),
]
N_GAMES = 24  # positions from random games from the start (history, castling rights, captures)


def positions() -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(root FEN, moves) per position and the move forced there."""
    rng = random.Random(7)
    out, actions = [], []
    for _ in range(N_GAMES):
        b = chess.Board()
        for _ in range(rng.randint(0, 60)):
            legal = list(b.legal_moves)
            nxt = b.copy()
            nxt.push(rng.choice(legal))
            if nxt.is_game_over(claim_draw=True):
                break
            b = nxt
        out.append((chess.STARTING_FEN, [m.uci() for m in b.move_stack]))
        actions.append(rng.choice(list(b.legal_moves)).uci())
    for fen, moves, action in FEN_CASES:
        assert chess.Move.from_uci(action) in board_of(fen, moves).legal_moves, (fen, moves, action)
        out.append((fen, moves))
        actions.append(action)
    return out, actions


def board_of(fen: str, moves: list[str]) -> chess.Board:
    b = chess.Board(fen)
    for uci in moves:
        b.push_uci(uci)
    return b


def perturbed(model: torch.nn.Module, seed: int, noise: float) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * noise)


def missing_tool() -> str | None:
    if not REFERENCE.is_dir():
        return f"{REFERENCE} is absent: the authors' code lives in ../shared/reference (developers, CI)"
    if not REF_PYTHON.exists():
        return f"{REF_PYTHON.parent.parent.name} is absent: setup.sh makes it when ../shared/reference exists"
    if not LC0_033.exists():
        return f"{LC0_033} is absent: setup.sh makes .venv-lc0-033 from ../shared/lc0 (leela2onnx needs Lc0 >= 0.32)"
    return None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Both sides on the same batch: pdx's networks and boards, and the reference's answers."""
    problem = missing_tool()
    if problem:
        pytest.skip(problem)
    tmp = tmp_path_factory.mktemp("reference_oracle")
    cfg = lc0.lc0_style(ModelConfig.from_name("small", n_layers=15, moves_left_dim=8))
    torch.manual_seed(3)
    online = Chessformer(cfg)
    perturbed(online, 3, 0.05)  # away from the initialisation: a policy and WDL far from uniform
    files = {"online": lc0.export_lc0(online.eval(), tmp / "online.pb.gz", encoding="float32")}
    perturbed(online, 4, 0.02)  # the base: near the online network, as after some training
    files["base"] = lc0.export_lc0(online.eval(), tmp / "base.pb.gz", encoding="float32")
    onnx = {}
    for name, pb in files.items():
        r = subprocess.run(
            [
                str(REF_PYTHON),
                str(REFERENCE / "scripts" / "prepare_network.py"),
                "--input",
                str(pb),
                "--lc0-bin",
                str(LC0_033),
                "--output-dir",
                str(tmp),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, f"prepare_network.py failed on {pb}: {r.stderr[-800:]}"
        onnx[name] = tmp / f"{name}_with_embedding.onnx"
    pos, actions = positions()
    job = {
        "src": str(REFERENCE / "src"),
        "online": str(onnx["online"]),
        "base": str(onnx["base"]),
        "positions": pos,
        "actions": actions,
        "train_args": TRAIN_ARGS,
        "out": str(tmp / "reference.npz"),
    }
    r = subprocess.run(
        [str(REF_PYTHON), str(WORKER)], input=json.dumps(job), capture_output=True, text=True, timeout=1200
    )
    assert r.returncode == 0, f"the reference worker failed (exit {r.returncode}): {r.stderr[-1500:]}"
    ref = json.loads(r.stdout)
    arrays = dict(np.load(tmp / "reference.npz"))
    boards = [board_of(fen, moves) for fen, moves in pos]
    moves = [chess.Move.from_uci(a) for a in actions]
    nets = {name: load_model(str(path)).float() for name, path in files.items()}
    return {"ref": ref, "arrays": arrays, "boards": boards, "actions": moves, "nets": nets}


def report(name: str, value: float) -> None:
    print(f"reference oracle: {name}: max |diff| {value:.3g}")


# ------------------------------------------------------------------ pdx's side of the same step


def pdx_side(run) -> dict:
    """Everything pdx computes for the batch before the loss, with the reference's τ forced in."""
    if "pdx" in run:
        return run["pdx"]
    boards, actions, nets, ref = run["boards"], run["actions"], run["nets"], run["ref"]
    x = torch.from_numpy(encode_boards(boards))
    mask = legal_mask(boards)
    with torch.no_grad():
        out = nets["online"](x)
        out_base = nets["base"](x)
        log_p = masked_log_softmax(out.policy, mask)
        log_p_base = masked_log_softmax(out_base.policy, mask)
        wdl = torch.softmax(out.wdl, dim=-1)
        wdl_base = torch.softmax(out_base.wdl, dim=-1)
        tau = torch.tensor(ref["tau"])
        log_mu = tempered_log_probs(log_p, mask, tau)  # Eq. 6 with the reference's τ
        action = torch.tensor([move_to_index(m, b.turn) for m, b in zip(actions, boards)])
        rows = torch.arange(len(boards))
        rho = importance_weight(log_p[rows, action], log_mu[rows, action])  # Eq. 12
        posts, codes = [], []
        for b, m in zip(boards, actions):
            post = b.copy()
            post.push(m)
            posts.append(post)
            end = game_end(post, claim_draws=True)
            codes.append(RESULT_NONE if end is None else end.wdl_for(b.turn))
        wdl_next = torch.softmax(nets["online"](torch.from_numpy(encode_boards(posts))).wdl, dim=-1)  # EMA = online
        target = value_target(wdl_next, torch.tensor(codes))
        advantage = score(target) - score(wdl)  # Eq. 4
    side = {
        "x": x,
        "mask": mask,
        "log_p": log_p,
        "log_p_base": log_p_base,
        "wdl": wdl,
        "wdl_base": wdl_base,
        "tau_own": wdl_entropy(wdl),
        "action": action,
        "rho": rho,
        "target": target,
        "advantage": advantage,
        "codes": codes,
        "promo": [any(m.promotion for m in b.legal_moves) for b in boards],
    }
    run["pdx"] = side
    return side


def merged(values: torch.Tensor, boards: list[chess.Board], ref_rows: list[dict], fill: float) -> torch.Tensor:
    """pdx's 4,288 policy values in the authors' 4,096 loss slots, merged as their loss merges them.

    Their ``apply_promotion_offsets`` adds the queen, rook and bishop offsets (each logit minus the
    knight's, which is the raw from-to logit) into the one from-to slot they share with the knight
    promotion: merged = l_N + (l_Q − l_N) + (l_R − l_N) + (l_B − l_N). Every other move keeps its logit
    in its own slot (their slot numbers come from the worker). Differentiable in ``values``.
    """
    out = torch.full((len(boards), 4096), fill, dtype=values.dtype)
    rows, slots, cols, coef = [], [], [], []
    for r, (b, row) in enumerate(zip(boards, ref_rows)):
        group: dict[int, list[chess.Move]] = {}
        for uci, slot in zip(row["moves"], row["slots"]):
            group.setdefault(slot, []).append(chess.Move.from_uci(uci))
        for slot, ms in group.items():
            plain = [m for m in ms if m.promotion in (None, chess.KNIGHT)]
            assert len(plain) == 1, (b.fen(), ms)
            for m in ms:
                rows.append(r)
                slots.append(slot)
                cols.append(move_to_index(m, b.turn))
                coef.append(1.0)
            rows.append(r)
            slots.append(slot)
            cols.append(move_to_index(plain[0], b.turn))
            coef.append(-(len(ms) - 1.0))
    r_t, s_t = torch.tensor(rows), torch.tensor(slots)
    picked = values[r_t, torch.tensor(cols)] * torch.tensor(coef, dtype=values.dtype)
    legal = torch.zeros(len(boards), 4096, dtype=torch.bool)
    legal[r_t, s_t] = True
    summed = torch.zeros(len(boards), 4096, dtype=values.dtype).index_put((r_t, s_t), picked, accumulate=True)
    return torch.where(legal, summed, out), legal


# ------------------------------------------------------------------------------------ the tests


def test_the_batch_covers_what_differs(run):
    side = pdx_side(run)
    n_promo = sum(side["promo"])
    assert 6 <= n_promo < len(run["boards"]) - 20, n_promo
    assert any(m.promotion == chess.KNIGHT for m in run["actions"])
    assert {m.promotion for m in run["actions"]} >= {chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, None}
    assert any(c != RESULT_NONE for c in side["codes"]) and any(c == 1 for c in side["codes"])  # a win, a draw
    assert [t["result"] != "*" for t in run["ref"]["transitions"]] == [c != RESULT_NONE for c in side["codes"]]
    assert side["promo"] == [row["online"]["promotion_legal"] for row in run["ref"]["rows"]]


def test_outputs_tau_rho_target_and_advantage_agree(run):
    side, ref = pdx_side(run), run["ref"]
    diffs = {"online legal-move log π": 0.0, "base legal-move log π_base": 0.0}
    for r, (b, row) in enumerate(zip(run["boards"], ref["rows"])):
        for net, key in (("online", "log_p"), ("base", "log_p_base")):
            ours = side[key][r, [move_to_index(chess.Move.from_uci(u), b.turn) for u in row[net]["moves"]]]
            name = "online legal-move log π" if net == "online" else "base legal-move log π_base"
            diffs[name] = max(diffs[name], float((ours - torch.tensor(row[net]["move_log_p"])).abs().max()))
    t = ref["transitions"]
    diffs["online W/D/L"] = float(
        (side["wdl"] - torch.tensor([row["online"]["wdl"] for row in ref["rows"]])).abs().max()
    )
    diffs["online W/D/L kept with the transition"] = float(
        (side["wdl"] - torch.tensor([x["wdl_online_pre"] for x in t])).abs().max()
    )
    diffs["base W/D/L"] = float((side["wdl_base"] - torch.tensor([x["base_wdl"] for x in t])).abs().max())
    diffs["τ (pdx's own from its WDL vs the reference's)"] = float(
        (side["tau_own"] - torch.tensor(ref["tau"])).abs().max()
    )
    diffs["ρ"] = float((side["rho"] - torch.tensor([x["rho"] for x in t])).abs().max())
    diffs["p̂"] = float((side["target"] - torch.tensor([x["wdl_target"] for x in t])).abs().max())
    diffs["A"] = float((side["advantage"] - torch.tensor([x["advantage"] for x in t])).abs().max())
    for name, d in diffs.items():
        report(name, d)
    assert max(diffs.values()) < OUT_TOL, diffs
    assert float(side["rho"].min()) < 0.999  # τ ≠ 1 somewhere: ρ is not trivially 1


def loss_terms(net: torch.nn.Module, side: dict, rows: list[int], log_p_fn=None) -> tuple[dict, dict]:
    """pdx's loss on ``rows`` (its own Eq. 7 with the anchor) and the parameters' gradients; ``log_p_fn``
    maps the policy logits to (log π_θ, log π_base, mask, action) in another layout (the merged one)."""
    net.zero_grad(set_to_none=True)
    sl = torch.tensor(rows)
    out = net(side["x"][sl])
    common = dict(
        rho=side["rho"][sl],
        advantage=side["advantage"][sl],
        wdl_target=side["target"][sl],
        exploration="forward_kl",
        beta=BETA,
        c_v=C_V,
        wdl_base=side["wdl_base"][sl],
        value_anchor=ANCHOR,
    )
    if log_p_fn is None:
        mask = side["mask"][sl]
        log_p = masked_log_softmax(out.policy, mask)
        loss = pdx_loss(log_p, out.wdl, mask, side["action"][sl], log_p_base=side["log_p_base"][sl], **common)
    else:
        log_p, log_p_base, mask, action = log_p_fn(out.policy, sl)
        loss = pdx_loss(log_p, out.wdl, mask, action, log_p_base=log_p_base, **common)
    loss.total.backward()
    grads = {n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None}
    return {k: float(v.detach()) for k, v in loss._asdict().items()}, grads


def parameter_map(pdx_net: torch.nn.Module, ref_params: dict[str, np.ndarray]) -> dict[str, list[tuple[str, bool]]]:
    """For each pdx parameter (pieces of the fused Q/K/V weight separately: ``name[q|k|v]``), the reference
    parameters holding the same values, with whether they are stored transposed. Found by value: both sides
    load one file, and the weights are random, so equal values identify the parameter."""
    atoms = {}
    for n, p in pdx_net.named_parameters():
        if n.endswith(("qkv.weight", "qkv.bias")):
            for k, piece in zip("qkv", p.detach().chunk(3, dim=0)):
                atoms[f"{n}[{k}]"] = piece
        else:
            atoms[n] = p.detach()
    by_numel: dict[int, list[str]] = {}
    for n, a in atoms.items():
        by_numel.setdefault(a.numel(), []).append(n)
    found: dict[str, list[tuple[str, bool]]] = {n: [] for n in atoms}
    for rn, rv in ref_params.items():
        if rv.size < 2:
            continue
        r = torch.from_numpy(rv)
        for n in by_numel.get(r.numel(), []):
            a = atoms[n]
            if a.shape == r.shape and torch.allclose(a, r, atol=1e-7, rtol=0):
                found[n].append((rn, False))
            elif a.dim() == 2 and a.T.shape == r.shape and torch.allclose(a.T, r, atol=1e-7, rtol=0):
                found[n].append((rn, True))
    return found


def atom_grad(grads: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    if name.endswith("]"):
        base, k = name[:-3], name[-2]
        return grads[base].chunk(3, dim=0)["qkv".index(k)]
    return grads[name]


def compare_gradients(grads, ref_grads, mapping) -> float:
    """Largest |pdx − reference| over the shared parameters, each relative to its largest gradient (at
    least 1e-3 of the largest of all: the key biases' gradients are zero but for rounding, ~1e-11, since
    q·b_k is the same for every key); the reference's gradient of a pdx parameter is the sum over its
    copies (an unused copy has none)."""
    worst = 0.0
    floor = 1e-3 * max(float(atom_grad(grads, n).abs().max()) for n in mapping)
    for name, copies in mapping.items():
        ours = atom_grad(grads, name)
        theirs = torch.zeros_like(ours)
        for rn, transposed in copies:
            g = ref_grads.get(rn)
            if g is not None:
                g = torch.from_numpy(g)
                theirs += g.T if transposed else g
        scale = max(float(ours.abs().max()), floor)
        worst = max(worst, float((ours - theirs).abs().max()) / scale)
    return worst


def test_loss_terms_and_gradients_agree_where_no_promotion_is_legal(run):
    side, ref = pdx_side(run), run["ref"]
    rows = [r for r, p in enumerate(side["promo"]) if not p]
    terms, grads = loss_terms(run["nets"]["online"], side, rows)
    theirs = ref["losses"]["plain"]
    sl = torch.tensor(rows)
    target, rho = side["target"][sl], side["rho"][sl]
    entropy_hat = -(torch.special.xlogy(target, target)).sum(-1)  # H(p̂), 0 for a result's one-hot
    offset = float((rho * entropy_hat).mean())
    diffs = {
        "policy loss": abs(terms["policy"] - theirs["policy"]),
        "forward KL (exploration term)": abs(terms["explore"] - theirs["reg"]),
        "β × forward KL": abs(BETA * terms["explore"] - BETA * theirs["reg"]),
        "value loss − E[ρ·H(p̂)] vs the reference's KL(p̂‖p_θ)": abs(terms["value"] - offset - theirs["wdl"]),
        "base-WDL anchor": abs(terms["anchor"] - theirs["base_wdl"]),
        "total − c_v·E[ρ·H(p̂)]": abs(terms["total"] - C_V * offset - theirs["loss"]),
    }
    for name, d in diffs.items():
        report(f"rows without a promotion ({len(rows)}): {name}", d)
    print(f"reference oracle: the value-loss offset E[ρ·H(p̂)] on these rows: {offset:.4f}")
    assert max(diffs.values()) < LOSS_TOL, diffs
    assert offset > 0.1  # the offset is real: the value losses themselves differ by it
    assert abs(terms["value"] - theirs["wdl"]) > 0.1

    ref_params = {k[6:]: v for k, v in run["arrays"].items() if k.startswith("param/")}
    mapping = parameter_map(run["nets"]["online"], ref_params)
    unmatched = [n for n, c in mapping.items() if not c]
    assert not unmatched, f"pdx parameters the reference lacks: {unmatched}"
    ref_grads = {k[len("grad_plain/") :]: v for k, v in run["arrays"].items() if k.startswith("grad_plain/")}
    # what is compared: every pdx parameter; which reference parameters hold it; what only the reference has
    copies = {n: len(c) for n, c in mapping.items() if len(c) > 1}
    shared = {rn for c in mapping.values() for rn, _ in c}
    only_ref = sorted(n for n, v in ref_params.items() if n not in shared and v.size > 1)
    constants = [n for n, v in ref_params.items() if v.size == 1]
    print(
        f"reference oracle: {len(mapping)} pdx parameters (Q/K/V pieces apart) in {len(shared)} reference "
        f"parameters; held more than once: {copies}"
    )
    print(f"reference oracle: reference-only parameters (no gradient from the loss): {only_ref}")
    print(
        f"reference oracle: one-value parameters the reference trains: {len(constants)}, "
        f"{sum(n in ref_grads for n in constants)} with a gradient (graph constants: ε, DeepNorm α, 1/√d)"
    )
    assert copies.get("smolgen_shared.weight") == 15  # the shared smolgen weight: one copy per encoder
    assert not [n for n in only_ref if n in ref_grads]  # the unused heads get no gradient
    worst = compare_gradients(grads, ref_grads, mapping)
    report(f"gradients of all {len(mapping)} shared parameters (pieces), relative", worst)
    assert worst < GRAD_TOL


def test_promotion_rows_differ_exactly_by_the_merged_promotion_slot(run):
    side, ref = pdx_side(run), run["ref"]
    rows = [r for r, p in enumerate(side["promo"]) if p]
    boards = [run["boards"][r] for r in rows]
    ref_rows = [ref["rows"][r] for r in rows]
    t = [ref["transitions"][r] for r in rows]

    # the authors' 4,096-slot log-softmax is pdx's logits merged: checked on the outputs first
    with torch.no_grad():
        sl = torch.tensor(rows)
        for net, key in (("online", "online"), ("base", "base")):
            logits = run["nets"][net](side["x"][sl]).policy
            m, legal = merged(logits, boards, [row[key] for row in ref_rows], float("-inf"))
            lp = masked_log_softmax(m, legal)
            d = max(
                float((lp[i, row[key]["slots"]] - torch.tensor(row[key]["slot_log_p"])).abs().max())
                for i, row in enumerate(ref_rows)
            )
            report(f"promotion rows ({len(rows)}): {net} log-softmax in the merged 4,096 slots", d)
            assert d < OUT_TOL

    def merged_log_probs(policy, sl_):
        m, legal = merged(policy, boards, [row["online"] for row in ref_rows], 0.0)
        with torch.no_grad():
            mb, _ = merged(run["nets"]["base"](side["x"][sl_]).policy, boards, [row["base"] for row in ref_rows], 0.0)
        action = torch.tensor([x["action_slot"] for x in t])
        return masked_log_softmax(m, legal), masked_log_softmax(mb, legal), legal, action

    own, own_grads = loss_terms(run["nets"]["online"], side, rows)
    terms, grads = loss_terms(run["nets"]["online"], side, rows, merged_log_probs)
    theirs = ref["losses"]["promo"]
    target, rho = side["target"][sl], side["rho"][sl]
    offset = float((rho * -(torch.special.xlogy(target, target)).sum(-1)).mean())
    diffs = {
        "policy loss (merged)": abs(terms["policy"] - theirs["policy"]),
        "forward KL (merged)": abs(terms["explore"] - theirs["reg"]),
        "value loss − E[ρ·H(p̂)]": abs(terms["value"] - offset - theirs["wdl"]),
        "base-WDL anchor": abs(terms["anchor"] - theirs["base_wdl"]),
        "total − c_v·E[ρ·H(p̂)] (merged)": abs(terms["total"] - C_V * offset - theirs["loss"]),
    }
    for name, d in diffs.items():
        report(f"promotion rows ({len(rows)}): {name}", d)
    assert max(diffs.values()) < LOSS_TOL, diffs
    # and pdx's own (per-move) terms are not the authors' there: the merge is a real difference
    gap = {"policy loss": abs(own["policy"] - theirs["policy"]), "forward KL": abs(own["explore"] - theirs["reg"])}
    for name, d in gap.items():
        print(f"reference oracle: promotion rows: pdx's own {name} vs the reference's: |diff| {d:.3g}")
    assert gap["forward KL"] > 10 * LOSS_TOL

    mapping = parameter_map(
        run["nets"]["online"], {k[6:]: v for k, v in run["arrays"].items() if k.startswith("param/")}
    )
    ref_grads = {k[len("grad_promo/") :]: v for k, v in run["arrays"].items() if k.startswith("grad_promo/")}
    worst = compare_gradients(grads, ref_grads, mapping)
    report("promotion rows: gradients with the merge, relative", worst)
    assert worst < GRAD_TOL
    own_worst = compare_gradients(own_grads, ref_grads, mapping)
    print(f"reference oracle: promotion rows: pdx's own gradients vs the reference's, relative: {own_worst:.3g}")
    assert own_worst > 10 * GRAD_TOL
