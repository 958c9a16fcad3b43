"""Supervised search distillation of a base network from Stockfish-labelled shards.

``pdx pretrain --config conf/pretrain/small.yaml`` = LightningCLI ``fit`` on
:class:`DistillModule` + :class:`ShardDataModule`. The policy head is fit by
cross-entropy to the teacher's MultiPV target (softmax of expected scores at
temperature T, :mod:`pdx_lightning.supervised.teacher`) over the legal moves — the
forward, mass-covering direction that makes the base exploratory (paper
Appendix C) — and the value head by cross-entropy to the teacher's WDL.
Resumable with ``--ckpt_path``; ``export`` writes the final network as a
``.pt`` loadable by ``pdx_lightning.nets.load_model``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any, cast

import chess
import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from lightning.pytorch.utilities.parsing import AttributeDict
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from pdx_lightning import argtypes
from pdx_lightning.chesscore.encoding import GameHistory, PackedRows, encode_packed, pack_rows
from pdx_lightning.chesscore.moves import POLICY_SIZE, legal_indices
from pdx_lightning.chesscore.policy import entropy, masked_log_softmax
from pdx_lightning.errors import UserError
from pdx_lightning.nets import Network, load_model, save_network
from pdx_lightning.nets.chessformer import Chessformer, ModelConfig
from pdx_lightning.nets.resnet import require_wdl_head
from pdx_lightning.runtime.export_target import check_export_target
from pdx_lightning.supervised.shards import NoReadableShards, Shard, decode_move, load_all
from pdx_lightning.supervised.teacher import CP_WEIGHT, DEFAULT_TEMPERATURE, MATE_BONUS


class FreezeError(UserError, ValueError):
    """A ``freeze`` entry that names no parameter group of the network."""


@dataclass
class PackedPositions:
    """Everything training needs, without boards: ~1 KB per position."""

    rows: PackedRows
    legal: np.ndarray  # flat int16 policy indices of every position's legal moves
    legal_off: np.ndarray  # (n+1,) int64 offsets into ``legal``
    cand_idx: np.ndarray  # (n, K) int64, -1 padding
    cand_p: np.ndarray  # (n, K) float32 policy target, 0 on padding
    wdl: np.ndarray  # (n, 3) float32
    game: np.ndarray  # (n,) game id (for held-out splits by game)
    ply: np.ndarray | None = None  # (n,) moves played before the position (opening weighting)

    def __len__(self) -> int:
        return len(self.wdl)


def pack_shard(
    shard: Shard, temperature: float = DEFAULT_TEMPERATURE, cp_weight: float = CP_WEIGHT, mate_bonus: float = MATE_BONUS
) -> PackedPositions:
    """Replay each game once (records are sorted by game, ply) and pack its labelled positions."""
    rows, legal, off = [], [], [0]
    cur_game, done = -1, 0
    board: chess.Board | None = None
    hist: GameHistory | None = None
    for g, p in zip(shard.game.tolist(), shard.ply.tolist()):
        if g != cur_game or p < done:
            cur_game, board, done = g, chess.Board(), 0
            hist = GameHistory(board)
        assert board is not None and hist is not None  # game ids are >= 0: the first record starts a game
        start = int(shard.game_offsets[g])
        for code in shard.game_moves[start + done : start + p].tolist():
            board.push(decode_move(code))
            hist.push(board)
        done = p
        rows.append(hist.row(board))
        idx = legal_indices(board)
        legal.append(idx.astype(np.int16))
        off.append(off[-1] + len(idx))
    return PackedPositions(
        pack_rows(rows),
        np.concatenate(legal),
        np.asarray(off, dtype=np.int64),
        shard.cand_idx.astype(np.int64),
        shard.policy(temperature, cp_weight, mate_bonus),
        shard.wdl.astype(np.float32),
        shard.game.astype(np.int64),
        shard.ply.astype(np.int64),
    )


def weighted_index(
    index: np.ndarray, ply: np.ndarray, opening_plies: int, opening_repeats: int, start_repeats: int
) -> np.ndarray:
    """``index`` with every opening position (1 <= ply < opening_plies) repeated ``opening_repeats``
    times and the initial position (ply 0) ``start_repeats`` times: an epoch's permutation of it
    oversamples them deterministically (resumable and DDP-split like any epoch)."""
    reps = np.ones(len(index), dtype=np.int64)
    p = ply[index]
    reps[(p >= 1) & (p < opening_plies)] = opening_repeats
    reps[p == 0] = start_repeats
    return np.repeat(index, reps)


class PositionDataset(Dataset):
    """Batched fetch (``__getitems__``): one vectorized encode per batch."""

    def __init__(self, data: PackedPositions, index: np.ndarray) -> None:
        self.data, self.index = data, index

    def __len__(self) -> int:
        return len(self.index)

    def __getitems__(self, items: list[int]) -> dict[str, torch.Tensor]:
        d, sel = self.data, self.index[np.asarray(items)]
        # PackedRows[indices] is PackedRows.__getitem__'s row selection; mypy types any index of a NamedTuple
        # as one of its fields
        x = encode_packed(cast(PackedRows, d.rows[sel]))
        mask = torch.zeros(len(sel), POLICY_SIZE, dtype=torch.bool)
        for r, i in enumerate(sel):
            mask[r, torch.from_numpy(d.legal[d.legal_off[i] : d.legal_off[i + 1]].astype(np.int64))] = True
        return {
            "x": torch.from_numpy(x),
            "mask": mask,
            "cand_idx": torch.from_numpy(d.cand_idx[sel]),
            "cand_p": torch.from_numpy(d.cand_p[sel]),
            "wdl": torch.from_numpy(d.wdl[sel]),
        }


class ResumableSampler(DistributedSampler):
    """The epoch's seeded permutation (``DistributedSampler``: seed + epoch, this rank's share), able to
    start part-way through it: a resumed run sees exactly the batches the interrupted epoch had left."""

    def __init__(self, dataset: Dataset, seed: int, num_replicas: int = 1, rank: int = 0) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed, drop_last=True)
        self.skip = 0

    def resume(self, epoch: int, samples: int) -> None:
        """The next iteration is epoch ``epoch`` without its first ``samples`` indices."""
        self.set_epoch(epoch)
        self.skip = samples

    def __iter__(self):
        skip, self.skip = self.skip, 0
        return iter(list(super().__iter__())[skip:])


class ResumableLoader(DataLoader):
    """A DataLoader with Lightning's ``state_dict``/``load_state_dict`` protocol: checkpoints store the
    epoch and the batches of it already trained on (from the fit loop's progress, so the fetcher's
    prefetched batch is not counted), and a resumed fit continues the epoch where it stopped."""

    def __init__(self, dataset: Dataset, *, progress, sampler: ResumableSampler, **kw) -> None:
        super().__init__(dataset, sampler=sampler, **kw)
        self.progress = progress

    def state_dict(self) -> dict:
        epoch, batches = self.progress()
        return {"epoch": int(epoch), "batches": int(batches)}

    def load_state_dict(self, state: dict) -> None:
        epoch, batches = int(state["epoch"]), int(state["batches"])
        if batches >= len(self):  # saved at the end of an epoch: the next one starts from its beginning
            epoch, batches = epoch + 1, 0
        assert self.batch_size is not None  # built with one (ShardDataModule.train_dataloader)
        cast(ResumableSampler, self.sampler).resume(epoch, batches * self.batch_size)


def excluded_keys(suites: list[str]) -> set[int]:
    """Zobrist keys (as the labeller computes them) of every solver position of the puzzles in ``suites``."""
    import chess.polyglot  # noqa: PLC0415

    from pdx_lightning.evaluation.suite import SuiteSpec  # noqa: PLC0415

    return {chess.polyglot.zobrist_hash(b) for p in SuiteSpec(path=list(suites)).load().puzzles for b in p.positions()}


class ShardDataModule(L.LightningDataModule):
    def __init__(
        self,
        shards: str = "shards/base_v1",
        val_fraction: float = 0.02,
        batch_size: int = 256,
        temperature: float = DEFAULT_TEMPERATURE,
        cp_weight: float = CP_WEIGHT,
        mate_bonus: float = MATE_BONUS,
        max_positions: int | None = None,
        seed: int = 0,
        opening_plies: int = 0,
        opening_repeats: int = 1,
        start_repeats: int = 1,
        exclude: list[str] | None = None,
    ) -> None:
        """
        Args:
            shards: directory of ``pdx data positions`` shards (a relative path is read from the current
                directory; a missing one fails here, in one line naming ``--data.shards``).
            val_fraction: fraction of *games* held out for validation (no position of a held-out
                game is trained on).
            batch_size: positions per optimizer step.
            temperature: T of the teacher's policy target (lower = sharper base, lower entropy).
            cp_weight: λ, centipawn-logistic weight in the expected score (teacher.py).
            mate_bonus: b, bonus for mating moves in the expected score (teacher.py).
            max_positions: use at most this many positions (None = all).
            seed: seed of the held-out split and of each epoch's shuffle (seed + epoch).
            opening_plies: positions with ``1 <= ply < opening_plies`` are opening positions, whose
                112-plane input still carries zero-filled history (ply < 8): the labeller keeps one
                copy of each position (de-duplication by Zobrist key), so they are rare.
            opening_repeats: each training epoch sees every opening position this many times.
            start_repeats: each training epoch sees the initial position (ply 0, empty history; one
                record in a whole labelled set) this many times, so the value head learns the start
                of every self-play game. 1 = no weighting (the epoch is a plain permutation).
            exclude: puzzle suite files (CSV) whose solver positions must not be trained or validated on
                (records with the same Zobrist key are dropped, counted in the stats as ``excluded``):
                suites made from this labelled set (``pdx data mates|puzzles --from-shards``) stay
                held out for a base distilled on it.
        """
        check = argtypes.check_number
        check("--data.val_fraction", val_fraction, 0, 1, lo_open=True, hi_open=True)
        check("--data.batch_size", batch_size, 1, argtypes.MAX_COUNT, integer=True)
        check("--data.temperature", temperature, 0, lo_open=True)
        check("--data.cp_weight", cp_weight, 0, lo_open=True)
        check("--data.mate_bonus", mate_bonus, 0)
        check("--data.max_positions", max_positions, 1, argtypes.MAX_COUNT, integer=True, optional=True)
        check("--data.seed", seed, 0, argtypes.MAX_SEED, integer=True)
        check("--data.opening_plies", opening_plies, 0, 10_000, integer=True)
        check("--data.opening_repeats", opening_repeats, 1, 10_000, integer=True)
        check("--data.start_repeats", start_repeats, 1, argtypes.MAX_COUNT, integer=True)
        if not os.path.isdir(shards):  # before the Trainer starts (logs, DDP ranks), not in setup()
            raise NoReadableShards(
                f"--data.shards: no shard directory {shards} (`pdx data positions --out DIR` writes one; "
                "a relative path is read from the current directory)"
            )
        super().__init__()
        self.save_hyperparameters()
        self.data: PackedPositions | None = None

    @property
    def settings(self) -> AttributeDict:
        """``hparams`` as what ``save_hyperparameters`` made it (an AttributeDict: ``.shards``, ``.seed``, ...)."""
        return cast(AttributeDict, self.hparams)

    def setup(self, stage: str | None = None) -> None:
        if self.data is not None:
            return
        hp = self.settings
        shard, reader = load_all(hp.shards)
        if hp.max_positions:
            shard = shard.subset(np.arange(min(len(shard), hp.max_positions)))
        excluded = 0
        if hp.exclude:
            drop = excluded_keys(hp.exclude)
            keep = np.fromiter((int(k) not in drop for k in shard.key.tolist()), dtype=bool, count=len(shard))
            excluded = int((~keep).sum())
            shard = shard.subset(np.flatnonzero(keep))
        self.data = pack_shard(shard, hp.temperature, hp.cp_weight, hp.mate_bonus)
        games = np.unique(self.data.game)
        rng = np.random.default_rng(hp.seed)
        held = set(rng.choice(games, size=max(1, round(len(games) * hp.val_fraction)), replace=False).tolist())
        is_val = np.fromiter((g in held for g in self.data.game.tolist()), dtype=bool, count=len(self.data))
        if hp.start_repeats > 1:  # the initial position is trained on, wherever its game fell
            is_val &= self.data.ply != 0
        self.train_index, self.val_index = np.nonzero(~is_val)[0], np.nonzero(is_val)[0]
        assert self.data.ply is not None  # pack_shard sets it
        self.train_index = weighted_index(
            self.train_index, self.data.ply, hp.opening_plies, hp.opening_repeats, hp.start_repeats
        )
        self.stats = {
            "positions": len(self.data),
            "train": len(self.train_index),
            "val": len(self.val_index),
            "games": len(games),
            "corrupt_shards": reader.n_corrupt,
            "duplicates": reader.n_duplicates,
            "excluded": excluded,
        }
        print(f"[pretrain] {json.dumps(self.stats)}")

    def train_dataloader(self) -> DataLoader:
        trainer = self.trainer
        assert self.data is not None  # loaded by setup(), which Lightning runs first
        ds = PositionDataset(self.data, self.train_index)
        world, rank = (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)

        def progress() -> tuple[int, int]:  # (epoch, batches of it done) at checkpoint time
            assert trainer is not None  # called by the fit loop, when checkpointing
            return trainer.current_epoch, trainer.fit_loop.epoch_loop.batch_progress.current.ready

        return ResumableLoader(
            ds,
            progress=progress,
            sampler=ResumableSampler(ds, self.settings.seed, world, rank),
            batch_size=self.settings.batch_size,
            drop_last=True,
            collate_fn=lambda b: b,
        )

    def val_dataloader(self) -> DataLoader:
        assert self.data is not None  # loaded by setup(), which Lightning runs first
        return DataLoader(
            PositionDataset(self.data, self.val_index),
            batch_size=self.settings.batch_size,
            shuffle=False,
            collate_fn=lambda b: b,
        )


class DistillModule(L.LightningModule):
    def __init__(
        self,
        preset: str = "small",
        init: str | None = None,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        warmup_steps: int = 200,
        min_lr_ratio: float = 0.05,
        value_weight: float = 1.0,
        export: str | None = None,
        overwrite_bundled: bool = False,
        freeze: list[str] | None = None,
    ) -> None:
        """
        Args:
            preset: Chessformer preset to train from scratch (``tiny``, ``small``, ``bt4``).
            init: start from this model instead (``load_model`` name); overrides ``preset``.
            lr: peak AdamW learning rate.
            weight_decay: AdamW weight decay.
            warmup_steps: linear warmup, then cosine decay to ``min_lr_ratio``·lr at ``max_steps``.
            min_lr_ratio: final learning rate as a fraction of ``lr``.
            value_weight: weight of the WDL cross-entropy against the policy cross-entropy.
            export: write the trained network here (``.pt``) when training ends. A path inside the
                bundled ``data/`` directory is refused before training starts (overwriting
                ``data/base_small.pt`` would break every checkpoint made from ``base:small``: base hash
                check) unless ``overwrite_bundled``.
            overwrite_bundled: allow ``export`` to replace a network bundled in ``data/``.
            freeze: parameter groups of the network seam (``param_groups()``: ``backbone``,
                ``final_block``, ``policy_head``, ``value_head``) kept as they are: e.g. ``[backbone]``
                trains only the last block and the heads (fine-tuning on one player's games, as
                maia-individual trains only the last blocks). None: train everything.
        """
        check = argtypes.check_number  # before any work: a negative rate or warm-up would train on
        check("--model.lr", lr, 0, lo_open=True)
        check("--model.weight_decay", weight_decay, 0)
        check("--model.warmup_steps", warmup_steps, 0, argtypes.MAX_COUNT, integer=True)
        check("--model.min_lr_ratio", min_lr_ratio, 0, 1)
        check("--model.value_weight", value_weight, 0)
        super().__init__()
        self.save_hyperparameters()
        self.model = load_model(init).train() if init else Chessformer(ModelConfig.from_name(preset))
        if value_weight > 0:  # the WDL cross-entropy needs a real draw probability
            require_wdl_head(self.model, "distillation's WDL value loss (value_weight > 0)", f"init {init!r}")
        if freeze:
            groups = cast(Network, self.model).param_groups()
            unknown = sorted(set(freeze) - set(groups))
            if unknown:
                raise FreezeError(
                    f"--model.freeze: unknown parameter groups {unknown} (the network's are {sorted(groups)})"
                )
            for name in freeze:
                for p in groups[name]:
                    p.requires_grad_(False)

    @property
    def settings(self) -> AttributeDict:
        """``hparams`` as what ``save_hyperparameters`` made it (an AttributeDict: ``.lr``, ``.export``, ...)."""
        return cast(AttributeDict, self.hparams)

    def forward(self, x):
        return self.model(x)

    def _step(self, batch: dict, prefix: str) -> torch.Tensor:
        out = self.model(batch["x"])
        logp = masked_log_softmax(out.policy, batch["mask"])  # (B, P)
        cand = batch["cand_idx"]
        lp = logp.gather(1, cand.clamp(min=0))  # (B, K)
        p = batch["cand_p"]
        policy_ce = -torch.where(p > 0, p * lp, torch.zeros_like(lp)).sum(1).mean()
        value_ce = -(batch["wdl"] * F.log_softmax(out.wdl, -1)).sum(1).mean()
        loss = policy_ce + self.settings.value_weight * value_ce
        with torch.no_grad():
            top1 = (logp.argmax(1) == cand[:, 0]).float().mean()
            ent = entropy(logp.detach(), batch["mask"]).mean()
            tgt_ent = -torch.where(p > 0, p * p.clamp(min=1e-30).log(), torch.zeros_like(p)).sum(1).mean()
            top5 = logp.detach().exp().gather(1, cand[:, :5].clamp(min=0)).mul(cand[:, :5] >= 0).sum(1).mean()
        n = batch["x"].shape[0]
        self.log_dict(
            {
                f"{prefix}/loss": loss,
                f"{prefix}/policy_ce": policy_ce,
                f"{prefix}/wdl_ce": value_ce,
                f"{prefix}/top1_agreement": top1,
                f"{prefix}/policy_entropy": ent,
                f"{prefix}/target_entropy": tgt_ent,
                f"{prefix}/mass_on_teacher_top5": top5,
            },
            prog_bar=prefix == "val",
            batch_size=n,
            on_step=prefix == "train",
            on_epoch=prefix == "val",
        )
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def configure_optimizers(self):
        hp = self.settings
        # frozen groups (``freeze``) are left out, so weight decay does not move them either
        opt = torch.optim.AdamW(
            [p for p in self.model.parameters() if p.requires_grad], lr=hp.lr, weight_decay=hp.weight_decay
        )
        total = max(self.trainer.max_steps, hp.warmup_steps + 1) if self.trainer.max_steps > 0 else 10**6

        def schedule(step: int) -> float:
            if step < hp.warmup_steps:
                return (step + 1) / hp.warmup_steps
            t = min(1.0, (step - hp.warmup_steps) / max(1, total - hp.warmup_steps))
            return hp.min_lr_ratio + (1 - hp.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    def on_train_end(self) -> None:
        if self.settings.export and self.trainer.is_global_zero:
            check_export_target(self.settings.export, self.settings.overwrite_bundled)
            os.makedirs(os.path.dirname(os.path.abspath(self.settings.export)), exist_ok=True)
            dm = cast(Any, self.trainer).datamodule  # set by Lightning's data connector, undeclared on Trainer
            meta = {
                "kind": "search-distilled base",
                "steps": self.trainer.global_step,
                "data": getattr(dm, "stats", None),
                "teacher_temperature": dm.hparams.temperature if dm else None,
            }
            save_network(self.model.eval(), self.settings.export, meta=meta)
            print(f"[pretrain] exported {self.settings.export}")


def run_pretrain_cli(argv: list[str]) -> None:
    """``pdx pretrain [fit|validate] [LightningCLI flags]``: the project's LightningCLI
    (``runtime.entry``) on DistillModule + ShardDataModule; ``fit`` unless ``validate`` comes first.

    ``validate`` scores ``--model.init`` on the held-out games of the same split the recipe trains
    with (same shards, seed, ``val_fraction`` and ``exclude``): the teacher agreement of a network
    before distillation, or of an exported one after."""
    from pdx_lightning.runtime.entry import run_lightning  # noqa: PLC0415

    subcommand = "fit"
    if argv and argv[0] in ("fit", "validate"):
        subcommand, argv = argv[0], argv[1:]
    if argv and argv[0] in ("-h", "--help"):
        print(
            f"pdx pretrain: supervised search distillation (LightningCLI `{subcommand}` on DistillModule + "
            "ShardDataModule)\n`pdx pretrain validate --config C --model.init NET`: the held-out teacher "
            "agreement of NET on C's split\n"
        )
    run_lightning(
        DistillModule, [subcommand, *argv], datamodule_class=ShardDataModule, trainer_defaults={"log_every_n_steps": 10}
    )
