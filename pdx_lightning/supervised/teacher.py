"""Stockfish as the distillation teacher: MultiPV search -> policy and WDL targets.

One bounded search per position (``go nodes N`` by default, or ``go depth D``;
never unbounded) with ``MultiPV K`` and ``UCI_ShowWDL`` on gives, for each of
the top-K root moves, Stockfish's win/draw/loss estimate from the mover's view
(per mille) and its score (centipawns or mate distance).

**Policy target.** Each candidate move ``a`` gets an expected score

    q(a) = (1 - λ)·(W + D/2)/1000 + λ·σ(c·cp)         (no mate found; c = 0.00368208)
    q(a) = 1 + b / n      if the mover mates in n
    q(a) =   - b / n      if the mover is mated in n  (b = ``mate_bonus``, default 0.5)

and the target spreads mass over candidates like MCTS visit counts do:

    π(a) = softmax_a( q(a) / T )   over the top-K candidates,   π = 0 elsewhere.

``λ`` (``cp_weight``) mixes Stockfish's own WDL expectation with the Lichess
"win%" logistic of its centipawns. λ = 0 is the pure WDL expectation;
Stockfish 15.1's WDL model is calibrated to its own strength and saturates
by ~±3 pawns (even in the opening), so in decided positions (3/4 of a
mixed-strength game set) every candidate scores 1.0 or 0.0 and the target
goes uniform over the top-K, blunders included, while balanced positions
get sharp. The logistic does not saturate until ~±10 pawns, so the
default λ = 1 gives the same breadth in balanced and decided positions
(measured on 8k generated positions at T = 0.05: entropy 1.68 / 1.62 nats
balanced / decided with λ = 1, vs 1.22 / 1.68 with λ = 0).

``T`` (``temperature``) sets the base network's entropy: ``q`` lives in
[0, 1], so a move that is 0.1 expected score worse than the best gets
``exp(-0.1/T)`` of its mass: ×0.14 at T = 0.05, ×0.37 at T = 0.1 (lower T =
sharper targets = lower entropy; on that set T = 0.02 / 0.05 / 0.1 give mean
target entropy 1.26 / 1.63 / 1.83 nats and top-5 mass 0.90 / 0.82 / 0.77,
vs the paper base's 1.69 nats and 0.81). Mate distance breaks the tie
between a mate and a merely winning move. Moves outside the top-K get
exactly zero: a floor would be label smoothing toward blunders, and the
network's own softmax already keeps every legal move above zero. With
K = 8 the target entropy is at most ln 8 = 2.08 nats.

The raw per-move numbers (``cand_wdl``, ``cand_cp``, ``cand_mate``) are
kept in every :class:`Label` and shard, so ``T`` (and λ, ``b``) are applied at
training time by :func:`candidate_policy` and can be retuned without
re-searching. **WDL target**: the best line's WDL, normalized to sum 1.

Searches go through python-chess's engine module (process, UCI handshake,
options, crash detection) with one custom command that keeps only the last
info line of each MultiPV index: python-chess's ``analyse`` parses every PV of
every iteration (~70% of the Python cost of a 10k-node MultiPV-8 search).
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass

import chess
import chess.engine
import numpy as np

from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.engines.stockfish import RestartingEngine, StockfishNotFound, find_stockfish, open_engine

__all__ = [
    "Teacher",
    "Label",
    "TeacherError",
    "StockfishNotFound",
    "expected_score",
    "candidate_policy",
    "DEFAULT_TEMPERATURE",
    "MATE_BONUS",
    "CP_WEIGHT",
]

log = logging.getLogger(__name__)

DEFAULT_TEMPERATURE = 0.05  # see module docstring; calibrated against the paper's base entropy (README)
MATE_BONUS = 0.5  # b: mate in 1 = 1.5, mate in 2 = 1.25, ... vs <= 1.0 for a non-mate
CP_WEIGHT = 1.0  # λ: weight of the centipawn logistic vs Stockfish's WDL expectation
LICHESS_CP_SCALE = 0.00368208  # Lichess "win%" = σ(0.00368208·cp)
_SEARCH_TIMEOUT = 120.0  # seconds; a node/depth-bounded search that takes this long means a hung engine


class TeacherError(RuntimeError):
    """Stockfish failed on a position (message names the position)."""


def describe(board: chess.Board) -> str:
    """A reproducible name for ``board``: FEN plus the moves that reached it."""
    moves = " ".join(m.uci() for m in board.move_stack)
    return f"FEN {board.fen()!r}" + (
        f" (after {board.ply()} plies from {board.root().fen()!r}: {moves})" if moves else ""
    )


def expected_score(
    cand_wdl: np.ndarray,
    cand_cp: np.ndarray,
    cand_mate: np.ndarray,
    *,
    cp_weight: float = CP_WEIGHT,
    mate_bonus: float = MATE_BONUS,
) -> np.ndarray:
    """Expected score q per candidate (float32, shape of ``cand_mate``), see module docstring.

    ``cand_wdl``: (..., K, 3) per-mille WDL, mover's view; ``cand_cp``: (..., K)
    centipawns; ``cand_mate``: (..., K) signed mate distance (+n mover mates
    in n, -n mover is mated, 0 none).
    """
    if not 0.0 <= cp_weight <= 1.0:
        raise ValueError(f"cp_weight must be in [0, 1], got {cp_weight}")
    w = cand_wdl.astype(np.float32)
    q_wdl = (w[..., 0] + 0.5 * w[..., 1]) / np.float32(1000.0)
    q_cp = 1.0 / (1.0 + np.exp(-LICHESS_CP_SCALE * cand_cp.astype(np.float32)))
    q = (1.0 - cp_weight) * q_wdl + cp_weight * q_cp
    safe_n = np.maximum(np.abs(cand_mate), 1).astype(np.float32)
    q = np.where(cand_mate > 0, 1.0 + mate_bonus / safe_n, q)
    q = np.where(cand_mate < 0, -mate_bonus / safe_n, q)
    return q.astype(np.float32)


def candidate_policy(q: np.ndarray, n_cand: np.ndarray | int, temperature: float = DEFAULT_TEMPERATURE) -> np.ndarray:
    """π = softmax(q / T) over the first ``n_cand`` candidates of each row, 0 on padding.

    ``q``: (..., K) float; ``n_cand``: (...) ints. Returns float32 (..., K)
    summing to 1 per row. T must be > 0 (T -> 0 approaches the argmax).
    """
    if not temperature > 0:
        raise ValueError(f"teacher temperature must be > 0, got {temperature}")
    q = np.asarray(q, dtype=np.float64)
    valid = np.arange(q.shape[-1]) < np.asarray(n_cand)[..., None]
    z = np.where(valid, q / temperature, -np.inf)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.where(valid, np.exp(z), 0.0)
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


@dataclass
class Label:
    """Teacher output for one position. Candidates are in Stockfish's MultiPV order (best first)."""

    indices: np.ndarray  # int16 (k,) policy indices (4288 layout, mover's frame) of the candidate moves
    probs: np.ndarray  # float32 (k,) target π over the candidates at the teacher's T; sums to 1
    wdl: np.ndarray  # float32 (3,) best line's win/draw/loss, mover's view, sums to 1
    best_move: chess.Move
    moves: list  # the k candidate chess.Move objects
    cand_wdl: np.ndarray  # uint16 (k, 3) per-mille WDL per candidate, mover's view
    cand_cp: np.ndarray  # int16 (k,) centipawns (0 where the score is a mate), clipped to ±32000
    cand_mate: np.ndarray  # int16 (k,) +n: mover mates in n; -n: mover is mated in n; 0: no mate
    depth: int  # depth of the best line

    def q(self, cp_weight: float = CP_WEIGHT, mate_bonus: float = MATE_BONUS) -> np.ndarray:
        """Expected score per candidate (see module docstring)."""
        return expected_score(self.cand_wdl, self.cand_cp, self.cand_mate, cp_weight=cp_weight, mate_bonus=mate_bonus)


class _Search(chess.engine.BaseCommand):
    """``[ucinewgame, isready,] position, go`` -> (last info line per MultiPV index, bestmove token)."""

    def __init__(self, engine, setup: list[str], go: list[str]) -> None:
        super().__init__(engine)
        self._setup, self._go_lines = setup, go
        self._waiting_ready = bool(setup)
        self._last: dict[int, str] = {}

    def start(self) -> None:
        if self._waiting_ready:  # ucinewgame may take a while: wait for readyok before searching
            for line in self._setup:
                self._engine.send_line(line)
            self._engine.send_line("isready")
        else:
            self._go()

    def _go(self) -> None:
        for line in self._go_lines:
            self._engine.send_line(line)

    def line_received(self, line: str) -> None:
        if line.startswith("info"):
            if " pv " in line:
                i = line.find(" multipv ")
                k = int(line[i + 9 : line.index(" ", i + 9)]) if i >= 0 else 1
                self._last[k] = line
        elif line.startswith("bestmove"):
            if not self.result.done():  # done = cancelled (timeout): the search was stopped
                self.result.set_result(([self._last[k] for k in sorted(self._last)], line.split()[1]))
            self.set_finished()
        elif line.strip() == "readyok" and self._waiting_ready:
            self._waiting_ready = False
            self._go()

    def cancel(self) -> None:
        self._engine.send_line("stop")


def _parse_line(line: str) -> tuple[int, int, int, tuple[int, int, int] | None, str]:
    """``info ...`` -> (depth, cp, mate, wdl, first pv move uci)."""
    tok = line.split()
    depth = cp = mate = 0
    wdl = None
    i = 1
    while i < len(tok):
        t = tok[i]
        if t == "depth":
            depth = int(tok[i + 1])
            i += 2
        elif t == "score":
            v = int(tok[i + 2])
            if tok[i + 1] == "mate":
                mate = v if v != 0 else -1  # "mate 0" = already mated; never at a root with legal moves
            else:
                cp = max(-32000, min(32000, v))
            i += 3
        elif t == "wdl":
            wdl = (int(tok[i + 1]), int(tok[i + 2]), int(tok[i + 3]))
            i += 4
        elif t == "pv":
            return depth, cp, mate, wdl, tok[i + 1]
        else:
            i += 1
    raise ValueError("info line without pv")


class Teacher:
    """Stockfish labeller. One engine process, 1 thread by default; reuse it for many positions.

    Args:
        path: Stockfish binary (default: ``$STOCKFISH``, PATH, /usr/games/stockfish).
        nodes: node budget per labelling search (default 2000).
        depth: depth bound instead of / in addition to ``nodes``. At least one must be set.
        multipv: K, the number of candidate moves that get policy mass.
        temperature: T of the policy target (see module docstring).
        cp_weight: λ, weight of the centipawn logistic in q (0 = Stockfish's WDL expectation only).
        mate_bonus: b in q = 1 + b/n for mate in n.
        threads, hash_mb: Stockfish ``Threads`` / ``Hash``.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        nodes: int | None = 2000,
        depth: int | None = None,
        multipv: int = 8,
        temperature: float = DEFAULT_TEMPERATURE,
        cp_weight: float = CP_WEIGHT,
        mate_bonus: float = MATE_BONUS,
        threads: int = 1,
        hash_mb: int = 16,
    ) -> None:
        if nodes is None and depth is None:
            raise ValueError("a teacher search needs a nodes or depth bound (an unbounded search may never return)")
        if (nodes is not None and nodes < 1) or (depth is not None and depth < 1) or multipv < 1:
            raise ValueError(f"nodes/depth/multipv must be >= 1, got nodes={nodes} depth={depth} multipv={multipv}")
        if not temperature > 0:
            raise ValueError(f"teacher temperature must be > 0, got {temperature}")
        self.path = find_stockfish(path)  # StockfishNotFound (with the install hint) before any work
        self.nodes, self.depth, self.multipv = nodes, depth, multipv
        self.temperature, self.cp_weight, self.mate_bonus = temperature, cp_weight, mate_bonus
        self.threads, self.hash_mb = threads, hash_mb
        self.restarts = 0  # crash restarts
        self._engine: RestartingEngine | None = None
        self._start()

    # -- process management -------------------------------------------------
    def _start(self) -> None:
        self._engine = open_engine(self.path, threads=self.threads, hash_mb=self.hash_mb, options={"UCI_ShowWDL": True})
        self._multipv_sent: int | None = None
        self._clear_next = False  # a fresh process needs no ucinewgame
        self._used = False  # any search since the process started?

    def new_game(self) -> None:
        """Clear Stockfish's hash and history tables (UCI ``ucinewgame``) before the next search.

        Between positions of one game (or a stream of games) clearing is not
        needed and costs time, so it is never automatic. It does not make
        later searches bit-reproducible (Stockfish 15.1 keeps its hash-table
        generation counter, which steers replacement once the table fills);
        :meth:`restart` does.
        """
        self._clear_next = True

    def reset(self) -> None:
        """Make the engine state fresh (for reproducible labels): :meth:`restart` unless nothing was searched yet."""
        if self._used or self._engine is None:
            self.restart()

    @property
    def engine_id(self) -> str:
        assert self._engine is not None  # running from __init__ until close()
        return self._engine.id.get("name", "unknown engine")

    @property
    def pid(self) -> int:
        assert self._engine is not None  # running from __init__ until close()
        return self._engine.transport.get_pid()

    def restart(self) -> None:
        """Stop the engine process (if alive) and start a fresh one.

        Node/depth-bounded single-thread searches of a fresh process are
        deterministic, so a sequence of labels after ``restart()`` is reproducible.
        """
        self.close()
        self._start()

    def close(self) -> None:
        if self._engine is not None:
            try:
                self._engine.quit()
            except Exception:  # noqa: BLE001  (already dead / hung: just drop the transport)
                pass
            self._engine.close()
            self._engine = None

    def __enter__(self) -> Teacher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- searching -----------------------------------------------------------
    def _search(self, board: chess.Board, nodes: int | None, depth: int | None, multipv: int) -> tuple[list[str], str]:
        setup = []
        if self._clear_next:
            setup.append("ucinewgame")
            self._clear_next = False
        if multipv != self._multipv_sent:
            setup.append(f"setoption name MultiPV value {multipv}")
            self._multipv_sent = multipv
        root_fen = board.root().fen()
        pos = "position startpos" if root_fen == chess.STARTING_FEN else f"position fen {root_fen}"
        if board.move_stack:
            pos += " moves " + " ".join(m.uci() for m in board.move_stack)
        go = "go" + (f" nodes {nodes}" if nodes else "") + (f" depth {depth}" if depth else "")
        eng = self._engine
        assert eng is not None  # running from __init__ until close()
        self._used = True
        coro = asyncio.wait_for(eng.protocol.communicate(lambda p: _Search(p, setup, [pos, go])), _SEARCH_TIMEOUT)
        return asyncio.run_coroutine_threadsafe(coro, eng.protocol.loop).result()

    def _search_retry(self, board: chess.Board, *args) -> tuple[list[str], str]:
        try:
            return self._search(board, *args)
        except (chess.engine.EngineError, asyncio.TimeoutError, TimeoutError, OSError) as exc:
            log.warning(
                "Stockfish failed (%s: %s) on %s; restarting it and retrying once",
                type(exc).__name__,
                exc,
                describe(board),
            )
            self.restarts += 1
            self.restart()
            try:
                return self._search(board, *args)
            except (chess.engine.EngineError, asyncio.TimeoutError, TimeoutError, OSError) as exc2:
                self.restart()  # leave a usable engine behind for the caller's next position
                raise TeacherError(
                    f"Stockfish failed twice ({type(exc2).__name__}: {exc2}) on {describe(board)}"
                ) from exc2

    def best_move(self, board: chess.Board, nodes: int) -> chess.Move:
        """Stockfish's move after a ``nodes``-bounded MultiPV-1 search (for playing games)."""
        _, best = self._search_retry(board, nodes, None, 1)
        return chess.Move.from_uci(best)

    def label(self, board: chess.Board) -> Label:
        """Label ``board`` (with its move stack: Stockfish sees repetitions and the game ply)."""
        if board.is_game_over(claim_draw=False) or not any(board.generate_legal_moves()):
            raise ValueError(f"cannot label a finished game: {describe(board)}")
        lines, best = self._search_retry(board, self.nodes, self.depth, self.multipv)
        k = len(lines)
        cand_wdl = np.zeros((k, 3), dtype=np.uint16)
        cand_cp = np.zeros(k, dtype=np.int16)
        cand_mate = np.zeros(k, dtype=np.int16)
        moves, depth = [], 0
        try:
            for j, line in enumerate(lines):
                d, cp, mate, wdl, uci = _parse_line(line)
                move = chess.Move.from_uci(uci)
                if not board.is_legal(move) or wdl is None:
                    raise ValueError(f"illegal pv move or missing wdl in {line!r}")
                depth = depth or d
                cand_wdl[j], cand_cp[j], cand_mate[j] = wdl, cp, mate
                moves.append(move)
        except (ValueError, IndexError) as exc:
            raise TeacherError(f"unreadable Stockfish output ({exc}) on {describe(board)}") from exc
        if not moves:
            raise TeacherError(f"Stockfish returned no principal variation (bestmove {best}) on {describe(board)}")
        turn = board.turn
        indices = np.array([move_to_index(m, turn) for m in moves], dtype=np.int16)
        q = expected_score(cand_wdl, cand_cp, cand_mate, cp_weight=self.cp_weight, mate_bonus=self.mate_bonus)
        probs = candidate_policy(q, k, self.temperature)
        wdl_best = cand_wdl[0].astype(np.float32)
        return Label(
            indices=indices,
            probs=probs,
            wdl=wdl_best / wdl_best.sum(),
            best_move=moves[0],
            moves=moves,
            cand_wdl=cand_wdl,
            cand_cp=cand_cp,
            cand_mate=cand_mate,
            depth=depth,
        )
