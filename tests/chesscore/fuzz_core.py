"""Differential fuzzer: the compiled core's pool (``NativePool``) against the python-chess pool, position by position.

    OMP_NUM_THREADS=1 python tests/chesscore/fuzz_core.py --positions 20000 --seed 1
    OMP_NUM_THREADS=1 python tests/chesscore/fuzz_core.py --positions 1000000 --seed 7 --report-every 100000 \\
        --one-thread

Four pairs of pools (claims off / on, with and without a ply cap; one native pool on two worker threads)
play random games from random roots (``fuzz_roots.random_root``: en passant, pins, castling, promotions,
checks, endgames, 15-queen boards, high clocks, move stacks) with moves biased per game toward special
moves, checks and captures, or quiet shuffles that repeat positions and run the 50- and 75-move clocks.
Every position of every game is compared (``core_oracle``): planes, legal masks, sorted legal indices
(which name the legal moves one to one) and counts, repetition counts and the game ends for claims on and
off with and without a cap; every fourth batch also the packed planes and the core's legal move lists;
every batch's reasons and plies; move lists and roots at each game's end. Games
are played to their end (checkmate, stalemate, insufficient material, 75 moves, fivefold, 50 moves and
threefold when claimed, the ply cap) and restart from a new root. Exit 0 with the counts, or 1 at the
first mismatch with the game's root, moves and the assertion.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import chess
import numpy as np
from core_oracle import ends_agree, legal_moves_agree, same_positions
from fuzz_roots import random_root, suite_fens

from pdx_lightning.chesscore.game_pool import PythonChessPool, open_pool
from pdx_lightning.chesscore.moves import move_to_index
from pdx_lightning.chesscore.native_core import REASONS

# (claim_draws, max_plies, native workers) of the four pool pairs
CONFIGS = ((False, None, 1), (True, None, 2), (False, 80, 1), (True, 41, 1))
MODES = ("random", "special", "tactical", "quiet", "shuffle")


@dataclass
class Stats:
    """What a run compared and reached."""

    positions: int = 0
    steps: int = 0
    ends: Counter = field(default_factory=Counter)  # (config, reason) -> games
    roots: Counter = field(default_factory=Counter)  # kind -> roots set
    moves: Counter = field(default_factory=Counter)  # moves played: en_passant, castling, promotion;
    # positions compared: check, double_check
    max_legal: int = 0

    def summary(self) -> str:
        ends = Counter()
        for (_, reason), n in self.ends.items():
            ends[reason] += n
        return (
            f"{self.positions:,} positions compared, {self.steps:,} batches, 0 mismatches; max legal moves "
            f"{self.max_legal}; ends {dict(sorted(ends.items()))}; moves {dict(sorted(self.moves.items()))}; "
            f"roots {dict(sorted(self.roots.items()))}"
        )


class Mismatch(AssertionError):
    """The two pools disagreed (the message holds the game's root, moves and the assertion)."""


def specials(board: chess.Board, legal: list[chess.Move]) -> list[chess.Move]:
    """The promotions, en-passant captures, castlings and double pawn pushes among ``legal``."""
    pawns = board.pawns & board.occupied_co[board.turn]
    out = [m for m in legal if m.promotion or (pawns >> m.from_square & 1 and abs(m.to_square - m.from_square) == 16)]
    if board.ep_square is not None:
        out += [m for m in legal if m.to_square == board.ep_square and board.is_en_passant(m)]
    if board.castling_rights:
        out += [m for m in legal if board.is_castling(m)]
    return out


def choose(rng: random.Random, board: chess.Board, legal: list[chess.Move], mode: str) -> chess.Move:
    """A legal move, biased by the game's ``mode`` (module docstring); special moves are always favoured."""
    special = specials(board, legal)
    if special and rng.random() < (0.7 if mode == "special" else 0.25):
        return rng.choice(special)
    if mode == "tactical" and rng.random() < 0.7:
        pool = [m for m in legal if board.gives_check(m)] or [m for m in legal if board.is_capture(m)]
        if pool:
            return rng.choice(pool)
    if mode in ("shuffle", "quiet"):
        if mode == "shuffle" and len(board.move_stack) >= 2 and rng.random() < 0.8:
            prev = board.move_stack[-2]
            back = chess.Move(prev.to_square, prev.from_square)
            if back in legal:
                return back
        quiet = [m for m in legal if not board.is_capture(m) and board.piece_type_at(m.from_square) != chess.PAWN]
        if quiet and rng.random() < 0.95:
            return rng.choice(quiet)
    return rng.choice(legal)


class Pair:
    """One configuration: the python-chess pool (the oracle) and the native pool, ``n`` games each."""

    def __init__(
        self, k: int, n: int, rng: random.Random, suite: list[str], stats: Stats, threads: bool = True
    ) -> None:
        self.claim, self.cap, workers = CONFIGS[k]
        workers = workers if threads else 1
        self.k, self.rng, self.suite, self.stats = k, rng, suite, stats
        self.ref = PythonChessPool(n, self.claim, self.cap)
        self.pool = open_pool("native", n, claim_draws=self.claim, max_plies=self.cap, workers=workers)
        self.modes = [rng.choice(MODES) for _ in range(n)]
        self.ended: list[int] = []

    def _restart(self, i: int) -> None:
        kind, board = random_root(self.rng, self.suite)
        self.stats.roots[kind] += 1
        self.ref.set_board(i, board)
        self.pool.set_board(i, board)
        self.modes[i] = self.rng.choice(MODES)
        want, got = self.ref._reason(i), int(self.pool.core.status([i], self.claim, self.cap)[0][0])
        assert got == want, ("root end", REASONS[got], REASONS[want])
        if want:
            self._ended(i, want)

    def _ended(self, i: int, reason: int) -> None:
        self.stats.ends[(self.k, REASONS[reason].value)] += 1
        assert self.pool.moves(i) == self.ref.moves(i) and self.pool.root_fen(i) == self.ref.root_fen(i)
        self.ended.append(i)

    def step(self, packed: bool) -> None:
        """Compare every game's position, restart the games that ended, play one move in the others."""
        n, ref, core = self.ref.n, self.ref, self.pool.core
        games = np.arange(n)
        pos = same_positions(ref, self.pool, games, packed=packed)
        self.stats.positions += n
        self.stats.max_legal = max(self.stats.max_legal, int(pos.count.max()))
        for i in range(n):
            if packed:
                legal_moves_agree(core, i, ref.boards[i], ref.legal_moves[i])
            checkers = chess.popcount(ref.boards[i].checkers_mask())
            self.stats.moves["check"] += checkers >= 1
            self.stats.moves["double_check"] += checkers == 2
        probe = self.cap if self.cap is not None else int(np.median([b.ply() for b in ref.boards]))
        ends_agree(core, games, ref.boards, ref.hist, ref.legal_moves, (None, probe))
        ended, self.ended = self.ended, []
        for i in ended:
            self._restart(i)
        live = [i for i in range(n) if i not in self.ended]
        moves = [choose(self.rng, ref.boards[i], ref.legal_moves[i], self.modes[i]) for i in live]
        for i, m in zip(live, moves):
            board = ref.boards[i]
            self.stats.moves["en_passant"] += board.is_en_passant(m)
            self.stats.moves["castling"] += board.is_castling(m)
            self.stats.moves["promotion"] += bool(m.promotion)
        actions = np.array([move_to_index(m, ref.boards[i].turn) for i, m in zip(live, moves)], np.int64)
        ra, pa = ref.play(live, actions)
        rb, pb = self.pool.play(live, actions)
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(pa, pb)
        for i, r in zip(live, ra.tolist()):
            if r:
                self._ended(i, r)

    def describe(self, i: int) -> str:
        return (
            f"config claim_draws={self.claim} max_plies={self.cap}, game {i} (mode {self.modes[i]}): root "
            f"{self.ref.root_fen(i)} moves {' '.join(m.uci() for m in self.ref.moves(i))}"
        )


def _locate(pair: Pair) -> str:
    """The first game of ``pair`` whose position the pools disagree on, described."""
    for i in range(pair.ref.n):
        try:
            same_positions(pair.ref, pair.pool, [i])
            legal_moves_agree(pair.pool.core, i, pair.ref.boards[i], pair.ref.legal_moves[i])
            ends_agree(
                pair.pool.core,
                np.array([i]),
                [pair.ref.boards[i]],
                [pair.ref.hist[i]],
                [pair.ref.legal_moves[i]],
                (None, pair.cap),
            )
        except AssertionError:
            return pair.describe(i)
    return f"config claim_draws={pair.claim} max_plies={pair.cap}: a batch call (play) disagreed"


def run(
    positions: int, seed: int, games: int = 24, report_every: int = 0, out=sys.stdout, threads: bool = True
) -> Stats:
    """Compare at least ``positions`` positions; :class:`Mismatch` at the first disagreement. ``threads``:
    the second pair's native pool on two worker threads (else every pool on the calling thread)."""
    rng = random.Random(seed)
    suite = suite_fens()
    stats = Stats()
    pairs = [Pair(k, games, rng, suite, stats, threads) for k in range(len(CONFIGS))]
    for pair in pairs:  # most games start from a random root, the others at the start
        for i in range(games):
            if rng.random() < 0.7:
                pair._restart(i)
    start, next_report = time.perf_counter(), report_every
    while stats.positions < positions:
        for pair in pairs:
            try:
                pair.step(packed=stats.steps % 4 == 0)
            except AssertionError as e:
                raise Mismatch(f"seed {seed}, batch {stats.steps}: {_locate(pair)}\n{e}") from e
            stats.steps += 1
        if report_every and stats.positions >= next_report:
            rate = stats.positions / (time.perf_counter() - start)
            print(f"{stats.positions:,} positions, {rate:,.0f}/s", file=out, flush=True)
            next_report += report_every
    for pair in pairs:
        pair.pool.close()
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--positions", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--games", type=int, default=24, help="games per pool (four pool pairs)")
    ap.add_argument("--report-every", type=int, default=0)
    ap.add_argument("--one-thread", action="store_true", help="no worker threads (every pool on this thread)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    try:
        stats = run(args.positions, args.seed, args.games, args.report_every, threads=not args.one_thread)
    except Mismatch as e:
        print(f"MISMATCH {e}")
        return 1
    secs = time.perf_counter() - start
    print(f"seed {args.seed}: {stats.summary()}; {secs:.1f} s, {stats.positions / secs:,.0f} positions/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
