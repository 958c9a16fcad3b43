"""The chess engines of self-play (issue 28): a real Lightning fit with the compiled core, on one and on three
worker threads, plays exactly the games the python-chess engine plays from the same seed — move for move,
with restarts (ply cap, random-plies restarts), the same logged metrics and bit-identical weights; so does
the device path (planes packed to 800 bytes per position, expanded and masked on the device)."""

from __future__ import annotations

import lightning as L
import pytest
import torch

from pdx_lightning.chesscore import native_core
from pdx_lightning.rl.module import PDXModule
from pdx_lightning.rl.selfplay import SelfPlayConfig
from pdx_lightning.rl.settings import PDXSettings

pytestmark = pytest.mark.skipif(not native_core.available(), reason="compiled chess core not built (pip install -e .)")


class Metrics(L.Callback):
    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.rows.append(
            {k: float(v) for k, v in sorted(trainer.callback_metrics.items()) if not k.startswith("perf/")}
        )


def _fit(backend: str, workers: int, packed_transfer: bool | None = None, **sp) -> tuple[PDXModule, Metrics]:
    L.seed_everything(0)
    cfg = SelfPlayConfig(n_games=12, opening_max_moves=3, max_plies=14, seed=2, backend=backend, workers=workers, **sp)
    m = PDXModule(
        base="random:tiny",
        algorithm=PDXSettings(micro_batch=5),
        selfplay=cfg,
        lr_backbone=1e-3,
        lr_final_block=1e-3,
        lr_policy_head=1e-3,
        lr_value_head=1e-3,
        warmup_steps=1,
    )
    m.dataset.packed_transfer = packed_transfer
    probe = Metrics()
    L.Trainer(
        max_steps=12,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[probe],
    ).fit(m)
    return m, probe


@pytest.mark.parametrize(
    "sp",
    [{}, {"restart": "random_plies", "restart_max_moves": 2, "claim_draws": True}],
    ids=["initial_restarts", "random_plies_restarts"],
)
def test_native_core_plays_the_python_chess_games(sp):
    ref, ref_metrics = _fit("python-chess", 1, **sp)
    assert ref.dataset.stats["games_finished"] >= 6  # the 14-ply cap restarted games
    # the compiled core on 1 and 3 threads, and with the planes packed for the device and expanded there
    # (what a GPU run does) on 1 thread
    for workers, packed in ((1, None), (3, None), (1, True)):
        m, metrics = _fit("native", workers, packed, **sp)
        assert [[mv.uci() for mv in b.move_stack] for b in m.dataset.boards] == [
            [mv.uci() for mv in b.move_stack] for b in ref.dataset.boards
        ], workers
        assert m.dataset.stats == ref.dataset.stats
        assert metrics.rows == ref_metrics.rows
        for a, b in zip(
            [*m.online.parameters(), *m.ema.parameters()], [*ref.online.parameters(), *ref.ema.parameters()]
        ):
            assert torch.equal(a, b)
        assert torch.equal(m.dataset.gen.get_state(), ref.dataset.gen.get_state())
