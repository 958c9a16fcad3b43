"""The private Lightning API pdx uses: all present in the installed Lightning, read correctly, and a
Lightning without one refused at start in one line."""

from __future__ import annotations

import csv
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from pdx_lightning.runtime import lightning_internals as internals
from pdx_lightning.runtime.lightning_internals import LightningInternalsError


@pytest.fixture(autouse=True)
def _fresh_check():
    internals.check_lightning.cache_clear()
    yield
    internals.check_lightning.cache_clear()


def test_the_installed_lightning_has_every_private_piece_and_is_a_written_for_version():
    assert internals.missing_private_uses() == []
    lo, hi = internals.WRITTEN_FOR
    assert lo <= internals.version_tuple(L.__version__) <= hi
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on a written-for version
        internals.check_lightning()


def test_version_tuple():
    assert internals.version_tuple("2.6.6") == (2, 6)
    assert internals.version_tuple("2.10.0rc1") == (2, 10)
    assert internals.version_tuple("3") == (3, 0)
    assert internals.version_tuple("not a version") == (0, 0)


def test_another_version_with_every_piece_runs_with_one_warning():
    with pytest.warns(UserWarning, match=r"lightning 2\.99\.0: pdx was written for 2\.4-2\.6"):
        internals.check_lightning("2.99.0")


def test_a_lightning_that_no_longer_calls_parse_ckpt_path_is_refused_in_one_line(monkeypatch):
    # the silent failure the check exists for: the override would never run
    monkeypatch.delattr(LightningCLI, "_parse_ckpt_path")
    with pytest.raises(LightningInternalsError) as e:
        internals.check_lightning()
    msg = str(e.value)
    assert "\n" not in msg and "LightningCLI._parse_ckpt_path" in msg and "pip install 'lightning>=2.4,<2.7'" in msg


def test_the_cli_refuses_to_start_on_such_a_lightning(monkeypatch):
    from pdx_lightning.runtime.lightning_cli import PDXLightningCLI

    monkeypatch.setattr(internals, "missing_private_uses", lambda: ["_LoggerConnector.metrics['log']"])
    with pytest.raises(LightningInternalsError, match=r"_LoggerConnector\.metrics\['log'\]"):
        PDXLightningCLI(L.LightningModule, args=["fit"], run=True)


class _Logs(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.seen: list = []

    def training_step(self, batch, batch_idx):
        loss = (self.w - 1.0).pow(2).sum()
        self.log("loss", loss)
        self.log("bar_only", 5.0, logger=False, prog_bar=True)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        # where LogContinuity reads them: after the step, before Lightning hands them to the loggers
        self.seen.append((internals.logger_step(self.trainer), internals.pending_log_metrics(self.trainer)))

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.zeros(3, 1), batch_size=1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.25)


def test_pending_metrics_and_logger_step_are_the_ones_the_loggers_then_get(tmp_path):
    logger = CSVLogger(tmp_path)
    model = _Logs()
    trainer = L.Trainer(
        max_steps=3,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model)
    steps = [s for s, _ in model.seen]
    assert steps == [0, 1, 2]  # the step before the loggers are told
    # w: 0 -> 0.5 -> 0.75; the loss of each step is (w - 1)^2 before its update
    assert [m["loss"] for _, m in model.seen] == pytest.approx([1.0, 0.25, 0.0625])
    assert all("bar_only" not in m for _, m in model.seen)  # only what goes to the loggers
    with open(tmp_path / "lightning_logs" / "version_0" / "metrics.csv", newline="") as f:
        logged = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f) if r.get("loss")}
    assert logged == {s: m["loss"] for s, m in model.seen}  # the loggers got exactly these


def test_pin_logger_version_only_before_the_logger_chose_one(tmp_path):
    tb = TensorBoardLogger(tmp_path)
    assert internals.pin_logger_version(tb, 7) and tb.version == 7
    assert not internals.pin_logger_version(tb, 8) and tb.version == 7  # already chosen
    explicit = CSVLogger(tmp_path, version=3)
    assert not internals.pin_logger_version(explicit, 9) and explicit.version == 3  # an explicit version wins
    assert not internals.pin_logger_version(CSVLogger(tmp_path), None)
    assert not internals.pin_logger_version(object(), 1)  # no version to pin


def test_drop_hparam_drops_it_from_the_logged_initial_hyperparameters_too():
    class M(L.LightningModule):
        def __init__(self, a=1, _instantiator="x"):
            super().__init__()
            self.save_hyperparameters()

    m = M()
    internals.drop_hparam(m, "_instantiator")
    assert dict(m.hparams) == {"a": 1} and dict(m.hparams_initial) == {"a": 1}
