"""TensorBoard views of a fit: the HParams table and the policy of the online network against the base.

* :class:`HParamsSummary` writes the run's hyperparameters (self-play settings flattened as
  ``selfplay/temperature``, ``selfplay/n_games``, ...; the trainer's ``max_steps`` and world size)
  as an HParams session, with the metrics that matter as its columns. TensorBoard fills the columns
  from the run's own scalars of those names, so nothing is logged twice. (Lightning writes an HParams
  session only together with a ``hp_metric`` placeholder, which the configs switch off.) It also
  writes the Custom Scalars layout (:data:`LAYOUT`: losses, KLs and entropy, self-play, validation,
  optimizer, each group's curves on shared charts) and keeps Lightning's ``epoch`` scalar (always 0:
  a fit is one epoch of steps) out of TensorBoard.
* :class:`PolicySnapshot` draws, for a fixed set of positions, the move probabilities of two of the
  module's networks side by side (default: the frozen base π_base and the online π_θ) as an image
  (``policy/snapshot``), with each position's KL(π_base‖π_θ) (the forward KL of Eq. 7) and both
  entropies, every ``every_n_steps`` optimizer steps, at the start and at the end.

Both write on global rank 0 only. The HParams session is TensorBoard's own (every other logger
records the hyperparameters its way: MLflow params, ``hparams.yaml`` of ``CSVLogger``); the snapshot
goes to every logger that shows images (TensorBoard, MLflow, W&B: :mod:`pdx_lightning.callbacks.media`)
and is not drawn at all when none does (``CSVLogger`` alone: one info line).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import chess
import lightning as L
import numpy as np
import torch
from lightning.pytorch.loggers import TensorBoardLogger

from pdx_lightning.callbacks.media import MediaLog
from pdx_lightning.chesscore.moves import index_to_move
from pdx_lightning.chesscore.opening_files import parse_line
from pdx_lightning.chesscore.policy import entropy, forward_kl
from pdx_lightning.errors import CallbackSettingError
from pdx_lightning.nets.inference import evaluate_boards

__all__ = [
    "DEFAULT_HPARAM_METRICS",
    "DEFAULT_POSITIONS",
    "LAYOUT",
    "SEARCHED_HPARAM_METRICS",
    "SEARCHED_LAYOUT",
    "HParamsSummary",
    "PolicySnapshot",
    "drop_epoch",
    "flatten_hparams",
    "tensorboard_writers",
]

DEFAULT_HPARAM_METRICS = (
    "puzzles/acc",
    "puzzles/p_star_geo",
    "mates/acc_1",
    "mates/acc_2",
    "policy/entropy",
    "kl/forward_to_base",
    "kl/reverse_to_base",
    "loss/total",
    "selfplay/tau_mean",
    "selfplay/game_length",
    "perf/transitions_per_s",
)

# TensorBoard's Custom Scalars tab: {category: {chart: ["Multiline", [tag regexes]]}}; docs/metrics.md
# describes every tag. TensorBoard shows one tab for the whole logdir: it merges the layouts of every run,
# and categories of the same title into one. Each title names its trainer (PDX, searched), so runs of one
# trainer share their sections and the two trainers' sections stay apart, each numbered in its own order.
LAYOUT: dict[str, dict[str, list]] = {
    "PDX · 1 losses": {
        "loss terms (total, policy, value, explore)": ["Multiline", [r"loss/.*"]],
    },
    "PDX · 2 policy against the base": {
        "KL to the base (forward, reverse)": ["Multiline", [r"kl/forward_to_base", r"kl/reverse_to_base"]],
        "policy entropy (nats)": ["Multiline", [r"policy/entropy"]],
    },
    "PDX · 3 self-play": {
        "temperature τ and ratio ρ": [
            "Multiline",
            [r"selfplay/tau_mean", r"selfplay/rho_mean", r"selfplay/rho_below_1"],
        ],
        "advantage A (mean, sd)": ["Multiline", [r"selfplay/adv_mean", r"selfplay/adv_std"]],
        "results (share of games ended)": [
            "Multiline",
            [r"selfplay/white_win", r"selfplay/draw", r"selfplay/black_win"],
        ],
        "game length (plies)": ["Multiline", [r"selfplay/game_length"]],
        "games finished (running total)": ["Multiline", [r"selfplay/games_finished"]],
        "β": ["Multiline", [r"selfplay/beta"]],
    },
    "PDX · 4 validation (EMA network, every k steps)": {
        "accuracy (puzzles, mates in N)": ["Multiline", [r"puzzles/acc", r"mates/acc_\d+"]],
        "solution probability p* (geometric mean)": ["Multiline", [r"puzzles/p_star_geo", r"mates/p_star_geo_\d+"]],
        "puzzles: NLL and arithmetic-mean p*": ["Multiline", [r"puzzles/nll", r"puzzles/p_star_arith"]],
    },
    "PDX · 5 optimizer and speed": {
        "learning rates": ["Multiline", [r"lr-.*"]],
        "gradient norm": ["Multiline", [r"optim/grad_norm"]],
        "transitions per second": ["Multiline", [r"perf/transitions_per_s"]],
    },
}


# The same tab for searched self-play (``module: searched``, SearchedModule.tensorboard_layout)
SEARCHED_HPARAM_METRICS = (
    "puzzles/acc",
    "puzzles/p_star_geo",
    "mates/acc_1",
    "mates/acc_2",
    "loss/total",
    "loss/policy",
    "selfplay/target_entropy",
    "selfplay/game_length",
    "selfplay/positions_per_s",
)
SEARCHED_LAYOUT: dict[str, dict[str, list]] = {
    "searched · 1 losses": {
        "loss terms (total, policy CE to visits, value CE, KL to the base)": ["Multiline", [r"loss/.*"]],
        "β, the weight of the KL to the base (a BetaSchedule may vary it)": ["Multiline", [r"selfplay/beta"]],
    },
    "searched · 2 search targets": {
        "entropy of the visit targets (played plies, trained batch)": [
            "Multiline",
            [r"selfplay/target_entropy", r"replay/batch_target_entropy"],
        ],
        "most-visited move's share of the visits": ["Multiline", [r"selfplay/top_visit_share"]],
        "root Q (side to move)": ["Multiline", [r"selfplay/root_q"]],
        "policy entropy of the online network (nats)": ["Multiline", [r"policy/entropy"]],
    },
    "searched · 3 self-play": {
        "game length (plies) and games cut at max_plies": [
            "Multiline",
            [r"selfplay/game_length", r"selfplay/cut_share"],
        ],
        "games finished (running total)": ["Multiline", [r"selfplay/games_finished"]],
        "plies and network evaluations per step": ["Multiline", [r"selfplay/plies", r"selfplay/evaluations"]],
        "games and searched positions per second": [
            "Multiline",
            [r"selfplay/games_per_s", r"selfplay/positions_per_s"],
        ],
    },
    "searched · 4 replay buffer": {
        "fill (share of the capacity)": ["Multiline", [r"replay/fill"]],
        "positions live and admitted": ["Multiline", [r"replay/live", r"replay/admitted"]],
    },
    "searched · 5 validation (EMA network, every k steps)": LAYOUT["PDX · 4 validation (EMA network, every k steps)"],
    "searched · 6 optimizer and time": {
        "learning rates": ["Multiline", [r"lr-.*"]],
        "gradient norm": ["Multiline", [r"optim/grad_norm"]],
        "share of the step's time in self-play": ["Multiline", [r"time/play_share"]],
    },
}


def drop_epoch(logger: TensorBoardLogger) -> None:
    """Keep Lightning's ``epoch`` scalar out of this logger (it adds ``epoch`` to every logged row; a
    fit is one epoch of steps, so its card is a flat 0 at the top of the Scalars tab)."""
    if getattr(logger, "_pdx_drops_epoch", False):
        return
    log_metrics = logger.log_metrics

    def without_epoch(metrics: Mapping[str, float], step: int | None = None) -> None:
        log_metrics({k: v for k, v in metrics.items() if k != "epoch"}, step)

    logger.log_metrics = without_epoch  # type: ignore[method-assign]
    logger._pdx_drops_epoch = True  # type: ignore[attr-defined]


# name -> UCI line from the standard start (the history is part of the network's input)
DEFAULT_POSITIONS: dict[str, str] = {
    "start": "",
    "Ruy Lopez, 4.Ba4 Nf6": "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6",
    "Sicilian Najdorf, 6.Be3": "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6 b1c3 a7a6 c1e3",
    "QGD, 5.Bg5": "d2d4 d7d5 c2c4 e7e6 b1c3 g8f6 c1g5 f8e7",
}


def tensorboard_writers(trainer: L.Trainer) -> list:
    """The ``SummaryWriter`` of every TensorBoard logger (empty off global rank 0, and where Lightning's
    rank-zero guard hands out its dummy experiment)."""
    if not trainer.is_global_zero:
        return []
    from torch.utils.tensorboard import SummaryWriter  # noqa: PLC0415

    writers = [lg.experiment for lg in trainer.loggers if isinstance(lg, TensorBoardLogger)]
    return [w for w in writers if isinstance(w, SummaryWriter)]


def _plain(value: Any) -> bool | int | float | str:
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    return str(value)


def flatten_hparams(hparams: dict, prefix: str = "") -> dict[str, bool | int | float | str]:
    """Nested hyperparameters as ``{"a/b": scalar}`` (lists and None as text; ``_``-keys dropped)."""
    flat: dict[str, bool | int | float | str] = {}
    for key, value in hparams.items():
        if str(key).startswith("_"):
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_hparams(value, name + "/"))
        else:
            flat[name] = _plain(value)
    return flat


class HParamsSummary(L.Callback):
    """The run's hyperparameters as a TensorBoard HParams session, with ``metrics`` as its columns; the
    Custom Scalars layout; no ``epoch`` scalar.

    The module may name its own layout and columns (``tensorboard_layout``, ``hparam_metrics`` class
    attributes: searched self-play's :data:`SEARCHED_LAYOUT`); otherwise :data:`LAYOUT` and
    :data:`DEFAULT_HPARAM_METRICS`, PDX's.

    Args:
        metrics: scalar tags shown as HParams columns (tags the run never logs stay empty); None: the
            module's ``hparam_metrics``, else :data:`DEFAULT_HPARAM_METRICS`.
        layout: write the layout (TensorBoard's Custom Scalars tab) and drop ``epoch``.
    """

    def __init__(self, metrics: Sequence[str] | None = None, layout: bool = True) -> None:
        self.metrics = None if metrics is None else list(metrics)
        self.layout = layout

    def columns(self, pl_module: L.LightningModule) -> list[str]:
        """The HParams columns: ``metrics``, else the module's ``hparam_metrics``, else PDX's."""
        if self.metrics is not None:
            return self.metrics
        return list(getattr(pl_module, "hparam_metrics", DEFAULT_HPARAM_METRICS))

    def hparams(self, trainer: L.Trainer, pl_module: L.LightningModule) -> dict:
        """What the session records: the module's hyperparameters plus the trainer's budget and scale."""
        flat = flatten_hparams(dict(pl_module.hparams))
        flat["trainer/max_steps"] = int(trainer.max_steps)
        flat["trainer/world_size"] = int(trainer.world_size)
        return flat

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.layout:
            for lg in trainer.loggers:
                if isinstance(lg, TensorBoardLogger):
                    drop_epoch(lg)
        writers = tensorboard_writers(trainer)
        if not writers:
            return
        if self.layout:
            layout = getattr(pl_module, "tensorboard_layout", LAYOUT)
            for writer in writers:
                writer.add_custom_scalars(layout)
        from torch.utils.tensorboard.summary import hparams  # noqa: PLC0415

        exp, ssi, sei = hparams(self.hparams(trainer, pl_module), dict.fromkeys(self.columns(pl_module), 0.0))
        for writer in writers:
            fw = writer._get_file_writer()
            for summary in (exp, ssi, sei):
                fw.add_summary(summary)
            writer.flush()


class PolicySnapshot(L.Callback):
    """Move probabilities of two networks of the module on fixed positions, as an image (``policy/snapshot``).

    Args:
        every_n_steps: drawing period in optimizer steps (also at the start and at the end).
        positions: ``{name: position}``, each a UCI line from the standard start or a FEN (default:
            the start and three opening tabiyas).
        reference: the module attribute holding the reference network (``base``: π_base).
        network: the module attribute holding the network being trained (``online``: π_θ).
        top_k: moves shown per position: the union of both networks' ``top_k`` most likely moves.
    """

    def __init__(
        self,
        every_n_steps: int = 50,
        positions: dict[str, str] | None = None,
        reference: str = "base",
        network: str = "online",
        top_k: int = 5,
    ) -> None:
        if every_n_steps < 1 or top_k < 1:
            raise CallbackSettingError(
                f"PolicySnapshot needs every_n_steps >= 1 and top_k >= 1, got {every_n_steps}, {top_k}"
            )
        self.every, self.reference, self.network, self.top_k = every_n_steps, reference, network, top_k
        chosen = DEFAULT_POSITIONS if positions is None else positions
        self.positions = {
            name: parse_line(text, where=f"PolicySnapshot position {name!r}").board if text.strip() else chess.Board()
            for name, text in chosen.items()
        }
        self.drawn: list[int] = []
        self.media = MediaLog("PolicySnapshot")

    # ---- data -------------------------------------------------------------------------------
    def probabilities(self, pl_module: L.LightningModule) -> list[dict]:
        """Per position: the moves shown (SAN), both networks' probabilities of them, KL and entropies."""
        boards = list(self.positions.values())
        logps = []
        for attr in (self.reference, self.network):
            net = getattr(pl_module, attr)
            was = net.training
            net.eval()
            try:
                with torch.inference_mode():
                    logps.append(evaluate_boards(net, boards)[0])
            finally:
                net.train(was)
        ref, cur = logps
        legal = torch.isfinite(ref)  # (B, P): both networks' log-policies are −inf off the legal moves
        kl, h_ref, h_cur = forward_kl(ref, cur, legal), entropy(ref, legal), entropy(cur, legal)  # (B,) each
        rows = []
        for i, (name, board) in enumerate(self.positions.items()):
            p, q = ref[i].exp(), cur[i].exp()
            k = min(self.top_k, int(legal[i].sum()))
            idx = sorted(
                set(p.topk(k).indices.tolist()) | set(q.topk(k).indices.tolist()), key=lambda j: -float(p[j] + q[j])
            )
            rows.append(
                {
                    "name": name,
                    "moves": [board.san(index_to_move(j, board)) for j in idx],
                    "reference": [float(p[j]) for j in idx],
                    "network": [float(q[j]) for j in idx],
                    "kl": float(kl[i]),
                    "h_reference": float(h_ref[i]),
                    "h_network": float(h_cur[i]),
                }
            )
        return rows

    def image(self, rows: list[dict], step: int) -> np.ndarray:
        """The grouped bar charts as an ``(H, W, 3)`` uint8 image."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
        from matplotlib.figure import Figure  # noqa: PLC0415

        cols = min(2, len(rows))
        nrows = math.ceil(len(rows) / cols)
        fig = Figure(figsize=(5.2 * cols, 3.0 * nrows), dpi=80)
        for k, row in enumerate(rows):
            ax = fig.add_subplot(nrows, cols, k + 1)
            y = np.arange(len(row["moves"]))
            ax.barh(y - 0.2, row["reference"], height=0.4, color="0.6", label=f"{self.reference} (grey)")
            ax.barh(y + 0.2, row["network"], height=0.4, color="tab:blue", label=f"{self.network} (blue)")
            ax.set_yticks(y, row["moves"])
            ax.invert_yaxis()
            ax.set_xlim(0, max(0.05, 1.15 * max(row["reference"] + row["network"])))
            ax.set_xlabel("probability", fontsize=8)
            ax.set_title(
                f"{row['name']}\nKL({self.reference}‖{self.network}) {row['kl']:.3f}; entropy "
                f"H({self.reference}) {row['h_reference']:.2f}, H({self.network}) {row['h_network']:.2f}",
                fontsize=9,
            )
            ax.tick_params(labelsize=8)
            if k == 0:
                ax.legend(fontsize=8, loc="lower right")
        fig.suptitle(
            f"move probabilities at step {step}: {self.reference} (grey) and {self.network} (blue); "
            "KL and entropies H in nats",
            fontsize=10,
        )
        fig.tight_layout()
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        return np.asarray(canvas.buffer_rgba())[..., :3].copy()

    # ---- hooks ------------------------------------------------------------------------------
    def _draw(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.is_global_zero or not all(hasattr(pl_module, a) for a in (self.reference, self.network)):
            return
        if not self.media.targets(trainer, "images"):  # CSV only: no drawing (~1 s) for nobody
            return
        step = trainer.global_step
        img = self.image(self.probabilities(pl_module), step)
        self.media.image(trainer, "policy/snapshot", img, step)
        self.drawn.append(step)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._draw(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        if step % self.every == 0 and (not self.drawn or self.drawn[-1] != step):
            self._draw(trainer, pl_module)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self.drawn or self.drawn[-1] != trainer.global_step:
            self._draw(trainer, pl_module)
