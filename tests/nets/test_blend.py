"""Network arithmetic (issue 30 item 6): θ_α = (1 − α)·θ_A + α·θ_B, by hand, on real tiny networks of
both families, through ``pdx export network`` and ``pdx export lc0`` (files that load, evaluate and play in
``pdx arena``), and the one-line refusals."""

from __future__ import annotations

import chess
import pytest
import torch

from pdx_lightning.cli import main as pdx
from pdx_lightning.nets import load_model
from pdx_lightning.nets.blend import NetworkBlendError, blend_networks, blend_state_dicts
from pdx_lightning.nets.inference import evaluate_boards

torch.set_num_threads(1)
ALPHAS = (0.0, 1.0, 0.5, 2.0, -1.0)


def _boards():
    b = chess.Board()
    out = [b.copy()]
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5"):
        b.push_uci(uci)
        out.append(b.copy())
    return out


@pytest.mark.parametrize(
    "alpha, expect",
    [
        (0.0, [1.0, 2.0, -4.0]),
        (1.0, [3.0, -2.0, -4.0]),
        (0.5, [2.0, 0.0, -4.0]),
        (2.0, [5.0, -6.0, -4.0]),
        (-1.0, [-1.0, 6.0, -4.0]),
    ],
)
def test_blend_state_dicts_hand(alpha, expect):
    # A = (1, 2, −4), B = (3, −2, −4): (1 − α)A + αB; α = 2 is 2B − A = (5, −6, −4), α = −1 is
    # 2A − B = (−1, 6, −4); where A and B agree (−4) every α keeps the value exactly
    a = {"w": torch.tensor([1.0, 2.0, -4.0]), "index": torch.tensor([3, 1, 2])}
    b = {"w": torch.tensor([3.0, -2.0, -4.0]), "index": torch.tensor([3, 1, 2])}
    out = blend_state_dicts(a, b, alpha)
    assert out["w"].tolist() == expect  # exact: these are float32 sums
    assert torch.equal(out["index"], a["index"]) and out["index"].dtype == torch.int64
    assert a["w"].tolist() == [1.0, 2.0, -4.0]  # inputs untouched


@pytest.mark.parametrize("preset", ["tiny", "classic-tiny"])
def test_blend_networks_of_each_family_is_the_interpolation_of_every_tensor_and_evaluates(preset):
    a, b = load_model(f"random:{preset}:0"), load_model(f"random:{preset}:1")
    sa, sb = a.state_dict(), b.state_dict()
    boards = _boards()
    for alpha in ALPHAS:
        net = blend_networks(a, b, alpha)
        assert not net.training and net is not a
        for key, t in net.state_dict().items():
            if t.is_floating_point():
                torch.testing.assert_close(t, (1 - alpha) * sa[key] + alpha * sb[key], rtol=1e-6, atol=1e-6)
        logp, wdl = evaluate_boards(net, boards)
        assert torch.isfinite(wdl).all() and torch.allclose(wdl.sum(1), torch.ones(len(boards)))
        if alpha in (0.0, 1.0):  # the ends are the networks themselves, bit for bit
            end = a if alpha == 0.0 else b
            assert all(torch.equal(t, end.state_dict()[k]) for k, t in net.state_dict().items())
            assert torch.equal(logp, evaluate_boards(end, boards)[0])
    assert all(torch.equal(t, sa[k]) for k, t in a.state_dict().items())  # A and B left as they were
    # the midpoint's outputs are neither end's
    mid = evaluate_boards(blend_networks(a, b, 0.5), boards)[1]
    assert (mid - evaluate_boards(a, boards)[1]).abs().max() > 1e-4
    assert (mid - evaluate_boards(b, boards)[1]).abs().max() > 1e-4


def test_mismatched_networks_are_refused_naming_the_first_difference():
    tiny, small = load_model("random:tiny"), load_model("random:small")
    with pytest.raises(NetworkBlendError, match=r"^tensor '[\w.]+' differs in shape: A \(\d+(, \d+)*\), B \(\d+"):
        blend_networks(tiny, small, 0.5)
    first = next(k for k, v in tiny.state_dict().items() if v.shape != small.state_dict()[k].shape)
    with pytest.raises(NetworkBlendError, match=f"tensor '{first}' differs"):
        blend_networks(tiny, small, 0.5)
    with pytest.raises(NetworkBlendError, match="different families: A is chessformer, B is classic"):
        blend_networks(tiny, load_model("random:classic-tiny"), 0.5)
    with pytest.raises(NetworkBlendError, match="'extra' of B .* missing in A"):
        blend_state_dicts({"w": torch.zeros(2)}, {"w": torch.zeros(2), "extra": torch.zeros(1)}, 0.5)
    with pytest.raises(NetworkBlendError, match="non-floating tensor 'i'"):
        blend_state_dicts({"i": torch.tensor([1])}, {"i": torch.tensor([2])}, 0.5)
    with pytest.raises(NetworkBlendError, match="finite"):
        blend_state_dicts({"w": torch.zeros(2)}, {"w": torch.zeros(2)}, float("nan"))
    # same tensors, another computation: the configuration field is named
    relu = load_model("random:classic-tiny")
    relu.cfg = type(relu.cfg)(**{**relu.cfg.to_dict(), "activation": "mish"})
    with pytest.raises(NetworkBlendError, match="configurations differ in 'activation': A 'relu', B 'mish'"):
        blend_networks(load_model("random:classic-tiny:1"), relu, 0.5)


def test_export_network_writes_a_blend_that_loads_evaluates_and_plays_in_the_arena(tmp_path, capsys):
    a, b = load_model("random:tiny:0"), load_model("random:tiny:1")
    boards = _boards()
    ladder = []
    for alpha in (0.5, 2.0):
        out = tmp_path / f"blend_{alpha}.pt"
        assert (
            pdx(
                [
                    "export",
                    "network",
                    "--model",
                    "random:tiny:0",
                    "--blend",
                    "random:tiny:1",
                    "--alpha",
                    str(alpha),
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        assert f"wrote {out}" in capsys.readouterr().out
        net = load_model(str(out))
        expect = blend_networks(a, b, alpha)
        assert all(torch.equal(t, expect.state_dict()[k]) for k, t in net.state_dict().items())  # lossless
        assert torch.equal(evaluate_boards(net, boards)[0], evaluate_boards(expect, boards)[0])
        assert torch.load(out, weights_only=True)["meta"] == {
            "source": "random:tiny:0",
            "weights": "ema",
            "blend": "random:tiny:1",
            "alpha": alpha,
        }
        ladder.append(str(out))
    rc = pdx(
        [
            "arena",
            "--model",
            "random:tiny:0",
            *(a for p in ladder for a in ("--model", p)),
            "--games",
            "2",
            "--max-plies",
            "16",
            "--quiet",
            "--json",
            str(tmp_path / "arena.json"),
        ]
    )
    assert rc == 0 and (tmp_path / "arena.json").stat().st_size > 0


def test_export_lc0_writes_a_blend_lc0_reads_back_exactly(tmp_path, capsys):
    out = tmp_path / "blend.pb.gz"
    assert (
        pdx(
            [
                "export",
                "lc0",
                "--model",
                "random:classic-tiny:0",
                "--blend",
                "random:classic-tiny:1",
                "--alpha",
                "-1",
                "--encoding",
                "float32",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "(1 - α)·A + α·B, A = random:classic-tiny:0, B = random:classic-tiny:1, α = -1" in printed
    expect = blend_networks(load_model("random:classic-tiny:0"), load_model("random:classic-tiny:1"), -1.0)
    again = load_model(str(out))
    assert all(torch.equal(t, expect.state_dict()[k]) for k, t in again.state_dict().items())
    boards = _boards()
    assert torch.equal(evaluate_boards(again, boards)[1], evaluate_boards(expect, boards)[1])


@pytest.mark.parametrize("tool", ["lc0", "network"])
def test_export_refusals_are_one_line(tmp_path, capsys, tool):
    out = tmp_path / ("x.pb.gz" if tool == "lc0" else "x.pt")
    rc = pdx(["export", tool, "--model", "random:tiny", "--blend", "random:small", "--alpha", "0.5", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and not out.exists(), err
    assert err.startswith(f"pdx export {tool}: random:tiny + random:small: tensor '") and "differs in shape" in err
    rc = pdx(["export", tool, "--model", "random:tiny", "--blend", "random:tiny:1", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "--blend B and --alpha go together" in err and len(err.splitlines()) == 1
