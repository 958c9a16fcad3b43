"""The compiled core's search forest through ctypes: one tree per game in flight, every argument checked.

The trees live in the compiled core's ``chesscore/pdx_search.c`` (its header says which Lc0 v0.31
semantics it keeps and how). A tree's root is a game of a
:class:`~pdx_lightning.chesscore.native_core.NativeCore` (its history included); :meth:`Forest.gather`
and :meth:`Forest.scatter` run one wave of playouts: every tree descends until its leaf needs the
network, the caller evaluates all leaves in one batch and hands the outputs back. Codes from the core
become named exceptions (:class:`SearchStateError` for calls out of order, the chess core's own errors
otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess
import numpy as np

from pdx_lightning.chesscore.boundary import LEGAL_STRIDE, MAX_MOVES, CoreArgumentError, check_index
from pdx_lightning.chesscore.native_core import (
    CoreMemoryError,
    NativeCore,
    NativeCoreError,
    _raise,
    decode_move,
    encode_move,
    library,
)
from pdx_lightning.search.settings import SearchSettings

E_STATE = -6  # pdx_limits.h's PDX_E_STATE
E_ILLEGAL = -1
PV_CAP = 128  # moves of a principal variation reported at most


class SearchStateError(NativeCoreError):
    """A forest call out of order (a scatter with no leaf waiting, a search of a tree with no root)."""


class NoLegalMoveError(NativeCoreError, ValueError):
    """A search asked of a position without a legal move (the game is over)."""


@dataclass(frozen=True)
class RootStats:
    """A tree's root after a search: each root move with its visits, Q (W − L for the side to move;
    0 while unvisited), prior and terminal kind (0 none, 1 end of game, 2 two-fold draw)."""

    moves: list[chess.Move]
    visits: np.ndarray
    q: np.ndarray
    prior: np.ndarray
    terminal: np.ndarray
    root_visits: int
    root_q: float
    root_d: float
    playouts: int
    mean_depth: float
    max_depth: int


class Forest:
    """``n`` search trees with one set of :class:`SearchSettings`."""

    def __init__(self, n: int, settings: SearchSettings) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1 << 20:
            raise CoreArgumentError(f"a forest holds 1 to {1 << 20:,} trees, got {n!r}")
        self.lib = library()
        self.n = n
        self.settings = settings
        s = settings
        fp = np.array([s.cpuct, s.cpuct_base, s.cpuct_factor, s.fpu_value, s.policy_softmax_temp], np.float32)
        ip = np.array([int(s.two_fold_draws), int(s.sticky_endgames), s.cache_size], np.int32)
        self._h = self.lib.pdx_forest_new(n, fp.ctypes.data, ip.ctypes.data)
        if not self._h:
            raise CoreMemoryError(f"the search could not allocate {n:,} trees")

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h:
            self.lib.pdx_forest_free(h)

    def _fail(self, code: int, tree: int, what: str) -> None:
        if code == E_STATE:
            raise SearchStateError(f"search tree {tree}: {what} out of order (no root, or a leaf still waits)")
        _raise(code, tree, what)

    def reset(self, t: int, core: NativeCore, game: int) -> None:
        """Tree ``t`` starts empty at game ``game``'s current position (its network cache cleared)."""
        t, game = check_index(t, self.n), check_index(game, core.n)
        code = self.lib.pdx_forest_reset(self._h, t, core._h, game)
        if code == E_ILLEGAL:
            raise NoLegalMoveError(f"search tree {t}: the position has no legal move (the game is over)")
        if code:
            self._fail(code, t, "reset")

    def advance(self, t: int, core: NativeCore, game: int, move: chess.Move) -> None:
        """Tree ``t``'s root played ``move`` and game ``game`` of ``core`` now stands after it: the move's
        subtree becomes the tree (Lc0's tree reuse)."""
        t, game = check_index(t, self.n), check_index(game, core.n)
        code = self.lib.pdx_forest_advance(self._h, t, core._h, game, encode_move(move))
        if code:
            self._fail(code, t, f"advance by {move.uci()}")

    def _trees(self, trees: Sequence[int] | np.ndarray) -> np.ndarray:
        arr = np.asarray(trees)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise CoreArgumentError(f"trees must be a 1-d array of integers, got {arr.dtype} of shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= self.n):
            raise CoreArgumentError(f"tree indices must lie in [0, {self.n}), got {arr.min()}..{arr.max()}")
        if np.unique(arr).size != arr.size:
            raise CoreArgumentError("a tree may appear once per call")
        return np.ascontiguousarray(arr, dtype=np.int32)

    def begin(self, trees: Sequence[int] | np.ndarray) -> None:
        """Start a search in each tree (its playout and depth counts from zero)."""
        tr = self._trees(trees)
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_forest_begin(self._h, len(tr), tr.ctypes.data, where.ctypes.data)
        if code:
            self._fail(code, int(tr[where[0]]), "begin")

    def gather(
        self, trees: np.ndarray, targets: np.ndarray, planes: np.ndarray, legal: np.ndarray, count: np.ndarray
    ) -> np.ndarray:
        """Run each tree's playouts until one needs the network or its root holds ``targets[r]`` visits;
        returns ``pending`` (n,) bool: row r's leaf planes ``planes[r]`` ((n, 112, 8, 8) float32), legal
        policy indices ``legal[r, :count[r]]`` ((n, LEGAL_STRIDE) int64) wait for :meth:`scatter`."""
        tr = self._trees(trees)
        n = len(tr)
        tg = np.ascontiguousarray(targets, dtype=np.int32)
        if tg.shape != (n,) or (n and tg.min() < 1):
            raise CoreArgumentError(f"targets must be {n} positive visit counts, got shape {tg.shape}")
        _check(planes, "planes", (n, 112, 8, 8), np.float32)
        _check(legal, "legal", (n, LEGAL_STRIDE), np.int64)
        _check(count, "count", (n,), np.int32)
        pending = np.zeros(n, np.int32)
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_forest_gather(
            self._h,
            n,
            tr.ctypes.data,
            tg.ctypes.data,
            planes.ctypes.data,
            legal.ctypes.data,
            count.ctypes.data,
            pending.ctypes.data,
            where.ctypes.data,
        )
        if code:
            self._fail(code, int(tr[where[0]]), "gather")
        return pending.astype(bool)

    def scatter(self, trees: np.ndarray, logits: np.ndarray, wdl: np.ndarray) -> None:
        """The network's outputs for the waiting leaves: ``logits`` (n, LEGAL_STRIDE) float32 in the order
        of each row's legal indices, ``wdl`` (n, 3) float32 probabilities (win, draw, loss; side to move)."""
        tr = self._trees(trees)
        n = len(tr)
        _check(logits, "logits", (n, LEGAL_STRIDE), np.float32)
        _check(wdl, "wdl", (n, 3), np.float32)
        if not (np.isfinite(wdl).all() and np.isfinite(logits).all()):
            raise CoreArgumentError("the network's outputs hold a NaN or an infinity")
        where = np.full(1, -1, np.int32)
        code = self.lib.pdx_forest_scatter(
            self._h, n, tr.ctypes.data, logits.ctypes.data, wdl.ctypes.data, where.ctypes.data
        )
        if code:
            self._fail(code, int(tr[where[0]]), "scatter")

    def root(self, t: int) -> RootStats:
        """Tree ``t``'s root moves with their visits, Q, priors (:class:`RootStats`)."""
        t = check_index(t, self.n)
        cap = MAX_MOVES  # room for every root move (the one move cap)
        moves = np.zeros(cap, np.uint16)
        visits = np.zeros(cap, np.int32)
        q = np.zeros(cap, np.float32)
        p = np.zeros(cap, np.float32)
        term = np.zeros(cap, np.int32)
        info = np.zeros(6, np.float64)
        k = self.lib.pdx_forest_root(
            self._h,
            t,
            cap,
            moves.ctypes.data,
            visits.ctypes.data,
            q.ctypes.data,
            p.ctypes.data,
            term.ctypes.data,
            info.ctypes.data,
        )
        if k < 0:
            self._fail(k, t, "root")
        k = min(k, cap)
        playouts = int(info[2])
        return RootStats(
            moves=[decode_move(int(m)) for m in moves[:k]],
            visits=visits[:k].copy(),
            q=q[:k].copy(),
            prior=p[:k].copy(),
            terminal=term[:k].copy(),
            root_visits=int(info[0]),
            root_q=float(info[1]),
            root_d=float(info[5]),
            playouts=playouts,
            mean_depth=float(info[3]) / playouts if playouts else 0.0,
            max_depth=int(info[4]),
        )

    def root_noise(self, t: int, eta: np.ndarray, eps: float) -> None:
        """Mix Dirichlet noise into tree ``t``'s fresh root (Lc0's ApplyDirichletNoise, edges re-sorted):
        p ← (1 − eps)·p + eps·η/Ση, ``eta`` (one per root edge, in :meth:`root`'s order) finite and ≥ 0.
        The root must be expanded and none of its children visited (SearchStateError otherwise)."""
        t = check_index(t, self.n)
        eta = np.ascontiguousarray(eta, dtype=np.float32)
        if eta.ndim != 1 or not np.isfinite(eta).all() or (eta < 0).any():
            raise CoreArgumentError(f"eta must be a 1-D array of finite values >= 0, got {eta!r:.80}")
        if not (isinstance(eps, (int, float)) and 0.0 <= float(eps) <= 1.0):
            raise CoreArgumentError(f"eps must be in [0, 1], got {eps!r}")
        code = self.lib.pdx_forest_root_noise(self._h, t, len(eta), eta.ctypes.data, float(eps))
        if code:
            self._fail(code, t, "root_noise")

    def pv(self, t: int) -> list[chess.Move]:
        """Tree ``t``'s principal variation: the best move (visits, then Q, then prior; proven results
        first, as Lc0 ranks them), then the best reply, while visited."""
        t = check_index(t, self.n)
        out = np.zeros(PV_CAP, np.uint16)
        k = self.lib.pdx_forest_pv(self._h, t, PV_CAP, out.ctypes.data)
        if k < 0:
            self._fail(k, t, "pv")
        return [decode_move(int(m)) for m in out[:k]]


def _check(a: np.ndarray, name: str, shape: tuple, dtype: type) -> None:
    if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous:
        got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
        raise CoreArgumentError(f"{name} must be a C-contiguous {np.dtype(dtype)} array of shape {shape}, got {got}")
