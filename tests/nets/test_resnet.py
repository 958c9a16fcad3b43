"""The classic family (nets/resnet.py): Lc0's residual tower in PyTorch, its policy map, heads,
parameter groups and files, and its Lc0 mapping (nets/lc0/classic.py) without the real Lc0:
batch-norm folding against torch's BatchNorm, import/export round trips, refusals."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import N_FROM_TO, POLICY_SIZE, legal_mask, move_to_index
from pdx_lightning.nets import ModelLoadError, lc0, load_model, resnet, save_network
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig
from pdx_lightning.nets.lc0 import classic
from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.lc0.format import encode_layer, read_net, write_net
from pdx_lightning.nets.lc0_policy import POLICY_1858
from pdx_lightning.nets.resnet import (
    CONV_POLICY_PLANES,
    PRESET_PARAMS,
    PRESETS,
    UNMAPPED_LOGIT,
    ClassicConfig,
    ClassicResNet,
    WdlHeadMissingError,
    conv_policy_index,
    count_params,
    require_wdl_head,
)


def random_classic(cfg: ClassicConfig, seed: int = 0, scale: float = 0.3) -> ClassicResNet:
    """``cfg`` with every parameter and buffer randomized (moves-left head included)."""
    torch.manual_seed(seed)
    model = ClassicResNet(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * scale)
        for name, b in model.named_buffers():
            if name.startswith("moves_left_head."):
                b.copy_(torch.randn_like(b) * scale)
    return model.eval()


def games(n: int, seed: int = 0, plies: int = 40) -> list[chess.Board]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        b = chess.Board()
        for _ in range(rng.randrange(plies)):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(rng.choice(moves))
        if not b.is_game_over():
            out.append(b)
    return out


# ---------------------------------------------------------------- config and presets


def test_preset_parameter_counts_are_pinned():
    assert {n: count_params(c) for n, c in PRESETS.items()} == PRESET_PARAMS


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="channels must be positive"):
        ClassicConfig(channels=0)
    with pytest.raises(ValueError, match="activation"):
        ClassicConfig(activation="silu")
    with pytest.raises(ValueError, match="needs >= 73 planes"):
        ClassicConfig(policy_channels=32)
    ClassicConfig(policy="classical", policy_channels=32)  # fine for the classical head
    cfg = ClassicConfig(value="classical")
    assert ClassicConfig(**cfg.to_dict()) == cfg and "family" not in cfg.to_dict() and cfg.family == "classic"
    assert not cfg.wdl_head and ClassicConfig().wdl_head


# ---------------------------------------------------------------- the convolutional policy map


def test_conv_policy_map_is_a_bijection_onto_lc0s_1858_moves():
    idx = conv_policy_index()
    mapped = idx < CONV_POLICY_PLANES * 64
    assert int(mapped.sum()) == 1858
    assert set(np.flatnonzero(mapped.numpy())) == set(POLICY_1858.tolist())  # exactly the 1858 slots
    assert len(set(idx[mapped].tolist())) == 1858  # each plane cell once


def test_conv_policy_map_follows_the_alphazero_plane_order():
    idx = conv_policy_index()
    sq = chess.parse_square
    cell = lambda plane, frm: plane * 64 + sq(frm)  # noqa: E731
    assert idx[sq("a1") * 64 + sq("a2")] == cell(0, "a1")  # N, distance 1
    assert idx[sq("a1") * 64 + sq("a8")] == cell(6, "a1")  # N, distance 7
    assert idx[sq("a1") * 64 + sq("b2")] == cell(7, "a1")  # NE 1
    assert idx[sq("e1") * 64 + sq("h1")] == cell(16, "e1")  # E 3 (Lc0's O-O: king takes rook)
    assert idx[sq("h8") * 64 + sq("a1")] == cell(41, "h8")  # SW 7
    assert idx[sq("g1") * 64 + sq("f3")] == cell(63, "g1")  # knight (-1, +2)
    assert idx[sq("b1") * 64 + sq("c3")] == cell(56, "b1")  # knight (+1, +2)
    promo = lambda ff, tf, k: N_FROM_TO + ff * 24 + tf * 3 + k  # noqa: E731
    assert idx[promo(4, 3, 1)] == cell(64, "e7")  # e7d8 rook: file -1, rook
    assert idx[promo(4, 4, 2)] == cell(68, "e7")  # e7e8 bishop
    assert idx[promo(4, 5, 0)] == cell(72, "e7")  # e7f8 queen: file +1, queen
    assert idx[sq("e7") * 64 + sq("e8")] == cell(0, "e7")  # the knight promotion is the plain push
    assert idx[promo(0, 2, 0)] == CONV_POLICY_PLANES * 64  # two files apart: unmapped
    assert idx[sq("a1") * 64 + sq("a1")] == CONV_POLICY_PLANES * 64


# ---------------------------------------------------------------- the network


@pytest.mark.parametrize("policy", ["convolution", "classical"])
def test_legal_moves_always_have_a_real_logit_and_unmapped_slots_the_fill(policy):
    cfg = ClassicConfig(
        channels=8,
        blocks=1,
        se_channels=2,
        policy=policy,
        value_channels=2,
        value_hidden=8,
        policy_channels=80 if policy == "convolution" else 4,
    )
    model = random_classic(cfg)
    boards = games(40, seed=1) + [
        chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 4 9"),
        chess.Board("3r1n2/2P3P1/8/8/8/8/5k2/K7 w - - 0 1"),
    ]
    with torch.no_grad():
        out = model(torch.from_numpy(encode_boards(boards)))
    assert out.policy.shape == (len(boards), POLICY_SIZE) and bool(torch.isfinite(out.policy).all())
    mask = legal_mask(boards)
    assert bool((out.policy[mask] != UNMAPPED_LOGIT).all())
    unmapped = torch.ones(POLICY_SIZE, dtype=torch.bool)
    unmapped[torch.from_numpy(POLICY_1858.copy())] = False
    assert bool((out.policy[:, unmapped] == UNMAPPED_LOGIT).all())
    assert not bool((mask & unmapped).any())  # never legal


def test_castling_is_read_from_lc0s_king_takes_rook_slot(monkeypatch):
    monkeypatch.setattr(resnet, "INFERENCE_FAST_PATH", False)  # exact equality: raw is the module path's
    model = random_classic(PRESETS["classic-tiny"])
    board = chess.Board("r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9")
    x = torch.from_numpy(encode_boards([board]))
    with torch.no_grad():
        raw = model.policy_head(model.body(x))
        ours = model(x).policy
    e1, g1, h1, c1, a1 = (chess.parse_square(s) for s in ("e1", "g1", "h1", "c1", "a1"))
    assert ours[0, e1 * 64 + g1] == raw[0, e1 * 64 + h1] and ours[0, e1 * 64 + c1] == raw[0, e1 * 64 + a1]
    assert ours[0, move_to_index(chess.Move.from_uci("e1g1"), chess.WHITE)] == raw[0, e1 * 64 + h1]


def test_the_se_unit_scales_and_shifts_each_channel():
    torch.manual_seed(0)
    se = resnet.SqueezeExcitation(4, 2, F.relu)
    z = torch.randn(3, 4, 8, 8)
    s = se.fc2(F.relu(se.fc1(z.mean(dim=(2, 3)))))
    want = torch.sigmoid(s[:, :4, None, None]) * z + s[:, 4:, None, None]
    assert torch.allclose(se(z), want)


def test_a_classical_value_head_gives_w_minus_l_tanh_and_no_draw():
    model = random_classic(
        ClassicConfig(channels=8, blocks=1, se_channels=0, value="classical", value_channels=2, value_hidden=8)
    )
    x = torch.from_numpy(encode_boards(games(6, seed=2)))
    with torch.no_grad():
        h = model.body(x)
        v = model.value_head.fc2(F.relu(model.value_head.fc1(F.relu(model.value_head.conv(h)).flatten(1))))
        wdl = model(x).wdl.softmax(-1)
    assert torch.allclose(wdl[:, 0] - wdl[:, 2], torch.tanh(v[:, 0]), atol=1e-6)
    assert bool((wdl[:, 1] == 0).all())


def test_param_groups_split_tower_and_heads():
    model = ClassicResNet(PRESETS["classic-tiny"])
    groups = model.param_groups()
    ids = lambda mod: {id(p) for p in mod.parameters()}  # noqa: E731
    assert {id(p) for p in groups["backbone"]} == ids(model.input) | ids(model.blocks[0])
    assert {id(p) for p in groups["final_block"]} == ids(model.blocks[-1])
    assert {id(p) for p in groups["policy_head"]} == ids(model.policy_head)
    assert {id(p) for p in groups["value_head"]} == ids(model.value_head)
    assert not list(model.moves_left_head.parameters())  # carried as buffers, never trained
    assert model.moves_left(torch.zeros(2, 112, 8, 8)).shape == (2,)


def test_require_wdl_head_refuses_a_classical_value_network_by_name():
    require_wdl_head(ClassicResNet(PRESETS["classic-tiny"]), "training")
    require_wdl_head(Chessformer(ModelConfig.from_name("tiny")), "training")  # always WDL
    net = ClassicResNet(ClassicConfig(name="t40ish", channels=8, blocks=1, value="classical"))
    with pytest.raises(WdlHeadMissingError, match=r"t40ish.*classical value head.*τ = H\(WDL\).*needs a WDL"):
        require_wdl_head(net, "fine-tuning with pdx (τ = H(WDL) and the WDL value loss)")
    assert issubclass(WdlHeadMissingError, ModelLoadError)


# ---------------------------------------------------------------- pdx files


def test_random_preset_and_pdx_file_round_trip(tmp_path):
    model = load_model("random:classic-tiny:3")
    assert isinstance(model, ClassicResNet) and model.cfg == PRESETS["classic-tiny"]
    save_network(model, tmp_path / "c.pt")
    again = load_model(str(tmp_path / "c.pt"))
    x = torch.from_numpy(encode_boards(games(5, seed=3)))
    with torch.no_grad():
        assert torch.equal(model(x).policy, again(x).policy) and torch.equal(model(x).wdl, again(x).wdl)


def test_a_stored_config_lying_about_its_depth_is_refused_before_building(tmp_path):
    save_network(load_model("random:classic-tiny"), tmp_path / "c.pt")
    blob = torch.load(tmp_path / "c.pt", weights_only=True)
    blob["config"]["blocks"] = 10_000
    torch.save(blob, tmp_path / "lie.pt")
    with pytest.raises(ModelLoadError, match="claims 10000 residual blocks, the stored weights hold 2"):
        load_model(str(tmp_path / "lie.pt"))


# ---------------------------------------------------------------- the Lc0 mapping, no engine needed

VARIANTS = {
    "se-conv-wdl-mlh-relu": ClassicConfig(
        channels=8,
        blocks=2,
        se_channels=2,
        moves_left_channels=2,
        value_channels=2,
        value_hidden=8,
        moves_left_hidden=4,
    ),
    "plain-fc-classical-mish": ClassicConfig(
        channels=8,
        blocks=1,
        se_channels=0,
        activation="mish",
        policy="classical",
        policy_channels=2,
        value="classical",
        value_channels=2,
        value_hidden=8,
    ),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_float32_export_reads_back_exactly_and_linear16_closely(name, tmp_path):
    model = random_classic(VARIANTS[name], seed=5)
    boards = games(12, seed=6)
    x = torch.from_numpy(encode_boards(boards))
    lc0.export_lc0(model, tmp_path / "f32.pb.gz", encoding="float32")
    lc0.export_lc0(model, tmp_path / "l16.pb.gz")
    f32, l16 = lc0.load_lc0(tmp_path / "f32.pb.gz"), lc0.load_lc0(tmp_path / "l16.pb.gz")
    assert isinstance(f32, ClassicResNet)
    assert f32.cfg == ClassicConfig(**{**model.cfg.to_dict(), "name": "f32.pb.gz"})
    for k, v in model.state_dict().items():
        assert torch.equal(f32.state_dict()[k], v), k
    with torch.no_grad():
        a, b = model(x), l16(x)
        assert (a.policy - b.policy).abs().max() < 0.05 and (a.wdl - b.wdl).abs().max() < 0.05
        if model.cfg.moves_left_channels:
            assert (model.moves_left(x) - l16.moves_left(x)).abs().max() < 0.05
    net = read_net(tmp_path / "f32.pb.gz")
    nf = net.format.network_format
    assert (net.min_version.major, net.min_version.minor) == (0, 33)  # per-layer float32
    assert (read_net(tmp_path / "l16.pb.gz").min_version.minor) in (21, 26, 28)
    assert nf.input == P.INPUT_CLASSICAL_112_PLANE
    assert nf.network == (
        classic.NETWORK_SE_WITH_HEADFORMAT if model.cfg.se_channels else classic.NETWORK_CLASSICAL_WITH_HEADFORMAT
    )
    assert nf.policy == (classic.POLICY_CONVOLUTION if model.cfg.policy == "convolution" else classic.POLICY_CLASSICAL)
    assert nf.value == (P.VALUE_WDL if model.cfg.value == "wdl" else classic.VALUE_CLASSICAL)
    assert nf.moves_left == (P.MOVES_LEFT_V1 if model.cfg.moves_left_channels else P.MOVES_LEFT_NONE)
    assert nf.default_activation == (
        P.DEFAULT_ACTIVATION_MISH if model.cfg.activation == "mish" else P.DEFAULT_ACTIVATION_RELU
    )


def test_export_can_drop_the_moves_left_head(tmp_path):
    model = random_classic(VARIANTS["se-conv-wdl-mlh-relu"])
    lc0.export_lc0(model, tmp_path / "n.pb.gz", encoding="float32", moves_left=False)
    again = lc0.load_lc0(tmp_path / "n.pb.gz")
    assert again.moves_left_head is None and again.cfg.moves_left_channels == 0


def _bn_net(tmp_path, seed=7, old_style=False):
    """A one-block SE tower written by hand with *unfolded* batch norm in every ConvBlock, plus the
    torch reference computing it with real BatchNorm2d layers (eval mode, eps 1e-5)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *s: torch.randn(*s, generator=g) * 0.3  # noqa: E731
    C = 4

    def conv_block(block, out, inp, k):
        w = rnd(out, inp, k, k)
        bn = {"bn_means": rnd(out), "bn_stddivs": rnd(out).abs() + 0.2}
        if not old_style:
            bn |= {"bn_gammas": rnd(out) + 1, "bn_betas": rnd(out), "biases": rnd(out)}
        block.weights.CopyFrom(encode_layer(w, P.FLOAT32))
        for name, v in bn.items():
            getattr(block, name).CopyFrom(encode_layer(v, P.FLOAT32))

        def ref(x):
            y = F.conv2d(x, w, bn.get("biases"), padding=k // 2)
            return F.batch_norm(
                y, bn["bn_means"], bn["bn_stddivs"], bn.get("bn_gammas"), bn.get("bn_betas"), training=False, eps=1e-5
            )

        return ref

    net = P.Net(magic=P.MAGIC)
    nf = net.format.network_format
    nf.input, nf.output = P.INPUT_CLASSICAL_112_PLANE, P.OUTPUT_WDL
    nf.network = classic.NETWORK_SE_WITH_HEADFORMAT
    nf.policy, nf.value = classic.POLICY_CONVOLUTION, P.VALUE_WDL
    w = net.weights
    inp = conv_block(w.input, C, 112, 3)
    res = w.residual.add()
    c1, c2 = conv_block(res.conv1, C, C, 3), conv_block(res.conv2, C, C, 3)
    se = {"w1": rnd(2, C), "b1": rnd(2), "w2": rnd(2 * C, 2), "b2": rnd(2 * C)}
    for k, v in se.items():
        getattr(res.se, k).CopyFrom(encode_layer(v, P.FLOAT32))
    p1, p2 = conv_block(w.policy1, C, C, 3), conv_block(w.policy, 80, C, 3)
    val = conv_block(w.value, 2, C, 1)
    fc = {"ip1_val_w": rnd(8, 128), "ip1_val_b": rnd(8), "ip2_val_w": rnd(3, 8), "ip2_val_b": rnd(3)}
    for k, v in fc.items():
        getattr(w, k).CopyFrom(encode_layer(v, P.FLOAT32))
    net.min_version.minor = 33
    path = write_net(net, tmp_path / "bn.pb.gz")

    def reference(x):
        h = F.relu(inp(x))
        z = c2(F.relu(c1(h)))
        s = F.linear(F.relu(F.linear(z.mean((2, 3)), se["w1"], se["b1"])), se["w2"], se["b2"])
        h = F.relu(torch.sigmoid(s[:, :C, None, None]) * z + s[:, C:, None, None] + h)
        planes = p2(F.relu(p1(h)))
        v = F.relu(val(h)).flatten(1)
        hidden = F.relu(F.linear(v, fc["ip1_val_w"], fc["ip1_val_b"]))
        wdl = F.linear(hidden, fc["ip2_val_w"], fc["ip2_val_b"])
        return planes, wdl

    return path, reference


@pytest.mark.parametrize("old_style", [False, True], ids=["gamma-beta-bias", "means-and-variances-only"])
def test_batch_norm_is_folded_as_lc0_folds_it(tmp_path, old_style):
    path, reference = _bn_net(tmp_path, old_style=old_style)
    model = lc0.load_lc0(path)
    boards = games(10, seed=8)
    x = torch.from_numpy(encode_boards(boards))
    with torch.no_grad():
        planes, wdl = reference(x)
        out = model(x)
    assert torch.allclose(out.wdl, wdl, rtol=1e-5, atol=1e-5)
    flat = planes[:, :CONV_POLICY_PLANES].flatten(1)
    idx = conv_policy_index()
    for i, b in enumerate(boards):
        for mv in b.legal_moves:
            slot = move_to_index(mv, b.turn)
            if b.is_castling(mv):  # Lc0's slot for castling is king-takes-rook
                rook = chess.square(7 if chess.square_file(mv.to_square) == 6 else 0, 0)
                slot = chess.square(4, 0) * 64 + rook
            got, want = out.policy[i, move_to_index(mv, b.turn)], flat[i, idx[slot]]
            assert abs(got - want) < 1e-5 * flat[i].abs().max()  # float32 rounding, relative to the row


# ---------------------------------------------------------------- refusals, before anything is built


def _maia_like(tmp_path, edit, name="edited.pb.gz"):
    model = random_classic(VARIANTS["se-conv-wdl-mlh-relu"], seed=9)
    net = classic.encode(model, P.FLOAT32)
    edit(net)
    return write_net(net, tmp_path / name)


REFUSALS = {
    "canonical input": (
        lambda n: setattr(n.format.network_format, "input", 3),
        r"residual-tower network \(2 blocks, NETWORK_SE_WITH_HEADFORMAT \(4\)\).*"
        r"input format INPUT_112_WITH_CANONICALIZATION \(3\).*"
        r"INPUT_CLASSICAL_112_PLANE only",
    ),
    "attention policy": (
        lambda n: setattr(n.format.network_format, "policy", 3),
        r"policy format POLICY_ATTENTION \(3\)",
    ),
    "value param": (lambda n: setattr(n.format.network_format, "value", 3), r"value format VALUE_PARAM \(3\)"),
    "se on one block": (lambda n: n.weights.residual[1].ClearField("se"), r"SE units on 1 of 2 blocks"),
    "no value head": (lambda n: n.weights.ClearField("value"), r"no value head weights"),
    "wrong value width": (
        lambda n: n.weights.ip2_val_b.CopyFrom(encode_layer(torch.zeros(1), P.FLOAT32)),
        r"value format VALUE_WDL \(2\) with 1 value outputs",
    ),
    "short layer": (
        lambda n: n.weights.residual[0].conv1.weights.CopyFrom(encode_layer(torch.zeros(5), P.FLOAT32)),
        r"weights\.residual\.0\.conv1\.weights has 5 values, expected 8×8×3×3 = 576",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_unmappable_files_are_refused_by_name_before_a_model_is_built(case, tmp_path, monkeypatch):
    edit, message = REFUSALS[case]
    path = _maia_like(tmp_path, edit)
    built = []
    real = resnet.ClassicResNet.__init__

    def spy(self, cfg):
        built.append(torch.get_default_device().type)
        real(self, cfg)

    monkeypatch.setattr(resnet.ClassicResNet, "__init__", spy)
    with pytest.raises(lc0.Lc0FormatError, match=message):
        lc0.load_lc0(path)
    assert "cpu" not in built  # at most a meta-device shape check ran


def test_files_without_a_network_format_are_classical_heads(tmp_path):
    """The oldest files carry no network_format: Lc0 reads them as classical input, policy and value."""
    cfg = ClassicConfig(
        channels=4,
        blocks=1,
        se_channels=0,
        policy="classical",
        policy_channels=2,
        value="classical",
        value_channels=2,
        value_hidden=4,
    )
    model = random_classic(cfg, seed=10)
    net = classic.encode(model, P.FLOAT32)
    net.ClearField("format")
    again = lc0.load_lc0(write_net(net, tmp_path / "old.pb.gz"))
    assert again.cfg.policy == "classical" and again.cfg.value == "classical"
