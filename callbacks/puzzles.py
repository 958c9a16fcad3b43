"""PuzzleValidation: tactical accuracy of the EMA network every k steps."""
from __future__ import annotations

import lightning as L
import torch

from pdx_lightning.nets import DATA_DIR


class PuzzleValidation(L.Callback):
    """Scores a puzzle suite (and mate suites) with the **EMA** weights every ``every_n_steps``.

    Logs ``puzzles/acc``, ``puzzles/p_star_geo``, ``puzzles/p_star_arith``,
    ``puzzles/nll`` and ``mates/acc_N``, ``mates/p_star_geo_N`` per mate depth N
    (scorer: ``pdx_lightning.evaluation.puzzles.evaluate_for_validation``).
    The EMA is identical on every rank, so rank 0 scores and logs alone.

    Args:
        suite: puzzle CSV (Lichess format); default the bundled ``data/tactics.csv``.
        mates: mate-suite CSVs; default the bundled ``data/mates_in_*.csv``.
        every_n_steps: scoring period in optimizer steps (also at step 0 and at the end).
        sample: score a seeded sample of this many puzzles per file (None = all).
        micro_batch: positions per network call.
    """

    def __init__(self, suite: str | None = None, mates: list[str] | None = None, every_n_steps: int = 100,
                 sample: int | None = 300, seed: int = 0, micro_batch: int = 512) -> None:
        if every_n_steps < 1:
            raise ValueError(f"every_n_steps must be >= 1, got {every_n_steps}")
        self.suite_path = suite if suite is not None else _bundled("tactics.csv")
        self.mate_paths = mates if mates is not None else sorted(str(p) for p in DATA_DIR.glob("mates_in_*.csv"))
        self.every, self.sample, self.seed, self.micro_batch = every_n_steps, sample, seed, micro_batch
        self.history: list[tuple[int, dict[str, float]]] = []

    def setup(self, trainer, pl_module, stage: str) -> None:
        from pdx_lightning.evaluation.suite import load_suite  # noqa: PLC0415

        if not self.suite_path and not self.mate_paths:
            raise FileNotFoundError("PuzzleValidation: no suite given and no bundled data/tactics.csv or mate suites")
        self.puzzles = load_suite(self.suite_path, sample=self.sample, seed=self.seed).puzzles if self.suite_path else []
        self.mates = load_suite(self.mate_paths, sample=self.sample, seed=self.seed).puzzles if self.mate_paths else []

    def _score(self, trainer, pl_module) -> None:
        if not trainer.is_global_zero:
            return
        from pdx_lightning.evaluation.puzzles import evaluate_for_validation  # noqa: PLC0415

        with torch.inference_mode():
            metrics = evaluate_for_validation(pl_module.ema, self.puzzles, self.mates, self.micro_batch)
        self.history.append((trainer.global_step, metrics))
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)

    def on_train_start(self, trainer, pl_module) -> None:
        self._score(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step % self.every == 0:
            self._score(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        if not self.history or self.history[-1][0] != trainer.global_step:
            self._score(trainer, pl_module)


def _bundled(name: str) -> str | None:
    path = DATA_DIR / name
    return str(path) if path.is_file() else None
