"""Line 15 of Algorithm 1 as the EMAUpdate callback in a real PDX fit: registered by default (first),
replaceable by the user's own subclass, exactly once per optimizer step, before the next batch and
before that step's checkpoint."""

from __future__ import annotations

import copy

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from pdx_lightning.callbacks import EMAUpdate, PuzzleValidation
from pdx_lightning.callbacks.ema import EMATargetError
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings
from pdx_lightning.runtime.optim import ema_update

torch.set_num_threads(1)


def module(**kw) -> PDXModule:
    sp = SelfPlayConfig(n_games=4, opening_max_moves=1, max_plies=12, seed=2)
    return PDXModule(base="random:tiny", selfplay=sp, warmup_steps=1, algorithm=PDXSettings(micro_batch=4, **kw))


def trainer(steps: int, callbacks: list, **kw) -> L.Trainer:
    return L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=bool(kw.pop("checkpoints", False)),
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
        **kw,
    )


class Recorder(L.Callback):
    """At each batch start: the EMA as it is when the next batch is begun, and the versions."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, int, list[torch.Tensor], list[torch.Tensor]]] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.seen.append(
            (
                trainer.global_step,
                pl_module.param_version,
                pl_module.ema_version,
                [p.detach().clone() for p in pl_module.ema.parameters()],
                [p.detach().clone() for p in pl_module.online.parameters()],
            )
        )


def test_a_pdx_fit_registers_ema_update_first_and_moves_the_ema_once_per_step_before_the_next_batch():
    m = module(ema_decay=0.9)
    rec, puzzles = Recorder(), PuzzleValidation(sample=4, every_n_steps=1, mates=[])
    t = trainer(3, [rec, puzzles])
    t.fit(m)
    names = [type(cb).__name__ for cb in t.callbacks]
    assert names[0] == "EMAUpdate" and names.count("EMAUpdate") == 1, names  # first: the others see θ̄ moved
    assert names.index("EMAUpdate") < names.index("PuzzleValidation")
    assert m.param_version == m.ema_version == 3
    # zero staleness: when batch t+1 is begun, θ̄ = α θ̄_t + (1 − α) θ_{t+1}, exactly one update per step
    for (_, pv0, ev0, ema0, _), (_, pv1, ev1, ema1, online1) in zip(rec.seen, rec.seen[1:]):
        assert (pv1, ev1) == (pv0 + 1, ev0 + 1) == (pv1, pv1)
        expect = copy.deepcopy(m.ema)
        with torch.no_grad():
            for p, e in zip(expect.parameters(), ema0):
                p.copy_(e)
        src = copy.deepcopy(m.online)
        with torch.no_grad():
            for p, o in zip(src.parameters(), online1):
                p.copy_(o)
        ema_update(expect, src, 0.9)
        for a, b in zip(expect.parameters(), ema1):
            assert torch.equal(a, b)
    # the puzzle scores of step s were made with the EMA after step s's update (it runs after EMAUpdate)
    assert [s for s, _ in puzzles.history] == [0, 1, 2, 3]


def test_the_ema_decay_of_the_settings_is_the_callbacks_default():
    m = module(ema_decay=0.5)
    assert EMAUpdate().decay_for(m) == 0.5
    assert EMAUpdate(decay=0.25).decay_for(m) == 0.25


@pytest.mark.parametrize("bad", [-0.01, 1.0000001, float("nan"), float("inf"), "0.5", True])
def test_the_four_inputs_of_the_ema_decay_refuse_the_same_values(bad):
    # one range (EMA_DECAY_RANGE), four boundaries, each message naming its input
    from pdx_lightning.argtypes import SettingError
    from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings, SearchedSettingsError
    from pdx_lightning.rl.settings import SettingsError
    from pdx_lightning.runtime.optim import EMA_DECAY_RANGE

    assert EMA_DECAY_RANGE == (0.0, 1.0)
    with pytest.raises(SettingError, match=r"^EMAUpdate\(decay=\): must be"):
        EMAUpdate(decay=bad)
    # one wording (argtypes.check_number) for every settings class
    with pytest.raises(
        SettingsError, match=r"^model.algorithm.ema_decay \(.*\): must be a finite number >= 0 and <= 1"
    ):
        PDXSettings(ema_decay=bad)
    with pytest.raises(
        SearchedSettingsError, match="^model.algorithm.ema_decay: must be a finite number >= 0 and <= 1"
    ):
        SearchedSelfPlaySettings(ema_decay=bad)  # the searched module's model.algorithm
    from pdx_lightning.runtime.optim import check_ema_decay

    with pytest.raises(SettingError, match="^--model.ema_decay: must be"):
        check_ema_decay(bad, "--model.ema_decay")  # what PuzzleControl calls
    for good in EMA_DECAY_RANGE:
        assert EMAUpdate(decay=good).decay == good and PDXSettings(ema_decay=good).ema_decay == good
        assert SearchedSelfPlaySettings(ema_decay=good).ema_decay == good


class EveryOtherStep(EMAUpdate):
    """A user's own rule: θ̄ follows θ only on even steps (α = 0: a copy)."""

    def __init__(self) -> None:
        super().__init__(decay=0.0)
        self.calls: list[int] = []

    def update(self, ema, online, step, pl_module) -> None:
        self.calls.append(step)
        if step % 2 == 0:
            super().update(ema, online, step, pl_module)


def test_a_users_own_ema_callback_replaces_the_default():
    m = module()
    mine = EveryOtherStep()
    t = trainer(3, [mine])
    t.fit(m)
    assert [type(cb) for cb in t.callbacks].count(EMAUpdate) == 0 and t.callbacks.count(mine) == 1
    assert mine.calls == [1, 2, 3]
    # step 3 (odd) left θ̄ at step 2's copy of θ: θ̄ differs from θ, but was a copy once
    assert any(not torch.equal(e, o) for e, o in zip(m.ema.parameters(), m.online.parameters()))


def test_two_ema_callbacks_stop_the_run_in_one_line():
    m = module()
    with pytest.raises(EMATargetError, match="already moved for optimizer step 1"):
        trainer(2, [EMAUpdate(), EMAUpdate()]).fit(m)


def test_a_step_whose_ema_did_not_follow_is_refused_before_the_next_batch():
    m = module()

    class Skip(EMAUpdate):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            pass  # neither moves θ̄ nor stamps the step

    with pytest.raises(EMATargetError, match="did not follow optimizer step 1"):
        trainer(2, [Skip()]).fit(m)


def test_each_steps_checkpoint_holds_the_ema_after_that_steps_update(tmp_path):
    m = module(ema_decay=0.8)
    rec = Recorder()
    ck = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=1, save_top_k=-1)
    trainer(2, [rec, ck], checkpoints=True).fit(m)
    blob = torch.load(tmp_path / "epoch=0-step=1.ckpt", weights_only=True)
    saved = [v for k, v in blob["state_dict"].items() if k.startswith("ema.")]
    _, pv, ev, ema_at_batch_2, _ = rec.seen[1]  # the EMA the second batch was begun with
    assert pv == ev == 1 and blob["pdx_param_version"] == 1
    names = [k for k, _ in m.ema.named_parameters()]
    state = {k[len("ema.") :]: v for k, v in blob["state_dict"].items() if k.startswith("ema.")}
    for name, value in zip(names, ema_at_batch_2):
        assert torch.equal(state[name], value)
    assert len(saved) >= len(names)
