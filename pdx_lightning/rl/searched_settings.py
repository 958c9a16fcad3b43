"""Searched self-play's settings in one place: :class:`SearchedSelfPlaySettings`, validated once when made.

The second trainer of pdx (``pdx fit --config conf/fit/searched.yaml``): every move of every game in
flight is searched with pdx's PUCT (:mod:`pdx_lightning.search`), the root's visit distribution becomes
the policy target and the game's result the value target, through a replay buffer
(:mod:`pdx_lightning.rl.replay`); Efficient Self-Play's system (root noise, a move temperature,
restarts from openings and from an archive of earlier positions, replay with bounded reuse and
surprise-weighted sampling), with an optional forward KL to the frozen base, the one term it shares
with prior-directed exploration. In a config the settings are one block, ``model.algorithm``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, fields
from typing import Literal, cast

from pdx_lightning.argtypes import check_number
from pdx_lightning.errors import UserError
from pdx_lightning.rl.replay import SAMPLINGS
from pdx_lightning.search.settings import MAX_NODES, SearchSettings

Sampling = Literal["uniform", "surprise"]


class SearchedSettingsError(UserError, ValueError):
    """A searched self-play setting out of its range; the message names ``model.algorithm.<key>``."""


@dataclass(frozen=True)
class SearchedSelfPlaySettings:
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
        archive_value_gap: a searched position also enters the archive when its searched Q and the
            network's own one-node Q (both W − L for the side to move, in [−1, 1]) differ by more than
            this: value-repair restarts, replaying positions whose value the search corrected. It costs
            one extra network pass over the games in flight per ply; None (the default) = off.
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
        value_anchor: w of the base-WDL value anchor c_v·w·KL(p_base(s) ‖ p_θ(s)) on the replayed
            positions (PDX's ``value_anchor``; 0 = off). w = 10 holds the value head near the base's
            W/D/L (its fixed point about 91 % the base's): issue 63's "value held".
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
    archive_value_gap: float | None = None
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
    value_anchor: float = 0.0
    ema_decay: float = 0.99
    grad_clip_norm: float | None = None
    micro_batch: int = 256
    resign_threshold: float | None = None

    def __post_init__(self) -> None:
        def check(key: str, lo: float | None = None, hi: float | None = None, **kind: bool) -> None:
            check_number(f"model.algorithm.{key}", getattr(self, key), lo, hi, error=SearchedSettingsError, **kind)

        check("nodes", 1, MAX_NODES, integer=True)
        for key in ("temperature_plies", "random_plies", "archive_size"):
            check(key, 0, integer=True)
        for key in ("n_games", "max_plies", "buffer_capacity", "reuse", "batch_size", "plies_per_step", "micro_batch"):
            check(key, 1, integer=True)
        check("min_buffer", 1, self.buffer_capacity, integer=True)
        if self.batch_size > self.buffer_capacity:
            raise SearchedSettingsError(
                f"model.algorithm.batch_size: must be at most buffer_capacity ({self.buffer_capacity}), "
                f"got {self.batch_size!r}"
            )
        # ema_decay: the range of runtime.optim.EMA_DECAY_RANGE (a test holds them equal)
        for key in ("noise_eps", "archive_share", "archive_top_share", "surprise_share", "value_mix", "ema_decay"):
            check(key, 0.0, 1.0)
        for key in ("noise_alpha", "surprise_cap"):
            check(key, 0.0, lo_open=True)
        for key in ("temperature", "c_v", "beta", "value_anchor"):
            check(key, 0.0)
        if self.sampling not in SAMPLINGS:
            raise SearchedSettingsError(
                f"model.algorithm.sampling: must be one of {', '.join(SAMPLINGS)}, got {self.sampling!r}"
            )
        check("grad_clip_norm", 0.0, lo_open=True, optional=True)
        check("archive_value_gap", 0.0, 2.0, optional=True)
        check("resign_threshold", 0.0, 1.0, optional=True)
        # the search's settings, built once: every ply of the run searches with this object
        object.__setattr__(self, "_search_settings", self._read_search())

    def _read_search(self) -> SearchSettings:
        from pdx_lightning.search.spec import parse_search_options  # noqa: PLC0415

        for key, why in (
            ("nodes", "the node count is model.algorithm.nodes"),
            ("reuse", "every move is searched afresh"),
            ("value", "the network searched is the one trained"),
        ):
            if re.search(rf"(^|,)\s*{key}\s*=", self.search):
                raise SearchedSettingsError(f"model.algorithm.search: no '{key}' here ({why})")
        try:
            spec = parse_search_options(self.search, "model.algorithm.search")
        except UserError as e:
            raise SearchedSettingsError(" ".join(str(e).split())) from None
        return spec.settings.replace(nodes=self.nodes)

    @property
    def search_settings(self) -> SearchSettings:
        """The search's settings (``nodes`` and ``search``'s keys; every move from a fresh root), made once."""
        return cast(SearchSettings, self._search_settings)  # type: ignore[attr-defined]


SETTING_KEYS = tuple(f.name for f in fields(SearchedSelfPlaySettings))


def __getattr__(name: str) -> type:
    """``SearchedSettings``: the old name of SearchedSelfPlaySettings (removed in 0.2.0, with the migrations)."""
    if name == "SearchedSettings":
        warnings.warn(
            "SearchedSettings is now SearchedSelfPlaySettings (the old name goes in 0.2.0)",
            DeprecationWarning,
            stacklevel=2,
        )
        return SearchedSelfPlaySettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
