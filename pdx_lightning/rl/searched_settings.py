"""Searched self-play's settings in one place: :class:`SearchedSettings`, validated once when made.

The second trainer of pdx (``pdx fit --config conf/fit/searched.yaml``): every move of every game in
flight is searched with pdx's PUCT (:mod:`pdx_lightning.search`), the root's visit distribution becomes
the policy target and the game's result the value target, through a replay buffer
(:mod:`pdx_lightning.rl.replay`); Efficient Self-Play's system (root noise, a move temperature,
restarts from openings and from an archive of earlier positions, replay with bounded reuse and
surprise-weighted sampling), with an optional forward KL to the frozen base, the one term it shares
with prior-directed exploration. In a config the settings are one block, ``model.algorithm``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from pdx_lightning.errors import UserError
from pdx_lightning.rl.replay import SAMPLINGS
from pdx_lightning.search.settings import MAX_NODES, SearchSettings

Sampling = Literal["uniform", "surprise"]


class SearchedSettingsError(UserError, ValueError):
    """A searched self-play setting out of its range; the message names ``model.algorithm.<key>``."""


@dataclass(frozen=True)
class SearchedSettings:
    """What searched self-play plays and learns (checked once, here).

    Attributes:
        nodes: root visits of every move's search (Lc0's node count; 16 plays at about Maia's pace).
        search: the search's other settings as ``key=value,...`` (cpuct, cpuct_base, cpuct_factor,
            fpu_value, policy_softmax_temp, two_fold_draws, sticky_endgames, cache_size: Lc0 v0.31's
            names and defaults); every move is searched from a fresh tree, as Lc0's self-play does.
        noise_alpha, noise_eps: Dirichlet noise at each root, p ← (1 − ε)p + ε·Dir(α) (AlphaZero's 0.3
            and 0.25 for chess); eps 0 = none.
        temperature: the move is drawn ∝ visits^(1/T) for the first ``temperature_plies`` plies of a
            game (counted from its start or restart), then the search's best move is played (T = 0).
        temperature_plies: plies played at ``temperature``.
        n_games: games in flight across all ranks (each rank plays n_games / world_size, batched).
        max_plies: a game reaching this many plies is cut; its positions take the search's W/D/L at
            the cut as their value target (Efficient Self-Play's searched cut-off target).
        openings_file: UCI lines (EPD ``c0``, text or PGN, as ``pdx data openings`` writes) a game starts
            from; None = the initial position.
        random_plies: after the opening, k ~ U{0..random_plies} uniformly random legal plies.
        archive_share: share of (re)starts from the archive of earlier positions, once it holds any
            (Efficient Self-Play's targeted restarts: half).
        archive_size: positions the archive keeps (the oldest leave first).
        archive_top_share: a searched position enters the archive when its most visited move holds less
            than this share of the visits (an unresolved alternative worth replaying).
        buffer_capacity: replay rows per rank (about 3.3 KB each).
        reuse: presentations per admitted position (Efficient Self-Play: 4).
        sampling: ``uniform`` or ``surprise`` (a ``surprise_share`` of each batch weighted by the policy
            surprise KL(visits ‖ prior), capped at ``surprise_cap`` × the mean).
        surprise_share, surprise_cap: see ``sampling``.
        value_mix: λ, the WDL target (1 − λ)·result + λ·the search's root W/D/L.
        batch_size: positions per optimizer step on each rank.
        min_buffer: live positions in the buffer before the first step trains (the first step plays
            until then).
        plies_per_step: plies of every game in flight played before each optimizer step (more are played
            whenever the buffer holds fewer live positions than a batch).
        c_v: weight of the WDL cross-entropy beside the policy cross-entropy.
        beta: weight of the forward KL(π_base ‖ π_θ) to the frozen base (0 = pure searched self-play).
        ema_decay: α of the EMA, θ̄ ← αθ̄ + (1−α)θ; the EMA is the network that searches (the
            published weights) and the one validated and exported.
        grad_clip_norm: clip the gradients' total L2 norm (None = no clipping).
        micro_batch: positions per gradient micro-batch (gradients accumulate over a batch).
        resign_threshold: resign when the searched root's expected score W + D/2 falls below this for
            the side to move; None (the default) = never (off, as Efficient Self-Play's calibration
            needs continuation games pdx does not play).
    """

    nodes: int = 16
    search: str = ""
    noise_alpha: float = 0.3
    noise_eps: float = 0.25
    temperature: float = 1.0
    temperature_plies: int = 30
    n_games: int = 64
    max_plies: int = 256
    openings_file: str | None = None
    random_plies: int = 8
    archive_share: float = 0.5
    archive_size: int = 4096
    archive_top_share: float = 0.8
    buffer_capacity: int = 65536
    reuse: int = 4
    sampling: Sampling = "uniform"
    surprise_share: float = 0.7
    surprise_cap: float = 2.0
    value_mix: float = 0.0
    batch_size: int = 256
    min_buffer: int = 256
    plies_per_step: int = 1
    c_v: float = 1.0
    beta: float = 0.0
    ema_decay: float = 0.99
    grad_clip_norm: float | None = None
    micro_batch: int = 256
    resign_threshold: float | None = None

    def __post_init__(self) -> None:
        def bad(key: str, want: str) -> SearchedSettingsError:
            return SearchedSettingsError(f"model.algorithm.{key} must be {want}, got {getattr(self, key)!r}")

        def finite(key: str) -> float:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise bad(key, "a finite number")
            return float(v)

        def integer(key: str, lo: int, hi: int | None = None) -> None:
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
                raise bad(key, f"an integer in [{lo}, {hi if hi is not None else '∞'}]")

        integer("nodes", 1, MAX_NODES)
        for key in ("temperature_plies", "random_plies", "archive_size"):
            integer(key, 0)
        for key in ("n_games", "max_plies", "buffer_capacity", "reuse", "batch_size", "plies_per_step", "micro_batch"):
            integer(key, 1)
        integer("min_buffer", 1, self.buffer_capacity)
        if self.batch_size > self.buffer_capacity:
            raise bad("batch_size", f"at most buffer_capacity ({self.buffer_capacity})")
        # ema_decay: the range of runtime.optim.EMA_DECAY_RANGE (a test holds them equal)
        for key in ("noise_eps", "archive_share", "archive_top_share", "surprise_share", "value_mix", "ema_decay"):
            if not 0.0 <= finite(key) <= 1.0:
                raise bad(key, "in [0, 1]")
        for key in ("noise_alpha", "surprise_cap"):
            if finite(key) <= 0:
                raise bad(key, "> 0")
        for key in ("temperature", "c_v", "beta"):
            if finite(key) < 0:
                raise bad(key, ">= 0")
        if self.sampling not in SAMPLINGS:
            raise bad("sampling", " or ".join(SAMPLINGS))
        if self.grad_clip_norm is not None and finite("grad_clip_norm") <= 0:
            raise bad("grad_clip_norm", "> 0 or null")
        if self.resign_threshold is not None and not 0.0 <= finite("resign_threshold") <= 1.0:
            raise bad("resign_threshold", "in [0, 1] or null")
        self.search_settings()  # the search's keys, checked now

    def search_settings(self) -> SearchSettings:
        """The search's settings (``nodes`` and ``search``'s keys; no tree reuse: every move from a fresh root)."""
        from pdx_lightning.search.spec import parse_search_spec  # noqa: PLC0415

        text = ",".join(x for x in (f"nodes={self.nodes}", self.search) if x)
        try:
            settings, _, _ = parse_search_spec(f"search[{text}]:_")
        except UserError as e:
            raise SearchedSettingsError(f"model.algorithm.search: {' '.join(str(e).split())}") from None
        if "reuse" in self.search:
            raise SearchedSettingsError("model.algorithm.search: no 'reuse' here (every move is searched afresh)")
        return settings


SETTING_KEYS = tuple(f.name for f in fields(SearchedSettings))
