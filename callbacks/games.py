"""SelfPlayGames: finished self-play games as PGN files and tracker text during ``pdx fit``.

Every ``every_n_steps`` optimizer steps (and at the end of training) each rank appends the games it
finished since the last write — up to ``max_games`` of them, the first to finish — to
``<log dir>/selfplay/games_rank<R>.pgn``; rank 0 also shows ``text_games`` of them as text
(``selfplay/games``) in every logger that shows text (TensorBoard, MLflow, W&B:
:mod:`pdx_lightning.callbacks.media`; a ``CSVLogger`` gets the PGN files only).
The games come from the module's self-play dataset
(``SelfPlayDataset.finished_listeners``), at the moment they end, before their slot restarts.

A self-play game is played by the online policy as it was at each ply (it changes every step); the
``Round`` tag is the step the game ended at.
"""

from __future__ import annotations

import os
from pathlib import Path

import chess
import chess.pgn
import lightning as L
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from pdx_lightning.callbacks.media import MediaLog
from pdx_lightning.chesscore.pgn_record import game_pgn
from pdx_lightning.chesscore.rules import game_end
from pdx_lightning.errors import CallbackSettingError

__all__ = ["SelfPlayGames"]


class SelfPlayGames(L.Callback):
    """Write a sample of finished self-play games as PGN (every rank) and tracker text (rank 0).

    Args:
        every_n_steps: writing period in optimizer steps (also at the end of training).
        max_games: games kept per period and rank (the first to finish); None keeps all.
        text_games: games of each period shown as text in the loggers (rank 0; 0: none).
        directory: where the PGN files go (default ``<log dir>/selfplay``; the trainer's
            ``default_root_dir`` without a logger).
    """

    def __init__(
        self, every_n_steps: int = 50, max_games: int | None = 16, text_games: int = 2, directory: str | None = None
    ) -> None:
        if every_n_steps < 1 or (max_games is not None and max_games < 1) or text_games < 0:
            raise CallbackSettingError(
                "SelfPlayGames needs every_n_steps >= 1, max_games >= 1 (or None) and "
                f"text_games >= 0, got {every_n_steps}, {max_games}, {text_games}"
            )
        self.every, self.max_games, self.text_games = every_n_steps, max_games, text_games
        self.directory = directory
        self.pending: list[tuple[chess.Board, str, int]] = []
        self.finished = 0  # games this rank saw finish since the last write (kept or not)
        self.written = 0
        self.path: Path | None = None
        self._trainer: L.Trainer | None = None
        self._cfg = None
        self._last_flush = -1
        self.media = MediaLog("SelfPlayGames")

    # ---- collecting -------------------------------------------------------------------------
    def _on_game_end(self, board: chess.Board, result: str) -> None:
        self.finished += 1
        if self.max_games is not None and len(self.pending) >= self.max_games:
            return
        step = self._trainer.global_step if self._trainer is not None else 0
        self.pending.append((board, result, step))

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._trainer = trainer
        dataset = getattr(pl_module, "dataset", None)
        listeners = getattr(dataset, "finished_listeners", None)
        log_dir = trainer.log_dir  # a collective under DDP: every rank reads it here, together
        if listeners is None:
            return
        if self._on_game_end not in listeners:
            listeners.append(self._on_game_end)
        self._cfg = getattr(dataset, "cfg", None)
        ckpt_dir = getattr(trainer.checkpoint_callback, "dirpath", None)  # a ModelCheckpoint's, else None
        if (
            trainer.logger is not None
            and not isinstance(trainer.logger, (TensorBoardLogger, CSVLogger))
            and ckpt_dir
            and Path(ckpt_dir).name == "checkpoints"
        ):
            # MLflow, W&B: trainer.log_dir is their save_dir (the store's root); the run's own
            # directory is where Lightning put its checkpoints (<save_dir>/<experiment>/<run>/checkpoints)
            log_dir = str(Path(ckpt_dir).parent)
        base = Path(self.directory) if self.directory else Path(log_dir or trainer.default_root_dir) / "selfplay"
        self.path = base / f"games_rank{trainer.global_rank}.pgn"

    # ---- writing ----------------------------------------------------------------------------
    def to_pgn(self, board: chess.Board, result: str, step: int, rank: int) -> chess.pgn.Game:
        """One finished game as PGN, with the rule that ended it as the last move's comment."""
        cfg = self._cfg
        claim = bool(getattr(cfg, "claim_draws", False))
        cap = getattr(cfg, "max_plies", None) if getattr(cfg, "cap_result", "draw") == "draw" else None
        end = game_end(board, claim_draws=claim, max_plies=cap)
        if end is None and cfg is not None and board.ply() >= cfg.max_plies:
            reason, termination = f"{cfg.max_plies}-ply cap", "adjudication"
        else:
            reason, termination = (end.text, end.termination) if end else ("", "normal")
        # self-play games start from the standard position (a game's first moves are its opening)
        return game_pgn(
            board.root(),
            board.move_stack,
            event="pdx self-play",
            round=str(step),
            white="online",
            black="online",
            result=result,
            termination=termination,
            tags={"Rank": str(rank)},
            end_comment=reason,
        )

    def flush(self, trainer: L.Trainer) -> list[chess.pgn.Game]:
        """Write the pending games (PGN file; the loggers' text on rank 0) and return them."""
        games = [self.to_pgn(b, r, s, trainer.global_rank) for b, r, s in self.pending]
        finished, since = self.finished, max(self._last_flush, 0)
        self.pending, self.finished = [], 0
        self._last_flush = trainer.global_step
        if not games or self.path is None:
            return games
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            for g in games:
                print(g, file=f, end="\n\n")
            f.flush()
            os.fsync(f.fileno())
        self.written += len(games)
        shown = games[: self.text_games]
        if shown and trainer.is_global_zero:
            self.media.text(trainer, "selfplay/games", self.text(shown, finished, since, trainer), trainer.global_step)
        return games

    def text(self, shown: list[chess.pgn.Game], finished: int, since: int, trainer: L.Trainer) -> str:
        """The tracker text of one write: what the counts are, then each shown game as its own PGN block
        (TensorBoard and MLflow render markdown: a fenced block keeps the PGN's lines as they are)."""
        kept = f"the first {self.max_games} kept" if self.max_games is not None else "all kept"
        head = (
            f"Steps {since}–{trainer.global_step}: {finished} self-play games finished on rank 0 ({kept}, "
            f"{self.written} in `{self.path}` so far); {len(shown)} shown. The run's total across ranks "
            "is the scalar `selfplay/games_finished`."
        )
        blocks = []
        for k, g in enumerate(shown, 1):
            h = g.headers
            title = f"**Game {k}**: {h.get('Result', '*')}, {g.end().ply()} plies, ended at step {h.get('Round', '?')}"
            pgn = g.accept(chess.pgn.StringExporter(columns=80)).strip()  # str(g) is one unwrapped line of moves
            blocks.append(f"{title}\n\n```\n{pgn}\n```")
        return "\n\n".join([head, *blocks])

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step % self.every == 0:
            self.flush(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.pending or self._last_flush != trainer.global_step:
            self.flush(trainer)
