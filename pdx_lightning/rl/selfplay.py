"""On-policy self-play, one ply per step (paper Algorithm 1, Appendix D): the games, not the math.

``SelfPlayDataset`` owns this rank's N / world_size games and reads the networks it is given
(:class:`SelfPlayNetworks`: the EMA, the base and the trained parameters' version). Each item it
yields is a :class:`PendingBatch`: the current positions s, their legal masks, π_base(·|s) and
p_base(s), and τ(s) from the EMA value head (with ``temperature_wdl_source="online"`` τ(s) is left
to the step, which takes it from the online value head).

The step (:mod:`pdx_lightning.rl.pdx_step`) runs the online network on s *with* gradient, samples
a ~ μ, computes ρ, p̂ and A itself, and asks this dataset only to play: :meth:`SelfPlayDataset.play`
(s' = T(s, a) and the result codes), :meth:`SelfPlayDataset.successor_wdl` (p_θ̄(s'), the EMA pass)
and :meth:`SelfPlayDataset.end_games` (record finished games, restart their slots). The parameters
that sample a batch are therefore exactly the ones it updates (zero staleness), and the
gradient-carrying online pass doubles as the sampling pass: four network passes per step
(base(s), ema(s) unless τ comes from the online WDL, ema(s'), online(s) fwd+bwd). The online
network itself never runs here.

The step works per micro-batch of games (``games`` lists), so the module can accumulate gradients
over micro-batches without keeping every micro-batch's graph alive.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterator, Literal

import chess
import numpy as np
import torch
from torch.utils.data import IterableDataset

from pdx_lightning.chesscore.encoding import GameHistory, encode_rows
from pdx_lightning.nets.inference import evaluate
from pdx_lightning.chesscore.moves import index_to_move, legal_mask
from pdx_lightning.chesscore.opening_files import read_opening_lines
from pdx_lightning.chesscore.rules import game_end, ply_cap_reached
from pdx_lightning.rl.objectives import DRAW, RESULT_NONE, WIN, tempered_log_probs, wdl_entropy
from pdx_lightning.runtime.progress import progress
from pdx_lightning.runtime.ranks import rank_world


TemperatureMode = Literal["adaptive", "fixed"]
TEMPERATURE_MODES: tuple[str, ...] = TemperatureMode.__args__  # the sweep's temperature arms, in this order
TemperatureSource = Literal["ema", "online"]
TEMPERATURE_WDL_SOURCES: tuple[str, ...] = TemperatureSource.__args__


class SelfPlayError(RuntimeError):
    """Self-play used wrongly (a stale batch, a state of another shape, too few games for a rank)."""


@dataclass(frozen=True)
class SelfPlayNetworks:
    """What self-play reads from the module: two networks in eval mode and the parameters' version.

    Attributes:
        ema: θ̄, the bootstrap target: τ(s) = H(p_θ̄(s)) (Eq. 5), v_θ̄(s') and p̂ = flip(p_θ̄(s')).
        base: π_base, the prior: log π_base(·|s) for the exploration term, and the opening moves.
        version: the online parameters' version (optimizer steps taken); a batch is stamped with it
            when begun and must be completed at the same version (zero staleness).

    The online network π_θ is not here: the training step runs it (with gradient) and samples
    from its outputs itself (``rl.pdx_step``).
    """

    ema: torch.nn.Module
    base: torch.nn.Module
    version: Callable[[], int]


@dataclass
class SelfPlayConfig:
    """Self-play settings (paper Appendix D and Table 2).

    Attributes:
        n_games: N, games in flight across all ranks (each rank plays N / world_size).
        seed: base seed; rank r uses seed + 1000·r.
        temperature: "adaptive" samples μ ∝ π_θ^{1/τ(s)} with τ = H(WDL of the EMA at s) (Eq. 5–6);
            "fixed" samples π_θ (τ ≡ 1).
        temperature_wdl_source: whose WDL at s sets the adaptive τ: "ema" (the paper, App. E) or
            "online" (the online network's, from the same pass that samples; the default of the
            authors' code, and one EMA pass fewer per step).
        opening_max_moves: at start each game plays k ~ U{0..this} full moves from π_base
            (tempered in the adaptive arm).
        restart: how a finished game starts again: "initial" (the paper), "random_plies"
            (k ~ U{0..restart_max_moves} base-sampled full moves, as at start), or "openings"
            (a random line from ``openings_file``, an EPD/text file of UCI lines).
        restart_max_moves: k's upper bound for restart="random_plies".
        openings_file: for restart="openings": UCI lines from the start position, one per line, EPD
            records with the line in their ``c0`` opcode (``pdx data openings``), or a PGN book (each
            game's mainline); see ``chess.openings.read_opening_lines``.
        max_plies: game cap; a game reaching it ends.
        cap_result: "draw" scores a capped game as a draw (the paper); "bootstrap" keeps the EMA's
            value of s' as the target (truncation, the authors' code).
        claim_draws: end games at threefold repetition / fifty moves as soon as claimable (else only
            the automatic fivefold / 75-move rules end them).
        micro_batch: games per network call (and per gradient micro-batch in the module).
        reuse_successor_eval: use the EMA's evaluation of s' at step t as its evaluation of s at
            step t+1 when the game goes on (saves the ema(s) pass for continuing games; an
            approximation, since the EMA moved by one update in between). Off by default.
    """

    n_games: int = 256
    seed: int = 0
    temperature: TemperatureMode = "adaptive"
    temperature_wdl_source: TemperatureSource = "ema"
    opening_max_moves: int = 60
    restart: Literal["initial", "random_plies", "openings"] = "initial"
    restart_max_moves: int = 8
    openings_file: str | None = None
    max_plies: int = 512
    cap_result: Literal["draw", "bootstrap"] = "draw"
    claim_draws: bool = False
    micro_batch: int = 256
    reuse_successor_eval: bool = False

    def __post_init__(self) -> None:
        if self.n_games < 1 or self.micro_batch < 1 or self.max_plies < 1:
            raise ValueError("n_games, micro_batch and max_plies must be >= 1")
        if self.temperature not in TEMPERATURE_MODES:
            raise ValueError(f"temperature must be 'adaptive' or 'fixed', got {self.temperature!r}")
        if self.temperature_wdl_source not in TEMPERATURE_WDL_SOURCES:
            raise ValueError(f"temperature_wdl_source must be 'ema' or 'online', got {self.temperature_wdl_source!r}")
        if self.restart not in ("initial", "random_plies", "openings"):
            raise ValueError(f"restart must be initial|random_plies|openings, got {self.restart!r}")
        if self.restart == "openings" and not self.openings_file:
            raise ValueError("restart='openings' needs openings_file")
        if self.cap_result not in ("draw", "bootstrap"):
            raise ValueError(f"cap_result must be 'draw' or 'bootstrap', got {self.cap_result!r}")
        if self.opening_max_moves < 0 or self.restart_max_moves < 0:
            raise ValueError("opening_max_moves and restart_max_moves must be >= 0")


@dataclass
class PendingBatch:
    """Positions s of this step, awaiting the online network's outputs."""

    x: torch.Tensor           # (n, 112, 8, 8)
    mask: torch.Tensor        # (n, 4288) bool
    log_p_base: torch.Tensor  # (n, 4288)
    tau: torch.Tensor | None  # (n,); None: τ(s) comes from the online WDL, in the step
    version: int              # the parameter version that began the batch
    wdl_base: torch.Tensor    # (n, 3) p_base(s), for the base-WDL value anchor

    @property
    def size(self) -> int:
        return self.x.shape[0]


class SelfPlayDataset(IterableDataset):
    """This rank's share of N games, advanced one ply per yielded batch (infinite).

    ``networks`` are read, never trained or swapped: the module keeps them in eval mode.
    """

    def __init__(self, config: SelfPlayConfig, networks: SelfPlayNetworks) -> None:
        super().__init__()
        self.cfg = config
        self.networks = networks
        self.boards: list[chess.Board] = []
        self.stats = {"games_finished": 0, "white_win": 0, "draw": 0, "black_win": 0, "length_sum": 0}
        self._pending_state: dict | None = None
        # per-game caches beside ``boards``: the encoder's history ring buffer, the legal moves
        self.hist: list[GameHistory] = []
        self.legal: list[list[chess.Move]] = []
        # this rank's generators, seeded when iteration starts (the rank is known only then)
        self.gen = torch.Generator()
        self.rng = random.Random()
        # the EMA's WDL of each game's current position, made at s' of the last step (reuse_successor_eval)
        self._ema_cache: torch.Tensor | None = None
        # read now: a bad openings file fails at construction, not at the first restart hours in
        self._openings = read_opening_lines(config.openings_file) if config.restart == "openings" else None
        # called as listener(board, PGN result) when a game ends, before its slot restarts (the board
        # object is replaced, never changed, afterwards): e.g. callbacks.SelfPlayGames
        self.finished_listeners: list[Callable[[chess.Board, str], None]] = []

    # ---- ranks ------------------------------------------------------------------------------
    def local_games(self) -> int:
        rank, world = rank_world()
        n = self.cfg.n_games // world + (rank < self.cfg.n_games % world)
        if n < 1:
            raise SelfPlayError(f"n_games={self.cfg.n_games} leaves rank {rank} of {world} without games")
        return n

    # ---- state (checkpoints) ----------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue the same games: move lists, RNG states, stats and, with
        ``reuse_successor_eval``, the EMA's cached evaluations of the current positions (made by
        the EMA before its last update, so they cannot be recomputed after a restart)."""
        cache = self._ema_cache if self.cfg.reuse_successor_eval else None
        return {"roots": [b.root().fen() for b in self.boards],
                "moves": [[m.uci() for m in b.move_stack] for b in self.boards],
                "torch_rng": self.gen.get_state(), "py_rng": self.rng.getstate(),
                "stats": dict(self.stats), "n_games": len(self.boards),
                "ema_cache": None if cache is None else cache.clone()}

    def load_state_dict(self, state: dict) -> None:
        """Resume from ``state_dict`` when iteration (re)starts."""
        self._pending_state = state

    def _restore(self, state: dict) -> None:
        if state["n_games"] != self.local_games():
            raise SelfPlayError(f"checkpoint holds {state['n_games']} games for this rank, "
                                f"config gives {self.local_games()} (n_games or world size changed)")
        self.boards = []
        for fen, moves in zip(state["roots"], state["moves"]):
            b = chess.Board(fen)
            for uci in moves:
                b.push_uci(uci)
            self.boards.append(b)
        self.hist = [GameHistory(b) for b in self.boards]
        self.legal = [list(b.legal_moves) for b in self.boards]
        self.gen.set_state(state["torch_rng"])
        self.rng.setstate(state["py_rng"])
        self.stats = dict(state["stats"])
        cache = state.get("ema_cache")  # absent in checkpoints written before it was stored
        if cache is not None and tuple(cache.shape) != (len(self.boards), 3):
            raise SelfPlayError(f"checkpoint's EMA cache has shape {tuple(cache.shape)}, "
                                f"expected ({len(self.boards)}, 3)")
        self._ema_cache = None if cache is None else cache.clone()

    # ---- iteration --------------------------------------------------------------------------
    def __iter__(self) -> Iterator[PendingBatch]:
        rank, _ = rank_world()
        self.gen.manual_seed(self.cfg.seed + 1000 * rank)
        self.rng.seed(self.cfg.seed + 1000 * rank)
        self._ema_cache = None
        if self._pending_state is not None:
            self._restore(self._pending_state)
            self._pending_state = None
        else:
            n = self.local_games()
            self.boards = [chess.Board() for _ in range(n)]
            self.hist, self.legal = [None] * n, [None] * n  # filled by _randomize, game by game
            starts = [self.rng.randint(0, self.cfg.opening_max_moves) for _ in range(n)]
            self._randomize(list(range(n)), starts, desc="self-play openings")
        while True:
            yield self._begin()

    def _eval(self, name: str, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``evaluate`` with the network ``name`` ("ema" or "base") of :class:`SelfPlayNetworks`."""
        return evaluate(getattr(self.networks, name), x, mask, self.cfg.micro_batch)

    def _rows(self, idx) -> torch.Tensor:
        return torch.from_numpy(encode_rows([self.hist[i].row(self.boards[i]) for i in idx]))

    def _mask(self, idx) -> torch.Tensor:
        return legal_mask([self.boards[i] for i in idx], [self.legal[i] for i in idx])

    def _tau(self, wdl: torch.Tensor) -> torch.Tensor:
        return wdl_entropy(wdl) if self.cfg.temperature == "adaptive" else torch.ones(wdl.shape[0])

    def _randomize(self, games: list[int], full_moves: list[int], desc: str | None = None) -> None:
        """Play ``full_moves[j]`` full moves from π_base (tempered in the adaptive arm) in ``games[j]``.

        With ``desc`` a progress bar counts the batched plies up to the longest opening (the warm-up
        before step 1 plays up to ``opening_max_moves`` full moves of every game); restarts pass none.
        """
        for i in games:
            self._reset(i)
        todo = {i: 2 * k for i, k in zip(games, full_moves)}
        with progress(total=max(todo.values(), default=0), desc=desc or "", unit="ply",
                      disable=desc is None) as bar:
            while True:
                live = [i for i in games if todo[i] > len(self.boards[i].move_stack)]
                if not live:
                    return
                x, mask = self._rows(live), self._mask(live)
                logp, wdl = self._eval("base", x, mask)
                moves = torch.multinomial(tempered_log_probs(logp, mask, self._tau(wdl)).exp(), 1,
                                          generator=self.gen).squeeze(1)
                for r, i in enumerate(live):
                    self._play(i, int(moves[r]))
                    if self._result(i) is not None:  # ended during the opening: start over, unrandomized
                        self._reset(i)
                        todo[i] = 0
                bar.update(1)

    def _reset(self, i: int) -> None:
        self.boards[i] = chess.Board()
        self.hist[i] = GameHistory(self.boards[i])
        self.legal[i] = list(self.boards[i].legal_moves)

    def _play(self, i: int, index: int) -> None:
        b = self.boards[i]
        b.push(index_to_move(index, b))
        self.hist[i].push(b)
        self.legal[i] = list(b.legal_moves)

    def _result(self, i: int) -> int | None:
        """Result of game i at its current position from the view of the player who just moved
        (WIN/DRAW/LOSS), or None if it goes on: ``rules.game_end`` on the cached legal-move list and
        the ring buffer's repetition count (no python-chess stack walks)."""
        b = self.boards[i]
        end = game_end(b, legal=self.legal[i], repetitions=self.hist[i].repetitions(),
                       claim_draws=self.cfg.claim_draws,
                       max_plies=self.cfg.max_plies if self.cfg.cap_result == "draw" else None)
        return None if end is None else end.wdl_for(not b.turn)

    def _begin(self) -> PendingBatch:
        n = len(self.boards)
        idx = range(n)
        x, mask = self._rows(idx), self._mask(idx)
        logp_base, wdl_base = self._eval("base", x, mask)
        if self._tau_from_online():
            wdl = None  # τ(s) from the online pass in `complete`: the EMA is not needed at s
        elif self.cfg.reuse_successor_eval and self._ema_cache is not None:
            wdl = self._ema_cache.clone()
            fresh = [i for i in idx if torch.isnan(wdl[i]).any()]
            if fresh:
                wdl[fresh] = self._eval("ema", x[fresh], mask[fresh])[1]
        else:
            wdl = self._eval("ema", x, mask)[1]
        self._ema_cache = torch.full((n, 3), float("nan"))
        return PendingBatch(x, mask, logp_base, None if wdl is None else self._tau(wdl), self.networks.version(),
                            wdl_base)

    def _tau_from_online(self) -> bool:
        return self.cfg.temperature == "adaptive" and self.cfg.temperature_wdl_source == "online"

    def play(self, games: list[int], actions: torch.Tensor) -> torch.Tensor:
        """Play policy slot ``actions[r]`` in game ``games[r]`` (s' = T(s, a)); return the results (b,):
        ``RESULT_NONE`` where the game goes on, else WIN/DRAW/LOSS from the view of the player who moved."""
        results = torch.full((len(games),), RESULT_NONE, dtype=torch.long)
        for r, i in enumerate(games):
            self._play(i, int(actions[r]))
            res = self._result(i)
            if res is not None:
                results[r] = res
        return results

    def successor_wdl(self, games: list[int], results: torch.Tensor) -> torch.Tensor:
        """p_θ̄(s') (b, 3), the EMA's WDL at each game's new position, side to move at s'; rows of
        games that ended (``results`` not ``RESULT_NONE``) are 1/3 and carry no information. Kept as
        the EMA's view of s at the next step for ``reuse_successor_eval``."""
        live = [r for r in range(len(games)) if results[r] == RESULT_NONE]
        wdl_next = torch.full((len(games), 3), 1.0 / 3)
        if live:
            live_games = [games[r] for r in live]
            wdl_next[live] = self._eval("ema", self._rows(live_games), self._mask(live_games))[1]
            self._ema_cache[live_games] = wdl_next[live]
        return wdl_next

    def end_games(self, games: list[int], results: torch.Tensor) -> None:
        """Record the games that ended at s' (``results``) or reached the ply cap, and restart their slots
        (Algorithm 1 line 12; the restart policy of the config)."""
        ended = [r for r in range(len(games)) if results[r] != RESULT_NONE]
        capped = [r for r in range(len(games)) if results[r] == RESULT_NONE
                  and ply_cap_reached(self.boards[games[r]], self.cfg.max_plies)]
        for r in ended + capped:
            self._finish(games[r], results[r].item() if results[r] != RESULT_NONE else None)

    def _finish(self, i: int, result: int | None) -> None:
        """Record a finished game and restart its slot (restart policy of the config)."""
        b = self.boards[i]
        s = self.stats
        s["games_finished"] += 1
        s["length_sum"] += len(b.move_stack)
        mover_white = b.turn == chess.BLACK  # the side that made the last move
        if result in (None, DRAW):
            s["draw"] += 1
            pgn_result = "1/2-1/2"
        else:
            white_won = (result == WIN) == mover_white
            s["white_win" if white_won else "black_win"] += 1
            pgn_result = "1-0" if white_won else "0-1"
        for listener in self.finished_listeners:
            listener(b, pgn_result)
        if self.cfg.restart == "initial":
            self._reset(i)
        elif self.cfg.restart == "random_plies":
            self._randomize([i], [self.rng.randint(0, self.cfg.restart_max_moves)])
        else:
            self._restart_from_opening(i)
        self._ema_cache[i] = float("nan")

    def _restart_from_opening(self, i: int) -> None:
        if self._openings is None:
            self._openings = read_opening_lines(self.cfg.openings_file)
        self._reset(i)
        for uci in self.rng.choice(self._openings):
            self._play(i, _index_of(self.boards[i], uci))


def _index_of(board: chess.Board, uci: str) -> int:
    from pdx_lightning.chesscore.moves import move_to_index
    return move_to_index(chess.Move.from_uci(uci), board.turn)
