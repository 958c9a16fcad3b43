"""PuzzleValidation: tactical accuracy of the EMA network, every k steps or in Lightning's validation loop."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader
from torchmetrics import Metric

from pdx_lightning.callbacks.media import MediaLog
from pdx_lightning.errors import CallbackSettingError
from pdx_lightning.nets import DATA_DIR
from pdx_lightning.runtime.ranks import rank_world


class SuiteBatch:
    """The loaded puzzle and mate suites as one validation-loop item.

    A plain class: Lightning's batch transfer walks dataclasses and namedtuples (and cannot
    rebuild frozen ones), but passes other objects through untouched.
    """

    def __init__(self, puzzles: Sequence, mates: Sequence) -> None:
        self.puzzles, self.mates = list(puzzles), list(mates)

    @property
    def size(self) -> int:
        return len(self.puzzles) + len(self.mates)


class SuiteSums(Metric):
    """The validation sums of each rank's share of the suites, added across ranks on ``compute``
    (torchmetrics' ``dist_reduce_fx="sum"``: one all-reduce per scoring).

    One row for the puzzles and one per mate depth, each (n, solved, Σ ℓ, Σ p*)
    (``evaluation.puzzle_scoring.validation_sums``)."""

    full_state_update = False
    sums: torch.Tensor

    def __init__(self, groups: int) -> None:
        super().__init__(sync_on_compute=True, compute_with_cache=False)
        self.add_state("sums", default=torch.zeros(groups, 4, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, sums: torch.Tensor) -> None:
        self.sums += sums.to(self.sums)

    def compute(self) -> torch.Tensor:
        return self.sums


class PuzzleValidation(L.Callback):
    """Scores a puzzle suite (and mate suites) with the **EMA** weights every ``every_n_steps``.

    Logs ``puzzles/acc``, ``puzzles/p_star_geo``, ``puzzles/p_star_arith``,
    ``puzzles/nll`` and ``mates/acc_N``, ``mates/p_star_geo_N`` per mate depth N
    (``pdx_lightning.evaluation.puzzle_scoring.validation_sums`` and ``validation_metrics``).
    Under DDP each rank scores every world_size-th puzzle of the suites (the EMA is identical on
    every rank) and the sums are added across ranks with torchmetrics (:class:`SuiteSums`): every
    rank gets the numbers one process scoring the whole suites would, and rank 0 logs them.

    It also serves Lightning's validation loop (``pdx validate``): ``PDXModule`` builds one with
    :meth:`of_files` from its ``val_suite``/``val_mates`` and takes its :meth:`val_dataloader`
    and :meth:`score`, so the training module never imports the evaluation layer.

    Args:
        suite: puzzle CSV (Lichess format); default the bundled ``data/tactics.csv``. A relative path
            that does not exist from the working directory is looked up from the repository
            (``data/tactics.csv`` in a config works from anywhere).
        mates: mate-suite CSVs (relative paths as ``suite``); default the bundled ``data/mates_in_*.csv``.
        every_n_steps: scoring period in optimizer steps (also at step 0 and at the end).
        sample: score a seeded sample of this many puzzles per file (None = all).
        seed: the sample's seed.
        micro_batch: positions per network call.
    """

    def __init__(
        self,
        suite: str | None = None,
        mates: list[str] | None = None,
        every_n_steps: int = 100,
        sample: int | None = 300,
        seed: int = 0,
        micro_batch: int = 512,
    ) -> None:
        if every_n_steps < 1:
            raise CallbackSettingError(f"PuzzleValidation needs every_n_steps >= 1, got {every_n_steps}")
        self.suite_path = _in_repo(suite) if suite is not None else _bundled("tactics.csv")
        self.mate_paths = (
            [_in_repo(m) for m in mates]
            if mates is not None
            else sorted(str(p) for p in DATA_DIR.glob("mates_in_*.csv"))
        )
        self.every, self.sample, self.seed, self.micro_batch = every_n_steps, sample, seed, micro_batch
        self.history: list[tuple[int, dict[str, float]]] = []
        self.media = MediaLog("PuzzleValidation")
        self._suites: SuiteBatch | None = None

    @classmethod
    def of_files(
        cls, suite: str | None, mates: Sequence[str] | None, *, sample: int | None = None, micro_batch: int = 512
    ) -> PuzzleValidation:
        """Exactly these files, no bundled defaults (``None`` = none of that kind): ``PDXModule``'s
        ``val_suite``/``val_mates``/``val_sample`` for Lightning's validation loop."""
        cb = cls(sample=sample, micro_batch=micro_batch)
        cb.suite_path, cb.mate_paths = suite or None, list(mates or [])
        return cb

    def load(self) -> SuiteBatch:
        """Read (once) and return the suites; a missing or malformed file raises here, named."""
        if self._suites is None:
            from pdx_lightning.evaluation.suite import load_suite  # noqa: PLC0415

            if not self.suite_path and not self.mate_paths:
                raise FileNotFoundError(
                    "PuzzleValidation: no suite given and no bundled data/tactics.csv or mate suites"
                )
            puzzles = load_suite(self.suite_path, sample=self.sample, seed=self.seed).puzzles if self.suite_path else []
            mates = load_suite(self.mate_paths, sample=self.sample, seed=self.seed).puzzles if self.mate_paths else []
            self._suites = SuiteBatch(puzzles, mates)
        return self._suites

    def score(self, model: torch.nn.Module, suites: SuiteBatch | None = None) -> dict[str, float]:
        """The metrics of ``model`` on ``suites`` (default: this callback's, loaded once). Under DDP every
        rank must call it: each scores its share and the sums are all-reduced (:class:`SuiteSums`)."""
        from pdx_lightning.evaluation.puzzle_scoring import (  # noqa: PLC0415
            mate_depths,
            validation_metrics,
            validation_sums,
        )

        suites = suites if suites is not None else self.load()
        rank, world = rank_world()
        depths = mate_depths(suites.mates)
        sums = SuiteSums(1 + len(depths)).to(next(model.parameters()).device)
        with torch.inference_mode():
            share = validation_sums(
                model, suites.puzzles[rank::world], suites.mates[rank::world], depths, self.micro_batch
            )
        sums.update(share)
        return validation_metrics(sums.compute(), depths, puzzles=bool(suites.puzzles))

    def val_dataloader(self) -> DataLoader:
        """The suites as one item, for a module's ``val_dataloader`` (scored batched by :meth:`score`)."""
        # a list is a map-style dataset to DataLoader (torch types the argument as Dataset)
        return DataLoader([self.load()], batch_size=None, collate_fn=lambda b: b)  # type: ignore[arg-type]

    # ---- periodic scoring during fit --------------------------------------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        self.load()

    def _score(self, trainer, pl_module) -> None:
        metrics = self.score(pl_module.ema)  # every rank its share, summed across ranks
        self.history.append((trainer.global_step, metrics))
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.log_metrics(metrics, step=trainer.global_step)
            self.media.text(trainer, "validation/table", self.table(), trainer.global_step)

    def table(self) -> str:
        """Every scoring so far as markdown tables, one row per scoring (the tracker's text tab reads it
        at the validation's own cadence, unsmoothed, where the scalar charts smooth 7 points away).

        One narrow table per group (:func:`table_groups`: the puzzles' four values, each mate value by
        depth), its tags named above it and short one-word headers below: TensorBoard's Text tab squeezes
        a table wider than its card until the headers break mid-word."""
        names = list(self.history[-1][1]) if self.history else []
        out = ["EMA network on the validation suites, every scoring:"]
        for title, columns in table_groups(names):
            head = "| step | " + " | ".join(label for label, _ in columns) + " |"
            rule = "|---:" * (len(columns) + 1) + "|"
            rows = [
                f"| {step} | " + " | ".join(f"{m.get(n, float('nan')):.4f}" for _, n in columns) + " |"
                for step, m in self.history
            ]
            out += ["", title, "", head, rule, *rows]
        return "\n".join(out)

    def on_train_start(self, trainer, pl_module) -> None:
        self._score(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step % self.every == 0:
            self._score(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        if not self.history or self.history[-1][0] != trainer.global_step:
            self._score(trainer, pl_module)


# what a validation value is, as a table header and in words (markdown: p\* is not emphasis)
_KINDS = {
    "acc": ("acc", "accuracy"),
    "p_star_geo": ("p\\* geo", "geometric-mean p\\*"),
    "p_star_arith": ("p\\* arith", "arithmetic-mean p\\*"),
    "nll": ("NLL", "NLL"),
}


def table_groups(names: Sequence[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The validation table's groups, in the order ``names`` first shows them: ``(title, [(header, tag)])``.

    The tags of one suite without a depth (``puzzles/acc``, ``puzzles/nll``, ...) are one group, headed
    by their kind (``acc``, ``NLL``); a value per depth (``mates/acc_N``) is a group of its own, headed by
    the depths (``N=1``, ...). Each title names its tags, so every header stays one short word."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for name in names:
        prefix, _, kind = name.rpartition("/")
        stem, sep, depth = kind.rpartition("_")
        if sep and depth.isdigit():
            groups.setdefault((prefix, stem), []).append((f"N={depth}", name))
        else:
            groups.setdefault((prefix, ""), []).append((_KINDS.get(kind, (kind.replace("_", "\\_"),))[0], name))
    out = []
    for (prefix, stem), columns in groups.items():
        if stem:
            what = _KINDS.get(stem, ("", stem.replace("_", "\\_")))[1]
            title = f"**{prefix}: {what} by N** (`{prefix}/{stem}_N`)"
            out.append((title, sorted(columns, key=lambda c: int(c[0][2:]))))
        else:
            out.append((f"**{prefix}** ({', '.join(f'`{n}`' for _, n in columns)})", columns))
    return out


def _bundled(name: str) -> str | None:
    path = DATA_DIR / name
    return str(path) if path.is_file() else None


def _in_repo(path: str) -> str:
    """``path``, or the repository's file of that relative path when ``path`` is not found from here."""
    if not path or Path(path).is_absolute() or Path(path).exists():
        return path
    candidate = DATA_DIR.parent / path
    return str(candidate) if candidate.exists() else path
