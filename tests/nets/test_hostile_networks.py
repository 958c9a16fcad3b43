"""Hostile network files: Lc0 .pb.gz and pdx .pt are refused before they allocate (issue 20).

Each case asserts the named refusal (a UserError, so ``pdx`` prints one line) and, for the ones
that used to allocate, the peak memory of a fresh interpreter doing the load, above a baseline
interpreter that only imports the same modules (VmHWM). Bounds are shrunk through the
environment variables so the bombs stay small and the tests fast.
"""

from __future__ import annotations

import gzip
import io
import zipfile

import numpy as np
import pytest
import torch

from hostile_files import GiB, MiB, baseline_peak_mb, gzip_of_zeros, refusal_peak_mb, zip_bomb_member
from pdx_lightning.errors import UserError
from pdx_lightning.nets import ModelLoadError, lc0, load_model, save_network
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig
from pdx_lightning.nets.files import NetworkFileLimitError
from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.lc0.format import MAX_TOWER, Lc0FileLimitError, read_net

IMPORTS = "from pdx_lightning.nets import load_model, ModelLoadError"


@pytest.fixture(scope="module")
def baseline() -> float:
    return baseline_peak_mb(IMPORTS + "\nload_model('random:tiny')")


@pytest.fixture(scope="module")
def net_bytes(tmp_path_factory) -> bytes:
    """A tiny Lc0-expressible network, exported: the seed every crafted .pb.gz starts from."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("lc0") / "tiny.pb.gz"
    lc0.export_lc0(Chessformer(lc0.lc0_style(ModelConfig.from_name("tiny"))), path)
    return gzip.decompress(path.read_bytes())


def _write_net(path, net) -> str:
    path.write_bytes(gzip.compress(net.SerializeToString(), 1))
    return str(path)


def _refused(call: str, env: dict | None = None) -> tuple[float, str]:
    return refusal_peak_mb(call, "ModelLoadError", env, IMPORTS)


def test_the_issue_case_a_gzip_bomb_is_refused_quickly_in_bounded_memory(tmp_path, baseline):
    bomb = gzip_of_zeros(tmp_path / "bomb.pb.gz", 4 * GiB)  # 4 GiB of zeros in ~4 MB
    assert bomb.stat().st_size < 5 * MiB
    peak, msg = _refused(f"load_model({str(bomb)!r})")
    assert "bomb.pb.gz" in msg and "expands more than 200x" in msg and "PDX_MAX_COMPRESSION_RATIO" in msg
    assert peak - baseline < 64, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"  # was 8.7 GB


def test_an_incompressible_net_past_the_size_cap_is_refused_at_the_cap(tmp_path, baseline):
    p = tmp_path / "big.pb.gz"
    p.write_bytes(gzip.compress(np.random.default_rng(0).bytes(96 * MiB), 1))
    peak, msg = _refused(f"load_model({str(p)!r})", env={"PDX_MAX_NET_BYTES": "32M"})
    assert "decompresses to more than the limit (limit 32.0 MiB)" in msg and "PDX_MAX_NET_BYTES=64M" in msg
    assert peak - baseline < 32 + 48, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"
    raw = tmp_path / "big.pb"  # uncompressed: refused by its size
    raw.write_bytes(bytes(2 * MiB))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDX_MAX_NET_BYTES", "1M")
        with pytest.raises(Lc0FileLimitError, match=r"big.pb: is 2.0 MiB .*limit 1.0 MiB"):
            read_net(raw)


def test_a_layer_with_a_huge_blob_is_refused_before_it_is_decoded(tmp_path, net_bytes, baseline):
    net = P.Net.FromString(net_bytes)
    net.weights.encoder[0].mha.q_w.params = np.random.default_rng(1).bytes(48 * MiB)  # 24M values
    path = _write_net(tmp_path / "fat.pb.gz", net)
    peak, msg = _refused(f"load_model({path!r})")
    assert "weights.encoder.0.mha.q_w has 25165824 values, expected 32×32 = 1024" in msg
    # the file's 48 MiB is held twice (bytes, then parsed); decoding it would add 4x more (float64)
    assert peak - baseline < 2 * 48 + 60, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_giant_declared_dimensions_are_refused_on_the_meta_device(tmp_path, net_bytes, baseline):
    net = P.Net.FromString(net_bytes)
    d = 1 << 18  # embedding width 262,144: a 2e11-value net
    for layer, n in (
        (net.weights.ip_emb_b, d),
        (net.weights.encoder[0].mha.q_b, d),
        (net.weights.encoder[0].mha.smolgen.compress, 4 * d),
    ):
        layer.params = bytes(2 * n)
    path = _write_net(tmp_path / "giant.pb.gz", net)
    peak, msg = _refused(f"load_model({path!r})")
    assert "giant.pb.gz" in msg and "values, expected" in msg
    assert peak - baseline < 100, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_absurdly_deep_towers_are_refused_before_building(tmp_path, net_bytes):
    net = P.Net.FromString(net_bytes)
    for _ in range(MAX_TOWER + 1 - len(net.weights.encoder)):
        net.weights.encoder.add()  # 2 bytes each on disk
    with pytest.raises(Lc0FileLimitError, match=r"declares 513 encoder layers"):
        lc0.load_lc0(_write_net(tmp_path / "deep.pb.gz", net))


def test_truncated_wrong_magic_and_garbage_nets_are_named_user_errors(tmp_path, net_bytes):
    good = gzip.compress(net_bytes)
    cases = {
        "trunc.pb.gz": (good[: len(good) // 2], "truncated or corrupt gzip"),
        "magic.pb.gz": (gzip.compress(P.Net(magic=0x1234).SerializeToString()), "magic 0x1234"),
        "junk.pb.gz": (b"\x1f\x8b" + bytes(range(256)) * 8, "corrupt gzip"),
        "proto.pb.gz": (bytes(range(256)) * 8, "not a readable Lc0 protobuf"),
    }  # not gzipped
    for name, (data, why) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ModelLoadError, match=why) as e:
            load_model(str(tmp_path / name))
        assert isinstance(e.value, UserError) and name in str(e.value) and "\n" not in str(e.value)


# ---------------------------------------------------------------- .pt network files


@pytest.fixture(scope="module")
def pt_blob(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("pt") / "tiny.pt"
    save_network(load_model("random:tiny"), path)
    return torch.load(path, weights_only=True)


def test_a_pt_zip_bomb_is_refused_before_inflating(tmp_path, pt_blob, baseline):
    ok = tmp_path / "ok.pt"
    torch.save(pt_blob, ok)
    with zipfile.ZipFile(ok) as zf:
        others = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("data/0")}
        name = next(i.filename for i in zf.infolist() if i.filename.endswith("data/0"))
    bomb = zip_bomb_member(tmp_path / "bomb.pt", name, 1 << 30, others=others)  # 1 GiB in ~1 MB
    assert bomb.stat().st_size < 2 * MiB
    peak, msg = _refused(f"load_model({str(bomb)!r})")
    assert "bomb.pt" in msg and "a zip bomb" in msg and "PDX_MAX_COMPRESSION_RATIO" in msg
    assert peak - baseline < 64, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_a_pt_larger_than_the_cap_is_refused_by_its_declared_sizes(tmp_path, pt_blob):
    p = tmp_path / "big.pt"
    torch.save(pt_blob, p)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PDX_MAX_CHECKPOINT_BYTES", "100K")
        with pytest.raises(
            NetworkFileLimitError,
            match=r"big.pt: declares .* \(limit 100.0 KiB\).*"
            r"PDX_MAX_CHECKPOINT_BYTES=200K",
        ):
            load_model(str(p))


def test_an_expanded_tensor_is_refused_before_isfinite_allocates_it(tmp_path, pt_blob, baseline):
    blob = dict(pt_blob, state_dict=dict(pt_blob["state_dict"]))
    blob["state_dict"]["policy_head.extra"] = torch.zeros(1).expand(50_000, 50_000)  # 10 GB logical
    p = tmp_path / "expanded.pt"
    torch.save(blob, p)
    assert p.stat().st_size < 4 * MiB
    peak, msg = _refused(f"load_model({str(p)!r})")
    assert "expanded view" in msg and "(50000, 50000)" in msg
    assert peak - baseline < 64, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def _with_numel(src, dst, numel: int) -> None:
    """``src`` rewritten with its first storage record claiming ``numel`` elements (BINLONG)."""
    import struct

    with zipfile.ZipFile(src) as zf:
        members = [(i.filename, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(dst, "w") as out:
        for name, member in members:
            data = member
            if name.endswith("data.pkl"):
                i = data.index(b"X\x03\x00\x00\x00cpu") + 8
                i += {b"q": 2, b"r": 5, b"\x94": 1}.get(data[i : i + 1], 0)
                width = {b"K": 2, b"M": 3, b"J": 5}[data[i : i + 1]]
                data = data[:i] + b"\x8a\x08" + struct.pack("<q", numel) + data[i + width :]
            out.writestr(name, data)


def test_a_storage_record_claiming_more_than_it_holds_is_refused(tmp_path, pt_blob):
    ok = tmp_path / "ok.pt"
    torch.save(pt_blob, ok)
    for numel, why in (
        (1 << 40, r"storage claims 4096.0 GiB \(limit 8.0 GiB\)"),  # refused by pdx
        (1 << 26, "record size"),
    ):  # by torch's reader
        p = tmp_path / f"liar{numel}.pt"
        _with_numel(ok, p, numel)
        with pytest.raises(ModelLoadError, match=why) as e:
            load_model(str(p))
        assert isinstance(e.value, UserError)


def test_a_config_claiming_a_giant_network_is_refused_before_allocating(tmp_path, pt_blob, baseline):
    blob = dict(pt_blob, config=dict(pt_blob["config"], embed_dim=1 << 20))
    p = tmp_path / "huge.pt"
    torch.save(blob, p)
    peak, msg = _refused(f"load_model({str(p)!r})")
    assert "do not fit the stored chessformer config" in msg
    assert peak - baseline < 64, f"peak {peak:.0f} MB vs baseline {baseline:.0f} MB"


def test_legacy_and_non_zip_pt_files_are_named_errors(tmp_path, pt_blob):
    p = tmp_path / "legacy.pt"
    torch.save(pt_blob, p, _use_new_zipfile_serialization=False)  # its reader allocates declared sizes
    with pytest.raises(NetworkFileLimitError, match="not a readable PyTorch file .*since PyTorch 1.6"):
        load_model(str(p))
    buf = io.BytesIO()
    torch.save(pt_blob, buf)
    (tmp_path / "cut.pt").write_bytes(buf.getvalue()[:5000])
    with pytest.raises(NetworkFileLimitError, match="cut.pt: not a readable PyTorch file"):
        load_model(str(tmp_path / "cut.pt"))
