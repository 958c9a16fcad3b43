"""What both trainers share: three networks in three roles, and a checkpoint that keeps every rank's games.

:class:`~pdx_lightning.rl.module.PDXModule` (searchless self-play) and
:class:`~pdx_lightning.rl.searched_module.SearchedModule` (searched self-play) each hold

* ``online``: the only network trained;
* ``ema``: moved only by the ``EMAUpdate`` callback after each optimizer step (registered first by
  default, replaceable by the user's own subclass); the version counters ``param_version`` (optimizer
  steps taken) and ``ema_version`` (the step the EMA last followed) let each step check that it did;
* ``base``: frozen; it initializes the other two and is the anchor of the KL term. Checkpoints name it
  and hash it instead of storing it.

Both record their settings blocks in the logged hyperparameters and refuse gradient clipping under
16-bit AMP (``setup``). Each subclass says what a rank's self-play state is
(``_rank_state``/``_load_rank_state``) and under
which checkpoint key every rank's copy is kept (``rank_state_key``); under DDP the states are gathered
so that ``--ckpt_path last`` resumes each rank with its own games.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, cast

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.utilities.parsing import AttributeDict
from torch.utils.data import DataLoader, IterableDataset

from pdx_lightning.callbacks.ema import EMATargetError, EMAUpdate
from pdx_lightning.nets import load_model
from pdx_lightning.nets.resnet import require_wdl_head
from pdx_lightning.rl.loader import collate_whole
from pdx_lightning.rl.update import Optimization, refuse_scaled_clipping
from pdx_lightning.runtime.checkpoint_meta import check_base, write_network_meta
from pdx_lightning.runtime.ranks import rank_world


class ThreeNetworks(L.LightningModule):
    """The shared roles of the online, EMA and frozen networks; subclasses play and train."""

    rank_state_key: ClassVar[str]  # the checkpoint key of the per-rank self-play states
    dataset: IterableDataset

    def _init_networks(self, base: str, purpose: str) -> None:
        """Load ``base`` (refused without a WDL head, before any copy or game exists), freeze it and make
        ``online`` and ``ema`` from it. Registered in the order base, online, ema."""
        self.automatic_optimization = False
        self.base = load_model(base).requires_grad_(False)
        require_wdl_head(self.base, purpose, f"base {base!r}")
        self.online = copy.deepcopy(self.base).requires_grad_(True).train()
        self.ema = copy.deepcopy(self.base)
        self.param_version = 0  # optimizer steps taken
        self.ema_version = 0  # the optimizer step the EMA last followed (the EMA callback stamps it)

    # what each module records of its settings in the logged hyperparameters, and its settings' error
    hparam_blocks: ClassVar[tuple[str, ...]] = ("algorithm",)
    setting_error: ClassVar[type[Exception]] = ValueError

    def setup(self, stage: str) -> None:
        """Record the settings blocks (``hparam_blocks``) in the logged hyperparameters too (hparams.yaml,
        TensorBoard's HParams, MLflow's params; the checkpoint's hyperparameters already carry them).
        Gradient clipping needs true gradients: refused under 16-bit AMP (``rl.update.refuse_scaled_clipping``)."""
        initial = cast(AttributeDict, self._hparams_initial)
        for key in self.hparam_blocks:
            initial[key] = dict(self.hparams[key])
        precision = str(getattr(self._trainer, "precision", "")) if self._trainer is not None else ""
        clip = cast(Any, self).algorithm.grad_clip_norm
        refuse_scaled_clipping(clip, precision, "model.algorithm.grad_clip_norm", self.setting_error)

    # ---- roles ------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> ThreeNetworks:
        """Lightning calls ``.train()`` at fit start; the EMA and the base stay in eval mode."""
        super().train(mode)
        self.ema.eval()
        self.base.eval()
        return self

    def forward(self, x: torch.Tensor):
        return self.online(x)

    def configure_callbacks(self) -> list:
        """The EMA update as a callback: the default ``EMAUpdate`` unless the Trainer has one (an
        ``EMAUpdate`` or the user's subclass). Put first, so that every other callback's
        ``on_train_batch_end`` (puzzle validation, log continuity, checkpoints) sees the EMA after this
        step's update; Lightning's ``configure_callbacks`` merge would append it after them."""
        callbacks: list = cast(Any, self.trainer).callbacks  # set by Lightning, undeclared on the class
        if not any(isinstance(cb, EMAUpdate) for cb in callbacks):
            callbacks.insert(0, EMAUpdate())
        return []

    def check_ema_followed(self) -> None:
        """Refuse a step whose EMA did not follow the last optimizer step (no EMA callback ran)."""
        if self.ema_version != self.param_version:
            raise EMATargetError(
                f"the EMA target did not follow optimizer step {self.param_version} (last followed: "
                f"{self.ema_version}): no EMA callback ran; keep the default EMAUpdate or pass your own subclass"
            )

    def train_dataloader(self) -> DataLoader:
        # batch_size=None: each dataset item is already a whole batch (of positions, or of plies)
        return DataLoader(self.dataset, batch_size=None, num_workers=0, collate_fn=collate_whole)

    def optimization(self) -> Optimization:
        """The online network with its optimizer, schedule and Lightning's backward, for the step function."""
        return Optimization(
            self.online, cast(Any, self.optimizers()), cast(Any, self.lr_schedulers()), self.manual_backward
        )

    # ---- checkpoints ------------------------------------------------------------------------
    def _rank_state(self) -> Any:
        """This rank's self-play state for the checkpoint (picklable)."""
        raise NotImplementedError

    def _load_rank_state(self, state: Any) -> None:
        """Restore what ``_rank_state`` returned (called only with a rank's own, non-None state)."""
        raise NotImplementedError

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Drop the frozen base (referenced by name + hash) and keep every rank's self-play state."""
        sd = checkpoint["state_dict"]
        for k in [k for k in sd if k.startswith("base.")]:
            del sd[k]
        write_network_meta(checkpoint, self.online, self.hparams["base"])
        checkpoint["pdx_param_version"] = self.param_version
        state = self._rank_state()
        _, world = rank_world()
        if world > 1:
            states: list[Any] = [None] * world
            dist.all_gather_object(states, state)
        else:
            states = [state]
        checkpoint[self.rank_state_key] = states

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        check_base(checkpoint, self.hparams["base"])
        sd = checkpoint["state_dict"]
        sd.update({f"base.{k}": v for k, v in self.base.state_dict().items()})
        self.param_version = checkpoint.get("pdx_param_version", 0)
        self.ema_version = self.param_version  # a step's checkpoint is written after its EMA update
        states = checkpoint.get(self.rank_state_key) or []
        rank, _ = rank_world()
        state = states[rank] if rank < len(states) else None
        if state is not None:
            self._load_rank_state(state)
