import pytest
import torch

from pdx_lightning.chesscore.moves import POLICY_SIZE, legal_mask
from pdx_lightning.chesscore.policy import masked_log_softmax
from pdx_lightning.nets import ModelLoadError, load_model, save_network
from pdx_lightning.nets.chessformer import PRESETS, Chessformer, ModelConfig, count_params

# Stated parameter counts (the README's preset table quotes these).
EXPECTED_PARAMS = {"tiny": 115_859, "small": 468_131, "bt4": 184_958_851}


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds_with_its_stated_parameter_count(name):
    cfg = ModelConfig.from_name(name)
    assert count_params(cfg) == EXPECTED_PARAMS[name]
    with torch.device("meta"):  # shapes only: bt4 is never materialized here
        out = Chessformer(cfg)(torch.empty(2, 112, 8, 8))
    assert out.policy.shape == (2, POLICY_SIZE) and out.wdl.shape == (2, 3)


def test_bt4_matches_the_paper_dimensions():
    cfg = ModelConfig.from_name("bt4")
    assert (cfg.embed_dim, cfg.n_layers, cfg.n_heads, cfg.ffn_dim) == (1024, 15, 32, 1536)


def test_bad_configs_are_rejected():
    with pytest.raises(ValueError, match="divisible"):
        ModelConfig(embed_dim=30, n_heads=4)
    with pytest.raises(KeyError, match="presets"):
        ModelConfig.from_name("huge")


def test_masked_policy_puts_zero_mass_on_illegal_moves():
    import chess

    from pdx_lightning.chesscore.encoding import encode_boards

    model = load_model("random:tiny")
    boards = [chess.Board(), chess.Board("8/P6k/8/8/8/8/7K/8 w - - 0 1")]
    out = model(torch.from_numpy(encode_boards(boards)))
    mask = legal_mask(boards)
    p = masked_log_softmax(out.policy, mask).exp()
    assert torch.all(p[~mask] == 0)
    torch.testing.assert_close(p.sum(1), torch.ones(2))


def test_param_groups_partition_the_parameters():
    model = Chessformer(ModelConfig.from_name("tiny"))
    groups = model.param_groups()
    ids = [id(p) for ps in groups.values() for p in ps]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    assert set(groups) == {"backbone", "final_block", "policy_head", "value_head"}


def test_save_and_load_network_round_trip(tmp_path):
    model = load_model("random:tiny:3")
    save_network(model, tmp_path / "net.pt", meta={"note": "test"})
    again = load_model(str(tmp_path / "net.pt"))
    x = torch.randn(2, 112, 8, 8)
    torch.testing.assert_close(model(x).policy, again(x).policy)


def test_loading_refuses_pickled_payloads(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"format": "pdx_network/1", "payload": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(ModelLoadError, match="weights_only"):
        load_model(str(tmp_path / "evil.pt"))


def test_wrong_shape_weights_are_a_clear_error(tmp_path):
    model = load_model("random:tiny")
    save_network(model, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    blob["config"]["embed_dim"] = 64
    blob["config"]["n_heads"] = 2
    torch.save(blob, tmp_path / "bad.pt")
    with pytest.raises(ModelLoadError, match="do not fit"):
        load_model(str(tmp_path / "bad.pt"))
