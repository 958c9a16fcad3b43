"""Images and text for whichever experiment trackers a fit logs to (``--trainer.logger``).

Lightning's loggers share ``log_metrics`` and ``log_hyperparameters`` but not images or text; the
:class:`~pdx_lightning.callbacks.tensorboard.PolicySnapshot` image and the
:class:`~pdx_lightning.callbacks.games.SelfPlayGames` text go through :class:`MediaLog`, which
writes them to every logger of the trainer that can show them:

* ``TensorBoardLogger``: ``SummaryWriter.add_image`` / ``add_text`` (the Images and Text tabs);
* ``MLFlowLogger``: ``MlflowClient.log_image`` (the run's image history, by step) and ``log_text``
  (an artifact ``<tag>/step_<N>.md``);
* ``WandbLogger``: its own ``log_image`` / ``log_text`` (a table of ``step``, ``text``).

A logger that has neither (``CSVLogger``: numbers only) is skipped with one info line per callback
and logger class; the numbers still go to it, and the games still go to the PGN files. Writes happen
on global rank 0 only (Lightning's loggers write there).
"""

from __future__ import annotations

from typing import Any

import lightning as L
import numpy as np
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger, WandbLogger
from lightning.pytorch.utilities import rank_zero_info

__all__ = ["MediaLog", "media_kind"]


def media_kind(logger: Any) -> str | None:
    """``tensorboard``, ``mlflow`` or ``wandb`` for a logger that shows images and text, else None."""
    for cls, kind in ((TensorBoardLogger, "tensorboard"), (MLFlowLogger, "mlflow"), (WandbLogger, "wandb")):
        if isinstance(logger, cls):
            return kind
    return None


class MediaLog:
    """Logs an image or a text to every capable logger of a trainer; names each incapable one once.

    Args:
        owner: the callback's name, for the skip line (``PolicySnapshot``).
    """

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.skipped: set[str] = set()  # logger classes already named in a skip line

    def targets(self, trainer: L.Trainer, what: str) -> list[tuple[str, Any]]:
        """``(kind, logger)`` of the loggers that show ``what`` (``images``/``text``); empty off rank 0."""
        if not trainer.is_global_zero:
            return []
        out = []
        for lg in trainer.loggers:
            kind = media_kind(lg)
            if kind is not None:
                out.append((kind, lg))
            elif (name := type(lg).__name__) not in self.skipped:
                self.skipped.add(name)
                rank_zero_info(
                    f"{self.owner}: {name} cannot show {what}; not logged there (TensorBoard, MLflow and W&B can)"
                )
        return out

    def image(self, trainer: L.Trainer, tag: str, image: np.ndarray, step: int) -> int:
        """Log an ``(H, W, 3)`` uint8 image under ``tag`` at ``step``; returns the loggers written."""
        done = 0
        for kind, lg in self.targets(trainer, "images"):
            if kind == "tensorboard":
                writer = lg.experiment
                if not hasattr(writer, "add_image"):  # Lightning's rank-zero dummy
                    continue
                writer.add_image(tag, image, step, dataformats="HWC")
            elif kind == "mlflow":
                lg.experiment.log_image(lg.run_id, image, key=tag, step=step)
            else:
                lg.log_image(key=tag, images=[image], step=step)
            done += 1
        return done

    def text(self, trainer: L.Trainer, tag: str, text: str, step: int) -> int:
        """Log markdown ``text`` under ``tag`` at ``step``; returns the loggers written."""
        done = 0
        for kind, lg in self.targets(trainer, "text"):
            if kind == "tensorboard":
                writer = lg.experiment
                if not hasattr(writer, "add_text"):
                    continue
                writer.add_text(tag, text, step)
            elif kind == "mlflow":
                lg.experiment.log_text(lg.run_id, text, f"{tag}/step_{step:07d}.md")
            else:
                lg.log_text(key=tag, columns=["step", "text"], data=[[str(step), text]], step=step)
            done += 1
        return done
