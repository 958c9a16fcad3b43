"""The algorithm's settings in one place: :class:`PDXSettings`, validated once when it is made.

Everything that decides *what* one PDX step computes (paper Algorithm 1, Eqs. 5–7, 11, 12; Appendix E):
the exploration term R and its weight β, c_v, the EMA's α, the optional base-WDL anchor, the sampling
temperature and whose WDL sets it, gradient clipping, how a capped game is scored, successor reuse
and the micro-batch. ``SelfPlayConfig`` (``rl.selfplay``) keeps only the games: how many, their
openings and restarts, the chess engine and its workers, the ply cap and draw claims. The optimizer's
learning rates and warm-up stay ``PDXModule`` arguments (shared with ``pdx pretrain``'s builder).

In a config the settings are one block, ``model.algorithm``::

    model:
      algorithm: {exploration: forward_kl, beta: 1.0e-2, c_v: 0.2, temperature: adaptive}

The keys that lived elsewhere before (``model.beta``, ``model.selfplay.temperature``, ...) are listed in
:data:`MOVED_KEYS`; :func:`migrate_hparams` moves them in a checkpoint's hyperparameters (so a checkpoint
written before still resumes), and :func:`check_moved_keys` refuses them in a user's config or flags
with a one-line pointer to the new key. All three go in 0.2.0 (``pdx_lightning._version.MIGRATIONS_REMOVED_IN``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from pdx_lightning.argtypes import check_number
from pdx_lightning.errors import UserError
from pdx_lightning.rl.objectives import EXPLORATION_TERMS

TemperatureMode = Literal["adaptive", "fixed"]
TemperatureSource = Literal["ema", "online"]
CapResult = Literal["draw", "bootstrap"]
ValueHeadLR = Literal["own", "backbone"]
TEMPERATURE_MODES: tuple[str, ...] = get_args(TemperatureMode)  # the sweep's temperature arms, in this order
TEMPERATURE_WDL_SOURCES: tuple[str, ...] = get_args(TemperatureSource)
CAP_RESULTS: tuple[str, ...] = get_args(CapResult)
VALUE_HEAD_LRS: tuple[str, ...] = get_args(ValueHeadLR)


class SettingsError(UserError, ValueError):
    """An algorithm setting out of its range; the message names the key (``model.algorithm.<key>``)."""


@dataclass(frozen=True)
class PDXSettings:
    """What one PDX step computes (checked once, here).

    Attributes:
        exploration: the exploration term R of Eq. 7: ``forward_kl`` (ours, KL(π_base‖π_θ)),
            ``reverse_kl`` (KL(π_θ‖π_base), the RLHF anchor), ``entropy`` (−H(π_θ), the entropy bonus)
            or ``none``.
        beta: β, the exploration term's weight in Eq. 7 at the start of the run (a ``BetaSchedule``
            callback may change it per step).
        c_v: the value-loss weight c_v of Eq. 7.
        ema_decay: α of the EMA target, θ̄ ← αθ̄ + (1−α)θ (Eq. 11), applied by the ``EMAUpdate`` callback.
        value_anchor: w of the base-WDL value anchor c_v·w·KL(p_base(s) ‖ p_θ(s)) (the paper's public
            code; not in Eq. 7, so 0 = off; that code uses 0.1). Logged as ``loss/anchor``.
        temperature: ``adaptive`` samples μ ∝ π_θ^{1/τ(s)} with τ = H(WDL at s) (Eqs. 5–6); ``fixed``
            samples π_θ (τ ≡ 1).
        temperature_wdl_source: whose WDL at s sets the adaptive τ: ``ema`` (the paper, App. E) or
            ``online`` (the online network's, from the pass that samples; the authors' code's default,
            and one EMA pass fewer per step).
        grad_clip_norm: clip the online gradients' total L2 norm to this before each AdamW step
            (``torch.nn.utils.clip_grad_norm_``; None = no clipping, Table 2). Logs the norm before
            clipping as ``optim/grad_norm``. (``--trainer.gradient_clip_val`` cannot act: the module
            optimizes manually.)
        cap_result: a game reaching the ply cap is scored ``draw`` (the paper) or keeps the EMA's value
            of s' as its target, ``bootstrap`` (truncation, the authors' code).
        reuse_successor_eval: use the EMA's evaluation of s' at step t as its evaluation of s at step
            t+1 when the game goes on (saves the ema(s) pass; an approximation, the EMA moved by one
            update in between). Off by default.
        micro_batch: games per network pass, and per gradient micro-batch (gradients accumulate).
        value_head_lr: the value head's learning rate: ``own`` (``lr_value_head``, Table 2) or
            ``backbone`` (``lr_backbone``: the value head trained in the backbone's group, as the
            authors' code does in effect; for reproducing its runs, docs/reference.md).
        log_value_kl: also log ``loss/value_kl`` = E[ρ·KL(p̂‖p_θ(s))], the value loss as the authors'
            code logs it (its ``wdl``): ``loss/value`` (the cross-entropy of Eq. 15) minus E[ρ·H(p̂)];
            the same gradient. Off by default.
    """

    exploration: str = "forward_kl"
    beta: float = 1e-2
    c_v: float = 0.2
    ema_decay: float = 0.995
    value_anchor: float = 0.0
    temperature: TemperatureMode = "adaptive"
    temperature_wdl_source: TemperatureSource = "ema"
    grad_clip_norm: float | None = None
    cap_result: CapResult = "draw"
    reuse_successor_eval: bool = False
    micro_batch: int = 256
    value_head_lr: ValueHeadLR = "own"
    log_value_kl: bool = False

    def __post_init__(self) -> None:
        _one_of("exploration", self.exploration, EXPLORATION_TERMS)
        _one_of("temperature", self.temperature, TEMPERATURE_MODES)
        _one_of("temperature_wdl_source", self.temperature_wdl_source, TEMPERATURE_WDL_SOURCES)
        _one_of("cap_result", self.cap_result, CAP_RESULTS)
        _one_of("value_head_lr", self.value_head_lr, VALUE_HEAD_LRS)
        _finite("beta", self.beta, "β, the exploration term's weight in Eq. 7", low=0.0)
        _finite("c_v", self.c_v, "the value-loss weight of Eq. 7", low=0.0)
        _finite("value_anchor", self.value_anchor, "w, the base-WDL anchor's weight; 0 = off", low=0.0)
        # the range of runtime.optim.EMA_DECAY_RANGE (this module stays free of torch; a test holds them equal)
        _finite("ema_decay", self.ema_decay, "α of the EMA, Eq. 11", low=0.0, high=1.0)
        if self.grad_clip_norm is not None:
            _finite("grad_clip_norm", self.grad_clip_norm, "None = no clipping", low=0.0, open_low=True)
        check_number("model.algorithm.micro_batch", self.micro_batch, 1, integer=True, error=SettingsError)
        for key in ("reuse_successor_eval", "log_value_kl"):
            if not isinstance(getattr(self, key), bool):
                raise SettingsError(f"model.algorithm.{key}: must be true or false, got {getattr(self, key)!r}")

    @property
    def tau_from_online(self) -> bool:
        """Whether τ(s) comes from the online WDL of the step's own pass (adaptive τ, ``online`` source)."""
        return self.temperature == "adaptive" and self.temperature_wdl_source == "online"


def _one_of(key: str, value: object, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise SettingsError(f"model.algorithm.{key}: must be one of {', '.join(allowed)}, got {value!r}")


def _finite(
    key: str, value: object, what: str, *, low: float, high: float | None = None, open_low: bool = False
) -> None:
    check_number(f"model.algorithm.{key} ({what})", value, low, high, lo_open=open_low, error=SettingsError)


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(PDXSettings))

# Where each setting lived before it joined ``model.algorithm``: "model.<key>" or "model.selfplay.<key>".
MOVED_KEYS: dict[str, str] = {
    **{
        f"model.{k}": f"model.algorithm.{k}"
        for k in ("exploration", "beta", "c_v", "ema_decay", "value_anchor", "grad_clip_norm")
    },
    **{
        f"model.selfplay.{k}": f"model.algorithm.{k}"
        for k in ("temperature", "temperature_wdl_source", "cap_result", "reuse_successor_eval", "micro_batch")
    },
}


def migrate_hparams(hparams: Mapping[str, Any]) -> dict[str, Any]:
    """A PDXModule's hyperparameters in today's layout: the keys of :data:`MOVED_KEYS` moved into
    ``algorithm`` (a checkpoint written before the settings were gathered resumes); others untouched.
    Today's hyperparameters come back equal."""
    out = dict(hparams)
    selfplay = dict(out.get("selfplay") or {}) if isinstance(out.get("selfplay"), Mapping) else out.get("selfplay")
    algorithm = dict(out.get("algorithm") or {})
    for old, new in MOVED_KEYS.items():
        parts, key = old.split(".")[1:], new.rsplit(".", 1)[1]
        holder = out if len(parts) == 1 else selfplay
        if isinstance(holder, dict) and parts[-1] in holder:
            algorithm.setdefault(key, holder.pop(parts[-1]))
    if algorithm:
        out["algorithm"] = algorithm
    if isinstance(selfplay, dict):
        out["selfplay"] = selfplay
    return out


def moved_key_paths(model: Mapping[str, Any], prefix: str = "model") -> list[tuple[str, str]]:
    """(old key, new key) for each key of :data:`MOVED_KEYS` present in a config's ``model`` block."""
    found = []
    selfplay = model.get("selfplay")
    for old, new in MOVED_KEYS.items():
        parts = old.split(".")[1:]
        holder = model if len(parts) == 1 else selfplay
        if isinstance(holder, Mapping) and parts[-1] in holder:
            found.append((prefix + "." + ".".join(parts), new))
    return found


class MovedSettingError(UserError, ValueError):
    """A setting given under the key it had before ``model.algorithm`` gathered them; names the new key."""


def check_moved_keys(where: str, model: Mapping[str, Any] | None = None, flags: Sequence[str] = ()) -> None:
    """Refuse, in one line, a moved key in a config's ``model`` block or in ``--model.*`` flags."""
    moved = moved_key_paths(model) if isinstance(model, Mapping) else []
    for flag in flags:
        key = "model." + flag.split("=", 1)[0].removeprefix("--model.")
        if key in MOVED_KEYS:
            moved.append(("--" + key, "--" + MOVED_KEYS[key]))
    if moved:
        old, new = moved[0]
        more = f" (and {len(moved) - 1} more)" if len(moved) > 1 else ""
        raise MovedSettingError(
            f"{where}: {old} is now {new}: the algorithm's settings are one block, model.algorithm{more}"
        )


def check_fit_args(args: Sequence[str]) -> None:
    """Refuse, in one line, a moved setting in a ``pdx fit|validate`` command line: its ``--model.*`` flags
    and the ``model`` block of each ``--config`` file (read after the config files' own checks)."""
    import yaml  # noqa: PLC0415  (PyYAML comes with LightningCLI's jsonargparse)

    args = [str(a) for a in args]
    flags = [a for a in args if a.startswith("--model.")]
    check_moved_keys("command line", None, flags)
    for i, a in enumerate(args):
        path = (
            args[i + 1]
            if a in ("--config", "-c") and i + 1 < len(args)
            else a.split("=", 1)[1]
            if a.startswith("--config=")
            else None
        )
        if path is None:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f.read(1 << 20))  # a config is a few kB; a larger one is refused elsewhere
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # unreadable or not YAML: LightningCLI's parser says so, with its own message
        if isinstance(doc, Mapping) and isinstance(doc.get("model"), Mapping):
            check_moved_keys(path, doc["model"])
