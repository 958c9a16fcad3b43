"""The arena's players, behind one protocol: a network (argmax or sampled), Stockfish, any UCI engine.

A network makes **one** batched forward pass over all games in which it is to move (history from
``GameHistory`` ring buffers, planes by ``encode_rows``) and plays the argmax of its policy, or
sampled, a draw from its play distribution μ ∝ π^{1/τ} (Eq. 6; τ ``"adaptive"`` for τ = H(own WDL),
Eq. 5, the adaptive arms' behaviour policy; ``1`` for raw π). ``sf:...`` players are Stockfish
anchors (``pdx_lightning.engines.stockfish``) and ``uci:...`` players any UCI engine
(``pdx_lightning.engines.external``), one move at a time per engine process (``--engine-procs``
processes per player search in parallel). ``search[nodes=N,...]:MODEL`` players search with pdx's own
PUCT (Lc0's semantics), all their games at once (``evaluation.search_player``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import chess
import chess.engine
import numpy as np
import torch

from pdx_lightning.chesscore.encoding import N_PLANES, encode_rows
from pdx_lightning.chesscore.moves import index_to_move, legal_mask
from pdx_lightning.chesscore.policy import play_temperature, tempered_log_probs
from pdx_lightning.engines.external import is_uci_spec, parse_uci_spec
from pdx_lightning.engines.stockfish import RestartingEngine, is_stockfish_spec, open_engine, parse_stockfish_spec
from pdx_lightning.evaluation.arena_game import ArenaError, Game
from pdx_lightning.nets.inference import evaluate
from pdx_lightning.search.spec import is_search_spec, parse_search_spec


class Player(Protocol):
    """What the arena's game loop asks of a player."""

    label: str
    has_value_head: bool  # choose() gives the mover's WDL with each move: adjudication needs both players'

    def choose(self, games: Sequence[Game]) -> Sequence[tuple[chess.Move | None, np.ndarray | None]]:
        """The move (and the mover's WDL, or None) in each of ``games``, where this player is to move (an
        engine may return no move: ``Game.play`` rejects it)."""
        ...

    def close(self) -> None:
        """Release the player's engine process, if any."""
        ...


class NetPlayer:
    """A network: one batched forward over all its games, argmax or sampled from μ."""

    has_value_head = True

    def __init__(
        self, label: str, model: torch.nn.Module, sample: bool = False, temperature: str | float = 1.0, seed: int = 0
    ) -> None:
        self.label, self.model, self.sample = label, model, sample
        self.temperature = temperature if temperature == "adaptive" else float(temperature)
        self.gen = torch.Generator().manual_seed(seed)
        self.forwards = 0
        self._buf = np.empty((0, N_PLANES, 8, 8), dtype=np.float32)

    def choose(self, games: Sequence[Game]) -> list[tuple[chess.Move, np.ndarray | None]]:
        B = len(games)
        if self._buf.shape[0] < B:
            self._buf = np.empty((max(B, 2 * self._buf.shape[0]), N_PLANES, 8, 8), dtype=np.float32)
        x = encode_rows([g.hist.row(g.board) for g in games], out=self._buf[:B])  # (B, 112, 8, 8)
        mask = legal_mask([g.board for g in games], [g.legal for g in games])
        logp, wdl = evaluate(self.model, torch.from_numpy(x), mask)  # (B, 4288), (B, 3)
        self.forwards += 1
        if self.sample:
            probs = tempered_log_probs(logp, mask, play_temperature(wdl, self.temperature)).exp()
            pick = torch.multinomial(probs, 1, generator=self.gen).squeeze(1)
        else:
            pick = logp.argmax(dim=1)
        wdl_np = wdl.numpy()
        return [(index_to_move(int(k), g.board), wdl_np[i]) for i, (k, g) in enumerate(zip(pick.tolist(), games))]

    def close(self) -> None:
        pass


class EnginePlayer:
    """A UCI engine at a fixed limit, one game at a time per process. python-chess sends ``ucinewgame``
    (hash, search tree, histories cleared) whenever ``play``'s ``game=`` token differs from the previous
    call's, so the token decides what a search may reuse (:meth:`search_token`):

    * ``keep_search`` (the arena sets it with ``--concurrency 1``: one game in flight): the game. Each
      game is played from a cleared engine and keeps its hash and tree between its moves, as a GUI such
      as cutechess-cli plays an engine (Lc0 reuses the subtree of the move played).
    * otherwise: the game and its ply. Every move is searched from a cleared engine. With the game alone
      as the token, a move would reuse its previous search only when no other game of the player came
      between them (a match's last game in flight), so the games would depend on the schedule.

    Either way a move depends on its game only: the same in any schedule, batch or resumed run. Clearing
    costs time: Lc0 v0.31 at 64 nodes takes ~70 ms a move searched afresh, ~210 ms after ``ucinewgame``
    and ~80 ms keeping its tree.

    With several processes (``procs``), game ``id`` is always played by process ``id % procs`` and the
    processes search their games of a ply in parallel, one thread each: ``procs`` cores for one player,
    the same assignment of games to processes whatever the schedule."""

    has_value_head = False
    keep_search = False

    def __init__(
        self, label: str, engines: Sequence[RestartingEngine], limit: chess.engine.Limit, version: str
    ) -> None:
        if not engines:
            raise ValueError("EnginePlayer needs at least one engine")
        self.label, self.engines, self.limit, self.version = label, list(engines), limit, version
        self._pool = ThreadPoolExecutor(len(self.engines)) if len(self.engines) > 1 else None

    @property
    def engine(self) -> RestartingEngine:
        """The first (with one process, the only) engine."""
        return self.engines[0]

    def search_token(self, g: Game) -> int | tuple[int, int]:
        """``play``'s ``game=`` for the next move of ``g``: the game with ``keep_search``, else the game
        and its ply (the class docstring)."""
        return g.id if self.keep_search else (g.id, len(g.moves))

    def _play(self, k: int, games: Sequence[Game], idx: list[int]) -> list[chess.Move | None]:
        engine = self.engines[k]
        return [engine.play(games[i].board, self.limit, game=self.search_token(games[i])).move for i in idx]

    def choose(self, games: Sequence[Game]) -> list[tuple[chess.Move | None, None]]:
        n = len(self.engines)
        if self._pool is None:
            return [(m, None) for m in self._play(0, games, list(range(len(games))))]
        buckets = [[i for i, g in enumerate(games) if g.id % n == k] for k in range(n)]
        moves: list[chess.Move | None] = [None] * len(games)
        for idx, got in zip(buckets, self._pool.map(lambda k: self._play(k, games, buckets[k]), range(n))):
            for i, m in zip(idx, got):
                moves[i] = m
        return [(m, None) for m in moves]

    def close(self) -> None:
        for e in self.engines:
            e.quit()
        if self._pool is not None:
            self._pool.shutdown()


class StockfishPlayer(EnginePlayer):
    """Stockfish from an ``sf:`` spec (one thread per process, the spec's hash or 16 MB)."""

    def __init__(self, label: str, spec: str, path: str | None = None, procs: int = 1) -> None:
        limit, options = parse_stockfish_spec(spec)
        hash_mb = options.pop("Hash", 16)
        engines = _start_all(lambda: open_engine(path, threads=1, hash_mb=hash_mb, options=dict(options)), procs)
        super().__init__(label, engines, limit, engines[0].id.get("name", "Stockfish"))


class UciPlayer(EnginePlayer):
    """Any UCI engine (``uci:<command>``, :mod:`pdx_lightning.engines.external`), e.g. the real Lc0 at
    ``go nodes 1``; it is sent each game's full move history (``position ... moves ...``)."""

    def __init__(self, label: str, spec: str, procs: int = 1) -> None:
        argv, limit, options = parse_uci_spec(spec)
        engines = _start_all(
            lambda: RestartingEngine(command=argv, threads=None, hash_mb=None, options=dict(options)), procs
        )
        super().__init__(label, engines, limit, engines[0].id.get("name", argv[0]))


def _start_all(start: Callable[[], RestartingEngine], procs: int) -> list[RestartingEngine]:
    """``procs`` engines, all quit again if one fails to start."""
    engines: list[RestartingEngine] = []
    try:
        for _ in range(procs):
            engines.append(start())
    except BaseException:
        for e in engines:
            e.quit()
        raise
    return engines


def make_player(
    spec: str,
    label: str | None = None,
    *,
    sample: bool = False,
    temperature: str | float = 1.0,
    seed: int = 0,
    device: str = "cpu",
    stockfish: str | None = None,
    engine_procs: int = 1,
) -> Player:
    """A player from a model name (``pdx_lightning.nets.load_model``), a ``search[...]:MODEL`` spec (the
    model inside pdx's search, :mod:`~pdx_lightning.evaluation.search_player`; ``value=OTHER`` evaluates
    with OTHER's W/D/L, :mod:`~pdx_lightning.nets.composed`), an ``sf:`` spec or a
    ``uci:`` spec (``engine_procs`` processes of the engine, :class:`EnginePlayer`)."""
    label = label or spec
    if is_search_spec(spec):
        from pdx_lightning.evaluation.search_player import SearchPlayer  # noqa: PLC0415
        from pdx_lightning.nets import load_model  # noqa: PLC0415
        from pdx_lightning.nets.composed import compose  # noqa: PLC0415

        read = parse_search_spec(spec)
        if sample:
            raise ArenaError(
                f"{spec}: --sample draws from a network's policy; a search[...] player plays its best move"
            )
        value = load_model(read.value_model) if read.value_model is not None else None
        network = compose(load_model(read.model), value)
        return SearchPlayer(label, network.to(device), read.settings, read.reuse)
    if is_stockfish_spec(spec):
        return StockfishPlayer(label, spec, stockfish, engine_procs)
    if is_uci_spec(spec):
        return UciPlayer(label, spec, engine_procs)
    from pdx_lightning.nets import load_model  # noqa: PLC0415

    return NetPlayer(label, load_model(spec).to(device), sample, temperature, seed)
