"""Batched PUCT: many games searched at once, every simulation wave's leaves in one network call.

A :class:`BatchedSearch` holds ``slots`` games in flight, each with its position (a game of the compiled
chess core, history included) and its search tree. :meth:`BatchedSearch.search` takes python-chess
boards, one per slot to search: a board whose moves continue what the slot last searched keeps the
slot's tree (Lc0's tree reuse, the opponent's moves included); any other board starts the slot afresh.
The trees descend sequentially each (the real Lc0 with one thread and minibatches of one visits the same
nodes); across slots the playouts run in waves, so the network sees one batch per wave.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import chess
import numpy as np
import torch

from pdx_lightning.chesscore.boundary import LEGAL_STRIDE
from pdx_lightning.chesscore.native_core import NativeCore
from pdx_lightning.errors import UserError
from pdx_lightning.search.forest import Forest, NoLegalMoveError, RootStats
from pdx_lightning.search.settings import SearchSettings


class SearchInputError(UserError, ValueError):
    """A board the search cannot take (a finished game, a board no chess core can hold)."""


@dataclass(frozen=True)
class SearchResult:
    """One slot's search: the best move, the principal variation and the root's statistics."""

    best: chess.Move
    pv: list[chess.Move]
    root: RootStats

    def visits(self) -> dict[chess.Move, int]:
        """Visits per root move (every legal move, 0 where unvisited)."""
        return {m: int(n) for m, n in zip(self.root.moves, self.root.visits, strict=True)}

    @property
    def nodes(self) -> int:
        return self.root.root_visits

    @property
    def q(self) -> float:
        """The best move's Q (W − L for the side to move)."""
        i = self.root.moves.index(self.best)
        return float(self.root.q[i])


@dataclass(frozen=True)
class RootNoise:
    """Dirichlet noise at every searched root (self-play's exploration, as AlphaZero and Lc0 apply it):
    p ← (1 − eps)·p + eps·η, η ~ Dir(alpha) over the root's moves, drawn from ``rng``."""

    alpha: float
    eps: float
    rng: np.random.Generator


class BatchedSearch:
    """Search up to ``slots`` games at once with ``model`` (the network seam: ``forward(x) -> NetOutput``);
    ``reuse=False`` searches every position from an empty tree and an empty cache."""

    def __init__(
        self,
        model: torch.nn.Module,
        settings: SearchSettings,
        slots: int = 1,
        micro_batch: int = 1024,
        reuse: bool = True,
    ) -> None:
        self.model = model.eval()
        self.reuse = reuse
        self.settings = settings
        self.slots = slots
        self.micro_batch = micro_batch
        self.core = NativeCore(slots)
        self.forest = Forest(slots, settings)
        self._stack: list[list[chess.Move] | None] = [None] * slots  # moves the slot's tree root stands after
        self._root_fen: list[str | None] = [None] * slots
        self.device = next(model.parameters()).device
        self.evaluations = 0  # leaves sent to the network
        self.waves = 0

    # ---- positions --------------------------------------------------------------------------
    def _sync(self, slot: int, board: chess.Board) -> None:
        """Put ``board`` into ``slot``: advance the slot's tree by the new moves when ``board`` continues
        the slot's last position, else start the slot afresh."""
        if board.is_game_over(claim_draw=False) or not any(board.legal_moves):
            raise SearchInputError(f"slot {slot}: the position has no legal move ({board.fen()})")
        root_fen = board.root().fen()
        stack = board.move_stack
        known = self._stack[slot]
        if (
            self.reuse
            and known is not None
            and self._root_fen[slot] == root_fen
            and len(stack) >= len(known)
            and stack[: len(known)] == known
        ):
            for move in stack[len(known) :]:
                self.core.push(slot, move)
                self.forest.advance(slot, self.core, slot, move)
        else:
            self.core.set_board(slot, board)
            try:
                self.forest.reset(slot, self.core, slot)
            except NoLegalMoveError as e:
                raise SearchInputError(f"slot {slot}: {e}") from None
        self._stack[slot] = list(stack)
        self._root_fen[slot] = root_fen

    def forget(self, slot: int) -> None:
        """Drop ``slot``'s tree (its next board starts afresh: a new game)."""
        self._stack[slot] = None
        self._root_fen[slot] = None

    # ---- the search -------------------------------------------------------------------------
    @torch.inference_mode()
    def _network(self, planes: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, wdl = [], []
        for i in range(0, len(planes), self.micro_batch):
            x = torch.from_numpy(planes[i : i + self.micro_batch]).to(self.device)
            out = self.model(x)
            ix = torch.from_numpy(legal[i : i + self.micro_batch]).to(self.device)
            logits.append(torch.gather(out.policy.float(), 1, ix).cpu())
            wdl.append(torch.softmax(out.wdl.float(), dim=-1).cpu())
        return (
            np.ascontiguousarray(torch.cat(logits).numpy(), dtype=np.float32),
            np.ascontiguousarray(torch.cat(wdl).numpy(), dtype=np.float32),
        )

    def _waves(self, active: np.ndarray, target: int, stop: threading.Event | None) -> None:
        """Playouts in waves until every tree in ``active`` reached ``target`` root visits (or ``stop``)."""
        n = len(active)
        planes = np.empty((n, 112, 8, 8), np.float32)
        legal = np.empty((n, LEGAL_STRIDE), np.int64)
        count = np.empty(n, np.int32)
        while len(active):
            k = len(active)
            pending = self.forest.gather(active, np.full(k, target, np.int32), planes[:k], legal[:k], count[:k])
            rows = np.flatnonzero(pending)
            if not len(rows):
                break
            logits, wdl = self._network(planes[rows], legal[rows])
            self.forest.scatter(active[rows], logits, wdl)
            self.evaluations += len(rows)
            self.waves += 1
            active = active[rows]
            if stop is not None and stop.is_set():
                break

    def search(
        self,
        boards: Sequence[chess.Board],
        slots: Sequence[int] | None = None,
        nodes: int | None = None,
        stop: threading.Event | None = None,
        noise: RootNoise | None = None,
    ) -> list[SearchResult]:
        """Search ``boards[i]`` in slot ``slots[i]`` (default: slot i) to ``nodes`` root visits (default:
        the settings'), all at once; one :class:`SearchResult` per board. ``stop``, once set (by another
        thread: a UCI ``stop``), ends the search after the wave in flight, the root evaluated at least:
        the results are then those of the visits made so far. ``noise`` mixes Dirichlet noise into every
        root once it is expanded; each slot then searches from a fresh tree (as Lc0's self-play does)."""
        slot_ids = list(range(len(boards))) if slots is None else list(slots)
        if len(slot_ids) != len(boards):
            raise ValueError(f"{len(boards)} boards for {len(slot_ids)} slots")
        if len(set(slot_ids)) != len(slot_ids) or any(not 0 <= s < self.slots for s in slot_ids):
            raise ValueError(f"slots must be distinct and in [0, {self.slots}), got {slot_ids}")
        target = self.settings.nodes if nodes is None else SearchSettings.check_nodes(nodes)
        for s, b in zip(slot_ids, boards, strict=True):
            if noise is not None:
                self.forget(s)
            self._sync(s, b)
        active = np.asarray(slot_ids, np.int32)
        self.forest.begin(active)
        if noise is not None:  # expand every root (one visit), mix the noise in, then search on
            self._waves(active, 1, None)
            for s in slot_ids:
                k = len(self.forest.root(s).moves)
                self.forest.root_noise(s, noise.rng.dirichlet(np.full(k, noise.alpha)), noise.eps)
        self._waves(active, target, stop)
        results = []
        for s in slot_ids:
            pv = self.forest.pv(s)
            results.append(SearchResult(best=pv[0], pv=pv, root=self.forest.root(s)))
        return results
