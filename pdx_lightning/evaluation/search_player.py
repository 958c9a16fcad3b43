"""The arena's ``search[nodes=N,...]:MODEL`` player: a network inside pdx's PUCT search (Lc0's semantics).

All games in which the player is to move are searched at once (:class:`~pdx_lightning.search.BatchedSearch`:
one network call per simulation wave). Each game keeps its own search tree and network cache between its
moves (``reuse=1``, the default: as the real Lc0 plays a game in a GUI, the opponent's move included), or
searches every move afresh (``reuse=0``). A game's moves depend on that game only, never on the schedule.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import chess
import numpy as np
import torch

from pdx_lightning.evaluation.arena_game import Game
from pdx_lightning.search import BatchedSearch, SearchSettings

SLOTS = 1024  # games whose trees are kept; beyond, the least recently searched game's tree is dropped


class SearchPlayer:
    """A network searched with pdx's PUCT; reports the root's W/D/L (for adjudication) with each move."""

    has_value_head = True

    def __init__(self, label: str, model: torch.nn.Module, settings: SearchSettings, reuse: bool = True) -> None:
        self.label, self.settings, self.reuse = label, settings, reuse
        self.search = BatchedSearch(model, settings, slots=SLOTS, reuse=reuse)
        self._slot: OrderedDict[int, int] = OrderedDict()  # game id -> slot, least recently searched first
        self.forwards = 0

    def _slot_of(self, game_id: int, taken: set[int]) -> int:
        if game_id in self._slot:
            self._slot.move_to_end(game_id)
            return self._slot[game_id]
        if len(self._slot) < SLOTS:
            slot = len(self._slot)
        else:
            old = next(g for g in self._slot if self._slot[g] not in taken)
            slot = self._slot.pop(old)
        self.search.forget(slot)
        self._slot[game_id] = slot
        return slot

    def choose(self, games: Sequence[Game]) -> list[tuple[chess.Move, np.ndarray | None]]:
        taken: set[int] = set()
        slots = []
        for g in games:
            s = self._slot_of(g.id, taken)
            taken.add(s)
            slots.append(s)
        waves = self.search.waves
        results = self.search.search([g.board for g in games], slots)
        self.forwards += self.search.waves - waves
        out: list[tuple[chess.Move, np.ndarray | None]] = []
        for r in results:
            q, d = r.root.root_q, r.root.root_d
            wdl = np.array([(1.0 + q - d) / 2, d, (1.0 - q - d) / 2], dtype=np.float32).clip(0.0, 1.0)
            out.append((r.best, wdl))
        return out

    def close(self) -> None:
        pass
