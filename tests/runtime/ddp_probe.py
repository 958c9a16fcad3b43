"""A test-only Lightning callback that the subprocess DDP tests add to ``pdx fit``
(``tests/runtime/test_ddp_cli.py``).

Imported by the ``pdx`` ranks through ``PYTHONPATH`` (``class_path: ddp_probe.RankProbe``); not a test module.
Every rank appends one JSON line per event to ``<out>/rank<R>.jsonl``:

* ``{"event": "ema", "step": s, ...}`` at each batch start and at train end: the sha256 of the EMA's and the
  online network's parameters after ``s`` optimizer steps (the EMAUpdate of step ``s`` has run by then);
* ``{"event": "games", "step": s, ...}`` at each batch end: the sha256 of this rank's games (root FEN and
  move list of every game in flight) after step ``s``'s ply, their count, and the step's logged loss.

Every record carries the rank, the world size, the process id and the Trainer's precision.

``sleep`` slows every step down (seconds after each batch) so a test can SIGKILL the run mid-training.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import lightning as L


def params_hash(net) -> str:
    """sha256 of a network's parameters and buffers, in state_dict order."""
    return state_hash(net.state_dict())


def state_hash(state: dict) -> str:
    """sha256 of a state dict's names and tensor bytes, in its order."""
    h = hashlib.sha256()
    for k, v in state.items():
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def games_hash(boards) -> str:
    """sha256 of the games in flight: root FEN and UCI moves of each, in slot order."""
    text = "\n".join(b.root().fen() + " | " + " ".join(m.uci() for m in b.move_stack) for b in boards)
    return hashlib.sha256(text.encode()).hexdigest()


class RankProbe(L.Callback):
    def __init__(self, out: str, sleep: float = 0.0) -> None:
        self.out, self.sleep = out, sleep

    def _write(self, trainer, record: dict) -> None:
        os.makedirs(self.out, exist_ok=True)
        record = {
            **record,
            "rank": trainer.global_rank,
            "world": trainer.world_size,
            "pid": os.getpid(),
            "precision": str(trainer.precision),
        }
        with open(os.path.join(self.out, f"rank{trainer.global_rank}.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")

    def _ema(self, trainer, pl_module) -> None:
        self._write(
            trainer,
            {
                "event": "ema",
                "step": trainer.global_step,
                "ema": params_hash(pl_module.ema),
                "online": params_hash(pl_module.online),
            },
        )

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._ema(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        self._ema(trainer, pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        boards = pl_module.dataset.boards
        loss = trainer.callback_metrics.get("loss/total")
        self._write(
            trainer,
            {
                "event": "games",
                "step": trainer.global_step,
                "games": games_hash(boards),
                "n": len(boards),
                "loss": None if loss is None else float(loss),
            },
        )
        if self.sleep:
            time.sleep(self.sleep)


class StepProbe(L.Callback):
    """Per rank and step: the rank's own loss over its games (``training_step``'s output, before any
    synchronisation), its number of games, and the logged whole-batch values; the callbacks' order."""

    KEYS = ("loss/total", "loss/policy", "kl/forward_to_base", "selfplay/rho_mean", "selfplay/adv_std")

    def __init__(self, out: str) -> None:
        self.out = out

    def _write(self, trainer, record: dict) -> None:
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, f"steps{trainer.global_rank}.jsonl"), "a") as f:
            f.write(json.dumps({**record, "rank": trainer.global_rank}) + "\n")

    def on_train_start(self, trainer, pl_module) -> None:
        self._write(trainer, {"event": "callbacks", "names": [type(cb).__name__ for cb in trainer.callbacks]})

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        local = outputs["loss"] if isinstance(outputs, dict) else outputs
        logged = {k: float(trainer.callback_metrics[k]) for k in self.KEYS if k in trainer.callback_metrics}
        self._write(
            trainer,
            {
                "event": "step",
                "step": trainer.global_step,
                "local_loss": float(local),
                "n": len(pl_module.dataset.boards),
                "logged": logged,
            },
        )

    def on_train_end(self, trainer, pl_module) -> None:
        scores = [cb.history[-1] for cb in trainer.callbacks if type(cb).__name__ == "PuzzleValidation"]
        self._write(trainer, {"event": "validation", "step": scores[0][0], "scores": scores[0][1]} if scores else {})
