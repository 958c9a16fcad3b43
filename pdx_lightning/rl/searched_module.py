"""SearchedModule: searched self-play fine-tuning (Efficient Self-Play's system) as a LightningModule.

The same shape as :class:`~pdx_lightning.rl.module.PDXModule` (both are
:class:`~pdx_lightning.rl.three_networks.ThreeNetworks`): three networks, three roles, never swapped
in place: ``online`` (trained), ``ema`` (moved only by the ``EMAUpdate`` callback after each optimizer
step; it *searches* the self-play games, the published weights, and is what validation scores and
``pdx export`` writes) and ``base`` (frozen: the optional forward-KL anchor). The IterableDataset
(:class:`~pdx_lightning.rl.searched_games.SearchedGames`) plays one searched ply of every game per item;
one ``training_step`` plays ``plies_per_step`` plies (more while the replay buffer holds fewer live
positions than a batch), admits the finished games' positions to the buffer
(:mod:`pdx_lightning.rl.replay`), draws a batch and takes one AdamW step on the loss of
:mod:`pdx_lightning.rl.searched_step`. Every DDP rank plays its own games into its own buffer; the
gradients are averaged as DDP does. The buffer and the games are in every checkpoint (each rank's),
so ``--ckpt_path last`` resumes with nothing lost or presented twice.

Chosen with ``module: searched`` in the config (``conf/fit/searched.yaml``) or ``pdx fit --module searched``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict

import numpy as np
import torch
from lightning.pytorch.utilities.parsing import AttributeDict

from pdx_lightning.callbacks.tensorboard import SEARCHED_HPARAM_METRICS, SEARCHED_LAYOUT
from pdx_lightning.rl.replay import ReplayBuffer
from pdx_lightning.rl.searched_games import PlyResult, SearchedGames
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings, SearchedSettingsError
from pdx_lightning.rl.searched_step import SearchedStepResult, searched_step
from pdx_lightning.rl.step_metrics import StepSummaries, combine_columns
from pdx_lightning.rl.three_networks import ThreeNetworks
from pdx_lightning.rl.update import run_seed
from pdx_lightning.runtime.optim import document_optimizer_args, layerwise_adamw
from pdx_lightning.runtime.ranks import rank_world

# how each logged scalar combines over the DDP ranks (rl.step_metrics.combine_columns; the rest: means
# weighted by the positions each rank trained on)
SEARCHED_REDUCE = {
    "optim/grad_norm": "first",  # the all-reduced gradients: the same on every rank
    "selfplay/beta": "first",
    "selfplay/games_per_s": "sum",
    "selfplay/evaluations": "sum",
    "selfplay/games_finished": "sum",
    "selfplay/game_length": "per:selfplay/games_finished",
    "selfplay/cut_share": "per:selfplay/games_finished",
    "selfplay/positions_per_s": "sum",
    "replay/live": "sum",
    "replay/admitted": "sum",
}


class SearchedModule(ThreeNetworks):
    rank_state_key = "pdx_searched"  # each rank's games and replay buffer
    setting_error = SearchedSettingsError
    dataset: SearchedGames
    # HParamsSummary's Custom Scalars tab and HParams columns for this module's tags (docs/metrics.md)
    tensorboard_layout = SEARCHED_LAYOUT
    hparam_metrics = SEARCHED_HPARAM_METRICS

    @document_optimizer_args
    def __init__(
        self,
        base: str = "base:small",
        algorithm: SearchedSelfPlaySettings = SearchedSelfPlaySettings(),  # noqa: B008  frozen; `pdx fit --help` lists its keys
        lr_backbone: float = 3e-5,
        lr_final_block: float = 1e-4,
        lr_policy_head: float = 1e-4,
        lr_value_head: float = 3e-4,
        warmup_steps: int = 20,
        adam_betas: tuple[float, float] = (0.9, 0.98),
        weight_decay: float = 0.0,
        seed: int | None = None,
    ) -> None:
        """
        Args:
            base: the network fine-tuned (it initializes online and EMA, and is the frozen anchor):
                ``base:small``, ``random:<preset>``, a ``.pt``, a ``.ckpt`` (its EMA) or an Lc0 ``.pb.gz``.
            algorithm: what is played and learned (``SearchedSelfPlaySettings``), checked once.
            {optimizer_args}
            seed: the games' and the replay sampler's seed (rank r: seed + 1000·r); None = the run's
                ``seed_everything``.
        """
        super().__init__()
        if isinstance(algorithm, dict):  # from a checkpoint's hyperparameters
            algorithm = SearchedSelfPlaySettings(**algorithm)
        self.algorithm = algorithm
        self.save_hyperparameters(ignore=["algorithm"])
        self.hparams["algorithm"] = asdict(algorithm)
        self._init_networks(base, "searched self-play (the search's Q and the WDL value loss)")
        self.seed = run_seed("--model.seed") if seed is None else seed
        self.hparams["seed"] = self.seed
        self.dataset = SearchedGames(algorithm, self.ema, seed=self.seed)
        self.buffer = ReplayBuffer(
            algorithm.buffer_capacity,
            reuse=algorithm.reuse,
            sampling=algorithm.sampling,
            surprise_share=algorithm.surprise_share,
            surprise_cap=algorithm.surprise_cap,
            value_mix=algorithm.value_mix,
            seed=self.seed + 1000 * rank_world()[0] + 1,
        )
        self.timing = {"play": 0.0, "train": 0.0}
        self.beta = algorithm.beta  # the step's β: a BetaSchedule callback may change it per step
        self.step_summaries = StepSummaries()

    def configure_optimizers(self):
        return layerwise_adamw(self.online, AttributeDict(self.hparams))

    # ---- one step ---------------------------------------------------------------------------
    def _play(self, dataloader_iter: Iterator) -> tuple[list[PlyResult], float]:
        """Play the step's plies (more until the buffer can fill a batch) into the buffer."""
        s = self.algorithm
        need = max(s.batch_size, s.min_buffer if self.param_version == 0 else 0)
        plies: list[PlyResult] = []
        t0 = time.perf_counter()
        while len(plies) < s.plies_per_step or len(self.buffer) < need:
            ply = next(dataloader_iter)
            ply = ply[0] if isinstance(ply, tuple) else ply
            self.buffer.add(ply.finished)
            plies.append(ply)
        return plies, time.perf_counter() - t0

    def training_step(self, dataloader_iter: Iterator) -> torch.Tensor:
        """Play the step's plies into the buffer, draw a batch and take one step on it
        (:func:`~pdx_lightning.rl.searched_step.searched_step`); log every rank's share combined."""
        self.check_ema_followed()
        plies, play_s = self._play(dataloader_iter)
        t0 = time.perf_counter()
        batch = self.buffer.batch(self.buffer.draw(self.algorithm.batch_size), self.device)
        result = searched_step(
            batch,
            optimization=self.optimization(),
            base=self.base,
            settings=self.algorithm,
            beta=self.beta,
            version=self.param_version,
            step=self.global_step,
        )
        self.param_version = result.version
        train_s = time.perf_counter() - t0
        self.timing["play"] += play_s
        self.timing["train"] += train_s
        self._log_step(result, plies, play_s, train_s)
        return torch.tensor(result.metrics["loss/total"])

    def _log_step(self, result: SearchedStepResult, plies: list[PlyResult], play_s: float, train_s: float) -> None:
        """This rank's scalars in one row, gathered from every rank (``StepSummaries``, torchmetrics) and
        combined: means weighted by the positions each rank trained on, counts and rates summed over the
        ranks (``SEARCHED_REDUCE``)."""
        st = self.dataset.stats
        finished = max(st["games_finished"], 1)
        values = {
            **result.metrics,
            "selfplay/beta": self.beta,
            "selfplay/plies": float(len(plies)),
            "selfplay/target_entropy": float(np.mean([p.target_entropy for p in plies])),
            "selfplay/root_q": float(np.mean([p.root_q for p in plies])),
            "selfplay/top_visit_share": float(np.mean([p.top_share for p in plies])),
            "selfplay/games_per_s": sum(p.games_finished for p in plies) / max(play_s, 1e-9),
            "selfplay/evaluations": float(sum(p.evaluations for p in plies)),
            "selfplay/games_finished": float(st["games_finished"]),
            "selfplay/game_length": st["length_sum"] / finished,
            "selfplay/cut_share": st["cut"] / finished,
            "selfplay/positions_per_s": sum(p.searched for p in plies) / max(play_s, 1e-9),
            "replay/fill": self.buffer.fill,
            "replay/live": float(len(self.buffer)),
            "replay/admitted": float(self.buffer.admitted),
            "time/play_share": play_s / max(play_s + train_s, 1e-9),
        }
        names = list(values)
        self.step_summaries.update(torch.tensor([float(result.size), *values.values()], dtype=torch.float64))
        rows = self.step_summaries.compute()  # every rank's row (one all-gather under DDP)
        self.step_summaries.reset()
        metrics = combine_columns(rows, names, SEARCHED_REDUCE)
        total = int(rows[:, 0].sum())
        self.log_dict(metrics, on_step=True, prog_bar=False, sync_dist=False, batch_size=total)
        self.log("loss", metrics["loss/total"], prog_bar=True, logger=False, batch_size=total)

    # ---- checkpoints ------------------------------------------------------------------------
    def _rank_state(self) -> dict:
        return {
            "games": self.dataset.state_dict() if self.dataset.started else None,
            "buffer": self.buffer.state_dict(),
        }

    def _load_rank_state(self, state: dict) -> None:
        if state["games"] is not None:
            self.dataset.load_state_dict(state["games"])
        self.buffer.load_state_dict(state["buffer"])
