"""The supervised puzzle-tuned control (paper Section 3.6, Table 1's last row).

Fine-tunes the base by supervised learning on puzzle solutions instead of
self-play: at every solver position of every pool puzzle, with the true move
history (``Puzzle.positions()``: the Ruoss PGN or the Lichess FEN + setup move
and the line so far), the policy's cross-entropy to the marked solver move
over the legal moves. Same networks, optimizer, layerwise learning rates,
warmup and EMA as :class:`pdx_lightning.rl.module.PDXModule`, and the same step
budget as the RL cells (``--trainer.max_steps``), so its checkpoints load with
``pdx_lightning.nets.load_model`` (EMA weights) like any sweep cell.

The pool must be disjoint from every evaluation suite: ``exclude`` lists the
suites as evaluated (files plus their sample/rating selection, so a pool drawn
from the same database file is fine), and a pool puzzle sharing a ``PuzzleId``
or any solver position (FEN without the move clocks) with them raises
:class:`PoolOverlapError`;
``remove_overlap: true`` drops those puzzles instead, as the paper built its
pool (the Lichess database with both evaluation suites removed), and logs how
many.

Standalone::

    python -m pdx_lightning.supervised.control fit --model.pool '[data/puzzle_pool.csv]' \\
        --model.exclude '[{path: [data/tactics.csv]}, {path: [data/mates_in_1.csv]}]' --trainer.max_steps 150
    pdx sweep --config conf/sweep/cpu.yaml --control-only  # the sweep's control cell alone
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from typing import cast

import chess
import lightning as L
import torch
from lightning.pytorch.utilities.parsing import AttributeDict
from torch.utils.data import DataLoader, Dataset

from pdx_lightning import argtypes
from pdx_lightning.chesscore.encoding import encode_boards
from pdx_lightning.chesscore.moves import legal_mask, move_to_index
from pdx_lightning.chesscore.policy import masked_log_softmax
from pdx_lightning.evaluation.suite import Puzzle, SuiteSpec, load_suite
from pdx_lightning.nets import load_model
from pdx_lightning.runtime.checkpoint_meta import check_base, write_network_meta
from pdx_lightning.runtime.optim import check_ema_decay, document_optimizer_args, layerwise_adamw


class PoolOverlapError(ValueError):
    """The control's training pool shares puzzles or positions with an evaluation suite."""


def position_key(board: chess.Board) -> str:
    """A position's identity for the overlap check: the FEN without the half-move and move counters."""
    return " ".join(board.fen().split()[:4])


def overlap(pool: Sequence[Puzzle], suites: Sequence[Puzzle]) -> list[tuple[Puzzle, str]]:
    """Pool puzzles that share a PuzzleId or a solver position with ``suites``, each with the reason."""
    ids = {p.puzzle_id for p in suites}
    fens = {position_key(b) for p in suites for b in p.positions()}
    out = []
    for p in pool:
        if p.puzzle_id in ids:
            out.append((p, f"PuzzleId {p.puzzle_id}"))
        elif hit := next((k for k in map(position_key, p.positions()) if k in fens), None):
            out.append((p, f"position {hit}"))
    return out


def disjoint_pool(pool: Sequence[Puzzle], suites: Sequence[Puzzle], remove: bool = False) -> list[Puzzle]:
    """``pool`` checked against the evaluation ``suites``: raise on overlap, or drop it if ``remove``."""
    bad = overlap(pool, suites)
    if bad and not remove:
        shown = "; ".join(f"{p.source or p.puzzle_id}: {why}" for p, why in bad[:5])
        raise PoolOverlapError(
            f"the control's pool overlaps the evaluation suites in {len(bad)} of "
            f"{len(pool)} puzzles (by PuzzleId or solver-position FEN), e.g. {shown}; "
            f"remove them from the pool or set remove_overlap: true"
        )
    drop = {id(p) for p, _ in bad}
    return [p for p in pool if id(p) not in drop]


class SolverPositions(Dataset):
    """Every solver position of the pool with its marked move: ``(board with history, move)``."""

    def __init__(self, puzzles: Sequence[Puzzle]) -> None:
        self.items = [(b, p.line[2 * k]) for p in puzzles for k, b in enumerate(p.positions())]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[chess.Board, chess.Move]:
        return self.items[i]


def collate(items: list[tuple[chess.Board, chess.Move]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x (B, 112, 8, 8), legal mask (B, 4288), target policy index (B,))``."""
    boards = [b for b, _ in items]
    target = torch.tensor([move_to_index(m, b.turn) for b, m in items], dtype=torch.long)
    return torch.from_numpy(encode_boards(boards)), legal_mask(boards), target


class PuzzleControl(L.LightningModule):
    @functools.partial(document_optimizer_args, value_head_note=" (no loss reaches it: kept for symmetry)")
    def __init__(
        self,
        base: str = "base:small",
        pool: list[str] | None = None,
        exclude: list[SuiteSpec] | None = None,
        remove_overlap: bool = False,
        pool_sample: int | None = None,
        batch_size: int = 256,
        seed: int = 0,
        ema_decay: float = 0.995,
        lr_backbone: float = 3e-5,
        lr_final_block: float = 1e-4,
        lr_policy_head: float = 1e-4,
        lr_value_head: float = 3e-4,
        warmup_steps: int = 20,
        adam_betas: tuple[float, float] = (0.9, 0.98),
        weight_decay: float = 0.0,
    ) -> None:
        """
        Args:
            base: the network fine-tuned (``base:small``, ``random:<preset>``, ``.pt``, ``.ckpt``,
                ``.pb.gz``).
            pool: puzzle CSV(s) to train on (Lichess, Ruoss or generated format).
            exclude: every evaluation suite (files + selection); the pool must share no PuzzleId or solver
                position with them.
            remove_overlap: drop overlapping pool puzzles instead of raising PoolOverlapError.
            pool_sample: a seeded sample of this many pool puzzles per file (None = all).
            batch_size: solver positions per optimizer step (the sweep sets the RL cells' game count).
            seed: pool sampling and shuffling seed.
            ema_decay: α of the EMA the control is evaluated with, as in the RL cells.
            {optimizer_args}
        """
        super().__init__()
        if not pool:
            raise ValueError("PuzzleControl needs a pool of puzzle CSVs (--model.pool)")
        check = argtypes.check_number  # before any work: a negative rate or warm-up would train on
        check("--model.pool_sample", pool_sample, 1, argtypes.MAX_COUNT, integer=True, optional=True)
        check("--model.batch_size", batch_size, 1, argtypes.MAX_COUNT, integer=True)
        check("--model.seed", seed, 0, argtypes.MAX_SEED, integer=True)
        check_ema_decay(ema_decay, "--model.ema_decay")
        for key, lr in (
            ("lr_backbone", lr_backbone),
            ("lr_final_block", lr_final_block),
            ("lr_policy_head", lr_policy_head),
            ("lr_value_head", lr_value_head),
        ):
            check(f"--model.{key}", lr, 0)  # 0 keeps a group as it is
        check("--model.warmup_steps", warmup_steps, 0, argtypes.MAX_COUNT, integer=True)
        for beta in adam_betas:
            check("--model.adam_betas", beta, 0, 1, hi_open=True)
        check("--model.weight_decay", weight_decay, 0)
        self.save_hyperparameters(ignore=["exclude"])
        # plain dicts, so checkpoints stay loadable with torch.load(weights_only=True)
        self.hparams["exclude"] = [asdict(e) if is_dataclass(e) else dict(e) for e in exclude or []]
        self.online = load_model(base).requires_grad_(True).train()
        self.ema = load_model(base).requires_grad_(False).eval()
        self.dataset: SolverPositions | None = None

    @property
    def settings(self) -> AttributeDict:
        """``hparams`` as what ``save_hyperparameters`` made it (an AttributeDict: ``.pool``, ``.seed``, ...)."""
        return cast(AttributeDict, self.hparams)

    def train(self, mode: bool = True) -> PuzzleControl:
        super().train(mode)
        self.ema.eval()
        return self

    def setup(self, stage: str) -> None:
        if self.dataset is not None:
            return
        hp = self.settings
        pool = load_suite(hp.pool, sample=hp.pool_sample, seed=hp.seed).puzzles
        suites = [p for spec in hp.exclude for p in SuiteSpec(**spec).load().puzzles]
        kept = disjoint_pool(pool, suites, remove=hp.remove_overlap)
        if len(kept) < len(pool):
            print(f"control: removed {len(pool) - len(kept)} pool puzzles that overlap the evaluation suites")
        if not kept:
            raise ValueError(f"control: no pool puzzles left to train on ({hp.pool})")
        self.dataset = SolverPositions(kept)
        self.pool_size = len(kept)

    def train_dataloader(self) -> DataLoader:
        assert self.dataset is not None  # built by setup(), which Lightning runs first
        g = torch.Generator().manual_seed(self.settings.seed)
        return DataLoader(
            self.dataset,
            batch_size=self.settings.batch_size,
            shuffle=True,
            generator=g,
            collate_fn=collate,
            drop_last=len(self.dataset) >= self.settings.batch_size,
        )

    def configure_optimizers(self):
        return layerwise_adamw(self.online, self.hparams)

    def configure_callbacks(self):
        from pdx_lightning.callbacks import EMAUpdate  # noqa: PLC0415

        return [EMAUpdate(decay=self.settings.ema_decay)]

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        x, mask, target = batch
        log_p = masked_log_softmax(self.online(x).policy, mask)  # (B, 4288)
        loss = -log_p.gather(1, target[:, None]).squeeze(1).mean()  # CE to the solver move
        acc = (log_p.argmax(1) == target).float().mean()
        self.log_dict({"loss/policy_ce": loss.detach(), "control/train_acc": acc}, on_step=True, batch_size=x.shape[0])
        self.log("loss", loss.detach(), prog_bar=True, logger=False, batch_size=x.shape[0])
        return loss

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """What ``load_model`` needs (model config), and the base by name + hash as PDXModule does."""
        write_network_meta(checkpoint, self.online, self.settings.base)
        checkpoint["pdx_control"] = {"pool": list(self.settings.pool), "pool_size": getattr(self, "pool_size", None)}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """A resume (the sweep resumes the control from last.ckpt) refuses a base file that changed."""
        check_base(checkpoint, self.settings.base)


def main(args: list[str] | None = None) -> None:
    """``python -m pdx_lightning.supervised.control fit|validate ...``: the project's LightningCLI
    (``runtime.entry``: atomic checkpoints, weights_only resume, log continuity) on :class:`PuzzleControl`."""
    from pdx_lightning.runtime.entry import run_lightning  # noqa: PLC0415

    run_lightning(PuzzleControl, args, trainer_defaults={"log_every_n_steps": 1})


if __name__ == "__main__":
    from pdx_lightning.runtime.checkpoint_read import CheckpointLoadError
    from pdx_lightning.runtime.preflight import PreflightError

    try:
        main()
    except (PreflightError, CheckpointLoadError) as e:  # before any work (or a refused resume): a message
        print(f"control: error: {e}", file=sys.stderr)
        sys.exit(2)
