"""On-policy self-play, one ply per step (paper Algorithm 1, Appendix D): the games, not the math.

``SelfPlayDataset`` owns this rank's N / world_size games and reads the networks it is given
(:class:`SelfPlayNetworks`: the EMA, the base and the trained parameters' version). Each item it
yields is a :class:`PendingBatch`: the current positions s, their legal masks, π_base(·|s) and
p_base(s), and the EMA's WDL at s, whose entropy the step makes τ(s) (with
``temperature_wdl_source="online"`` the EMA is not evaluated at s: the step takes τ(s) from the online
value head; :func:`~pdx_lightning.rl.pdx_step.step_temperature` is the one place τ(s) is computed).
What the step computes is set by the algorithm's settings (:class:`~pdx_lightning.rl.settings.PDXSettings`),
which the dataset reads for the temperature, its WDL source, the cap's scoring, successor reuse and the
micro-batch.

The step (:mod:`pdx_lightning.rl.pdx_step`) runs the online network on s *with* gradient, samples
a ~ μ, computes ρ, p̂ and A itself, and asks this dataset only to play: :meth:`SelfPlayDataset.play`
(s' = T(s, a) and the result codes), :meth:`SelfPlayDataset.successor_wdl` (p_θ̄(s'), the EMA pass)
and :meth:`SelfPlayDataset.end_games` (record finished games, restart their slots). The parameters
that sample a batch are therefore exactly the ones it updates (zero staleness), and the
gradient-carrying online pass doubles as the sampling pass: four network passes per step
(base(s), ema(s) unless τ comes from the online WDL, ema(s'), online(s) fwd+bwd). The online
network itself never runs here.

The step works per micro-batch of games (the ``games`` index lists of :meth:`SelfPlayDataset.play` and
the others), so it can accumulate gradients over micro-batches without keeping every micro-batch's
graph alive.

The games themselves live in a pool (:mod:`pdx_lightning.chesscore.game_pool`): by default the compiled
chess core, which plays, encodes and masks a whole batch in one call per step (optionally over worker
threads); python-chess is the reference engine it is tested against (``backend="python-chess"``).
Sampling works in the compact legal layout (``chesscore.policy.gather_legal``: the ≤ 218 legal columns
of each row, sorted by policy index) with one uniform per row (``sample_legal``), on the networks' device.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

import chess
import numpy as np
import torch
from torch.utils.data import IterableDataset

from pdx_lightning.chesscore.encoding import expand_packed
from pdx_lightning.chesscore.game_pool import BACKENDS, Backend, GamePool, open_pool, result_codes
from pdx_lightning.chesscore.moves import POLICY_SIZE
from pdx_lightning.chesscore.opening_files import read_opening_lines
from pdx_lightning.chesscore.rules import DRAW, RESULT_NONE, WIN
from pdx_lightning.nets.inference import evaluate
from pdx_lightning.rl.errors import SelfPlayError
from pdx_lightning.rl.pdx_step import PendingBatch, sample_action, temperature
from pdx_lightning.rl.settings import PDXSettings
from pdx_lightning.rl.update import run_seed
from pdx_lightning.runtime.progress import progress
from pdx_lightning.runtime.ranks import rank_world


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
    """The games of self-play (paper Appendix D): how many, their openings and restarts, the chess engine,
    the ply cap and draw claims. What the step computes from them is :class:`~pdx_lightning.rl.settings.PDXSettings`.

    Attributes:
        n_games: N, games in flight across all ranks (each rank plays N / world_size).
        seed: base seed; rank r uses seed + 1000·r. None (the default): the run's seed, the one
            ``seed_everything`` set (LightningCLI's ``--seed_everything``, or ``lightning.seed_everything``:
            its ``PL_GLOBAL_SEED``), else 0; see :func:`with_run_seed`.
        opening_max_moves: at start each game plays k ~ U{0..this} full moves from π_base
            (tempered in the adaptive arm).
        restart: how a finished game starts again: "initial" (the paper), "random_plies"
            (k ~ U{0..restart_max_moves} base-sampled full moves, as at start), or "openings"
            (a random line from ``openings_file``, an EPD/text file of UCI lines).
        restart_max_moves: k's upper bound for restart="random_plies".
        openings_file: for restart="openings": UCI lines from the start position, one per line, EPD
            records with the line in their ``c0`` opcode (``pdx data openings``), or a PGN book (each
            game's mainline); see ``chesscore.opening_files.read_opening_lines``.
        max_plies: game cap; a game reaching it ends (scored as the settings' ``cap_result`` says).
        claim_draws: end games at threefold repetition / fifty moves as soon as claimable (else only
            the automatic fivefold / 75-move rules end them).
        backend: the chess engine of the games: "native" (the compiled core, ``chesscore/*.c``,
            built by ``pip install -e .``) or "python-chess" (the reference it is tested against; no C
            compiler needed; its chess side costs ~8x the core's: 266 against 34 core-µs per game-ply at
            N = 1,024). Both play the same games from the same seed.
        workers: threads that play, encode and mask disjoint shards of the games each step (native
            backend; 1 = in the training process's thread). The games are the same for every worker
            count. Worth raising where cores outnumber the network's threads (a GPU machine).
        worker_timeout_s: a worker that has not finished its shard of a batch call in this many seconds
            stops the run with ``chesscore.pool_interface.ChessWorkerError`` (before the step's optimizer
            update; resume with ``--ckpt_path last``).
    """

    n_games: int = 256
    seed: int | None = None
    opening_max_moves: int = 60
    restart: Literal["initial", "random_plies", "openings"] = "initial"
    restart_max_moves: int = 8
    openings_file: str | None = None
    max_plies: int = 512
    claim_draws: bool = False
    backend: Backend = "native"
    workers: int = 1
    worker_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.workers < 1 or (self.backend == "python-chess" and self.workers != 1):
            raise ValueError(f"workers must be >= 1 (and 1 with the python-chess backend), got {self.workers}")
        if self.n_games < 1 or self.max_plies < 1:
            raise ValueError("n_games and max_plies must be >= 1")
        if self.restart not in ("initial", "random_plies", "openings"):
            raise ValueError(f"restart must be initial|random_plies|openings, got {self.restart!r}")
        if self.restart == "openings" and not self.openings_file:
            raise ValueError("restart='openings' needs openings_file")
        if self.opening_max_moves < 0 or self.restart_max_moves < 0:
            raise ValueError("opening_max_moves and restart_max_moves must be >= 0")


def with_run_seed(config: SelfPlayConfig) -> SelfPlayConfig:
    """``config`` with its seed made explicit: an explicit ``seed`` wins; None takes the seed that
    ``seed_everything`` gave the run (``PL_GLOBAL_SEED``), else 0. So ``pdx fit --seed_everything 3``
    plays other games than seed 0, and the checkpoint records the seed its games came from."""
    if config.seed is not None:
        return config
    return replace(config, seed=run_seed("--model.selfplay.seed"))


class SelfPlayDataset(IterableDataset):
    """This rank's share of N games, advanced one ply per yielded batch (infinite).

    The games live in a pool (``chesscore.game_pool``: the compiled core, or python-chess boards with
    ``backend="python-chess"``); ``networks`` are read, never trained or swapped: the module keeps them in
    eval mode. The batch's tensors live on the networks' device: the planes and the legal masks and
    indices go there once, and sampling, μ, ρ, p̂ and A stay there; only the chosen policy slots (b,)
    come back to the pool.
    """

    def __init__(self, config: SelfPlayConfig, networks: SelfPlayNetworks, settings: PDXSettings | None = None) -> None:
        super().__init__()
        self.cfg = with_run_seed(config)
        self.settings = settings if settings is not None else PDXSettings()
        self.networks = networks
        self.pool: GamePool | None = (
            None  # made when iteration starts (the rank, hence the number of games, is known then)
        )
        self.stats = {"games_finished": 0, "white_win": 0, "draw": 0, "black_win": 0, "length_sum": 0}
        self._pending_state: dict | None = None
        # this rank's generators, seeded when iteration starts (the rank is known only then)
        self.gen = torch.Generator()
        self.rng = random.Random()
        # the EMA's WDL of each game's current position, made at s' of the last step (reuse_successor_eval)
        self._ema_cache: torch.Tensor | None = None
        # read now: a bad openings file fails at construction, not at the first restart hours in
        self._openings = (
            read_opening_lines(config.openings_file)
            if config.restart == "openings" and config.openings_file is not None
            else None
        )
        # called as listener(board, PGN result) when a game ends, before its slot restarts (a python-chess
        # board with the game's move stack, made for the listeners): e.g. callbacks.SelfPlayGames
        self.finished_listeners: list[Callable[[chess.Board, str], None]] = []
        # planes packed for the copy to the device: None = off the CPU only (see _positions)
        self.packed_transfer: bool | None = None

    def __getstate__(self) -> dict:
        """Pickled (``--trainer.strategy ddp_spawn`` sends the module to each process) with the sampler's
        generator as its state's bytes: torch's multiprocessing pickler would share the state tensor
        through a file descriptor, which the receiving process cannot map."""
        state = self.__dict__.copy()
        state["gen"] = self.gen.get_state().numpy().tobytes()
        return state

    def __setstate__(self, state: dict) -> None:
        gen = torch.Generator()
        gen.set_state(torch.frombuffer(bytearray(state["gen"]), dtype=torch.uint8))
        self.__dict__.update(state, gen=gen)

    @property
    def _live(self) -> GamePool:
        """The pool of games, which exists once iteration has started."""
        if self.pool is None:
            raise SelfPlayError("the games do not exist before iteration starts")
        return self.pool

    @property
    def started(self) -> bool:
        """Whether the games exist (iteration began)."""
        return self.pool is not None

    @property
    def boards(self) -> list[chess.Board]:
        """The games as python-chess boards with their move stacks (copies, replayed from the pool: for
        tests, probes and tools, not for hot loops); empty before iteration starts."""
        return [] if self.pool is None else [self.pool.board(i) for i in range(self.pool.n)]

    # ---- ranks ------------------------------------------------------------------------------
    def local_games(self) -> int:
        rank, world = rank_world()
        n = self.cfg.n_games // world + (rank < self.cfg.n_games % world)
        if n < 1:
            raise SelfPlayError(f"n_games={self.cfg.n_games} leaves rank {rank} of {world} without games")
        return n

    def _open_pool(self, n: int) -> None:
        if self.pool is not None:
            self.pool.close()
        cap = self.cfg.max_plies if self.settings.cap_result == "draw" else None
        self.pool = open_pool(
            self.cfg.backend,
            n,
            claim_draws=self.cfg.claim_draws,
            max_plies=cap,
            workers=self.cfg.workers,
            timeout_s=self.cfg.worker_timeout_s,
        )

    # ---- state (checkpoints) ----------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue the same games: move lists, RNG states, stats and, with
        ``reuse_successor_eval``, the EMA's cached evaluations of the current positions (made by
        the EMA before its last update, so they cannot be recomputed after a restart)."""
        cache = self._ema_cache if self.settings.reuse_successor_eval else None
        n = 0 if self.pool is None else self.pool.n
        return {
            "roots": [self._live.root_fen(i) for i in range(n)],
            "moves": [[m.uci() for m in self._live.moves(i)] for i in range(n)],
            "torch_rng": self.gen.get_state(),
            "py_rng": self.rng.getstate(),
            "stats": dict(self.stats),
            "n_games": n,
            "ema_cache": None if cache is None else cache.detach().cpu().clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Resume from ``state_dict`` when iteration (re)starts."""
        self._pending_state = state

    def _restore(self, state: dict) -> None:
        if state["n_games"] != self.local_games():
            raise SelfPlayError(
                f"checkpoint holds {state['n_games']} games for this rank, "
                f"config gives {self.local_games()} (n_games or world size changed)"
            )
        self._open_pool(state["n_games"])
        for i, (fen, moves) in enumerate(zip(state["roots"], state["moves"])):
            b = chess.Board(fen)
            for uci in moves:
                b.push_uci(uci)
            self._live.set_board(i, b)
        self.gen.set_state(state["torch_rng"])
        self.rng.setstate(state["py_rng"])
        self.stats = dict(state["stats"])
        cache = state.get("ema_cache")  # absent in checkpoints written before it was stored
        if cache is not None and tuple(cache.shape) != (state["n_games"], 3):
            raise SelfPlayError(
                f"checkpoint's EMA cache has shape {tuple(cache.shape)}, expected ({state['n_games']}, 3)"
            )
        self._ema_cache = None if cache is None else cache.clone().to(self._device())

    # ---- iteration --------------------------------------------------------------------------
    def __iter__(self) -> Iterator[PendingBatch]:
        rank, _ = rank_world()
        seed = self.cfg.seed
        assert seed is not None  # with_run_seed made it explicit at construction
        self.gen.manual_seed(seed + 1000 * rank)
        self.rng.seed(seed + 1000 * rank)
        self._ema_cache = None
        if self._pending_state is not None:
            self._restore(self._pending_state)
            self._pending_state = None
        else:
            n = self.local_games()
            self._open_pool(n)
            starts = [self.rng.randint(0, self.cfg.opening_max_moves) for _ in range(n)]
            self._randomize(list(range(n)), starts, desc="self-play openings")
        while True:
            yield self._begin()

    def _device(self) -> torch.device:
        return next(self.networks.ema.parameters()).device

    def _eval(self, name: str, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``evaluate`` with the network ``name`` ("ema" or "base") of :class:`SelfPlayNetworks`; the
        outputs stay on the network's device."""
        return evaluate(getattr(self.networks, name), x, mask, self.settings.micro_batch, to_cpu=False)

    def _positions(self, idx) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The games' current positions on the networks' device: planes (b, 112, 8, 8), legal mask
        (b, 4288), sorted legal indices (b, L) and legal counts (b,). Off the CPU the planes travel packed
        (800 bytes per position, ``encoding.pack_planes``) and the device expands them and rebuilds the
        masks from the indices; on the CPU the pool writes them directly (``packed_transfer`` forces
        either way)."""
        dev = self._device()
        packed = dev.type != "cpu" if self.packed_transfer is None else self.packed_transfer
        pos = self._live.positions(idx, packed=packed)
        legal, count = (torch.from_numpy(a).to(dev, non_blocking=True) for a in (pos.legal, pos.count.astype(np.int64)))
        if not packed:
            return torch.from_numpy(pos.x).to(dev, non_blocking=True), torch.from_numpy(pos.mask).to(dev), legal, count
        x = expand_packed(torch.from_numpy(pos.x).to(dev, non_blocking=True))
        mask = torch.zeros(len(count), POLICY_SIZE, dtype=torch.bool, device=dev).scatter_(1, legal, True)
        return x, mask, legal, count

    def _tau(self, wdl: torch.Tensor) -> torch.Tensor:
        """τ(s) of the settings' temperature arm (Eq. 5, :func:`~pdx_lightning.rl.pdx_step.temperature`)."""
        return temperature(wdl, self.settings.temperature)

    def _randomize(self, games: list[int], full_moves: list[int], desc: str | None = None) -> None:
        """Play ``full_moves[j]`` full moves from π_base (tempered in the adaptive arm) in ``games[j]``.

        With ``desc`` a progress bar counts the batched plies up to the longest opening (the warm-up
        before step 1 plays up to ``opening_max_moves`` full moves of every game); restarts pass none.
        """
        for i in games:
            self._live.reset(i)
        todo = {i: 2 * k for i, k in zip(games, full_moves)}
        played = dict.fromkeys(games, 0)
        with progress(total=max(todo.values(), default=0), desc=desc or "", unit="ply", disable=desc is None) as bar:
            while True:
                live = [i for i in games if todo[i] > played[i]]
                if not live:
                    return
                x, mask, legal, count = self._positions(live)
                logp, wdl = self._eval("base", x, mask)
                actions = sample_action(logp, legal, count, self._tau(wdl), self.gen)[0]
                reason, _ = self._live.play(live, actions.cpu().numpy())
                for r, i in enumerate(live):
                    played[i] += 1
                    if reason[r]:  # ended during the opening: start over, unrandomized
                        self._live.reset(i)
                        todo[i] = 0
                bar.update(1)

    def _begin(self) -> PendingBatch:
        n = self._live.n
        idx = np.arange(n)
        x, mask, legal, count = self._positions(idx)
        logp_base, wdl_base = self._eval("base", x, mask)
        if self.settings.tau_from_online:
            wdl = None  # τ(s) from the step's online pass (pdx_step.step_temperature): the EMA is not needed at s
        elif self.settings.reuse_successor_eval and self._ema_cache is not None:
            wdl = self._ema_cache.clone()
            fresh = torch.isnan(wdl).any(dim=1).nonzero().flatten()
            if len(fresh):
                wdl[fresh] = self._eval("ema", x[fresh], mask[fresh])[1]
        else:
            wdl = self._eval("ema", x, mask)[1]
        self._ema_cache = torch.full((n, 3), float("nan"), device=x.device)
        return PendingBatch(x, mask, logp_base, wdl, self.networks.version(), wdl_base, legal, count)

    def play(self, games, actions: torch.Tensor) -> torch.Tensor:
        """Play policy slot ``actions[r]`` in game ``games[r]`` (s' = T(s, a)); return the results (b,) on
        the CPU: ``RESULT_NONE`` where the game goes on, else WIN/DRAW/LOSS from the view of the player
        who moved."""
        reason, _ = self._live.play(games, actions.cpu().numpy())
        return torch.from_numpy(result_codes(reason))

    def successor_wdl(self, games, results: torch.Tensor) -> torch.Tensor:
        """p_θ̄(s') (b, 3) on the networks' device, the EMA's WDL at each game's new position, side to move
        at s'; rows of games that ended (``results`` not ``RESULT_NONE``) are 1/3 and carry no
        information. Kept as the EMA's view of s at the next step for ``reuse_successor_eval``."""
        games = np.asarray(games)
        live = (results == RESULT_NONE).nonzero().flatten()
        wdl_next = torch.full((len(games), 3), 1.0 / 3, device=self._device())
        if len(live):
            live_games = games[live.numpy()]
            x, mask, _, _ = self._positions(live_games)
            live = live.to(wdl_next.device)
            wdl_next[live] = self._eval("ema", x, mask)[1]
            assert self._ema_cache is not None  # made by _begin, before any move of the batch
            self._ema_cache[torch.from_numpy(live_games).to(wdl_next.device)] = wdl_next[live]
        return wdl_next

    def end_games(self, games, results: torch.Tensor) -> None:
        """Record the games that ended at s' (``results``) or reached the ply cap, and restart their slots
        (Algorithm 1 line 12; the restart policy of the config)."""
        games = np.asarray(games)
        res = results.numpy()
        capped = (res == RESULT_NONE) & (self._live.plies(games) >= self.cfg.max_plies)
        for r in np.flatnonzero(res != RESULT_NONE).tolist() + np.flatnonzero(capped).tolist():
            self._finish(int(games[r]), int(res[r]) if res[r] != RESULT_NONE else None)

    def _finish(self, i: int, result: int | None) -> None:
        """Record a finished game and restart its slot (restart policy of the config)."""
        s = self.stats
        s["games_finished"] += 1
        s["length_sum"] += self._live.n_moves(i)
        mover_white = int(self._live.plies([i])[0]) % 2 == 1  # Black to move: White made the last move
        if result in (None, DRAW):
            s["draw"] += 1
            pgn_result = "1/2-1/2"
        else:
            white_won = (result == WIN) == mover_white
            s["white_win" if white_won else "black_win"] += 1
            pgn_result = "1-0" if white_won else "0-1"
        if self.finished_listeners:
            board = self._live.board(i)
            for listener in self.finished_listeners:
                listener(board, pgn_result)
        if self.cfg.restart == "initial":
            self._live.reset(i)
        elif self.cfg.restart == "random_plies":
            self._randomize([i], [self.rng.randint(0, self.cfg.restart_max_moves)])
        else:
            self._restart_from_opening(i)
        assert self._ema_cache is not None  # made by _begin, before any move of the batch
        self._ema_cache[i] = float("nan")

    def _restart_from_opening(self, i: int) -> None:
        if self._openings is None:
            assert self.cfg.openings_file is not None  # SelfPlayConfig refuses restart="openings" without one
            self._openings = read_opening_lines(self.cfg.openings_file)
        self._live.reset(i)
        for uci in self.rng.choice(self._openings):
            self._live.push(i, chess.Move.from_uci(uci))
