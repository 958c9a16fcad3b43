"""The replay buffer of searched self-play: searched positions, each presented at most ``reuse`` times.

Efficient Self-Play's design (its §3.7, §4.2): a bounded circular memory of searched positions from
finished games; each admitted position funds ``reuse`` training presentations and leaves the buffer
after them (or when the ring overwrites it, the oldest first); a batch draws positions uniformly or
mixes uniform draws with draws weighted by the *policy surprise* KL(visits ‖ the network's prior at the
root), capped (its retained mix: 70 % surprise-weighted, cap 2.0, 30 % uniform).

A position is stored compactly: its planes packed (:func:`~pdx_lightning.chesscore.encoding.pack_planes`,
800 bytes), its legal moves' policy indices and the search's visit share of each (padded to
``chesscore.boundary.MAX_MOVES``, the one move cap: a board set up from a FEN may have more than the 218
of positions reachable from the start), the game's result from the side to move and the search's root
W/D/L. A buffer of capacity C holds about 3.3·C KB. Its whole state (the rows, their use counts, the
ring's write position, the sampler's random state and the counters) is :meth:`ReplayBuffer.state_dict`,
tensors and plain values only (checkpoints stay ``weights_only``-loadable): a run resumed from a checkpoint
draws the same batches as one that never stopped, no position lost or presented once too often.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pdx_lightning.chesscore.boundary import MAX_MOVES
from pdx_lightning.chesscore.encoding import PACKED_WORDS, expand_packed
from pdx_lightning.chesscore.moves import POLICY_SIZE

SAMPLINGS = ("uniform", "surprise")


@dataclass
class Positions:
    """Searched positions, one row each (what a finished game hands the buffer).

    packed: (n, 100) int64 planes; legal: (n, MAX_MOVES) int16 policy indices, −1 padded; visits:
    (n, MAX_MOVES) float32 visit shares (sum 1 per row); result: (n,) int8, 0 win / 1 draw / 2 loss for
    the side to move, or −1 when the game was cut at the ply cap (then ``search_wdl`` is the target);
    search_wdl: (n, 3) float32, the root's W/D/L after the search; surprise: (n,) float32,
    KL(visits ‖ the network's prior over the root's moves)."""

    packed: np.ndarray
    legal: np.ndarray
    visits: np.ndarray
    result: np.ndarray
    search_wdl: np.ndarray
    surprise: np.ndarray

    def __len__(self) -> int:
        return len(self.packed)

    @staticmethod
    def empty() -> Positions:
        return Positions(
            np.zeros((0, PACKED_WORDS), np.int64),
            np.full((0, MAX_MOVES), -1, np.int16),
            np.zeros((0, MAX_MOVES), np.float32),
            np.zeros(0, np.int8),
            np.zeros((0, 3), np.float32),
            np.zeros(0, np.float32),
        )

    @staticmethod
    def concat(parts: list[Positions]) -> Positions:
        if not parts:
            return Positions.empty()
        return Positions(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    def take(self, rows: np.ndarray | slice) -> Positions:
        return Positions(*(getattr(self, f)[rows] for f in _FIELDS))


_FIELDS = ("packed", "legal", "visits", "result", "search_wdl", "surprise")
_PAD = {"legal": -1, "visits": 0.0}


def widen(a: np.ndarray, field: str) -> np.ndarray:
    """A stored field at today's width: rows of ``legal`` or ``visits`` narrower than ``MAX_MOVES`` (a
    checkpoint from before the one move cap held 218) padded as the buffer pads them; other fields as given."""
    if field not in _PAD or a.shape[-1] == MAX_MOVES:
        return a
    out = np.full((*a.shape[:-1], MAX_MOVES), _PAD[field], a.dtype)
    out[..., : a.shape[-1]] = a
    return out


@dataclass
class Batch:
    """A training batch drawn from the buffer: planes (B, 112, 8, 8); mask (B, POLICY_SIZE) legal moves;
    target (B, POLICY_SIZE) visit shares; wdl_target (B, 3); rows: the buffer rows drawn."""

    planes: torch.Tensor
    mask: torch.Tensor
    target: torch.Tensor
    wdl_target: torch.Tensor
    rows: np.ndarray

    @property
    def size(self) -> int:
        return len(self.rows)


class ReplayBuffer:
    """Bounded replay of searched positions (see the module's text).

    Args:
        capacity: rows held at most (the ring overwrites the oldest live row when full).
        reuse: presentations per admitted position; a row leaves the buffer after its last one.
        sampling: ``uniform`` or ``surprise`` (``surprise_share`` of each batch weighted by the capped
            policy surprise, the rest uniform; drawn without replacement within a batch).
        surprise_share, surprise_cap: the surprise-weighted share and the cap of a row's weight
            relative to the mean surprise of the live rows.
        value_mix: λ of the WDL target, (1 − λ)·result + λ·the search's root W/D/L (0: the result).
        seed: the sampler's seed.
    """

    def __init__(
        self,
        capacity: int,
        reuse: int = 4,
        sampling: str = "uniform",
        surprise_share: float = 0.7,
        surprise_cap: float = 2.0,
        value_mix: float = 0.0,
        seed: int = 0,
    ) -> None:
        # the settings are checked where they are made (SearchedSelfPlaySettings); asserts guard the invariants
        assert capacity >= 1 and reuse >= 1 and sampling in SAMPLINGS
        self.capacity, self.reuse, self.sampling = capacity, reuse, sampling
        self.surprise_share, self.surprise_cap, self.value_mix = surprise_share, surprise_cap, value_mix
        self.rows = Positions(
            np.zeros((capacity, PACKED_WORDS), np.int64),
            np.full((capacity, MAX_MOVES), -1, np.int16),
            np.zeros((capacity, MAX_MOVES), np.float32),
            np.zeros(capacity, np.int8),
            np.zeros((capacity, 3), np.float32),
            np.zeros(capacity, np.float32),
        )
        self.uses = np.zeros(capacity, np.int32)
        self.live = np.zeros(capacity, bool)
        self.head = 0  # the next row the ring writes
        self.rng = np.random.default_rng(seed)
        self.admitted = 0  # positions ever added
        self.presented = 0  # presentations ever drawn
        self.overwritten = 0  # live rows the ring overwrote before their last presentation

    def __len__(self) -> int:
        return int(self.live.sum())

    @property
    def fill(self) -> float:
        return len(self) / self.capacity

    def add(self, pos: Positions) -> None:
        """Admit ``pos``, row by row into the ring (a batch larger than the capacity keeps its last rows)."""
        n = len(pos)
        if n > self.capacity:
            self.admitted += n - self.capacity
            pos = pos.take(slice(n - self.capacity, n))
            n = self.capacity
        idx = (self.head + np.arange(n)) % self.capacity
        self.overwritten += int(self.live[idx].sum())
        for f in _FIELDS:
            getattr(self.rows, f)[idx] = getattr(pos, f)
        self.uses[idx] = 0
        self.live[idx] = True
        self.head = int((self.head + n) % self.capacity)
        self.admitted += n

    def _weights(self, live: np.ndarray) -> np.ndarray:
        s = self.rows.surprise[live].astype(np.float64)
        mean = s.mean()
        w = np.minimum(s / mean, self.surprise_cap) if mean > 0 else np.ones_like(s)
        return w / w.sum()

    def draw(self, n: int) -> np.ndarray:
        """Rows for a batch of ``n`` (fewer when fewer are live), each counted as presented once; rows
        reaching ``reuse`` presentations leave the buffer."""
        live = np.flatnonzero(self.live)
        n = min(n, len(live))
        if n == 0:
            return live[:0]
        if self.sampling == "uniform":
            rows = self.rng.choice(live, size=n, replace=False)
        else:
            k = round(self.surprise_share * n)
            first = self.rng.choice(live, size=k, replace=False, p=self._weights(live)) if k else live[:0]
            rest = np.setdiff1d(live, first, assume_unique=True)
            rows = np.concatenate([first, self.rng.choice(rest, size=n - k, replace=False)])
        self.uses[rows] += 1
        self.live[rows[self.uses[rows] >= self.reuse]] = False
        self.presented += n
        return np.sort(rows)

    def batch(self, rows: np.ndarray, device: torch.device | str = "cpu") -> Batch:
        """The tensors of ``rows`` (from :meth:`draw`)."""
        r = self.rows
        legal = r.legal[rows].astype(np.int64)
        valid = legal >= 0
        b = np.repeat(np.arange(len(rows)), valid.sum(1))
        mask = torch.zeros(len(rows), POLICY_SIZE, dtype=torch.bool)
        target = torch.zeros(len(rows), POLICY_SIZE, dtype=torch.float32)
        cols = torch.from_numpy(legal[valid])
        mask[torch.from_numpy(b), cols] = True
        target[torch.from_numpy(b), cols] = torch.from_numpy(r.visits[rows][valid])
        result = r.result[rows]
        onehot = np.zeros((len(rows), 3), np.float32)
        decided = result >= 0
        onehot[np.flatnonzero(decided), result[decided]] = 1.0
        search = r.search_wdl[rows]
        wdl = np.where(decided[:, None], (1.0 - self.value_mix) * onehot + self.value_mix * search, search)
        planes = expand_packed(torch.from_numpy(r.packed[rows]).to(device))
        return Batch(
            planes, mask.to(device), target.to(device), torch.from_numpy(wdl.astype(np.float32)).to(device), rows
        )

    # ---- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything a resumed run needs (tensors and plain values: ``weights_only``-loadable). Only the
        live rows are stored, with their places in the ring."""
        live = np.flatnonzero(self.live)
        return {
            "capacity": self.capacity,
            "where": torch.from_numpy(live.astype(np.int64)),
            **{f: torch.from_numpy(np.ascontiguousarray(getattr(self.rows, f)[live])) for f in _FIELDS},
            "uses": torch.from_numpy(self.uses[live].copy()),
            "head": self.head,
            "rng": self.rng.bit_generator.state,
            "admitted": self.admitted,
            "presented": self.presented,
            "overwritten": self.overwritten,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s buffer (this buffer's capacity must be the stored one)."""
        if int(state["capacity"]) != self.capacity:
            raise ValueError(
                f"the checkpoint's replay buffer holds {state['capacity']} rows, this run's capacity is "
                f"{self.capacity}: resume with the run's own buffer_capacity"
            )
        where = state["where"].numpy()
        self.live[:] = False
        self.live[where] = True
        for f in _FIELDS:
            getattr(self.rows, f)[where] = widen(state[f].numpy(), f)
        self.uses[:] = 0
        self.uses[where] = state["uses"].numpy()
        self.head = int(state["head"])
        self.rng.bit_generator.state = state["rng"]
        self.admitted, self.presented = int(state["admitted"]), int(state["presented"])
        self.overwritten = int(state["overwritten"])
