"""Callbacks under a real Trainer on the tiny preset."""

from types import SimpleNamespace

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import CSVLogger

from pdx_lightning.callbacks import BetaSchedule, EMAUpdate, PuzzleValidation
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import SETTING_NAMES, PDXSettings

torch.set_num_threads(1)
FIXTURES = "tests/fixtures"


def module(**kw):
    """A tiny PDXModule; ``kw`` naming a ``PDXSettings`` field go to ``algorithm``, the rest to the module."""
    sp = SelfPlayConfig(n_games=4, opening_max_moves=2, max_plies=20)
    algorithm = PDXSettings(**{"micro_batch": 4, **{k: kw.pop(k) for k in list(kw) if k in SETTING_NAMES}})
    return PDXModule(base="random:tiny", algorithm=algorithm, selfplay=sp, warmup_steps=1, **kw)


def fit(m, steps, callbacks, logger=False):
    L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=logger,
        enable_checkpointing=False,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    ).fit(m)


def test_ema_update_matches_hand_formula():
    cb = EMAUpdate(decay=0.9)
    m = module()
    ema0 = [p.clone() for p in m.ema.parameters()]
    for p in m.online.parameters():
        p.data.add_(1.0)
    m.param_version = 1  # as after the training step's optimizer step, which the callback follows
    cb.on_train_batch_end(SimpleNamespace(global_step=1), m, None, None, 0)
    for e0, e, o in zip(ema0, m.ema.parameters(), m.online.parameters()):
        torch.testing.assert_close(e, 0.9 * e0 + 0.1 * o)
    assert m.ema_version == 1  # the step it followed, stamped
    with pytest.raises(ValueError):
        EMAUpdate(decay=1.5)


@pytest.mark.parametrize(
    "kind,expect", [("constant", [0.5, 0.5, 0.5]), ("linear", [0.5, 0.25, 0.0]), ("cosine", [0.5, 0.25, 0.0])]
)
def test_beta_schedule_values(kind, expect):
    s = BetaSchedule(kind, start=0.5, end=0.0, steps=2)
    assert [pytest.approx(s.value(t, 0.5)) for t in range(3)] == expect


def test_beta_schedule_drives_the_module_beta():
    m = module(beta=0.5)
    seen = []

    class Probe(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, *a):
            seen.append(pl_module.beta)

    fit(m, 3, [BetaSchedule("linear", end=0.0, steps=2), Probe()])
    assert seen == pytest.approx([0.5, 0.25, 0.0])


def test_puzzle_validation_scores_the_ema_and_logs(tmp_path):
    m = module()
    cb = PuzzleValidation(
        suite=f"{FIXTURES}/lichess_sample.csv",
        mates=[f"{FIXTURES}/generated_altmoves.csv"],
        every_n_steps=2,
        sample=None,
    )
    calls = []
    import pdx_lightning.evaluation.puzzle_scoring as P

    orig = P.validation_sums  # the scorer PuzzleValidation.score calls (this rank's share of the suites)
    P_eval = lambda model, *a, **k: (calls.append(model), orig(model, *a, **k))[1]  # noqa: E731
    P.validation_sums = P_eval
    try:
        fit(m, 3, [cb], logger=CSVLogger(tmp_path))
    finally:
        P.validation_sums = orig
    assert [s for s, _ in cb.history] == [0, 2, 3]
    assert len(calls) == 3 and all(model is m.ema for model in calls)
    keys = set(cb.history[-1][1])
    assert {"puzzles/acc", "puzzles/p_star_geo", "mates/acc_1"} <= keys
    assert 0.0 <= cb.history[-1][1]["puzzles/acc"] <= 1.0
    with open(next(tmp_path.rglob("metrics.csv"))) as f:
        assert "puzzles/acc" in f.readline()


def test_puzzle_validation_of_files_reads_exactly_those_files_and_scores_a_model():
    from pdx_lightning.evaluation.suite import load_suite
    from tests.helpers import evaluate_for_validation

    cb = PuzzleValidation.of_files(None, [f"{FIXTURES}/generated_altmoves.csv"], sample=None, micro_batch=8)
    assert cb.suite_path is None  # no bundled tactics slipped in
    batches = list(cb.val_dataloader())
    assert len(batches) == 1 and batches[0] is cb.load() and not batches[0].puzzles
    m = module()
    with torch.no_grad():
        for p in m.ema.parameters():
            p.add_(0.05 * torch.randn_like(p))
    got = cb.score(m.ema, batches[0])
    mates = load_suite([f"{FIXTURES}/generated_altmoves.csv"]).puzzles
    assert got == pytest.approx(evaluate_for_validation(m.ema, [], mates), rel=1e-6)
    assert got != pytest.approx(evaluate_for_validation(m.online, [], mates), rel=1e-6)
    assert set(got) and all(k.startswith("mates/") for k in got)


def test_the_modules_validation_loop_scores_the_ema_through_puzzle_validation(monkeypatch):
    """PDXModule's val_suite/val_mates reach the scorer only through PuzzleValidation."""
    import pdx_lightning.evaluation.puzzle_scoring as P

    m = module(val_suite=f"{FIXTURES}/lichess_sample.csv", val_mates=[f"{FIXTURES}/generated_altmoves.csv"])
    assert isinstance(m.puzzle_validation, PuzzleValidation)
    calls, orig = [], P.validation_sums  # the scorer PuzzleValidation.score calls

    def recording(model, *a, **k):
        calls.append(model)
        return orig(model, *a, **k)

    monkeypatch.setattr(P, "validation_sums", recording)
    out = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False).validate(
        m, verbose=False
    )[0]
    assert calls == [m.ema]
    assert {"puzzles/acc", "puzzles/p_star_geo", "puzzles/nll", "mates/acc_1"} <= set(out)
    assert 0.0 <= out["puzzles/acc"] <= 1.0 and out["puzzles/nll"] > 0
