"""Searched self-play games, one ply of every game in flight per item: the games, not the learning.

:class:`SearchedGames` owns this rank's games. Each item it yields is the :class:`PlyResult` of one ply:
every game in flight searched at once by :class:`~pdx_lightning.search.BatchedSearch` (one network batch
per simulation wave, Dirichlet noise at each fresh root), a move drawn ∝ visits^(1/T) early in the game
and the best move after, the searched positions of every game that ended (their targets: the visit
shares, the result, the root's W/D/L), ready for the replay buffer. Games start from the opening suite
plus a few random plies, or from an archive of earlier positions whose search left an alternative
unresolved (Efficient Self-Play's targeted restarts) or, with ``archive_value_gap``, whose searched Q
differs from the network's own one-node Q (value-repair restarts). The network that searches is the one
it is given (the module's EMA: the published weights). Its whole state (games, pending positions, archive, random
state, counters) is :meth:`SearchedGames.state_dict`: a resumed run plays on exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import cast

import chess
import numpy as np
import torch
from torch.utils.data import IterableDataset

from pdx_lightning.chesscore.boundary import MAX_MOVES
from pdx_lightning.chesscore.encoding import encode_boards, pack_planes
from pdx_lightning.chesscore.moves import legal_indices
from pdx_lightning.chesscore.opening_files import read_opening_lines
from pdx_lightning.files.resources import resolve_path
from pdx_lightning.rl.replay import Positions, widen
from pdx_lightning.rl.searched_settings import SearchedSelfPlaySettings
from pdx_lightning.runtime.ranks import rank_world
from pdx_lightning.search.batched import BatchedSearch, RootNoise

RESULT = {"win": 0, "draw": 1, "loss": 2}


@dataclass
class PlyResult:
    """One ply of every game: the positions of the games that ended (for the buffer) and what happened."""

    finished: Positions
    searched: int  # positions searched this ply
    games_finished: int
    evaluations: int  # network evaluations of the search this ply
    target_entropy: float  # mean entropy of the visit shares of this ply's positions
    root_q: float  # mean root Q (side to move) of this ply's positions
    top_share: float  # mean share of the visits the most visited root move holds


@dataclass
class _Game:
    board: chess.Board
    start: int  # plies on the board's stack when the game (re)started: the temperature counts from here
    rows: list[tuple] = field(default_factory=list)  # (packed, legal, visits, wdl, surprise, turn)


def _uniform_line(board: chess.Board, k: int, rng: np.random.Generator) -> None:
    for _ in range(k):
        moves = list(board.legal_moves)
        if not moves or board.is_game_over(claim_draw=True):
            return
        board.push(moves[int(rng.integers(len(moves)))])


STATS = ("plies", "games_finished", "length_sum", "white_win", "draw", "black_win", "cut", "resigned",
         "positions", "evaluations", "restarts_archive", "archived", "archived_value")  # fmt: skip


class SearchedGames(IterableDataset):
    """This rank's n_games / world_size searched games (see the module's text).

    Args:
        settings: the trainer's :class:`SearchedSelfPlaySettings`.
        network: the network that searches (the module's EMA; read at every wave, so its updates count).
        seed: the games' seed (rank r plays with seed + 1000·r).
    """

    def __init__(self, settings: SearchedSelfPlaySettings, network: torch.nn.Module, seed: int = 0) -> None:
        super().__init__()
        self.settings = settings
        self.network = network
        self.seed = seed
        self.openings = (
            read_opening_lines(str(resolve_path(settings.openings_file))) if settings.openings_file else None
        )
        self.search_settings = settings.search_settings
        self.rng: np.random.Generator | None = None
        self.games: list[_Game] = []
        self.archive: list[chess.Board] = []
        self.stats = dict.fromkeys(STATS, 0)
        self._search: BatchedSearch | None = None
        self.started = False

    # ---- games ------------------------------------------------------------------------------
    def _start(self) -> None:
        rank, world = rank_world()
        if self.settings.n_games % world:
            raise ValueError(
                f"model.algorithm.n_games ({self.settings.n_games}) must be a multiple of the {world} ranks"
            )
        self.rng = np.random.default_rng(self.seed + 1000 * rank)
        self.games = [self._new_game() for _ in range(self.settings.n_games // world)]
        self.started = True

    def _new_game(self) -> _Game:
        assert self.rng is not None
        if self.archive and self.rng.random() < self.settings.archive_share:
            self.stats["restarts_archive"] += 1
            board = self.archive[int(self.rng.integers(len(self.archive)))].copy()
            return _Game(board, len(board.move_stack))
        while True:
            board = chess.Board()
            if self.openings:
                for uci in self.openings[int(self.rng.integers(len(self.openings)))]:
                    board.push_uci(uci)
            _uniform_line(board, int(self.rng.integers(self.settings.random_plies + 1)), self.rng)
            if not board.is_game_over(claim_draw=True):
                return _Game(board, len(board.move_stack))

    def _searcher(self) -> BatchedSearch:
        if not self.started:
            self._start()
        if self._search is None:  # made at the first ply: after Lightning moved the network to its device
            self._search = BatchedSearch(
                self.network,
                self.search_settings,
                slots=len(self.games),
                micro_batch=self.settings.micro_batch,
                reuse=False,
            )
        return self._search

    def play(self) -> PlyResult:
        """Search every game's position, record it, play the chosen move, end and restart finished games."""
        if not self.started:
            self._start()
        assert self.rng is not None
        s = self.settings
        search = self._searcher()
        before = search.evaluations
        boards = [g.board for g in self.games]
        noise = RootNoise(s.noise_alpha, s.noise_eps, self.rng) if s.noise_eps > 0 else None
        results = search.search(boards, noise=noise)  # the settings' node count (built once per run)
        planes = encode_boards(boards)
        packed = pack_planes(planes)
        net_q = self._one_node_q(planes) if s.archive_value_gap is not None else None
        finished: list[Positions] = []
        entropies, qs, tops = [], [], []
        n_finished = 0
        for i, (g, r) in enumerate(zip(self.games, results, strict=True)):
            root = r.root
            visits = root.visits.astype(np.float64)
            share = visits / visits.sum()
            k = len(root.moves)
            legal = np.full(MAX_MOVES, -1, np.int16)
            legal[:k] = legal_indices(g.board, root.moves)
            vis = np.zeros(MAX_MOVES, np.float32)
            vis[:k] = share
            q, d = root.root_q, root.root_d
            wdl = np.array([max(0.0, (1 + q - d) / 2), d, max(0.0, (1 - q - d) / 2)], np.float32)
            pos = share > 0
            surprise = float(np.sum(share[pos] * np.log(share[pos] / np.maximum(root.prior[pos], 1e-12))))
            g.rows.append((packed[i], legal, vis, wdl, surprise, g.board.turn))
            entropies.append(float(-np.sum(share[pos] * np.log(share[pos]))))
            qs.append(q)
            tops.append(float(share.max()))
            value_gap = net_q is not None and abs(q - net_q[i]) > cast(float, s.archive_value_gap)
            if (share.max() < s.archive_top_share or value_gap) and s.archive_size > 0:
                self.stats["archived"] += 1
                self.stats["archived_value"] += int(value_gap)
                self.archive.append(g.board.copy())
                if len(self.archive) > s.archive_size:
                    self.archive.pop(0)
            if s.resign_threshold is not None and wdl[0] + 0.5 * wdl[1] < s.resign_threshold:
                self.stats["resigned"] += 1
                finished.append(self._finish(g, "0-1" if g.board.turn == chess.WHITE else "1-0"))
                self.games[i], n_finished = self._new_game(), n_finished + 1
                continue
            played = len(g.board.move_stack) - g.start
            if played < s.temperature_plies and s.temperature > 0:
                w = visits ** (1.0 / s.temperature)
                move = root.moves[int(self.rng.choice(k, p=w / w.sum()))]
            else:
                move = r.best
            g.board.push(move)
            outcome = g.board.outcome(claim_draw=True)
            if outcome is not None:
                finished.append(self._finish(g, outcome.result()))
            elif len(g.board.move_stack) - g.start >= s.max_plies:
                self.stats["cut"] += 1
                finished.append(self._finish(g, None))
            else:
                continue
            self.games[i], n_finished = self._new_game(), n_finished + 1
        self.stats["plies"] += 1
        evaluations = search.evaluations - before
        self.stats["evaluations"] += evaluations
        done = Positions.concat(finished)
        self.stats["positions"] += len(done)
        return PlyResult(
            done,
            len(results),
            n_finished,
            evaluations,
            float(np.mean(entropies)),
            float(np.mean(qs)),
            float(np.mean(tops)),
        )

    def _finish(self, g: _Game, result: str | None) -> Positions:
        """The game's rows with their value targets: the result from each row's side to move, or (cut at
        the ply cap, ``result`` None) the last search's W/D/L from each row's side."""
        self.stats["games_finished"] += 1
        self.stats["length_sum"] += len(g.board.move_stack) - g.start
        if result is not None:
            self.stats[{"1-0": "white_win", "0-1": "black_win"}.get(result, "draw")] += 1
        packed, legal, vis, wdl, surprise, turn = zip(*g.rows, strict=True)
        wdl_arr = np.stack(wdl)
        codes = np.empty(len(g.rows), np.int8)
        last_turn = turn[-1]
        for j, t in enumerate(turn):
            if result is None:
                codes[j] = -1
                cut = wdl_arr[-1] if t == last_turn else wdl_arr[-1][::-1]
                wdl_arr[j] = cut
            elif result == "1/2-1/2":
                codes[j] = RESULT["draw"]
            else:
                white_won = result == "1-0"
                codes[j] = RESULT["win"] if (t == chess.WHITE) == white_won else RESULT["loss"]
        return Positions(
            np.stack(packed), np.stack(legal), np.stack(vis), codes, wdl_arr, np.asarray(surprise, np.float32)
        )

    @torch.inference_mode()
    def _one_node_q(self, planes: np.ndarray) -> np.ndarray:
        """The network's own W − L at each board (what a one-node search would return), (B,)."""
        device = next(self.network.parameters()).device
        mb, out = self.settings.micro_batch, []
        for i in range(0, len(planes), mb):
            wdl = torch.softmax(self.network(torch.from_numpy(planes[i : i + mb]).to(device)).wdl.float(), dim=-1)
            out.append((wdl[:, 0] - wdl[:, 2]).cpu())
        return torch.cat(out).numpy()

    def __iter__(self) -> Iterator[PlyResult]:
        while True:
            yield self.play()

    # ---- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The games (root FEN and moves, where each started), their recorded positions, the archive, the
        random state and the counters: plain values and tensors."""
        assert self.rng is not None

        def line(b: chess.Board) -> dict:
            return {"fen": b.root().fen(), "moves": [m.uci() for m in b.move_stack]}

        games = []
        for g in self.games:
            rows = {}
            if g.rows:
                packed, legal, vis, wdl, surprise, turn = zip(*g.rows, strict=True)
                rows = {
                    "packed": torch.from_numpy(np.stack(packed)),
                    "legal": torch.from_numpy(np.stack(legal)),
                    "visits": torch.from_numpy(np.stack(vis)),
                    "wdl": torch.from_numpy(np.stack(wdl)),
                    "surprise": list(surprise),
                    "turn": [bool(t) for t in turn],
                }
            games.append({**line(g.board), "start": g.start, "rows": rows})
        return {
            "games": games,
            "archive": [line(b) for b in self.archive],
            "rng": self.rng.bit_generator.state,
            "stats": dict(self.stats),
        }

    def load_state_dict(self, state: dict) -> None:
        def board(d: dict) -> chess.Board:
            b = chess.Board(d["fen"])
            for uci in d["moves"]:
                b.push_uci(uci)
            return b

        _, world = rank_world()
        if len(state["games"]) * world != self.settings.n_games:
            raise ValueError(
                f"the checkpoint holds {len(state['games'])} games per rank, this run plays "
                f"{self.settings.n_games // world}: resume with the run's own n_games and ranks"
            )
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        self.games = []
        for d in state["games"]:
            g = _Game(board(d), int(d["start"]))
            r = d["rows"]
            if r:
                g.rows = [
                    (r["packed"][j].numpy(), widen(r["legal"][j].numpy(), "legal"),
                     widen(r["visits"][j].numpy(), "visits"), r["wdl"][j].numpy(), float(r["surprise"][j]),
                     bool(r["turn"][j]))
                    for j in range(len(r["turn"]))
                ]  # fmt: skip
            self.games.append(g)
        self.archive = [board(d) for d in state["archive"]]
        self.stats = {**dict.fromkeys(STATS, 0), **state["stats"]}  # a checkpoint from before a counter: 0
        self.started = True
