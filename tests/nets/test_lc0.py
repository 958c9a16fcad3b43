"""Lc0 interoperability (pdx_lightning.nets.lc0): the weight file both ways, the policy
layouts, bad files, and an independent reader (chessformer_lens, its own .pb.gz decoder,
plane encoder, BT4 model and move vocabulary) agreeing with us on 100 positions."""

import gzip
import random
from dataclasses import replace
from functools import cache

import chess
import numpy as np
import pytest
import torch

from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.nets import ModelLoadError, lc0, load_model, save_network
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig, castling_to_ours, lc0_position_table
from pdx_lightning.nets.lc0 import attention
from pdx_lightning.nets.lc0 import format as F
from pdx_lightning.nets.lc0 import schema as P


def _random_lc0_net(embedding="pe_dense", seed=0, **overrides) -> Chessformer:
    """A tiny Lc0-expressible network with every tensor randomized (LN gains, gates and the
    moves-left head included, so no weight is trivially 0 or 1)."""
    torch.manual_seed(seed)
    cfg = lc0.lc0_style(ModelConfig.from_name("tiny", moves_left_dim=8, **overrides), embedding)
    model = Chessformer(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
        for name, b in model.named_buffers():
            if name.startswith("moves_left_head."):
                b.copy_(torch.randn_like(b) * 0.2)
    return model.eval()


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    assert a.shape == b.shape
    return (a - b).abs().max().item()


def _play(board: chess.Board, rng: random.Random, plies: int) -> chess.Board:
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board


# Castling for both colours, promotions (pushes, captures, under-promotions) for both colours.
SPECIAL_FENS = [
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 4 9",
    "3r1n2/2P3P1/8/8/8/8/5k2/K7 w - - 0 1",
    "K7/8/8/8/8/8/2p3p1/3R1N1k b - - 0 1",
]


@cache
def _positions(n=100, seed=0) -> tuple[chess.Board, ...]:
    """Positions with their move stacks: games from the start (zero-filled history) and from
    FENs without an en-passant square (history filled by repetition), some cut short."""
    rng = random.Random(seed)
    boards = []
    for i in range(n):
        if i % 5 == 4:
            b = _play(chess.Board(SPECIAL_FENS[(i // 5) % len(SPECIAL_FENS)]), rng, rng.choice([0, 0, 1, 3]))
        else:
            b = _play(chess.Board(), rng, rng.randint(0, 90))
        if not any(b.legal_moves):
            b = chess.Board()
        boards.append(b)
    return tuple(boards)


# ---------------------------------------------------------------- policy layouts


def test_attention_to_1858_map_matches_lc0_kattnpolicymap():
    m = lc0.ATTN_TO_1858
    assert m.shape == (4288,) and sorted(m[m >= 0].tolist()) == list(range(1858))
    # entries of Lc0's src/neural/tables/attention_policy_map.h (kAttnPolicyMap)
    lc0_entries = {
        0: -1,
        1: 0,
        7: 6,
        8: 7,
        10: 9,
        11: -1,
        16: 10,
        18: 12,
        27: 14,
        63: 22,
        64: 23,
        65: -1,
        66: 24,
        4094: 1791,
        4095: -1,
        4096: 1792,
        4101: 1797,
        4102: -1,
        4119: -1,
        4120: 1798,
        4128: 1806,
        4129: -1,
        4282: 1852,
        4287: 1857,
    }
    assert {k: int(m[k]) for k in lc0_entries} == lc0_entries
    names = lc0.lc0_1858_moves()
    assert names[:8] == ["a1b1", "a1c1", "a1d1", "a1e1", "a1f1", "a1g1", "a1h1", "a1a2"]
    assert names[1792:1798] == ["a7a8q", "a7a8r", "a7a8b", "a7b8q", "a7b8r", "a7b8b"] and names[-1] == "h7h8b"
    assert (m[lc0.POLICY_1858] == np.arange(1858)).all()


def test_our_move_indices_land_on_the_lc0_move_of_the_same_name():
    names = lc0.lc0_1858_moves()
    for fen in SPECIAL_FENS + [chess.STARTING_FEN]:
        b = chess.Board(fen)
        for mv in b.legal_moves:
            if b.is_castling(mv):
                continue  # castling is e1h1 in Lc0's list (see the castling test)
            canon = mv if b.turn else chess.Move(mv.from_square ^ 56, mv.to_square ^ 56, mv.promotion)
            uci = canon.uci()[:4] if mv.promotion == chess.KNIGHT else canon.uci()
            assert names[lc0.ATTN_TO_1858[move_to_index(mv, b.turn)]] == uci


def test_king_takes_rook_castling_is_swapped_into_our_slots_for_both_colours():
    model = _random_lc0_net()
    for fen in SPECIAL_FENS[:2]:
        b = chess.Board(fen)
        x = torch.from_numpy(encode_boards([b]))
        with torch.no_grad():
            internal = model.policy_head(model.body(x))  # Lc0's layout: castling on e1h1 / e1a1
            ours = model(x).policy
        for mv, rook_sq in (
            (chess.Move.from_uci("e1g1" if b.turn else "e8g8"), 4 * 64 + 7),
            (chess.Move.from_uci("e1c1" if b.turn else "e8c8"), 4 * 64 + 0),
        ):
            assert b.is_castling(mv)
            assert ours[0, move_to_index(mv, b.turn)] == internal[0, rook_sq]
        assert torch.equal(castling_to_ours(castling_to_ours(internal, x), x), internal)
        others = torch.ones(4288, dtype=torch.bool)
        others[[4 * 64 + 6, 4 * 64 + 7, 4 * 64 + 2, 4 * 64 + 0]] = False
        assert torch.equal(ours[0, others], internal[0, others])


# ---------------------------------------------------------------- the weight file


def test_layer_encodings_decode_by_hand():
    layer = P.Layer(min_val=-1.0, max_val=3.0, params=np.array([0, 0xFFFF, 0x8000], "<u2").tobytes())
    # LINEAR16 is the default when `encoding` is absent
    assert torch.equal(F.decode_layer(layer), torch.tensor([-1.0, 3.0, np.float32(0x8000 / 0xFFFF * 4 - 1)]))
    half = P.Layer(encoding=P.FLOAT16, params=np.array([0x3C00, 0xC000], "<u2").tobytes())  # 1.0, -2.0
    bf16 = P.Layer(encoding=P.BFLOAT16, params=np.array([0x3F80, 0x4040], "<u2").tobytes())  # 1.0, 3.0
    f32 = P.Layer(encoding=P.FLOAT32, params=np.array([0.1, -7.5], "<f4").tobytes())
    assert F.decode_layer(half).tolist() == [1.0, -2.0] and F.decode_layer(bf16).tolist() == [1.0, 3.0]
    assert torch.equal(F.decode_layer(f32), torch.tensor([0.1, -7.5]))


def test_linear16_quantization_is_within_half_a_step_and_matches_a_reference():
    v = torch.randn(5000) * 0.3
    layer = F.encode_layer(v, P.LINEAR16)
    lo, hi = np.float64(layer.min_val), np.float64(layer.max_val)
    q_ref = np.rint((v.double().numpy() - lo) / (hi - lo) * 65535)
    assert (np.frombuffer(layer.params, "<u2") == q_ref).all()
    back = F.decode_layer(layer)
    assert (back - v).abs().max().item() <= 0.5 * (hi - lo) / 65535 + 1e-7
    assert F.decode_layer(F.encode_layer(torch.full((3,), 0.25))).tolist() == [0.25] * 3  # min == max


def test_export_then_import_is_exact_with_float32(tmp_path):
    model = _random_lc0_net(rule50_scale=1.0)
    lc0.export_lc0(model, tmp_path / "net.pb.gz", encoding="float32")
    again = lc0.load_lc0(tmp_path / "net.pb.gz")
    assert again.cfg == replace(model.cfg, name="net.pb.gz")
    a, b = model.state_dict(), again.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    x = torch.from_numpy(encode_boards(_positions()[:8]))
    with torch.no_grad():
        assert torch.equal(model(x).policy, again(x).policy) and torch.equal(model(x).wdl, again(x).wdl)
        assert torch.equal(model.moves_left(x), again.moves_left(x))


@pytest.mark.parametrize("encoding", ["linear16", "float16", "bfloat16"])
def test_sixteen_bit_exports_import_as_the_encoded_values(tmp_path, encoding):
    model = _random_lc0_net(rule50_scale=1.0)
    lc0.export_lc0(model, tmp_path / "net.pb.gz", encoding=encoding)
    again = lc0.load_lc0(tmp_path / "net.pb.gz")
    for k, v in model.state_dict().items():
        if ".qkv." in k:  # Q, K and V are separate Lc0 layers
            expect = torch.cat(
                [F.decode_layer(F.encode_layer(c, P.ENCODINGS[encoding])).reshape(c.shape) for c in v.chunk(3)]
            )
        else:
            expect = F.decode_layer(F.encode_layer(v.t() if k.startswith("gate_") else v, P.ENCODINGS[encoding]))
            expect = expect.reshape(v.t().shape).t() if k.startswith("gate_") else expect.reshape(v.shape)
        assert torch.equal(again.state_dict()[k], expect), k


def test_rule50_scaling_is_folded_into_the_embedding(tmp_path):
    model = _random_lc0_net()  # rule50_scale = 1/99, as our CPU presets
    lc0.export_lc0(model, tmp_path / "net.pb.gz", encoding="float32")
    again = lc0.load_lc0(tmp_path / "net.pb.gz")
    assert again.cfg.rule50_scale == 1.0  # Lc0 feeds the raw count
    x = torch.from_numpy(encode_boards(_positions()[:8]))
    assert x[:, 109].max() > 1
    with torch.no_grad():
        assert _max_abs_diff(again(x).policy, model(x).policy) < 1e-5


def test_pe_map_t82_style_networks_round_trip(tmp_path):
    model = _random_lc0_net("pe_map", rule50_scale=1.0)
    lc0.export_lc0(model, tmp_path / "t82.pb.gz", encoding="float32")
    again = lc0.load_lc0(tmp_path / "t82.pb.gz")
    assert again.cfg.input_posenc and not again.cfg.embed_ln and again.cfg.ln_eps == 1e-6
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in model.state_dict().items())
    table = lc0_position_table()  # rows 0 and 1 of Lc0's kPosEncoding (attention_policy_map.h)
    assert table[0, :24].tolist() == [-1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0]
    assert table[1, :24].tolist() == [1, -1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize(
    "cfg",
    [
        ModelConfig.from_name("bt4"),
        lc0.lc0_style(ModelConfig.from_name("tiny")),
        lc0.lc0_style(ModelConfig.from_name("tiny", moves_left_dim=4), "pe_map"),
    ],
    ids=["bt4", "tiny-pe_dense", "tiny-pe_map"],
)
def test_every_tensor_has_exactly_one_lc0_field(cfg):
    assert lc0.lc0_export_problems(cfg) == []
    with torch.device("meta"):
        state = Chessformer(cfg).state_dict()
    table = attention.field_table(cfg, "policy_heads.vanilla.", "policy_heads.vanilla.", "value_heads.winner.")
    paths = [p for p, _, _ in table]
    assert len(paths) == len(set(paths))
    assert {k for _, k, _ in table} == set(state)
    weights = P.Net().weights
    for _ in range(cfg.n_layers):
        weights.encoder.add()
    for path, _, _ in table:  # every path names a net.proto Layer (an unknown name raises)
        assert F.resolve(weights, path, create=True).DESCRIPTOR.name == "Layer"


def test_moves_left_head_can_be_dropped_on_export(tmp_path):
    lc0.export_lc0(_random_lc0_net(), tmp_path / "net.pb.gz", moves_left=False)
    again = lc0.load_lc0(tmp_path / "net.pb.gz")
    assert again.cfg.moves_left_dim == 0 and again.moves_left_head is None


def test_load_model_and_pdx_module_accept_a_pb_gz_base(tmp_path):
    from pdx_lightning.rl.module import PDXModule
    from pdx_lightning.rl.selfplay import SelfPlayConfig

    path = tmp_path / "net.pb.gz"
    lc0.export_lc0(_random_lc0_net(), path)
    assert isinstance(load_model(str(path)), Chessformer)
    module = PDXModule(base=str(path), selfplay=SelfPlayConfig(n_games=2))
    assert module.base.cfg.policy_castling == "king_takes_rook"
    opt = module.configure_optimizers()["optimizer"]
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(module.online.parameters()))


# ---------------------------------------------------------------- what Lc0 cannot express


def test_export_refuses_what_lc0_cannot_express_and_names_it(tmp_path):
    with pytest.raises(lc0.Lc0ExportError) as e:
        lc0.export_lc0(load_model("random:tiny"), tmp_path / "x.pb.gz")
    for what in (
        "activation='silu'",
        "value_pool='mean'",
        "deepnorm='scale_skip'",
        "promo_offsets_scaled",
        "input embedding",
        "smolgen_ln_eps",
        "policy_castling='king_to'",
    ):
        assert what in str(e.value)
    assert not (tmp_path / "x.pb.gz").exists()


def test_castling_mismatch_is_refused_unless_allowed(tmp_path):
    native = Chessformer(replace(lc0.lc0_style(ModelConfig.from_name("tiny")), policy_castling="king_to"))
    assert lc0.lc0_export_problems(native.cfg) == [p for p in lc0.lc0_export_problems(native.cfg) if "castling" in p]
    with pytest.raises(lc0.Lc0ExportError, match="e1h1"):
        lc0.export_lc0(native, tmp_path / "x.pb.gz")
    lc0.export_lc0(native, tmp_path / "x.pb.gz", allow_castling_mismatch=True)
    assert lc0.load_lc0(tmp_path / "x.pb.gz").cfg.policy_castling == "king_takes_rook"


def test_cli_export(tmp_path, capsys):
    from pdx_lightning.cli import main

    save_network(_random_lc0_net(), tmp_path / "net.pt")
    assert main(["export", "lc0", "--model", str(tmp_path / "net.pt"), "--out", str(tmp_path / "net.pb.gz")]) == 0
    assert lc0.load_lc0(tmp_path / "net.pb.gz").cfg.embed_dim == 32
    assert main(["export", "lc0", "--model", "random:tiny", "--out", str(tmp_path / "bad.pb.gz")]) == 2
    assert "activation='silu'" in capsys.readouterr().err


# ---------------------------------------------------------------- bad files


def _net_bytes(tmp_path) -> bytes:
    lc0.export_lc0(_random_lc0_net(), tmp_path / "ok.pb.gz")
    return gzip.decompress((tmp_path / "ok.pb.gz").read_bytes())


def _write(tmp_path, net_or_bytes, name="bad.pb.gz", gz=True):
    data = net_or_bytes if isinstance(net_or_bytes, bytes) else net_or_bytes.SerializeToString()
    (tmp_path / name).write_bytes(gzip.compress(data) if gz else data)
    return tmp_path / name


def test_truncated_and_corrupt_files_are_named_errors(tmp_path):
    good = gzip.compress(_net_bytes(tmp_path))
    (tmp_path / "trunc.pb.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(lc0.Lc0FormatError, match="truncated or corrupt gzip"):
        lc0.load_lc0(tmp_path / "trunc.pb.gz")
    with pytest.raises(ModelLoadError, match="truncated or corrupt gzip"):  # through load_model too
        load_model(str(tmp_path / "trunc.pb.gz"))
    with pytest.raises(lc0.Lc0FormatError):
        lc0.load_lc0(_write(tmp_path, bytes(range(256)) * 40))
    inner_cut = _net_bytes(tmp_path)[:-1000]  # a protobuf cut mid-field, validly gzipped
    with pytest.raises(lc0.Lc0FormatError):
        lc0.load_lc0(_write(tmp_path, inner_cut, "cut.pb.gz"))
    with pytest.raises(lc0.Lc0FormatError, match="magic"):
        lc0.load_lc0(_write(tmp_path, P.Net(magic=0x1234)))


def _edited(tmp_path, edit):
    net = P.Net.FromString(_net_bytes(tmp_path))
    edit(net)
    return _write(tmp_path, net)


def test_other_kinds_of_network_are_refused_with_what_was_found(tmp_path):
    def residual(net):
        net.format.network_format.network = 4
        net.weights.residual.add().conv1.weights.params = b"\0\0"

    with pytest.raises(lc0.Lc0FormatError, match="residual-tower .* NETWORK_SE_WITH_HEADFORMAT"):
        lc0.load_lc0(_edited(tmp_path, residual))
    with pytest.raises(lc0.Lc0FormatError, match="INPUT_112_WITH_CANONICALIZATION_V2 \\(5\\)"):
        lc0.load_lc0(_edited(tmp_path, lambda n: setattr(n.format.network_format, "input", 5)))
    with pytest.raises(lc0.Lc0FormatError, match="FFN activation ACTIVATION_RELU_2"):
        lc0.load_lc0(_edited(tmp_path, lambda n: setattr(n.format.network_format, "ffn_activation", 8)))
    with pytest.raises(lc0.Lc0FormatError, match="missing weights.value_heads.winner.ip2_val_w"):
        lc0.load_lc0(_edited(tmp_path, lambda n: n.weights.value_heads.winner.ClearField("ip2_val_w")))
    with pytest.raises(lc0.Lc0FormatError, match="ONNX"):
        lc0.load_lc0(_edited(tmp_path, lambda n: setattr(n.onnx_model, "model", b"x")))


def test_shape_mismatch_and_bad_values_are_named_errors(tmp_path):
    def short_q(net):
        q = net.weights.encoder[1].mha.q_w
        q.params = q.params[:-2]

    with pytest.raises(lc0.Lc0FormatError, match=r"weights.encoder.1.mha.q_w has 1023 values, expected 32×32"):
        lc0.load_lc0(_edited(tmp_path, short_q))

    def nan_gate(net):
        net.weights.ip_add_gate.CopyFrom(P.Layer(encoding=P.FLOAT32, params=np.full(64 * 32, np.nan, "<f4").tobytes()))

    with pytest.raises(lc0.Lc0FormatError, match="ip_add_gate: FLOAT32 values include NaN"):
        lc0.load_lc0(_edited(tmp_path, nan_gate))

    def odd_bytes(net):
        net.weights.ip_emb_b.params += b"\0"

    with pytest.raises(lc0.Lc0FormatError, match="ip_emb_b"):
        lc0.load_lc0(_edited(tmp_path, odd_bytes))


# ---------------------------------------------------------------- dispatch by body and family


def test_the_format_layer_detects_the_body_and_the_declared_formats(tmp_path):
    net = P.Net.FromString(_net_bytes(tmp_path))
    fmt = F.detect_format(net, "here")
    assert (fmt.body, fmt.n_encoder, fmt.n_residual, fmt.declared) == ("attention", 2, 0, True)
    assert (fmt.input, fmt.policy, fmt.value) == (P.INPUT_CLASSICAL_112_PLANE, P.POLICY_ATTENTION, P.VALUE_WDL)
    assert "POLICY_ATTENTION (3)" in fmt.describe()
    net.weights.residual.add()
    assert F.detect_format(net, "here").body == "residual"
    net.weights.ClearField("residual")
    del net.weights.encoder[:]
    with pytest.raises(lc0.Lc0FormatError, match="here: network format .* 0 encoder layers is not an"):
        F.detect_format(net, "here")
    net.ClearField("weights")
    with pytest.raises(lc0.Lc0FormatError, match="holds no weights"):
        F.detect_format(net, "here")


def test_a_mapping_for_another_body_plugs_into_load_lc0(tmp_path, monkeypatch):
    """Residual towers are read through the dispatch point another mapping plugs into (a file the classic
    mapping cannot hold is refused there; a stand-in mapping for the body then reads it)."""
    donor = _random_lc0_net(seed=3)
    seen = []

    class Residual:  # a stand-in mapping: decodes any residual file into the donor's weights
        BODY, FAMILY = "residual", "chessformer"

        @staticmethod
        def decode(net, fmt, where):
            seen.append((fmt.body, fmt.n_residual, where))
            return donor.cfg, donor.state_dict()

    def residual(net):
        net.format.network_format.network = 4
        net.weights.residual.add().conv1.weights.params = b"\0\0"

    path = _edited(tmp_path, residual)
    with pytest.raises(lc0.Lc0FormatError, match="which the classic family cannot hold"):
        lc0.load_lc0(path)  # the classic mapping (nets/lc0/classic.py) refuses it
    real = lc0.mappings()
    monkeypatch.setattr(lc0, "mappings", lambda: {**real, "residual": Residual})
    model = lc0.load_lc0(path)
    assert seen == [("residual", 1, str(path))] and not model.training
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), donor.state_dict().values()))


def test_export_dispatches_on_the_family(tmp_path):
    class Unmapped(torch.nn.Module):
        cfg = type("Cfg", (), {"family": "toy"})()

    assert lc0.lc0_export_problems(Unmapped.cfg) == [
        "network family 'toy' has no Lc0 mapping (mapped: chessformer, classic)"
    ]
    with pytest.raises(lc0.Lc0ExportError, match="'toy' has no Lc0 mapping"):
        lc0.export_lc0(Unmapped(), tmp_path / "x.pb.gz")
    assert not (tmp_path / "x.pb.gz").exists()
    assert lc0.lc0_export_problems(_random_lc0_net().cfg) == []


def test_policy_1858_maps_are_inverse_and_fill_the_rest():
    p = torch.randn(2, 1858)
    wide = F.policy_from_1858(p, fill=-7.0)
    assert wide.shape == (2, 4288) and torch.equal(F.policy_to_1858(wide), p)
    assert (wide[:, F.ATTN_TO_1858 < 0] == -7.0).all() and int((F.ATTN_TO_1858 < 0).sum()) == 4288 - 1858


def test_write_net_is_atomic_and_reproducible(tmp_path):
    net = attention.encode(_random_lc0_net(), P.FLOAT32)
    a, b = F.write_net(net, tmp_path / "a.pb.gz"), F.write_net(net, tmp_path / "b.pb.gz")
    assert a.read_bytes() == b.read_bytes() and not list(tmp_path.glob("*.tmp"))
    assert F.read_net(a) == net


# ---------------------------------------------------------------- the independent reader


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """Our tiny BT4-style network, exported (LINEAR16: the only encoding chessformer_lens
    reads), then loaded by chessformer_lens and by us."""
    try:
        from chessformer_lens.adapters.lc0 import Lc0Adapter
    except ImportError as e:  # a required test dependency, like Stockfish
        pytest.fail(f"chessformer_lens is a test dependency (pip install 'chessformer_lens==3.1'): {e}")
    path = tmp_path_factory.mktemp("lc0") / "tiny_bt4.pb.gz"
    lc0.export_lc0(_random_lc0_net(), path)
    return lc0.load_lc0(path), Lc0Adapter.load(str(path), device="cpu")


def test_chessformer_lens_reads_our_export_and_agrees_on_100_positions(reader):
    """chessformer_lens decodes the .pb.gz with its own code (no protobuf package), rebuilds the
    net as its BT4Model, encodes positions with its port of Lc0's encoder and indexes moves with
    Lc0's vocabulary (king-takes-rook castling). Policy, WDL and moves-left must match ours."""
    ours, theirs = reader
    boards = _positions()
    x = torch.from_numpy(encode_boards(boards))
    with torch.no_grad():
        out = ours(x)
        policy, wdl = out.policy, out.wdl  # our layout (castling swapped)
        h = ours.body(x)
        internal, mlh = ours.policy_head(h), ours.moves_left_head(h)  # Lc0's layout, plies
        t_policy, t_wdl, t_mlh = theirs.model(x)  # the same planes into both nets
        t_policy_own, t_wdl_own, _ = theirs.model(theirs.tokens(boards))  # their own encoder
    assert _max_abs_diff(wdl, t_wdl) < 1e-4
    assert _max_abs_diff(internal, t_policy) < 1e-4  # all 4,288 logits, Lc0 layout
    assert _max_abs_diff(mlh, t_mlh) < 1e-4
    assert _max_abs_diff(wdl, t_wdl_own) < 1e-4
    seen = set()
    for i, b in enumerate(boards):
        for mv in b.legal_moves:  # each package's own move index
            ours_logit = policy[i, move_to_index(mv, b.turn)]
            assert abs(ours_logit - t_policy_own[i, theirs.vocab.index(b, mv)]) < 1e-4, (b.fen(), mv.uci())
            kind = (
                "castle"
                if b.is_castling(mv)
                else ("under" if mv.promotion not in (None, chess.QUEEN) else "queen" if mv.promotion else None)
            )
            seen.add((kind, b.turn))
    assert {(k, c) for k in ("castle", "under", "queen") for c in (chess.WHITE, chess.BLACK)} <= seen


def test_our_planes_equal_lc0s_encoder_on_the_100_positions(reader):
    boards = _positions()
    assert torch.equal(torch.from_numpy(encode_boards(boards)), reader[1].tokens(boards))


def test_history_fill_after_a_fen_with_en_passant_matches_lc0(reader):
    """Lc0 (encoder.cc) fills history before a FEN root with the double pawn push behind its
    en-passant square undone (checked against the real Lc0 in test_lc0_oracle.py too)."""
    b = chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")
    assert torch.equal(torch.from_numpy(encode_boards([b])), reader[1].tokens([b]))


def test_chessformer_lens_reads_a_t82_style_pe_map_export(reader, tmp_path):
    """The PE_MAP (T82) embedding: chessformer_lens agrees once its one deviation from Lc0 is
    mirrored (it runs T82's encoder LayerNorms with eps 1e-3; Lc0 uses 1e-6 for PE_MAP nets)."""
    adapter = type(reader[1])
    path = tmp_path / "tiny_t82.pb.gz"
    lc0.export_lc0(_random_lc0_net("pe_map", seed=1), path)
    ours = lc0.load_lc0(path)
    as_cfl = Chessformer(replace(ours.cfg, ln_eps=1e-3)).eval()
    as_cfl.load_state_dict(ours.state_dict())
    theirs = adapter.load(str(path), device="cpu")
    x = torch.from_numpy(encode_boards(_positions()[:20]))
    with torch.no_grad():
        h = as_cfl.body(x)
        t_policy, t_wdl, t_mlh = theirs.model(x)
        assert _max_abs_diff(as_cfl.policy_head(h), t_policy) < 1e-4
        assert _max_abs_diff(as_cfl.value_head(h), t_wdl) < 1e-4
        assert _max_abs_diff(as_cfl.moves_left_head(h), t_mlh) < 1e-4
